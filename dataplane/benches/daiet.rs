//! `daiet`'s aggregation on one core: bursts of 32 DAIET data packets of 10 pairs (the paper's
//! packets) through the whole switch on memory ports (receive, ingress, Algorithm 1 per pair,
//! the packet consumed), one tree of 16 K cells and a vocabulary of 8 192 words cycling through
//! the packets — the steady state of a WordCount round, where most pairs aggregate into a cell
//! holding their key and some spill. The figure is pairs per second.
//!
//! Run: `cargo bench -p dataplane --bench daiet`. Figures are kept in BENCHMARKS.md.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::config::Config;
use dataplane::port::MemPort;
use dataplane::programs::build_switch;
use dataplane::programs::daiet::Daiet;
use dataplane::runtime::{receive_all, transmit_all};
use dataplane::switch::Switch;
use roce::daiet::{key_of, write_data};
use wire::daiet::DaietEntry;
use wire::ethernet::EthernetAddress;
use wire::stack::UdpFlow;

#[path = "support/mod.rs"]
mod support;
use support::BURST;

const PAIRS: usize = 10;
const WORDS: usize = 8192;

/// One tree of 16 K cells whose reducer is behind p1.
const TREE: &str = r#"
[[daiet.tree]]
id = 1
reducer = "10.0.2.2"
children = 1
cells = 16384
"#;

/// Data packet `i`: pairs `10·i … 10·i + 9` of the vocabulary.
fn packet(i: usize) -> Vec<u8> {
    let flow = UdpFlow::host_udp(
        EthernetAddress([2, 0, 0, 0, 1, 2]),
        EthernetAddress([2, 0, 0, 0, 0, 0x10]),
        std::net::SocketAddrV4::new([10, 0, 1, 2].into(), 10000),
        std::net::SocketAddrV4::new([10, 0, 2, 2].into(), 10000),
    );
    let pairs: Vec<DaietEntry> = (0..PAIRS)
        .map(|k| DaietEntry { key: key_of(&format!("word{}", (i * PAIRS + k) % WORDS)).unwrap(), value: 1 })
        .collect();
    let mut payload = [0u8; 512];
    let n = write_data(1, &pairs, &mut payload).unwrap();
    let mut b = vec![0u8; 512];
    let len = flow
        .emit_with(n, false, &mut b, |p| {
            p.copy_from_slice(&payload[..n]);
            Ok(())
        })
        .unwrap();
    b.truncate(len);
    b
}

fn bench(c: &mut Criterion) {
    let cfg = Config::parse(std::path::Path::new("bench.toml"), &support::two_ports("daiet", TREE)).unwrap();
    let mut sw: Switch<Daiet, PktBuf> = build_switch(&cfg).unwrap();
    let mut ports: Vec<Option<Box<MemPort<PktBuf>>>> =
        vec![Some(Box::new(MemPort::new(4 * BURST))), Some(Box::new(MemPort::new(4 * BURST)))];
    let mut pool = HeapPool::new(8 * BURST, 2048);
    let templates: Vec<Vec<u8>> = (0..WORDS / PAIRS + 1).map(packet).collect();
    let mut rx = Vec::with_capacity(BURST);
    let mut tx = Vec::with_capacity(BURST);
    let mut sent = Vec::with_capacity(BURST);
    let mut fill = Vec::with_capacity(BURST);
    let mut now = 0u64;
    let mut k = 0usize;
    let mut step = || {
        // A NIC writing 32 received frames, then one receive step of the runtime.
        for _ in 0..BURST {
            let mut p = pool.alloc().unwrap();
            p.set(&templates[k]);
            k = (k + 1) % templates.len();
            fill.push(p);
        }
        ports[0].as_mut().unwrap().push_rx_burst(&mut fill);
        now += 1000;
        receive_all(&mut sw, &mut ports, &mut pool, &mut rx, now, BURST);
        // Spillover packets leave towards the reducer; their buffers come back.
        transmit_all(&mut sw, &mut ports, &mut pool, &mut tx, now, BURST);
        ports[1].as_mut().unwrap().take_tx(&mut sent);
        for f in sent.drain(..) {
            pool.free(f);
        }
    };
    // Twice through the vocabulary first: the cells hold their keys (the steady state timed),
    // also when the bench runs once (`cargo bench -- --test`).
    for _ in 0..2 * templates.len().div_ceil(BURST) {
        step();
    }
    let mut g = c.benchmark_group("daiet");
    g.throughput(Throughput::Elements((BURST * PAIRS) as u64));
    g.bench_function("aggregate_10_pairs_burst32", |x| x.iter(&mut step));
    g.finish();
    let s = sw.program().stats();
    assert!(s.pairs > 0 && s.aggregated > s.spilled, "{s:?}");
    assert_eq!(sw.counters().drops.iter().sum::<u64>(), 0);
    println!(
        "daiet: {} pairs: {} stored, {} aggregated, {} spilled ({} spillover packets)",
        s.pairs, s.stored, s.aggregated, s.spilled, s.spill_packets
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
