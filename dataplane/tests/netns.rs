//! Two hosts in their own network namespaces, joined by veth pairs to `dataplane run` on
//! AF_PACKET, ping each other and exchange UDP both ways — routed (each host on its own subnet,
//! the switch as gateway: ARP replies, neighbor resolution, TTL and checksum rewrite) and bridged
//! (one subnet, MAC learning and flooding).
//!
//! The test creates its namespaces and interfaces itself, under names unique to the run, and
//! removes them however it ends. The same routed lab runs again with the switch's ports on DPDK
//! (`net_af_packet` vdevs) when DPDK was found at build time. It needs root (network namespaces,
//! AF_PACKET), `ip`, `ping`, `python3` (and `ethtool` for the DPDK case); without them it says it is skipped (and fails if `SOFTFABRIC_REQUIRE_NETNS` is set,
//! as CI sets it).

#[path = "support/netns.rs"]
mod support;

use std::process::Command;
use std::time::Duration;

#[cfg(dpdk)]
use support::skip;
use support::{Lab, Switch, available};

/// A UDP echo server in host `server` answering one datagram, and a client in host `client`
/// that sends one and waits for the echo.
fn udp_exchange(lab: &Lab, server: usize, client: usize, server_ip: &str) {
    let srv = "import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.bind(('0.0.0.0',9000))\n\
               s.settimeout(10)\nd,a=s.recvfrom(2048)\ns.sendto(d.upper(),a)\n";
    let mut server_proc =
        Command::new("ip").args(["netns", "exec", &lab.ns[server], "python3", "-c", srv]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The client sends again every half second (up to 10 s) until the echo comes: a server
    // whose Python starts slower than the 300 ms above (a loaded CI machine) has not bound its
    // port when the first datagram arrives, and one datagram sent once was then lost.
    let cli = format!(
        "import socket,sys\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ns.settimeout(0.5)\n\
         for _ in range(20):\n    s.sendto(b'softfabric {client}->{server}',('{server_ip}',9000))\n    \
         try:\n        d,_=s.recvfrom(2048)\n        break\n    except socket.timeout:\n        pass\n\
         else:\n    sys.exit('no echo in 10 s')\nprint(d.decode())\n"
    );
    let out = lab.exec(client, &["python3", "-c", &cli]);
    let _ = server_proc.wait();
    assert!(
        out.status.success(),
        "UDP from host {client} to host {server} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("SOFTFABRIC {client}->{server}"));
}

fn ping(lab: &Lab, from: usize, to: &str) {
    let out = lab.exec(from, &["ping", "-c", "3", "-i", "0.2", "-W", "2", to]);
    assert!(
        out.status.success(),
        "ping from host {from} to {to} failed:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn counters(table: &str, port: &str) -> (u64, u64) {
    let l = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(port))
        .unwrap_or_else(|| panic!("no {port} in\n{table}"));
    let f: Vec<u64> = l.split_whitespace().skip(1).map(|x| x.parse().unwrap()).collect();
    (f[0], f[2])
}

#[test]
fn routed_hosts_ping_and_exchange_udp() {
    if !available() {
        return;
    }
    let lab = Lab::routed("r");
    let sw = Switch::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_dataplane")),
        &lab,
        "r",
        support::ROUTED_PORTS,
    );
    ping(&lab, 0, "10.0.2.2");
    ping(&lab, 1, "10.0.1.2");
    udp_exchange(&lab, 1, 0, "10.0.2.2");
    udp_exchange(&lab, 0, 1, "10.0.1.2");
    let table = sw.stop();
    let (rx0, tx0) = counters(&table, "p0");
    let (rx1, tx1) = counters(&table, "p1");
    // 3 + 3 pings and two UDP exchanges each way; the first routed packet may wait on ARP.
    assert!(rx0 >= 6 && tx0 >= 6 && rx1 >= 6 && tx1 >= 6, "{table}");
}

#[test]
fn bridged_hosts_ping_and_exchange_udp() {
    if !available() {
        return;
    }
    let lab = Lab::new("b");
    lab.host(0, "10.0.9.1/24", None);
    lab.host(1, "10.0.9.2/24", None);
    let sw = Switch::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_dataplane")),
        &lab,
        "b",
        r#"
[[port]]
name = "p0"
backend = "af_packet"
iface = "{S0}"
mac = "02:5f:00:00:01:01"
speed = "10G"
[[port]]
name = "p1"
backend = "af_packet"
iface = "{S1}"
mac = "02:5f:00:00:01:02"
speed = "10G"
"#,
    );
    ping(&lab, 0, "10.0.9.2");
    ping(&lab, 1, "10.0.9.1");
    udp_exchange(&lab, 1, 0, "10.0.9.2");
    udp_exchange(&lab, 0, 1, "10.0.9.1");
    let table = sw.stop();
    let (rx0, tx0) = counters(&table, "p0");
    assert!(rx0 >= 8 && tx0 >= 8, "{table}");
}

/// The same routed lab with the switch's ports on DPDK: `net_af_packet` vdevs on the veths.
#[cfg(dpdk)]
#[test]
fn dpdk_af_packet_hosts_ping_and_exchange_udp() {
    if !available() {
        return;
    }
    if Command::new("sh")
        .args(["-c", "command -v ethtool"])
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        skip("ethtool not installed");
        return;
    }
    let lab = Lab::routed("d");
    lab.checksums_in_software(0);
    lab.checksums_in_software(1);
    let prefix = format!("sftest-netns-{}", std::process::id());
    let sw = Switch::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_dataplane")),
        &lab,
        "d",
        &format!(
            r#"
[dpdk]
eal_args = ["-l", "0-1", "--no-huge", "-m", "256", "--no-pci", "--file-prefix={prefix}",
            "--vdev=net_af_packet0,iface={{S0}}", "--vdev=net_af_packet1,iface={{S1}}"]
mbufs = 4095
rx_ring = 256
tx_ring = 256
[[port]]
name = "p0"
backend = "dpdk"
device = "net_af_packet0"
mac = "02:5f:00:00:02:01"
speed = "10G"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "p1"
backend = "dpdk"
device = "net_af_packet1"
mac = "02:5f:00:00:02:02"
speed = "10G"
ipv4 = ["10.0.2.1/24"]
"#
        ),
    );
    ping(&lab, 0, "10.0.2.2");
    ping(&lab, 1, "10.0.1.2");
    udp_exchange(&lab, 1, 0, "10.0.2.2");
    udp_exchange(&lab, 0, 1, "10.0.1.2");
    let table = sw.stop();
    let (rx0, tx0) = counters(&table, "p0");
    let (rx1, tx1) = counters(&table, "p1");
    assert!(rx0 >= 6 && tx0 >= 6 && rx1 >= 6 && tx1 >= 6, "{table}");
    assert!(!std::path::Path::new(&format!("/var/run/dpdk/{prefix}")).exists(), "DPDK runtime files left");
}
