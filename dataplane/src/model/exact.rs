//! Exact-match tables.

use std::hash::Hash;

use hashbrown::HashMap;

use super::{ResourceInfo, ResourceKind, Resources, TableError};

/// An exact-match table of at most `capacity` entries, with an optional default action for a
/// miss. Backed by a hashbrown map allocated at its full size, so inserts never reallocate.
#[derive(Debug, Clone)]
pub struct ExactTable<K, V> {
    name: &'static str,
    map: HashMap<K, V>,
    capacity: usize,
    default: Option<V>,
}

impl<K: Hash + Eq, V> ExactTable<K, V> {
    /// Declare a table of `capacity` entries with `key_bits`-wide keys and `value_bits` of
    /// action data.
    pub fn new(
        res: &mut Resources,
        name: &'static str,
        capacity: usize,
        key_bits: u32,
        value_bits: u32,
    ) -> Self {
        let map = HashMap::with_capacity(capacity);
        res.declare(ResourceInfo {
            name,
            kind: ResourceKind::ExactTable,
            entries: capacity,
            key_bits,
            value_bits,
            bytes: map.allocation_size(),
            detail: "hash".into(),
        });
        Self { name, map, capacity, default: None }
    }

    /// The action for `key`: its entry, else the default action.
    #[inline]
    pub fn lookup(&self, key: &K) -> Option<&V> {
        self.map.get(key).or(self.default.as_ref())
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

    #[test]
    fn hit_miss_default_and_capacity() {
        let mut r = Resources::new();
        let mut t: ExactTable<u32, &str> = ExactTable::new(&mut r, "t", 2, 32, 8);
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
