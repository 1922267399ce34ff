//! Registered memory: one anonymous mapping (hugepage-backed when the system has hugepages
//! reserved, regular pages with transparent hugepages advised otherwise) holding every store's
//! region, seen as 64-bit words that the soft-RNIC writes and queries read concurrently.
//!
//! The memory has one writer — the soft-RNIC thread applying RDMA WRITEs and atomics, as a
//! NIC's DMA engine is the only writer of a registered region — and any number of readers. Words
//! are atomics with relaxed ordering: a reader sees each 8-byte word whole (an 8-byte Key-Write
//! slot, checksum and data, is never torn), never a half-written word. A write that covers part
//! of a word reads, merges and stores it, which is sound with one writer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::{MmapMut, MmapOptions};
use roce::responder::{AccessError, Memory};

use crate::config::MemoryKind;

/// Regions start at multiples of this in the mapping.
const REGION_ALIGN: u64 = 4096;
const HUGEPAGE: u64 = 2 << 20;

/// The mapping.
pub struct HostMemory {
    map: MmapMut,
    hugepages: bool,
}

impl std::fmt::Debug for HostMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostMemory")
            .field("len", &self.map.len())
            .field("hugepages", &self.hugepages)
            .finish()
    }
}

/// Why memory could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// Hugepages were required and none could be mapped.
    #[error("no hugepages for {bytes} bytes (reserve some: sysctl vm.nr_hugepages): {source}")]
    NoHugepages {
        /// Bytes asked for.
        bytes: u64,
        /// The mapping error.
        source: std::io::Error,
    },
    /// The mapping failed.
    #[error("cannot map {bytes} bytes: {source}")]
    Map {
        /// Bytes asked for.
        bytes: u64,
        /// The error.
        source: std::io::Error,
    },
}

impl HostMemory {
    /// Map `bytes` (rounded up) of zeroed memory of `kind`. Returns it and, when hugepages were
    /// wanted but not available, the warning to print.
    pub fn map(bytes: u64, kind: MemoryKind) -> Result<(Self, Option<String>), MemoryError> {
        let bytes = bytes.max(8).div_ceil(HUGEPAGE) * HUGEPAGE;
        let len = usize::try_from(bytes).map_err(|_| MemoryError::Map {
            bytes,
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "too large"),
        })?;
        let mut warning = None;
        if kind != MemoryKind::Pages {
            match MmapOptions::new().len(len).huge(Some(21)).map_anon() {
                Ok(map) => return Ok((Self { map, hugepages: true }, None)),
                Err(source) if kind == MemoryKind::Hugepages => {
                    return Err(MemoryError::NoHugepages { bytes, source });
                }
                Err(e) => {
                    warning = Some(format!(
                        "no hugepages for {bytes} bytes ({e}); using regular pages with transparent hugepages advised"
                    ));
                }
            }
        }
        let map =
            MmapOptions::new().len(len).map_anon().map_err(|source| MemoryError::Map { bytes, source })?;
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        Ok((Self { map, hugepages: false }, warning))
    }

    /// Whether it is hugepage-backed.
    pub fn hugepages(&self) -> bool {
        self.hugepages
    }

    /// Its address (the base of default VAs).
    pub fn base(&self) -> u64 {
        self.map.as_ptr() as u64
    }

    /// Its bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it is empty (never: at least one word).
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The memory as words.
    #[allow(unsafe_code)]
    #[inline]
    pub fn words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is page-aligned (so 8-byte aligned), `len` is a multiple of the
        // hugepage size (so of 8), it lives as long as `self`, and after creation it is only
        // ever accessed through this atomic view (never through `&mut [u8]`), so concurrent
        // access from several threads is data-race free. `AtomicU64` has the size and bit
        // validity of `u64`, and any bit pattern (zeroed pages included) is a valid `u64`.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().cast::<AtomicU64>(), self.map.len() / 8) }
    }
}

/// Prefetch the cache line at `p` into all cache levels; a no-op where we have no prefetch
/// instruction to hand.
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch_line(p: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline; a prefetch has no architectural effect and
    // never faults, whatever the address (ours is always inside the mapping anyway).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// One registered region in the mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionInfo {
    /// Its R_Key.
    pub rkey: u32,
    /// The VA it is exposed at.
    pub va: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Byte offset in the mapping (a multiple of 4096).
    pub offset: u64,
    /// For a ring (an Append list): its entry size; the memory then keeps the ring's head.
    pub ring_entry: Option<u32>,
}

/// A region to register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionSpec {
    /// Bytes.
    pub len: u64,
    /// The VA to expose it at (default: where it is mapped).
    pub va: Option<u64>,
    /// For a ring: its entry size.
    pub ring_entry: Option<u32>,
}

/// Registered memory: the mapping and its regions. Cheap to clone; clones share the memory.
#[derive(Debug, Clone)]
pub struct Registered {
    mem: Arc<HostMemory>,
    regions: Arc<[RegionInfo]>,
    /// Per region: entries written since start, for rings (what a consumer may read up to).
    heads: Arc<[AtomicU64]>,
}

/// Word-granular access into one region for readers.
#[derive(Debug, Clone, Copy)]
pub struct RegionView<'a> {
    words: &'a [AtomicU64],
    /// The region.
    pub info: RegionInfo,
}

impl RegionView<'_> {
    /// The 64-bit little-endian word at byte offset `off` (a multiple of 8) of the region.
    #[inline]
    pub fn word(&self, off: u64) -> u64 {
        self.words[((self.info.offset + off) / 8) as usize].load(Ordering::Relaxed)
    }

    /// Start fetching the cache line holding byte offset `off` of the region, so a read of it a
    /// little later does not wait for memory (batched lookups issue one per slot first). An
    /// offset past the region is ignored.
    #[inline(always)]
    pub fn prefetch(&self, off: u64) {
        if let Some(w) = self.words.get(((self.info.offset + off) / 8) as usize) {
            prefetch_line(w.as_ptr().cast_const().cast());
        }
    }

    /// `out.len()` bytes from byte offset `off` of the region.
    pub fn read(&self, off: u64, out: &mut [u8]) {
        let mut at = self.info.offset + off;
        let mut o = 0;
        while o < out.len() {
            let w = self.words[(at / 8) as usize].load(Ordering::Relaxed).to_le_bytes();
            let b = (at % 8) as usize;
            let n = (8 - b).min(out.len() - o);
            out[o..o + n].copy_from_slice(&w[b..b + n]);
            o += n;
            at += n as u64;
        }
    }

    /// The little-endian `u32` at byte offset `off` (an Append entry, a sketch counter).
    pub fn u32_le(&self, off: u64) -> u32 {
        let mut b = [0u8; 4];
        self.read(off, &mut b);
        u32::from_le_bytes(b)
    }

    /// The whole region's bytes (for checks and hashes; copies).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0; self.info.len as usize];
        self.read(0, &mut v);
        v
    }
}

impl Registered {
    /// Map memory for regions of `lens` bytes, exposed at the given VAs (or where they are
    /// mapped), with R_Keys drawn from `seed`.
    pub fn new(
        specs: &[RegionSpec],
        kind: MemoryKind,
        seed: u32,
    ) -> Result<(Self, Option<String>), MemoryError> {
        let mut offset = 0u64;
        let mut placed = Vec::new();
        for &RegionSpec { len, .. } in specs {
            placed.push(offset);
            offset += len.max(8).div_ceil(REGION_ALIGN) * REGION_ALIGN;
        }
        let (mem, warning) = HostMemory::map(offset, kind)?;
        let base = mem.base();
        let regions = specs
            .iter()
            .zip(&placed)
            .enumerate()
            .map(|(i, (s, &offset))| RegionInfo {
                rkey: rkey(seed, i as u32),
                va: s.va.unwrap_or(base + offset),
                len: s.len,
                offset,
                ring_entry: s.ring_entry,
            })
            .collect();
        let heads = specs.iter().map(|_| AtomicU64::new(0)).collect();
        Ok((Self { mem: Arc::new(mem), regions, heads }, warning))
    }

    /// The mapping.
    pub fn host(&self) -> &HostMemory {
        &self.mem
    }

    /// The regions, in the order given.
    pub fn regions(&self) -> &[RegionInfo] {
        &self.regions
    }

    /// A reader's view of region `i`.
    pub fn view(&self, i: usize) -> RegionView<'_> {
        RegionView { words: self.mem.words(), info: self.regions[i] }
    }

    /// Find the region of `rkey` and check `[va, va+len)` lies inside it: the byte offset in the
    /// mapping and the region's index.
    #[inline]
    fn locate(&self, rkey: u32, va: u64, len: usize) -> Result<(u64, usize), AccessError> {
        let i = self.regions.iter().position(|r| r.rkey == rkey).ok_or(AccessError::BadKey)?;
        let r = &self.regions[i];
        let off = va.checked_sub(r.va).ok_or(AccessError::OutOfBounds)?;
        if off.checked_add(len as u64).is_none_or(|end| end > r.len) {
            return Err(AccessError::OutOfBounds);
        }
        Ok((r.offset + off, i))
    }

    /// Entries written to ring region `i` since start (0 for other regions). Read with
    /// acquire ordering: every entry below it is visible.
    pub fn ring_head(&self, i: usize) -> u64 {
        self.heads[i].load(Ordering::Acquire)
    }

    /// Advance ring `i`'s head past a write of `len` bytes at byte `off` of the region
    /// (`wire::dta::layout::append_head_after`: replays leave it).
    #[inline]
    fn advance(&self, i: usize, entry: u32, off: u64, len: u64) {
        let entries = (self.regions[i].len / u64::from(entry)).max(1);
        let h = self.heads[i].load(Ordering::Relaxed);
        let e = u64::from(entry);
        let next = wire::dta::layout::append_head_after(h, entries, off / e, len.div_ceil(e));
        self.heads[i].store(next, Ordering::Release);
    }
}

/// The R_Key of region `i`: scrambled from the seed so a restarted collector's keys differ.
fn rkey(seed: u32, i: u32) -> u32 {
    let mut x = seed ^ i.wrapping_mul(0x9e37_79b9) ^ 0x5bd1_e995;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x | 1
}

impl Registered {
    /// Copy `data` to byte `start` of the memory (bounds checked by the caller), as a NIC's DMA
    /// does: no ring head moves.
    #[inline]
    fn copy_in(&self, start: u64, data: &[u8]) {
        let mut at = start;
        let words = self.mem.words();
        let mut d = data;
        while !d.is_empty() {
            let w = &words[(at / 8) as usize];
            let b = (at % 8) as usize;
            let n = (8 - b).min(d.len());
            if n == 8 {
                let mut x = [0u8; 8];
                x.copy_from_slice(&d[..8]);
                w.store(u64::from_le_bytes(x), Ordering::Relaxed);
            } else {
                // One writer: read, merge, store.
                let mut x = w.load(Ordering::Relaxed).to_le_bytes();
                x[b..b + n].copy_from_slice(&d[..n]);
                w.store(u64::from_le_bytes(x), Ordering::Relaxed);
            }
            at += n as u64;
            d = &d[n..];
        }
    }

    /// Write `data` at byte `off` of region `i` as a NIC's DMA does — ring heads do not move
    /// (a verbs collector learns them from marks, [`mark_ring`](Self::mark_ring)). `false` if
    /// outside the region.
    pub fn dma_write(&self, i: usize, off: u64, data: &[u8]) -> bool {
        let Some(r) = self.regions.get(i) else { return false };
        if off.checked_add(data.len() as u64).is_none_or(|end| end > r.len) {
            return false;
        }
        self.copy_in(r.offset + off, data);
        true
    }

    /// Ring `i`'s head after an Append batch mark (`wire::dta::layout::append_head_from_mark`):
    /// how a collector whose NIC writes by DMA learns it.
    pub fn mark_ring(&self, i: usize, mark: u32) {
        let h = self.heads[i].load(Ordering::Relaxed);
        self.heads[i].store(wire::dta::layout::append_head_from_mark(h, mark), Ordering::Release);
    }
}

impl Memory for Registered {
    fn check_write(&self, rkey: u32, va: u64, len: u64) -> Result<(), AccessError> {
        let len = usize::try_from(len).map_err(|_| AccessError::OutOfBounds)?;
        self.locate(rkey, va, len).map(|_| ())
    }

    fn ring_head(&self, rkey: u32) -> Option<u64> {
        let i = self.regions.iter().position(|r| r.rkey == rkey)?;
        self.regions[i].ring_entry.map(|_| self.ring_head(i))
    }

    #[inline]
    fn write(&mut self, rkey: u32, va: u64, data: &[u8]) -> Result<(), AccessError> {
        let (start, i) = self.locate(rkey, va, data.len())?;
        self.copy_in(start, data);
        if let Some(entry) = self.regions[i].ring_entry {
            self.advance(i, entry, start - self.regions[i].offset, data.len() as u64);
        }
        Ok(())
    }

    #[inline]
    fn fetch_add(&mut self, rkey: u32, va: u64, add: u64) -> Result<u64, AccessError> {
        let (at, _) = self.locate(rkey, va, 8)?;
        if at % 8 != 0 {
            return Err(AccessError::Misaligned);
        }
        Ok(self.mem.words()[(at / 8) as usize].fetch_add(add, Ordering::Relaxed))
    }

    fn cmp_swap(&mut self, rkey: u32, va: u64, compare: u64, swap: u64) -> Result<u64, AccessError> {
        let (at, _) = self.locate(rkey, va, 8)?;
        if at % 8 != 0 {
            return Err(AccessError::Misaligned);
        }
        let w = &self.mem.words()[(at / 8) as usize];
        Ok(w.compare_exchange(compare, swap, Ordering::Relaxed, Ordering::Relaxed).unwrap_or_else(|v| v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(len: u64, va: Option<u64>) -> RegionSpec {
        RegionSpec { len, va, ring_entry: None }
    }

    fn mem() -> Registered {
        Registered::new(&[spec(64, None), spec(20, Some(0x1000_0000))], MemoryKind::Pages, 7).unwrap().0
    }

    #[test]
    fn a_ring_head_counts_entries_across_laps() {
        let ring = RegionSpec { len: 16, va: None, ring_entry: Some(4) };
        let mut m = Registered::new(&[ring], MemoryKind::Pages, 1).unwrap().0;
        let r = m.regions()[0];
        m.write(r.rkey, r.va, &[1; 8]).unwrap();
        assert_eq!(m.ring_head(0), 2);
        m.write(r.rkey, r.va + 8, &[2; 8]).unwrap();
        assert_eq!(m.ring_head(0), 4);
        m.write(r.rkey, r.va, &[3; 4]).unwrap();
        assert_eq!(m.ring_head(0), 5);
        m.write(r.rkey, r.va + 4, &[3; 12]).unwrap();
        assert_eq!(m.ring_head(0), 8);
        m.write(r.rkey, r.va, &[4; 16]).unwrap();
        assert_eq!(m.ring_head(0), 12);
        // A replay of the last write (applied, its ACK lost, posted again on a new
        // connection) leaves the head where it was, where a lap was counted before.
        m.write(r.rkey, r.va + 8, &[4; 8]).unwrap();
        assert_eq!(m.ring_head(0), 12);
        assert_eq!(Memory::ring_head(&m, r.rkey), Some(12));
    }

    #[test]
    fn writes_land_inside_and_are_refused_outside() {
        let mut m = mem();
        let r = m.regions()[0];
        m.write(r.rkey, r.va + 3, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
        let mut b = [0u8; 16];
        m.view(0).read(0, &mut b);
        assert_eq!(b, [0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0, 0]);
        assert_eq!(m.write(r.rkey ^ 2, r.va, &[1]), Err(AccessError::BadKey));
        assert_eq!(m.write(r.rkey, r.va + 60, &[0; 5]), Err(AccessError::OutOfBounds));
        assert_eq!(m.write(r.rkey, r.va - 1, &[0; 1]), Err(AccessError::OutOfBounds));
        assert_eq!(m.write(r.rkey, u64::MAX, &[0; 2]), Err(AccessError::OutOfBounds));
        let r1 = m.regions()[1];
        assert_eq!(r1.va, 0x1000_0000);
        assert_eq!(m.write(r1.rkey, r1.va + 16, &[0; 5]), Err(AccessError::OutOfBounds));
        m.write(r1.rkey, r1.va + 16, &[0xaa; 4]).unwrap();
        assert_eq!(m.view(1).to_vec()[16..], [0xaa; 4]);
        // Region 0 was not touched by region 1's write.
        assert_eq!(m.view(0).to_vec()[16..], [0; 48]);
    }

    #[test]
    fn atomics_add_little_endian_words() {
        let mut m = mem();
        let r = m.regions()[0];
        assert_eq!(m.fetch_add(r.rkey, r.va + 8, 5).unwrap(), 0);
        assert_eq!(m.fetch_add(r.rkey, r.va + 8, 7).unwrap(), 5);
        assert_eq!(m.view(0).word(8), 12);
        assert_eq!(m.fetch_add(r.rkey, r.va + 4, 1), Err(AccessError::Misaligned));
        assert_eq!(m.cmp_swap(r.rkey, r.va + 8, 12, 99).unwrap(), 12);
        assert_eq!(m.cmp_swap(r.rkey, r.va + 8, 12, 1).unwrap(), 99);
        assert_eq!(m.view(0).word(8), 99);
    }

    #[test]
    fn rkeys_differ_per_region_and_seed() {
        let a = Registered::new(&[spec(8, None), spec(8, None)], MemoryKind::Pages, 1).unwrap().0;
        let b = Registered::new(&[spec(8, None)], MemoryKind::Pages, 2).unwrap().0;
        assert_ne!(a.regions()[0].rkey, a.regions()[1].rkey);
        assert_ne!(a.regions()[0].rkey, b.regions()[0].rkey);
    }
}
