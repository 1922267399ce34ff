//! # wire — every packet format softfabric speaks
//!
//! Zero-copy views over `AsRef<[u8]>` buffers for the hot path, and plain `Repr` structs with
//! `parse` / `emit` / `buffer_len` for everything else, in the style of smoltcp's `wire` module.
//! Every parser is total: truncated, oversized or inconsistent input gives an [`Error`] naming
//! the field at fault, never a panic or an out-of-bounds read. Nothing here allocates, reads a
//! clock or touches a socket; the crate is `no_std`.
//!
//! | module | format | source |
//! |---|---|---|
//! | [`ethernet`] | Ethernet II, one IEEE 802.1Q tag | IEEE 802.3, IEEE 802.1Q |
//! | [`arp`] | ARP for IPv4 over Ethernet | RFC 826 |
//! | [`ipv4`] | IPv4 with DSCP/ECN, options skipped | RFC 791, RFC 2474, RFC 3168 |
//! | [`udp`] | UDP | RFC 768 |
//! | [`checksum`] | Internet checksum, incremental update | RFC 1071, RFC 1624 |
//! | [`pfc`] | PFC and legacy PAUSE | IEEE 802.1Qbb, IEEE 802.3 Annex 31B |
//! | [`roce`] | RoCEv2 BTH, RETH, AETH, AtomicETH, AtomicAckETH, ImmDt, DETH, CNP | IBTA Vol. 1 ch. 9, Annex A17 (RoCEv2) |
//! | [`roce::icrc`] | RoCEv2 invariant CRC | IBTA Annex A17.4.1; cross-checked with scapy `contrib.roce` |
//! | [`ibcm`] | CM MADs REQ, REP, RTU, REJ, DREQ, DREP; librdmacm private-data header | IBTA Vol. 1 §12.6, §13.4; librdmacm `cma_hdr` |
//! | [`dta`] | DTA reports (both base forms, all primitives, priority, Sketch-Merge), NACK | DTA seed `000`; reference github.com/jonlanglet/DTA; our extensions |
//! | [`hpcc_int`] | HPCC++ in-band telemetry | HPCC++ seed `004` §6.1; our encoding |
//! | [`ufab`] | µFAB probe / response | µFAB seed `003` Appendix G |
//! | [`mpls`] | MPLS label stack entries (µFAB's source route) | RFC 3032 |
//! | [`hawkeye`] | Hawkeye polling packet | Hawkeye seed `001`; reference github.com/wangshicheng1225/Hawkeye |
//! | [`daiet`] | DAIET key/value and END packets | DAIET seed `002` §4; reference github.com/AmedeoSapio/DAIET |
//! | [`stack`] | Ethernet/IPv4/UDP and RoCEv2 frame builders | — |
//! | [`spec`] | bit-level field specifications ([`spec::Header`], [`spec::Field`]) | — |
//!
//! Views (`EthernetFrame`, `Ipv4Packet`, `BthHeader`, …) check their length once in
//! `new_checked` and then read and write fields in place. `Repr::parse` takes the bytes of one
//! header (or a whole UDP payload) and `Repr::emit` writes it into a caller's buffer. Each
//! format has a `field` module (smoltcp's `mod field`, with bit widths) and `Header` constants
//! built from it: the views and Reprs read and write through those constants, and the switch's
//! declared parsers and a P4 export read the same ones — one source of truth per header.
//!
//! What this crate is not: it keeps no state and makes no decisions. Which base form a DTA
//! translator expects, which redundancy it allows, what a switch does with a PFC frame — that is
//! the `dataplane`, `roce` and `collector` crates' business.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[macro_use]
mod macros;
mod crc32;
mod error;
mod field;

pub mod arp;
pub mod checksum;
pub mod daiet;
pub mod dta;
pub mod ethernet;
pub mod hawkeye;
pub mod hpcc_int;
pub mod ibcm;
pub mod ipv4;
pub mod mpls;
pub mod pfc;
pub mod roce;
pub mod spec;
pub mod stack;
pub mod udp;
pub mod ufab;

pub use error::{Error, Result};
pub use ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, VlanRepr};
pub use field::copy_short;
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use stack::{RemoteAddr, RoceStack, UdpFlow};
pub use udp::{UdpPacket, UdpRepr};
