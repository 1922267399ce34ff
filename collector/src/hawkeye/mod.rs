//! The Hawkeye analyzer (seed `001` §3.5): from the telemetry reports of one incident to a
//! diagnosis — which anomaly, which root cause, along which PFC spreading path, for which victim.
//!
//! Sans-IO: it reads reports (bytes in `wire::hawkeye::report`'s format, or a lab run's decoded
//! JSON lines) and a topology, and returns values; the `collector hawkeye` CLI does the files and
//! sockets.
//!
//! * [`Received`], [`incidents`] — reports grouped into incidents: the reports sharing an event
//!   ID within a window of time; [`Assembler`] does it as reports arrive.
//! * [`Topology`] — which switch port faces which switch port or host (Algorithm 1's `N`).
//! * [`lab`], [`dta`] — reports from a lab run's files, or read back from a DTA collector's
//!   Append lists.
//! * [`graph`] — Algorithm 1: the heterogeneous wait-for provenance graph.
//! * [`diagnose`] — Algorithm 2 and Table 2's six signatures.
//! * [`render`] — the diagnosis as JSON, the graph as DOT and SVG, and a plain summary.
//!
//! What it is not: it does not poll, and it never sees packets — only what the switches'
//! control sides reported. Choices the paper leaves open are listed in [`graph`] and
//! [`diagnose`].

pub mod diagnose;
pub mod dta;
pub mod graph;
pub mod lab;
pub mod render;

use std::collections::HashMap;
use std::net::Ipv4Addr;

use wire::hawkeye::FiveTuple;
use wire::hawkeye::report::{Entry, Report, ReportHeader};

pub use diagnose::{Anomaly, Diagnosis, RootCause, diagnose};
pub use graph::{Graph, Params, PortId, Replay, build};

/// What the analyzer refuses, by input.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// A report did not parse.
    #[error("report {index}: {source}")]
    Report {
        /// Its position in the input.
        index: usize,
        /// Why.
        source: wire::Error,
    },
    /// A line of a JSON input did not parse or lacks a field.
    #[error("{file}:{line}: {why}")]
    Json {
        /// The file.
        file: String,
        /// The line (1-based).
        line: usize,
        /// Why.
        why: String,
    },
    /// The topology is inconsistent.
    #[error("topology: {0}")]
    Topology(String),
}

/// One report as received: when, and its header and entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// When it was received (or taken, in the lab), ns.
    pub t_ns: u64,
    /// The header.
    pub header: ReportHeader,
    /// The entries.
    pub entries: Vec<Entry>,
}

impl Received {
    /// Parse a report's bytes; an entry that does not parse fails the whole report.
    pub fn parse(t_ns: u64, bytes: &[u8]) -> wire::Result<Self> {
        let r = Report::parse(bytes)?;
        let entries = r.entries().collect::<wire::Result<Vec<_>>>()?;
        Ok(Self { t_ns, header: r.header, entries })
    }
}

/// The reports of one event: the polling packet's event ID, the reports carrying it that
/// arrived within the window of the first, and the victim flow if known (the detection agent's
/// polling event says it; the reports alone do not).
#[derive(Debug, Clone, PartialEq)]
pub struct Incident {
    /// The event ID.
    pub event: u8,
    /// When its first report arrived, ns.
    pub t_ns: u64,
    /// Its reports, in arrival order.
    pub reports: Vec<Received>,
    /// The victim flow, when the polling event is known (the latest poll's).
    pub victim: Option<FiveTuple>,
    /// Every victim that polled under this event in the window, oldest first (agents polling in
    /// the same millisecond share an event ID); empty when the polls are not known.
    pub victims: Vec<FiveTuple>,
}

/// Group `reports` into incidents: a report joins the open incident of its event ID if it
/// arrived within `window_ns` of that incident's first report, else opens a new one (event IDs
/// are 8 bits and wrap). Incidents come out in the order they opened.
pub fn incidents(mut reports: Vec<Received>, window_ns: u64) -> Vec<Incident> {
    reports.sort_by_key(|r| r.t_ns);
    let mut out: Vec<Incident> = Vec::new();
    let mut open: HashMap<u8, usize> = HashMap::new();
    for r in reports {
        let e = r.header.event_id;
        match open.get(&e) {
            Some(&i) if r.t_ns.saturating_sub(out[i].t_ns) <= window_ns => out[i].reports.push(r),
            _ => {
                open.insert(e, out.len());
                out.push(Incident {
                    event: e,
                    t_ns: r.t_ns,
                    reports: vec![r],
                    victim: None,
                    victims: Vec::new(),
                });
            }
        }
    }
    out
}

/// Incidents assembled as reports arrive (a UDP listener's view): an incident closes once
/// `window_ns` has passed since its first report, and [`Assembler::poll`] hands it over then.
#[derive(Debug, Clone, Default)]
pub struct Assembler {
    window_ns: u64,
    open: Vec<Incident>,
}

impl Assembler {
    /// An assembler whose incidents span `window_ns`.
    pub fn new(window_ns: u64) -> Self {
        Self { window_ns, open: Vec::new() }
    }

    /// A report arrived (its `t_ns` is when).
    pub fn push(&mut self, r: Received) {
        let (e, t) = (r.header.event_id, r.t_ns);
        match self.open.iter_mut().find(|i| i.event == e && t.saturating_sub(i.t_ns) <= self.window_ns) {
            Some(i) => i.reports.push(r),
            None => self.open.push(Incident {
                event: e,
                t_ns: t,
                reports: vec![r],
                victim: None,
                victims: Vec::new(),
            }),
        }
    }

    /// The incidents whose window has passed at `now`, oldest first.
    pub fn poll(&mut self, now: u64) -> Vec<Incident> {
        let w = self.window_ns;
        let (done, open): (Vec<Incident>, Vec<Incident>) =
            std::mem::take(&mut self.open).into_iter().partition(|i| now.saturating_sub(i.t_ns) > w);
        self.open = open;
        done
    }

    /// Every incident still open (at shutdown).
    pub fn flush(&mut self) -> Vec<Incident> {
        std::mem::take(&mut self.open)
    }
}

/// Algorithm 1 then Algorithm 2 on one incident: its graph and its diagnoses (at least one). A
/// report from a switch the topology does not know leaves the incident undiagnosed, saying so.
pub fn analyze(inc: &Incident, topo: &Topology, params: &graph::Params) -> (Graph, Vec<Diagnosis>) {
    let g = build(inc, topo, params);
    if let Some(s) = g.switches.iter().find(|&&s| !topo.knows(s)) {
        let why = format!("a report from switch {s}, which the topology does not know");
        return (g, vec![Diagnosis::none(inc.victim, why)]);
    }
    let d = diagnose(&g, topo, inc.victim, &inc.victims, params);
    (g, d)
}

/// One victim's own path in `inc`: the victim-path copies' reports hop by hop from the switch
/// its source host attaches to — at each switch the copy that came in where the previous hop
/// left (the one whose port carried the victim's flow, if several did), then across the link —
/// until a host or a switch with no such report. An incident can hold several victims' copies
/// (agents polling in the same millisecond share an event ID); this is what polling only the
/// victim's path, without tracing PFC, would have collected for `victim`.
pub fn victim_path_reports(inc: &Incident, victim: &FiveTuple, topo: &Topology) -> Vec<Received> {
    let mut out = Vec::new();
    let Some(mut at) = topo.host_port(victim.src_ip) else { return out };
    for _ in 0..64 {
        let here: Vec<&Received> = inc
            .reports
            .iter()
            .filter(|r| {
                r.header.flag & 1 != 0 && r.header.switch_id == at.switch_id && r.header.in_port == at.port
            })
            .collect();
        let carries = |r: &&&Received| {
            r.entries.iter().any(|e| matches!(e, Entry::Flow { port, flow, .. } if *port == r.header.out_port && flow == victim))
        };
        let Some(next) = here.iter().find(carries).or(here.first()).map(|r| r.header.out_port) else { break };
        out.extend(here.iter().filter(|r| r.header.out_port == next).map(|r| (*r).clone()));
        match topo.peer(at.switch_id, next) {
            Some(Peer::Switch { switch_id, port }) => at = PortId { switch_id, port },
            _ => break,
        }
    }
    out
}

/// What a switch port faces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Another switch's port.
    Switch {
        /// Its switch ID.
        switch_id: u16,
        /// Its port.
        port: u16,
    },
    /// A host.
    Host {
        /// Its number (the lab's host index; an operator's own numbering otherwise).
        host: u32,
        /// Its address.
        ip: Ipv4Addr,
    },
}

/// The links between switch ports, and between switch ports and hosts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Topology {
    peers: HashMap<(u16, u16), Peer>,
}

impl Topology {
    /// The switch port facing the host with address `ip`.
    pub fn host_port(&self, ip: Ipv4Addr) -> Option<PortId> {
        self.peers
            .iter()
            .filter(|(_, p)| matches!(p, Peer::Host { ip: a, .. } if *a == ip))
            .map(|(&(switch_id, port), _)| PortId { switch_id, port })
            .min()
    }

    /// Port `port` of switch `switch_id` faces `peer`.
    pub fn link(&mut self, switch_id: u16, port: u16, peer: Peer) {
        self.peers.insert((switch_id, port), peer);
    }

    /// What port `port` of switch `switch_id` faces, if known.
    pub fn peer(&self, switch_id: u16, port: u16) -> Option<Peer> {
        self.peers.get(&(switch_id, port)).copied()
    }

    /// Whether the topology knows switch `switch_id`.
    pub fn knows(&self, switch_id: u16) -> bool {
        self.peers.keys().any(|(s, _)| *s == switch_id)
    }

    /// The topology of `hawkeye_topology.json` (a lab run writes it; the format is in
    /// `softfabric::lab::output`): `{"switches": [{"switch_id", "ports": [{"port", "switch_id",
    /// "peer_port"} | {"port", "host", "ip"}]}]}`. Every switch-to-switch link must be
    /// declared from both ends, consistently.
    pub fn from_json(text: &str) -> Result<Self, AnalyzeError> {
        let bad = |why: String| AnalyzeError::Topology(why);
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let switches = v
            .get("switches")
            .and_then(|s| s.as_array())
            .ok_or_else(|| bad("no \"switches\" array".into()))?;
        let u16_of = |o: &serde_json::Value, k: &str, at: &str| {
            o.get(k)
                .and_then(|x| x.as_u64())
                .and_then(|x| u16::try_from(x).ok())
                .ok_or_else(|| bad(format!("{at}: \"{k}\": expected an integer 0..=65535")))
        };
        let mut t = Self::default();
        for (i, s) in switches.iter().enumerate() {
            let at = format!("switches[{i}]");
            let id = u16_of(s, "switch_id", &at)?;
            let ports = s
                .get("ports")
                .and_then(|p| p.as_array())
                .ok_or_else(|| bad(format!("{at}: no \"ports\"")))?;
            for (j, p) in ports.iter().enumerate() {
                let at = format!("{at}.ports[{j}]");
                let port = u16_of(p, "port", &at)?;
                let peer = if p.get("host").is_some() {
                    let host = p
                        .get("host")
                        .and_then(|x| x.as_u64())
                        .and_then(|x| u32::try_from(x).ok())
                        .ok_or_else(|| bad(format!("{at}: \"host\": expected an integer")))?;
                    let ip = p
                        .get("ip")
                        .and_then(|x| x.as_str())
                        .and_then(|x| x.parse().ok())
                        .ok_or_else(|| bad(format!("{at}: \"ip\": expected an IPv4 address")))?;
                    Peer::Host { host, ip }
                } else {
                    Peer::Switch {
                        switch_id: u16_of(p, "switch_id", &at)?,
                        port: u16_of(p, "peer_port", &at)?,
                    }
                };
                t.link(id, port, peer);
            }
        }
        for (&(s, p), peer) in &t.peers {
            if let Peer::Switch { switch_id, port } = *peer
                && t.peer(switch_id, port) != Some(Peer::Switch { switch_id: s, port: p })
            {
                return Err(bad(format!(
                    "switch {s} port {p} faces switch {switch_id} port {port}, which does not face it back"
                )));
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests;
