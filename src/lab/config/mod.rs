//! A lab file (`config/labs/<name>.toml`): topology, congestion control, workload, outputs.
//!
//! ```toml
//! [lab]
//! seed = 1
//! duration_us = 400          # virtual time simulated
//! cc = "hpcc"                # or "dcqcn", or "ufab" (µFAB: switches run program "ufab",
//!                            #   hosts µFAB-E; see [ufab])
//! mtu = 1000                 # payload bytes per data packet
//! sample_ns = 1000           # queue, link and flow-rate sampling period
//! # run_to_completion_us = 0 # after duration_us, run on until every flow is acknowledged,
//!                            #   at most this much longer (0: stop at duration_us and report
//!                            #   the unfinished flows, as the reference's fct_analysis does)
//! # ack_high_priority = false # ACKs and CNPs in a priority of their own (default: false for
//!                            #   HPCC++, true for DCQCN, the reference's ACK_HIGH_PRIO)
//! # no_cc_hosts = [4, 5]     # hosts whose flows send at line rate without CC (the
//!                            #   reference's NO_CC_NODE: burst senders, deadlock loops)
//! # rtt_samples = false      # every RC sender's per-ACK RTT in rtt_hist.csv (1 µs buckets)
//!
//! [topology]
//! kind = "star"              # star | dumbbell | leaf_spine | fat_tree | pods | explicit
//! hosts = 17                 # star, dumbbell, explicit
//! # leaves = 4, spines = 2, hosts_per_leaf = 8    (leaf_spine)
//! # k = 4                                         (fat_tree: k³/4 hosts)
//! # pods = 5, tors_per_pod = 4, aggs_per_pod = 4, cores = 16, hosts_per_tor = 16
//! #                          (pods: every ToR to every Agg of its pod, Agg j to cores
//! #                           j·cores/aggs_per_pod.., as the HPCC simulator's mix/fat.txt)
//! # switches = 3                                  (explicit, with [[link]] tables)
//! rate = "100G"              # host links
//! fabric_rate = "100G"       # switch–switch links (default: rate)
//! # core_rate = "400G"       # pods: aggregation–core links (default: fabric_rate)
//! delay_ns = 1000            # propagation delay of every link
//! buffer_bytes = 33554432    # per switch (default: the reference's 16·bw/50 MB)
//!
//! [[link]]                   # kind = "explicit" only: a host–switch or switch–switch link
//! a = "h0"
//! b = "s0"
//! rate = "100G"              # default: topology.rate
//! delay_ns = 1000            # default: topology.delay_ns
//!
//! [hpcc]                     # optional
//! eta = 0.95
//! max_stage = 0
//! # w_ai_bytes = 80          # W_ai; default: W_init·(1−η)/N for N flows into one host, or
//! # ai_rate = "40M"          # W_ai = ai_rate·T (default with [[poisson]]: 10·bw/25 Mb/s)
//! # int = "full"             # INT hops: "full" (16 B each, slots for the longest path) or
//!                            #   "compact" (8 B each, 5 slots: 44 B, the reference's 42 B size)
//!
//! [dcqcn]                    # optional; defaults: the reference's run.py `dcqcn` (Mellanox)
//! clamp_target_rate = false  # clamp Rt at every cut (true) or only after an increase (false)
//! min_rate = "1G"            # R_min (run.py MIN_RATE)
//! # ai_rate = "20G"          # R_AI, default 5·bw/25 Mb/s; hai_rate, default 50·bw/25 Mb/s
//! # g = 0.00390625           # α gain, 1/256
//! # t_alpha_us = 1           # α period; t_dec_us = 4 (decrease check); t_inc_us = 300 (RP timer)
//! # fast_recovery_stages = 1
//!
//! [[incast]]                 # `senders` hosts each send `size` bytes to `dst` at `start_ns`
//! senders = [1, 2, 3]
//! dst = 0
//! size = 500000
//! start_ns = 10000
//! # repeat = 1               # synchronized burst groups: the same burst `repeat` times,
//! # period_ns = 100000       #   one every `period_ns`
//!
//! [[flow]]                   # one flow
//! src = 1
//! dst = 0
//! size = 1000000
//! start_ns = 0
//! # guarantee = "2G"         # µFAB: the flow is a VF of one VM-pair with this guarantee
//! # class = 0                #   (default [ufab] guarantee), in weighted queue `class` (0..8)
//! # paths = 1                # µFAB: the VM-pair's underlay paths (Appendix F): the tenant
//!                            #   spreads it over this many connections, size/paths each
//!
//! [ufab]                     # optional, cc = "ufab": µFAB-E's settings
//! b_u = "100M"               # B_u, bandwidth per token
//! guarantee = "1G"           # a flow's guarantee unless it names one
//! candidates = 4             # candidate paths per pair (of the shortest paths)
//! l_w = 4096                 # data bytes between probes
//! no_reordering = false      # probe only in the first RTT on a new path
//! freeze_rtts = 10           # one migration per [1, N] RTTs per host
//! look_every_us = 1000       # look at another candidate this often (0: never)
//! better_for_us = 30000000   # trigger (ii): a better path for this long
//! token_period_ns = 32000    # Algorithm 1's period
//! idle_finish_us = 10000     # an idle pair finishes its path
//! weights = [1, 2, 5, 10, 20, 50, 100, 200]  # the 8 weighted VF queues (a flow's class)
//! paths = 1                  # underlay paths per VM-pair of the [[flow]]s that name none (App. F;
//!                            #   `lab run --paths K` splits every one-path flow, incasts and
//!                            #   Poisson arrivals too)
//!
//! [[failure]]                # optional: switch 8 fails at 90 ms (drops every frame, counted;
//! switch = 8                 #   its neighbours' ports to it go down: `port down PORT`, and
//!                            #   `ufab fail PORT` on ufab switches)
//! at_ns = 90000000
//!
//! [switches]                 # optional: every switch's program (default "l2l3", from the
//! program = "l2l3"           #   dataplane registry) and sections of its own appended to the
//! sections = ""              #   configuration the lab writes (ports, TM, and [l2l3] for
//!                            #   programs built on it)
//!
//! [[switch]]                 # optional: one switch's program and sections (default: as
//! id = 0                     #   [switches]), and static route overrides: the route to a
//! program = "macswap"        #   host's subnet only via one neighbouring switch
//! # route = [{ host = 5, via = 2 }]
//!
//! [[host]]                   # optional: hosts running another agent than RC flows
//! ids = [0, 1]
//! agent = "dta_reporter"     # "rc" (the default), "dta_reporter", "dta_collector", "pfc_storm"
//! to = ["10.0.2.2"]          # dta_reporter: the collectors (host h is 10.h/256.h%256.2)
//! primitive = "keywrite"     #   keywrite, keyincrement, append or postcarder
//! count = 10000              #   reports; rate = reports/s (0: line rate); keys, redundancy,
//!                            #   lists, start_ns as `dataplane report`
//! # config = "..."           # dta_collector: its configuration (collector.toml's stores);
//!                            #   [collector] ip is the host's address
//! # agent = "pfc_storm"      # a host injecting PFC PAUSE into its switch (priority = 3,
//!                            #   quanta = 65535, start_ns, stop_ns, interval_ns = 10000) while
//!                            #   its NIC runs RC flows as "rc" hosts do
//!
//! [hawkeye]                  # optional: Hawkeye's detection agent on every RC host
//! detect = true              # poll for a flow whose RTT exceeds rtt_factor × its base RTT
//! rtt_factor = 3.0           #   (base_rtt_ns, default: the flow's smallest sample), at most
//! min_interval_us = 3000     #   once per min_interval_us; switches run program "hawkeye"
//!                            #   ([switches] program) to trace and report
//! full_polling = false       # also snapshot every port of every switch at each poll (reports
//!                            #   flagged 00: the paper's full-polling baseline)
//!
//! [[poisson]]                # Poisson arrivals at `load` of every sender's link rate
//! cdf = "websearch"          # "websearch", "fb_hadoop", or a CDF file (relative to this file)
//! load = 0.5
//! hosts = [0, 1, 2]          # senders and receivers (default: every host)
//! start_ns = 0               # default 0
//! stop_ns = 2000000          # last arrival before this (default: the duration)
//! ```
//!
//! Errors name the file, the line and the reason; the binary exits with code 2 on them.

use std::path::{Path, PathBuf};

use dataplane::config::parse_rate;
use serde::Deserialize;

use super::topology::{Link, Node, Topology};
use super::workload::{self, Cdf, FB_HADOOP, WEBSEARCH};

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
    /// µFAB: the informative core (switch program `ufab`) and the active edge (µFAB-E on every
    /// host): per-flow guarantees, source-routed paths, windows from probes.
    Ufab,
}

impl Cc {
    /// Every CC, in the order `lab compare` runs them.
    pub const ALL: [Cc; 3] = [Cc::Hpcc, Cc::Dcqcn, Cc::Ufab];
    /// What `parse` accepts, for error messages.
    pub const EXPECTED: &str = "expected \"hpcc\", \"dcqcn\" or \"ufab\"";

    /// `hpcc`, `dcqcn` or `ufab`, as lab files and `--cc` spell it.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|cc| cc.name() == name)
    }

    /// The name lab files use (and `lab compare` names its directories by).
    pub fn name(self) -> &'static str {
        match self {
            Cc::Hpcc => "hpcc",
            Cc::Dcqcn => "dcqcn",
            Cc::Ufab => "ufab",
        }
    }

    /// The name for people: plots and tables.
    pub fn label(self) -> &'static str {
        match self {
            Cc::Hpcc => "HPCC++",
            Cc::Dcqcn => "DCQCN",
            Cc::Ufab => "µFAB",
        }
    }
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
    /// µFAB: the flow's guarantee (a VF of one VM-pair), b/s; `None`: `[ufab] guarantee`.
    pub guarantee_bps: Option<u64>,
    /// µFAB: its VF's weighted queue (0..8).
    pub class: u8,
    /// µFAB: the VM-pair this flow is one path of (Appendix F), the `[[flow]]` it came from
    /// (`paths` > 1 splits one into that many flows); `None`: a VM-pair of its own, one path.
    pub vm_pair: Option<u32>,
}

/// µFAB's settings of a run (`[ufab]`; used when `cc = "ufab"`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UfabParams {
    /// B_u: bandwidth per token, b/s.
    pub b_u_bps: f64,
    /// The guarantee of a flow that names none, b/s.
    pub guarantee_bps: u64,
    /// Candidate paths per pair (every shortest path if fewer).
    pub candidates: usize,
    /// L_w: data bytes between two probes.
    pub l_w: u64,
    /// Probe only, no data, in the first RTT on a new path.
    pub no_reordering: bool,
    /// N of the freeze window [1, N] RTTs.
    pub freeze_rtts: u32,
    /// How often a pair looks at another candidate, ns (0: never).
    pub look_every_ns: u64,
    /// Trigger (ii): how long a better path must stay better, ns.
    pub better_for_ns: u64,
    /// How often Algorithm 1 runs, ns.
    pub token_period_ns: u64,
    /// An idle pair finishes its path after this long, ns.
    pub idle_finish_ns: u64,
    /// The weights of the sender's 8 weighted VF queues (a flow's `class` picks one).
    pub weights: [u64; 8],
}

impl Default for UfabParams {
    fn default() -> Self {
        Self {
            b_u_bps: 100e6,
            guarantee_bps: 1_000_000_000,
            candidates: 4,
            l_w: 4096,
            no_reordering: false,
            freeze_rtts: 10,
            look_every_ns: 1_000_000,
            better_for_ns: 30_000_000_000,
            token_period_ns: 32_000,
            idle_finish_ns: 10_000_000,
            // A 1-2-5 series: a VF picks the level of its guarantee (the paper's 1, 2 and
            // 5 Gb/s VFs are classes 0, 1 and 2).
            weights: [1, 2, 5, 10, 20, 50, 100, 200],
        }
    }
}

/// HPCC++ parameters of a run (the rest from the topology: line rate and base RTT).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HpccParams {
    /// η.
    pub eta: f64,
    /// maxStage.
    pub max_stage: u32,
    /// W_ai, bytes; `None`: from `ai_rate_bps`, else `W_init·(1 − η)/flows`.
    pub w_ai_bytes: Option<f64>,
    /// The additive increase as a rate (the reference's RATE_AI): `W_ai = ai_rate·T`. Default
    /// for labs with Poisson workloads, where the number of concurrent flows is not known:
    /// the reference's `10·bw/25` Mb/s.
    pub ai_rate_bps: Option<f64>,
    /// INT hops in 8-byte compact slots, 5 of them as the reference's fixed 42-byte header
    /// (ours: 44 B), rather than our 16-byte ones sized to the longest path
    /// (`wire::hpcc_int`).
    pub int_compact: bool,
}

/// DCQCN parameters of a run, as given in the lab file's `[dcqcn]` (each `None`: the
/// reference's default for the sender's line rate, [`nic_agent::dcqcn::DcqcnConfig::mellanox`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DcqcnParams {
    /// Clamp the target rate at every cut.
    pub clamp_target_rate: Option<bool>,
    /// R_min, bits per second.
    pub min_rate_bps: Option<u64>,
    /// R_AI, bits per second.
    pub ai_rate_bps: Option<u64>,
    /// R_HAI, bits per second.
    pub hai_rate_bps: Option<u64>,
    /// α gain.
    pub g: Option<f64>,
    /// α period, ns.
    pub t_alpha_ns: Option<u64>,
    /// Decrease check period, ns.
    pub t_dec_ns: Option<u64>,
    /// RP timer, ns.
    pub t_inc_ns: Option<u64>,
    /// Fast-recovery stages F.
    pub fast_recovery_stages: Option<u32>,
}

impl DcqcnParams {
    /// The reaction point's configuration for a sender at `line_rate_bps`.
    pub fn config(&self, line_rate_bps: u64) -> nic_agent::dcqcn::DcqcnConfig {
        let d = nic_agent::dcqcn::DcqcnConfig::mellanox(line_rate_bps);
        nic_agent::dcqcn::DcqcnConfig {
            line_rate_bps,
            min_rate_bps: self.min_rate_bps.unwrap_or(d.min_rate_bps).min(line_rate_bps),
            g: self.g.unwrap_or(d.g),
            t_alpha_ns: self.t_alpha_ns.unwrap_or(d.t_alpha_ns),
            t_dec_ns: self.t_dec_ns.unwrap_or(d.t_dec_ns),
            t_inc_ns: self.t_inc_ns.unwrap_or(d.t_inc_ns),
            fast_recovery_stages: self.fast_recovery_stages.unwrap_or(d.fast_recovery_stages),
            ai_bps: self.ai_rate_bps.unwrap_or(d.ai_bps),
            hai_bps: self.hai_rate_bps.unwrap_or(d.hai_bps),
            clamp_target_rate: self.clamp_target_rate.unwrap_or(d.clamp_target_rate),
        }
    }
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
    /// After `duration_ns`, run on until every flow is acknowledged, at most this long (ns;
    /// 0: stop at `duration_ns`).
    pub completion_ns: u64,
    /// Congestion control.
    pub cc: Cc,
    /// Payload bytes per data packet.
    pub mtu: usize,
    /// Queue sampling period, ns.
    pub sample_ns: u64,
    /// Acknowledgements and CNPs in their own priority, which PFC never pauses (`true`), or in
    /// the data's queue; `None`: the reference's default for the CC (`ACK_HIGH_PRIO` 0 for
    /// HPCC++, 1 for DCQCN) — [`LabConfig::ack_high_priority`].
    pub ack_high_priority: Option<bool>,
    /// Topology: hosts, switches, links.
    pub topology: Topology,
    /// Switch buffer, bytes.
    pub buffer_bytes: u64,
    /// HPCC++ parameters.
    pub hpcc: HpccParams,
    /// DCQCN's parameters (`[dcqcn]`).
    pub dcqcn: DcqcnParams,
    /// Flows, in start order.
    pub flows: Vec<FlowSpec>,
    /// Every switch's program, unless `switch_programs` names another.
    pub switches: SwitchProgram,
    /// `switches.program` is the CC's default (the file names none): `l2l3`, or `ufab` for
    /// µFAB — [`set_cc`](Self::set_cc) keeps it so.
    pub switches_defaulted: bool,
    /// Switches with a program of their own.
    pub switch_programs: Vec<(usize, SwitchProgram)>,
    /// Per host, its agent.
    pub host_agents: Vec<HostAgent>,
    /// Hawkeye's detection agent on every RC host (`[hawkeye]`), if on.
    pub hawkeye: Option<nic_agent::hawkeye::DetectorConfig>,
    /// `[hawkeye] full_polling`: at each agent's poll, every `hawkeye` switch also snapshots
    /// every port (reports flagged 00) — the paper's full-polling baseline, collected beside the
    /// traced reports of the same run (it sends nothing into the fabric).
    pub hawkeye_full_polling: bool,
    /// Hosts whose flows send at line rate with no congestion control (`[lab] no_cc_hosts`,
    /// the reference simulator's `NO_CC_NODE`: burst senders, deadlock loops).
    pub no_cc_hosts: Vec<usize>,
    /// µFAB's settings (`[ufab]`).
    pub ufab: UfabParams,
    /// `[lab] rtt_samples`: every RC sender's per-ACK RTT, histogrammed (`rtt_hist.csv`).
    pub rtt_samples: bool,
    /// Switches failing during the run: (switch, when, ns) — from then on it drops every frame,
    /// and its neighbours' ports towards it go down (`port down PORT`; and `ufab fail PORT` for
    /// `ufab`).
    pub failures: Vec<(usize, u64)>,
}

/// A switch's program (a `dataplane` registry name) and the sections of its own the lab appends
/// to the configuration it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchProgram {
    /// Registry name.
    pub program: String,
    /// TOML sections (`[dta]` …).
    pub sections: String,
    /// Static route overrides: the route to host `.0`'s subnet goes only via the neighbouring
    /// switch `.1` (to build cyclic buffer dependencies, i.e. real deadlocks).
    pub routes: Vec<(usize, usize)>,
}

/// What a host runs.
#[derive(Debug, Clone, PartialEq)]
pub enum HostAgent {
    /// RoCEv2 RC flows: the lab's flows, incasts and Poisson arrivals.
    Rc,
    /// A DTA reporter.
    DtaReporter(ReporterSpec),
    /// A DTA collector (soft-RNIC over its stores): its configuration's text.
    DtaCollector {
        /// The collector configuration (`[collector]` and the stores); its `ip` is the host's.
        config: String,
    },
    /// A host that injects PFC PAUSE frames into its switch (a "PFC storm", Hawkeye's host
    /// PFC injection): one every `interval_ns` from `start_ns` until `stop_ns`; its NIC runs
    /// RC flows as an `rc` host does.
    PfcStorm(PfcStormSpec),
}

/// A PFC storm: what a misbehaving NIC sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcStormSpec {
    /// The priority paused.
    pub priority: u8,
    /// Pause time of each frame, in 512-bit quanta.
    pub quanta: u16,
    /// First frame, ns.
    pub start_ns: u64,
    /// No frame at or after this, ns.
    pub stop_ns: u64,
    /// Between frames, ns.
    pub interval_ns: u64,
}

/// A DTA reporter host's stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ReporterSpec {
    /// Collectors.
    pub to: Vec<std::net::Ipv4Addr>,
    /// The stream.
    pub spec: roce::dta::LoadSpec,
    /// Reports.
    pub count: u64,
    /// Reports per second (0: as fast as the link).
    pub rate: u64,
    /// Start, ns.
    pub start_ns: u64,
}

/// The latest time a lab file may name, ns (1000 s of virtual time): every time is bounded
/// when it is read, so no sum or product of times overflows.
pub const MAX_TIME_NS: u64 = 1_000_000_000_000;
/// The most connections (VM-pair paths) one host sends under µFAB: its agent's work per event
/// grows with them (every pair is looked at), so a host of thousands runs for hours.
pub const MAX_UFAB_PAIRS_PER_HOST: usize = 256;
/// The most switches a lab builds.
pub const MAX_SWITCHES: usize = 4096;
/// The most flows a lab runs ([[flow]]s, incast senders × bursts and Poisson arrivals in all).
pub const MAX_FLOWS: usize = 1_000_000;
/// The most queue samples a run keeps (each switch port every `sample_ns`).
pub const MAX_SAMPLES: u64 = 20_000_000;
/// The longest link delay, ns (1 s).
pub const MAX_DELAY_NS: u64 = 1_000_000_000;

/// Deserializers that bound a time as it is read: the error carries the value's position, so
/// it names the key.
mod time {
    use serde::{Deserialize, Deserializer, de::Error};

    fn upto<'de, D: Deserializer<'de>>(d: D, max: u64, unit: &str) -> Result<u64, D::Error> {
        let v = u64::deserialize(d)?;
        if v > max { Err(D::Error::custom(format!("{v} {unit}: at most {max} {unit}"))) } else { Ok(v) }
    }

    pub fn ns<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        upto(d, super::MAX_TIME_NS, "ns")
    }

    pub fn us<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        upto(d, super::MAX_TIME_NS / 1000, "µs")
    }

    pub fn delay<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        upto(d, super::MAX_DELAY_NS, "ns")
    }

    pub fn opt_ns<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        ns(d).map(Some)
    }

    pub fn opt_us<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        us(d).map(Some)
    }

    pub fn opt_delay<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        delay(d).map(Some)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    lab: RawLab,
    topology: RawTopology,
    hpcc: Option<RawHpcc>,
    dcqcn: Option<RawDcqcn>,
    switches: Option<RawSwitchProgram>,
    #[serde(default)]
    switch: Vec<RawSwitch>,
    #[serde(default)]
    host: Vec<RawHost>,
    #[serde(default)]
    link: Vec<RawLink>,
    #[serde(default)]
    incast: Vec<RawIncast>,
    #[serde(default)]
    flow: Vec<RawFlow>,
    #[serde(default)]
    poisson: Vec<RawPoisson>,
    hawkeye: Option<RawHawkeye>,
    ufab: Option<RawUfab>,
    #[serde(default)]
    failure: Vec<RawFailure>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUfab {
    b_u: Option<String>,
    guarantee: Option<String>,
    candidates: Option<usize>,
    l_w: Option<u64>,
    no_reordering: Option<bool>,
    freeze_rtts: Option<u32>,
    #[serde(default, deserialize_with = "time::opt_us")]
    look_every_us: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    better_for_us: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    token_period_ns: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    idle_finish_us: Option<u64>,
    weights: Option<Vec<u64>>,
    paths: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFailure {
    switch: usize,
    #[serde(deserialize_with = "time::ns")]
    at_ns: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHawkeye {
    detect: Option<bool>,
    rtt_factor: Option<f64>,
    #[serde(default, deserialize_with = "time::opt_delay")]
    base_rtt_ns: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    min_interval_us: Option<u64>,
    full_polling: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitchProgram {
    program: Option<String>,
    sections: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    id: usize,
    program: Option<String>,
    sections: Option<String>,
    #[serde(default)]
    route: Vec<RawRouteOverride>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRouteOverride {
    host: usize,
    via: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHost {
    ids: Vec<usize>,
    agent: String,
    to: Option<Vec<String>>,
    primitive: Option<String>,
    count: Option<u64>,
    rate: Option<u64>,
    keys: Option<u32>,
    redundancy: Option<u8>,
    lists: Option<u32>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    start_ns: Option<u64>,
    config: Option<String>,
    priority: Option<u8>,
    quanta: Option<u16>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    stop_ns: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    interval_ns: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLab {
    seed: Option<u64>,
    #[serde(deserialize_with = "time::us")]
    duration_us: u64,
    cc: String,
    mtu: Option<usize>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    sample_ns: Option<u64>,
    ack_high_priority: Option<bool>,
    #[serde(default, deserialize_with = "time::opt_us")]
    run_to_completion_us: Option<u64>,
    no_cc_hosts: Option<Vec<usize>>,
    rtt_samples: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    kind: String,
    hosts: Option<usize>,
    switches: Option<usize>,
    leaves: Option<usize>,
    spines: Option<usize>,
    hosts_per_leaf: Option<usize>,
    k: Option<usize>,
    pods: Option<usize>,
    tors_per_pod: Option<usize>,
    aggs_per_pod: Option<usize>,
    cores: Option<usize>,
    hosts_per_tor: Option<usize>,
    rate: String,
    fabric_rate: Option<String>,
    core_rate: Option<String>,
    #[serde(deserialize_with = "time::delay")]
    delay_ns: u64,
    buffer_bytes: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    a: String,
    b: String,
    rate: Option<String>,
    #[serde(default, deserialize_with = "time::opt_delay")]
    delay_ns: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHpcc {
    eta: Option<f64>,
    max_stage: Option<u32>,
    w_ai_bytes: Option<f64>,
    ai_rate: Option<String>,
    int: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDcqcn {
    clamp_target_rate: Option<bool>,
    min_rate: Option<String>,
    ai_rate: Option<String>,
    hai_rate: Option<String>,
    g: Option<f64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    t_alpha_us: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    t_dec_us: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    t_inc_us: Option<u64>,
    fast_recovery_stages: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIncast {
    senders: Vec<usize>,
    dst: usize,
    size: u64,
    #[serde(deserialize_with = "time::ns")]
    start_ns: u64,
    repeat: Option<u32>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    period_ns: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    src: usize,
    dst: usize,
    size: u64,
    #[serde(deserialize_with = "time::ns")]
    start_ns: u64,
    guarantee: Option<String>,
    class: Option<u8>,
    paths: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPoisson {
    cdf: String,
    load: f64,
    hosts: Option<Vec<usize>>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    start_ns: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    stop_ns: Option<u64>,
}

/// Most underlay paths of one µFAB VM-pair (`[[flow]] paths`).
pub const MAX_PAIR_PATHS: u32 = 8;

/// `f` as the flows of a VM-pair of `paths` underlay paths (Appendix F), VM-pair `id`, into
/// `out`: the tenant spreads its bytes over one connection per path evenly (the first ones take
/// the remainder). One path: `f` itself.
fn split_paths(f: FlowSpec, paths: u32, id: u32, out: &mut Vec<FlowSpec>) -> Result<(), String> {
    check_pair_paths(paths)?;
    if u64::from(paths) > f.size {
        return Err(format!("{paths} underlay paths: at most one per byte"));
    }
    for k in 0..paths {
        let size = nic_agent::ufab::host::path_share(f.size, paths, k).1;
        out.push(FlowSpec { size, vm_pair: (paths > 1).then_some(id), ..f });
    }
    Ok(())
}

/// `paths` underlay paths per VM-pair are 1 to [`MAX_PAIR_PATHS`].
fn check_pair_paths(paths: u32) -> Result<(), String> {
    if (1..=MAX_PAIR_PATHS).contains(&paths) {
        Ok(())
    } else {
        Err(format!("1 to {MAX_PAIR_PATHS} underlay paths"))
    }
}

/// Largest flow (2^50 bytes, 1 PiB): the ideal FCT and the byte counters stay far from
/// overflow.
pub const MAX_FLOW_BYTES: u64 = 1 << 50;

/// Most hosts a lab may have (addresses are `10.h/256.h%256.2`).
pub const MAX_HOSTS: usize = 4096;
/// Most ports a lab switch may have.
pub const MAX_SWITCH_PORTS: usize = 255;

impl LabConfig {
    /// Read and check a lab file.
    pub fn load(path: &Path) -> Result<Self, LabError> {
        let text = ports::input::read_text(path, ports::input::MAX_TEXT_BYTES).map_err(|e| LabError {
            file: path.to_path_buf(),
            line: 0,
            key: "-".into(),
            reason: e.to_string(),
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
            let (line, key) = ports::input::toml_location(text, e.span());
            let key = if key.is_empty() { "-".into() } else { key };
            LabError { file: path.to_path_buf(), line, key, reason: e.message().trim_end().to_string() }
        })?;
        let cc = Cc::parse(&raw.lab.cc).ok_or_else(|| {
            err("lab", None, "cc", format!("unknown CC {:?}; {}", raw.lab.cc, Cc::EXPECTED))
        })?;
        let t = &raw.topology;
        let rate = |table: &str, i: Option<usize>, key: &str, v: &str| {
            // "0G" is a rate, just a useless one: say so rather than "not a rate".
            if v.trim().trim_end_matches(char::is_alphabetic).trim().parse::<f64>() == Ok(0.0) {
                return Err(err(table, i, key, "a link of zero rate carries nothing".into()));
            }
            parse_rate(v).ok_or_else(|| err(table, i, key, format!("{v:?} is not a rate like \"100G\"")))
        };
        let rate_bps = rate("topology", None, "rate", &t.rate)?;
        let fabric_bps = match &t.fabric_rate {
            Some(r) => rate("topology", None, "fabric_rate", r)?,
            None => rate_bps,
        };
        // Every count of a topology, bounded before anything is built of it.
        let need = |v: Option<usize>, key: &str, min: usize| match v {
            Some(n) if n > MAX_SWITCHES.max(MAX_HOSTS) => {
                Err(err("topology", None, key, format!("{n}: at most {}", MAX_SWITCHES.max(MAX_HOSTS))))
            }
            Some(n) if n >= min => Ok(n),
            Some(n) => Err(err("topology", None, key, format!("{n}: at least {min}"))),
            None => Err(err("topology", None, "kind", format!("kind {:?} needs `{key}`", t.kind))),
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
            return Err(err("topology", None, key, format!("{of} = {h} hosts: at most {MAX_HOSTS}")));
        }
        if let Some(n) = t.spines.filter(|&n| n > MAX_SWITCH_PORTS) {
            return Err(err("topology", None, "spines", format!("{n}: at most {MAX_SWITCH_PORTS}")));
        }
        if let Some(n) = t.leaves.filter(|&n| n > MAX_HOSTS) {
            return Err(err("topology", None, "leaves", format!("{n}: at most {MAX_HOSTS}")));
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
                    return Err(err("topology", None, "k", format!("{k}: a fat-tree's k is even")));
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
                    return Err(err(
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
                    return Err(err(
                        "topology",
                        None,
                        "pods",
                        format!("{pods} pods of {tors} ToRs: too many switches"),
                    ));
                }
                let core_bps = match &t.core_rate {
                    Some(r) => rate("topology", None, "core_rate", r)?,
                    None => fabric_bps,
                };
                Topology::pods(
                    pods,
                    tors,
                    aggs,
                    cores,
                    hosts_per_tor,
                    (rate_bps, fabric_bps, core_bps),
                    delay,
                )
            }
            "explicit" => {
                let mut links = Vec::with_capacity(raw.link.len());
                for (i, l) in raw.link.iter().enumerate() {
                    let end = |key: &str, v: &str| {
                        Node::parse(v).ok_or_else(|| {
                            err(
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
                            Some(r) => rate("link", Some(i), "rate", r)?,
                            None => rate_bps,
                        },
                        delay_ns: l.delay_ns.unwrap_or(delay),
                    });
                }
                Topology {
                    hosts: need(t.hosts, "hosts", 2)?,
                    switches: need(t.switches, "switches", 1)?,
                    links,
                }
            }
            other => {
                return Err(err(
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
            return Err(err("link", Some(0), "a", "[[link]] tables need topology kind \"explicit\"".into()));
        }
        if topology.hosts > MAX_HOSTS {
            return Err(err(
                "topology",
                None,
                "kind",
                format!("{} hosts: at most {MAX_HOSTS}", topology.hosts),
            ));
        }
        if let Err(e) = topology.check() {
            return Err(match e.link() {
                Some(i) if t.kind == "explicit" => err("link", Some(i), "a", e.to_string()),
                _ => {
                    err("topology", None, if t.kind == "explicit" { "hosts" } else { "kind" }, e.to_string())
                }
            });
        }
        let wiring = topology.wiring();
        if let Some((s, p)) = wiring.switch_ports.iter().enumerate().find(|(_, p)| p.len() > MAX_SWITCH_PORTS)
        {
            return Err(err(
                "topology",
                None,
                "kind",
                format!("switch {s} has {} ports: at most {MAX_SWITCH_PORTS}", p.len()),
            ));
        }
        let hosts = topology.hosts;
        let no_cc_hosts = raw.lab.no_cc_hosts.clone().unwrap_or_default();
        if let Some(&h) = no_cc_hosts.iter().find(|&&h| h >= hosts) {
            return Err(err("lab", None, "no_cc_hosts", format!("host {h}: the topology has {hosts} hosts")));
        }
        let mtu = raw.lab.mtu.unwrap_or(1000);
        if !(64..=1400).contains(&mtu) {
            return Err(err("lab", None, "mtu", format!("{mtu}: between 64 and 1400 bytes of payload")));
        }
        if raw.lab.duration_us == 0 {
            return Err(err("lab", None, "duration_us", "0: nothing to simulate".into()));
        }
        let duration_ns = raw.lab.duration_us * 1000;
        let completion_us = raw.lab.run_to_completion_us.unwrap_or(0);
        let completion_ns = completion_us * 1000;
        if duration_ns + completion_ns > MAX_TIME_NS {
            return Err(err(
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
        let h = raw.hpcc.as_ref();
        let hpcc = HpccParams {
            eta: h.and_then(|h| h.eta).unwrap_or(0.95),
            max_stage: h.and_then(|h| h.max_stage).unwrap_or(0),
            w_ai_bytes: h.and_then(|h| h.w_ai_bytes),
            ai_rate_bps: match h.and_then(|h| h.ai_rate.as_deref()) {
                Some(r) => Some(rate("hpcc", None, "ai_rate", r)? as f64),
                None if !raw.poisson.is_empty() => {
                    Some(10.0 * (rate_bps / 1_000_000_000) as f64 / 25.0 * 1e6)
                }
                None => None,
            },
            int_compact: match h.and_then(|h| h.int.as_deref()) {
                None | Some("full") => false,
                Some("compact") => true,
                Some(o) => return Err(err("hpcc", None, "int", format!("{o:?}: \"full\" or \"compact\""))),
            },
        };
        if !(hpcc.eta > 0.0 && hpcc.eta <= 1.0) {
            return Err(err("hpcc", None, "eta", format!("{}: in (0, 1]", hpcc.eta)));
        }
        if hpcc.max_stage > 1000 {
            return Err(err("hpcc", None, "max_stage", format!("{}: at most 1000", hpcc.max_stage)));
        }
        if let Some(w) = hpcc.w_ai_bytes.filter(|w| !(w.is_finite() && *w > 0.0 && *w <= 1e9)) {
            return Err(err("hpcc", None, "w_ai_bytes", format!("{w}: above 0, at most 10^9 bytes")));
        }
        let hawkeye = match raw.hawkeye.as_ref() {
            None => None,
            Some(h) if h.detect == Some(false) => None,
            Some(h) => {
                let d = nic_agent::hawkeye::DetectorConfig::default();
                let rtt_factor = h.rtt_factor.unwrap_or(d.rtt_factor);
                if !(rtt_factor > 1.0 && rtt_factor <= 1000.0) {
                    return Err(err(
                        "hawkeye",
                        None,
                        "rtt_factor",
                        format!("{rtt_factor}: above 1, at most 1000"),
                    ));
                }
                if h.base_rtt_ns.is_some_and(|b| b == 0 || b > 1_000_000_000) {
                    return Err(err("hawkeye", None, "base_rtt_ns", "1 ns to 1 s".into()));
                }
                let min_interval_ns = match h.min_interval_us {
                    None => d.min_interval_ns,
                    Some(us @ 1..=60_000_000) => us * 1000,
                    Some(us) => {
                        return Err(err("hawkeye", None, "min_interval_us", format!("{us}: 1 µs to 60 s")));
                    }
                };
                Some(nic_agent::hawkeye::DetectorConfig {
                    rtt_factor,
                    base_rtt_ns: h.base_rtt_ns,
                    min_interval_ns,
                })
            }
        };
        let dcqcn = match raw.dcqcn.as_ref() {
            None => DcqcnParams::default(),
            Some(d) => {
                let r = |key: &str, v: &Option<String>| {
                    v.as_deref().map(|x| rate("dcqcn", None, key, x)).transpose()
                };
                let us = |key: &str, v: Option<u64>| match v {
                    Some(0) | Some(1_000_001..) => {
                        Err(err("dcqcn", None, key, format!("{}: 1 µs to 1 s", v.unwrap_or(0))))
                    }
                    v => Ok(v.map(|x| x * 1000)),
                };
                if let Some(g) = d.g
                    && !(g > 0.0 && g <= 1.0)
                {
                    return Err(err("dcqcn", None, "g", format!("{g}: in (0, 1]")));
                }
                if d.fast_recovery_stages.is_some_and(|f| f > 1000) {
                    return Err(err("dcqcn", None, "fast_recovery_stages", "at most 1000".into()));
                }
                DcqcnParams {
                    clamp_target_rate: d.clamp_target_rate,
                    min_rate_bps: r("min_rate", &d.min_rate)?,
                    ai_rate_bps: r("ai_rate", &d.ai_rate)?,
                    hai_rate_bps: r("hai_rate", &d.hai_rate)?,
                    g: d.g,
                    t_alpha_ns: us("t_alpha_us", d.t_alpha_us)?,
                    t_dec_ns: us("t_dec_us", d.t_dec_us)?,
                    t_inc_ns: us("t_inc_us", d.t_inc_us)?,
                    fast_recovery_stages: d.fast_recovery_stages,
                }
            }
        };
        let mut flows = Vec::new();
        let host = |table: &str, i: usize, key: &str, h: usize| {
            if h < hosts {
                Ok(h)
            } else {
                Err(err(table, Some(i), key, format!("host {h} does not exist (hosts 0..{hosts})")))
            }
        };
        for (i, f) in raw.incast.iter().enumerate() {
            let dst = host("incast", i, "dst", f.dst)?;
            if f.size == 0 || f.size > MAX_FLOW_BYTES {
                return Err(err(
                    "incast",
                    Some(i),
                    "size",
                    format!("{} bytes: 1 to {MAX_FLOW_BYTES}", f.size),
                ));
            }
            if f.senders.is_empty() {
                return Err(err("incast", Some(i), "senders", "no senders".into()));
            }
            // Synchronized burst groups: the same senders again every period.
            let repeat = f.repeat.unwrap_or(1);
            if repeat == 0 || repeat > 10_000 {
                return Err(err("incast", Some(i), "repeat", format!("{repeat}: 1 to 10000 bursts")));
            }
            let period = match (repeat, f.period_ns) {
                (1, p) => p.unwrap_or(0),
                (_, Some(p)) if p > 0 => p,
                _ => {
                    return Err(err(
                        "incast",
                        Some(i),
                        "period_ns",
                        "repeated bursts need a period above 0".into(),
                    ));
                }
            };
            for (j, &s) in f.senders.iter().enumerate() {
                host("incast", i, "senders", s)?;
                if f.senders[..j].contains(&s) {
                    return Err(err("incast", Some(i), "senders", format!("host {s} is listed twice")));
                }
            }
            if flows.len() + f.senders.len() * repeat as usize > MAX_FLOWS {
                return Err(err(
                    "incast",
                    Some(i),
                    "senders",
                    format!(
                        "{} senders × {repeat} bursts: more than {MAX_FLOWS} flows in the lab",
                        f.senders.len()
                    ),
                ));
            }
            for k in 0..u64::from(repeat) {
                let start_ns = f.start_ns.saturating_add(k.saturating_mul(period));
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
                    flows.push(FlowSpec {
                        src,
                        dst,
                        size: f.size,
                        start_ns,
                        guarantee_bps: None,
                        class: 0,
                        vm_pair: None,
                    });
                }
            }
        }
        if flows.len() + raw.flow.len() > MAX_FLOWS {
            return Err(err(
                "flow",
                None,
                "src",
                format!("{} [[flow]]s: more than {MAX_FLOWS} flows in the lab", raw.flow.len()),
            ));
        }
        for (i, f) in raw.flow.iter().enumerate() {
            let (src, dst) = (host("flow", i, "src", f.src)?, host("flow", i, "dst", f.dst)?);
            if src == dst {
                return Err(err("flow", Some(i), "dst", "a flow to its own source".into()));
            }
            if f.size == 0 || f.size > MAX_FLOW_BYTES {
                return Err(err("flow", Some(i), "size", format!("{} bytes: 1 to {MAX_FLOW_BYTES}", f.size)));
            }
            let guarantee_bps =
                f.guarantee.as_deref().map(|g| rate("flow", Some(i), "guarantee", g)).transpose()?;
            let class = f.class.unwrap_or(0);
            if class >= 8 {
                return Err(err(
                    "flow",
                    Some(i),
                    "class",
                    format!("{class}: one of the 8 weighted queues, 0..=7"),
                ));
            }
            let paths = f.paths.or(raw.ufab.as_ref().and_then(|u| u.paths)).unwrap_or(1);
            let spec = FlowSpec {
                src,
                dst,
                size: f.size,
                start_ns: f.start_ns,
                guarantee_bps,
                class,
                vm_pair: None,
            };
            split_paths(spec, paths, i as u32, &mut flows)
                .map_err(|why| err("flow", Some(i), "paths", format!("{paths}: {why}")))?;
        }
        for (i, w) in raw.poisson.iter().enumerate() {
            let cdf = match w.cdf.as_str() {
                "websearch" => Cdf::parse(WEBSEARCH).expect("bundled CDF"),
                "fb_hadoop" => Cdf::parse(FB_HADOOP).expect("bundled CDF"),
                file => {
                    let at = path.parent().unwrap_or(Path::new(".")).join(file);
                    let text = ports::input::read_text(&at, ports::input::MAX_TEXT_BYTES)
                        .map_err(|e| err("poisson", Some(i), "cdf", format!("{}: {e}", at.display())))?;
                    Cdf::parse(&text).map_err(|e| LabError {
                        file: at.clone(),
                        line: e.line,
                        key: format!("poisson[{i}].cdf"),
                        reason: e.reason,
                    })?
                }
            };
            if !(w.load > 0.0 && w.load <= 1.0) {
                return Err(err("poisson", Some(i), "load", format!("{}: in (0, 1]", w.load)));
            }
            let senders = match &w.hosts {
                Some(list) => {
                    list.iter().map(|&h| host("poisson", i, "hosts", h)).collect::<Result<Vec<_>, _>>()?
                }
                None => (0..hosts).collect(),
            };
            if senders.len() < 2 {
                return Err(err("poisson", Some(i), "hosts", "at least two hosts".into()));
            }
            let start = w.start_ns.unwrap_or(0);
            let stop = w.stop_ns.unwrap_or(duration_ns);
            if stop <= start {
                return Err(err(
                    "poisson",
                    Some(i),
                    "stop_ns",
                    format!("{stop} is not after start_ns {start}"),
                ));
            }
            // Arrivals after the run ends would never start: none is drawn.
            let stop = stop.min(duration_ns + completion_ns);
            let link_rate = |h: usize| topology.links[wiring.host_port[h].link].rate_bps;
            // As many arrivals as the load makes over the window, expected: bounded before any
            // is drawn.
            let expected: f64 = senders
                .iter()
                .map(|&h| {
                    stop.saturating_sub(start) as f64 * 1e-9 * link_rate(h) as f64 * w.load / 8.0 / cdf.mean()
                })
                .sum();
            if flows.len() as f64 + expected > MAX_FLOWS as f64 {
                return Err(err(
                    "poisson",
                    Some(i),
                    "load",
                    format!(
                        "{expected:.0} arrivals expected over the run (duration_us and run_to_completion_us): more than {MAX_FLOWS} flows in the lab"
                    ),
                ));
            }
            let seed = seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            flows.extend(workload::poisson(&cdf, w.load, &senders, &senders, link_rate, start, stop, seed));
        }
        flows.sort_by_key(|f| f.start_ns);
        let buffer_bytes = match t.buffer_bytes {
            Some(b) if b >= 64 * 1024 => b,
            Some(b) => return Err(err("topology", None, "buffer_bytes", format!("{b}: at least 65536"))),
            // The reference's run.py: 16·bw/50 MB, bw in Gb/s of the hosts' links.
            None => (16 * (rate_bps / 1_000_000_000).max(1) / 50).max(1) << 20,
        };
        // Every switch as the lab will configure it: one port at least, and its buffer able to
        // hold the reserves and the PFC headroom its links need (known here from the topology).
        let reserve = dataplane::tm::TmConfig::default().reserve_bytes;
        for (s, ports) in wiring.switch_ports.iter().enumerate() {
            if ports.is_empty() {
                return Err(err(
                    "topology",
                    None,
                    "switches",
                    format!("switch {s} has no link: {} switches, fewer of them linked", topology.switches),
                ));
            }
            let h = super::engine::headroom(mtu, ports.iter().map(|e| &topology.links[e.link]));
            let p = ports.len() as u128;
            let set_aside = p * 8 * u128::from(reserve) + p * u128::from(h);
            if set_aside >= u128::from(buffer_bytes) {
                return Err(err(
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
        let program = |table: &str, i: Option<usize>, name: &str| {
            if dataplane::programs::find(name).is_some() {
                Ok(name.to_string())
            } else {
                let names: Vec<&str> = dataplane::programs::PROGRAMS.iter().map(|p| p.name).collect();
                Err(err(table, i, "program", format!("unknown program {name:?}; expected one of {names:?}")))
            }
        };
        let switches = SwitchProgram {
            program: program(
                "switches",
                None,
                raw.switches.as_ref().and_then(|s| s.program.as_deref()).unwrap_or(if cc == Cc::Ufab {
                    "ufab"
                } else {
                    "l2l3"
                }),
            )?,
            sections: raw.switches.as_ref().and_then(|s| s.sections.clone()).unwrap_or_default(),
            routes: Vec::new(),
        };
        let mut switch_programs = Vec::new();
        for (i, s) in raw.switch.iter().enumerate() {
            if s.id >= topology.switches {
                return Err(err(
                    "switch",
                    Some(i),
                    "id",
                    format!("switch {} does not exist (switches 0..{})", s.id, topology.switches),
                ));
            }
            if switch_programs.iter().any(|(id, _)| *id == s.id) {
                return Err(err("switch", Some(i), "id", format!("switch {} is given twice", s.id)));
            }
            let mut routes = Vec::new();
            for r in &s.route {
                if r.host >= hosts {
                    return Err(err(
                        "switch",
                        Some(i),
                        "route",
                        format!("host {} does not exist (hosts 0..{hosts})", r.host),
                    ));
                }
                let adjacent = topology.links.iter().any(|l| {
                    (l.a, l.b) == (Node::Switch(s.id), Node::Switch(r.via))
                        || (l.b, l.a) == (Node::Switch(s.id), Node::Switch(r.via))
                });
                if !adjacent {
                    return Err(err(
                        "switch",
                        Some(i),
                        "route",
                        format!("via {}: not a neighbour of switch {}", r.via, s.id),
                    ));
                }
                if routes.iter().any(|&(h, _)| h == r.host) {
                    return Err(err(
                        "switch",
                        Some(i),
                        "route",
                        format!("host {}: a second override (one route per host's subnet)", r.host),
                    ));
                }
                routes.push((r.host, r.via));
            }
            let p = SwitchProgram {
                program: match &s.program {
                    Some(name) => program("switch", Some(i), name)?,
                    None => switches.program.clone(),
                },
                sections: match &s.sections {
                    Some(t) => t.clone(),
                    None if s.program.is_none() => switches.sections.clone(),
                    None => String::new(),
                },
                routes,
            };
            switch_programs.push((s.id, p));
        }
        if let Some((h, cycle)) = routing_loop(&topology, &switch_programs) {
            let ids: Vec<String> = cycle.iter().map(|s| format!("s{s}")).collect();
            let i = switch_programs.iter().position(|(id, _)| cycle.contains(id)).unwrap_or(0);
            return Err(err(
                "switch",
                Some(i),
                "route",
                format!(
                    "the overrides toward host {h} send its packets round {} and back: a forwarding loop",
                    ids.join(" → ")
                ),
            ));
        }
        let mut host_agents = vec![HostAgent::Rc; hosts];
        let mut given: Vec<Option<usize>> = vec![None; hosts];
        for (i, hst) in raw.host.iter().enumerate() {
            let agent = host_agent(hst, &|key: &str, reason: String| err("host", Some(i), key, reason))?;
            if hst.ids.is_empty() {
                return Err(err("host", Some(i), "ids", "no hosts".into()));
            }
            for &h in &hst.ids {
                let h = host("host", i, "ids", h)?;
                if given[h].replace(i).is_some() {
                    return Err(err("host", Some(i), "ids", format!("host {h} is given an agent twice")));
                }
                host_agents[h] = agent.clone();
            }
        }
        for f in &flows {
            let runs_rc = |h: usize| matches!(host_agents[h], HostAgent::Rc | HostAgent::PfcStorm(_));
            if let Some(h) = [f.src, f.dst].into_iter().find(|&h| !runs_rc(h)) {
                return Err(err(
                    "host",
                    given[h],
                    "agent",
                    format!("host {h} runs a flow ({} to {}): its agent must be \"rc\"", f.src, f.dst),
                ));
            }
        }
        let d = UfabParams::default();
        let ufab = match raw.ufab.as_ref() {
            None => d,
            Some(u) => {
                let us = |key: &str, v: Option<u64>, def: u64, max_us: u64| match v {
                    None => Ok(def),
                    Some(x) if x <= max_us => Ok(x * 1000),
                    Some(x) => Err(err("ufab", None, key, format!("{x}: at most {max_us} µs"))),
                };
                if let Some(paths) = u.paths {
                    check_pair_paths(paths)
                        .map_err(|why| err("ufab", None, "paths", format!("{paths}: {why}")))?;
                }
                let candidates = u.candidates.unwrap_or(d.candidates);
                if !(1..=16).contains(&candidates) {
                    return Err(err("ufab", None, "candidates", format!("{candidates}: 1 to 16 paths")));
                }
                let l_w = u.l_w.unwrap_or(d.l_w);
                if !(64..=1 << 30).contains(&l_w) {
                    return Err(err("ufab", None, "l_w", format!("{l_w}: 64 B to 1 GiB")));
                }
                let freeze_rtts = u.freeze_rtts.unwrap_or(d.freeze_rtts);
                if !(1..=1_000_000).contains(&freeze_rtts) {
                    return Err(err("ufab", None, "freeze_rtts", format!("{freeze_rtts}: 1 to 1 000 000")));
                }
                let token_period_ns = u.token_period_ns.unwrap_or(d.token_period_ns);
                if !(1_000..=1_000_000_000).contains(&token_period_ns) {
                    return Err(err(
                        "ufab",
                        None,
                        "token_period_ns",
                        format!("{token_period_ns}: 1 µs to 1 s"),
                    ));
                }
                let weights = match &u.weights {
                    None => d.weights,
                    Some(w) if w.len() == 8 && w.iter().all(|&x| (1..=1_000_000).contains(&x)) => {
                        std::array::from_fn(|i| w[i])
                    }
                    Some(w) => {
                        return Err(err(
                            "ufab",
                            None,
                            "weights",
                            format!("{w:?}: 8 weights of 1 to 1 000 000"),
                        ));
                    }
                };
                UfabParams {
                    weights,
                    b_u_bps: u
                        .b_u
                        .as_deref()
                        .map(|b| rate("ufab", None, "b_u", b))
                        .transpose()?
                        .map_or(d.b_u_bps, |b| b as f64),
                    guarantee_bps: u
                        .guarantee
                        .as_deref()
                        .map(|g| rate("ufab", None, "guarantee", g))
                        .transpose()?
                        .unwrap_or(d.guarantee_bps),
                    candidates,
                    l_w,
                    no_reordering: u.no_reordering.unwrap_or(d.no_reordering),
                    freeze_rtts,
                    look_every_ns: us("look_every_us", u.look_every_us, d.look_every_ns, 3_600_000_000)?,
                    better_for_ns: us("better_for_us", u.better_for_us, d.better_for_ns, 3_600_000_000)?,
                    token_period_ns,
                    idle_finish_ns: us("idle_finish_us", u.idle_finish_us, d.idle_finish_ns, 3_600_000_000)?,
                }
            }
        };
        let mut failures = Vec::new();
        for (i, f) in raw.failure.iter().enumerate() {
            if f.switch >= topology.switches {
                return Err(err(
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
            return Err(err("lab", None, "sample_ns", format!("{sample_ns}: 100 ns to 1000 s")));
        }
        // Every switch port is sampled every sample_ns for the whole run, in memory.
        let ports: usize = wiring.switch_ports.iter().map(Vec::len).sum();
        let samples = (duration_ns + completion_ns) / sample_ns * ports as u64;
        if samples > MAX_SAMPLES {
            return Err(err(
                "lab",
                None,
                "sample_ns",
                format!(
                    "{sample_ns} ns: {samples} queue samples of {ports} ports over the run, more than {MAX_SAMPLES}: sample less often"
                ),
            ));
        }
        let cfg = Self {
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
        super::engine::check_programs(&cfg).map_err(|reason| {
            let table = if cfg.switch_programs.is_empty() { "switches" } else { "switch" };
            LabError {
                file: path.to_path_buf(),
                line: line_of(table, 0, "sections"),
                key: format!("{table}.sections"),
                reason: format!(
                    "{reason} (the lab writes each switch's [[port]], [tm] and, for programs on l2l3, \
                     [l2l3] itself; sections add the rest)"
                ),
            }
        })?;
        cfg.check_limits().map_err(|why| err("flow", None, "src", why))?;
        Ok(cfg)
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.topology.hosts
    }

    /// Whether acknowledgements and CNPs ride their own priority: as the lab file says, else
    /// the reference's `run.py` default for the CC (HPCC++ shares the data queue, DCQCN not;
    /// µFAB's responses and ACKs do not either).
    pub fn ack_high_priority(&self) -> bool {
        self.ack_high_priority.unwrap_or(self.cc != Cc::Hpcc)
    }

    /// Per flow, the first flow of its µFAB VM-pair: itself unless `paths` split one VM-pair
    /// into several flows, one per underlay path (those are adjacent, the first one first).
    pub fn vm_pair_leaders(&self) -> Vec<usize> {
        let mut first: std::collections::HashMap<u32, usize> = Default::default();
        (0..self.flows.len())
            .map(|i| self.flows[i].vm_pair.map_or(i, |g| *first.entry(g).or_insert(i)))
            .collect()
    }

    /// µFAB (`--paths`): every flow that is a VM-pair of one path becomes a VM-pair of `paths`
    /// underlay paths (Appendix F), one connection per path, the bytes spread evenly. Flows the
    /// file already split keep theirs.
    pub fn set_pair_paths(&mut self, paths: u32) -> Result<(), String> {
        check_pair_paths(paths).map_err(|why| format!("{paths}: {why}"))?;
        if self.flows.len().saturating_mul(paths as usize) > MAX_FLOWS {
            return Err(format!(
                "{paths}: {} flows × {paths} paths: more than {MAX_FLOWS} flows",
                self.flows.len()
            ));
        }
        let mut next = self.flows.iter().filter_map(|f| f.vm_pair).max().map_or(0, |m| m + 1);
        let mut out = Vec::with_capacity(self.flows.len() * paths as usize);
        for (i, &f) in self.flows.iter().enumerate() {
            if f.vm_pair.is_some() {
                out.push(f);
                continue;
            }
            split_paths(f, paths, next, &mut out).map_err(|why| format!("flow {i}: {paths} paths: {why}"))?;
            next += 1;
        }
        self.flows = out;
        Ok(())
    }

    /// The limits that depend on the CC and the paths (`--cc`, `--paths` change them after the
    /// file is read): at most [`MAX_FLOWS`] flows, and under µFAB at most
    /// [`MAX_UFAB_PAIRS_PER_HOST`] connections sent by one host.
    pub fn check_limits(&self) -> Result<(), String> {
        if self.flows.len() > MAX_FLOWS {
            return Err(format!("{} flows: at most {MAX_FLOWS}", self.flows.len()));
        }
        if self.cc == Cc::Ufab {
            let mut per_host = vec![0usize; self.hosts()];
            for f in &self.flows {
                if let Some(n) = per_host.get_mut(f.src) {
                    *n += 1;
                }
            }
            if let Some((h, n)) = per_host.iter().enumerate().find(|(_, n)| **n > MAX_UFAB_PAIRS_PER_HOST) {
                return Err(format!(
                    "host {h} sends {n} µFAB connections: at most {MAX_UFAB_PAIRS_PER_HOST} per host"
                ));
            }
        }
        Ok(())
    }

    /// Run under `cc` instead (`--cc`, `lab compare`): switches whose program the file left to
    /// the default take the new CC's (`ufab` for µFAB, else `l2l3`).
    pub fn set_cc(&mut self, cc: Cc) {
        self.cc = cc;
        if self.switches_defaulted {
            self.switches.program = if cc == Cc::Ufab { "ufab" } else { "l2l3" }.to_string();
            for (_, p) in &mut self.switch_programs {
                if p.program == "ufab" || p.program == "l2l3" {
                    p.program = self.switches.program.clone();
                }
            }
        }
    }

    /// Switch `s`'s program.
    pub fn switch_program(&self, s: usize) -> &SwitchProgram {
        self.switch_programs.iter().find(|(id, _)| *id == s).map_or(&self.switches, |(_, p)| p)
    }
}

/// A forwarding loop the route overrides make, if any: the host whose subnet it is for and the
/// switches round it. Toward each host with an override, a switch forwards on its override, or
/// else on every shortest path (ECMP), as the lab's routes do; a cycle among those next hops
/// is a loop some flow's packets would go round until their TTL ran out.
fn routing_loop(topology: &Topology, programs: &[(usize, SwitchProgram)]) -> Option<(usize, Vec<usize>)> {
    let n = topology.switches;
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut tor = vec![None; topology.hosts];
    for l in &topology.links {
        match (l.a, l.b) {
            (Node::Switch(a), Node::Switch(b)) if a < n && b < n => {
                adj[a].push(b);
                adj[b].push(a);
            }
            (Node::Host(h), Node::Switch(s)) | (Node::Switch(s), Node::Host(h)) if h < tor.len() => {
                tor[h] = Some(s)
            }
            _ => {}
        }
    }
    let mut hosts: Vec<usize> = programs.iter().flat_map(|(_, p)| p.routes.iter().map(|&(h, _)| h)).collect();
    hosts.sort_unstable();
    hosts.dedup();
    for h in hosts {
        let Some(t) = tor.get(h).copied().flatten() else { continue };
        // Hops to the host's switch, by breadth-first search.
        let mut dist = vec![u32::MAX; n];
        dist[t] = 0;
        let mut queue = std::collections::VecDeque::from([t]);
        while let Some(s) = queue.pop_front() {
            for &o in &adj[s] {
                if dist[o] == u32::MAX {
                    dist[o] = dist[s] + 1;
                    queue.push_back(o);
                }
            }
        }
        let next = |s: usize| -> Vec<usize> {
            match programs
                .iter()
                .find(|(id, _)| *id == s)
                .and_then(|(_, p)| p.routes.iter().find(|r| r.0 == h))
            {
                Some(&(_, via)) => vec![via],
                None => adj[s].iter().copied().filter(|&o| dist[o].wrapping_add(1) == dist[s]).collect(),
            }
        };
        // Depth-first search for a cycle among the next hops (the host's switch delivers).
        let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
        for start in 0..n {
            if state[start] != 0 || start == t {
                continue;
            }
            let mut stack: Vec<(usize, Vec<usize>)> = vec![(start, next(start))];
            state[start] = 1;
            while let Some((s, hops)) = stack.last_mut() {
                let s = *s;
                match hops.pop() {
                    Some(o) if o == t || state[o] == 2 => {}
                    Some(o) if state[o] == 1 => {
                        let at = stack.iter().position(|(x, _)| *x == o).unwrap_or(0);
                        return Some((h, stack[at..].iter().map(|(x, _)| *x).chain([o]).collect()));
                    }
                    Some(o) => {
                        state[o] = 1;
                        let nh = next(o);
                        stack.push((o, nh));
                    }
                    None => {
                        state[s] = 2;
                        stack.pop();
                    }
                }
            }
        }
    }
    None
}

/// A `[[host]]` table's agent; `err(key, reason)` names the table.
fn host_agent(h: &RawHost, err: &dyn Fn(&str, String) -> LabError) -> Result<HostAgent, LabError> {
    use roce::dta::{LoadKind, LoadSpec};
    let reporter_keys = [&h.to.as_ref().map(|_| ()), &h.primitive.as_ref().map(|_| ()), &h.count.map(|_| ())];
    match h.agent.as_str() {
        "rc" | "dta_collector" if reporter_keys.iter().any(|k| k.is_some()) => Err(err(
            "agent",
            format!("to, primitive and count are for agent \"dta_reporter\", not {:?}", h.agent),
        )),
        "rc" | "dta_reporter" if h.config.is_some() => {
            Err(err("config", format!("config is for agent \"dta_collector\", not {:?}", h.agent)))
        }
        "rc" | "dta_reporter" | "dta_collector"
            if h.priority.is_some()
                || h.quanta.is_some()
                || h.stop_ns.is_some()
                || h.interval_ns.is_some() =>
        {
            Err(err(
                "agent",
                format!(
                    "priority, quanta, stop_ns and interval_ns are for agent \"pfc_storm\", not {:?}",
                    h.agent
                ),
            ))
        }
        "pfc_storm" if reporter_keys.iter().any(|k| k.is_some()) || h.config.is_some() => Err(err(
            "agent",
            "a \"pfc_storm\" host takes priority, quanta, start_ns, stop_ns and interval_ns only".into(),
        )),
        "pfc_storm" => {
            let priority = h.priority.unwrap_or(3);
            if priority > 7 {
                return Err(err("priority", format!("{priority}: expected 0..=7")));
            }
            let interval_ns = h.interval_ns.unwrap_or(10_000);
            if interval_ns == 0 {
                return Err(err("interval_ns", "0: expected a positive interval".into()));
            }
            let start_ns = h.start_ns.unwrap_or(0);
            let stop_ns = h.stop_ns.unwrap_or(u64::MAX);
            if stop_ns <= start_ns {
                return Err(err("stop_ns", format!("{stop_ns}: expected after start_ns ({start_ns})")));
            }
            Ok(HostAgent::PfcStorm(PfcStormSpec {
                priority,
                quanta: h.quanta.unwrap_or(0xffff),
                start_ns,
                stop_ns,
                interval_ns,
            }))
        }
        "rc" => Ok(HostAgent::Rc),
        "dta_collector" => Ok(HostAgent::DtaCollector {
            config: h
                .config
                .clone()
                .ok_or_else(|| err("config", "agent \"dta_collector\" needs its config".into()))?,
        }),
        "dta_reporter" => {
            let to =
                h.to.as_ref()
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| err("to", "the collectors' addresses".into()))?;
            let to = to
                .iter()
                .map(|a| a.parse().map_err(|_| err("to", format!("{a:?} is not an IPv4 address"))))
                .collect::<Result<Vec<_>, _>>()?;
            let redundancy = h.redundancy.unwrap_or(2);
            if !(1..=8).contains(&redundancy) {
                return Err(err("redundancy", format!("{redundancy}: expected 1..=8")));
            }
            let kind = match h.primitive.as_deref().unwrap_or("keywrite") {
                "keywrite" => LoadKind::KeyWrite { redundancy },
                "keyincrement" => LoadKind::KeyIncrement { redundancy, counter: 1 },
                "append" => LoadKind::Append { lists: h.lists.unwrap_or(1).max(1) },
                "postcarder" => LoadKind::Postcarder { hops: 5 },
                o => {
                    return Err(err(
                        "primitive",
                        format!("{o:?}: expected keywrite, keyincrement, append or postcarder"),
                    ));
                }
            };
            let count = h.count.ok_or_else(|| err("count", "how many reports".into()))?;
            Ok(HostAgent::DtaReporter(ReporterSpec {
                to,
                spec: LoadSpec {
                    kind,
                    keys: h.keys.unwrap_or(1000).max(1),
                    key_base: 0,
                    priority: wire::dta::Priority::High,
                    retransmittable: true,
                    immediate_every: 0,
                    keywrite_data_len: 4,
                    scramble: true,
                },
                count,
                rate: h.rate.unwrap_or(0),
                start_ns: h.start_ns.unwrap_or(0),
            }))
        }
        o => Err(err(
            "agent",
            format!(
                "unknown agent {o:?}; expected \"rc\", \"dta_reporter\", \"dta_collector\" or \"pfc_storm\""
            ),
        )),
    }
}

#[cfg(test)]
mod tests;
