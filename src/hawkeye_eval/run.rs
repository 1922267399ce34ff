//! Running an evaluation: every scenario of a folder, its traces on threads, and sweeps.

use std::path::{Path, PathBuf};

use super::{INTERRUPTED, MAX_TRACES, Scenario, Score, Sweep, VARIANTS};
use crate::lab;

/// Score `traces` traces of every scenario in `dir` on `threads` threads: per scenario, the
/// summed score of each variant.
pub fn eval(
    dir: &Path,
    traces: u64,
    threads: usize,
    verbose: bool,
) -> Result<Vec<(Scenario, [Score; VARIANTS.len()])>, String> {
    eval_with(dir, traces, threads, verbose, Sweep::default())
}

/// One scenario's scores: each variant's, in [`VARIANTS`] order.
pub type Results = Vec<(Scenario, [Score; VARIANTS.len()])>;

/// [`eval`] with every scenario under `sweep`'s overrides.
pub fn eval_with(
    dir: &Path,
    traces: u64,
    threads: usize,
    verbose: bool,
    sweep: Sweep,
) -> Result<Results, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "toml")
                && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('_'))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "{}: no scenario files (*.toml not starting with `_`) to evaluate",
            dir.display()
        ));
    }
    if !(1..=MAX_TRACES).contains(&traces) {
        return Err(format!("--traces {traces}: expected 1 to {MAX_TRACES}"));
    }
    let scenarios: Vec<Scenario> =
        files.iter().map(|f| Scenario::load(f).map(|s| s.with(sweep))).collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for s in scenarios {
        let next = std::sync::atomic::AtomicU64::new(0);
        let total = std::sync::Mutex::new([Score::default(); VARIANTS.len()]);
        let failed = std::sync::Mutex::new(None);
        std::thread::scope(|sc| {
            for _ in 0..threads.max(1) {
                sc.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= traces {
                            break;
                        }
                        let i = i.saturating_add(sweep.first_trace);
                        if lab::interrupted() {
                            *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(INTERRUPTED.into());
                            break;
                        }
                        match s.score(i, verbose) {
                            Ok(sc) => {
                                let mut t = total.lock().unwrap_or_else(|e| e.into_inner());
                                for (a, b) in t.iter_mut().zip(sc) {
                                    a.add(b);
                                }
                            }
                            Err(e) if e == INTERRUPTED => {
                                *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                                break;
                            }
                            Err(e) => {
                                *failed.lock().unwrap_or_else(|e| e.into_inner()) =
                                    Some(format!("{} trace {i}: {e}", s.path.display()));
                            }
                        }
                    }
                });
            }
        });
        if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(e);
        }
        let t = total.into_inner().unwrap_or_else(|e| e.into_inner());
        out.push((s, t));
    }
    Ok(out)
}

/// Figure 7's grid: every scenario at each epoch and detection threshold (`traces` each); the
/// results per (epoch, threshold).
pub fn sweep(
    dir: &Path,
    traces: u64,
    threads: usize,
    epochs: &[u64],
    factors: &[f64],
) -> Result<Vec<(Sweep, Results)>, String> {
    let mut out = Vec::new();
    for &e in epochs {
        if !e.is_power_of_two() {
            return Err(format!("--epochs: {e} ns is not a power of two"));
        }
        for &f in factors {
            let sw = Sweep { epoch_ns: Some(e), rtt_factor: Some(f), ..Sweep::default() };
            out.push((sw, eval_with(dir, traces, threads, false, sw)?));
        }
    }
    Ok(out)
}
