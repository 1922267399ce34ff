//! A softfabric switch as a DTA reporter, end to end on a virtual clock: hosts' traffic through
//! the `dta_reporter` switch, its reports into the `dta_translator` lab, RDMA into a collector
//! built from `roce`; NACKs from the translator back to the reporter.

#[path = "dta/lab.rs"]
mod lab;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::config::Config;
use dataplane::programs::build_switch;
use dataplane::programs::dta_reporter::DtaReporter;
use dataplane::switch::Switch;
use lab::{Loss, TRANSLATOR_P0, standard_lab_with};
use wire::dta;
use wire::ethernet::EthernetAddress;
use wire::stack::UdpFlow;

const R0: EthernetAddress = EthernetAddress([2, 0x7e, 0, 0, 0, 1]);
const R1: EthernetAddress = EthernetAddress([2, 0x7e, 0, 0, 0, 2]);
const R2: EthernetAddress = EthernetAddress([2, 0x7e, 0, 0, 0, 3]);
const HOST_A: EthernetAddress = EthernetAddress([2, 0xa, 0, 0, 0, 1]);
const HOST_B: EthernetAddress = EthernetAddress([2, 0xb, 0, 0, 0, 1]);

/// Ports: r0 towards hosts 10.0.2.0/24, r1 towards the translator (10.0.1.0/24, the
/// collectors' 10.0.0.0/24 behind it), r2 towards hosts 10.0.3.0/24.
fn reporter_config(section: &str) -> String {
    format!(
        r#"program = "dta_reporter"
[[port]]
name = "r0"
backend = "ring"
speed = "100G"
mac = "{R0}"
ipv4 = ["10.0.2.1/24"]
[[port]]
name = "r1"
backend = "ring"
speed = "100G"
mac = "{R1}"
ipv4 = ["10.0.1.2/24"]
[[port]]
name = "r2"
backend = "ring"
speed = "100G"
mac = "{R2}"
ipv4 = ["10.0.3.1/24"]
[l2l3]
route = [{{ prefix = "10.0.0.0/24", via = ["10.0.1.1"] }}]
neighbor = [{{ ip = "10.0.1.1", mac = "{TRANSLATOR_P0}", port = "r1" }},
            {{ ip = "10.0.2.9", mac = "{HOST_A}", port = "r0" }},
            {{ ip = "10.0.3.9", mac = "{HOST_B}", port = "r2" }}]
[dta_reporter]
collectors = ["10.0.0.51"]
switch_id = 7
{section}
"#
    )
}

struct Net {
    rep: Switch<DtaReporter, PktBuf>,
    pool: HeapPool,
    lab: lab::Lab,
    /// Reporter → translator loss.
    loss: Loss,
    /// Frames the reporter forwarded to hosts, per port.
    to_hosts: [u64; 3],
}

impl Net {
    fn new(section: &str, loss_per_mille: u64) -> Self {
        let cfg = Config::parse(Path::new("reporter.toml"), &reporter_config(section)).unwrap();
        let rep = build_switch::<DtaReporter, PktBuf>(&cfg).unwrap();
        let lab = standard_lab_with("", |_| {});
        Self {
            rep,
            pool: HeapPool::new(4096, 512),
            lab,
            loss: Loss::new(0xabc, loss_per_mille),
            to_hosts: [0; 3],
        }
    }

    /// A UDP packet of a host flow into the reporter on `port`.
    fn host_packet(&mut self, port: u16, src: Ipv4Addr, dst: Ipv4Addr, sport: u16) {
        let (mac, host) = if port == 0 { (R0, HOST_A) } else { (R2, HOST_B) };
        let flow = UdpFlow {
            ident: 1,
            ..UdpFlow::host_udp(host, mac, SocketAddrV4::new(src, sport), SocketAddrV4::new(dst, 5000))
        };
        let mut b = vec![0u8; flow.headers_len() + 100];
        flow.emit_with(100, false, &mut b, |p| {
            p.fill(0x5a);
            Ok(())
        })
        .unwrap();
        let now = self.lab.now;
        self.rep.receive(now, port, PktBuf::from_bytes(&b), &mut self.pool);
    }

    /// One microsecond: the reporter's output to hosts and to the translator, the lab's step,
    /// NACKs back into the reporter.
    fn step(&mut self) {
        let now = self.lab.now;
        self.rep.tick(now, &mut self.pool);
        let mut v = Vec::new();
        for port in 0..3u16 {
            while self.rep.transmit(now, port, &mut v, 256, &mut self.pool) > 0 {
                for f in v.drain(..) {
                    if port == 1 {
                        if !self.loss.lose() {
                            self.lab.sw.receive(now, 0, PktBuf::from_bytes(f.data()), &mut self.lab.pool);
                        }
                    } else {
                        self.to_hosts[usize::from(port)] += 1;
                    }
                    self.pool.free(f);
                }
            }
        }
        self.lab.step();
        for f in std::mem::take(&mut self.lab.to_reporters) {
            self.rep.receive(self.lab.now, 1, PktBuf::from_bytes(&f), &mut self.pool);
        }
    }

    fn run(&mut self, steps: usize) {
        for _ in 0..steps {
            self.step();
        }
    }
}

/// The Key-Write value stored for `key` with redundancy 2, if any slot holds it.
fn keywrite_value(mem: &[u8], key: u32) -> Option<u32> {
    let slots = (mem.len() / 8) as u32;
    let h = dta::KeyHash::new(key);
    (0..2).find_map(|n| {
        let s = (h.slot(n) & (slots - 1)) as usize * 8;
        (mem[s..s + 4] == h.checksum().to_le_bytes())
            .then(|| u32::from_be_bytes(mem[s + 4..s + 8].try_into().unwrap()))
    })
}

/// The flow key the reporter computes: its finaliser over the CRC-32 of the 13-byte 5-tuple.
fn flow_key(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16) -> u32 {
    let mut k = [0u8; 13];
    k[0..4].copy_from_slice(&src.octets());
    k[4..8].copy_from_slice(&dst.octets());
    k[8] = 17;
    k[9..11].copy_from_slice(&sport.to_be_bytes());
    k[11..13].copy_from_slice(&dport.to_be_bytes());
    dataplane::programs::dta_reporter::flow_key(crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&k))
}

#[test]
fn flows_are_reported_once_per_path_and_land_in_the_collector() {
    let mut net = Net::new("", 0);
    let (a, b) = (Ipv4Addr::new(10, 0, 2, 9), Ipv4Addr::new(10, 0, 3, 9));
    // 20 flows A→B and back, 10 packets each.
    for round in 0..10 {
        for f in 0..20u16 {
            net.host_packet(0, a, b, 1000 + f);
            net.host_packet(2, b, a, 2000 + f);
        }
        if round % 2 == 0 {
            net.step();
        }
    }
    net.run(200);
    assert_eq!(net.to_hosts, [200, 0, 200], "the reporter forwards every host packet");
    let s = net.rep.program().stats();
    assert_eq!(s.observed, 400);
    assert_eq!(s.reports, 40, "change detection: one report per flow and path");
    // Each flow's record in the collector: switch 7, and the port it left by (2 for A→B, 0 back).
    let mem = net.lab.collectors[0].region(1337).to_vec();
    let mut found = 0;
    for f in 0..20u16 {
        // 256 slots with 40 keys: a key may lose both copies to collisions; none may be wrong.
        if let Some(v) = keywrite_value(&mem, flow_key(a, b, 1000 + f, 5000)) {
            assert_eq!(v, 7 << 16 | 2);
            found += 1;
        }
        if let Some(v) = keywrite_value(&mem, flow_key(b, a, 2000 + f, 5000)) {
            assert_eq!(v, 7 << 16);
            found += 1;
        }
    }
    assert!(found >= 36, "only {found} of 40 flows queryable");
    let show = net.rep.control(dataplane::programs::dta_reporter::Command::Show, 0).unwrap();
    assert!(show.contains("reports 40"), "{show}");
}

#[test]
fn lost_reports_are_recovered_by_nack_and_counters_sum() {
    // Key-Increment of sampled bytes (every packet), 1% of reports lost on the way.
    let mut net = Net::new("primitive = \"keyincrement\"\ntrigger = \"sample\"\nsample = 1\nkeep = 128", 10);
    let (a, b) = (Ipv4Addr::new(10, 0, 2, 9), Ipv4Addr::new(10, 0, 3, 9));
    for i in 0..3000u32 {
        net.host_packet(0, a, b, 1000 + (i % 5) as u16);
        if i % 4 == 0 {
            net.step();
        }
    }
    net.run(3000);
    assert!(net.loss.lost > 10, "lost only {}", net.loss.lost);
    let s = net.rep.program().stats();
    assert_eq!(s.reports, 3000);
    assert!(s.nacks > 0 && s.resent > 0, "{s:?}");
    assert_eq!(s.unrecoverable, 0, "{s:?}");
    eprintln!("translator {:?}", net.lab.sw.program().stats());
    // 5 flows of 600 packets of 128 IP bytes: every counter copy holds exactly 600 * 128.
    let mem = net.lab.collectors[0].region(1339);
    let slots = (mem.len() / 8) as u32;
    for f in 0..5u16 {
        let h = dta::KeyHash::new(flow_key(a, b, 1000 + f, 5000));
        let copies: Vec<u64> = (0..2)
            .map(|n| {
                let s = (h.slot(n) & (slots - 1)) as usize * 8;
                u64::from_le_bytes(mem[s..s + 8].try_into().unwrap())
            })
            .collect();
        assert_eq!(copies.iter().min(), Some(&(600 * 128)), "flow {f}: {copies:?}");
    }
}
