//! The event queue: a calendar of small events in virtual nanoseconds, ordered by (time,
//! insertion number) so a seed and a configuration give the same run, and the frames on the
//! wires parked in a slab beside it.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use dataplane::buf::PktBuf;

use crate::lab::topology::Node;

/// What happens at an event. Kept small (16 bytes; indices as `u32`, a frame in flight parked in
/// the slab): the heap moves events on every push and pop, and that was the engine's largest
/// cost while frames travelled inside them.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// Parked frame `slot` reaches `node`'s `port`.
    Arrive { node: Dest, port: u16, slot: u32 },
    /// A switch port may send.
    SwitchPoll { sw: u32, port: u16 },
    /// A switch's program runs its timers.
    SwitchTick { sw: u32 },
    /// A host's link may send, or its agent's timers are due.
    HostWake { host: u32 },
    /// Flow `flow` of the workload starts.
    FlowStart { flow: u32 },
    /// Take the samples.
    Sample,
    /// A switch fails (`[[failure]]`).
    SwitchFail { sw: u32 },
}

/// A node, compactly.
#[derive(Clone, Copy)]
pub(super) enum Dest {
    Host(u32),
    Switch(u32),
}

impl From<Node> for Dest {
    fn from(n: Node) -> Self {
        match n {
            Node::Host(h) => Dest::Host(h as u32),
            Node::Switch(s) => Dest::Switch(s as u32),
        }
    }
}

#[derive(Clone, Copy)]
struct Event {
    t: u64,
    seq: u64,
    kind: Kind,
}

impl Event {
    #[inline(always)]
    fn key(&self) -> (u64, u64) {
        (self.t, self.seq)
    }
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    /// The earliest first (a max-heap of reversed order).
    fn cmp(&self, o: &Self) -> Ordering {
        o.key().cmp(&self.key())
    }
}

/// log2 of the number of calendar buckets, one per virtual nanosecond: 2^13 ns = 8.2 µs
/// ahead, several link delays plus a frame's serialisation; later events (flow starts, long
/// timers) wait in a heap and move onto the calendar as it turns.
const BUCKETS_LOG2: u32 = 13;
const BUCKETS: usize = 1 << BUCKETS_LOG2;
/// How many buckets (ns) [`Calendar::ahead`] looks through.
const AHEAD_BUCKETS: u64 = 4;
/// No node (end of a bucket's list, empty free list).
const NIL: u32 = u32::MAX;

/// An event on the calendar: a node of its bucket's singly linked list, in the node slab.
#[derive(Clone, Copy)]
struct Slot {
    t: u64,
    kind: Kind,
    next: u32,
}

/// The event queue: a calendar (a timing wheel, as network simulators use) of 1 ns buckets,
/// each a FIFO list, and a binary heap for events beyond the year. Events come out in exactly
/// a binary heap's order — by time, then by insertion — so a run is the same as with a plain
/// heap: a bucket holds one time only and its events are appended in insertion order, and the
/// heap's events move onto the calendar as soon as the year covers them, before anything can
/// be pushed there directly. So nothing is ever sorted: a push and a pop are a few stores. (The
/// binary heap's `pop` was the engine's top symbol at k = 8, 18 %; 16 ns buckets sorted on
/// their turn were still 15 %.)
pub(super) struct Calendar {
    /// Bucket `b % BUCKETS`'s first and last node, for absolute bucket (ns) `b` with
    /// `cur <= b < cur + BUCKETS`.
    head: Vec<u32>,
    tail: Vec<u32>,
    /// Non-empty buckets, a bit each.
    occupied: Vec<u64>,
    /// The current absolute bucket (ns).
    cur: u64,
    /// Events on the calendar.
    on_calendar: usize,
    /// The nodes, and the free ones (a list through `next`, the most recently freed first).
    nodes: Vec<Slot>,
    free: u32,
    /// Events a year or more ahead of `cur`.
    far: BinaryHeap<Event>,
}

impl Default for Calendar {
    fn default() -> Self {
        Self {
            head: vec![NIL; BUCKETS],
            tail: vec![NIL; BUCKETS],
            occupied: vec![0; BUCKETS / 64],
            cur: 0,
            on_calendar: 0,
            nodes: Vec::new(),
            free: NIL,
            far: BinaryHeap::new(),
        }
    }
}

impl Calendar {
    #[inline(always)]
    fn slot(b: u64) -> usize {
        (b as usize) & (BUCKETS - 1)
    }

    fn push(&mut self, e: Event) {
        // Nothing is scheduled in the past; were it, it would go first in the current bucket's
        // time, after what is there.
        debug_assert!(e.t >= self.cur, "an event in the past");
        let b = e.t.max(self.cur);
        if b >= self.cur.saturating_add(BUCKETS as u64) {
            self.far.push(e);
            return;
        }
        self.place(Self::slot(b), e.t, e.kind);
    }

    /// Append an event to bucket `i`.
    #[inline(always)]
    fn place(&mut self, i: usize, t: u64, kind: Kind) {
        let node = Slot { t, kind, next: NIL };
        let n = if self.free != NIL {
            let n = self.free;
            self.free = self.nodes[n as usize].next;
            self.nodes[n as usize] = node;
            n
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        let tail = self.tail[i];
        if tail == NIL {
            self.head[i] = n;
            self.occupied[i / 64] |= 1 << (i % 64);
        } else {
            self.nodes[tail as usize].next = n;
        }
        self.tail[i] = n;
        self.on_calendar += 1;
    }

    /// Make the current bucket the earliest non-empty one (moving what the year then reaches
    /// off the heap); `false` if there are no events at all.
    fn settle(&mut self) -> bool {
        if self.head[Self::slot(self.cur)] != NIL {
            return true;
        }
        let on_calendar = (self.on_calendar > 0).then(|| self.next_occupied());
        let far = self.far.peek().map(|e| e.t);
        self.cur = match (on_calendar, far) {
            (None, None) => return false,
            (Some(a), None) | (None, Some(a)) => a,
            (Some(a), Some(b)) => a.min(b),
        };
        // The heap's events that the year now covers join the calendar (none is earlier than
        // `cur`: it is the earliest of both), in the heap's order, so before anything pushed
        // from now on.
        while let Some(e) = self.far.peek()
            && e.t < self.cur.saturating_add(BUCKETS as u64)
        {
            let e = self.far.pop().expect("peeked");
            self.place(Self::slot(e.t), e.t, e.kind);
        }
        true
    }

    /// The absolute number of the first occupied bucket at or after `cur` (there is one).
    fn next_occupied(&self) -> u64 {
        let start = Self::slot(self.cur);
        let words = BUCKETS / 64;
        let (w0, bit0) = (start / 64, start % 64);
        let first = self.occupied[w0] & (!0u64 << bit0);
        if first != 0 {
            return self.cur.saturating_add((w0 * 64 + first.trailing_zeros() as usize - start) as u64);
        }
        for k in 1..=words {
            let w = (w0 + k) % words;
            let bits = if k == words { self.occupied[w] & !(!0u64 << bit0) } else { self.occupied[w] };
            if bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                return self.cur.saturating_add(((i + BUCKETS - start) % BUCKETS) as u64);
            }
        }
        unreachable!("on_calendar > 0 but no bucket occupied")
    }

    fn pop(&mut self) -> Option<(u64, Kind)> {
        if !self.settle() {
            return None;
        }
        let i = Self::slot(self.cur);
        let n = self.head[i];
        let Slot { t, kind, next } = self.nodes[n as usize];
        self.head[i] = next;
        if next == NIL {
            self.tail[i] = NIL;
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        self.nodes[n as usize].next = self.free;
        self.free = n;
        self.on_calendar -= 1;
        Some((t, kind))
    }

    /// The kind of the event `n` places after the next one, if it is within the current
    /// bucket and the next few (no settling: a look-ahead only).
    #[inline(always)]
    fn ahead(&self, mut n: usize) -> Option<Kind> {
        for b in self.cur..self.cur.saturating_add(AHEAD_BUCKETS) {
            let mut at = self.head[Self::slot(b)];
            while at != NIL {
                if n == 0 {
                    return Some(self.nodes[at as usize].kind);
                }
                n -= 1;
                at = self.nodes[at as usize].next;
            }
        }
        None
    }

    /// The next event's kind.
    fn peek(&mut self) -> Option<Kind> {
        if !self.settle() {
            return None;
        }
        Some(self.nodes[self.head[Self::slot(self.cur)] as usize].kind)
    }
}

/// How many events ahead of the one popped a frame is prefetched.
const PREFETCH_AHEAD: usize = 4;

/// The queue and the frames on the wires.
#[derive(Default)]
pub(super) struct Events {
    cal: Calendar,
    seq: u64,
    /// Frames on the wires, by slot; `free` are empty ones.
    parked: Vec<Option<PktBuf>>,
    free: Vec<u32>,
}

impl Events {
    pub(super) fn push(&mut self, t: u64, kind: Kind) {
        self.seq += 1;
        self.cal.push(Event { t, seq: self.seq, kind });
    }

    /// The next event. The frame of an arrival a few events ahead is prefetched: a frame was
    /// last touched a hop ago, thousands of events back, and its first read at the next switch
    /// was most of the cost of `receive` (88 % of its samples on one load, at k = 8).
    pub(super) fn pop(&mut self) -> Option<(u64, Kind)> {
        let e = self.cal.pop()?;
        if let Some(Kind::Arrive { slot, .. }) = self.cal.ahead(PREFETCH_AHEAD)
            && let Some(Some(f)) = self.parked.get(slot as usize)
        {
            f.prefetch();
        }
        Some(e)
    }

    /// Whether the next event is a sample.
    pub(super) fn sample_next(&mut self) -> bool {
        matches!(self.cal.peek(), Some(Kind::Sample))
    }

    /// Put `frame` on the wire to `node`'s `port`, arriving at `t`.
    pub(super) fn send_frame(&mut self, t: u64, node: Node, port: u16, frame: PktBuf) {
        let slot = match self.free.pop() {
            Some(s) => {
                self.parked[s as usize] = Some(frame);
                s
            }
            None => {
                self.parked.push(Some(frame));
                (self.parked.len() - 1) as u32
            }
        };
        self.push(t, Kind::Arrive { node: node.into(), port, slot });
    }

    /// Take the frame of an arrival off the wire.
    pub(super) fn unpark(&mut self, slot: u32) -> Option<PktBuf> {
        let f = self.parked.get_mut(slot as usize)?.take();
        self.free.push(slot);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq_of(k: Kind) -> u64 {
        match k {
            Kind::FlowStart { flow } => u64::from(flow),
            _ => unreachable!("the test pushes flow starts only"),
        }
    }

    /// The calendar gives events in exactly a binary heap's order — by time, then insertion —
    /// for times near and far (beyond the year, into the heap and back), pushed while popping.
    #[test]
    fn the_calendar_pops_in_the_heaps_order() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut cal = Calendar::default();
        let mut heap = BinaryHeap::new();
        let (mut seq, mut now) = (0u64, 0u64);
        for round in 0..200_000u32 {
            let r = next();
            if r % 3 != 0 || heap.is_empty() {
                // Mostly soon; some a year or more ahead; some at this very time.
                let dt = match r % 10 {
                    0 => 0,
                    1 => 600_000 + (r >> 8) % 5_000_000,
                    2 => (r >> 8) % 600_000,
                    _ => (r >> 8) % 200,
                };
                seq += 1;
                // The kind carries the insertion number, to compare.
                let e = Event { t: now + dt, seq, kind: Kind::FlowStart { flow: seq as u32 } };
                cal.push(e);
                heap.push(e);
            } else {
                let (a, b) = (cal.pop().unwrap(), heap.pop().unwrap());
                assert_eq!((a.0, seq_of(a.1)), b.key(), "round {round}");
                now = a.0;
            }
        }
        while let Some(b) = heap.pop() {
            assert_eq!(cal.pop().map(|(t, k)| (t, seq_of(k))), Some(b.key()));
        }
        assert!(cal.pop().is_none());
    }
}
