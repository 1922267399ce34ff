//! The traffic manager: what sits between ingress and egress on a real switch.
//!
//! Per egress port, eight queues in one shared buffer with byte-accurate accounting: every byte
//! of a queued packet is charged, at ingress, to its (ingress port, priority) — first to that
//! priority group's reserve, then to the shared pool, and, for lossless priorities after
//! PFC has been asserted, to its headroom. Lossy queues are also bounded at egress by a dynamic
//! threshold (α × free shared buffer). A strict-priority + DWRR scheduler picks the next packet,
//! a shaper releases packets at the port's configured rate, so queues build as on a real switch
//! even when the NIC underneath is faster, and RED-style ECN marking applies at dequeue.
//!
//! PFC (IEEE 802.1Qbb): when a lossless priority group crosses its XOFF threshold (static, or
//! dynamic: α × free shared buffer, as in the HPCC/Hawkeye simulator's MMU) the TM asks for a
//! PAUSE frame on that ingress port and refreshes it while congested; when it drains below XON it
//! asks for a RESUME (quanta 0). A PAUSE received on a port stops the egress queue of each
//! enabled priority for quanta × 512 bit times at the port's speed; quanta 0 resumes it. Egress
//! programs see which priorities of their port are paused and whether a packet waited on PFC.
//!
//! Nothing here reads a clock: every call takes `now` in nanoseconds, so the same TM runs under
//! the poll-mode runtime's clock and the lab's virtual one.

use std::fmt;

use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::ipv4::{Ipv4Packet, ecn};
use wire::pfc::{MacControlRepr, PfcRepr, pause_duration_ns};

use crate::buf::Frame;

mod config;

pub use config::*;

/// The end of a queue's linked list of entries.
const NIL: u32 = u32::MAX;

/// Why the TM refused a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TmDrop {
    /// No egress port of that number.
    BadPort,
    /// Shared buffer, headroom, or the queue-entry table exhausted.
    BufferFull,
    /// A lossy queue over its dynamic threshold.
    QueueFull,
}

/// What travels with a packet through the TM, set at enqueue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnqMeta {
    /// Port it came in on (ports past the last are the CPU and recirculation).
    pub ingress_port: u16,
    /// Port it goes out of.
    pub egress_port: u16,
    /// Queue, which is also its priority.
    pub qid: u8,
    /// Replication ID (multicast copy).
    pub rid: u16,
    /// When it arrived at ingress, ns.
    pub ingress_ts: u64,
    /// Recirculation pass.
    pub recirc_pass: u8,
    /// Skip the egress program for this packet (Tofino's `bypass_egress`): the ingress
    /// program knows egress has nothing to do with it.
    pub bypass_egress: bool,
}

/// What [`TrafficManager::cut_through_port`] reads of the egress port as a packet cuts through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortAtCut {
    /// Bytes the port has transmitted, this packet's included.
    pub tx_bytes: u64,
    /// The port's speed, bits per second.
    pub speed_bps: u64,
}

impl DeqMeta {
    /// The metadata of a packet that cut through at `now`: enqueued and dequeued at once, from
    /// and leaving an empty queue, never paused while it waited.
    #[inline(always)]
    pub const fn cut_through(enq: EnqMeta, now: u64, paused_mask: u8, ecn_marked: bool) -> Self {
        DeqMeta {
            enq,
            enq_ts: now,
            enq_qdepth: 0,
            deq_qdepth: 0,
            waited_on_pfc: false,
            paused_mask,
            ecn_marked,
        }
    }
}

/// A run of packets of one queue that cut through one port with nothing decided per packet,
/// opened by [`TrafficManager::cut_run_open`] and accounted by [`TrafficManager::cut_run_close`]:
/// what a burst of a few flows to an idle port is, VPP-style, one check for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutRun {
    /// The egress port.
    pub port: u16,
    /// The queue (priority).
    pub qid: u8,
    /// Packets in the run so far.
    pub pkts: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes the port had transmitted when the run opened.
    pub tx_base: u64,
    /// The port's speed, bits per second.
    pub speed_bps: u64,
    /// Priorities of the port paused when the run opened (never `qid`'s).
    pub paused_mask: u8,
}

impl CutRun {
    /// Add a packet of `len` bytes; what [`PortAtCut::tx_bytes`] would say for it.
    #[inline(always)]
    pub fn push(&mut self, len: u64) -> u64 {
        self.pkts += 1;
        self.bytes += len;
        self.tx_base + self.bytes
    }
}

/// What the TM adds at dequeue, for the egress program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeqMeta {
    /// The enqueue metadata.
    pub enq: EnqMeta,
    /// When it was enqueued, ns.
    pub enq_ts: u64,
    /// Bytes in its queue when it arrived (before it).
    pub enq_qdepth: u64,
    /// Bytes left in its queue after it.
    pub deq_qdepth: u64,
    /// Whether its queue was paused by PFC at any time while it waited.
    pub waited_on_pfc: bool,
    /// Priorities of this port paused now (bit i = priority i).
    pub paused_mask: u8,
    /// Whether the TM marked it CE.
    pub ecn_marked: bool,
}

#[derive(Debug)]
struct Entry<F> {
    pkt: Option<F>,
    next: u32,
    len: u32,
    meta: EnqMeta,
    enq_ts: u64,
    enq_qdepth: u64,
    pause_gen: u32,
    paused_at_enq: bool,
}

impl<F> Entry<F> {
    /// An empty entry on the free list, before `next`.
    fn free(next: u32) -> Self {
        Self {
            pkt: None,
            next,
            len: 0,
            meta: EnqMeta::default(),
            enq_ts: 0,
            enq_qdepth: 0,
            pause_gen: 0,
            paused_at_enq: false,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Queue {
    head: u32,
    tail: u32,
    pkts: u32,
    bytes: u64,
    paused_until: u64,
    pause_gen: u32,
}

impl Default for Queue {
    fn default() -> Self {
        Self { head: NIL, tail: NIL, pkts: 0, bytes: 0, paused_until: 0, pause_gen: 0 }
    }
}

/// Up to [`QUEUES`] queue numbers, in order, inline.
#[derive(Debug, Clone, Copy, Default)]
struct QueueList {
    q: [u8; QUEUES],
    n: u8,
}

impl QueueList {
    fn of(qs: &[u8]) -> Self {
        let mut l = Self::default();
        for (d, &q) in l.q.iter_mut().zip(qs) {
            *d = q;
            l.n += 1;
        }
        l
    }

    #[inline(always)]
    fn as_slice(&self) -> &[u8] {
        &self.q[..usize::from(self.n)]
    }

    #[inline(always)]
    fn len(&self) -> usize {
        usize::from(self.n)
    }
}

#[derive(Debug)]
struct Port {
    cfg: PortTmConfig,
    /// RED/ECN per queue: the port's own, else the TM's.
    ecn: [Option<Red>; QUEUES],
    /// Each queue's pmax as a 32-bit fraction.
    red_pmax_q32: [u64; QUEUES],
    queues: [Queue; QUEUES],
    /// Bytes queued, all queues.
    bytes: u64,
    /// The latest end of any queue's pause: before it, some queue may be paused.
    paused_until: u64,
    /// Shaper: earliest time, ps, the next packet may start.
    next_tx_ps: u64,
    /// Shaper: ps per byte, × 2^16.
    ps_per_byte_q16: u64,
    burst_ps: u64,
    /// Strict queues, highest level first, and DWRR queues: inline, not on the heap (each
    /// was a cache miss of its own on every dequeue in a lab of many switches).
    strict: QueueList,
    dwrr: QueueList,
    /// Bit q set: queue q is DWRR-scheduled.
    dwrr_mask: u8,
    /// Bit q set: queue q holds a packet.
    nonempty: u8,
    quantum: [u32; QUEUES],
    deficit: [u64; QUEUES],
    dwrr_cur: usize,
    dwrr_fresh: bool,
    tx_bytes: u64,
    tx_packets: u64,
    /// PFC we send on this port (as an ingress port).
    pfc_xoff: u8,
    pfc_pending: u8,
    pfc_resume: u8,
    pfc_refresh_at: u64,
    pfc_refresh_ns: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct PriorityGroup {
    reserve: u64,
    shared: u64,
    headroom: u64,
    xoff: bool,
}

/// Counters of the TM's own events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TmStats {
    /// Packets enqueued.
    pub enqueued: u64,
    /// Packets dequeued.
    pub dequeued: u64,
    /// Packets marked CE.
    pub ecn_marked: u64,
    /// PAUSE frames (XOFF or refresh) requested.
    pub pfc_xoff_sent: u64,
    /// RESUME frames requested.
    pub pfc_xon_sent: u64,
    /// MAC Control frames received.
    pub pfc_received: u64,
}

/// The traffic manager for `F` buffers.
pub struct TrafficManager<F> {
    cfg: TmConfig,
    ports: Vec<Port>,
    pgs: Vec<PriorityGroup>,
    entries: Vec<Entry<F>>,
    free: u32,
    shared_size: u64,
    shared_used: u64,
    alpha_q16: u64,
    egress_alpha_q16: u64,
    rng: u64,
    stats: TmStats,
    /// Ports whose [`Self::next_ready`] may have moved earlier since [`Self::take_touched`],
    /// a bit each.
    touched: Vec<u64>,
}

impl<F> fmt::Debug for TrafficManager<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrafficManager")
            .field("ports", &self.ports.len())
            .field("stats", &self.stats)
            .finish()
    }
}

fn q16(x: f64) -> u64 {
    (x.max(0.0) * 65536.0).round() as u64
}

impl<F: Frame> TrafficManager<F> {
    /// A TM for these ports; fails if the buffer split cannot hold (see
    /// [`TmConfig::shared_bytes`]).
    pub fn new(cfg: TmConfig, ports: Vec<PortTmConfig>) -> Result<Self, String> {
        let shared_size = cfg.shared_bytes(ports.len())?;
        let ports = ports.into_iter().map(|c| Self::port(c, cfg.pause_quanta, cfg.ecn)).collect::<Vec<_>>();
        let ports_len = ports.len();
        let n = if cfg.preallocate { cfg.max_packets } else { 0 };
        let entries = (0..n).map(|i| Entry::free(if i + 1 < n { (i + 1) as u32 } else { NIL })).collect();
        let alpha = match cfg.pfc {
            PfcThreshold::Dynamic { alpha, .. } => alpha,
            PfcThreshold::Static { .. } => 0.0,
        };
        Ok(Self {
            pgs: vec![PriorityGroup::default(); ports.len() * QUEUES],
            ports,
            entries,
            free: if n > 0 { 0 } else { NIL },
            shared_size,
            shared_used: 0,
            alpha_q16: q16(alpha),
            egress_alpha_q16: q16(cfg.egress_alpha),
            rng: cfg.seed | 1,
            stats: TmStats::default(),
            touched: vec![0; ports_len.div_ceil(64)],
            cfg,
        })
    }

    fn port(cfg: PortTmConfig, quanta: u16, tm_ecn: [Option<Red>; QUEUES]) -> Port {
        let ecn = cfg.ecn.unwrap_or(tm_ecn);
        let red_pmax_q32 = ecn.map(|r| r.map_or(0, |r| (r.pmax.clamp(0.0, 1.0) * 4_294_967_296.0) as u64));
        let mut strict: Vec<u8> =
            (0..QUEUES as u8).filter(|&q| matches!(cfg.sched[q as usize], QueueSched::Strict(_))).collect();
        strict.sort_by_key(|&q| {
            std::cmp::Reverse(match cfg.sched[q as usize] {
                QueueSched::Strict(l) => (l, q),
                QueueSched::Dwrr(_) => (0, q),
            })
        });
        let dwrr: Vec<u8> =
            (0..QUEUES as u8).filter(|&q| matches!(cfg.sched[q as usize], QueueSched::Dwrr(_))).collect();
        let quantum = cfg.sched.map(|s| match s {
            QueueSched::Dwrr(w) => w.max(1).saturating_mul(DWRR_QUANTUM),
            QueueSched::Strict(_) => 0,
        });
        let ps_per_byte_q16 = if cfg.shape_bps == 0 {
            0
        } else {
            ((8u128 * 1_000_000_000_000 * 65536) / u128::from(cfg.shape_bps)) as u64
        };
        let burst_ps = ((u128::from(cfg.burst_bytes) * u128::from(ps_per_byte_q16)) >> 16) as u64;
        let pause_ns = pause_duration_ns(quanta, cfg.speed_bps.max(1));
        Port {
            ecn,
            red_pmax_q32,
            queues: [Queue::default(); QUEUES],
            bytes: 0,
            paused_until: 0,
            next_tx_ps: 0,
            ps_per_byte_q16,
            burst_ps,
            strict: QueueList::of(&strict),
            dwrr_mask: dwrr.iter().fold(0, |m, &q| m | 1 << q),
            dwrr: QueueList::of(&dwrr),
            nonempty: 0,
            quantum,
            deficit: [0; QUEUES],
            dwrr_cur: 0,
            dwrr_fresh: false,
            tx_bytes: 0,
            tx_packets: 0,
            pfc_xoff: 0,
            pfc_pending: 0,
            pfc_resume: 0,
            pfc_refresh_at: 0,
            pfc_refresh_ns: (pause_ns / 2).max(1),
            cfg,
        }
    }

    /// Number of ports.
    pub fn ports(&self) -> usize {
        self.ports.len()
    }

    /// The configuration.
    pub fn config(&self) -> &TmConfig {
        &self.cfg
    }

    /// A port's configuration.
    pub fn port_config(&self, port: u16) -> Option<&PortTmConfig> {
        self.ports.get(usize::from(port)).map(|p| &p.cfg)
    }

    /// Counters.
    pub fn stats(&self) -> TmStats {
        self.stats
    }

    /// Bytes queued in one queue.
    pub fn queue_bytes(&self, port: u16, q: usize) -> u64 {
        self.ports.get(usize::from(port)).map_or(0, |p| p.queues[q % QUEUES].bytes)
    }

    /// Packets queued in one queue.
    pub fn queue_packets(&self, port: u16, q: usize) -> u32 {
        self.ports.get(usize::from(port)).map_or(0, |p| p.queues[q % QUEUES].pkts)
    }

    /// Bytes queued on a port, all queues.
    #[inline]
    pub fn port_bytes(&self, port: u16) -> u64 {
        self.ports.get(usize::from(port)).map_or(0, |p| p.bytes)
    }

    /// Whether any queue of `port` holds a packet.
    #[inline]
    pub fn port_has_packets(&self, port: u16) -> bool {
        self.ports.get(usize::from(port)).is_some_and(|p| p.nonempty != 0)
    }

    /// Bytes and packets a port has sent.
    pub fn tx_counters(&self, port: u16) -> (u64, u64) {
        self.ports.get(usize::from(port)).map_or((0, 0), |p| (p.tx_bytes, p.tx_packets))
    }

    /// Shared-pool bytes in use.
    pub fn shared_used(&self) -> u64 {
        self.shared_used
    }

    /// Priorities of `port` paused now by PAUSE frames it received.
    pub fn paused_mask(&self, port: u16, now: u64) -> u8 {
        self.ports.get(usize::from(port)).map_or(0, |p| Self::paused_mask_of(p, now))
    }

    /// Priorities for which `port` (as an ingress port) is asserting PFC.
    pub fn xoff_mask(&self, port: u16) -> u8 {
        self.ports.get(usize::from(port)).map_or(0, |p| p.pfc_xoff)
    }

    #[inline]
    fn paused_mask_of(p: &Port, now: u64) -> u8 {
        if now >= p.paused_until {
            return 0;
        }
        let mut m = 0;
        for (i, q) in p.queues.iter().enumerate() {
            if now < q.paused_until {
                m |= 1 << i;
            }
        }
        m
    }

    /// The dynamic XOFF threshold now.
    fn xoff_threshold(&self) -> u64 {
        match self.cfg.pfc {
            PfcThreshold::Static { xoff, .. } => xoff,
            PfcThreshold::Dynamic { .. } => {
                (self.shared_size.saturating_sub(self.shared_used)).saturating_mul(self.alpha_q16) >> 16
            }
        }
    }

    fn xon_reached(&self, pg: &PriorityGroup) -> bool {
        if pg.headroom > 0 {
            return false;
        }
        match self.cfg.pfc {
            PfcThreshold::Static { xon, .. } => pg.shared <= xon,
            PfcThreshold::Dynamic { resume_offset, .. } => {
                pg.shared == 0 || pg.shared + resume_offset <= self.xoff_threshold()
            }
        }
    }

    /// Admit a packet into its egress queue, or give it back with the reason.
    #[inline]
    pub fn enqueue(&mut self, now: u64, pkt: F, meta: EnqMeta) -> Result<(), (F, TmDrop)> {
        let eport = usize::from(meta.egress_port);
        if eport >= self.ports.len() {
            return Err((pkt, TmDrop::BadPort));
        }
        let qid = usize::from(meta.qid) % QUEUES;
        let len = pkt.len() as u64;
        let lossless = self.cfg.lossless & (1 << qid) != 0;
        let pg_index = (usize::from(meta.ingress_port) < self.ports.len())
            .then(|| usize::from(meta.ingress_port) * QUEUES + qid);
        let pg = pg_index.map(|i| self.pgs[i]).unwrap_or_default();

        // Ingress charge: reserve, then shared, then (lossless, PFC asserted) headroom.
        let reserve =
            if pg_index.is_some() { len.min(self.cfg.reserve_bytes.saturating_sub(pg.reserve)) } else { 0 };
        let rest = len - reserve;
        let (mut shared, mut headroom) = (0, 0);
        if rest > 0 {
            let shared_fits = self.shared_used + rest <= self.shared_size;
            if lossless && pg_index.is_some() && (pg.xoff || !shared_fits) {
                if pg.headroom + rest > self.cfg.headroom_bytes {
                    return Err((pkt, TmDrop::BufferFull));
                }
                headroom = rest;
            } else if shared_fits {
                shared = rest;
            } else {
                return Err((pkt, TmDrop::BufferFull));
            }
        }
        // Egress: lossy queues stay under α × the free shared buffer.
        let queue_bytes = self.ports[eport].queues[qid].bytes;
        if !lossless {
            let limit = (self.shared_size.saturating_sub(self.shared_used))
                .saturating_mul(self.egress_alpha_q16)
                >> 16;
            if queue_bytes + len > limit.max(self.cfg.reserve_bytes) {
                return Err((pkt, TmDrop::QueueFull));
            }
        }
        let mut e = self.free;
        if e == NIL {
            // Not preallocated: one more entry, up to max_packets.
            if self.entries.len() >= self.cfg.max_packets {
                return Err((pkt, TmDrop::BufferFull));
            }
            e = self.entries.len() as u32;
            self.entries.push(Entry::free(NIL));
            self.free = e;
        }
        let ei = e as usize;
        self.free = self.entries[ei].next;

        let q = &mut self.ports[eport].queues[qid];
        let paused = now < q.paused_until;
        let entry = &mut self.entries[ei];
        entry.pkt = Some(pkt);
        entry.next = NIL;
        entry.len = len as u32;
        entry.meta = meta;
        entry.enq_ts = now;
        entry.enq_qdepth = q.bytes;
        entry.pause_gen = q.pause_gen;
        entry.paused_at_enq = paused;
        if q.tail == NIL {
            q.head = e;
        } else {
            self.entries[q.tail as usize].next = e;
        }
        q.tail = e;
        q.pkts += 1;
        q.bytes += len;
        self.ports[eport].bytes += len;
        self.ports[eport].nonempty |= 1 << qid;
        self.touch(meta.egress_port);
        self.shared_used += shared;
        self.stats.enqueued += 1;

        if let Some(i) = pg_index {
            let pg = &mut self.pgs[i];
            pg.reserve += reserve;
            pg.shared += shared;
            pg.headroom += headroom;
            if lossless && !pg.xoff {
                let (shared, headroom) = (pg.shared, pg.headroom);
                if headroom > 0 || (shared > 0 && shared >= self.xoff_threshold()) {
                    self.pgs[i].xoff = true;
                    let port = &mut self.ports[usize::from(meta.ingress_port)];
                    port.pfc_xoff |= 1 << qid;
                    port.pfc_pending |= 1 << qid;
                    port.pfc_resume &= !(1 << qid);
                    self.touch(meta.ingress_port);
                }
            }
        }
        Ok(())
    }

    /// Whether a packet of `len` bytes for `meta` can leave now without being queued: its egress
    /// port holds nothing, its queue is not paused and the shaper (if any) lets it go. If so, the
    /// TM accounts for it as for a packet enqueued and dequeued at `now` — tx counters, shaper,
    /// ECN on a queue holding only it — and writes the dequeue metadata to `meta_out`.
    ///
    /// This is what an idle port does on a real switch: the packet starts on the wire at once.
    /// A poll-mode switch that queued it anyway would hold it until the next transmit step and
    /// could let a later packet of a higher priority overtake it, which an idle port never does;
    /// it would also charge and release its buffer in between, which changes no threshold
    /// decision that an instant later could observe.
    #[inline(always)]
    pub fn cut_through(&mut self, now: u64, pkt: &mut F, meta: EnqMeta, meta_out: &mut DeqMeta) -> bool {
        self.cut_through_port(now, pkt, meta, meta_out).is_some()
    }

    /// [`cut_through`](Self::cut_through), returning what an egress stage reads of the port
    /// when the packet went through: its transmitted bytes (this packet's included) and its
    /// speed, from the one lookup of the port.
    #[inline(always)]
    pub fn cut_through_port(
        &mut self,
        now: u64,
        pkt: &mut F,
        meta: EnqMeta,
        meta_out: &mut DeqMeta,
    ) -> Option<PortAtCut> {
        let p = self.ports.get_mut(usize::from(meta.egress_port))?;
        if p.nonempty != 0 {
            return None;
        }
        let qid = usize::from(meta.qid) % QUEUES;
        let paused_mask = Self::paused_mask_of(p, now);
        if paused_mask & (1 << qid) != 0 {
            return None;
        }
        let len = pkt.len() as u64;
        if p.ps_per_byte_q16 != 0 {
            let now_ps = now.saturating_mul(1000);
            if p.next_tx_ps > now_ps {
                return None;
            }
            let t = ((u128::from(len + u64::from(p.cfg.overhead_bytes)) * u128::from(p.ps_per_byte_q16))
                >> 16) as u64;
            p.next_tx_ps = p.next_tx_ps.max(now_ps.saturating_sub(p.burst_ps)) + t;
        }
        p.tx_bytes += len;
        p.tx_packets += 1;
        let (red, pmax) = (p.ecn[qid], p.red_pmax_q32[qid]);
        let at = PortAtCut { tx_bytes: p.tx_bytes, speed_bps: p.cfg.speed_bps };
        let ecn_marked = red.is_some_and(|red| self.red_decides(red, pmax, len)) && mark_ce(pkt);
        self.touch(meta.egress_port);
        self.stats.enqueued += 1;
        self.stats.dequeued += 1;
        self.stats.ecn_marked += u64::from(ecn_marked);
        *meta_out = DeqMeta::cut_through(meta, now, paused_mask, ecn_marked);
        Some(at)
    }

    /// Open a run of packets of queue `qid` cutting through `port` at `now`, if
    /// [`cut_through`](Self::cut_through) would let every one of them through with nothing
    /// decided per packet: the port holds nothing, `qid` is not paused, the port has no shaper
    /// and `qid` no RED/ECN (each of those decides per packet, and declines the run).
    ///
    /// Until [`cut_run_close`](Self::cut_run_close), the caller makes no other call on the TM:
    /// nothing the decision read can then change, so each packet of the run gets what
    /// `cut_through` would have given it, and the counters the same totals.
    #[inline(always)]
    pub fn cut_run_open(&self, now: u64, port: u16, qid: u8) -> Option<CutRun> {
        let p = self.ports.get(usize::from(port))?;
        let q = usize::from(qid) % QUEUES;
        if p.nonempty != 0 || p.ps_per_byte_q16 != 0 || p.ecn[q].is_some() {
            return None;
        }
        let paused_mask = Self::paused_mask_of(p, now);
        if paused_mask & (1 << q) != 0 {
            return None;
        }
        Some(CutRun {
            port,
            qid,
            pkts: 0,
            bytes: 0,
            tx_base: p.tx_bytes,
            speed_bps: p.cfg.speed_bps,
            paused_mask,
        })
    }

    /// Account a run opened by [`cut_run_open`](Self::cut_run_open) as `cut_through` would have,
    /// packet by packet: transmitted packets and bytes, enqueued and dequeued, the port touched.
    #[inline]
    pub fn cut_run_close(&mut self, run: &CutRun) {
        if run.pkts == 0 {
            return;
        }
        if let Some(p) = self.ports.get_mut(usize::from(run.port)) {
            p.tx_bytes += run.bytes;
            p.tx_packets += run.pkts;
            self.touch(run.port);
            self.stats.enqueued += run.pkts;
            self.stats.dequeued += run.pkts;
        }
    }

    /// The next packet `port` may send at `now`: the shaper must allow it and the scheduler
    /// picks among queues that are not empty and not paused. Its metadata is written to `meta`
    /// (left as it was when there is no packet).
    #[inline]
    pub fn dequeue(&mut self, port: u16, now: u64, meta_out: &mut DeqMeta) -> Option<F> {
        let pi = usize::from(port);
        let p = self.ports.get_mut(pi)?;
        let now_ps = now.saturating_mul(1000);
        if p.ps_per_byte_q16 != 0 && p.next_tx_ps > now_ps {
            return None;
        }
        let paused_mask = Self::paused_mask_of(p, now);
        let qid = Self::select(p, p.nonempty & !paused_mask, &self.entries)?;
        let q = &mut p.queues[qid];
        let e = q.head as usize;
        let entry = &mut self.entries[e];
        q.head = entry.next;
        if q.head == NIL {
            q.tail = NIL;
            p.nonempty &= !(1 << qid);
        }
        q.pkts -= 1;
        let qdepth_before = q.bytes;
        q.bytes -= u64::from(entry.len);
        p.bytes -= u64::from(entry.len);
        let waited = entry.paused_at_enq || entry.pause_gen != q.pause_gen;
        let deq_qdepth = q.bytes;
        let mut pkt = entry.pkt.take()?;
        let (meta, enq_ts, enq_qdepth, len) = (entry.meta, entry.enq_ts, entry.enq_qdepth, entry.len);
        entry.next = self.free;
        self.free = e as u32;

        if p.ps_per_byte_q16 != 0 {
            let t = ((u128::from(len + p.cfg.overhead_bytes) * u128::from(p.ps_per_byte_q16)) >> 16) as u64;
            p.next_tx_ps = p.next_tx_ps.max(now_ps.saturating_sub(p.burst_ps)) + t;
        }
        p.tx_bytes += u64::from(len);
        p.tx_packets += 1;

        // Release the ingress charge — headroom first, then shared, then reserve, as the
        // simulator's MMU does — and maybe XON.
        let len = u64::from(len);
        if usize::from(meta.ingress_port) < self.ports.len() {
            let i = usize::from(meta.ingress_port) * QUEUES + usize::from(meta.qid) % QUEUES;
            let pg = &mut self.pgs[i];
            let from_headroom = pg.headroom.min(len);
            let from_shared = pg.shared.min(len - from_headroom);
            pg.headroom -= from_headroom;
            pg.shared -= from_shared;
            pg.reserve = pg.reserve.saturating_sub(len - from_headroom - from_shared);
            self.shared_used -= from_shared;
            let pg = *pg;
            if pg.xoff && self.xon_reached(&pg) {
                self.pgs[i].xoff = false;
                let bit = 1 << (usize::from(meta.qid) % QUEUES);
                let ip = &mut self.ports[usize::from(meta.ingress_port)];
                ip.pfc_xoff &= !bit;
                ip.pfc_pending &= !bit;
                ip.pfc_resume |= bit;
                self.touch(meta.ingress_port);
            }
        } else {
            self.shared_used -= len;
        }
        let (red, pmax) = (self.ports[pi].ecn[qid], self.ports[pi].red_pmax_q32[qid]);
        let ecn_marked =
            red.is_some_and(|red| self.red_decides(red, pmax, qdepth_before)) && mark_ce(&mut pkt);
        self.stats.dequeued += 1;
        self.stats.ecn_marked += u64::from(ecn_marked);
        *meta_out = DeqMeta {
            enq: meta,
            enq_ts,
            enq_qdepth,
            deq_qdepth,
            waited_on_pfc: waited,
            paused_mask,
            ecn_marked,
        };
        Some(pkt)
    }

    fn red_decides(&mut self, red: Red, pmax_q32: u64, qdepth: u64) -> bool {
        if qdepth <= red.kmin {
            return false;
        }
        if qdepth > red.kmax {
            return true;
        }
        // p = pmax × (q − kmin) / (kmax − kmin), drawn against a 32-bit uniform.
        let span = (red.kmax - red.kmin).max(1);
        let p_q32 = pmax_q32 * (qdepth - red.kmin) / span;
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng & 0xffff_ffff) < p_q32
    }

    /// Pick the next queue among `ready` (bit q: queue q is non-empty and not paused): strict
    /// queues by level, then DWRR.
    #[inline]
    fn select(p: &mut Port, ready: u8, entries: &[Entry<F>]) -> Option<usize> {
        if ready == 0 {
            return None;
        }
        for &q in p.strict.as_slice() {
            if ready & (1 << q) != 0 {
                return Some(usize::from(q));
            }
        }
        if ready & p.dwrr_mask == 0 {
            return None;
        }
        // Each visit to a ready queue adds its quantum, so a ready queue is served within
        // ceil(max frame / quantum) rounds.
        let n = p.dwrr.len();
        for _ in 0..n * 16 {
            let q = usize::from(p.dwrr.as_slice()[p.dwrr_cur]);
            if ready & (1 << q) != 0 {
                if !p.dwrr_fresh {
                    p.deficit[q] += u64::from(p.quantum[q]);
                    p.dwrr_fresh = true;
                }
                let head = u64::from(entries[p.queues[q].head as usize].len);
                if head <= p.deficit[q] {
                    p.deficit[q] -= head;
                    return Some(q);
                }
            } else if p.nonempty & (1 << q) == 0 {
                p.deficit[q] = 0;
            }
            p.dwrr_fresh = false;
            p.dwrr_cur += 1;
            if p.dwrr_cur == n {
                p.dwrr_cur = 0;
            }
        }
        None
    }

    /// Handle a MAC Control frame received on `port`: pause or resume its egress queues.
    pub fn receive_mac_control(&mut self, port: u16, now: u64, frame: &MacControlRepr) {
        let Some(p) = self.ports.get_mut(usize::from(port)) else { return };
        self.stats.pfc_received += 1;
        let (enable, quanta): (u8, [u16; 8]) = match *frame {
            MacControlRepr::Pause { quanta } => (0xff, [quanta; 8]),
            MacControlRepr::Pfc(PfcRepr { class_enable, quanta }) => (class_enable, quanta),
        };
        for (i, q) in p.queues.iter_mut().enumerate() {
            if enable & (1 << i) == 0 {
                continue;
            }
            if quanta[i] == 0 {
                q.paused_until = 0;
            } else {
                if now >= q.paused_until {
                    q.pause_gen = q.pause_gen.wrapping_add(1);
                }
                q.paused_until = now + pause_duration_ns(quanta[i], p.cfg.speed_bps.max(1));
                p.paused_until = p.paused_until.max(q.paused_until);
            }
        }
        self.touch(port);
    }

    /// Mark `port` touched: its [`Self::next_ready`] may have moved earlier.
    #[inline(always)]
    fn touch(&mut self, port: u16) {
        let i = usize::from(port);
        if let Some(w) = self.touched.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }

    /// Call `f` with every port touched since the last call, in port order, and forget them:
    /// a port a packet was queued or cut through to, one that must send a PAUSE or RESUME, one
    /// whose queues a MAC Control frame paused or resumed. A virtual-time driver re-reads
    /// [`Self::next_ready`] of these ports only, where others cannot have become ready sooner.
    pub fn take_touched(&mut self, mut f: impl FnMut(u16)) {
        for (wi, w) in self.touched.iter_mut().enumerate() {
            let mut bits = std::mem::take(w);
            while bits != 0 {
                f((wi * 64 + bits.trailing_zeros() as usize) as u16);
                bits &= bits - 1;
            }
        }
    }

    /// A PAUSE or RESUME frame `port` should send now, if any: resumes first, then new or
    /// refreshed pauses (every half pause time while congested).
    pub fn pfc_frame(&mut self, port: u16, now: u64) -> Option<MacControlRepr> {
        let p = self.ports.get_mut(usize::from(port))?;
        if p.pfc_resume != 0 {
            let m = std::mem::take(&mut p.pfc_resume);
            self.stats.pfc_xon_sent += 1;
            return Some(MacControlRepr::Pfc(PfcRepr::resume(m)));
        }
        if p.pfc_pending != 0 || (p.pfc_xoff != 0 && now >= p.pfc_refresh_at) {
            p.pfc_pending = 0;
            p.pfc_refresh_at = now + p.pfc_refresh_ns;
            self.stats.pfc_xoff_sent += 1;
            return Some(MacControlRepr::Pfc(PfcRepr::pause(p.pfc_xoff, self.cfg.pause_quanta)));
        }
        None
    }

    /// The source address of a port's PAUSE frames.
    pub fn port_mac(&self, port: u16) -> Option<EthernetAddress> {
        self.ports.get(usize::from(port)).map(|p| p.cfg.mac)
    }

    /// When `port` can next send something, for a virtual-time driver: `Some(now)` if now,
    /// `Some(t)` if the shaper or PFC holds it until `t`, `None` if it has nothing to send.
    pub fn next_ready(&self, port: u16, now: u64) -> Option<u64> {
        let p = self.ports.get(usize::from(port))?;
        if p.pfc_resume != 0 || p.pfc_pending != 0 {
            return Some(now);
        }
        let pfc = (p.pfc_xoff != 0).then_some(p.pfc_refresh_at.max(now));
        let mut bits = p.nonempty;
        let mut earliest = None::<u64>;
        while bits != 0 {
            let t = p.queues[bits.trailing_zeros() as usize].paused_until.max(now);
            earliest = Some(earliest.map_or(t, |e| e.min(t)));
            bits &= bits - 1;
        }
        let data =
            earliest.map(|t| if p.ps_per_byte_q16 != 0 { t.max(p.next_tx_ps.div_ceil(1000)) } else { t });
        match (pfc, data) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Drain every queued packet (shutdown), giving each to `f`.
    pub fn drain(&mut self, mut f: impl FnMut(F)) {
        for e in &mut self.entries {
            if let Some(p) = e.pkt.take() {
                f(p);
            }
        }
    }
}

/// Set CE on an ECN-capable IPv4 packet (Ethernet, optionally one 802.1Q tag), updating the
/// header checksum. Returns whether it marked.
pub fn mark_ce<F: Frame>(pkt: &mut F) -> bool {
    let data = pkt.data_mut();
    let Ok(eth) = EthernetFrame::new_checked(&*data) else { return false };
    if eth.ethertype() != EtherType::IPV4 {
        return false;
    }
    let l2 = eth.header_len();
    let Ok(mut ip) = Ipv4Packet::new_checked(&mut data[l2..]) else { return false };
    if ip.ecn() == ecn::NOT_ECT {
        return false;
    }
    if ip.ecn() != ecn::CE {
        ip.set_ecn_update_checksum(ecn::CE);
    }
    true
}

#[cfg(test)]
mod tests;
