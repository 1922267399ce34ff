//! Back-off converges (issue 54), in the lab where time is virtual: a DTA reporter at any rate
//! setting — `rate` 0 (as fast as its link takes them) included — against a collector whose
//! meter takes less than it sends. The translator holds what the meter refuses (high priority)
//! and slows the reporter down as the held queue grows; the reporter halves on a slow-down and
//! recovers in time. Converged means: every report sent is stored or counted lost, the losses
//! are the held queue overflowing before the first slow-downs could take effect (a burst at line
//! rate), not a steady leak, and the collector's meter is used — the stream ends about when
//! the meter lets it.
//!
//! The cases are generated: meter, stream (Append batched 1, 4 or 16 to a WRITE, or Key-Write
//! with 1 or 2 copies), rate (2 to 200 times what the meter takes, or 0), report count, all
//! from a seed. The figures asserted and reported come from seeds 101..=116, never looked at
//! while the back-off was developed (on seeds 1..=10 and hand-written labs, whose failures
//! named the causes fixed on 2026-12-03: a pacer floor of 1/1024 of the rate, above what a
//! collector takes when the rate is the line rate; recovery counted per burst, then in time
//! alone; ACK probes taking 40 % of a slow meter; slow-downs at every held report, then by
//! growth per tick; and slow-downs paced only in time, 20 µs apart, thousands of reports at
//! line rate).

use std::path::Path;

use softfabric::lab::{self, LabConfig};

/// One generated case.
#[derive(Debug, Clone, Copy)]
struct Case {
    seed: u64,
    /// The collector's meter: RDMA packets/s (committed; peak 5/4 of it).
    meter: u64,
    /// The reporter's rate, reports/s; 0: as fast as the link takes them.
    rate: u64,
    /// Append entries per RDMA WRITE; 0: Key-Write reports of redundancy `copies`.
    batch: u64,
    /// Key-Write copies (RDMA WRITEs per report).
    copies: u64,
    /// Reports sent.
    count: u64,
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

impl Case {
    fn generate(seed: u64) -> Self {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for _ in 0..4 {
            xorshift(&mut x);
        }
        // Meter 5 k..=160 k packets/s, log-uniform.
        let meter = (5_000.0 * 32f64.powf((xorshift(&mut x) % 1000) as f64 / 1000.0)) as u64;
        let (batch, copies) = [(1, 0), (4, 0), (16, 0), (0, 1), (0, 2)][(xorshift(&mut x) % 5) as usize];
        // The reports/s the meter takes (a batch is one packet, a Key-Write `copies`).
        let capacity = if batch > 0 { meter * batch } else { meter / copies };
        // 0 (line rate), or 2 to 200 times what the meter takes.
        let rate = match xorshift(&mut x) % 4 {
            0 => 0,
            _ => capacity * [2, 5, 20, 200][(xorshift(&mut x) % 4) as usize],
        };
        // Half a second of the meter's worth, and at least five times what the translator can
        // hold (4,096), so the reporter has to be slowed down to get through.
        let count = (capacity / 2).clamp(20_000, 100_000);
        Case { seed, meter, rate, batch, copies, count }
    }

    /// Reports/s the meter takes.
    fn capacity(&self) -> u64 {
        if self.batch > 0 { self.meter * self.batch } else { self.meter / self.copies }
    }

    /// How long the meter needs for the stream, ns.
    fn metered_ns(&self) -> u64 {
        self.count * 1_000_000_000 / self.capacity()
    }

    fn lab(&self) -> String {
        let (meter, peak) = (self.meter, self.meter * 5 / 4);
        // The run: reports from 1 ms, the meter's time twice over and 50 ms more.
        let duration_us = 1_000 + 2 * self.metered_ns() / 1000 + 50_000;
        format!(
            r#"[lab]
seed = {seed}
duration_us = {duration_us}
cc = "dcqcn"
sample_ns = 10000000

[topology]
kind = "star"
hosts = 2
rate = "100G"
delay_ns = 1000

[switches]
program = "dta_translator"
sections = """
[dta]
append_flush_us = 100
[[dta.collector]]
name = "c0"
ip = "10.0.1.2"
rate = {meter}
peak = {peak}
burst = 256
{store}
"""

[[host]]
ids = [0]
agent = "dta_reporter"
to = ["10.0.1.2"]
{stream}
count = {count}
rate = {rate}
start_ns = 1000000

[[host]]
ids = [1]
agent = "dta_collector"
config = """
[collector]
ip = "10.0.1.2"
memory = "pages"
seed = 1
{collector}
"""
"#,
            seed = self.seed,
            store = if self.batch > 0 {
                format!("append = [{{ list = 0, port = 1338, batch = {} }}]", self.batch)
            } else {
                "keywrite = 1337".into()
            },
            stream = if self.batch > 0 {
                "primitive = \"append\"\nlists = 1".into()
            } else {
                format!("primitive = \"keywrite\"\nredundancy = {}\nkeys = 5000", self.copies)
            },
            collector = if self.batch > 0 {
                "[[append]]\nlist = 0\nport = 1338\nentries = 65536".into()
            } else {
                format!("[keywrite]\nport = 1337\nslots = 65536\ndata = 4\nredundancy = {}", self.copies)
            },
            count = self.count,
            rate = self.rate,
        )
    }
}

/// What a case did.
#[derive(Debug)]
struct Outcome {
    sent: u64,
    /// Append entries stored (Key-Write: not countable, its slots are overwritten).
    stored: Option<u64>,
    /// Drops of reports the translator counted as lost, by reason.
    lost: Vec<(String, u64)>,
    slow_downs: u64,
    /// The last first transmission, ns after the first.
    took_ns: u64,
}

fn counter(c: &[(String, u64)], name: &str) -> u64 {
    c.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v)
}

fn run(case: &Case) -> Outcome {
    let cfg = LabConfig::parse(Path::new("backoff.toml"), &case.lab()).unwrap();
    let r = lab::run(&cfg, |_| {}).unwrap();
    let sw = &r.switches[0].counters;
    // Everything the translator dropped but the reporter's tail probes (duplicates by design).
    let lost: Vec<_> = sw
        .iter()
        .filter(|(n, v)| *v > 0 && n.starts_with("drop_") && n != "drop_dta_seq_duplicate")
        .cloned()
        .collect();
    let [rep, col] = &r.agents[..] else { panic!("{:?}", r.agents) };
    let rc = &rep.counters;
    Outcome {
        sent: counter(rc, "sent"),
        stored: (case.batch > 0).then(|| counter(&col.counters, "append0_entries")),
        lost,
        slow_downs: counter(rc, "slow_downs"),
        took_ns: counter(rc, "last_ns").saturating_sub(counter(rc, "first_ns")),
    }
}

/// The held-out cases: every report stored or counted lost; what is lost is at most the
/// held queue's overflow in the first burst (at most 1,000 reports of a stream of 20,000 to
/// 100,000, and nothing at a set rate of at most 20 times the meter); and the stream ends within
/// 1.5 times the meter's own time plus 30 ms (the meter used at least two thirds, on average,
/// from the first slow-down on).
#[test]
fn back_off_converges_at_every_rate_on_held_out_cases() {
    let mut bad = Vec::new();
    eprintln!("seed  meter/s  stream  rate/s       count  sent   stored lost  slow-downs  took/metered");
    // SOFTFABRIC_BACKOFF_SEEDS=FIRST..=LAST runs other seeds (development used 1..=10).
    let seeds = std::env::var("SOFTFABRIC_BACKOFF_SEEDS")
        .ok()
        .and_then(|v| {
            let (a, b) = v.split_once("..=")?;
            Some(a.parse::<u64>().ok()?..=b.parse::<u64>().ok()?)
        })
        .unwrap_or(101..=116);
    for seed in seeds {
        let case = Case::generate(seed);
        let o = run(&case);
        let lost: u64 = o.lost.iter().map(|(_, v)| v).sum();
        let metered = case.metered_ns();
        eprintln!(
            "{seed:4}  {:7}  {:6}  {:10}  {:6}  {:6} {:>6} {lost:5} {:10}  {:.2}  {:?}",
            case.meter,
            if case.batch > 0 { format!("ap/{}", case.batch) } else { format!("kw N={}", case.copies) },
            case.rate,
            case.count,
            o.sent,
            o.stored.map_or("-".into(), |s| s.to_string()),
            o.slow_downs,
            o.took_ns as f64 / metered as f64,
            o.lost
        );
        let mut fail = |why: String| bad.push(format!("seed {seed} {case:?}: {why}"));
        if o.sent != case.count {
            fail(format!("sent {} of {}", o.sent, case.count));
        }
        if let Some(stored) = o.stored
            && stored + lost != o.sent
        {
            fail(format!("stored {stored} + counted lost {lost} != sent {}", o.sent));
        }
        // A set rate up to 20 times the meter: nothing lost. Faster (or at line rate): the
        // first burst before the first slow-downs can overflow the held queue, once — a
        // bound that does not grow with the stream (a steady leak of 1 % fails it).
        let allowed = if case.rate != 0 && case.rate <= 20 * case.capacity() { 0 } else { 1_000 };
        if lost > allowed {
            fail(format!("{lost} lost, more than the first burst's overflow ({allowed})"));
        }
        if o.took_ns > metered * 3 / 2 + 30_000_000 {
            fail(format!(
                "took {} ms, the meter's time is {} ms",
                o.took_ns / 1_000_000,
                metered / 1_000_000
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
