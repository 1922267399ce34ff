//! The virtual-time lab end to end: the bundled incast lab, run in process.

use std::path::Path;

use softfabric::lab::{self, Cc, LabConfig};

fn incast() -> LabConfig {
    LabConfig::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs/incast-16to1.toml")).unwrap()
}

/// The same configuration and seed give byte-identical CSV, for both congestion controls.
#[test]
fn the_same_config_and_seed_give_identical_csv() {
    for cc in [Cc::Hpcc, Cc::Dcqcn] {
        let mut cfg = incast();
        cfg.cc = cc;
        cfg.duration_ns = 200_000;
        let a = lab::output::csv(&lab::run(&cfg, |_| {}).unwrap());
        let b = lab::output::csv(&lab::run(&cfg, |_| {}).unwrap());
        assert_eq!(a, b, "{cc:?}");
        assert!(a.iter().any(|(n, t)| *n == "queues.csv" && t.lines().count() > 100));
    }
}

/// 16→1 incast at 100 Gb/s with HPCC++ (η = 0.95, INT stamped by the switch): every flow
/// finishes, nothing is dropped, no PFC pause is sent, and the bottleneck carries the 8 MB at
/// close to line rate (each flow's FCT is at least the fair-share time, and the last is within
/// 25 % of the time the whole burst needs at line rate). The bottleneck queue peaks once, at the
/// burst's arrival (16 windows of one BDP), and falls from then on.
#[test]
fn hpcc_absorbs_a_16_to_1_incast_without_pfc() {
    let cfg = incast();
    let r = lab::run(&cfg, |_| {}).unwrap();
    assert!(r.flows.iter().all(|f| f.fct_ns.is_some()), "{:?}", r.flows);
    assert_eq!((r.switch_drops, r.retransmits), (0, 0));
    assert!(r.pfc.is_empty(), "{:?}", &r.pfc[..r.pfc.len().min(4)]);
    let total_bits = 16.0 * 500_000.0 * 8.0;
    let line_time_ns = total_bits / 100.0;
    let last = r.flows.iter().filter_map(|f| f.fct_ns).max().unwrap() as f64;
    assert!(last < 1.25 * line_time_ns, "last FCT {last} ns vs {line_time_ns} ns at line rate");
    let q: Vec<_> = r.queues.iter().filter(|s| s.switch == 0 && s.port == 0).collect();
    let peak = q.iter().max_by_key(|s| s.bytes).unwrap();
    let after: Vec<u64> = q.iter().filter(|s| s.time_ns > peak.time_ns).map(|s| s.bytes).collect();
    assert!(
        after.windows(2).filter(|w| w[1] > w[0] + 16 * 1100).count() == 0,
        "the queue grew again after its peak"
    );
    assert_eq!(*after.last().unwrap(), 0);
}

/// The binary rejects a lab it cannot run — here a host cut off from the fabric — with the
/// file, the line and the reason, and exit code 2.
#[test]
fn a_lab_with_a_disconnected_host_exits_2_naming_file_and_line() {
    let dir = std::env::temp_dir().join(format!("softfabric-lab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cut.toml");
    std::fs::write(
        &file,
        "[lab]\nduration_us = 10\ncc = \"hpcc\"\n[topology]\nkind = \"explicit\"\nhosts = 2\nswitches = 2\n\
         rate = \"100G\"\ndelay_ns = 1000\n[[link]]\na = \"h0\"\nb = \"s0\"\n[[link]]\na = \"h1\"\nb = \"s1\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_softfabric"))
        .args(["lab", "run"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}:6: topology.hosts: host 1 is disconnected", file.display())), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
