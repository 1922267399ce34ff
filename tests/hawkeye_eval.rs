//! `softfabric hawkeye eval` on the bundled scenarios (`config/labs/hawkeye/`), a few traces
//! each (the 100-trace run and its figures are in BENCHMARKS.md): the analyzer names the injected
//! anomaly and its root cause in most traces.

use softfabric::hawkeye_eval::{self, VARIANTS};

#[test]
fn the_bundled_scenarios_are_diagnosed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs/hawkeye");
    let results = hawkeye_eval::eval(&dir, 6, 2, false).unwrap();
    assert!(results.len() >= 2, "the bundled scenarios");
    let hk = VARIANTS.iter().position(|v| *v == "hawkeye").unwrap();
    for (s, scores) in &results {
        let sc = scores[hk];
        assert_eq!(sc.traces, 6);
        assert!(
            sc.detected >= 5,
            "{}: right anomaly and root cause in most traces: {sc:?}",
            s.path.display()
        );
        assert!(sc.right >= sc.detected);
    }
    let (csv, md) = hawkeye_eval::tables(&results);
    assert_eq!(csv.lines().count(), 1 + results.len() * VARIANTS.len());
    assert!(md.contains("| microburst-incast | microburst_incast | hawkeye |"));
}

#[test]
fn a_bad_scenario_is_refused_naming_file_and_key() {
    let dir = std::env::temp_dir().join(format!("softfabric-hk-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(&f, "[scenario]\nclass = \"nonsense\"\nbase = \"x.toml\"\nloads = [0.1]\n[anomaly]\nkind = \"incast\"\nstart_us = 1\n").unwrap();
    let e = hawkeye_eval::Scenario::load(&f).unwrap_err();
    assert!(e.contains("bad.toml") && e.contains("scenario.class"), "{e}");
    std::fs::write(&f, "[scenario]\nclass = \"pfc_storm\"\nbase = \"x.toml\"\nloads = [0.1]\n[anomaly]\nkind = \"incast\"\nstart_us = 1\n").unwrap();
    let e = hawkeye_eval::Scenario::load(&f).unwrap_err();
    assert!(e.contains("scenario.base"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
