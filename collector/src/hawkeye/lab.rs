//! Reading a lab run's Hawkeye output (`softfabric lab run … --out DIR`): the decoded reports
//! (`hawkeye_reports.jsonl`), the detection agents' polls (`hawkeye_polls.jsonl`) and the
//! topology (`hawkeye_topology.json`); formats in `softfabric::lab::output`.

use std::net::Ipv4Addr;

use serde_json::Value;
use wire::hawkeye::FiveTuple;
use wire::hawkeye::report::{Entry, ReportHeader};

use super::{AnalyzeError, Incident, Received};

/// A detection agent's polling event: when, the event ID, the victim.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Poll {
    /// When it was sent, ns.
    pub t_ns: u64,
    /// The event ID.
    pub event: u8,
    /// The victim flow.
    pub victim: FiveTuple,
}

fn jerr(file: &str, line: usize, why: impl Into<String>) -> AnalyzeError {
    AnalyzeError::Json { file: file.to_string(), line, why: why.into() }
}

fn num<T: TryFrom<u64>>(o: &Value, k: &str, file: &str, line: usize) -> Result<T, AnalyzeError> {
    o.get(k)
        .and_then(Value::as_u64)
        .and_then(|x| T::try_from(x).ok())
        .ok_or_else(|| jerr(file, line, format!("\"{k}\": missing or out of range")))
}

fn ip(o: &Value, k: &str, file: &str, line: usize) -> Result<Ipv4Addr, AnalyzeError> {
    o.get(k)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| jerr(file, line, format!("\"{k}\": expected an IPv4 address")))
}

fn flow(o: &Value, file: &str, line: usize) -> Result<FiveTuple, AnalyzeError> {
    Ok(FiveTuple {
        src_ip: ip(o, "src", file, line)?,
        dst_ip: ip(o, "dst", file, line)?,
        protocol: num(o, "protocol", file, line)?,
        src_port: num(o, "sport", file, line)?,
        dst_port: num(o, "dport", file, line)?,
    })
}

/// The reports of `hawkeye_reports.jsonl`.
pub fn reports(text: &str) -> Result<Vec<Received>, AnalyzeError> {
    const F: &str = "hawkeye_reports.jsonl";
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let n = i + 1;
        let o: Value = serde_json::from_str(l).map_err(|e| jerr(F, n, e.to_string()))?;
        let header = ReportHeader {
            flag: num(&o, "flag", F, n)?,
            switch_id: num(&o, "switch_id", F, n)?,
            event_id: num(&o, "event", F, n)?,
            in_port: num(&o, "in_port", F, n)?,
            out_port: num(&o, "out_port", F, n)?,
            seq: num(&o, "seq", F, n)?,
            part: num(&o, "part", F, n)?,
            last: o
                .get("last")
                .and_then(Value::as_bool)
                .ok_or_else(|| jerr(F, n, "\"last\": expected a boolean"))?,
        };
        let mut entries = Vec::new();
        for e in o
            .get("entries")
            .and_then(Value::as_array)
            .ok_or_else(|| jerr(F, n, "\"entries\": expected an array"))?
        {
            let epoch_id = num(e, "epoch", F, n)?;
            entries.push(match e.get("kind").and_then(Value::as_str) {
                Some("port") => Entry::Port {
                    port: num(e, "port", F, n)?,
                    epoch_id,
                    pkts: num(e, "pkts", F, n)?,
                    paused: num(e, "paused", F, n)?,
                    qdepth_sum: num(e, "qdepth_sum", F, n)?,
                },
                Some("flow") => Entry::Flow {
                    port: num(e, "port", F, n)?,
                    epoch_id,
                    flow: flow(e, F, n)?,
                    pkts: num(e, "pkts", F, n)?,
                    paused: num(e, "paused", F, n)?,
                    qdepth_sum: num(e, "qdepth_sum", F, n)?,
                },
                Some("meter") => Entry::Meter {
                    out_port: num(e, "out_port", F, n)?,
                    epoch_id,
                    in_port: num(e, "in_port", F, n)?,
                    bytes: num(e, "bytes", F, n)?,
                },
                other => {
                    return Err(jerr(F, n, format!("entry kind {other:?}: expected port, flow or meter")));
                }
            });
        }
        out.push(Received { t_ns: num(&o, "t_ns", F, n)?, header, entries });
    }
    Ok(out)
}

/// The polls of `hawkeye_polls.jsonl`.
pub fn polls(text: &str) -> Result<Vec<Poll>, AnalyzeError> {
    const F: &str = "hawkeye_polls.jsonl";
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let n = i + 1;
        let o: Value = serde_json::from_str(l).map_err(|e| jerr(F, n, e.to_string()))?;
        out.push(Poll {
            t_ns: num(&o, "t_ns", F, n)?,
            event: num(&o, "event", F, n)?,
            victim: flow(&o, F, n)?,
        });
    }
    Ok(out)
}

/// Give each incident its victim — the latest poll of its event ID sent at most `window_ns`
/// before its first report — and its victims: every poll of its event ID from then to its last
/// report.
pub fn attach_victims(incidents: &mut [Incident], polls: &[Poll], window_ns: u64) {
    for inc in incidents {
        inc.victim = polls
            .iter()
            .filter(|p| p.event == inc.event && p.t_ns <= inc.t_ns && inc.t_ns - p.t_ns <= window_ns)
            .max_by_key(|p| p.t_ns)
            .map(|p| p.victim);
        // Every victim whose copies may be in it: polled from a window before its first report
        // to its last.
        let last = inc.reports.iter().map(|r| r.t_ns).max().unwrap_or(inc.t_ns);
        let mut mine: Vec<&Poll> = polls
            .iter()
            .filter(|p| {
                p.event == inc.event && p.t_ns <= last && inc.t_ns.saturating_sub(p.t_ns) <= window_ns
            })
            .collect();
        mine.sort_by_key(|p| p.t_ns);
        inc.victims = Vec::new();
        for p in mine {
            if !inc.victims.contains(&p.victim) {
                inc.victims.push(p.victim);
            }
        }
    }
}

/// A lab run's Hawkeye output, from the texts of its three files (`polls` may be empty): the
/// incidents (reports of one event ID within `window_ns`, each with its victim) and the
/// topology.
pub fn load(
    reports_jsonl: &str,
    polls_jsonl: &str,
    topology_json: &str,
    window_ns: u64,
) -> Result<(Vec<Incident>, super::Topology), AnalyzeError> {
    let topo = super::Topology::from_json(topology_json)?;
    let mut incidents = super::incidents(reports(reports_jsonl)?, window_ns);
    attach_victims(&mut incidents, &polls(polls_jsonl)?, window_ns);
    Ok((incidents, topo))
}
