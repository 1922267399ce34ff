//! pcap replay: a capture of mixed traffic into the `l2l3` switch, the expected captures out,
//! byte for byte.
//!
//! `tests/data/replay/gen.py` (scapy) wrote the input and the expected outputs from its own model
//! of the program: ARP answered, routed packets rewritten with a from-scratch checksum, ECMP
//! members chosen by CRC-16/ARC, floods, the switch's ARP request for an unresolved next hop, and
//! drops (TTL 1, bad checksum, no route, runt). The switch replays on the capture's clock
//! (`clock = "pcap"`), so its output timestamps are the input's and the files are identical.

use std::path::PathBuf;
use std::process::Command;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/replay")
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("softfabric-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn replay_produces_the_expected_captures() {
    let dir = tempdir("replay");
    for f in ["in.pcap", "replay.toml"] {
        std::fs::copy(data().join(f), dir.join(f)).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_dataplane"))
        .args(["run", "--config", "replay.toml"])
        .current_dir(&dir)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "dataplane failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    for p in 0..3 {
        let got = std::fs::read(dir.join(format!("out_p{p}.pcap"))).unwrap();
        let want = std::fs::read(data().join(format!("expected_p{p}.pcap"))).unwrap();
        assert!(got == want, "port p{p}: output differs from expected_p{p}.pcap (kept in {})", dir.display());
    }
    // The drops are counted under their reasons.
    for reason in ["malformed", "bad_checksum", "ttl_expired", "no_route", "no_neighbor"] {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(reason) && l.trim_end().ends_with(" 1")),
            "{reason} in\n{stdout}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The committed captures are what the generator writes (so they cannot drift from it).
#[test]
fn generator_still_writes_the_committed_captures() {
    let py = std::env::var("SOFTFABRIC_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into());
    let dir = tempdir("replay-gen");
    let ok =
        Command::new(&py).arg(data().join("gen.py")).arg(&dir).output().is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("SOFTFABRIC_REQUIRE_SCAPY").as_deref() == Ok("1") {
            panic!("scapy is required (SOFTFABRIC_REQUIRE_SCAPY=1) but {py} gen.py failed");
        }
        eprintln!("SKIPPED: scapy not available for {py}; the committed captures were still replayed");
        return;
    }
    for f in ["in.pcap", "expected_p0.pcap", "expected_p1.pcap", "expected_p2.pcap"] {
        assert_eq!(std::fs::read(dir.join(f)).unwrap(), std::fs::read(data().join(f)).unwrap(), "{f}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
