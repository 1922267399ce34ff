//! Property: any values in a lab file — zero, negative, huge, out of every range — are answered
//! by `LabConfig::parse` (Ok, or an error naming the file), never a panic, and quickly.

use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use softfabric::lab::LabConfig;

fn value() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => 1i64..64,
        1 => Just(0i64),
        1 => Just(-1),
        1 => Just(i64::MAX),
        1 => Just(1i64 << 40),
        1 => any::<i64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn lab_files_are_answered_never_a_panic(
        v in proptest::collection::vec(value(), 12),
        kind in prop_oneof![Just("star"), Just("dumbbell"), Just("leaf_spine"), Just("fat_tree")],
    ) {
        let text = format!(
            "[lab]\nduration_us = {}\ncc = \"hpcc\"\nmtu = {}\nsample_ns = {}\n\
             [topology]\nkind = \"{kind}\"\nhosts = {}\nleaves = {}\nspines = {}\nhosts_per_leaf = {}\nk = {}\n\
             rate = \"100G\"\ndelay_ns = {}\n\
             [[flow]]\nsrc = {}\ndst = {}\nsize = {}\nstart_ns = 0\n",
            v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]
        );
        let t0 = Instant::now();
        if let Err(e) = LabConfig::parse(Path::new("p.toml"), &text) {
            prop_assert!(e.to_string().contains("p.toml"), "{e}");
        }
        prop_assert!(t0.elapsed() < Duration::from_secs(2), "answered after {:?}", t0.elapsed());
    }
}

/// A number as TOML, integer or float, from ordinary to absurd.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => (1i64..64).prop_map(|v| v.to_string()),
        10 => (0.0f64..1.0).prop_map(|v| format!("{v:?}")),
        1 => Just("0".to_string()),
        1 => Just("-1".to_string()),
        1 => Just(i64::MAX.to_string()),
        1 => Just((1i64 << 40).to_string()),
        1 => Just("nan".to_string()),
        1 => Just("inf".to_string()),
        1 => Just("1e300".to_string()),
        1 => Just("-0.5".to_string()),
    ]
}

/// A rate as a lab file writes one.
fn rate() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "\"100G\"",
        "\"25G\"",
        "\"1G\"",
        "\"0G\"",
        "\"-5G\"",
        "\"1e40G\"",
        "\"x\"",
        "3",
    ])
    .prop_map(str::to_string)
}

/// `[hpcc]` keys, and `[runtime]` keys a lab file may add to its switches' configurations.
const HPCC: &[&str] = &["eta", "max_stage", "w_ai_bytes"];
const RUNTIME: &[&str] = &["burst", "max_recirc", "stats_interval_s", "dataroom"];

static RAN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// The sections beyond the topology and flows — `[hpcc]`, the switches' own sections, the
    /// topology's buffer and fabric rate, Poisson load — are answered at load, never a panic;
    /// what load accepts runs (for 20 µs of virtual time).
    #[test]
    fn lab_sections_are_answered_and_what_loads_runs(
        hv in proptest::collection::vec(number(), HPCC.len()),
        hp in proptest::collection::vec(proptest::bool::weighted(0.4), HPCC.len()),
        ai_rate in proptest::option::weighted(0.2, rate()),
        tv in proptest::collection::vec(number(), RUNTIME.len()),
        tp in proptest::collection::vec(proptest::bool::weighted(0.2), RUNTIME.len()),
        tm_too in proptest::bool::weighted(0.1),
        buffer in proptest::option::weighted(0.2, number()),
        fabric in proptest::option::weighted(0.2, rate()),
        load in proptest::option::weighted(0.3, number()),
        cc in prop_oneof![Just("hpcc"), Just("dcqcn")],
    ) {
        let pick = |keys: &[&str], v: &[String], p: &[bool]| -> String {
            keys.iter().zip(v).zip(p).filter(|(_, p)| **p).map(|((k, v), _)| format!("{k} = {v}\n")).collect()
        };
        let mut hpcc = pick(HPCC, &hv, &hp);
        if let Some(r) = &ai_rate {
            hpcc += &format!("ai_rate = {r}\n");
        }
        // A `[tm]` of its own clashes with the one the lab writes: refused at load.
        let sections = format!("[runtime]\n{}{}", pick(RUNTIME, &tv, &tp), if tm_too { "[tm]\nseed = 1\n" } else { "" });
        let text = format!(
            "[lab]\nduration_us = 20\ncc = \"{cc}\"\n\
             [topology]\nkind = \"dumbbell\"\nhosts = 4\nrate = \"100G\"\ndelay_ns = 1000\n{}{}\
             [hpcc]\n{hpcc}\
             [switches]\nprogram = \"l2l3\"\nsections = '''\n{sections}'''\n\
             [[flow]]\nsrc = 0\ndst = 3\nsize = 100000\nstart_ns = 0\n{}",
            buffer.map(|b| format!("buffer_bytes = {b}\n")).unwrap_or_default(),
            fabric.map(|r| format!("fabric_rate = {r}\n")).unwrap_or_default(),
            load.map(|l| format!("[[poisson]]\ncdf = \"websearch\"\nload = {l}\n")).unwrap_or_default(),
        );
        let t0 = Instant::now();
        let cfg = match LabConfig::parse(Path::new("p.toml"), &text) {
            Ok(cfg) => cfg,
            Err(e) => {
                prop_assert!(e.to_string().contains("p.toml"), "{e}");
                return Ok(());
            }
        };
        prop_assert!(t0.elapsed() < Duration::from_secs(2), "answered after {:?}", t0.elapsed());
        if let Err(e) = softfabric::lab::run(&cfg, |_| {}) {
            prop_assert!(false, "loaded, then failed to run:\n{text}\n{e}");
        }
        RAN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn the_lab_property_reaches_runs() {
    lab_sections_are_answered_and_what_loads_runs();
    assert!(RAN.load(std::sync::atomic::Ordering::Relaxed) > 0, "every random lab was refused");
}
