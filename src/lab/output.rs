//! A run's results as CSV files: `flows.csv` (FCT at the sender's last acknowledgement,
//! slowdown, bytes acknowledged per flow; an unfinished flow has no FCT), `queues.csv` (queue
//! bytes and bytes sent per switch port, sampled), `queue_hist.csv` (per port, packets by the
//! queue depth they left at, 1000 B buckets: the distribution at packet granularity),
//! `rates.csv` (bytes delivered per running flow, sampled), `pfc.csv` (pause and resume frames), `links.csv` (utilisation over the run),
//! `switches.csv` (each switch's program and counters: drops by reason, packets consumed) and
//! `agents.csv` (each host's agent and its counters).
//!
//! With Hawkeye, two JSON-lines files, one object per line:
//! * `hawkeye_reports.jsonl` — every telemetry report a `hawkeye` switch made
//!   (`wire::hawkeye::report`, decoded): `{"t_ns", "switch", "switch_id", "event", "flag",
//!   "in_port", "out_port", "seq", "part", "last", "entries": [...]}`, each entry
//!   `{"kind": "port", "port", "epoch", "pkts", "paused", "qdepth_sum"}`,
//!   `{"kind": "flow", "port", "epoch", "src", "dst", "protocol", "sport", "dport", "pkts",
//!   "paused", "qdepth_sum"}` or `{"kind": "meter", "out_port", "in_port", "epoch", "bytes"}`;
//!   `t_ns` is when the lab took it (its switch's next tick), `switch` the lab's switch index.
//! * `hawkeye_polls.jsonl` — every polling packet a detection agent sent: `{"t_ns", "host",
//!   "flow", "event", "src", "dst", "protocol", "sport", "dport", "rtt_ns", "threshold_ns"}`.
//!
//! and `hawkeye_topology.json`, what the analyzer needs to join one switch's port to the next
//! (`collector::hawkeye::Topology`): `{"switches": [{"switch_id", "ports": [{"port", "switch_id",
//! "peer_port"} | {"port", "host", "ip"}]}]}` — the lab gives switch `s` the ID `s + 1` (its
//! `[l2l3] int_switch_id`, which `hawkeye` reports under unless `[hawkeye] switch_id` is set).
//!
//! Every number is an integer or printed with fixed precision, so the same run gives the same
//! bytes.

use std::fmt::Write as _;
use std::path::Path;

use super::{FlowResult, LabResult};

/// The CSV texts, by file name.
pub fn csv(r: &LabResult) -> Vec<(&'static str, String)> {
    let mut flows = String::from("id,src,dst,size,start_ns,fct_ns,standalone_ns,slowdown,acked_bytes\n");
    for f in &r.flows {
        let fct = f.fct_ns.map_or(String::new(), |v| v.to_string());
        let sd = f.slowdown().map_or(String::new(), |v| format!("{v:.4}"));
        let _ = writeln!(
            flows,
            "{},{},{},{},{},{fct},{},{sd},{}",
            f.id, f.src, f.dst, f.size, f.start_ns, f.standalone_ns, f.acked_bytes
        );
    }
    let mut queues = String::from("time_ns,switch,port,bytes,tx_bytes\n");
    for q in &r.queues {
        let _ = writeln!(queues, "{},{},{},{},{}", q.time_ns, q.switch, q.port, q.bytes, q.tx_bytes);
    }
    let mut rates = String::from("time_ns,flow,rx_bytes\n");
    for s in &r.rates {
        let _ = writeln!(rates, "{},{},{}", s.time_ns, s.flow, s.rx_bytes);
    }
    let mut pfc = String::from("time_ns,switch,port,kind\n");
    for e in &r.pfc {
        let _ = writeln!(
            pfc,
            "{},{},{},{}",
            e.time_ns,
            e.switch,
            e.port,
            if e.pause { "pause" } else { "resume" }
        );
    }
    let mut links = String::from("switch,port,tx_bytes,rate_bps,utilisation\n");
    let secs = r.simulated_ns.max(1) as f64 * 1e-9;
    for &(s, p, bytes, rate) in &r.links {
        let u = bytes as f64 * 8.0 / (rate as f64 * secs);
        let _ = writeln!(links, "{s},{p},{bytes},{rate},{u:.4}");
    }
    let mut switches = String::from("switch,program,counter,value\n");
    for sw in &r.switches {
        for (k, v) in &sw.counters {
            let _ = writeln!(switches, "{},{},{k},{v}", sw.switch, sw.program);
        }
    }
    let mut agents = String::from("host,agent,counter,value\n");
    for a in &r.agents {
        for (k, v) in &a.counters {
            let _ = writeln!(agents, "{},{},{k},{v}", a.host, a.agent);
        }
    }
    let mut hist = String::from("switch,port,queue_kb,packets\n");
    for (s, p, h) in &r.queue_hist {
        for (kb, n) in h.iter().enumerate().filter(|(_, n)| **n > 0) {
            let _ = writeln!(hist, "{s},{p},{kb},{n}");
        }
    }
    let mut out = vec![
        ("flows.csv", flows),
        ("queues.csv", queues),
        ("queue_hist.csv", hist),
        ("rates.csv", rates),
        ("pfc.csv", pfc),
        ("links.csv", links),
        ("switches.csv", switches),
        ("agents.csv", agents),
    ];
    if !r.rtt_hist.is_empty() {
        let mut h = String::from("rtt_us,samples\n");
        for (us, n) in r.rtt_hist.iter().enumerate().filter(|(_, n)| **n > 0) {
            let _ = writeln!(h, "{us},{n}");
        }
        out.push(("rtt_hist.csv", h));
    }
    if !r.ufab_pairs.is_empty() {
        let mut pairs = String::from(
            "host,flow,path,route,phi,phi_d,window_bytes,share_bps,moves,frozen,probes_lost,finishes_acked,finishes_abandoned\n",
        );
        for p in &r.ufab_pairs {
            let phi_d = if p.phi_d.is_finite() { format!("{:.2}", p.phi_d) } else { "unbound".into() };
            let _ = writeln!(
                pairs,
                "{},{},{},{},{:.2},{phi_d},{:.0},{:.0},{},{},{},{},{}",
                p.host,
                p.flow,
                p.path.map_or("-".to_string(), |x| x.to_string()),
                p.route.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("."),
                p.phi,
                p.window,
                p.share_bps,
                p.stats.moves,
                p.stats.frozen,
                p.stats.probes_lost,
                p.stats.finishes_acked,
                p.stats.finishes_abandoned
            );
        }
        let mut moves = String::from("time_ns,flow,path,reason\n");
        for (t, f, p, why) in &r.ufab_moves {
            let _ = writeln!(moves, "{t},{f},{p},{why}");
        }
        out.push(("ufab_pairs.csv", pairs));
        out.push(("ufab_moves.csv", moves));
    }
    out
}

/// Hawkeye's JSON-lines files, when the run made reports or polls.
pub fn hawkeye_jsonl(r: &LabResult) -> Vec<(&'static str, String)> {
    use wire::hawkeye::report::{Entry, Report};
    let mut out = Vec::new();
    if !r.records.is_empty() {
        let mut s = String::new();
        for (t, sw, bytes) in &r.records {
            let Ok(rep) = Report::parse(bytes) else { continue };
            let h = rep.header;
            let _ = write!(
                s,
                "{{\"t_ns\":{t},\"switch\":{sw},\"switch_id\":{},\"event\":{},\"flag\":{},\"in_port\":{},\"out_port\":{},\"seq\":{},\"part\":{},\"last\":{},\"entries\":[",
                h.switch_id, h.event_id, h.flag, h.in_port, h.out_port, h.seq, h.part, h.last
            );
            for (i, e) in rep.entries().filter_map(Result::ok).enumerate() {
                if i > 0 {
                    s.push(',');
                }
                let _ = match e {
                    Entry::Port { port, epoch_id, pkts, paused, qdepth_sum } => write!(
                        s,
                        "{{\"kind\":\"port\",\"port\":{port},\"epoch\":{epoch_id},\"pkts\":{pkts},\"paused\":{paused},\"qdepth_sum\":{qdepth_sum}}}"
                    ),
                    Entry::Flow { port, epoch_id, flow, pkts, paused, qdepth_sum } => write!(
                        s,
                        "{{\"kind\":\"flow\",\"port\":{port},\"epoch\":{epoch_id},\"src\":\"{}\",\"dst\":\"{}\",\"protocol\":{},\"sport\":{},\"dport\":{},\"pkts\":{pkts},\"paused\":{paused},\"qdepth_sum\":{qdepth_sum}}}",
                        flow.src_ip, flow.dst_ip, flow.protocol, flow.src_port, flow.dst_port
                    ),
                    Entry::Meter { out_port, epoch_id, in_port, bytes } => write!(
                        s,
                        "{{\"kind\":\"meter\",\"out_port\":{out_port},\"in_port\":{in_port},\"epoch\":{epoch_id},\"bytes\":{bytes}}}"
                    ),
                };
            }
            s.push_str("]}\n");
        }
        out.push(("hawkeye_reports.jsonl", s));
    }
    if !r.records.is_empty() {
        use super::Node;
        let mut s = String::from("{\"switches\":[");
        for (i, ports) in r.wiring.iter().enumerate() {
            let _ = write!(s, "{}{{\"switch_id\":{},\"ports\":[", if i > 0 { "," } else { "" }, i + 1);
            for (p, (peer, peer_port)) in ports.iter().enumerate() {
                let sep = if p > 0 { "," } else { "" };
                let _ = match peer {
                    Node::Switch(o) => {
                        write!(s, "{sep}{{\"port\":{p},\"switch_id\":{},\"peer_port\":{peer_port}}}", o + 1)
                    }
                    Node::Host(h) => {
                        write!(s, "{sep}{{\"port\":{p},\"host\":{h},\"ip\":\"{}\"}}", super::host_ip(*h))
                    }
                };
            }
            s.push_str("]}");
        }
        s.push_str("]}\n");
        out.push(("hawkeye_topology.json", s));
    }
    if !r.polls.is_empty() {
        let mut s = String::new();
        for (h, e) in &r.polls {
            let v = e.victim;
            let _ = writeln!(
                s,
                "{{\"t_ns\":{},\"host\":{h},\"flow\":{},\"event\":{},\"src\":\"{}\",\"dst\":\"{}\",\"protocol\":{},\"sport\":{},\"dport\":{},\"rtt_ns\":{},\"threshold_ns\":{}}}",
                e.at,
                e.flow,
                e.event_id,
                v.src_ip,
                v.dst_ip,
                v.protocol,
                v.src_port,
                v.dst_port,
                e.rtt_ns,
                e.threshold_ns
            );
        }
        out.push(("hawkeye_polls.jsonl", s));
    }
    out
}

/// Write the CSV files (and Hawkeye's JSON lines, if any) into `dir` (created if needed).
pub fn write(r: &LabResult, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in csv(r).into_iter().chain(hawkeye_jsonl(r)) {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// FCT slowdowns of one bin of flows sorted by size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowdownBin {
    /// The largest flow in the bin, bytes.
    pub max_size: u64,
    /// Flows in the bin.
    pub flows: usize,
    /// Median slowdown.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// The `p`-th percentile (0 < p ≤ 1) of sorted `v`, by nearest rank.
pub fn percentile(v: &[f64], p: f64) -> Option<f64> {
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
    v.get(rank - 1).copied()
}

/// The reference's `fct_analysis.py`: finished flows sorted by size and cut into `bins`
/// count-quantile bins (fewer when there are fewer than 5 flows per bin), each with its
/// largest size and median, 95th and 99th percentile slowdown.
pub fn slowdown_bins(flows: &[FlowResult], bins: usize) -> Vec<SlowdownBin> {
    let mut done: Vec<(u64, f64)> = flows.iter().filter_map(|f| Some((f.size, f.slowdown()?))).collect();
    done.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let bins = bins.min(done.len() / 5).max(1);
    let mut out = Vec::with_capacity(bins);
    for b in 0..bins {
        let (lo, hi) = (b * done.len() / bins, (b + 1) * done.len() / bins);
        if lo == hi {
            continue;
        }
        let mut sd: Vec<f64> = done[lo..hi].iter().map(|&(_, s)| s).collect();
        sd.sort_by(f64::total_cmp);
        let p = |q| percentile(&sd, q).unwrap_or(1.0);
        out.push(SlowdownBin {
            max_size: done[hi - 1].0,
            flows: hi - lo,
            p50: p(0.5),
            p95: p(0.95),
            p99: p(0.99),
        });
    }
    out
}

/// The `q` quantile (0..=1) of a queue histogram ([`LabResult::queue_hist`]), bytes (the upper
/// edge of its bucket); `None` for an empty one.
pub fn queue_quantile(hist: &[u64], q: f64) -> Option<u64> {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return None;
    }
    let want = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (b, n) in hist.iter().enumerate() {
        seen += n;
        if seen >= want {
            return Some((b as u64 + 1) * crate::lab::QUEUE_HIST_BYTES);
        }
    }
    None
}

/// Flows not finished when the run ended, and the bytes they had not had acknowledged: what
/// slowdown tables leave out, said beside them.
pub fn unfinished(flows: &[FlowResult]) -> (usize, u64) {
    let open: Vec<&FlowResult> = flows.iter().filter(|f| f.fct_ns.is_none()).collect();
    (open.len(), open.iter().map(|f| f.size - f.acked_bytes.min(f.size)).sum())
}

/// The slowdowns of finished flows smaller than `below` bytes, sorted (for [`percentile`]).
pub fn slowdowns_below(flows: &[FlowResult], below: u64) -> Vec<f64> {
    let mut sd: Vec<f64> = flows.iter().filter(|f| f.size < below).filter_map(FlowResult::slowdown).collect();
    sd.sort_by(f64::total_cmp);
    sd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_quantiles_are_bucket_upper_edges() {
        // 10 packets left an empty queue, 5 left 3–4 KB, 5 left 9–10 KB.
        let mut h = vec![0u64; 10];
        h[0] = 10;
        h[3] = 5;
        h[9] = 5;
        assert_eq!(queue_quantile(&h, 0.5), Some(1_000));
        assert_eq!(queue_quantile(&h, 0.75), Some(4_000));
        assert_eq!(queue_quantile(&h, 0.99), Some(10_000));
        assert_eq!(queue_quantile(&h, 0.0), Some(1_000));
        assert_eq!(queue_quantile(&[], 0.5), None);
        assert_eq!(queue_quantile(&[0, 0], 0.5), None);
    }
}
