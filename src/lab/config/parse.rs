//! Reading a lab file whole: the TOML ([`super::raw`]), then every table checked against the
//! others — the topology first, since the counts, hosts and switches of everything else are
//! checked against it; the workload ([`super::flows`]), the switches and hosts
//! ([`super::nodes`]) and the CC parameters ([`super::params`]) after it.

use std::path::Path;

use dataplane::config::parse_rate;

use super::raw::{Raw, RawTopology};
use super::{Cc, LabConfig, LabError, MAX_HOSTS, MAX_SAMPLES, MAX_SWITCH_PORTS, MAX_SWITCHES, MAX_TIME_NS};
use crate::lab::topology::{Link, Node, Topology, Wiring};

/// The file being read: where its errors point.
pub(super) struct Ctx<'a> {
    /// The file.
    pub path: &'a Path,
    /// Its text.
    pub text: &'a str,
}

impl Ctx<'_> {
    /// The line of the first `key =` inside `[table]` (or `[[table]]` number `index`).
    pub fn line_of(&self, table: &str, index: usize, key: &str) -> usize {
        let mut seen = 0usize;
        let mut inside = false;
        for (i, l) in self.text.lines().enumerate() {
            let t = l.trim();
            if t.starts_with('[') {
                let name = t.trim_matches(|c| c == '[' || c == ']').trim();
                inside = name == table && {
                    seen += 1;
                    seen == index + 1
                };
                continue;
            }
            if inside && t.split('=').next().is_some_and(|k| k.trim() == key) {
                return i + 1;
            }
        }
        0
    }

    /// `table[index].key` is wrong: `reason`.
    pub fn err(&self, table: &str, index: Option<usize>, key: &str, reason: String) -> LabError {
        LabError {
            file: self.path.to_path_buf(),
            line: self.line_of(table, index.unwrap_or(0), key),
            key: match index {
                Some(i) => format!("{table}[{i}].{key}"),
                None => format!("{table}.{key}"),
            },
            reason,
        }
    }

    /// `v`, the value of `table[i].key`, as a rate in bit/s above 0.
    pub fn rate(&self, table: &str, i: Option<usize>, key: &str, v: &str) -> Result<u64, LabError> {
        // "0G" is a rate, just a useless one: say so rather than "not a rate".
        if v.trim().trim_end_matches(char::is_alphabetic).trim().parse::<f64>() == Ok(0.0) {
            return Err(self.err(table, i, key, "a link of zero rate carries nothing".into()));
        }
        parse_rate(v).ok_or_else(|| self.err(table, i, key, format!("{v:?} is not a rate like \"100G\"")))
    }
}

/// The network a lab file builds, with the rates its other tables default to.
pub(super) struct Net {
    pub topology: Topology,
    pub wiring: Wiring,
    /// The hosts' links, bit/s.
    pub rate_bps: u64,
}

/// The whole file, checked.
pub(super) fn parse(cx: &Ctx) -> Result<LabConfig, LabError> {
    let path = cx.path;
    let text = cx.text;
    let raw: Raw = toml::from_str(text).map_err(|e| {
        let (line, key) = ports::input::toml_location(text, e.span());
        let key = if key.is_empty() { "-".into() } else { key };
        LabError { file: path.to_path_buf(), line, key, reason: e.message().trim_end().to_string() }
    })?;
    let cc = Cc::parse(&raw.lab.cc)
        .ok_or_else(|| cx.err("lab", None, "cc", format!("unknown CC {:?}; {}", raw.lab.cc, Cc::EXPECTED)))?;
    let net = topology(cx, &raw)?;
    let Net { topology, wiring, rate_bps } = &net;
    let rate_bps = *rate_bps;
    let hosts = topology.hosts;
    let no_cc_hosts = raw.lab.no_cc_hosts.clone().unwrap_or_default();
    if let Some(&h) = no_cc_hosts.iter().find(|&&h| h >= hosts) {
        return Err(cx.err("lab", None, "no_cc_hosts", format!("host {h}: the topology has {hosts} hosts")));
    }
    let mtu = raw.lab.mtu.unwrap_or(1000);
    if !(64..=1400).contains(&mtu) {
        return Err(cx.err("lab", None, "mtu", format!("{mtu}: between 64 and 1400 bytes of payload")));
    }
    if raw.lab.duration_us == 0 {
        return Err(cx.err("lab", None, "duration_us", "0: nothing to simulate".into()));
    }
    let duration_ns = raw.lab.duration_us * 1000;
    let completion_us = raw.lab.run_to_completion_us.unwrap_or(0);
    let completion_ns = completion_us * 1000;
    if duration_ns + completion_ns > MAX_TIME_NS {
        return Err(cx.err(
            "lab",
            None,
            "run_to_completion_us",
            format!(
                "{completion_us} µs after duration_us {}: at most {} µs of virtual time in all",
                raw.lab.duration_us,
                MAX_TIME_NS / 1000
            ),
        ));
    }
    let seed = raw.lab.seed.unwrap_or(1);
    let hpcc = super::params::hpcc(cx, &raw, rate_bps)?;
    let hawkeye = super::params::hawkeye(cx, &raw)?;
    let dcqcn = super::params::dcqcn(cx, &raw)?;
    let flows = super::flows::flows(cx, &raw, &net, seed, duration_ns, completion_ns)?;
    let buffer_bytes = buffer(cx, &raw.topology, &net, mtu)?;
    let (switches, switch_programs) = super::nodes::programs(cx, &raw, cc, topology)?;
    let host_agents = super::nodes::host_agents(cx, &raw, hosts, &flows)?;
    let ufab = super::params::ufab(cx, &raw)?;
    let mut failures = Vec::new();
    for (i, f) in raw.failure.iter().enumerate() {
        if f.switch >= topology.switches {
            return Err(cx.err(
                "failure",
                Some(i),
                "switch",
                format!("switch {} does not exist (switches 0..{})", f.switch, topology.switches),
            ));
        }
        failures.push((f.switch, f.at_ns));
    }
    let sample_ns = raw.lab.sample_ns.unwrap_or(1000);
    if !(100..=1_000_000_000_000).contains(&sample_ns) {
        return Err(cx.err("lab", None, "sample_ns", format!("{sample_ns}: 100 ns to 1000 s")));
    }
    // Every switch port is sampled every sample_ns for the whole run, in memory.
    let ports: usize = wiring.switch_ports.iter().map(Vec::len).sum();
    let samples = (duration_ns + completion_ns) / sample_ns * ports as u64;
    if samples > MAX_SAMPLES {
        return Err(cx.err(
            "lab",
            None,
            "sample_ns",
            format!(
                "{sample_ns} ns: {samples} queue samples of {ports} ports over the run, more than {MAX_SAMPLES}: sample less often"
            ),
        ));
    }
    let topology = net.topology;
    let cfg = LabConfig {
        file: path.to_path_buf(),
        seed,
        duration_ns,
        completion_ns,
        cc,
        mtu,
        sample_ns,
        ack_high_priority: raw.lab.ack_high_priority,
        no_cc_hosts,
        topology,
        buffer_bytes,
        hpcc,
        dcqcn,
        flows,
        switches_defaulted: raw.switches.as_ref().and_then(|s| s.program.as_ref()).is_none(),
        switches,
        switch_programs,
        host_agents,
        hawkeye,
        hawkeye_full_polling: raw.hawkeye.as_ref().and_then(|h| h.full_polling).unwrap_or(false),
        ufab,
        failures,
        rtt_samples: raw.lab.rtt_samples.unwrap_or(false),
    };
    // The switches' own sections, as the lab will write them into each configuration.
    crate::lab::engine::check_programs(&cfg).map_err(|reason| {
        let table = if cfg.switch_programs.is_empty() { "switches" } else { "switch" };
        LabError {
            file: path.to_path_buf(),
            line: cx.line_of(table, 0, "sections"),
            key: format!("{table}.sections"),
            reason: format!(
                "{reason} (the lab writes each switch's [[port]], [tm] and, for programs on l2l3, \
                 [l2l3] itself; sections add the rest)"
            ),
        }
    })?;
    cfg.check_limits().map_err(|why| cx.err("flow", None, "src", why))?;
    Ok(cfg)
}

/// `[topology]` and its `[[link]]`s, built and checked: every count bounded before anything
/// is built of it.
fn topology(cx: &Ctx, raw: &Raw) -> Result<Net, LabError> {
    let t = &raw.topology;
    let rate_bps = cx.rate("topology", None, "rate", &t.rate)?;
    let fabric_bps = match &t.fabric_rate {
        Some(r) => cx.rate("topology", None, "fabric_rate", r)?,
        None => rate_bps,
    };
    // Every count of a topology, bounded before anything is built of it.
    let need = |v: Option<usize>, key: &str, min: usize| match v {
        Some(n) if n > MAX_SWITCHES.max(MAX_HOSTS) => {
            Err(cx.err("topology", None, key, format!("{n}: at most {}", MAX_SWITCHES.max(MAX_HOSTS))))
        }
        Some(n) if n >= min => Ok(n),
        Some(n) => Err(cx.err("topology", None, key, format!("{n}: at least {min}"))),
        None => Err(cx.err("topology", None, "kind", format!("kind {:?} needs `{key}`", t.kind))),
    };
    // The hosts a topology will have, refused before it is built (100 M hosts took 15 s
    // and 4.7 GB to be refused after building them).
    let planned: Option<u128> = match t.kind.as_str() {
        "star" | "dumbbell" => t.hosts.map(|h| h as u128),
        "leaf_spine" => t.leaves.zip(t.hosts_per_leaf).map(|(l, h)| l as u128 * h as u128),
        "fat_tree" => t.k.map(|k| (k as u128).saturating_pow(3) / 4),
        "pods" => t
            .pods
            .zip(t.tors_per_pod)
            .zip(t.hosts_per_tor)
            .map(|((p, t), h)| (p as u128).saturating_mul(t as u128).saturating_mul(h as u128)),
        _ => None,
    };
    if let Some(h) = planned.filter(|&h| h > MAX_HOSTS as u128) {
        let (key, of) = match t.kind.as_str() {
            "leaf_spine" => ("hosts_per_leaf", "leaves × hosts_per_leaf"),
            "fat_tree" => ("k", "k³/4"),
            "pods" => ("hosts_per_tor", "pods × tors_per_pod × hosts_per_tor"),
            _ => ("hosts", "hosts"),
        };
        return Err(cx.err("topology", None, key, format!("{of} = {h} hosts: at most {MAX_HOSTS}")));
    }
    if let Some(n) = t.spines.filter(|&n| n > MAX_SWITCH_PORTS) {
        return Err(cx.err("topology", None, "spines", format!("{n}: at most {MAX_SWITCH_PORTS}")));
    }
    if let Some(n) = t.leaves.filter(|&n| n > MAX_HOSTS) {
        return Err(cx.err("topology", None, "leaves", format!("{n}: at most {MAX_HOSTS}")));
    }
    let delay = t.delay_ns;
    let topology = match t.kind.as_str() {
        "star" => Topology::star(need(t.hosts, "hosts", 2)?, rate_bps, delay),
        "dumbbell" => Topology::dumbbell(need(t.hosts, "hosts", 2)?, rate_bps, fabric_bps, delay),
        "leaf_spine" => Topology::leaf_spine(
            need(t.leaves, "leaves", 1)?,
            need(t.spines, "spines", 1)?,
            need(t.hosts_per_leaf, "hosts_per_leaf", 1)?,
            rate_bps,
            fabric_bps,
            delay,
        ),
        "fat_tree" => {
            let k = need(t.k, "k", 2)?;
            if k % 2 != 0 {
                return Err(cx.err("topology", None, "k", format!("{k}: a fat-tree's k is even")));
            }
            Topology::fat_tree(k, rate_bps, fabric_bps, delay)
        }
        "pods" => {
            let pods = need(t.pods, "pods", 1)?;
            let tors = need(t.tors_per_pod, "tors_per_pod", 1)?;
            let aggs = need(t.aggs_per_pod, "aggs_per_pod", 1)?;
            let cores = need(t.cores, "cores", 0)?;
            let hosts_per_tor = need(t.hosts_per_tor, "hosts_per_tor", 1)?;
            if cores % aggs != 0 {
                return Err(cx.err(
                    "topology",
                    None,
                    "cores",
                    format!(
                        "{cores}: a multiple of aggs_per_pod ({aggs}), each aggregation switch joining as many"
                    ),
                ));
            }
            if pods.saturating_mul(tors.max(aggs)) > MAX_HOSTS
                || tors.saturating_mul(hosts_per_tor) > MAX_HOSTS
                || cores > MAX_HOSTS
            {
                return Err(cx.err(
                    "topology",
                    None,
                    "pods",
                    format!("{pods} pods of {tors} ToRs: too many switches"),
                ));
            }
            let core_bps = match &t.core_rate {
                Some(r) => cx.rate("topology", None, "core_rate", r)?,
                None => fabric_bps,
            };
            Topology::pods(pods, tors, aggs, cores, hosts_per_tor, (rate_bps, fabric_bps, core_bps), delay)
        }
        "explicit" => {
            let mut links = Vec::with_capacity(raw.link.len());
            for (i, l) in raw.link.iter().enumerate() {
                let end = |key: &str, v: &str| {
                    Node::parse(v).ok_or_else(|| {
                        cx.err(
                            "link",
                            Some(i),
                            key,
                            format!("{v:?}: expected a host \"h3\" or a switch \"s1\""),
                        )
                    })
                };
                links.push(Link {
                    a: end("a", &l.a)?,
                    b: end("b", &l.b)?,
                    rate_bps: match &l.rate {
                        Some(r) => cx.rate("link", Some(i), "rate", r)?,
                        None => rate_bps,
                    },
                    delay_ns: l.delay_ns.unwrap_or(delay),
                });
            }
            Topology { hosts: need(t.hosts, "hosts", 2)?, switches: need(t.switches, "switches", 1)?, links }
        }
        other => {
            return Err(cx.err(
                "topology",
                None,
                "kind",
                format!(
                    "unknown topology {other:?}; expected \"star\", \"dumbbell\", \"leaf_spine\", \"fat_tree\" or \"explicit\""
                ),
            ));
        }
    };
    if t.kind != "explicit" && !raw.link.is_empty() {
        return Err(cx.err("link", Some(0), "a", "[[link]] tables need topology kind \"explicit\"".into()));
    }
    if topology.hosts > MAX_HOSTS {
        return Err(cx.err(
            "topology",
            None,
            "kind",
            format!("{} hosts: at most {MAX_HOSTS}", topology.hosts),
        ));
    }
    if let Err(e) = topology.check() {
        return Err(match e.link() {
            Some(i) if t.kind == "explicit" => cx.err("link", Some(i), "a", e.to_string()),
            _ => cx.err("topology", None, if t.kind == "explicit" { "hosts" } else { "kind" }, e.to_string()),
        });
    }
    let wiring = topology.wiring();
    if let Some((s, p)) = wiring.switch_ports.iter().enumerate().find(|(_, p)| p.len() > MAX_SWITCH_PORTS) {
        return Err(cx.err(
            "topology",
            None,
            "kind",
            format!("switch {s} has {} ports: at most {MAX_SWITCH_PORTS}", p.len()),
        ));
    }
    Ok(Net { topology, wiring, rate_bps })
}

/// The switches' buffer, as `[topology] buffer_bytes` says or the reference's default, checked
/// against what every switch sets aside of it.
fn buffer(cx: &Ctx, t: &RawTopology, net: &Net, mtu: usize) -> Result<u64, LabError> {
    let Net { topology, wiring, rate_bps } = net;
    let rate_bps = *rate_bps;
    let buffer_bytes = match t.buffer_bytes {
        Some(b) if b >= 64 * 1024 => b,
        Some(b) => return Err(cx.err("topology", None, "buffer_bytes", format!("{b}: at least 65536"))),
        // The reference's run.py: 16·bw/50 MB, bw in Gb/s of the hosts' links.
        None => (16 * (rate_bps / 1_000_000_000).max(1) / 50).max(1) << 20,
    };
    // Every switch as the lab will configure it: one port at least, and its buffer able to
    // hold the reserves and the PFC headroom its links need (known here from the topology).
    let reserve = dataplane::tm::TmConfig::default().reserve_bytes;
    for (s, ports) in wiring.switch_ports.iter().enumerate() {
        if ports.is_empty() {
            return Err(cx.err(
                "topology",
                None,
                "switches",
                format!("switch {s} has no link: {} switches, fewer of them linked", topology.switches),
            ));
        }
        let h = crate::lab::engine::headroom(mtu, ports.iter().map(|e| &topology.links[e.link]));
        let p = ports.len() as u128;
        let set_aside = p * 8 * u128::from(reserve) + p * u128::from(h);
        if set_aside >= u128::from(buffer_bytes) {
            return Err(cx.err(
                "topology",
                None,
                "buffer_bytes",
                format!(
                    "switch {s}: {} ports (its hosts and links) × (8 × {reserve} B reserve + {h} B PFC headroom, \
                     3 × the bandwidth-delay product of its links' rate and delay_ns) = {set_aside} B, \
                     not less than buffer_bytes {buffer_bytes}",
                    ports.len()
                ),
            ));
        }
    }
    Ok(buffer_bytes)
}
