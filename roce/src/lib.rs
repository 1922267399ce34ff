//! # roce — sans-IO RoCEv2 state machines
//!
//! What this crate will be: the RoCEv2 protocol logic that the DTA translator, the soft-RNIC
//! collector and the NIC agent share, written as state machines driven by `(now, event)` that
//! return actions, in the style of quinn-proto:
//!
//! * RC and UC requester queue pairs: PSN assignment, a bounded outstanding window, AckReq every
//!   K packets, ACK / NAK / RNR NAK / remote-access-error / atomic ACK handling by AETH syndrome,
//!   go-back-N from a bounded retransmit buffer, and timeouts;
//! * the responder side used by the soft-RNIC collector;
//! * IB CM client and server (REQ, REP, RTU, REJ, DREQ, DREP) with librdmacm's private data.
//!
//! What it is not: it reads no clock and owns no socket, and it does not define packet formats
//! (those live in the `wire` crate). It is filled by the DTA translator issue; until then it is
//! intentionally empty.
#![forbid(unsafe_code)]
