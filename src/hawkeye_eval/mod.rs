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
//!                               #   out_of_loop_deadlock_contention, out_of_loop_deadlock_injection),
//!                               #   or "no_anomaly": background alone, no [anomaly] table, every
//!                               #   diagnosis of the whole run a false positive
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
//! # receiver = 5                #   pinned placements: the incast's receiver, its senders
//! # sender_hosts = [8, 9, 12]   #   (else drawn per trace), a victim flow added to the
//! # victim = { src = 0, dst = 5, size = 20000000 }   # background
//! # kind = "pfc_storm"          # a host drawn per trace (or `storm_host`) injects PAUSE from
//! # stop_us = 1500              #   start_us to stop_us every `interval_us` (default 10) while
//! # interval_us = 10            #   the others send to it (`senders` flows of `size`)
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
//! Scenarios are written by hand (`config/labs/hawkeye/`) or drawn by [`generate`] over topology
//! families, sizes, buffers, loads and epochs: develop on seeds below 10^6, report from 10^9 up.
//! The base lab may be any topology the lab builds; placements are drawn from its links.
//!
//! Scoring (the paper's definition of a true positive: the right anomaly **and** its root
//! cause): every diagnosis of every incident that opens in a trace's window counts — right, or
//! wrong (another anomaly or another root cause: false positives, background anomalies
//! included); an "undiagnosed: why" result and a "no anomaly" result (congestion that is no
//! anomaly, [`collector::hawkeye::diagnose::NO_ANOMALY_RULE`]) report nothing and are counted
//! apart; precision strict = right / (right + wrong), recall = traces with a right diagnosis /
//! traces. A diagnosis naming a host other than the one that sent PAUSE is counted
//! ([`Score::innocent_hosts`]) whatever its verdict. Two readings of
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

use collector::hawkeye::{self, Topology};

use crate::lab;

pub mod generate;
pub mod plot;
mod run;
mod scenario;
mod score;
mod tables;

pub use run::{Results, eval, eval_with, sweep};
pub use scenario::{Injected, Scenario, Trace};
pub use score::Score;
pub use tables::{class_summary, sweep_tables, tables};

/// The analyzer variants scored.
pub const VARIANTS: [&str; 5] = ["hawkeye", "full_polling", "victim_only", "port_only", "flow_only"];

/// Bytes a polling packet takes on a link: the 19-byte header in a minimum Ethernet frame
/// (60 bytes and the 4-byte FCS).
pub const POLLING_FRAME_BYTES: u64 = 64;
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

/// What an evaluation stopped by SIGINT/SIGTERM returns as its error (the binary exits 1).
pub const INTERRUPTED: &str = "interrupted by a signal: no results";

/// The most traces of a scenario one evaluation runs.
pub const MAX_TRACES: u64 = 100_000;
