//! The switch: a [`Program`]'s ingress and egress around the packet replication engine and the
//! traffic manager, as on a Tofino pipe.
//!
//! ```text
//! port rx ─▶ MAC (PAUSE/PFC consumed) ─▶ ingress ─▶ replication ─▶ TM queues ─▶ egress ─▶ port tx
//!               ▲                          │  │                                  │  │
//!               └──── recirculation ◀──────┼──┼──────────────────────────────────┘  │
//!                     CPU port ◀───────────┴──┴────── mirror / to CPU ◀─────────────┘
//! ```
//!
//! [`Switch`] is sans-IO: it holds no clock, socket or thread. The poll-mode runtime hands it
//! bursts from real ports with the time; the lab hands it packets on a virtual clock.

use wire::ethernet::EtherType;
use wire::pfc::{self, MacControlRepr};

use crate::buf::{Frame, Pool};
use crate::model::{DropReason, DropReasons, Resources, builtin};
use crate::tm::{CutRun, DeqMeta, EnqMeta, TmDrop, TrafficManager};

mod dynamic;
mod emit;

pub use dynamic::DynSwitch;
pub use emit::Emitter;
use emit::SPARE_BUFFERS;

/// A port number. Front-panel ports are `0..n`; [`Switch::cpu_port`] is `n`.
pub type PortId = u16;

/// Where ingress sends a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// Drop it, counted under the reason.
    Drop(DropReason),
    /// The program took what it needed from the packet (a report absorbed into a batch, an
    /// acknowledgement consumed); its buffer is released and it is counted as consumed, not
    /// dropped.
    Consume,
    /// One egress port.
    Port(PortId),
    /// Every member of a multicast group, each copy with its replication ID.
    Multicast(u16),
    /// The switch CPU.
    Cpu,
}

/// Ingress intrinsic metadata: what a P4 ingress control reads and sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngressMd {
    /// Port the packet arrived on ([`Switch::cpu_port`] for packets from the CPU).
    pub ingress_port: PortId,
    /// Arrival time, ns.
    pub ingress_ts: u64,
    /// Times this packet has been recirculated.
    pub recirc_pass: u8,
    /// Whether the switch CPU injected it.
    pub from_cpu: bool,
    /// Where it goes. Starts as a drop: a program must choose.
    pub dest: Dest,
    /// Egress queue, which is also its priority (0–7).
    pub qid: u8,
    /// For [`Dest::Multicast`]: skip the copy for the ingress port (Tofino's exclusion ID).
    pub exclude_ingress: bool,
    /// Also send a copy to the CPU, tagged with this code.
    pub mirror: Option<u16>,
    /// Skip the egress program for this packet (Tofino's `bypass_egress`).
    pub bypass_egress: bool,
}

impl IngressMd {
    /// The metadata of a packet entering ingress on `port` at `now`, before the program runs:
    /// destined to be dropped until the program chooses, queue 0, no mirror.
    #[inline(always)]
    pub const fn arriving(port: PortId, now: u64, recirc_pass: u8, from_cpu: bool) -> Self {
        IngressMd {
            bypass_egress: false,
            ingress_port: port,
            ingress_ts: now,
            recirc_pass,
            from_cpu,
            dest: Dest::Drop(builtin::PROGRAM),
            qid: 0,
            exclude_ingress: false,
            mirror: None,
        }
    }
}

impl EnqMeta {
    /// What the TM keeps of a packet ingress sent to `egress_port`.
    #[inline(always)]
    fn from_ingress(md: &IngressMd, egress_port: PortId) -> Self {
        EnqMeta {
            ingress_port: md.ingress_port,
            egress_port,
            qid: md.qid,
            rid: 0,
            ingress_ts: md.ingress_ts,
            recirc_pass: md.recirc_pass,
            bypass_egress: md.bypass_egress,
        }
    }
}

/// Egress intrinsic metadata: what a P4 egress control reads and sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EgressMd {
    /// Port the packet leaves by.
    pub egress_port: PortId,
    /// What the TM recorded: ingress port, queue, replication ID, timestamps, depths, PFC.
    pub deq: DeqMeta,
    /// Dequeue time, ns.
    pub deq_ts: u64,
    /// Bytes queued on the egress port, all queues, after this packet left.
    pub port_qdepth: u64,
    /// Bytes the egress port has sent, this packet included.
    pub tx_bytes: u64,
    /// The egress port's link speed, bits per second.
    pub speed_bps: u64,
    /// Drop instead of sending, counted under the reason.
    pub drop: Option<DropReason>,
    /// Also send a copy to the CPU, tagged with this code.
    pub mirror: Option<u16>,
    /// Send it back to ingress instead of out.
    pub recirculate: bool,
}

impl EgressMd {
    /// The metadata of a packet that cut through the TM at `now` (its queue was empty): `deq` as
    /// the TM recorded it, the port's transmitted bytes with it and the port's speed.
    #[inline(always)]
    const fn cut_through(deq: DeqMeta, now: u64, tx_bytes: u64, speed_bps: u64) -> Self {
        EgressMd {
            egress_port: deq.enq.egress_port,
            deq,
            deq_ts: now,
            port_qdepth: 0,
            tx_bytes,
            speed_bps,
            drop: None,
            mirror: None,
            recirculate: false,
        }
    }
}

/// A packet on its way to the switch CPU.
#[derive(Debug)]
pub struct CpuPacket<F> {
    /// The packet.
    pub pkt: F,
    /// The port it arrived on.
    pub ingress_port: PortId,
    /// The mirror code, or `None` if ingress sent it with [`Dest::Cpu`].
    pub code: Option<u16>,
}

/// A switch program: P4-shaped ingress and egress controls over the machine model.
pub trait Program: Send + 'static {
    /// Control-plane messages (table updates and queries).
    type Command: Send + 'static;

    /// Per packet, before the traffic manager: parse, match, act; set `md.dest`.
    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>);

    /// Per packet copy, after the traffic manager.
    fn egress<F: Frame>(&mut self, _pkt: &mut F, _md: &mut EgressMd) {}

    /// Whether [`egress`](Self::egress) can do anything at all (rewrite, drop, mirror or
    /// recirculate) as the program is configured. When it is `false` the switch skips the
    /// egress metadata and control for every packet, as a P4 compiler drops an empty egress
    /// control; the TM's accounting is unchanged.
    #[inline(always)]
    fn has_egress(&self) -> bool {
        true
    }

    /// The deparser's last step, as each packet leaves `port` (after egress and the TM):
    /// checksums that cover the whole packet go here — the DTA translator computes RoCEv2
    /// ICRCs here, long after the packet's bytes were written.
    #[inline(always)]
    fn deparse<F: Frame>(&mut self, _pkt: &mut F, _port: PortId) {}

    /// Timers: called by the runtime regularly with the time.
    fn tick<F: Frame>(&mut self, _now: u64, _out: &mut Emitter<'_, F>) {}

    /// The runtime is stopping: called every tick until it returns `true` (nothing left to
    /// finish: writes acknowledged, connections closed), at most for the runtime's grace period;
    /// with `force` (the grace period is over, or there is none) the program must finish now,
    /// counting what it gives up on. Packets emitted are still sent.
    fn stop<F: Frame>(&mut self, _now: u64, _force: bool, _out: &mut Emitter<'_, F>) -> bool {
        true
    }

    /// How often [`tick`](Self::tick) has work, at most: the poll-mode runtime ticks every
    /// 50 µs whatever this says; a runtime on a virtual clock (the lab) ticks at this period,
    /// and not at all for `None`.
    fn tick_interval(&self) -> Option<u64> {
        Some(50_000)
    }

    /// Apply a control-plane message; the answer is printed or returned to the caller.
    fn control(&mut self, cmd: Self::Command, now: u64) -> Result<String, String>;

    /// The program's own counters once it has stopped, for the run's final summary (`None`:
    /// it has none beyond the switch's).
    fn final_stats(&mut self) -> Option<String> {
        None
    }

    /// Parse one line of the control protocol (`route add 10.0.0.0/8 via 10.0.1.2`, …) given the
    /// port names, into a command the pipelines apply.
    fn parse_command(line: &str, ports: &[String]) -> Result<Self::Command, String>
    where
        Self: Sized;

    /// The declared resources.
    fn resources(&self) -> &Resources;

    /// Records the program made for its operator that no packet carried (Hawkeye's telemetry
    /// reports when no analyzer address is configured), appended to `out` and forgotten: a
    /// runtime that collects them (the lab) calls this after each tick.
    fn take_records(&mut self, _out: &mut Vec<Vec<u8>>) {}
}

/// Whether `pkt` is a MAC Control frame (802.3 Annex 31B, 802.1Qbb: never VLAN-tagged).
#[inline(always)]
fn is_mac_control<F: Frame>(pkt: &F) -> bool {
    pkt.data().get(12..14) == Some(&EtherType::MAC_CONTROL.0.to_be_bytes()[..])
}

/// Multicast groups: group ID → (port, replication ID) members.
#[derive(Debug, Clone, Default)]
pub struct McastGroups {
    groups: Vec<Vec<(PortId, u16)>>,
}

impl McastGroups {
    /// Set a group's members (replacing any).
    pub fn set(&mut self, group: u16, members: Vec<(PortId, u16)>) {
        let g = usize::from(group);
        if self.groups.len() <= g {
            self.groups.resize_with(g + 1, Vec::new);
        }
        self.groups[g] = members;
    }

    /// A group's members.
    pub fn get(&self, group: u16) -> &[(PortId, u16)] {
        self.groups.get(usize::from(group)).map_or(&[], Vec::as_slice)
    }
}

/// Per-port counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Frames received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Frames handed to the port to send.
    pub tx_packets: u64,
    /// Bytes handed to the port to send.
    pub tx_bytes: u64,
    /// PAUSE/PFC frames received.
    pub pfc_rx: u64,
    /// PAUSE/PFC frames sent.
    pub pfc_tx: u64,
}

/// The switch's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Per front-panel port.
    pub ports: Vec<PortCounters>,
    /// Drops per reason (indexed like [`DropReasons`]).
    pub drops: Vec<u64>,
    /// Packets sent to the CPU.
    pub to_cpu: u64,
    /// Packets injected by the CPU.
    pub from_cpu: u64,
    /// Recirculations.
    pub recirculated: u64,
    /// Packets a program consumed ([`Dest::Consume`]).
    pub consumed: u64,
}

impl Counters {
    /// Add another set of counters (from another lcore).
    pub fn add(&mut self, o: &Counters) {
        if self.ports.len() < o.ports.len() {
            self.ports.resize(o.ports.len(), PortCounters::default());
        }
        for (a, b) in self.ports.iter_mut().zip(&o.ports) {
            a.rx_packets += b.rx_packets;
            a.rx_bytes += b.rx_bytes;
            a.tx_packets += b.tx_packets;
            a.tx_bytes += b.tx_bytes;
            a.pfc_rx += b.pfc_rx;
            a.pfc_tx += b.pfc_tx;
        }
        if self.drops.len() < o.drops.len() {
            self.drops.resize(o.drops.len(), 0);
        }
        for (a, b) in self.drops.iter_mut().zip(&o.drops) {
            *a += b;
        }
        self.to_cpu += o.to_cpu;
        self.from_cpu += o.from_cpu;
        self.recirculated += o.recirculated;
        self.consumed += o.consumed;
    }
}

/// Switch-level options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchOptions {
    /// Most recirculation passes before a packet is dropped.
    pub max_recirc: u8,
    /// Pass received PAUSE/PFC frames on to the program after the TM has acted on them (Hawkeye
    /// watches them); otherwise the MAC consumes them.
    pub pfc_to_program: bool,
    /// Most packets waiting for the CPU.
    pub cpu_queue: usize,
    /// Let a packet for an idle egress port skip the queues (see
    /// [`TrafficManager::cut_through`]); off, every packet is queued until the next transmit.
    pub cut_through: bool,
    /// Most cut-through packets waiting per port for the next transmit step (at most
    /// [`STAGED_CAP`]); beyond, packets queue in the TM.
    pub staged_max: usize,
}

/// The cut-through stage's capacity per port, allocated up front and never exceeded (so the
/// stage never allocates): [`SwitchOptions::staged_max`]'s ceiling.
pub const STAGED_CAP: usize = 256;

impl Default for SwitchOptions {
    fn default() -> Self {
        Self {
            max_recirc: 4,
            pfc_to_program: false,
            cpu_queue: 1024,
            cut_through: true,
            staged_max: STAGED_CAP,
        }
    }
}

/// A switch running program `P` over `F` buffers.
pub struct Switch<P: Program, F> {
    program: P,
    tm: TrafficManager<F>,
    drops: DropReasons,
    mcast: McastGroups,
    opts: SwitchOptions,
    counters: Counters,
    recirc: Vec<(F, IngressMd)>,
    cpu: Vec<CpuPacket<F>>,
    emitted: Vec<(F, Dest, u8)>,
    /// Empty buffers for what the program emits ([`SPARE_BUFFERS`] at most).
    spare: Vec<F>,
    /// Per port: packets that cut through the TM, past egress, waiting for `transmit` (at most
    /// [`SwitchOptions::staged_max`], itself at most [`STAGED_CAP`], the capacity reserved).
    /// A `Vec`, so `transmit` hands a whole stage to the port's burst in one copy.
    staged: Vec<Vec<F>>,
}

impl<P: Program, F: Frame> Switch<P, F> {
    /// A switch from a built program, its drop reasons and multicast groups, and a TM.
    pub fn new(
        program: P,
        drops: DropReasons,
        mcast: McastGroups,
        tm: TrafficManager<F>,
        mut opts: SwitchOptions,
    ) -> Self {
        let ports = tm.ports();
        opts.staged_max = opts.staged_max.min(STAGED_CAP);
        Self {
            program,
            counters: Counters {
                ports: vec![PortCounters::default(); ports],
                drops: vec![0; drops.names().len()],
                ..Counters::default()
            },
            drops,
            mcast,
            opts,
            recirc: Vec::with_capacity(64),
            cpu: Vec::with_capacity(opts.cpu_queue),
            emitted: Vec::with_capacity(64),
            spare: Vec::with_capacity(SPARE_BUFFERS),
            staged: (0..ports).map(|_| Vec::with_capacity(STAGED_CAP)).collect(),
            tm,
        }
    }

    /// Front-panel ports.
    pub fn ports(&self) -> usize {
        self.tm.ports()
    }

    /// The CPU port's number.
    pub fn cpu_port(&self) -> PortId {
        self.tm.ports() as PortId
    }

    /// Turn cut-through on or off. A runtime that polls each port only when its link is free
    /// (the lab's virtual-time fabric) turns it off, so every packet is queued, counted in the
    /// queue depths and stamped at its real dequeue time.
    pub fn set_cut_through(&mut self, on: bool) {
        self.opts.cut_through = on;
    }

    /// The program.
    pub fn program(&self) -> &P {
        &self.program
    }

    /// The program, writable (control plane and tests).
    pub fn program_mut(&mut self) -> &mut P {
        &mut self.program
    }

    /// The traffic manager (queue depths, pause state, counters).
    pub fn tm(&self) -> &TrafficManager<F> {
        &self.tm
    }

    /// Counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Drop reason names.
    pub fn drop_reasons(&self) -> &DropReasons {
        &self.drops
    }

    /// Multicast groups, writable.
    pub fn mcast_mut(&mut self) -> &mut McastGroups {
        &mut self.mcast
    }

    /// Apply a control-plane message to the program.
    pub fn control(&mut self, cmd: P::Command, now: u64) -> Result<String, String> {
        self.program.control(cmd, now)
    }

    /// Count a drop and give the buffer back.
    pub fn drop_packet(&mut self, pkt: F, reason: DropReason, pool: &mut dyn Pool<F>) {
        self.count_drop(reason, 1);
        pool.free(pkt);
    }

    /// Count `n` drops under `reason` (for drops the runtime sees, such as a full tx ring).
    pub fn count_drop(&mut self, reason: DropReason, n: u64) {
        if let Some(c) = self.counters.drops.get_mut(usize::from(reason.0)) {
            *c += n;
        }
    }

    /// A burst of frames received on `port` at `now`, in order; `pkts` is left empty. What a
    /// poll loop calls.
    ///
    /// The burst is handled as a vector where that changes nothing a packet sees: the port's
    /// receive counters once per burst, and consecutive packets that ingress sends to one port
    /// and queue, with nothing else to do (no mirror, nothing emitted), cut through the TM as a
    /// run ([`TrafficManager::cut_run_open`]) — one check of the port for the run, one update of
    /// its counters when the run ends. Any other packet ends the run first, so the order of
    /// everything through the TM is the order of the burst. The result is the same as
    /// [`receive`](Self::receive) on each frame in turn (a property test checks it).
    #[inline]
    pub fn receive_burst(&mut self, now: u64, port: PortId, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>) {
        if usize::from(port) >= self.counters.ports.len() {
            for pkt in pkts.drain(..) {
                self.drop_packet(pkt, builtin::BAD_DESTINATION, pool);
            }
            return;
        }
        let pc = &mut self.counters.ports[usize::from(port)];
        pc.rx_packets += pkts.len() as u64;
        pc.rx_bytes += pkts.iter().map(|p| p.len() as u64).sum::<u64>();
        let mut run: Option<CutRun> = None;
        for mut pkt in pkts.drain(..) {
            if is_mac_control(&pkt) {
                self.close_run(&mut run);
                let Some(p) = self.mac_control(now, port, pkt, pool) else { continue };
                pkt = p;
            }
            let mut md = IngressMd::arriving(port, now, 0, false);
            let mut emitter =
                Emitter::new(pool, &mut self.spare, &mut self.emitted, &mut self.counters.drops);
            self.program.ingress(&mut pkt, &mut md, &mut emitter);
            let failed = emitter.failed;
            let simple = failed == 0 && md.mirror.is_none() && self.emitted.is_empty();
            match md.dest {
                Dest::Port(p) if simple => self.enqueue_in_run(now, &mut run, pkt, &md, p, 0, pool),
                // A group with one eligible member (a flood between two ports) is one copy.
                Dest::Multicast(g) if simple && let Some((p, rid)) = self.only_member(g, &md) => {
                    self.enqueue_in_run(now, &mut run, pkt, &md, p, rid, pool);
                }
                // Neither reaches the TM: the run goes on.
                Dest::Consume if simple => self.consume(pkt, pool),
                Dest::Drop(r) if simple => self.drop_packet(pkt, r, pool),
                _ => {
                    self.close_run(&mut run);
                    self.after_ingress_outlined(now, pkt, md, failed, pool);
                }
            }
        }
        self.close_run(&mut run);
    }

    /// A frame received on `port` at `now`.
    #[inline]
    pub fn receive(&mut self, now: u64, port: PortId, pkt: F, pool: &mut dyn Pool<F>) {
        let Some(pc) = self.counters.ports.get_mut(usize::from(port)) else {
            return self.drop_packet(pkt, builtin::BAD_DESTINATION, pool);
        };
        pc.rx_packets += 1;
        pc.rx_bytes += pkt.len() as u64;
        let pkt = if is_mac_control(&pkt) {
            match self.mac_control(now, port, pkt, pool) {
                Some(p) => p,
                None => return,
            }
        } else {
            pkt
        };
        self.run_ingress(now, pkt, IngressMd::arriving(port, now, 0, false), pool);
    }

    /// A MAC Control frame received on `port`: the TM acts on it; it goes on to ingress only if
    /// the program watches them ([`SwitchOptions::pfc_to_program`]).
    #[cold]
    fn mac_control(&mut self, now: u64, port: PortId, pkt: F, pool: &mut dyn Pool<F>) -> Option<F> {
        match MacControlRepr::parse(&pkt.data()[wire::ethernet::HEADER_LEN..]) {
            Ok(repr) => {
                if let Some(pc) = self.counters.ports.get_mut(usize::from(port)) {
                    pc.pfc_rx += 1;
                }
                self.tm.receive_mac_control(port, now, &repr);
            }
            Err(_) => {
                self.drop_packet(pkt, builtin::MAC_CONTROL, pool);
                return None;
            }
        }
        if !self.opts.pfc_to_program {
            self.drop_packet(pkt, builtin::MAC_CONTROL, pool);
            return None;
        }
        Some(pkt)
    }

    /// A packet of a run (see [`receive_burst`](Self::receive_burst)), sent by ingress (`md`)
    /// to `port` as copy `rid`: into `run` if it continues it, or into a new run for its port
    /// and queue if the TM opens one and the stage has room; otherwise the run ends and the
    /// packet takes [`enqueue`](Self::enqueue).
    ///
    /// The TM's metadata is built in each branch from `md`, not once before them: built once,
    /// it sat in memory for the out-of-line call, written a field at a time and read back a
    /// word at a time for egress's copy, and every such load stalled on store forwarding
    /// (15 % of `hawkeye`'s burst loop in `perf`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn enqueue_in_run(
        &mut self,
        now: u64,
        run: &mut Option<CutRun>,
        pkt: F,
        md: &IngressMd,
        port: PortId,
        rid: u16,
        pool: &mut dyn Pool<F>,
    ) {
        if !run.is_some_and(|r| r.port == port && r.qid == md.qid) {
            self.close_run(run);
            if self.opts.cut_through {
                *run = self.tm.cut_run_open(now, port, md.qid);
            }
        }
        let pi = usize::from(port);
        if let Some(r) = run.as_mut()
            && self.staged.get(pi).is_some_and(|s| s.len() < self.opts.staged_max)
        {
            let tx_bytes = r.push(pkt.len() as u64);
            if !self.program.has_egress() || md.bypass_egress {
                self.staged[pi].push(pkt);
                return;
            }
            // What `cut_through_port` would have written for this packet (a run has no RED).
            let meta = EnqMeta { rid, ..EnqMeta::from_ingress(md, port) };
            let deq = DeqMeta::cut_through(meta, now, r.paused_mask, false);
            let mut emd = EgressMd::cut_through(deq, now, tx_bytes, r.speed_bps);
            // Egress may drop, mirror or recirculate: none of it touches the TM.
            if let Some(pkt) = self.run_egress(now, pkt, &mut emd, pool) {
                self.staged[pi].push(pkt);
            }
            return;
        }
        self.close_run(run);
        self.enqueue_outlined(now, pkt, EnqMeta { rid, ..EnqMeta::from_ingress(md, port) }, pool);
    }

    /// [`after_ingress`](Self::after_ingress) out of line: a burst's packets that leave the
    /// run path, kept out of its loop.
    #[inline(never)]
    fn after_ingress_outlined(
        &mut self,
        now: u64,
        pkt: F,
        md: IngressMd,
        failed: u64,
        pool: &mut dyn Pool<F>,
    ) {
        self.after_ingress(now, pkt, md, failed, pool);
    }

    /// [`enqueue`](Self::enqueue) out of line, for the same reason.
    #[inline(never)]
    fn enqueue_outlined(&mut self, now: u64, pkt: F, meta: EnqMeta, pool: &mut dyn Pool<F>) {
        self.enqueue(now, pkt, meta, pool);
    }

    /// End a run: the TM accounts for its packets.
    #[inline(always)]
    fn close_run(&mut self, run: &mut Option<CutRun>) {
        if let Some(r) = run.take() {
            self.tm.cut_run_close(&r);
        }
    }

    /// A packet the CPU sends into the pipeline (it enters ingress on the CPU port).
    pub fn inject(&mut self, now: u64, pkt: F, pool: &mut dyn Pool<F>) {
        self.counters.from_cpu += 1;
        let md = IngressMd::arriving(self.cpu_port(), now, 0, true);
        self.run_ingress(now, pkt, md, pool);
    }

    /// Tests: the program's ingress alone on `pkt` from `port`, as [`Self::receive`] runs it,
    /// returning the metadata it set (the packets it emitted stay queued).
    #[cfg(test)]
    pub(crate) fn ingress_only(
        &mut self,
        now: u64,
        port: PortId,
        pkt: &mut F,
        pool: &mut dyn Pool<F>,
    ) -> IngressMd {
        let mut md = IngressMd::arriving(port, now, 0, false);
        let mut emitter = Emitter::new(pool, &mut self.spare, &mut self.emitted, &mut self.counters.drops);
        self.program.ingress(pkt, &mut md, &mut emitter);
        md
    }

    #[inline(always)]
    fn run_ingress(&mut self, now: u64, mut pkt: F, mut md: IngressMd, pool: &mut dyn Pool<F>) {
        let mut emitter = Emitter::new(pool, &mut self.spare, &mut self.emitted, &mut self.counters.drops);
        self.program.ingress(&mut pkt, &mut md, &mut emitter);
        let failed = emitter.failed;
        self.after_ingress(now, pkt, md, failed, pool);
    }

    /// What follows the ingress control: its failed emits counted, the mirror, the packet to
    /// its destination, then what it emitted.
    #[inline(always)]
    fn after_ingress(&mut self, now: u64, pkt: F, md: IngressMd, failed: u64, pool: &mut dyn Pool<F>) {
        if failed != 0 {
            self.count_drop(builtin::NO_BUFFER, failed);
        }
        if let Some(code) = md.mirror {
            self.mirror(&pkt, md.ingress_port, code, pool);
        }
        // Unicast is the hot path: keep it apart from multicast replication.
        if let Dest::Port(p) = md.dest {
            self.enqueue(now, pkt, EnqMeta::from_ingress(&md, p), pool);
        } else {
            self.dispatch(now, pkt, md, pool);
        }
        // What the program emitted follows the packet itself, in the order it was emitted (a
        // translator's packets carry consecutive PSNs).
        if !self.emitted.is_empty() {
            self.flush_emitted(now, pool);
        }
    }

    /// Send what the program emitted: it enters the TM as if from the CPU port.
    fn flush_emitted(&mut self, now: u64, pool: &mut dyn Pool<F>) {
        let mut emitted = std::mem::take(&mut self.emitted);
        let cpu_port = self.cpu_port();
        for (pkt, dest, qid) in emitted.drain(..) {
            // Unicast, the common case (a translator's RDMA packets), straight to the TM.
            if let Dest::Port(p) = dest {
                let meta = EnqMeta {
                    ingress_port: cpu_port,
                    egress_port: p,
                    qid,
                    rid: 0,
                    ingress_ts: now,
                    recirc_pass: 0,
                    bypass_egress: false,
                };
                self.enqueue(now, pkt, meta, pool);
                continue;
            }
            let md = IngressMd { dest, qid, ..IngressMd::arriving(cpu_port, now, 0, true) };
            self.dispatch(now, pkt, md, pool);
        }
        // Keep the allocation (nothing dispatched emits).
        self.emitted = emitted;
    }

    fn mirror(&mut self, pkt: &F, ingress_port: PortId, code: u16, pool: &mut dyn Pool<F>) {
        if self.cpu.len() >= self.opts.cpu_queue {
            return self.count_drop(builtin::CPU_QUEUE_FULL, 1);
        }
        if let Some(copy) = self.copy_of(pkt, pool) {
            self.counters.to_cpu += 1;
            self.cpu.push(CpuPacket { pkt: copy, ingress_port, code: Some(code) });
        }
    }

    /// A copy of `pkt` in a new buffer; no buffer free (or too small) counts a drop.
    fn copy_of(&mut self, pkt: &F, pool: &mut dyn Pool<F>) -> Option<F> {
        let Some(mut copy) = pool.alloc() else {
            self.count_drop(builtin::NO_BUFFER, 1);
            return None;
        };
        if copy.set(pkt.data()) {
            Some(copy)
        } else {
            self.drop_packet(copy, builtin::NO_BUFFER, pool);
            None
        }
    }

    /// Of group `g`'s members a packet with `md` is copied to (all but the ingress port when it
    /// is excluded): the first, and whether there are more.
    #[inline(always)]
    fn first_member(&self, g: u16, md: &IngressMd) -> (Option<(PortId, u16)>, bool) {
        let skip = md.exclude_ingress.then_some(md.ingress_port);
        let mut eligible = self.mcast.get(g).iter().filter(|m| Some(m.0) != skip);
        (eligible.next().copied(), eligible.next().is_some())
    }

    /// The one member of group `g` a packet with `md` is copied to, if it is one — read from a
    /// group of one or two members (a flood between two ports), without iterating. A larger
    /// group gives `None` even if only one member is eligible; the caller's general path
    /// ([`first_member`](Self::first_member)) then sends the one copy the same way.
    #[inline(always)]
    fn only_member(&self, g: u16, md: &IngressMd) -> Option<(PortId, u16)> {
        let skip = md.exclude_ingress.then_some(md.ingress_port);
        match self.mcast.get(g) {
            [m] => (Some(m.0) != skip).then_some(*m),
            [a, b] => match (Some(a.0) != skip, Some(b.0) != skip) {
                (true, false) => Some(*a),
                (false, true) => Some(*b),
                _ => None,
            },
            _ => None,
        }
    }

    /// A packet the program consumed: counted, its buffer released.
    #[inline(always)]
    fn consume(&mut self, pkt: F, pool: &mut dyn Pool<F>) {
        self.counters.consumed += 1;
        pool.free(pkt);
    }

    #[inline(always)]
    fn dispatch(&mut self, now: u64, pkt: F, md: IngressMd, pool: &mut dyn Pool<F>) {
        let enq = |egress_port, rid| EnqMeta { rid, ..EnqMeta::from_ingress(&md, egress_port) };
        match md.dest {
            Dest::Drop(r) => self.drop_packet(pkt, r, pool),
            Dest::Consume => self.consume(pkt, pool),
            Dest::Port(p) => self.enqueue(now, pkt, enq(p, 0), pool),
            Dest::Cpu => self.punt(pkt, md.ingress_port, pool),
            Dest::Multicast(g) => {
                let skip = md.exclude_ingress.then_some(md.ingress_port);
                match self.first_member(g, &md) {
                    (None, _) => self.drop_packet(pkt, builtin::BAD_DESTINATION, pool),
                    // One copy (a group of one, a flood between two ports): no replication.
                    (Some((port, rid)), false) => self.enqueue(now, pkt, enq(port, rid), pool),
                    (Some(_), true) => self.replicate(now, pkt, g, skip, enq(0, 0), pool),
                }
            }
        }
    }

    fn punt(&mut self, pkt: F, ingress_port: PortId, pool: &mut dyn Pool<F>) {
        if self.cpu.len() >= self.opts.cpu_queue {
            return self.drop_packet(pkt, builtin::CPU_QUEUE_FULL, pool);
        }
        self.counters.to_cpu += 1;
        self.cpu.push(CpuPacket { pkt, ingress_port, code: None });
    }

    /// A copy of `pkt` for every member of group `g` but `skip`, each with its replication ID;
    /// the original goes to the last. `meta` carries what all copies share.
    fn replicate(
        &mut self,
        now: u64,
        pkt: F,
        g: u16,
        skip: Option<PortId>,
        meta: EnqMeta,
        pool: &mut dyn Pool<F>,
    ) {
        // The group is taken out while its copies are enqueued (enqueue needs the whole switch)
        // and put back after: a move, not an allocation.
        let Some(slot) = self.mcast.groups.get_mut(usize::from(g)) else {
            return self.drop_packet(pkt, builtin::BAD_DESTINATION, pool);
        };
        let members = std::mem::take(slot);
        let at = |(egress_port, rid): (PortId, u16)| EnqMeta { egress_port, rid, ..meta };
        match members.iter().rposition(|m| Some(m.0) != skip) {
            None => self.drop_packet(pkt, builtin::BAD_DESTINATION, pool),
            Some(last) => {
                for &m in &members[..last] {
                    if Some(m.0) != skip
                        && let Some(c) = self.copy_of(&pkt, pool)
                    {
                        self.enqueue(now, c, at(m), pool);
                    }
                }
                self.enqueue(now, pkt, at(members[last]), pool);
            }
        }
        self.mcast.groups[usize::from(g)] = members;
    }

    #[inline(always)]
    fn enqueue(&mut self, now: u64, mut pkt: F, meta: EnqMeta, pool: &mut dyn Pool<F>) {
        let port = usize::from(meta.egress_port);
        if self.opts.cut_through && self.staged.get(port).is_some_and(|s| s.len() < self.opts.staged_max) {
            if !self.program.has_egress() || meta.bypass_egress {
                // Nothing reads the dequeue metadata: the TM's accounting is all there is.
                let mut deq = DeqMeta::default();
                if self.tm.cut_through(now, &mut pkt, meta, &mut deq) {
                    self.staged[port].push(pkt);
                    return;
                }
            } else {
                let mut deq = DeqMeta::default();
                if let Some(at) = self.tm.cut_through_port(now, &mut pkt, meta, &mut deq) {
                    // Built once, whole, after the TM let it through (its queue is empty).
                    let mut md = EgressMd::cut_through(deq, now, at.tx_bytes, at.speed_bps);
                    if let Some(pkt) = self.run_egress(now, pkt, &mut md, pool) {
                        self.staged[port].push(pkt);
                    }
                    return;
                }
            }
        }
        if let Err((pkt, why)) = self.tm.enqueue(now, pkt, meta) {
            let reason = match why {
                TmDrop::BadPort => builtin::BAD_DESTINATION,
                TmDrop::BufferFull => builtin::BUFFER_FULL,
                TmDrop::QueueFull => builtin::QUEUE_FULL,
            };
            self.drop_packet(pkt, reason, pool);
        }
    }

    /// Egress metadata for `port` at `now`, before the TM's dequeue metadata is filled in.
    #[inline(always)]
    fn egress_md(&self, port: PortId, now: u64) -> EgressMd {
        EgressMd {
            egress_port: port,
            deq: DeqMeta::default(),
            deq_ts: now,
            port_qdepth: 0,
            tx_bytes: 0,
            speed_bps: self.tm.port_config(port).map_or(0, |c| c.speed_bps),
            drop: None,
            mirror: None,
            recirculate: false,
        }
    }

    /// The egress control on one packet and what it decided: the packet to send, or `None`
    /// if it was dropped or recirculated.
    #[inline(always)]
    fn run_egress(&mut self, now: u64, mut pkt: F, md: &mut EgressMd, pool: &mut dyn Pool<F>) -> Option<F> {
        md.drop = None;
        md.mirror = None;
        md.recirculate = false;
        self.program.egress(&mut pkt, md);
        let enq = md.deq.enq;
        if let Some(code) = md.mirror {
            self.mirror(&pkt, enq.ingress_port, code, pool);
        }
        if let Some(r) = md.drop {
            self.drop_packet(pkt, r, pool);
            return None;
        }
        if md.recirculate {
            if enq.recirc_pass >= self.opts.max_recirc {
                self.drop_packet(pkt, builtin::RECIRC_LIMIT, pool);
            } else {
                self.counters.recirculated += 1;
                let imd = IngressMd::arriving(enq.ingress_port, now, enq.recirc_pass + 1, false);
                self.recirc.push((pkt, imd));
            }
            return None;
        }
        Some(pkt)
    }

    /// Fill `out` (up to `max` frames in all) with what `port` sends at `now`: PAUSE/RESUME
    /// frames first, then packets that cut through the TM, then packets the TM releases, after
    /// egress. Returns how many were added.
    #[inline]
    pub fn transmit(
        &mut self,
        now: u64,
        port: PortId,
        out: &mut Vec<F>,
        max: usize,
        pool: &mut dyn Pool<F>,
    ) -> usize {
        let start = out.len();
        let pi = usize::from(port);
        if pi >= self.tm.ports() {
            return 0;
        }
        if out.len() < max
            && let Some(repr) = self.tm.pfc_frame(port, now)
        {
            match pool.alloc() {
                Some(mut f) => {
                    let mac = self.tm.port_mac(port).unwrap_or_default();
                    let ok = f
                        .append(wire::ethernet::MIN_FRAME_LEN)
                        .is_some_and(|b| pfc::emit_frame(mac, &repr, b).is_ok());
                    if ok {
                        self.counters.ports[pi].pfc_tx += 1;
                        out.push(f);
                    } else {
                        pool.free(f);
                    }
                }
                None => self.count_drop(builtin::NO_BUFFER, 1),
            }
        }
        let staged = &mut self.staged[pi];
        if !staged.is_empty() {
            let room = max.saturating_sub(out.len());
            if staged.len() <= room {
                // The whole stage in one copy of the handles, not a move per frame.
                out.append(staged);
            } else {
                out.extend(staged.drain(..room));
            }
        }
        if out.len() < max && self.tm.port_has_packets(port) {
            let mut md = self.egress_md(port, now);
            while out.len() < max {
                let Some(pkt) = self.tm.dequeue(port, now, &mut md.deq) else { break };
                if !self.program.has_egress() || md.deq.enq.bypass_egress {
                    out.push(pkt);
                    continue;
                }
                md.egress_port = port;
                md.deq_ts = now;
                md.port_qdepth = self.tm.port_bytes(port);
                md.tx_bytes = self.tm.tx_counters(port).0;
                if let Some(pkt) = self.run_egress(now, pkt, &mut md, pool) {
                    out.push(pkt);
                }
            }
        }
        let pc = &mut self.counters.ports[pi];
        for f in &mut out[start..] {
            self.program.deparse(f, port);
            pc.tx_packets += 1;
            pc.tx_bytes += f.len() as u64;
        }
        out.len() - start
    }

    /// Run recirculated packets through ingress again.
    pub fn process_recirculated(&mut self, now: u64, pool: &mut dyn Pool<F>) {
        let mut batch = std::mem::take(&mut self.recirc);
        for (pkt, md) in batch.drain(..) {
            self.run_ingress(now, pkt, md, pool);
        }
        // Keep the allocation.
        batch.append(&mut self.recirc);
        self.recirc = batch;
    }

    /// Run the program's timers.
    pub fn tick(&mut self, now: u64, pool: &mut dyn Pool<F>) {
        let mut emitter = Emitter::new(pool, &mut self.spare, &mut self.emitted, &mut self.counters.drops);
        self.program.tick(now, &mut emitter);
        let failed = emitter.failed;
        self.count_drop(builtin::NO_BUFFER, failed);
        self.flush_emitted(now, pool);
    }

    /// Ask the program to stop ([`Program::stop`]); whether it is done.
    pub fn stop(&mut self, now: u64, force: bool, pool: &mut dyn Pool<F>) -> bool {
        let mut emitter = Emitter::new(pool, &mut self.spare, &mut self.emitted, &mut self.counters.drops);
        let done = self.program.stop(now, force, &mut emitter);
        let failed = emitter.failed;
        self.count_drop(builtin::NO_BUFFER, failed);
        self.flush_emitted(now, pool);
        done
    }

    /// Take the packets waiting for the CPU.
    pub fn drain_cpu(&mut self) -> std::vec::Drain<'_, CpuPacket<F>> {
        self.cpu.drain(..)
    }

    /// Call `f` with every port whose [`Self::next_ready`] may have moved earlier since the
    /// last call (see [`TrafficManager::take_touched`]): a virtual-time driver re-reads those
    /// only.
    pub fn take_touched(&mut self, f: impl FnMut(PortId)) {
        self.tm.take_touched(f)
    }

    /// The earliest time `port` has something to send (see [`TrafficManager::next_ready`]).
    pub fn next_ready(&self, port: PortId, now: u64) -> Option<u64> {
        if self.staged.get(usize::from(port)).is_some_and(|s| !s.is_empty()) {
            return Some(now);
        }
        self.tm.next_ready(port, now)
    }

    /// Give every buffered packet back to the pool (shutdown).
    pub fn drain_all(&mut self, pool: &mut dyn Pool<F>) {
        self.tm.drain(|p| pool.free(p));
        for p in self.staged.iter_mut().flat_map(|s| s.drain(..)) {
            pool.free(p);
        }
        for (p, _) in self.recirc.drain(..) {
            pool.free(p);
        }
        for c in self.cpu.drain(..) {
            pool.free(c.pkt);
        }
        for p in self.spare.drain(..) {
            pool.free(p);
        }
    }
}
