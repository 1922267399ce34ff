//! `hawkeye` against `l2l3` in the same run: bursts of 32 routed 64-byte frames through the whole
//! switch on one core (receive, ingress, TM, egress with the epoch telemetry, transmit) on memory
//! ports, as `benches/l2l3.rs` measures `l2l3`; then a polling packet's handling (ingress fan-out
//! and every copy's egress rules), and the control side's snapshot of one port's epochs.
//! `HAWKEYE_BENCH_EXTRA="[hawkeye];flow_slots = 1024"` adds keys to the hawkeye switch's
//! configuration (`;` for a new line).
//!
//! Run: `cargo bench -p dataplane --bench hawkeye`. Figures are kept in BENCHMARKS.md.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataplane::buf::{Frame, Pool};
use dataplane::model::Resources;
use dataplane::programs::hawkeye::Hawkeye;
use dataplane::programs::hawkeye::telemetry::{Sample, Telemetry};
use dataplane::programs::l2l3::L2l3;
use wire::EthernetRepr;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::hawkeye::report::Entry;
use wire::hawkeye::{FiveTuple, PollingFlag, PollingRepr};

#[path = "support/mod.rs"]
mod support;
use support::{BURST, Bench};

fn cfg(program: &str) -> String {
    let extra = if program == "hawkeye" {
        std::env::var("HAWKEYE_BENCH_EXTRA").unwrap_or_default().replace(";", "\n")
    } else {
        String::new()
    };
    support::two_ports(program, &extra)
}

/// A 64-byte frame of flow `sport`, routed to 10.0.2.2.
fn frame(sport: u16) -> Vec<u8> {
    support::frame(EthernetAddress([2, 0, 0, 0, 0, 0x10]), [10, 0, 2, 2], sport, 4791)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("hawkeye");
    g.throughput(Throughput::Elements(BURST as u64));
    let frames: Vec<Vec<u8>> = (0..BURST as u16).map(|i| frame(1000 + i)).collect();
    // Interleaved in one run: l2l3, then hawkeye, on the same frames.
    let mut l: Bench<L2l3> = Bench::new(&cfg("l2l3"), frames.clone());
    assert_eq!(l.burst(), BURST);
    let mut h: Bench<Hawkeye> = Bench::new(&cfg("hawkeye"), frames);
    assert_eq!(h.burst(), BURST);
    assert_eq!(h.switch.counters().drops.iter().sum::<u64>(), 0);
    // The figure the target reads: both programs timed in alternation, so that the
    // VM's drift between criterion's two measurements does not make the ratio.
    if support::selected("hawkeye/interleaved") {
        support::interleaved("hawkeye/interleaved (first l2l3, second hawkeye)", &mut l, &mut h, 1001, 500);
    }
    g.bench_function("l2l3_route_64B_burst32", |x| x.iter(|| black_box(l.burst())));
    g.bench_function("hawkeye_route_64B_burst32", |x| x.iter(|| black_box(h.burst())));
    g.finish();

    // A polling packet (11: fan out to every other port) in, its copies through egress (the
    // control side's queue fills and counts what it cannot take: its snapshot is timed below).
    let mut g = c.benchmark_group("hawkeye_polling");
    g.throughput(Throughput::Elements(1));
    let mut poll = vec![0u8; 60];
    EthernetRepr {
        src_addr: EthernetAddress([2, 0, 0, 0, 1, 2]),
        dst_addr: EthernetAddress([2, 0, 0, 0, 0, 0x10]),
        vlan: None,
        ethertype: EtherType(0x6888),
    }
    .emit(&mut poll)
    .unwrap();
    PollingRepr {
        flag: PollingFlag::Both,
        ingress_port: 511,
        egress_port: 511,
        event_id: 0,
        victim: FiveTuple {
            src_ip: [10, 0, 1, 2].into(),
            dst_ip: [10, 0, 2, 2].into(),
            protocol: 17,
            src_port: 1000,
            dst_port: 4791,
        },
    }
    .emit(&mut poll[14..])
    .unwrap();
    let mut event = 0u8;
    g.bench_function("polling_packet_in_and_copies_out", |x| {
        x.iter(|| {
            event = event.wrapping_add(1);
            poll[19] = event;
            h.now += 100_000_000; // past the de-duplication window
            let mut p = h.pool.alloc().unwrap();
            p.set(&poll);
            h.switch.receive(h.now, 0, p, &mut h.pool);
            let mut out = Vec::new();
            for port in 0..2 {
                while h.switch.transmit(h.now, port, &mut out, 8, &mut h.pool) > 0 {}
            }
            for f in out.drain(..) {
                h.pool.free(f);
            }
        })
    });
    g.finish();

    // The control side's snapshot of one port: 65 536 flow slots × 2 epochs scanned.
    let mut g = c.benchmark_group("hawkeye_control");
    let mut res = Resources::default();
    let mut t = Telemetry::new(&mut res, 4, 20, 65536, 8);
    for i in 0..4096u32 {
        let f = FiveTuple {
            src_ip: i.into(),
            dst_ip: [10, 0, 2, 2].into(),
            protocol: 17,
            src_port: i as u16,
            dst_port: 4791,
        };
        t.record(
            1 << 20,
            &Sample {
                flow: Some(f),
                in_port: (i % 8) as u16,
                out_port: 1,
                bytes: 64,
                enq_qdepth: 1000,
                paused: i % 3 == 0,
            },
        );
    }
    // The telemetry alone: one burst of 32 samples (32 flows, as the switch bench sends).
    let samples: Vec<Sample> = (0..BURST as u16)
        .map(|i| Sample {
            flow: Some(FiveTuple {
                src_ip: [10, 0, 1, 2].into(),
                dst_ip: [10, 0, 2, 2].into(),
                protocol: 17,
                src_port: 1000 + i,
                dst_port: 4791,
            }),
            in_port: 0,
            out_port: 1,
            bytes: 60,
            enq_qdepth: 0,
            paused: false,
        })
        .collect();
    let mut now = 1u64 << 20;
    g.throughput(Throughput::Elements(BURST as u64));
    g.bench_function("record_burst32", |x| {
        x.iter(|| {
            now += 1000;
            for s in &samples {
                t.record(now, black_box(s));
            }
        })
    });
    g.throughput(Throughput::Elements(1));
    let mut entries: Vec<Entry> = Vec::new();
    g.bench_function("snapshot_port_4096_flows", |x| {
        x.iter(|| {
            entries.clear();
            t.snapshot(1 << 20, 1, &mut entries);
            black_box(entries.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
