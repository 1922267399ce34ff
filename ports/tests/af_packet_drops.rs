//! An AF_PACKET port counts what the kernel dropped at its socket: frames sent on one end of a
//! veth pair to a port that does not read them overflow its socket buffer, and afterwards
//! every frame is either received or counted in `rx_missed` (PACKET_STATISTICS).
//!
//! Needs root (a veth pair in the root namespace, IPv6 off on it so nothing else arrives);
//! skipped with a message otherwise, and with `SOFTFABRIC_REQUIRE_NETNS=1` (CI as root) a
//! skip is a failure.

use std::process::Command;

use ports::buf::{Frame, HeapPool, PktBuf, Pool};
use ports::port::{AfPacketPort, PortIo};

fn sh(args: &[&str]) -> bool {
    Command::new(args[0]).args(&args[1..]).output().map(|o| o.status.success()).unwrap_or(false)
}

fn skip(why: &str) {
    assert!(std::env::var_os("SOFTFABRIC_REQUIRE_NETNS").is_none(), "AF_PACKET test required: {why}");
    eprintln!("SKIPPED: {why}");
}

/// A veth pair, removed on drop.
struct Veth(String, String);

impl Drop for Veth {
    fn drop(&mut self) {
        sh(&["ip", "link", "del", &self.0]);
    }
}

#[test]
fn every_frame_is_received_or_counted_as_missed() {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !root {
        return skip("not root: AF_PACKET and veth pairs need root");
    }
    let id = std::process::id() % 100_000;
    let veth = Veth(format!("sfd{id}a"), format!("sfd{id}b"));
    assert!(sh(&["ip", "link", "add", &veth.0, "type", "veth", "peer", "name", &veth.1]), "ip link add");
    for i in [&veth.0, &veth.1] {
        sh(&["sysctl", "-qw", &format!("net.ipv6.conf.{i}.disable_ipv6=1")]);
        assert!(sh(&["ip", "link", "set", i, "up"]), "ip link set {i} up");
    }
    let mut rx = AfPacketPort::open(&veth.0).expect("open the receiving end");
    let mut tx = AfPacketPort::open(&veth.1).expect("open the sending end");
    let mut pool = HeapPool::new(256, 2048);

    // 20 000 frames of 1000 B with a test EtherType, more than any socket buffer holds.
    const SENT: u64 = 20_000;
    let mut sent = 0u64;
    let mut burst = Vec::new();
    while sent < SENT {
        while burst.len() < 32 && sent + (burst.len() as u64) < SENT {
            let mut b = pool.alloc().expect("a buffer");
            let d = b.append(1000).expect("room");
            d.fill(0);
            d[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xaa]);
            d[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0xbb]);
            d[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
            burst.push(b);
        }
        let n = <AfPacketPort as PortIo<PktBuf>>::tx_burst(&mut tx, &mut burst, &mut pool);
        sent += n as u64;
        for b in burst.drain(..) {
            pool.free(b);
        }
    }
    assert_eq!(<AfPacketPort as PortIo<PktBuf>>::stats(&tx).tx, SENT);

    // Now read everything that was kept.
    let mut got = 0u64;
    let mut frames = Vec::new();
    let mut idle = 0;
    while idle < 50 {
        let n = rx.rx_burst(&mut pool, &mut frames, 32);
        got += frames.iter().filter(|f| f.data().get(12..14) == Some(&[0x88, 0xb5][..])).count() as u64;
        for f in frames.drain(..) {
            pool.free(f);
        }
        if n == 0 {
            idle += 1;
            std::thread::sleep(std::time::Duration::from_millis(2));
        } else {
            idle = 0;
        }
    }
    let st = <AfPacketPort as PortIo<PktBuf>>::stats(&rx);
    eprintln!("sent {SENT}, received {got}, counted missed {}", st.rx_missed);
    assert!(st.rx_missed > 0, "20 000 frames unread should overflow the socket buffer: {st:?}");
    assert_eq!(got + st.rx_missed, SENT, "received {got} + missed {} = sent {SENT}: {st:?}", st.rx_missed);
    assert_eq!(st.rx, got, "only the test's frames arrive: {st:?}");
}
