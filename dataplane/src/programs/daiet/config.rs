//! The `[daiet]` section, as written; [`Daiet::build`](super::Daiet::build) validates it.

use serde::Deserialize;

/// The `[daiet]` section of program `daiet`: the aggregation trees this switch is a node of.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaietSection {
    /// UDP destination port of DAIET packets (default 10000, the reference's).
    pub udp_port: Option<u16>,
    /// Most pairs a packet may carry, and what flushed packets carry (default 10: the paper's
    /// parse limit; 1..=64).
    pub max_entries: Option<usize>,
    /// Source address of what the switch sends (default: its address on the port towards the
    /// reducer).
    pub source_ip: Option<String>,
    /// The trees.
    #[serde(default)]
    pub tree: Vec<TreeSection>,
}

/// One `[[daiet.tree]]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeSection {
    /// Tree ID (the reducer's, as the packets carry it).
    pub id: u32,
    /// The reducer's IPv4 address: flushed pairs go there (through the next DAIET switch of the
    /// tree, if any, which aggregates them again); the egress is the route's.
    pub reducer: String,
    /// Children sending END packets to this switch (mappers or DAIET switches below it).
    pub children: u32,
    /// Register cells (a power of two up to 2^20; default 16 384, the paper's).
    pub cells: Option<usize>,
    /// Aggregation function: `sum` (saturating), `min` or `max` (default `sum`).
    pub function: Option<String>,
}
