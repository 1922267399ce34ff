//! Exact-match tables.

use hashbrown::HashMap;

use super::{Decl, DeclKind, Resources, TableDecl, TableError, TableKey, Trace};

/// An exact-match table of at most `capacity` entries, with an optional default action for a
/// miss. Backed by a hashbrown map allocated at its full size, so inserts never reallocate.
#[derive(Debug, Clone)]
pub struct ExactTable<K, V> {
    name: &'static str,
    map: HashMap<K, V>,
    capacity: usize,
    default: Option<V>,
    trace: Trace,
}

impl<K: TableKey, V> ExactTable<K, V> {
    /// Declare the table `decl` describes (its size, key fields and actions); its key fields
    /// must fit in `K`.
    pub fn new(res: &mut Resources, decl: TableDecl) -> Self {
        assert!(
            decl.key_bits() <= K::BITS,
            "table {}: {} key bits do not fit in the key type",
            decl.name,
            decl.key_bits()
        );
        let map = HashMap::with_capacity(decl.size);
        let (name, capacity) = (decl.name, decl.size);
        res.declare(Decl {
            name,
            size: capacity,
            kind: DeclKind::Table(decl),
            bytes: map.allocation_size(),
            detail: "hash".into(),
        });
        Self { name, map, capacity, default: None, trace: Trace::default() }
    }

    /// The action for `key`: its entry, else the default action. The match-action path: test
    /// builds record the key ([`take_trace`](Self::take_trace)).
    #[inline(always)]
    pub fn lookup(&self, key: &K) -> Option<&V> {
        self.trace.record(key.bits());
        match self.map.get(key) {
            Some(v) => Some(v),
            None => self.default.as_ref(),
        }
    }

    /// Record a lookup of `key` served from a resolved copy of its entry (a cache of this
    /// table the program keeps): test builds trace it as the lookup it stands for.
    #[inline(always)]
    pub fn record_lookup(&self, key: &K) {
        self.trace.record(key.bits());
    }

    /// The entry for `key`, writable: the match-action path of a stateful table (a register
    /// reached by key), recorded as a lookup in test builds.
    #[inline]
    pub fn lookup_mut(&mut self, key: &K) -> Option<&mut V> {
        self.trace.record(key.bits());
        self.map.get_mut(key)
    }

    /// The keys looked up since the last call (test builds; empty otherwise).
    pub fn take_trace(&self) -> Vec<u128> {
        self.trace.take()
    }

    /// The entry for `key` only (no default).
    #[inline]
    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// The entry for `key`, writable.
    #[inline]
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.map.get_mut(key)
    }

    /// Add or replace an entry; returns the entry replaced. A new key in a full table is refused.
    pub fn insert(&mut self, key: K, value: V) -> Result<Option<V>, TableError> {
        if self.map.len() >= self.capacity && !self.map.contains_key(&key) {
            return Err(TableError::Full { table: self.name, capacity: self.capacity });
        }
        Ok(self.map.insert(key, value))
    }

    /// Remove an entry.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.map.remove(key)
    }

    /// Keep only the entries for which `keep` is true.
    pub fn retain(&mut self, keep: impl FnMut(&K, &mut V) -> bool) {
        self.map.retain(keep);
    }

    /// Set or clear the default action.
    pub fn set_default(&mut self, v: Option<V>) {
        self.default = v;
    }

    /// Entries installed.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no entry is installed.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Declared size.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// All entries, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_table;

    #[test]
    fn hit_miss_default_and_capacity() {
        let mut r = Resources::new();
        let mut t: ExactTable<u32, &str> = ExactTable::new(&mut r, test_table("t", 2, 32));
        assert_eq!(t.lookup(&1), None);
        t.set_default(Some("miss"));
        assert_eq!(t.lookup(&1), Some(&"miss"));
        assert_eq!(t.get(&1), None);
        t.insert(1, "one").unwrap();
        t.insert(2, "two").unwrap();
        assert_eq!(t.insert(3, "three"), Err(TableError::Full { table: "t", capacity: 2 }));
        assert_eq!(t.insert(2, "deux").unwrap(), Some("two"));
        assert_eq!(t.lookup(&2), Some(&"deux"));
        assert_eq!(t.remove(&1), Some("one"));
        assert_eq!(t.lookup(&1), Some(&"miss"));
        t.insert(3, "three").unwrap();
        assert_eq!(t.len(), 2);
    }
}
