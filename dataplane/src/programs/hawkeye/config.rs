//! The `[hawkeye]` section, as written; [`Hawkeye::build`](super::Hawkeye::build) validates it.

use serde::Deserialize;

/// The `[hawkeye]` section of program `hawkeye`: the epochs, the flow table, the polling
/// packets' queue, and where telemetry reports go.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HawkeyeSection {
    /// Epoch banks kept (a power of two, 1..=16; default 4).
    pub epochs: Option<usize>,
    /// Epoch length, ns (a power of two; default 2^20 = 1 048 576).
    pub epoch_ns: Option<u64>,
    /// Flow slots per epoch (a power of two up to 2^20; default 65 536).
    pub flow_slots: Option<usize>,
    /// TM queues whose packets the telemetry counts (default: `[tm] lossless`, the RDMA data
    /// priorities PFC acts on; every queue when none is lossless). Acknowledgements and CNPs in
    /// a priority of their own never wait behind data: counted as flows of the data's queue they
    /// would look like contention they cannot cause.
    pub queues: Option<Vec<u8>>,
    /// TM queue of polling packets: a priority PFC never pauses (not in `[tm] lossless`;
    /// default 7).
    pub polling_queue: Option<u8>,
    /// This switch's ID in its reports (default 1).
    pub switch_id: Option<u16>,
    /// `"address:port"` of the analyzer the control side sends UDP reports to.
    pub analyzer: Option<String>,
    /// Reports' source address (default: the switch's address on the port towards the
    /// analyzer).
    pub source_ip: Option<String>,
    /// UDP source port of reports (default 0x4857).
    pub src_port: Option<u16>,
    /// Snapshots the control side can have pending (default 64); more are counted and dropped.
    pub pending: Option<usize>,
    /// A port passes each polling event (event ID and victim source) once per this long, ns
    /// (default 500 000: the reference simulator's 0.5 ms per port). It ends a trace around a
    /// dependency cycle; keep it below the detection agents' poll interval, or a victim polling
    /// again finds the switches it crossed refusing it a fresh snapshot.
    pub dedup_ns: Option<u64>,
    /// A DTA collector's (or translator's) address: reports also go there as DTA Append
    /// reports, one 32-bit word each, to list `dta_list` — Hawkeye telemetry in collector
    /// memory through the translator.
    pub dta_collector: Option<String>,
    /// The Append list (default: the switch ID).
    pub dta_list: Option<u32>,
    /// UDP port of DTA reports (default 40040).
    pub dta_port: Option<u16>,
}
