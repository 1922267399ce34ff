//! Every header's field specification ([`wire::spec::Header`]) agrees with the views and
//! `Repr`s that read and write the same format: values written bit by bit at the specified
//! offsets read back through the view, and every header's fields tile it. This is what makes
//! the specifications the one source of truth the switch's declared parsers and the P4 exporter
//! take their layouts from: a field moved in one place and not the other fails here.

use proptest::prelude::*;
use wire::spec::Header;

/// A header's bytes with each field set, by the generic bit writer, to the matching value.
fn fill(h: &Header, vals: &[u64]) -> Vec<u8> {
    let mut b = vec![0u8; h.len];
    for (f, &v) in h.fields.iter().zip(vals) {
        if f.width <= 64 {
            f.write(&mut b, v).unwrap();
        } else {
            for (i, x) in b[f.range()].iter_mut().enumerate() {
                *x = (v >> (8 * (i % 8))) as u8;
            }
        }
    }
    b
}

/// The value each field holds after `fill`, as the generic reader sees it.
fn masked(h: &Header, vals: &[u64]) -> Vec<u64> {
    h.fields
        .iter()
        .zip(vals)
        .map(|(f, &v)| if f.width >= 64 { v } else { v & ((1 << f.width) - 1) })
        .collect()
}

/// What a view reads of each field, in the specification's order; `None` for a field the view
/// does not expose (reserved bits).
type Reader = fn(&[u8]) -> Vec<Option<u64>>;

fn check(h: &Header, vals: &[u64], read: Reader) {
    assert!(h.is_tiled(), "{}: the fields do not tile the header", h.name);
    let b = fill(h, vals);
    let want = masked(h, vals);
    for (i, (got, f)) in read(&b).into_iter().zip(h.fields).enumerate() {
        if let Some(got) = got {
            assert_eq!(got, want[i], "{}.{}", h.name, f.name);
            if f.width <= 64 {
                assert_eq!(f.read(&b), Some(want[i]), "{}.{}: generic read", h.name, f.name);
            }
        }
    }
}

fn u(v: impl Into<u64>) -> Option<u64> {
    Some(v.into())
}

fn mac(m: wire::EthernetAddress) -> Option<u64> {
    Some(m.0.iter().fold(0u64, |a, &b| a << 8 | u64::from(b)))
}

fn ip(a: std::net::Ipv4Addr) -> Option<u64> {
    Some(u64::from(a.to_bits()))
}

/// Every header, with the reader of its view.
fn headers() -> Vec<(&'static Header, Reader)> {
    use wire::roce::*;
    vec![
        (&wire::ethernet::HEADER, |b| {
            let f = wire::EthernetFrame::new_unchecked(b);
            vec![mac(f.dst_addr()), mac(f.src_addr()), u(f.outer_ethertype().0)]
        }),
        (&wire::ethernet::VLAN_HEADER, |b| {
            let v = wire::VlanRepr::from_tci(u16::from_be_bytes([b[0], b[1]]));
            vec![u(v.pcp), u(v.dei), u(v.vid), u(u16::from_be_bytes([b[2], b[3]]))]
        }),
        (&wire::ipv4::HEADER, |b| {
            let p = wire::Ipv4Packet::new_unchecked(b);
            vec![
                u(p.version()),
                u(p.header_len() as u64 / 4),
                u(p.dscp()),
                u(p.ecn()),
                u(p.total_len()),
                u(p.ident()),
                None,
                u(p.dont_frag()),
                u(p.more_frags()),
                u(p.frag_offset()),
                u(p.ttl()),
                u(p.protocol()),
                u(p.checksum()),
                ip(p.src_addr()),
                ip(p.dst_addr()),
            ]
        }),
        (&wire::mpls::HEADER, |b| {
            let e = wire::mpls::MplsEntry::new_unchecked(b);
            vec![u(e.label()), u(e.tc()), u(e.bottom()), u(e.ttl())]
        }),
        (&wire::udp::HEADER, |b| {
            let p = wire::UdpPacket::new_unchecked(b);
            vec![u(p.src_port()), u(p.dst_port()), u(p.len()), u(p.checksum())]
        }),
        (&wire::arp::HEADER, |b| {
            let p = wire::arp::ArpPacket::new_unchecked(b);
            let (hl, pl) = p.lengths();
            vec![
                u(p.htype()),
                u(p.ptype()),
                u(hl),
                u(pl),
                u(p.op()),
                mac(p.sender_mac()),
                ip(p.sender_ip()),
                mac(p.target_mac()),
                ip(p.target_ip()),
            ]
        }),
        (&BTH, |b| {
            let h = BthHeader::new_unchecked(b);
            vec![
                u(h.opcode().0),
                u(h.solicited()),
                u(h.migreq()),
                u(h.pad_count()),
                u(h.tver()),
                u(h.pkey()),
                u(h.fecn()),
                u(h.becn()),
                None,
                u(h.dest_qp()),
                u(h.ack_req()),
                None,
                u(h.psn()),
            ]
        }),
        (&RETH, |b| {
            let h = RethHeader::new_unchecked(b);
            vec![u(h.va()), u(h.rkey()), u(h.dma_len())]
        }),
        (&ATOMIC_ETH, |b| {
            let h = AtomicEthHeader::new_unchecked(b);
            vec![u(h.va()), u(h.rkey()), u(h.swap_add()), u(h.compare())]
        }),
        (&AETH, |b| {
            let h = AethHeader::new_unchecked(b);
            vec![u(h.syndrome().to_u8()), u(h.msn())]
        }),
        (&ATOMIC_ACK_ETH, |b| vec![u(AtomicAckEthHeader::new_unchecked(b).original())]),
        (&IMM_DT, |b| vec![u(ImmDtHeader::new_unchecked(b).imm())]),
        (&DETH, |b| {
            let h = DethHeader::new_unchecked(b);
            vec![u(h.qkey()), None, u(h.src_qp())]
        }),
        (&wire::dta::BASE_LONG, |b| {
            let p = wire::dta::DtaPacket::new_unchecked(b, wire::dta::BaseForm::Long);
            vec![
                u(p.opcode()),
                p.seqnum().map(u64::from),
                u(p.immediate()),
                u(p.retransmittable()),
                u(p.priority_bits()),
                None,
            ]
        }),
        (&wire::dta::BASE_SHORT, |b| {
            let p = wire::dta::DtaPacket::new_unchecked(b, wire::dta::BaseForm::Short);
            vec![u(p.opcode()), u(p.immediate()), None]
        }),
        (&wire::dta::KEYWRITE, |b| {
            let h = wire::dta::KeyWriteHeader::new_unchecked(b);
            let d = h.data();
            vec![u(h.redundancy()), u(h.key()), u(u32::from_be_bytes([d[0], d[1], d[2], d[3]]))]
        }),
        (&wire::dta::KEYINCREMENT, |b| {
            let h = wire::dta::KeyIncrementHeader::new_unchecked(b);
            vec![u(h.redundancy()), u(h.key()), u(h.counter())]
        }),
        (&wire::dta::APPEND, |b| {
            let h = wire::dta::AppendHeader::new_unchecked(b);
            vec![u(h.list_id()), u(h.data())]
        }),
        (&wire::dta::POSTCARDER, |b| {
            let h = wire::dta::PostcarderHeader::new_unchecked(b);
            vec![u(h.key()), u(h.hop()), u(h.data())]
        }),
        (&wire::dta::SKETCH_MERGE, |b| {
            let h = wire::dta::SketchMergeHeader::new_unchecked(b);
            vec![
                u(h.sketch_id()),
                u(h.reporter_id()),
                u(h.column()),
                u(h.counter_count()),
                u(h.merge_op()),
                None,
            ]
        }),
        (&wire::dta::NACK, |b| {
            let h = wire::dta::NackHeader::new_unchecked(b);
            vec![u(h.seqnum()), u(h.nack()), u(h.slow_down()), u(h.extended()), None]
        }),
        (&wire::hpcc_int::SHIM, |b| {
            let h = wire::hpcc_int::IntHeader::new_unchecked(b);
            vec![
                u(h.n_hop()),
                u(h.max_hop()),
                u(h.overflow()),
                u(h.reflected()),
                u(h.compact()),
                None,
                u(h.next()),
            ]
        }),
        (&wire::hpcc_int::HOP, |b| {
            // A one-slot header around the hop, read through the view.
            let mut buf = vec![1, 1, 0, 0];
            buf.extend_from_slice(b);
            let hop = wire::hpcc_int::IntHeader::new_unchecked(&buf[..]).hop(0);
            vec![u(hop.switch_id), u(hop.port_id), u(hop.rate), u(hop.qlen), u(hop.ts), u(hop.tx_bytes)]
        }),
        (&wire::hpcc_int::HOP_COMPACT, |b| {
            // A one-slot compact header around the hop; the rate's code is its table index.
            let mut buf = vec![1, 1, wire::hpcc_int::FLAG_COMPACT, 0];
            buf.extend_from_slice(b);
            let hop = wire::hpcc_int::IntHeader::new_unchecked(&buf[..]).hop(0);
            vec![
                u(hop.rate_code()),
                u(hop.ts),
                u(hop.tx_bytes / wire::hpcc_int::COMPACT_TX_UNIT),
                u(hop.qlen),
            ]
        }),
        (&wire::pfc::PFC, |b| {
            let p = wire::pfc::PfcPacket::new_unchecked(b);
            let mut v = vec![u(wire::pfc::opcode(b).unwrap()), None, u(p.class_enable())];
            v.extend((0..8).map(|i| u(p.quanta(i))));
            v
        }),
        (&wire::pfc::PAUSE, |b| {
            vec![u(wire::pfc::opcode(b).unwrap()), u(wire::pfc::PausePacket::new_unchecked(b).quanta())]
        }),
        (&wire::ufab::HEADER, |b| {
            let p = wire::ufab::UfabPacket::new_unchecked(b);
            vec![u(p.kind_bits()), u(p.n_hop()), u(p.phi_pair())]
        }),
        (&wire::ufab::HOP, |b| {
            let mut buf = vec![0x10, 0, 0, 0];
            buf.extend_from_slice(b);
            let h = wire::ufab::UfabPacket::new_unchecked(&buf[..]).hop(0);
            vec![u(h.window), u(h.phi_l), u(h.tx_l), u(h.q_l), u(h.c_l)]
        }),
        (&wire::hawkeye::HEADER, |b| {
            let p = wire::hawkeye::PollingPacket::new_unchecked(b);
            let v = p.victim();
            vec![
                u(p.flag() as u8),
                None,
                u(p.ingress_port()),
                None,
                u(p.egress_port()),
                None,
                u(p.event_id()),
                ip(v.src_ip),
                ip(v.dst_ip),
                u(v.protocol),
                u(v.src_port),
                u(v.dst_port),
            ]
        }),
        (&wire::daiet::PREAMBLE, |b| {
            let mut b = b.to_vec();
            b[0] = wire::daiet::FRAME_DATA;
            let p = wire::daiet::DaietPacket::new_unchecked(&b[..]);
            vec![None, u(p.number_of_entries()), u(p.tree_id())]
        }),
        (&wire::daiet::END, |b| {
            let mut b = b.to_vec();
            b[0] = wire::daiet::FRAME_END;
            let p = wire::daiet::DaietPacket::new_unchecked(&b[..]);
            vec![None, u(p.tree_id())]
        }),
        (&wire::daiet::ENTRY, |b| {
            let e = wire::daiet::DaietEntry::read(b);
            vec![None, u(e.value)]
        }),
    ]
}

/// A header's bytes as its `Repr` (or view setter) writes them from values (each masked to its
/// field's width); what the generic reader must find in each field, `None` where the writer sets
/// a field itself (reserved bits, fixed values).
type Writer = fn(&[u64]) -> (Vec<u8>, Vec<Option<u64>>);

fn m(v: u64, bits: u32) -> u64 {
    if bits >= 64 { v } else { v & ((1 << bits) - 1) }
}

/// Every header with a writer.
fn writers() -> Vec<(&'static Header, Writer)> {
    use wire::roce::*;
    vec![
        (&wire::ethernet::HEADER, |v| {
            let r = wire::EthernetRepr {
                dst_addr: wire::EthernetAddress(m(v[0], 48).to_be_bytes()[2..].try_into().unwrap()),
                src_addr: wire::EthernetAddress(m(v[1], 48).to_be_bytes()[2..].try_into().unwrap()),
                vlan: None,
                ethertype: wire::EtherType(m(v[2], 16) as u16 | 1),
            };
            let mut b = vec![0; 14];
            r.emit(&mut b).unwrap();
            (b, vec![Some(m(v[0], 48)), Some(m(v[1], 48)), Some(m(v[2], 16) | 1)])
        }),
        (&wire::udp::HEADER, |v| {
            let r = wire::UdpRepr {
                src_port: m(v[0], 16) as u16,
                dst_port: m(v[1], 16) as u16,
                payload_len: m(v[2], 10) as usize,
            };
            let mut b = vec![0; 8];
            r.emit(&mut b).unwrap();
            (b, vec![Some(m(v[0], 16)), Some(m(v[1], 16)), Some(m(v[2], 10) + 8), Some(0)])
        }),
        (&wire::arp::HEADER, |v| {
            let r = wire::arp::ArpRepr {
                op: m(v[0], 16) as u16,
                sender_mac: wire::EthernetAddress(m(v[1], 48).to_be_bytes()[2..].try_into().unwrap()),
                sender_ip: (m(v[2], 32) as u32).into(),
                target_mac: wire::EthernetAddress(m(v[3], 48).to_be_bytes()[2..].try_into().unwrap()),
                target_ip: (m(v[4], 32) as u32).into(),
            };
            let mut b = vec![0; 28];
            r.emit(&mut b).unwrap();
            let want = [Some(1), Some(0x0800), Some(6), Some(4), Some(m(v[0], 16)), Some(m(v[1], 48))];
            let mut want = want.to_vec();
            want.extend([Some(m(v[2], 32)), Some(m(v[3], 48)), Some(m(v[4], 32))]);
            (b, want)
        }),
        (&RETH, |v| {
            let r = RethRepr { va: v[0], rkey: v[1] as u32, dma_len: v[2] as u32 };
            let mut b = vec![0; 16];
            r.emit(&mut b).unwrap();
            (b, vec![Some(v[0]), Some(m(v[1], 32)), Some(m(v[2], 32))])
        }),
        (&ATOMIC_ETH, |v| {
            let r = AtomicEthRepr { va: v[0], rkey: v[1] as u32, swap_add: v[2], compare: v[3] };
            let mut b = vec![0; 28];
            r.emit(&mut b).unwrap();
            (b, vec![Some(v[0]), Some(m(v[1], 32)), Some(v[2]), Some(v[3])])
        }),
        (&AETH, |v| {
            let r = AethRepr { syndrome: Syndrome::from_u8(v[0] as u8), msn: m(v[1], 24) as u32 };
            let mut b = vec![0; 4];
            r.emit(&mut b).unwrap();
            (b, vec![Some(u64::from(r.syndrome.to_u8())), Some(m(v[1], 24))])
        }),
        (&DETH, |v| {
            let r = DethRepr { qkey: v[0] as u32, src_qp: m(v[1], 24) as u32 };
            let mut b = vec![0; 8];
            r.emit(&mut b).unwrap();
            (b, vec![Some(m(v[0], 32)), Some(0), Some(m(v[1], 24))])
        }),
        (&wire::dta::APPEND, |v| {
            let r = wire::dta::DtaRepr {
                immediate: false,
                seq: None,
                primitive: wire::dta::Primitive::Append { list_id: v[0] as u32, data: v[1] as u32 },
            };
            let mut b = vec![0; 10];
            r.emit(&mut b).unwrap();
            (b[2..].to_vec(), vec![Some(m(v[0], 32)), Some(m(v[1], 32))])
        }),
        (&wire::dta::POSTCARDER, |v| {
            let r = wire::dta::DtaRepr {
                immediate: true,
                seq: None,
                primitive: wire::dta::Primitive::Postcarder {
                    key: v[0] as u32,
                    hop: v[1] as u8,
                    data: v[2] as u32,
                },
            };
            let mut b = vec![0; 11];
            r.emit(&mut b).unwrap();
            (b[2..].to_vec(), vec![Some(m(v[0], 32)), Some(m(v[1], 8)), Some(m(v[2], 32))])
        }),
        (&wire::dta::BASE_SHORT, |v| {
            let r = wire::dta::DtaRepr {
                immediate: v[0] & 1 == 1,
                seq: None,
                primitive: wire::dta::Primitive::Append { list_id: 0, data: 0 },
            };
            let mut b = vec![0; 10];
            r.emit(&mut b).unwrap();
            (b[..2].to_vec(), vec![Some(2), Some(v[0] & 1), Some(0)])
        }),
        (&wire::dta::NACK, |v| {
            let r = wire::dta::NackRepr::plain(v[0] as u8, v[1] & 1 == 1, v[2] & 1 == 1);
            let mut b = vec![0; 2];
            r.emit(&mut b).unwrap();
            (b, vec![Some(m(v[0], 8)), Some(v[1] & 1), Some(v[2] & 1), Some(0), Some(0)])
        }),
        (&wire::dta::NACK_EXT, |v| {
            // Every kind, by the first value mod 3; the bytes after the 2-byte NACK.
            let ext = match v[0] % 3 {
                0 => wire::dta::NackExt::Reports { count: v[1] as u8, epoch: v[2] as u8 },
                1 => wire::dta::NackExt::Sketch {
                    sketch_id: v[4] as u16,
                    reporter_id: v[5] as u16,
                    column: v[6] as u32,
                },
                _ => wire::dta::NackExt::Hello { epoch: v[2] as u8, nonce: v[6] as u32 },
            };
            let r = wire::dta::NackRepr { seqnum: 1, nack: true, slow_down: false, ext: Some(ext) };
            let mut b = vec![0; 14];
            r.emit(&mut b).unwrap();
            let want = match ext {
                wire::dta::NackExt::Reports { .. } => {
                    vec![Some(0), Some(m(v[1], 8)), Some(m(v[2], 8)), Some(0), Some(0), Some(0), Some(0)]
                }
                wire::dta::NackExt::Sketch { .. } => {
                    vec![
                        Some(1),
                        Some(0),
                        Some(0),
                        Some(0),
                        Some(m(v[4], 16)),
                        Some(m(v[5], 16)),
                        Some(m(v[6], 32)),
                    ]
                }
                wire::dta::NackExt::Hello { .. } => {
                    vec![Some(2), Some(0), Some(m(v[2], 8)), Some(0), Some(0), Some(0), Some(m(v[6], 32))]
                }
                // Its own layout over the same bytes (and 4 more): its round trip is in props.rs.
                wire::dta::NackExt::Progress { .. } => unreachable!("not generated here"),
            };
            (b[2..].to_vec(), want)
        }),
        (&wire::dta::SKETCH_MERGE, |v| {
            let counters = [0u8; 8];
            let r = wire::dta::DtaRepr {
                immediate: false,
                seq: None,
                primitive: wire::dta::Primitive::SketchMerge {
                    sketch_id: v[0] as u16,
                    reporter_id: v[1] as u16,
                    column: v[2] as u32,
                    op: wire::dta::MergeOp::Max,
                    counters: &counters,
                },
            };
            let mut b = vec![0; 22];
            r.emit(&mut b).unwrap();
            let want =
                vec![Some(m(v[0], 16)), Some(m(v[1], 16)), Some(m(v[2], 32)), Some(2), Some(1), Some(0)];
            (b[2..14].to_vec(), want)
        }),
        (&wire::hpcc_int::SHIM, |v| {
            let mut r = wire::hpcc_int::IntRepr::empty(8);
            r.overflow = v[0] & 1 == 1;
            r.reflected = v[1] & 1 == 1;
            r.next = v[2] as u8;
            r.compact = v[3] & 1 == 1;
            let mut b = vec![0; r.buffer_len()];
            r.emit(&mut b).unwrap();
            (
                b[..4].to_vec(),
                vec![
                    Some(0),
                    Some(8),
                    Some(v[0] & 1),
                    Some(v[1] & 1),
                    Some(v[3] & 1),
                    Some(0),
                    Some(m(v[2], 8)),
                ],
            )
        }),
        (&wire::hpcc_int::HOP, |v| {
            let hop = wire::hpcc_int::IntHopRepr {
                switch_id: v[0] as u16,
                port_id: v[1] as u16,
                rate: v[2] as u16,
                qlen: v[3] as u16,
                ts: v[4] as u32,
                tx_bytes: v[5] as u32,
                compact: false,
            };
            let mut b = [0u8; 4 + 16];
            b[1] = 1;
            wire::hpcc_int::IntHeader::new_unchecked(&mut b[..]).push_hop(&hop);
            let want = [m(v[0], 16), m(v[1], 16), m(v[2], 16), m(v[3], 16), m(v[4], 32), m(v[5], 32)];
            (b[4..].to_vec(), want.into_iter().map(Some).collect())
        }),
        (&wire::hpcc_int::HOP_COMPACT, |v| {
            let code = m(v[0], 4);
            let hop = wire::hpcc_int::IntHopRepr {
                rate: wire::hpcc_int::COMPACT_RATES[code as usize],
                ts: v[1] as u32,
                tx_bytes: (m(v[2], 20) as u32) * wire::hpcc_int::COMPACT_TX_UNIT,
                qlen: v[3] as u16,
                ..Default::default()
            };
            let mut b = [0u8; 4 + 8];
            b[1] = 1;
            b[2] = wire::hpcc_int::FLAG_COMPACT;
            wire::hpcc_int::IntHeader::new_unchecked(&mut b[..]).push_hop(&hop);
            let want = [code, m(v[1], 24), m(v[2], 20), m(v[3], 16)];
            (b[4..].to_vec(), want.into_iter().map(Some).collect())
        }),
        (&wire::pfc::PFC, |v| {
            let mut quanta = [0u16; 8];
            for (q, x) in quanta.iter_mut().zip(&v[1..]) {
                *q = *x as u16;
            }
            let r = wire::pfc::MacControlRepr::Pfc(wire::pfc::PfcRepr { class_enable: v[0] as u8, quanta });
            let mut b = vec![0; 20];
            r.emit(&mut b).unwrap();
            let mut want = vec![Some(0x0101), Some(0), Some(m(v[0], 8))];
            want.extend(quanta.iter().map(|&q| Some(u64::from(q))));
            (b, want)
        }),
        (&wire::mpls::HEADER, |v| {
            let r = wire::mpls::MplsRepr {
                label: m(v[0], 20) as u32,
                tc: m(v[1], 3) as u8,
                bottom: m(v[2], 1) == 1,
                ttl: m(v[3], 8) as u8,
            };
            let mut b = vec![0; 4];
            r.emit(&mut b).unwrap();
            (b, vec![Some(m(v[0], 20)), Some(m(v[1], 3)), Some(m(v[2], 1)), Some(m(v[3], 8))])
        }),
        (&wire::ufab::HOP, |v| {
            let mut hops = [wire::ufab::UfabHopRepr::default(); wire::ufab::MAX_HOPS];
            hops[0] = wire::ufab::UfabHopRepr {
                window: v[0] as u16,
                phi_l: v[1] as u16,
                tx_l: v[2] as u16,
                q_l: m(v[3], 12) as u16,
                c_l: m(v[4], 4) as u8,
            };
            let r = wire::ufab::UfabRepr {
                kind: wire::ufab::UfabKind::Probe,
                n_hop: 1,
                phi_pair: m(v[5], 24) as u32,
                slots: 1,
                hops,
            };
            let mut b = vec![0; 12];
            r.emit(&mut b).unwrap();
            let want = [m(v[0], 16), m(v[1], 16), m(v[2], 16), m(v[3], 12), m(v[4], 4)];
            (b[4..].to_vec(), want.into_iter().map(Some).collect())
        }),
        (&wire::ufab::HEADER, |v| {
            let r = wire::ufab::UfabRepr {
                kind: wire::ufab::UfabKind::Response,
                n_hop: 0,
                phi_pair: m(v[0], 24) as u32,
                slots: 0,
                hops: [wire::ufab::UfabHopRepr::default(); wire::ufab::MAX_HOPS],
            };
            let mut b = vec![0; 4];
            r.emit(&mut b).unwrap();
            (b, vec![Some(2), Some(0), Some(m(v[0], 24))])
        }),
        (&wire::hawkeye::HEADER, |v| {
            let r = wire::hawkeye::PollingRepr {
                flag: wire::hawkeye::PollingFlag::from_bits(v[0] as u8),
                ingress_port: m(v[1], 9) as u16,
                egress_port: m(v[2], 9) as u16,
                event_id: v[3] as u8,
                victim: wire::hawkeye::FiveTuple {
                    src_ip: (v[4] as u32).into(),
                    dst_ip: (v[5] as u32).into(),
                    protocol: v[6] as u8,
                    src_port: v[7] as u16,
                    dst_port: v[8] as u16,
                },
            };
            let mut b = vec![0; 19];
            r.emit(&mut b).unwrap();
            let want = [
                Some(m(v[0], 2)),
                Some(0),
                Some(m(v[1], 9)),
                Some(0),
                Some(m(v[2], 9)),
                Some(0),
                Some(m(v[3], 8)),
                Some(m(v[4], 32)),
                Some(m(v[5], 32)),
                Some(m(v[6], 8)),
                Some(m(v[7], 16)),
                Some(m(v[8], 16)),
            ];
            (b, want.to_vec())
        }),
        (&wire::daiet::END, |v| {
            let r = wire::daiet::DaietRepr::End { tree_id: v[0] as u32 };
            let mut b = vec![0; 5];
            r.emit(&mut b).unwrap();
            (b, vec![Some(1), Some(m(v[0], 32))])
        }),
    ]
}

#[test]
fn every_header_is_tiled_by_its_fields() {
    for (h, _) in headers() {
        assert!(h.is_tiled(), "{}", h.name);
    }
    for n in [4, 12, 28] {
        let h = wire::dta::keywrite_header(n).unwrap();
        assert!(h.is_tiled() && h.len == 5 + n, "keywrite {n}");
    }
}

proptest! {
    #[test]
    fn views_read_what_the_specification_places(vals in proptest::collection::vec(any::<u64>(), 16)) {
        for (h, read) in headers() {
            check(h, &vals, read);
        }
    }

    #[test]
    fn writers_place_what_the_specification_reads(vals in proptest::collection::vec(any::<u64>(), 16)) {
        for (h, write) in writers() {
            let (b, want) = write(&vals);
            prop_assert_eq!(b.len(), h.len, "{}", h.name);
            for (f, w) in h.fields.iter().zip(want) {
                if let Some(w) = w {
                    prop_assert_eq!(f.read(&b), Some(w), "{}.{}", h.name, f.name);
                }
            }
        }
    }
}

#[test]
fn reprs_write_what_the_specification_reads() {
    // Values with every field distinct, emitted by the Repr, read back by the specification.
    let bth = wire::roce::BthRepr {
        opcode: wire::roce::Opcode::RC_RDMA_WRITE_ONLY,
        solicited: true,
        migreq: false,
        pad_count: 3,
        pkey: 0xabcd,
        fecn: false,
        becn: true,
        dest_qp: 0x12_3456,
        ack_req: true,
        psn: 0xfe_dcba,
    };
    let mut b = [0u8; 12];
    bth.emit(&mut b).unwrap();
    let f = |n: &str| wire::roce::BTH.field(n).unwrap().read(&b).unwrap();
    assert_eq!(
        [f("opcode"), f("se"), f("pad_count"), f("pkey"), f("becn"), f("dest_qp"), f("ack_req"), f("psn")],
        [u64::from(bth.opcode.0), 1, 3, 0xabcd, 1, 0x12_3456, 1, 0xfe_dcba]
    );
    let ip = wire::Ipv4Repr {
        src_addr: [10, 1, 2, 3].into(),
        dst_addr: [10, 4, 5, 6].into(),
        protocol: 17,
        payload_len: 100,
        ttl: 63,
        dscp: 26,
        ecn: 2,
        ident: 0x1234,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0x0155,
    };
    let mut b = [0u8; 20];
    ip.emit(&mut b).unwrap();
    let f = |n: &str| wire::ipv4::HEADER.field(n).unwrap().read(&b).unwrap();
    assert_eq!(
        [
            f("version"),
            f("ihl"),
            f("dscp"),
            f("ecn"),
            f("total_len"),
            f("dont_frag"),
            f("frag_offset"),
            f("ttl")
        ],
        [4, 5, 26, 2, 120, 1, 0x0155, 63]
    );
    let r = wire::dta::DtaRepr {
        immediate: true,
        seq: Some(wire::dta::Sequence {
            seqnum: 7,
            retransmittable: true,
            priority: wire::dta::Priority::High,
            epoch: 5,
        }),
        primitive: wire::dta::Primitive::KeyIncrement {
            redundancy: 2,
            key: 0xdead_beef,
            counter: 0x0102_0304_0506,
        },
    };
    let mut b = [0u8; 16];
    r.emit(&mut b).unwrap();
    let base = |n: &str| wire::dta::BASE_LONG.field(n).unwrap().read(&b).unwrap();
    assert_eq!(
        [base("opcode"), base("seqnum"), base("immediate"), base("retransmittable"), base("priority")],
        [3, 7, 1, 1, 2]
    );
    let ki = |n: &str| wire::dta::KEYINCREMENT.field(n).unwrap().read(&b[3..]).unwrap();
    assert_eq!([ki("redundancy"), ki("key"), ki("counter")], [2, 0xdead_beef, 0x0102_0304_0506]);
}
