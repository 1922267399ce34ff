//! Property: any values in a DTA translator's configuration — zero, huge, negative, out of every
//! range — give `check` an answer and never a panic; and what `check` accepts, `run` starts (on
//! ring ports: the switch, its state and its pipeline thread) and stops.

#[path = "dta/lab.rs"]
mod lab;

use dataplane::buf::PktBuf;
use dataplane::config::Config;
use dataplane::programs::build_switch;
use dataplane::programs::dta_translator::DtaTranslator;
use proptest::prelude::*;

/// A value for a numeric key: small, around a boundary, or extreme.
fn value() -> impl Strategy<Value = i64> {
    prop_oneof![
        12 => 1i64..200,
        1 => Just(0i64),
        1 => Just(-1),
        1 => Just(i64::MAX),
        1 => Just(1 << 32),
        1 => 200i64..70_000,
        1 => any::<i64>(),
    ]
}

const KEYS: &[&str] = &[
    "window",
    "ack_every",
    "max_timeout_us",
    "ack_probe_us",
    "append_flush_us",
    "nack_interval_us",
    "reporters",
    "park",
    "region_timeout_ms",
    "queue",
    "dscp",
    "ecn",
    "max_redundancy",
    "keywrite_data_len",
    "udp_port",
    "retry_limit",
];

/// Configurations the property built (to see it reaches the build, not only refusals).
static BUILT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn check_never_panics_and_what_it_accepts_builds(
        values in proptest::collection::vec(value(), KEYS.len()),
        ports in proptest::collection::vec(
            prop_oneof![8 => 1000i64..1100, 1 => Just(0i64), 1 => Just(1337), 1 => 1i64..70_000, 1 => any::<i64>()],
            3,
        ),
        pick in proptest::collection::vec(proptest::bool::weighted(0.2), KEYS.len()),
        cache in prop_oneof![Just(0i64), Just(1 << 30), Just(3), (0u32..20).prop_map(|b| 1i64 << b)],
        columns in prop_oneof![8 => 1i64..5000, 1 => Just(0i64), 1 => Just(i64::from(u32::MAX))],
    ) {
        let extra: String = KEYS
            .iter()
            .zip(&values)
            .zip(&pick)
            .filter(|(_, p)| **p)
            .map(|((k, v), _)| format!("{k} = {v}\n"))
            .collect();
        let collectors = format!(
            "[[dta.collector]]\nname = \"c0\"\nip = \"10.0.0.51\"\nkeywrite = {}\nkeyincrement = {}\n\
             postcarder = {{ port = {}, hops = 5, cache = {cache} }}\n\
             sketch = [{{ id = 1, port = 1350, rows = 2, columns = {columns}, reporters = [1], batch = 4 }}]\n",
            ports[0], ports[1], ports[2]
        );
        let text = lab::config(&extra, &collectors, &[(lab::C0, lab::C0_MAC)]);
        // Parsing and building must answer, Ok or a named error; a panic fails the property.
        match Config::parse(std::path::Path::new("p.toml"), &text) {
            Ok(cfg) => match build_switch::<DtaTranslator, PktBuf>(&cfg) {
                Ok(sw) => {
                    prop_assert!(!sw.program().queue_pairs().is_empty());
                    // And run starts it (on ring ports), then stops.
                    match dataplane::runtime::Runtime::start(&cfg) {
                        Ok(rt) => drop(rt.stop()),
                        Err(e) => prop_assert!(false, "check accepted, run refused:\n{text}\n{e}"),
                    }
                    BUILT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Err(e) => {
                    if std::env::var_os("SHOW").is_some() {
                        eprintln!("{e}");
                    }
                    prop_assert!(e.to_string().contains("p.toml"), "{e}")
                }
            },
            Err(e) => {
                if std::env::var_os("SHOW").is_some() {
                    eprintln!("{e}");
                }
                prop_assert!(e.to_string().contains("p.toml"), "{e}")
            }
        }
    }
}

#[test]
fn the_property_reaches_builds() {
    // Run it once more, quietly, and count: some random configurations must be accepted.
    check_never_panics_and_what_it_accepts_builds();
    assert!(BUILT.load(std::sync::atomic::Ordering::Relaxed) > 0, "every random configuration was refused");
}
