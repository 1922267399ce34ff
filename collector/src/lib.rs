//! # collector — the DTA collector
//!
//! Registered memory holding the DTA primitive layouts (Key-Write, Key-Increment, Append,
//! Postcarder, Sketch-Merge; design `DTA.md`), filled by RDMA from a translator, and the queries
//! that read it:
//!
//! * [`config`] — `config/collector.toml`: the address, the stores and their sizes, checked
//!   with file, key and reason.
//! * [`memory`] — the registered memory: one (hugepage) mapping seen as atomic words, one
//!   writer (the RNIC), many readers; R_Key and bounds checks.
//! * [`store`] — the stores over that memory and every query: Key-Write lookup with checksum
//!   and consensus, Key-Increment minimum, Append polling with per-consumer tails, Postcarder
//!   paths, sketch reads and point estimates, and a multi-threaded batch lookup.
//! * [`rnic`] — the soft-RNIC: a RoCEv2 responder on a UDP socket (ICRC, PSN, QPN, R_Key and
//!   bounds checked; CM server; the metadata SEND), for machines without an RDMA NIC.
//! * [`rnic_port`] — the same soft-RNIC as a frame-level agent ([`rnic_port::RnicAgent`]), on a
//!   frame port through the host runtime (AF_PACKET, or a DPDK ethdev with feature `dpdk`) or on
//!   a host of the lab: ICRC over the header as it arrived, ARP answered for the collector's
//!   address.
//! * `verbs` (cargo feature `verbs`) — the same stores served by a real RoCEv2 NIC through
//!   rdma-core: rdma_cm listeners, `ibv_reg_mr_iova`, the metadata SEND with the NIC's R_Key.
//! * [`peer`] — a packet-at-a-time RoCEv2 peer on a UDP socket (CM, metadata, single packets),
//!   for tests, benchmarks and tools.
//! * [`http`] — `collector serve --http`: the queries and counters as JSON.
//! * [`service`] — the backend (soft-RNIC on a UDP socket, on AF_PACKET or on DPDK, or verbs)
//!   on its thread plus the stores: what `collector serve` and the demo run.
//!
//! * [`hawkeye`] — the Hawkeye analyzer: telemetry reports of an incident → provenance graph →
//!   diagnosis (seed `001` §3.5), sans-IO; `collector hawkeye analyze` runs it on a lab run.
//!
//! What it is not: it never touches a report on the data path — reports arrive as RDMA writes,
//! and queries read memory.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
pub mod hawkeye;
pub mod http;
pub mod memory;
pub mod peer;
pub mod rnic;
pub mod rnic_port;
pub mod service;
pub mod store;
#[cfg(feature = "verbs")]
pub mod verbs;

pub use config::{Attach, Backend, CollectorConfig, ConfigError, MemoryKind, StoreConfig, StoreKind};
pub use rnic::{Notification, RnicConfig, RnicStats, SoftRnic, StatsSnapshot};
pub use service::{Collector, StartError};
pub use store::{AppendPoll, KeyWriteAnswer, KeyWriteHit, LOOKUP_BATCH, QueryError, Stores};
