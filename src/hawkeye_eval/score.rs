//! Scoring one trace: every diagnosis of every incident in its window, right or wrong, per
//! analyzer variant, with the overheads of what was collected.

use collector::hawkeye::{self, Anomaly, Params, PortId, RootCause, Topology};
use wire::hawkeye::report::{self, Entry};

use super::{INTERRUPTED, Injected, POLLING_FRAME_BYTES, Scenario, VARIANTS, analyzer_input};
use crate::lab;

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
    /// The wrong diagnoses by the anomaly they claimed, in [`Anomaly::ALL`]'s order (in a
    /// `no_anomaly` scenario every claim is wrong: storm, deadlock and injection claims must be
    /// none; incast and contention claims are its false-positive rate).
    pub claims: [u32; 6],
    /// Results that found congestion that is no anomaly ([`hawkeye::Diagnosis::no_anomaly`]):
    /// no finding, so no false positive — counted apart.
    pub no_anomaly: u32,
    /// Traces with at least one wrong diagnosis.
    pub traces_with_wrong: u32,
    /// Diagnoses naming a host as a PFC source that sent no PAUSE (in these scenarios only the
    /// storming host sends any): must be 0.
    pub innocent_hosts: u32,
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
    /// Storm, deadlock and host-injection claims among the wrong diagnoses (a `no_anomaly`
    /// scenario must have none).
    pub fn pfc_claims(&self) -> u32 {
        Anomaly::ALL
            .iter()
            .zip(self.claims)
            .filter(|(a, _)| !matches!(a, Anomaly::MicroBurstIncast | Anomaly::FlowContention))
            .map(|x| x.1)
            .sum()
    }
    /// Wrong diagnoses per trace (a `no_anomaly` scenario's false-positive rate).
    pub fn wrong_per_trace(&self) -> f64 {
        if self.traces == 0 { 0.0 } else { f64::from(self.wrong) / f64::from(self.traces) }
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

    pub(super) fn add(&mut self, o: Score) {
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
        for (a, b) in self.claims.iter_mut().zip(o.claims) {
            *a += b;
        }
        self.no_anomaly += o.no_anomaly;
        self.traces_with_wrong += o.traces_with_wrong;
        self.innocent_hosts += o.innocent_hosts;
    }
}

impl Scenario {
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
                (Some(b), Some(f)) if at < f => std::iter::once(b).chain(self.class).collect(),
                (Some(b), None) => vec![b],
                _ => self.class.into_iter().collect(),
            }
        };
        // The incidents scored: those opening within the window after the injection; in a
        // `no_anomaly` scenario, the whole run's.
        let span = if self.class.is_none() { r.simulated_ns.max(1) } else { self.window_ns };
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
            Injected::Flows(_) | Injected::Nothing => None,
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
                .filter(|r| t_in(r.t_ns, t.start_ns, span))
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
                let polls_in = polls.iter().filter(|p| t_in(p.t_ns, t.start_ns, span)).count();
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
                    if let Some(RootCause::Host { host: Some((h, _)), .. }) = &d.root_cause
                        && Some(*h as usize) != storm_host
                    {
                        s.innocent_hosts += 1;
                    }
                    let verdict = if right(d, inc.t_ns) {
                        s.right += 1;
                        "right"
                    } else if d.no_anomaly.is_some() {
                        s.no_anomaly += 1;
                        "no anomaly"
                    } else if d.anomaly.is_none() {
                        s.undiagnosed += 1;
                        "undiagnosed"
                    } else {
                        s.wrong += 1;
                        if let Some(k) = Anomaly::ALL.iter().position(|a| Some(*a) == d.anomaly) {
                            s.claims[k] += 1;
                        }
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
            s.traces_with_wrong = u32::from(s.wrong > 0);
            out[vi] = s;
        }
        Ok(out)
    }
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
