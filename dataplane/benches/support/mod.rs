//! What the switch benches share: 64-byte UDP frames, and any program's switch on two memory
//! ports driven by the runtime's own poll steps, each burst's frames rewritten from templates
//! as a NIC writes received frames. Included by `#[path]` (a bench target of its own it is not).
#![allow(dead_code)]

use std::path::Path;

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::config::Config;
use dataplane::port::{MemPort, PortIo};
use dataplane::programs::{FromConfig, build_switch};
use dataplane::runtime::{receive_all, transmit_all};
use dataplane::switch::{Program, Switch};
use wire::EthernetRepr;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::ipv4::Ipv4Repr;
use wire::udp::UdpRepr;

/// Frames per burst.
pub const BURST: usize = 32;

/// `program` on two 100G memory ports: p0 (10.0.1.1/24, MAC 02:00:00:00:00:10, where bursts
/// come in) and p1 (10.0.2.1/24), and no other section.
pub fn ports(program: &str) -> String {
    format!(
        r#"
program = "{program}"
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
"#
    )
}

/// The benches' routing switch: [`ports`] with neighbour 10.0.2.2 behind p1 (`[l2l3]`), then
/// `extra` (more keys of `[l2l3]`, or the program's own sections).
pub fn two_ports(program: &str, extra: &str) -> String {
    format!(
        "{}[l2l3]\nneighbor = [{{ ip = \"10.0.2.2\", mac = \"02:00:00:00:02:02\", port = \"p1\" }}]\n{extra}\n",
        ports(program)
    )
}

/// A 64-byte frame (60 without FCS): UDP from 10.0.1.2:`sport` to `dst`:`dport`.
pub fn frame(dst_mac: EthernetAddress, dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
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
    UdpRepr { src_port: sport, dst_port: dport, payload_len: 18 }.emit(&mut f[34..]).unwrap();
    f
}

/// A switch running `P` on two memory ports: bursts in on port 0, out of port 1.
pub struct Bench<P: Program> {
    pub switch: Switch<P, PktBuf>,
    pub ports: Vec<Option<Box<MemPort<PktBuf>>>>,
    pub pool: HeapPool,
    pub rx: Vec<PktBuf>,
    pub tx: Vec<PktBuf>,
    pub back: Vec<PktBuf>,
    pub templates: Vec<Vec<u8>>,
    pub now: u64,
}

impl<P: Program + FromConfig> Bench<P> {
    /// The switch of configuration `cfg`, port 0 holding a burst of `templates`.
    pub fn new(cfg: &str, templates: Vec<Vec<u8>>) -> Self {
        let cfg = Config::parse(Path::new("bench.toml"), cfg).unwrap();
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
    pub fn burst(&mut self) -> usize {
        self.now += 1000;
        receive_all(&mut self.switch, &mut self.ports, &mut self.pool, &mut self.rx, self.now, BURST);
        transmit_all(&mut self.switch, &mut self.ports, &mut self.pool, &mut self.tx, self.now, BURST);
        self.recycle()
    }

    /// What port 1 sent becomes port 0's next burst, each frame rewritten from its template.
    pub fn recycle(&mut self) -> usize {
        let n = self.ports[1].as_mut().unwrap().take_tx(&mut self.back);
        for (f, t) in self.back.iter_mut().zip(self.templates.iter().cycle()) {
            f.set(t);
        }
        self.ports[0].as_mut().unwrap().push_rx_burst(&mut self.back);
        n
    }

    /// The same port and rewrite work with no switch: frames go from port 0's receive side
    /// straight to port 1's transmit side. What the harness alone costs.
    pub fn ports_only(&mut self) -> usize {
        let pool: &mut dyn Pool<PktBuf> = &mut self.pool;
        let (p0, p1) = self.ports.split_at_mut(1);
        let (p0, p1) = (p0[0].as_mut().unwrap(), p1[0].as_mut().unwrap());
        p0.rx_burst(pool, &mut self.rx, BURST);
        self.tx.append(&mut self.rx);
        p1.tx_burst(&mut self.tx, pool);
        self.recycle()
    }
}

/// Two switches timed in alternation, `rounds` times `bursts` bursts each (the order flips every
/// round), so that the machine's drift — minutes long on a shared VM — hits both alike. Prints
/// each one's median rate and the median of the per-round ratios `b / a`, with the 10th–90th
/// percentile spread; returns the median ratio. Criterion times one program after the other,
/// seconds apart: its two figures can disagree by more than the difference they measure.
pub fn interleaved<A: Program + FromConfig, B: Program + FromConfig>(
    label: &str,
    a: &mut Bench<A>,
    b: &mut Bench<B>,
    rounds: usize,
    bursts: usize,
) -> f64 {
    use std::hint::black_box;
    use std::time::Instant;
    fn rate(bursts: usize, t: std::time::Duration) -> f64 {
        (bursts * BURST) as f64 / t.as_secs_f64() / 1e6
    }
    for _ in 0..bursts * 4 {
        black_box(a.burst());
        black_box(b.burst());
    }
    let (mut ra, mut rb, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let mut time_a = || {
            let t = Instant::now();
            for _ in 0..bursts {
                black_box(a.burst());
            }
            t.elapsed()
        };
        let mut time_b = || {
            let t = Instant::now();
            for _ in 0..bursts {
                black_box(b.burst());
            }
            t.elapsed()
        };
        let (ta, tb) = if r % 2 == 0 {
            let ta = time_a();
            (ta, time_b())
        } else {
            let tb = time_b();
            (time_a(), tb)
        };
        ra.push(rate(bursts, ta));
        rb.push(rate(bursts, tb));
        ratio.push(rate(bursts, tb) / rate(bursts, ta));
    }
    let pct = |v: &mut Vec<f64>, p: usize| {
        v.sort_by(f64::total_cmp);
        v[(v.len() - 1) * p / 100]
    };
    let (a50, a10, a90) = (pct(&mut ra, 50), pct(&mut ra, 10), pct(&mut ra, 90));
    let (b50, b10, b90) = (pct(&mut rb, 50), pct(&mut rb, 10), pct(&mut rb, 90));
    let (q50, q10, q90) = (pct(&mut ratio, 50), pct(&mut ratio, 10), pct(&mut ratio, 90));
    println!(
        "{label}: interleaved, {rounds} rounds of {bursts} bursts each (median, p10-p90):\n  \
         first  {a50:.2} Mpps ({a10:.2}-{a90:.2})\n  second {b50:.2} Mpps ({b10:.2}-{b90:.2})\n  \
         ratio  {q50:.3} ({q10:.3}-{q90:.3})"
    );
    q50
}

/// Whether a criterion filter on the command line selects `name` (no filter selects all).
pub fn selected(name: &str) -> bool {
    let mut args = std::env::args().skip(1);
    let mut filters = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            // Criterion's options that take a value.
            "--warm-up-time"
            | "--measurement-time"
            | "--profile-time"
            | "--sample-size"
            | "--save-baseline"
            | "--baseline"
            | "--load-baseline"
            | "--nresamples"
            | "--noise-threshold"
            | "--confidence-level"
            | "--significance-level"
            | "--output-format"
            | "--color"
            | "--plotting-backend" => {
                args.next();
            }
            s if s.starts_with('-') => {}
            s => filters.push(s.to_string()),
        }
    }
    filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
}
