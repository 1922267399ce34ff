//! # roce — the sans-IO protocol cores
//!
//! The protocol logic the switch programs, the soft-RNIC collector, the NIC agents and the host
//! tools share, written as state machines driven by `(now, event)` that return what to send, in
//! one vocabulary after quinn-proto's ([`agent`]: `handle_packet`, `handle_timeout`,
//! `poll_transmit`, `poll_timeout`):
//!
//! * [`agent`] — that vocabulary, and [`agent::Agent`], the frame-level host agent every host
//!   runtime (a real port, the lab) drives;
//! * [`requester`] — RC and UC requester queue pairs: PSN assignment, a bounded outstanding
//!   window, AckReq every K packets, ACK / PSN-sequence NAK / RNR NAK / remote-access-error /
//!   atomic ACK handling by AETH syndrome, go-back-N from a bounded retransmit ring, timeouts;
//! * [`responder`] — the responder side: PSN order (duplicates re-acknowledged, a gap NAKed
//!   once), R_Key and bounds checks through a [`responder::Memory`], WRITE, WRITE with
//!   Immediate, SEND and atomics (with the replay of duplicate atomics IB requires);
//! * [`endpoint`] — a passive endpoint (CM server, responder QPs over registered memory, the
//!   metadata SEND to every new peer): the core of the DTA soft-RNIC collector;
//! * [`cm`] — the IB communication manager over RoCEv2: the active side (REQ, RTU, REJ handling
//!   with backoff, DREQ/DREP) and the passive side (listeners by librdmacm service ID, REP,
//!   RTU), with librdmacm's private-data header, and [`cm::Metadata`], the 16-byte SEND with
//!   which a DTA collector announces a registered region;
//! * [`daiet`] — DAIET's mapper and reducer, the aggregation functions the switch shares, and
//!   WordCount's corpus generator and plain count;
//! * [`dta`] — the DTA reporter's protocol: sequence numbers, the reports kept for NACKs, the
//!   collector mapping, the load generator, and the reporter as a host agent.
//!
//! What it is not: it reads no clock and owns no socket, and it defines no packet formats
//! (those live in `wire`; [`frames`] turns this crate's decisions into `wire` reprs). Callers
//! pass time in nanoseconds and build the frames.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod agent;
pub mod cm;
pub mod daiet;
pub mod dta;
pub mod endpoint;
pub mod frames;
pub mod requester;
pub mod responder;

pub use requester::{Op, Post, PostError, QpError, Requester, RequesterConfig, Response, Transport};
