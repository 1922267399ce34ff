//! The per-primitive state a DTA translator keeps between reports, each a small sans-IO state
//! machine with its own tests: Append batches and ring heads, the Postcarder path cache, what
//! is held since when (per-reporter sequence tracking is in `seq.rs`, the Sketch-Merge merger
//! in `sketch.rs`).

use wire::dta::layout::POSTCARDER_HOPS;

// ---------------------------------------------------------------------------------------------
// Append

/// Largest Append batch.
pub const MAX_BATCH: usize = 16;

/// One list's batch in the making and its ring head in collector memory.
///
/// Entries accumulate until `batch` are held (or the flush timer fires); then they are written
/// at the head of the list's ring of `slots` entries, as one RDMA WRITE — two where the batch
/// crosses the end of the ring — and the head advances, so every slot is written exactly once
/// per lap (the reference wrote slot 0 twice per lap).
#[derive(Debug, Clone)]
pub struct AppendBatcher {
    batch: usize,
    slots: u64,
    head: u64,
    /// Entries written to the ring since it was empty (the collector's count).
    written: u64,
    buf: [u32; MAX_BATCH],
    n: usize,
    since: u64,
    imm: bool,
}

/// A run of entries to write: `entries` at ring slot `slot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendWrite<'a> {
    /// First ring slot.
    pub slot: u64,
    /// The entries.
    pub entries: &'a [u32],
}

impl AppendBatcher {
    /// A list written in batches of `batch` (1..=16) into a ring of `slots` entries.
    pub fn new(batch: usize, slots: u64) -> Self {
        Self {
            batch: batch.clamp(1, MAX_BATCH),
            slots: slots.max(1),
            head: 0,
            written: 0,
            buf: [0; MAX_BATCH],
            n: 0,
            since: 0,
            imm: false,
        }
    }

    /// The configured batch.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Entries waiting.
    pub fn pending(&self) -> usize {
        self.n
    }

    /// The ring slot the next batch starts at.
    pub fn head(&self) -> u64 {
        self.head
    }

    /// A new region (the collector's metadata named another one after a reconnection, or this
    /// is the first): the ring has `slots` entries and `written` were written to it so far (the
    /// collector's head, 0 for a restarted collector or one that does not say). A reconnection
    /// to the same region keeps the head, so the list never restarts over live entries.
    pub fn set_region(&mut self, slots: u64, written: u64) {
        self.slots = slots.max(1);
        self.head = written % self.slots;
        self.written = written;
    }

    /// Entries written to the ring since it was empty, this batch's included once taken.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Add an entry; `imm` asks for the batch to be written at once, with immediate data.
    /// Returns whether the batch is ready to [`take`](Self::take).
    pub fn push(&mut self, now: u64, datum: u32, imm: bool) -> bool {
        if self.n == 0 {
            self.since = now;
        }
        self.buf[self.n] = datum;
        self.n += 1;
        self.imm |= imm;
        self.n >= self.batch || imm
    }

    /// When the oldest entry waiting came (`None`: none waits).
    pub fn oldest(&self) -> Option<u64> {
        (self.n > 0).then_some(self.since)
    }

    /// Whether a partial batch has waited `timeout` ns.
    pub fn due(&self, now: u64, timeout: u64) -> bool {
        self.n > 0 && now.saturating_sub(self.since) >= timeout
    }

    /// The waiting entries as at most two writes (the second when the ring wraps), whether
    /// the batch asked for immediate data, and reset. The head advances past them.
    pub fn take(&mut self) -> ([Option<AppendWrite<'_>>; 2], bool) {
        let n = self.n as u64;
        let head = self.head;
        let first = n.min(self.slots - head) as usize;
        self.head = (head + n) % self.slots;
        self.written += n;
        self.n = 0;
        let imm = std::mem::take(&mut self.imm);
        let all = &self.buf[..n as usize];
        let a = (first > 0).then(|| AppendWrite { slot: head, entries: &all[..first] });
        let b = (first < all.len()).then(|| AppendWrite { slot: 0, entries: &all[first..] });
        ([a, b], imm)
    }
}

// ---------------------------------------------------------------------------------------------
// What is held, and since when

/// Length of a hold period, ns: items held are counted per period they were taken in.
pub const HOLD_PERIOD_NS: u64 = 5_000_000;
/// Hold periods counted apiece; older ones are counted together.
const HOLD_PERIODS: u32 = 4;

/// Items held (cached postcards' paths, merged sketch columns), counted by the
/// [`HOLD_PERIOD_NS`] period they were taken in, so the oldest one still held is known in
/// constant time: a stream's progress is confirmed only up to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeldSince {
    /// The current period.
    cur: u32,
    /// Items of each of the last `HOLD_PERIODS` periods, by period mod `HOLD_PERIODS`.
    counts: [u32; HOLD_PERIODS as usize],
    /// Items of older periods.
    older: u32,
}

impl HeldSince {
    fn roll(&mut self, now: u64) {
        let p = (now / HOLD_PERIOD_NS) as u32;
        if p.wrapping_sub(self.cur) >= HOLD_PERIODS {
            self.older += self.counts.iter().sum::<u32>();
            self.counts = [0; HOLD_PERIODS as usize];
            self.cur = p;
            return;
        }
        while self.cur != p {
            self.cur = self.cur.wrapping_add(1);
            let i = (self.cur % HOLD_PERIODS) as usize;
            self.older += std::mem::take(&mut self.counts[i]);
        }
    }

    /// One item taken at `now`: its period, to [`release`](Self::release) it with.
    pub fn take(&mut self, now: u64) -> u32 {
        self.roll(now);
        self.counts[(self.cur % HOLD_PERIODS) as usize] += 1;
        self.cur
    }

    /// The item taken in period `p` is no longer held.
    pub fn release(&mut self, p: u32) {
        let slot = &mut self.counts[(p % HOLD_PERIODS) as usize];
        if self.cur.wrapping_sub(p) < HOLD_PERIODS && *slot > 0 {
            *slot -= 1;
        } else {
            self.older = self.older.saturating_sub(1);
        }
    }

    /// When the oldest item still held was taken, at the latest (the start of its period; 0
    /// for one older than the periods counted apiece); `None` when nothing is held.
    pub fn oldest(&self) -> Option<u64> {
        if self.older > 0 {
            return Some(0);
        }
        (0..HOLD_PERIODS)
            .rev()
            .map(|k| self.cur.wrapping_sub(k))
            .find(|p| self.counts[(p % HOLD_PERIODS) as usize] > 0)
            .map(|p| u64::from(p) * HOLD_PERIOD_NS)
    }
}

// ---------------------------------------------------------------------------------------------
// Postcarder

/// One flow's path being assembled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PathEntry {
    key: u32,
    present: u8,
    hops: [u32; POSTCARDER_HOPS],
    imm: bool,
    /// The hold period of its first postcard ([`HeldSince`]).
    period: u32,
}

/// A complete (or evicted) path to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Path {
    /// The flow key.
    pub key: u32,
    /// Hop values (0 where a postcard never came).
    pub hops: [u32; POSTCARDER_HOPS],
    /// Hops present (bit h-1 for hop h).
    pub present: u8,
    /// A postcard asked for immediate data.
    pub imm: bool,
    /// When its first postcard came, at the latest ([`HeldSince`]'s period start).
    pub since: u64,
}

/// What a postcard did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostcardOutcome {
    /// Cached; the path is not complete yet.
    Cached,
    /// The path is complete: write it.
    Complete(Path),
    /// Another flow's partial path was in the way: write that one (evicted); this postcard is
    /// cached.
    Evicted(Path),
    /// A hop number outside 1..=hops.
    BadHop,
}

/// Paths cached while their postcards arrive, one entry per `CRC32(key) & (size - 1)`; a path is
/// written once all `hops` postcards are in, or when another flow needs its entry.
#[derive(Debug, Clone)]
pub struct PostcarderCache {
    entries: Vec<PathEntry>,
    hops: u8,
    held: HeldSince,
}

impl PostcarderCache {
    /// Postcards held in partial paths (what a stop leaves unwritten).
    pub fn cached_postcards(&self) -> u64 {
        self.entries.iter().map(|e| u64::from(e.present.count_ones())).sum()
    }

    /// `size` entries (a power of two), paths of `hops` (1..=5).
    pub fn new(size: usize, hops: u8) -> Self {
        Self {
            entries: vec![PathEntry::default(); size.next_power_of_two().max(1)],
            hops: hops.clamp(1, POSTCARDER_HOPS as u8),
            held: HeldSince::default(),
        }
    }

    /// Forget every partial path.
    pub fn clear(&mut self) {
        self.entries.fill(PathEntry::default());
        self.held = HeldSince::default();
    }

    /// When the oldest partial path's first postcard came, at the latest (`None`: none).
    pub fn oldest(&self) -> Option<u64> {
        self.held.oldest()
    }

    /// Memory of the cache.
    pub fn bytes(&self) -> usize {
        self.entries.len() * std::mem::size_of::<PathEntry>()
    }

    /// Whether [`add`](Self::add)ing this postcard would give a path to write (it completes
    /// its path, or evicts another): the caller admits that write first, so a path is never
    /// taken out of the cache and then refused.
    pub fn would_write(&self, key: u32, hop: u8) -> bool {
        if hop == 0 || hop > self.hops {
            return false;
        }
        let e = &self.entries[wire::dta::keywrite_checksum(key) as usize & (self.entries.len() - 1)];
        (e.present != 0 && e.key != key) || (e.present | 1 << (hop - 1)) == (1u8 << self.hops) - 1
    }

    /// Add hop `hop`'s postcard for `key`, at `now`.
    pub fn add(&mut self, now: u64, key: u32, hop: u8, data: u32, imm: bool) -> PostcardOutcome {
        if hop == 0 || hop > self.hops {
            return PostcardOutcome::BadHop;
        }
        let i = wire::dta::keywrite_checksum(key) as usize & (self.entries.len() - 1);
        let all = (1u8 << self.hops) - 1;
        let e = &mut self.entries[i];
        let mut evicted = None;
        if e.present != 0 && e.key != key {
            let since = u64::from(e.period) * HOLD_PERIOD_NS;
            evicted = Some(Path { key: e.key, hops: e.hops, present: e.present, imm: e.imm, since });
            self.held.release(e.period);
            *e = PathEntry::default();
        }
        if e.present == 0 {
            e.period = self.held.take(now);
        }
        e.key = key;
        e.present |= 1 << (hop - 1);
        e.hops[usize::from(hop - 1)] = data;
        e.imm |= imm;
        if let Some(p) = evicted {
            return PostcardOutcome::Evicted(p);
        }
        if e.present == all {
            let since = u64::from(e.period) * HOLD_PERIOD_NS;
            let p = Path { key, hops: e.hops, present: e.present, imm: e.imm, since };
            self.held.release(e.period);
            *e = PathEntry::default();
            return PostcardOutcome::Complete(p);
        }
        PostcardOutcome::Cached
    }
}

// ---------------------------------------------------------------------------------------------
// Reporter sequence numbers

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_batches_wrap_once_per_lap() {
        let mut a = AppendBatcher::new(4, 10);
        let mut written = vec![0u32; 10];
        let (mut writes, mut next_value, mut next_slot) = (0, 0u32, 0u64);
        for i in 0..40u32 {
            if a.push(0, i, false) {
                let (w, imm) = a.take();
                assert!(!imm);
                for x in w.into_iter().flatten() {
                    // Entries go out in arrival order, each run where the last one ended.
                    assert_eq!(x.slot, next_slot);
                    for e in x.entries {
                        assert_eq!(*e, next_value);
                        next_value += 1;
                    }
                    for j in 0..x.entries.len() {
                        written[x.slot as usize + j] += 1;
                    }
                    next_slot = (x.slot + x.entries.len() as u64) % 10;
                    writes += 1;
                }
            }
        }
        // 40 entries over a ring of 10: every slot written exactly 4 times; the batches that
        // crossed the end of the ring took two writes.
        assert_eq!(written, vec![4; 10]);
        assert_eq!(writes, 10 + 2, "batches at slot 8 split in two");
        assert_eq!(a.head(), 0);
    }

    #[test]
    fn append_flushes_partial_batches_and_immediates() {
        let mut a = AppendBatcher::new(16, 1024);
        assert!(!a.push(100, 7, false));
        assert!(!a.due(150, 100));
        assert!(a.due(200, 100));
        assert!(a.push(210, 8, true), "an immediate flushes at once");
        let (w, imm) = a.take();
        assert!(imm);
        assert_eq!(w[0], Some(AppendWrite { slot: 0, entries: &[7, 8] }));
        assert_eq!(w[1], None);
        assert_eq!(a.head(), 2);
    }

    #[test]
    fn postcarder_completes_and_evicts() {
        let mut c = PostcarderCache::new(1, 3);
        assert_eq!(c.add(0, 5, 1, 10, false), PostcardOutcome::Cached);
        assert_eq!(c.add(0, 5, 4, 10, false), PostcardOutcome::BadHop);
        assert_eq!(c.add(0, 5, 3, 30, false), PostcardOutcome::Cached);
        // Another flow takes the single entry: flow 5's partial path goes out.
        let PostcardOutcome::Evicted(p) = c.add(0, 6, 1, 1, false) else { panic!() };
        assert_eq!((p.key, p.present, p.hops), (5, 0b101, [10, 0, 30, 0, 0]));
        c.add(0, 6, 2, 2, true);
        let PostcardOutcome::Complete(p) = c.add(0, 6, 3, 3, false) else { panic!() };
        assert_eq!((p.key, p.present, p.hops, p.imm), (6, 0b111, [1, 2, 3, 0, 0], true));
    }

    /// The oldest item held is known per period; releasing it moves the oldest on; items
    /// older than the periods counted apiece pin it at 0 until released.
    #[test]
    fn held_since_names_the_oldest_period_still_held() {
        let p = HOLD_PERIOD_NS;
        let mut h = HeldSince::default();
        assert_eq!(h.oldest(), None);
        let a = h.take(p + 1);
        let b = h.take(2 * p + 1);
        assert_eq!(h.oldest(), Some(p));
        h.release(a);
        assert_eq!(h.oldest(), Some(2 * p));
        let c = h.take(10 * p);
        assert_eq!(h.oldest(), Some(0), "b is older than the periods counted apiece");
        h.release(b);
        assert_eq!(h.oldest(), Some(10 * p));
        h.release(c);
        assert_eq!(h.oldest(), None);
    }
}
