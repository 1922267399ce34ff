//! Every example in `config/` is a configuration the switch accepts and builds, so the files
//! the README points at stay in step with the code.

use dataplane::buf::PktBuf;
use dataplane::config::Config;
use dataplane::programs;

#[test]
fn every_example_config_builds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
    let mut seen = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        // The collector's configs are checked by the collector crate.
        if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("collector")) {
            continue;
        }
        let cfg = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        programs::build::<PktBuf>(&cfg).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        seen.push(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    seen.sort();
    assert!(
        seen.iter().any(|s| s == "dta-translator.toml")
            && seen.iter().any(|s| s == "dta-translator-udp.toml")
            && seen.iter().any(|s| s == "l2l3.toml"),
        "{seen:?}"
    );
}
