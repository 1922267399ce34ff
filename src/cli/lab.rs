//! `softfabric lab`: run, check and compare lab files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum LabCmd {
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

/// `softfabric lab …`: exit 2 for a lab that cannot run, 1 for anything else.
pub fn run(cmd: LabCmd) -> ExitCode {
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
