//! Network-namespace test support shared by `dataplane/tests/netns.rs` and
//! `nic-agent/tests/netns.rs` (included by `#[path]`, as the workspace has no test-support
//! crate): hosts in namespaces on veth pairs, and `dataplane run` as a child process.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Says why the test is skipped; with `SOFTFABRIC_REQUIRE_NETNS=1` (CI) a skip is a failure.
pub fn skip(why: &str) -> bool {
    assert!(std::env::var_os("SOFTFABRIC_REQUIRE_NETNS").is_none(), "network-namespace test required: {why}");
    eprintln!("SKIPPED: {why}");
    false
}

pub fn available() -> bool {
    // The effective user, as `id -u` prints it.
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.as_deref() != Some("0") {
        return skip("not root: network namespaces and AF_PACKET need root");
    }
    ["ip", "ping", "python3"].into_iter().all(have)
}

/// Whether `tool` is on the PATH; if not, the test is skipped (or fails where required).
pub fn have(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    found || skip(&format!("{tool} not installed"))
}

pub fn run(args: &[&str]) -> std::process::Output {
    Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

pub fn must(args: &[&str]) {
    let o = run(args);
    assert!(o.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&o.stderr));
}

/// The switch's ports of a routed lab ([`Lab::routed`]): AF_PACKET on the two switch-side
/// veths, gateways 10.0.1.1 and 10.0.2.1.
pub const ROUTED_PORTS: &str = r#"
[[port]]
name = "p0"
backend = "af_packet"
iface = "{S0}"
mac = "02:5f:00:00:00:01"
speed = "10G"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "p1"
backend = "af_packet"
iface = "{S1}"
mac = "02:5f:00:00:00:02"
speed = "10G"
ipv4 = ["10.0.2.1/24"]
"#;

/// Namespaces and interfaces of one test, removed on drop.
pub struct Lab {
    pub ns: [String; 2],
    pub sw: [String; 2],
}

impl Lab {
    pub fn new(tag: &str) -> Self {
        let id = std::process::id() % 100_000;
        let lab = Self {
            ns: [format!("sf{tag}{id}a"), format!("sf{tag}{id}b")],
            sw: [format!("sf{tag}{id}s0"), format!("sf{tag}{id}s1")],
        };
        lab.cleanup();
        lab
    }

    /// Two hosts on their own subnets, 10.0.1.2/24 and 10.0.2.2/24, routed through the switch
    /// (configure it with [`ROUTED_PORTS`]).
    pub fn routed(tag: &str) -> Self {
        let lab = Self::new(tag);
        lab.host(0, "10.0.1.2/24", Some("10.0.1.1"));
        lab.host(1, "10.0.2.2/24", Some("10.0.2.1"));
        lab
    }

    /// Host `i` in its namespace with `addr`, its veth peer `sw[i]` up in the root namespace.
    pub fn host(&self, i: usize, addr: &str, gateway: Option<&str>) {
        let (ns, sw) = (&self.ns[i], &self.sw[i]);
        must(&["ip", "netns", "add", ns]);
        must(&["ip", "link", "add", sw, "type", "veth", "peer", "name", "eth0", "netns", ns]);
        must(&["ip", "link", "set", sw, "up"]);
        must(&["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]);
        must(&["ip", "-n", ns, "addr", "add", addr, "dev", "eth0"]);
        must(&["ip", "-n", ns, "link", "set", "eth0", "up"]);
        must(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        if let Some(gw) = gateway {
            must(&["ip", "-n", ns, "route", "add", "default", "via", gw]);
        }
    }

    /// Host `i` computes its own checksums instead of leaving them to the veth (offload): a
    /// switch that forwards raw frames without completing them (DPDK's `net_af_packet` does
    /// not) would otherwise deliver UDP with a partial checksum, as no real NIC ever sends.
    pub fn checksums_in_software(&self, i: usize) {
        let o = self.exec(i, &["ethtool", "-K", "eth0", "tx", "off"]);
        assert!(o.status.success(), "ethtool: {}", String::from_utf8_lossy(&o.stderr));
    }

    pub fn exec(&self, i: usize, args: &[&str]) -> std::process::Output {
        let mut v = vec!["ip", "netns", "exec", &self.ns[i]];
        v.extend_from_slice(args);
        run(&v)
    }

    fn cleanup(&self) {
        for ns in &self.ns {
            let _ = run(&["ip", "netns", "del", ns]);
        }
        for sw in &self.sw {
            let _ = run(&["ip", "link", "del", sw]);
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// The switch process, stopped with SIGTERM on drop.
pub struct Switch {
    child: Option<Child>,
    dir: PathBuf,
}

impl Switch {
    /// `dataplane run` (the binary at `bin`) with `ports` (`{S0}`, `{S1}`: the switch-side
    /// veths) appended to an l2l3 config.
    pub fn start(bin: &std::path::Path, lab: &Lab, tag: &str, ports: &str) -> Self {
        Self::start_program(bin, lab, tag, "l2l3", ports)
    }

    /// `dataplane run` of `program` with `rest` (ports with `{S0}`, `{S1}`, and sections).
    pub fn start_program(bin: &std::path::Path, lab: &Lab, tag: &str, program: &str, rest: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("softfabric-netns-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = format!(
            "program = \"{program}\"\n[runtime]\nstats_interval_s = 60\n{}",
            rest.replace("{S0}", &lab.sw[0]).replace("{S1}", &lab.sw[1])
        );
        let path = dir.join("switch.toml");
        std::fs::write(&path, cfg).unwrap();
        let mut child = Command::new(bin)
            .args(["run", "--config"])
            .arg(&path)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the pipelines to start.
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut said = String::new();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.contains("pipeline(s) running") => break,
                Some(Ok(l)) => {
                    said += &l;
                    said.push('\n');
                }
                _ => panic!("dataplane did not start ({:?}); it said:\n{said}", child.try_wait()),
            }
            assert!(Instant::now() < deadline, "dataplane did not start in time; it said:\n{said}");
        }
        std::thread::spawn(move || for _ in lines {});
        Self { child: Some(child), dir }
    }

    /// SIGTERM, then the final counters it prints.
    pub fn stop(mut self) -> String {
        let mut child = self.child.take().unwrap();
        must(&["kill", "-TERM", &child.id().to_string()]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "dataplane did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "dataplane exited with {:?}", out.status);
        String::from_utf8_lossy(&out.stdout).to_string()
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
