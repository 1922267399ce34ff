//! [`Mbuf`], an `rte_mbuf` the switch works on in place, and the per-socket mempools.

use super::*;

impl Eal {
    /// The mbuf pool of `socket`, created on first use with `n` mbufs of `dataroom` bytes after
    /// the headroom and a per-lcore cache of `cache`.
    pub fn pool(&mut self, socket: i32, n: u32, cache: u32, dataroom: u32) -> Result<MbufPool, DpdkError> {
        if let Some((_, p)) = self.pools.iter().find(|(s, _)| *s == socket) {
            return Ok(MbufPool { mp: *p });
        }
        let size = dataroom + HEADROOM as u32;
        let err = |reason: String| DpdkError::Mempool { n, size, cache, socket, reason };
        let room = u16::try_from(size)
            .map_err(|_| err(format!("a data room of {size} B does not fit DPDK's 16 bits")))?;
        let name = CString::new(format!("sf_mbufs_s{socket}")).unwrap_or_default();
        // SAFETY: the name is a valid C string; DPDK copies it.
        let mp = unsafe { sys::rte_pktmbuf_pool_create(name.as_ptr(), n, cache, 0, room, socket) };
        let mp = NonNull::new(mp).ok_or_else(|| err(last_error()))?;
        self.pools.push((socket, mp));
        Ok(MbufPool { mp })
    }
}

/// An `rte_mbuf` the switch owns: one segment, freed back to its mempool on drop.
#[repr(transparent)]
pub struct Mbuf(NonNull<sys::rte_mbuf>);

// SAFETY: an Mbuf is the only handle to its mbuf; mbufs may be freed from any lcore.
unsafe impl Send for Mbuf {}

impl std::fmt::Debug for Mbuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mbuf({:p}, {} B)", self.0, self.len())
    }
}

impl Mbuf {
    #[inline(always)]
    pub(super) fn m(&self) -> &sys::rte_mbuf {
        // SAFETY: the Mbuf owns a live mbuf (allocated, not freed, not shared).
        unsafe { self.0.as_ref() }
    }

    #[inline(always)]
    fn m_mut(&mut self) -> &mut sys::rte_mbuf {
        // SAFETY: as above, and `&mut self` makes this the only reference.
        unsafe { self.0.as_mut() }
    }

    #[inline(always)]
    pub(super) fn base(&self) -> *mut u8 {
        self.m().buf_addr.cast::<u8>()
    }

    /// The DPDK port the mbuf was received on.
    pub fn port(&self) -> u16 {
        self.m().port
    }
}

impl Drop for Mbuf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the Mbuf owns the mbuf; it is not used after this.
        unsafe { sys::sf_pktmbuf_free(self.0.as_ptr()) };
    }
}

impl Frame for Mbuf {
    #[inline(always)]
    fn data(&self) -> &[u8] {
        let m = self.m();
        // SAFETY: a single-segment mbuf's data lies within its buffer at data_off for data_len
        // bytes, and we own it.
        unsafe {
            std::slice::from_raw_parts(self.base().add(usize::from(m.data_off)), usize::from(m.data_len))
        }
    }

    #[inline(always)]
    fn data_mut(&mut self) -> &mut [u8] {
        let (off, len) = (usize::from(self.m().data_off), usize::from(self.m().data_len));
        // SAFETY: as for data(), and `&mut self` is the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.base().add(off), len) }
    }

    #[inline(always)]
    fn headroom(&self) -> usize {
        usize::from(self.m().data_off)
    }

    #[inline(always)]
    fn tailroom(&self) -> usize {
        let m = self.m();
        usize::from(m.buf_len) - usize::from(m.data_off) - usize::from(m.data_len)
    }

    #[inline]
    fn prepend(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.headroom() {
            return None;
        }
        let m = self.m_mut();
        m.data_off -= n as u16;
        m.data_len += n as u16;
        m.pkt_len += n as u32;
        let off = usize::from(m.data_off);
        // SAFETY: the n bytes at the new data_off are inside the buffer and owned.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base().add(off), n) })
    }

    #[inline]
    fn adj(&mut self, n: usize) -> bool {
        if n > self.len() {
            return false;
        }
        let m = self.m_mut();
        m.data_off += n as u16;
        m.data_len -= n as u16;
        m.pkt_len -= n as u32;
        true
    }

    #[inline]
    fn append(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.tailroom() {
            return None;
        }
        let m = self.m_mut();
        let at = usize::from(m.data_off) + usize::from(m.data_len);
        m.data_len += n as u16;
        m.pkt_len += n as u32;
        // SAFETY: the n bytes after the old data end are inside the buffer (tailroom) and owned.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base().add(at), n) })
    }

    #[inline]
    fn trim(&mut self, n: usize) -> bool {
        if n > self.len() {
            return false;
        }
        let m = self.m_mut();
        m.data_len -= n as u16;
        m.pkt_len -= n as u32;
        true
    }

    #[inline]
    fn reset(&mut self) {
        // SAFETY: the Mbuf owns the mbuf; rte_pktmbuf_reset restores an empty single segment
        // with the default headroom.
        unsafe { sys::sf_pktmbuf_reset(self.0.as_ptr()) };
    }
}

/// Prefetch the cache line at `p` into all levels (`rte_prefetch0`), inline: a prefetch never
/// faults, whatever the address.
#[inline(always)]
pub(super) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86_64; a prefetch has no architectural effect and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as above, through DPDK's own rte_prefetch0.
    unsafe {
        sys::sf_prefetch0(p.cast());
    }
}

/// A handle to a socket's mbuf mempool: every pipeline on that socket allocates from it, through
/// its lcore's cache.
#[derive(Debug, Clone, Copy)]
pub struct MbufPool {
    pub(super) mp: NonNull<sys::rte_mempool>,
}

// SAFETY: DPDK mempools are multi-producer, multi-consumer; each lcore uses its own cache.
unsafe impl Send for MbufPool {}

impl Pool<Mbuf> for MbufPool {
    #[inline]
    fn alloc(&mut self) -> Option<Mbuf> {
        // SAFETY: the pool is live for as long as the Eal that made it.
        NonNull::new(unsafe { sys::sf_pktmbuf_alloc(self.mp.as_ptr()) }).map(Mbuf)
    }

    #[inline]
    fn free(&mut self, f: Mbuf) {
        drop(f);
    }

    fn available(&self) -> usize {
        // SAFETY: as above.
        unsafe { sys::rte_mempool_avail_count(self.mp.as_ptr()) as usize }
    }
}
