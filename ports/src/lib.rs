//! # ports — packet buffers and port backends
//!
//! What every runtime that moves Ethernet frames shares — the switch's poll-mode runtime
//! (`dataplane`), the collector's soft-RNIC, and the NIC agent on real ports:
//!
//! * [`buf`] — [`Frame`](buf::Frame), a buffer with headroom and tailroom changed in place (a
//!   DPDK mbuf is one), the heap-backed [`PktBuf`](buf::PktBuf) and the preallocated pools the
//!   hot path takes buffers from;
//! * [`port`] — [`PortIo`](port::PortIo), bursts in and out, over memory queues, pcap files,
//!   AF_PACKET sockets, the host's UDP sockets and (feature `dpdk`, when pkg-config finds
//!   DPDK at build time) DPDK ethdevs with the EAL set-up they need.
//!
//! What it is not: no packet is parsed here beyond what a backend needs to move it (the UDP
//! backend's Ethernet/IPv4/UDP framing, ARP answers); formats live in `wire`. `unsafe` is in
//! the AF_PACKET and DPDK backends only, each block with its `SAFETY` comment.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod buf;
pub mod host;
pub mod port;
