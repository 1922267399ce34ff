//! The machine model programs are written against: what a P4 program sees on Tofino.
//!
//! A program declares its resources — match-action tables, register arrays, counters, meters,
//! hash units — each with a name and a size, through a [`Resources`] registry, which is what
//! `dataplane resources` prints as a compiler's resource report would. It names its drop
//! reasons through [`DropReasons`] so that every drop is counted under a name.

mod counter;
mod exact;
mod hash;
mod lpm;
mod meter;
mod register;
mod ternary;

pub use counter::CounterArray;
pub use exact::ExactTable;
pub use hash::{HashAlgo, HashUnit};
pub use lpm::LpmTable;
pub use meter::{Color, MeterArray, MeterConfig};
pub use register::RegisterArray;
pub use ternary::TernaryTable;

use std::fmt::Write as _;

/// Why a table update failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// The table holds as many entries as it was declared with.
    #[error("table {table}: full ({capacity} entries)")]
    Full {
        /// The table.
        table: &'static str,
        /// Its declared size.
        capacity: usize,
    },
    /// A key or prefix the table cannot hold.
    #[error("table {table}: invalid key: {reason}")]
    InvalidKey {
        /// The table.
        table: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

/// What kind of resource a declaration is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    /// Exact-match table.
    ExactTable,
    /// Longest-prefix-match table.
    LpmTable,
    /// Ternary table with priorities.
    TernaryTable,
    /// Register array.
    RegisterArray,
    /// Packet and byte counters.
    CounterArray,
    /// Two-rate three-colour meters.
    MeterArray,
    /// CRC hash unit.
    HashUnit,
    /// Multicast replication groups.
    MulticastGroups,
}

impl ResourceKind {
    /// A short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ExactTable => "exact",
            Self::LpmTable => "lpm",
            Self::TernaryTable => "ternary",
            Self::RegisterArray => "register",
            Self::CounterArray => "counter",
            Self::MeterArray => "meter",
            Self::HashUnit => "hash",
            Self::MulticastGroups => "multicast",
        }
    }
}

/// One declared resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// Name, unique per program.
    pub name: &'static str,
    /// Kind.
    pub kind: ResourceKind,
    /// Entries (table size, array length, groups).
    pub entries: usize,
    /// Key or index width in bits.
    pub key_bits: u32,
    /// Value or action-data width in bits.
    pub value_bits: u32,
    /// Memory reserved for it, in bytes.
    pub bytes: usize,
    /// Anything else worth saying (algorithm, structure).
    pub detail: String,
}

/// The registry of a program's declared resources.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    list: Vec<ResourceInfo>,
}

impl Resources {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record a resource. Names must be unique; a second declaration under the same name is a
    /// programming error and panics at construction, never on the packet path.
    pub fn declare(&mut self, info: ResourceInfo) {
        assert!(self.list.iter().all(|r| r.name != info.name), "resource {:?} declared twice", info.name);
        self.list.push(info);
    }

    /// Add every resource of `more`, after these (names stay unique).
    pub fn extend(&mut self, more: Resources) {
        for r in more.list {
            self.declare(r);
        }
    }

    /// The declared resources, in declaration order.
    pub fn list(&self) -> &[ResourceInfo] {
        &self.list
    }

    /// Total memory of all resources.
    pub fn total_bytes(&self) -> usize {
        self.list.iter().map(|r| r.bytes).sum()
    }

    /// A resource report in the style of a P4 compiler's: one line per resource, then totals.
    pub fn report(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<28} {:<9} {:>10} {:>8} {:>10} {:>12}  detail",
            "resource", "kind", "entries", "key b", "value b", "memory"
        );
        for r in &self.list {
            let _ = writeln!(
                s,
                "{:<28} {:<9} {:>10} {:>8} {:>10} {:>12}  {}",
                r.name,
                r.kind.name(),
                r.entries,
                r.key_bits,
                r.value_bits,
                human_bytes(r.bytes),
                r.detail
            );
        }
        let _ = writeln!(s, "{} resources, {} in all", self.list.len(), human_bytes(self.total_bytes()));
        s
    }
}

/// `1536` → `1.5 KiB`.
pub fn human_bytes(b: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else { format!("{v:.1} {}", UNITS[u]) }
}

/// A counted reason for dropping a packet: an index into [`DropReasons`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DropReason(pub u16);

/// The names of every drop reason a switch counts: the switch's own first, then the program's.
#[derive(Debug, Clone)]
pub struct DropReasons {
    names: Vec<&'static str>,
}

impl DropReasons {
    /// A registry holding the switch's built-in reasons ([`builtin`]).
    pub fn new() -> Self {
        Self { names: builtin::ALL.to_vec() }
    }

    /// The reason called `name`, declared now if it is new.
    pub fn declare(&mut self, name: &'static str) -> DropReason {
        if let Some(i) = self.names.iter().position(|n| *n == name) {
            return DropReason(i as u16);
        }
        self.names.push(name);
        DropReason((self.names.len() - 1) as u16)
    }

    /// The name of a reason.
    pub fn name(&self, r: DropReason) -> &'static str {
        self.names.get(usize::from(r.0)).copied().unwrap_or("unknown")
    }

    /// All names, indexed by reason.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }
}

impl Default for DropReasons {
    fn default() -> Self {
        Self::new()
    }
}

/// Drop reasons of the switch itself, at fixed indices.
pub mod builtin {
    use super::DropReason;

    /// A frame too short or inconsistent to parse.
    pub const MALFORMED: DropReason = DropReason(0);
    /// No packet buffer was free.
    pub const NO_BUFFER: DropReason = DropReason(1);
    /// The shared buffer (or a lossless headroom) was full.
    pub const BUFFER_FULL: DropReason = DropReason(2);
    /// A lossy egress queue was over its dynamic threshold.
    pub const QUEUE_FULL: DropReason = DropReason(3);
    /// A packet recirculated more times than allowed.
    pub const RECIRC_LIMIT: DropReason = DropReason(4);
    /// The queue to the switch CPU was full.
    pub const CPU_QUEUE_FULL: DropReason = DropReason(5);
    /// A destination port or multicast group that does not exist.
    pub const BAD_DESTINATION: DropReason = DropReason(6);
    /// The port's transmit ring refused the packet.
    pub const TX_FULL: DropReason = DropReason(7);
    /// A MAC Control (PAUSE/PFC) frame, consumed by the MAC.
    pub const MAC_CONTROL: DropReason = DropReason(8);
    /// Dropped by a program without a more specific reason.
    pub const PROGRAM: DropReason = DropReason(9);

    /// Their names, in index order.
    pub const ALL: [&str; 10] = [
        "malformed",
        "no_buffer",
        "buffer_full",
        "queue_full",
        "recirc_limit",
        "cpu_queue_full",
        "bad_destination",
        "tx_full",
        "mac_control",
        "program",
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_reasons_keep_builtins_first() {
        let mut d = DropReasons::new();
        assert_eq!(d.name(builtin::TX_FULL), "tx_full");
        let ttl = d.declare("ttl_expired");
        assert_eq!(ttl, DropReason(builtin::ALL.len() as u16));
        assert_eq!(d.declare("ttl_expired"), ttl);
        assert_eq!(d.declare("malformed"), builtin::MALFORMED);
        assert_eq!(d.name(DropReason(999)), "unknown");
    }

    #[test]
    fn report_lists_every_resource() {
        let mut r = Resources::new();
        let _t: ExactTable<u64, u16> = ExactTable::new(&mut r, "mac", 1024, 48, 16);
        let _l: LpmTable<u16> = LpmTable::new(&mut r, "routes", 1000);
        let rep = r.report();
        assert!(
            rep.contains("mac") && rep.contains("exact") && rep.contains("routes") && rep.contains("lpm")
        );
        assert!(rep.contains("2 resources"));
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
