//! `l2l3` on memory ports: bursts of 32 64-byte frames through the whole switch on one core —
//! receive, ingress (parse, MAC learning, LPM or MAC lookup, rewrite, TTL and checksum), the
//! traffic manager (admission, accounting, scheduling), egress and transmit — using the
//! runtime's own poll steps. Before each burst the frames are rewritten from a template, as a
//! NIC writes received frames.
//!
//! Run: `cargo bench -p dataplane --bench l2l3`. Figures are kept in BENCHMARKS.md.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::config::Config;
use dataplane::port::{MemPort, PortIo};
use dataplane::programs::build_switch;
use dataplane::programs::l2l3::L2l3;
use dataplane::runtime::{receive_all, transmit_all};
use dataplane::switch::Switch;
use wire::EthernetRepr;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::ipv4::Ipv4Repr;
use wire::udp::UdpRepr;

const BURST: usize = 32;

const CFG: &str = r#"
program = "l2l3"
[[port]]
name = "p0"
backend = "ring"
mac = "02:00:00:00:00:10"
speed = "100G"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "p1"
backend = "ring"
mac = "02:00:00:00:00:11"
speed = "100G"
ipv4 = ["10.0.2.1/24"]
[l2l3]
neighbor = [{ ip = "10.0.2.2", mac = "02:00:00:00:02:02", port = "p1" }]
static_mac = [{ mac = "02:00:00:00:0b:0b", port = "p1" }]
"#;

/// A 64-byte frame (60 without FCS): UDP from 10.0.1.2 to `dst`.
fn frame(dst_mac: EthernetAddress, dst: [u8; 4], sport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    EthernetRepr {
        src_addr: EthernetAddress([2, 0, 0, 0, 1, 2]),
        dst_addr: dst_mac,
        vlan: None,
        ethertype: EtherType::IPV4,
    }
    .emit(&mut f)
    .unwrap();
    Ipv4Repr {
        src_addr: [10, 0, 1, 2].into(),
        dst_addr: dst.into(),
        protocol: 17,
        payload_len: 26,
        ttl: 64,
        dscp: 0,
        ecn: 0,
        ident: 0,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut f[14..])
    .unwrap();
    UdpRepr { src_port: sport, dst_port: 9, payload_len: 18 }.emit(&mut f[34..]).unwrap();
    f
}

struct Bench {
    switch: Switch<L2l3, PktBuf>,
    ports: Vec<Option<Box<MemPort<PktBuf>>>>,
    pool: HeapPool,
    rx: Vec<PktBuf>,
    tx: Vec<PktBuf>,
    back: Vec<PktBuf>,
    templates: Vec<Vec<u8>>,
    now: u64,
}

impl Bench {
    fn new(templates: Vec<Vec<u8>>) -> Self {
        let cfg = Config::parse(Path::new("bench.toml"), CFG).unwrap();
        let mut b = Self {
            switch: build_switch(&cfg).unwrap(),
            ports: vec![Some(Box::new(MemPort::new(4 * BURST))), Some(Box::new(MemPort::new(4 * BURST)))],
            pool: HeapPool::new(4 * BURST, 2048),
            rx: Vec::with_capacity(BURST),
            tx: Vec::with_capacity(BURST),
            back: Vec::with_capacity(BURST),
            templates,
            now: 0,
        };
        for i in 0..BURST {
            let mut p = b.pool.alloc().unwrap();
            p.set(&b.templates[i % b.templates.len()]);
            b.ports[0].as_mut().unwrap().push_rx(p);
        }
        b
    }

    /// One burst through the switch; the frames sent come back as the next burst received.
    fn burst(&mut self) -> usize {
        self.now += 1000;
        receive_all(&mut self.switch, &mut self.ports, &mut self.pool, &mut self.rx, self.now, BURST);
        transmit_all(&mut self.switch, &mut self.ports, &mut self.pool, &mut self.tx, self.now, BURST);
        self.recycle()
    }

    /// What port 1 sent becomes port 0's next burst, each frame rewritten from its template.
    fn recycle(&mut self) -> usize {
        let n = self.ports[1].as_mut().unwrap().take_tx(&mut self.back);
        for (f, t) in self.back.iter_mut().zip(self.templates.iter().cycle()) {
            f.set(t);
        }
        self.ports[0].as_mut().unwrap().push_rx_burst(&mut self.back);
        n
    }
}

impl Bench {
    /// The same port and rewrite work with no switch: frames go from port 0's receive side
    /// straight to port 1's transmit side. What the harness alone costs.
    fn ports_only(&mut self) -> usize {
        let pool: &mut dyn Pool<PktBuf> = &mut self.pool;
        let (p0, p1) = self.ports.split_at_mut(1);
        let (p0, p1) = (p0[0].as_mut().unwrap(), p1[0].as_mut().unwrap());
        p0.rx_burst(pool, &mut self.rx, BURST);
        self.tx.append(&mut self.rx);
        p1.tx_burst(&mut self.tx, pool);
        self.recycle()
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("l2l3");
    g.throughput(Throughput::Elements(BURST as u64));
    let routed: Vec<Vec<u8>> = (0..BURST as u16)
        .map(|i| frame(EthernetAddress([2, 0, 0, 0, 0, 0x10]), [10, 0, 2, 2], 1000 + i))
        .collect();
    let mut b = Bench::new(routed);
    assert_eq!(b.burst(), BURST);
    assert_eq!(b.switch.counters().drops.iter().sum::<u64>(), 0);
    g.bench_function("route_64B_burst32", |x| x.iter(|| black_box(b.burst())));
    let bridged: Vec<Vec<u8>> =
        (0..BURST as u16).map(|i| frame(EthernetAddress([2, 0, 0, 0, 0xb, 0xb]), [10, 9, 9, 9], i)).collect();
    let mut b = Bench::new(bridged);
    assert_eq!(b.burst(), BURST);
    g.bench_function("bridge_64B_burst32", |x| x.iter(|| black_box(b.burst())));
    // What DPDK's net_null vdevs deliver (scripts/bench-dpdk.sh): all-zero frames, whose
    // source is never learned and whose destination is unknown, so they are flooded.
    let zero = vec![vec![0u8; 60]; BURST];
    let mut z = Bench::new(zero);
    assert_eq!(z.burst(), BURST);
    g.bench_function("flood_zero_64B_burst32", |x| x.iter(|| black_box(z.burst())));
    assert_eq!(b.ports_only(), BURST);
    g.bench_function("ports_only_64B_burst32", |x| x.iter(|| black_box(b.ports_only())));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
