//! Scenario files and the traces made of them: the format, its checks, and each trace's lab
//! (load, seed, placement) and what it injected.

use std::path::{Path, PathBuf};

use collector::hawkeye::{self, Anomaly};
use serde::Deserialize;

use super::Sweep;
use crate::lab::{self, LabConfig};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    scenario: RawHead,
    /// Absent in a `no_anomaly` scenario, present in every other.
    anomaly: Option<RawAnomaly>,
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

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAnomaly {
    pub(super) kind: String,
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
    /// Pinned placements: the incast's receiver (else drawn per trace).
    receiver: Option<usize>,
    /// The incast's senders (else `senders` drawn per trace from outside the receiver's edge).
    #[serde(default)]
    sender_hosts: Vec<usize>,
    /// A victim flow added to the background (src, dst, size, start_us).
    victim: Option<RawFlow>,
    /// A storm's PAUSE interval, µs (the host agent's default 10 µs).
    interval_us: Option<u64>,
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
        a.receiver = a.receiver.map(host);
        for h in &mut a.sender_hosts {
            *h = host(*h);
        }
        if let Some(f) = &mut a.victim {
            f.src = host(f.src);
            f.dst = host(f.dst);
        }
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
fn check_numbers(h: &RawHead, a: &RawAnomaly, hosts: usize, switches: usize) -> Result<(), (String, String)> {
    use crate::lab::config::{MAX_FLOW_BYTES, MAX_TIME_NS};
    let max_us = MAX_TIME_NS / 1000;
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
    time("anomaly.interval_us", a.interval_us)?;
    if a.interval_us == Some(0) {
        return Err((
            "anomaly.interval_us".into(),
            "0: a storm needs an interval between PAUSE frames".into(),
        ));
    }
    if let Some(r) = a.receiver {
        host("anomaly.receiver", r)?;
        if a.sender_hosts.contains(&r) {
            return Err(("anomaly.sender_hosts".into(), format!("host {r} is the receiver")));
        }
    }
    if let Some(f) = &a.victim {
        host("anomaly.victim.src", f.src)?;
        host("anomaly.victim.dst", f.dst)?;
        time("anomaly.victim.start_us", Some(f.start_us))?;
        if f.src == f.dst || f.size == 0 || f.size > MAX_FLOW_BYTES {
            return Err((
                "anomaly.victim".into(),
                format!(
                    "two hosts and 1 to {MAX_FLOW_BYTES} bytes ({} → {}, {} bytes)",
                    f.src, f.dst, f.size
                ),
            ));
        }
    }
    for (k, list) in [
        ("anomaly.burst_senders", &a.burst_senders),
        ("anomaly.no_cc_hosts", &a.no_cc_hosts),
        ("anomaly.sender_hosts", &a.sender_hosts),
    ] {
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

/// A scenario: its file, class, base lab and anomaly.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file.
    pub path: PathBuf,
    /// The expected anomaly (`None`: a `no_anomaly` scenario, background load alone, scored by
    /// its false positives).
    pub class: Option<Anomaly>,
    /// A deadlock scenario's anomaly before its loop freezes (`scenario.before`): what incidents
    /// opening earlier are scored against.
    pub before: Option<Anomaly>,
    pub(super) base_text: String,
    /// The base lab file (a trace's lab file is parsed as if it were there: paths in it are
    /// relative to it).
    pub base_path: PathBuf,
    pub(super) loads: Vec<f64>,
    pub(super) seed: u64,
    pub(super) window_ns: u64,
    pub(super) duration_us: Option<u64>,
    pub(super) anomaly: RawAnomaly,
    pub(super) sweep: Sweep,
}

/// What a trace injected: the expected anomaly and its root cause.
#[derive(Debug, Clone, PartialEq)]
pub enum Injected {
    /// Burst flows: (src host, dst host).
    Flows(Vec<(usize, usize)>),
    /// A host injecting PFC.
    Host(usize),
    /// Nothing (a `no_anomaly` scenario).
    Nothing,
}

/// The class name of a scenario that injects nothing.
pub const NO_ANOMALY: &str = "no_anomaly";

/// The internal anomaly kind of a `no_anomaly` scenario.
const NONE: &str = "none";

impl Scenario {
    /// The class's name: Table 2's, or [`NO_ANOMALY`].
    pub fn class_name(&self) -> &'static str {
        self.class.map_or(NO_ANOMALY, Anomaly::name)
    }
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

impl Scenario {
    /// Read and check a scenario file (errors name the file and the key).
    pub fn load(path: &Path) -> Result<Self, String> {
        let p = path.display();
        let text =
            ports::input::read_text(path, ports::input::MAX_TEXT_BYTES).map_err(|e| format!("{p}: {e}"))?;
        let raw: RawScenario = toml::from_str(&text)
            .map_err(|e| format!("{p}: {}", ports::input::toml_message(&text, e.span(), e.message())))?;
        let class = match raw.scenario.class.as_str() {
            NO_ANOMALY => None,
            c => Some(Anomaly::from_name(c).ok_or_else(|| {
                format!("{p}: scenario.class: {c:?} is not one of Table 2's anomalies nor \"{NO_ANOMALY}\"")
            })?),
        };
        let anomaly = match (class, raw.anomaly.clone()) {
            (None, None) => RawAnomaly { kind: NONE.into(), ..RawAnomaly::default() },
            (None, Some(_)) => {
                return Err(format!(
                    "{p}: anomaly: a {NO_ANOMALY} scenario injects nothing (no [anomaly] table)"
                ));
            }
            (Some(_), None) => return Err(format!("{p}: anomaly: missing (what the scenario injects)")),
            (Some(_), Some(a)) => a,
        };
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
        check_numbers(&raw.scenario, &anomaly, base.hosts(), base.topology.switches)
            .map_err(|(k, why)| format!("{p}: {k}: {why}"))?;
        match anomaly.kind.as_str() {
            "incast" | "pfc_storm" | NONE => {}
            "deadlock" if !anomaly.routes.is_empty() && !anomaly.flows.is_empty() => {}
            "deadlock" => {
                return Err(format!("{p}: anomaly.routes: a deadlock needs route overrides and loop flows"));
            }
            k => {
                return Err(format!(
                    "{p}: anomaly.kind: {k:?}: expected \"incast\", \"pfc_storm\" or \"deadlock\""
                ));
            }
        }
        if anomaly.kind == "pfc_storm" && anomaly.stop_us.is_none_or(|s| s <= anomaly.start_us) {
            return Err(format!("{p}: anomaly.stop_us: a storm needs a stop after start_us"));
        }
        let before =
            match raw.scenario.before.as_deref() {
                None => None,
                Some(b) => Some(Anomaly::from_name(b).ok_or_else(|| {
                    format!("{p}: scenario.before: {b:?} is not one of Table 2's anomalies")
                })?),
            };
        if before.is_some() && anomaly.kind != "deadlock" {
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
            anomaly,
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
        // The receiver (incast) or the injecting host (storm), then senders elsewhere: drawn,
        // unless pinned (the draws are made either way, so pinning one keeps the others).
        let drawn = draw(hosts);
        let target = match a.kind.as_str() {
            "pfc_storm" => a.storm_host.unwrap_or(drawn),
            _ => a.receiver.unwrap_or(drawn),
        };
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
        if !a.sender_hosts.is_empty() {
            senders = a.sender_hosts.clone();
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
        if let Some(f) = &a.victim {
            push_flow(&mut v, f);
        }
        if a.kind == NONE {
            let text = toml::to_string(&v).map_err(|e| e.to_string())?;
            let lab = LabConfig::parse(&self.base_path, &text).map_err(|e| e.to_string())?;
            return Ok(Trace {
                lab,
                text,
                load,
                seed,
                start_ns: 0,
                injected: Injected::Nothing,
                locus: Vec::new(),
                target: None,
                loop_flows: Vec::new(),
            });
        }
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
            push_storm(&mut v, target, start_ns, a.stop_us.unwrap_or(0) * 1000, a.interval_us);
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
            push_flow(&mut v, f);
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
            push_storm(&mut v, h, start_ns, a.stop_us.unwrap_or(a.start_us + 500) * 1000, a.interval_us);
        }
        // The root cause the class names: the injecting host, the contending flows outside the
        // loop, or (in the loop) every flow contending on it.
        let injected = match self.class.unwrap_or(Anomaly::InLoopDeadlock) {
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
}

fn push(v: &mut toml::Table, key: &str, t: toml::Table) {
    let arr = v.entry(key).or_insert(toml::Value::Array(Vec::new()));
    if let Some(a) = arr.as_array_mut() {
        a.push(toml::Value::Table(t));
    }
}

/// A `[[flow]]` of the lab file: `f` from its start.
fn push_flow(v: &mut toml::Table, f: &RawFlow) {
    let mut t = toml::Table::new();
    t.insert("src".into(), (f.src as i64).into());
    t.insert("dst".into(), (f.dst as i64).into());
    t.insert("size".into(), (f.size as i64).into());
    t.insert("start_ns".into(), (f.start_us as i64 * 1000).into());
    push(v, "flow", t);
}

/// A `[[host]]` of the lab file: `host` injecting PAUSE from `start_ns` to `stop_ns`, every
/// `interval_us` if given (else the agent's default).
fn push_storm(v: &mut toml::Table, host: usize, start_ns: u64, stop_ns: u64, interval_us: Option<u64>) {
    let mut t = toml::Table::new();
    t.insert("ids".into(), toml::Value::Array(vec![(host as i64).into()]));
    t.insert("agent".into(), "pfc_storm".into());
    t.insert("start_ns".into(), (start_ns as i64).into());
    t.insert("stop_ns".into(), (stop_ns as i64).into());
    if let Some(iv) = interval_us {
        t.insert("interval_ns".into(), (iv as i64 * 1000).into());
    }
    push(v, "host", t);
}
