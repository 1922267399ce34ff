//! Property tests for every `Repr` in `wire`: emit-then-parse is the identity, and parsing
//! arbitrary bytes — random, or a valid packet with bytes flipped and cut short — never panics.
//! Each property runs 10 000 cases.

use std::net::Ipv4Addr;

use proptest::prelude::*;
use wire::arp::{ArpPacket, ArpRepr};
use wire::daiet::{DaietEntry, DaietRepr, Entries};
use wire::dta::{self, BaseForm, DtaRepr, Format, MergeOp, NackExt, NackRepr, Primitive, Priority, Sequence};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, VlanRepr};
use wire::hawkeye::report::{self as hreport, Entry as HEntry, Report as HReport, ReportHeader as HHeader};
use wire::hawkeye::{FiveTuple, PollingFlag, PollingPacket, PollingRepr};
use wire::hpcc_int::{IntHeader, IntHopRepr, IntRepr};
use wire::ibcm::{
    CmMadRepr, CmMessage, CmaAddrs, CmaHeaderRepr, DrepRepr, DreqRepr, MadPacket, PathRepr, RejRepr, RepRepr,
    ReqRepr, RtuRepr, private_len,
};
use wire::ipv4::{Ipv4Packet, Ipv4Repr};
use wire::pfc::{MacControlRepr, PausePacket, PfcPacket, PfcRepr};
use wire::roce::{
    AethRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, DethRepr, ImmDtRepr, Opcode, RethRepr, RoceRepr,
    Syndrome, icrc,
};
use wire::stack::{RoceStack, UdpFlow};
use wire::udp::{UdpPacket, UdpRepr};
use wire::ufab::{UfabHopRepr, UfabKind, UfabPacket, UfabRepr};

const CASES: u32 = 10_000;

fn config() -> ProptestConfig {
    ProptestConfig { cases: CASES, ..ProptestConfig::default() }
}

// ----------------------------------------------------------------------------------------------
// Strategies

fn mac() -> impl Strategy<Value = EthernetAddress> {
    any::<[u8; 6]>().prop_map(EthernetAddress)
}

fn ip() -> impl Strategy<Value = Ipv4Addr> {
    any::<u32>().prop_map(Ipv4Addr::from_bits)
}

fn vlan() -> impl Strategy<Value = VlanRepr> {
    (0u8..8, any::<bool>(), 0u16..4096).prop_map(|(pcp, dei, vid)| VlanRepr { pcp, dei, vid })
}

fn ethernet() -> impl Strategy<Value = EthernetRepr> {
    (mac(), mac(), proptest::option::of(vlan()), any::<u16>().prop_filter("not a TPID", |t| *t != 0x8100))
        .prop_map(|(src_addr, dst_addr, vlan, t)| EthernetRepr {
            src_addr,
            dst_addr,
            vlan,
            ethertype: EtherType(t),
        })
}

prop_compose! {
    fn ipv4()(src_addr in ip(), dst_addr in ip(), protocol in any::<u8>(), payload_len in 0usize..2000,
              ttl in any::<u8>(), dscp in 0u8..64, ecn in 0u8..4, ident in any::<u16>(),
              dont_frag in any::<bool>(), more_frags in any::<bool>(), frag_offset in 0u16..8192) -> Ipv4Repr {
        Ipv4Repr { src_addr, dst_addr, protocol, payload_len, ttl, dscp, ecn, ident, dont_frag, more_frags, frag_offset }
    }
}

fn mac_control() -> impl Strategy<Value = MacControlRepr> {
    prop_oneof![
        any::<u16>().prop_map(|quanta| MacControlRepr::Pause { quanta }),
        (any::<u8>(), any::<[u16; 8]>())
            .prop_map(|(class_enable, quanta)| MacControlRepr::Pfc(PfcRepr { class_enable, quanta })),
    ]
}

prop_compose! {
    fn bth_any()(opcode in any::<u8>(), solicited in any::<bool>(), migreq in any::<bool>(), pad_count in 0u8..4,
                 pkey in any::<u16>(), fecn in any::<bool>(), becn in any::<bool>(), dest_qp in 0u32..1 << 24,
                 ack_req in any::<bool>(), psn in 0u32..1 << 24) -> BthRepr {
        BthRepr { opcode: Opcode(opcode), solicited, migreq, pad_count, pkey, fecn, becn, dest_qp, ack_req, psn }
    }
}

fn syndrome() -> impl Strategy<Value = Syndrome> {
    any::<u8>().prop_map(Syndrome::from_u8)
}

fn supported_opcode() -> impl Strategy<Value = Opcode> {
    let ops: Vec<Opcode> = (0..=255u8).map(Opcode).filter(|o| o.layout().is_some()).collect();
    proptest::sample::select(ops)
}

/// A consistent RoCEv2 packet repr for a supported opcode, with the payload in `payload`.
fn roce_parts() -> impl Strategy<Value = (BthRepr, Vec<u8>, [u64; 4], u32, Syndrome)> {
    (
        bth_any(),
        supported_opcode(),
        proptest::collection::vec(any::<u8>(), 0..300),
        any::<[u64; 4]>(),
        any::<u32>(),
        syndrome(),
    )
        .prop_map(|(mut bth, op, payload, words, imm, syn)| {
            bth.opcode = op;
            let l = op.layout().unwrap();
            let payload = if op == Opcode::CNP {
                payload.into_iter().chain(std::iter::repeat(0)).take(16).collect()
            } else if l.payload {
                payload
            } else {
                Vec::new()
            };
            bth.pad_count = ((4 - payload.len() % 4) % 4) as u8;
            (bth, payload, words, imm, syn)
        })
}

fn roce_repr<'a>(bth: BthRepr, payload: &'a [u8], words: [u64; 4], imm: u32, syn: Syndrome) -> RoceRepr<'a> {
    let l = bth.opcode.layout().unwrap();
    let mut r = RoceRepr::new(bth, payload);
    let dma_len = if matches!(bth.opcode.0 & 0x1f, 0x0a | 0x0b) {
        payload.len() as u32
    } else {
        (payload.len() as u32).saturating_add(words[3] as u32 % 4096)
    };
    r.ext.deth = l.deth.then_some(DethRepr { qkey: words[0] as u32, src_qp: (words[1] as u32) & 0xff_ffff });
    r.ext.reth = l.reth.then_some(RethRepr { va: words[0], rkey: imm, dma_len });
    r.ext.atomic_eth = l.atomic_eth.then_some(AtomicEthRepr {
        va: words[0],
        rkey: imm,
        swap_add: words[1],
        compare: words[2],
    });
    r.ext.aeth = l.aeth.then_some(AethRepr { syndrome: syn, msn: (words[2] as u32) & 0xff_ffff });
    r.ext.atomic_ack_eth = l.atomic_ack_eth.then_some(AtomicAckEthRepr { original: words[3] });
    r.ext.immdt = l.immdt.then_some(ImmDtRepr { imm });
    r
}

fn flow() -> impl Strategy<Value = UdpFlow> {
    (
        mac(),
        mac(),
        proptest::option::of(vlan()),
        ip(),
        ip(),
        0u8..64,
        0u8..4,
        any::<u8>(),
        any::<u16>(),
        any::<bool>(),
        any::<u16>(),
    )
        .prop_map(
            |(eth_src, eth_dst, vlan, ip_src, ip_dst, dscp, ecn, ttl, ident, dont_frag, src_port)| UdpFlow {
                eth_src,
                eth_dst,
                vlan,
                ip_src,
                ip_dst,
                dscp,
                ecn,
                ttl,
                ident,
                dont_frag,
                src_port,
                dst_port: 4791,
            },
        )
}

prop_compose! {
    fn path()(local_lid in any::<u16>(), remote_lid in any::<u16>(), local_gid in any::<[u8; 16]>(),
              remote_gid in any::<[u8; 16]>(), flow_label in 0u32..1 << 20, packet_rate in 0u8..64,
              traffic_class in any::<u8>(), hop_limit in any::<u8>(), sl in 0u8..16, subnet_local in any::<bool>(),
              local_ack_timeout in 0u8..32) -> PathRepr {
        PathRepr { local_lid, remote_lid, local_gid, remote_gid, flow_label, packet_rate, traffic_class,
                   hop_limit, sl, subnet_local, local_ack_timeout }
    }
}

fn private<const N: usize>() -> impl Strategy<Value = [u8; N]> {
    proptest::collection::vec(any::<u8>(), N).prop_map(|v| v.try_into().unwrap())
}

fn req() -> impl Strategy<Value = ReqRepr> {
    (
        (
            any::<u32>(),
            0u32..1 << 24,
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            0u32..1 << 24,
            any::<u8>(),
            0u32..1 << 24,
        ),
        (any::<u8>(), 0u32..1 << 24, 0u8..32, 0u8..4, any::<bool>(), 0u32..1 << 24, 0u8..32, 0u8..8),
        (any::<u16>(), 0u8..16, any::<bool>(), 0u8..8, 0u8..16, any::<bool>(), 0u8..8),
        (path(), path(), private::<{ private_len::REQ }>()),
    )
        .prop_map(|(a, b, c, d)| ReqRepr {
            local_comm_id: a.0,
            vendor_id: a.1,
            service_id: a.2,
            local_ca_guid: a.3,
            local_qkey: a.4,
            local_qpn: a.5,
            responder_resources: a.6,
            local_eecn: a.7,
            initiator_depth: b.0,
            remote_eecn: b.1,
            remote_cm_response_timeout: b.2,
            transport_type: b.3,
            e2e_flow_control: b.4,
            starting_psn: b.5,
            local_cm_response_timeout: b.6,
            retry_count: b.7,
            pkey: c.0,
            path_mtu: c.1,
            rdc_exists: c.2,
            rnr_retry_count: c.3,
            max_cm_retries: c.4,
            srq: c.5,
            extended_transport_type: c.6,
            primary_path: d.0,
            alternate_path: d.1,
            private_data: d.2,
        })
}

fn rep() -> impl Strategy<Value = RepRepr> {
    (
        (any::<u32>(), any::<u32>(), any::<u32>(), 0u32..1 << 24, 0u32..1 << 24, 0u32..1 << 24, any::<u8>()),
        (any::<u8>(), 0u8..32, 0u8..4, any::<bool>(), 0u8..8, any::<bool>(), any::<u64>()),
        private::<{ private_len::REP }>(),
    )
        .prop_map(|(a, b, private_data)| RepRepr {
            local_comm_id: a.0,
            remote_comm_id: a.1,
            local_qkey: a.2,
            local_qpn: a.3,
            local_eecn: a.4,
            starting_psn: a.5,
            responder_resources: a.6,
            initiator_depth: b.0,
            target_ack_delay: b.1,
            failover_accepted: b.2,
            e2e_flow_control: b.3,
            rnr_retry_count: b.4,
            srq: b.5,
            local_ca_guid: b.6,
            private_data,
        })
}

fn cm_message() -> impl Strategy<Value = CmMessage> {
    prop_oneof![
        req().prop_map(CmMessage::Req),
        rep().prop_map(CmMessage::Rep),
        (any::<u32>(), any::<u32>(), private::<{ private_len::RTU }>()).prop_map(|(l, r, p)| CmMessage::Rtu(
            RtuRepr { local_comm_id: l, remote_comm_id: r, private_data: p }
        )),
        (
            any::<u32>(),
            any::<u32>(),
            0u8..4,
            0u8..128,
            any::<u16>(),
            private::<72>(),
            private::<{ private_len::REJ }>()
        )
            .prop_map(|(l, r, m, il, reason, ari, p)| CmMessage::Rej(RejRepr {
                local_comm_id: l,
                remote_comm_id: r,
                message_rejected: m,
                reject_info_len: il,
                reason,
                ari,
                private_data: p
            })),
        (any::<u32>(), any::<u32>(), 0u32..1 << 24, private::<{ private_len::DREQ }>()).prop_map(
            |(l, r, q, p)| {
                CmMessage::Dreq(DreqRepr {
                    local_comm_id: l,
                    remote_comm_id: r,
                    remote_qpn: q,
                    private_data: p,
                })
            }
        ),
        (any::<u32>(), any::<u32>(), private::<{ private_len::DREP }>()).prop_map(|(l, r, p)| {
            CmMessage::Drep(DrepRepr { local_comm_id: l, remote_comm_id: r, private_data: p })
        }),
    ]
}

fn cm_mad() -> impl Strategy<Value = CmMadRepr> {
    (any::<u8>(), any::<u16>(), any::<u16>(), any::<u64>(), any::<u32>(), cm_message()).prop_map(
        |(method, status, class_specific, tid, attr_mod, message)| CmMadRepr {
            method,
            status,
            class_specific,
            tid,
            attr_mod,
            message,
        },
    )
}

fn cma() -> impl Strategy<Value = CmaHeaderRepr> {
    let addrs = prop_oneof![
        (ip(), ip()).prop_map(|(src, dst)| CmaAddrs::V4 { src, dst }),
        (any::<[u8; 16]>(), any::<[u8; 16]>()).prop_map(|(src, dst)| CmaAddrs::V6 { src, dst }),
    ];
    (any::<u8>(), any::<u16>(), addrs).prop_map(|(version, port, addrs)| CmaHeaderRepr {
        version,
        port,
        addrs,
    })
}

fn priority() -> impl Strategy<Value = Priority> {
    prop_oneof![Just(Priority::Low), Just(Priority::Medium), Just(Priority::High)]
}

fn merge_op() -> impl Strategy<Value = MergeOp> {
    prop_oneof![Just(MergeOp::Sum), Just(MergeOp::Max), Just(MergeOp::Min)]
}

/// A DTA report's fields, with its variable-length data held outside so the repr can borrow it.
#[derive(Debug, Clone)]
struct DtaCase {
    immediate: bool,
    seq: Option<Sequence>,
    kind: u8,
    a: u32,
    b: u64,
    small: u8,
    op: MergeOp,
    bytes: Vec<u8>,
    data_len: usize,
}

impl DtaCase {
    fn repr(&self) -> DtaRepr<'_> {
        let primitive = match self.kind {
            0 => Primitive::KeyWrite {
                redundancy: self.small,
                key: self.a,
                data: &self.bytes[..self.data_len],
            },
            1 => Primitive::Append { list_id: self.a, data: self.b as u32 },
            2 => Primitive::KeyIncrement { redundancy: self.small, key: self.a, counter: self.b },
            3 => Primitive::Postcarder { key: self.a, hop: self.small, data: self.b as u32 },
            _ => Primitive::SketchMerge {
                sketch_id: self.a as u16,
                reporter_id: (self.a >> 16) as u16,
                column: self.b as u32,
                op: self.op,
                counters: &self.bytes[..self.bytes.len() / 4 * 4],
            },
        };
        DtaRepr { immediate: self.immediate, seq: self.seq, primitive }
    }

    fn format(&self) -> Format {
        Format {
            base: if self.seq.is_some() { BaseForm::Long } else { BaseForm::Short },
            keywrite_data_len: self.data_len,
        }
    }
}

fn dta_case() -> impl Strategy<Value = DtaCase> {
    let seq = proptest::option::of((any::<u8>(), any::<bool>(), priority(), 0u8..16).prop_map(
        |(seqnum, retransmittable, priority, epoch)| Sequence { seqnum, retransmittable, priority, epoch },
    ));
    (
        any::<bool>(),
        seq,
        0u8..5,
        any::<u32>(),
        any::<u64>(),
        any::<u8>(),
        merge_op(),
        proptest::collection::vec(any::<u8>(), 28..200),
        prop_oneof![Just(4usize), Just(12), Just(28)],
    )
        .prop_map(|(immediate, seq, kind, a, b, small, op, bytes, data_len)| DtaCase {
            immediate,
            seq,
            kind,
            a,
            b,
            small,
            op,
            bytes,
            data_len,
        })
}

fn int_hop() -> impl Strategy<Value = IntHopRepr> {
    (any::<u16>(), any::<u16>(), any::<u16>(), any::<u16>(), any::<u32>(), any::<u32>()).prop_map(
        |(switch_id, port_id, rate, qlen, ts, tx_bytes)| IntHopRepr {
            switch_id,
            port_id,
            rate,
            qlen,
            ts,
            tx_bytes,
            compact: false,
        },
    )
}

/// A hop as a compact slot holds it: a rate of the table, 24 bits of time, 20 of 128-byte units.
fn int_hop_compact() -> impl Strategy<Value = IntHopRepr> {
    (0usize..16, any::<u16>(), 0u32..1 << 24, 0u32..1 << 20).prop_map(|(code, qlen, ts, units)| IntHopRepr {
        switch_id: 0,
        port_id: 0,
        rate: wire::hpcc_int::COMPACT_RATES[code],
        qlen,
        ts,
        tx_bytes: units * wire::hpcc_int::COMPACT_TX_UNIT,
        compact: true,
    })
}

fn int_repr() -> impl Strategy<Value = IntRepr> {
    let hops = prop_oneof![
        proptest::collection::vec(int_hop(), 8).prop_map(|h| (false, h)),
        proptest::collection::vec(int_hop_compact(), 8).prop_map(|h| (true, h)),
    ];
    (1u8..=8, any::<(bool, bool, u8)>(), hops).prop_flat_map(
        |(max_hop, (overflow, reflected, next), (compact, hops))| {
            (0..=max_hop).prop_map(move |n_hop| {
                let mut r = if compact { IntRepr::empty_compact(max_hop) } else { IntRepr::empty(max_hop) };
                r.overflow = overflow;
                r.reflected = reflected;
                r.next = next;
                r.n_hop = n_hop;
                let n = usize::from(n_hop);
                r.hops[..n].copy_from_slice(&hops[..n]);
                r
            })
        },
    )
}

fn ufab_hop() -> impl Strategy<Value = UfabHopRepr> {
    (any::<u16>(), any::<u16>(), any::<u16>(), 0u16..4096, 0u8..16)
        .prop_map(|(window, phi_l, tx_l, q_l, c_l)| UfabHopRepr { window, phi_l, tx_l, q_l, c_l })
}

fn ufab_repr() -> impl Strategy<Value = UfabRepr> {
    let kind = prop_oneof![
        Just(UfabKind::Probe),
        Just(UfabKind::Response),
        Just(UfabKind::Finish),
        Just(UfabKind::FailureResponse),
        Just(UfabKind::Look)
    ];
    (kind, 0u32..1 << 24, 0u8..=15, proptest::collection::vec(ufab_hop(), 15)).prop_flat_map(
        |(kind, phi_pair, slots, hops)| {
            (0..=slots).prop_map(move |n_hop| {
                let mut r = UfabRepr { kind, n_hop, phi_pair, slots, hops: [UfabHopRepr::default(); 15] };
                r.hops[..usize::from(slots)].copy_from_slice(&hops[..usize::from(slots)]);
                r
            })
        },
    )
}

fn polling() -> impl Strategy<Value = PollingRepr> {
    (0u8..4, 0u16..512, 0u16..512, any::<u8>(), ip(), ip(), any::<u8>(), any::<u16>(), any::<u16>()).prop_map(
        |(f, ingress_port, egress_port, event_id, src_ip, dst_ip, protocol, src_port, dst_port)| {
            PollingRepr {
                flag: PollingFlag::from_bits(f),
                ingress_port,
                egress_port,
                event_id,
                victim: FiveTuple { src_ip, dst_ip, protocol, src_port, dst_port },
            }
        },
    )
}

fn five_tuple() -> impl Strategy<Value = FiveTuple> {
    (ip(), ip(), any::<u8>(), any::<u16>(), any::<u16>()).prop_map(
        |(src_ip, dst_ip, protocol, src_port, dst_port)| FiveTuple {
            src_ip,
            dst_ip,
            protocol,
            src_port,
            dst_port,
        },
    )
}

fn hawkeye_entry() -> impl Strategy<Value = HEntry> {
    prop_oneof![
        (any::<u16>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u64>()).prop_map(
            |(port, epoch_id, pkts, paused, qdepth_sum)| HEntry::Port {
                port,
                epoch_id,
                pkts,
                paused,
                qdepth_sum
            }
        ),
        (any::<u16>(), any::<u32>(), five_tuple(), any::<u32>(), any::<u32>(), 0u64..1 << 48).prop_map(
            |(port, epoch_id, flow, pkts, paused, qdepth_sum)| HEntry::Flow {
                port,
                epoch_id,
                flow,
                pkts,
                paused,
                qdepth_sum
            }
        ),
        (any::<u16>(), any::<u32>(), any::<u16>(), any::<u64>()).prop_map(
            |(out_port, epoch_id, in_port, bytes)| HEntry::Meter { out_port, epoch_id, in_port, bytes }
        ),
    ]
}

fn hawkeye_header() -> impl Strategy<Value = HHeader> {
    (0u8..4, any::<u16>(), any::<u8>(), any::<u16>(), any::<u16>(), any::<u32>(), any::<u8>(), any::<bool>())
        .prop_map(|(flag, switch_id, event_id, in_port, out_port, seq, part, last)| HHeader {
            flag,
            switch_id,
            event_id,
            in_port,
            out_port,
            seq,
            part,
            last,
        })
}

fn daiet_entries() -> impl Strategy<Value = Vec<DaietEntry>> {
    proptest::collection::vec(
        (any::<[u8; 16]>(), any::<u32>()).prop_map(|(key, value)| DaietEntry { key, value }),
        0..12,
    )
}

/// `valid` with up to three bytes replaced and, half of the time, cut to a random length.
fn mangled(valid: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let n = valid.len().max(1);
    (proptest::collection::vec((0..n, any::<u8>()), 0..4), 0..=valid.len(), any::<bool>()).prop_map(
        move |(flips, cut, do_cut)| {
            let mut v = valid.clone();
            for (i, b) in flips {
                if i < v.len() {
                    v[i] = b;
                }
            }
            if do_cut {
                v.truncate(cut);
            }
            v
        },
    )
}

fn emitted<F: FnOnce(&mut [u8]) -> wire::Result<()>>(len: usize, f: F) -> Vec<u8> {
    let mut v = vec![0u8; len];
    f(&mut v).unwrap();
    v
}

// ----------------------------------------------------------------------------------------------
// Round trips

proptest! {
    #![proptest_config(config())]

    #[test]
    fn ethernet_roundtrip(r in ethernet()) {
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(EthernetRepr::parse(&b)?, r);
    }

    #[test]
    fn arp_roundtrip(op in any::<u16>(), sm in mac(), si in ip(), tm in mac(), ti in ip()) {
        let r = ArpRepr { op, sender_mac: sm, sender_ip: si, target_mac: tm, target_ip: ti };
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(ArpRepr::parse(&b)?, r);
    }

    #[test]
    fn ipv4_roundtrip(r in ipv4()) {
        let mut b = vec![0u8; 20 + r.payload_len];
        r.emit(&mut b)?;
        prop_assert!(Ipv4Packet::new_checked(&b[..])?.verify_checksum());
        prop_assert_eq!(Ipv4Repr::parse(&b)?, r);
    }

    #[test]
    fn udp_roundtrip(src_port in any::<u16>(), dst_port in any::<u16>(), payload in proptest::collection::vec(any::<u8>(), 0..100), s in ip(), d in ip()) {
        let r = UdpRepr { src_port, dst_port, payload_len: payload.len() };
        let mut b = vec![0u8; 8 + payload.len()];
        r.emit(&mut b)?;
        b[8..].copy_from_slice(&payload);
        let mut p = UdpPacket::new_checked(&mut b[..])?;
        p.fill_checksum(s, d);
        prop_assert!(p.verify_checksum(s, d));
        prop_assert_eq!(UdpRepr::parse(&b)?, r);
    }

    #[test]
    fn mac_control_roundtrip(r in mac_control()) {
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(MacControlRepr::parse(&b)?, r);
    }

    #[test]
    fn bth_roundtrip(r in bth_any()) {
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(BthRepr::parse(&b)?, r);
    }

    #[test]
    fn transport_header_roundtrips(w in any::<[u64; 4]>(), syn in syndrome(), msn in 0u32..1 << 24) {
        let reth = RethRepr { va: w[0], rkey: w[1] as u32, dma_len: w[2] as u32 };
        prop_assert_eq!(RethRepr::parse(&emitted(16, |b| reth.emit(b)))?, reth);
        let at = AtomicEthRepr { va: w[0], rkey: w[1] as u32, swap_add: w[2], compare: w[3] };
        prop_assert_eq!(AtomicEthRepr::parse(&emitted(28, |b| at.emit(b)))?, at);
        let aeth = AethRepr { syndrome: syn, msn };
        prop_assert_eq!(AethRepr::parse(&emitted(4, |b| aeth.emit(b)))?, aeth);
        let aa = AtomicAckEthRepr { original: w[3] };
        prop_assert_eq!(AtomicAckEthRepr::parse(&emitted(8, |b| aa.emit(b)))?, aa);
        let imm = ImmDtRepr { imm: w[0] as u32 };
        prop_assert_eq!(ImmDtRepr::parse(&emitted(4, |b| imm.emit(b)))?, imm);
        let deth = DethRepr { qkey: w[1] as u32, src_qp: msn };
        prop_assert_eq!(DethRepr::parse(&emitted(8, |b| deth.emit(b)))?, deth);
    }

    #[test]
    fn roce_roundtrip((bth, payload, words, imm, syn) in roce_parts()) {
        let r = roce_repr(bth, &payload, words, imm, syn);
        let mut b = vec![0u8; r.buffer_len()];
        prop_assert_eq!(r.emit(&mut b)?, b.len());
        prop_assert_eq!(RoceRepr::parse(&b)?, r);
    }

    #[test]
    fn roce_stack_roundtrip(f in flow(), (bth, payload, words, imm, syn) in roce_parts()) {
        let roce = roce_repr(bth, &payload, words, imm, syn);
        let stack = RoceStack { flow: f, roce };
        let mut b = vec![0u8; stack.buffer_len()];
        prop_assert_eq!(stack.emit(&mut b)?, b.len());
        let eth = EthernetRepr::parse(&b)?;
        prop_assert_eq!(eth.vlan, f.vlan);
        let ip = &b[eth.buffer_len()..];
        let ipr = Ipv4Repr::parse(ip)?;
        prop_assert!(Ipv4Packet::new_checked(ip)?.verify_checksum());
        prop_assert_eq!((ipr.src_addr, ipr.dst_addr, ipr.dscp, ipr.ecn), (f.ip_src, f.ip_dst, f.dscp, f.ecn));
        icrc::verify(ip)?;
        let udp = UdpRepr::parse(&ip[20..])?;
        prop_assert_eq!((udp.src_port, udp.dst_port), (f.src_port, 4791));
        prop_assert_eq!(RoceRepr::parse(&ip[28..28 + udp.payload_len])?, roce);
    }

    #[test]
    fn int_wrap_unwrap_is_identity(f in flow(), (bth, payload, words, imm, syn) in roce_parts(), int in int_repr()) {
        // A RoCEv2 packet with INT put in front of its BTH comes back byte for byte (but for
        // the IPv4 and UDP checksums, which the ICRC masks), and its ICRC still holds.
        let stack = RoceStack { flow: f, roce: roce_repr(bth, &payload, words, imm, syn) };
        let n = stack.buffer_len();
        let mut b = vec![0u8; n + int.buffer_len() + 8];
        stack.emit(&mut b)?;
        let sent = b[..n].to_vec();
        let l3 = EthernetRepr::parse(&b)?.buffer_len();
        let wrapped = wire::hpcc_int::wrap(&mut b, n, l3, &int)?;
        prop_assert_eq!(wrapped, n + int.buffer_len());
        prop_assert!(Ipv4Packet::new_checked(&b[l3..])?.verify_checksum());
        prop_assert_eq!(UdpRepr::parse(&b[l3 + 20..])?.dst_port, wire::udp::port::HPCC_INT);
        let (got, len) = wire::hpcc_int::unwrap(&mut b, l3)?;
        prop_assert_eq!(got, IntRepr { next: wire::hpcc_int::NEXT_BTH, ..int });
        prop_assert_eq!(len, n);
        let masked = |v: &[u8]| { let mut v = v.to_vec(); v[l3 + 10..l3 + 12].fill(0); v[l3 + 26..l3 + 28].fill(0); v };
        prop_assert_eq!(masked(&b[..n]), masked(&sent));
        icrc::verify(&b[l3..n])?;
    }

    #[test]
    fn cm_mad_roundtrip(r in cm_mad()) {
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(CmMadRepr::parse(&b)?, r);
    }

    #[test]
    fn cma_roundtrip(r in cma()) {
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(CmaHeaderRepr::parse(&b)?, r);
    }

    #[test]
    fn dta_roundtrip(c in dta_case()) {
        let r = c.repr();
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(DtaRepr::parse(&b, c.format())?, r);
    }

    #[test]
    fn dta_nack_progress_roundtrip(
        seqnum in any::<u8>(), epoch in any::<u8>(), first in any::<u8>(), joined in any::<bool>(),
        last in any::<bool>(), settled in any::<u32>(), lost in any::<u32>(), incarnation in any::<u32>(),
        span in any::<u32>()
    ) {
        let ext = NackExt::Progress { epoch, first, joined, last, settled, lost, span, incarnation };
        let r = NackRepr { seqnum, nack: false, slow_down: false, ext: Some(ext) };
        let bytes = emitted(r.buffer_len(), |buf| r.emit(buf));
        prop_assert_eq!(bytes.len(), 22);
        prop_assert_eq!(NackRepr::parse(&bytes)?, r);
        // Cut short (an extension's 12 bytes only), it is an error, never a panic.
        prop_assert!(NackRepr::parse(&bytes[..14]).is_err());
        prop_assert!(NackRepr::parse(&bytes[..21]).is_err());
    }

    #[test]
    fn dta_nack_roundtrip(seqnum in any::<u8>(), nack in any::<bool>(), slow_down in any::<bool>()) {
        let r = NackRepr::plain(seqnum, nack, slow_down);
        prop_assert_eq!(NackRepr::parse(&emitted(2, |b| r.emit(b)))?, r);
    }

    #[test]
    fn dta_nack_ext_roundtrip(
        seqnum in any::<u8>(), kind in 0..3u8, a in any::<u16>(), b in any::<u16>(), c in any::<u32>()
    ) {
        let ext = match kind {
            0 => NackExt::Reports { count: a as u8, epoch: b as u8 },
            1 => NackExt::Sketch { sketch_id: a, reporter_id: b, column: c },
            _ => NackExt::Hello { epoch: b as u8, nonce: c },
        };
        let r = NackRepr { seqnum, nack: true, slow_down: false, ext: Some(ext) };
        let bytes = emitted(r.buffer_len(), |buf| r.emit(buf));
        prop_assert_eq!(bytes.len(), 14);
        prop_assert_eq!(NackRepr::parse(&bytes)?, r);
        // Cut short, it is an error, never a panic or a plain NACK.
        prop_assert!(NackRepr::parse(&bytes[..13]).is_err());
    }

    #[test]
    fn dta_hello_roundtrip(epoch in 0..16u8, nonce in any::<u32>()) {
        let r = dta::HelloRepr { epoch, nonce };
        let bytes = emitted(dta::HELLO_LEN, |buf| r.emit(buf));
        prop_assert_eq!(dta::HelloRepr::parse(&bytes)?, r);
        // Not a report: the report parser refuses its opcode.
        prop_assert!(DtaRepr::parse(&bytes, Format::default()).is_err());
        prop_assert!(dta::HelloRepr::parse(&bytes[..6]).is_err());
    }

    #[test]
    fn int_roundtrip(r in int_repr()) {
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(IntRepr::parse(&b)?, r);
    }

    #[test]
    fn mpls_roundtrip(label in 0u32..1 << 20, tc in 0u8..8, bottom in any::<bool>(), ttl in any::<u8>()) {
        let r = wire::mpls::MplsRepr { label, tc, bottom, ttl };
        let b = emitted(wire::mpls::LEN, |b| r.emit(b));
        prop_assert_eq!(wire::mpls::MplsRepr::parse(&b)?, r);
    }

    #[test]
    fn ufab_roundtrip(r in ufab_repr()) {
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(UfabRepr::parse(&b)?, r);
    }

    #[test]
    fn hawkeye_report_roundtrip(h in hawkeye_header(), e in proptest::collection::vec(hawkeye_entry(), 0..=hreport::MAX_ENTRIES)) {
        let b = emitted(hreport::report_len(e.len()), |b| hreport::emit_report(&h, &e, b).map(|_| ()));
        let r = HReport::parse(&b)?;
        prop_assert_eq!(r.header, h);
        let back: Result<Vec<HEntry>, _> = r.entries().collect();
        prop_assert_eq!(back?, e);
    }

    #[test]
    fn polling_roundtrip(r in polling()) {
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        prop_assert_eq!(PollingRepr::parse(&b)?, r);
    }

    #[test]
    fn daiet_roundtrip(entries in daiet_entries(), tree_id in any::<u32>(), end in any::<bool>()) {
        let mut raw = vec![0u8; entries.len() * 20];
        for (i, e) in entries.iter().enumerate() {
            e.write(&mut raw[i * 20..]);
        }
        let r = if end { DaietRepr::End { tree_id } } else { DaietRepr::Data { tree_id, entries: Entries::new(&raw)? } };
        let b = emitted(r.buffer_len(), |b| r.emit(b));
        let back = DaietRepr::parse(&b)?;
        prop_assert_eq!(back, r);
        if let DaietRepr::Data { entries: got, .. } = back {
            prop_assert_eq!(got.iter().collect::<Vec<_>>(), entries);
        }
    }
}

// ----------------------------------------------------------------------------------------------
// Arbitrary input never panics

/// Run every parser and every view accessor over `b`.
fn parse_everything(b: &[u8]) {
    if let Ok(f) = EthernetFrame::new_checked(b) {
        let _ = (f.dst_addr(), f.src_addr(), f.ethertype(), f.vlan(), f.payload().len());
    }
    let _ = EthernetRepr::parse(b);
    if let Ok(a) = ArpPacket::new_checked(b) {
        let _ = (a.op(), a.sender_ip(), a.target_mac());
    }
    let _ = ArpRepr::parse(b);
    if let Ok(p) = Ipv4Packet::new_checked(b) {
        let _ = (p.verify_checksum(), p.payload().len(), p.src_addr(), p.ttl(), p.frag_offset());
    }
    let _ = Ipv4Repr::parse(b);
    if let Ok(p) = UdpPacket::new_checked(b) {
        let _ = (p.payload().len(), p.verify_checksum(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST));
    }
    let _ = UdpRepr::parse(b);
    let _ = wire::mpls::MplsRepr::parse(b);
    let _ = wire::mpls::stack_depth(b);
    if let Ok(p) = PfcPacket::new_checked(b) {
        let _ = (p.class_enable(), p.quanta(7));
    }
    if let Ok(p) = PausePacket::new_checked(b) {
        let _ = p.quanta();
    }
    let _ = MacControlRepr::parse(b);
    let _ = BthRepr::parse(b);
    let _ = RethRepr::parse(b);
    let _ = AtomicEthRepr::parse(b);
    let _ = AethRepr::parse(b);
    let _ = AtomicAckEthRepr::parse(b);
    let _ = ImmDtRepr::parse(b);
    let _ = DethRepr::parse(b);
    let _ = RoceRepr::parse(b);
    let _ = (icrc::compute(b), icrc::verify(b), icrc::stored(b));
    if let Ok(p) = MadPacket::new_checked(b) {
        let _ = (p.tid(), p.attr_id(), p.local_comm_id(), p.remote_comm_id());
    }
    let _ = CmMadRepr::parse(b);
    let _ = CmaHeaderRepr::parse(b);
    for base in [BaseForm::Short, BaseForm::Long] {
        for keywrite_data_len in [4, 12, 28] {
            let _ = DtaRepr::parse(b, Format { base, keywrite_data_len });
        }
    }
    let _ = NackRepr::parse(b);
    let _ = dta::HelloRepr::parse(b);
    if let Ok(h) = IntHeader::new_checked(b) {
        for i in 0..usize::from(h.max_hop()) {
            let _ = h.hop(i);
        }
    }
    let _ = IntRepr::parse(b);
    for l3 in [0, 14, 18] {
        let _ = wire::hpcc_int::unwrap(&mut b.to_vec(), l3);
    }
    if let Ok(p) = UfabPacket::new_checked(b) {
        for i in 0..p.slots() {
            let _ = p.hop(i);
        }
    }
    let _ = UfabRepr::parse(b);
    if let Ok(p) = PollingPacket::new_checked(b) {
        let _ = (p.flag(), p.victim(), p.ingress_port(), p.egress_port());
    }
    let _ = PollingRepr::parse(b);
    if let Ok(r) = HReport::parse(b) {
        let _ = r.entries().count();
    }
    if let Ok(DaietRepr::Data { entries, .. }) = DaietRepr::parse(b) {
        let _ = entries.iter().count();
    }
    // A whole frame down the stack, as a switch would walk it.
    if let Ok(eth) = EthernetRepr::parse(b) {
        let rest = &b[eth.buffer_len()..];
        if let Ok(ip) = Ipv4Packet::new_checked(rest) {
            let l4 = ip.payload();
            if let Ok(udp) = UdpPacket::new_checked(l4) {
                let _ = RoceRepr::parse(udp.payload());
                let _ = DtaRepr::parse(udp.payload(), Format::default());
                let _ =
                    dta::DtaPacket::new_checked(udp.payload(), BaseForm::Short).map(|p| p.primitive().len());
            }
        }
    }
}

fn valid_samples() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        ethernet().prop_map(|r| emitted(r.buffer_len(), |b| r.emit(b))),
        ipv4().prop_map(|r| {
            let mut v = vec![0u8; 20 + r.payload_len];
            r.emit(&mut v).unwrap();
            v
        }),
        mac_control().prop_map(|r| emitted(r.buffer_len(), |b| r.emit(b))),
        (flow(), roce_parts()).prop_map(|(f, (bth, p, w, i, s))| {
            let st = RoceStack { flow: f, roce: roce_repr(bth, &p, w, i, s) };
            emitted(st.buffer_len(), |b| st.emit(b).map(|_| ()))
        }),
        roce_parts().prop_map(|(bth, p, w, i, s)| {
            let r = roce_repr(bth, &p, w, i, s);
            emitted(r.buffer_len(), |b| r.emit(b).map(|_| ()))
        }),
        cm_mad().prop_map(|r| emitted(r.buffer_len(), |b| r.emit(b))),
        dta_case().prop_map(|c| {
            let r = c.repr();
            emitted(r.buffer_len(), |b| r.emit(b))
        }),
        int_repr().prop_map(|r| emitted(r.buffer_len(), |b| r.emit(b))),
        ufab_repr().prop_map(|r| emitted(r.buffer_len(), |b| r.emit(b))),
        polling().prop_map(|r| emitted(r.buffer_len(), |b| r.emit(b))),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..400)) {
        parse_everything(&b);
    }

    #[test]
    fn mangled_packets_never_panic(b in valid_samples().prop_flat_map(mangled)) {
        parse_everything(&b);
    }
}
