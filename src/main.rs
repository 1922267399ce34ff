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
}

#[derive(Debug, Subcommand)]
enum LabCmd {
    /// Run a lab file and write its CSV results into DIR.
    Run {
        /// The lab, e.g. config/labs/incast-16to1.toml.
        file: PathBuf,
        /// Where the results go.
        #[arg(long)]
        out: PathBuf,
        /// Override the file's congestion control: "hpcc" or "dcqcn".
        #[arg(long)]
        cc: Option<String>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
}

/// Run a lab: results into `out`, a summary on stdout. Exit 2 for a lab file that cannot run.
fn lab_run(file: &Path, out: &Path, cc: Option<&str>, quiet: bool) -> ExitCode {
    use softfabric::lab::{self, Cc, LabConfig};
    let mut cfg = match LabConfig::load(file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match cc {
        None => {}
        Some("hpcc") => cfg.cc = Cc::Hpcc,
        Some("dcqcn") => cfg.cc = Cc::Dcqcn,
        Some(other) => {
            eprintln!("error: --cc {other:?}: unknown CC; expected \"hpcc\" or \"dcqcn\"");
            return ExitCode::from(2);
        }
    }
    let wall = std::time::Instant::now();
    let total = cfg.duration_ns;
    let r = lab::run(&cfg, |now| {
        if !quiet {
            let pct = now.saturating_mul(100) / total.max(1);
            let bar: String = (0..40).map(|i| if i * 100 < pct * 40 { '#' } else { '.' }).collect();
            eprint!("\r[{bar}] {pct:>3}%  {:.1} µs virtual", now as f64 / 1e3);
        }
    });
    if !quiet {
        eprintln!();
    }
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let secs = wall.elapsed().as_secs_f64();
    if let Err(e) = lab::output::write(&r, out) {
        eprintln!("error: cannot write results into {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let done = r.flows.iter().filter(|f| f.fct_ns.is_some()).count();
    println!(
        "{}: {:?}, {} flows ({done} finished), base RTT {} ns",
        file.display(),
        cfg.cc,
        r.flows.len(),
        r.base_rtt_ns
    );
    println!(
        "simulated {:.1} µs in {secs:.2} s: {} events, {:.2} M events/s, {:.3} ms simulated per wall second",
        r.simulated_ns as f64 / 1e3,
        r.events,
        r.events as f64 / secs / 1e6,
        r.simulated_ns as f64 / 1e6 / secs
    );
    println!(
        "PFC pauses {}, switch drops {}, go-back-N retransmissions {}; results in {}",
        r.pfc.iter().filter(|e| e.pause).count(),
        r.switch_drops,
        r.retransmits,
        out.display()
    );
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.cmd.unwrap_or(Cmd::Demo) {
        Cmd::Demo => match softfabric::dta_demo::run(&mut std::io::stdout()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        },
        Cmd::Lab { cmd: LabCmd::Run { file, out, cc, quiet } } => lab_run(&file, &out, cc.as_deref(), quiet),
    }
}
