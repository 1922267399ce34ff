//! # nic-agent — the host side of the fabric
//!
//! Sans-IO host agents that run unchanged in the virtual-time lab and on real ports:
//!
//! * [`hpcc`] — HPCC++ (seed `004`): the sender (`NewAck`, `MeasureInflight`, `ComputeWind`
//!   of §4.2) and the receiver-based Rx-HPCC (§6.2).
//! * [`dcqcn`] — DCQCN, the baseline: the reaction point's rate control and the notification
//!   point's CNP pacing.
//! * [`pacer`] — rate and window enforcement for one flow.
//! * [`rc`] — RoCEv2 RC flows built on `roce`: the paced sender (go-back-N, timeout, the CC
//!   fed by ACKs and CNPs), the receiver (ACK per AckReq, one NAK per gap, CNPs), and their
//!   frames with INT in front of the BTH.
//! * [`host`] — a host's NIC running those flows as one frame-level `roce::agent::Agent`:
//!   what the lab's hosts and the `nic-agent` binary run.
//! * [`hawkeye`] — Hawkeye's detection agent: per-flow RTT, polling packets for victims.
//! * [`ufab`] — µFAB-E (seed `003`): token assignment (Algorithms 1 and 2), Eqn (1)–(3),
//!   VM-pairs with probing, two-stage admission and path migration, the weighted VF scheduler.
//!
//! What it is not: it owns no clock and no socket, and it defines no packet formats (INT is
//! `wire::hpcc_int`, RoCEv2 `wire::roce`, µFAB's `wire::ufab` and `wire::mpls`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod dcqcn;
pub mod hawkeye;
pub mod host;
pub mod hpcc;
pub mod pacer;
pub mod rc;
pub mod ufab;
