//! Property: any values in a collector's configuration give `check` an answer, never a panic;
//! and what `check` accepts (of a size this test can map) registers its memory as `serve` does.

use std::path::Path;

use collector::{CollectorConfig, Stores};
use proptest::prelude::*;

fn value() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => (0u32..16).prop_map(|b| 1i64 << b),
        1 => Just(0i64),
        1 => Just(-1),
        1 => Just(i64::MAX),
        1 => Just(1i64 << 61),
        1 => Just(1i64 << 62),
        1 => any::<i64>(),
        2 => 1i64..70_000,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn check_never_panics_and_what_it_accepts_registers(v in proptest::collection::vec(value(), 10)) {
        let text = format!(
            "[collector]\nip = \"127.0.0.1\"\nmemory = \"pages\"\n\
             [keywrite]\nport = {}\nslots = {}\nredundancy = {}\n\
             [keyincrement]\nport = {}\nslots = {}\n\
             [postcarder]\nport = {}\nslots = {}\n\
             [[append]]\nlist = {}\nport = {}\nentries = {}\n",
            v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]
        );
        match CollectorConfig::parse(Path::new("p.toml"), &text) {
            Ok(cfg) => {
                let bytes: u64 = cfg.stores.iter().map(|s| s.kind.bytes()).sum();
                if bytes <= 64 << 20 {
                    let r = Stores::new(&cfg, 7);
                    prop_assert!(r.is_ok(), "accepted, then not registered: {:?}", r.err());
                }
            }
            Err(e) => prop_assert_eq!(e.file.to_str(), Some("p.toml")),
        }
    }
}
