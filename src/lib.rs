//! # softfabric
//!
//! A software switch and smart-NIC dataplane that lets a lab without Tofino run five datacenter
//! research systems — DTA, Hawkeye, µFAB, HPCC++ and DAIET — on x86 servers with commodity NICs.
//!
//! This root package will hold the virtual-time lab (a discrete-event fabric of switches and
//! hosts running the same `dataplane` programs and `nic-agent` state machines) and the DTA demo.
//! The member crates are:
//!
//! | crate | what it is |
//! |---|---|
//! | `wire` | every packet format: zero-copy views, `Repr`s, checksums, the RoCEv2 ICRC and stack builder |
//! | `roce` | sans-IO RoCEv2 queue pairs and IB CM |
//! | `dataplane` | the switch: machine model, traffic manager, ports, runtime, programs |
//! | `nic-agent` | HPCC++, µFAB-E, DCQCN, pacing, the Hawkeye detection agent |
//! | `collector` | the DTA collector (soft-RNIC, verbs, queries) and the Hawkeye analyzer |
//! | `dpdk-sys` | FFI to DPDK 22.11 |
#![forbid(unsafe_code)]

pub mod dta_demo;
pub mod lab;
