//! Key-Write queries on a 1 GiB store at 50 % load (N = 2, 2^27 slots of 8 bytes, 2^25 keys
//! written twice each: N·K/S = 0.5), looking up random written keys on one core:
//!
//! * `batched` — `Stores::keywrite_lookup`, groups of `LOOKUP_BATCH` keys whose slots are all
//!   prefetched before the first is read (the batch query API's per-thread loop);
//! * `one_at_a_time` — `Stores::keywrite`, one key per call, each waiting for its own misses.
//!
//! Run: `taskset -c 1 cargo bench -p collector --bench keywrite`. Needs 1 GiB of free memory;
//! filling the store takes a few seconds before the first measurement. Figures are kept in
//! BENCHMARKS.md.

use std::hint::black_box;
use std::path::Path;

use collector::{CollectorConfig, Stores};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use roce::responder::Memory;
use wire::dta::{KeyHash, layout, scramble_key};

const SLOTS: u64 = 1 << 27;
const KEYS: u32 = 1 << 25;
const QUERIES: usize = 1 << 20;

/// The store, filled as the translator fills it: both copies of every key written through the
/// soft-RNIC's memory interface, in key order (later keys overwrite earlier ones).
fn filled() -> Stores {
    let cfg = CollectorConfig::parse(
        Path::new("bench.toml"),
        &format!(
            "[collector]\nip = \"127.0.0.1\"\n[keywrite]\nport = 1337\nslots = {SLOTS}\nredundancy = 2\n"
        ),
    )
    .expect("bench config");
    let (stores, warning) = Stores::new(&cfg, 1).expect("1 GiB of memory");
    if let Some(w) = warning {
        eprintln!("{w}");
    }
    eprintln!("hugepages: {}", stores.memory().host().hugepages());
    let region = stores.memory().regions()[0];
    let mut mem = stores.memory().clone();
    let mut slot = [0u8; 8];
    for i in 0..KEYS {
        let key = scramble_key(i);
        let h = KeyHash::new(key);
        layout::keywrite_slot(&h, &i.to_be_bytes(), &mut slot);
        for n in 0..2 {
            let va = region.va + layout::key_slot_index(&h, n, SLOTS) * 8;
            mem.write(region.rkey, va, &slot).expect("in bounds");
        }
    }
    stores
}

fn keywrite(c: &mut Criterion) {
    let stores = filled();
    // Random written keys (xorshift over the key indices).
    let mut x = 0x9e37_79b9_u32;
    let queries: Vec<u32> = (0..QUERIES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            scramble_key(x % KEYS)
        })
        .collect();
    let mut hits = Vec::with_capacity(QUERIES);
    stores.keywrite_lookup(&queries, None, &mut hits).unwrap();
    let found = hits.iter().filter(|h| h.value().is_some()).count();
    eprintln!("found {found} of {QUERIES} ({:.1} %)", 100.0 * found as f64 / QUERIES as f64);

    let mut g = c.benchmark_group("keywrite_1gib_load0.5");
    g.throughput(Throughput::Elements(QUERIES as u64));
    g.sample_size(20);
    g.bench_function("batched", |b| {
        b.iter(|| {
            hits.clear();
            stores.keywrite_lookup(black_box(&queries), None, &mut hits).unwrap();
            black_box(hits.len())
        })
    });
    g.bench_function("one_at_a_time", |b| {
        b.iter(|| {
            let mut found = 0usize;
            for &k in &queries {
                found += usize::from(stores.keywrite(black_box(k), None).unwrap().value.is_some());
            }
            black_box(found)
        })
    });
    g.finish();
}

criterion_group!(benches, keywrite);
criterion_main!(benches);
