//! IPv4 longest-prefix-match tables.
//!
//! A DIR-16-8-8 structure in the manner of DPDK's `rte_lpm`: a 65 536-entry first level indexed
//! by the top 16 address bits, whose entries hold either a result or a pointer to a 256-entry
//! group for the next 8 bits (twice). A lookup is one to three dependent loads whatever the
//! number of rules. Each entry also records the length of the rule that painted it, so an insert
//! only overwrites entries of shorter rules and a delete repaints its entries with the next
//! shorter covering rule.

use std::net::Ipv4Addr;

use hashbrown::HashMap;

use super::{Decl, DeclKind, Resources, TableDecl, TableError, Trace};

const VALID: u32 = 1 << 31;
const EXT: u32 = 1 << 30;
const INDEX: u32 = (1 << 24) - 1;
const L1: usize = 1 << 16;
const GROUP: usize = 256;

#[derive(Clone, Copy)]
enum Slot {
    L1(usize),
    Group(usize, usize),
}

/// An IPv4 LPM table of at most `capacity` rules.
#[derive(Debug, Clone)]
pub struct LpmTable<V> {
    name: &'static str,
    capacity: usize,
    l1: Vec<u32>,
    l1_depth: Vec<u8>,
    groups: Vec<u32>,
    group_depth: Vec<u8>,
    max_groups: usize,
    free_groups: Vec<u32>,
    values: Vec<Option<V>>,
    free_values: Vec<u32>,
    rules: HashMap<(u32, u8), u32>,
    default: Option<V>,
    trace: Trace,
}

fn mask(len: u8) -> u32 {
    if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) }
}

impl<V> LpmTable<V> {
    /// Declare the table `decl` describes: its size in rules, its 32-bit LPM key and actions.
    pub fn new(res: &mut Resources, decl: TableDecl) -> Self {
        assert!(decl.key_bits() <= 32, "table {}: an IPv4 LPM key is 32 bits", decl.name);
        let (name, capacity) = (decl.name, decl.size);
        let max_groups = (capacity * 2).clamp(1, INDEX as usize);
        let bytes = L1 * 5 + max_groups * GROUP * 5 + capacity * (std::mem::size_of::<Option<V>>() + 12);
        res.declare(Decl {
            name,
            size: capacity,
            kind: DeclKind::Table(decl),
            bytes,
            detail: format!("DIR-16-8-8, up to {max_groups} 256-entry groups"),
        });
        Self {
            name,
            capacity,
            l1: vec![0; L1],
            l1_depth: vec![0; L1],
            groups: Vec::with_capacity(max_groups * GROUP),
            group_depth: Vec::with_capacity(max_groups * GROUP),
            max_groups,
            free_groups: Vec::new(),
            values: Vec::with_capacity(capacity),
            free_values: Vec::new(),
            rules: HashMap::with_capacity(capacity),
            default: None,
            trace: Trace::default(),
        }
    }

    /// The value of the longest prefix covering `addr`, else the default, read by the control
    /// plane (not recorded as a match-action lookup).
    pub fn find(&self, addr: Ipv4Addr) -> Option<&V> {
        self.get_lpm(addr.to_bits())
    }

    /// The keys looked up since the last call (test builds; empty otherwise).
    pub fn take_trace(&self) -> Vec<u128> {
        self.trace.take()
    }

    /// Record a lookup of `addr` served from a resolved copy of its result (a cache of this
    /// table the program keeps): test builds trace it as the lookup it stands for.
    #[inline(always)]
    pub fn record_lookup(&self, addr: Ipv4Addr) {
        self.trace.record(u128::from(addr.to_bits()));
    }

    /// The value of the longest prefix covering `addr`, else the default (the match-action
    /// path: test builds record the key).
    #[inline]
    pub fn lookup(&self, addr: Ipv4Addr) -> Option<&V> {
        let a = addr.to_bits();
        self.trace.record(u128::from(a));
        self.get_lpm(a)
    }

    /// [`Self::lookup`] for the control plane: the same answer, not recorded as a match-action
    /// lookup.
    pub fn peek(&self, addr: Ipv4Addr) -> Option<&V> {
        self.get_lpm(addr.to_bits())
    }

    #[inline(always)]
    fn get_lpm(&self, a: u32) -> Option<&V> {
        let mut e = self.l1[(a >> 16) as usize];
        if e & EXT != 0 {
            e = self.groups[(((e & INDEX) as usize) << 8) | ((a >> 8) & 0xff) as usize];
            if e & EXT != 0 {
                e = self.groups[(((e & INDEX) as usize) << 8) | (a & 0xff) as usize];
            }
        }
        if e & VALID != 0 {
            self.values.get((e & INDEX) as usize).and_then(Option::as_ref)
        } else {
            self.default.as_ref()
        }
    }

    /// The value of exactly the rule `prefix/len` (host bits ignored), if installed.
    pub fn rule(&self, prefix: Ipv4Addr, len: u8) -> Option<&V> {
        let i = *self.rules.get(&(prefix.to_bits() & mask(len.min(32)), len))?;
        self.values.get(i as usize).and_then(Option::as_ref)
    }

    /// Every rule `(prefix, length, value)`, sorted by prefix then length (the control plane's
    /// view: an export of the table's entries).
    pub fn rules(&self) -> Vec<(Ipv4Addr, u8, &V)> {
        let mut v: Vec<(Ipv4Addr, u8, &V)> = self
            .rules
            .iter()
            .filter_map(|(&(p, l), &i)| {
                Some((Ipv4Addr::from_bits(p), l, self.values.get(i as usize)?.as_ref()?))
            })
            .collect();
        v.sort_by_key(|&(p, l, _)| (p, l));
        v
    }

    /// Set or clear the result of a miss.
    pub fn set_default(&mut self, v: Option<V>) {
        self.default = v;
    }

    /// Rules installed.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule is installed.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Add or replace the rule `prefix/len` (host bits are ignored); returns the value replaced.
    pub fn insert(&mut self, prefix: Ipv4Addr, len: u8, value: V) -> Result<Option<V>, TableError> {
        if len > 32 {
            return Err(TableError::InvalidKey { table: self.name, reason: "prefix length above 32" });
        }
        let p = prefix.to_bits() & mask(len);
        if let Some(&i) = self.rules.get(&(p, len)) {
            return Ok(self.values[i as usize].replace(value));
        }
        if self.rules.len() >= self.capacity {
            return Err(TableError::Full { table: self.name, capacity: self.capacity });
        }
        // Reserve the groups this rule may need before changing anything.
        let need = usize::from(len > 16) + usize::from(len > 24);
        if self.groups.len() / GROUP + need > self.max_groups + self.free_groups.len() {
            return Err(TableError::Full { table: self.name, capacity: self.capacity });
        }
        let idx = match self.free_values.pop() {
            Some(i) => {
                self.values[i as usize] = Some(value);
                i
            }
            None => {
                self.values.push(Some(value));
                (self.values.len() - 1) as u32
            }
        };
        self.rules.insert((p, len), idx);
        self.paint(p, len, VALID | idx, len, |d| d <= len);
        Ok(None)
    }

    /// Remove the rule `prefix/len`; its addresses fall back to the next shorter covering rule.
    pub fn remove(&mut self, prefix: Ipv4Addr, len: u8) -> Option<V> {
        if len > 32 {
            return None;
        }
        let p = prefix.to_bits() & mask(len);
        let idx = self.rules.remove(&(p, len))?;
        let (entry, depth) = (0..len)
            .rev()
            .find_map(|k| self.rules.get(&(p & mask(k), k)).map(|&i| (VALID | i, k)))
            .unwrap_or((0, 0));
        self.paint(p, len, entry, depth, |d| d == len);
        self.free_values.push(idx);
        self.values[idx as usize].take()
    }

    /// Write `entry` (painted by a rule of length `depth`) over the addresses of `p/len`, into
    /// every entry whose current depth satisfies `cond`.
    fn paint(&mut self, p: u32, len: u8, entry: u32, depth: u8, cond: impl Fn(u8) -> bool + Copy) {
        if len <= 16 {
            let first = (p >> 16) as usize;
            for i in first..first + (1usize << (16 - len)) {
                self.apply(Slot::L1(i), entry, depth, cond);
            }
        } else if len <= 24 {
            let g = self.group_of(Slot::L1((p >> 16) as usize));
            let first = ((p >> 8) & 0xff) as usize;
            for j in first..first + (1usize << (24 - len)) {
                self.apply(Slot::Group(g, j), entry, depth, cond);
            }
        } else {
            let g1 = self.group_of(Slot::L1((p >> 16) as usize));
            let g2 = self.group_of(Slot::Group(g1, ((p >> 8) & 0xff) as usize));
            let first = (p & 0xff) as usize;
            for k in first..first + (1usize << (32 - len)) {
                self.apply(Slot::Group(g2, k), entry, depth, cond);
            }
        }
    }

    fn get(&self, s: Slot) -> (u32, u8) {
        match s {
            Slot::L1(i) => (self.l1[i], self.l1_depth[i]),
            Slot::Group(g, j) => (self.groups[g * GROUP + j], self.group_depth[g * GROUP + j]),
        }
    }

    fn set(&mut self, s: Slot, e: u32, d: u8) {
        match s {
            Slot::L1(i) => {
                self.l1[i] = e;
                self.l1_depth[i] = d;
            }
            Slot::Group(g, j) => {
                self.groups[g * GROUP + j] = e;
                self.group_depth[g * GROUP + j] = d;
            }
        }
    }

    fn apply(&mut self, s: Slot, entry: u32, depth: u8, cond: impl Fn(u8) -> bool + Copy) {
        let (e, d) = self.get(s);
        if e & EXT != 0 {
            let g = (e & INDEX) as usize;
            for k in 0..GROUP {
                self.apply(Slot::Group(g, k), entry, depth, cond);
            }
        } else if cond(d) {
            self.set(s, entry, depth);
        }
    }

    /// The group an entry points to, creating it (filled with the entry's result) if needed.
    /// `insert` checked that a group is available.
    fn group_of(&mut self, s: Slot) -> usize {
        let (e, d) = self.get(s);
        if e & EXT != 0 {
            return (e & INDEX) as usize;
        }
        let g = match self.free_groups.pop() {
            Some(g) => g as usize,
            None => {
                self.groups.resize(self.groups.len() + GROUP, 0);
                self.group_depth.resize(self.group_depth.len() + GROUP, 0);
                self.groups.len() / GROUP - 1
            }
        };
        self.groups[g * GROUP..(g + 1) * GROUP].fill(e);
        self.group_depth[g * GROUP..(g + 1) * GROUP].fill(d);
        self.set(s, EXT | g as u32, d);
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn longest_match_and_default() {
        let mut r = Resources::new();
        let mut t = LpmTable::new(&mut r, crate::model::test_table("routes", 16, 32));
        assert_eq!(t.lookup(ip("10.1.2.3")), None);
        t.set_default(Some(0));
        t.insert(ip("10.0.0.0"), 8, 8).unwrap();
        t.insert(ip("10.1.0.0"), 16, 16).unwrap();
        t.insert(ip("10.1.2.0"), 24, 24).unwrap();
        t.insert(ip("10.1.2.3"), 32, 32).unwrap();
        assert_eq!(t.lookup(ip("10.1.2.3")), Some(&32));
        assert_eq!(t.lookup(ip("10.1.2.4")), Some(&24));
        assert_eq!(t.lookup(ip("10.1.3.4")), Some(&16));
        assert_eq!(t.lookup(ip("10.2.3.4")), Some(&8));
        assert_eq!(t.lookup(ip("11.0.0.1")), Some(&0));
        assert_eq!(t.remove(ip("10.1.2.0"), 24), Some(24));
        assert_eq!(t.lookup(ip("10.1.2.4")), Some(&16));
        assert_eq!(t.lookup(ip("10.1.2.3")), Some(&32));
        assert_eq!(t.remove(ip("10.0.0.0"), 8), Some(8));
        assert_eq!(t.lookup(ip("10.2.3.4")), Some(&0));
        assert_eq!(t.insert(ip("10.1.0.0"), 16, 160).unwrap(), Some(16));
        assert_eq!(t.lookup(ip("10.1.9.9")), Some(&160));
        assert!(t.insert(ip("1.2.3.4"), 33, 1).is_err());
    }

    #[test]
    fn default_route_and_full() {
        let mut r = Resources::new();
        let mut t = LpmTable::new(&mut r, crate::model::test_table("routes", 2, 32));
        t.insert(ip("0.0.0.0"), 0, 1).unwrap();
        t.insert(ip("192.168.0.0"), 16, 2).unwrap();
        assert!(matches!(t.insert(ip("192.168.1.0"), 24, 3), Err(TableError::Full { .. })));
        assert_eq!(t.lookup(ip("8.8.8.8")), Some(&1));
        assert_eq!(t.lookup(ip("192.168.1.1")), Some(&2));
    }

    /// Random inserts and removes against a linear reference.
    #[test]
    fn matches_a_linear_scan() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut r = Resources::new();
        let mut t = LpmTable::new(&mut r, crate::model::test_table("routes", 4096, 32));
        let mut reference: Vec<(u32, u8, u32)> = Vec::new();
        for step in 0..3000u32 {
            // Addresses clustered in 10.0.0.0/14 so that rules overlap at every level.
            let len = [0u8, 8, 12, 16, 18, 20, 22, 24, 26, 28, 30, 31, 32][(next() % 13) as usize];
            let p = (0x0a00_0000 | (next() as u32 & 0x0003_ffff)) & mask(len);
            if next() % 3 == 0 && !reference.is_empty() {
                let i = (next() as usize) % reference.len();
                let (rp, rl, rv) = reference.swap_remove(i);
                assert_eq!(t.remove(Ipv4Addr::from_bits(rp), rl), Some(rv));
            } else {
                reference.retain(|&(rp, rl, _)| !(rp == p && rl == len));
                t.insert(Ipv4Addr::from_bits(p), len, step).unwrap();
                reference.push((p, len, step));
            }
            for _ in 0..20 {
                let a = 0x0a00_0000 | (next() as u32 & 0x0003_ffff);
                let want = reference
                    .iter()
                    .filter(|&&(rp, rl, _)| a & mask(rl) == rp)
                    .max_by_key(|r| r.1)
                    .map(|r| r.2);
                assert_eq!(
                    t.lookup(Ipv4Addr::from_bits(a)).copied(),
                    want,
                    "address {a:#x} after step {step}"
                );
            }
        }
    }
}
