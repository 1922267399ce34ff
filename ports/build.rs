//! Turns on `cfg(dpdk)` when the `dpdk` feature is on and `dpdk-sys` found DPDK at build time
//! (its `links` metadata: `DEP_DPDK_AVAILABLE=1`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(dpdk)");
    println!("cargo::rerun-if-env-changed=DEP_DPDK_AVAILABLE");
    let feature = std::env::var_os("CARGO_FEATURE_DPDK").is_some();
    let found = std::env::var("DEP_DPDK_AVAILABLE").is_ok_and(|v| v == "1");
    if feature && found {
        println!("cargo::rustc-cfg=dpdk");
    }
}
