//! `softfabric`: with no arguments (`cargo run --release`), the embedded DTA demo.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "softfabric", version, about = "softfabric: DTA demo (default) and the virtual-time lab")]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Load generator -> DTA translator -> soft-RNIC collector on loopback, then queries.
    Demo,
    /// The virtual-time lab.
    Lab {
        #[command(subcommand)]
        cmd: LabCmd,
    },
    /// Hawkeye's evaluation.
    Hawkeye {
        #[command(subcommand)]
        cmd: HawkeyeCmd,
    },
    /// DAIET's WordCount: the lab experiment, and mappers and reducers on real sockets.
    Daiet {
        #[command(subcommand)]
        cmd: DaietCmd,
    },
}

#[derive(Debug, Subcommand)]
enum DaietCmd {
    /// Run a DAIET lab file (config/labs/daiet/): every register size with DAIET, and the UDP
    /// and TCP baselines; the reductions at the reducers as a Markdown table (with --out, also
    /// results.csv and results.md there).
    Lab {
        /// The lab file.
        file: PathBuf,
        /// Where the results go.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write a seeded corpus: Zipf-distributed words of 3 to 16 letters.
    Corpus {
        /// Bytes of text (1 to 1 GiB: it is made in memory).
        #[arg(long, default_value_t = 1_000_000)]
        bytes: usize,
        /// Distinct words (1 to 1 000 000).
        #[arg(long, default_value_t = 10_000)]
        vocabulary: usize,
        /// Zipf exponent (0: uniform; at most 10).
        #[arg(long, default_value_t = 1.0, value_parser = zipf)]
        zipf: f64,
        /// Seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only words whose register index (CRC-32 mod CELLS) is distinct: the paper's
        /// collision-free corpus (CELLS from the vocabulary to 2^24).
        #[arg(long)]
        collision_free_cells: Option<usize>,
        /// The file written.
        #[arg(long)]
        out: PathBuf,
    },
    /// Count the words of a file plainly (`word count` lines, sorted): what the reducers'
    /// output must equal.
    Count {
        /// The corpus.
        input: PathBuf,
        /// The file written.
        #[arg(long)]
        out: PathBuf,
    },
    /// One mapper: split I of N of the corpus, its pairs to the reducers (one tree each).
    Map {
        /// The corpus.
        input: PathBuf,
        /// `I/N`: this mapper's split.
        #[arg(long)]
        split: String,
        /// The reducers' `address:port` (IPv4), comma-separated, in tree order, each once (at
        /// most 1024).
        #[arg(long, value_delimiter = ',')]
        reducers: Vec<std::net::SocketAddr>,
        /// Their tree IDs (default 1, 2, …), each once.
        #[arg(long, value_delimiter = ',')]
        trees: Vec<u32>,
        /// Count each word once per mapper (the combiner).
        #[arg(long)]
        combine: bool,
        /// `udp` (DAIET packets) or `tcp` (the baseline).
        #[arg(long, default_value = "udp")]
        transport: String,
        /// Most datagrams a second (0: as fast as the socket takes them; at most 10^8).
        #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
        pps: u64,
        /// Pairs per packet.
        #[arg(long, default_value_t = 10)]
        max_entries: usize,
    },
    /// One reducer: tree T on ADDRESS:PORT until ENDS END packets (or streams), then its
    /// result as `word count` lines.
    Reduce {
        /// Where to listen.
        #[arg(long)]
        bind: std::net::SocketAddr,
        /// Its tree ID.
        #[arg(long)]
        tree: u32,
        /// END packets (UDP: 1 through a DAIET switch, the mappers without one) or streams
        /// (TCP) to wait for (1 to 100 000).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        ends: u64,
        /// `udp` or `tcp`.
        #[arg(long, default_value = "udp")]
        transport: String,
        /// Give up after this long without traffic, seconds (0.001 to 3600).
        #[arg(long, default_value_t = 10.0, value_parser = idle_s)]
        idle_s: f64,
        /// The result.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum HawkeyeCmd {
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
    /// Write trace N of a scenario as a lab file (to run and inspect with `softfabric lab run`).
    Trace {
        /// The scenario file.
        scenario: PathBuf,
        /// The trace number (at most 2^62).
        #[arg(value_parser = clap::value_parser!(u64).range(0..=1 << 62))]
        n: u64,
    },
}

#[derive(Debug, Subcommand)]
enum LabCmd {
    /// Run a lab file: CSV results and SVG plots into DIR.
    Run {
        /// The lab, e.g. config/labs/incast-16to1.toml.
        #[arg(required_unless_present = "ns3")]
        file: Option<PathBuf>,
        /// Instead of a lab file: the HPCC simulator's inputs, a directory with its config.txt
        /// and the topology and flow files it names (the lab file they make is written as
        /// DIR/lab.toml beside the results).
        #[arg(long, conflicts_with = "file")]
        ns3: Option<PathBuf>,
        /// Where the results go.
        #[arg(long)]
        out: PathBuf,
        /// Override the file's congestion control: "hpcc", "dcqcn" or "ufab".
        #[arg(long)]
        cc: Option<String>,
        /// µFAB: every VM-pair of one path uses this many underlay paths (Appendix F), one
        /// connection each, its bytes spread evenly (with --cc hpcc/dcqcn: as many ECMP flows).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=8))]
        paths: Option<u32>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Check a lab file (or the HPCC simulator's inputs) as `lab run` loads it, and print what
    /// it would run; exit 2 naming the file, line and key of what cannot run.
    Check {
        /// The lab.
        #[arg(required_unless_present = "ns3")]
        file: Option<PathBuf>,
        /// Instead of a lab file: the HPCC simulator's inputs (as `lab run --ns3`).
        #[arg(long, conflicts_with = "file")]
        ns3: Option<PathBuf>,
    },
    /// Run a lab with HPCC++, DCQCN and µFAB: each run's results into DIR/hpcc, DIR/dcqcn and
    /// DIR/ufab, the slowdown curves into DIR/slowdown.svg, and a slowdown table on stdout.
    Compare {
        /// The lab, e.g. config/labs/websearch-fattree-k4.toml.
        file: PathBuf,
        /// Where the results go.
        #[arg(long)]
        out: PathBuf,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
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

/// `--zipf`: a Zipf exponent, 0 to 10.
fn zipf(s: &str) -> Result<f64, String> {
    ports::input::ranged(s, 0.0, roce::daiet::MAX_ZIPF, false, "")
}

/// `--idle-s`: 0.001 to 3600 s.
fn idle_s(s: &str) -> Result<f64, String> {
    ports::input::ranged(s, 0.001, 3600.0, false, "s")
}

/// Why a lab command failed: a lab that cannot run (exit 2) or anything else (exit 1).
enum LabFail {
    BadLab(String),
    Other(String),
}

impl LabFail {
    fn exit(self) -> ExitCode {
        match self {
            LabFail::BadLab(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
            LabFail::Other(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    }
}

fn parse_cc(cc: &str) -> Result<softfabric::lab::Cc, LabFail> {
    use softfabric::lab::Cc;
    Cc::parse(cc).ok_or_else(|| LabFail::BadLab(format!("--cc {cc:?}: unknown CC; {}", Cc::EXPECTED)))
}

/// Run `cfg`, write its CSV and plots into `out`, and print a summary.
fn lab_run_one(
    cfg: &softfabric::lab::LabConfig,
    out: &Path,
    quiet: bool,
) -> Result<softfabric::lab::LabResult, LabFail> {
    use softfabric::lab::{self, output};
    let wall = std::time::Instant::now();
    let total = cfg.duration_ns.saturating_add(cfg.completion_ns);
    let r = lab::run(cfg, |now| {
        if !quiet {
            let pct = now.saturating_mul(100) / total.max(1);
            let bar: String = (0..40).map(|i| if i * 100 < pct * 40 { '#' } else { '.' }).collect();
            eprint!("\r{:?} [{bar}] {pct:>3}%  {:.1} µs virtual", cfg.cc, now as f64 / 1e3);
        }
    });
    if !quiet {
        eprintln!();
    }
    let r = r.map_err(|e| LabFail::BadLab(format!("{}: {e}", cfg.file.display())))?;
    if r.interrupted {
        // What was simulated is kept: the results up to the time reached.
        output::write(&r, out)
            .map_err(|e| LabFail::Other(format!("cannot write results into {}: {e}", out.display())))?;
        return Err(LabFail::Other(format!(
            "{}: interrupted by a signal at {:.1} µs of virtual time (of {:.1}); the results so far are in {}",
            cfg.file.display(),
            r.simulated_ns as f64 / 1e3,
            cfg.duration_ns as f64 / 1e3,
            out.display()
        )));
    }
    let secs = wall.elapsed().as_secs_f64();
    let label = format!("{:?}", cfg.cc);
    // The run's flows also in the HPCC simulator's flow-file format (from 2 s, as its
    // traffic generator writes them), so the same workload can be fed to it.
    output::write(&r, out)
        .and_then(|()| lab::plot::write(&r, &label, out))
        .and_then(|()| std::fs::write(out.join("ns3-flow.txt"), lab::ns3::flow_file(&cfg.flows, 2.0)))
        .map_err(|e| LabFail::Other(format!("cannot write results into {}: {e}", out.display())))?;
    // µFAB's goals: for a µFAB run, and for a baseline run of a lab that gives guarantees.
    if cfg.cc == softfabric::lab::Cc::Ufab
        || cfg.rtt_samples
        || cfg.flows.iter().any(|f| f.guarantee_bps.is_some())
    {
        let rep = lab::ufab_report::report(cfg, &r, 200_000);
        std::fs::write(out.join("ufab.csv"), rep.csv())
            .map_err(|e| LabFail::Other(format!("cannot write into {}: {e}", out.display())))?;
        print!("{}", rep.summary());
    }
    let (unfinished, left) = output::unfinished(&r.flows);
    println!(
        "{}: {label}, {} flows ({} finished; {unfinished} unfinished, {left} of their bytes \
         not acknowledged: left out of slowdowns), base RTT {} ns",
        cfg.file.display(),
        r.flows.len(),
        r.flows.len() - unfinished,
        r.base_rtt_ns
    );
    println!(
        "simulated {:.1} µs in {secs:.2} s: {} events, {:.2} M events/s, {:.3} ms simulated per wall second",
        r.simulated_ns as f64 / 1e3,
        r.events,
        r.events as f64 / secs / 1e6,
        r.simulated_ns as f64 / 1e6 / secs
    );
    let (buffers, each) = r.frame_buffers;
    println!(
        "frames held at the peak: {buffers} buffers of {each} B ({:.1} MB); the switches' tables and queue entries grow with what they hold",
        (buffers * each) as f64 / 1e6
    );
    println!(
        "PFC pauses {}, switch drops {}, go-back-N retransmissions {}; results in {}",
        r.pfc.iter().filter(|e| e.pause).count(),
        r.switch_drops,
        r.retransmits,
        out.display()
    );
    Ok(r)
}

/// The output directory, made and checked writable before a simulation runs (an unwritable
/// one failed only after the whole run): bad input, exit 2.
fn writable_out(out: &Path) -> Result<(), LabFail> {
    ports::input::writable_dir("--out", out).map_err(LabFail::BadLab)
}

/// The lab a file or an NS-3 directory describes, checked whole, and the `config.txt` keys
/// the import did not take.
fn lab_load(
    file: Option<&Path>,
    ns3: Option<&Path>,
) -> Result<(softfabric::lab::LabConfig, Option<String>), LabFail> {
    match (file, ns3) {
        (_, Some(dir)) => {
            let i = softfabric::lab::ns3::import(dir).map_err(|e| LabFail::BadLab(e.to_string()))?;
            for (k, v) in &i.ignored {
                eprintln!("note: {}: {k} {v}: not imported", dir.join("config.txt").display());
            }
            Ok((i.lab, Some(i.text)))
        }
        (Some(file), None) => softfabric::lab::LabConfig::load(file)
            .map(|c| (c, None))
            .map_err(|e| LabFail::BadLab(e.to_string())),
        (None, None) => Err(LabFail::BadLab("a lab file or --ns3 DIR".into())),
    }
}

/// `lab check`: what `lab run` would run, or why it cannot.
fn lab_check(file: Option<&Path>, ns3: Option<&Path>) -> Result<(), LabFail> {
    let (cfg, _) = lab_load(file, ns3)?;
    println!(
        "{}: ok: {:?}, {} hosts, {} switches, {} links, {} flows, {} µs (+ up to {} µs to completion)",
        cfg.file.display(),
        cfg.cc,
        cfg.hosts(),
        cfg.topology.switches,
        cfg.topology.links.len(),
        cfg.flows.len(),
        cfg.duration_ns / 1000,
        cfg.completion_ns / 1000
    );
    Ok(())
}

fn lab_run(
    file: Option<&Path>,
    ns3: Option<&Path>,
    out: &Path,
    cc: Option<&str>,
    paths: Option<u32>,
    quiet: bool,
) -> Result<(), LabFail> {
    let (mut cfg, imported) = lab_load(file, ns3)?;
    writable_out(out)?;
    if let Some(text) = imported {
        std::fs::write(out.join("lab.toml"), text)
            .map_err(|e| LabFail::Other(format!("cannot write {}: {e}", out.join("lab.toml").display())))?;
    }
    if let Some(cc) = cc {
        cfg.set_cc(parse_cc(cc)?);
    }
    if let Some(k) = paths {
        cfg.set_pair_paths(k).map_err(|e| LabFail::BadLab(format!("--paths {k}: {e}")))?;
    }
    cfg.check_limits().map_err(|e| {
        LabFail::BadLab(format!(
            "{} with --cc {} --paths {}: {e}",
            cfg.file.display(),
            cfg.cc.name(),
            paths.unwrap_or(1)
        ))
    })?;
    lab_run_one(&cfg, out, quiet).map(drop)
}

/// `lab compare`: the lab under both CCs, and their FCT slowdowns side by side.
fn lab_compare(file: &Path, out: &Path, quiet: bool) -> Result<(), LabFail> {
    use softfabric::lab::{Cc, LabConfig, output, plot};
    let mut cfg = LabConfig::load(file).map_err(|e| LabFail::BadLab(e.to_string()))?;
    writable_out(out)?;
    let mut runs = Vec::new();
    // Every CC's limits before the first runs.
    for cc in Cc::ALL {
        let mut c = cfg.clone();
        c.set_cc(cc);
        c.check_limits()
            .map_err(|e| LabFail::BadLab(format!("{} under {}: {e}", c.file.display(), cc.name())))?;
    }
    for cc in Cc::ALL {
        cfg.set_cc(cc);
        runs.push((cc, lab_run_one(&cfg, &out.join(cc.name()), quiet)?));
    }
    let labelled: Vec<(&str, &softfabric::lab::LabResult)> =
        runs.iter().map(|(cc, r)| (cc.label(), r)).collect();
    plot::slowdown(&out.join("slowdown.svg"), &format!("FCT slowdown, {}", file.display()), &labelled)
        .map_err(|e| LabFail::Other(format!("cannot write {}: {e}", out.join("slowdown.svg").display())))?;
    println!("FCT slowdown          flows    p50      p95      p99  unfinished");
    for (name, r) in &labelled {
        for (what, below) in [("< 100 KB", 100_000), ("all", u64::MAX)] {
            let sd = output::slowdowns_below(&r.flows, below);
            let p = |q| output::percentile(&sd, q).map_or("-".into(), |v| format!("{v:.3}"));
            let small: Vec<_> = r.flows.iter().filter(|f| f.size < below).copied().collect();
            let (n, _) = output::unfinished(&small);
            println!(
                "{name:<7}{what:<12}{:>7}  {:>7}  {:>7}  {:>7}  {n:>10}",
                sd.len(),
                p(0.5),
                p(0.95),
                p(0.99)
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    ports::host::init_tracing("warn");
    let cli: Cli = ports::input::parse_args();
    match cli.cmd.unwrap_or(Cmd::Demo) {
        Cmd::Demo => match softfabric::dta_demo::run(&mut std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        },
        Cmd::Lab { cmd } => {
            // A simulation stops at the virtual time it reached on SIGINT/SIGTERM, results kept.
            if let Err(e) = softfabric::lab::interrupt_on_signals() {
                eprintln!("error: installing a signal handler: {e}");
                return ExitCode::FAILURE;
            }
            let r = match cmd {
                LabCmd::Run { file, ns3, out, cc, paths, quiet } => {
                    lab_run(file.as_deref(), ns3.as_deref(), &out, cc.as_deref(), paths, quiet)
                }
                LabCmd::Compare { file, out, quiet } => lab_compare(&file, &out, quiet),
                LabCmd::Check { file, ns3 } => lab_check(file.as_deref(), ns3.as_deref()),
            };
            r.map_or_else(LabFail::exit, |()| ExitCode::SUCCESS)
        }
        Cmd::Daiet { cmd } => daiet(cmd),
        Cmd::Hawkeye { cmd: HawkeyeCmd::Trace { scenario, n } } => {
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
        Cmd::Hawkeye { cmd: HawkeyeCmd::Sweep { dir, traces, epochs, factors, threads, out } } => {
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
        Cmd::Hawkeye {
            cmd:
                HawkeyeCmd::Eval { dir, traces, threads, out, verbose, epoch_ns, rtt_factor, first_trace, replay },
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

/// `softfabric daiet …`: exit 2 for bad arguments, 1 for a job that failed or came out short.
fn daiet(cmd: DaietCmd) -> ExitCode {
    use softfabric::daiet::net::{self, Transport};
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let failed = |e: String| {
        eprintln!("error: {e}");
        ExitCode::FAILURE
    };
    let transport =
        |t: &str| Transport::parse(t).ok_or_else(|| format!("--transport {t:?}: expected udp or tcp"));
    // A corpus is read whole: at most what `corpus` makes, and what memory holds.
    let read = |flag: &str, p: &Path| {
        let text = ports::input::read_flag(flag, p, roce::daiet::MAX_CORPUS_BYTES as u64)?;
        ports::input::fits_in_memory(4 * text.len() as u128)
            .map_err(|e| format!("{flag} {}: {e}", p.display()))?;
        Ok::<_, String>(text)
    };
    let stop = match ports::input::stop_on_signals() {
        Ok(s) => s,
        Err(e) => return failed(format!("installing a signal handler: {e}")),
    };
    match cmd {
        DaietCmd::Lab { file, out } => {
            if let Some(o) = &out
                && let Err(e) = ports::input::writable_dir("--out", o)
            {
                return fail(e);
            }
            match softfabric::daiet::lab_report(&file, out.as_deref()) {
                Ok(s) => {
                    print!("{s}");
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        DaietCmd::Corpus { bytes, vocabulary, zipf, seed, collision_free_cells, out } => {
            let spec =
                roce::daiet::CorpusSpec { bytes, vocabulary, zipf_s: zipf, seed, collision_free_cells };
            if let Err((k, why)) = spec.check() {
                let flag = match k {
                    "zipf_s" => "--zipf",
                    "collision_free_cells" => "--collision-free-cells",
                    "vocabulary" => "--vocabulary",
                    _ => "--bytes",
                };
                return fail(format!("{flag} {why}"));
            }
            if let Err(e) = ports::input::fits_in_memory(2 * bytes as u128)
                .map_err(|e| format!("--bytes {bytes}: {e}"))
                .and_then(|()| ports::input::writable_file("--out", &out))
            {
                return fail(e);
            }
            let text = roce::daiet::corpus(&spec, softfabric::daiet::lab::register_index);
            match std::fs::write(&out, &text) {
                Ok(()) => {
                    println!("{}: {} bytes", out.display(), text.len());
                    ExitCode::SUCCESS
                }
                Err(e) => failed(format!("--out {}: {e}", out.display())),
            }
        }
        DaietCmd::Count { input, out } => {
            let text = match read("INPUT", &input)
                .and_then(|t| ports::input::writable_file("--out", &out).map(|()| t))
            {
                Ok(t) => t,
                Err(e) => return fail(e),
            };
            let c = roce::daiet::word_count(&text);
            let mut s = String::new();
            for (w, n) in &c {
                s.push_str(&format!("{w} {n}\n"));
            }
            match std::fs::write(&out, s) {
                Ok(()) => {
                    println!("{}: {} words", out.display(), c.len());
                    ExitCode::SUCCESS
                }
                Err(e) => failed(format!("--out {}: {e}", out.display())),
            }
        }
        DaietCmd::Map { input, split, reducers, trees, combine, transport: t, pps, max_entries } => {
            let parsed = split
                .split_once('/')
                .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
                .filter(|(i, n)| i < n && *n <= 65_536);
            let Some((i, n)) = parsed else {
                return fail(format!("--split {split:?}: expected I/N with I < N ≤ 65536"));
            };
            if reducers.is_empty() || reducers.len() > 1024 {
                return fail("--reducers: expected 1 to 1024 address:port".into());
            }
            if let Some(r) = reducers.iter().find(|r| match r {
                std::net::SocketAddr::V4(a) => {
                    a.port() == 0 || a.ip().is_unspecified() || a.ip().is_broadcast() || a.ip().is_multicast()
                }
                std::net::SocketAddr::V6(_) => true,
            }) {
                return fail(format!("--reducers: {r} is not an IPv4 unicast address and port of a reducer"));
            }
            if let Some(r) =
                reducers.iter().enumerate().find_map(|(k, r)| reducers[..k].contains(r).then_some(r))
            {
                return fail(format!("--reducers: {r} is given twice (one tree per reducer)"));
            }
            if !(1..=64).contains(&max_entries) {
                return fail(format!(
                    "--max-entries {max_entries}: expected 1 to 64 (a switch takes at most its own max_entries)"
                ));
            }
            let trees = if trees.is_empty() { (1..=reducers.len() as u32).collect() } else { trees };
            if trees.len() != reducers.len() {
                return fail("--trees: expected one tree ID per reducer".into());
            }
            if let Some(t) = trees.iter().enumerate().find_map(|(k, t)| trees[..k].contains(t).then_some(t)) {
                return fail(format!("--trees: tree {t} is given twice"));
            }
            let tr = match transport(&t) {
                Ok(tr) => tr,
                Err(e) => return fail(e),
            };
            let text = match read("INPUT", &input) {
                Ok(t) => t,
                Err(e) => return fail(e),
            };
            match net::map(&text, i, n, &reducers, &trees, combine, tr, pps, max_entries, &stop) {
                Ok(rep) => {
                    println!(
                        "mapper {i}/{n}: {} pairs, {} datagrams, {} bytes, {} words too long",
                        rep.pairs, rep.packets, rep.bytes, rep.too_long
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => failed(e),
            }
        }
        DaietCmd::Reduce { bind, tree, ends, transport: t, idle_s, out } => {
            let tr =
                match transport(&t).and_then(|tr| ports::input::writable_file("--out", &out).map(|()| tr)) {
                    Ok(tr) => tr,
                    Err(e) => return fail(e),
                };
            if bind.is_ipv6()
                || bind.ip().is_multicast()
                || matches!(bind, std::net::SocketAddr::V4(a) if a.ip().is_broadcast())
            {
                return fail(format!(
                    "--bind {bind}: expected an IPv4 address of this host (or 0.0.0.0) and a port"
                ));
            }
            match net::reduce(bind, tree, ends, tr, std::time::Duration::from_secs_f64(idle_s), &out, &stop) {
                Ok(rep) => {
                    println!(
                        "reducer tree {tree}: {} packets, {} bytes, {} pairs, {} ENDs, {} words, {} refused, {} saturated, busy {:.3} ms{}",
                        rep.stats.packets,
                        rep.stats.bytes,
                        rep.stats.pairs,
                        rep.stats.ends,
                        rep.words,
                        rep.stats.refused,
                        rep.stats.saturated,
                        rep.busy.as_secs_f64() * 1e3,
                        if rep.complete {
                            ""
                        } else {
                            " — INCOMPLETE: ENDs missing (DAIET has no loss recovery)"
                        }
                    );
                    if rep.complete { ExitCode::SUCCESS } else { ExitCode::FAILURE }
                }
                Err(e) if e.starts_with("bind") => fail(format!("--bind {e}")),
                Err(e) => failed(e),
            }
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
