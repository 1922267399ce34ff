//! µFAB's goals measured from a lab run (seed `003` §3.1, §5.2, §5.4): per VM-pair (flow) the
//! time to reach its guarantee and the bandwidth it fell short by, the **dissatisfaction ratio**
//! (Figure 11d: the minimum-bandwidth violation over the total volume), the in-flight bytes on
//! every link against the §3.4 bound of 3 C_l·T_max, the probes' share of the bandwidth (§5.4),
//! and after a switch failure how long each moved pair took to be back at its guarantee.
//!
//! A VM-pair is a flow, or with `[[flow]] paths` > 1 the flows of its underlay paths (Appendix
//! F), whose bytes are summed: its guarantee is the VM-pair's, not a path's.
//!
//! Bandwidth is the pair's frames on the wire — delivered payload × data frame / payload, the
//! headers and labels counted — as a link guarantee is (C_l and tx_l are wire rates; B_u is
//! what a token gives on a link). A pair counts from its start until its last byte is
//! acknowledged (or the run ends); its rate is taken over windows of `window_ns`.

use super::config::LabConfig;
use super::engine::LabResult;

/// One VM-pair's goals.
#[derive(Debug, Clone, PartialEq)]
pub struct PairGoal {
    /// Flow (the first of the VM-pair's flows).
    pub flow: usize,
    /// Its underlay paths: flows (Appendix F).
    pub paths: usize,
    /// Source host.
    pub src: usize,
    /// Destination host.
    pub dst: usize,
    /// Its guarantee, b/s.
    pub guarantee_bps: u64,
    /// Its start, ns.
    pub start_ns: u64,
    /// From its start until a sample window first carried its guarantee, ns (`None`: never).
    pub reached_ns: Option<u64>,
    /// Its mean bandwidth (wire), b/s.
    pub mean_bps: f64,
    /// Its lowest window's bandwidth after it reached its guarantee, b/s.
    pub min_after_bps: f64,
    /// Wire bytes it sent, as delivered.
    pub bytes: f64,
    /// Bytes short of its guarantee over its windows.
    pub short_bytes: f64,
}

/// A pair moved off a failed switch, and how long it took to be back at its guarantee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// Flow (the first of its VM-pair's flows).
    pub flow: usize,
    /// The failure, ns.
    pub failed_at: u64,
    /// From the failure until a window carried its guarantee again, ns (`None`: never).
    pub back_after_ns: Option<u64>,
}

/// A run's µFAB goals.
#[derive(Debug, Clone, PartialEq)]
pub struct UfabReport {
    /// Rate window, ns.
    pub window_ns: u64,
    /// Per pair.
    pub pairs: Vec<PairGoal>,
    /// Σ short / Σ bytes.
    pub dissatisfaction: f64,
    /// The most in flight on a link at any sample — its queue and what its wire holds — over
    /// C_l·T_max (C_l = η × its rate, T_max the fabric's largest base RTT): the §3.4 bound is 3.
    pub max_inflight_bdp: f64,
    /// Probe bytes over probe and data bytes, at the senders.
    pub probe_overhead: f64,
    /// Pairs moved by a failure.
    pub recoveries: Vec<Recovery>,
    /// RTT percentiles (50th, 99th, largest), µs, with `[lab] rtt_samples`.
    pub rtt_us: Option<(u64, u64, u64)>,
}

/// Measure `r`, a run of `cfg`, with rate windows of `window_ns` (at least the sample period).
pub fn report(cfg: &LabConfig, r: &LabResult, window_ns: u64) -> UfabReport {
    let window_ns = window_ns.max(cfg.sample_ns);
    let wire = r.data_frame_len as f64 / cfg.mtu.max(1) as f64;
    let end = r.simulated_ns;
    let mut by_flow: Vec<Vec<(u64, u64)>> = vec![Vec::new(); cfg.flows.len()];
    for s in &r.rates {
        if let Some(v) = by_flow.get_mut(s.flow) {
            v.push((s.time_ns, s.rx_bytes));
        }
    }
    // The VM-pairs: each its flows, the first one first.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of = vec![0; cfg.flows.len()];
    for (i, lead) in cfg.vm_pair_leaders().into_iter().enumerate() {
        if lead == i {
            group_of[i] = groups.len();
            groups.push(vec![i]);
        } else {
            group_of[i] = group_of[lead];
            groups[group_of[lead]].push(i);
        }
    }
    let series: Vec<Vec<(u64, u64)>> = groups.iter().map(|m| summed(m, &by_flow)).collect();
    let mut pairs = Vec::new();
    let (mut short, mut total) = (0.0, 0.0);
    for (gi, m) in groups.iter().enumerate() {
        let (i, f) = (m[0], &cfg.flows[m[0]]);
        let g = f.guarantee_bps.unwrap_or(cfg.ufab.guarantee_bps);
        // Until its last path's last byte is acknowledged.
        let until = m
            .iter()
            .map(|&j| r.flows.get(j).and_then(|x| x.fct_ns).map_or(end, |fct| cfg.flows[j].start_ns + fct))
            .max()
            .unwrap_or(end);
        let s: Vec<(u64, u64)> =
            series[gi].iter().copied().filter(|&(t, _)| t >= f.start_ns && t <= until).collect();
        // Time to the guarantee, at the sample period's resolution.
        let reached = s.windows(2).find(|w| rate(w[0], w[1], wire) >= g as f64).map(|w| w[1].0 - f.start_ns);
        let mut pts = Vec::new();
        for &p in &s {
            if pts.last().is_none_or(|&(t, _): &(u64, u64)| p.0 >= t + window_ns) {
                pts.push(p);
            }
        }
        let (mut b, mut sh, mut min_after) = (0.0, 0.0, f64::INFINITY);
        for w in pts.windows(2) {
            let dt = (w[1].0 - w[0].0) as f64 * 1e-9;
            let r_bps = rate(w[0], w[1], wire);
            b += r_bps * dt / 8.0;
            sh += (g as f64 - r_bps).max(0.0) * dt / 8.0;
            if reached.is_some_and(|x| w[0].0 >= f.start_ns + x) {
                min_after = min_after.min(r_bps);
            }
        }
        let span = pts.last().zip(pts.first()).map_or(0.0, |(l, f0)| (l.0 - f0.0) as f64 * 1e-9);
        short += sh;
        total += b;
        pairs.push(PairGoal {
            flow: i,
            paths: m.len(),
            src: f.src,
            dst: f.dst,
            guarantee_bps: g,
            start_ns: f.start_ns,
            reached_ns: reached,
            mean_bps: if span > 0.0 { b * 8.0 / span } else { 0.0 },
            min_after_bps: if min_after.is_finite() { min_after } else { 0.0 },
            bytes: b,
            short_bytes: sh,
        });
    }
    // In flight per link: the egress queue and the wire's bandwidth-delay product.
    let w = cfg.topology.wiring();
    let t_max = r.base_rtt_ns.max(1) as f64 * 1e-9;
    let mut max_inflight: f64 = 0.0;
    for q in &r.queues {
        let Some(end) = w.switch_ports.get(q.switch).and_then(|p| p.get(usize::from(q.port))) else {
            continue;
        };
        let l = &cfg.topology.links[end.link];
        let rate = l.rate_bps as f64;
        let on_wire = rate * l.delay_ns as f64 * 1e-9 / 8.0;
        let bdp = cfg.hpcc.eta.clamp(0.5, 1.0) * rate * t_max / 8.0;
        max_inflight = max_inflight.max((q.bytes as f64 + on_wire) / bdp);
    }
    let sum = |name: &str| -> u64 {
        r.agents.iter().flat_map(|a| a.counters.iter()).filter(|(k, _)| k == name).map(|(_, v)| v).sum()
    };
    let (probes, data) = (sum("ufab_probe_bytes_tx"), sum("ufab_data_bytes_tx"));
    let probe_overhead = if probes + data > 0 { probes as f64 / (probes + data) as f64 } else { 0.0 };
    let mut recoveries = Vec::new();
    for &(_, at) in &cfg.failures {
        for &(t, flow, _, why) in &r.ufab_moves {
            let Some(&gi) = group_of.get(flow as usize) else { continue };
            let i = groups[gi][0];
            if why == "failed" && t >= at && !recoveries.iter().any(|x: &Recovery| x.flow == i) {
                let g = pairs.get(gi).map_or(0, |p| p.guarantee_bps) as f64;
                let back = series[gi]
                    .windows(2)
                    .filter(|x| x[0].0 >= t)
                    .find(|x| rate(x[0], x[1], wire) >= g)
                    .map(|x| x[1].0 - at);
                recoveries.push(Recovery { flow: i, failed_at: at, back_after_ns: back });
            }
        }
    }
    let rtt_us = {
        let n: u64 = r.rtt_hist.iter().sum();
        let at = |q: f64| {
            let want = ((n as f64 * q).ceil() as u64).max(1);
            let mut seen = 0;
            r.rtt_hist.iter().position(|&c| {
                seen += c;
                seen >= want
            })
        };
        let max = r.rtt_hist.iter().rposition(|&c| c > 0);
        (n > 0).then(|| (at(0.5).unwrap_or(0) as u64, at(0.99).unwrap_or(0) as u64, max.unwrap_or(0) as u64))
    };
    UfabReport {
        rtt_us,
        window_ns,
        pairs,
        dissatisfaction: if total > 0.0 { short / total } else { 0.0 },
        max_inflight_bdp: max_inflight,
        probe_overhead,
        recoveries,
    }
}

/// The delivered bytes of `flows` summed, at every time any of them was sampled: each flow's
/// last sample at or before that time (a finished path keeps its total).
fn summed(flows: &[usize], by_flow: &[Vec<(u64, u64)>]) -> Vec<(u64, u64)> {
    if let [one] = flows {
        return by_flow[*one].clone();
    }
    let mut times: Vec<u64> = flows.iter().flat_map(|&f| by_flow[f].iter().map(|s| s.0)).collect();
    times.sort_unstable();
    times.dedup();
    let mut at = vec![0usize; flows.len()];
    times
        .into_iter()
        .map(|t| {
            let mut sum = 0;
            for (k, &f) in flows.iter().enumerate() {
                let v = &by_flow[f];
                while at[k] < v.len() && v[at[k]].0 <= t {
                    at[k] += 1;
                }
                sum += at[k].checked_sub(1).map_or(0, |j| v[j].1);
            }
            (t, sum)
        })
        .collect()
}

/// The wire rate between two samples of delivered payload, b/s.
fn rate(a: (u64, u64), b: (u64, u64), wire: f64) -> f64 {
    let dt = b.0.saturating_sub(a.0).max(1) as f64 * 1e-9;
    b.1.saturating_sub(a.1) as f64 * 8.0 * wire / dt
}

impl UfabReport {
    /// `ufab.csv`: one row per pair.
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "flow,paths,src,dst,guarantee_bps,start_ns,reached_ns,mean_bps,min_after_bps,bytes,short_bytes\n",
        );
        for p in &self.pairs {
            s.push_str(&format!(
                "{},{},{},{},{},{},{},{:.0},{:.0},{:.0},{:.0}\n",
                p.flow,
                p.paths,
                p.src,
                p.dst,
                p.guarantee_bps,
                p.start_ns,
                p.reached_ns.map_or("-".to_string(), |x| x.to_string()),
                p.mean_bps,
                p.min_after_bps,
                p.bytes,
                p.short_bytes
            ));
        }
        s
    }

    /// The goals, for people.
    pub fn summary(&self) -> String {
        let reached: Vec<u64> = self.pairs.iter().filter_map(|p| p.reached_ns).collect();
        let never = self.pairs.len() - reached.len();
        let mut s = format!(
            "guarantees: dissatisfaction {:.3} % of the volume ({} µs windows); guarantee reached by {}/{} pairs, \
             slowest after {:.0} µs; in flight ≤ {:.2} × C·T_max (bound 3); probes {:.2} % of the bytes\n",
            self.dissatisfaction * 100.0,
            self.window_ns / 1000,
            reached.len(),
            self.pairs.len(),
            reached.iter().max().copied().unwrap_or(0) as f64 / 1e3,
            self.max_inflight_bdp,
            self.probe_overhead * 100.0,
        );
        if let Some((p50, p99, max)) = self.rtt_us {
            s.push_str(&format!("guarantees: RTT p50 {p50} µs, p99 {p99} µs, max {max} µs\n"));
        }
        if never > 0 {
            s.push_str(&format!("guarantees: {never} pair(s) never reached their guarantee\n"));
        }
        for r in &self.recoveries {
            s.push_str(&format!(
                "guarantees: flow {} moved off the failure at {} µs, back at its guarantee after {}\n",
                r.flow,
                r.failed_at / 1000,
                r.back_after_ns.map_or("never".to_string(), |x| format!("{:.0} µs", x as f64 / 1e3))
            ));
        }
        s
    }
}
