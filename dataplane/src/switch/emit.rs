//! [`Emitter`]: how a program sends packets of its own (ARP requests, RDMA writes, timed
//! flushes), from buffers the switch keeps in a small cache.

use super::Dest;
use crate::buf::{Frame, Pool};
use crate::model::DropReason;

/// Empty buffers the switch keeps for what programs emit, refilled from the pool in bulk (at
/// most half of what the pool has left): one pool call per this many emitted packets rather
/// than one each, as DPDK's per-lcore mempool cache does. A heap buffer returned through the
/// pool's `dyn` call comes back through memory, and reading it at once stalls on store
/// forwarding; a cached one was written long before.
pub(super) const SPARE_BUFFERS: usize = 32;

/// Packets a program creates (ARP requests, timed flushes) and where they go.
pub struct Emitter<'a, F> {
    pool: &'a mut dyn Pool<F>,
    /// The switch's cache of empty buffers, refilled from `pool` in bulk.
    spare: &'a mut Vec<F>,
    out: &'a mut Vec<(F, Dest, u8)>,
    pub(super) failed: u64,
    drops: &'a mut Vec<u64>,
}

impl<'a, F: Frame> Emitter<'a, F> {
    /// An emitter over the switch's emitted-packet queue, buffer cache and drop counters.
    pub(super) fn new(
        pool: &'a mut dyn Pool<F>,
        spare: &'a mut Vec<F>,
        out: &'a mut Vec<(F, Dest, u8)>,
        drops: &'a mut Vec<u64>,
    ) -> Self {
        Self { pool, spare, out, failed: 0, drops }
    }

    /// Count a drop under `reason` for a packet the program did not send where it was going,
    /// when its buffer is reused for something else (a report turned into a NACK).
    pub fn count_drop(&mut self, reason: DropReason) {
        if let Some(c) = self.drops.get_mut(usize::from(reason.0)) {
            *c += 1;
        }
    }

    /// Count `n` items dropped under `reason` that are not packets of this burst (data a
    /// program held and gave up).
    pub fn count_drops(&mut self, reason: DropReason, n: u64) {
        if let Some(c) = self.drops.get_mut(usize::from(reason.0)) {
            *c += n;
        }
    }

    /// Build a packet in a fresh buffer with `build` (which appends its bytes and returns
    /// `true` to send it) and send it to `dest` on queue `qid`, bypassing ingress. Returns
    /// whether a buffer was free and the packet was built.
    pub fn emit(&mut self, dest: Dest, qid: u8, build: impl FnOnce(&mut F) -> bool) -> bool {
        if self.spare.is_empty() {
            // Never more than half of what the pool has left: a small pool keeps buffers for
            // receiving.
            let n = SPARE_BUFFERS.min(self.pool.available() / 2).max(1);
            self.pool.alloc_bulk(self.spare, n);
        }
        let Some(mut pkt) = self.spare.pop() else {
            self.failed += 1;
            return false;
        };
        if build(&mut pkt) {
            self.out.push((pkt, dest, qid));
            true
        } else {
            pkt.reset();
            self.spare.push(pkt);
            false
        }
    }
}
