//! A DTA soak: the load generator, the translator and the soft-RNIC collector on loopback (the
//! demo's lab), Append reports at a fixed rate for N minutes. Every 10 s it prints the reports
//! sent, the entries the collector's lists hold, what the translator counted lost and what it
//! is still asking for, and the process's resident memory (the translator and the collector run
//! in it); at the end it checks stored + counted lost + pending = sent.
//!
//! `cargo run --release --example dta_soak -- [MINUTES] [RATE]` (default 10 minutes, 100 000
//! reports/s). The figures in BENCHMARKS.md come from it.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use roce::dta::LoadKind;
use softfabric::dta_demo::{Accounting, Lab, LabConfig, accounting, load, send};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let minutes: f64 = args.get(1).map_or(Ok(10.0), |s| s.parse())?;
    let rate: u64 = args.get(2).map_or(Ok(100_000), |s| s.parse())?;
    let lists = 4;
    let lab = Lab::start(LabConfig { lists, ..LabConfig::demo() })?;
    let spec = load(LoadKind::Append { lists }, 1);
    // Entries the collector's lists took (their heads: a lap overwritten by the next is still
    // stored — a consumer's business).
    let stored =
        |lab: &Lab| -> u64 { (0..lists).map(|l| lab.collector.stores().append_head(l).unwrap_or(0)).sum() };
    let t0 = Instant::now();
    let (mut sent, mut chunk) = (0u64, 0u8);
    println!(
        "{:>6} {:>11} {:>11} {:>8} {:>8} {:>9} {:>9}",
        "t_s", "sent", "stored", "lost", "pending", "rss_mib", "reports/s"
    );
    let mut last = (Instant::now(), 0u64);
    while t0.elapsed() < Duration::from_secs_f64(minutes * 60.0) {
        // 10 s of reports, each chunk from its own source address (a reporter of its own).
        chunk = chunk.wrapping_add(1);
        let from = Ipv4Addr::new(127, 0, 1, chunk.max(1));
        let r = send(lab.cfg.translator, from, &spec, rate * 10, rate)?;
        sent += r.sent;
        let a = accounting(&lab.translator)?;
        let dt = last.0.elapsed().as_secs_f64();
        println!(
            "{:>6.0} {:>11} {:>11} {:>8} {:>8} {:>9.1} {:>9.0}",
            t0.elapsed().as_secs_f64(),
            sent,
            stored(&lab),
            a.lost,
            a.pending,
            rss_kib() as f64 / 1024.0,
            (sent - last.1) as f64 / dt
        );
        last = (Instant::now(), sent);
    }
    lab.settle(Duration::from_secs(30))?;
    let Accounting { lost, pending, stats, .. } = accounting(&lab.translator)?;
    let stored = stored(&lab);
    println!("end: sent {sent} stored {stored} counted lost {lost} pending {pending}; {stats:?}");
    lab.stop();
    if stored + lost + pending != sent {
        return Err(
            format!("stored + counted lost + pending = {} != sent {sent}", stored + lost + pending).into()
        );
    }
    Ok(())
}
