//! Property: any values in the sections every program shares — `[runtime]`, `[tm]` and
//! `[[port]]` — are answered by `check` (Ok, or an error naming the file and the key), never a
//! panic; and what `check` accepts, `run` starts: the runtime comes up on memory ports, its
//! pipeline threads running, and stops.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use dataplane::config::Config;
use dataplane::runtime::Runtime;
use proptest::prelude::*;

/// A number as TOML: small, at a boundary, or extreme; integers and floats.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => (1i64..5_000).prop_map(|v| v.to_string()),
        1 => Just("0".to_string()),
        1 => Just("-1".to_string()),
        1 => Just(i64::MAX.to_string()),
        1 => Just((1i64 << 32).to_string()),
        1 => Just((1i64 << 24).to_string()),
        1 => any::<i64>().prop_map(|v| v.to_string()),
        12 => (0.0f64..1.0).prop_map(|v| format!("{v:?}")),
        1 => Just("nan".to_string()),
        1 => Just("inf".to_string()),
        1 => Just("1e300".to_string()),
    ]
}

/// A rate as written in a port's `speed` or `shape`.
fn rate() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec!["10G", "25G", "100G", "1G", "400M"]).prop_map(|s| format!("\"{s}\"")),
        1 => Just("\"0G\"".to_string()),
        1 => Just("\"-1G\"".to_string()),
        1 => Just("\"1e30G\"".to_string()),
        1 => Just("\"fast\"".to_string()),
        1 => Just("7".to_string()),
    ]
}

const RUNTIME: &[&str] =
    &["burst", "pool_buffers", "dataroom", "stats_interval_s", "max_recirc", "idle_sleep_max_us"];
const TM: &[&str] = &[
    "buffer_bytes",
    "reserve_bytes",
    "headroom_bytes",
    "pause_quanta",
    "egress_alpha",
    "max_packets",
    "seed",
];
const PORT: &[&str] = &["overhead_bytes", "burst_bytes", "inject_loss"];

static STARTED: AtomicUsize = AtomicUsize::new(0);

fn section(keys: &[&str], values: &[String], pick: &[bool]) -> String {
    keys.iter().zip(values).zip(pick).filter(|(_, p)| **p).map(|((k, v), _)| format!("{k} = {v}\n")).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn shared_sections_are_answered_and_what_check_accepts_runs(
        rv in proptest::collection::vec(number(), RUNTIME.len()),
        rp in proptest::collection::vec(proptest::bool::weighted(0.2), RUNTIME.len()),
        tv in proptest::collection::vec(number(), TM.len()),
        tp in proptest::collection::vec(proptest::bool::weighted(0.2), TM.len()),
        pv in proptest::collection::vec(number(), PORT.len()),
        pp in proptest::collection::vec(proptest::bool::weighted(0.2), PORT.len()),
        speed in rate(),
        shape in proptest::option::weighted(0.3, rate()),
        second_port in any::<bool>(),
    ) {
        let mut ports = String::new();
        for (i, mac) in ["02:00:00:00:00:01", "02:00:00:00:00:02"].iter().enumerate().take(1 + usize::from(second_port)) {
            ports += &format!(
                "[[port]]\nname = \"r{i}\"\nbackend = \"ring\"\nmac = \"{mac}\"\nspeed = {speed}\n{}{}",
                shape.as_ref().map(|s| format!("shape = {s}\n")).unwrap_or_default(),
                section(PORT, &pv, &pp),
            );
        }
        let text = format!(
            "program = \"macswap\"\n[runtime]\n{}[tm]\n{}{ports}",
            section(RUNTIME, &rv, &rp),
            section(TM, &tv, &tp),
        );
        let cfg = match Config::parse(Path::new("p.toml"), &text) {
            Ok(cfg) => cfg,
            Err(e) => {
                let e = e.to_string();
                prop_assert!(e.contains("p.toml"), "{e}");
                return Ok(());
            }
        };
        // What check accepted, run starts (the pool and the TM's descriptors are allocated
        // here, so a size check passes only what fits).
        match Runtime::start(&cfg) {
            Ok(rt) => {
                rt.stop();
                STARTED.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => prop_assert!(false, "check accepted, run refused:\n{text}\n{e}"),
        }
    }
}

#[test]
fn the_property_reaches_running_switches() {
    shared_sections_are_answered_and_what_check_accepts_runs();
    assert!(STARTED.load(Ordering::Relaxed) > 0, "every random configuration was refused");
}
