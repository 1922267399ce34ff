//! # dataplane — the softfabric switch
//!
//! The switch every in-network system here runs on, built as a Tofino pipe is:
//!
//! * [`model`] — the machine model a program is written against: exact, LPM and ternary tables,
//!   register arrays, counters, trTCM meters, CRC hash units and named drop reasons, each built
//!   from a typed declaration ([`model::decl`]: tables' key fields, match kinds and actions,
//!   registers' layouts, meters' units, hash inputs) beside the program's declared parser over
//!   `wire`'s field specifications. `dataplane resources` prints them all, as a P4 compiler's
//!   resource report would, and they are what a P4 export walks;
//! * [`switch`] — the [`Program`](switch::Program) trait (ingress and egress over intrinsic
//!   metadata) and [`Switch`](switch::Switch), which runs a program around the packet
//!   replication engine (multicast with per-copy IDs, mirror to CPU, recirculation) and the
//!   traffic manager; [`DynSwitch`](switch::DynSwitch) is any switch behind one object-safe
//!   interface;
//! * [`tm`] — the traffic manager: per-port priority queues in a shared buffer with
//!   byte-accurate accounting, strict + DWRR scheduling, shaping, ECN marking and IEEE 802.1Qbb
//!   PFC;
//! * [`programs`] — the registry and one folder per program (`l2l3`, `macswap`,
//!   `dta_translator`, `dta_reporter`), each owning its config section, its commands and its
//!   declarations; one registry line adds a program to the binary, the tests and the lab;
//! * [`p4`] — the P4-16 export (`dataplane p4 export`): TNA and v1model programs generated
//!   from the declarations and each program's hand-written P4 steps, with their table entries;
//! * [`config`] — the TOML configuration: ports, runtime, DPDK, and each program's section
//!   kept raw for the program to read, with file and line in every error;
//! * [`runtime`] — the poll-mode runtime (pinned pipeline threads or DPDK lcores, a control
//!   socket, stats) and `dataplane report`, the DTA load generator on the host runtime;
//! * [`port`] and [`buf`] — the `ports` crate's port backends and packet buffers, re-exported.
//!
//! What it is not: packet formats live in `wire`; protocol state machines (RoCEv2, CM, the DTA
//! reporter) in `roce`. [`Switch`] and the TM read no clock — the runtime passes time in, so the
//! virtual-time lab runs the same code. This crate has no `unsafe`: it lives in the port
//! backends (`ports`), each block with its `SAFETY` comment.
//!
//! [`Switch`]: switch::Switch
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub use ports::buf;
pub mod config;
pub mod model;
pub mod p4;
pub use ports::port;
pub mod programs;
pub mod runtime;
pub mod switch;
pub mod tm;
