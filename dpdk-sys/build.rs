//! Finds the system's DPDK with pkg-config, generates bindings with bindgen and compiles the C
//! shim. Without DPDK (`libdpdk` unknown to pkg-config) the crate builds empty and says so,
//! unless `SOFTFABRIC_REQUIRE_DPDK` is set (CI), which makes a missing DPDK an error.
//!
//! Dependents learn the outcome through the `links` metadata: `DEP_DPDK_AVAILABLE=1`.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// The DPDK release the bindings are written against (Debian 12's `libdpdk-dev`).
const MIN_VERSION: &str = "22.11";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(dpdk)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/shim.c");
    println!("cargo::rerun-if-changed=src/shim.h");
    println!("cargo::rerun-if-changed=src/wrapper.h");
    for v in ["PKG_CONFIG_PATH", "PKG_CONFIG", "SOFTFABRIC_REQUIRE_DPDK", "SOFTFABRIC_NO_DPDK"] {
        println!("cargo::rerun-if-env-changed={v}");
    }
    watch_pkg_config_dirs();
    let required = env::var_os("SOFTFABRIC_REQUIRE_DPDK").is_some_and(|v| v != "0");
    if env::var_os("SOFTFABRIC_NO_DPDK").is_some_and(|v| v != "0") {
        assert!(!required, "SOFTFABRIC_NO_DPDK and SOFTFABRIC_REQUIRE_DPDK are both set");
        return unavailable("SOFTFABRIC_NO_DPDK is set");
    }
    let lib = match pkg_config::Config::new()
        .atleast_version(MIN_VERSION)
        .cargo_metadata(false)
        .probe("libdpdk")
    {
        Ok(l) => l,
        Err(e) => {
            let why =
                format!("pkg-config cannot find libdpdk >= {MIN_VERSION} ({})", first_line(&e.to_string()));
            if required {
                panic!(
                    "SOFTFABRIC_REQUIRE_DPDK is set but {why}: install libdpdk-dev (scripts/setup-dpdk.sh)"
                );
            }
            return unavailable(&why);
        }
    };
    let cflags = pkg_config_cflags();

    // The shim first: it is a static library whose symbols the DPDK libraries resolve, so it
    // must come before them on the link line.
    let mut cc = cc::Build::new();
    cc.file("src/shim.c").opt_level(3).warnings(false);
    for f in &cflags {
        cc.flag(f);
    }
    cc.compile("softfabric_dpdk_shim");

    for p in &lib.link_paths {
        println!("cargo::rustc-link-search=native={}", p.display());
    }
    for l in &lib.libs {
        println!("cargo::rustc-link-lib={l}");
    }

    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let bindings = bindgen::Builder::default()
        .header("src/wrapper.h")
        .clang_args(&cflags)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        // The functions the port backend calls, and the shim.
        .allowlist_function("sf_.*")
        .allowlist_function(
            "rte_eal_(init|cleanup|remote_launch|wait_lcore|get_lcore_state|process_type|get_runtime_dir)",
        )
        .allowlist_function(
            "rte_eth_(dev_configure|dev_info_get|dev_start|dev_stop|dev_close|dev_count_avail)",
        )
        .allowlist_function(
            "rte_eth_(dev_get_port_by_name|dev_get_name_by_port|dev_socket_id|dev_is_valid_port)",
        )
        .allowlist_function(
            "rte_eth_(rx_queue_setup|tx_queue_setup|promiscuous_enable|macaddr_get|find_next_owned_by)",
        )
        .allowlist_function(
            "rte_eth_(link_get_nowait|link_speed_to_str|stats_get|stats_reset|xstats_get|xstats_get_names)",
        )
        .allowlist_function("rte_eth_dev_set_mtu")
        .allowlist_function("rte_pktmbuf_pool_create|rte_mempool_(free|avail_count|in_use_count)")
        .allowlist_function(
            "rte_lcore_(count|to_socket_id|is_enabled|index|to_cpu_id)|rte_get_next_lcore|rte_get_main_lcore",
        )
        .allowlist_function("rte_socket_id|rte_strerror|rte_version|rte_thread_(register|unregister)")
        .allowlist_type("rte_mbuf|rte_mempool|rte_eth_.*|rte_lcore_state_t")
        .allowlist_var(
            "RTE_ETH_.*|RTE_MBUF_.*|RTE_MAX_LCORE|RTE_MAX_ETHPORTS|RTE_PKTMBUF_HEADROOM|SOCKET_ID_ANY",
        )
        .allowlist_var("RTE_ETHER_.*|RTE_MEMPOOL_CACHE_MAX_SIZE")
        // rte_mbuf and friends are cache-aligned; let bindgen work out padding, no Debug/Copy on
        // the big unions.
        .use_core()
        .ctypes_prefix("core::ffi")
        .derive_default(true)
        .derive_debug(false)
        .layout_tests(true)
        .generate_comments(false)
        .prepend_enum_name(false)
        .generate()
        .unwrap_or_else(|e| {
            panic!(
                "bindgen failed on the DPDK headers ({e}); it needs libclang: install libclang-dev \
                 (or set SOFTFABRIC_NO_DPDK=1 to build without the DPDK backend)"
            )
        });
    bindings.write_to_file(out.join("bindings.rs")).expect("writing bindings.rs");
    println!("cargo::rustc-cfg=dpdk");
    println!("cargo::metadata=available=1");
    println!("cargo::metadata=version={}", lib.version);
}

fn unavailable(why: &str) {
    println!(
        "cargo::warning=building without DPDK: {why}. The DPDK port backend is left out; install libdpdk-dev to get it."
    );
    println!("cargo::metadata=available=0");
}

/// Rerun when a pkg-config directory changes, so that installing (or upgrading, or removing)
/// libdpdk-dev after a first build is seen: without this the crate stayed built without DPDK
/// until `cargo clean`, and `dataplane` kept refusing DPDK ports. The directories are
/// pkg-config's default search path and `PKG_CONFIG_PATH`, those that exist (a missing path
/// would make cargo rerun this script on every build).
fn watch_pkg_config_dirs() {
    let pc = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let default = Command::new(&pc)
        .args(["--variable", "pc_path", "pkg-config"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let extra = env::var("PKG_CONFIG_PATH").unwrap_or_default();
    for dir in default.split(':').chain(extra.split(':')) {
        if !dir.is_empty() && PathBuf::from(dir).is_dir() {
            println!("cargo::rerun-if-changed={dir}");
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s).trim()
}

/// The compiler flags DPDK's users build with: include paths, `-include rte_config.h`, the
/// target CPU level (`-march=corei7` on Debian). The pkg-config crate only keeps `-I` and `-D`.
fn pkg_config_cflags() -> Vec<String> {
    let pc = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&pc)
        .args(["--cflags", "libdpdk"])
        .output()
        .unwrap_or_else(|e| panic!("running {pc} --cflags libdpdk: {e}"));
    assert!(out.status.success(), "{pc} --cflags libdpdk failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut flags = Vec::new();
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if w == "-include" {
            if let Some(f) = words.next() {
                flags.push("-include".to_string());
                flags.push(f.to_string());
            }
        } else {
            flags.push(w.to_string());
        }
    }
    flags
}
