//! The virtual-time lab: a deterministic discrete-event fabric of switches and hosts.
//!
//! A lab file ([`config`]) names a topology ([`topology`]: star, dumbbell, leaf-spine, fat-tree
//! k, or explicit links, each with its rate and delay), the congestion control, and the flows:
//! fixed ones, incast groups and Poisson arrivals over flow-size CDFs ([`workload`]). A run
//! ([`run`]) gives per-flow FCT and slowdown and sampled queues, link bytes and flow goodput,
//! written as CSV ([`output`]) and SVG ([`plot`]).
//!
//! * **Switches** are `dataplane` switches running the `l2l3` program with INT stamping
//!   (`int_switch_id`) and the real traffic manager — queues, PFC (priority 3 lossless) and,
//!   for DCQCN, RED/ECN marking. Their configuration is generated as the TOML a user would write
//!   and goes through `dataplane::config::Config::parse`, so the lab runs exactly the code
//!   `dataplane run` does; only the clock and the ports differ.
//! * **Links** have a rate and a propagation delay; a port sends one frame at a time, the next
//!   one when the last has been serialised. Routes follow every shortest path; switches pick
//!   among them by ECMP on the 5-tuple, whose UDP source port each flow derives from its QP.
//! * **Hosts** run `nic-agent` state machines per flow: HPCC++ ([`nic_agent::hpcc::Hpcc`]) with
//!   a rate-and-window [`nic_agent::pacer::Pacer`], or DCQCN's reaction point with a rate-only
//!   pacer and the receiver's CNP pacing. Data and ACKs are real frames: Ethernet, IPv4, UDP,
//!   the INT header of `wire::hpcc_int` (HPCC++ runs, UDP port 40051, `next` = BTH) and a BTH
//!   (+ AETH for ACKs); DCQCN runs send plain RoCEv2 on UDP 4791 with ECT(0), and CNPs. Payload
//!   bytes are not carried (zeros) and the ICRC is not computed: nothing in the lab checks it.
//!   A receiver ACKs every packet; out of order it sends one PSN-sequence NAK and the sender goes
//!   back N. Hosts obey the PFC frames their switch sends.
//!
//! Events are ordered by (time, insertion number), so a seed and a configuration give the same
//! run, byte for byte. What the lab is not: a model of NIC internals (one send queue per host,
//! round robin over its flows), of host CPUs, or of link errors.

pub mod config;
mod engine;
pub mod output;
pub mod plot;
pub mod topology;
pub mod workload;

pub use config::{Cc, FlowSpec, LabConfig, LabError};
pub use engine::{FlowResult, LabResult, PfcEvent, QueueSample, RateSample, run};
pub use topology::{Link, Node, Topology, TopologyError};
