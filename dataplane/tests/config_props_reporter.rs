//! Property: any values in the `[l2l3]` and `[dta_reporter]` sections of a DTA reporter switch
//! (the `l2l3` sections every program builds on) are answered by `check` — Ok, or an error
//! naming the file — never a panic, and what `check` accepts builds and `run` starts (on ring ports).

use std::path::Path;

use dataplane::buf::PktBuf;
use dataplane::config::Config;
use dataplane::programs::build_switch;
use dataplane::programs::dta_reporter::DtaReporter;
use proptest::prelude::*;

fn value() -> impl Strategy<Value = i64> {
    prop_oneof![
        12 => 1i64..200,
        1 => Just(0i64),
        1 => Just(-1),
        1 => Just(i64::MAX),
        1 => Just(1i64 << 40),
        1 => 200i64..70_000,
        1 => any::<i64>(),
    ]
}

const L2L3: &[&str] =
    &["mac_table_size", "mac_aging_s", "route_table_size", "neighbor_table_size", "int_switch_id"];
const REPORTER: &[&str] =
    &["sample", "redundancy", "list", "keep", "flows", "udp_port", "src_port", "epoch", "queue"];

static BUILT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn config(l2l3: &str, reporter: &str) -> String {
    format!(
        "program = \"dta_reporter\"\n[[port]]\nname = \"r0\"\nbackend = \"ring\"\nspeed = \"100G\"\n\
         mac = \"02:00:00:00:00:01\"\nipv4 = [\"10.0.2.1/24\"]\n[l2l3]\n{l2l3}\n\
         [dta_reporter]\ncollectors = [\"10.0.0.51\"]\nswitch_id = 7\n{reporter}\n"
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn l2l3_and_reporter_sections_are_answered_never_a_panic(
        lv in proptest::collection::vec(value(), L2L3.len()),
        lp in proptest::collection::vec(proptest::bool::weighted(0.3), L2L3.len()),
        rv in proptest::collection::vec(value(), REPORTER.len()),
        rp in proptest::collection::vec(proptest::bool::weighted(0.3), REPORTER.len()),
    ) {
        let pick = |keys: &[&str], v: &[i64], p: &[bool]| -> String {
            keys.iter().zip(v).zip(p).filter(|(_, p)| **p).map(|((k, v), _)| format!("{k} = {v}\n")).collect()
        };
        let text = config(&pick(L2L3, &lv, &lp), &pick(REPORTER, &rv, &rp));
        match Config::parse(Path::new("p.toml"), &text) {
            Ok(cfg) => match build_switch::<DtaReporter, PktBuf>(&cfg) {
                Ok(_) => {
                    // And run starts it (on a ring port), then stops.
                    match dataplane::runtime::Runtime::start(&cfg) {
                        Ok(rt) => drop(rt.stop()),
                        Err(e) => prop_assert!(false, "check accepted, run refused:\n{text}\n{e}"),
                    }
                    BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Err(e) => prop_assert!(e.to_string().contains("p.toml"), "{e}"),
            },
            Err(e) => prop_assert!(e.to_string().contains("p.toml"), "{e}"),
        }
    }
}

#[test]
fn the_property_reaches_builds() {
    l2l3_and_reporter_sections_are_answered_never_a_panic();
    assert!(BUILT.load(std::sync::atomic::Ordering::Relaxed) > 0, "every random configuration was refused");
}
