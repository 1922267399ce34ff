//! `dta_translator`: the DTA translator (seed `000`, design `DTA.md` "Translator behaviour"),
//! a switch program that turns DTA reports into RDMA operations on collectors' memory, on a
//! switch that otherwise forwards like `l2l3` (it is the collectors' ToR).
//!
//! * **Reports** (UDP port 40040) addressed to a collector (or to the translator) are parsed in
//!   the configured base form and translated:
//!   * Key-Write with redundancy N → N RDMA WRITEs, copy n of *this* report at slot
//!     `hash_n(key) & (slots − 1)`, each copy with its own CRC polynomial by default
//!     (`key_hash = "reference"`: the reference's `CRC32(key ‖ n)`); the slot is the key's
//!     checksum (little-endian) and the data;
//!   * Key-Increment → N FETCH_ADDs on 64-bit counters at the same slots (a report whose N is
//!     not the store's `keyincrement_redundancy` is refused);
//!   * Append → per-list batches of B entries written at the list's ring head (two WRITEs at
//!     the wrap), partial batches flushed after `append_flush_us`;
//!   * Postcarder → paths assembled in a cache and written (24 bytes in a 32-byte slot) when
//!     complete or evicted;
//!   * Sketch-Merge (opcode 5) → columns merged per sketch, in order per reporter (otherwise a
//!     NACK), written C columns at a time once every reporter's copy is in;
//!   * immediate flag → WRITE with Immediate (for Key-Increment, a zero-length one after the
//!     atomics), so the collector's CPU hears of exactly that datum.
//! * **Collectors**: Key-Write / Key-Increment keys go to the collector the report was sent to,
//!   or, for reports to the translator itself, to `keywrite_collector(key, n)`; Append by list,
//!   Sketch-Merge by sketch.
//! * **RDMA**: one RC queue pair per collector data structure, connected with IB CM over RoCEv2
//!   (REQ/REP/RTU) at start and after any failure, the region learned from the collector's
//!   metadata SEND (which is acknowledged). The `roce` requester numbers packets, asks for an
//!   ACK every K, parses every AETH syndrome, goes back N on a sequence NAK and resets the
//!   connection on a fatal NAK or too many timeouts. Every packet has a correct ICRC.
//! * **Flow control** (seed §3.2): a trTCM per collector meters RDMA packets (Append entries,
//!   postcards and sketch columns cost their share of the packet they end up in). Over the
//!   committed rate medium and high priority pass; over the peak rate low and medium are
//!   dropped and counted, high priority is parked (a bounded queue) and re-entered when the rate
//!   allows; the reporter is told to slow down (a NACK with our slow-down bit). The same while a
//!   store's QP is not connected (a collector restarting): high priority waits.
//! * **Loss from reporters**: retransmittable reports are sequence-checked per reporter (source
//!   address, port and epoch) over a 128-number window (`seq::ReporterSeq`): a gap is NACKed
//!   at once as a range (our NACK extension) and the reports after it are translated, a missing
//!   report resent later is translated when it comes, duplicates are dropped. Missing runs are
//!   asked for again in turn, paced, on arrivals and on a 1 ms timer (a stream's last holes),
//!   within `wire::dta::RESEND_WINDOW` of the newest; a number still missing when the window
//!   leaves it, when its reporter restarts or has been silent for a second, or when the
//!   translator stops, is counted unrecoverable (`seq_unrecoverable`; `seq_missing` is what is
//!   still being asked for).
//! * **Loss, death and restarts towards collectors**: the requester's timeout adapts to the
//!   round trip; a QP that stays unanswered, or is refused, is reset and connected again (fresh
//!   CM communication IDs each start, a bounded wait for the region). A reconnection to the
//!   same region posts the lost connection's unacknowledged WRITEs again (`replayed`) and keeps
//!   each Append list's position; a new region (a restarted collector) counts what the old one
//!   held (`region_lost_entries`) and continues the lists at the collector's head (24-byte
//!   metadata). Atomics are never posted twice: unacknowledged ones to a collector that kept
//!   its memory have an unknown outcome (`unknown_entries`: applied, or not), not a loss. A NAK or timeout
//!   halves a metered collector's rate, restored gradually, and each QP's congestion window
//!   (`[dta] min_window`, `roce::requester`): a QP with no room parks its high-priority
//!   reports, in arrival order (later ones join them), drops the rest (`dta_window_full`) and
//!   slows the reporter. On SIGTERM the translator writes out what it holds, waits for the
//!   ACKs, and sends a DREQ per QP; what is still parked (`dta_stopped`), a batch with no room
//!   and partial Postcarder paths are counted.
//!
//! Every report not translated is dropped under a named reason; everything given up after it
//! was translated is counted: stored + counted lost + `seq_missing` + `held` = sent.

mod build;
mod config;
mod control;
pub mod decl;
mod nack;
mod p4;
mod progress;
mod qp;
mod rdma;
pub mod seq;
mod sketch;
pub mod state;
mod translate;

use std::net::{Ipv4Addr, SocketAddrV4};

use roce::cm::{ClientEvent, CmClient, CmConfig, ConnectError, ConnectParams, Metadata};
use roce::frames;
use roce::requester::{Op, PostError, Requester, RequesterConfig, Response, Transport};
use roce::responder::{Delivery, NoMemory, Responder};
use wire::dta::{self, BaseForm, DtaRepr, Format, NackExt, NackRepr, Primitive, Priority, Sequence};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::ibcm::CmMadRepr;
use wire::ipv4::{self, Ipv4Packet, protocol};
use wire::roce::{Opcode, RoceRepr, icrc};
use wire::stack::UdpFlow;
use wire::udp::{self, UdpPacket};

pub use self::config::{DtaCollector, DtaList, DtaPostcarder, DtaSection, DtaSketch};

/// Whether a report dropped under the translator's drop reason `name` is data lost: every
/// `dta_` reason but a duplicate (its number was translated already) and a stale number (one
/// already seen, too old to be a resend: a report reordered further than 8 bits order, whose
/// own number was counted lost when it left the window, or the first after 128 or more lost in
/// a row, which only the port's own counters can show). Nor are a reporter's hello, a report
/// after the stop's last word (its reporter counts it), and a sketch column out of order (the
/// sketch NACK has the reporter send again from the last column merged: it comes again).
pub fn drop_is_loss(name: &str) -> bool {
    name.starts_with("dta_")
        && !matches!(
            name,
            "dta_seq_duplicate"
                | "dta_seq_stale"
                | "dta_hello"
                | "dta_after_stop"
                | "dta_sketch_out_of_order"
                | "dta_sketch_deferred"
        )
}
use self::qp::{Phase, Qp, Store};
use self::seq::ReporterSeq;
use self::sketch::{SketchMerger, SketchOutcome};
use self::state::{AppendBatcher, PostcardOutcome, PostcarderCache};
use super::l2l3::{L2l3, NoNextHop};
use super::{BuildCtx, FromConfig};
use crate::buf::Frame;
use crate::config::{Config, ConfigError};
use crate::model::{Color, DropReason, ExactTable, MeterArray, MeterConfig, MeterUnit, Resources, builtin};
use crate::switch::{Dest, EgressMd, Emitter, IngressMd, PortId, Program};

use roce::dta::{MAX_REPORT, parse_priority};
/// The DTA NACK port (reference `DTA_ACK_PORT_NUMBER`).
const NACK_PORT: u16 = wire::udp::port::DTA_NACK;
/// Meter units per RDMA packet: Append entries, postcards and sketch columns are charged their
/// share of a packet in these units.
const UNITS: u32 = 240;
/// First local QPN.
const QPN_BASE: u32 = 0x100;
/// How often the timer asks reporters again for their missing reports.
const HOLE_SCAN_NS: u64 = 1_000_000;
/// A reporter silent this long gets its missing reports counted lost.
const HOLE_GIVE_UP_NS: u64 = 1_000_000_000;

/// Offsets in the common report frame — untagged Ethernet, IPv4 without options, UDP — that the
/// fast path reads directly, from `wire`'s field specifications (the declared parser's).
mod fixed {
    use wire::{ethernet, ipv4, udp};

    /// The EtherType.
    pub const ETHER_TYPE: usize = ethernet::field::ETHER_TYPE.byte();
    /// The IPv4 header.
    pub const IP: usize = ethernet::HEADER_LEN;
    /// Version and IHL.
    pub const IP_VERSION_IHL: usize = IP + ipv4::field::VERSION.byte();
    /// Total length.
    pub const IP_TOTAL_LEN: usize = IP + ipv4::field::TOTAL_LEN.byte();
    /// Flags and fragment offset.
    pub const IP_FLAGS_FRAG: usize = IP + ipv4::field::FRAG_OFFSET.byte();
    /// Protocol.
    pub const IP_PROTOCOL: usize = IP + ipv4::field::PROTOCOL.byte();
    /// Source address.
    pub const IP_SRC: usize = IP + ipv4::field::SRC_ADDR.byte();
    /// Destination address.
    pub const IP_DST: usize = IP + ipv4::field::DST_ADDR.byte();
    /// The UDP header.
    pub const UDP: usize = IP + ipv4::HEADER_LEN;
    /// Destination port.
    pub const UDP_DST_PORT: usize = UDP + udp::field::DST_PORT.byte();
    /// Length.
    pub const UDP_LENGTH: usize = UDP + udp::field::LENGTH.byte();
    /// The report.
    pub const PAYLOAD: usize = UDP + udp::HEADER_LEN;
}

/// The translator's settings, resolved from `[dta]`.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How reports are parsed.
    pub format: Format,
    /// Largest redundancy accepted.
    pub max_redundancy: u8,
    /// How copies choose their slots.
    pub key_hash: dta::KeyHashMode,
    /// Priority of reports without one.
    pub default_priority: Priority,
    /// UDP port of reports.
    pub udp_port: u16,
    /// Source address towards collectors, if fixed.
    pub source_ip: Option<Ipv4Addr>,
    /// TM queue of RDMA packets.
    pub queue: u8,
    /// DSCP of RDMA packets.
    pub dscp: u8,
    /// ECN of RDMA packets.
    pub ecn: u8,
    /// Every QP's requester.
    pub requester: RequesterConfig,
    /// Ack probe delay, ns.
    pub ack_probe_ns: u64,
    /// Append flush timeout, ns.
    pub append_flush_ns: u64,
    /// NACK pacing per reporter, ns.
    pub nack_interval_ns: u64,
    /// Longest wait for a collector's metadata once connected, ns.
    pub region_timeout_ns: u64,
    /// How long after its start the translator joins reporters mid-stream, ns.
    pub join_ns: u64,
    /// Seed of CM communication IDs and starting PSNs.
    pub seed: u32,
    /// This start's own value, in every stream's progress message (a reporter that hears a
    /// new one knows the translator restarted). Never configured: fresh at each start.
    pub incarnation: u32,
    /// The CM's timers.
    pub cm: CmConfig,
}

/// One queue pair as [`DtaTranslator::queue_pairs`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuePairInfo {
    /// `collector/store`.
    pub name: String,
    /// The collector.
    pub collector: Ipv4Addr,
    /// Our QPN.
    pub local_qpn: u32,
    /// The collector's QPN.
    pub remote_qpn: u32,
    /// Connected and holding its region.
    pub ready: bool,
    /// The region.
    pub region: Metadata,
    /// Slots in it.
    pub slots: u64,
    /// Requests not yet acknowledged.
    pub outstanding: u32,
}

/// Counters of what the translator did (the drops are the switch's, by reason).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DtaStats {
    /// Reports translated (or absorbed into a batch, a path, a sketch).
    pub reports: [u64; 5],
    /// RDMA request packets sent, retransmissions excluded.
    pub rdma_packets: u64,
    /// Request packets resent.
    pub retransmitted: u64,
    /// Acknowledgements (ACK, NAK, atomic ACK) consumed.
    pub acks: u64,
    /// DTA NACKs sent to reporters.
    pub nacks: u64,
    /// Slow-down messages sent to reporters.
    pub slow_downs: u64,
    /// Reports parked for rate.
    pub parked: u64,
    /// Parked reports later translated.
    pub unparked: u64,
    /// Connections established.
    pub connects: u64,
    /// Connections lost (fatal NAK, retries exceeded, peer disconnect).
    pub resets: u64,
    /// Reporters' sequence numbers found missing (each NACKed).
    pub seq_gaps: u64,
    /// Missing reports that arrived later (resent) and were translated.
    pub seq_recovered: u64,
    /// Missing reports that never came while their number could still be named (128 newer
    /// reports came after them), or whose reporter restarted: lost before the translator.
    pub seq_unrecoverable: u64,
    /// Numbers of streams of Sketch-Merge columns missing for good: not a loss here (the
    /// columns they carried are stored, or counted lost by the merger).
    pub seq_superseded: u64,
    /// Reporters seen restarting (a new epoch, or a hello over a tracked stream).
    pub reporter_restarts: u64,
    /// Reporters' hellos answered (each a start announced).
    pub hellos: u64,
    /// Retransmittable reports from reporters the full tracking table could not take.
    pub untracked: u64,
    /// Requests a lost connection left unacknowledged, posted again on the next connection to
    /// the same region (WRITEs only: they are idempotent).
    pub replayed: u64,
    /// Requests given up unacknowledged: their connection was lost and the next one named
    /// another region (a restarted collector), or the translator stopped before their ACK.
    pub lost_requests: u64,
    /// Atomics (FETCH_ADD) whose outcome cannot be known: their connection was lost before
    /// their ACK, to a collector that kept its memory. The collector may have applied them
    /// (only the ACK was lost) or not; they are never sent twice. Neither stored nor lost:
    /// stored + lost + pending ≤ sent ≤ stored + lost + pending + `unknown_entries`.
    pub unknown_requests: u64,
    /// The data items those atomics carried (Key-Increment copies).
    pub unknown_entries: u64,
    /// The data items those requests carried (Append entries, Key-Write / Key-Increment
    /// copies, postcards, sketch columns), when not counted in `region_lost_entries`.
    pub lost_entries: u64,
    /// Data items written (or being written) to a region the collector no longer offers: a
    /// reconnection named another region, so the collector restarted and its memory, with
    /// these items, is gone.
    pub region_lost_entries: u64,
    /// Times a collector's rate was cut after a NAK or timeout (back-off).
    pub rate_cuts: u64,
    /// Zero-length WRITEs sent to have an unacknowledged tail acknowledged (in `rdma_packets`).
    pub ack_probes: u64,
}

impl DtaStats {
    /// Count `n` reports of a stream missing for good: lost, or, for a stream of sketch
    /// columns, superseded (`seq_superseded`: the merger stores or counts the columns).
    pub fn unrecoverable(&mut self, columns: bool, n: u32) {
        if columns {
            self.seq_superseded += u64::from(n);
        } else {
            self.seq_unrecoverable += u64::from(n);
        }
    }
}

#[derive(Debug, Clone)]
struct Drops {
    malformed: DropReason,
    unknown_opcode: DropReason,
    /// A reporter's hello, answered (consumed here, not a report: not a loss).
    hello: DropReason,
    bad_redundancy: DropReason,
    redundancy_mismatch: DropReason,
    no_list: DropReason,
    no_sketch: DropReason,
    no_store: DropReason,
    store_down: DropReason,
    window_full: DropReason,
    rate_low: DropReason,
    park_full: DropReason,
    /// A parked report the translator still held when it stopped.
    stopped: DropReason,
    /// A report that came after the stop's last word to its reporter (which counts it: not
    /// a loss here).
    after_stop: DropReason,
    seq_duplicate: DropReason,
    seq_stale: DropReason,
    bad_hop: DropReason,
    sketch_order: DropReason,
    sketch_shape: DropReason,
    /// Sketch columns a reporter was asked for again and never sent (it fell silent).
    sketch_gave_up: DropReason,
    /// A tracked sketch column refused before merging (rate, window, store down, park full):
    /// wanted again from its reporter ([`SketchMerger::defer`]), counted where its fate is
    /// known — merged, or `sketch_gave_up` — not a loss here.
    sketch_deferred: DropReason,
    roce_bad_icrc: DropReason,
    roce_malformed: DropReason,
    unknown_qp: DropReason,
    /// Per drop reason (by number): whether a report dropped for it is lost.
    loss: Vec<bool>,
}

impl Drops {
    /// Whether a report dropped for `reason` is lost: [`drop_is_loss`] of its name, looked up
    /// in `loss` (built from the declared names, so the two never disagree).
    fn is_loss(&self, reason: DropReason) -> bool {
        self.loss.get(usize::from(reason.0)).copied().unwrap_or(true)
    }
}

/// A collector.
#[derive(Debug, Clone)]
struct CollectorState {
    name: String,
    ip: Ipv4Addr,
    /// Its QPs by store.
    keywrite: Option<usize>,
    keyincrement: Option<usize>,
    /// The N its Key-Increment queries read, if configured.
    keyincrement_redundancy: Option<u8>,
    postcarder: Option<usize>,
    metered: bool,
    /// The configured rates (metered collectors).
    rate: MeterConfig,
    /// Back-off: the share of `rate` in force, in sixteenths (16: all of it).
    share: u32,
    /// When the rate was last cut, and last restored a step.
    last_cut: u64,
    last_step: u64,
}

/// A report waiting for the rate to allow it.
#[derive(Debug, Clone, Copy)]
struct Parked {
    bytes: [u8; MAX_REPORT],
    len: u16,
    dst: Ipv4Addr,
    /// When it was parked.
    at: u64,
}

/// Where a translated report's first packet goes.
enum First<'a, F> {
    /// Into the report's own buffer (the ingress path).
    InPlace(&'a mut F),
    /// Nowhere yet: every packet is emitted (a parked report).
    None,
}

/// The outcome of translating one report.
enum Translated {
    /// The report's buffer now holds the first RDMA packet for `port`.
    Sent(PortId),
    /// Everything went out through the emitter (or nothing was due): the buffer is free.
    Absorbed,
    /// Rejected: drop (and maybe tell the reporter).
    Rejected(Reject),
}

#[derive(Debug, Clone, Copy)]
enum Reject {
    Drop(DropReason),
    /// Over the rate: dropped (low priority) or parked (high), reporter told to slow down.
    Rate {
        park: bool,
    },
    /// The store's QP is not ready (connecting, a collector restarting): high priority is
    /// parked, the rest dropped (`dta_store_down`), the reporter told to slow down.
    Down,
    /// The store's QP has no room in its (congestion) window: high priority is parked, the
    /// rest dropped (`dta_window_full`), the reporter told to slow down.
    Full,
    /// A sketch column out of order: NACK with the last in-order column.
    SketchNack {
        /// The sketch.
        sketch_id: u16,
        /// The reporter.
        reporter_id: u16,
        /// The last column merged in order from it.
        last: u32,
    },
}

/// `r` without borrowing the packet it was parsed from: Key-Write data copied into `kw`,
/// sketch counters into `buf`.
#[inline(always)]
fn detach<'a>(r: DtaRepr<'_>, kw: &'a mut [u8; 28], buf: &'a mut Vec<u8>) -> DtaRepr<'a> {
    let primitive = match r.primitive {
        Primitive::KeyWrite { redundancy, key, data } => {
            let n = data.len().min(kw.len());
            // A few bytes: fixed-size moves, no call to memcpy.
            wire::copy_short(kw, &data[..n]);
            Primitive::KeyWrite { redundancy, key, data: &kw[..n] }
        }
        Primitive::SketchMerge { sketch_id, reporter_id, column, op, counters } => {
            buf.clear();
            buf.extend_from_slice(counters);
            Primitive::SketchMerge { sketch_id, reporter_id, column, op, counters: buf }
        }
        Primitive::Append { list_id, data } => Primitive::Append { list_id, data },
        Primitive::KeyIncrement { redundancy, key, counter } => {
            Primitive::KeyIncrement { redundancy, key, counter }
        }
        Primitive::Postcarder { key, hop, data } => Primitive::Postcarder { key, hop, data },
    };
    DtaRepr { immediate: r.immediate, seq: r.seq, primitive }
}

/// The program.
pub struct DtaTranslator {
    l2l3: L2l3,
    resources: Resources,
    s: Settings,
    collectors: Vec<CollectorState>,
    kw_collectors: Vec<usize>,
    ki_collectors: Vec<usize>,
    qps: Vec<Qp>,
    lists: ExactTable<u32, usize>,
    /// The QP of list IDs below 1024, without a hash (`u16::MAX`: none); larger IDs use `lists`.
    list_direct: Vec<u16>,
    sketches: ExactTable<u16, usize>,
    /// Per reporter, keyed by (source address << 16 | source port).
    reporters: ExactTable<u64, ReporterSeq>,
    meters: MeterArray,
    parked: std::collections::VecDeque<Parked>,
    park_cap: usize,
    /// The held queue's length when the last report was parked (`translate::mark_parked`).
    park_len: usize,
    drops: Drops,
    stats: DtaStats,
    sketch_buf: Vec<u8>,
    scratch: Vec<u8>,
    last_tick: u64,
    /// The first tick's time.
    started_at: Option<u64>,
    /// Reporters with numbers missing, and the way back to each (port, NACK addressing): the
    /// timer asks again for what no later report brings up.
    holes: Vec<(u64, PortId, UdpFlow)>,
    /// When the timer last went over `holes`.
    holes_scan: u64,
    /// While a held item is written (a batch, a path, a parked report): when it was taken,
    /// so the request carrying it is dated then (`u64::MAX` otherwise).
    born_floor: u64,
    /// When the streams' progress last went to their reporters.
    progress_at: u64,
    /// A stream was joined mid-way: its progress goes at the next tick.
    progress_due: bool,
    /// The stop is done (the streams had their last word): reports are no longer taken.
    stopped: bool,
}

impl DtaTranslator {
    /// Counters.
    pub fn stats(&self) -> DtaStats {
        self.stats
    }

    /// Reports found missing and neither recovered nor counted unrecoverable yet: their numbers
    /// are still in their reporters' windows, NACKed (`show dta stats` `seq_missing`). Stored +
    /// counted lost + this = sent, at any moment.
    pub fn seq_missing(&self) -> u64 {
        self.reporters.iter().filter(|(_, t)| !t.columns).map(|(_, t)| u64::from(t.missing())).sum()
    }

    /// Data items the translator holds unwritten: postcards of partial paths (a path waits for
    /// all its hops, or for a colliding flow to evict it), entries of partial Append batches,
    /// and parked reports. With [`seq_missing`](Self::seq_missing), what is neither stored nor
    /// counted lost yet.
    pub fn held(&self) -> u64 {
        self.qps.iter().map(|q| q.store.held()).sum::<u64>() + self.parked.len() as u64
    }

    /// Whether every QP is connected and has its region.
    pub fn ready(&self) -> bool {
        self.qps.iter().all(|q| q.phase == Phase::Ready)
    }

    /// Every queue pair: what it writes and where, for tests, tools and `show`.
    pub fn queue_pairs(&self) -> Vec<QueuePairInfo> {
        self.qps
            .iter()
            .map(|q| QueuePairInfo {
                name: q.name.clone(),
                collector: q.peer,
                local_qpn: q.local_qpn,
                remote_qpn: q.req.dest_qp(),
                ready: q.phase == Phase::Ready,
                region: q.meta,
                slots: q.slots,
                outstanding: q.req.outstanding(),
            })
            .collect()
    }
}

/// Control commands: `show`, and every `l2l3` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Queue pairs, collectors, counters.
    Show,
    /// The counters as one line of `name=value` pairs (for scripts and the demo), with
    /// `ready=R/Q`: queue pairs ready to write, of all.
    Stats,
    /// An `l2l3` command (routes, neighbors, MACs).
    L2l3(super::l2l3::Command),
}

impl Command {
    /// `show dta` (or `dta`), else an `l2l3` command. Shared by the programs built on `l2l3`
    /// that speak DTA (`dta_translator`, `dta_reporter`).
    pub fn parse(line: &str, ports: &[String]) -> Result<Self, String> {
        match line.trim() {
            "show dta" | "dta" => Ok(Self::Show),
            "show dta stats" | "dta stats" => Ok(Self::Stats),
            _ => L2l3::parse_command(line, ports).map(Self::L2l3),
        }
    }
}

impl FromConfig for DtaTranslator {
    const NAME: &'static str = "dta_translator";
    const ABOUT: &'static str =
        "the DTA translator: reports in, RoCEv2 RDMA to collectors out (with l2l3 forwarding)";
    const SECTIONS: &'static [&'static str] = &["l2l3", "dta"];
    const SINGLE_PIPELINE: Option<&'static str> =
        Some("the DTA translator keeps one queue pair per collector store");

    fn from_config(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        Self::build(cfg, ctx)
    }

    fn resolved(cfg: &Config) -> Result<String, ConfigError> {
        Ok(L2l3::section(cfg)?.resolved())
    }

    fn p4(&self, cfg: &Config) -> Result<crate::p4::ProgramP4, crate::p4::ExportError> {
        self.rendering(cfg)
    }
}

impl Program for DtaTranslator {
    type Command = Command;

    #[inline]
    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        // Reports and RoCEv2 for the translator; everything else is l2l3's.
        let data = pkt.data();
        // The common report first, read at fixed offsets as a P4 parser would: untagged
        // Ethernet, IPv4 without options, not fragmented, UDP to the report port, lengths
        // consistent, header checksum right. Anything else takes the general path below.
        if let Some(h) = data.first_chunk::<{ fixed::PAYLOAD }>()
            && u16::from_be_bytes([h[fixed::ETHER_TYPE], h[fixed::ETHER_TYPE + 1]]) == EtherType::IPV4.0
            && h[fixed::IP_VERSION_IHL] == 0x45
            && h[fixed::IP_PROTOCOL] == protocol::UDP
            && h[fixed::IP_FLAGS_FRAG] & 0x3f == 0
            && h[fixed::IP_FLAGS_FRAG + 1] == 0
            && u16::from_be_bytes([h[fixed::UDP_DST_PORT], h[fixed::UDP_DST_PORT + 1]]) == self.s.udp_port
        {
            let total = usize::from(u16::from_be_bytes([h[fixed::IP_TOTAL_LEN], h[fixed::IP_TOTAL_LEN + 1]]));
            let udp_len = usize::from(u16::from_be_bytes([h[fixed::UDP_LENGTH], h[fixed::UDP_LENGTH + 1]]));
            let dst = Ipv4Addr::from(*h[fixed::IP_DST..].first_chunk::<4>().unwrap_or(&[0; 4]));
            if fixed::IP + total <= data.len()
                && total >= fixed::PAYLOAD - fixed::IP
                && udp_len == total - ipv4::HEADER_LEN
                && udp_len >= udp::HEADER_LEN
                && (self.collectors.iter().any(|c| c.ip == dst) || self.l2l3.is_local(dst))
            {
                // The header checksum over its five words.
                let w = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
                let ip = fixed::IP;
                if wire::checksum::fold(w(ip) + w(ip + 4) + w(ip + 8) + w(ip + 12) + w(ip + 16)) != 0xffff {
                    return md.dest = Dest::Drop(self.drops.malformed);
                }
                let src = Ipv4Addr::from(*h[fixed::IP_SRC..].first_chunk::<4>().unwrap_or(&[0; 4]));
                let len = data.len();
                if fixed::IP + total < len {
                    pkt.trim(len - fixed::IP - total);
                }
                return self.on_report(pkt, md, out, src, dst, fixed::PAYLOAD);
            }
        }
        let Ok(eth) = EthernetFrame::new_checked(data) else { return self.l2l3.ingress(pkt, md, out) };
        if eth.ethertype() != EtherType::IPV4 {
            return self.l2l3.ingress(pkt, md, out);
        }
        let l3 = eth.header_len();
        let Ok(ip) = Ipv4Packet::new_checked(&data[l3..]) else { return self.l2l3.ingress(pkt, md, out) };
        if ip.protocol() != protocol::UDP || ip.frag_offset() != 0 || ip.more_frags() {
            return self.l2l3.ingress(pkt, md, out);
        }
        let Ok(udp) = UdpPacket::new_checked(ip.payload()) else { return self.l2l3.ingress(pkt, md, out) };
        let (src, dst, dport) = (ip.src_addr(), ip.dst_addr(), udp.dst_port());
        let l4 = l3 + ip.header_len() + wire::udp::HEADER_LEN;
        let end = l3 + usize::from(ip.total_len());
        let len = data.len();
        if dport == self.s.udp_port
            && (self.collectors.iter().any(|c| c.ip == dst) || self.l2l3.is_local(dst))
        {
            if !ip.verify_checksum() {
                return md.dest = Dest::Drop(self.drops.malformed);
            }
            // Ethernet padding after the IP packet is not part of the report.
            if end < len {
                pkt.trim(len - end);
            }
            return self.on_report(pkt, md, out, src, dst, l4);
        }
        if dport == wire::udp::port::ROCE_V2 && self.l2l3.is_local(dst) {
            return self.on_roce(pkt, md, out, src, l3, l4);
        }
        self.l2l3.ingress(pkt, md, out)
    }

    fn egress<F: Frame>(&mut self, pkt: &mut F, md: &mut EgressMd) {
        self.l2l3.egress(pkt, md);
    }

    #[inline(always)]
    fn has_egress(&self) -> bool {
        self.l2l3.has_egress()
    }

    /// RDMA requests built from a template leave with a zero ICRC field; it is computed here,
    /// as the packet leaves, when the stores that wrote it are long done (computing it right
    /// after writing the packet waits for them). The QP is found by destination address and
    /// QPN; a frame of no template gets the general computation.
    #[inline]
    fn deparse<F: Frame>(&mut self, pkt: &mut F, _port: PortId) {
        let d = pkt.data();
        // Untagged IPv4/UDP to 4791 with a zero ICRC field: ours, unsealed.
        let Some(h) = d.first_chunk::<54>() else { return };
        if h[12..14] != [0x08, 0x00] || h[14] != 0x45 || h[23] != protocol::UDP || h[36..38] != [0x12, 0xb7] {
            return;
        }
        let n = d.len();
        if d[n - 4..] != [0, 0, 0, 0] {
            return;
        }
        let dst = Ipv4Addr::new(h[30], h[31], h[32], h[33]);
        let src = Ipv4Addr::new(h[26], h[27], h[28], h[29]);
        let qpn = u32::from_be_bytes([0, h[47], h[48], h[49]]);
        let opcode = Opcode(h[42]);
        let sealed = self
            .qps
            .iter()
            .find(|q| q.peer == dst && q.req.dest_qp() == qpn)
            .is_some_and(|q| q.seal(pkt.data_mut(), opcode));
        // Ours but of no template (the general builder leaves it sealed; this is a backstop):
        // fill it. RoCEv2 from others passing through is never touched.
        if !sealed && self.l2l3.is_local(src) {
            let _ = icrc::fill(&mut pkt.data_mut()[14..]);
        }
    }

    fn tick<F: Frame>(&mut self, now: u64, out: &mut Emitter<'_, F>) {
        self.started_at.get_or_insert(now);
        self.l2l3.tick(now, out);
        // Parked reports first: the first WRITE of a tick asks for an ACK when none was asked
        // for `ack_probe_us` (the requester's `ack_req_after_ns`), so the tail a tick before
        // left is acknowledged without a zero-length probe. Probes first, a metered reporter
        // trickling through the queue drew one per tick: 20,000 probes/s taking 40 % of a
        // 50 k packets/s collector's meter in the lab.
        self.unpark(now, out);
        for qi in 0..self.qps.len() {
            self.tick_qp(qi, now, out);
        }
        self.give_up_sketches(now, sketch::SKETCH_GIVE_UP_NS, out);
        if now.saturating_sub(self.holes_scan) >= HOLE_SCAN_NS {
            self.holes_scan = now;
            self.renack_holes(now, out);
        }
        self.send_progress(now, false, out);
        self.last_tick = now;
    }

    fn stop<F: Frame>(&mut self, now: u64, force: bool, out: &mut Emitter<'_, F>) -> bool {
        self.stop_qps(now, force, out)
    }

    fn control(&mut self, cmd: Command, now: u64) -> Result<String, String> {
        match cmd {
            Command::Show => Ok(self.show()),
            Command::Stats => Ok(self.stats_line()),
            Command::L2l3(c) => self.l2l3.control(c, now),
        }
    }

    fn parse_command(line: &str, ports: &[String]) -> Result<Command, String> {
        Command::parse(line, ports)
    }

    fn final_stats(&mut self) -> Option<String> {
        Some(self.stats_line())
    }

    fn resources(&self) -> &Resources {
        &self.resources
    }
}

#[cfg(test)]
mod tests;
