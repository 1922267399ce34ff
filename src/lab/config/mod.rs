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
//! rtt_factor = 3.0           #   (base: the flow's smallest RTT sample, at most base_rtt_ns, which stands in before its first), at most
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

use super::topology::Topology;

mod flows;
mod nodes;
mod params;
mod parse;
mod raw;

use flows::{check_pair_paths, split_paths};

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

/// Most underlay paths of one µFAB VM-pair (`[[flow]] paths`).
pub const MAX_PAIR_PATHS: u32 = 8;

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
        parse::parse(&parse::Ctx { path, text })
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

#[cfg(test)]
mod tests;
