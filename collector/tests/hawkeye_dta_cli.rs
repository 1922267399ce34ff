//! `collector hawkeye dta` against a collector's HTTP API: the two switches of a PFC storm sent
//! their reports as DTA Append words, one list each; the CLI reads both lists over HTTP (until
//! a read comes back empty, as `collector query append` does), reassembles the reports, and
//! diagnoses the storm naming the host. The collector here is a stand-in that answers
//! `/append/LIST` as `collector serve --http` does (the soft-RNIC path that fills real lists is
//! covered by tests/hawkeye_dta_netns.rs).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;

use wire::hawkeye::report::words;

#[path = "support/storm.rs"]
mod storm;
use storm::TOPOLOGY;

#[test]
fn reports_read_back_from_append_lists_are_diagnosed() {
    let [s1, s2] = storm::reports();
    let (list1, list2): (Vec<u32>, Vec<u32>) = (words(&s1).collect(), words(&s2).collect());
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    let serve = std::thread::spawn(move || {
        let mut asked = Vec::new();
        let mut served = [false; 2];
        // Each list: its words once, then empty.
        for stream in server.incoming().take(4) {
            let mut s = stream.unwrap();
            // The whole request (it may come in several segments), then the answer.
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                req.extend_from_slice(&buf[..n]);
            }
            let line = String::from_utf8_lossy(&req).lines().next().unwrap_or("").to_string();
            asked.push(line.clone());
            let (i, words) = if line.contains("/append/1?") { (0, &list1) } else { (1, &list2) };
            let entries = if served[i] { Vec::new() } else { words.clone() };
            served[i] = true;
            let body = format!(
                "{{\"list\":{},\"entries\":{:?},\"from\":0,\"next\":{},\"lost\":0}}",
                i + 1,
                entries,
                entries.len()
            );
            write!(s, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{body}").unwrap();
        }
        asked
    });
    let dir = std::env::temp_dir().join(format!("softfabric-hk-dta-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("topo.json"), TOPOLOGY).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_collector"))
        .args(["hawkeye", "dta", "--http", &addr.to_string(), "--list", "1", "--list", "2"])
        .arg("--topology")
        .arg(dir.join("topo.json"))
        .arg("--json")
        .arg(dir.join("out.jsonl"))
        .output()
        .unwrap();
    let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}{err}");
    assert!(text.contains("PFC storm") && text.contains("host 1 (10.0.1.2)"), "{text}{err}");
    assert!(err.contains("list 1: ") && err.contains("1 reports"), "{err}");
    let asked = serve.join().unwrap();
    assert!(asked.iter().all(|l| l.contains("consumer=hawkeye")), "{asked:?}");
    let j = std::fs::read_to_string(dir.join("out.jsonl")).unwrap();
    assert!(j.contains("\"anomaly\":\"pfc_storm\""), "{j}");
    std::fs::remove_dir_all(&dir).ok();
}
