//! `collector hawkeye listen` on loopback: a PFC storm's two reports (the victim's first hop,
//! paused towards the switch across, and that switch's port paused by the host it faces) sent
//! as the switches' control sides send them, plus a datagram that is not a report; the
//! listener prints the storm's diagnosis naming the host, writes it as JSON, and counts the
//! stray datagram.

use std::net::UdpSocket;
use std::process::Command;

use wire::hawkeye::FiveTuple;
use wire::hawkeye::report::{Entry, ReportHeader, emit_report};

const TOPOLOGY: &str = r#"{"switches":[
 {"switch_id":1,"ports":[{"port":0,"host":0,"ip":"10.0.0.2"},{"port":1,"switch_id":2,"peer_port":0}]},
 {"switch_id":2,"ports":[{"port":0,"switch_id":1,"peer_port":1},{"port":1,"host":1,"ip":"10.0.1.2"}]}]}"#;

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
    let victim = FiveTuple {
        src_ip: [10, 0, 0, 2].into(),
        dst_ip: [10, 0, 1, 2].into(),
        protocol: 17,
        src_port: 1000,
        dst_port: 4791,
    };
    let h = |sw, in_port, out_port| ReportHeader {
        flag: 3,
        switch_id: sw,
        event_id: 9,
        in_port,
        out_port,
        seq: 0,
        part: 0,
        last: true,
    };
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut b = [0u8; 1472];
    let s1 = [
        Entry::Port { port: 1, epoch_id: 1, pkts: 50, paused: 40, qdepth_sum: 10_000 },
        Entry::Flow { port: 1, epoch_id: 1, flow: victim, pkts: 50, paused: 40, qdepth_sum: 10_000 },
        Entry::Meter { out_port: 1, epoch_id: 1, in_port: 0, bytes: 50_000 },
    ];
    let n = emit_report(&h(1, 0, 1), &s1, &mut b).unwrap();
    tx.send_to(&b[..n], ("127.0.0.1", port)).unwrap();
    let s2 = [
        Entry::Port { port: 1, epoch_id: 1, pkts: 10, paused: 10, qdepth_sum: 0 },
        Entry::Flow { port: 1, epoch_id: 1, flow: victim, pkts: 10, paused: 10, qdepth_sum: 0 },
        Entry::Meter { out_port: 1, epoch_id: 1, in_port: 0, bytes: 10_000 },
    ];
    let n = emit_report(&h(2, 0, 1), &s2, &mut b).unwrap();
    tx.send_to(&b[..n], ("127.0.0.1", port)).unwrap();
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
