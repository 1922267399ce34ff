//! `softfabric`: with no arguments (`cargo run --release`), the embedded DTA demo.

mod cli;

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
        cmd: cli::lab::LabCmd,
    },
    /// Hawkeye's evaluation.
    Hawkeye {
        #[command(subcommand)]
        cmd: cli::hawkeye::HawkeyeCmd,
    },
    /// DAIET's WordCount: the lab experiment, and mappers and reducers on real sockets.
    Daiet {
        #[command(subcommand)]
        cmd: cli::daiet::DaietCmd,
    },
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
        Cmd::Lab { cmd } => cli::lab::run(cmd),
        Cmd::Daiet { cmd } => cli::daiet::run(cmd),
        Cmd::Hawkeye { cmd } => cli::hawkeye::run(cmd),
    }
}
