//! The DTA namespace lab the `dta_netns*` tests share: the reporter in one network namespace,
//! the soft-RNIC collector in another, the `dta_translator` switch between them on AF_PACKET
//! veths, routing like the collectors' ToR; what each primitive sends and how much of it the
//! collector holds; iptables loss; the translator as a process of its own. Each test binary
//! declares `netns_thread` (`tests/support/in_netns.rs`) and `support`
//! (`dataplane/tests/support/netns.rs`) beside this module.
#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::{Duration, Instant};

use collector::{Collector, CollectorConfig};
use dataplane::config::Config;
use dataplane::runtime::Runtime;
use dataplane::runtime::report::{self, ReportRun, ReportSummary, Sink};
use roce::dta::{LoadKind, LoadSpec};
use softfabric::dta_demo::{LabConfig, load, stored_appends, translator_stats};

use crate::netns_thread::in_netns;
use crate::support::{Lab as Net, ROUTED_PORTS};

pub const LISTS: u32 = 4;
pub const REPORTER: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
pub const COLLECTOR: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
/// Key-Increment keys (each report adds 1 to key `1 + i % KI_KEYS`).
pub const KI_KEYS: u32 = 1000;
/// Columns of the sketch (each Sketch-Merge report is a column, one round per run).
pub const SKETCH_COLUMNS: u32 = 1 << 17;

/// The parties' sizes and the collector's address (the translator's config and the collector's
/// come from it, as the demo's do): every store, N = 1, and key numbers below 2^16, whose
/// copy-0 slots (and Postcarder slots and cache entries) are distinct — so a key overwritten
/// is a key lost, never a collision.
pub fn lab_config() -> LabConfig {
    LabConfig {
        collector: COLLECTOR,
        lists: LISTS,
        append_entries: 1 << 18,
        keywrite_redundancy: 1,
        keyincrement_redundancy: 1,
        postcarder: Some((1 << 16, 1 << 16)),
        // One reporter's copy of a sketch with a column per report of a run (one round).
        sketch: (4, SKETCH_COLUMNS, 1),
        // A lost NAK or resend waits for the timeout: at 100 k reports/s, 20 ms of it (the
        // demo's) is 2000 reports parked or, past the park queue, dropped.
        timeout_us: 2000,
        ..LabConfig::demo()
    }
}

pub fn start_collector(net: &Net) -> Collector {
    let cfg = CollectorConfig::parse(Path::new("<netns collector>"), &lab_config().collector_toml()).unwrap();
    in_netns(&net.ns[1], move || Collector::start(&cfg).expect("the collector starts"))
}

pub fn start_translator(net: &Net, join_ms: u64) -> Runtime {
    let text = LabConfig { join_ms, ..lab_config() }
        .translator_toml_on(&ROUTED_PORTS.replace("{S0}", &net.sw[0]).replace("{S1}", &net.sw[1]));
    let cfg = Config::parse(Path::new("<netns translator>"), &text).unwrap();
    let rt = Runtime::start(&cfg).expect("the translator starts");
    let t0 = Instant::now();
    loop {
        let ready = translator_stats(&rt).unwrap().0.into_iter().find(|(k, _)| k == "ready").map(|x| x.1);
        if let Some((r, q)) = ready.as_deref().and_then(|r| r.split_once('/'))
            && r == q
        {
            return rt;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "the translator did not connect: ready {ready:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One iptables rule in namespace `i`.
pub fn iptables(net: &Net, i: usize, args: &[&str]) {
    let o = net.exec(i, &[&["iptables"], args].concat());
    assert!(o.status.success(), "iptables {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// `p` random loss on the reporter's reports and NACKs, and on the collector's RDMA in and out.
pub fn lose(net: &Net, p: f64) {
    let p = p.to_string();
    let rules: [(usize, &str, &str, &str); 4] = [
        (0, "OUTPUT", "--dport", "40040"),
        (0, "INPUT", "--dport", "40044"),
        (1, "INPUT", "--dport", "4791"),
        (1, "OUTPUT", "--dport", "4791"),
    ];
    for (i, chain, dir, port) in rules {
        iptables(
            net,
            i,
            &[
                "-A",
                chain,
                "-p",
                "udp",
                dir,
                port,
                "-m",
                "statistic",
                "--mode",
                "random",
                "--probability",
                &p,
                "-j",
                "DROP",
            ],
        );
    }
}

/// Packets the DROP rules dropped, in both namespaces.
pub fn dropped_by_rules(net: &Net) -> u64 {
    (0..2)
        .map(|i| {
            let o = net.exec(i, &["iptables", "-L", "-v", "-n", "-x"]);
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains("DROP") && l.contains("statistic"))
                .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// The primitive a case sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Report `i` is datum `i` to list `i % LISTS`.
    Append,
    /// Report `i` writes value `i` to key `base + i`.
    KeyWrite,
    /// Report `i` adds 1 to key `1 + i % KI_KEYS`.
    KeyIncrement,
    /// Report `i` is postcard `i % 5 + 1` of path `base + i / 5`.
    Postcarder,
    /// Report `i` is column `i` of one round.
    SketchMerge,
}

/// Every primitive, in the order the cases run them.
pub const KINDS: [Kind; 5] =
    [Kind::Append, Kind::KeyWrite, Kind::KeyIncrement, Kind::Postcarder, Kind::SketchMerge];

/// What `kind` sends when `count` reports are sent: report `i` carries key `1 + i` (Key-Write),
/// `1 + i % KI_KEYS` (Key-Increment) or postcard `i % 5 + 1` of path `1 + i / 5` (Postcarder).
pub fn spec(kind: Kind, count: u64) -> LoadSpec {
    spec_from(kind, count, 1)
}

/// [`spec`] with Key-Write keys and Postcarder paths from `base`.
pub fn spec_from(kind: Kind, count: u64, base: u32) -> LoadSpec {
    let (kind, keys) = match kind {
        Kind::Append => (LoadKind::Append { lists: LISTS }, 1),
        Kind::KeyWrite => (LoadKind::KeyWrite { redundancy: 1 }, count as u32),
        Kind::KeyIncrement => (LoadKind::KeyIncrement { redundancy: 1, counter: 1 }, KI_KEYS),
        Kind::Postcarder => (LoadKind::Postcarder { hops: 5 }, count.div_ceil(5) as u32),
        Kind::SketchMerge => (
            LoadKind::SketchMerge {
                sketch_id: 0,
                reporter_id: 1,
                rows: 4,
                columns: SKETCH_COLUMNS,
                op: wire::dta::MergeOp::Sum,
            },
            1,
        ),
    };
    let key_base =
        if matches!(kind, LoadKind::KeyWrite { .. } | LoadKind::Postcarder { .. }) { base } else { 1 };
    LoadSpec { scramble: false, key_base, ..load(kind, keys) }
}

/// How many of the first `sent` reports of `kind` the collector holds (an error if one is held
/// twice).
pub fn stored(kind: Kind, s: &collector::Stores, sent: u64) -> Result<u64, String> {
    stored_from(kind, s, sent, 1)
}

/// [`stored`] for a run whose keys (Key-Write) or paths (Postcarder) start at `base`.
pub fn stored_from(kind: Kind, s: &collector::Stores, sent: u64, base: u32) -> Result<u64, String> {
    let e = |e: collector::QueryError| e.to_string();
    Ok(match kind {
        Kind::Append => stored_appends(s, sent, LISTS)?,
        Kind::KeyWrite => {
            let keys: Vec<u32> = (base..base + sent as u32).collect();
            let answers = s.keywrite_batch(&keys, None, 2).map_err(e)?;
            answers
                .iter()
                .enumerate()
                .filter(|(i, a)| a.value.as_deref() == Some(&(*i as u32).to_be_bytes()[..]))
                .count() as u64
        }
        Kind::KeyIncrement => {
            let mut n = 0;
            for k in 1..=KI_KEYS.min(sent as u32) {
                n += s.keyincrement(k).map_err(e)?;
            }
            n
        }
        Kind::SketchMerge => {
            let columns = s.sketch_read(0).map_err(e)?;
            (0..sent.min(u64::from(SKETCH_COLUMNS)))
                .filter(|&c| {
                    (0..4).all(|r| columns[c as usize][r] == roce::dta::LoadGen::sketch_counter(1, c, r))
                })
                .count() as u64
        }
        Kind::Postcarder => {
            let mut n = 0;
            for p in 0..sent.div_ceil(5) {
                let key = base + p as u32;
                let Some(hops) = s.postcarder(key).map_err(e)? else { continue };
                n += (1..=5u32)
                    .filter(|&h| p * 5 + u64::from(h) <= sent && hops[h as usize - 1] == key * 16 + h)
                    .count() as u64;
            }
            n
        }
    })
}

/// The load generator in namespace `ns` (the reporter's).
pub fn run(ns: &str, spec: LoadSpec, count: u64, rate: u64, epoch: u8, linger_ms: u64) -> ReportSummary {
    let run = ReportRun {
        spec,
        collectors: vec![COLLECTOR],
        port: 40040,
        rate,
        count,
        keep: 128,
        epoch,
        sink: Sink::Udp { bind: SocketAddrV4::new(REPORTER, 40041) },
        linger: Duration::from_millis(linger_ms),
        stop: None,
        journal: None,
    };
    in_netns(ns, move || report::run(&run).expect("the reporter runs"))
}

pub fn network(tag: &str) -> Net {
    let net = Net::routed(tag);
    net.checksums_in_software(0);
    net.checksums_in_software(1);
    net
}

/// Wait until the translator has nothing outstanding and its counters (drops included) stay
/// the same over 700 ms — longer than it waits on a silent reporter before giving up what it
/// still wants from it (sketch columns: `SKETCH_GIVE_UP_NS`, 500 ms) — so what is stored and
/// what is counted are read from a translator at rest (up to 30 s).
pub fn settle(rt: &Runtime) {
    let t0 = Instant::now();
    let look = || {
        let s = translator_stats(rt).unwrap();
        let drops: Vec<u64> = rt.snapshot().counters.drops.clone();
        (s, drops)
    };
    let mut last = look();
    while t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(if last.0.get("outstanding") > 0 { 20 } else { 700 }));
        let now = look();
        if now.0.get("outstanding") == 0 && now == last {
            return;
        }
        last = now;
    }
}

/// Append entries of two runs of the load generator (`a` then `b` reports; each run's report
/// `i` carries datum `i`): how many the collector holds, an error if a datum is held more often
/// than the runs sent it — a list restarted at 0 over live entries shows as entries missing.
pub fn stored_appends_of_two_runs(s: &collector::Stores, a: u64, b: u64) -> Result<u64, String> {
    let mut stored = 0;
    for l in 0..LISTS {
        let p = s.append_poll(l, "accounting", usize::MAX).map_err(|e| e.to_string())?;
        let mut held = std::collections::HashMap::<u32, u64>::new();
        for e in p.entries {
            *held.entry(e).or_default() += 1;
        }
        for (v, n) in held {
            let want =
                u64::from(u64::from(v) < a && v % LISTS == l) + u64::from(u64::from(v) < b && v % LISTS == l);
            if n > want {
                return Err(format!("list {l}: datum {v} held {n} times, sent {want}"));
            }
            stored += n;
        }
    }
    Ok(stored)
}

/// The translator as a process of its own (`dataplane run`, so it can be SIGKILLed), with a
/// control socket; returned once every QP is connected (the caller kills or stops it and
/// waits on it).
#[allow(clippy::zombie_processes)]
pub fn spawn_translator(net: &Net, tag: &str) -> (std::process::Child, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("softfabric-crash-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("control.sock");
    let text = lab_config()
        .translator_toml_on(&ROUTED_PORTS.replace("{S0}", &net.sw[0]).replace("{S1}", &net.sw[1]));
    assert!(text.contains("[runtime]"));
    let text = text.replacen("[runtime]", &format!("[runtime]\ncontrol_socket = \"{}\"", sock.display()), 1);
    let cfg = dir.join("translator.toml");
    std::fs::write(&cfg, text).unwrap();
    let mut child = std::process::Command::new(dataplane_bin())
        .args(["run", "--config"])
        .arg(&cfg)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("dataplane runs");
    let t0 = Instant::now();
    loop {
        if let Ok(line) = control(&sock, "show dta stats")
            && let Some((r, q)) = line
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("ready="))
                .and_then(|r| r.split_once('/'))
            && r == q
        {
            return (child, sock);
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the translator process did not connect");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One command on a switch's control socket, its answer line.
pub fn control(sock: &std::path::Path, cmd: &str) -> std::io::Result<String> {
    use std::io::{BufRead, Write};
    let mut s = std::os::unix::net::UnixStream::connect(sock)?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    writeln!(s, "{cmd}")?;
    let mut line = String::new();
    std::io::BufReader::new(s).read_line(&mut line)?;
    Ok(line)
}

/// The path of the `dataplane` binary (built by `cargo test --workspace`).
pub fn dataplane_bin() -> std::path::PathBuf {
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_softfabric")).with_file_name("dataplane");
    assert!(
        bin.exists(),
        "{} is not built: `cargo test --workspace` builds it (alone: `cargo build -p dataplane` first)",
        bin.display()
    );
    bin
}

/// `dataplane report` as a process of its own in namespace `ns` (so it can be SIGKILLed),
/// sending what [`spec_from`]`(kind, count, base)` describes, its count of reports sent kept in
/// `journal`; its summary on stdout.
pub fn spawn_reporter(
    ns: &str,
    kind: Kind,
    count: u64,
    base: u32,
    rate: u64,
    journal: &Path,
) -> std::process::Child {
    let s = spec_from(kind, count, base);
    let mut args: Vec<String> = ["netns", "exec", ns].iter().map(|a| a.to_string()).collect();
    args.push(dataplane_bin().display().to_string());
    let kv = |k: &str, v: String| [format!("--{k}"), v];
    args.push("report".into());
    for [k, v] in [
        kv("to", COLLECTOR.to_string()),
        kv("bind", format!("{REPORTER}:40041")),
        kv("rate", rate.to_string()),
        kv("count", count.to_string()),
        kv("keys", s.keys.to_string()),
        kv("key-base", s.key_base.to_string()),
        kv("keep", "128".into()),
        kv("linger-ms", "300".into()),
        kv("journal", journal.display().to_string()),
    ] {
        args.extend([k, v]);
    }
    let kind_args: Vec<[String; 2]> = match s.kind {
        LoadKind::Append { lists } => vec![kv("primitive", "append".into()), kv("lists", lists.to_string())],
        LoadKind::KeyWrite { redundancy } => {
            vec![kv("primitive", "keywrite".into()), kv("redundancy", redundancy.to_string())]
        }
        LoadKind::KeyIncrement { redundancy, counter } => vec![
            kv("primitive", "keyincrement".into()),
            kv("redundancy", redundancy.to_string()),
            kv("counter", counter.to_string()),
        ],
        LoadKind::Postcarder { hops } => {
            vec![kv("primitive", "postcarder".into()), kv("hops", hops.to_string())]
        }
        LoadKind::SketchMerge { sketch_id, reporter_id, rows, columns, .. } => vec![
            kv("primitive", "sketch-merge".into()),
            kv("sketch-id", sketch_id.to_string()),
            kv("reporter-id", reporter_id.to_string()),
            kv("rows", rows.to_string()),
            kv("columns", columns.to_string()),
        ],
    };
    for [k, v] in kind_args {
        args.extend([k, v]);
    }
    std::process::Command::new("ip")
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("ip netns exec dataplane report runs")
}

/// The `sent` figure of a `dataplane report` summary.
pub fn summary_sent(text: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix("sent")?.split_whitespace().next()?.parse().ok())
}
