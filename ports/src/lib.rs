//! # ports — packet buffers, port backends and the host runtime
//!
//! What every runtime that moves Ethernet frames shares — the switch's poll-mode runtime
//! (`dataplane`), the collector's soft-RNIC, the NIC agent and the DTA load generator on real
//! ports:
//!
//! * [`buf`] — [`Frame`](buf::Frame), a buffer with headroom and tailroom changed in place (a
//!   DPDK mbuf is one), the heap-backed [`PktBuf`](buf::PktBuf) and the preallocated pools the
//!   hot path takes buffers from;
//! * [`port`] — [`PortIo`](port::PortIo), bursts in and out, over memory queues, pcap files,
//!   AF_PACKET sockets, the host's UDP sockets and (when pkg-config finds DPDK at build time)
//!   DPDK ethdevs with the EAL set-up they need;
//! * [`host`] — the host runtime: a clock, the idle policy, one ARP resolver/responder, and
//!   [`HostPort`](host::HostPort), which drives any `roce::agent::Agent` (the nic-agent's
//!   `RcHost`, the collector's soft-RNIC, the DTA reporter) on a port; and the tracing setup
//!   every binary shares;
//! * [`input`] — what every binary's input handling shares: bounded file reads, the memory
//!   budget allocations sized by input are checked against, the key a TOML error is about,
//!   and the stop flag of SIGINT/SIGTERM.
//!
//! What it is not: no packet is parsed here beyond what a backend or the host runtime needs to
//! move it (Ethernet/IPv4/UDP framing for the UDP backend, ARP); formats live in `wire`,
//! protocol logic in `roce` and the agents. `unsafe` is in the AF_PACKET and DPDK backends and in
//! two hints of `buf` (a cache prefetch, a huge-page `madvise`), each block with its `SAFETY`
//! comment.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod buf;
pub mod host;
pub mod input;
pub mod port;
