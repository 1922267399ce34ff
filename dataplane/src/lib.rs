//! # dataplane — the softfabric switch
//!
//! What this crate will be: the switch every in-network system here runs on.
//!
//! * A P4-shaped machine model: ingress and egress stages over parsed headers and intrinsic
//!   metadata, with declared resources (exact / LPM / ternary tables, register arrays, counters,
//!   trTCM meters, CRC hash units, multicast groups, mirror to CPU, recirculation).
//! * A traffic manager with per-port priority queues, byte-accurate buffer accounting, a
//!   strict-priority + DWRR scheduler, shaping, ECN marking and IEEE 802.1Qbb PFC.
//! * Port backends behind one burst rx/tx interface (memory ring, pcap, AF_PACKET, DPDK).
//! * The poll-mode runtime (`dataplane run`) and the programs: `l2l3`, DTA reporter and
//!   translator, Hawkeye, µFAB-C, HPCC++ INT, DAIET.
//!
//! What it is not: packet formats live in `wire`, RoCEv2 state machines in `roce`. It is filled
//! by the dataplane-core issue and those after it; until then it is intentionally empty.
