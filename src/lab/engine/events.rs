//! The event queue: a heap of small events in virtual nanoseconds, ordered by (time, insertion
//! number) so a seed and a configuration give the same run, and the frames on the wires parked
//! in a slab beside it.

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

struct Event {
    t: u64,
    seq: u64,
    kind: Kind,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
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
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

/// The queue and the frames on the wires.
#[derive(Default)]
pub(super) struct Events {
    heap: BinaryHeap<Event>,
    seq: u64,
    /// Frames on the wires, by slot; `free` are empty ones.
    parked: Vec<Option<PktBuf>>,
    free: Vec<u32>,
}

impl Events {
    pub(super) fn push(&mut self, t: u64, kind: Kind) {
        self.seq += 1;
        self.heap.push(Event { t, seq: self.seq, kind });
    }

    /// The next event.
    pub(super) fn pop(&mut self) -> Option<(u64, Kind)> {
        self.heap.pop().map(|e| (e.t, e.kind))
    }

    /// Whether the next event is a sample.
    pub(super) fn sample_next(&self) -> bool {
        matches!(self.heap.peek(), Some(e) if matches!(e.kind, Kind::Sample))
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
