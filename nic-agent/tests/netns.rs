//! The agent on real ports: two `nic-agent`s in their own network namespaces, on veth pairs to
//! `dataplane run` (AF_PACKET, routed, INT stamping at egress with `int_switch_id`), move a
//! file as a RoCEv2 RC flow paced by HPCC++. The receiver checks every ICRC and writes what it
//! got; the test compares it with what was sent, and checks from both agents' reports that
//! the switch's INT reached the sender and that the flow kept to its line rate.
//!
//! Needs root, `ip`, `ping` and `python3` as the switch's own netns test does (skipped without
//! them, a failure with `SOFTFABRIC_REQUIRE_NETNS=1`), and the `dataplane` binary built beside
//! `nic-agent` (`cargo test --workspace` builds both).

#[path = "../../dataplane/tests/support/netns.rs"]
mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{Lab, Switch, available};

/// The `dataplane` binary of the same build as this test's `nic-agent`.
fn dataplane_bin() -> PathBuf {
    let agent = PathBuf::from(env!("CARGO_BIN_EXE_nic-agent"));
    let bin = agent.with_file_name("dataplane");
    assert!(
        bin.exists(),
        "{} not built: run `cargo build -p dataplane` first (cargo test --workspace builds it)",
        bin.display()
    );
    bin
}

/// The number after `label` in `line` ("sent 4194304 bytes" → 4194304 for "sent").
fn number_after(line: &str, label: &str) -> f64 {
    let at = line.find(label).unwrap_or_else(|| panic!("no {label:?} in {line:?}")) + label.len();
    line[at..]
        .trim_start_matches([' ', '('])
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in {line:?}"))
}

#[test]
fn an_hpcc_paced_rc_flow_crosses_the_switch_with_int_and_arrives_intact() {
    if !available() {
        return;
    }
    let lab = Lab::routed("n");
    let cfg = format!("[l2l3]\nint_switch_id = 7\n{}", support::ROUTED_PORTS);
    let sw = Switch::start(&dataplane_bin(), &lab, "n", &cfg);
    let dir = std::env::temp_dir().join(format!("softfabric-agent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 2 MB of varied bytes; the last packet is partial (and padded on the wire).
    let size = 2_000_003usize;
    let data: Vec<u8> =
        (0..size as u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8).collect();
    let (src, dst) = (dir.join("sent.bin"), dir.join("received.bin"));
    std::fs::write(&src, &data).unwrap();
    let agent = env!("CARGO_BIN_EXE_nic-agent");
    let receiver = Command::new("ip")
        .args(["netns", "exec", &lab.ns[1], agent, "recv", "--iface", "eth0", "--ip", "10.0.2.2"])
        .args(["--gateway", "10.0.2.1", "--peer", "10.0.1.2", "--deadline-s", "60", "--size"])
        .arg(size.to_string())
        .arg("--out")
        .arg(&dst)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // 1 Gb/s line rate: HPCC++'s pacer, not the veths, sets the pace.
    let sender = Command::new("ip")
        .args(["netns", "exec", &lab.ns[0], agent, "send", "--iface", "eth0", "--ip", "10.0.1.2"])
        .args(["--gateway", "10.0.1.1", "--peer", "10.0.2.2", "--deadline-s", "60", "--cc", "hpcc"])
        .args(["--rate-gbps", "1", "--base-rtt-us", "200", "--int-hops", "1", "--file"])
        .arg(&src)
        .output()
        .unwrap();
    let receiver = receiver.wait_with_output().unwrap();
    let table = sw.stop();
    let (s_out, r_out) = (
        String::from_utf8_lossy(&sender.stdout).to_string(),
        String::from_utf8_lossy(&receiver.stdout).to_string(),
    );
    eprintln!("sender:   {s_out}receiver: {r_out}switch:\n{table}");
    assert!(sender.status.success(), "sender failed: {s_out}{}", String::from_utf8_lossy(&sender.stderr));
    assert!(
        receiver.status.success(),
        "receiver failed: {r_out}{}",
        String::from_utf8_lossy(&receiver.stderr)
    );
    let got = std::fs::read(&dst).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(got.len(), size, "received {} of {size} bytes", got.len());
    assert!(got == data, "the data arrived altered");
    // Every data packet crossed the switch and was stamped; the ACKs reflected the INT back.
    assert_eq!(number_after(&r_out, "bad icrc"), 0.0);
    assert!(number_after(&r_out, "data packets with INT") >= (size / 1024) as f64);
    let acks = number_after(&s_out, "acks");
    assert!(acks > 0.0 && number_after(&s_out, "acks with INT") >= 0.9 * acks, "{s_out}");
    // Paced: never above the 1 Gb/s line rate (5 % for timing), with HPCC++'s window in force.
    let rate = number_after(&s_out, "s (");
    assert!(rate > 0.0 && rate <= 1.05, "sent at {rate} Gb/s over a 1 Gb/s line rate: {s_out}");
    assert!(number_after(&s_out, "window") > 0.0, "{s_out}");
}
