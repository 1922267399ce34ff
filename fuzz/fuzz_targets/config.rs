//! Arbitrary configuration files: a switch's (`dataplane check`, then the switch built and its
//! program exported as P4 for both targets), a collector's (`collector check`) and a lab's
//! (`softfabric lab run` up to the run). The first byte picks which; the rest is the file, as
//! text. Every answer is a configuration or an error naming the file; nothing may panic, and
//! nothing a file says may make the build allocate without bound (libFuzzer's malloc limit
//! turns that into a crash too).
#![no_main]

use std::path::Path;

use dataplane::buf::PktBuf;
use dataplane::config::Config;
use dataplane::p4::Target;
use libfuzzer_sys::fuzz_target;

const FILE: &str = "fuzz.toml";

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let path = Path::new(FILE);
    match pick % 3 {
        0 => match Config::parse(path, &text) {
            Ok(cfg) => {
                if dataplane::programs::build::<PktBuf>(&cfg).is_ok() {
                    let _ = dataplane::programs::resolved(&cfg);
                    for target in [Target::Tna, Target::V1model] {
                        let _ = dataplane::programs::p4_export(&cfg, target);
                    }
                }
            }
            Err(e) => assert!(e.to_string().contains(FILE), "{e}"),
        },
        1 => {
            if let Err(e) = collector::CollectorConfig::parse(path, &text) {
                assert!(e.to_string().contains(FILE), "{e}");
            }
        }
        _ => {
            if let Err(e) = softfabric::lab::LabConfig::parse(path, &text) {
                assert!(e.to_string().contains(FILE), "{e}");
            }
        }
    }
});
