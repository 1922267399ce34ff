//! The virtual-time lab: a deterministic discrete-event fabric of switches and hosts.
//!
//! A lab file ([`config`]) names a topology ([`topology`]: star, dumbbell, leaf-spine, fat-tree
//! k, or explicit links, each with its rate and delay), the congestion control, and the flows:
//! fixed ones, incast groups and Poisson arrivals over flow-size CDFs ([`workload`]). A run
//! ([`run`]) gives per-flow FCT (at the sender's last acknowledgement, as the HPCC simulator's
//! `fct.txt`) and slowdown and sampled queues, link bytes and flow goodput, written as CSV
//! ([`output`]) and SVG ([`plot`]). Where the lab still differs from that simulator is listed,
//! with the reasons, in `docs/lab/FIDELITY.md`.
//!
//! * **Switches** run any program of `dataplane`'s registry (`[switches] program`, or per
//!   switch `[[switch]] id/program`; `l2l3` by default) behind the same `DynSwitch` that
//!   `dataplane run` drives, with the real traffic manager — queues, PFC (priority 3 lossless)
//!   and, for DCQCN, RED/ECN marking. Their configuration is generated as the TOML a user would
//!   write (the fabric's addressing and routes for `l2l3`, with INT stamping; the lab file's
//!   `sections` text for the program's own tables) and goes through
//!   `dataplane::config::Config::parse`, so the lab runs exactly the code `dataplane run` does;
//!   only the clock and the ports differ. Programs with a periodic task get its tick.
//! * **Links** have a rate and a propagation delay; a port sends one frame at a time, the next
//!   one when the last has been serialised. Routes follow every shortest path; `l2l3` switches
//!   pick among them by ECMP on the 5-tuple, whose UDP source port each flow derives from its QP.
//! * **Hosts** run one frame-level agent each ([`roce::agent::Agent`]: `handle_packet(now, ..)`,
//!   `handle_timeout(now)`, `poll_transmit(now, ..)`, `poll_timeout()`), chosen by `[[host]]
//!   agent`: `rc` (default; [`nic_agent::host::RcHost`], the flows of the lab file),
//!   `dta_reporter` ([`roce::dta::ReporterAgent`], DTA reports at a rate) or `dta_collector`
//!   (the soft-RNIC, [`collector::rnic_port::RnicAgent`], over the collector's stores).
//!   RC flows run HPCC++ ([`nic_agent::hpcc::Hpcc`]) with a rate-and-window
//!   [`nic_agent::pacer::Pacer`], or DCQCN's reaction point with a rate-only pacer and the
//!   receiver's CNP pacing. Data and ACKs are real frames: Ethernet, IPv4, UDP, the INT header
//!   of `wire::hpcc_int` (HPCC++ runs, UDP port 40051, `next` = BTH) and a BTH (+ AETH for
//!   ACKs); DCQCN runs send plain RoCEv2 on UDP 4791 with ECT(0), and CNPs. RC payload bytes are
//!   not carried (zeros) and their ICRC is not computed: nothing in the lab checks it (the DTA
//!   agents' frames are complete, ICRC included). A receiver ACKs every packet; out of order it
//!   sends one PSN-sequence NAK and the sender goes back N. Hosts obey the PFC frames their
//!   switch sends. Every switch's and agent's counters end in `switches.csv` and `agents.csv`.
//!   Switches running `hawkeye` and hosts with `[hawkeye] detect` add their telemetry reports
//!   and polling events as JSON lines (`hawkeye_reports.jsonl`, `hawkeye_polls.jsonl`).
//!
//! Events are ordered by (time, insertion number), so a seed and a configuration give the same
//! run, byte for byte. What the lab is not: a model of NIC internals (one send queue per host,
//! round robin over its flows), of host CPUs, or of link errors.
//!
//! The engine is split by concern: events, fabric (addressing and generated switch configs),
//! switch node, host node, RC workload, agents, results.

pub mod config;
mod engine;
pub mod ns3;
pub mod output;
pub mod plot;
pub mod topology;
pub mod ufab_report;
pub mod workload;

pub use config::{
    Cc, DcqcnParams, FlowSpec, HostAgent, HpccParams, LabConfig, LabError, ReporterSpec, SwitchProgram,
};
pub use engine::QUEUE_HIST_BYTES;
pub(crate) use engine::host_ip;
pub use engine::{
    AgentSummary, FlowResult, LabAgent, LabResult, PfcEvent, QueueSample, RateSample, SwitchSummary,
    interrupt_on_signals, interrupted, run,
};
pub use topology::{Link, Node, Topology, TopologyError};
