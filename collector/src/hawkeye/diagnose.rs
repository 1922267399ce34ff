//! Algorithm 2 and Table 2 (seed `001` §3.5.2): traverse the provenance graph from the victim
//! path and match the six signatures.
//!
//! From each port on the victim path, first hop first:
//! * a port with PFC pause (paused packets, or port-level out-edges) → walk the port-level subgraph
//!   (`CheckPortNode`): a loop reached → `DeadlockDiagnose`; otherwise the walk's end nodes
//!   (out-degree 0, the initial congestion points) → `AnalyzeFlowContention`: positive
//!   port → flow edges there name the burst flows (**micro-burst incast → PFC backpressure**),
//!   none — or an end node facing a host that is paused itself, by that host — name the host
//!   across that port as injecting PFC (**PFC storm**); an end node paused itself by a switch
//!   (whose telemetry should have continued the walk) is a trace that stopped short:
//!   undiagnosed, saying so;
//! * `DeadlockDiagnose`: a loop port with out-degree > 1 has a branch leaving the loop: its end
//!   node is the initiator (of several branches, one ending at a host that injects PFC, else the
//!   one whose end has the heaviest contention — if heavier than the contention in the loop
//!   itself, which otherwise started it) — contention there (**out-of-loop deadlock, flow contention**) or
//!   none (**out-of-loop deadlock, host PFC injection**); every loop port of out-degree 1 → the
//!   initiator is in the loop: the loop port with the largest positive contention names the
//!   flows (**in-loop deadlock**);
//! * no port-level edge anywhere → the victim-path port with the deepest mean queue among those
//!   with contributors (**flow contention**): per victim the incident's polls name, on the ports
//!   its own flow entries show it crossed (one diagnosis per port found), else over the path.
//!
//! Choices the paper leaves open: the walk follows every out-edge (depth first, lightest
//! revisit first found); when several end nodes are reached the one with the heaviest incoming
//! port → port weight is the initiator; walks that reach the same initiator give one diagnosis,
//! the deadlock when one of them went through a loop; a contributor is a flow whose port → flow weight
//! exceeds [`super::graph::Params::contributor`]. Anything else is "undiagnosed" with the
//! reason, never a guess.

use std::collections::BTreeSet;

use wire::hawkeye::FiveTuple;

use super::graph::{Graph, Params, PortId};
use super::{Peer, Topology};

/// The six anomalies of Table 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Anomaly {
    /// Micro-burst incast causing PFC backpressure.
    MicroBurstIncast,
    /// Deadlock whose initiator is inside the loop (flow contention in the loop).
    InLoopDeadlock,
    /// Deadlock initiated outside the loop by flow contention.
    OutOfLoopDeadlockContention,
    /// Deadlock initiated outside the loop by a host injecting PFC.
    OutOfLoopDeadlockInjection,
    /// PFC storm: a host injecting PFC.
    PfcStorm,
    /// Plain flow contention, no PFC.
    FlowContention,
}

impl Anomaly {
    /// Every anomaly, in Table 2's order.
    pub const ALL: [Anomaly; 6] = [
        Self::MicroBurstIncast,
        Self::InLoopDeadlock,
        Self::OutOfLoopDeadlockContention,
        Self::OutOfLoopDeadlockInjection,
        Self::PfcStorm,
        Self::FlowContention,
    ];

    /// Its name in outputs and scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Self::MicroBurstIncast => "microburst_incast",
            Self::InLoopDeadlock => "in_loop_deadlock",
            Self::OutOfLoopDeadlockContention => "out_of_loop_deadlock_contention",
            Self::OutOfLoopDeadlockInjection => "out_of_loop_deadlock_injection",
            Self::PfcStorm => "pfc_storm",
            Self::FlowContention => "flow_contention",
        }
    }

    /// The anomaly named `s` ([`Self::name`]).
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == s)
    }

    /// A phrase for the summary.
    pub fn describe(self) -> &'static str {
        match self {
            Self::MicroBurstIncast => "a micro-burst incast whose PFC backpressure reached the victim",
            Self::InLoopDeadlock => "a PFC deadlock initiated by flow contention inside the loop",
            Self::OutOfLoopDeadlockContention => {
                "a PFC deadlock initiated by flow contention outside the loop"
            }
            Self::OutOfLoopDeadlockInjection => {
                "a PFC deadlock initiated by a host injecting PFC outside the loop"
            }
            Self::PfcStorm => "a PFC storm from a host injecting PAUSE frames",
            Self::FlowContention => "plain flow contention (no PFC)",
        }
    }
}

/// When an incident is congestion that is no anomaly rather than one of Table 2's (the
/// [`Diagnosis::no_anomaly`] outcome): a busy lossless network queues and pauses without
/// anything being wrong, and naming every such queue an incast made the analyzer see one in
/// every busy network (501 "incasts" over 40 quiet traces at 60 % load). The rule, applied after
/// the signatures matched:
///
/// 1. A PFC walk ending in contention (the micro-burst incast signature) is no anomaly when the
///    incident's victims had fewer than [`Params::min_victim_paused`] of their packets on the
///    victim path paused and none of them contends at the initiator: Table 2's first trait of
///    PFC backpressure by contention, "a high number of paused packets of the victim flow",
///    does not hold — PFC touched the victim, it did not stop it. (A victim that is one of the
///    contending flows is slowed by the burst it is part of, not by PFC: the rule says nothing
///    about it.)
/// 2. Plain flow contention is no anomaly when one flow alone crossed the port in the epochs
///    reported: a lone flow queuing behind its own link's rate is not flows contending. (Not
///    "one contributor": flows of equal weight cancel in the port → flow formula, and a burst of
///    three equal flows names one.)
///
/// Deadlocks, storms and host injection are never no anomaly: a loop of pauses or a host
/// sending PAUSE is wrong at any share.
pub const NO_ANOMALY_RULE: &str = "a PFC walk ending in contention with the victims paused for fewer than \
     Params::min_victim_paused of their packets on the victim path, or plain contention at a port one flow alone crossed";

/// What caused it.
#[derive(Debug, Clone, PartialEq)]
pub enum RootCause {
    /// Contending flows and their port → flow weights, heaviest first, at `port`.
    Flows {
        /// Where they contend.
        port: PortId,
        /// The flows.
        flows: Vec<(FiveTuple, f64)>,
    },
    /// The device across `port` injects PFC (a host when the topology says so).
    Host {
        /// The switch port facing it.
        port: PortId,
        /// The host, if the topology names it: its number and address.
        host: Option<(u32, std::net::Ipv4Addr)>,
    },
}

/// One incident's diagnosis.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnosis {
    /// The anomaly, or `None` with [`Self::undiagnosed`] saying why.
    pub anomaly: Option<Anomaly>,
    /// The root cause.
    pub root_cause: Option<RootCause>,
    /// The PFC spreading path, from the victim's paused port to the initiator.
    pub pfc_path: Vec<PortId>,
    /// The loop, for deadlocks.
    pub deadlock_loop: Vec<PortId>,
    /// The victim flow, if known.
    pub victim: Option<FiveTuple>,
    /// Why no signature matched.
    pub undiagnosed: Option<String>,
    /// Congestion that is no anomaly ([`NO_ANOMALY_RULE`]): what was seen. Exactly one of
    /// `anomaly`, `undiagnosed` and this is set.
    pub no_anomaly: Option<String>,
}

impl Diagnosis {
    pub(crate) fn none(victim: Option<FiveTuple>, why: impl Into<String>) -> Self {
        Self {
            anomaly: None,
            root_cause: None,
            pfc_path: Vec::new(),
            deadlock_loop: Vec::new(),
            victim,
            undiagnosed: Some(why.into()),
            no_anomaly: None,
        }
    }
}

/// Algorithm 2 over `g`: one diagnosis per distinct finding — every victim-path port paused by
/// PFC starts a walk, and walks that end at the same initiator give one diagnosis (an incident
/// can hold several victims: polls of one event ID, as the reference's millisecond event IDs
/// make them). Without PFC, the victim-path port with the heaviest contention. Never empty: an
/// incident that matches nothing gives one undiagnosed result saying why.
pub fn diagnose(
    g: &Graph,
    topo: &Topology,
    victim: Option<FiveTuple>,
    victims: &[FiveTuple],
    params: &Params,
) -> Vec<Diagnosis> {
    let mut out = signatures(g, topo, victim, victims, params);
    // [`NO_ANOMALY_RULE`], rule 1: the victims' paused share on their path.
    let (mut paused, mut pkts) = (0u64, 0u64);
    for v in victim.iter().chain(victims) {
        let Ok(fi) = g.flows.binary_search(v) else { continue };
        for &p in &g.victim_path {
            if let Some(st) = g.flow_stats.get(&(fi, p)) {
                paused += st.paused;
                pkts += st.pkts;
            }
        }
    }
    for d in &mut out {
        let why = match (d.anomaly, &d.root_cause) {
            (Some(Anomaly::MicroBurstIncast), Some(RootCause::Flows { port, .. }))
                if (paused as f64) < params.min_victim_paused * pkts as f64 =>
            {
                format!(
                    "congestion at {port} paused the victims for {paused} of their {pkts} packets on their path, under {:.0} % (no PFC backpressure anomaly)",
                    params.min_victim_paused * 100.0
                )
            }
            (Some(Anomaly::FlowContention), Some(RootCause::Flows { port, .. }))
                if g.port_index(*port).is_some_and(|p| {
                    g.flow_stats.iter().filter(|((_, q), st)| *q == p && st.pkts > 0).count() < 2
                }) =>
            {
                format!("one flow alone crossed {port} (no contention)")
            }
            _ => continue,
        };
        d.anomaly = None;
        d.no_anomaly = Some(why);
    }
    out
}

/// Algorithm 2's signatures over `g` ([`diagnose`] before the no-anomaly rule).
fn signatures(
    g: &Graph,
    topo: &Topology,
    victim: Option<FiveTuple>,
    victims: &[FiveTuple],
    params: &Params,
) -> Vec<Diagnosis> {
    if g.ports.is_empty() {
        return vec![Diagnosis::none(victim, "no telemetry: the incident's reports hold no port")];
    }
    if g.victim_path.is_empty() {
        return vec![Diagnosis::none(victim, "no victim: no report carries the victim-path flag")];
    }
    let mut out: Vec<Diagnosis> = Vec::new();
    for &p in &g.victim_path {
        // A port with PFC pause: paused packets there, or PFC edges out of it.
        if !g.ports[p].1.pfc() && g.out_degree(p) == 0 {
            continue;
        }
        let d = check_port_node(g, topo, victim, params, p);
        // One loop found from each of its ports is one loop: keyed by its smallest port.
        let key = |d: &Diagnosis| {
            let lp = d.deadlock_loop.iter().min().copied();
            (d.anomaly, if lp.is_some() { None } else { d.pfc_path.last().copied() }, lp)
        };
        if !out.iter().any(|o| key(o) == key(&d)) {
            out.push(d);
        }
    }
    if !out.is_empty() {
        // A walk that matched beats one that did not.
        if out.iter().any(|d| d.anomaly.is_some()) {
            out.retain(|d| d.anomaly.is_some());
        }
        // One initiator is one finding: a walk that reached it straight (a storm, an incast)
        // and one that reached it through a loop's branch (the deadlock it set off) name the
        // same root cause; the deadlock, which explains more, stays.
        let deadlock_roots: Vec<PortId> = out
            .iter()
            .filter(|d| !d.deadlock_loop.is_empty())
            .filter_map(|d| d.root_cause.as_ref().map(root_port))
            .collect();
        out.retain(|d| {
            !d.deadlock_loop.is_empty()
                || d.root_cause.as_ref().is_none_or(|r| !deadlock_roots.contains(&root_port(r)))
        });
        return out;
    }
    if g.port_port.is_empty() {
        // No PFC anywhere: classic contention on the victim path, where the victim waited most
        // (the deepest mean queue among the ports with contributors) — per victim known, on the
        // victim-path ports its own flow entries show it crossed; else over the whole path.
        let contention = |p: usize, flows: Vec<(usize, f64)>, v: Option<FiveTuple>| Diagnosis {
            anomaly: Some(Anomaly::FlowContention),
            root_cause: Some(RootCause::Flows { port: g.ports[p].0, flows: named(g, &flows) }),
            pfc_path: Vec::new(),
            deadlock_loop: Vec::new(),
            victim: v,
            undiagnosed: None,
            no_anomaly: None,
        };
        let deepest = |ports: &mut dyn Iterator<Item = usize>| {
            ports
                .filter_map(|p| contenders(g, params, p).map(|c| (p, c)))
                .max_by(|a, b| g.ports[a.0].1.qdepth().total_cmp(&g.ports[b.0].1.qdepth()))
        };
        let mut out: Vec<Diagnosis> = Vec::new();
        let mut at: Vec<usize> = Vec::new();
        for v in victims {
            let Ok(fi) = g.flows.binary_search(v) else { continue };
            let mut crossed = g.victim_path.iter().copied().filter(|&p| g.flow_stats.contains_key(&(fi, p)));
            if let Some((p, c)) = deepest(&mut crossed)
                && !at.contains(&p)
            {
                at.push(p);
                out.push(contention(p, c, Some(*v)));
            }
        }
        if !out.is_empty() {
            return out;
        }
        return vec![match deepest(&mut g.victim_path.iter().copied()) {
            Some((p, flows)) => contention(p, flows, victim),
            None => Diagnosis::none(
                victim,
                "no signature matched: no PFC edge and no flow contending on the victim path",
            ),
        }];
    }
    vec![Diagnosis::none(
        victim,
        "no signature matched: port-level PFC edges exist, but none starts on the victim path",
    )]
}

/// The port a root cause is at.
fn root_port(r: &RootCause) -> PortId {
    match r {
        RootCause::Flows { port, .. } | RootCause::Host { port, .. } => *port,
    }
}

fn total(c: &[(usize, f64)]) -> f64 {
    c.iter().map(|x| x.1).sum()
}

/// The flows with positive contention at port `p`, heaviest first (`None` if none).
fn contenders(g: &Graph, params: &Params, p: usize) -> Option<Vec<(usize, f64)>> {
    let mut c: Vec<(usize, f64)> = g.contributions(p).filter(|&(_, w)| w > params.contributor).collect();
    c.sort_by(|a, b| b.1.total_cmp(&a.1));
    (!c.is_empty()).then_some(c)
}

fn named(g: &Graph, c: &[(usize, f64)]) -> Vec<(FiveTuple, f64)> {
    c.iter().map(|&(f, w)| (g.flows[f], w)).collect()
}

/// `CheckPortNode`: walk the port-level subgraph from `start`.
fn check_port_node(
    g: &Graph,
    topo: &Topology,
    victim: Option<FiveTuple>,
    params: &Params,
    start: usize,
) -> Diagnosis {
    // Depth-first, remembering the path: a successor on the path closes a loop.
    let mut path = vec![start];
    let mut on_path = BTreeSet::from([start]);
    let mut ends: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut visited = BTreeSet::new();
    if let Some(lp) = dfs(g, start, &mut path, &mut on_path, &mut visited, &mut ends) {
        return deadlock(g, topo, victim, params, &lp);
    }
    // The initiator: the end node with the heaviest incoming edge.
    let weight_in = |e: usize| g.port_port.iter().filter(|x| x.1 == e).map(|x| x.2).fold(0.0, f64::max);
    let Some((end, path)) = ends.into_iter().max_by(|a, b| weight_in(a.0).total_cmp(&weight_in(b.0))) else {
        return Diagnosis::none(victim, "no signature matched: the PFC path has no end node");
    };
    let pfc_path: Vec<PortId> = path.iter().map(|&i| g.ports[i].0).collect();
    let (anomaly, root) =
        match analyze_contention(g, topo, params, end, Anomaly::MicroBurstIncast, Anomaly::PfcStorm) {
            Ok(x) => x,
            Err(why) => return Diagnosis { pfc_path, ..Diagnosis::none(victim, why) },
        };
    Diagnosis {
        anomaly: Some(anomaly),
        root_cause: Some(root),
        pfc_path,
        deadlock_loop: Vec::new(),
        victim,
        undiagnosed: None,
        no_anomaly: None,
    }
}

/// Depth-first search from `at`: the first loop found (its ports in order), or `None` with
/// every end node reached (and the path to it) pushed to `ends`.
fn dfs(
    g: &Graph,
    at: usize,
    path: &mut Vec<usize>,
    on_path: &mut BTreeSet<usize>,
    visited: &mut BTreeSet<usize>,
    ends: &mut Vec<(usize, Vec<usize>)>,
) -> Option<Vec<usize>> {
    visited.insert(at);
    let next: Vec<usize> = g.successors(at).collect();
    if next.is_empty() {
        ends.push((at, path.clone()));
        return None;
    }
    for n in next {
        if on_path.contains(&n) {
            let from = path.iter().position(|&x| x == n).unwrap_or(0);
            return Some(path[from..].to_vec());
        }
        if visited.contains(&n) {
            continue;
        }
        path.push(n);
        on_path.insert(n);
        if let Some(l) = dfs(g, n, path, on_path, visited, ends) {
            return Some(l);
        }
        path.pop();
        on_path.remove(&n);
    }
    None
}

/// `AnalyzeFlowContention` at an initiator `p`: contending flows → `with`, none → `without`
/// with the device across `p`. An initiator that is paused itself was paused from across it —
/// the contention in its queue is what the pause built up, not what started it: facing a host,
/// the host injects PFC (`without`) whatever contends; facing a switch, that switch's telemetry
/// should have continued the walk, so the trace stopped short (an error saying where).
fn analyze_contention(
    g: &Graph,
    topo: &Topology,
    params: &Params,
    p: usize,
    with: Anomaly,
    without: Anomaly,
) -> Result<(Anomaly, RootCause), String> {
    let port = g.ports[p].0;
    let host = match topo.peer(port.switch_id, port.port) {
        Some(Peer::Host { host, ip }) => Some((host, ip)),
        _ => None,
    };
    if g.ports[p].1.pfc() {
        // An end node paused itself: the pause came from across it, not from its own queue.
        match topo.peer(port.switch_id, port.port) {
            Some(Peer::Host { .. }) => return Ok((without, RootCause::Host { port, host })),
            Some(Peer::Switch { switch_id, .. }) => {
                return Err(format!(
                    "the PFC path ends at S{}.P{}, paused by switch S{switch_id}, whose telemetry shows no congested port fed from it",
                    port.switch_id, port.port
                ));
            }
            None => {}
        }
    }
    match contenders(g, params, p) {
        Some(c) => Ok((with, RootCause::Flows { port, flows: named(g, &c) })),
        // Injection is a host's (Table 2): a pause from a switch whose own telemetry shows no
        // cause is a trace that stopped short, not a storm.
        None => match topo.peer(port.switch_id, port.port) {
            Some(Peer::Switch { switch_id, .. }) => Err(format!(
                "the PFC path ends at S{}.P{}, paused by switch S{switch_id}, whose telemetry shows no congested port fed from it and no contention",
                port.switch_id, port.port
            )),
            // A host is named only where it was seen pausing its port (paused packets counted,
            // or a poll found the port paused): one busy flow into a host ends a walk at its
            // port too, with no contention and no pause — naming that host as a PFC injector
            // blamed an innocent one (9 diagnoses over three held-out scenarios, 2026-12-03).
            _ if !g.ports[p].1.pfc() => Err(format!(
                "the PFC path ends at S{}.P{}, facing {}, with no contention and no pause seen there: no cause found",
                port.switch_id,
                port.port,
                host.map_or_else(|| "no known device".to_string(), |(h, ip)| format!("host {h} ({ip})"))
            )),
            _ => Ok((without, RootCause::Host { port, host })),
        },
    }
}

/// `DeadlockDiagnose` on `lp`.
fn deadlock(
    g: &Graph,
    topo: &Topology,
    victim: Option<FiveTuple>,
    params: &Params,
    lp: &[usize],
) -> Diagnosis {
    let deadlock_loop: Vec<PortId> = lp.iter().map(|&i| g.ports[i].0).collect();
    let in_loop: BTreeSet<usize> = lp.iter().copied().collect();
    // A branch out of the loop: follow it to its end node. Several branches: a host injecting
    // PFC at a branch's end comes first (a host pauses nothing in normal operation, and its
    // pause stops a port outright where contention only slows it), then the heaviest first edge
    // (the most pausing caused, as the initiator of a walk is chosen).
    let mut branches: Vec<(usize, usize, f64)> =
        g.port_port.iter().filter(|e| in_loop.contains(&e.0) && !in_loop.contains(&e.1)).copied().collect();
    branches.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut found: Vec<(Anomaly, RootCause, Vec<usize>, usize)> = Vec::new();
    for (p, b, _) in branches {
        let mut path = vec![p, b];
        let mut at = b;
        let mut seen = in_loop.clone();
        seen.insert(b);
        // The branch's end (out-degree 0), heaviest edge first.
        while let Some(n) = g
            .port_port
            .iter()
            .filter(|e| e.0 == at && !seen.contains(&e.1))
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .map(|e| e.1)
        {
            path.push(n);
            seen.insert(n);
            at = n;
        }
        if g.out_degree(at) > 0 {
            // The branch leads back into the loop (or another loop): no initiator on it.
            continue;
        }
        // A branch whose trace stopped short names no initiator.
        if let Ok((anomaly, root)) = analyze_contention(
            g,
            topo,
            params,
            at,
            Anomaly::OutOfLoopDeadlockContention,
            Anomaly::OutOfLoopDeadlockInjection,
        ) {
            found.push((anomaly, root, path, at));
        }
    }
    // Contention in the loop, for comparison with contention at a branch's end: whichever is
    // heavier started it (a host's injection needs no comparison).
    let in_loop_best = lp
        .iter()
        .filter_map(|&p| contenders(g, params, p).map(|c| (p, c)))
        .max_by(|a, b| total(&a.1).total_cmp(&total(&b.1)));
    let in_loop_weight = in_loop_best.as_ref().map_or(0.0, |b| total(&b.1));
    let weight = |r: &RootCause| match r {
        RootCause::Flows { flows, .. } => flows.iter().map(|f| f.1).sum(),
        RootCause::Host { .. } => 0.0,
    };
    // Which branch started it: first a host seen pausing its port (the branch's end counted
    // paused packets or a poll found it paused: a host pauses nothing in normal operation, and
    // its pause stops a port outright where contention only slows it); then the heaviest
    // contention at a branch's end, if heavier than any in the loop. A branch ending at a host
    // port with no contention and no pause names nothing (`analyze_contention`): ranked first,
    // it named the receiver of a line-rate loop flow — its port busy, alone, never paused — as
    // a host injecting PFC, over the real contention at another branch.
    let is_injection =
        |f: &(Anomaly, RootCause, Vec<usize>, usize)| f.0 == Anomaly::OutOfLoopDeadlockInjection;
    let pick = found.iter().position(is_injection).or_else(|| {
        found
            .iter()
            .enumerate()
            .filter(|(_, f)| !is_injection(f))
            .max_by(|a, b| weight(&a.1.1).total_cmp(&weight(&b.1.1)))
            .filter(|(_, f)| weight(&f.1) > in_loop_weight)
            .map(|(i, _)| i)
    });
    if let Some(i) = pick {
        let (anomaly, root, path, _) = found.swap_remove(i);
        return Diagnosis {
            anomaly: Some(anomaly),
            root_cause: Some(root),
            pfc_path: path.iter().map(|&i| g.ports[i].0).collect(),
            deadlock_loop,
            victim,
            undiagnosed: None,
            no_anomaly: None,
        };
    }
    // The initiator is in the loop: the loop port with the heaviest contention.
    match in_loop_best {
        Some((p, c)) => Diagnosis {
            anomaly: Some(Anomaly::InLoopDeadlock),
            root_cause: Some(RootCause::Flows { port: g.ports[p].0, flows: named(g, &c) }),
            pfc_path: deadlock_loop.clone(),
            deadlock_loop,
            victim,
            undiagnosed: None,
            no_anomaly: None,
        },
        None => Diagnosis {
            deadlock_loop,
            ..Diagnosis::none(victim, "a PFC loop without a branch out of it and without contention in it")
        },
    }
}
