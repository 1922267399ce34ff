//! The virtual-time lab's engine speed: events per second on `websearch-fattree-k4` (k = 4
//! fat-tree, 20 switches running the l2l3 program with INT, 16 HPCC++ hosts, WebSearch at 50 %
//! load), cut to its first 2 ms so one iteration stays short. Setup (building the 20 switches)
//! is part of each iteration, as it is of every `lab run`.
//!
//! Run: `taskset -c 1 cargo bench --bench lab`. Figures are kept in BENCHMARKS.md; the
//! whole-lab figures (`softfabric lab run` prints events/s) are there too.

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use softfabric::lab::{self, Cc, LabConfig};

fn engine(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs/websearch-fattree-k4.toml");
    let mut g = c.benchmark_group("lab");
    g.sample_size(10);
    for cc in [Cc::Hpcc, Cc::Dcqcn] {
        let mut cfg = LabConfig::load(&path).expect("bundled lab");
        cfg.cc = cc;
        cfg.duration_ns = 2_000_000;
        cfg.flows.retain(|f| f.start_ns < cfg.duration_ns);
        // The run is deterministic: every iteration processes the same events.
        let events = lab::run(&cfg, |_| {}).expect("runs").events;
        g.throughput(Throughput::Elements(events));
        g.bench_function(format!("websearch_fattree_k4_2ms_{cc:?}_events"), |b| {
            b.iter(|| lab::run(&cfg, |_| {}).expect("runs").events)
        });
    }
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
