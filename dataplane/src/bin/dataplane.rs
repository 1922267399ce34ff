//! `dataplane`: run, check and size a softfabric switch; generate DTA report load.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dataplane::buf::PktBuf;
use dataplane::config::{Config, ConfigError};
use dataplane::programs;
use dataplane::runtime::{self, RuntimeError};

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
    /// Print what the configured program declares — headers, parser, metadata, tables with
    /// their keys, match kinds and actions, registers, counters, meters, hash units — then each
    /// resource's size and memory.
    Resources {
        /// Configuration file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// P4: export the configured program as a P4-16 program for a target.
    #[command(subcommand)]
    P4(P4Cmd),
    /// Send DTA reports of one primitive at a chosen rate (a load generator): to each
    /// collector's address over UDP (the translator, as the collectors' ToR, takes them), or
    /// into a pcap file. Retransmittable reports are numbered, the last K kept and resent
    /// from NACKs.
    Report(Box<ReportArgs>),
}

/// `dataplane p4` subcommands.
#[derive(Debug, Subcommand)]
enum P4Cmd {
    /// Write the configured program as P4-16 for `--target` into `--out`: `<program>.p4`, the
    /// table entries its configuration implies (`entries.txt` for simple_switch_CLI, or
    /// `bfrt_setup.py` for TNA), and `SUMMARY.md` (resources by estimate, stages, limitations).
    Export {
        /// Configuration file.
        #[arg(long, short)]
        config: PathBuf,
        /// `tna` (Tofino 1) or `v1model` (BMv2).
        #[arg(long)]
        target: String,
        /// Output directory (created).
        #[arg(long)]
        out: PathBuf,
    },
}

/// `dataplane report` options.
#[derive(Debug, clap::Args)]
struct ReportArgs {
    /// Collector addresses (comma-separated): Key-Write/Key-Increment/Postcarder keys spread
    /// by hash, Append by list ID.
    #[arg(long, value_delimiter = ',', required = true)]
    to: Vec<Ipv4Addr>,
    /// keywrite, keyincrement, append, postcarder or sketch-merge.
    #[arg(long, default_value = "keywrite")]
    primitive: String,
    /// Reports per second (0: as fast as possible; at most 10^9).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    rate: u64,
    /// Reports to send (1 to 2^40; at the given rate, at most a day of them; SIGINT/SIGTERM
    /// stop a run early, its summary printed).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=1 << 40))]
    count: u64,
    /// Key-Write / Key-Increment redundancy N.
    #[arg(long, default_value_t = 2)]
    redundancy: u8,
    /// Distinct keys, cycled (at least 1).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..))]
    keys: u32,
    /// First key.
    #[arg(long, default_value_t = 0)]
    key_base: u32,
    /// Send each key scrambled (murmur3's finaliser): keys that spread over the collector's
    /// slots as random keys do, instead of consecutive numbers.
    #[arg(long)]
    scramble_keys: bool,
    /// Append: lists used (report i to list i mod LISTS; at least 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    lists: u32,
    /// Key-Increment: the increment.
    #[arg(long, default_value_t = 1)]
    counter: u64,
    /// Postcarder: hops per path (1..=5).
    #[arg(long, default_value_t = 5)]
    hops: u8,
    /// Sketch-Merge: the sketch's ID (the translator's `sketch = [{ id = … }]`).
    #[arg(long, default_value_t = 0)]
    sketch_id: u16,
    /// Sketch-Merge: this reporter's ID (one of the sketch's `reporters`).
    #[arg(long, default_value_t = 1)]
    reporter_id: u16,
    /// Sketch-Merge: counters per column (1..=61; the sketch's `rows`).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=61))]
    rows: u8,
    /// Sketch-Merge: the sketch's columns (report i is column i mod COLUMNS; 1..=2^24).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1 << 24))]
    columns: u32,
    /// Sketch-Merge: sum, max or min.
    #[arg(long, default_value = "sum")]
    merge_op: String,
    /// Key-Write data bytes (4, 12 or 28; the translator's keywrite_data_len).
    #[arg(long, default_value_t = 4)]
    data_len: usize,
    /// low, medium or high.
    #[arg(long, default_value = "high")]
    priority: String,
    /// Send without sequence numbers (not retransmittable).
    #[arg(long)]
    untracked: bool,
    /// Retransmittable reports kept for NACKs (at most 128).
    #[arg(long, default_value_t = 128)]
    keep: usize,
    /// Set the immediate flag on one report in this many (0: never).
    #[arg(long, default_value_t = 0)]
    immediate_every: u64,
    /// DTA UDP port.
    #[arg(long, default_value_t = 40040)]
    port: u16,
    /// Local address and source port of the UDP socket (NACKs are read on port 40044).
    #[arg(long, default_value = "0.0.0.0:40041")]
    bind: SocketAddrV4,
    /// Write Ethernet frames to this pcap file instead of sending.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// pcap: source address.
    #[arg(long, default_value = "10.0.1.2")]
    src_ip: Ipv4Addr,
    /// pcap: source MAC.
    #[arg(long, default_value = "02:00:00:00:01:02")]
    src_mac: String,
    /// pcap: destination MAC (the translator's port).
    #[arg(long, default_value = "02:00:00:00:00:01")]
    dst_mac: String,
    /// Keep the count of reports sent in this file as the run goes (one line, rewritten in
    /// place: `sent <20 digits> running|ended`): what a killed reporter had sent, to one burst.
    #[arg(long)]
    journal: Option<PathBuf>,
    /// After the last report, answer NACKs this many milliseconds (at most a minute).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    linger_ms: u64,
}

fn report(a: ReportArgs) -> anyhow::Result<runtime::report::ReportSummary> {
    use anyhow::{Context, bail};
    use roce::dta::{LoadKind, LoadSpec, MAX_KEEP};
    let kind = match a.primitive.as_str() {
        "keywrite" => LoadKind::KeyWrite { redundancy: a.redundancy },
        "keyincrement" => LoadKind::KeyIncrement { redundancy: a.redundancy, counter: a.counter },
        "append" => LoadKind::Append { lists: a.lists },
        "postcarder" => LoadKind::Postcarder { hops: a.hops },
        "sketch-merge" => {
            use wire::dta::MergeOp;
            let op = match a.merge_op.as_str() {
                "sum" => MergeOp::Sum,
                "max" => MergeOp::Max,
                "min" => MergeOp::Min,
                o => bail!("--merge-op {o:?}: expected sum, max or min"),
            };
            LoadKind::SketchMerge {
                sketch_id: a.sketch_id,
                reporter_id: a.reporter_id,
                rows: a.rows,
                columns: a.columns,
                op,
            }
        }
        o => bail!("--primitive {o:?}: expected keywrite, keyincrement, append, postcarder or sketch-merge"),
    };
    if !(1..=8).contains(&a.redundancy) {
        bail!("--redundancy {}: expected 1..=8", a.redundancy);
    }
    if ![4, 12, 28].contains(&a.data_len) {
        bail!("--data-len {}: expected 4, 12 or 28", a.data_len);
    }
    let Some(priority) = roce::dta::parse_priority(&a.priority) else {
        bail!("--priority {:?}: expected low, medium or high", a.priority)
    };
    if a.keep == 0 || a.keep > MAX_KEEP {
        bail!("--keep {}: expected 1..={MAX_KEEP} (half the 8-bit sequence space)", a.keep);
    }
    if !(1..=5).contains(&a.hops) {
        bail!("--hops {}: expected 1..=5", a.hops);
    }
    if a.rate > 0 && a.count / a.rate > 86_400 {
        bail!(
            "--count {} at --rate {}: more than a day of reports (at most {} at this rate)",
            a.count,
            a.rate,
            a.rate * 86_400
        );
    }
    if a.port == 0 {
        bail!("--port 0: expected the translator's DTA UDP port (40040)");
    }
    if let Some(c) = a.to.iter().find(|c| c.is_unspecified() || c.is_broadcast() || c.is_multicast()) {
        bail!("--to {c}: expected unicast collector addresses");
    }
    if let Some(c) = a.to.iter().enumerate().find_map(|(i, c)| a.to[..i].contains(c).then_some(c)) {
        bail!("--to {c}: listed twice (keys are spread over distinct collectors)");
    }
    if a.to.len() > 256 {
        bail!("--to: at most 256 collectors");
    }
    let mac = |s: &str, what: &str| {
        wire::ethernet::EthernetAddress::parse(s)
            .with_context(|| format!("{what} {s:?} is not a MAC address"))
    };
    let sink = match a.pcap {
        Some(path) => {
            ports::input::writable_file("--pcap", &path).map_err(anyhow::Error::msg)?;
            runtime::report::Sink::Pcap {
                path,
                src_mac: mac(&a.src_mac, "--src-mac")?,
                dst_mac: mac(&a.dst_mac, "--dst-mac")?,
                src_ip: a.src_ip,
            }
        }
        None => {
            if a.bind.ip().is_broadcast() || a.bind.ip().is_multicast() {
                bail!("--bind {}: expected an address of this host (or 0.0.0.0)", a.bind);
            }
            runtime::report::Sink::Udp { bind: a.bind }
        }
    };
    let stop = ports::input::stop_on_signals().context("installing a signal handler")?;
    let run = runtime::report::ReportRun {
        spec: LoadSpec {
            kind,
            keys: a.keys,
            key_base: a.key_base,
            priority,
            retransmittable: !a.untracked,
            immediate_every: a.immediate_every,
            keywrite_data_len: a.data_len,
            scramble: a.scramble_keys,
        },
        collectors: a.to,
        port: a.port,
        rate: a.rate,
        count: a.count,
        keep: a.keep,
        epoch: runtime::report::fresh_epoch(),
        sink,
        linger: std::time::Duration::from_millis(a.linger_ms),
        stop: Some(stop),
        journal: a.journal,
    };
    Ok(runtime::report::run(&run)?)
}

fn load(path: &std::path::Path) -> Result<Config, ExitCode> {
    Config::load(path).map_err(|e| {
        // A file that cannot be read at all: the flag that named it is what to fix.
        if e.key.is_empty() && e.reason.starts_with("cannot read") {
            eprintln!("error: --config {e}");
            ExitCode::from(2)
        } else {
            config_error(e)
        }
    })
}

fn config_error(e: ConfigError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let cli: Cli = ports::input::parse_args();
    ports::host::init_tracing("info");
    match cli.command {
        Cmd::Report(a) => match report(*a) {
            Ok(s) => {
                print!("{s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(2)
            }
        },
        Cmd::Check { config } => {
            let cfg = match load(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            // Build the program too, so its sections are validated.
            let resolved = programs::build::<PktBuf>(&cfg).and_then(|_| programs::resolved(&cfg));
            match resolved {
                Ok(sections) => {
                    print!("{cfg}{sections}");
                    ExitCode::SUCCESS
                }
                Err(e) => config_error(e),
            }
        }
        Cmd::P4(P4Cmd::Export { config, target, out }) => {
            let Some(target) = dataplane::p4::Target::parse(&target) else {
                eprintln!("error: --target {target:?}: expected \"tna\" or \"v1model\"");
                return ExitCode::from(2);
            };
            let cfg = match load(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            if let Err(e) = ports::input::writable_dir("--out", &out) {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
            match programs::p4_export(&cfg, target) {
                Ok(export) => {
                    if let Err(e) = std::fs::create_dir_all(&out) {
                        eprintln!("error: {}: {e}", out.display());
                        return ExitCode::FAILURE;
                    }
                    for (name, text) in &export.files {
                        let path = out.join(name);
                        if let Err(e) = std::fs::write(&path, text) {
                            eprintln!("error: {}: {e}", path.display());
                            return ExitCode::FAILURE;
                        }
                        println!("wrote {}", path.display());
                    }
                    ExitCode::SUCCESS
                }
                // What the target cannot take of this configuration: bad input for the export.
                Err(e) => {
                    eprintln!("error: {}: {e}", config.display());
                    ExitCode::from(2)
                }
            }
        }
        Cmd::Resources { config } => {
            let cfg = match load(&config) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let report = programs::build::<PktBuf>(&cfg)
                .map(|s| format!("{}\n{}", s.resources().declarations(), s.resources().report()));
            match report {
                Ok(r) => {
                    println!("program {}, {} ports", cfg.program, cfg.ports.len());
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
            let result = runtime::run(&cfg);
            match result {
                Ok(summary) => {
                    print!("{}", summary.table());
                    ExitCode::SUCCESS
                }
                Err(RuntimeError::Config(ce)) => config_error(ce),
                // Asked to stop while starting: done as asked.
                Err(RuntimeError::Stopped) => {
                    eprintln!("stopped by a signal before the pipelines started");
                    ExitCode::SUCCESS
                }
                // Could not start (a port, DPDK): like a configuration error, nothing ran.
                Err(RuntimeError::Setup(se)) => {
                    eprintln!("error: {se}");
                    ExitCode::from(2)
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
