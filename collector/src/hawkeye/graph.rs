//! Algorithm 1 (seed `001` §3.5.1): the heterogeneous wait-for provenance graph of one incident.
//!
//! Nodes are egress ports `(switch, port)` and flows (5-tuples). Edges:
//!
//! * **port → port** (PFC causality): from a paused egress port `P_i` to each congested egress
//!   port `P_j` of the switch across its link that received traffic from it, with the paper's
//!   weight `w_ij = paused_num[P_i] · meter[P_i][P_j] / Σ_k meter[P_i][P_k] · qdepth[P_j]`,
//!   where `meter[P_i][P_j]` is the downstream switch's port-pair meter from the port facing
//!   `P_i` to `P_j`, and `qdepth[P_j]` the mean depth at enqueue, bytes. (The public prototype
//!   omits the `paused_num` factor; the paper's pseudo-code writes `qdepth[p_i]` where its text
//!   says `P_j`: we follow the text.)
//! * **flow → port** (PFC impact): the flow's paused packets at the port.
//! * **port → flow** (contention): the paper's `ReplayQueue` and `Contribution` — each flow's
//!   unpaused packets spread evenly over the epoch and interleaved; each packet waits for the
//!   packets ahead of it, as many as its flow's mean depth at enqueue (bytes over the port's mean
//!   packet size); `w(f, g)` = packets of `g` that `f`'s packets waited for, per `f` packet; the
//!   weight to `f` is `Σ_g w(g, f) − Σ_g w(f, g)`: positive for contributors, negative for
//!   victims. Paused packets are excluded, as the paper says.
//!
//! Choices the paper leaves open, made here:
//! * The telemetry of all the epochs an incident's reports carry is summed for the port and
//!   flow nodes, the port → port and the flow → port edges (the control side reports the epochs
//!   the polling packet concerns: the current one and the one before). The port → flow
//!   contributions are computed epoch by epoch, as the reference analyzer weighs `epoch_now`
//!   and `epoch_last` each on its own, and then summed: replaying two epochs' sums as one queue
//!   spreads a quiet epoch's flows over the next epoch's burst. Entries reported twice (several
//!   copies of a poll through one switch) count once.
//! * A port is paused by PFC when it counted paused packets **or** a polling copy left it with
//!   the PFC bit set (A.5's rules set it where the port is paused now): packets a pause holds
//!   are counted only when they leave, so a port paused for the whole epoch counts none.
//! * A polling copy that entered a switch from a paused port `U` and left it by a port `P` it
//!   found paused adds the edge `U → P` even when the meters are empty (a pause that holds
//!   everything leaves them so); its weight is the formula's with the whole share of the meter.
//! * A downstream port is "congested" when it was paused itself or its mean depth at enqueue
//!   was at least [`Params::congested_bytes`]. A port whose packets were all paused has no
//!   unpaused depth: its incoming port → port edge exists with the weight the formula gives
//!   (possibly 0) — a deadlock's loop is a loop of such ports.
//! * `ReplayQueue` over more than [`Params::replay_max`] packets at one port scales every flow's
//!   count down in proportion (the weights are per packet, so the scale cancels but for
//!   rounding).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use wire::hawkeye::FiveTuple;
use wire::hawkeye::report::Entry;

use super::{Incident, Peer, Topology};

/// An egress port of a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortId {
    /// The switch ID.
    pub switch_id: u16,
    /// The port.
    pub port: u16,
}

impl std::fmt::Display for PortId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "S{}.P{}", self.switch_id, self.port)
    }
}

/// The analyzer's knobs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// A port whose mean depth at enqueue reaches this is congested, bytes (default 1500).
    pub congested_bytes: f64,
    /// A port → flow weight above this marks a contributor (default 0.05: the prototype rounds
    /// weights to 0.1).
    pub contributor: f64,
    /// Packets `ReplayQueue` interleaves at one port at most (default 20 000).
    pub replay_max: u64,
}

impl Default for Params {
    fn default() -> Self {
        Self { congested_bytes: 1500.0, contributor: 0.05, replay_max: 20_000 }
    }
}

/// A port node's telemetry, summed over the incident's epochs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PortStats {
    /// Packets.
    pub pkts: u64,
    /// Paused packets.
    pub paused: u64,
    /// Queue depth at enqueue, bytes, summed over unpaused packets.
    pub qdepth_sum: u64,
    /// Bytes that left by it (the switch's meters into it).
    pub bytes: u64,
    /// A polling copy found it paused when it passed (the copy's flag has the PFC bit: A.5's
    /// rules). Packets held by a pause show in the counts only once they leave; this is the
    /// pause the switch saw at the poll.
    pub paused_now: bool,
}

impl PortStats {
    /// Paused by PFC: paused packets counted, or paused when a poll passed.
    pub fn pfc(&self) -> bool {
        self.paused > 0 || self.paused_now
    }
}

impl PortStats {
    /// Mean depth at enqueue over its unpaused packets, bytes (0 if none).
    pub fn qdepth(&self) -> f64 {
        let n = self.pkts.saturating_sub(self.paused);
        if n == 0 { 0.0 } else { self.qdepth_sum as f64 / n as f64 }
    }
}

/// A flow's telemetry at one port, summed over the incident's epochs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FlowStats {
    /// Packets.
    pub pkts: u64,
    /// Paused packets.
    pub paused: u64,
    /// Queue depth at enqueue, bytes, over unpaused packets.
    pub qdepth_sum: u64,
}

/// The provenance graph.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    /// Port nodes, sorted.
    pub ports: Vec<(PortId, PortStats)>,
    /// Flow nodes, sorted.
    pub flows: Vec<FiveTuple>,
    /// Port → port edges: (from, to, weight), indices into `ports`.
    pub port_port: Vec<(usize, usize, f64)>,
    /// Flow → port edges: (flow, port, paused packets).
    pub flow_port: Vec<(usize, usize, u64)>,
    /// Port → flow edges: (port, flow, contribution).
    pub port_flow: Vec<(usize, usize, f64)>,
    /// The victim path's ports (reports whose copy carried the victim-path flag), from the
    /// first hop on.
    pub victim_path: Vec<usize>,
    /// Per flow and port, the telemetry (for the summary and the baselines).
    pub flow_stats: BTreeMap<(usize, usize), FlowStats>,
    /// The switches that reported.
    pub switches: BTreeSet<u16>,
}

impl Graph {
    /// The index of port `p`.
    pub fn port_index(&self, p: PortId) -> Option<usize> {
        self.ports.binary_search_by_key(&p, |x| x.0).ok()
    }

    /// Port-level out-degree of port `i`.
    pub fn out_degree(&self, i: usize) -> usize {
        self.port_port.iter().filter(|e| e.0 == i).count()
    }

    /// Port-level successors of port `i`.
    pub fn successors(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.port_port.iter().filter(move |e| e.0 == i).map(|e| e.1)
    }

    /// Port → flow edges out of port `i`.
    pub fn contributions(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        self.port_flow.iter().filter(move |e| e.0 == i).map(|e| (e.1, e.2))
    }
}

/// A flow entry's key: switch, port, epoch, flow.
type FlowKey = (u16, u16, u32, FiveTuple);

/// Algorithm 1 over `inc`'s reports with `topo`'s links.
pub fn build(inc: &Incident, topo: &Topology, params: &Params) -> Graph {
    // The entries, each once.
    let mut port_e: BTreeMap<(u16, u16, u32), (u32, u32, u64)> = BTreeMap::new();
    let mut flow_e: BTreeMap<FlowKey, (u32, u32, u64)> = BTreeMap::new();
    let mut meter_e: BTreeMap<(u16, u16, u16, u32), u64> = BTreeMap::new();
    let mut g = Graph::default();
    for r in &inc.reports {
        let s = r.header.switch_id;
        g.switches.insert(s);
        for e in &r.entries {
            match *e {
                Entry::Port { port, epoch_id, pkts, paused, qdepth_sum } => {
                    port_e.insert((s, port, epoch_id), (pkts, paused, qdepth_sum));
                }
                Entry::Flow { port, epoch_id, flow, pkts, paused, qdepth_sum } => {
                    flow_e.insert((s, port, epoch_id, flow), (pkts, paused, qdepth_sum));
                }
                Entry::Meter { out_port, epoch_id, in_port, bytes } => {
                    meter_e.insert((s, in_port, out_port, epoch_id), bytes);
                }
            }
        }
    }
    let mut ports: BTreeMap<PortId, PortStats> = BTreeMap::new();
    for r in &inc.reports {
        if r.header.flag & 2 != 0 {
            ports
                .entry(PortId { switch_id: r.header.switch_id, port: r.header.out_port })
                .or_default()
                .paused_now = true;
        }
    }
    for (&(s, port, _), &(pkts, paused, q)) in &port_e {
        let p = ports.entry(PortId { switch_id: s, port }).or_default();
        // Saturating: the sums come from the network, and a report may hold anything.
        p.pkts = p.pkts.saturating_add(u64::from(pkts));
        p.paused = p.paused.saturating_add(u64::from(paused));
        p.qdepth_sum = p.qdepth_sum.saturating_add(q);
    }
    // meter[switch][(in, out)], summed over epochs.
    let mut meter: HashMap<(u16, u16, u16), u64> = HashMap::new();
    for (&(s, i, o, _), &b) in &meter_e {
        let m = meter.entry((s, i, o)).or_default();
        *m = m.saturating_add(b);
        let p = ports.entry(PortId { switch_id: s, port: o }).or_default();
        p.bytes = p.bytes.saturating_add(b);
    }
    let mut flows: BTreeMap<(PortId, FiveTuple), FlowStats> = BTreeMap::new();
    let mut flow_set: BTreeSet<FiveTuple> = BTreeSet::new();
    for (&(s, port, _, f), &(pkts, paused, q)) in &flow_e {
        let p = PortId { switch_id: s, port };
        ports.entry(p).or_default();
        let st = flows.entry((p, f)).or_default();
        st.pkts = st.pkts.saturating_add(u64::from(pkts));
        st.paused = st.paused.saturating_add(u64::from(paused));
        st.qdepth_sum = st.qdepth_sum.saturating_add(q);
        flow_set.insert(f);
    }
    g.ports = ports.into_iter().collect();
    g.flows = flow_set.into_iter().collect();
    let flow_index = |f: &FiveTuple| g.flows.binary_search(f).unwrap_or(0);
    for (&(p, f), st) in &flows {
        let (pi, fi) = (g.port_index(p).unwrap_or(0), flow_index(&f));
        g.flow_stats.insert((fi, pi), *st);
    }

    // Port → port: from each paused port to the congested ports downstream of its link.
    for (i, &(pi, si)) in g.ports.iter().enumerate() {
        if !si.pfc() {
            continue;
        }
        let Some(Peer::Switch { switch_id: down, port: in_port }) = topo.peer(pi.switch_id, pi.port) else {
            continue;
        };
        let sum: u64 = g
            .ports
            .iter()
            .filter(|(p, _)| p.switch_id == down)
            .map(|(p, _)| meter.get(&(down, in_port, p.port)).copied().unwrap_or(0))
            .fold(0u64, u64::saturating_add);
        if sum == 0 {
            continue;
        }
        for (j, &(pj, sj)) in g.ports.iter().enumerate() {
            if pj.switch_id != down {
                continue;
            }
            let m = meter.get(&(down, in_port, pj.port)).copied().unwrap_or(0);
            let congested = sj.pfc() || sj.qdepth() >= params.congested_bytes;
            if m > 0 && congested {
                let w = si.paused as f64 * (m as f64 / sum as f64) * sj.qdepth();
                g.port_port.push((i, j, w));
            }
        }
    }

    // Port → port from the polling trace itself: a copy that came in from paused port `U` and
    // left by port `P` found paused (the PFC bit) followed PFC causality from `U` to `P` (A.5).
    // Held packets are counted only when they leave, so a pause that holds everything leaves
    // the meters empty: the trace is then the only evidence of the link.
    for r in &inc.reports {
        if r.header.flag & 2 == 0 {
            continue;
        }
        let (d, o) = (r.header.switch_id, r.header.out_port);
        let Some(Peer::Switch { switch_id: us, port: up }) = topo.peer(d, r.header.in_port) else { continue };
        let (Some(i), Some(j)) = (
            g.port_index(PortId { switch_id: us, port: up }),
            g.port_index(PortId { switch_id: d, port: o }),
        ) else {
            continue;
        };
        if g.ports[i].1.pfc() && !g.port_port.iter().any(|e| e.0 == i && e.1 == j) {
            let w = g.ports[i].1.paused as f64 * g.ports[j].1.qdepth();
            g.port_port.push((i, j, w));
        }
    }

    // Flow → port: paused packets.
    for (&(fi, pi), st) in &g.flow_stats {
        if st.paused > 0 {
            g.flow_port.push((fi, pi, st.paused));
        }
    }

    // Port → flow: contention contributions, epoch by epoch — `ReplayQueue` replays one
    // epoch's queue, as the reference analyzer weighs `epoch_now` and `epoch_last` each on its
    // own — then summed over the incident's epochs. (Replaying the epochs' sums as one queue
    // spread a quiet epoch's flows over the next one's burst: a flow that had crossed an empty
    // queue before the burst came out as the burst's biggest contributor.)
    let mut port_bytes: HashMap<(u16, u16, u32), u64> = HashMap::new();
    for (&(s, _, o, e), &b) in &meter_e {
        let x = port_bytes.entry((s, o, e)).or_default();
        *x = x.saturating_add(b);
    }
    let mut by_epoch: BTreeMap<(usize, u32), Vec<(usize, FlowStats)>> = BTreeMap::new();
    for (&(s, port, e, f), &(pkts, paused, q)) in &flow_e {
        let Some(pi) = g.port_index(PortId { switch_id: s, port }) else { continue };
        let st = FlowStats { pkts: u64::from(pkts), paused: u64::from(paused), qdepth_sum: q };
        by_epoch.entry((pi, e)).or_default().push((flow_index(&f), st));
    }
    let mut contributions: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for (&(pi, e), at) in &by_epoch {
        let p = g.ports[pi].0;
        let pkts = port_e.get(&(p.switch_id, p.port, e)).map_or(0, |x| u64::from(x.0));
        let bytes = port_bytes.get(&(p.switch_id, p.port, e)).copied().unwrap_or(0);
        let ps = g.ports[pi].1;
        let mean_pkt = if pkts > 0 && bytes > 0 {
            bytes as f64 / pkts as f64
        } else if ps.pkts > 0 && ps.bytes > 0 {
            ps.bytes as f64 / ps.pkts as f64
        } else {
            1000.0
        };
        for (f, c) in contribution(at, mean_pkt, params.replay_max) {
            *contributions.entry((pi, f)).or_default() += c;
        }
    }
    g.port_flow.extend(contributions.into_iter().map(|((pi, f), c)| (pi, f, c)));

    // The victim path: ports the victim-path copies left by, from the first hop (a switch
    // whose in-port faces a host, else the earliest report).
    let mut hops: Vec<(u64, u16, u16, u16)> = inc
        .reports
        .iter()
        .filter(|r| r.header.flag & 1 != 0)
        .map(|r| (r.t_ns, r.header.switch_id, r.header.in_port, r.header.out_port))
        .collect();
    hops.sort();
    hops.dedup_by_key(|h| (h.1, h.3));
    let first = hops.iter().position(|h| matches!(topo.peer(h.1, h.2), Some(Peer::Host { .. }))).unwrap_or(0);
    let mut at = hops.get(first).copied();
    let mut seen = BTreeSet::new();
    while let Some((_, s, _, out)) = at {
        let Some(i) = g.port_index(PortId { switch_id: s, port: out }) else { break };
        if !seen.insert(i) {
            break;
        }
        g.victim_path.push(i);
        at = match topo.peer(s, out) {
            Some(Peer::Switch { switch_id, port }) => {
                hops.iter().find(|h| h.1 == switch_id && h.2 == port).copied()
            }
            _ => None,
        };
    }
    // Copies the walk did not reach (no topology): in arrival order.
    for h in &hops {
        if let Some(i) = g.port_index(PortId { switch_id: h.1, port: h.3 })
            && seen.insert(i)
        {
            g.victim_path.push(i);
        }
    }
    g
}

/// `ReplayQueue` and `Contribution` at one port: `at` = (flow, its stats there).
fn contribution(at: &[(usize, FlowStats)], mean_pkt: f64, replay_max: u64) -> Vec<(usize, f64)> {
    // Unpaused packets per flow and their mean depth, in packets.
    let n: Vec<u64> = at.iter().map(|(_, s)| s.pkts.saturating_sub(s.paused)).collect();
    let total: u64 = n.iter().fold(0u64, |a, &b| a.saturating_add(b));
    if total == 0 {
        return Vec::new();
    }
    let scale = if total > replay_max { replay_max as f64 / total as f64 } else { 1.0 };
    let counts: Vec<u64> =
        n.iter().map(|&x| if x == 0 { 0 } else { ((x as f64 * scale).round() as u64).max(1) }).collect();
    let depth: Vec<usize> = at
        .iter()
        .zip(&n)
        .map(
            |((_, s), &k)| {
                if k == 0 { 0 } else { ((s.qdepth_sum as f64 / k as f64) / mean_pkt).round() as usize }
            },
        )
        .collect();
    // ReplayQueue: packet j of flow f at time j / counts[f]; sorted (ties by flow).
    let mut seq: Vec<(f64, usize)> = Vec::new();
    for (f, &c) in counts.iter().enumerate() {
        for j in 0..c {
            seq.push((j as f64 / c as f64, f));
        }
    }
    seq.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    // W[f][g]: packets of g within the depth of f's packets ahead of them (prefix counts).
    let k = at.len();
    let mut prefix = vec![vec![0u32; seq.len() + 1]; k];
    for (i, &(_, f)) in seq.iter().enumerate() {
        for (g, row) in prefix.iter_mut().enumerate() {
            row[i + 1] = row[i] + u32::from(g == f);
        }
    }
    let mut w = vec![vec![0f64; k]; k];
    for (i, &(_, f)) in seq.iter().enumerate() {
        let from = i.saturating_sub(depth[f]);
        for g in 0..k {
            w[f][g] += f64::from(prefix[g][i] - prefix[g][from]);
        }
    }
    for (row, &c) in w.iter_mut().zip(&counts) {
        if c > 0 {
            for x in row.iter_mut() {
                *x /= c as f64;
            }
        }
    }
    (0..k)
        .map(|f| {
            let waited_for: f64 = (0..k).filter(|&g| g != f).map(|g| w[g][f]).sum();
            let waits: f64 = (0..k).filter(|&g| g != f).map(|g| w[f][g]).sum();
            (at[f].0, waited_for - waits)
        })
        .collect()
}
