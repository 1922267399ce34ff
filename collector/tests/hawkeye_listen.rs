//! `collector hawkeye listen` on loopback: a PFC storm's two reports (the victim's first hop,
//! paused towards the switch across, and that switch's port paused by the host it faces) sent
//! as the switches' control sides send them, plus a datagram that is not a report; the
//! listener prints the storm's diagnosis naming the host, writes it as JSON, and counts the
//! stray datagram.

use std::net::UdpSocket;
use std::process::Command;

#[path = "support/storm.rs"]
mod storm;
use storm::TOPOLOGY;

#[test]
fn the_listener_diagnoses_what_arrives() {
    let dir = std::env::temp_dir().join(format!("softfabric-hk-listen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("topo.json"), TOPOLOGY).unwrap();
    let port = {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap().port()
    };
    let json = dir.join("out.jsonl");
    let child = Command::new(env!("CARGO_BIN_EXE_collector"))
        .args(["hawkeye", "listen", "--bind", &format!("127.0.0.1:{port}"), "--window-us", "300000"])
        .arg("--topology")
        .arg(dir.join("topo.json"))
        .arg("--json")
        .arg(&json)
        .args(["--duration", "2"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for r in storm::reports() {
        tx.send_to(&r, ("127.0.0.1", port)).unwrap();
    }
    tx.send_to(b"not a report", ("127.0.0.1", port)).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("PFC storm") && text.contains("host 1 (10.0.1.2)"), "{text}");
    assert!(text.contains("2 reports, 1 datagrams that were not reports, 1 incidents"), "{text}");
    let j = std::fs::read_to_string(&json).unwrap();
    assert!(j.contains("\"anomaly\":\"pfc_storm\""), "{j}");
    std::fs::remove_dir_all(&dir).ok();
}
