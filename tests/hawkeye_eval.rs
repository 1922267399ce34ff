//! `softfabric hawkeye eval` on the bundled scenarios (`config/labs/hawkeye/`), a few traces
//! each (the 100-trace run and its figures are in BENCHMARKS.md): the analyzer names the injected
//! anomaly and its root cause in most traces.

use softfabric::hawkeye_eval::{self, Injected, VARIANTS};
use softfabric::lab::LabResult;

/// Trace `i` of scenario `file` (in `config/labs/hawkeye/`), its lab file edited by `edit`, run.
fn run_trace(file: &str, i: u64, edit: impl Fn(&mut toml::Table)) -> (hawkeye_eval::Trace, LabResult) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs/hawkeye");
    let s = hawkeye_eval::Scenario::load(&dir.join(file)).unwrap();
    let t = s.trace(i).unwrap();
    let mut v: toml::Table = toml::from_str(&t.text).unwrap();
    edit(&mut v);
    let lab = softfabric::lab::LabConfig::parse(&s.base_path, &toml::to_string(&v).unwrap()).unwrap();
    let r = softfabric::lab::run(&lab, |_| {}).unwrap();
    (t, r)
}

/// Bytes flow `flow` had delivered by `when`.
fn delivered(r: &LabResult, flow: usize, when: u64) -> u64 {
    r.rates.iter().filter(|x| x.flow == flow && x.time_ns <= when).map(|x| x.rx_bytes).max().unwrap_or(0)
}

/// Every diagnosis of the run's incidents.
fn diagnoses(r: &LabResult) -> Vec<collector::hawkeye::Diagnosis> {
    use collector::hawkeye::{self as hk, Params};
    let (incs, topo) = hawkeye_eval::incidents(r, 1_500_000).unwrap();
    incs.iter().flat_map(|i| hk::analyze(i, &topo, &Params::default()).1).collect()
}

#[test]
fn the_bundled_scenarios_are_diagnosed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs/hawkeye");
    let results = hawkeye_eval::eval(&dir, 6, 2, false).unwrap();
    assert!(results.len() >= 2, "the bundled scenarios");
    let hk = VARIANTS.iter().position(|v| *v == "hawkeye").unwrap();
    for (s, scores) in &results {
        let sc = scores[hk];
        assert_eq!(sc.traces, 6);
        // No host is ever named a PFC source but the one that sent PAUSE.
        assert_eq!(sc.innocent_hosts, 0, "{}: {sc:?}", s.path.display());
        if s.class.is_none() {
            // A quiet network: no storm, deadlock or injection claim at all.
            assert_eq!(sc.pfc_claims(), 0, "{}: {sc:?}", s.path.display());
            assert_eq!((sc.right, sc.detected), (0, 0));
            continue;
        }
        assert!(
            sc.detected >= 5,
            "{}: right anomaly and root cause in most traces: {sc:?}",
            s.path.display()
        );
        assert!(sc.right >= sc.detected);
    }
    assert!(results.iter().any(|(s, _)| s.class.is_none()), "the bundled no_anomaly scenario");
    // Overheads (Figure 9): full polling reads every switch and needs no polling packet; the
    // tracing reads a subset; victim-only reads and sends no more than the tracing.
    let at = |v: &str| VARIANTS.iter().position(|x| *x == v).unwrap();
    for (s, scores) in results.iter().filter(|(s, _)| s.class.is_some()) {
        let (h, full, victim) =
            (scores[at("hawkeye")], scores[at("full_polling")], scores[at("victim_only")]);
        let name = s.path.display();
        assert!(
            full.telemetry_bytes > h.telemetry_bytes,
            "{name}: full polling collects more: {full:?} {h:?}"
        );
        assert!(full.switches >= h.switches, "{name}: full polling reads every switch with traffic");
        assert_eq!(full.polling_packets, 0, "{name}: full polling sends no polling packet");
        assert!(h.polling_packets > 0 && victim.polling_packets <= h.polling_packets, "{name}");
        assert!(victim.telemetry_bytes <= h.telemetry_bytes, "{name}");
        assert!(h.timed > 0 && h.collection_ns > 0, "{name}: collection timed");
    }
    // Figures 8–10 render, one group per scenario's class.
    let dir = std::env::temp_dir().join(format!("softfabric-hk-figs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    hawkeye_eval::plot::figures(&dir, &results).unwrap();
    for f in ["fig8-baselines.svg", "fig9-overhead.svg", "fig10-telemetry.svg"] {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("pfc_storm") && svg.contains("hawkeye"), "{f}");
    }
    std::fs::remove_dir_all(&dir).ok();
    let (csv, md) = hawkeye_eval::tables(&results);
    assert_eq!(csv.lines().count(), 1 + results.len() * VARIANTS.len());
    assert!(md.contains("| microburst-incast | microburst_incast | hawkeye |"));
    assert!(md.contains("precision strict") && md.contains("precision verified"));
    let summary = hawkeye_eval::class_summary(&results);
    assert!(summary.contains("| no_anomaly at load 0.3/0.6/0.8 | 1 | 6 |"), "{summary}");
}

/// `softfabric hawkeye generate`: the same seed gives the same files; seven consecutive seeds
/// cover every class once; every scenario loads and every trace of it makes a lab (the
/// deadlocks' route overrides included, on fat trees and leaf-spines).
#[test]
fn generated_scenarios_cover_every_class_and_are_reproducible() {
    let base = std::env::temp_dir().join(format!("softfabric-hk-gen-{}", std::process::id()));
    let (a, b) = (base.join("a"), base.join("b"));
    let pa = hawkeye_eval::generate::generate(&a, 1_000, 21).unwrap();
    let pb = hawkeye_eval::generate::generate(&b, 1_000, 21).unwrap();
    for (x, y) in pa.iter().zip(&pb) {
        assert_eq!(std::fs::read(x).unwrap(), std::fs::read(y).unwrap(), "{}", x.display());
    }
    let mut classes = std::collections::BTreeSet::new();
    let mut families = std::collections::BTreeSet::new();
    for p in &pa {
        let s = hawkeye_eval::Scenario::load(p).unwrap_or_else(|e| panic!("{e}"));
        classes.insert(s.class_name());
        families.insert(s.base_path.file_name().unwrap().to_string_lossy().contains("fattree"));
        for i in 0..3 {
            let t = s.trace(i).unwrap_or_else(|e| panic!("{} trace {i}: {e}", p.display()));
            assert_eq!(t.injected == Injected::Nothing, s.class.is_none());
        }
    }
    assert_eq!(classes.len(), hawkeye_eval::generate::CLASSES.len(), "{classes:?}");
    assert_eq!(families.len(), 2, "fat trees and leaf-spines");
    assert!(hawkeye_eval::generate::generate(&a, 1, 0).is_err());
    std::fs::remove_dir_all(&base).ok();
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

/// The in-loop deadlock scenario makes a real deadlock in the switches' traffic managers: the
/// three loop flows deliver nothing in the second half of the run (queues that never drain),
/// unfinished; and the analyzer finds the loop of the four ports of the trace's pod and the
/// contention on it.
#[test]
fn a_routing_loop_deadlocks_for_real_and_is_diagnosed() {
    use collector::hawkeye::{self as hk, Anomaly, Params};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs/hawkeye");
    let s = hawkeye_eval::Scenario::load(&dir.join("in-loop-deadlock.toml")).unwrap();
    let t = s.trace(0).unwrap();
    let r = softfabric::lab::run(&t.lab, |_| {}).unwrap();
    let half = r.simulated_ns / 2;
    for flow in 0..3 {
        let at = |when: u64| {
            r.rates
                .iter()
                .filter(|x| x.flow == flow && x.time_ns <= when)
                .map(|x| x.rx_bytes)
                .max()
                .unwrap_or(0)
        };
        assert!(at(half) > 0, "loop flow {flow} started");
        assert_eq!(at(half), at(r.simulated_ns), "loop flow {flow} delivers nothing after {half} ns");
        assert!(r.flows[flow].fct_ns.is_none(), "loop flow {flow} never finishes");
    }
    let (incs, topo) = hawkeye_eval::incidents(&r, 2_000_000).unwrap();
    let loops: Vec<_> = incs
        .iter()
        .flat_map(|i| hk::analyze(i, &topo, &Params::default()).1)
        .filter(|d| d.anomaly == Some(Anomaly::InLoopDeadlock))
        .collect();
    assert!(!loops.is_empty(), "an in-loop deadlock diagnosed");
    // The loop is the misconfigured square of the trace's pod: one port on each of its four
    // switches (e0 -> a0 -> e1 -> a1 in pod 0, switches 1, 9, 2, 10).
    let on: std::collections::BTreeSet<u16> = loops[0].deadlock_loop.iter().map(|p| p.switch_id).collect();
    assert_eq!(on.len(), 4, "{:?}", loops[0].deadlock_loop);
    assert!(on.iter().all(|s| t.locus.contains(s)), "{on:?} among the misconfigured switches {:?}", t.locus);
    // Turning the pods moves it: the first traces land in more than one pod, each diagnosed.
    let pods: std::collections::BTreeSet<Vec<u16>> = (0..6).map(|i| s.trace(i).unwrap().locus).collect();
    assert!(pods.len() > 1, "{pods:?}");
}

/// The out-of-loop scenario's loop does not deadlock on its own (its flows run under congestion
/// control and keep delivering), but the storming host's PAUSE outside the loop (host 2 of
/// pod 0, turned with the trace's pod) freezes it for good — long after the storm ends — and the
/// analyzer names that host as the initiator outside the loop.
#[test]
fn an_injected_pause_outside_the_loop_deadlocks_it() {
    use collector::hawkeye::{Anomaly, RootCause};
    let file = "out-of-loop-deadlock-injection.toml";
    let long = |v: &mut toml::Table| {
        v["lab"].as_table_mut().unwrap().insert("duration_us".into(), 3000.into());
    };
    let (_, calm) = run_trace(file, 0, |v| {
        long(v);
        v.remove("host");
    });
    for flow in 0..3 {
        assert!(
            delivered(&calm, flow, 3_000_000) > delivered(&calm, flow, 2_000_000),
            "without the storm, loop flow {flow} keeps going"
        );
    }
    let (t, r) = run_trace(file, 0, long);
    for flow in 1..3 {
        // Flows 1 and 2 do not go to the storming host: only the loop holds them.
        assert_eq!(
            delivered(&r, flow, 1_500_000),
            delivered(&r, flow, 3_000_000),
            "loop flow {flow} frozen from 1.5 ms to 3 ms (the storm stopped at 0.7 ms)"
        );
    }
    let found = diagnoses(&r)
        .iter()
        .filter(|d| d.anomaly == Some(Anomaly::OutOfLoopDeadlockInjection))
        .any(|d| matches!(d.root_cause, Some(RootCause::Host { host: Some((h, _)), .. }) if Injected::Host(h as usize) == t.injected));
    assert!(
        found,
        "the deadlock diagnosed with the storming host {:?} as the initiator outside the loop",
        t.injected
    );
}

/// The out-of-loop contention scenario: its loop flows run at line rate but on 25 G hosts, so
/// the loop alone keeps going; the burst into a host outside the loop (host 2 of pod 0, turned
/// with the trace's pod) freezes it for good, long after the burst has drained, and the analyzer
/// names the contention at that host's port — the burst and the loop flow into the same host —
/// as the initiator outside the loop.
#[test]
fn contention_outside_the_loop_deadlocks_it() {
    use collector::hawkeye::{Anomaly, RootCause};
    let file = "out-of-loop-deadlock-contention.toml";
    let (_, calm) = run_trace(file, 0, |v| {
        v.remove("incast");
    });
    for flow in 0..3 {
        assert!(
            delivered(&calm, flow, 3_000_000) > delivered(&calm, flow, 2_000_000),
            "without the burst, loop flow {flow} keeps going"
        );
    }
    let (t, r) = run_trace(file, 0, |_| {});
    for flow in 1..3 {
        // Flows 1 and 2 do not go to the burst's receiver: only the loop holds them.
        assert_eq!(
            delivered(&r, flow, 2_500_000),
            delivered(&r, flow, 3_000_000),
            "loop flow {flow} frozen from 2.5 ms to 3 ms (the burst drained by ~1.5 ms)"
        );
    }
    let Injected::Flows(want) = &t.injected else { panic!("the contention's flows: {:?}", t.injected) };
    // The lab's host addressing (`host_ip` in src/lab/engine/fabric.rs).
    let ip = |h: usize| std::net::Ipv4Addr::new(10, 0, h as u8, 2);
    let found =
        diagnoses(&r).iter().filter(|d| d.anomaly == Some(Anomaly::OutOfLoopDeadlockContention)).any(|d| {
            match &d.root_cause {
                Some(RootCause::Flows { flows, .. }) => flows
                    .iter()
                    .all(|(f, _)| want.iter().any(|&(s, d)| f.src_ip == ip(s) && f.dst_ip == ip(d))),
                _ => false,
            }
        });
    assert!(found, "the deadlock diagnosed with the contention at the burst's receiver: {want:?}");
}
