//! `l2l3` on memory ports: bursts of 32 64-byte frames through the whole switch on one core —
//! receive, ingress (parse, MAC learning, LPM or MAC lookup, rewrite, TTL and checksum), the
//! traffic manager (admission, accounting, scheduling), egress and transmit — using the
//! runtime's own poll steps. Before each burst the frames are rewritten from a template, as a
//! NIC writes received frames.
//!
//! Run: `cargo bench -p dataplane --bench l2l3`. Figures are kept in BENCHMARKS.md.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataplane::programs::l2l3::L2l3;
use dataplane::programs::macswap::MacSwap;
use wire::ethernet::EthernetAddress;

#[path = "support/mod.rs"]
mod support;
use support::BURST;

type Bench = support::Bench<L2l3>;

fn cfg() -> String {
    support::two_ports("l2l3", r#"static_mac = [{ mac = "02:00:00:00:0b:0b", port = "p1" }]"#)
}

fn frame(dst_mac: EthernetAddress, dst: [u8; 4], sport: u16) -> Vec<u8> {
    support::frame(dst_mac, dst, sport, 9)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("l2l3");
    g.throughput(Throughput::Elements(BURST as u64));
    let routed: Vec<Vec<u8>> = (0..BURST as u16)
        .map(|i| frame(EthernetAddress([2, 0, 0, 0, 0, 0x10]), [10, 0, 2, 2], 1000 + i))
        .collect();
    let mut b = Bench::new(&cfg(), routed);
    assert_eq!(b.burst(), BURST);
    assert_eq!(b.switch.counters().drops.iter().sum::<u64>(), 0);
    g.bench_function("route_64B_burst32", |x| x.iter(|| black_box(b.burst())));
    let bridged: Vec<Vec<u8>> =
        (0..BURST as u16).map(|i| frame(EthernetAddress([2, 0, 0, 0, 0xb, 0xb]), [10, 9, 9, 9], i)).collect();
    let mut b = Bench::new(&cfg(), bridged);
    assert_eq!(b.burst(), BURST);
    g.bench_function("bridge_64B_burst32", |x| x.iter(|| black_box(b.burst())));
    // What DPDK's net_null vdevs deliver (scripts/bench-dpdk.sh): all-zero frames, whose
    // source is never learned and whose destination is unknown, so they are flooded.
    let zero = vec![vec![0u8; 60]; BURST];
    let mut z = Bench::new(&cfg(), zero);
    assert_eq!(z.burst(), BURST);
    g.bench_function("flood_zero_64B_burst32", |x| x.iter(|| black_box(z.burst())));
    let macswap_cfg = support::ports("macswap");
    // The whole switch around the least a program can do: testpmd's macswap, as
    // `scripts/bench-dpdk.sh null` runs it against testpmd. What it costs over `ports_only` is
    // the switch's own per-packet work (counters, metadata, TM cut-through, stage, transmit).
    let mut m: support::Bench<MacSwap> = support::Bench::new(&macswap_cfg, vec![vec![0u8; 60]; BURST]);
    assert_eq!(m.burst(), BURST);
    g.bench_function("macswap_64B_burst32", |x| x.iter(|| black_box(m.burst())));
    assert_eq!(b.ports_only(), BURST);
    g.bench_function("ports_only_64B_burst32", |x| x.iter(|| black_box(b.ports_only())));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
