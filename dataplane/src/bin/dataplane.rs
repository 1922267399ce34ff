//! `dataplane`: run, check and size a softfabric switch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dataplane::buf::PktBuf;
use dataplane::config::{Config, ConfigError, ProgramKind};
use dataplane::programs::build_switch;
use dataplane::programs::dta::DtaTranslator;
use dataplane::programs::dta_reporter::DtaReporter;
use dataplane::programs::l2l3::L2l3;
use dataplane::programs::macswap::MacSwap;
use dataplane::runtime::{self, SetupError};
use dataplane::switch::Program;

/// Evaluate `$body` with `$P` bound to the program type `$kind` names.
macro_rules! with_program {
    ($kind:expr, $P:ident => $body:expr) => {
        match $kind {
            ProgramKind::L2l3 => {
                type $P = L2l3;
                $body
            }
            ProgramKind::MacSwap => {
                type $P = MacSwap;
                $body
            }
            ProgramKind::DtaTranslator => {
                type $P = DtaTranslator;
                $body
            }
            ProgramKind::DtaReporter => {
                type $P = DtaReporter;
                $body
            }
        }
    };
}

/// The softfabric switch.
#[derive(Debug, Parser)]
#[command(name = "dataplane", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the switch until SIGINT/SIGTERM (or the end of a pcap replay), then print counters.
    Run {
        /// Configuration file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Validate a configuration and print it resolved, every default filled in.
    Check {
        /// Configuration file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Print every resource the configured program declares, with its size and memory.
    Resources {
        /// Configuration file.
        #[arg(long, short)]
        config: PathBuf,
    },
}

fn load(path: &std::path::Path) -> Result<Config, ExitCode> {
    Config::load(path).map_err(config_error)
}

fn config_error(e: ConfigError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Cmd::Check { config } => {
            let cfg = match load(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            // Build the program too, so its section is validated.
            if let Err(e) = with_program!(cfg.program, P => build_switch::<P, PktBuf>(&cfg).map(|_| ())) {
                return config_error(e);
            }
            print!("{cfg}");
            ExitCode::SUCCESS
        }
        Cmd::Resources { config } => {
            let cfg = match load(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let report = with_program!(cfg.program, P =>
                build_switch::<P, PktBuf>(&cfg).map(|s| s.program().resources().report()));
            match report {
                Ok(r) => {
                    println!("program {}, {} ports", cfg.program.name(), cfg.ports.len());
                    print!("{r}");
                    let tm = &cfg.tm;
                    println!(
                        "traffic manager: {} B buffer ({} B shared), {} queue entries, 8 queues x {} ports",
                        tm.buffer_bytes,
                        tm.shared_bytes(cfg.ports.len()).unwrap_or(0),
                        tm.max_packets,
                        cfg.ports.len()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => config_error(e),
            }
        }
        Cmd::Run { config } => {
            let cfg = match load(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let result = with_program!(cfg.program, P => runtime::run::<P>(&cfg));
            match result {
                Ok(summary) => {
                    print!("{}", summary.table());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    if let Some(ce) = e.downcast_ref::<ConfigError>() {
                        return config_error(ce.clone());
                    }
                    // Could not start (a port, DPDK): like a configuration error, nothing ran.
                    if let Some(se) = e.downcast_ref::<SetupError>() {
                        eprintln!("error: {se}");
                        return ExitCode::from(2);
                    }
                    eprintln!("error: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
