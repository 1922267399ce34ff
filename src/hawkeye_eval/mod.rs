//! Hawkeye's evaluation (seed `001` §4): scenario files that inject one anomaly into a lab
//! fabric with background traffic, many traces per scenario over loads, seeds and placements,
//! each trace diagnosed by the analyzer (`collector::hawkeye`) and scored against what was
//! injected — precision and recall per anomaly class, for Hawkeye and for baselines built from
//! the same reports.
//!
//! A scenario file (`config/labs/hawkeye/*.toml`):
//!
//! ```toml
//! [scenario]
//! class = "microburst_incast"   # the anomaly injected (Table 2's names: microburst_incast,
//!                               #   pfc_storm, flow_contention, in_loop_deadlock,
//!                               #   out_of_loop_deadlock_contention, out_of_loop_deadlock_injection)
//! base = "fattree-k4.toml"      # the lab file (relative to this one): topology, switches
//!                               #   running "hawkeye", [hawkeye] detection, duration
//! loads = [0.2, 0.3, 0.4]       # background websearch Poisson load; trace i takes loads[i % n]
//! seed = 1                      # trace i runs with lab seed `seed + i`
//! window_us = 1000              # incidents whose first report comes within this long after
//!                               #   the injection are this trace's diagnoses
//! # duration_us = 3000          # the run's length, if not the base's (a deadlock's freeze is
//!                               #   told from its loop flows delivering nothing to the end)
//! # before = "pfc_storm"        # deadlocks only: what the trace shows until its loop freezes
//!                               #   (a loop flow delivers nothing more to the run's end):
//!                               #   incidents opening earlier are right naming it or the
//!                               #   deadlock forming; without a freeze, only it
//!
//! [anomaly]                     # what is injected, where and when
//! kind = "incast"               # incast: `senders` hosts (drawn per trace from outside the
//! senders = 6                   #   receiver's edge switch) each send `size` bytes to a
//! size = 500000                 #   receiver drawn per trace, at `start_us`, `repeat` times
//! start_us = 500                #   every `period_us`
//! # kind = "pfc_storm"          # a host drawn per trace injects PAUSE from start_us to stop_us
//! # stop_us = 1500              #   while the others send to it (`senders` flows of `size`)
//! # kind = "deadlock"           # a routing misconfiguration: `routes` override switches'
//! # routes = [{ switch = 0, host = 2, via = 8 }]   # next hops (switch → host via switch),
//! # flows = [{ src = 0, dst = 2, size = 20000000 }] # `flows` are the loop's flows; optional
//! # burst_senders = [12, 13]    #   burst into `burst_dst` at start_us (`size` each), a host
//! # burst_dst = 2               #   `storm_host` injecting PAUSE from start_us to stop_us, and
//! # storm_host = 2              #   `no_cc_hosts` sending at line rate without congestion control
//! # no_cc_hosts = [12, 13]      #   (the root cause: the loop's flows and the burst in a loop,
//! #                             #   the burst outside it, or the storming host)
//! # rotate_pods = true          # fat trees: each trace turns all of it by a drawn number of
//! #                             #   pods (a placement per trace; pod rotation is a symmetry)
//! ```
//!
//! Scoring (the paper's definition of a true positive: the right anomaly **and** its root
//! cause): every diagnosis of every incident that opens in a trace's window counts — right, or
//! wrong (another anomaly or another root cause: false positives, background anomalies
//! included); an "undiagnosed: why" result reports nothing and is counted apart; precision =
//! right / (right + wrong), recall = traces with a right diagnosis / traces. Two readings of
//! the wrong ones besides: precision at the locus = right / (right + wrong ones whose root cause
//! is at the injection's switch) — the diagnoses about the injection itself, without the
//! background congestion the same incidents found elsewhere; and precision verified, where only
//! the wrong ones elsewhere that the lab confirms are left out ([`Score::background`]: the queue
//! named really built up, and for an incast its switch really sent PFC). A diagnosis is right when it names the injected anomaly and its root cause — for flows, the injected flows carry more than
//! half of the contention weight the diagnosis names (background flows into the same receiver
//! contend too, and are named with their share); for a host, the injecting host.
//!
//! Variants (same runs, the reports filtered before the analyzer): `hawkeye` (everything the
//! tracing collected), `full_polling` (the tracing's reports and, at every poll, a snapshot of
//! every port of every switch: the lab runs with `[hawkeye] full_polling`, whose reports are
//! flagged 00 and left out of the other variants), `victim_only` (only the reports of
//! victim-path copies, no PFC tracing, and each victim's own path alone, one incident per
//! victim), `port_only` (flow entries dropped; the switches still trace PFC, as
//! the paper's port-only system does), `flow_only` (port and meter entries dropped, and
//! without port meters the switches cannot trace PFC: each victim's own path, as victim-only).
//!
//! Overheads per variant (Figure 9, §4.3): telemetry reports and their bytes per trace, switches
//! reporting per incident, polling packets on links (every surviving copy crosses
//! one link, and the agent's packet one more; full polling needs none), and collection time
//! (from the poll to its incident's last report; the lab takes reports at the switches' 50 µs
//! ticks, so it is counted in those steps).

use std::path::{Path, PathBuf};

use collector::hawkeye::{self, Anomaly, Params, PortId, RootCause, Topology};
use serde::Deserialize;
use wire::hawkeye::report::{self, Entry};

use crate::lab::{self, LabConfig};

pub mod plot;

/// The analyzer variants scored.
pub const VARIANTS: [&str; 5] = ["hawkeye", "full_polling", "victim_only", "port_only", "flow_only"];

/// Bytes a polling packet takes on a link: the 19-byte header in a minimum Ethernet frame
/// (60 bytes and the 4-byte FCS).
pub const POLLING_FRAME_BYTES: u64 = 64;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    scenario: RawHead,
    anomaly: RawAnomaly,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHead {
    class: String,
    base: String,
    loads: Vec<f64>,
    seed: Option<u64>,
    window_us: Option<u64>,
    epoch_ns: Option<u64>,
    rtt_factor: Option<f64>,
    before: Option<String>,
    duration_us: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnomaly {
    kind: String,
    senders: Option<usize>,
    size: Option<u64>,
    start_us: u64,
    stop_us: Option<u64>,
    repeat: Option<u32>,
    period_us: Option<u64>,
    #[serde(default)]
    routes: Vec<RawRoute>,
    #[serde(default)]
    flows: Vec<RawFlow>,
    #[serde(default)]
    burst_senders: Vec<usize>,
    burst_dst: Option<usize>,
    storm_host: Option<usize>,
    #[serde(default)]
    no_cc_hosts: Vec<usize>,
    #[serde(default)]
    rotate_pods: bool,
}

impl RawAnomaly {
    /// The same anomaly `shift` pods over in a k-ary fat tree (the lab's numbering: k/2 hosts
    /// per edge switch, edges `0..k²/2` and aggregation switches `k²/2..k²` pod by pod, cores
    /// after; aggregation switch `a` of every pod joins the same cores, and every switch's ports
    /// are numbered alike, so turning the pods is a symmetry of the fabric).
    fn rotated(&self, k: usize, shift: usize) -> Self {
        let half = k / 2;
        let (hosts, edges) = (k * half * half, k * half);
        let host = |h: usize| (h + shift * half * half) % hosts;
        let switch = |s: usize| match s {
            s if s < edges => (s + shift * half) % edges,
            s if s < 2 * edges => edges + (s - edges + shift * half) % edges,
            s => s,
        };
        let mut a = self.clone();
        for r in &mut a.routes {
            *r = RawRoute { switch: switch(r.switch), host: host(r.host), via: switch(r.via) };
        }
        for f in &mut a.flows {
            f.src = host(f.src);
            f.dst = host(f.dst);
        }
        for h in a.burst_senders.iter_mut().chain(a.no_cc_hosts.iter_mut()) {
            *h = host(*h);
        }
        a.burst_dst = a.burst_dst.map(host);
        a.storm_host = a.storm_host.map(host);
        a
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    switch: usize,
    host: usize,
    via: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    src: usize,
    dst: usize,
    size: u64,
    #[serde(default)]
    start_us: u64,
}

/// Every number of a scenario within what its base lab and the lab's limits allow, before a
/// trace is made of it: hosts and switches that exist, times within the lab's, sizes and
/// counts a lab takes. The key at fault and why, otherwise.
fn check_numbers(raw: &RawScenario, hosts: usize, switches: usize) -> Result<(), (String, String)> {
    use crate::lab::config::{MAX_FLOW_BYTES, MAX_TIME_NS};
    let max_us = MAX_TIME_NS / 1000;
    let (h, a) = (&raw.scenario, &raw.anomaly);
    let time = |k: &str, v: Option<u64>| match v {
        Some(v) if v > max_us => Err((k.to_string(), format!("{v} µs: at most {max_us}"))),
        _ => Ok(()),
    };
    time("scenario.window_us", h.window_us)?;
    time("scenario.duration_us", h.duration_us)?;
    time("anomaly.start_us", Some(a.start_us))?;
    time("anomaly.stop_us", a.stop_us)?;
    time("anomaly.period_us", a.period_us)?;
    if h.window_us == Some(0) {
        return Err(("scenario.window_us".into(), "0: an incident needs a window".into()));
    }
    if let Some(e) = h.epoch_ns.filter(|e| !e.is_power_of_two() || !(1024..=1 << 32).contains(e)) {
        return Err(("scenario.epoch_ns".into(), format!("{e}: a power of two from 1024 to 2^32")));
    }
    if let Some(f) = h.rtt_factor.filter(|f| !(*f > 1.0 && *f <= 1000.0)) {
        return Err(("scenario.rtt_factor".into(), format!("{f}: above 1, at most 1000")));
    }
    if let Some(n) = a.senders.filter(|&n| n == 0 || n >= hosts) {
        return Err((
            "anomaly.senders".into(),
            format!("{n}: 1 to {} (the base has {hosts} hosts)", hosts - 1),
        ));
    }
    if let Some(z) = a.size.filter(|&z| z == 0 || z > MAX_FLOW_BYTES) {
        return Err(("anomaly.size".into(), format!("{z} bytes: 1 to {MAX_FLOW_BYTES}")));
    }
    if let Some(r) = a.repeat.filter(|&r| r == 0 || r > 10_000) {
        return Err(("anomaly.repeat".into(), format!("{r}: 1 to 10000 bursts")));
    }
    let host = |k: &str, v: usize| {
        if v < hosts {
            Ok(())
        } else {
            Err((k.to_string(), format!("host {v} does not exist (hosts 0..{hosts})")))
        }
    };
    let switch = |k: &str, v: usize| {
        if v < switches {
            Ok(())
        } else {
            Err((k.to_string(), format!("switch {v} does not exist (switches 0..{switches})")))
        }
    };
    for (i, r) in a.routes.iter().enumerate() {
        switch(&format!("anomaly.routes[{i}].switch"), r.switch)?;
        switch(&format!("anomaly.routes[{i}].via"), r.via)?;
        host(&format!("anomaly.routes[{i}].host"), r.host)?;
    }
    for (i, f) in a.flows.iter().enumerate() {
        host(&format!("anomaly.flows[{i}].src"), f.src)?;
        host(&format!("anomaly.flows[{i}].dst"), f.dst)?;
        time(&format!("anomaly.flows[{i}].start_us"), Some(f.start_us))?;
        if f.size == 0 || f.size > MAX_FLOW_BYTES {
            return Err((
                format!("anomaly.flows[{i}].size"),
                format!("{} bytes: 1 to {MAX_FLOW_BYTES}", f.size),
            ));
        }
    }
    for (k, list) in [("anomaly.burst_senders", &a.burst_senders), ("anomaly.no_cc_hosts", &a.no_cc_hosts)] {
        for (i, &v) in list.iter().enumerate() {
            host(&format!("{k}[{i}]"), v)?;
            if list[..i].contains(&v) {
                return Err((format!("{k}[{i}]"), format!("host {v} is listed twice")));
            }
        }
    }
    if let Some(d) = a.burst_dst {
        host("anomaly.burst_dst", d)?;
    }
    if let Some(s) = a.storm_host {
        host("anomaly.storm_host", s)?;
    }
    Ok(())
}

/// Overrides for a sweep (Figure 7): every scenario's epoch and detection threshold.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sweep {
    /// `[hawkeye] epoch_ns` of every switch (a power of two).
    pub epoch_ns: Option<u64>,
    /// The detection agents' `rtt_factor`.
    pub rtt_factor: Option<f64>,
    /// The first trace's number: a run scores traces `first_trace..first_trace + traces` (a
    /// hold-out check of settings a sweep chose runs on traces the sweep never saw).
    pub first_trace: u64,
    /// The analyzer's `ReplayQueue` (default: [`hawkeye::Replay::QueueOrder`]).
    pub replay: hawkeye::Replay,
}

/// A scenario: its file, class, base lab and anomaly.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file.
    pub path: PathBuf,
    /// The expected anomaly.
    pub class: Anomaly,
    /// A deadlock scenario's anomaly before its loop freezes (`scenario.before`): what incidents
    /// opening earlier are scored against.
    pub before: Option<Anomaly>,
    base_text: String,
    /// The base lab file (a trace's lab file is parsed as if it were there: paths in it are
    /// relative to it).
    pub base_path: PathBuf,
    loads: Vec<f64>,
    seed: u64,
    window_ns: u64,
    duration_us: Option<u64>,
    anomaly: RawAnomaly,
    sweep: Sweep,
}

/// What a trace injected: the expected anomaly and its root cause.
#[derive(Debug, Clone, PartialEq)]
pub enum Injected {
    /// Burst flows: (src host, dst host).
    Flows(Vec<(usize, usize)>),
    /// A host injecting PFC.
    Host(usize),
}

/// One trace's lab and what it injected.
#[derive(Debug, Clone)]
pub struct Trace {
    /// The lab to run.
    pub lab: LabConfig,
    /// Its text (a lab file: `softfabric lab run` reproduces the trace).
    pub text: String,
    /// The background load.
    pub load: f64,
    /// The lab seed.
    pub seed: u64,
    /// The injection's start, ns.
    pub start_ns: u64,
    /// What was injected.
    pub injected: Injected,
    /// The switch IDs at the injection's locus: the edge switch of the incast's receiver or the
    /// storming host; the loop's switches of a deadlock.
    pub locus: Vec<u16>,
    /// The incast's receiver or the storming host (its switch port is the locus).
    pub target: Option<usize>,
    /// A deadlock's loop flows: (src, dst, size).
    pub loop_flows: Vec<(usize, usize, u64)>,
}

/// A variant's score over traces: every diagnosis the analyzer made in the traces' windows is
/// right or wrong; a trace is detected when at least one of its diagnoses is right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Score {
    /// Traces.
    pub traces: u32,
    /// Traces with a right diagnosis (right anomaly and root cause).
    pub detected: u32,
    /// Right diagnoses (true positives).
    pub right: u32,
    /// Wrong diagnoses: another anomaly or another root cause (false positives).
    pub wrong: u32,
    /// Results that named no anomaly ("undiagnosed: why"): no finding, so no false positive —
    /// counted apart.
    pub undiagnosed: u32,
    /// Of the wrong ones, those away from the injection: a root cause at another port than the
    /// receiver's or the storming host's (for a deadlock, than the links between the
    /// misconfigured switches and the storming host's port), or an
    /// incident opening more than two epochs after the incast's last flow completed —
    /// background congestion, or a misplaced cause.
    pub elsewhere: u32,
    /// Of those, the ones the lab confirms as background anomalies that happened: contention
    /// or an incast named at a port whose queue really built up then (and, for an incast, whose
    /// switch really sent PFC) — true findings about traffic that was not injected.
    pub background: u32,
    /// Incidents analyzed.
    pub incidents: u32,
    /// Telemetry reports the analyzer read.
    pub reports: u64,
    /// Their bytes (header and entries, as on the wire).
    pub telemetry_bytes: u64,
    /// Switches reporting, summed over incidents.
    pub switches: u64,
    /// Polling packets sent on links.
    pub polling_packets: u64,
    /// Incidents with a known poll time, and their collection times summed, ns.
    pub timed: u32,
    /// Collection time summed over the timed incidents, ns.
    pub collection_ns: u64,
}

impl Score {
    /// Right / (right + wrong): the share of diagnoses an operator can trust.
    pub fn precision(&self) -> f64 {
        let d = self.right + self.wrong;
        if d == 0 { 0.0 } else { f64::from(self.right) / f64::from(d) }
    }
    /// Right / (right + wrong at the locus): the diagnoses about the injection's switch alone.
    pub fn precision_at_locus(&self) -> f64 {
        let d = self.right + self.wrong - self.elsewhere;
        if d == 0 { 0.0 } else { f64::from(self.right) / f64::from(d) }
    }
    /// Right / (right + wrong, less the confirmed background findings): the diagnoses that
    /// were neither right about the injection nor true about the background are the false
    /// positives.
    pub fn precision_verified(&self) -> f64 {
        let d = self.right + self.wrong - self.background;
        if d == 0 { 0.0 } else { f64::from(self.right) / f64::from(d) }
    }
    /// Detected / traces.
    pub fn recall(&self) -> f64 {
        if self.traces == 0 { 0.0 } else { f64::from(self.detected) / f64::from(self.traces) }
    }
    /// The overheads: telemetry bytes per trace, switches read per incident, polling bytes per
    /// trace, collection time per incident (µs). Per trace where variants differ in how they
    /// cut incidents (victim-only makes one per victim).
    pub fn overheads(&self) -> (f64, f64, f64, f64) {
        let tr = f64::from(self.traces.max(1));
        let n = f64::from(self.incidents.max(1));
        let t = f64::from(self.timed.max(1));
        (
            self.telemetry_bytes as f64 / tr,
            self.switches as f64 / n,
            (self.polling_packets * POLLING_FRAME_BYTES) as f64 / tr,
            self.collection_ns as f64 / t / 1000.0,
        )
    }

    fn add(&mut self, o: Score) {
        self.traces += o.traces;
        self.detected += o.detected;
        self.right += o.right;
        self.wrong += o.wrong;
        self.undiagnosed += o.undiagnosed;
        self.elsewhere += o.elsewhere;
        self.background += o.background;
        self.incidents += o.incidents;
        self.reports += o.reports;
        self.telemetry_bytes += o.telemetry_bytes;
        self.switches += o.switches;
        self.polling_packets += o.polling_packets;
        self.timed += o.timed;
        self.collection_ns += o.collection_ns;
    }
}

impl Scenario {
    /// Read and check a scenario file (errors name the file and the key).
    pub fn load(path: &Path) -> Result<Self, String> {
        let p = path.display();
        let text =
            ports::input::read_text(path, ports::input::MAX_TEXT_BYTES).map_err(|e| format!("{p}: {e}"))?;
        let raw: RawScenario = toml::from_str(&text)
            .map_err(|e| format!("{p}: {}", ports::input::toml_message(&text, e.span(), e.message())))?;
        let class = Anomaly::from_name(&raw.scenario.class).ok_or_else(|| {
            format!("{p}: scenario.class: {:?} is not one of Table 2's anomalies", raw.scenario.class)
        })?;
        // Trace i's seed is seed + i, written into its lab file (an i64): with i below 2^62,
        // a seed below 2^62 keeps it there.
        if raw.scenario.seed.is_some_and(|s| s > 1 << 62) {
            return Err(format!("{p}: scenario.seed: at most 2^62"));
        }
        if raw.scenario.loads.is_empty()
            || raw.scenario.loads.len() > 64
            || raw.scenario.loads.iter().any(|l| !(*l > 0.0 && *l < 1.0))
        {
            return Err(format!("{p}: scenario.loads: expected 1 to 64 loads in (0, 1)"));
        }
        let base_path = path.parent().unwrap_or(Path::new(".")).join(&raw.scenario.base);
        let base_text = ports::input::read_text(&base_path, ports::input::MAX_TEXT_BYTES)
            .map_err(|e| format!("{p}: scenario.base: {}: {e}", base_path.display()))?;
        let base =
            LabConfig::parse(&base_path, &base_text).map_err(|e| format!("{p}: scenario.base: {e}"))?;
        check_numbers(&raw, base.hosts(), base.topology.switches)
            .map_err(|(k, why)| format!("{p}: {k}: {why}"))?;
        match raw.anomaly.kind.as_str() {
            "incast" | "pfc_storm" => {}
            "deadlock" if !raw.anomaly.routes.is_empty() && !raw.anomaly.flows.is_empty() => {}
            "deadlock" => {
                return Err(format!("{p}: anomaly.routes: a deadlock needs route overrides and loop flows"));
            }
            k => {
                return Err(format!(
                    "{p}: anomaly.kind: {k:?}: expected \"incast\", \"pfc_storm\" or \"deadlock\""
                ));
            }
        }
        if raw.anomaly.kind == "pfc_storm" && raw.anomaly.stop_us.is_none_or(|s| s <= raw.anomaly.start_us) {
            return Err(format!("{p}: anomaly.stop_us: a storm needs a stop after start_us"));
        }
        let before =
            match raw.scenario.before.as_deref() {
                None => None,
                Some(b) => Some(Anomaly::from_name(b).ok_or_else(|| {
                    format!("{p}: scenario.before: {b:?} is not one of Table 2's anomalies")
                })?),
            };
        if before.is_some() && raw.anomaly.kind != "deadlock" {
            return Err(format!("{p}: scenario.before: only a deadlock scenario has a before"));
        }
        Ok(Self {
            path: path.to_path_buf(),
            class,
            before,
            base_text,
            base_path,
            loads: raw.scenario.loads,
            seed: raw.scenario.seed.unwrap_or(1),
            window_ns: raw.scenario.window_us.unwrap_or(1000) * 1000,
            duration_us: raw.scenario.duration_us,
            anomaly: raw.anomaly,
            sweep: Sweep {
                epoch_ns: raw.scenario.epoch_ns,
                rtt_factor: raw.scenario.rtt_factor,
                first_trace: 0,
                replay: hawkeye::Replay::default(),
            },
        })
    }

    /// Trace `i`: its load, seed and placement (drawn from the seed), and the lab.
    pub fn trace(&self, i: u64) -> Result<Trace, String> {
        use rand_chacha::ChaCha8Rng;
        use rand_chacha::rand_core::{Rng, SeedableRng};
        let seed = self.seed.wrapping_add(i);
        let load = self.loads[(i as usize) % self.loads.len()];
        let mut v: toml::Table = toml::from_str(&self.base_text).map_err(|e| e.to_string())?;
        let base = LabConfig::parse(&self.base_path, &self.base_text).map_err(|e| e.to_string())?;
        let hosts = base.hosts();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut draw = |n: usize| (rng.next_u64() % n as u64) as usize;
        let a = &self.anomaly;
        let start_ns = a.start_us * 1000;
        // The receiver (incast) or the injecting host (storm), then senders elsewhere.
        let target = draw(hosts);
        let edge_of = |h: usize| {
            base.topology.links.iter().find_map(|l| match (l.a, l.b) {
                (lab::Node::Host(x), lab::Node::Switch(s)) | (lab::Node::Switch(s), lab::Node::Host(x))
                    if x == h =>
                {
                    Some(s)
                }
                _ => None,
            })
        };
        let mut others: Vec<usize> = (0..hosts).filter(|&h| edge_of(h) != edge_of(target)).collect();
        let n = a.senders.unwrap_or(4).min(others.len());
        let mut senders = Vec::new();
        for _ in 0..n {
            let k = draw(others.len());
            senders.push(others.swap_remove(k));
        }
        senders.sort_unstable();
        let lab_t = v.entry("lab").or_insert(toml::Value::Table(Default::default()));
        if let Some(t) = lab_t.as_table_mut() {
            t.insert("seed".into(), toml::Value::Integer(seed as i64));
            if let Some(d) = self.duration_us {
                t.insert("duration_us".into(), toml::Value::Integer(d as i64));
            }
        }
        // Epoch and threshold: the scenario's, then a sweep's.
        if let Some(e) = self.sweep.epoch_ns {
            let sw = v.get_mut("switches").and_then(|x| x.as_table_mut());
            if let Some(sec) = sw.and_then(|t| t.get_mut("sections")) {
                let text = sec.as_str().unwrap_or("").to_string();
                let kept: Vec<&str> =
                    text.lines().filter(|l| !l.trim_start().starts_with("epoch_ns")).collect();
                let out = kept.join("\n").replace("[hawkeye]", &format!("[hawkeye]\nepoch_ns = {e}"));
                *sec = toml::Value::String(out);
            }
        }
        if let Some(h) = v.get_mut("hawkeye").and_then(|x| x.as_table_mut()) {
            if let Some(f) = self.sweep.rtt_factor {
                h.insert("rtt_factor".into(), toml::Value::Float(f));
            }
            // The full-polling baseline's snapshots come from the same run (flagged 00).
            h.insert("full_polling".into(), toml::Value::Boolean(true));
        }
        let mut poisson = toml::Table::new();
        poisson.insert("cdf".into(), "websearch".into());
        poisson.insert("load".into(), toml::Value::Float(load));
        push(&mut v, "poisson", poisson);
        let mut incast = toml::Table::new();
        incast.insert(
            "senders".into(),
            toml::Value::Array(senders.iter().map(|&h| (h as i64).into()).collect()),
        );
        incast.insert("dst".into(), (target as i64).into());
        incast.insert("size".into(), (a.size.unwrap_or(500_000) as i64).into());
        incast.insert("start_ns".into(), (start_ns as i64).into());
        if let Some(r) = a.repeat {
            incast.insert("repeat".into(), i64::from(r).into());
            incast.insert("period_ns".into(), (a.period_us.unwrap_or(100) as i64 * 1000).into());
        }
        if a.kind == "deadlock" {
            return self.deadlock_trace(v, load, seed, start_ns);
        }
        push(&mut v, "incast", incast);
        let injected = if a.kind == "pfc_storm" {
            let mut h = toml::Table::new();
            h.insert("ids".into(), toml::Value::Array(vec![(target as i64).into()]));
            h.insert("agent".into(), "pfc_storm".into());
            h.insert("start_ns".into(), (start_ns as i64).into());
            h.insert("stop_ns".into(), (a.stop_us.unwrap_or(0) as i64 * 1000).into());
            push(&mut v, "host", h);
            Injected::Host(target)
        } else {
            Injected::Flows(senders.iter().map(|&s| (s, target)).collect())
        };
        let text = toml::to_string(&v).map_err(|e| e.to_string())?;
        let lab = LabConfig::parse(&self.base_path, &text).map_err(|e| e.to_string())?;
        let locus = vec![edge_of(target).map_or(0, |e| e as u16 + 1)];
        Ok(Trace {
            lab,
            text,
            load,
            seed,
            start_ns,
            injected,
            locus,
            target: Some(target),
            loop_flows: Vec::new(),
        })
    }

    /// A deadlock trace: the scenario's route overrides (a cyclic buffer dependency), its loop
    /// flows and burst, and line-rate senders, over the background of `v`.
    fn deadlock_trace(
        &self,
        mut v: toml::Table,
        load: f64,
        seed: u64,
        start_ns: u64,
    ) -> Result<Trace, String> {
        // A placement per trace: the whole anomaly turned by a drawn number of pods.
        let rotated;
        let a = if self.anomaly.rotate_pods {
            let k = v
                .get("topology")
                .and_then(|t| t.get("k"))
                .and_then(|k| k.as_integer())
                .filter(|&k| k >= 2 && k % 2 == 0)
                .ok_or("anomaly.rotate_pods: the base must be a fat tree with an even k")?
                as usize;
            let shift = (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize % k;
            rotated = self.anomaly.rotated(k, shift);
            &rotated
        } else {
            &self.anomaly
        };
        let mut by_switch: std::collections::BTreeMap<usize, Vec<toml::Value>> = Default::default();
        for r in &a.routes {
            let mut t = toml::Table::new();
            t.insert("host".into(), (r.host as i64).into());
            t.insert("via".into(), (r.via as i64).into());
            by_switch.entry(r.switch).or_default().push(toml::Value::Table(t));
        }
        for (sw, routes) in by_switch {
            let mut t = toml::Table::new();
            t.insert("id".into(), (sw as i64).into());
            t.insert("route".into(), toml::Value::Array(routes));
            push(&mut v, "switch", t);
        }
        let mut injected = Vec::new();
        for f in &a.flows {
            let mut t = toml::Table::new();
            t.insert("src".into(), (f.src as i64).into());
            t.insert("dst".into(), (f.dst as i64).into());
            t.insert("size".into(), (f.size as i64).into());
            t.insert("start_ns".into(), (f.start_us as i64 * 1000).into());
            push(&mut v, "flow", t);
            injected.push((f.src, f.dst));
        }
        if let Some(dst) = a.burst_dst
            && !a.burst_senders.is_empty()
        {
            let mut t = toml::Table::new();
            t.insert(
                "senders".into(),
                toml::Value::Array(a.burst_senders.iter().map(|&h| (h as i64).into()).collect()),
            );
            t.insert("dst".into(), (dst as i64).into());
            t.insert("size".into(), (a.size.unwrap_or(1_000_000) as i64).into());
            t.insert("start_ns".into(), (start_ns as i64).into());
            push(&mut v, "incast", t);
            injected.extend(a.burst_senders.iter().map(|&s| (s, dst)));
        }
        // The contention at a branch's end: the burst, and the loop flows that leave the loop
        // for the burst's receiver — they contend there too, and it is their held packets that
        // pause the loop (with PFC's per-ingress-port sharing a line-rate loop flow takes as
        // much of the receiver's port as the whole burst, and the analyzer names it with or
        // before the burst).
        let mut bursts = Vec::new();
        if let Some(dst) = a.burst_dst {
            bursts.extend(a.burst_senders.iter().map(|&s| (s, dst)));
            bursts.extend(a.flows.iter().filter(|f| f.dst == dst).map(|f| (f.src, f.dst)));
        }
        if let Some(h) = a.storm_host {
            let mut t = toml::Table::new();
            t.insert("ids".into(), toml::Value::Array(vec![(h as i64).into()]));
            t.insert("agent".into(), "pfc_storm".into());
            t.insert("start_ns".into(), (start_ns as i64).into());
            t.insert("stop_ns".into(), (a.stop_us.unwrap_or(a.start_us + 500) as i64 * 1000).into());
            push(&mut v, "host", t);
        }
        // The root cause the class names: the injecting host, the contending flows outside the
        // loop, or (in the loop) every flow contending on it.
        let injected = match self.class {
            Anomaly::OutOfLoopDeadlockInjection => Injected::Host(a.storm_host.unwrap_or(usize::MAX)),
            Anomaly::OutOfLoopDeadlockContention => Injected::Flows(bursts),
            _ => Injected::Flows(injected),
        };
        if !a.no_cc_hosts.is_empty()
            && let Some(l) = v.get_mut("lab").and_then(|x| x.as_table_mut())
        {
            l.insert(
                "no_cc_hosts".into(),
                toml::Value::Array(a.no_cc_hosts.iter().map(|&h| (h as i64).into()).collect()),
            );
        }
        let text = toml::to_string(&v).map_err(|e| e.to_string())?;
        let lab = LabConfig::parse(&self.base_path, &text).map_err(|e| e.to_string())?;
        let mut locus: Vec<u16> = a.routes.iter().map(|r| r.switch as u16 + 1).collect();
        locus.sort_unstable();
        locus.dedup();
        let loop_flows = a.flows.iter().map(|f| (f.src, f.dst, f.size)).collect();
        Ok(Trace { lab, text, load, seed, start_ns, injected, locus, target: None, loop_flows })
    }

    /// The same scenario under a sweep's overrides.
    pub fn with(&self, sweep: Sweep) -> Self {
        let mut s = self.clone();
        s.sweep.epoch_ns = sweep.epoch_ns.or(s.sweep.epoch_ns);
        s.sweep.rtt_factor = sweep.rtt_factor.or(s.sweep.rtt_factor);
        s.sweep.first_trace = sweep.first_trace;
        s.sweep.replay = sweep.replay;
        s
    }

    /// Run trace `i` and score it under every variant (in [`VARIANTS`] order).
    pub fn score(&self, i: u64, verbose: bool) -> Result<[Score; VARIANTS.len()], String> {
        let t = self.trace(i)?;
        let r = lab::run(&t.lab, |_| {})?;
        if r.interrupted {
            return Err(INTERRUPTED.into());
        }
        let mut out = [Score::default(); VARIANTS.len()];
        let Some((reports, polls, topo)) = analyzer_input(&r)? else {
            for s in &mut out {
                s.traces = 1;
            }
            return Ok(out);
        };
        let freeze_ns = freeze(&r, &t.loop_flows);
        // What an incident is scored against: the deadlock, once its loop froze; until then
        // the trigger the scenario names (`before`) or the deadlock forming (the loop already
        // pauses in a cycle, and whether it outlasts the trigger is not yet to be seen): either.
        let expected = |at: u64| -> Vec<Anomaly> {
            match (self.before, freeze_ns) {
                (Some(b), Some(f)) if at < f => vec![b, self.class],
                (Some(b), None) => vec![b],
                _ => vec![self.class],
            }
        };
        let right =
            |d: &hawkeye::Diagnosis, at: u64| expected(at).into_iter().any(|c| right(d, c, &t.injected));
        // Away from the injection: for an incast or a storm, any port but the one facing the
        // receiver or the storming host, or after the incast was over; for a deadlock, any port
        // but the misconfigured switches' links to each other and the storming host's port.
        let target_port = t.target.and_then(|h| {
            r.wiring.iter().enumerate().find_map(|(sw, ports)| {
                ports
                    .iter()
                    .position(|(peer, _)| *peer == lab::Node::Host(h))
                    .map(|p| PortId { switch_id: sw as u16 + 1, port: p as u16 })
            })
        });
        // An incast is over once its last flow completed: incidents opening two epochs later
        // (the telemetry's current and previous epochs) see only what came after it.
        let epoch_ns = t
            .text
            .lines()
            .find_map(|l| l.trim().strip_prefix("epoch_ns = ").and_then(|v| v.trim().parse::<u64>().ok()))
            .unwrap_or(1 << 20);
        let over_at = match (&t.injected, self.anomaly.kind.as_str()) {
            (Injected::Flows(want), "incast") => want
                .iter()
                .map(|&(src, dst)| {
                    r.flows
                        .iter()
                        .filter(|f| (f.src, f.dst) == (src, dst) && f.start_ns >= t.start_ns)
                        .map(|f| f.fct_ns.map(|fct| f.start_ns + fct))
                        .max()
                        .flatten()
                })
                .collect::<Option<Vec<u64>>>()
                .and_then(|ends| ends.into_iter().max())
                .map(|end| end + 2 * epoch_ns),
            _ => None,
        };
        // A deadlock's locus: the ports of the misconfigured switches that face each other (the
        // loop's links are among them) and the port facing the storming host, if any.
        let storm_host = match t.injected {
            Injected::Host(h) => Some(h),
            Injected::Flows(_) => None,
        };
        let locus = &t.locus;
        let loop_ports: Vec<PortId> = r
            .wiring
            .iter()
            .enumerate()
            .filter(|(sw, _)| locus.contains(&(*sw as u16 + 1)))
            .flat_map(|(sw, ports)| {
                ports.iter().enumerate().filter_map(move |(p, (peer, _))| {
                    let here = PortId { switch_id: sw as u16 + 1, port: p as u16 };
                    match peer {
                        lab::Node::Switch(o) if locus.contains(&(*o as u16 + 1)) => Some(here),
                        lab::Node::Host(h) if Some(*h) == storm_host => Some(here),
                        _ => None,
                    }
                })
            })
            .collect();
        let elsewhere = |d: &hawkeye::Diagnosis, inc: &hawkeye::Incident| {
            over_at.is_some_and(|end| inc.t_ns > end)
                || match (&d.root_cause, target_port) {
                    (Some(RootCause::Flows { port, .. } | RootCause::Host { port, .. }), Some(tp)) => {
                        *port != tp
                    }
                    (Some(RootCause::Flows { port, .. } | RootCause::Host { port, .. }), None) => {
                        !loop_ports.contains(port)
                    }
                    (None, _) => false,
                }
        };
        for (vi, variant) in VARIANTS.iter().enumerate() {
            let filtered: Vec<_> = reports
                .iter()
                .filter(|r| t_in(r.t_ns, t.start_ns, self.window_ns))
                .filter(|r| match *variant {
                    "full_polling" => true,
                    "victim_only" | "flow_only" => r.header.flag & 1 != 0,
                    _ => r.header.flag != 0,
                })
                .map(|r| {
                    let mut r = r.clone();
                    match *variant {
                        "port_only" => r.entries.retain(|e| !matches!(e, Entry::Flow { .. })),
                        "flow_only" => r.entries.retain(|e| matches!(e, Entry::Flow { .. })),
                        _ => {}
                    }
                    r
                })
                .collect();
            // Overheads: what was collected, and the polling packets that collected it.
            let mut s = Score {
                reports: filtered.len() as u64,
                telemetry_bytes: filtered.iter().map(|r| report::report_len(r.entries.len()) as u64).sum(),
                ..Score::default()
            };
            if *variant != "full_polling" {
                let polls_in = polls.iter().filter(|p| t_in(p.t_ns, t.start_ns, self.window_ns)).count();
                let copies = filtered.iter().filter(|r| r.header.flag != 0 && r.header.part == 0).count();
                s.polling_packets = (polls_in + copies) as u64;
            }
            let mut incs = hawkeye::incidents(filtered, self.window_ns);
            hawkeye::lab::attach_victims(&mut incs, &polls, self.window_ns);
            if matches!(*variant, "victim_only" | "flow_only") {
                incs = incs.into_iter().flat_map(|i| per_victim(i, &topo)).collect();
            }
            s.incidents = incs.len() as u32;
            for inc in &incs {
                let sw: std::collections::BTreeSet<u16> =
                    inc.reports.iter().map(|r| r.header.switch_id).collect();
                s.switches += sw.len() as u64;
                let first_poll = polls
                    .iter()
                    .filter(|p| {
                        p.event == inc.event && p.t_ns <= inc.t_ns && inc.t_ns - p.t_ns <= self.window_ns
                    })
                    .map(|p| p.t_ns)
                    .min();
                let last = inc.reports.iter().map(|r| r.t_ns).max();
                if let (Some(p), Some(l)) = (first_poll, last) {
                    s.timed += 1;
                    s.collection_ns += l - p;
                }
            }
            // Each diagnosis scored once; with `verbose`, Hawkeye's also printed with its verdict.
            let show = verbose && vi == 0;
            let mut line = String::new();
            if show {
                line = format!(
                    "{} trace {i} (load {}, seed {}): injected {:?}{}\n",
                    self.path.display(),
                    t.load,
                    t.seed,
                    t.injected,
                    match freeze_ns {
                        Some(f) => format!(", loop frozen from {f} ns"),
                        None if !t.loop_flows.is_empty() => ", no loop flow stopped for good".to_string(),
                        None => String::new(),
                    }
                );
            }
            s.traces = 1;
            for inc in &incs {
                let params = Params { replay: self.sweep.replay, ..Params::default() };
                let (_, ds) = hawkeye::analyze(inc, &topo, &params);
                for d in &ds {
                    let verdict = if right(d, inc.t_ns) {
                        s.right += 1;
                        "right"
                    } else if d.anomaly.is_none() {
                        s.undiagnosed += 1;
                        "undiagnosed"
                    } else {
                        s.wrong += 1;
                        let away = elsewhere(d, inc);
                        let background = away && background_holds(&r, d, inc);
                        s.elsewhere += u32::from(away);
                        s.background += u32::from(background);
                        if background { "background" } else { "wrong" }
                    };
                    if show {
                        line += &format!(
                            "  [{verdict}] event {} t {}: {}\n",
                            inc.event,
                            inc.t_ns,
                            collector::hawkeye::render::summary(d)
                        );
                    }
                }
            }
            if show {
                eprint!("{line}");
            }
            s.detected = u32::from(s.right > 0);
            out[vi] = s;
        }
        Ok(out)
    }
}

/// A lab run's Hawkeye output as the analyzer reads it: the reports, the agents' polls, the
/// topology.
pub type AnalyzerInput = (Vec<hawkeye::Received>, Vec<hawkeye::lab::Poll>, Topology);

/// What a lab run gives the analyzer, as `collector hawkeye analyze` reads it from the run's
/// files (`None`: the run made no report).
pub fn analyzer_input(r: &lab::LabResult) -> Result<Option<AnalyzerInput>, String> {
    let files = lab::output::hawkeye_jsonl(r);
    let text = |name: &str| files.iter().find(|(n, _)| *n == name).map(|x| x.1.as_str()).unwrap_or_default();
    if text("hawkeye_reports.jsonl").is_empty() {
        return Ok(None);
    }
    let topo = Topology::from_json(text("hawkeye_topology.json")).map_err(|e| e.to_string())?;
    let reports = hawkeye::lab::reports(text("hawkeye_reports.jsonl")).map_err(|e| e.to_string())?;
    let polls = hawkeye::lab::polls(text("hawkeye_polls.jsonl")).map_err(|e| e.to_string())?;
    Ok(Some((reports, polls, topo)))
}

/// A lab run's incidents (reports of one event ID within `window_ns`, each with its victims)
/// and its topology.
pub fn incidents(r: &lab::LabResult, window_ns: u64) -> Result<(Vec<hawkeye::Incident>, Topology), String> {
    let (reports, polls, topo) = analyzer_input(r)?.ok_or("the run made no Hawkeye report")?;
    let mut incs = hawkeye::incidents(reports, window_ns);
    hawkeye::lab::attach_victims(&mut incs, &polls, window_ns);
    Ok((incs, topo))
}

/// When a deadlock's loop froze: the first loop flow to stop for good (unfinished, delivering
/// nothing from then to the run's end, at least 200 µs later) — a flow of a loop-free fat tree
/// stops for good only behind a pause that never lifts. (Not every loop flow: one whose last hop
/// leaves the loop may still drain what it had queued past the loop.) `None`: no loop flow
/// stopped for good, no deadlock.
fn freeze(r: &lab::LabResult, loop_flows: &[(usize, usize, u64)]) -> Option<u64> {
    loop_flows
        .iter()
        .filter_map(|&(src, dst, size)| {
            let f = r.flows.iter().find(|f| (f.src, f.dst, f.size) == (src, dst, size))?;
            if f.fct_ns.is_some() {
                return None;
            }
            let samples = r.rates.iter().filter(|x| x.flow == f.id);
            let last = samples.clone().map(|x| x.rx_bytes).max().unwrap_or(0);
            let since = samples.filter(|x| x.rx_bytes == last).map(|x| x.time_ns).min().unwrap_or(0);
            (r.simulated_ns.saturating_sub(since) >= 200_000).then_some(since)
        })
        .min()
}

/// Whether the lab confirms `d` (made for incident `inc`) as a background
/// anomaly that happened: flow contention or a micro-burst incast at a port whose queue held at
/// least a packet (1500 bytes, the analyzer's congestion threshold) from a millisecond before
/// the incident opened to its last report, and for the incast, whose switch sent PFC PAUSE then. Storms and deadlocks
/// are never background here: the scenarios inject none besides their own.
fn background_holds(r: &lab::LabResult, d: &hawkeye::Diagnosis, inc: &hawkeye::Incident) -> bool {
    let Some(RootCause::Flows { port, .. }) = &d.root_cause else { return false };
    let (sw, p) = (usize::from(port.switch_id).wrapping_sub(1), port.port);
    // Its snapshots cover the epochs before each report; the last report closes it.
    let last = inc.reports.iter().map(|x| x.t_ns).max().unwrap_or(inc.t_ns);
    let during = inc.t_ns.saturating_sub(1_000_000)..=last;
    let queued = r
        .queues
        .iter()
        .any(|q| q.switch == sw && q.port == p && during.contains(&q.time_ns) && q.bytes >= 1500);
    match d.anomaly {
        Some(Anomaly::FlowContention) => queued,
        Some(Anomaly::MicroBurstIncast) => {
            queued && r.pfc.iter().any(|e| e.switch == sw && e.pause && during.contains(&e.time_ns))
        }
        _ => false,
    }
}

/// Victim-only polling as the paper's baseline does it: each victim's own path, alone
/// ([`hawkeye::victim_path_reports`]), one incident per victim. (Agents polling in the same
/// millisecond share an event ID, so an incident holds several victims' copies; their union
/// would cover more of a loop than any one victim's path.)
fn per_victim(inc: hawkeye::Incident, topo: &Topology) -> Vec<hawkeye::Incident> {
    if inc.victims.is_empty() {
        return vec![inc];
    }
    inc.victims
        .iter()
        .map(|v| hawkeye::Incident {
            reports: hawkeye::victim_path_reports(&inc, v, topo),
            victim: Some(*v),
            victims: vec![*v],
            ..inc.clone()
        })
        .filter(|i| !i.reports.is_empty())
        .collect()
}

fn t_in(t: u64, start: u64, window: u64) -> bool {
    t >= start && t - start <= window
}

fn push(v: &mut toml::Table, key: &str, t: toml::Table) {
    let arr = v.entry(key).or_insert(toml::Value::Array(Vec::new()));
    if let Some(a) = arr.as_array_mut() {
        a.push(toml::Value::Table(t));
    }
}

/// Whether `d` names `class` and the injected root cause.
fn right(d: &hawkeye::Diagnosis, class: Anomaly, injected: &Injected) -> bool {
    if d.anomaly != Some(class) {
        return false;
    }
    match (&d.root_cause, injected) {
        (Some(RootCause::Flows { flows, .. }), Injected::Flows(want)) => {
            // The injected flows carry most of the contention named (background flows to the
            // same receiver contend too, and are named with their share).
            let injected = |f: &wire::hawkeye::FiveTuple| {
                want.iter().any(|&(s, dst)| f.src_ip == lab::host_ip(s) && f.dst_ip == lab::host_ip(dst))
            };
            let total: f64 = flows.iter().map(|x| x.1).sum();
            let ours: f64 = flows.iter().filter(|x| injected(&x.0)).map(|x| x.1).sum();
            total > 0.0 && ours > total / 2.0
        }
        (Some(RootCause::Host { host: Some((h, _)), .. }), Injected::Host(want)) => *h as usize == *want,
        _ => false,
    }
}

/// What an evaluation stopped by SIGINT/SIGTERM returns as its error (the binary exits 1).
pub const INTERRUPTED: &str = "interrupted by a signal: no results";

/// The most traces of a scenario one evaluation runs.
pub const MAX_TRACES: u64 = 100_000;

/// Score `traces` traces of every scenario in `dir` on `threads` threads: per scenario, the
/// summed score of each variant.
pub fn eval(
    dir: &Path,
    traces: u64,
    threads: usize,
    verbose: bool,
) -> Result<Vec<(Scenario, [Score; VARIANTS.len()])>, String> {
    eval_with(dir, traces, threads, verbose, Sweep::default())
}

/// One scenario's scores: each variant's, in [`VARIANTS`] order.
pub type Results = Vec<(Scenario, [Score; VARIANTS.len()])>;

/// [`eval`] with every scenario under `sweep`'s overrides.
pub fn eval_with(
    dir: &Path,
    traces: u64,
    threads: usize,
    verbose: bool,
    sweep: Sweep,
) -> Result<Results, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "toml")
                && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('_'))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "{}: no scenario files (*.toml not starting with `_`) to evaluate",
            dir.display()
        ));
    }
    if !(1..=MAX_TRACES).contains(&traces) {
        return Err(format!("--traces {traces}: expected 1 to {MAX_TRACES}"));
    }
    let scenarios: Vec<Scenario> =
        files.iter().map(|f| Scenario::load(f).map(|s| s.with(sweep))).collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for s in scenarios {
        let next = std::sync::atomic::AtomicU64::new(0);
        let total = std::sync::Mutex::new([Score::default(); VARIANTS.len()]);
        let failed = std::sync::Mutex::new(None);
        std::thread::scope(|sc| {
            for _ in 0..threads.max(1) {
                sc.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= traces {
                            break;
                        }
                        let i = i.saturating_add(sweep.first_trace);
                        if lab::interrupted() {
                            *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(INTERRUPTED.into());
                            break;
                        }
                        match s.score(i, verbose) {
                            Ok(sc) => {
                                let mut t = total.lock().unwrap_or_else(|e| e.into_inner());
                                for (a, b) in t.iter_mut().zip(sc) {
                                    a.add(b);
                                }
                            }
                            Err(e) if e == INTERRUPTED => {
                                *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                                break;
                            }
                            Err(e) => {
                                *failed.lock().unwrap_or_else(|e| e.into_inner()) =
                                    Some(format!("{} trace {i}: {e}", s.path.display()));
                            }
                        }
                    }
                });
            }
        });
        if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(e);
        }
        let t = total.into_inner().unwrap_or_else(|e| e.into_inner());
        out.push((s, t));
    }
    Ok(out)
}

/// The results as CSV and as a Markdown table: per scenario and variant, the score and the
/// overheads per incident.
pub fn tables(results: &[(Scenario, [Score; VARIANTS.len()])]) -> (String, String) {
    let mut csv = String::from(
        "scenario,class,variant,traces,detected,right,wrong,undiagnosed,wrong_elsewhere,background_confirmed,precision,precision_at_locus,precision_verified,recall,\
         incidents,reports,telemetry_bytes_per_trace,switches_per_incident,polling_bytes_per_trace,collection_us\n",
    );
    let mut md = String::from(
        "| scenario | class | variant | traces | detected | right | wrong | undiagnosed | wrong elsewhere | background confirmed | precision | precision at locus | precision verified | recall \
         | incidents | telemetry B/trace | switches/incident | polling B/trace | collection µs |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (s, scores) in results {
        let name = s.path.file_stem().map(|x| x.to_string_lossy().to_string()).unwrap_or_default();
        for (v, sc) in VARIANTS.iter().zip(scores) {
            let (bytes, switches, polling, coll) = sc.overheads();
            let row = [
                name.clone(),
                s.class.name().to_string(),
                v.to_string(),
                sc.traces.to_string(),
                sc.detected.to_string(),
                sc.right.to_string(),
                sc.wrong.to_string(),
                sc.undiagnosed.to_string(),
                sc.elsewhere.to_string(),
                sc.background.to_string(),
                format!("{:.3}", sc.precision()),
                format!("{:.3}", sc.precision_at_locus()),
                format!("{:.3}", sc.precision_verified()),
                format!("{:.3}", sc.recall()),
                sc.incidents.to_string(),
                format!("{bytes:.0}"),
                format!("{switches:.1}"),
                format!("{polling:.0}"),
                format!("{coll:.0}"),
            ];
            let (a, b) = row.split_at(14);
            csv += &a.join(",");
            csv.push(',');
            csv += &[b[0].clone(), sc.reports.to_string()].join(",");
            csv.push(',');
            csv += &b[1..].join(",");
            csv.push('\n');
            md += &format!("| {} |\n", row.join(" | "));
        }
    }
    (csv, md)
}

/// Figure 7's grid: every scenario at each epoch and detection threshold (`traces` each); the
/// results per (epoch, threshold).
pub fn sweep(
    dir: &Path,
    traces: u64,
    threads: usize,
    epochs: &[u64],
    factors: &[f64],
) -> Result<Vec<(Sweep, Results)>, String> {
    let mut out = Vec::new();
    for &e in epochs {
        if !e.is_power_of_two() {
            return Err(format!("--epochs: {e} ns is not a power of two"));
        }
        for &f in factors {
            let sw = Sweep { epoch_ns: Some(e), rtt_factor: Some(f), ..Sweep::default() };
            out.push((sw, eval_with(dir, traces, threads, false, sw)?));
        }
    }
    Ok(out)
}

/// A sweep as CSV and a Markdown table: per class, epoch and threshold, Hawkeye's verified
/// precision and recall.
pub fn sweep_tables(results: &[(Sweep, Results)]) -> (String, String) {
    let mut csv = String::from("class,epoch_ns,rtt_factor,traces,right,wrong,precision_verified,recall\n");
    let mut md = String::from(
        "| class | epoch (µs) | threshold (× RTT) | traces | precision verified | recall |\n|---|---|---|---|---|---|\n",
    );
    let hk = VARIANTS.iter().position(|v| *v == "hawkeye").unwrap_or(0);
    for (sw, res) in results {
        let (e, f) = (sw.epoch_ns.unwrap_or(0), sw.rtt_factor.unwrap_or(0.0));
        for (s, scores) in res {
            let sc = scores[hk];
            csv += &format!(
                "{},{e},{f},{},{},{},{:.3},{:.3}\n",
                s.class.name(),
                sc.traces,
                sc.right,
                sc.wrong,
                sc.precision_verified(),
                sc.recall()
            );
            md += &format!(
                "| {} | {:.0} | {f} | {} | {:.3} | {:.3} |\n",
                s.class.name(),
                e as f64 / 1000.0,
                sc.traces,
                sc.precision_verified(),
                sc.recall()
            );
        }
    }
    (csv, md)
}
