//! Every registered program exported for both targets and compiled by the real P4 compiler:
//! `p4c-bm2-ss` (p4c's front and mid end, then the BMv2 back end) for v1model, and `p4test`
//! (the front and mid end, with the TNA includes) for TNA — the Tofino back end's resource fit
//! is not checked. The compiler is `../shared/tools/p4c.sh` beside the workspace (p4c
//! 1.2.5.16), or the script or binary folder named by `SOFTFABRIC_P4C` (a folder holding
//! `p4test` and `p4c-bm2-ss`, e.g. your own p4c build's); where there is none the test prints
//! SKIPPED — and fails under `SOFTFABRIC_REQUIRE_P4C=1` (`.ci/run` sets it where it finds the
//! script). About 4 minutes on 2 cores: p4c takes 5–40 s a program (functions tabulated in
//! tables get their entries from the control plane, not as `const entries`, whose cost in p4c's
//! front end is quadratic: the DTA translator's took 267 s).
//!
//! Each program is exported from its golden configuration (`tests/p4/<program>.toml`), which
//! every registered program must have: a new program is compiled the day it is added. A
//! compilation that fails is a test failure unless the (program, target, tool) is in
//! [`NOT_YET`] with its reason — and one listed there that compiles fails the test too, so the
//! list only shrinks. Every warning p4c prints is read: fixed, or explained — quoted — in the
//! program's `SUMMARY.md` (the exporter's limitations), else the test fails. The test prints
//! the whole table, with each compilation's time and warnings.

#[path = "support/p4_tools.rs"]
mod p4_tools;

use std::path::Path;

use p4_tools::{P4c, p4c};

use dataplane::config::Config;
use dataplane::p4::Target;
use dataplane::programs;

/// Compilations known to fail today, with why (issue 55): each is removed when fixed.
const NOT_YET: &[(&str, &str, &str, &str)] = &[];

/// What one compilation gave: the first error lines if it failed, its warnings (the message
/// after `warning: `), and how long it took.
#[derive(Clone)]
struct Outcome {
    failed: Option<String>,
    warnings: Vec<String>,
    secs: f64,
}

/// Run `tool` on `file` for `target`.
fn compile(p4c: &P4c, tool: &str, target: Target, file: &Path, out: &Path) -> Outcome {
    let mut cmd = p4c.command(tool, target == Target::Tna);
    cmd.arg(file);
    if tool == "p4c-bm2-ss" {
        cmd.arg("-o").arg(out.join("bmv2.json"));
    }
    let t0 = std::time::Instant::now();
    let o = cmd.current_dir(out).output().unwrap_or_else(|e| panic!("running p4c {tool}: {e}"));
    let secs = t0.elapsed().as_secs_f64();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let mut warnings: Vec<String> =
        text.lines().filter_map(|l| l.split_once("warning: ").map(|(_, m)| m.trim().to_string())).collect();
    warnings.dedup();
    let failed = (!o.status.success())
        .then(|| text.lines().filter(|l| l.contains("error")).take(3).collect::<Vec<_>>().join(" | "));
    Outcome { failed, warnings, secs }
}

#[test]
fn every_registered_program_compiles_with_p4c_for_both_targets() {
    let Some(p4c) = p4c() else {
        assert!(
            std::env::var("SOFTFABRIC_REQUIRE_P4C").as_deref() != Ok("1"),
            "SOFTFABRIC_REQUIRE_P4C=1 and no p4c: ../shared/tools/p4c.sh or SOFTFABRIC_P4C"
        );
        eprintln!(
            "SKIPPED: no p4c (../shared/tools/p4c.sh, or SOFTFABRIC_P4C=<p4c.sh or a folder with p4test>)"
        );
        return;
    };
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/p4");
    let work = std::env::temp_dir().join(format!("softfabric-p4c-{}", std::process::id()));
    // Every compilation to run: p4c-bm2-ss for v1model (its front and mid end are p4test's,
    // and the BMv2 back end checks more), p4test --tna for TNA.
    let mut jobs = Vec::new();
    for info in programs::PROGRAMS {
        let cfg_path = golden.join(format!("{}.toml", info.name));
        assert!(cfg_path.exists(), "{}: every registered program has {}", info.name, cfg_path.display());
        let cfg = Config::load(&cfg_path).unwrap_or_else(|e| panic!("{e}"));
        for (target, tool) in [(Target::V1model, "p4c-bm2-ss"), (Target::Tna, "p4test")] {
            let export = programs::p4_export(&cfg, target)
                .unwrap_or_else(|e| panic!("{} {}: {e}", info.name, target.name()));
            let dir = work.join(info.name).join(target.name());
            std::fs::create_dir_all(&dir).unwrap();
            for (name, text) in &export.files {
                std::fs::write(dir.join(name), text).unwrap();
            }
            let file = dir.join(format!("{}.p4", info.name));
            assert!(file.exists(), "{} {}: no {}", info.name, target.name(), file.display());
            jobs.push((info.name, target, tool, file, dir));
        }
    }
    // Two at a time (the big programs take p4c tens of seconds each).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((_, target, tool, file, dir)) = jobs.get(i) else { break };
                    let r = compile(&p4c, tool, *target, file, dir);
                    results.lock().unwrap()[i] = Some(r);
                }
            });
        }
    });
    let results = results.into_inner().unwrap();
    let mut table = Vec::new();
    let mut wrong = Vec::new();
    for ((name, target, tool, _, dir), r) in jobs.iter().zip(results) {
        let Outcome { failed, warnings, secs } = r.expect("every job ran");
        let listed = NOT_YET.iter().find(|n| (n.0, n.1, n.2) == (*name, target.name(), *tool));
        // Every warning is read: fixed, or explained (quoted) in the program's SUMMARY.md.
        let summary = std::fs::read_to_string(dir.join("SUMMARY.md")).unwrap_or_default();
        for w in &warnings {
            if !summary.contains(w.as_str()) {
                wrong.push(format!(
                    "{name} {} {tool} warns `{w}`: fix it, or explain it (quoting it) in the program's SUMMARY.md",
                    target.name()
                ));
            }
        }
        table.push(format!(
            "{:<16} {:<8} {:<11} {:>5.1} s {} warning(s) explained  {}",
            name,
            target.name(),
            tool,
            secs,
            warnings.len(),
            match (&failed, listed) {
                (None, _) => "pass".to_string(),
                (Some(e), Some(n)) => format!("FAIL (known: {}) {e}", n.3),
                (Some(e), None) => format!("FAIL {e}"),
            }
        ));
        match (failed, listed) {
            (Some(e), None) => wrong.push(format!("{name} {} {tool}: {e}", target.name())),
            (None, Some(_)) => {
                wrong.push(format!("{name} {} {tool}: compiles now — take it off NOT_YET", target.name()))
            }
            _ => {}
        }
    }
    eprintln!("p4c on every exported program:\n{}", table.join("\n"));
    let _ = std::fs::remove_dir_all(&work);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
