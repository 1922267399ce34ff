//! # dataplane — the softfabric switch
//!
//! The switch every in-network system here runs on, built as a Tofino pipe is:
//!
//! * [`model`] — the machine model a program is written against: exact, LPM and ternary tables,
//!   register arrays, counters, trTCM meters, CRC hash units, each declared with a name and size
//!   (`dataplane resources` prints them as a P4 compiler's resource report would), and named
//!   drop reasons;
//! * [`switch`] — the [`Program`](switch::Program) trait (ingress and egress over intrinsic
//!   metadata) and [`Switch`](switch::Switch), which runs a program around the packet replication
//!   engine (multicast with per-copy IDs, mirror to CPU, recirculation) and
//! * [`tm`] — the traffic manager: per-port priority queues in a shared buffer with
//!   byte-accurate accounting, strict + DWRR scheduling, shaping, ECN marking and IEEE 802.1Qbb
//!   PFC;
//! * [`port`] and [`buf`] — port backends behind one burst interface (memory, pcap, AF_PACKET,
//!   UDP sockets, and DPDK with the `dpdk` feature when DPDK is found at build time) and packet
//!   buffers: the `ports` crate, re-exported (the collector's soft-RNIC uses them too);
//! * [`runtime`] — the poll-mode runtime: pinned pipeline threads, a control thread, stats;
//! * [`config`] — the TOML configuration;
//! * [`programs`] — the programs (`l2l3`, `macswap`).
//!
//! What it is not: packet formats live in `wire`; RoCEv2 state machines in `roce`. [`Switch`]
//! and the TM read no clock — the runtime passes time in, so the virtual-time lab runs the same
//! code. This crate has no `unsafe`: it lives in the port backends (`ports`), each block with
//! its `SAFETY` comment.
//!
//! [`Switch`]: switch::Switch
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub use ports::buf;
pub mod config;
pub mod model;
pub use ports::port;
pub mod programs;
pub mod runtime;
pub mod switch;
pub mod tm;
