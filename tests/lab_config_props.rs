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
