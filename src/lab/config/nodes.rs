//! The switches and hosts of a lab file: `[switches]`, `[[switch]]` (programs, route overrides,
//! checked for forwarding loops) and `[[host]]` (agents).

use super::parse::Ctx;
use super::raw::{Raw, RawHost};
use super::{Cc, FlowSpec, HostAgent, LabError, PfcStormSpec, ReporterSpec, SwitchProgram};
use crate::lab::topology::{Node, Topology};

/// The default program of the switches and those of the `[[switch]]` tables.
pub(super) fn programs(
    cx: &Ctx,
    raw: &Raw,
    cc: Cc,
    topology: &Topology,
) -> Result<(SwitchProgram, Vec<(usize, SwitchProgram)>), LabError> {
    let hosts = topology.hosts;
    let program = |table: &str, i: Option<usize>, name: &str| {
        if dataplane::programs::find(name).is_some() {
            Ok(name.to_string())
        } else {
            let names: Vec<&str> = dataplane::programs::PROGRAMS.iter().map(|p| p.name).collect();
            Err(cx.err(table, i, "program", format!("unknown program {name:?}; expected one of {names:?}")))
        }
    };
    let switches = SwitchProgram {
        program: program(
            "switches",
            None,
            raw.switches.as_ref().and_then(|s| s.program.as_deref()).unwrap_or(if cc == Cc::Ufab {
                "ufab"
            } else {
                "l2l3"
            }),
        )?,
        sections: raw.switches.as_ref().and_then(|s| s.sections.clone()).unwrap_or_default(),
        routes: Vec::new(),
    };
    let mut switch_programs = Vec::new();
    for (i, s) in raw.switch.iter().enumerate() {
        if s.id >= topology.switches {
            return Err(cx.err(
                "switch",
                Some(i),
                "id",
                format!("switch {} does not exist (switches 0..{})", s.id, topology.switches),
            ));
        }
        if switch_programs.iter().any(|(id, _)| *id == s.id) {
            return Err(cx.err("switch", Some(i), "id", format!("switch {} is given twice", s.id)));
        }
        let mut routes = Vec::new();
        for r in &s.route {
            if r.host >= hosts {
                return Err(cx.err(
                    "switch",
                    Some(i),
                    "route",
                    format!("host {} does not exist (hosts 0..{hosts})", r.host),
                ));
            }
            let adjacent = topology.links.iter().any(|l| {
                (l.a, l.b) == (Node::Switch(s.id), Node::Switch(r.via))
                    || (l.b, l.a) == (Node::Switch(s.id), Node::Switch(r.via))
            });
            if !adjacent {
                return Err(cx.err(
                    "switch",
                    Some(i),
                    "route",
                    format!("via {}: not a neighbour of switch {}", r.via, s.id),
                ));
            }
            if routes.iter().any(|&(h, _)| h == r.host) {
                return Err(cx.err(
                    "switch",
                    Some(i),
                    "route",
                    format!("host {}: a second override (one route per host's subnet)", r.host),
                ));
            }
            routes.push((r.host, r.via));
        }
        let p = SwitchProgram {
            program: match &s.program {
                Some(name) => program("switch", Some(i), name)?,
                None => switches.program.clone(),
            },
            sections: match &s.sections {
                Some(t) => t.clone(),
                None if s.program.is_none() => switches.sections.clone(),
                None => String::new(),
            },
            routes,
        };
        switch_programs.push((s.id, p));
    }
    if let Some((h, cycle)) = routing_loop(topology, &switch_programs) {
        let ids: Vec<String> = cycle.iter().map(|s| format!("s{s}")).collect();
        let i = switch_programs.iter().position(|(id, _)| cycle.contains(id)).unwrap_or(0);
        return Err(cx.err(
            "switch",
            Some(i),
            "route",
            format!(
                "the overrides toward host {h} send its packets round {} and back: a forwarding loop",
                ids.join(" → ")
            ),
        ));
    }
    Ok((switches, switch_programs))
}

/// Every host's agent: `rc` unless a `[[host]]` table says otherwise; hosts of a flow run `rc`.
pub(super) fn host_agents(
    cx: &Ctx,
    raw: &Raw,
    hosts: usize,
    flows: &[FlowSpec],
) -> Result<Vec<HostAgent>, LabError> {
    let host = |table: &str, i: usize, key: &str, h: usize| {
        if h < hosts {
            Ok(h)
        } else {
            Err(cx.err(table, Some(i), key, format!("host {h} does not exist (hosts 0..{hosts})")))
        }
    };
    let mut host_agents = vec![HostAgent::Rc; hosts];
    let mut given: Vec<Option<usize>> = vec![None; hosts];
    for (i, hst) in raw.host.iter().enumerate() {
        let agent = host_agent(hst, &|key: &str, reason: String| cx.err("host", Some(i), key, reason))?;
        if hst.ids.is_empty() {
            return Err(cx.err("host", Some(i), "ids", "no hosts".into()));
        }
        for &h in &hst.ids {
            let h = host("host", i, "ids", h)?;
            if given[h].replace(i).is_some() {
                return Err(cx.err("host", Some(i), "ids", format!("host {h} is given an agent twice")));
            }
            host_agents[h] = agent.clone();
        }
    }
    for f in flows {
        let runs_rc = |h: usize| matches!(host_agents[h], HostAgent::Rc | HostAgent::PfcStorm(_));
        if let Some(h) = [f.src, f.dst].into_iter().find(|&h| !runs_rc(h)) {
            return Err(cx.err(
                "host",
                given[h],
                "agent",
                format!("host {h} runs a flow ({} to {}): its agent must be \"rc\"", f.src, f.dst),
            ));
        }
    }
    Ok(host_agents)
}

/// A forwarding loop the route overrides make, if any: the host whose subnet it is for and the
/// switches round it. Toward each host with an override, a switch forwards on its override, or
/// else on every shortest path (ECMP), as the lab's routes do; a cycle among those next hops
/// is a loop some flow's packets would go round until their TTL ran out.
fn routing_loop(topology: &Topology, programs: &[(usize, SwitchProgram)]) -> Option<(usize, Vec<usize>)> {
    let n = topology.switches;
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut tor = vec![None; topology.hosts];
    for l in &topology.links {
        match (l.a, l.b) {
            (Node::Switch(a), Node::Switch(b)) if a < n && b < n => {
                adj[a].push(b);
                adj[b].push(a);
            }
            (Node::Host(h), Node::Switch(s)) | (Node::Switch(s), Node::Host(h)) if h < tor.len() => {
                tor[h] = Some(s)
            }
            _ => {}
        }
    }
    let mut hosts: Vec<usize> = programs.iter().flat_map(|(_, p)| p.routes.iter().map(|&(h, _)| h)).collect();
    hosts.sort_unstable();
    hosts.dedup();
    for h in hosts {
        let Some(t) = tor.get(h).copied().flatten() else { continue };
        // Hops to the host's switch, by breadth-first search.
        let mut dist = vec![u32::MAX; n];
        dist[t] = 0;
        let mut queue = std::collections::VecDeque::from([t]);
        while let Some(s) = queue.pop_front() {
            for &o in &adj[s] {
                if dist[o] == u32::MAX {
                    dist[o] = dist[s] + 1;
                    queue.push_back(o);
                }
            }
        }
        let next = |s: usize| -> Vec<usize> {
            match programs
                .iter()
                .find(|(id, _)| *id == s)
                .and_then(|(_, p)| p.routes.iter().find(|r| r.0 == h))
            {
                Some(&(_, via)) => vec![via],
                None => adj[s].iter().copied().filter(|&o| dist[o].wrapping_add(1) == dist[s]).collect(),
            }
        };
        // Depth-first search for a cycle among the next hops (the host's switch delivers).
        let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
        for start in 0..n {
            if state[start] != 0 || start == t {
                continue;
            }
            let mut stack: Vec<(usize, Vec<usize>)> = vec![(start, next(start))];
            state[start] = 1;
            while let Some((s, hops)) = stack.last_mut() {
                let s = *s;
                match hops.pop() {
                    Some(o) if o == t || state[o] == 2 => {}
                    Some(o) if state[o] == 1 => {
                        let at = stack.iter().position(|(x, _)| *x == o).unwrap_or(0);
                        return Some((h, stack[at..].iter().map(|(x, _)| *x).chain([o]).collect()));
                    }
                    Some(o) => {
                        state[o] = 1;
                        let nh = next(o);
                        stack.push((o, nh));
                    }
                    None => {
                        state[s] = 2;
                        stack.pop();
                    }
                }
            }
        }
    }
    None
}

/// A `[[host]]` table's agent; `err(key, reason)` names the table.
fn host_agent(h: &RawHost, err: &dyn Fn(&str, String) -> LabError) -> Result<HostAgent, LabError> {
    use roce::dta::{LoadKind, LoadSpec};
    let reporter_keys = [&h.to.as_ref().map(|_| ()), &h.primitive.as_ref().map(|_| ()), &h.count.map(|_| ())];
    match h.agent.as_str() {
        "rc" | "dta_collector" if reporter_keys.iter().any(|k| k.is_some()) => Err(err(
            "agent",
            format!("to, primitive and count are for agent \"dta_reporter\", not {:?}", h.agent),
        )),
        "rc" | "dta_reporter" if h.config.is_some() => {
            Err(err("config", format!("config is for agent \"dta_collector\", not {:?}", h.agent)))
        }
        "rc" | "dta_reporter" | "dta_collector"
            if h.priority.is_some()
                || h.quanta.is_some()
                || h.stop_ns.is_some()
                || h.interval_ns.is_some() =>
        {
            Err(err(
                "agent",
                format!(
                    "priority, quanta, stop_ns and interval_ns are for agent \"pfc_storm\", not {:?}",
                    h.agent
                ),
            ))
        }
        "pfc_storm" if reporter_keys.iter().any(|k| k.is_some()) || h.config.is_some() => Err(err(
            "agent",
            "a \"pfc_storm\" host takes priority, quanta, start_ns, stop_ns and interval_ns only".into(),
        )),
        "pfc_storm" => {
            let priority = h.priority.unwrap_or(3);
            if priority > 7 {
                return Err(err("priority", format!("{priority}: expected 0..=7")));
            }
            let interval_ns = h.interval_ns.unwrap_or(10_000);
            if interval_ns == 0 {
                return Err(err("interval_ns", "0: expected a positive interval".into()));
            }
            let start_ns = h.start_ns.unwrap_or(0);
            let stop_ns = h.stop_ns.unwrap_or(u64::MAX);
            if stop_ns <= start_ns {
                return Err(err("stop_ns", format!("{stop_ns}: expected after start_ns ({start_ns})")));
            }
            Ok(HostAgent::PfcStorm(PfcStormSpec {
                priority,
                quanta: h.quanta.unwrap_or(0xffff),
                start_ns,
                stop_ns,
                interval_ns,
            }))
        }
        "rc" => Ok(HostAgent::Rc),
        "dta_collector" => Ok(HostAgent::DtaCollector {
            config: h
                .config
                .clone()
                .ok_or_else(|| err("config", "agent \"dta_collector\" needs its config".into()))?,
        }),
        "dta_reporter" => {
            let to =
                h.to.as_ref()
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| err("to", "the collectors' addresses".into()))?;
            let to = to
                .iter()
                .map(|a| a.parse().map_err(|_| err("to", format!("{a:?} is not an IPv4 address"))))
                .collect::<Result<Vec<_>, _>>()?;
            let redundancy = h.redundancy.unwrap_or(2);
            if !(1..=8).contains(&redundancy) {
                return Err(err("redundancy", format!("{redundancy}: expected 1..=8")));
            }
            let kind = match h.primitive.as_deref().unwrap_or("keywrite") {
                "keywrite" => LoadKind::KeyWrite { redundancy },
                "keyincrement" => LoadKind::KeyIncrement { redundancy, counter: 1 },
                "append" => LoadKind::Append { lists: h.lists.unwrap_or(1).max(1) },
                "postcarder" => LoadKind::Postcarder { hops: 5 },
                o => {
                    return Err(err(
                        "primitive",
                        format!("{o:?}: expected keywrite, keyincrement, append or postcarder"),
                    ));
                }
            };
            let count = h.count.ok_or_else(|| err("count", "how many reports".into()))?;
            Ok(HostAgent::DtaReporter(ReporterSpec {
                to,
                spec: LoadSpec {
                    kind,
                    keys: h.keys.unwrap_or(1000).max(1),
                    key_base: 0,
                    priority: wire::dta::Priority::High,
                    retransmittable: true,
                    immediate_every: 0,
                    keywrite_data_len: 4,
                    scramble: true,
                },
                count,
                rate: h.rate.unwrap_or(0),
                start_ns: h.start_ns.unwrap_or(0),
            }))
        }
        o => Err(err(
            "agent",
            format!(
                "unknown agent {o:?}; expected \"rc\", \"dta_reporter\", \"dta_collector\" or \"pfc_storm\""
            ),
        )),
    }
}
