//! The soft-RNIC on ports that move whole frames — an interface through AF_PACKET, and a DPDK
//! ethdev (`net_af_packet` vdev, `--no-huge`): a veth pair, the collector on one end (no IP
//! address on it: the soft-RNIC answers ARP for its own), a translator-side peer sending whole
//! frames on the other end. CM and metadata, a WRITE and a WRITE with Immediate land and are
//! ACKed, a bad ICRC is dropped and counted — the ICRC checked over the IPv4 header as it
//! arrived on the wire.
//!
//! Needs root (veth, AF_PACKET) and `ip`; otherwise it says it is skipped (and fails when
//! `SOFTFABRIC_REQUIRE_NETNS` is set, as in CI). The DPDK test also says it is skipped when the
//! collector was built without DPDK, and fails then if `SOFTFABRIC_REQUIRE_DPDK` is set.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use collector::peer::UdpPeer;
use collector::{Collector, CollectorConfig, Notification};
use roce::frames;
use roce::requester::{Op, Transport};
use wire::roce::Opcode;

/// The peer's and the collector's addresses in subnet 10.79.`net`.0/24 (one per test: they run
/// at the same time).
fn addrs(net: u8) -> (Ipv4Addr, Ipv4Addr) {
    (Ipv4Addr::new(10, 79, net, 1), Ipv4Addr::new(10, 79, net, 2))
}

fn root_with_ip() -> bool {
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0"));
    let ip = Command::new("ip").arg("-V").output().is_ok_and(|o| o.status.success());
    if root && ip {
        return true;
    }
    assert!(
        std::env::var_os("SOFTFABRIC_REQUIRE_NETNS").is_none(),
        "AF_PACKET test required but not root or no `ip`"
    );
    eprintln!("SKIPPED: needs root and iproute2");
    false
}

fn must(args: &[&str]) {
    let o = Command::new(args[0]).args(&args[1..]).output().expect("run");
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// A veth pair, removed on drop.
struct Veth(String);

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).output();
    }
}

/// A veth pair `a`/`b` (`a` holds the peer's address), both up, removed on drop.
fn veth_pair(prefix: &str, peer: Ipv4Addr) -> (Veth, String, String) {
    let tag = std::process::id() % 100_000;
    let (a, b) = (format!("{prefix}a{tag}"), format!("{prefix}b{tag}"));
    let _ = Command::new("ip").args(["link", "del", &a]).output();
    must(&["ip", "link", "add", &a, "type", "veth", "peer", "name", &b]);
    let _veth = Veth(a.clone());
    must(&["ip", "addr", "add", &format!("{peer}/24"), "dev", &a]);
    must(&["ip", "link", "set", &a, "up"]);
    must(&["ip", "link", "set", &b, "up"]);
    (_veth, a, b)
}

#[test]
fn the_soft_rnic_serves_over_af_packet() {
    if !root_with_ip() {
        return;
    }
    let (peer, collector) = addrs(0);
    let (_veth, a, b) = veth_pair("sfp", peer);
    let cfg = CollectorConfig::parse(
        Path::new("t.toml"),
        &format!(
            "[collector]\nip = \"{collector}\"\ninterface = \"{b}\"\nmemory = \"pages\"\nseed = 3\n\
             [keywrite]\nport = 1337\nslots = 1024\n"
        ),
    )
    .unwrap();
    let c = Collector::start(&cfg).unwrap();
    assert!(c.describe().contains(&format!("AF_PACKET on {b}")), "{}", c.describe());
    serve_one_store(c, (&a, peer), (&b, collector));
}

#[test]
fn the_soft_rnic_serves_over_a_dpdk_ethdev() {
    if !root_with_ip() {
        return;
    }
    let (peer, collector) = addrs(1);
    let (_veth, a, b) = veth_pair("sfd", peer);
    let pid = std::process::id();
    let eal = [
        "-l",
        "0-1",
        "--no-huge",
        "-m",
        "256",
        "--no-pci",
        &format!("--file-prefix=sfcol-{pid}"),
        &format!("--vdev=net_af_packet0,iface={b}"),
    ];
    let cfg = CollectorConfig::parse(
        Path::new("t.toml"),
        &format!(
            "[collector]\nip = \"{collector}\"\ndevice = \"net_af_packet0\"\nmemory = \"pages\"\nseed = 3\n\
             [dpdk]\neal_args = {eal:?}\nmbufs = 4095\nrx_ring = 256\ntx_ring = 256\n\
             [keywrite]\nport = 1337\nslots = 1024\n"
        ),
    )
    .unwrap();
    let c = match Collector::start(&cfg) {
        Ok(c) => c,
        Err(e) if format!("{e:#}").contains("built without DPDK") => {
            assert!(std::env::var_os("SOFTFABRIC_REQUIRE_DPDK").is_none(), "DPDK required: {e:#}");
            eprintln!("SKIPPED: {e:#}");
            return;
        }
        Err(e) => panic!("{e:#}"),
    };
    assert!(c.describe().contains("DPDK device net_af_packet0"), "{}", c.describe());
    serve_one_store(c, (&a, peer), (&b, collector));
    // The EAL cleaned up after itself: no runtime directory left for this prefix.
    assert!(!Path::new(&format!("/var/run/dpdk/sfcol-{pid}")).exists());
}

/// CM and metadata, a WRITE and a WRITE with Immediate, then a spoiled ICRC, from a peer on
/// `a` to the collector on `b`.
fn serve_one_store(c: Collector, (a, peer_ip): (&str, Ipv4Addr), (b, collector_ip): (&str, Ipv4Addr)) {
    let notes = c.subscribe(8);
    // The peer sends whole frames on the other end, as a translator on AF_PACKET does: the
    // IPv4 header the ICRC covers is then the one on the wire (a kernel UDP socket picks its
    // own identification).
    let mac = |i: &str| ports::port::interface_mac(i).unwrap();
    let peer = UdpPeer::af_packet(a, peer_ip, mac(a), collector_ip, mac(b), Duration::from_secs(2)).unwrap();

    // The kernel ARPs for the collector; the soft-RNIC answers; CM and metadata follow.
    let (conn, meta) = peer.connect(1337, 0x31, 7).unwrap_or_else(|e| {
        let neigh = Command::new("ip").args(["neigh", "show", "dev", a]).output().unwrap();
        panic!(
            "CM over AF_PACKET: {e}; {:?}; neighbours: {}",
            c.stats().snapshot(),
            String::from_utf8_lossy(&neigh.stdout)
        )
    });
    let region = c.stores().memory().regions()[0];
    assert_eq!((meta.va, meta.rkey), (region.va, region.rkey));

    let mut psn = conn.local_psn;
    for (off, imm, data) in [(8u64, None, [1u8; 8]), (16, Some(0xfeed), [2; 8])] {
        let op = Op::Write { va: meta.va + off, rkey: meta.rkey, imm };
        peer.send(frames::request(Transport::Rc, conn.remote_qpn, psn, true, &op, &data), false).unwrap();
        let ack = peer.recv().expect("an ACK");
        assert_eq!((ack.opcode, ack.psn), (Opcode::RC_ACKNOWLEDGE, psn));
        let mem = c.stores().memory().view(0).to_vec();
        assert_eq!(mem[off as usize..off as usize + 8], data);
        psn += 1;
    }
    assert_eq!(notes.recv_timeout(Duration::from_secs(2)).unwrap(), Notification { port: 1337, imm: 0xfeed });

    // A spoiled ICRC: no answer, counted, memory untouched.
    let op = Op::Write { va: meta.va + 24, rkey: meta.rkey, imm: None };
    peer.send(frames::request(Transport::Rc, conn.remote_qpn, psn, true, &op, &[3; 8]), true).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let s = c.stats().snapshot();
    assert_eq!((s.writes, s.bad_icrc, s.immediates), (2, 1, 1), "{s:?}");
    assert_eq!(c.stores().memory().view(0).to_vec()[24..32], [0; 8]);
    c.stop();
}
