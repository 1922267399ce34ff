//! `dta_translator`: the DTA translator (seed `000`, design `DTA.md` "Translator behaviour"),
//! a switch program that turns DTA reports into RDMA operations on collectors' memory, on a
//! switch that otherwise forwards like `l2l3` (it is the collectors' ToR).
//!
//! * **Reports** (UDP port 40040) addressed to a collector (or to the translator) are parsed in
//!   the configured base form and translated:
//!   * Key-Write with redundancy N → N RDMA WRITEs, copy n of *this* report at slot
//!     `CRC32(key ‖ n) & (slots − 1)`; the slot is the key's checksum (little-endian) and the
//!     data;
//!   * Key-Increment → N FETCH_ADDs on 64-bit counters at the same slots;
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
//!   allows; the reporter is told to slow down (a NACK with our slow-down bit).
//! * **Loss from reporters**: retransmittable reports are sequence-checked per reporter; a gap
//!   drops the report and NACKs the last in-order number (paced per reporter), duplicates are
//!   dropped.
//!
//! Every report not translated is dropped under a named reason.

mod config;
pub mod decl;
mod qp;
pub mod state;

use std::net::{Ipv4Addr, SocketAddrV4};

use roce::cm::{ClientEvent, CmClient, CmConfig, ConnectError, ConnectParams, Metadata};
use roce::frames;
use roce::requester::{Op, PostError, Requester, RequesterConfig, Response, Transport};
use roce::responder::{Delivery, NoMemory, Responder};
use wire::dta::{self, BaseForm, DtaRepr, Format, NackRepr, Primitive, Priority};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::ibcm::CmMadRepr;
use wire::ipv4::{self, Ipv4Packet, protocol};
use wire::roce::{Opcode, RoceRepr, icrc};
use wire::stack::UdpFlow;
use wire::udp::{self, UdpPacket};

pub use self::config::{DtaCollector, DtaList, DtaPostcarder, DtaSection, DtaSketch};
use self::qp::{Phase, Qp, Store};
use self::state::{
    AppendBatcher, PostcardOutcome, PostcarderCache, ReporterSeq, SeqVerdict, SketchMerger, SketchOutcome,
};
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
}

#[derive(Debug, Clone, Copy)]
struct Drops {
    malformed: DropReason,
    unknown_opcode: DropReason,
    bad_redundancy: DropReason,
    no_list: DropReason,
    no_sketch: DropReason,
    no_store: DropReason,
    store_down: DropReason,
    window_full: DropReason,
    rate_low: DropReason,
    park_full: DropReason,
    seq_gap: DropReason,
    seq_duplicate: DropReason,
    bad_hop: DropReason,
    sketch_order: DropReason,
    sketch_shape: DropReason,
    roce_bad_icrc: DropReason,
    roce_malformed: DropReason,
    unknown_qp: DropReason,
}

/// A collector.
#[derive(Debug, Clone)]
struct CollectorState {
    name: String,
    ip: Ipv4Addr,
    /// Its QPs by store.
    keywrite: Option<usize>,
    keyincrement: Option<usize>,
    postcarder: Option<usize>,
    metered: bool,
}

/// A report waiting for the rate to allow it.
#[derive(Debug, Clone, Copy)]
struct Parked {
    bytes: [u8; MAX_REPORT],
    len: u16,
    dst: Ipv4Addr,
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
    /// A sketch column out of order: NACK with the last in-order column.
    SketchNack(u8),
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
    reporters: ExactTable<u32, ReporterSeq>,
    meters: MeterArray,
    parked: std::collections::VecDeque<Parked>,
    park_cap: usize,
    drops: Drops,
    stats: DtaStats,
    sketch_buf: Vec<u8>,
    scratch: Vec<u8>,
    last_tick: u64,
}

impl DtaTranslator {
    /// Build from the configuration: the `[l2l3]` part, then `[dta]`.
    pub fn build(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        let c = cfg.ctx();
        let l2l3 = L2l3::build(cfg, ctx)?;
        let d: &DtaSection = &cfg.section::<DtaSection>("dta")?.ok_or_else(|| {
            c.err("dta", format!("program {:?} needs a [dta] section with its collectors", Self::NAME))
        })?;
        let base = match d.base.as_deref().unwrap_or("long") {
            "long" => BaseForm::Long,
            "short" => BaseForm::Short,
            o => return Err(c.err("dta.base", format!("{o:?}; expected \"long\" or \"short\""))),
        };
        let kw_len = d.keywrite_data_len.unwrap_or(4);
        if ![4, 12, 28].contains(&kw_len) {
            return Err(c.err("dta.keywrite_data_len", format!("{kw_len}; expected 4, 12 or 28")));
        }
        let max_redundancy = d.max_redundancy.unwrap_or(4);
        if !(1..=8).contains(&max_redundancy) {
            return Err(c.err("dta.max_redundancy", format!("{max_redundancy} out of range 1..=8")));
        }
        let default_priority = match &d.default_priority {
            None => Priority::Low,
            Some(p) => parse_priority(p).ok_or_else(|| {
                c.err("dta.default_priority", format!("{p:?}; expected low, medium or high"))
            })?,
        };
        let source_ip = match &d.source_ip {
            None => None,
            Some(s) => Some(
                s.parse::<Ipv4Addr>()
                    .map_err(|_| c.err("dta.source_ip", format!("{s:?} is not an IPv4 address")))?,
            ),
        };
        let queue = d.queue.unwrap_or(3);
        if queue > 7 {
            return Err(c.err("dta.queue", format!("{queue} out of range 0..=7")));
        }
        let ecn = d.ecn.unwrap_or(0);
        if ecn > 2 {
            return Err(c.err("dta.ecn", format!("{ecn}: 0 (Not-ECT), 1 or 2 (ECT)")));
        }
        let window = d.window.unwrap_or(4096);
        if !(16..=1 << 22).contains(&window) {
            return Err(c.err("dta.window", format!("{window} out of range 16..=4194304")));
        }
        let us = |v: Option<u64>, default: u64| v.unwrap_or(default).saturating_mul(1000);
        let s = Settings {
            format: Format { base, keywrite_data_len: kw_len },
            max_redundancy,
            default_priority,
            udp_port: d.udp_port.unwrap_or(wire::udp::port::DTA),
            source_ip,
            queue,
            dscp: d.dscp.unwrap_or(26) & 0x3f,
            ecn,
            requester: RequesterConfig {
                transport: Transport::Rc,
                window,
                ack_req_every: d.ack_every.unwrap_or(32).clamp(1, window),
                timeout_ns: us(d.timeout_us, 1000).max(1000),
                retry_limit: d.retry_limit.unwrap_or(7),
                rnr_retry_limit: 7,
                max_payload: roce::requester::MAX_INLINE,
            },
            ack_probe_ns: us(d.ack_probe_us, 50),
            append_flush_ns: us(d.append_flush_us, 100),
            nack_interval_ns: us(d.nack_interval_us, 20),
            cm: CmConfig {
                response_timeout_ns: d.cm_timeout_ms.unwrap_or(200).max(1) * 1_000_000,
                max_req_tries: 4,
                backoff_initial_ns: d.cm_backoff_ms.unwrap_or(100).max(1) * 1_000_000,
                backoff_max_ns: 10_000_000_000,
            },
        };
        if d.collector.is_empty() {
            return Err(c.err("dta.collector", "at least one [[dta.collector]] is needed"));
        }
        let res = &mut ctx.resources;
        let mut meters = MeterArray::new(res, "dta_collector_meters", d.collector.len(), MeterUnit::Packets);
        let mut collectors = Vec::new();
        let mut qps: Vec<Qp> = Vec::new();
        let mut lists = ExactTable::new(res, decl::lists());
        let mut sketches = ExactTable::new(res, decl::sketches());
        let ca_guid = cfg.ports.first().map_or(0, |p| {
            let m = p.mac.0;
            u64::from_be_bytes([m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]])
        });
        let new_qp =
            |qps: &Vec<Qp>, name: String, collector: usize, peer: Ipv4Addr, port: u16, store: Store| {
                let local_qpn = QPN_BASE + qps.len() as u32;
                let params = ConnectParams {
                    local_ip: source_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
                    remote_ip: peer,
                    port,
                    local_qpn,
                    start_psn: 0,
                    ca_guid,
                    path_mtu: 3,
                    transport: Transport::Rc,
                    src_port: 0xd000 | (local_qpn as u16 & 0x0fff),
                };
                let req = Requester::new(store.requester_config(s.requester), 0, 0);
                Qp {
                    name,
                    collector,
                    peer,
                    store,
                    local_qpn,
                    cm: CmClient::new(s.cm, params, local_qpn << 8),
                    phase: Phase::Connecting,
                    req,
                    resp: Responder::new(Transport::Rc, 0),
                    meta: Metadata { va: 0, len: 0, rkey: 0 },
                    slots: 0,
                    hop: None,
                    resolved_at: 0,
                    // Until the path is resolved (set_path).
                    flow: UdpFlow::host_udp(
                        EthernetAddress([0; 6]),
                        EthernetAddress([0; 6]),
                        SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
                        SocketAddrV4::new(peer, wire::udp::port::ROCE_V2),
                    ),
                    tmpl: None,
                    ud_psn: 0,
                    attempts: 0,
                }
            };
        for (i, col) in d.collector.iter().enumerate() {
            let key = format!("dta.collector[{i}]");
            let ip: Ipv4Addr = col
                .ip
                .parse()
                .map_err(|_| c.err(format!("{key}.ip"), format!("{:?} is not an IPv4 address", col.ip)))?;
            if collectors.iter().any(|x: &CollectorState| x.ip == ip) {
                return Err(c.err(format!("{key}.ip"), format!("{ip} is listed twice")));
            }
            let name = if col.name.is_empty() { format!("c{i}") } else { col.name.clone() };
            let metered = match col.rate {
                None | Some(0) => false,
                Some(rate) => {
                    let peak = col.peak.unwrap_or(rate);
                    if peak < rate {
                        return Err(c.err(format!("{key}.peak"), format!("{peak} below the rate {rate}")));
                    }
                    let burst = col.burst.unwrap_or(256).max(1);
                    let u = u64::from(UNITS);
                    meters.configure(
                        i,
                        MeterConfig { cir: rate * u, cbs: burst * u, pir: peak * u, pbs: burst * u },
                        0,
                    );
                    true
                }
            };
            let mut st = CollectorState {
                name: name.clone(),
                ip,
                keywrite: None,
                keyincrement: None,
                postcarder: None,
                metered,
            };
            if let Some(port) = col.keywrite {
                st.keywrite = Some(qps.len());
                let store = Store::KeyWrite { slot_len: dta::layout::keywrite_slot_len(kw_len) };
                qps.push(new_qp(&qps, format!("{name}/keywrite"), i, ip, port, store));
            }
            if let Some(port) = col.keyincrement {
                st.keyincrement = Some(qps.len());
                qps.push(new_qp(&qps, format!("{name}/keyincrement"), i, ip, port, Store::KeyIncrement));
            }
            if let Some(pc) = &col.postcarder {
                let hops = pc.hops.unwrap_or(5);
                if !(1..=5).contains(&hops) {
                    return Err(c.err(format!("{key}.postcarder.hops"), format!("{hops} out of range 1..=5")));
                }
                let size = pc.cache.unwrap_or(32768);
                if !size.is_power_of_two() || size > 1 << 24 {
                    return Err(c.err(
                        format!("{key}.postcarder.cache"),
                        format!("{size}: a power of two up to 2^24"),
                    ));
                }
                st.postcarder = Some(qps.len());
                let cache = PostcarderCache::new(size, hops);
                qps.push(new_qp(
                    &qps,
                    format!("{name}/postcarder"),
                    i,
                    ip,
                    pc.port,
                    Store::Postcarder(cache),
                ));
            }
            for (j, l) in col.append.iter().enumerate() {
                let lkey = format!("{key}.append[{j}]");
                let batch = l.batch.unwrap_or(4);
                if ![1, 2, 4, 8, 16].contains(&batch) {
                    return Err(c.err(format!("{lkey}.batch"), format!("{batch}; expected 1, 2, 4, 8 or 16")));
                }
                if lists.get(&l.list).is_some() {
                    return Err(c.err(format!("{lkey}.list"), format!("list {} is configured twice", l.list)));
                }
                lists.insert(l.list, qps.len()).map_err(|e| c.err(lkey.clone(), e.to_string()))?;
                let store = Store::Append { list: l.list, batcher: AppendBatcher::new(batch as usize, 1) };
                qps.push(new_qp(&qps, format!("{name}/append[{}]", l.list), i, ip, l.port, store));
            }
            for (j, sk) in col.sketch.iter().enumerate() {
                let skey = format!("{key}.sketch[{j}]");
                let batch = sk.batch.unwrap_or(4);
                let bytes = batch as usize * usize::from(sk.rows) * 4;
                if sk.rows == 0 || sk.columns == 0 || sk.reporters.is_empty() || batch == 0 {
                    return Err(c.err(skey, "rows, columns, batch and reporters must not be zero or empty"));
                }
                if bytes > roce::requester::MAX_INLINE {
                    return Err(c.err(
                        format!("{skey}.batch"),
                        format!(
                            "{batch} columns x {} rows x 4 B = {bytes} B, above {} B per write",
                            sk.rows,
                            roce::requester::MAX_INLINE
                        ),
                    ));
                }
                if sketches.get(&sk.id).is_some() {
                    return Err(c.err(format!("{skey}.id"), format!("sketch {} is configured twice", sk.id)));
                }
                sketches.insert(sk.id, qps.len()).map_err(|e| c.err(skey.clone(), e.to_string()))?;
                let merger = SketchMerger::new(sk.rows, sk.columns, &sk.reporters, batch);
                let store = Store::Sketch { id: sk.id, merger };
                qps.push(new_qp(&qps, format!("{name}/sketch[{}]", sk.id), i, ip, sk.port, store));
            }
            collectors.push(st);
        }
        if qps.is_empty() {
            return Err(c.err("dta.collector", "no collector has a data structure (keywrite, append, …)"));
        }
        let kw_collectors =
            collectors.iter().enumerate().filter(|(_, c)| c.keywrite.is_some()).map(|(i, _)| i).collect();
        let ki_collectors =
            collectors.iter().enumerate().filter(|(_, c)| c.keyincrement.is_some()).map(|(i, _)| i).collect();
        let reporters = ExactTable::new(res, decl::reporter_seq(d.reporters.unwrap_or(65536).max(1)));
        let park_cap = d.park.unwrap_or(4096);
        let state_bytes: usize = qps
            .iter()
            .map(|q| match &q.store {
                Store::Postcarder(c) => c.bytes(),
                Store::Sketch { merger, .. } => merger.bytes(),
                _ => 0,
            })
            .sum();
        let qp_bytes = qps
            .iter()
            .map(|q| (s.requester.window as usize) * (q.store.requester_config(s.requester).max_payload + 40))
            .sum::<usize>()
            + state_bytes;
        decl::declare(
            res,
            decl::parser(s.format.base, s.format.keywrite_data_len, s.udp_port),
            collectors.len(),
            qps.len(),
            qp_bytes,
            s.requester.window,
            park_cap,
        );
        let dr = &mut ctx.drops;
        let drops = Drops {
            malformed: dr.declare("dta_malformed"),
            unknown_opcode: dr.declare("dta_unknown_opcode"),
            bad_redundancy: dr.declare("dta_bad_redundancy"),
            no_list: dr.declare("dta_no_list"),
            no_sketch: dr.declare("dta_no_sketch"),
            no_store: dr.declare("dta_no_store"),
            store_down: dr.declare("dta_store_down"),
            window_full: dr.declare("dta_window_full"),
            rate_low: dr.declare("dta_rate_limited"),
            park_full: dr.declare("dta_park_full"),
            seq_gap: dr.declare("dta_seq_gap"),
            seq_duplicate: dr.declare("dta_seq_duplicate"),
            bad_hop: dr.declare("dta_bad_hop"),
            sketch_order: dr.declare("dta_sketch_out_of_order"),
            sketch_shape: dr.declare("dta_sketch_shape"),
            roce_bad_icrc: dr.declare("roce_bad_icrc"),
            roce_malformed: dr.declare("roce_malformed"),
            unknown_qp: dr.declare("roce_unknown_qp"),
        };
        let resources = ctx.resources_after_l2l3(&l2l3);
        let mut list_direct = vec![u16::MAX; 1024];
        for (id, qi) in lists.iter() {
            if let Some(slot) = list_direct.get_mut(*id as usize) {
                *slot = *qi as u16;
            }
        }
        Ok(Self {
            l2l3,
            list_direct,
            resources,
            s,
            collectors,
            kw_collectors,
            ki_collectors,
            qps,
            lists,
            sketches,
            reporters,
            meters,
            parked: std::collections::VecDeque::with_capacity(park_cap),
            park_cap,
            drops,
            stats: DtaStats::default(),
            sketch_buf: Vec::with_capacity(roce::requester::MAX_INLINE),
            scratch: Vec::with_capacity(MAX_REPORT),
            last_tick: 0,
        })
    }

    /// Counters.
    pub fn stats(&self) -> DtaStats {
        self.stats
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

    /// Charge `units` to collector `c`'s meter for a report of `prio`.
    #[inline(always)]
    fn admit(&mut self, c: usize, units: u32, prio: Priority, now: u64) -> Result<(), Reject> {
        if !self.collectors[c].metered {
            return Ok(());
        }
        match (self.meters.execute(c, now, units), prio) {
            (Color::Green, _) | (Color::Yellow, Priority::Medium | Priority::High) => Ok(()),
            (Color::Yellow | Color::Red, Priority::Low | Priority::Medium) => {
                Err(Reject::Rate { park: false })
            }
            (_, Priority::High) => Err(Reject::Rate { park: true }),
        }
    }

    /// Post one request on QP `qi` and send it: into `first` if given (it is then used up),
    /// otherwise through the emitter. Returns the port when `first` was used.
    #[inline(always)]
    fn send<F: Frame>(
        &mut self,
        qi: usize,
        now: u64,
        op: Op,
        payload: &[u8],
        first: &mut First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Result<Option<PortId>, Reject> {
        let q = &mut self.qps[qi];
        let post = match q.req.post(now, op, payload, false) {
            Ok(p) => p,
            Err(PostError::WindowFull) => return Err(Reject::Drop(self.drops.window_full)),
            Err(_) => return Err(Reject::Drop(self.drops.store_down)),
        };
        self.stats.rdma_packets += 1;
        if !post.send_now {
            // A resend is under way; the cursor sends it in order.
            return Ok(None);
        }
        let Some(hop) = q.hop else { return Ok(None) };
        let q = &self.qps[qi];
        match std::mem::replace(first, First::None) {
            First::InPlace(f) => {
                if q.build(f, post.psn, post.ack_req, &op, payload) {
                    return Ok(Some(hop.port));
                }
                Ok(None)
            }
            First::None => {
                out.emit(Dest::Port(hop.port), self.s.queue, |f| {
                    q.build(f, post.psn, post.ack_req, &op, payload)
                });
                Ok(None)
            }
        }
    }

    /// The collector for a Key-Write or Key-Increment report to `dst`.
    #[inline(always)]
    fn key_collector(&self, dst: Ipv4Addr, key: u32, increment: bool) -> Option<usize> {
        let list = if increment { &self.ki_collectors } else { &self.kw_collectors };
        let has =
            |c: &CollectorState| if increment { c.keyincrement.is_some() } else { c.keywrite.is_some() };
        if let Some(i) = self.collectors.iter().position(|c| c.ip == dst && has(c)) {
            return Some(i);
        }
        (!list.is_empty()).then(|| list[dta::keywrite_collector(key, list.len())])
    }

    /// A QP ready to write, or why not.
    #[inline(always)]
    fn ready_qp(&self, qi: Option<usize>, missing: DropReason) -> Result<usize, Reject> {
        let qi = qi.ok_or(Reject::Drop(missing))?;
        if self.qps[qi].phase != Phase::Ready || self.qps[qi].hop.is_none() {
            return Err(Reject::Drop(self.drops.store_down));
        }
        Ok(qi)
    }

    /// Translate one parsed report. `first`, if given, is the report's own buffer, reused for
    /// the first RDMA packet.
    fn translate<F: Frame>(
        &mut self,
        now: u64,
        dst: Ipv4Addr,
        r: &DtaRepr<'_>,
        mut first: First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Translated {
        match self.translate_inner(now, dst, r, &mut first, out) {
            Ok(Some(port)) => Translated::Sent(port),
            Ok(None) => Translated::Absorbed,
            Err(e) => Translated::Rejected(e),
        }
    }

    fn translate_inner<F: Frame>(
        &mut self,
        now: u64,
        dst: Ipv4Addr,
        r: &DtaRepr<'_>,
        first: &mut First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Result<Option<PortId>, Reject> {
        let prio = r.seq.map_or(self.s.default_priority, |s| s.priority);
        let imm = r.immediate;
        {
            match r.primitive {
                Primitive::KeyWrite { redundancy, key, data } => {
                    if redundancy == 0 || redundancy > self.s.max_redundancy {
                        return Err(Reject::Drop(self.drops.bad_redundancy));
                    }
                    let c = self.key_collector(dst, key, false).ok_or(Reject::Drop(self.drops.no_store))?;
                    let qi = self.ready_qp(self.collectors[c].keywrite, self.drops.no_store)?;
                    if self.qps[qi].req.outstanding() + u32::from(redundancy) > self.s.requester.window {
                        return Err(Reject::Drop(self.drops.window_full));
                    }
                    self.admit(c, UNITS * u32::from(redundancy), prio, now)?;
                    let Store::KeyWrite { slot_len } = self.qps[qi].store else { unreachable!() };
                    let hash = dta::KeyHash::new(key);
                    let mut slot = [0u8; 32];
                    dta::layout::keywrite_slot(&hash, data, &mut slot[..slot_len]);
                    let (meta, slots) = (self.qps[qi].meta, self.qps[qi].slots);
                    let mut port = None;
                    for n in 0..redundancy {
                        let s = dta::layout::key_slot_index(&hash, n, slots);
                        let op = Op::Write {
                            va: meta.va + s * slot_len as u64,
                            rkey: meta.rkey,
                            imm: (imm && n == 0).then_some(key),
                        };
                        port = port.or(self.send(qi, now, op, &slot[..slot_len], first, out)?);
                    }
                    self.stats.reports[0] += 1;
                    Ok(port)
                }
                Primitive::KeyIncrement { redundancy, key, counter } => {
                    if redundancy == 0 || redundancy > self.s.max_redundancy {
                        return Err(Reject::Drop(self.drops.bad_redundancy));
                    }
                    let c = self.key_collector(dst, key, true).ok_or(Reject::Drop(self.drops.no_store))?;
                    let qi = self.ready_qp(self.collectors[c].keyincrement, self.drops.no_store)?;
                    let ops = u32::from(redundancy) + u32::from(imm);
                    if self.qps[qi].req.outstanding() + ops > self.s.requester.window {
                        return Err(Reject::Drop(self.drops.window_full));
                    }
                    self.admit(c, UNITS * ops, prio, now)?;
                    let (meta, slots) = (self.qps[qi].meta, self.qps[qi].slots);
                    let hash = dta::KeyHash::new(key);
                    let mut port = None;
                    for n in 0..redundancy {
                        let s = dta::layout::key_slot_index(&hash, n, slots);
                        let op = Op::FetchAdd { va: meta.va + s * 8, rkey: meta.rkey, add: counter };
                        port = port.or(self.send(qi, now, op, &[], first, out)?);
                    }
                    if imm {
                        let op = Op::Write { va: meta.va, rkey: meta.rkey, imm: Some(key) };
                        port = port.or(self.send(qi, now, op, &[], first, out)?);
                    }
                    self.stats.reports[2] += 1;
                    Ok(port)
                }
                Primitive::Append { list_id, data } => {
                    let qi = match self.list_direct.get(list_id as usize) {
                        Some(&i) => (i != u16::MAX).then_some(usize::from(i)),
                        None => self.lists.lookup(&list_id).copied(),
                    };
                    let qi = self.ready_qp(qi, self.drops.no_list)?;
                    let window = self.s.requester.window;
                    let q = &mut self.qps[qi];
                    if q.req.outstanding() + 2 > window {
                        return Err(Reject::Drop(self.drops.window_full));
                    }
                    let c = q.collector;
                    let Store::Append { batcher, .. } = &mut q.store else { unreachable!() };
                    let cost = UNITS / batcher.batch() as u32;
                    if self.collectors[c].metered {
                        self.admit(c, cost, prio, now)?;
                    }
                    let Store::Append { batcher, .. } = &mut self.qps[qi].store else { unreachable!() };
                    let ready = batcher.push(now, data, imm);
                    self.stats.reports[1] += 1;
                    if ready { self.flush_append(qi, now, first, out) } else { Ok(None) }
                }
                Primitive::Postcarder { key, hop, data } => {
                    let c_ip = self.collectors.iter().position(|c| c.ip == dst && c.postcarder.is_some());
                    let c = c_ip
                        .or_else(|| self.collectors.iter().position(|c| c.postcarder.is_some()))
                        .ok_or(Reject::Drop(self.drops.no_store))?;
                    let qi = self.ready_qp(self.collectors[c].postcarder, self.drops.no_store)?;
                    let Store::Postcarder(cache) = &mut self.qps[qi].store else { unreachable!() };
                    let path = match cache.add(key, hop, data, imm) {
                        PostcardOutcome::BadHop => return Err(Reject::Drop(self.drops.bad_hop)),
                        PostcardOutcome::Cached => None,
                        PostcardOutcome::Complete(p) | PostcardOutcome::Evicted(p) => Some(p),
                    };
                    self.stats.reports[3] += 1;
                    // A path costs one packet whenever it is written; charge it then.
                    let Some(p) = path else { return Ok(None) };
                    self.admit(c, UNITS, prio, now)?;
                    let (meta, slots) = (self.qps[qi].meta, self.qps[qi].slots);
                    let mut buf = [0u8; dta::layout::POSTCARDER_WRITE_LEN];
                    dta::layout::postcarder_slot(p.key, &p.hops, &mut buf);
                    let s = dta::layout::postcarder_slot_index(p.key, slots);
                    let op = Op::Write {
                        va: meta.va + s * dta::layout::POSTCARDER_SLOT_LEN as u64,
                        rkey: meta.rkey,
                        imm: p.imm.then_some(p.key),
                    };
                    self.send(qi, now, op, &buf, first, out)
                }
                Primitive::SketchMerge { sketch_id, reporter_id, column, op, counters } => {
                    let qi =
                        self.ready_qp(self.sketches.lookup(&sketch_id).copied(), self.drops.no_sketch)?;
                    let Store::Sketch { merger, .. } = &mut self.qps[qi].store else { unreachable!() };
                    match merger.merge(reporter_id, column, op, counters) {
                        SketchOutcome::Merged => {}
                        SketchOutcome::OutOfOrder { last } | SketchOutcome::TooEarly { last } => {
                            return Err(Reject::SketchNack(last as u8));
                        }
                        SketchOutcome::UnknownReporter | SketchOutcome::BadShape => {
                            return Err(Reject::Drop(self.drops.sketch_shape));
                        }
                    }
                    self.stats.reports[4] += 1;
                    self.flush_sketch(qi, now, imm, first, out)
                }
            }
        }
    }

    /// Write a list's waiting batch.
    fn flush_append<F: Frame>(
        &mut self,
        qi: usize,
        now: u64,
        first: &mut First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Result<Option<PortId>, Reject> {
        let (meta, _) = (self.qps[qi].meta, self.qps[qi].slots);
        let Store::Append { list, batcher } = &mut self.qps[qi].store else { return Ok(None) };
        let list = *list;
        let (writes, imm) = batcher.take();
        // Copy out: `send` needs the QP mutably.
        let mut runs: [(u64, usize, [u8; 64]); 2] = [(0, 0, [0; 64]); 2];
        let mut n = 0;
        for w in writes.into_iter().flatten() {
            let (slot, entries) = (w.slot, w.entries);
            runs[n].0 = slot;
            runs[n].1 = entries.len() * 4;
            for (j, e) in entries.iter().enumerate() {
                runs[n].2[4 * j..4 * j + 4].copy_from_slice(&e.to_le_bytes());
            }
            n += 1;
        }
        let mut port = None;
        for (k, (slot, len, bytes)) in runs[..n].iter().enumerate() {
            let op = Op::Write {
                va: meta.va + slot * dta::layout::APPEND_ENTRY_LEN as u64,
                rkey: meta.rkey,
                imm: (imm && k + 1 == n).then_some(list),
            };
            port = port.or(self.send(qi, now, op, &bytes[..*len], first, out)?);
        }
        Ok(port)
    }

    /// Write every complete batch of a sketch.
    fn flush_sketch<F: Frame>(
        &mut self,
        qi: usize,
        now: u64,
        imm: bool,
        first: &mut First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Result<Option<PortId>, Reject> {
        let mut port = None;
        loop {
            let meta = self.qps[qi].meta;
            let mut buf = std::mem::take(&mut self.sketch_buf);
            let Store::Sketch { id, merger } = &mut self.qps[qi].store else { return Ok(None) };
            let (id, rows) = (*id, merger.rows() as u16);
            let Some((start, bytes)) = merger.take_batch(&mut buf) else {
                self.sketch_buf = buf;
                return Ok(port);
            };
            let c = self.qps[qi].collector;
            // Batches are written whatever the rate: their columns are merged already.
            if self.collectors[c].metered {
                let _ = self.meters.execute(c, now, UNITS);
            }
            let op = Op::Write {
                va: meta.va + dta::layout::sketch_column_offset(start, rows),
                rkey: meta.rkey,
                imm: imm.then_some((u32::from(id) << 16) | (start & 0xffff)),
            };
            let len = bytes.len();
            let r = self.send(qi, now, op, &buf[..len], first, out);
            self.sketch_buf = buf;
            port = port.or(r?);
        }
    }

    /// Turn `pkt` (a report from `reporter`) into a DTA NACK back to it: `nack` asks for the
    /// reports after `seqnum`, `slow_down` asks for a lower rate.
    fn make_nack<F: Frame>(
        &mut self,
        pkt: &mut F,
        md: &mut IngressMd,
        seqnum: u8,
        nack: bool,
        slow_down: bool,
    ) {
        let data = pkt.data();
        let Ok(eth) = EthernetFrame::new_checked(data) else {
            return md.dest = Dest::Drop(builtin::MALFORMED);
        };
        let l2 = eth.header_len();
        let Ok(ip) = Ipv4Packet::new_checked(&data[l2..]) else {
            return md.dest = Dest::Drop(builtin::MALFORMED);
        };
        let Ok(udp) = UdpPacket::new_checked(ip.payload()) else {
            return md.dest = Dest::Drop(builtin::MALFORMED);
        };
        let flow = UdpFlow {
            vlan: eth.vlan(),
            dscp: ip.dscp(),
            ..UdpFlow::host_udp(
                eth.dst_addr(),
                eth.src_addr(),
                SocketAddrV4::new(ip.dst_addr(), udp.dst_port()),
                SocketAddrV4::new(ip.src_addr(), NACK_PORT),
            )
        };
        let r = NackRepr { seqnum, nack, slow_down };
        pkt.reset();
        let ok = pkt.append(wire::ethernet::MIN_FRAME_LEN.max(flow.headers_len() + 2)).is_some_and(|b| {
            b.fill(0);
            flow.emit_with(2, false, b, |p| r.emit(p)).is_ok()
        });
        if !ok {
            return md.dest = Dest::Drop(builtin::MALFORMED);
        }
        if nack {
            self.stats.nacks += 1;
        }
        if slow_down {
            self.stats.slow_downs += 1;
        }
        md.dest = Dest::Port(md.ingress_port);
        md.qid = 7;
    }

    /// A DTA report arrived in `pkt`; `l4` is the offset of its UDP payload.
    fn on_report<F: Frame>(
        &mut self,
        pkt: &mut F,
        md: &mut IngressMd,
        out: &mut Emitter<'_, F>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        l4: usize,
    ) {
        let format = self.s.format;
        // What the report carries is taken out of its buffer (which becomes the first RDMA
        // packet): plain fields by value, Key-Write data into `kw`; sketch counters into the
        // scratch buffer (kept, no allocation) on the sketch's own path.
        let mut kw = [0u8; 28];
        let r = match DtaRepr::parse(&pkt.data()[l4..], format) {
            Ok(r) => r,
            Err(wire::Error::Unsupported { field: "dta.opcode", .. }) => {
                return md.dest = Dest::Drop(self.drops.unknown_opcode);
            }
            Err(_) => return md.dest = Dest::Drop(self.drops.malformed),
        };
        // Only a sketch's counters need the scratch buffer; other reports get an empty Vec
        // (no allocation).
        let sketch = matches!(r.primitive, Primitive::SketchMerge { .. });
        let mut buf = if sketch { std::mem::take(&mut self.scratch) } else { Vec::new() };
        let r = detach(r, &mut kw, &mut buf);
        self.on_parsed(pkt, md, out, src, dst, &r);
        if sketch {
            self.scratch = buf;
        }
    }

    fn on_parsed<F: Frame>(
        &mut self,
        pkt: &mut F,
        md: &mut IngressMd,
        out: &mut Emitter<'_, F>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        r: &DtaRepr<'_>,
    ) {
        let now = md.ingress_ts;
        // Sequence tracking of retransmittable reports.
        if let Some(seq) = r.seq.filter(|s| s.retransmittable) {
            let key = src.to_bits();
            let verdict = match self.reporters.lookup_mut(&key) {
                Some(t) => t.check(seq.seqnum, now, self.s.nack_interval_ns),
                None => {
                    let mut t = ReporterSeq::first(seq.seqnum);
                    let v = t.check(seq.seqnum, now, self.s.nack_interval_ns);
                    // A full table tracks no new reporters: their reports pass unchecked.
                    let _ = self.reporters.insert(key, t);
                    v
                }
            };
            match verdict {
                SeqVerdict::InOrder => {}
                SeqVerdict::Duplicate => return md.dest = Dest::Drop(self.drops.seq_duplicate),
                SeqVerdict::Gap { last, nack } => {
                    if nack {
                        // The report is not translated (counted); its buffer carries the NACK.
                        out.count_drop(self.drops.seq_gap);
                        return self.make_nack(pkt, md, last, true, false);
                    }
                    return md.dest = Dest::Drop(self.drops.seq_gap);
                }
            }
        }
        match self.translate(now, dst, r, First::InPlace(pkt), out) {
            Translated::Sent(port) => {
                md.dest = Dest::Port(port);
                md.qid = self.s.queue;
            }
            Translated::Absorbed => md.dest = Dest::Consume,
            Translated::Rejected(Reject::Drop(reason)) => md.dest = Dest::Drop(reason),
            Translated::Rejected(Reject::SketchNack(last)) => {
                let notify = self.notify_ok(src, now);
                if notify {
                    out.count_drop(self.drops.sketch_order);
                    self.make_nack(pkt, md, last, true, false);
                } else {
                    md.dest = Dest::Drop(self.drops.sketch_order);
                }
            }
            Translated::Rejected(Reject::Rate { park }) => {
                let parked = park && self.park(r, dst);
                if park && !parked {
                    md.dest = Dest::Drop(self.drops.park_full);
                } else if !parked {
                    md.dest = Dest::Drop(self.drops.rate_low);
                } else {
                    md.dest = Dest::Consume;
                }
                if self.notify_ok(src, now) {
                    let seqnum = r.seq.map_or(0, |s| s.seqnum);
                    // The report's buffer (copied already if parked) tells the reporter; a
                    // dropped report is still counted under its reason.
                    if let Dest::Drop(reason) = md.dest {
                        out.count_drop(reason);
                    }
                    self.make_nack(pkt, md, seqnum, false, true);
                }
            }
        }
    }

    /// Whether a message to reporter `src` may go now (paced per reporter).
    fn notify_ok(&mut self, src: Ipv4Addr, now: u64) -> bool {
        let key = src.to_bits();
        let interval = self.s.nack_interval_ns;
        match self.reporters.lookup_mut(&key) {
            Some(t) => t.may_notify(now, interval),
            None => {
                let mut t = ReporterSeq::first(0);
                let ok = t.may_notify(now, interval);
                let _ = self.reporters.insert(key, t);
                ok
            }
        }
    }

    /// Keep a high-priority report for later; `false` if the queue is full.
    fn park(&mut self, r: &DtaRepr<'_>, dst: Ipv4Addr) -> bool {
        if self.parked.len() >= self.park_cap {
            return false;
        }
        let mut p = Parked { bytes: [0; MAX_REPORT], len: r.buffer_len() as u16, dst };
        if r.emit(&mut p.bytes).is_err() {
            return false;
        }
        self.parked.push_back(p);
        self.stats.parked += 1;
        true
    }

    /// Translate parked reports while the rate allows.
    fn unpark<F: Frame>(&mut self, now: u64, out: &mut Emitter<'_, F>) {
        while let Some(p) = self.parked.front().copied() {
            let Ok(r) = DtaRepr::parse(&p.bytes[..usize::from(p.len)], self.s.format) else {
                self.parked.pop_front();
                continue;
            };
            match self.translate(now, p.dst, &r, First::None, out) {
                Translated::Rejected(Reject::Rate { .. }) => return,
                _ => {
                    self.parked.pop_front();
                    self.stats.unparked += 1;
                }
            }
        }
    }

    /// A RoCEv2 packet for the translator (from a collector); `l3` is the IPv4 header's offset.
    fn on_roce<F: Frame>(
        &mut self,
        pkt: &mut F,
        md: &mut IngressMd,
        out: &mut Emitter<'_, F>,
        src: Ipv4Addr,
        l3: usize,
        l4: usize,
    ) {
        let now = md.ingress_ts;
        let data = pkt.data();
        let ip_len = Ipv4Packet::new_unchecked(&data[l3..]).total_len() as usize;
        let ip = &data[l3..(l3 + ip_len).min(data.len())];
        if icrc::verify(ip).is_err() {
            return md.dest = Dest::Drop(self.drops.roce_bad_icrc);
        }
        let Ok(r) = RoceRepr::parse(&data[l4.min(l3 + ip.len())..l3 + ip.len()]) else {
            return md.dest = Dest::Drop(self.drops.roce_malformed);
        };
        md.dest = Dest::Consume;
        if frames::is_cm_mad(&r) {
            let Ok(mad) = CmMadRepr::parse(r.payload) else {
                return md.dest = Dest::Drop(self.drops.roce_malformed);
            };
            self.on_mad(now, src, &mad, out);
            return;
        }
        let qpn = r.bth.dest_qp;
        let Some(qi) = qpn.checked_sub(QPN_BASE).map(|i| i as usize).filter(|&i| i < self.qps.len()) else {
            return md.dest = Dest::Drop(self.drops.unknown_qp);
        };
        if self.qps[qi].peer != src || self.qps[qi].phase == Phase::Connecting {
            return md.dest = Dest::Drop(self.drops.unknown_qp);
        }
        match r.bth.opcode {
            Opcode::RC_ACKNOWLEDGE | Opcode::RC_ATOMIC_ACKNOWLEDGE => {
                let Some(aeth) = r.ext.aeth else { return md.dest = Dest::Drop(self.drops.roce_malformed) };
                self.stats.acks += 1;
                match self.qps[qi].req.handle_packet(now, &r.bth, &aeth) {
                    Response::Fatal(e) => {
                        self.reset(qi, now, ConnectError::Disconnected, &format!("{e}"), out)
                    }
                    Response::Retransmit { .. } | Response::RnrWait { .. } => self.resend(qi, now, out),
                    Response::Acked { .. } | Response::Ignored => {}
                }
            }
            Opcode::RC_SEND_ONLY | Opcode::RC_SEND_ONLY_WITH_IMMEDIATE => {
                let q = &mut self.qps[qi];
                let o = q.resp.handle_packet(
                    r.bth.opcode,
                    r.bth.psn,
                    r.bth.ack_req,
                    &r.ext,
                    r.payload,
                    &mut NoMemory,
                );
                if let Some(ack) = frames::reply(q.req.dest_qp(), &o.reply) {
                    let q = &self.qps[qi];
                    if let Some(h) = q.hop {
                        out.emit(Dest::Port(h.port), 7, |f| q.build_repr(f, ack));
                    }
                }
                if let Delivery::Send { data, .. } = o.delivery {
                    self.on_metadata(qi, data);
                }
            }
            _ => md.dest = Dest::Drop(self.drops.roce_malformed),
        }
    }

    /// The collector's metadata SEND on QP `qi`.
    fn on_metadata(&mut self, qi: usize, data: &[u8]) {
        let q = &mut self.qps[qi];
        let Some(meta) = Metadata::decode(data) else {
            tracing::warn!(qp = %q.name, len = data.len(), "a SEND that is not the 16-byte metadata");
            return;
        };
        if q.phase == Phase::Ready && meta == q.meta {
            return;
        }
        q.meta = meta;
        q.slots = q.slots_for(meta.len);
        let slots = q.slots;
        match &mut q.store {
            Store::Append { batcher, .. } => batcher.set_slots(slots),
            Store::Sketch { merger, .. } if slots * (merger.rows() as u64 * 4) < u64::from(meta.len) / 2 => {}
            _ => {}
        }
        if slots == 0 {
            tracing::warn!(qp = %q.name, len = meta.len, "the collector's region holds no slot");
            return;
        }
        q.phase = Phase::Ready;
        q.build_templates();
        tracing::info!(qp = %q.name, va = meta.va, len = meta.len, rkey = meta.rkey, slots, "collector region ready");
    }

    /// A CM MAD from `src`.
    fn on_mad<F: Frame>(&mut self, now: u64, src: Ipv4Addr, mad: &CmMadRepr, out: &mut Emitter<'_, F>) {
        for qi in 0..self.qps.len() {
            if self.qps[qi].peer != src {
                continue;
            }
            let o = self.qps[qi].cm.handle_packet(now, mad);
            if o.send.is_none() && o.event.is_none() {
                continue;
            }
            if let Some(m) = o.send {
                self.send_mad(qi, &m, out);
            }
            match o.event {
                Some(ClientEvent::Established(conn)) => {
                    let q = &mut self.qps[qi];
                    q.req = Requester::new(
                        q.store.requester_config(self.s.requester),
                        conn.remote_qpn,
                        conn.local_psn,
                    );
                    q.resp = Responder::new(Transport::Rc, conn.remote_psn);
                    q.phase = Phase::Metadata;
                    self.stats.connects += 1;
                    tracing::info!(qp = %q.name, collector = %q.peer, remote_qpn = conn.remote_qpn, "connected; waiting for the region");
                }
                Some(ClientEvent::Failed(why)) => {
                    let q = &mut self.qps[qi];
                    if q.phase != Phase::Connecting {
                        self.stats.resets += 1;
                    }
                    q.phase = Phase::Connecting;
                    q.tmpl = None;
                    tracing::warn!(qp = %q.name, collector = %q.peer, "connection: {why}; retrying with backoff");
                }
                None => {}
            }
            return;
        }
    }

    fn send_mad<F: Frame>(&mut self, qi: usize, mad: &CmMadRepr, out: &mut Emitter<'_, F>) {
        let q = &mut self.qps[qi];
        let Some(h) = q.hop else { return };
        let mut b = [0u8; wire::ibcm::MAD_LEN];
        if mad.emit(&mut b).is_err() {
            return;
        }
        let psn = q.ud_psn;
        q.ud_psn = wire::roce::psn_add(psn, 1);
        let q = &self.qps[qi];
        out.emit(Dest::Port(h.port), 7, |f| q.build_repr(f, frames::cm_mad(psn, &b)));
    }

    /// The QP failed: drop the connection (DREQ) and connect again after the backoff.
    fn reset<F: Frame>(
        &mut self,
        qi: usize,
        now: u64,
        why: ConnectError,
        detail: &str,
        out: &mut Emitter<'_, F>,
    ) {
        let q = &mut self.qps[qi];
        tracing::warn!(qp = %q.name, collector = %q.peer, "queue pair failed ({detail}); reconnecting");
        let dreq = q.cm.reset(now, why);
        q.phase = Phase::Connecting;
        q.tmpl = None;
        self.stats.resets += 1;
        if let Some(m) = dreq {
            self.send_mad(qi, &m, out);
        }
    }

    /// Send what QP `qi`'s retransmission cursor has due.
    fn resend<F: Frame>(&mut self, qi: usize, now: u64, out: &mut Emitter<'_, F>) {
        let Some(h) = self.qps[qi].hop else { return };
        // Bounded work per call; the rest goes on the next tick.
        for _ in 0..256 {
            let q = &mut self.qps[qi];
            let Some(x) = q.req.poll_transmit(now) else { return };
            let (psn, op, ack_req) = (x.psn, x.op, x.ack_req);
            let mut payload = [0u8; roce::requester::MAX_INLINE];
            let len = x.payload.len();
            payload[..len].copy_from_slice(x.payload);
            self.stats.retransmitted += 1;
            let q = &self.qps[qi];
            out.emit(Dest::Port(h.port), self.s.queue, |f| q.build(f, psn, ack_req, &op, &payload[..len]));
        }
    }

    /// Timers of QP `qi`: path, CM, requester timeouts and resends, ack probes, Append flushes.
    fn tick_qp<F: Frame>(&mut self, qi: usize, now: u64, out: &mut Emitter<'_, F>) {
        // The path to the collector, looked up again every 100 ms (a new ARP entry, a route).
        if self.qps[qi].hop.is_none() || now.saturating_sub(self.qps[qi].resolved_at) >= 100_000_000 {
            self.qps[qi].resolved_at = now;
            let peer = self.qps[qi].peer;
            let key = {
                let mut k = [0u8; 13];
                k[..4].copy_from_slice(&peer.octets());
                k[8] = protocol::UDP;
                k[9..11].copy_from_slice(&(self.qps[qi].local_qpn as u16).to_be_bytes());
                k
            };
            match self.l2l3.next_hop(peer, || key, now, out) {
                Ok(h) => {
                    let src = self
                        .s
                        .source_ip
                        .or_else(|| self.l2l3.port_address(h.port))
                        .unwrap_or(Ipv4Addr::UNSPECIFIED);
                    let q = &mut self.qps[qi];
                    if q.hop != Some(h) || q.flow.ip_src != src {
                        q.set_path(h, src, self.s.dscp, self.s.ecn);
                        q.cm.params_mut().local_ip = src;
                    }
                }
                Err(NoNextHop::Unresolved) => {}
                Err(e) => {
                    if self.qps[qi].hop.is_none() && now.saturating_sub(self.last_tick) > 0 {
                        tracing::debug!(qp = %self.qps[qi].name, "no path to the collector: {e:?}");
                    }
                }
            }
        }
        if self.qps[qi].hop.is_none() {
            return;
        }
        // The CM.
        if self.qps[qi].cm.state() == roce::cm::ClientState::Idle {
            let psn = self.qps[qi].next_start_psn();
            self.qps[qi].cm.params_mut().start_psn = psn;
            let req = self.qps[qi].cm.connect(now);
            self.send_mad(qi, &req, out);
            return;
        }
        if matches!(self.qps[qi].cm.state(), roce::cm::ClientState::Backoff { until, .. } if now >= until) {
            let psn = self.qps[qi].next_start_psn();
            self.qps[qi].cm.params_mut().start_psn = psn;
        }
        let o = self.qps[qi].cm.handle_timeout(now);
        if let Some(m) = o.send {
            self.send_mad(qi, &m, out);
        }
        if let Some(ClientEvent::Failed(why)) = o.event {
            let q = &mut self.qps[qi];
            q.phase = Phase::Connecting;
            q.tmpl = None;
            tracing::warn!(qp = %q.name, collector = %q.peer, "connection: {why}; retrying with backoff");
        }
        if self.qps[qi].phase != Phase::Ready {
            return;
        }
        // Timeouts and resends.
        if let Err(e) = self.qps[qi].req.handle_timeout(now) {
            return self.reset(qi, now, ConnectError::Timeout, &format!("{e}"), out);
        }
        self.resend(qi, now, out);
        // A partial Append batch waits at most append_flush.
        if let Store::Append { batcher, .. } = &self.qps[qi].store
            && batcher.due(now, self.s.append_flush_ns)
        {
            let _ = self.flush_append(qi, now, &mut First::None, out);
        }
        // An unacknowledged tail gets a zero-length WRITE asking for an ACK.
        if self.qps[qi].req.ack_probe_due(now, self.s.ack_probe_ns) {
            let q = &mut self.qps[qi];
            let op = Op::Write { va: q.meta.va, rkey: q.meta.rkey, imm: None };
            if let Ok(p) = q.req.post(now, op, &[], true)
                && p.send_now
                && let Some(h) = q.hop
            {
                let q = &self.qps[qi];
                out.emit(Dest::Port(h.port), self.s.queue, |f| q.build(f, p.psn, p.ack_req, &op, &[]));
            }
        }
    }

    fn stats_line(&self) -> String {
        let s = &self.stats;
        let ready = self.qps.iter().filter(|q| q.phase == Phase::Ready).count();
        format!(
            "ready={ready}/{} keywrite={} append={} keyincrement={} postcarder={} sketchmerge={} rdma_packets={} \
             retransmitted={} acks={} nacks={} slow_downs={} parked={} unparked={} connects={} resets={} outstanding={}",
            self.qps.len(),
            s.reports[0],
            s.reports[1],
            s.reports[2],
            s.reports[3],
            s.reports[4],
            s.rdma_packets,
            s.retransmitted,
            s.acks,
            s.nacks,
            s.slow_downs,
            s.parked,
            s.unparked,
            s.connects,
            s.resets,
            self.qps.iter().map(|q| u64::from(q.req.outstanding())).sum::<u64>(),
        )
    }

    fn show(&self) -> String {
        let mut s = String::new();
        for q in &self.qps {
            s += &format!(
                "qp {} qpn {:#x} collector {} {:?} remote_qpn {:#x} va {:#x} len {} rkey {:#x} slots {} outstanding {} {:?}\n",
                q.name,
                q.local_qpn,
                q.peer,
                q.phase,
                q.req.dest_qp(),
                q.meta.va,
                q.meta.len,
                q.meta.rkey,
                q.slots,
                q.req.outstanding(),
                q.req.stats()
            );
        }
        for c in &self.collectors {
            s += &format!("collector {} {} metered {}\n", c.name, c.ip, c.metered);
        }
        s += &format!("{:?}\nparked now {}\n", self.stats, self.parked.len());
        s
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
        self.l2l3.tick(now, out);
        for qi in 0..self.qps.len() {
            self.tick_qp(qi, now, out);
        }
        self.unpark(now, out);
        self.last_tick = now;
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

    fn resources(&self) -> &Resources {
        &self.resources
    }
}

#[cfg(test)]
mod tests;
