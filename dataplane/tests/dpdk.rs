//! The DPDK port backend, end to end through `dataplane run` on DPDK's virtual devices
//! (`--no-huge`, no NIC needed):
//!
//! * the pcap replay of `tests/pcap_replay.rs` through three `net_pcap` vdevs: every port sends
//!   exactly the frames scapy's model expects, byte for byte;
//! * bad EAL arguments, a missing device, a vdev that fails to probe and a mempool that cannot
//!   be created: each is one error naming the culprit, exit code 2, and no runtime or hugepage
//!   files left behind.
//!
//! Built without DPDK (pkg-config found no libdpdk), these say they are skipped — and fail if
//! `SOFTFABRIC_REQUIRE_DPDK` is set, as CI sets it.

#[cfg(not(dpdk))]
#[test]
fn dpdk_tests_skipped() {
    assert!(
        std::env::var_os("SOFTFABRIC_REQUIRE_DPDK").is_none(),
        "SOFTFABRIC_REQUIRE_DPDK is set but dataplane was built without DPDK"
    );
    eprintln!("SKIPPED: dataplane was built without DPDK (pkg-config found no libdpdk)");
}

#[cfg(dpdk)]
mod with_dpdk {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};
    use std::time::{Duration, Instant};

    fn data() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/replay")
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("softfabric-dpdk-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Where the EAL keeps a primary process's files for `prefix` (eal_create_runtime_dir).
    fn runtime_dir(prefix: &str) -> PathBuf {
        let uid = Command::new("id").arg("-u").output().unwrap();
        let base = if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
            PathBuf::from("/var/run")
        } else {
            std::env::var_os("XDG_RUNTIME_DIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
        };
        base.join("dpdk").join(prefix)
    }

    fn prefix(tag: &str) -> String {
        format!("sftest-{tag}-{}", std::process::id())
    }

    /// `[dpdk]` with these extra EAL arguments after the common ones.
    fn dpdk_section(prefix: &str, extra: &[String], rest: &str) -> String {
        let mut args: Vec<String> =
            ["-l", "0-1", "--no-huge", "-m", "256", "--no-pci"].iter().map(|s| s.to_string()).collect();
        args.push(format!("--file-prefix={prefix}"));
        args.extend_from_slice(extra);
        format!("[dpdk]\neal_args = {args:?}\nmbufs = 4095\nrx_ring = 256\ntx_ring = 256\n{rest}\n")
    }

    fn port(name: &str, device: &str, mac: &str, ip: &str) -> String {
        format!(
            "[[port]]\nname = \"{name}\"\nbackend = \"dpdk\"\ndevice = \"{device}\"\nmac = \"{mac}\"\nspeed = \"10G\"\nipv4 = [\"{ip}\"]\n"
        )
    }

    fn run_to_completion(cfg: &Path) -> Output {
        Command::new(env!("CARGO_BIN_EXE_dataplane"))
            .args(["run", "--config"])
            .arg(cfg)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    }

    /// Frames of a capture, without their timestamps.
    fn frames(path: &Path) -> Vec<Vec<u8>> {
        let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut r = pcap_file::pcap::PcapReader::new(f).unwrap();
        let mut out = Vec::new();
        while let Some(p) = r.next_packet() {
            out.push(p.unwrap().data.into_owned());
        }
        out
    }

    #[test]
    fn pcap_vdevs_forward_byte_for_byte() {
        let dir = tempdir("pcap");
        let pfx = prefix("pcap");
        let inp = data().join("in.pcap");
        let vdevs = vec![
            format!("--vdev=net_pcap0,rx_pcap={},tx_pcap={}", inp.display(), dir.join("out0.pcap").display()),
            format!("--vdev=net_pcap1,tx_pcap={}", dir.join("out1.pcap").display()),
            format!("--vdev=net_pcap2,tx_pcap={}", dir.join("out2.pcap").display()),
        ];
        let cfg = format!(
            "program = \"l2l3\"\n[runtime]\nstats_interval_s = 60\n{}{}{}{}\n[l2l3]\n\
             neighbor = [{{ ip = \"10.0.2.2\", mac = \"02:00:00:00:02:02\", port = \"p1\" }},\n\
             {{ ip = \"10.0.3.2\", mac = \"02:00:00:00:03:02\", port = \"p2\" }}]\n\
             route = [{{ prefix = \"192.168.0.0/16\", via = [\"10.0.2.2\", \"10.0.3.2\"] }}]\n",
            dpdk_section(&pfx, &vdevs, ""),
            port("p0", "net_pcap0", "02:5f:00:00:00:01", "10.0.1.1/24"),
            port("p1", "net_pcap1", "02:5f:00:00:00:02", "10.0.2.1/24"),
            port("p2", "net_pcap2", "02:5f:00:00:00:03", "10.0.3.1/24"),
        );
        let path = dir.join("switch.toml");
        std::fs::write(&path, cfg).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_dataplane"))
            .args(["run", "--config"])
            .arg(&path)
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The capture is tiny: once the switch has sent something it has received all of it;
        // then stop it (ports are flushed on close).
        let want_rx = frames(&inp).len();
        let deadline = Instant::now() + Duration::from_secs(20);
        let pid = child.id().to_string();
        std::thread::sleep(Duration::from_millis(1500));
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            // Received everything once output stopped growing and the switch has run a while.
            let sent: usize = (0..3)
                .map(|p| std::fs::metadata(dir.join(format!("out{p}.pcap"))).map_or(0, |m| m.len() as usize))
                .sum();
            if sent > 0 {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(300));
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "dataplane failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains(&format!("rx_good_packets                  {want_rx}")), "{stdout}");
        for p in 0..3 {
            let got = frames(&dir.join(format!("out{p}.pcap")));
            let want = frames(&data().join(format!("expected_p{p}.pcap")));
            assert_eq!(got, want, "port p{p}: frames differ from scapy's expectation");
        }
        assert!(!runtime_dir(&pfx).exists(), "runtime files left in {}", runtime_dir(&pfx).display());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Run `dataplane run` on a configuration that must fail to start; returns stderr. The
    /// "mempool" case asks for 4 000 000 mbufs.
    fn must_fail(tag: &str, extra: &[String], rest: &str, device: &str) -> String {
        let dir = tempdir(tag);
        let pfx = prefix(tag);
        let mut section = dpdk_section(&pfx, extra, rest);
        if tag == "mempool" {
            section = section.replace("mbufs = 4095", "mbufs = 4000000");
        }
        let cfg = format!(
            "program = \"macswap\"\n{}{}",
            section,
            port("p0", device, "02:5f:00:00:00:01", "10.0.1.1/24")
        );
        let path = dir.join("switch.toml");
        std::fs::write(&path, cfg).unwrap();
        let out = run_to_completion(&path);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        eprintln!("--- {tag}:\n{stderr}");
        assert_eq!(out.status.code(), Some(2), "{tag}: exit code; stderr:\n{stderr}");
        assert!(!runtime_dir(&pfx).exists(), "{tag}: runtime files left in {}", runtime_dir(&pfx).display());
        let _ = std::fs::remove_dir_all(&dir);
        stderr
    }

    #[test]
    fn bad_input_is_one_clear_error_exit_2_and_no_files() {
        let null0 = vec!["--vdev=net_null0".to_string()];
        // An EAL option that does not exist.
        let e = must_fail("badarg", &["--no-such-option".into()], "", "net_null0");
        assert!(e.contains("DPDK EAL initialisation failed") && e.contains("--no-such-option"), "{e}");
        assert!(!e.contains("EAL common options"), "the EAL's usage text is not the error:\n{e}");
        // A device no vdev or NIC provides.
        let e = must_fail("nodev", &null0, "", "net_null7");
        assert!(e.contains("DPDK has no device \"net_null7\"") && e.contains("net_null0"), "{e}");
        // A vdev that fails to probe: its port is missing and the EAL's complaint is quoted.
        let e = must_fail(
            "probe",
            &["--vdev=net_pcap0,rx_pcap=/nonexistent/softfabric.pcap,tx_pcap=/dev/null".into()],
            "",
            "net_pcap0",
        );
        assert!(e.contains("no device \"net_pcap0\"") && e.contains("/nonexistent/softfabric.pcap"), "{e}");
        // A mempool larger than the EAL's memory (-m 256).
        let e = must_fail("mempool", &null0, "", "net_null0");
        assert!(e.contains("dpdk.mbufs: cannot create a mempool of 4000000 mbufs"), "{e}");
    }
}
