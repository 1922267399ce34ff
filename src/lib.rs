//! # softfabric
//!
//! A software switch and smart-NIC dataplane that lets a lab without Tofino run five datacenter
//! research systems — DTA, Hawkeye, µFAB, HPCC++ and DAIET — on x86 servers with commodity NICs.
//!
//! This root package holds the virtual-time lab ([`lab`]: a discrete-event fabric of switches
//! running any `dataplane` program and hosts running any frame-level agent — RC flows under
//! HPCC++ or DCQCN, DTA reporters, the soft-RNIC collector) and the DTA demo ([`dta_demo`]:
//! reporter, translator and collector on loopback sockets). The member crates, lowest first:
//!
//! | crate | what it is |
//! |---|---|
//! | `wire` | every packet format: zero-copy views, `Repr`s, bit-level field specifications, checksums, the RoCEv2 ICRC and frame builders |
//! | `dpdk-sys` | FFI to DPDK 22.11 (pkg-config + bindgen) |
//! | `roce` | the sans-IO protocol cores: RoCEv2 queue pairs, IB CM, the passive endpoint, the DTA reporter protocol, DAIET's mapper and reducer, and the host-agent vocabulary (`roce::agent`) |
//! | `ports` | packet buffers, port backends (memory, pcap, AF_PACKET, UDP, DPDK) and the host runtime (`ports::host`: clock, idle policy, ARP, `HostPort` driving an agent) |
//! | `dataplane` | the switch: machine model with typed declarations, traffic manager, the program registry and its programs, the poll-mode runtime |
//! | `nic-agent` | HPCC++, DCQCN, pacing, RC flows, and a host's NIC as one agent (`RcHost`) |
//! | `collector` | the DTA collector: stores, queries, the soft-RNIC (UDP socket or frame agent) and the verbs backend |
//!
//! It also holds Hawkeye's evaluation ([`hawkeye_eval`]: scenario files, traces in the lab,
//! the analyzer scored per anomaly class) and DAIET's WordCount ([`daiet`]: the experiment in
//! the lab, mappers and reducers on sockets).
//!
//! What it is not: a timed model of DAIET (its lab counts bytes and packets, untimed).
#![forbid(unsafe_code)]

pub mod daiet;
pub mod dta_demo;
pub mod hawkeye_eval;
pub mod lab;
