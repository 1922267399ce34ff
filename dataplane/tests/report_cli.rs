//! `dataplane report`, the DTA load generator, as a user runs it: into a pcap file (every
//! report parses, numbered in order, spread over the collectors by the reporters' mapping) and
//! over UDP on loopback (a NACK from a stand-in translator brings back what followed it).

use std::net::{Ipv4Addr, UdpSocket};
use std::process::Command;
use std::time::Duration;

use pcap_file::pcap::PcapReader;
use roce::dta::collector_for;
use wire::dta::{DtaRepr, Format, NackRepr, Primitive};

fn dataplane() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dataplane"))
}

#[test]
fn pcap_holds_numbered_reports_spread_over_collectors() {
    let dir = std::env::temp_dir().join(format!("softfabric-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("reports.pcap");
    let out = dataplane()
        .args(["report", "--to", "10.0.0.51,10.0.0.52", "--primitive", "keyincrement", "--redundancy", "3"])
        .args(["--count", "600", "--rate", "0", "--keys", "50", "--counter", "7", "--pcap"])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("sent          600 reports"));
    let mut r = PcapReader::new(std::fs::File::open(&pcap).unwrap()).unwrap();
    let (mut n, mut per_collector) = (0u32, [0u32; 2]);
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let f = &p.data;
        let dst = Ipv4Addr::new(f[30], f[31], f[32], f[33]);
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), 40040);
        let udp_len = usize::from(u16::from_be_bytes([f[38], f[39]]));
        let rep = DtaRepr::parse(&f[42..34 + udp_len], Format::default()).unwrap();
        assert_eq!(rep.seq.unwrap().seqnum, n as u8, "report {n} numbered in order");
        let Primitive::KeyIncrement { redundancy, key, counter } = rep.primitive else { panic!("{rep:?}") };
        assert_eq!((redundancy, key, counter), (3, n % 50, 7));
        let c = collector_for(&rep.primitive, 2);
        assert_eq!(dst, [Ipv4Addr::new(10, 0, 0, 51), Ipv4Addr::new(10, 0, 0, 52)][c]);
        per_collector[c] += 1;
        n += 1;
    }
    assert_eq!(n, 600);
    assert!(per_collector.iter().all(|&c| c > 150), "{per_collector:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn udp_reports_and_a_nack_brings_back_what_followed() {
    // The stand-in translator: reports arrive on 127.0.0.1:40040 (another test run may hold
    // the port: then there is nothing to test against here).
    let Ok(sock) = UdpSocket::bind("127.0.0.1:40040") else {
        eprintln!("SKIPPED: 127.0.0.1:40040 is in use");
        return;
    };
    sock.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let child = dataplane()
        .args(["report", "--to", "127.0.0.1", "--primitive", "append", "--count", "40", "--rate", "200"])
        .args(["--bind", "127.0.0.1:0", "--linger-ms", "1500"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    let mut nacked = false;
    while seen.len() < 40 + 9 {
        let (n, from) = sock.recv_from(&mut buf).expect("reports keep coming");
        // The reporter's hello first: answered as a translator does, with its nonce.
        if let Ok(h) = wire::dta::HelloRepr::parse(&buf[..n]) {
            assert!(seen.is_empty(), "the hello comes before any report");
            let ack = NackRepr {
                seqnum: 0,
                nack: false,
                slow_down: false,
                ext: Some(wire::dta::NackExt::Hello { epoch: h.epoch, nonce: h.nonce }),
            };
            let mut m = [0u8; 14];
            ack.emit(&mut m).unwrap();
            sock.send_to(&m, (from.ip(), 40044)).unwrap();
            continue;
        }
        let rep = DtaRepr::parse(&buf[..n], Format::default()).unwrap();
        seen.push(rep.seq.unwrap().seqnum);
        if !nacked && seen.len() == 20 {
            // Lost after 10: NACK it (to the reporter's address, port 40044).
            let mut m = [0u8; 2];
            NackRepr::plain(10, true, false).emit(&mut m).unwrap();
            sock.send_to(&m, (from.ip(), 40044)).unwrap();
            nacked = true;
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("nacks         1"), "{stdout}");
    // 11..=19, and the one or two it may have sent after 19 before it read the NACK.
    let resent: u32 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("resent"))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .expect("a resent line");
    assert!((9..=11).contains(&resent), "{stdout}");
    // 11..=19 again, in order, right after the NACK (the sender may have sent one or two more
    // first while it had not read the NACK yet).
    let at = seen.iter().skip(20).position(|&s| s == 11).expect("11 resent") + 20;
    assert_eq!(&seen[at..at + 9], &(11..=19).collect::<Vec<u8>>()[..], "{seen:?}");
}
