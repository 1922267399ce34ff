//! The `[ufab]` section, as written; [`Ufab::build`](super::Ufab::build) validates it.

use serde::Deserialize;

/// The `[ufab]` section of program `ufab`: the Bloom filter, the pair records, cleaning, the
/// tx_l window and the ports configured as failed.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UfabSection {
    /// Bytes of the Bloom filter, both banks (default 20 480: the paper's 20 KB; 64..=2^24).
    pub bloom_bytes: Option<usize>,
    /// Pair records (a multiple of 4 up to 2^22; default 32 768).
    pub records: Option<usize>,
    /// Cleaning period, ns: pairs with no probe in a whole period are removed (default 10 s, the
    /// paper's).
    pub clean_period_ns: Option<u64>,
    /// Window of the tx_l estimator, ns (default 32 000: the testbed's 32 µs token period).
    pub tx_window_ns: Option<u64>,
    /// Ports whose link is down: source-routed data to them is dropped, probes come back as
    /// failure notifications (also set at run time: `ufab fail PORT`, `ufab restore PORT`).
    pub failed_ports: Option<Vec<String>>,
}
