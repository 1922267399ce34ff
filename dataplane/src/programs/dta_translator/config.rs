//! The `[dta]` section of the translator, as written; [`DtaTranslator::build`](super::DtaTranslator::build)
//! validates it.

use serde::Deserialize;

/// The `[dta]` section of a DTA translator, as written (the program validates it).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaSection {
    /// Reports' base-header form: `"long"` (3 bytes, with sequence numbers) or `"short"`.
    pub base: Option<String>,
    /// Key-Write data bytes: 4, 12 or 28.
    pub keywrite_data_len: Option<usize>,
    /// Largest Key-Write / Key-Increment redundancy accepted (1..=8).
    pub max_redundancy: Option<u8>,
    /// How the N copies of a key choose their slots: `"independent"` (default: each copy its
    /// own CRC polynomial) or `"reference"` (the reference's `CRC(key ‖ n)`, whose copies
    /// collide together). The collector's stores must say the same (`hash`).
    pub key_hash: Option<String>,
    /// Priority of short-form reports: `"low"`, `"medium"` or `"high"`.
    pub default_priority: Option<String>,
    /// UDP port reports arrive on.
    pub udp_port: Option<u16>,
    /// The translator's source address towards collectors (default: its address on the port
    /// facing each collector).
    pub source_ip: Option<String>,
    /// TM queue of the RDMA packets.
    pub queue: Option<u8>,
    /// DSCP of the RDMA packets.
    pub dscp: Option<u8>,
    /// ECN codepoint of the RDMA packets (0 Not-ECT, 1 or 2 ECT).
    pub ecn: Option<u8>,
    /// AckReq at least every this many packets per QP.
    pub ack_every: Option<u32>,
    /// Outstanding RDMA packets per QP.
    pub window: Option<u32>,
    /// Smallest congestion window per QP after a NAK or timeout (default 16; 1..=window): the
    /// requests in flight are halved on a sequence NAK and dropped to this on a timeout, and
    /// grow back as TCP's do (`roce::requester`), so go-back-N under loss resends a window's
    /// worth, not `window`.
    pub min_window: Option<u32>,
    /// Smallest (and first) retransmission timeout, µs (default 1000); the timeout adapts to
    /// the measured round trip above it.
    pub timeout_us: Option<u64>,
    /// Largest retransmission timeout, µs (default 134218, IBTA's 4.096 µs × 2^15); equal to
    /// `timeout_us`: a fixed timeout.
    pub max_timeout_us: Option<u64>,
    /// Timeouts without progress before a QP is reset and reconnected.
    pub retry_limit: Option<u8>,
    /// An unacknowledged tail older than this (µs) gets a zero-length WRITE asking for an ACK.
    pub ack_probe_us: Option<u64>,
    /// A partial Append batch is written after this long (µs).
    pub append_flush_us: Option<u64>,
    /// Least time between two NACKs for the same gap (or two slow-down messages) to one
    /// reporter, µs (default 20). A new gap is NACKed at once. Keep it under the time a reporter
    /// takes to send 128 reports: its 8-bit sequence numbers cannot name older ones.
    pub nack_interval_us: Option<u64>,
    /// Reporters whose sequence numbers are tracked.
    pub reporters: Option<usize>,
    /// High-priority reports that can wait for the rate to allow them.
    pub park: Option<usize>,
    /// CM answer timeout, ms.
    pub cm_timeout_ms: Option<u64>,
    /// First CM retry backoff, ms (doubles up to 10 s).
    pub cm_backoff_ms: Option<u64>,
    /// How long a connected QP waits for the collector's metadata SEND before it disconnects
    /// and connects again, ms (default 2000).
    pub region_timeout_ms: Option<u64>,
    /// For how long after it starts (ms, default 100) the translator takes a reporter it has
    /// not heard from, first heard at number 32 or more, to be mid-stream — the translator
    /// restarted while reporters were sending — and tracks it from that number, the numbers
    /// before unknown (taken once if they come, never NACKed: its former self may have stored
    /// them). A reporter first heard below 32 has just started: its numbers before are missing
    /// and NACKed. 0: never join; a restarted translator then NACKs what running reporters sent
    /// before it (up to 96 duplicates per reporter if its former self had stored them).
    pub join_ms: Option<u64>,
    /// Seed of the CM communication IDs and starting PSNs (default: a fresh one per start,
    /// so a restarted translator is never taken for its former self's duplicate).
    pub seed: Option<u32>,
    /// The collectors.
    #[serde(default)]
    pub collector: Vec<DtaCollector>,
}

/// One `[[dta.collector]]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaCollector {
    /// Name, for logs.
    pub name: String,
    /// Address.
    pub ip: String,
    /// RDMA packets per second the translator may send it (committed rate); none: unlimited.
    pub rate: Option<u64>,
    /// Peak rate, packets per second (default: `rate`).
    pub peak: Option<u64>,
    /// Burst, packets.
    pub burst: Option<u64>,
    /// librdmacm port of its Key-Write store.
    pub keywrite: Option<u16>,
    /// librdmacm port of its Key-Increment store.
    pub keyincrement: Option<u16>,
    /// The N its Key-Increment store's queries take the minimum over: a Key-Increment report
    /// with another N is refused (`dta_redundancy_mismatch`), since copies it did not write
    /// would read 0. Unset: any N up to `max_redundancy` passes.
    pub keyincrement_redundancy: Option<u8>,
    /// Its Postcarder store.
    pub postcarder: Option<DtaPostcarder>,
    /// Its Append lists.
    #[serde(default)]
    pub append: Vec<DtaList>,
    /// Its sketches.
    #[serde(default)]
    pub sketch: Vec<DtaSketch>,
}

/// `postcarder = { port = 1336, hops = 5, cache = 32768 }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaPostcarder {
    /// librdmacm port.
    pub port: u16,
    /// Hops per path (1..=5).
    pub hops: Option<u8>,
    /// Paths cached while their postcards arrive (a power of two).
    pub cache: Option<usize>,
}

/// `{ list = 0, port = 1338, batch = 16 }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaList {
    /// List ID.
    pub list: u32,
    /// librdmacm port.
    pub port: u16,
    /// Entries per RDMA WRITE (1, 2, 4, 8 or 16).
    pub batch: Option<u32>,
}

/// `{ id = 0, port = 1341, rows = 4, columns = 1024, reporters = [0, 1], batch = 4 }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaSketch {
    /// Sketch ID.
    pub id: u16,
    /// librdmacm port.
    pub port: u16,
    /// Counters per column.
    pub rows: u16,
    /// Columns.
    pub columns: u32,
    /// Reporter IDs whose copies are merged.
    pub reporters: Vec<u16>,
    /// Columns per RDMA WRITE.
    pub batch: Option<u32>,
}
