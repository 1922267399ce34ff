//! µFAB-E, the active edge (seed `003` §3.3–§3.5, §4.1, Appendices E and F), sans-IO: the same
//! code in the lab and on real ports.
//!
//! * [`tokens`] — Algorithm 1 (a VF's tokens over its VM-pairs: sender assignment, receiver
//!   max-min admission) and Algorithm 2 (a pair's tokens over its paths).
//! * [`rate`] — Eqn (1)–(3), the "qualified" test and the in-flight bound, from the telemetry a
//!   response carries.
//! * [`pair`] — one VM-pair: candidate paths, probes, two-stage admission, path migration with
//!   the host's freeze window, finish probes.
//! * [`host`] — a host's NIC running µFAB-E over RC flows: a frame-level agent for the lab and
//!   real ports (probes and responses, labelled data, Algorithm 1 per VF).
//! * [`sched`] — the sender's scheduler: 8 weighted VF classes, round-robin of VFs in a class
//!   and of pairs in a VF, each pair gated by its window.
//!
//! What it is not: it builds no frames (the runtime puts a [`pair::ProbeTx`] behind the path's
//! labels, `wire::mpls`, and IPv4/UDP to port 40050) and reads no clock. The switch half, µFAB-C,
//! is `dataplane`'s `ufab` program.

pub mod host;
pub mod pair;
pub mod rate;
pub mod sched;
pub mod tokens;
