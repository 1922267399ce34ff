//! DTA loss and faults on real frames in network namespaces (root; skipped with a message
//! otherwise, a failure under `SOFTFABRIC_REQUIRE_NETNS=1`): the reporter in one namespace,
//! the soft-RNIC collector in another, the `dta_translator` switch between them on AF_PACKET
//! veths, routing like the collectors' ToR. Loss is `iptables -m statistic --mode random` DROP
//! rules inside the namespaces (this kernel has no `netem`): reports and NACKs on the reporter's
//! side, RDMA requests and acknowledgements on the collector's. Each case checks **stored +
//! counted lost + pending = sent** from the translator's counters and the collector's memory,
//! and prints what the rules dropped:
//!
//! * 2 % loss at 10 k reports/s and 4 % at 100 k, for Append, Key-Write, Key-Increment and
//!   Postcarder (N = 1, so one report is one data item on every side);
//! * a 3 s blackout of the collector's acknowledgements mid-run, for the same four;
//! * the translator stopped (SIGTERM) or killed (SIGKILL) mid-stream and another started, for
//!   the same four: its reporter counts what no translator can;
//! * the collector killed and restarted mid-run;
//! * the translator stopped (its DREQs, its last batches) and restarted between two reporter
//!   runs against a collector that keeps its memory: Append continues at the collector's head.
//!   (Mid-stream, the reports sent while no translator runs vanish on the wire where no party
//!   can count them; `dataplane/tests/dta_faults.rs` runs that case on a virtual clock, which
//!   counts them);
//! * a reporter that stops answering NACKs and restarts with a new epoch: the reports the
//!   translator still missed from it are counted unrecoverable: at least the reports a
//!   deterministic `--mode nth` rule dropped.

#[path = "support/in_netns.rs"]
mod netns_thread;
#[path = "../wire/tests/support/scapy.rs"]
mod scapy_support;
#[path = "../dataplane/tests/support/netns.rs"]
mod support;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::{Duration, Instant};

use collector::{Collector, CollectorConfig};
use dataplane::config::Config;
use dataplane::runtime::Runtime;
use dataplane::runtime::report::{self, ReportRun, ReportSummary, Sink};
use netns_thread::in_netns;
use roce::dta::{LoadKind, LoadSpec};
use softfabric::dta_demo::{LabConfig, accounting, load, stored_appends, translator_stats};
use support::{Lab as Net, ROUTED_PORTS, available, have};

const LISTS: u32 = 4;
const REPORTER: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
const COLLECTOR: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
/// Key-Increment keys (each report adds 1 to key `1 + i % KI_KEYS`).
const KI_KEYS: u32 = 1000;
/// Columns of the sketch (each Sketch-Merge report is a column, one round per run).
const SKETCH_COLUMNS: u32 = 1 << 17;

/// The parties' sizes and the collector's address (the translator's config and the collector's
/// come from it, as the demo's do): every store, N = 1, and key numbers below 2^16, whose
/// copy-0 slots (and Postcarder slots and cache entries) are distinct — so a key overwritten
/// is a key lost, never a collision.
fn lab_config() -> LabConfig {
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

fn start_collector(net: &Net) -> Collector {
    let cfg = CollectorConfig::parse(Path::new("<netns collector>"), &lab_config().collector_toml()).unwrap();
    in_netns(&net.ns[1], move || Collector::start(&cfg).expect("the collector starts"))
}

fn start_translator(net: &Net, join_ms: u64) -> Runtime {
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
fn iptables(net: &Net, i: usize, args: &[&str]) {
    let o = net.exec(i, &[&["iptables"], args].concat());
    assert!(o.status.success(), "iptables {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// `p` random loss on the reporter's reports and NACKs, and on the collector's RDMA in and out.
fn lose(net: &Net, p: f64) {
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
fn dropped_by_rules(net: &Net) -> u64 {
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
enum Kind {
    Append,
    KeyWrite,
    KeyIncrement,
    Postcarder,
    SketchMerge,
}

/// What `kind` sends when `count` reports are sent: report `i` carries key `1 + i` (Key-Write),
/// `1 + i % KI_KEYS` (Key-Increment) or postcard `i % 5 + 1` of path `1 + i / 5` (Postcarder).
fn spec(kind: Kind, count: u64) -> LoadSpec {
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
    LoadSpec { scramble: false, ..load(kind, keys) }
}

/// How many of the first `sent` reports of `kind` the collector holds (an error if one is held
/// twice).
fn stored(kind: Kind, s: &collector::Stores, sent: u64) -> Result<u64, String> {
    let e = |e: collector::QueryError| e.to_string();
    Ok(match kind {
        Kind::Append => stored_appends(s, sent, LISTS)?,
        Kind::KeyWrite => {
            let keys: Vec<u32> = (1..=sent as u32).collect();
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
                let key = 1 + p as u32;
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
fn run(ns: &str, spec: LoadSpec, count: u64, rate: u64, epoch: u8, linger_ms: u64) -> ReportSummary {
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
    };
    in_netns(ns, move || report::run(&run).expect("the reporter runs"))
}

fn network(tag: &str) -> Net {
    let net = Net::routed(tag);
    net.checksums_in_software(0);
    net.checksums_in_software(1);
    net
}

/// Wait until the translator has nothing outstanding and its counters (drops included) stay
/// the same over 700 ms — longer than it waits on a silent reporter before giving up what it
/// still wants from it (sketch columns: `SKETCH_GIVE_UP_NS`, 500 ms) — so what is stored and
/// what is counted are read from a translator at rest (up to 30 s).
fn settle(rt: &Runtime) {
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

#[test]
fn every_primitive_under_iptables_loss_counts_everything() {
    if !available() || !have("iptables") {
        return;
    }
    let mut k = 0;
    for kind in [Kind::Append, Kind::KeyWrite, Kind::KeyIncrement, Kind::Postcarder, Kind::SketchMerge] {
        for (count, rate, p) in [(5_000u64, 10_000u64, 0.02), (20_000, 100_000, 0.04)] {
            k += 1;
            let net = network(&format!("l{k}"));
            let collector = start_collector(&net);
            let rt = start_translator(&net, 0);
            lose(&net, p);
            let r = run(&net.ns[0], spec(kind, count), count, rate, report::fresh_epoch(), 200);
            settle(&rt);
            let stored = stored(kind, collector.stores(), r.sent).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            let a = accounting(&rt).unwrap();
            let by_rules = dropped_by_rules(&net);
            let missed: u64 = rt.snapshot().port_stats.iter().map(|p| p.rx_missed).sum();
            eprintln!(
                "{kind:?} {count} at {rate}/s, {:.0} % iptables loss: sent {} stored {stored} counted lost {} \
                 pending {} unknown {}; {by_rules} packets dropped by the rules, {missed} by the kernel at the translator, \
                 {} NACKs, {} resent; {:?} {:?}",
                p * 100.0,
                r.sent,
                a.lost,
                a.pending,
                a.unknown,
                r.nacks,
                r.resent,
                a.stats,
                a.dropped
            );
            assert!(by_rules > 0, "{kind:?}: the rules dropped nothing");
            assert!(
                a.closes(stored, r.sent),
                "{kind:?}: stored {stored} + counted lost {} + pending {} = sent {} (up to {} of unknown outcome)",
                a.lost,
                a.pending,
                r.sent,
                a.unknown
            );
            // What is lost for good is counted, whatever the machine's load; how much depends
            // on it (the kernel drops too when the translator is starved: rx_missed). At 10 k
            // reports/s a report has 9.6 ms to be recovered, and never more is lost than the
            // network lost.
            if rate <= 10_000 {
                assert!(a.lost <= by_rules + missed, "{kind:?}: more lost than the network lost");
            }
            let _ = rt.stop();
            collector.stop();
        }
    }
}

/// The collector dies mid-run (its memory and QPs gone) and another starts 200 ms later: the
/// translator reconnects on its own, high-priority reports wait while it does, and what the
/// old collector held is counted.
#[test]
fn collector_death_on_real_frames_is_counted() {
    if !available() {
        return;
    }
    let net = network("dk");
    let collector = start_collector(&net);
    let rt = start_translator(&net, 0);
    let ns0 = net.ns[0].clone();
    let sender = std::thread::spawn(move || {
        run(&ns0, spec(Kind::Append, 0), 40_000, 20_000, report::fresh_epoch(), 200)
    });
    std::thread::sleep(Duration::from_millis(600));
    collector.stop();
    std::thread::sleep(Duration::from_millis(200));
    let collector = start_collector(&net);
    let r = sender.join().unwrap();
    settle(&rt);
    let stored = stored_appends(collector.stores(), r.sent, LISTS).unwrap_or_else(|e| panic!("{e}"));
    let a = accounting(&rt).unwrap();
    eprintln!(
        "collector death: sent {} stored {stored} counted lost {} pending {}; {:?} {:?}",
        r.sent, a.lost, a.pending, a.stats, a.dropped
    );
    assert!(a.stats.get("resets") > 0 && a.stats.get("region_lost_entries") > 0, "{:?}", a.stats);
    assert!(stored > 0, "writes resumed into the new collector");
    assert_eq!(stored + a.lost + a.pending, r.sent, "stored + counted lost + pending = sent");
    let _ = rt.stop();
    collector.stop();
}

/// Append entries of two runs of the load generator (`a` then `b` reports; each run's report
/// `i` carries datum `i`): how many the collector holds, an error if a datum is held more often
/// than the runs sent it — a list restarted at 0 over live entries shows as entries missing.
fn stored_appends_of_two_runs(s: &collector::Stores, a: u64, b: u64) -> Result<u64, String> {
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

/// The translator is stopped (SIGTERM: it writes out its partial batches, waits for the ACKs,
/// counts what it could not finish, sends a DREQ per QP) and a new one starts: it connects
/// without the collector's help, learns each Append list's head from the collector's metadata
/// and continues it — nothing written over, nothing twice — on real frames.
#[test]
fn translator_restart_on_real_frames_continues_the_lists() {
    if !available() || !have("iptables") {
        return;
    }
    let net = network("tr");
    let collector = start_collector(&net);
    let rt = start_translator(&net, 0);
    lose(&net, 0.01);
    let first = run(&net.ns[0], spec(Kind::Append, 0), 6_000, 20_000, 3, 200);
    settle(&rt);
    let old = accounting(&rt).unwrap();
    let stop = Instant::now();
    let summary = rt.stop();
    let rt = start_translator(&net, 100);
    let restart = stop.elapsed();
    let second = run(&net.ns[0], spec(Kind::Append, 0), 6_000, 20_000, 5, 200);
    settle(&rt);
    let new = accounting(&rt).unwrap();
    let stored = stored_appends_of_two_runs(collector.stores(), first.sent, second.sent)
        .unwrap_or_else(|e| panic!("{e}"));
    let sent = first.sent + second.sent;
    eprintln!(
        "translator restart: sent {sent} stored {stored}; the first translator counted {} lost, {} pending; \
         the second {} lost, {} pending; stop + start + connect took {restart:?}; {} dropped by the rules; {:?}",
        old.lost,
        old.pending,
        new.lost,
        new.pending,
        dropped_by_rules(&net),
        new.stats
    );
    assert!(!summary.table().is_empty());
    assert!(restart < Duration::from_secs(5), "reconnected within seconds: {restart:?}");
    assert_eq!(
        stored + old.lost + old.pending + new.lost + new.pending,
        sent,
        "stored + counted lost = sent"
    );
    // The stop counted what was pending then: nothing of the first run is pending afterwards.
    let _ = rt.stop();
    collector.stop();
}

/// A reporter stops answering NACKs (a hang) and restarts under a new epoch, its kept reports
/// gone: every report the translator still missed from it is counted unrecoverable — the
/// reports a deterministic rule dropped (every 50th), and any the kernel lost besides.
#[test]
fn reporter_restart_on_real_frames_is_counted() {
    if !available() || !have("iptables") {
        return;
    }
    let net = network("rr");
    let collector = start_collector(&net);
    let rt = start_translator(&net, 0);
    iptables(
        &net,
        0,
        &[
            "-A",
            "OUTPUT",
            "-p",
            "udp",
            "--dport",
            "40040",
            "-m",
            "statistic",
            "--mode",
            "nth",
            "--every",
            "50",
            "--packet",
            "1",
            "-j",
            "DROP",
        ],
    );
    iptables(&net, 0, &["-A", "INPUT", "-p", "udp", "--dport", "40044", "-j", "DROP"]);
    let first = run(&net.ns[0], spec(Kind::Append, 0), 5_000, 10_000, 3, 0);
    let by_rule = dropped_by_rules(&net);
    iptables(&net, 0, &["-F"]);
    let second = run(&net.ns[0], spec(Kind::Append, 0), 5_000, 10_000, 5, 200);
    settle(&rt);
    let a = accounting(&rt).unwrap();
    let stored = stored_appends_of_two_runs(collector.stores(), first.sent, second.sent)
        .unwrap_or_else(|e| panic!("{e}"));
    let sent = first.sent + second.sent;
    eprintln!(
        "reporter restart: sent {sent} stored {stored} counted lost {} pending {}; {by_rule} reports dropped by \
         the rule; {:?} {:?}",
        a.lost, a.pending, a.stats, a.dropped
    );
    // At most every 50th of the 5000 reports plus the tail probes (the newest report sent
    // again at the end: packets the rule counts too); fewer when a loaded machine loses
    // reports before the rule sees them, and the rule's counter may start a packet late.
    assert!(
        (50..=100 + first.tail_probes).contains(&by_rule),
        "{by_rule} dropped by the rule, {} tail probes",
        first.tail_probes
    );
    assert!(a.stats.get("reporter_restarts") >= 1, "{:?}", a.stats);
    // Every report the rule dropped is counted unrecoverable (and any the kernel lost besides).
    // The rule counts packets: the first run's tail probes (its newest report sent again at
    // the end) are packets it may drop with no report lost.
    assert!(a.stats.get("seq_unrecoverable") + first.tail_probes >= by_rule, "{first:?} {:?}", a.stats);
    assert_eq!(stored + a.lost + a.pending, sent, "stored + counted lost + pending = sent");
    let _ = rt.stop();
    collector.stop();
}

/// Every RoCEv2 frame on the collector's link carries a correct ICRC, checked by scapy over the
/// header exactly as captured: the translator's WRITEs and atomics, and the replies of the
/// default collector (the UDP-socket soft-RNIC), whose IPv4 header the kernel writes. Replies
/// sent as one GSO send got identifications 0, 1, 2, … on the wire and all but the first failed
/// their ICRC (19–56 % of the ACKs dropped as `roce_bad_icrc`); sent one datagram each with DF
/// they carry identification 0, the header their ICRC was computed over.
#[test]
fn every_roce_frame_on_the_wire_has_a_correct_icrc_both_ways() {
    if !available() {
        return;
    }
    let Some(py) = scapy_support::scapy() else { return };
    let net = network("ic");
    let collector = start_collector(&net);
    let rt = start_translator(&net, 0);
    let dir = std::env::temp_dir().join(format!("softfabric-icrc-wire-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ready = dir.join("ready");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scapy/roce_wire_check.py");
    // The translator's side of the collector's link, in the root namespace: both directions.
    let sniff = std::process::Command::new(&py)
        .args([script, &net.sw[1], "6", ready.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start scapy");
    let t0 = Instant::now();
    while !ready.exists() {
        assert!(t0.elapsed() < Duration::from_secs(20), "scapy did not open its capture");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Runs of replies to one peer in one batch: what a GSO send used to gather.
    let a = run(&net.ns[0], spec(Kind::Append, 0), 5_000, 20_000, report::fresh_epoch(), 100);
    let k = run(&net.ns[0], spec(Kind::KeyIncrement, 0), 2_000, 20_000, report::fresh_epoch(), 100);
    settle(&rt);
    let out = sniff.wait_with_output().expect("scapy ran");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "scapy failed: {}", String::from_utf8_lossy(&out.stderr));
    let count = |dir: &str, what: &str| -> u64 {
        let line =
            text.lines().find(|l| l.starts_with(dir)).unwrap_or_else(|| panic!("no {dir} line:\n{text}"));
        let w: Vec<&str> = line.split_whitespace().collect();
        let i = w.iter().position(|x| *x == what).unwrap();
        w[i + 1].parse().unwrap()
    };
    let snap = rt.snapshot();
    let bad_icrc = snap.drops("roce_bad_icrc");
    let acct = accounting(&rt).unwrap();
    eprintln!(
        "ICRC on the wire ({} + {} reports sent): translator → collector ok {} bad {}; collector → translator \
         ok {} bad {}; the translator dropped {bad_icrc} as roce_bad_icrc; {:?}",
        a.sent,
        k.sent,
        count("to4791", "ok"),
        count("to4791", "bad"),
        count("both", "ok"),
        count("both", "bad"),
        acct.stats
    );
    // scapy in Python keeps up with part of the stream only (it samples); the translator's own
    // check covers every reply.
    assert!(count("to4791", "ok") >= 200 && count("both", "ok") >= 100, "too little RoCEv2 seen:\n{text}");
    assert_eq!(count("to4791", "bad") + count("both", "bad") + count("from4791", "bad"), 0, "{text}");
    assert_eq!(bad_icrc, 0, "the translator dropped replies as roce_bad_icrc");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = rt.stop();
    collector.stop();
}

/// The translator as a process of its own (`dataplane run`, so it can be SIGKILLed), with a
/// control socket; returned once every QP is connected (the caller kills or stops it and
/// waits on it).
#[allow(clippy::zombie_processes)]
fn spawn_translator(net: &Net, tag: &str) -> (std::process::Child, std::path::PathBuf) {
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
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_softfabric")).with_file_name("dataplane");
    assert!(
        bin.exists(),
        "{} is not built: `cargo test --workspace` builds it (alone: `cargo build -p dataplane` first)",
        bin.display()
    );
    let mut child = std::process::Command::new(bin)
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
fn control(sock: &std::path::Path, cmd: &str) -> std::io::Result<String> {
    use std::io::{BufRead, Write};
    let mut s = std::os::unix::net::UnixStream::connect(sock)?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    writeln!(s, "{cmd}")?;
    let mut line = String::new();
    std::io::BufReader::new(s).read_line(&mut line)?;
    Ok(line)
}

/// The translator dies mid-stream — SIGKILL, or SIGTERM — and another starts 300 ms later
/// while the reporter goes on. Nobody can count what arrives while none runs, nor what a
/// killed one held; the reporter can, from the progress each translator sends it (what it has
/// settled: written and acknowledged, or counted lost): after a SIGTERM the stopped one's last
/// word says exactly where it stood, and what came after is counted lost by the reporter;
/// after a SIGKILL what the dead one had not settled is of unknown outcome, counted as such.
/// For each primitive: stored + counted lost + pending ≤ sent ≤ that + unknown, with nothing
/// unknown after a SIGTERM.
#[test]
fn translator_crash_mid_stream_is_counted_by_the_reporter() {
    if !available() {
        return;
    }
    let mut k = 0;
    for kind in [Kind::Append, Kind::KeyWrite, Kind::KeyIncrement, Kind::Postcarder] {
        for kill in [true, false] {
            k += 1;
            let net = network(&format!("x{k}"));
            let collector = start_collector(&net);
            let (mut t1, _sock) = spawn_translator(&net, &format!("x{k}"));
            let ns0 = net.ns[0].clone();
            let count = 24_000;
            let sender = std::thread::spawn(move || {
                run(&ns0, spec(kind, count), count, 20_000, report::fresh_epoch(), 300)
            });
            std::thread::sleep(Duration::from_millis(450));
            let old = if kill {
                t1.kill().unwrap();
                let _ = t1.wait();
                None
            } else {
                std::process::Command::new("kill").args(["-TERM", &t1.id().to_string()]).status().unwrap();
                let out = t1.wait_with_output().unwrap();
                assert!(out.status.success(), "the translator's SIGTERM exit: {:?}", out.status);
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                Some(
                    softfabric::dta_demo::final_accounting_printed(&text)
                        .unwrap_or_else(|| panic!("no final counters in:\n{text}")),
                )
            };
            std::thread::sleep(Duration::from_millis(300));
            let rt = start_translator(&net, 2000);
            let r = sender.join().unwrap();
            settle(&rt);
            let stored = stored(kind, collector.stores(), r.sent).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            let new = accounting(&rt).unwrap();
            let (old_lost, old_pending, old_unknown) =
                old.as_ref().map_or((0, 0, 0), |a| (a.lost, a.pending, a.unknown));
            let known = stored
                + new.lost
                + new.pending
                + old_lost
                + old_pending
                + r.lost_translator_down
                + r.lost_at_killed_translator;
            let unknown = new.unknown + old_unknown + r.unknown_translator_crash;
            eprintln!(
                "{kind:?}, translator {}: sent {} stored {stored}; the new translator counted {} lost, {} pending; \
                 the old one {old_lost} lost, {old_pending} pending; the reporter: {} translator restarts, {} lost \
                 while none ran, {} counted lost by the killed one, {} of unknown outcome; {:?}",
                if kill { "SIGKILLed" } else { "SIGTERMed" },
                r.sent,
                new.lost,
                new.pending,
                r.translator_restarts,
                r.lost_translator_down,
                r.lost_at_killed_translator,
                r.unknown_translator_crash,
                new.stats
            );
            assert_eq!(r.sent, count);
            assert_eq!(r.translator_restarts, 1, "the reporter heard the new translator");
            assert!(
                known <= r.sent && r.sent <= known + unknown,
                "{kind:?}: stored + counted lost + pending {known} ≤ sent {} ≤ that + unknown {unknown}",
                r.sent
            );
            if kill {
                assert!(r.unknown_translator_crash > 0, "a crash mid-stream leaves some outcome unknown");
            } else {
                assert_eq!(unknown, 0, "a stop's last word leaves nothing unknown");
                assert!(r.lost_translator_down > 0, "reports were sent while none ran");
            }
            let _ = rt.stop();
            collector.stop();
        }
    }
}

/// The collector's acknowledgements (and everything else it sends on 4791) are dropped for 3 s
/// mid-run: the translator's requests time out, its QPs fail and reconnect once the link is
/// back (the collector kept its memory: WRITEs are replayed, atomics of unknown outcome counted
/// so); reports meanwhile are parked, dropped for a closed window, or slowed down — each
/// counted. stored + counted lost + pending ≤ sent ≤ that + unknown, for each primitive.
#[test]
fn a_three_second_ack_blackout_is_counted() {
    if !available() || !have("iptables") {
        return;
    }
    for (i, kind) in
        [Kind::Append, Kind::KeyWrite, Kind::KeyIncrement, Kind::Postcarder].into_iter().enumerate()
    {
        let net = network(&format!("b{i}"));
        let collector = start_collector(&net);
        let rt = start_translator(&net, 0);
        let ns0 = net.ns[0].clone();
        let count = 80_000;
        let sender = std::thread::spawn(move || {
            run(&ns0, spec(kind, count), count, 20_000, report::fresh_epoch(), 300)
        });
        std::thread::sleep(Duration::from_millis(500));
        let rule = ["OUTPUT", "-p", "udp", "--dport", "4791", "-j", "DROP"];
        iptables(&net, 1, &[&["-A"], &rule[..]].concat());
        std::thread::sleep(Duration::from_secs(3));
        iptables(&net, 1, &[&["-D"], &rule[..]].concat());
        let r = sender.join().unwrap();
        settle(&rt);
        let stored = stored(kind, collector.stores(), r.sent).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let a = accounting(&rt).unwrap();
        eprintln!(
            "{kind:?}, 3 s without acknowledgements: sent {} stored {stored} counted lost {} pending {} unknown {}; \
             {} NACKs ({} slow-down), {} resent; {:?} {:?}",
            r.sent, a.lost, a.pending, a.unknown, r.nacks, r.slow_downs, r.resent, a.stats, a.dropped
        );
        assert!(
            a.stats.get("resets") > 0 || a.stats.get("retransmitted") > 0,
            "{kind:?}: the blackout was felt"
        );
        assert!(stored > 0, "{kind:?}: writes resumed");
        assert!(
            a.closes(stored, r.sent),
            "{kind:?}: stored {stored} + counted lost {} + pending {} = sent {} (up to {} of unknown outcome)",
            a.lost,
            a.pending,
            r.sent,
            a.unknown
        );
        let _ = rt.stop();
        collector.stop();
    }
}
