//! `collector`: serve DTA stores (soft-RNIC, or an RDMA NIC with `--features verbs`), and query a
//! running one.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use collector::{Collector, CollectorConfig, StatsSnapshot, http};

#[derive(Debug, Parser)]
#[command(
    name = "collector",
    version,
    about = "DTA collector: registered memory served by a soft-RNIC or an RDMA NIC, and its queries"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Serve the stores of a config on its backend (the soft-RNIC, RoCEv2 over UDP 4791, or with
    /// `backend = "verbs"` an RDMA NIC); print the regions, then per-second counters.
    Serve {
        /// The collector config (see config/collector.toml).
        #[arg(long)]
        config: PathBuf,
        /// Serve queries as JSON on this address (e.g. 127.0.0.1:8484).
        #[arg(long)]
        http: Option<SocketAddr>,
        /// Do not check the ICRC (like a NIC whose ICRC check is disabled).
        #[arg(long)]
        no_icrc: bool,
        /// Stop after this many seconds (default: until Ctrl-C; more than 0, at most a year).
        #[arg(long, value_parser = duration_s, allow_negative_numbers = true)]
        duration: Option<f64>,
        /// Seconds between counter lines (0: none; at most a day).
        #[arg(long, default_value_t = 1.0, value_parser = interval_s, allow_negative_numbers = true)]
        stats_interval: f64,
    },
    /// Check a config and print what it would serve.
    Check {
        /// The collector config.
        #[arg(long)]
        config: PathBuf,
    },
    /// Query a running `collector serve --http`.
    Query {
        /// Its HTTP address.
        #[arg(long, default_value = "127.0.0.1:8484")]
        http: SocketAddr,
        #[command(subcommand)]
        q: Query,
    },
    /// The Hawkeye analyzer.
    Hawkeye {
        #[command(subcommand)]
        cmd: HawkeyeCmd,
    },
}

#[derive(Debug, Subcommand)]
enum HawkeyeCmd {
    /// Diagnose every incident of a lab run's output directory (hawkeye_reports.jsonl,
    /// hawkeye_polls.jsonl, hawkeye_topology.json): print each one's summary.
    Analyze {
        /// The lab run's output directory.
        dir: PathBuf,
        /// Write the incidents as JSON lines here (one object per incident).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write each incident's graph into this directory as incident-<n>.dot and .svg.
        #[arg(long)]
        svg: Option<PathBuf>,
        /// Reports of one event ID within this many µs form one incident (1 to 60 000 000).
        #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=60_000_000))]
        window_us: u64,
    },
    /// Read the reports switches sent as DTA Append words (`[hawkeye] dta_collector`) back from
    /// a running `collector serve --http` — one Append list per switch — and diagnose each
    /// event's reports (the lists carry no arrival time: one pass, one incident per event ID).
    Dta {
        /// The collector's HTTP address.
        #[arg(long, default_value = "127.0.0.1:8484")]
        http: SocketAddr,
        /// The Append lists to read (the switches' `dta_list`), e.g. --list 1 --list 2 (each
        /// once, at most 1024).
        #[arg(long = "list", required = true)]
        lists: Vec<u32>,
        /// The topology (`hawkeye_topology.json`'s format).
        #[arg(long)]
        topology: PathBuf,
        /// Consumer name at the collector (its own tail per list; 1 to 64 of A-Z a-z 0-9 _ . -).
        #[arg(long, default_value = "hawkeye", value_parser = consumer)]
        consumer: String,
        /// Write the incidents as JSON lines here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write each incident's graph into this directory as incident-<n>.dot and .svg.
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Receive telemetry reports over UDP (the switches' `[hawkeye] analyzer`) and print each
    /// incident's diagnosis once its window has passed.
    Listen {
        /// Where to listen, e.g. 0.0.0.0:4857.
        #[arg(long)]
        bind: SocketAddr,
        /// The topology (`hawkeye_topology.json`'s format).
        #[arg(long)]
        topology: PathBuf,
        /// Reports of one event ID within this many µs form one incident (1 to 60 000 000).
        #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=60_000_000))]
        window_us: u64,
        /// Append each diagnosis as a JSON line here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Stop after this many seconds (default: until Ctrl-C; more than 0, at most a year).
        #[arg(long, value_parser = duration_s, allow_negative_numbers = true)]
        duration: Option<f64>,
    },
}

#[derive(Debug, Subcommand)]
enum Query {
    /// Key-Write lookup: the value whose checksum matches in the key's N slots.
    Keywrite {
        /// Keys (decimal or 0x hex, 32 bits); several make a batch query (at most 1000).
        #[arg(required = true, value_parser = key)]
        keys: Vec<String>,
        /// Answer only if at least this many copies agree.
        #[arg(long)]
        consensus: Option<u8>,
    },
    /// Key-Increment: the minimum of the key's N counters.
    Keyincrement {
        /// The key (decimal or 0x hex, 32 bits).
        #[arg(value_parser = key)]
        key: String,
    },
    /// Append: the entries after this consumer's tail pointer.
    Append {
        /// List ID.
        list: u32,
        /// Consumer name (each has its own tail; 1 to 64 of A-Z a-z 0-9 _ . -).
        #[arg(long, default_value = "cli", value_parser = consumer)]
        consumer: String,
        /// At most this many entries per poll (1 to 2^20).
        #[arg(long, default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
        max: u64,
        /// Keep polling, printing new entries as they land.
        #[arg(long)]
        follow: bool,
    },
    /// Postcarder: the key's path.
    Postcarder {
        /// The key (decimal or 0x hex, 32 bits).
        #[arg(value_parser = key)]
        key: String,
    },
    /// Sketch: its counters, or a point estimate.
    Sketch {
        /// Sketch ID.
        id: u16,
        /// Estimate this key's count instead (decimal or 0x hex, 32 bits).
        #[arg(long, value_parser = key)]
        estimate: Option<String>,
    },
    /// Immediate notifications (WRITE with Immediate).
    Notifications {
        /// Keep waiting for more.
        #[arg(long)]
        follow: bool,
    },
    /// The backend's counters.
    Stats,
    /// The regions served.
    Regions,
}

fn load(path: &std::path::Path) -> Result<CollectorConfig, ExitCode> {
    let cfg = CollectorConfig::load(path).map_err(|e| {
        // A file that cannot be read at all: the flag that named it is what to fix.
        if e.reason.starts_with("cannot read") {
            eprintln!("error: --config {}: {}", path.display(), e.reason);
        } else {
            eprintln!("error: {e}");
        }
        ExitCode::from(2)
    })?;
    // What `serve` needs of the host, checked by `check` too: on the host's UDP stack the
    // address must be one of this host's (binding it is how to ask).
    if matches!(cfg.attach, collector::Attach::Udp)
        && let Err(e) = std::net::UdpSocket::bind((cfg.ip, 0))
        && e.kind() == std::io::ErrorKind::AddrNotAvailable
    {
        eprintln!(
            "error: {}: collector.ip: {} is not an address of this host (the soft-RNIC binds it; use attach \"af_packet\" to answer for another): {e}",
            path.display(),
            cfg.ip
        );
        return Err(ExitCode::from(2));
    }
    Ok(cfg)
}

fn stats_line(d: &StatsSnapshot, prev: &StatsSnapshot, secs: f64) -> String {
    let rate = |a: u64, b: u64| (a - b) as f64 / secs.max(1e-9);
    format!(
        "writes {:>10.0}/s atomics {:>9.0}/s rx {:>8.2} MB/s | total writes {} atomics {} imm {} | NAK access {} seq {} invalid {} | dropped icrc {} malformed {} unknown-qp {} | dup {} conns {}",
        rate(d.writes, prev.writes),
        rate(d.atomics, prev.atomics),
        rate(d.rx_bytes, prev.rx_bytes) / 1e6,
        d.writes,
        d.atomics,
        d.immediates,
        d.access_errors,
        d.out_of_sequence,
        d.invalid,
        d.bad_icrc,
        d.malformed,
        d.unknown_qp,
        d.duplicates,
        d.connections,
    )
}

fn serve(
    config: PathBuf,
    http_addr: Option<SocketAddr>,
    no_icrc: bool,
    duration: Option<f64>,
    interval: f64,
) -> anyhow::Result<ExitCode> {
    let mut cfg = match load(&config) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    if no_icrc {
        cfg.icrc = false;
    }
    let c = Arc::new(Collector::start(&cfg)?);
    if let Some(w) = c.warning() {
        eprintln!("warning: {w}");
    }
    print!("{}", c.describe());
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    let web = match http_addr {
        Some(addr) => {
            let (c2, s2) = (c.clone(), stop.clone());
            let (tx, rx) = std::sync::mpsc::channel();
            let t = std::thread::spawn(move || {
                http::serve(&c2, addr, &s2, |a| {
                    let _ = tx.send(a);
                })
            });
            match rx.recv_timeout(Duration::from_secs(5)) {
                Ok(a) => println!("queries: http://{a}/ (collector query --http {a} ...)"),
                Err(_) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(t
                        .join()
                        .map_err(|_| anyhow::anyhow!("http thread"))?
                        .err()
                        .map(anyhow::Error::from)
                        .unwrap_or_else(|| anyhow::anyhow!("the HTTP server did not start")));
                }
            }
            Some(t)
        }
        None => None,
    };
    let start = Instant::now();
    let mut prev = c.stats().snapshot();
    let mut last = Instant::now();
    while !stop.load(Ordering::Relaxed) && duration.is_none_or(|d| start.elapsed().as_secs_f64() < d) {
        std::thread::sleep(Duration::from_millis(50));
        if interval > 0.0 && last.elapsed().as_secs_f64() >= interval {
            let now = c.stats().snapshot();
            println!("{}", stats_line(&now, &prev, last.elapsed().as_secs_f64()));
            prev = now;
            last = Instant::now();
        }
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(t) = web {
        t.join().map_err(|_| anyhow::anyhow!("http thread panicked"))??;
    }
    let total = c.stats().snapshot();
    println!("total: {}", serde_json::to_string(&total)?);
    Ok(ExitCode::SUCCESS)
}

fn query(addr: SocketAddr, q: Query) -> anyhow::Result<ExitCode> {
    let get = |path: &str| -> anyhow::Result<serde_json::Value> {
        let (status, v) = http::get(addr, path, Duration::from_secs(15))?;
        if status != 200 {
            anyhow::bail!("{}", v.get("error").and_then(|e| e.as_str()).unwrap_or("query failed"));
        }
        Ok(v)
    };
    let c = |n: Option<u8>| n.map(|c| format!("consensus={c}")).unwrap_or_default();
    match q {
        Query::Keywrite { keys, consensus } if keys.len() == 1 => {
            println!("{}", get(&format!("/keywrite/{}?{}", keys[0], c(consensus)))?)
        }
        Query::Keywrite { keys, .. } if keys.len() > 1000 => {
            return bad(format!("KEYS: {} keys; at most 1000 in one batch", keys.len()));
        }
        Query::Keywrite { keys, consensus } => {
            let v = get(&format!("/keywrite?keys={}&{}", keys.join(","), c(consensus)))?;
            for a in v.as_array().into_iter().flatten() {
                println!("{a}");
            }
        }
        Query::Keyincrement { key } => println!("{}", get(&format!("/keyincrement/{key}"))?),
        Query::Postcarder { key } => println!("{}", get(&format!("/postcarder/{key}"))?),
        Query::Sketch { id, estimate: Some(k) } => {
            println!("{}", get(&format!("/sketch/{id}/estimate/{k}"))?)
        }
        Query::Sketch { id, estimate: None } => println!("{}", get(&format!("/sketch/{id}"))?),
        Query::Stats => println!("{}", get("/stats")?),
        Query::Regions => println!("{}", get("/regions")?),
        Query::Append { list, consumer, max, follow } => loop {
            let v = get(&format!("/append/{list}?consumer={consumer}&max={max}"))?;
            let lost = v.get("lost").and_then(|l| l.as_u64()).unwrap_or(0);
            if lost > 0 {
                eprintln!("lost {lost} entries (overwritten before they were read)");
            }
            let entries = v.get("entries").and_then(|e| e.as_array()).cloned().unwrap_or_default();
            for e in &entries {
                println!("{e}");
            }
            if !follow {
                break;
            }
            if entries.is_empty() {
                std::thread::sleep(Duration::from_millis(100));
            }
        },
        Query::Notifications { follow } => loop {
            let v = get(&format!("/notifications?wait_ms={}", if follow { 1000 } else { 0 }))?;
            for n in v.as_array().into_iter().flatten() {
                println!("{n}");
            }
            if !follow {
                break;
            }
        },
    }
    Ok(ExitCode::SUCCESS)
}

/// A key as the queries take it: decimal or `0x` hex, 32 bits (checked here, so a key cannot
/// change the query's URL).
fn key(s: &str) -> Result<String, String> {
    let t = s.trim();
    let v = match t.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => t.parse::<u64>().ok(),
    };
    v.filter(|&v| v <= u64::from(u32::MAX))
        .map(|v| v.to_string())
        .ok_or_else(|| format!("{s:?}: expected a 32-bit key, decimal or 0x hex"))
}

/// A consumer name: what the collector keeps a tail for.
fn consumer(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= collector::store::MAX_CONSUMER_NAME
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("{s:?}: expected 1 to 64 characters of A-Z a-z 0-9 _ . -"))
    }
}

/// An error in what the command was given (exit 2), not in its run (exit 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadInput(String);

/// `Err(BadInput(msg))`.
fn bad<T>(msg: String) -> anyhow::Result<T> {
    Err(BadInput(msg).into())
}

/// A text file named by `flag`, read whole with a bound.
fn read_input(flag: &str, path: &std::path::Path, max: u64) -> anyhow::Result<String> {
    ports::input::read_flag(flag, path, max).or_else(bad)
}

/// The outputs `--json` and `--svg` name, made before any work.
fn outputs(json: Option<&std::path::Path>, svg: Option<&std::path::Path>) -> anyhow::Result<()> {
    if let Some(j) = json {
        ports::input::writable_file("--json", j).or_else(bad)?;
    }
    if let Some(d) = svg {
        ports::input::writable_dir("--svg", d).or_else(bad)?;
    }
    Ok(())
}

fn duration_s(s: &str) -> Result<f64, String> {
    ports::input::ranged(s, 0.0, 365.0 * 86_400.0, true, "s")
}

fn interval_s(s: &str) -> Result<f64, String> {
    ports::input::ranged(s, 0.0, 86_400.0, false, "s")
}

/// `collector hawkeye listen`: reports from UDP into the assembler; every 100 ms, the incidents
/// whose window passed are diagnosed and printed (and appended to `json`). A datagram that is
/// not a report is counted and reported at the end.
fn hawkeye_listen(
    bind: SocketAddr,
    topology: &std::path::Path,
    window_us: u64,
    json: Option<&std::path::Path>,
    duration: Option<f64>,
) -> anyhow::Result<()> {
    use collector::hawkeye::{self, Assembler, Params, Received, Topology, render};
    use std::io::Write as _;
    let text = read_input("--topology", topology, ports::input::MAX_TEXT_BYTES)?;
    let topo = match Topology::from_json(&text) {
        Ok(t) => t,
        Err(e) => return bad(format!("--topology {}: {e}", topology.display())),
    };
    let mut out = match json {
        Some(p) => match std::fs::OpenOptions::new().create(true).append(true).open(p) {
            Ok(f) => Some(f),
            Err(e) => return bad(format!("--json {}: cannot write: {e}", p.display())),
        },
        None => None,
    };
    let sock = match std::net::UdpSocket::bind(bind) {
        Ok(s) => s,
        Err(e) => return bad(format!("--bind {bind}: {e}")),
    };
    sock.set_read_timeout(Some(std::time::Duration::from_millis(100)))?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, stop.clone())?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone())?;
    let t0 = std::time::Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    let mut asm = Assembler::new(window_us.saturating_mul(1000));
    let (mut reports, mut bad, mut n) = (0u64, 0u64, 0usize);
    let mut buf = [0u8; 2048];
    println!("listening on {bind} for Hawkeye reports");
    let mut report = |incs: Vec<hawkeye::Incident>, out: &mut Option<std::fs::File>| -> anyhow::Result<()> {
        for inc in incs {
            let (g, ds) = hawkeye::analyze(&inc, &topo, &Params::default());
            for d in &ds {
                println!(
                    "incident {n} (event {}, {} reports): {}",
                    inc.event,
                    inc.reports.len(),
                    render::summary(d)
                );
                if let Some(f) = out.as_mut() {
                    writeln!(f, "{}", render::json(&inc, &g, d))?;
                }
            }
            n += 1;
        }
        Ok(())
    };
    while !stop.load(std::sync::atomic::Ordering::Relaxed)
        && duration.is_none_or(|d| t0.elapsed().as_secs_f64() < d)
    {
        match sock.recv(&mut buf) {
            Ok(len) => match Received::parse(now(), &buf[..len]) {
                Ok(r) => {
                    reports += 1;
                    asm.push(r);
                }
                Err(_) => bad += 1,
            },
            // A timeout, or a signal (the stop flag is looked at next).
            Err(e) if ports::input::is_idle_read(&e) => {}
            Err(e) => return Err(e.into()),
        }
        report(asm.poll(now()), &mut out)?;
    }
    report(asm.flush(), &mut out)?;
    println!("{reports} reports, {bad} datagrams that were not reports, {n} incidents");
    Ok(())
}

/// `collector hawkeye analyze`.
fn hawkeye_analyze(
    dir: &std::path::Path,
    json: Option<&std::path::Path>,
    svg: Option<&std::path::Path>,
    window_us: u64,
) -> anyhow::Result<()> {
    // A lab run's outputs, read whole: at most 1 GiB each.
    let read = |name: &str| ports::input::read_text(&dir.join(name), 1 << 30);
    let need = |name: &str| {
        read(name)
            .or_else(|e| bad(format!("DIR {}: {name}: {e} (a lab run's output directory)", dir.display())))
    };
    let reports = need("hawkeye_reports.jsonl")?;
    let topology = need("hawkeye_topology.json")?;
    let polls = match read("hawkeye_polls.jsonl") {
        Ok(t) => t,
        Err(ports::input::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return bad(format!("DIR {}: hawkeye_polls.jsonl: {e}", dir.display())),
    };
    outputs(json, svg)?;
    let (incidents, topo) =
        match collector::hawkeye::lab::load(&reports, &polls, &topology, window_us.saturating_mul(1000)) {
            Ok(x) => x,
            Err(e) => return bad(format!("DIR {}: {e}", dir.display())),
        };
    diagnose_all(&incidents, &topo, json, svg)
}

/// `collector hawkeye dta`: the Append lists' words, read over HTTP, as incidents.
fn hawkeye_dta(
    addr: SocketAddr,
    lists: &[u32],
    consumer: &str,
    topology: &std::path::Path,
    json: Option<&std::path::Path>,
    svg: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use anyhow::Context;
    use collector::hawkeye::{Topology, dta, incidents};
    if lists.len() > 1024 {
        return bad("--list: at most 1024 lists".into());
    }
    if let Some(l) = lists.iter().enumerate().find_map(|(i, l)| lists[..i].contains(l).then_some(l)) {
        return bad(format!("--list {l}: given twice"));
    }
    let topo_text = read_input("--topology", topology, ports::input::MAX_TEXT_BYTES)?;
    let topo = match Topology::from_json(&topo_text) {
        Ok(t) => t,
        Err(e) => return bad(format!("--topology {}: {e}", topology.display())),
    };
    outputs(json, svg)?;
    let mut reports = Vec::new();
    for &list in lists {
        let mut words = Vec::new();
        loop {
            let (status, v) =
                http::get(addr, &format!("/append/{list}?consumer={consumer}"), Duration::from_secs(15))?;
            if status != 200 {
                anyhow::bail!(
                    "list {list}: {}",
                    v.get("error").and_then(|e| e.as_str()).unwrap_or("query failed")
                );
            }
            let lost = v.get("lost").and_then(|l| l.as_u64()).unwrap_or(0);
            if lost > 0 {
                eprintln!("list {list}: {lost} words overwritten before they were read: reports cut");
            }
            let entries: Vec<u32> = v
                .get("entries")
                .and_then(|e| e.as_array())
                .into_iter()
                .flatten()
                .map(|w| {
                    w.as_u64()
                        .and_then(|w| u32::try_from(w).ok())
                        .context("an entry that is not a 32-bit word")
                })
                .collect::<anyhow::Result<_>>()?;
            if entries.is_empty() {
                break;
            }
            words.extend(entries);
        }
        let (got, err) = dta::reports(&words, 0);
        eprintln!("list {list}: {} words, {} reports", words.len(), got.len());
        if let Some(e) = err {
            eprintln!("list {list}: the rest does not read as reports: {e}");
        }
        reports.extend(got);
    }
    let incs = incidents(reports, u64::MAX);
    diagnose_all(&incs, &topo, json, svg)
}

/// Print each incident's diagnoses (and write them as JSON lines and graphs, if asked).
fn diagnose_all(
    incidents: &[collector::hawkeye::Incident],
    topo: &collector::hawkeye::Topology,
    json: Option<&std::path::Path>,
    svg: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use anyhow::Context;
    use collector::hawkeye::{self, Params, render};
    let params = Params::default();
    let mut lines = String::new();
    if let Some(d) = svg {
        std::fs::create_dir_all(d).with_context(|| format!("{}", d.display()))?;
    }
    // Summaries to stdout; a reader that went away (`| head`) ends the printing, not the run.
    let mut out = std::io::stdout().lock();
    let mut printing = true;
    for (n, inc) in incidents.iter().enumerate() {
        let (g, ds) = hawkeye::analyze(inc, topo, &params);
        for d in &ds {
            if printing {
                use std::io::Write as _;
                let w = writeln!(
                    out,
                    "incident {n} (event {}, t = {} ns): {}",
                    inc.event,
                    inc.t_ns,
                    render::summary(d)
                );
                match w {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => printing = false,
                    Err(e) => return Err(e.into()),
                }
            }
            lines += &render::json(inc, &g, d).to_string();
            lines.push('\n');
        }
        if let Some(dirp) = svg {
            let dot = render::dot(&g, &ds[0]);
            std::fs::write(dirp.join(format!("incident-{n}.dot")), &dot)?;
            let s = render::svg(&dot).map_err(anyhow::Error::msg)?;
            std::fs::write(dirp.join(format!("incident-{n}.svg")), s)?;
        }
    }
    if let Some(p) = json {
        std::fs::write(p, lines).with_context(|| format!("{}", p.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    ports::host::init_tracing("warn");
    let cli: Cli = ports::input::parse_args();
    let r = match cli.cmd {
        Cmd::Serve { config, http, no_icrc, duration, stats_interval } => {
            serve(config, http, no_icrc, duration, stats_interval)
        }
        Cmd::Check { config } => match load(&config) {
            Ok(c) => {
                println!("{}: ok, {} stores", config.display(), c.stores.len());
                for s in &c.stores {
                    println!("  {:<14} port {:<5} {} bytes", s.kind.name(), s.port, s.kind.bytes());
                }
                Ok(ExitCode::SUCCESS)
            }
            Err(code) => Ok(code),
        },
        Cmd::Query { http, q } => query(http, q),
        Cmd::Hawkeye { cmd: HawkeyeCmd::Listen { bind, topology, window_us, json, duration } } => {
            hawkeye_listen(bind, &topology, window_us, json.as_deref(), duration).map(|()| ExitCode::SUCCESS)
        }
        Cmd::Hawkeye { cmd: HawkeyeCmd::Dta { http, lists, topology, consumer, json, svg } } => {
            hawkeye_dta(http, &lists, &consumer, &topology, json.as_deref(), svg.as_deref())
                .map(|()| ExitCode::SUCCESS)
        }
        Cmd::Hawkeye { cmd: HawkeyeCmd::Analyze { dir, json, svg, window_us } } => {
            hawkeye_analyze(&dir, json.as_deref(), svg.as_deref(), window_us).map(|()| ExitCode::SUCCESS)
        }
    };
    r.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        if e.downcast_ref::<BadInput>().is_some() { ExitCode::from(2) } else { ExitCode::FAILURE }
    })
}
