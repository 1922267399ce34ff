//! The bindings link against the DPDK pkg-config found: `rte_version()` names 22.11.

#[cfg(dpdk)]
#[test]
fn links_against_dpdk_22_11() {
    // SAFETY: rte_version returns a pointer to a static NUL-terminated string and needs no EAL.
    let v = unsafe { core::ffi::CStr::from_ptr(dpdk_sys::rte_version()) };
    let v = v.to_str().unwrap();
    assert!(v.starts_with("DPDK 22.11"), "{v}");
    const { assert!(dpdk_sys::AVAILABLE) };
    // The shim is linked and answers without an EAL.
    // SAFETY: a plain constant getter.
    assert_eq!(unsafe { dpdk_sys::sf_pktmbuf_headroom_default() }, dpdk_sys::RTE_PKTMBUF_HEADROOM);
}

#[cfg(not(dpdk))]
#[test]
fn built_without_dpdk() {
    assert!(
        std::env::var_os("SOFTFABRIC_REQUIRE_DPDK").is_none(),
        "SOFTFABRIC_REQUIRE_DPDK is set but dpdk-sys was built without DPDK"
    );
    eprintln!("SKIPPED: dpdk-sys was built without DPDK (libdpdk not found by pkg-config)");
}
