//! The machine model programs are written against: what a P4 program sees on Tofino.
//!
//! A program declares what it is made of, in the typed terms of [`decl`]: its parser over
//! `wire`'s header specifications, its metadata, and its resources — match-action tables with
//! their key fields, match kinds and actions, register arrays with their cell layouts,
//! counters, meters, hash units with their inputs, multicast groups, digests. The constructors
//! of the resources here take those declarations, so nothing exists undeclared; [`Resources`]
//! keeps them, for `dataplane resources` and the P4 exporter. A program names its drop reasons
//! through [`DropReasons`] so that every drop is counted under a name.

mod counter;
pub mod decl;
mod exact;
mod hash;
mod lpm;
mod meter;
mod register;
mod ternary;

pub use counter::CounterArray;
pub use decl::{
    ActionDecl, Decl, DeclKind, FieldRef, Instance, KeyDecl, MatchKind, MeterUnit, Next, Param, ParserDecl,
    StateDecl, TableDecl, Transition, action, inst, on, param, stack,
};
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

/// A program's declarations: its parser, its metadata, and every resource it declared, in
/// declaration order. What `dataplane resources` prints and the P4 exporter walks.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    parser: ParserDecl,
    metadata: Vec<Param>,
    list: Vec<Decl>,
}

impl Resources {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record a resource. Names must be unique; a second declaration under the same name is a
    /// programming error and panics at construction, never on the packet path.
    pub fn declare(&mut self, d: Decl) {
        assert!(self.list.iter().all(|r| r.name != d.name), "resource {:?} declared twice", d.name);
        self.list.push(d);
    }

    /// Declare the parser (replacing any: a program built on another declares its own).
    pub fn set_parser(&mut self, p: ParserDecl) {
        self.parser = p;
    }

    /// Declare metadata fields of the program's own (names unique).
    pub fn declare_metadata(&mut self, fields: &[Param]) {
        for f in fields {
            assert!(self.metadata.iter().all(|m| m.name != f.name), "metadata {:?} declared twice", f.name);
            self.metadata.push(*f);
        }
    }

    /// Add every declaration of `more` after these (names stay unique; `more`'s parser, if it
    /// has states, replaces this one).
    pub fn extend(&mut self, more: Resources) {
        if !more.parser.states.is_empty() {
            self.parser = more.parser;
        }
        self.declare_metadata(&more.metadata);
        for r in more.list {
            self.declare(r);
        }
    }

    /// The declared parser.
    pub fn parser(&self) -> &ParserDecl {
        &self.parser
    }

    /// The program's own metadata.
    pub fn metadata(&self) -> &[Param] {
        &self.metadata
    }

    /// The declared resources, in declaration order.
    pub fn list(&self) -> &[Decl] {
        &self.list
    }

    /// The resource called `name`.
    pub fn get(&self, name: &str) -> Option<&Decl> {
        self.list.iter().find(|d| d.name == name)
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Option<&TableDecl> {
        match &self.get(name)?.kind {
            DeclKind::Table(t) => Some(t),
            _ => None,
        }
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
            "{:<28} {:<9} {:>10} {:>8} {:>10} {:>12}",
            "resource", "kind", "entries", "key b", "value b", "memory"
        );
        for r in &self.list {
            let _ = writeln!(
                s,
                "{:<28} {:<9} {:>10} {:>8} {:>10} {:>12}",
                r.name,
                r.kind.name(),
                r.size,
                r.key_bits(),
                r.value_bits(),
                human_bytes(r.bytes),
            );
            if matches!(r.kind, DeclKind::Register { .. }) && !r.detail.is_empty() {
                let _ = writeln!(s, "  {}", r.detail);
            }
        }
        let _ = writeln!(s, "{} resources, {} in all", self.list.len(), human_bytes(self.total_bytes()));
        s
    }

    /// Every declaration in full: the headers and the parser, the metadata, then each resource
    /// with its keys, match kinds, actions and layouts (`dataplane resources`).
    pub fn declarations(&self) -> String {
        let mut s = String::new();
        let instances = self.parser.instances();
        if !instances.is_empty() {
            let _ = writeln!(s, "headers:");
            let mut seen: Vec<&str> = Vec::new();
            for i in &instances {
                if seen.contains(&i.header.name) {
                    continue;
                }
                seen.push(i.header.name);
                let fields: Vec<String> =
                    i.header.fields.iter().map(|f| format!("{} {}", f.name, f.width)).collect();
                let _ = writeln!(s, "  {} ({} B): {}", i.header.name, i.header.len, fields.join(", "));
            }
            let _ = writeln!(s, "parser:");
            let _ = write!(s, "{}", self.parser);
        }
        let intrinsic =
            |p: &[Param]| p.iter().map(|p| format!("{} {}", p.name, p.width)).collect::<Vec<_>>().join(", ");
        let _ = writeln!(s, "metadata:");
        let _ = writeln!(s, "  ingress intrinsic: {}", intrinsic(decl::INGRESS_INTRINSIC));
        let _ = writeln!(s, "  egress intrinsic: {}", intrinsic(decl::EGRESS_INTRINSIC));
        if !self.metadata.is_empty() {
            let _ = writeln!(s, "  program: {}", intrinsic(&self.metadata));
        }
        let _ = writeln!(s, "resources:");
        for r in &self.list {
            let _ = writeln!(s, "  {} {} [{}]: {}", r.kind.name(), r.name, r.size, r.describe());
        }
        s
    }
}

/// A key a table stores: an integer the declared key fields are packed into, most significant
/// first, so the key a packet is looked up with can be compared with the declared fields.
pub trait TableKey: Copy + Eq + std::hash::Hash {
    /// Its width.
    const BITS: u32;
    /// Its value.
    fn bits(&self) -> u128;
}

macro_rules! table_key {
    ($($t:ty),*) => {$(
        impl TableKey for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn bits(&self) -> u128 {
                u128::from(*self)
            }
        }
    )*};
}
table_key!(u8, u16, u32, u64, u128);

/// The keys a table was looked up with: recorded in this crate's test builds, so each
/// program's tests can hold its lookups to its declared keys; nothing at all otherwise.
#[derive(Debug, Clone, Default)]
pub(crate) struct Trace {
    #[cfg(test)]
    keys: std::cell::RefCell<Vec<u128>>,
}

impl Trace {
    /// Record a lookup's key (test builds; the last 4096).
    #[inline(always)]
    pub(crate) fn record(&self, _key: u128) {
        #[cfg(test)]
        {
            let mut k = self.keys.borrow_mut();
            if k.len() < 4096 {
                k.push(_key);
            }
        }
    }

    /// The keys recorded since the last call.
    pub(crate) fn take(&self) -> Vec<u128> {
        #[cfg(test)]
        return self.keys.take();
        #[cfg(not(test))]
        Vec::new()
    }
}

/// A table declaration for the model's own tests: `name`, `size` entries, one exact key of
/// `key_bits` metadata bits, one action.
#[cfg(test)]
pub(crate) fn test_table(name: &'static str, size: usize, key_bits: u16) -> TableDecl {
    TableDecl::new(
        name,
        size,
        &[KeyDecl::exact(FieldRef::meta("key", key_bits))],
        vec![action("hit", &[])],
        "miss",
    )
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
        let _t: ExactTable<u64, u16> = ExactTable::new(&mut r, test_table("mac", 1024, 48));
        let _l: LpmTable<u16> = LpmTable::new(&mut r, test_table("routes", 1000, 32));
        let rep = r.report();
        assert!(
            rep.contains("mac") && rep.contains("exact") && rep.contains("routes") && rep.contains("1000")
        );
        assert!(rep.contains("2 resources"));
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
