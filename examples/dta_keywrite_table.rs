//! Key-Write queryability through the real pipeline (the demo's lab: load generator, translator,
//! soft-RNIC collector on loopback) against the independent-copy model (seed `000` §3.1, Fig.
//! 11–12): K distinct keys written once each into S slots with N copies, then every key queried;
//! a key is found when one of its copies still holds its checksum and its value. Prints a
//! Markdown table for N = 1, 2, 4 at loads K/S = 1/4, 1/2 and 1.
//!
//! `cargo run --release --example dta_keywrite_table` (the table in BENCHMARKS.md).

use std::net::Ipv4Addr;
use std::time::Duration;

use collector::store::independent_copies_model;
use roce::dta::LoadKind;
use softfabric::dta_demo::{Lab, LabConfig, keys_of, load};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let slots: u64 = 1 << 18;
    println!("| N | keys K | K/S | found | model | found − model |");
    println!("|---|---|---|---|---|---|");
    for n in [1u8, 2, 4] {
        for (i, keys) in [slots / 4, slots / 2, slots].into_iter().enumerate() {
            let lab = Lab::start(LabConfig {
                collector: Ipv4Addr::new(127, 0, 2, 10 + n),
                translator: Ipv4Addr::new(127, 0, 2, 100 + n * 4 + i as u8),
                keywrite_slots: slots,
                keywrite_redundancy: n,
                lists: 1,
                append_entries: 1024,
                ..LabConfig::demo()
            })?;
            let spec = load(LoadKind::KeyWrite { redundancy: n }, keys as u32);
            let r = lab.send(Ipv4Addr::new(127, 0, 3, 1 + i as u8), &spec, keys, 200_000)?;
            lab.settle(Duration::from_secs(30))?;
            let answers = lab.collector.stores().keywrite_batch(&keys_of(&spec), None, 2)?;
            let found = answers.iter().filter(|a| a.value.is_some()).count() as f64 / keys as f64;
            let model = independent_copies_model(keys, slots, n);
            println!(
                "| {n} | {keys} | {:.2} | {:.2} % | {:.2} % | {:+.2} |",
                keys as f64 / slots as f64,
                100.0 * found,
                100.0 * model,
                100.0 * (found - model)
            );
            assert_eq!(r.unrecoverable, 0);
            lab.stop();
        }
    }
    Ok(())
}
