//! A switch node: any registered program's switch behind `DynSwitch`, and its ports' links.
//! A port sends one frame at a time, the next when the last has been serialised at the link's
//! rate; each frame arrives at the far end after the link's propagation delay.

use dataplane::buf::{Frame, HeapPool, PktBuf};
use dataplane::switch::DynSwitch;
use wire::ethernet::EtherType;
use wire::pfc::MacControlRepr;

use super::events::{Events, Kind};
use super::fabric::SerRate;
use super::results::PfcEvent;
use crate::lab::topology::Node;

/// One port's link.
pub(super) struct PortState {
    pub(super) peer: Node,
    pub(super) peer_port: u16,
    pub(super) rate_bps: u64,
    /// The rate, for serialisation times.
    pub(super) ser: SerRate,
    pub(super) delay_ns: u64,
    /// When the link is free again.
    pub(super) free_at: u64,
    /// When a poll of this port is scheduled.
    pub(super) poll_at: Option<u64>,
    /// Bytes sent.
    pub(super) tx_bytes: u64,
    /// Packets sent by the port's queue depth when each left (its own bytes included), in
    /// [`QUEUE_HIST_BYTES`] buckets: the queue's distribution at packet granularity.
    pub(super) queue_hist: Vec<u64>,
}

/// Bucket width of the per-port queue histograms, bytes (the reference's queue monitor counts
/// in KB).
pub const QUEUE_HIST_BYTES: u64 = 1000;

impl PortState {
    pub(super) fn new(peer: Node, peer_port: u16, rate_bps: u64, delay_ns: u64) -> Self {
        Self {
            peer,
            peer_port,
            rate_bps,
            ser: SerRate::new(rate_bps),
            delay_ns,
            free_at: 0,
            poll_at: None,
            tx_bytes: 0,
            queue_hist: Vec::new(),
        }
    }
}

/// A switch and its ports.
pub(super) struct SwitchNode {
    pub(super) sw: Box<dyn DynSwitch<PktBuf>>,
    /// Its program's registry name.
    pub(super) program: &'static str,
    pub(super) ports: Vec<PortState>,
    /// Scratch: the ports the switch's last step touched.
    pub(super) touched: Vec<u16>,
    /// Failed (`[[failure]]`): it drops every frame from then on.
    pub(super) failed: bool,
    /// Frames lost to the failure: queued when it failed, or arriving after.
    pub(super) failed_drops: u64,
}

impl SwitchNode {
    /// Make sure port `p` (of switch `s`) is polled when it next has something to send.
    pub(super) fn schedule_poll(&mut self, ev: &mut Events, s: usize, p: u16, now: u64) {
        let Some(t) = self.sw.next_ready(p, now) else { return };
        let ps = &mut self.ports[usize::from(p)];
        let t = t.max(ps.free_at);
        if ps.poll_at.is_some_and(|a| a <= t) {
            return;
        }
        ps.poll_at = Some(t);
        ev.push(t, Kind::SwitchPoll { sw: s as u32, port: p });
    }

    /// A frame arrived on `port`: the switch takes it, and each port it touched (queued to,
    /// or owing a PAUSE or RESUME) is polled when it has something. Other ports cannot have
    /// become ready sooner: re-reading all of them on every arrival was a fifth of the run at
    /// k = 8 (every port's queues, cold in the cache).
    pub(super) fn receive(
        &mut self,
        ev: &mut Events,
        s: usize,
        port: u16,
        frame: PktBuf,
        now: u64,
        pool: &mut HeapPool,
    ) {
        if self.failed {
            self.failed_drops += 1;
            dataplane::buf::Pool::free(pool, frame);
            return;
        }
        self.sw.receive(now, port, frame, pool);
        self.poll_touched(ev, s, now);
    }

    /// The switch fails at `now`: what it holds is lost (counted), and it takes nothing more.
    pub(super) fn fail(&mut self, pool: &mut HeapPool) {
        let tm = self.sw.tm();
        let before: u64 = (0..self.ports.len())
            .flat_map(|p| (0..8).map(move |q| (p, q)))
            .map(|(p, q)| u64::from(tm.queue_packets(p as u16, q)))
            .sum();
        self.sw.drain_all(pool);
        self.failed_drops += before;
        self.failed = true;
    }

    fn poll_touched(&mut self, ev: &mut Events, s: usize, now: u64) {
        let mut touched = std::mem::take(&mut self.touched);
        self.sw.take_touched(&mut touched);
        for p in touched.drain(..) {
            self.schedule_poll(ev, s, p, now);
        }
        self.touched = touched;
    }

    /// The program's timers at `now` (what it emits is queued like any packet), and the next
    /// tick scheduled.
    pub(super) fn tick(&mut self, ev: &mut Events, s: usize, now: u64, pool: &mut HeapPool) {
        if self.failed {
            return;
        }
        self.sw.tick(now, pool);
        if let Some(dt) = self.sw.tick_interval() {
            ev.push(now + dt, Kind::SwitchTick { sw: s as u32 });
        }
        self.poll_all(ev, s, now);
    }

    fn poll_all(&mut self, ev: &mut Events, s: usize, now: u64) {
        self.touched.clear();
        self.sw.take_touched(&mut self.touched);
        for p in 0..self.ports.len() {
            self.schedule_poll(ev, s, p as u16, now);
        }
    }

    /// Port `p`'s poll at `now`: if the link is free, the next frame goes; PFC frames are
    /// recorded in `pfc`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn poll(
        &mut self,
        ev: &mut Events,
        s: usize,
        p: u16,
        now: u64,
        pool: &mut HeapPool,
        out: &mut Vec<PktBuf>,
        pfc: &mut Vec<PfcEvent>,
    ) {
        if self.failed {
            self.ports[usize::from(p)].poll_at = None;
            return;
        }
        {
            let ps = &mut self.ports[usize::from(p)];
            if ps.poll_at != Some(now) {
                return;
            }
            ps.poll_at = None;
            if ps.free_at > now {
                let t = ps.free_at;
                ps.poll_at = Some(t);
                ev.push(t, Kind::SwitchPoll { sw: s as u32, port: p });
                return;
            }
        }
        let depth = self.sw.tm().port_bytes(p);
        self.sw.transmit(now, p, out, 1, pool);
        if !out.is_empty() {
            let h = &mut self.ports[usize::from(p)].queue_hist;
            let b = (depth / QUEUE_HIST_BYTES) as usize;
            if h.len() <= b {
                h.resize(b + 1, 0);
            }
            h[b] += 1;
        }
        for f in out.drain(..) {
            let len = f.len();
            if f.data().get(12..14) == Some(&EtherType::MAC_CONTROL.0.to_be_bytes()[..])
                && let Ok(MacControlRepr::Pfc(frame)) = MacControlRepr::parse(&f.data()[14..])
            {
                let pause = frame.quanta.iter().any(|&q| q > 0);
                pfc.push(PfcEvent { time_ns: now, switch: s, port: p, pause });
            }
            let ps = &mut self.ports[usize::from(p)];
            let ser = ps.ser.ns(len);
            ps.free_at = now + ser;
            ps.tx_bytes += len as u64;
            ev.send_frame(now + ser + ps.delay_ns, ps.peer, ps.peer_port, f);
        }
        self.schedule_poll(ev, s, p, now);
        // A dequeue that ends an ingress port's PAUSE owes a RESUME there now.
        self.poll_touched(ev, s, now);
    }

    /// Whether the switch holds no packet.
    pub(super) fn idle(&self) -> bool {
        self.failed || (0..self.ports.len()).all(|p| !self.sw.tm().port_has_packets(p as u16))
    }
}
