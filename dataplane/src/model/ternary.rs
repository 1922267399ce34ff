//! Ternary tables with priorities.
//!
//! Keys are up to 128 bits (programs pack their fields into a `u128`). Rules are grouped by mask
//! — tuple-space search, as Open vSwitch's classifier does — with one hash table per distinct
//! mask; a lookup probes the groups in order of their best priority and stops once no remaining
//! group can beat the best match found. Tables of a few rules are scanned linearly instead.

use hashbrown::HashMap;

use super::{Decl, DeclKind, Resources, TableDecl, TableError, Trace};

/// Up to this many rules, lookups scan the rules in priority order.
const LINEAR_MAX: usize = 8;

#[derive(Debug, Clone)]
struct Rule<V> {
    value: u128,
    mask: u128,
    priority: u32,
    action: V,
}

#[derive(Debug, Clone)]
struct Group {
    mask: u128,
    max_priority: u32,
    /// Masked key → index into `rules`.
    map: HashMap<u128, usize>,
}

/// A ternary table of at most `capacity` rules; the highest priority among matching rules wins.
#[derive(Debug, Clone)]
pub struct TernaryTable<V> {
    name: &'static str,
    capacity: usize,
    rules: Vec<Rule<V>>,
    /// Rule indices, highest priority first.
    by_priority: Vec<usize>,
    groups: Vec<Group>,
    default: Option<V>,
    trace: Trace,
}

impl<V> TernaryTable<V> {
    /// Declare the table `decl` describes; its key fields, packed into a `u128`, are at most
    /// 128 bits.
    pub fn new(res: &mut Resources, decl: TableDecl) -> Self {
        assert!(decl.key_bits() <= 128, "table {}: ternary keys are at most 128 bits", decl.name);
        let (name, capacity) = (decl.name, decl.size);
        res.declare(Decl {
            name,
            size: capacity,
            kind: DeclKind::Table(decl),
            bytes: capacity * (std::mem::size_of::<Rule<V>>() + 2 * std::mem::size_of::<usize>() + 24),
            detail: "tuple-space search".into(),
        });
        Self {
            name,
            capacity,
            rules: Vec::with_capacity(capacity),
            by_priority: Vec::with_capacity(capacity),
            groups: Vec::new(),
            default: None,
            trace: Trace::default(),
        }
    }

    /// The action of the highest-priority rule matching `key`, else the default.
    #[inline]
    pub fn lookup(&self, key: u128) -> Option<&V> {
        self.trace.record(key);
        let hit = if self.rules.len() <= LINEAR_MAX {
            self.by_priority.iter().map(|&i| &self.rules[i]).find(|r| key & r.mask == r.value)
        } else {
            let mut best: Option<&Rule<V>> = None;
            for g in &self.groups {
                if best.is_some_and(|b| b.priority >= g.max_priority) {
                    break;
                }
                if let Some(&i) = g.map.get(&(key & g.mask)) {
                    let r = &self.rules[i];
                    if best.is_none_or(|b| r.priority > b.priority) {
                        best = Some(r);
                    }
                }
            }
            best
        };
        hit.map(|r| &r.action).or(self.default.as_ref())
    }

    /// The keys looked up since the last call (test builds; empty otherwise).
    pub fn take_trace(&self) -> Vec<u128> {
        self.trace.take()
    }

    /// Set or clear the action of a miss.
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

    /// Add a rule, or replace the one with the same value and mask; returns the action replaced.
    pub fn insert(
        &mut self,
        value: u128,
        mask: u128,
        priority: u32,
        action: V,
    ) -> Result<Option<V>, TableError> {
        let value = value & mask;
        if let Some(i) = self.find(value, mask) {
            let old = std::mem::replace(&mut self.rules[i].action, action);
            self.rules[i].priority = priority;
            self.rebuild_order();
            return Ok(Some(old));
        }
        if self.rules.len() >= self.capacity {
            return Err(TableError::Full { table: self.name, capacity: self.capacity });
        }
        self.rules.push(Rule { value, mask, priority, action });
        self.rebuild_order();
        Ok(None)
    }

    /// Remove the rule with this value and mask.
    pub fn remove(&mut self, value: u128, mask: u128) -> Option<V> {
        let i = self.find(value & mask, mask)?;
        let r = self.rules.swap_remove(i);
        self.rebuild_order();
        Some(r.action)
    }

    fn find(&self, value: u128, mask: u128) -> Option<usize> {
        self.rules.iter().position(|r| r.value == value && r.mask == mask)
    }

    /// Recompute the priority order and the mask groups (control path only).
    fn rebuild_order(&mut self) {
        self.by_priority = (0..self.rules.len()).collect();
        // Highest priority first; ties in insertion order.
        self.by_priority.sort_by_key(|&i| std::cmp::Reverse(self.rules[i].priority));
        self.groups.clear();
        for &i in &self.by_priority {
            let r = &self.rules[i];
            let g = match self.groups.iter().position(|g| g.mask == r.mask) {
                Some(g) => g,
                None => {
                    self.groups.push(Group { mask: r.mask, max_priority: r.priority, map: HashMap::new() });
                    self.groups.len() - 1
                }
            };
            // The first rule seen for a masked key has the higher priority: keep it.
            self.groups[g].map.entry(r.value).or_insert(i);
        }
        self.groups.sort_by_key(|g| std::cmp::Reverse(g.max_priority));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_and_default() {
        let mut r = Resources::new();
        let mut t = TernaryTable::new(&mut r, crate::model::test_table("acl", 64, 32));
        t.set_default(Some("deny"));
        t.insert(0x0a00_0000, 0xff00_0000, 10, "ten").unwrap();
        t.insert(0x0a01_0000, 0xffff_0000, 20, "ten-one").unwrap();
        t.insert(0x0000_0000, 0x0000_0000, 1, "any").unwrap();
        t.insert(0x0a01_0203, 0xffff_ffff, 5, "host-low").unwrap();
        assert_eq!(t.lookup(0x0a01_0203), Some(&"ten-one"));
        assert_eq!(t.lookup(0x0a02_0000), Some(&"ten"));
        assert_eq!(t.lookup(0x0b00_0000), Some(&"any"));
        assert_eq!(t.remove(0, 0), Some("any"));
        assert_eq!(t.lookup(0x0b00_0000), Some(&"deny"));
        assert_eq!(t.insert(0x0a01_0203, 0xffff_ffff, 30, "host-high").unwrap(), Some("host-low"));
        assert_eq!(t.lookup(0x0a01_0203), Some(&"host-high"));
    }

    /// Beyond the linear threshold, tuple-space search agrees with a priority-ordered scan.
    #[test]
    fn tuple_space_matches_a_scan() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut r = Resources::new();
        let mut t = TernaryTable::new(&mut r, crate::model::test_table("t", 512, 32));
        let masks = [0xffff_ffffu128, 0xffff_ff00, 0xffff_0000, 0xff00_0000, 0x0000_ffff, 0xf0f0_f0f0, 0];
        let mut reference: Vec<(u128, u128, u32, u32)> = Vec::new();
        for i in 0..400u32 {
            let mask = masks[(next() % masks.len() as u64) as usize];
            let value = u128::from(next() as u32 & 0x0f0f_0f0f) & mask;
            let prio = (next() % 1000) as u32 * 4 + (i % 4); // distinct enough
            if reference.iter().any(|r| r.0 == value && r.1 == mask) || reference.iter().any(|r| r.2 == prio)
            {
                continue;
            }
            t.insert(value, mask, prio, i).unwrap();
            reference.push((value, mask, prio, i));
            for _ in 0..10 {
                let k = u128::from(next() as u32 & 0x0f0f_0f0f);
                let want = reference.iter().filter(|r| k & r.1 == r.0).max_by_key(|r| r.2).map(|r| r.3);
                assert_eq!(t.lookup(k).copied(), want);
            }
        }
        assert!(t.len() > LINEAR_MAX);
    }
}
