//! A lab file (`config/labs/<name>.toml`): topology, congestion control, workload, outputs.
//!
//! ```toml
//! [lab]
//! seed = 1
//! duration_us = 400          # virtual time simulated
//! cc = "hpcc"                # or "dcqcn"
//! mtu = 1000                 # payload bytes per data packet
//! sample_ns = 1000           # queue sampling period
//!
//! [topology]
//! kind = "star"              # one switch and `hosts` hosts; or "dumbbell" (two switches)
//! hosts = 17
//! rate = "100G"
//! delay_ns = 1000            # propagation delay of every link
//!
//! [hpcc]                     # optional: η, maxStage, W_ai (bytes; default W_init·(1−η)/flows)
//! eta = 0.95
//! max_stage = 0
//!
//! [[incast]]                 # `senders` hosts each send `size` bytes to `dst` at `start_ns`
//! senders = [1, 2, 3]
//! dst = 0
//! size = 500000
//! start_ns = 10000
//!
//! [[flow]]                   # one flow
//! src = 1
//! dst = 0
//! size = 1000000
//! start_ns = 0
//! ```
//!
//! Errors name the file, the line and the reason; the binary exits with code 2 on them.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A lab file that cannot be run: where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {key}: {reason}")]
pub struct LabError {
    /// The file.
    pub file: PathBuf,
    /// The line (1-based; 0 if unknown).
    pub line: usize,
    /// The key.
    pub key: String,
    /// Why.
    pub reason: String,
}

/// Congestion control of every flow in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cc {
    /// HPCC++ with INT stamped at every switch egress.
    Hpcc,
    /// DCQCN: ECN marking in the switches, CNPs from receivers, no window.
    Dcqcn,
}

/// A topology.
#[derive(Debug, Clone, PartialEq)]
pub enum Topology {
    /// One switch, `hosts` hosts.
    Star {
        /// Hosts.
        hosts: usize,
    },
    /// Two switches joined by one link; hosts alternate between them (even on the first).
    Dumbbell {
        /// Hosts.
        hosts: usize,
    },
}

/// One flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowSpec {
    /// Sending host.
    pub src: usize,
    /// Receiving host.
    pub dst: usize,
    /// Bytes.
    pub size: u64,
    /// Start, ns.
    pub start_ns: u64,
}

/// HPCC++ parameters of a run (the rest from the topology: line rate and base RTT).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HpccParams {
    /// η.
    pub eta: f64,
    /// maxStage.
    pub max_stage: u32,
    /// W_ai, bytes; `None`: `W_init·(1 − η)/flows`.
    pub w_ai_bytes: Option<f64>,
}

/// A whole lab.
#[derive(Debug, Clone, PartialEq)]
pub struct LabConfig {
    /// The file it came from.
    pub file: PathBuf,
    /// Seed (ECN marking draws).
    pub seed: u64,
    /// Virtual time to run, ns.
    pub duration_ns: u64,
    /// Congestion control.
    pub cc: Cc,
    /// Payload bytes per data packet.
    pub mtu: usize,
    /// Queue sampling period, ns.
    pub sample_ns: u64,
    /// Topology.
    pub topology: Topology,
    /// Link rate, bits per second.
    pub rate_bps: u64,
    /// Propagation delay per link, ns.
    pub delay_ns: u64,
    /// HPCC++ parameters.
    pub hpcc: HpccParams,
    /// Flows, in start order.
    pub flows: Vec<FlowSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    lab: RawLab,
    topology: RawTopology,
    hpcc: Option<RawHpcc>,
    #[serde(default)]
    incast: Vec<RawIncast>,
    #[serde(default)]
    flow: Vec<RawFlow>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLab {
    seed: Option<u64>,
    duration_us: u64,
    cc: String,
    mtu: Option<usize>,
    sample_ns: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    kind: String,
    hosts: usize,
    rate: String,
    delay_ns: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHpcc {
    eta: Option<f64>,
    max_stage: Option<u32>,
    w_ai_bytes: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIncast {
    senders: Vec<usize>,
    dst: usize,
    size: u64,
    start_ns: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    src: usize,
    dst: usize,
    size: u64,
    start_ns: u64,
}

/// `100G`, `25G`, `400M`: bits per second.
pub fn parse_rate(s: &str) -> Option<u64> {
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = num.parse().ok()?;
    let m = match unit {
        "G" => 1_000_000_000,
        "M" => 1_000_000,
        _ => return None,
    };
    n.checked_mul(m)
}

impl LabConfig {
    /// Read and check a lab file.
    pub fn load(path: &Path) -> Result<Self, LabError> {
        let text = std::fs::read_to_string(path).map_err(|e| LabError {
            file: path.to_path_buf(),
            line: 0,
            key: "-".into(),
            reason: format!("cannot read: {e}"),
        })?;
        Self::parse(path, &text)
    }

    /// Check `text`, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, LabError> {
        // The line of the first `key =` inside `[table]` (or `[[table]]` number `index`).
        let line_of = |table: &str, index: usize, key: &str| -> usize {
            let mut seen = 0usize;
            let mut inside = false;
            for (i, l) in text.lines().enumerate() {
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
        };
        let err = |table: &str, index: Option<usize>, key: &str, reason: String| LabError {
            file: path.to_path_buf(),
            line: line_of(table, index.unwrap_or(0), key),
            key: match index {
                Some(i) => format!("{table}[{i}].{key}"),
                None => format!("{table}.{key}"),
            },
            reason,
        };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            LabError { file: path.to_path_buf(), line, key: "-".into(), reason: e.message().to_string() }
        })?;
        let cc = match raw.lab.cc.as_str() {
            "hpcc" => Cc::Hpcc,
            "dcqcn" => Cc::Dcqcn,
            other => {
                return Err(err(
                    "lab",
                    None,
                    "cc",
                    format!("unknown CC {other:?}; expected \"hpcc\" or \"dcqcn\""),
                ));
            }
        };
        let t = &raw.topology;
        let rate_bps = parse_rate(&t.rate).ok_or_else(|| {
            err("topology", None, "rate", format!("{:?} is not a rate like \"100G\"", t.rate))
        })?;
        if rate_bps == 0 {
            return Err(err("topology", None, "rate", "a link of zero rate carries nothing".into()));
        }
        let topology = match t.kind.as_str() {
            "star" => Topology::Star { hosts: t.hosts },
            "dumbbell" => Topology::Dumbbell { hosts: t.hosts },
            other => {
                return Err(err(
                    "topology",
                    None,
                    "kind",
                    format!("unknown topology {other:?}; expected \"star\" or \"dumbbell\""),
                ));
            }
        };
        if t.hosts < 2 || t.hosts > 4096 {
            return Err(err("topology", None, "hosts", format!("{}: between 2 and 4096", t.hosts)));
        }
        let mtu = raw.lab.mtu.unwrap_or(1000);
        if !(64..=1400).contains(&mtu) {
            return Err(err("lab", None, "mtu", format!("{mtu}: between 64 and 1400 bytes of payload")));
        }
        if raw.lab.duration_us == 0 {
            return Err(err("lab", None, "duration_us", "0: nothing to simulate".into()));
        }
        let h = raw.hpcc.as_ref();
        let hpcc = HpccParams {
            eta: h.and_then(|h| h.eta).unwrap_or(0.95),
            max_stage: h.and_then(|h| h.max_stage).unwrap_or(0),
            w_ai_bytes: h.and_then(|h| h.w_ai_bytes),
        };
        if !(hpcc.eta > 0.0 && hpcc.eta <= 1.0) {
            return Err(err("hpcc", None, "eta", format!("{}: in (0, 1]", hpcc.eta)));
        }
        let mut flows = Vec::new();
        let host = |table: &str, i: usize, key: &str, h: usize| {
            if h < t.hosts {
                Ok(h)
            } else {
                Err(err(table, Some(i), key, format!("host {h} does not exist (hosts 0..{})", t.hosts)))
            }
        };
        for (i, f) in raw.incast.iter().enumerate() {
            let dst = host("incast", i, "dst", f.dst)?;
            if f.senders.is_empty() {
                return Err(err("incast", Some(i), "senders", "no senders".into()));
            }
            for &s in &f.senders {
                let src = host("incast", i, "senders", s)?;
                if src == dst {
                    return Err(err(
                        "incast",
                        Some(i),
                        "senders",
                        format!("host {s} is also the destination"),
                    ));
                }
                flows.push(FlowSpec { src, dst, size: f.size, start_ns: f.start_ns });
            }
        }
        for (i, f) in raw.flow.iter().enumerate() {
            let (src, dst) = (host("flow", i, "src", f.src)?, host("flow", i, "dst", f.dst)?);
            if src == dst {
                return Err(err("flow", Some(i), "dst", "a flow to its own source".into()));
            }
            if f.size == 0 {
                return Err(err("flow", Some(i), "size", "0 bytes".into()));
            }
            flows.push(FlowSpec { src, dst, size: f.size, start_ns: f.start_ns });
        }
        flows.sort_by_key(|f| f.start_ns);
        Ok(Self {
            file: path.to_path_buf(),
            seed: raw.lab.seed.unwrap_or(1),
            duration_ns: raw.lab.duration_us.saturating_mul(1000),
            cc,
            mtu,
            sample_ns: raw.lab.sample_ns.unwrap_or(1000).max(100),
            topology,
            rate_bps,
            delay_ns: t.delay_ns,
            hpcc,
            flows,
        })
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        match self.topology {
            Topology::Star { hosts } | Topology::Dumbbell { hosts } => hosts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "[lab]\nduration_us = 10\ncc = \"hpcc\"\n[topology]\nkind = \"star\"\nhosts = 3\nrate = \"100G\"\ndelay_ns = 1000\n";

    #[test]
    fn bad_input_names_file_line_and_reason() {
        let p = Path::new("l.toml");
        assert!(LabConfig::parse(p, OK).is_ok());
        let e = LabConfig::parse(p, &OK.replace("\"hpcc\"", "\"cubic\"")).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (3, "lab.cc"));
        assert!(e.reason.contains("unknown CC \"cubic\""), "{e}");
        let e = LabConfig::parse(p, &OK.replace("\"100G\"", "\"0G\"")).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (7, "topology.rate"));
        assert!(e.to_string().starts_with("l.toml:7: topology.rate: a link of zero rate"), "{e}");
        let e = LabConfig::parse(p, &format!("{OK}[[flow]]\nsrc = 0\ndst = 5\nsize = 1\nstart_ns = 0\n"))
            .unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (11, "flow[0].dst"));
        let e = LabConfig::parse(p, &format!("{OK}colour = 1\n")).unwrap_err();
        assert_eq!(e.line, 9);
    }
}
