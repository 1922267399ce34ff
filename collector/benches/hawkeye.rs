//! The Hawkeye analyzer's time per incident on a k = 4 fat tree (20 switches): Algorithm 1's
//! graph and Algorithm 2's diagnosis for each incident of a lab trace — trace 0 of
//! `config/labs/hawkeye/microburst-incast.toml` (`softfabric hawkeye trace … 0`, run with
//! `softfabric lab run`), whose Hawkeye output is kept in `benches/data/hawkeye-fattree-k4/`.
//! The target is ≤ 10 ms per incident.
//!
//! Run: `cargo bench -p collector --bench hawkeye`. Figures are kept in BENCHMARKS.md.

use std::hint::black_box;

use collector::hawkeye::{self, Params, lab};
use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data/hawkeye-fattree-k4");
    let read = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
    let (incs, topo) = lab::load(
        &read("hawkeye_reports.jsonl"),
        &read("hawkeye_polls.jsonl"),
        &read("hawkeye_topology.json"),
        2_000_000,
    )
    .unwrap();
    assert!(!incs.is_empty());
    let params = Params::default();
    let mut g = c.benchmark_group("hawkeye_analyzer");
    for (n, inc) in incs.iter().enumerate() {
        let (graph, ds) = hawkeye::analyze(inc, &topo, &params);
        eprintln!(
            "incident {n}: {} reports, {} ports, {} flows, {} edges; {:?}",
            inc.reports.len(),
            graph.ports.len(),
            graph.flows.len(),
            graph.port_port.len() + graph.flow_port.len() + graph.port_flow.len(),
            ds.iter().map(|d| d.anomaly).collect::<Vec<_>>()
        );
        g.bench_function(format!("incident_{n}"), |b| {
            b.iter(|| black_box(hawkeye::analyze(inc, &topo, &params)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
