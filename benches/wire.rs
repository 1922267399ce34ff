//! Wire-format costs on the translator's hot path: parsing an Ethernet/IPv4/UDP/DTA Key-Write
//! report, and building the 82-byte RoCEv2 RDMA WRITE (with RETH, 8-byte payload and ICRC) that
//! one Key-Write copy becomes.
//!
//! Run: `cargo bench --bench wire`. Figures are kept in BENCHMARKS.md.

use std::hint::black_box;
use std::net::Ipv4Addr;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use wire::dta::{DtaRepr, Format, Primitive, Priority, Sequence};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::roce::{BthRepr, Opcode, RethRepr, RoceExt, RoceRepr, icrc};
use wire::stack::{RoceStack, RoceTemplate, UdpFlow};
use wire::{Ipv4Packet, UdpPacket};

fn flow(dst_port: u16) -> UdpFlow {
    UdpFlow {
        eth_src: EthernetAddress([0x02, 0, 0, 0, 0, 1]),
        eth_dst: EthernetAddress([0x02, 0, 0, 0, 0, 2]),
        vlan: None,
        ip_src: Ipv4Addr::new(10, 0, 0, 101),
        ip_dst: Ipv4Addr::new(10, 0, 0, 51),
        dscp: 0,
        ecn: 0b10,
        ttl: 64,
        ident: 0,
        dont_frag: true,
        src_port: 49152,
        dst_port,
    }
}

fn keywrite_frame() -> Vec<u8> {
    let repr = DtaRepr {
        immediate: false,
        seq: Some(Sequence { seqnum: 1, retransmittable: false, priority: Priority::Low, epoch: 0 }),
        primitive: Primitive::KeyWrite { redundancy: 2, key: 0x1234_5678, data: &[0, 0, 0, 42] },
    };
    let mut buf = vec![0u8; 64];
    let n = flow(40040).emit_with(repr.buffer_len(), false, &mut buf, |b| repr.emit(b)).unwrap();
    buf.truncate(n);
    buf
}

/// The work a translator does to accept a report: Ethernet type, IPv4 lengths and checksum,
/// UDP port and length, DTA base and Key-Write sub-header.
#[inline(always)]
fn parse_keywrite(frame: &[u8]) -> Option<(u32, u8, u32)> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::IPV4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if !ip.verify_checksum() || ip.protocol() != 17 {
        return None;
    }
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    if udp.dst_port() != 40040 {
        return None;
    }
    match DtaRepr::parse(udp.payload(), Format::default()).ok()?.primitive {
        Primitive::KeyWrite { redundancy, key, data } => {
            Some((key, redundancy, u32::from_be_bytes([data[0], data[1], data[2], data[3]])))
        }
        _ => None,
    }
}

fn bench_parse(c: &mut Criterion) {
    let frame = keywrite_frame();
    assert_eq!(parse_keywrite(&frame), Some((0x1234_5678, 2, 42)));
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Elements(1));
    g.bench_function("eth_ipv4_udp_dta_keywrite", |b| b.iter(|| parse_keywrite(black_box(&frame))));
    g.finish();
}

fn bench_build(c: &mut Criterion) {
    // A Key-Write copy's payload: the key's checksum (little-endian) and the datum.
    let payload_of = |key: u32| {
        let mut p = [0u8; 8];
        p[..4].copy_from_slice(&key.to_le_bytes());
        p[4..].copy_from_slice(&42u32.to_be_bytes());
        p
    };
    let payload = payload_of(7);
    // One Key-Write copy: an RDMA WRITE Only to QP 0x11, its VA following the PSN.
    let bth =
        BthRepr { opcode: Opcode::RC_RDMA_WRITE_ONLY, pkey: 0xffff, dest_qp: 0x11, ..Default::default() };
    let ext_of = |psn: u32| RoceExt {
        reth: Some(RethRepr { va: 0x7f00_0000_0000 + u64::from(psn) * 8, rkey: 0x1234, dma_len: 8 }),
        ..RoceExt::default()
    };
    // The general builder: every header from scratch.
    let write = |psn: u32, payload: &[u8; 8], buf: &mut [u8]| {
        let roce = RoceRepr { bth: BthRepr { psn, ..bth }, ext: ext_of(psn), payload };
        RoceStack { flow: flow(4791), roce }.emit(buf)
    };
    let mut buf = [0u8; 128];
    assert_eq!(write(0, &payload, &mut buf).unwrap(), 82);
    icrc::verify(&buf[14..82]).unwrap();

    // The translator's path: one template per QP, built once.
    let template = RoceTemplate::new(&flow(4791), &bth, 8).unwrap();
    let templated =
        |psn: u32, payload: &[u8; 8], buf: &mut [u8]| template.emit(buf, psn, false, &ext_of(psn), payload);
    let mut other = [0u8; 128];
    assert_eq!(templated(5, &payload, &mut other).unwrap(), 82);
    write(5, &payload, &mut buf).unwrap();
    assert_eq!(buf[..82], other[..82]);

    // Inputs vary per packet (the PSN, hence the VA and payload); outputs are consumed through
    // `black_box` on the frame. Fat pointers are not passed through `black_box` inside the loop:
    // that spills them to the stack and reloads them with a wider load, a store-forwarding
    // stall that would be measured as part of the builder.
    let mut g = c.benchmark_group("build");
    g.throughput(Throughput::Elements(1));
    let mut psn = 0u32;
    g.bench_function("roce_write_82B_with_icrc", |b| {
        b.iter(|| {
            psn = (psn + 1) & 0xff_ffff;
            let payload = payload_of(psn);
            let n = write(psn, &payload, &mut buf);
            black_box(&buf);
            n
        })
    });
    g.bench_function("roce_write_82B_with_icrc_template", |b| {
        b.iter(|| {
            psn = (psn + 1) & 0xff_ffff;
            let payload = payload_of(psn);
            let n = templated(psn, &payload, &mut buf);
            black_box(&buf);
            n
        })
    });
    // A burst of 32, as the translator sends: write every packet, then seal every packet.
    let mut frames = [[0u8; 128]; 32];
    g.throughput(Throughput::Elements(32));
    g.bench_function("roce_write_82B_with_icrc_template_burst32", |b| {
        b.iter(|| {
            for (i, f) in frames.iter_mut().enumerate() {
                let psn = (psn + i as u32) & 0xff_ffff;
                let _ = template.write(f, psn, false, &ext_of(psn), &payload_of(psn));
            }
            for f in frames.iter_mut() {
                template.seal(&mut f[..82]);
            }
            black_box(&frames);
            psn = (psn + 32) & 0xff_ffff;
        })
    });
    g.finish();
    for f in &frames {
        icrc::verify(&f[14..82]).unwrap();
    }

    let mut g = c.benchmark_group("icrc");
    g.throughput(Throughput::Elements(1));
    write(1, &payload, &mut buf).unwrap();
    g.bench_function("compute_82B_frame", |b| b.iter(|| icrc::compute(black_box(&buf[14..82]))));
    g.finish();
}

criterion_group!(benches, bench_parse, bench_build);
criterion_main!(benches);
