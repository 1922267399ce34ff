//! Packet and byte counters.

use super::{Decl, DeclKind, Resources};

/// `size` pairs of packet and byte counters.
#[derive(Debug, Clone)]
pub struct CounterArray {
    packets: Vec<u64>,
    bytes: Vec<u64>,
}

impl CounterArray {
    /// Declare `size` counters.
    pub fn new(res: &mut Resources, name: &'static str, size: usize) -> Self {
        res.declare(Decl { name, size, kind: DeclKind::Counter, bytes: size * 16, detail: String::new() });
        Self { packets: vec![0; size], bytes: vec![0; size] }
    }

    /// Count one packet of `len` bytes at `i` (ignored if out of range).
    #[inline]
    pub fn count(&mut self, i: usize, len: usize) {
        if let (Some(p), Some(b)) = (self.packets.get_mut(i), self.bytes.get_mut(i)) {
            *p += 1;
            *b += len as u64;
        }
    }

    /// Packets and bytes counted at `i`.
    pub fn get(&self, i: usize) -> (u64, u64) {
        (self.packets.get(i).copied().unwrap_or(0), self.bytes.get(i).copied().unwrap_or(0))
    }

    /// Number of counters.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }
}
