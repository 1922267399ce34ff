//! The `[dta_reporter]` section, as written; [`DtaReporter::build`](super::DtaReporter::build)
//! validates it.

use serde::Deserialize;

/// The `[dta_reporter]` section of program `dta_reporter`, as written (the program validates
/// it): what the switch reports about the flows it forwards, and where.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaReporterSection {
    /// Collector addresses; reports are spread over them by key hash (Key-Write,
    /// Key-Increment) or list ID (Append), as every reporter and the queries compute it.
    pub collectors: Vec<String>,
    /// `"keywrite"` (flow → switch and egress port), `"keyincrement"` (flow → bytes) or
    /// `"append"` (flow keys to a list).
    pub primitive: Option<String>,
    /// `"change"` (a flow's first packet and every change of its egress port) or `"sample"`.
    pub trigger: Option<String>,
    /// For `"sample"`: one packet in this many.
    pub sample: Option<u32>,
    /// Key-Write / Key-Increment redundancy.
    pub redundancy: Option<u8>,
    /// Append list ID.
    pub list: Option<u32>,
    /// `"low"`, `"medium"` or `"high"`.
    pub priority: Option<String>,
    /// Sequence-number reports and keep them for resending after a NACK.
    pub retransmittable: Option<bool>,
    /// Retransmittable reports kept.
    pub keep: Option<usize>,
    /// Flow registers for change detection (a power of two).
    pub flows: Option<usize>,
    /// This switch's ID, in Key-Write data.
    pub switch_id: Option<u16>,
    /// Reports' source address (default: the switch's address on the port towards the
    /// collector).
    pub source_ip: Option<String>,
    /// UDP destination port of reports.
    pub udp_port: Option<u16>,
    /// UDP source port of reports.
    pub src_port: Option<u16>,
    /// Reporter epoch, 1..=15, carried in every retransmittable report so the translator tells
    /// a restart from a gap (default: a new one at each start, from the clock).
    pub epoch: Option<u8>,
    /// TM queue of reports.
    pub queue: Option<u8>,
}
