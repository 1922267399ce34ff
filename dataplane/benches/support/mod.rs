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
