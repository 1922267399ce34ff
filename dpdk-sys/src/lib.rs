//! # dpdk-sys — FFI to the system's DPDK
//!
//! Raw bindings to DPDK 22.11 as Debian ships it (`libdpdk-dev`): `build.rs` finds it with
//! pkg-config, generates the bindings with bindgen at build time (nothing generated is
//! committed) and compiles `src/shim.c`, which exports DPDK's static-inline fast-path calls
//! (`rte_eth_rx_burst`/`tx_burst`, mbuf alloc/free and bulk variants, the data pointer,
//! reference counts, prefetch, `rte_errno`, `rte_lcore_id`) as real symbols under `sf_*` names.
//! Only the functions and types the softfabric port backend uses are bound.
//!
//! Without DPDK the crate builds empty, [`AVAILABLE`] is `false`, and cargo prints a warning;
//! with `SOFTFABRIC_REQUIRE_DPDK=1` a missing DPDK is a build error instead. Dependents see the
//! outcome as `DEP_DPDK_AVAILABLE` in their build scripts.
//!
//! What it is not: a safe API — the `ports` crate's DPDK backend (`ports::port::dpdk`) wraps it — and not the crates.io
//! `dpdk-sys`, which binds DPDK 16.07.

#![no_std]

/// Whether the bindings were generated (DPDK was found at build time).
#[cfg(dpdk)]
pub const AVAILABLE: bool = true;
/// Whether the bindings were generated (DPDK was found at build time).
#[cfg(not(dpdk))]
pub const AVAILABLE: bool = false;

#[cfg(dpdk)]
#[allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    clippy::all,
    clippy::pedantic,
    rustdoc::all
)]
mod bindings {
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}

#[cfg(dpdk)]
pub use bindings::*;
