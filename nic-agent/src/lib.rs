//! # nic-agent — the host side of the fabric
//!
//! What this crate will be: sans-IO host agents that run unchanged in the virtual-time lab and on
//! real ports — the HPCC++ sender and receiver (seed `004`), the µFAB-E edge with bandwidth
//! guarantees, two-stage admission and path migration (seed `003`), DCQCN as the baseline, a
//! pacer enforcing both rate and window, and the Hawkeye detection agent (seed `001`).
//!
//! What it is not: it owns no clock and no socket, and it defines no packet formats (see `wire`).
//! It is filled by the lab issue; until then it is intentionally empty.
#![forbid(unsafe_code)]
