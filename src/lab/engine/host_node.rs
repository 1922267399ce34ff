//! A host node: any host agent ([`LabAgent`], a `roce::agent::Agent`) behind its NIC's link.
//! The node is the NIC's physical side, the same for every agent: it serialises one frame at a
//! time at the link's rate, obeys the PFC frames its switch sends (the agent is told which
//! priority is paused), and wakes the agent when its link frees or its timers are due.

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use ports::host::transmit_into;
use roce::agent::Agent;
use wire::ethernet::EtherType;
use wire::pfc::MacControlRepr;

use super::DATA_QUEUE;
use super::events::{Events, Kind};
use super::fabric::SerRate;
use crate::lab::topology::Node;

/// A host agent the lab runs: an [`Agent`] with a name and counters for the results.
pub trait LabAgent: Agent {
    /// What it is (`rc`, `dta_reporter`, `dta_collector`).
    fn name(&self) -> &'static str;
    /// Its counters, by name.
    fn summary(&self) -> Vec<(String, u64)>;
    /// The RC flows' NIC, if that is what it is (the flow workload starts flows on it).
    fn rc(&mut self) -> Option<&mut nic_agent::host::RcHost> {
        None
    }
    /// µFAB-E over the RC NIC, if that is what it is (flows start as its VM-pairs).
    fn ufab(&mut self) -> Option<&mut nic_agent::ufab::host::UfabHost> {
        None
    }
}

/// A host, its agent and its link.
pub(super) struct HostNode {
    pub(super) agent: Box<dyn LabAgent>,
    /// The switch and port it hangs off.
    pub(super) attach: (usize, u16),
    pub(super) rate_bps: u64,
    /// The rate, for serialisation times.
    ser: SerRate,
    delay_ns: u64,
    /// When the link is free again.
    free_at: u64,
    /// Until when its switch paused the data priority.
    paused_until: u64,
    /// The wake-ups scheduled and not yet due (a handful): one is pushed only when none of
    /// these comes first, so a far timer (a retransmission timeout) is pushed once, not again
    /// after every nearer wake-up.
    pending: Vec<u64>,
}

impl HostNode {
    pub(super) fn new(agent: Box<dyn LabAgent>, attach: (usize, u16), rate_bps: u64, delay_ns: u64) -> Self {
        Self {
            agent,
            attach,
            rate_bps,
            ser: SerRate::new(rate_bps),
            delay_ns,
            free_at: 0,
            paused_until: 0,
            pending: Vec::new(),
        }
    }

    /// Wake at `t` unless a wake-up at or before it is scheduled (it will look again).
    fn wake_exactly(&mut self, ev: &mut Events, h: usize, t: u64) {
        if self.pending.iter().any(|&w| w <= t) {
            return;
        }
        self.pending.push(t);
        ev.push(t, Kind::HostWake { host: h as u32 });
    }

    /// Try to send at `t`, or when the link frees if later.
    pub(super) fn wake(&mut self, ev: &mut Events, h: usize, t: u64) {
        self.wake_exactly(ev, h, t.max(self.free_at));
    }

    /// Run the agent's timers when they are due (after `now`), busy link or not.
    fn wake_timers(&mut self, ev: &mut Events, h: usize, now: u64) {
        if let Some(t) = self.agent.poll_timeout() {
            self.wake_exactly(ev, h, t.max(now + 1));
        }
    }

    /// After the agent was handed something at `now`: try to send (when the link frees), and
    /// run its timers when they are due.
    pub(super) fn settle(&mut self, ev: &mut Events, h: usize, now: u64) {
        self.wake(ev, h, now);
        self.wake_timers(ev, h, now);
    }

    /// A frame arrived at `now`: a PFC frame pauses or resumes the link's data priority; any
    /// other frame is the agent's.
    pub(super) fn arrive(&mut self, ev: &mut Events, h: usize, frame: &PktBuf, now: u64) {
        let d = frame.data();
        if d.get(12..14) == Some(&EtherType::MAC_CONTROL.0.to_be_bytes()[..]) {
            if let Ok(MacControlRepr::Pfc(pfc)) = MacControlRepr::parse(&d[14..])
                && pfc.is_enabled(usize::from(DATA_QUEUE))
            {
                let q = pfc.quanta[usize::from(DATA_QUEUE)];
                self.paused_until =
                    if q == 0 { now } else { now + wire::pfc::pause_duration_ns(q, self.rate_bps) };
                let t = self.paused_until;
                self.wake(ev, h, t);
            }
            return;
        }
        self.agent.handle_packet(now, d);
        self.settle(ev, h, now);
    }

    /// A wake-up at `now`: the agent's due timers, then a frame if the link is free and the
    /// agent has one.
    pub(super) fn on_wake(&mut self, ev: &mut Events, h: usize, now: u64, pool: &mut HeapPool) {
        let before = self.pending.len();
        self.pending.retain(|&w| w != now);
        if self.pending.len() == before {
            return;
        }
        if self.agent.poll_timeout().is_some_and(|t| t <= now) {
            self.agent.handle_timeout(now);
        }
        if self.free_at > now {
            return self.settle(ev, h, now);
        }
        let paused = if self.paused_until > now { 1 << DATA_QUEUE } else { 0 };
        match transmit_into(pool as &mut dyn Pool<PktBuf>, &mut *self.agent, now, paused) {
            Some(frame) => {
                let ser = self.ser.ns(frame.len());
                self.free_at = now + ser;
                let (s, p) = self.attach;
                ev.send_frame(now + ser + self.delay_ns, Node::Switch(s), p, frame);
                // The next frame when the link frees; timers when due, even before.
                self.settle(ev, h, now);
            }
            None => {
                if paused != 0 {
                    let t = self.paused_until;
                    self.wake(ev, h, t);
                }
                self.wake_timers(ev, h, now);
            }
        }
    }
}
