//! What a run produced: per flow, sampled queues and rates, PFC frames, links, and every
//! switch's and host agent's counters.

/// One flow's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowResult {
    /// Index in the configuration's flow list (sorted by start).
    pub id: usize,
    /// Source host.
    pub src: usize,
    /// Destination host.
    pub dst: usize,
    /// Bytes.
    pub size: u64,
    /// Start, ns.
    pub start_ns: u64,
    /// Flow completion time (the sender has the acknowledgement of its last byte, as the
    /// reference's `fct.txt`), ns; `None` if unfinished.
    pub fct_ns: Option<u64>,
    /// The FCT alone on an idle fabric: base RTT plus serialisation of every packet at line rate.
    pub standalone_ns: u64,
    /// Bytes the sender had acknowledged when the run ended.
    pub acked_bytes: u64,
}

impl FlowResult {
    /// FCT over the standalone FCT (the reference's `fct_analysis.py` slowdown, floored at 1
    /// as it is there).
    pub fn slowdown(&self) -> Option<f64> {
        self.fct_ns.map(|f| (f as f64 / self.standalone_ns as f64).max(1.0))
    }
}

/// A queue sample of one switch port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSample {
    /// Time, ns.
    pub time_ns: u64,
    /// Switch.
    pub switch: usize,
    /// Port.
    pub port: u16,
    /// Bytes queued, all queues.
    pub bytes: u64,
    /// Bytes the port has sent since the start (utilisation over time is its slope).
    pub tx_bytes: u64,
}

/// Bytes one flow's receiver had in order at one time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateSample {
    /// Time, ns.
    pub time_ns: u64,
    /// Flow.
    pub flow: usize,
    /// Bytes delivered in order since the flow started.
    pub rx_bytes: u64,
}

/// A PFC frame a switch sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcEvent {
    /// Time, ns.
    pub time_ns: u64,
    /// Switch.
    pub switch: usize,
    /// Port it left by.
    pub port: u16,
    /// Pause (XOFF) or resume (XON).
    pub pause: bool,
}

/// Everything a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct LabResult {
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// Queue samples.
    pub queues: Vec<QueueSample>,
    /// Delivered bytes of every flow running at each sample time.
    pub rates: Vec<RateSample>,
    /// PFC frames sent by switches.
    pub pfc: Vec<PfcEvent>,
    /// Per switch port: bytes sent and the port's rate (utilisation over the run).
    pub links: Vec<(usize, u16, u64, u64)>,
    /// Per switch port that sent anything: packets by the queue depth they left at, in
    /// `QUEUE_HIST_BYTES` (1000 B) buckets — the distribution at packet granularity.
    pub queue_hist: Vec<(usize, u16, Vec<u64>)>,
    /// Base RTT of the longest path, ns (HPCC++'s `T`).
    pub base_rtt_ns: u64,
    /// Bytes of a full data frame on the wire (headers, INT or labels, MTU payload).
    pub data_frame_len: usize,
    /// Events processed.
    pub events: u64,
    /// Frame buffers: the most frames held at once (in switch queues, on the wires and
    /// being built), and with the bytes of each, what the run's packets took at the peak.
    pub frame_buffers: (usize, usize),
    /// Virtual time simulated, ns.
    pub simulated_ns: u64,
    /// Frames switches dropped (any reason).
    pub switch_drops: u64,
    /// Go-back-N retransmissions (NAKs acted on).
    pub retransmits: u64,
    /// Per switch: its program and its counters (drops by reason, packets consumed, …).
    pub switches: Vec<SwitchSummary>,
    /// Per host: its agent and its counters.
    pub agents: Vec<AgentSummary>,
    /// Records switches made for their operator (Hawkeye's telemetry reports): when the lab
    /// took them (the tick after they were made), the switch, the bytes.
    pub records: Vec<(u64, usize, Vec<u8>)>,
    /// Hawkeye's detection agents' polling events: the host and the event.
    pub polls: Vec<(usize, nic_agent::hawkeye::PollEvent)>,
    /// With `[lab] rtt_samples`: every RC sender's per-ACK RTT samples, per 1 µs bucket
    /// (`rtt_hist.csv`); empty otherwise.
    pub rtt_hist: Vec<u64>,
    /// µFAB runs: every VM-pair at the end (`ufab_pairs.csv`).
    pub ufab_pairs: Vec<UfabPairRow>,
    /// µFAB runs: every path move — (time, flow, path index, why) (`ufab_moves.csv`).
    pub ufab_moves: Vec<(u64, u64, usize, &'static str)>,
    /// Per switch, per port: the node across and its port (the topology, for Hawkeye's
    /// analyzer).
    pub wiring: Vec<Vec<(crate::lab::topology::Node, u16)>>,
    /// Stopped by SIGINT/SIGTERM ([`super::interrupt_on_signals`]) before its end: the results
    /// are those of the virtual time reached, `simulated_ns`.
    pub interrupted: bool,
}

/// A switch's counters at the end of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchSummary {
    /// Switch.
    pub switch: usize,
    /// Its program.
    pub program: &'static str,
    /// Counters by name: drops by reason (non-zero), `consumed`, `to_cpu`, `recirculated`.
    pub counters: Vec<(String, u64)>,
}

/// One µFAB VM-pair (a flow) at the end of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct UfabPairRow {
    /// Sending host.
    pub host: usize,
    /// Flow.
    pub flow: u64,
    /// Its current path (candidate index), if any.
    pub path: Option<usize>,
    /// That path's source route: the egress port at each switch.
    pub route: Vec<u16>,
    /// φ, tokens.
    pub phi: f64,
    /// Its receiver's last admission (infinite: unbound).
    pub phi_d: f64,
    /// Window, bytes.
    pub window: f64,
    /// Eqn (1)'s share r, b/s.
    pub share_bps: f64,
    /// Counters.
    pub stats: nic_agent::ufab::pair::PairStats,
}

/// A host agent's counters at the end of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSummary {
    /// Host.
    pub host: usize,
    /// Its agent.
    pub agent: &'static str,
    /// Counters by name.
    pub counters: Vec<(String, u64)>,
}
