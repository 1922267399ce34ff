//! A virtual-time lab for the DTA translator: the `dta_translator` switch between reporters
//! (port p0) and collectors (port p1), each collector a passive RoCEv2 endpoint from `roce`
//! over `Vec<u8>` regions, with deterministic loss on either side.

#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::config::Config;
use dataplane::programs::build_switch;
use dataplane::programs::dta_translator::DtaTranslator;
use dataplane::switch::Switch;
use roce::cm::{CmConfig, Metadata};
use roce::dta::{report_frame_len, write_report_frame};
use roce::endpoint::{Endpoint, Event, Listen};
use roce::responder::{Region, Regions, RingHead};
use wire::dta::{DtaRepr, NackRepr};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::ipv4::Ipv4Packet;
use wire::roce::{RoceRepr, icrc};
use wire::stack::{RoceStack, UdpFlow};
use wire::udp::UdpPacket;

pub const TRANSLATOR_P0: EthernetAddress = EthernetAddress([2, 0x5f, 0, 0, 0, 1]);
pub const TRANSLATOR_P1: EthernetAddress = EthernetAddress([2, 0x5f, 0, 0, 0, 2]);
pub const TRANSLATOR_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 101);
pub const REPORTER_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 1, 2]);
/// The standard lab's collector.
pub const C0: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 51);
pub const C0_MAC: EthernetAddress = EthernetAddress([2, 0xc0, 0, 0, 0, 0x51]);
/// The standard lab's reporter.
pub const REPORTER: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);

/// The translator's configuration around a `[[dta.collector]]` list and extra `[dta]` keys.
/// Reporters start with the lab's translator, so it takes none for mid-stream (`join_ms = 0`,
/// unless `dta_extra` sets it): a reporter's lost first report is NACKed.
pub fn config(dta_extra: &str, collectors: &str, neighbors: &[(Ipv4Addr, EthernetAddress)]) -> String {
    let join = if dta_extra.contains("join_ms") { "" } else { "join_ms = 0" };
    let nb: Vec<String> = neighbors
        .iter()
        .map(|(ip, mac)| format!("{{ ip = \"{ip}\", mac = \"{mac}\", port = \"p1\" }}"))
        .collect();
    format!(
        r#"program = "dta_translator"
[[port]]
name = "p0"
backend = "ring"
mac = "{TRANSLATOR_P0}"
speed = "100G"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "p1"
backend = "ring"
mac = "{TRANSLATOR_P1}"
speed = "100G"
ipv4 = ["10.0.0.101/24"]
[l2l3]
neighbor = [{}]
[dta]
cm_timeout_ms = 1
cm_backoff_ms = 1
timeout_us = 200
{join}
{dta_extra}
{collectors}
"#,
        nb.join(", ")
    )
}

/// One collector with a Key-Write store of 256 slots (2 KiB), a Key-Increment store of 4096
/// counters, four Append lists and a sketch.
pub fn standard_lab(extra: &str) -> Lab {
    standard_lab_with(extra, |_| {})
}

/// [`standard_lab`], with `before` applied to the lab before it connects (to capture or lose
/// from the start).
pub fn standard_lab_with(extra: &str, before: impl FnOnce(&mut Lab)) -> Lab {
    let collectors = r#"
[[dta.collector]]
name = "c0"
ip = "10.0.0.51"
keywrite = 1337
keyincrement = 1339
postcarder = { port = 1336, hops = 5, cache = 1024 }
append = [{ list = 0, port = 1340, batch = 16 }, { list = 1, port = 1341, batch = 4 },
          { list = 2, port = 1342, batch = 1 }, { list = 3, port = 1343, batch = 8 }]
sketch = [{ id = 9, port = 1350, rows = 2, columns = 8, reporters = [1, 2, 3, 4], batch = 4 }]
"#;
    let c = Collector::new(
        C0,
        C0_MAC,
        &[
            (1337, 256 * 8),
            (1339, 4096 * 8),
            (1336, 1024 * 32),
            (1340, 4096 * 4),
            (1341, 4096 * 4),
            (1342, 32768 * 4),
            (1343, 4096 * 4),
            (1350, 8 * 2 * 4),
        ],
        7,
    );
    let mut lab = Lab::new(&config(extra, collectors, &[(C0, C0_MAC)]), vec![c]);
    before(&mut lab);
    lab.connect(200_000);
    lab
}

/// A collector: a passive endpoint listening on ports, one region each.
pub struct Collector {
    pub ip: Ipv4Addr,
    pub mac: EthernetAddress,
    pub ep: Endpoint<Regions<Vec<u8>>>,
    /// Region per port: (port, rkey, va).
    pub regions: Vec<(u16, u32, u64)>,
    pub up: bool,
    pub events: Vec<Event>,
}

impl Collector {
    /// Listening on `ports`, each a region of `len` bytes.
    pub fn new(ip: Ipv4Addr, mac: EthernetAddress, ports: &[(u16, u32)], seed: u32) -> Self {
        let mut mem = Regions::new();
        let mut listens = Vec::new();
        let mut regions = Vec::new();
        for (i, &(port, len)) in ports.iter().enumerate() {
            let rkey = 0x1000 + u32::from(port) + seed;
            let va = 0x7f00_0000_0000u64 + ((i as u64) << 32);
            // The lab's convention: ports 1340..=1349 are Append lists, whose heads the memory
            // keeps (and sends with the metadata), as the collector's does.
            let ring = (1340..=1349).contains(&port).then_some(RingHead { entry: 4, head: 0, marks: false });
            mem.add(Region { rkey, va, write: true, atomic: true, buf: vec![0u8; len as usize], ring });
            listens.push(Listen { port, metadata: Some(Metadata { va, len, rkey }) });
            regions.push((port, rkey, va));
        }
        let cm = CmConfig {
            response_timeout_ns: 1_000_000,
            max_req_tries: 4,
            backoff_initial_ns: 1_000_000,
            backoff_max_ns: 10_000_000,
        };
        Self {
            ip,
            mac,
            ep: Endpoint::new(cm, 0x77, listens, mem, seed),
            regions,
            up: true,
            events: Vec::new(),
        }
    }

    /// The bytes of the region behind `port`.
    pub fn region(&self, port: u16) -> &[u8] {
        let rkey = self.regions.iter().find(|r| r.0 == port).unwrap().1;
        &self.ep.memory().get(rkey).unwrap().buf
    }
}

/// Deterministic loss: each call says whether to lose a packet, `per_mille` in 1000 on average.
pub struct Loss {
    state: u64,
    per_mille: u64,
    pub lost: u64,
}

impl Loss {
    pub fn new(seed: u64, per_mille: u64) -> Self {
        Self { state: seed | 1, per_mille, lost: 0 }
    }
    pub fn none() -> Self {
        Self::new(1, 0)
    }
    pub fn lose(&mut self) -> bool {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let l = self.state % 1000 < self.per_mille;
        self.lost += u64::from(l);
        l
    }
}

pub struct Lab {
    pub sw: Switch<DtaTranslator, PktBuf>,
    pub pool: HeapPool,
    pub now: u64,
    pub collectors: Vec<Collector>,
    /// Loss between the translator and the collectors, each way.
    pub to_collector: Loss,
    pub from_collector: Loss,
    /// Loss between the reporter and the translator.
    pub to_translator: Loss,
    /// Every frame the translator sent towards collectors.
    pub captured: Vec<Vec<u8>>,
    /// Frames the translator sent back to reporters (NACKs).
    pub to_reporters: Vec<Vec<u8>>,
    pub capture: bool,
    /// The configuration the translator was built from (a restart builds it again).
    pub cfg_text: String,
    /// Whether a translator runs: while not, reports to it are lost (counted in `outage`).
    pub translator_up: bool,
    /// Reports sent while no translator ran.
    pub outage: u64,
    /// Deliver each step's collector replies in reverse order.
    pub reorder_replies: bool,
    /// Hold reports until 4 are held and deliver them in reverse order.
    pub reorder_reports: bool,
    /// How many reports are held before they are delivered in reverse (the most a report is
    /// overtaken by).
    pub reorder_group: usize,
    held: Vec<Vec<u8>>,
}

/// Ethernet, IPv4, UDP of a frame: (src, dst, dst port, UDP payload offset, IP offset).
pub fn udp_of(f: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr, u16, usize, usize)> {
    let eth = EthernetFrame::new_checked(f).ok()?;
    if eth.ethertype() != EtherType::IPV4 {
        return None;
    }
    let l3 = eth.header_len();
    let ip = Ipv4Packet::new_checked(&f[l3..]).ok()?;
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    Some((ip.src_addr(), ip.dst_addr(), udp.dst_port(), l3 + ip.header_len() + 8, l3))
}

impl Lab {
    pub fn new(cfg_text: &str, collectors: Vec<Collector>) -> Self {
        let cfg = Config::parse(Path::new("dta-lab.toml"), cfg_text).unwrap_or_else(|e| panic!("{e}"));
        let sw = build_switch::<DtaTranslator, PktBuf>(&cfg).unwrap_or_else(|e| panic!("{e}"));
        Self {
            sw,
            pool: HeapPool::new(65536, 512),
            now: 1_000_000,
            collectors,
            to_collector: Loss::none(),
            from_collector: Loss::none(),
            to_translator: Loss::none(),
            captured: Vec::new(),
            to_reporters: Vec::new(),
            capture: false,
            cfg_text: cfg_text.to_string(),
            translator_up: true,
            outage: 0,
            reorder_replies: false,
            reorder_reports: false,
            reorder_group: 4,
            held: Vec::new(),
        }
    }

    /// Stop the translator as SIGTERM does: it writes out what it holds, waits (at most
    /// `grace` steps) for its writes' acknowledgements, and disconnects; then it is gone.
    pub fn stop_translator(&mut self, grace: usize) {
        for k in 0..=grace {
            let done = self.sw.stop(self.now, k == grace, &mut self.pool);
            self.step();
            if done {
                break;
            }
        }
        self.translator_up = false;
    }

    /// Start a new translator from the same configuration (with a fresh CM seed, as a new
    /// process gets).
    pub fn start_translator(&mut self) {
        let cfg = Config::parse(Path::new("dta-lab.toml"), &self.cfg_text).unwrap_or_else(|e| panic!("{e}"));
        self.sw = build_switch::<DtaTranslator, PktBuf>(&cfg).unwrap_or_else(|e| panic!("{e}"));
        self.translator_up = true;
    }

    /// One microsecond: timers, what the translator sends, what collectors answer.
    pub fn step(&mut self) {
        self.now += 1000;
        let now = self.now;
        // Reordering within groups of `reorder_group`: never a frame overtaken by more.
        let deliver: Vec<Vec<u8>> = if !self.reorder_reports {
            std::mem::take(&mut self.held)
        } else if self.held.len() >= self.reorder_group {
            self.held.drain(..self.reorder_group).collect()
        } else {
            Vec::new()
        };
        for f in deliver.into_iter().rev() {
            if self.translator_up {
                self.sw.receive(now, 0, PktBuf::from_bytes(&f), &mut self.pool);
            }
        }
        if !self.translator_up {
            for c in self.collectors.iter_mut().filter(|c| c.up) {
                c.ep.handle_timeout(now, &mut |_, _| {});
            }
            return;
        }
        self.sw.tick(now, &mut self.pool);
        let mut frames = Vec::new();
        let mut v = Vec::new();
        while self.sw.transmit(now, 1, &mut v, 256, &mut self.pool) > 0 {
            for f in v.drain(..) {
                frames.push(f.data().to_vec());
                self.pool.free(f);
            }
        }
        let mut replies: Vec<Vec<u8>> = Vec::new();
        for f in frames {
            if self.capture {
                self.captured.push(f.clone());
            }
            if self.to_collector.lose() {
                continue;
            }
            let Some((src, dst, dport, l4, l3)) = udp_of(&f) else { continue };
            if dport != 4791 {
                continue;
            }
            let Some(c) = self.collectors.iter_mut().find(|c| c.ip == dst) else { continue };
            if !c.up {
                continue;
            }
            let total = usize::from(Ipv4Packet::new_unchecked(&f[l3..]).total_len());
            assert!(icrc::verify(&f[l3..l3 + total]).is_ok(), "the translator sent a bad ICRC");
            let r = RoceRepr::parse(&f[l4..l3 + total]).expect("the translator sent malformed RoCEv2");
            let (cip, cmac) = (c.ip, c.mac);
            let mut out = |peer: Ipv4Addr, roce: RoceRepr<'_>| {
                replies.push(collector_frame(cmac, cip, peer, roce));
            };
            if let Some(e) = c.ep.handle_packet(now, src, &r, &mut out) {
                c.events.push(e);
            }
        }
        for c in self.collectors.iter_mut().filter(|c| c.up) {
            let (cip, cmac) = (c.ip, c.mac);
            let mut out =
                |peer: Ipv4Addr, roce: RoceRepr<'_>| replies.push(collector_frame(cmac, cip, peer, roce));
            c.ep.handle_timeout(now, &mut out);
        }
        if self.reorder_replies && replies.len() > 1 {
            replies.reverse();
        }
        for r in replies {
            if self.from_collector.lose() {
                continue;
            }
            let b = PktBuf::from_bytes(&r);
            self.sw.receive(now, 1, b, &mut self.pool);
        }
        while self.sw.transmit(now, 0, &mut v, 256, &mut self.pool) > 0 {
            for f in v.drain(..) {
                self.to_reporters.push(f.data().to_vec());
                self.pool.free(f);
            }
        }
    }

    pub fn run(&mut self, steps: usize) {
        for _ in 0..steps {
            self.step();
        }
    }

    /// Step until the translator's every QP has its region (at most `limit` steps).
    pub fn connect(&mut self, limit: usize) {
        for _ in 0..limit {
            if self.sw.program().ready() {
                return;
            }
            self.step();
        }
        panic!(
            "not connected:\n{}",
            self.sw.control(dataplane::programs::dta_translator::Command::Show, 0).unwrap()
        );
    }

    /// Send a report from `src` to `dst` into port p0 (unless lost on the way).
    pub fn report(&mut self, src: Ipv4Addr, dst: Ipv4Addr, r: &DtaRepr<'_>) {
        let mut payload = [0u8; 256];
        let n = r.buffer_len();
        r.emit(&mut payload).unwrap();
        self.report_bytes(src, dst, &payload[..n]);
    }

    pub fn report_bytes(&mut self, src: Ipv4Addr, dst: Ipv4Addr, payload: &[u8]) {
        if !self.translator_up {
            self.outage += 1;
            return;
        }
        if self.to_translator.lose() {
            return;
        }
        if self.reorder_reports {
            self.held.push(report_frame(src, dst, payload));
            return;
        }
        let f = PktBuf::from_bytes(&report_frame(src, dst, payload));
        self.sw.receive(self.now, 0, f, &mut self.pool);
    }

    /// NACKs the translator sent back so far (and forget them).
    pub fn nacks(&mut self) -> Vec<(Ipv4Addr, NackRepr)> {
        self.to_reporters
            .drain(..)
            .filter_map(|f| {
                let (_, dst, port, l4, _) = udp_of(&f)?;
                (port == 40044).then(|| NackRepr::parse(&f[l4..]).ok().map(|n| (dst, n))).flatten()
            })
            .collect()
    }

    /// Drops counted under `name`.
    pub fn drops(&self, name: &str) -> u64 {
        let names = self.sw.drop_reasons().names();
        names.iter().position(|n| *n == name).map_or(0, |i| self.sw.counters().drops[i])
    }
}

/// A frame from a collector to the translator.
pub fn collector_frame(mac: EthernetAddress, ip: Ipv4Addr, peer: Ipv4Addr, roce: RoceRepr<'_>) -> Vec<u8> {
    let flow = UdpFlow {
        ident: 7,
        ..UdpFlow::host_udp(mac, TRANSLATOR_P1, SocketAddrV4::new(ip, 0xc123), SocketAddrV4::new(peer, 4791))
    };
    let s = RoceStack { flow, roce };
    let mut b = vec![0u8; s.buffer_len().max(60)];
    s.emit(&mut b).unwrap();
    b
}

/// The frame a reporter at `src` sends to `dst` with DTA bytes `payload`, into port p0.
pub fn report_frame(src: Ipv4Addr, dst: Ipv4Addr, payload: &[u8]) -> Vec<u8> {
    let flow = UdpFlow {
        ident: 1,
        ..UdpFlow::host_udp(
            REPORTER_MAC,
            TRANSLATOR_P0,
            SocketAddrV4::new(src, 40041),
            SocketAddrV4::new(dst, 40040),
        )
    };
    let mut b = vec![0u8; report_frame_len(&flow, payload.len())];
    assert!(write_report_frame(&flow, payload, &mut b));
    b
}
