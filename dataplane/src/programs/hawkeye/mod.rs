//! `hawkeye`: a switch that forwards like `l2l3` and collects Hawkeye's PFC-aware telemetry
//! (seed `001` §3–§4; facts about the public prototype in `../shared/reference/hawkeye_hpcc.md`
//! part A), so a softfabric switch traces PFC causality where a Tofino would.
//!
//! * **Epoch telemetry** ([`telemetry`]): per egress packet, at its enqueue time, a flow table,
//!   a port table and a port-pair byte meter in `epochs` banks of `epoch_ns`; a cell from an
//!   older lap is reset on first touch. "Paused" is the traffic manager's own 802.1Qbb state: the
//!   packet waited on PFC, or its port is paused on its priority now (not the prototype's fixed
//!   839 µs timer).
//! * **Polling packets** (EtherType 0x6888, [`wire::hawkeye`]) at ingress ([`rules::fanout`]): a
//!   flag 01 packet goes to the port the victim flow leaves by — `l2l3`'s LPM and ECMP hash of
//!   the victim 5-tuple, as that flow is forwarded — and 11 and 10 to every other port (11 with
//!   the victim port marked, 10 without); the packet records the port it came in on. Polling
//!   packets travel in `polling_queue`, a priority PFC never pauses.
//! * At egress ([`rules::survive`]): a copy survives on the victim port (as 11 if the victim
//!   flow is paused — its paused packets this epoch or the last, or the port paused now; the
//!   port's counts if the tables hold no entry of the flow — else 01), or on another port as 10
//!   only if the port is paused (paused packets this epoch or the last, or paused now) and its
//!   meter shows bytes from the polling packet's in-port in a kept epoch (a port paused since
//!   before the epoch began sends, so counts, nothing in it); other copies are dropped
//!   (`hawkeye_pruned`). A port passes each event of each victim flow once per `dedup_ns`
//!   (`hawkeye_duplicate`; default 0.5 ms, the reference simulator's), so a trace around a
//!   dependency cycle ends; an event is the event ID and the victim 5-tuple's hash (agents
//!   polling in the same millisecond share an event ID).
//! * **Control side** (the program's tick: the slow path, never per packet): each surviving copy
//!   queues a snapshot of every kept epoch for its port — the port's cell, the
//!   meter from every port to it, every flow that left by it, zero entries dropped — sent as
//!   telemetry reports ([`wire::hawkeye::report`], at most one MTU each) over UDP to `analyzer`,
//!   and/or as DTA Append reports (one word each, `wire::hawkeye::report::words`) to a DTA
//!   collector's list (`dta_collector`, `dta_list`) — Hawkeye telemetry landing in collector
//!   memory through the translator; without an analyzer, also kept for the runtime ([`Program::take_records`]: the lab writes them
//!   out), 65 536 at most between two takes (beyond, counted `reports_unsent`).
//!
//! Bad input: a polling packet too short for its header (`hawkeye_malformed`), with flag 00
//! (`hawkeye_no_trace`), or for a victim flow the switch has no route or neighbour for
//! (`hawkeye_no_route`) is dropped under that reason.
//!
//! The P4 rendering is in `p4.rs` (`dataplane p4 export`, docs/p4/hawkeye.md).

mod config;
pub mod decl;
mod p4;
pub mod rules;
pub mod telemetry;

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};

use wire::ethernet::{EtherType, EthernetFrame};
use wire::hawkeye::report::{self, Entry, ReportHeader};
use wire::hawkeye::{FiveTuple, PORT_NONE, PollingFlag, PollingPacket, PollingRepr};
use wire::ipv4::{Ipv4Packet, protocol};
use wire::stack::UdpFlow;

use roce::dta::{report_frame_len, write_report_frame};

pub use self::config::HawkeyeSection;
use self::rules::{CopyView, Fanout};
use self::telemetry::{Sample, Telemetry};

/// The control commands: `show hawkeye` (or `hawkeye`), `hawkeye snapshot EVENT`, else an
/// `l2l3` command.
#[derive(Debug, Clone)]
pub enum Command {
    /// The control side's counters and where its reports go.
    Show,
    /// Full polling (the paper's straw-man baseline, §4.2): snapshot every port as a polling
    /// copy would, reports flagged 00 (no polling copy) under this event ID.
    Snapshot(u8),
    /// A command of the forwarding underneath.
    L2l3(super::l2l3::Command),
}

impl Command {
    /// Parse one control line.
    pub fn parse(line: &str, ports: &[String]) -> Result<Self, String> {
        match line.trim() {
            "show hawkeye" | "hawkeye" => Ok(Self::Show),
            l if l.starts_with("hawkeye snapshot") => {
                let arg = l["hawkeye snapshot".len()..].trim();
                arg.parse::<u8>()
                    .map(Self::Snapshot)
                    .map_err(|_| format!("hawkeye snapshot {arg:?}: expected an event ID 0..=255"))
            }
            _ => L2l3::parse_command(line, ports).map(Self::L2l3),
        }
    }
}
use super::l2l3::{FLOOD_GROUP, L2l3};
use super::{BuildCtx, FromConfig};
use crate::buf::Frame;
use crate::config::{Config, ConfigError};
use crate::model::{DropReason, RegisterArray, Resources, param};
use crate::switch::{Dest, EgressMd, Emitter, IngressMd, Program};

/// Counters of the Hawkeye program (the drops are the switch's, by reason).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HawkeyeStats {
    /// Polling packets taken in at ingress.
    pub polling: u64,
    /// Polling copies that survived egress (each mirrored to the control side).
    pub survived: u64,
    /// Snapshots taken by the control side.
    pub snapshots: u64,
    /// Snapshots not taken: the control side's queue was full.
    pub snapshots_dropped: u64,
    /// Telemetry reports sent.
    pub reports: u64,
    /// Their bytes (UDP payload).
    pub report_bytes: u64,
    /// Entries in them.
    pub entries: u64,
    /// Reports not sent: no route, neighbour or buffer to the analyzer, or (without one) the
    /// runtime did not take the kept reports in time.
    pub reports_unsent: u64,
    /// Reports sent to the DTA collector as Append words (whole).
    pub dta_reports: u64,
    /// DTA Append reports (words) sent.
    pub dta_words: u64,
    /// DTA Append reports not sent (no route, neighbour or buffer): their report is incomplete
    /// in the list, which the reader's framing shows.
    pub dta_words_unsent: u64,
}

/// A surviving polling copy waiting for the control side.
#[derive(Debug, Clone, Copy)]
struct Pending {
    event_id: u8,
    flag: PollingFlag,
    in_port: u16,
    out_port: u16,
    at: u64,
}

#[derive(Debug, Clone, Copy)]
struct Drops {
    malformed: DropReason,
    no_trace: DropReason,
    no_route: DropReason,
    pruned: DropReason,
    duplicate: DropReason,
}

/// The `hawkeye` program.
#[derive(Debug)]
pub struct Hawkeye {
    l2l3: L2l3,
    tel: Telemetry,
    polling_queue: u8,
    /// Queues whose packets the telemetry counts (bit q = queue q).
    tel_queues: u8,
    switch_id: u16,
    analyzer: Option<SocketAddrV4>,
    /// The DTA collector, its list and the DTA UDP port.
    dta: Option<(Ipv4Addr, u32, u16)>,
    source_ip: Option<Ipv4Addr>,
    src_port: u16,
    /// Per egress port: the last event that left by it (valid bit, the victim source's low 23
    /// bits, the event ID; 0: none) and when.
    last_event: RegisterArray<(u32, u64)>,
    dedup_ns: u64,
    pending: VecDeque<Pending>,
    pending_cap: usize,
    seq: u32,
    drops: Drops,
    stats: HawkeyeStats,
    entries: Vec<Entry>,
    buf: Vec<u8>,
    /// Reports kept for the runtime when no analyzer is configured ([`Program::take_records`]).
    kept: Vec<Vec<u8>>,
    resources: Resources,
}

/// Reports kept for the runtime at most (beyond, counted unsent).
const KEEP_MAX: usize = 65536;

impl FromConfig for Hawkeye {
    const NAME: &'static str = "hawkeye";
    const ABOUT: &'static str =
        "l2l3 forwarding with Hawkeye's PFC-aware epoch telemetry and polling-packet tracing";
    const SECTIONS: &'static [&'static str] = &["l2l3", "hawkeye"];
    const SINGLE_PIPELINE: Option<&'static str> = Some("Hawkeye's telemetry tables are one switch's");

    fn resolved(cfg: &Config) -> Result<String, ConfigError> {
        Ok(L2l3::section(cfg)?.resolved())
    }

    fn from_config(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        Self::build(cfg, ctx)
    }

    fn p4(&self, cfg: &Config) -> Result<crate::p4::ProgramP4, crate::p4::ExportError> {
        self.rendering(cfg)
    }
}

impl Hawkeye {
    /// Build from the configuration: `[l2l3]`, then `[hawkeye]`.
    pub fn build(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        let c = cfg.ctx();
        let l2l3 = L2l3::build(cfg, ctx)?;
        let h = cfg.section::<HawkeyeSection>("hawkeye")?.unwrap_or_default();
        let epochs = h.epochs.unwrap_or(4);
        if !epochs.is_power_of_two() || epochs > 16 {
            return Err(c.err("hawkeye.epochs", format!("{epochs}: expected a power of two, 1..=16")));
        }
        let epoch_ns = h.epoch_ns.unwrap_or(1 << 20);
        // At most 2^32 ns, so that no 32-bit packet counter can wrap within one epoch.
        if !epoch_ns.is_power_of_two() || !(1024..=1 << 32).contains(&epoch_ns) {
            return Err(c.err(
                "hawkeye.epoch_ns",
                format!("{epoch_ns}: expected a power of two from 1024 to 2^32 (4294967296)"),
            ));
        }
        let slots = h.flow_slots.unwrap_or(65536);
        if !slots.is_power_of_two() || slots > 1 << 20 {
            return Err(c.err("hawkeye.flow_slots", format!("{slots}: expected a power of two up to 2^20")));
        }
        let polling_queue = h.polling_queue.unwrap_or(7);
        if polling_queue > 7 {
            return Err(c.err("hawkeye.polling_queue", format!("{polling_queue}: expected 0..=7")));
        }
        if cfg.tm.lossless & (1 << polling_queue) != 0 {
            return Err(c.err(
                "hawkeye.polling_queue",
                format!("{polling_queue}: a lossless priority ([tm] lossless), which PFC pauses: polling packets need one it never pauses"),
            ));
        }
        let tel_queues = match &h.queues {
            Some(qs) => {
                let mut m = 0u8;
                for &q in qs {
                    if q > 7 {
                        return Err(c.err("hawkeye.queues", format!("{q}: expected queues 0..=7")));
                    }
                    m |= 1 << q;
                }
                if m == 0 {
                    return Err(c.err("hawkeye.queues", "[]: expected at least one queue".to_string()));
                }
                m
            }
            None if cfg.tm.lossless != 0 => cfg.tm.lossless,
            None => 0xff,
        };
        // The switch's ID in its reports: `[hawkeye] switch_id`, else the INT switch ID (the lab
        // sets that to switch index + 1), else 1.
        let switch_id = h.switch_id.or(L2l3::section(cfg)?.int_switch_id).unwrap_or(1);
        let analyzer = match &h.analyzer {
            None => None,
            Some(s) => Some(s.parse::<SocketAddrV4>().map_err(|_| {
                c.err("hawkeye.analyzer", format!("{s:?}: expected \"address:port\" (IPv4)"))
            })?),
        };
        let dta = match &h.dta_collector {
            None => None,
            Some(s) => {
                let ip = s
                    .parse::<Ipv4Addr>()
                    .map_err(|_| c.err("hawkeye.dta_collector", format!("{s:?} is not an IPv4 address")))?;
                let list = h.dta_list.unwrap_or(u32::from(switch_id));
                Some((ip, list, h.dta_port.unwrap_or(wire::udp::port::DTA)))
            }
        };
        let source_ip = match &h.source_ip {
            None => None,
            Some(s) => Some(
                s.parse::<Ipv4Addr>()
                    .map_err(|_| c.err("hawkeye.source_ip", format!("{s:?} is not an IPv4 address")))?,
            ),
        };
        let dedup_ns = h.dedup_ns.unwrap_or(500_000);
        if !(1024..=60_000_000_000).contains(&dedup_ns) {
            return Err(c.err("hawkeye.dedup_ns", format!("{dedup_ns}: expected 1024 ns to 60 s")));
        }
        let pending_cap = h.pending.unwrap_or(64);
        if pending_cap == 0 || pending_cap > 65536 {
            return Err(c.err("hawkeye.pending", format!("{pending_cap}: expected 1..=65536")));
        }
        let ports = cfg.ports.len();
        let res = &mut ctx.resources;
        let tel = Telemetry::new(res, epochs, epoch_ns.trailing_zeros(), slots, ports);
        let last_event = RegisterArray::new(
            res,
            "hawkeye_last_event",
            ports,
            // The tag the egress stores is 32 bits (`hk_tag`; a 16-bit cell did not unify in p4c).
            &[param("event", 32), param("at_ns", 64)],
            None,
        );
        decl::declare(res);
        let drops = Drops {
            malformed: ctx.drops.declare("hawkeye_malformed"),
            no_trace: ctx.drops.declare("hawkeye_no_trace"),
            no_route: ctx.drops.declare("hawkeye_no_route"),
            pruned: ctx.drops.declare("hawkeye_pruned"),
            duplicate: ctx.drops.declare("hawkeye_duplicate"),
        };
        let resources = ctx.resources_after_l2l3(&l2l3);
        Ok(Self {
            l2l3,
            tel,
            polling_queue,
            tel_queues,
            switch_id,
            analyzer,
            dta,
            source_ip,
            src_port: h.src_port.unwrap_or(report::MAGIC),
            last_event,
            dedup_ns,
            pending: VecDeque::with_capacity(pending_cap),
            pending_cap,
            seq: 0,
            drops,
            stats: HawkeyeStats::default(),
            entries: Vec::new(),
            buf: vec![0u8; report::MAX_REPORT_LEN],
            kept: Vec::new(),
            resources,
        })
    }

    /// Counters.
    pub fn stats(&self) -> HawkeyeStats {
        self.stats
    }

    /// Flow packets not merged into a slot another flow held (collisions).
    pub fn collisions(&self) -> u64 {
        self.tel.collisions
    }

    /// The telemetry tables.
    pub fn telemetry(&self) -> &Telemetry {
        &self.tel
    }

    /// The queues the telemetry counts (bit q = queue q).
    pub fn telemetry_queues(&self) -> u8 {
        self.tel_queues
    }

    /// The forwarding half.
    pub fn l2l3(&self) -> &L2l3 {
        &self.l2l3
    }

    /// A polling packet at ingress (its polling header at `l2`).
    #[cold]
    #[inline(never)]
    fn polling_ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, l2: usize) {
        let Ok(r) = PollingRepr::parse(&pkt.data()[l2..]) else {
            md.dest = Dest::Drop(self.drops.malformed);
            return;
        };
        let fan = rules::fanout(r.flag);
        if fan == Fanout::Drop {
            md.dest = Dest::Drop(self.drops.no_trace);
            return;
        }
        let Some(nh) = self.l2l3.resolve_flow(r.victim.dst_ip, telemetry::key(&r.victim)) else {
            md.dest = Dest::Drop(self.drops.no_route);
            return;
        };
        self.stats.polling += 1;
        let mut p = PollingPacket::new_unchecked(&mut pkt.data_mut()[l2..]);
        p.set_ingress_port(md.ingress_port);
        p.set_egress_port(if fan == Fanout::AllNoVictim { PORT_NONE } else { nh.port });
        md.qid = self.polling_queue;
        if fan == Fanout::Victim {
            md.dest = Dest::Port(nh.port);
        } else {
            md.dest = Dest::Multicast(FLOOD_GROUP);
            md.exclude_ingress = true;
        }
    }

    /// A polling copy at egress: the survival rules, de-duplication, the control side's queue.
    #[cold]
    #[inline(never)]
    fn polling_egress<F: Frame>(&mut self, pkt: &mut F, md: &mut EgressMd, l2: usize) {
        let now = md.deq.enq_ts;
        let port = md.egress_port;
        let Ok(view) = PollingPacket::new_checked(&pkt.data()[l2..]) else {
            md.drop = Some(self.drops.malformed);
            return;
        };
        let (flag, victim, inp, event) =
            (view.flag(), view.egress_port(), view.ingress_port(), view.event_id());
        let victim_flow = view.victim();
        let on_victim_port = victim == port;
        // Paused now: the TM holds the port (a pause that began before this epoch counted
        // nothing in it — packets it holds are counted when they leave).
        let paused_now = md.deq.paused_mask != 0;
        // On the victim port, §3.4's test is the victim flow's: "if the victim flow is PFC
        // paused" (its paused packets this epoch or the last); the port's if the tables hold no
        // entry of it there. Elsewhere, the port's.
        let paused = paused_now
            || if on_victim_port {
                self.tel
                    .flow_paused_recently(now, &victim_flow)
                    .unwrap_or_else(|| self.tel.paused_recently(now, port))
            } else {
                self.tel.paused_recently(now, port)
            };
        let c = CopyView {
            flag,
            on_victim_port,
            port_paused: paused,
            traffic_from_in_port: !on_victim_port && self.tel.meter_recent(now, inp, port) > 0,
        };
        let Some(flag) = rules::survive(c) else {
            md.drop = Some(self.drops.pruned);
            return;
        };
        // One event of one victim flow (§3.4: "drops polling packets with the same 5-tuple
        // within a certain time interval"): the 8-bit event ID (milliseconds mod 256 at the
        // agent) is shared by every host polling in that millisecond, so 23 bits of the victim
        // 5-tuple's hash tell their polls apart.
        let h = self.tel.flow_hash(&telemetry::key(&victim_flow));
        let tag = (1 << 31) | ((h & 0x7f_ffff) << 8) | u32::from(event);
        let (last, at) = self.last_event.read(usize::from(port));
        if last == tag && now.saturating_sub(at) < self.dedup_ns {
            md.drop = Some(self.drops.duplicate);
            return;
        }
        self.last_event.write(usize::from(port), (tag, now));
        PollingPacket::new_unchecked(&mut pkt.data_mut()[l2..]).set_flag(flag);
        self.stats.survived += 1;
        if self.pending.len() < self.pending_cap {
            self.pending.push_back(Pending { event_id: event, flag, in_port: inp, out_port: port, at: now });
        } else {
            self.stats.snapshots_dropped += 1;
        }
    }

    /// Count a data packet at egress in the epoch telemetry: the common frame straight from
    /// its headers ([`Telemetry::record_ipv4`]), any other through the parsers.
    #[inline(always)]
    fn record(&mut self, data: &[u8], md: &EgressMd) {
        // The TM never releases a packet from a paused priority (neither its scheduler nor its
        // cut-through), so at egress "paused" is "waited on PFC": queued while paused, or a
        // pause came while it waited.
        let d = &md.deq;
        let (now, inp, out, paused, q) =
            (d.enq_ts, d.enq.ingress_port, md.egress_port, d.waited_on_pfc, d.enq_qdepth);
        if !self.tel.record_ipv4(now, inp, out, paused, q, data) {
            self.record_parsed(
                data,
                now,
                Sample {
                    flow: None,
                    in_port: inp,
                    out_port: out,
                    bytes: data.len() as u32,
                    enq_qdepth: q,
                    paused,
                },
            );
        }
    }

    /// [`record`](Self::record) for a frame off the common path (VLAN tags, IPv4 options,
    /// fragments, not IPv4: counted per port and pair only).
    #[cold]
    #[inline(never)]
    fn record_parsed(&mut self, data: &[u8], now: u64, s: Sample) {
        let k = Self::flow_of(data).map(|f| telemetry::key(&f));
        self.tel.record_key(now, &s, k.as_ref());
    }

    /// A frame's 5-tuple, by the parsers (VLAN tags, IPv4 options, fragments).
    #[cold]
    #[inline(never)]
    fn flow_of(data: &[u8]) -> Option<FiveTuple> {
        let mut flow = None;
        if let Ok(eth) = EthernetFrame::new_checked(data)
            && eth.ethertype() == EtherType::IPV4
            && let Ok(ip) = Ipv4Packet::new_checked(&data[eth.header_len()..])
        {
            let (mut src_port, mut dst_port) = (0, 0);
            let l4 = ip.payload();
            if matches!(ip.protocol(), protocol::UDP | protocol::TCP)
                && ip.frag_offset() == 0
                && l4.len() >= 4
            {
                src_port = u16::from_be_bytes([l4[0], l4[1]]);
                dst_port = u16::from_be_bytes([l4[2], l4[3]]);
            }
            flow = Some(FiveTuple {
                src_ip: ip.src_addr(),
                dst_ip: ip.dst_addr(),
                protocol: ip.protocol(),
                src_port,
                dst_port,
            });
        }
        flow
    }

    /// The control side: snapshot what each surviving copy concerns and send it as reports.
    fn control_side<F: Frame>(&mut self, now: u64, out: &mut Emitter<'_, F>) {
        while let Some(p) = self.pending.pop_front() {
            self.stats.snapshots += 1;
            let mut entries = std::mem::take(&mut self.entries);
            entries.clear();
            self.tel.snapshot(p.at, p.out_port, &mut entries);
            // A traced copy reports even an empty snapshot (the analyzer learns the port was
            // reached); a full-polling snapshot of an idle port says nothing.
            if p.flag == PollingFlag::Drop && entries.is_empty() {
                self.entries = entries;
                continue;
            }
            let parts = entries.len().div_ceil(report::MAX_ENTRIES).max(1);
            for (i, chunk) in
                entries.chunks(report::MAX_ENTRIES).chain(entries.is_empty().then_some(&[][..])).enumerate()
            {
                let h = ReportHeader {
                    flag: p.flag as u8,
                    switch_id: self.switch_id,
                    event_id: p.event_id,
                    in_port: p.in_port,
                    out_port: p.out_port,
                    seq: self.seq,
                    part: i.min(255) as u8,
                    last: i + 1 == parts,
                };
                self.seq = self.seq.wrapping_add(1);
                let Ok(n) = report::emit_report(&h, chunk, &mut self.buf) else { continue };
                if self.dta.is_some() {
                    self.send_dta(n, now, out);
                }
                if self.send(n, now, out) {
                    self.stats.reports += 1;
                    self.stats.report_bytes += n as u64;
                    self.stats.entries += chunk.len() as u64;
                } else {
                    self.stats.reports_unsent += 1;
                }
            }
            self.entries = entries;
        }
    }

    /// The UDP flow from this switch (`source_ip`, else its address on the way out) to `dst`,
    /// through `l2l3`'s routes and neighbours, and the port it leaves by.
    fn flow_to<F: Frame>(
        &mut self,
        dst: SocketAddrV4,
        now: u64,
        out: &mut Emitter<'_, F>,
    ) -> Option<(u16, UdpFlow)> {
        self.l2l3.udp_flow_to(self.source_ip, self.src_port, dst, now, out).ok()
    }

    /// One UDP frame of `payload` on `flow` out of `port`, in the polling queue.
    fn emit_udp<F: Frame>(
        &self,
        out: &mut Emitter<'_, F>,
        port: u16,
        flow: &UdpFlow,
        payload: &[u8],
    ) -> bool {
        out.emit(Dest::Port(port), self.polling_queue, |f| {
            f.reset();
            f.append(report_frame_len(flow, payload.len()))
                .is_some_and(|b| write_report_frame(flow, payload, b))
        })
    }

    /// Send `self.buf[..n]` to the DTA collector as Append reports, one word each
    /// (`wire::hawkeye::report::words`), high priority, not retransmittable.
    fn send_dta<F: Frame>(&mut self, n: usize, now: u64, out: &mut Emitter<'_, F>) {
        let Some((dst, list, port)) = self.dta else { return };
        let Some((out_port, flow)) = self.flow_to(SocketAddrV4::new(dst, port), now, out) else {
            self.stats.dta_words_unsent += report::words(&self.buf[..n]).count() as u64;
            return;
        };
        let seq = wire::dta::Sequence {
            seqnum: 0,
            retransmittable: false,
            priority: wire::dta::Priority::High,
            epoch: 0,
        };
        let mut all = true;
        for w in report::words(&self.buf[..n]) {
            let r = wire::dta::DtaRepr {
                immediate: false,
                seq: Some(seq),
                primitive: wire::dta::Primitive::Append { list_id: list, data: w },
            };
            let mut b = [0u8; 16];
            let len = r.buffer_len();
            if r.emit(&mut b[..len]).is_err() {
                continue;
            }
            if self.emit_udp(out, out_port, &flow, &b[..len]) {
                self.stats.dta_words += 1;
            } else {
                self.stats.dta_words_unsent += 1;
                all = false;
            }
        }
        self.stats.dta_reports += u64::from(all);
    }

    /// Send `self.buf[..n]` to the analyzer through `l2l3`, or keep it for the runtime when
    /// there is no analyzer.
    fn send<F: Frame>(&mut self, n: usize, now: u64, out: &mut Emitter<'_, F>) -> bool {
        let Some(dst) = self.analyzer else {
            if self.kept.len() < KEEP_MAX {
                self.kept.push(self.buf[..n].to_vec());
                return true;
            }
            return false;
        };
        let Some((port, flow)) = self.flow_to(dst, now, out) else { return false };
        self.emit_udp(out, port, &flow, &self.buf[..n])
    }
}

impl Program for Hawkeye {
    type Command = Command;

    #[inline(always)]
    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        let untagged_ipv4 = pkt.data().get(12..14) == Some(&[0x08, 0x00][..]);
        if !untagged_ipv4
            && let Ok(eth) = EthernetFrame::new_checked(pkt.data())
            && eth.ethertype() == EtherType(decl::ETHERTYPE_POLLING)
        {
            let l2 = eth.header_len();
            self.polling_ingress(pkt, md, l2);
            return;
        }
        self.l2l3.ingress(pkt, md, out);
    }

    #[inline(always)]
    fn egress<F: Frame>(&mut self, pkt: &mut F, md: &mut EgressMd) {
        // Most frames are untagged IPv4: no polling packet, straight to the telemetry.
        let untagged_ipv4 = pkt.data().get(12..14) == Some(&[0x08, 0x00][..]);
        if !untagged_ipv4
            && let Ok(eth) = EthernetFrame::new_checked(pkt.data())
            && eth.ethertype() == EtherType(decl::ETHERTYPE_POLLING)
        {
            let l2 = eth.header_len();
            // A copy: the metadata stays in registers on the data packets' path.
            let mut m = *md;
            self.polling_egress(pkt, &mut m, l2);
            md.drop = m.drop;
            return;
        }
        self.l2l3.egress(pkt, md);
        if self.tel_queues & (1 << (md.deq.enq.qid & 7)) == 0 {
            return;
        }
        self.record(pkt.data(), md);
    }

    #[inline(always)]
    fn has_egress(&self) -> bool {
        true
    }

    fn tick_interval(&self) -> Option<u64> {
        Some(50_000)
    }

    fn tick<F: Frame>(&mut self, now: u64, out: &mut Emitter<'_, F>) {
        self.control_side(now, out);
        self.tel.prune_evicted(now);
        self.l2l3.tick(now, out);
    }

    fn control(&mut self, cmd: Command, now: u64) -> Result<String, String> {
        match cmd {
            Command::Show => {
                let s = self.stats;
                Ok(format!(
                    "hawkeye: switch {} analyzer {:?} dta {:?}\npolling {} survived {} snapshots {} snapshots_dropped {} \
                     reports {} report_bytes {} entries {} reports_unsent {} dta_reports {} dta_words {} \
                     dta_words_unsent {} collisions {} evicted_lost {}\n",
                    self.switch_id,
                    self.analyzer,
                    self.dta,
                    s.polling,
                    s.survived,
                    s.snapshots,
                    s.snapshots_dropped,
                    s.reports,
                    s.report_bytes,
                    s.entries,
                    s.reports_unsent,
                    s.dta_reports,
                    s.dta_words,
                    s.dta_words_unsent,
                    self.tel.collisions,
                    self.tel.evicted_lost
                ))
            }
            Command::Snapshot(event_id) => {
                let mut queued = 0;
                for port in 0..self.tel.ports() as u16 {
                    if self.pending.len() >= self.pending_cap {
                        self.stats.snapshots_dropped += 1;
                        continue;
                    }
                    self.pending.push_back(Pending {
                        event_id,
                        flag: PollingFlag::Drop,
                        in_port: PORT_NONE,
                        out_port: port,
                        at: now,
                    });
                    queued += 1;
                }
                Ok(format!("hawkeye: {queued} port snapshots queued for event {event_id}\n"))
            }
            Command::L2l3(c) => self.l2l3.control(c, now),
        }
    }

    fn parse_command(line: &str, ports: &[String]) -> Result<Command, String> {
        Command::parse(line, ports)
    }

    fn resources(&self) -> &Resources {
        &self.resources
    }

    fn take_records(&mut self, out: &mut Vec<Vec<u8>>) {
        out.append(&mut self.kept);
    }
}

#[cfg(test)]
mod tests;
