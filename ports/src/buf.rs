//! Packet buffers with headroom, and the pools they come from.
//!
//! [`Frame`] is what the pipeline needs from a buffer: its bytes, and room in front and behind
//! to grow or shrink in place. DPDK's `rte_mbuf` offers the same operations
//! (`rte_pktmbuf_prepend`, `_adj`, `_append`, `_trim`) on the same layout — headroom, data,
//! tailroom in one segment — so a thin mbuf wrapper implements [`Frame`] without copying.
//! [`PktBuf`] is the heap-backed buffer every other backend uses; [`HeapPool`] preallocates them
//! so that the hot path never allocates.

/// Bytes reserved in front of every received packet, for headers a program prepends.
pub const HEADROOM: usize = 128;
/// Default bytes after the headroom (a standard frame and then some).
pub const DEFAULT_DATAROOM: usize = 2048;

/// A packet buffer: data with headroom in front and tailroom behind, changed in place.
pub trait Frame {
    /// The packet bytes.
    fn data(&self) -> &[u8];
    /// The packet bytes, writable.
    fn data_mut(&mut self) -> &mut [u8];
    /// Bytes free in front of the data.
    fn headroom(&self) -> usize;
    /// Bytes free behind the data.
    fn tailroom(&self) -> usize;
    /// Grow the packet by `n` bytes at the front; returns the new first `n` bytes (their content is
    /// unspecified), or `None` without change if the headroom is too small.
    fn prepend(&mut self, n: usize) -> Option<&mut [u8]>;
    /// Remove `n` bytes from the front; `false` without change if the packet is shorter.
    fn adj(&mut self, n: usize) -> bool;
    /// Grow the packet by `n` bytes at the end; returns them (content unspecified), or `None`.
    fn append(&mut self, n: usize) -> Option<&mut [u8]>;
    /// Remove `n` bytes from the end; `false` without change if the packet is shorter.
    fn trim(&mut self, n: usize) -> bool;
    /// Reset to an empty packet with the standard headroom.
    fn reset(&mut self);

    /// Packet length.
    fn len(&self) -> usize {
        self.data().len()
    }
    /// Whether the packet is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Replace the content with `bytes` (after a reset); `false` if they do not fit.
    fn set(&mut self, bytes: &[u8]) -> bool {
        self.reset();
        match self.append(bytes.len()) {
            Some(d) => {
                d.copy_from_slice(bytes);
                true
            }
            None => false,
        }
    }
}

/// A heap-allocated packet buffer: `HEADROOM` plus a data room, allocated once by a pool.
#[derive(Debug)]
pub struct PktBuf {
    raw: Box<[u8]>,
    off: usize,
    len: usize,
}

impl PktBuf {
    /// A buffer with `dataroom` bytes after the headroom.
    pub fn new(dataroom: usize) -> Self {
        Self { raw: vec![0u8; HEADROOM + dataroom].into_boxed_slice(), off: HEADROOM, len: 0 }
    }

    /// Ask the CPU to bring the first two cache lines of the data in (the headers every hop
    /// reads): for a caller that knows a cold buffer is next (the virtual-time lab, whose
    /// frames were last touched thousands of events back). A hint only.
    #[inline(always)]
    pub fn prefetch(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let p = self.raw.as_ptr().wrapping_add(self.off).cast::<i8>();
            // SAFETY: a prefetch never faults and writes nothing; `p` and `p + 64` are only
            // computed (`wrapping_add`), never dereferenced. SSE is in x86_64's baseline.
            #[allow(unsafe_code)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p);
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
            }
        }
    }

    /// A buffer holding a copy of `bytes` (allocates: for tests and the control path).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut b = Self::new(bytes.len().max(DEFAULT_DATAROOM));
        b.set(bytes);
        b
    }
}

impl Frame for PktBuf {
    #[inline]
    fn data(&self) -> &[u8] {
        debug_assert!(self.off + self.len <= self.raw.len());
        // SAFETY: every constructor and mutator keeps `off + len <= raw.len()` (`new` starts
        // at HEADROOM with 0 bytes inside a HEADROOM + dataroom buffer; `prepend` and `adj` move
        // bytes between the two without changing the sum; `append` checks the tailroom; `trim`
        // shrinks; `reset` clamps the offset to the buffer). This is the hottest accessor on the
        // packet path (several calls per packet), so its three bounds checks are skipped.
        #[allow(unsafe_code)]
        unsafe {
            self.raw.get_unchecked(self.off..self.off + self.len)
        }
    }
    #[inline]
    fn data_mut(&mut self) -> &mut [u8] {
        debug_assert!(self.off + self.len <= self.raw.len());
        // SAFETY: as in `data`: `off + len <= raw.len()` always holds.
        #[allow(unsafe_code)]
        unsafe {
            self.raw.get_unchecked_mut(self.off..self.off + self.len)
        }
    }
    #[inline]
    fn headroom(&self) -> usize {
        self.off
    }
    #[inline]
    fn tailroom(&self) -> usize {
        self.raw.len() - self.off - self.len
    }
    #[inline]
    fn prepend(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.off {
            return None;
        }
        self.off -= n;
        self.len += n;
        Some(&mut self.raw[self.off..self.off + n])
    }
    #[inline]
    fn adj(&mut self, n: usize) -> bool {
        if n > self.len {
            return false;
        }
        self.off += n;
        self.len -= n;
        true
    }
    #[inline]
    fn append(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.tailroom() {
            return None;
        }
        let at = self.off + self.len;
        self.len += n;
        Some(&mut self.raw[at..at + n])
    }
    #[inline]
    fn trim(&mut self, n: usize) -> bool {
        if n > self.len {
            return false;
        }
        self.len -= n;
        true
    }
    #[inline]
    fn reset(&mut self) {
        self.off = HEADROOM.min(self.raw.len());
        self.len = 0;
    }
}

/// Where buffers come from and go back to.
pub trait Pool<F> {
    /// An empty buffer, or `None` when the pool is exhausted.
    fn alloc(&mut self) -> Option<F>;
    /// Give a buffer back.
    fn free(&mut self, f: F);
    /// Up to `n` empty buffers appended to `out` (fewer when the pool runs out); returns how
    /// many. What a per-core buffer cache refills from, as `rte_pktmbuf_alloc_bulk` does.
    fn alloc_bulk(&mut self, out: &mut Vec<F>, n: usize) -> usize {
        let mut k = 0;
        while k < n {
            let Some(f) = self.alloc() else { break };
            out.push(f);
            k += 1;
        }
        k
    }
    /// Buffers available now.
    fn available(&self) -> usize;
}

/// A pool of [`PktBuf`]s: allocated up front ([`HeapPool::new`]), or on first use up to a
/// bound ([`HeapPool::lazy`]); buffers are never returned to the allocator.
#[derive(Debug)]
pub struct HeapPool {
    free: Vec<PktBuf>,
    capacity: usize,
    /// Buffers made so far (all of them for an eager pool).
    created: usize,
    dataroom: usize,
    /// Most buffers out of the pool at once.
    peak: usize,
}

impl HeapPool {
    /// `capacity` buffers of `dataroom` bytes each, allocated now.
    pub fn new(capacity: usize, dataroom: usize) -> Self {
        Self::new_until(capacity, dataroom, || false).unwrap_or_else(|| unreachable!("never given up"))
    }

    /// [`Self::new`], given up (`None`) as soon as `give_up()` says so: a pool of millions of
    /// buffers takes seconds to make, and a stop asked for meanwhile is not kept waiting.
    pub fn new_until(capacity: usize, dataroom: usize, give_up: impl Fn() -> bool) -> Option<Self> {
        let mut free: Vec<PktBuf> = Vec::with_capacity(capacity);
        for i in 0..capacity {
            if i.is_multiple_of(4096) && give_up() {
                return None;
            }
            free.push(PktBuf::new(dataroom));
        }
        Some(Self { free, capacity, created: capacity, dataroom, peak: 0 })
    }

    /// At most `capacity` buffers of `dataroom` bytes, each allocated the first time it is
    /// needed: for a large bound that is rarely reached (the virtual-time lab's worst case of
    /// every switch buffer full), so start-up does not pay for it.
    pub fn lazy(capacity: usize, dataroom: usize) -> Self {
        Self { free: Vec::new(), capacity, created: 0, dataroom, peak: 0 }
    }

    /// At most `capacity` buffers, as [`Self::lazy`], the first `prefill` of them made now, side
    /// by side, and the memory they span offered to the kernel as transparent huge pages. For
    /// the virtual-time lab: its thousands of frames in flight are each touched once a hop,
    /// thousands of events apart, and on 4 KiB pages nearly every touch missed the TLB (huge
    /// pages: 5 % less wall time at k = 8, outputs identical). A hint only: where the kernel
    /// declines, the buffers are the same on small pages.
    pub fn lazy_prefilled(capacity: usize, dataroom: usize, prefill: usize) -> Self {
        let n = prefill.min(capacity);
        let free: Vec<PktBuf> = (0..n).map(|_| PktBuf::new(dataroom)).collect();
        let lo = free.iter().map(|b| b.raw.as_ptr() as usize).min().unwrap_or(0);
        let hi = free.iter().map(|b| b.raw.as_ptr() as usize + b.raw.len()).max().unwrap_or(0);
        advise_huge_pages(lo, hi);
        Self { free, capacity, created: n, dataroom, peak: 0 }
    }

    /// Buffers made so far: all of them for an eager pool, the most ever in use at once for a
    /// lazy one.
    pub fn created(&self) -> usize {
        self.created
    }

    /// The most buffers out of the pool at once so far.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Buffers the pool was created with.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Data room of each buffer.
    pub fn dataroom(&self) -> usize {
        self.dataroom
    }
}

/// Ask the kernel to back the memory of `s`, rounded inward to 2 MiB boundaries, with
/// transparent huge pages (a hint: large lookup tables touched at random, so the TLB holds
/// them). Nothing happens for less than 2 MiB.
pub fn advise_huge_pages_for<T>(s: &[T]) {
    let lo = s.as_ptr() as usize;
    advise_huge_pages(lo, lo + std::mem::size_of_val(s));
}

/// Ask the kernel to back `[lo, hi)`, rounded inward to 2 MiB boundaries, with transparent
/// huge pages: `MADV_HUGEPAGE` for pages not touched yet, then `MADV_COLLAPSE` (Linux 6.1+) for
/// those already mapped. Failures are ignored (an older kernel, THP off): it is a hint.
fn advise_huge_pages(lo: usize, hi: usize) {
    const HUGE: usize = 2 << 20;
    let (start, end) = (lo.div_ceil(HUGE) * HUGE, hi / HUGE * HUGE);
    if end <= start {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let p = start as *mut libc::c_void;
        // SAFETY: madvise with these advices changes neither the contents nor the mapping of
        // the range, only the page size backing it; the range lies inside memory this process
        // allocated (the buffers just made, 2 MiB-aligned inward), so it is mapped; nothing is
        // read or written through the pointer.
        #[allow(unsafe_code)]
        unsafe {
            libc::madvise(p, end - start, libc::MADV_HUGEPAGE);
            #[cfg(target_env = "gnu")]
            libc::madvise(p, end - start, libc::MADV_COLLAPSE);
        }
    }
}

impl Pool<PktBuf> for HeapPool {
    #[inline]
    fn alloc(&mut self) -> Option<PktBuf> {
        let b = match self.free.pop() {
            Some(mut b) => {
                b.reset();
                b
            }
            None if self.created < self.capacity => {
                self.created += 1;
                PktBuf::new(self.dataroom)
            }
            None => return None,
        };
        self.peak = self.peak.max(self.created - self.free.len());
        Some(b)
    }
    #[inline]
    fn free(&mut self, f: PktBuf) {
        // Never holds more than it made: a buffer from elsewhere is dropped.
        if self.free.len() < self.created {
            self.free.push(f);
        }
    }
    fn alloc_bulk(&mut self, out: &mut Vec<PktBuf>, n: usize) -> usize {
        // Free buffers first, moved in one run; then, for a lazy pool, new ones.
        let take = n.min(self.free.len());
        let from = self.free.len() - take;
        out.extend(self.free.drain(from..).map(|mut b| {
            b.reset();
            b
        }));
        let mut k = take;
        while k < n && self.created < self.capacity {
            self.created += 1;
            out.push(PktBuf::new(self.dataroom));
            k += 1;
        }
        self.peak = self.peak.max(self.created - self.free.len());
        k
    }
    fn available(&self) -> usize {
        self.free.len() + (self.capacity - self.created)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prefilled pool has its first buffers made (on huge pages or not: the same buffers),
    /// makes more on demand up to its capacity, and no more.
    #[test]
    fn a_prefilled_pool_makes_the_rest_on_demand() {
        let mut p = HeapPool::lazy_prefilled(3000, 1500, 2000);
        assert_eq!((p.created(), p.available(), p.peak()), (2000, 3000, 0));
        let mut held: Vec<PktBuf> = (0..3000).map(|_| p.alloc().expect("within capacity")).collect();
        assert!(p.alloc().is_none(), "beyond capacity");
        assert_eq!((p.created(), p.peak()), (3000, 3000));
        held[0].append(1500).expect("the data room").fill(7);
        for b in held.drain(..) {
            p.free(b);
        }
        assert_eq!(p.available(), 3000);
        // A prefill above the capacity is cut to it.
        assert_eq!(HeapPool::lazy_prefilled(10, 64, 100).created(), 10);
    }

    #[test]
    fn headroom_and_tailroom() {
        let mut b = PktBuf::new(64);
        assert_eq!((b.headroom(), b.tailroom(), b.len()), (HEADROOM, 64, 0));
        b.append(10).unwrap().copy_from_slice(&[1; 10]);
        b.prepend(4).unwrap().copy_from_slice(&[2; 4]);
        assert_eq!(b.data(), &[2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
        assert!(b.adj(4));
        assert!(b.trim(5));
        assert_eq!(b.data(), &[1; 5]);
        assert!(b.prepend(HEADROOM + 5).is_none());
        assert!(b.append(64).is_none());
        assert!(!b.trim(6));
        assert!(!b.adj(6));
        assert_eq!(b.len(), 5);
    }

    #[test]
    fn bulk_allocation_hands_out_each_buffer_once() {
        let mut p = HeapPool::new(3, 128);
        let mut a = p.alloc().unwrap();
        a.append(5).unwrap();
        p.free(a);
        let mut out = Vec::new();
        assert_eq!(p.alloc_bulk(&mut out, 2), 2);
        assert!(out.iter().all(|b| b.is_empty() && b.headroom() == HEADROOM));
        assert_eq!(p.alloc_bulk(&mut out, 5), 1);
        assert_eq!((out.len(), p.available()), (3, 0));
        let mut lazy = HeapPool::lazy(4, 64);
        assert_eq!(lazy.alloc_bulk(&mut out, 6), 4);
        assert_eq!(lazy.available(), 0);
    }

    #[test]
    fn pool_recycles_without_growing() {
        let mut p = HeapPool::new(2, 128);
        let a = p.alloc().unwrap();
        let b = p.alloc().unwrap();
        assert!(p.alloc().is_none());
        p.free(a);
        p.free(b);
        p.free(PktBuf::new(128));
        assert_eq!(p.available(), 2);
    }

    #[test]
    fn a_lazy_pool_allocates_on_demand_up_to_its_bound() {
        let mut p = HeapPool::lazy(2, 128);
        assert_eq!(p.available(), 2);
        let a = p.alloc().unwrap();
        assert_eq!(p.available(), 1);
        p.free(a);
        let (a, b) = (p.alloc().unwrap(), p.alloc().unwrap());
        assert!(p.alloc().is_none());
        assert_eq!(b.tailroom(), 128);
        p.free(a);
        p.free(b);
        p.free(PktBuf::new(128));
        assert_eq!(p.available(), 2);
    }
}
