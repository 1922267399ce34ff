//! `softfabric hawkeye`: the evaluation, the Figure 7 sweep and one trace's text.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum HawkeyeCmd {
    /// Run every scenario of DIR (config/labs/hawkeye/) for TRACES traces each, diagnose every
    /// trace with the analyzer and its baselines, and print precision, recall and overheads per
    /// class (Markdown; with --out, also results.csv, results.md and Figures 8–10 as SVG there).
    Eval {
        /// The scenario directory.
        dir: PathBuf,
        /// Traces per scenario (1 to 100 000).
        #[arg(long, default_value_t = 100, value_parser = traces)]
        traces: u64,
        /// Worker threads (default: the machine's cores; at most 256).
        #[arg(long, value_parser = threads)]
        threads: Option<usize>,
        /// Where results.csv and results.md go.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print every trace's injection and diagnoses (stderr).
        #[arg(long)]
        verbose: bool,
        /// Every switch's epoch, ns (a power of two from 1024 to 2^32; default: each scenario's).
        #[arg(long, value_parser = epoch_ns)]
        epoch_ns: Option<u64>,
        /// The detection threshold, × the base RTT (above 1, at most 1000; default: each
        /// scenario's).
        #[arg(long, value_parser = rtt_factor)]
        rtt_factor: Option<f64>,
        /// The first trace's number (traces N.. of each scenario: fresh seeds and placements
        /// for a hold-out check; at most 2^62).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1 << 62))]
        first_trace: u64,
        /// The analyzer's ReplayQueue: `queue-order` (default; a FIFO's order kept) or `even`
        /// (the paper's even spread), for comparison.
        #[arg(long, default_value = "queue-order")]
        replay: collector::hawkeye::Replay,
    },
    /// Figure 7: every scenario of DIR at each epoch and detection threshold (TRACES traces
    /// each); with --out, sweep.csv, sweep.md and the figures there.
    Sweep {
        /// The scenario directory.
        dir: PathBuf,
        /// Traces per scenario and setting (1 to 100 000).
        #[arg(long, default_value_t = 20, value_parser = traces)]
        traces: u64,
        /// Epochs, ns (powers of two from 1024 to 2^32, each once, at most 16; the paper's
        /// 100 µs to 2 ms).
        #[arg(long, value_delimiter = ',', value_parser = epoch_ns, default_value = "131072,262144,524288,1048576,2097152")]
        epochs: Vec<u64>,
        /// Detection thresholds, × the base RTT (above 1, at most 1000, each once, at most 16;
        /// the paper's 200 % to 500 %).
        #[arg(long, value_delimiter = ',', value_parser = rtt_factor, default_value = "2,3,4,5")]
        factors: Vec<f64>,
        /// Worker threads (default: the machine's cores; at most 256).
        #[arg(long, value_parser = threads)]
        threads: Option<usize>,
        /// Where sweep.csv, sweep.md and the figures go.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write COUNT generated scenarios into DIR, scenario i drawn from seed SEED + i alone (class
    /// (SEED + i) mod 7; topology family, sizes, buffers, loads and epoch drawn): develop on seeds
    /// below 10^6, report from 10^9 up.
    Generate {
        /// Where the scenario files and their base labs go (created if needed).
        dir: PathBuf,
        /// The first scenario's seed (at most 2^62 - COUNT).
        #[arg(long)]
        seed: u64,
        /// Scenarios (1 to 10 000).
        #[arg(long, default_value_t = 7)]
        count: u64,
    },
    /// Write trace N of a scenario as a lab file (to run and inspect with `softfabric lab run`).
    Trace {
        /// The scenario file.
        scenario: PathBuf,
        /// The trace number (at most 2^62).
        #[arg(value_parser = clap::value_parser!(u64).range(0..=1 << 62))]
        n: u64,
    },
}

/// `--traces`: 1 to [`softfabric::hawkeye_eval::MAX_TRACES`].
fn traces(s: &str) -> Result<u64, String> {
    let max = softfabric::hawkeye_eval::MAX_TRACES;
    s.trim()
        .parse()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("{s:?}: expected 1 to {max} traces"))
}

/// `--threads`: 1 to 256.
fn threads(s: &str) -> Result<usize, String> {
    s.trim()
        .parse()
        .ok()
        .filter(|n| (1..=256).contains(n))
        .ok_or_else(|| format!("{s:?}: expected 1 to 256 threads"))
}

/// `--epoch-ns`: what a `hawkeye` switch takes, a power of two from 1024 to 2^32.
fn epoch_ns(s: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .ok()
        .filter(|n: &u64| n.is_power_of_two() && (1024..=1 << 32).contains(n))
        .ok_or_else(|| format!("{s:?}: expected a power of two from 1024 to 4294967296 ns"))
}

/// `--rtt-factor`: above 1, at most 1000 (as a lab file's `[hawkeye] rtt_factor`).
fn rtt_factor(s: &str) -> Result<f64, String> {
    ports::input::ranged(s, 1.0, 1000.0, true, "× the base RTT")
}

/// `softfabric hawkeye …`: exit 2 for bad arguments or scenarios, 1 for a failed run.
pub fn run(cmd: HawkeyeCmd) -> ExitCode {
    match cmd {
        HawkeyeCmd::Generate { dir, seed, count } => {
            match softfabric::hawkeye_eval::generate::generate(&dir, seed, count) {
                Ok(paths) => {
                    for p in &paths {
                        println!("{}", p.display());
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
        HawkeyeCmd::Trace { scenario, n } => {
            match softfabric::hawkeye_eval::Scenario::load(&scenario).and_then(|s| s.trace(n)) {
                Ok(t) => {
                    print!(
                        "# {} trace {n}: load {}, seed {}, injected {:?}\n{}",
                        scenario.display(),
                        t.load,
                        t.seed,
                        t.injected,
                        t.text
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
        HawkeyeCmd::Sweep { dir, traces, epochs, factors, threads, out } => {
            let t0 = std::time::Instant::now();
            if let Err(e) = softfabric::lab::interrupt_on_signals() {
                eprintln!("error: installing a signal handler: {e}");
                return ExitCode::FAILURE;
            }
            let twice = |v: &[String]| v.iter().enumerate().any(|(i, x)| v[..i].contains(x));
            let bad = if epochs.is_empty()
                || epochs.len() > 16
                || twice(&epochs.iter().map(u64::to_string).collect::<Vec<_>>())
            {
                Some("--epochs: expected 1 to 16 epochs, each once".to_string())
            } else if factors.is_empty()
                || factors.len() > 16
                || twice(&factors.iter().map(f64::to_string).collect::<Vec<_>>())
            {
                Some("--factors: expected 1 to 16 thresholds, each once".to_string())
            } else {
                out.as_ref().and_then(|o| ports::input::writable_dir("--out", o).err())
            };
            if let Some(e) = bad {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
            let r = softfabric::hawkeye_eval::sweep(
                &dir,
                traces,
                threads.unwrap_or_else(cores),
                &epochs,
                &factors,
            );
            hawkeye_results(
                r,
                out,
                ["sweep.csv", "sweep.md"],
                |r| {
                    let (csv, md) = softfabric::hawkeye_eval::sweep_tables(r);
                    let done = format!("{} setting(s) in {:.1} s", r.len(), t0.elapsed().as_secs_f64());
                    (csv, md, done)
                },
                |o, r| softfabric::hawkeye_eval::plot::sweep_figures(o, r),
            )
        }
        HawkeyeCmd::Eval {
            dir,
            traces,
            threads,
            out,
            verbose,
            epoch_ns,
            rtt_factor,
            first_trace,
            replay,
        } => {
            let t0 = std::time::Instant::now();
            if let Err(e) = softfabric::lab::interrupt_on_signals() {
                eprintln!("error: installing a signal handler: {e}");
                return ExitCode::FAILURE;
            }
            if let Some(e) = out.as_ref().and_then(|o| ports::input::writable_dir("--out", o).err()) {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
            let sweep = softfabric::hawkeye_eval::Sweep { epoch_ns, rtt_factor, first_trace, replay };
            let r = softfabric::hawkeye_eval::eval_with(
                &dir,
                traces,
                threads.unwrap_or_else(cores),
                verbose,
                sweep,
            );
            hawkeye_results(
                r,
                out,
                ["results.csv", "results.md"],
                |r| {
                    let (csv, md) = softfabric::hawkeye_eval::tables(r);
                    let md = format!("{md}\n{}", softfabric::hawkeye_eval::class_summary(r));
                    let done = format!(
                        "{} scenario(s) × {traces} trace(s) in {:.1} s",
                        r.len(),
                        t0.elapsed().as_secs_f64()
                    );
                    (csv, md, done)
                },
                softfabric::hawkeye_eval::plot::figures,
            )
        }
    }
}

/// The machine's cores (the default worker count).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// An evaluation's outcome: print its Markdown table and a closing line, and with `out` write
/// the CSV and Markdown (`names`) and its figures there.
fn hawkeye_results<R>(
    result: Result<R, String>,
    out: Option<PathBuf>,
    names: [&str; 2],
    tables: impl Fn(&R) -> (String, String, String),
    figures: impl Fn(&std::path::Path, &R) -> std::io::Result<()>,
) -> ExitCode {
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            // Stopped by a signal: a run that ended, not bad input.
            return if e == softfabric::hawkeye_eval::INTERRUPTED {
                ExitCode::FAILURE
            } else {
                ExitCode::from(2)
            };
        }
    };
    let (csv, md, done) = tables(&r);
    print!("{md}");
    println!("{done}");
    if let Some(o) = out {
        let w = std::fs::create_dir_all(&o)
            .and_then(|()| std::fs::write(o.join(names[0]), csv))
            .and_then(|()| std::fs::write(o.join(names[1]), md))
            .and_then(|()| figures(&o, &r));
        if let Err(e) = w {
            eprintln!("error: {}: {e}", o.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
