//! The `[l2l3]` section: table sizes, QoS, INT stamping and static entries.

use std::fmt::Write as _;

use serde::Deserialize;

use super::{DEFAULT_MAC_AGING_S, DEFAULT_MAC_TABLE, DEFAULT_NEIGHBORS, DEFAULT_ROUTES};

/// The `[l2l3]` section, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2l3Section {
    /// MAC table size.
    pub mac_table_size: Option<usize>,
    /// Seconds after which a learned MAC is forgotten.
    pub mac_aging_s: Option<u64>,
    /// LPM table size.
    pub route_table_size: Option<usize>,
    /// Neighbor table size.
    pub neighbor_table_size: Option<usize>,
    /// `"dscp"` (queue = DSCP >> 3, the default) or `"pcp"` (the 802.1Q priority).
    pub qos: Option<String>,
    /// Stamp HPCC++ INT at egress with this switch ID (`wire::hpcc_int`; off when absent).
    pub int_switch_id: Option<u16>,
    /// Static MAC entries.
    #[serde(default)]
    pub static_mac: Vec<StaticMac>,
    /// Routes.
    #[serde(default)]
    pub route: Vec<RouteEntry>,
    /// Static neighbors.
    #[serde(default)]
    pub neighbor: Vec<NeighborEntry>,
}

/// `{ mac = "…", port = "p1" }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticMac {
    /// The address.
    pub mac: String,
    /// The port behind it.
    pub port: String,
}

/// `{ prefix = "10.0.0.0/8", via = ["10.0.1.2", …] }` (several next hops: ECMP), or
/// `{ prefix = …, port = "p1" }` for a directly connected prefix.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteEntry {
    /// Destination prefix.
    pub prefix: String,
    /// Next hops.
    #[serde(default)]
    pub via: Vec<String>,
    /// Connected on this port.
    pub port: Option<String>,
}

/// `{ ip = "…", mac = "…", port = "p1" }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborEntry {
    /// Address.
    pub ip: String,
    /// Its MAC.
    pub mac: String,
    /// The port it is on.
    pub port: String,
}

impl L2l3Section {
    /// The section resolved, every default filled in, as `dataplane check` prints it.
    pub fn resolved(&self) -> String {
        let mut f = String::new();
        let _ = writeln!(f, "\n[l2l3]");
        let _ = writeln!(f, "mac_table_size = {}", self.mac_table_size.unwrap_or(DEFAULT_MAC_TABLE));
        let _ = writeln!(f, "mac_aging_s = {}", self.mac_aging_s.unwrap_or(DEFAULT_MAC_AGING_S));
        let _ = writeln!(f, "route_table_size = {}", self.route_table_size.unwrap_or(DEFAULT_ROUTES));
        let _ =
            writeln!(f, "neighbor_table_size = {}", self.neighbor_table_size.unwrap_or(DEFAULT_NEIGHBORS));
        let _ = writeln!(f, "qos = {:?}", self.qos.as_deref().unwrap_or("dscp"));
        if let Some(id) = self.int_switch_id {
            let _ = writeln!(f, "int_switch_id = {id}");
        }
        for m in &self.static_mac {
            let _ = writeln!(f, "static_mac = [{{ mac = {:?}, port = {:?} }}]", m.mac, m.port);
        }
        for r in &self.route {
            let _ = writeln!(
                f,
                "route = [{{ prefix = {:?}, via = {:?}, port = {:?} }}]",
                r.prefix, r.via, r.port
            );
        }
        for n in &self.neighbor {
            let _ = writeln!(f, "neighbor = [{{ ip = {:?}, mac = {:?}, port = {:?} }}]", n.ip, n.mac, n.port);
        }
        f
    }
}
