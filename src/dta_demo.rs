//! DTA end to end on one machine: a load generator sends reports to a `dta_translator` switch
//! on the host's UDP stack (a [`dataplane::port::UdpPort`]), which turns them into RoCEv2 RDMA
//! on a soft-RNIC [`collector`] — three parties on loopback addresses, real sockets between
//! them, no root and no setup. `cargo run --release` runs [`run`]; the end-to-end tests drive
//! the same [`Lab`] with their own loads.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::{Duration, Instant};

use collector::{Collector, CollectorConfig};
use dataplane::config::Config;
use dataplane::runtime::Runtime;
use dataplane::runtime::report::{self, ReportRun, ReportSummary, Sink};
use roce::dta::{LoadGen, LoadKind, LoadSpec};
use wire::dta::Priority;

/// Why the demo (or a lab the tests drive) failed.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The generated collector configuration was refused.
    #[error(transparent)]
    CollectorConfig(#[from] collector::ConfigError),
    /// The generated translator configuration was refused.
    #[error(transparent)]
    TranslatorConfig(#[from] dataplane::config::ConfigError),
    /// The collector did not start.
    #[error("starting the collector: {0}")]
    Collector(#[from] collector::StartError),
    /// The translator did not start.
    #[error("starting the translator: {0}")]
    Translator(#[from] dataplane::runtime::RuntimeError),
    /// The translator did not answer a command.
    #[error("the translator did not answer: {0}")]
    Command(String),
    /// The load generator failed.
    #[error("sending reports: {0}")]
    Report(#[from] report::ReportError),
    /// A query of the collector failed.
    #[error("querying the collector: {0}")]
    Query(#[from] collector::QueryError),
    /// Something did not happen in time.
    #[error("{0}")]
    Timeout(String),
    /// Writing the demo's output failed.
    #[error("writing the output: {0}")]
    Io(#[from] std::io::Error),
    /// The demo ran, and an end-to-end check of what the collector holds failed: each line
    /// says what was lost or wrong.
    #[error("end-to-end checks failed:\n  {}", .0.join("\n  "))]
    Check(Vec<String>),
}

/// Where the three parties live and how big the stores are.
#[derive(Debug, Clone)]
pub struct LabConfig {
    /// The collector's address (the soft-RNIC binds UDP 4791 on it).
    pub collector: Ipv4Addr,
    /// The translator's address (UDP 40040 for reports, 4791 for the collector's replies).
    pub translator: Ipv4Addr,
    /// The load generators' addresses start here (one per run).
    pub reporter: Ipv4Addr,
    /// Key-Write slots (a power of two).
    pub keywrite_slots: u64,
    /// The Key-Write store's N (its queries read N copies).
    pub keywrite_redundancy: u8,
    /// Key-Increment counters (a power of two).
    pub keyincrement_slots: u64,
    /// The Key-Increment store's N (the translator refuses reports with another).
    pub keyincrement_redundancy: u8,
    /// A Postcarder store: its slots (a power of two) and the translator's path cache entries;
    /// `None` for none.
    pub postcarder: Option<(u64, usize)>,
    /// The translator's smallest RDMA retransmission timeout, µs (`timeout_us`; it adapts to
    /// the measured round trip above it). The demo's 20 ms: reporter, translator and collector
    /// share this machine's two cores, and the collector's answers wait that long at times; a
    /// timeout that fires early closes the QP's congestion window for nothing.
    pub timeout_us: u64,
    /// The translator's `join_ms`: 0 when its reporters start after it, as in the demo; a
    /// translator that restarts under running reporters joins them mid-stream.
    pub join_ms: u64,
    /// Append lists 0..lists, each of `append_entries` entries, batch 16.
    pub lists: u32,
    /// Entries per Append list.
    pub append_entries: u64,
    /// Sketch 0: rows, columns, reporters 1..=reporters.
    pub sketch: (u16, u32, u16),
    /// Fault injection on the translator's port: the share of frames it loses each way
    /// (reports and NACKs, RDMA requests and acknowledgements); 0 for none.
    pub inject_loss: f64,
}

impl LabConfig {
    /// The demo's: 2^20 Key-Write slots, 4 lists of 2^20 entries.
    pub fn demo() -> Self {
        Self {
            collector: Ipv4Addr::new(127, 0, 0, 51),
            translator: Ipv4Addr::new(127, 0, 0, 101),
            reporter: Ipv4Addr::new(127, 0, 0, 2),
            keywrite_slots: 1 << 20,
            keywrite_redundancy: 2,
            keyincrement_slots: 1 << 20,
            keyincrement_redundancy: 2,
            postcarder: None,
            join_ms: 0,
            timeout_us: 20_000,
            lists: 4,
            append_entries: 1 << 20,
            sketch: (4, 256, 4),
            inject_loss: 0.0,
        }
    }

    /// The collector's configuration.
    pub fn collector_toml(&self) -> String {
        let mut s = format!(
            "[collector]\nip = \"{}\"\nmemory = \"auto\"\n\n[keywrite]\nport = 1337\nslots = {}\nredundancy = {}\n\n\
             [keyincrement]\nport = 1339\nslots = {}\nredundancy = {}\n",
            self.collector,
            self.keywrite_slots,
            self.keywrite_redundancy,
            self.keyincrement_slots,
            self.keyincrement_redundancy
        );
        if let Some((slots, _)) = self.postcarder {
            s += &format!("\n[postcarder]\nport = 1336\nslots = {slots}\n");
        }
        for l in 0..self.lists {
            s += &format!(
                "\n[[append]]\nlist = {l}\nport = {}\nentries = {}\n",
                1340 + l,
                self.append_entries
            );
        }
        let (rows, columns, _) = self.sketch;
        s += &format!("\n[[sketch]]\nid = 0\nport = 1330\nrows = {rows}\ncolumns = {columns}\n");
        s
    }

    /// The translator's configuration: one UDP port on the translator's address.
    pub fn translator_toml(&self) -> String {
        let port = format!(
            "[[port]]\nname = \"host\"\nbackend = \"udp\"\nbind = \"{t}\"\nudp_ports = [40040, 4791]\n\
             mac = \"02:5f:00:00:00:01\"\nspeed = \"100G\"\nipv4 = [\"{t}/8\"]\ninject_loss = {loss}\n",
            t = self.translator,
            loss = self.inject_loss
        );
        self.translator_toml_on(&port)
    }

    /// The translator's configuration on the `[[port]]` tables `ports` (AF_PACKET veths, say).
    pub fn translator_toml_on(&self, ports: &str) -> String {
        let lists: Vec<String> =
            (0..self.lists).map(|l| format!("{{ list = {l}, port = {}, batch = 16 }}", 1340 + l)).collect();
        let (rows, columns, reporters) = self.sketch;
        let reporters: Vec<String> = (1..=reporters).map(|r| r.to_string()).collect();
        format!(
            r#"program = "dta_translator"
[runtime]
burst = 32
pool_buffers = 16384

{ports}
[dta]
join_ms = {join_ms}
window = 16384
ack_every = 32
timeout_us = {timeout_us}
append_flush_us = 200
cm_timeout_ms = 50
cm_backoff_ms = 50

[[dta.collector]]
name = "c0"
ip = "{c}"
keywrite = 1337
keyincrement = 1339
keyincrement_redundancy = {kir}
{postcarder}append = [{lists}]
sketch = [{{ id = 0, port = 1330, rows = {rows}, columns = {columns}, reporters = [{reps}], batch = 4 }}]
"#,
            c = self.collector,
            join_ms = self.join_ms,
            timeout_us = self.timeout_us,
            kir = self.keyincrement_redundancy,
            postcarder = self
                .postcarder
                .map(|(_, cache)| format!("postcarder = {{ port = 1336, hops = 5, cache = {cache} }}\n"))
                .unwrap_or_default(),
            lists = lists.join(", "),
            reps = reporters.join(", "),
        )
    }
}

/// The loads the demo and the tests send: `keys` scrambled keys numbered from 1, high
/// priority and retransmittable (a NACK brings back what the translator missed), 4-byte
/// Key-Write data.
pub fn load(kind: LoadKind, keys: u32) -> LoadSpec {
    LoadSpec {
        kind,
        keys,
        key_base: 1,
        priority: Priority::High,
        retransmittable: true,
        immediate_every: 0,
        keywrite_data_len: 4,
        scramble: true,
    }
}

/// The events Append list `list` holds, in report order, after `sent` reports of the load
/// generator's Append stream over `lists` lists (report `i` carries datum `i` to list
/// `i % lists`).
pub fn append_events(sent: u64, lists: u32, list: u32) -> impl Iterator<Item = u32> {
    (u64::from(list)..sent).step_by(lists.max(1) as usize).map(|i| i as u32)
}

/// The keys `spec` sends, in key-number order (report `i` carries key number `i % keys`).
pub fn keys_of(spec: &LoadSpec) -> Vec<u32> {
    (0..spec.keys).map(|k| LoadGen::key(spec, spec.key_base.wrapping_add(k))).collect()
}

/// The translator's counters (`show dta stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TranslatorStats(pub Vec<(String, String)>);

impl TranslatorStats {
    /// A counter by name (0 if absent).
    pub fn get(&self, name: &str) -> u64 {
        self.0.iter().find(|(k, _)| k == name).and_then(|(_, v)| v.parse().ok()).unwrap_or(0)
    }
}

/// Send `count` reports of `spec` at `rate` reports/s from reporter address `from` to the
/// translator at `translator` ([`Lab::send`], without a lab to borrow: from another thread
/// while the lab changes).
pub fn send(
    translator: Ipv4Addr,
    from: Ipv4Addr,
    spec: &LoadSpec,
    count: u64,
    rate: u64,
) -> Result<ReportSummary, DemoError> {
    Ok(report::run(&ReportRun {
        spec: *spec,
        collectors: vec![translator],
        port: 40040,
        rate,
        count,
        keep: 128,
        epoch: report::fresh_epoch(),
        sink: Sink::Udp { bind: SocketAddrV4::new(from, 40041) },
        linger: Duration::from_millis(100),
        stop: None,
        journal: None,
    })?)
}

/// A translator's counters (`show dta stats`).
pub fn translator_stats(translator: &Runtime) -> Result<TranslatorStats, DemoError> {
    let line = translator.command("show dta stats").map_err(DemoError::Command)?;
    Ok(parse_stats(&line))
}

/// What a translator's accounting says: of the reports sent to it, how many it counted lost,
/// and how many it is still asking for or holds unwritten.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accounting {
    /// Reports found missing for good, dropped under a named reason (duplicates are not
    /// losses), and data items given up after translation (`lost_entries`,
    /// `region_lost_entries`).
    pub lost: u64,
    /// Reports still asked for (`seq_missing`) and data items held unwritten (`held`: postcards
    /// of partial paths, partial Append batches, parked reports).
    pub pending: u64,
    /// Data items of unknown outcome (`unknown_entries`: atomics whose connection was lost
    /// before their ACK; applied or not): neither stored nor lost.
    pub unknown: u64,
    /// The drops by reason that went into `lost`.
    pub dropped: Vec<(String, u64)>,
    /// The counters.
    pub stats: TranslatorStats,
}

/// The accounting of `translator` now: stored + `lost` + `pending` = sent.
pub fn accounting(translator: &Runtime) -> Result<Accounting, DemoError> {
    let stats = translator_stats(translator)?;
    let snap = translator.snapshot();
    Ok(Accounting::of(stats, &snap.drop_names, |n| snap.drops(n)))
}

/// The accounting of a translator that has stopped, from its final summary (its counters
/// with what the stop itself counted); `None` if the summary has no DTA counters.
pub fn final_accounting(summary: &dataplane::runtime::Summary) -> Option<Accounting> {
    let line = summary.program_stats.iter().find(|l| l.contains("seq_unrecoverable="))?;
    Some(Accounting::of(parse_stats(line), &summary.drop_names, |n| summary.drops(n)))
}

/// The accounting of a translator process that has stopped, from what `dataplane run` printed
/// at its exit (its drops by reason and the `program:` line of its final counters); `None` if
/// the text has no DTA counters.
pub fn final_accounting_printed(text: &str) -> Option<Accounting> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("program: ").filter(|l| l.contains("seq_unrecoverable=")))?;
    let drops: Vec<(&str, u64)> = text
        .lines()
        .skip_while(|l| !l.starts_with("drops by reason:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| {
            let (name, n) = l.trim().split_once(char::is_whitespace)?;
            Some((name, n.trim().parse().ok()?))
        })
        .collect();
    let names: Vec<&str> = drops.iter().map(|d| d.0).collect();
    Some(Accounting::of(parse_stats(line), &names, |n| drops.iter().find(|d| d.0 == n).map_or(0, |d| d.1)))
}

fn parse_stats(line: &str) -> TranslatorStats {
    TranslatorStats(
        line.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

impl Accounting {
    /// From a translator's counters and its drops by reason.
    fn of(stats: TranslatorStats, names: &[&str], drops: impl Fn(&str) -> u64) -> Self {
        let dropped: Vec<(String, u64)> = names
            .iter()
            .map(|n| (n.to_string(), drops(n)))
            .filter(|(n, v)| *v > 0 && dataplane::programs::dta_translator::drop_is_loss(n))
            .collect();
        let lost = stats.get("seq_unrecoverable")
            + dropped.iter().map(|x| x.1).sum::<u64>()
            + stats.get("lost_entries")
            + stats.get("region_lost_entries");
        Accounting {
            lost,
            pending: stats.get("seq_missing") + stats.get("held"),
            unknown: stats.get("unknown_entries"),
            dropped,
            stats,
        }
    }
}

impl Accounting {
    /// Whether `stored` of `sent` closes the accounting: stored + lost + pending = sent, up to
    /// the items of unknown outcome (each applied or not):
    /// stored + lost + pending ≤ sent ≤ stored + lost + pending + unknown.
    pub fn closes(&self, stored: u64, sent: u64) -> bool {
        let known = stored + self.lost + self.pending;
        known <= sent && sent <= known + self.unknown
    }
}

/// How many of the first `sent` reports of the Append stream over `lists` lists the collector
/// holds; an error naming the entry if one is held twice.
pub fn stored_appends(stores: &collector::Stores, sent: u64, lists: u32) -> Result<u64, String> {
    let mut stored = 0;
    for l in 0..lists {
        let p = stores.append_poll(l, "accounting", usize::MAX).map_err(|e| e.to_string())?;
        let mut got = p.entries.clone();
        got.sort_unstable();
        if let Some(w) = got.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("list {l}: entry {} stored twice", w[0]));
        }
        let want: std::collections::HashSet<u32> = append_events(sent, lists, l).collect();
        stored += got.iter().filter(|e| want.contains(e)).count() as u64;
    }
    Ok(stored)
}

/// A running collector and translator.
pub struct Lab {
    /// The configuration.
    pub cfg: LabConfig,
    /// The collector.
    pub collector: Collector,
    /// The translator.
    pub translator: Runtime,
}

impl Lab {
    /// Start the collector, then the translator, and wait until every queue pair has
    /// connected (CM) and learned its region (metadata SEND).
    pub fn start(cfg: LabConfig) -> Result<Self, DemoError> {
        let ccfg = CollectorConfig::parse(Path::new("<demo collector>"), &cfg.collector_toml())?;
        let collector = Collector::start(&ccfg)?;
        let tcfg = Config::parse(Path::new("<demo translator>"), &cfg.translator_toml())?;
        let translator = Runtime::start(&tcfg)?;
        let lab = Self { cfg, collector, translator };
        let t0 = Instant::now();
        loop {
            let s = lab.translator_stats()?;
            let ready = s.0.iter().find(|(k, _)| k == "ready").map(|(_, v)| v.clone()).unwrap_or_default();
            if let Some((r, q)) = ready.split_once('/')
                && r == q
                && r != "0"
            {
                return Ok(lab);
            }
            if t0.elapsed() > Duration::from_secs(10) {
                return Err(DemoError::Timeout(format!(
                    "the translator did not connect to the collector within 10 s (ready {ready})"
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The translator's counters.
    pub fn translator_stats(&self) -> Result<TranslatorStats, DemoError> {
        translator_stats(&self.translator)
    }

    /// Send `count` reports of `spec` at `rate` reports/s from reporter address `from`. Each
    /// reporter numbers its reports from 0, so a second run should come from another address:
    /// the translator tracks sequence numbers per reporter.
    pub fn send(
        &self,
        from: Ipv4Addr,
        spec: &LoadSpec,
        count: u64,
        rate: u64,
    ) -> Result<ReportSummary, DemoError> {
        send(self.cfg.translator, from, spec, count, rate)
    }

    /// Wait until the translator has nothing outstanding, asked for or held (partial Append
    /// batches, parked reports), and the collector's writes and the translator's received
    /// reports have stopped moving for three looks in a row (60 ms: a translator starved of
    /// CPU on a loaded machine can sit on reports in its socket for one look), or `timeout`.
    pub fn settle(&self, timeout: Duration) -> Result<(), DemoError> {
        let t0 = Instant::now();
        let mut last = (u64::MAX, u64::MAX, u64::MAX);
        let mut quiet = 0;
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let s = self.translator_stats()?;
            let c = self.collector.stats().snapshot();
            let rx: u64 = self.translator.snapshot().port_stats.iter().map(|p| p.rx).sum();
            let now = (c.writes, c.atomics, rx);
            let idle = s.get("outstanding") == 0 && s.get("seq_missing") == 0 && s.get("held") == 0;
            quiet = if idle && now == last { quiet + 1 } else { 0 };
            if quiet >= 2 {
                return Ok(());
            }
            last = now;
            if t0.elapsed() > timeout {
                return Err(DemoError::Timeout(format!(
                    "not settled after {timeout:?}: {} outstanding",
                    s.get("outstanding")
                )));
            }
        }
    }

    /// Stop both.
    pub fn stop(self) -> dataplane::runtime::Summary {
        let s = self.translator.stop();
        self.collector.stop();
        s
    }
}

/// What the demo prints.
pub fn run(out: &mut dyn std::io::Write) -> Result<(), DemoError> {
    let t0 = Instant::now();
    let cfg = LabConfig::demo();
    writeln!(
        out,
        "DTA demo: load generator {} -> translator {} -> soft-RNIC collector {}",
        cfg.reporter, cfg.translator, cfg.collector
    )?;
    let lab = Lab::start(cfg.clone())?;
    if let Some(w) = lab.collector.warning() {
        writeln!(out, "note: {w}")?;
    }
    write!(out, "{}", lab.collector.describe())?;
    writeln!(
        out,
        "translator connected to every store in {:.0} ms (IB CM + metadata SEND)\n",
        t0.elapsed().as_secs_f64() * 1e3
    )?;

    let rate = 250_000;
    let (kw_keys, kw_reports) = (50_000u32, 500_000u64);
    let phase = |name: &str, r: &ReportSummary, out: &mut dyn std::io::Write| -> std::io::Result<()> {
        writeln!(
            out,
            "{name:<13} {:>8} reports in {:.2} s = {:>7.0} reports/s; NACKs {} resent {} unrecoverable {}",
            r.sent,
            r.seconds,
            r.sent as f64 / r.seconds.max(1e-9),
            r.nacks,
            r.resent,
            r.unrecoverable
        )
    };
    // What an end-to-end check found wrong: the demo prints everything, then fails with these.
    let mut failed: Vec<String> = Vec::new();
    let c0 = lab.collector.stats().snapshot();
    let t = Instant::now();
    let reporter = |i: u8| {
        let o = cfg.reporter.octets();
        Ipv4Addr::new(o[0], o[1], o[2], o[3].wrapping_add(i))
    };
    let kw_spec = load(LoadKind::KeyWrite { redundancy: 2 }, kw_keys);
    let ki_spec = load(LoadKind::KeyIncrement { redundancy: 2, counter: 3 }, 1000);
    let kw = lab.send(reporter(0), &kw_spec, kw_reports, rate)?;
    phase("Key-Write N=2", &kw, out)?;
    let ap = lab.send(reporter(1), &load(LoadKind::Append { lists: cfg.lists }, 1), 400_000, rate)?;
    phase("Append B=16", &ap, out)?;
    // Two FETCH_ADDs and two atomic ACKs per report: a slower pace for the soft-RNIC.
    let ki = lab.send(reporter(2), &ki_spec, 100_000, rate / 3)?;
    phase("Key-Incr N=2", &ki, out)?;
    for (name, r) in [("Key-Write", &kw), ("Append", &ap), ("Key-Increment", &ki)] {
        if r.unrecoverable > 0 {
            failed.push(format!("{name}: the generator counted {} reports unrecoverable", r.unrecoverable));
        }
    }
    lab.settle(Duration::from_secs(10))?;
    let secs = t.elapsed().as_secs_f64();
    let c = lab.collector.stats().snapshot();
    writeln!(
        out,
        "collector applied {} RDMA WRITEs and {} FETCH_ADDs in {:.2} s ({:.0} RDMA ops/s), no CPU per report\n",
        c.writes - c0.writes,
        c.atomics - c0.atomics,
        secs,
        (c.writes - c0.writes + c.atomics - c0.atomics) as f64 / secs
    )?;

    // Queries: memory only.
    let s = lab.collector.stores();
    let t = Instant::now();
    let keys = keys_of(&kw_spec);
    let answers = s.keywrite_batch(&keys, None, 2)?;
    let qsecs = t.elapsed().as_secs_f64();
    let (mut found, mut stale, mut wrong) = (0, 0, 0);
    for (k, a) in answers.iter().enumerate() {
        // Report i carries key number i mod keys and data i: the latest report for key number
        // k was (rounds - 1) * keys + k.
        let latest = (kw_reports - 1 - k as u64) / u64::from(kw_keys) * u64::from(kw_keys) + k as u64;
        if let Some(v) = &a.value {
            found += 1;
            let v = u64::from(u32::from_be_bytes([v[0], v[1], v[2], v[3]]));
            if v != latest {
                // An earlier report of this key (its latest was dropped), or not this key's.
                if v % u64::from(kw_keys) == k as u64 && v < latest { stale += 1 } else { wrong += 1 }
            }
        }
    }
    let model = collector::store::independent_copies_model(u64::from(kw_keys), cfg.keywrite_slots, 2);
    let share = found as f64 / f64::from(kw_keys);
    writeln!(
        out,
        "Key-Write: {found} of {kw_keys} keys answer ({:.1} %; independent-copy model for N=2: {:.1} %), \
         {stale} with an earlier value (their latest report was dropped), {wrong} wrong; {:.0} lookups/s on 2 threads",
        100.0 * share,
        100.0 * model,
        f64::from(kw_keys) / qsecs
    )?;
    if wrong > 0 || stale > 0 {
        failed.push(format!(
            "Key-Write: {wrong} keys answered another key's value, {stale} an earlier value (a latest report lost)"
        ));
    }
    if (share - model).abs() >= 0.01 {
        failed.push(format!(
            "Key-Write: {:.2} % of keys answer, not within a point of the model's {:.2} %",
            100.0 * share,
            100.0 * model
        ));
    }
    let sample: Vec<String> = answers
        .iter()
        .take(3)
        .map(|a| {
            format!(
                "key {:#010x} -> {:?}",
                a.key,
                a.value.as_ref().map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]))
            )
        })
        .collect();
    writeln!(out, "  e.g. {}", sample.join(", "))?;
    let mut total = 0;
    let mut ordered = true;
    // Every event exactly once: list l holds the events i with i mod lists = l.
    let mut exact = true;
    for l in 0..cfg.lists {
        let p = s.append_poll(l, "demo", usize::MAX)?;
        total += p.entries.len();
        ordered &= p.entries.windows(2).all(|w| w[1] == w[0] + cfg.lists);
        let mut sorted = p.entries.clone();
        sorted.sort_unstable();
        exact &= sorted.iter().copied().eq(append_events(ap.sent, cfg.lists, l));
        if l == 0 {
            writeln!(
                out,
                "Append list 0: {} entries, first {:?}",
                p.entries.len(),
                &p.entries[..p.entries.len().min(6)]
            )?;
        }
    }
    // A report lost on the way and resent lands after the ones that followed it: order is
    // information, every event once is the check.
    writeln!(
        out,
        "Append: {total} entries in {} lists, every event once: {exact}, each in report order: {ordered}",
        cfg.lists
    )?;
    if total as u64 != ap.sent || !exact {
        failed.push(format!(
            "Append: {total} entries stored of {} sent ({} missing), every event once: {exact}",
            ap.sent,
            ap.sent.saturating_sub(total as u64)
        ));
    }
    let ki_keys = keys_of(&ki_spec);
    let k0 = ki_keys[0];
    writeln!(out, "Key-Increment: key {k0:#010x} counts {} (sent 100 x 3 = 300)", s.keyincrement(k0)?)?;
    // Count-Min never counts low; a key counts more only where both its copies collide.
    let per_key = ki.sent / u64::from(ki_spec.keys) * 3;
    let mut low = 0;
    for &k in &ki_keys {
        low += u32::from(s.keyincrement(k)? < per_key);
    }
    if low > 0 {
        failed.push(format!(
            "Key-Increment: {low} of {} keys count less than the {per_key} sent",
            ki_keys.len()
        ));
    }

    let st = lab.translator_stats()?;
    let summary = lab.stop();
    writeln!(
        out,
        "\ntranslator: {} RDMA packets, {} retransmitted, {} reporter NACKs, {} slow-downs",
        st.get("rdma_packets"),
        st.get("retransmitted"),
        st.get("nacks"),
        st.get("slow_downs")
    )?;
    let drops: Vec<String> = summary
        .drop_names
        .iter()
        .zip(&summary.counters.drops)
        .filter(|(_, n)| **n > 0)
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    if std::env::var_os("DEMO_DEBUG").is_some() {
        write!(out, "{}", summary.table())?;
    }
    writeln!(
        out,
        "translator drops: {}",
        if drops.is_empty() { "none".to_string() } else { drops.join(", ") }
    )?;
    writeln!(
        out,
        "collector: NAKs access {} sequence {}, dropped bad ICRC {} malformed {} unknown QP {}, duplicates {}",
        c.access_errors, c.out_of_sequence, c.bad_icrc, c.malformed, c.unknown_qp, c.duplicates
    )?;
    writeln!(out, "done in {:.1} s", t0.elapsed().as_secs_f64())?;
    if failed.is_empty() { Ok(()) } else { Err(DemoError::Check(failed)) }
}
