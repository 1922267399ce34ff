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
//! * **port → flow** (contention): the paper's `ReplayQueue` and `Contribution` — each packet
//!   waits for the packets ahead of it, as many as its flow's mean depth at enqueue (bytes over
//!   the port's mean packet size); `w(f, g)` = packets of `g` that `f`'s packets waited for, per
//!   `f` packet; the weight to `f` is `Σ_g w(g, f) − Σ_g w(f, g)`: positive for contributors,
//!   negative for victims. Paused packets are excluded, as the paper says. Which packets were
//!   ahead is [`Params::replay`]: the paper's even spread ([`Replay::Even`]) or, the default,
//!   the same with a FIFO's order kept ([`Replay::QueueOrder`], below).
//!
//! **The one deviation from the paper, and why** ([`Replay::QueueOrder`], the default). The
//! paper's `ReplayQueue` spreads each flow's packets evenly over the epoch, so a packet at depth
//! `D` waited for a cross-section of the whole epoch's traffic. A FIFO says more: a packet at
//! position `j` of the queue had itself met at least `j` packets when it arrived, so a flow
//! whose packets met a near-empty queue cannot have filled the deep positions a burst's packets
//! waited behind; and a packet can wait for packets of the epoch before its own (still queued)
//! but never for later ones. `QueueOrder` draws position `j` from the flows whose mean depth is
//! at least `j`, over the packet's epoch and the earlier ones of the incident, in proportion to
//! their packets; `w(f, g)` is normalised per epoch as before. What it changes, measured (the
//! eval's 100 traces per class, BENCHMARKS.md): a long flow into the receiver that crossed the
//! queue before a burst built it in the same epoch was named the burst's root cause (micro-burst
//! incast precision 0.87, plain contention 0.93); a flow arriving into a burst's draining queue
//! in the next epoch was named too, its packets the only thing the burst's stragglers could
//! "wait for" in an epoch replayed alone. `Replay::Even` is kept for comparison
//! (`softfabric hawkeye eval --replay even`).
//!
//! Choices the paper leaves open, made here:
//! * The telemetry of all the epochs an incident's reports carry is summed for the port and
//!   flow nodes, the port → port and the flow → port edges (the control side reports every
//!   epoch the switch keeps). The port → flow
//!   contributions are computed for the waiting packets epoch by epoch, as the reference
//!   analyzer weighs `epoch_now` and `epoch_last` each on its own, and then summed: replaying
//!   two epochs' sums as one queue spreads a quiet epoch's flows over the next epoch's burst.
//!   Entries reported twice (several copies of a poll through one switch) count once.
//! * A port is paused by PFC when it counted paused packets **or** a polling copy left it with
//!   the PFC bit set (A.5's rules set it where the port is paused now): packets a pause holds
//!   are counted only when they leave, so a port paused for the whole epoch counts none.
//! * A polling copy that entered a switch from a paused port `U` and left it by a port `P` it
//!   found paused adds the edge `U → P` even when the meters are empty (a pause that holds
//!   everything leaves them so); its weight is the formula's with the whole share of the meter.
//! * A downstream port is "congested" when it was paused itself or its mean depth at enqueue
//!   was at least [`Params::congested_bytes`]. Its depth is over all its packets, paused ones
//!   included (§3.5.1's `qdepth[P_j]`): a port paused downstream still shows the queue the pause
//!   built, so a deadlock's loop of paused ports keeps its port → port weights.
//! * `Replay::Even` over more than [`Params::replay_max`] packets at one port scales every
//!   flow's count down in proportion (the weights are per packet, so the scale cancels but for
//!   rounding). `Replay::QueueOrder` is computed in closed form (no packet-level replay).

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
    /// How the packets ahead of a waiting packet are drawn (default [`Replay::QueueOrder`]).
    pub replay: Replay,
    /// The victims' paused share on their path below which PFC backpressure by contention is
    /// congestion, no anomaly ([`super::diagnose::NO_ANOMALY_RULE`]; default 0.05: one packet in
    /// 20).
    pub min_victim_paused: f64,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            congested_bytes: 1500.0,
            contributor: 0.05,
            replay_max: 20_000,
            replay: Replay::QueueOrder,
            min_victim_paused: 0.05,
        }
    }
}

/// How `ReplayQueue` draws the packets a packet waited for (the port → flow contributions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replay {
    /// The paper's: each flow's packets spread evenly over the epoch and interleaved; a packet
    /// at depth `D` waited for the `D` packets before it in that interleave, whatever depth
    /// they saw themselves.
    Even,
    /// The paper's, with a FIFO's order kept: a packet at position `j` of the queue (0 = the
    /// head) when another arrived had itself met at least `j` packets ahead of it when it
    /// arrived. Each packet is taken at its flow's mean depth (as `Even` takes the waiting
    /// packet), so position `j` is drawn from the flows whose mean depth is at least `j`, in
    /// proportion to their packets. A flow that crossed a near-empty queue in the same epoch as a
    /// burst is no longer spread over the burst's deep queue.
    #[default]
    QueueOrder,
}

impl std::str::FromStr for Replay {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "even" => Ok(Self::Even),
            "queue-order" => Ok(Self::QueueOrder),
            _ => Err(format!("replay: expected `even` or `queue-order`, got `{s}`")),
        }
    }
}

/// A port node's telemetry, summed over the incident's epochs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PortStats {
    /// Packets.
    pub pkts: u64,
    /// Paused packets.
    pub paused: u64,
    /// Queue depth at enqueue, bytes, summed over all its packets.
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
    /// Mean depth at enqueue over its packets, bytes (0 if none): §3.5.1's `qdepth[P_j]`,
    /// `1/N · Σ qdepth(pkt_k)` over the port's N packets, paused ones included (the switch's
    /// port cell sums every packet's depth; its flow cells, unpaused packets' only).
    pub fn qdepth(&self) -> f64 {
        if self.pkts == 0 { 0.0 } else { self.qdepth_sum as f64 / self.pkts as f64 }
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
    // The port's mean packet in an epoch: what a depth in bytes is in packets.
    let mean_pkt = |pi: usize, e: u32| -> f64 {
        let p = g.ports[pi].0;
        let pkts = port_e.get(&(p.switch_id, p.port, e)).map_or(0, |x| u64::from(x.0));
        let bytes = port_bytes.get(&(p.switch_id, p.port, e)).copied().unwrap_or(0);
        let ps = g.ports[pi].1;
        if pkts > 0 && bytes > 0 {
            bytes as f64 / pkts as f64
        } else if ps.pkts > 0 && ps.bytes > 0 {
            ps.bytes as f64 / ps.pkts as f64
        } else {
            1000.0
        }
    };
    let mut contributions: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    match params.replay {
        Replay::Even => {
            for (&(pi, e), at) in &by_epoch {
                for (f, c) in contribution(at, mean_pkt(pi, e), params.replay_max) {
                    *contributions.entry((pi, f)).or_default() += c;
                }
            }
        }
        Replay::QueueOrder => {
            let mut by_port: BTreeMap<usize, Vec<Class>> = BTreeMap::new();
            for (&(pi, e), at) in &by_epoch {
                let mp = mean_pkt(pi, e);
                for (f, st) in at {
                    let n = st.pkts.saturating_sub(st.paused);
                    if n == 0 {
                        continue;
                    }
                    // Capped: a depth in packets past 2^32 is nonsense from bad counters.
                    let depth =
                        ((st.qdepth_sum as f64 / n as f64) / mp).round().min(f64::from(u32::MAX)) as u64;
                    by_port.entry(pi).or_default().push(Class { flow: *f, epoch: e, n: n as f64, depth });
                }
            }
            for (pi, classes) in &by_port {
                for (f, c) in contribution_in_queue_order(classes) {
                    *contributions.entry((*pi, f)).or_default() += c;
                }
            }
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

/// A flow's unpaused packets at a port in one epoch, for [`Replay::QueueOrder`].
#[derive(Debug, Clone, Copy)]
struct Class {
    flow: usize,
    epoch: u32,
    /// Unpaused packets.
    n: f64,
    /// Their mean depth at enqueue, packets.
    depth: u64,
}

/// `ReplayQueue` and `Contribution` at one port over the incident's epochs,
/// [`Replay::QueueOrder`]: `classes` = each flow's unpaused packets there per epoch.
///
/// A packet of class `c` (epoch `e`, mean depth `D_c` packets) waited for the packets at
/// positions `j < D_c` ahead of it. Position `j` is held by a packet of class `c'` with
/// probability `n_c'·[D_c' ≥ j] / S_e(j)`, where only classes of epoch `e` or earlier take part
/// (a packet cannot wait for one that came after it) and `S_e(j)` sums their `n·[D ≥ j]`. So
/// a packet of `c` waited for `n_c' · H_e(min(D_c, D_c' + 1))` packets of `c'`, with
/// `H_e(x) = Σ_{j < x} 1 / S_e(j)`. The paper's `w(f, g)` for epoch `e` is that summed over
/// `g`'s classes (per packet of `f` in `e`), the weight to `f` is `Σ_g w(g, f) − Σ_g w(f, g)`
/// per epoch, and the epochs' weights are summed. Exact, no sampling; `O(E·k²)` in the epochs
/// and classes.
fn contribution_in_queue_order(classes: &[Class]) -> Vec<(usize, f64)> {
    let mut flows: Vec<usize> = classes.iter().map(|c| c.flow).collect();
    flows.sort_unstable();
    flows.dedup();
    let k = flows.len();
    let fi = |f: usize| flows.binary_search(&f).unwrap_or(0);
    let mut epochs: Vec<u32> = classes.iter().map(|c| c.epoch).collect();
    epochs.sort_unstable();
    epochs.dedup();
    let mut out = vec![0f64; k];
    for &e in &epochs {
        let eligible: Vec<&Class> = classes.iter().filter(|c| c.epoch <= e).collect();
        // S_e is constant between consecutive distinct depths: `cum[i]` = H_e(steps[i] + 1).
        let mut steps: Vec<u64> = eligible.iter().map(|c| c.depth).collect();
        steps.sort_unstable();
        steps.dedup();
        let mut cum = Vec::with_capacity(steps.len());
        let mut at_least = Vec::with_capacity(steps.len());
        let (mut acc, mut from) = (0.0, 0u64);
        for &d in &steps {
            let s: f64 = eligible.iter().filter(|c| c.depth >= d).map(|c| c.n).sum();
            at_least.push(s);
            acc += (d + 1 - from) as f64 / s;
            cum.push(acc);
            from = d + 1;
        }
        // H_e(x) for 1 ≤ x ≤ the deepest step + 1.
        let h = |x: u64| -> f64 {
            let i = steps.partition_point(|&d| d + 1 < x);
            let (base, lo) = if i == 0 { (0.0, 0) } else { (cum[i - 1], steps[i - 1] + 1) };
            base + (x - lo) as f64 / at_least[i]
        };
        // w[f][g]: packets of g that a packet of f of this epoch waited for (the paper's
        // w(f, g) over this epoch); the weight to f is Σ_g w(g, f) − Σ_g w(f, g).
        let mut w = vec![vec![0f64; k]; k];
        for c in classes.iter().filter(|c| c.epoch == e && c.depth > 0) {
            let f = fi(c.flow);
            for o in eligible.iter().filter(|o| o.flow != c.flow) {
                w[f][fi(o.flow)] += o.n * h(c.depth.min(o.depth + 1));
            }
        }
        for f in 0..k {
            for g in (0..k).filter(|&g| g != f) {
                out[g] += w[f][g];
                out[f] -= w[f][g];
            }
        }
    }
    flows.into_iter().zip(out).collect()
}

/// `ReplayQueue` and `Contribution` at one port, [`Replay::Even`]: `at` = (flow, its stats there).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn class(flow: usize, epoch: u32, n: f64, depth: u64) -> Class {
        Class { flow, epoch, n, depth }
    }

    fn weight(c: &[(usize, f64)], f: usize) -> f64 {
        c.iter().find(|x| x.0 == f).map_or(f64::NAN, |x| x.1)
    }

    /// By hand: A's 10 packets met an empty queue, B's 10 met 4 packets each. Position 0 is
    /// drawn from both (S = 20), positions 1–3 from B alone (A never stood that deep): a B
    /// packet waited for 10 · 1/20 = 0.5 packets of A and A's packets for none. A contributes
    /// +0.5, B −0.5.
    #[test]
    fn queue_order_by_hand() {
        let c = contribution_in_queue_order(&[class(0, 7, 10.0, 0), class(1, 7, 10.0, 4)]);
        assert!((weight(&c, 0) - 0.5).abs() < 1e-12, "{c:?}");
        assert!((weight(&c, 1) + 0.5).abs() < 1e-12, "{c:?}");
    }

    /// Every wait is one flow's gain and another's loss: the weights of a port sum to zero.
    #[test]
    fn queue_order_weights_sum_to_zero() {
        let c = contribution_in_queue_order(&[
            class(0, 1, 2006.0, 40),
            class(1, 1, 66.0, 280),
            class(2, 1, 262.0, 281),
            class(0, 2, 229.0, 877),
            class(3, 2, 35.0, 274),
            class(1, 2, 115.0, 969),
        ]);
        assert_eq!(c.len(), 4);
        assert!(c.iter().map(|x| x.1).sum::<f64>().abs() < 1e-6, "{c:?}");
    }

    /// A long flow that crossed the queue while it was shallow (2 006 packets at 40 packets of
    /// mean depth) shares its epoch with two bursts that built it (66 and 262 packets at 280).
    /// Spread evenly (the paper's replay) it fills most of every burst packet's wait and comes
    /// out the only contributor, the bursts its victims; in queue order it held only the first
    /// 40 positions ahead of them, and the bigger burst is the main contributor.
    #[test]
    fn a_long_flow_through_the_shallow_queue_is_outweighed_by_the_burst() {
        let c = contribution_in_queue_order(&[
            class(0, 1, 2006.0, 40),
            class(1, 1, 66.0, 280),
            class(2, 1, 262.0, 280),
        ]);
        let stats = |n: u64, d: u64| FlowStats { pkts: n, paused: 0, qdepth_sum: n * d * 1000 };
        let even =
            contribution(&[(0, stats(2006, 40)), (1, stats(66, 280)), (2, stats(262, 280))], 1000.0, 20_000);
        // Even: the long flow is the only contributor, both bursts victims.
        assert!(weight(&even, 0) > 0.0 && weight(&even, 1) < 0.0 && weight(&even, 2) < 0.0, "{even:?}");
        // Queue order: the bigger burst first; the long flow keeps what its first 40
        // positions give it, a seventh of the even spread's weight.
        assert!(weight(&c, 2) > weight(&c, 0) && weight(&c, 0) < weight(&even, 0) / 5.0, "{c:?}");
    }

    /// A flow arriving after a burst into its draining queue (the next epoch, 261 packets at
    /// 417 deep, where the burst's last packets are 4 each) waited for the burst's packets of
    /// the epoch before, still queued ahead of it: it is the burst's victim, not its
    /// contributor. Replayed in its own epoch only, its packets look like the queue the
    /// burst's stragglers waited for.
    #[test]
    fn a_flow_into_a_draining_queue_waits_for_the_earlier_epoch() {
        let burst = |f: usize| [class(f, 2, 340.0, 740), class(f, 3, 4.0, 410)];
        let mut classes: Vec<Class> = (1..=6).flat_map(burst).collect();
        classes.push(class(0, 2, 131.0, 423));
        classes.push(class(0, 3, 261.0, 417));
        let c = contribution_in_queue_order(&classes);
        assert!(weight(&c, 0) < 0.0, "{c:?}");
        let only_own_epoch: Vec<Class> = classes.iter().copied().filter(|c| c.epoch == 3).collect();
        let c3 = contribution_in_queue_order(&only_own_epoch);
        assert!(weight(&c3, 0) > 0.0, "{c3:?}");
    }
}
