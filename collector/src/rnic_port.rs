//! The soft-RNIC on a port that moves whole Ethernet frames — an AF_PACKET socket on an
//! interface, or a DPDK ethdev (feature `dpdk`) — instead of the host's UDP socket. It is what
//! a NIC sees: the ICRC is checked over the IPv4 header as it arrived (nothing rebuilt), ARP
//! requests for the collector's address are answered with the port's MAC, and replies are
//! whole frames sent to the MAC each peer's packets came from.
//!
//! The protocol work is the same [`RnicCore`] (the `roce` endpoint over registered memory) as
//! the UDP runtime's; only the framing differs.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ports::buf::{Frame, Pool};
use ports::port::{PortIo, fill};
use wire::arp::ArpRepr;
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr};
use wire::ipv4::{Ipv4Packet, protocol};
use wire::roce::RoceRepr;
use wire::stack::{RoceStack, UdpFlow};
use wire::udp::UdpPacket;

use crate::rnic::{Notifier, RnicConfig, RnicCore, RnicStats, bump};
use crate::store::Stores;

/// Frames per receive burst.
const BURST: usize = 32;
/// How often the endpoint's timers run.
const TIMER_PERIOD_NS: u64 = 100_000;

/// The soft-RNIC on a frame port `P` with buffers `F` from pool `Q`.
pub struct PortRnic<F, P, Q> {
    cfg: RnicConfig,
    mac: EthernetAddress,
    port: P,
    pool: Q,
    core: RnicCore,
    /// The MAC each peer's packets came from: where its replies go.
    neighbours: HashMap<Ipv4Addr, EthernetAddress>,
    rx: Vec<F>,
    tx: Vec<F>,
    epoch: Instant,
    next_timers: u64,
}

impl<F, P, Q> std::fmt::Debug for PortRnic<F, P, Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortRnic").field("cfg", &self.cfg).field("mac", &self.mac).finish()
    }
}

impl<F: Frame, P: PortIo<F>, Q: Pool<F> + 'static> PortRnic<F, P, Q> {
    /// Serve `stores` on `port`, as `cfg.ip` with MAC `mac`, buffers from `pool`.
    pub fn new(cfg: RnicConfig, mac: EthernetAddress, port: P, pool: Q, stores: &Stores) -> Self {
        Self {
            cfg,
            mac,
            port,
            pool,
            core: RnicCore::new(&cfg, stores),
            neighbours: HashMap::new(),
            rx: Vec::with_capacity(BURST),
            tx: Vec::with_capacity(BURST * 2),
            epoch: Instant::now(),
            next_timers: 0,
        }
    }

    /// The counters.
    pub fn stats(&self) -> Arc<RnicStats> {
        self.core.stats.clone()
    }

    /// The notification subscribers.
    pub fn notifier(&self) -> Notifier {
        self.core.notifier.clone()
    }

    /// Receive one burst, handle it, send the replies, run the timers. Returns the frames
    /// received.
    pub fn poll(&mut self) -> usize {
        let now = self.epoch.elapsed().as_nanos() as u64;
        let n = self.port.rx_burst(&mut self.pool, &mut self.rx, BURST);
        let mut rx = std::mem::take(&mut self.rx);
        for f in rx.drain(..) {
            self.on_frame(now, f.data());
            self.pool.free(f);
        }
        self.rx = rx;
        if now >= self.next_timers {
            self.next_timers = now + TIMER_PERIOD_NS;
            let Self { core, tx, pool, neighbours, mac, cfg, .. } = self;
            core.timers(now, &mut |peer, roce| push_frame(cfg, *mac, neighbours, pool, tx, peer, roce));
        }
        if !self.tx.is_empty() {
            let sent = self.port.tx_burst(&mut self.tx, &mut self.pool);
            self.core.stats.tx_packets.fetch_add(sent as u64, Ordering::Relaxed);
            // What the port would not take is dropped, as a NIC's full queue drops: the
            // requester's timeout recovers it.
            for f in self.tx.drain(..) {
                self.pool.free(f);
            }
        }
        n
    }

    /// Serve until `stop` is set (busy-polling, as a poll-mode driver does).
    pub fn run(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            if self.poll() == 0 {
                std::thread::yield_now();
            }
        }
    }

    fn on_frame(&mut self, now: u64, data: &[u8]) {
        let Ok(eth) = EthernetFrame::new_checked(data) else { return };
        match eth.ethertype() {
            EtherType::ARP => self.on_arp(eth.src_addr(), eth.payload()),
            EtherType::IPV4 => {
                let Ok(ip) = Ipv4Packet::new_checked(eth.payload()) else { return };
                if ip.dst_addr() != self.cfg.ip || ip.protocol() != protocol::UDP {
                    return;
                }
                let Ok(udp) = UdpPacket::new_checked(ip.payload()) else { return };
                if udp.dst_port() != self.cfg.udp_port {
                    return;
                }
                let s = &self.core.stats;
                bump(&s.rx_packets);
                s.rx_bytes.fetch_add(udp.payload().len() as u64, Ordering::Relaxed);
                let src = ip.src_addr();
                // The IPv4 packet exactly as long as its header says (Ethernet pads short frames).
                let total = usize::from(ip.total_len()).min(eth.payload().len());
                self.neighbours.insert(src, eth.src_addr());
                let Self { core, tx, pool, neighbours, mac, cfg, .. } = self;
                core.on_ip(now, src, &eth.payload()[..total], cfg.icrc, &mut |peer, roce| {
                    push_frame(cfg, *mac, neighbours, pool, tx, peer, roce)
                });
            }
            _ => {}
        }
    }

    /// Answer a request for our address with our MAC.
    fn on_arp(&mut self, from: EthernetAddress, body: &[u8]) {
        let Ok(req) = ArpRepr::parse(body) else { return };
        if req.op != 1 || req.target_ip != self.cfg.ip {
            return;
        }
        self.neighbours.insert(req.sender_ip, from);
        let reply = ArpRepr {
            op: 2,
            sender_mac: self.mac,
            sender_ip: self.cfg.ip,
            target_mac: req.sender_mac,
            target_ip: req.sender_ip,
        };
        let mut f = [0u8; 60];
        let e = EthernetRepr { src_addr: self.mac, dst_addr: from, vlan: None, ethertype: EtherType::ARP };
        if e.emit(&mut f).is_ok()
            && reply.emit(&mut f[e.buffer_len()..]).is_ok()
            && let Some(b) = fill(&mut self.pool as &mut dyn Pool<F>, &f)
        {
            self.tx.push(b);
        }
    }
}

/// Build the reply frame for `peer` (to the MAC its packets came from; dropped if we never
/// heard from it) and queue it.
fn push_frame<F: Frame, Q: Pool<F> + 'static>(
    cfg: &RnicConfig,
    mac: EthernetAddress,
    neighbours: &HashMap<Ipv4Addr, EthernetAddress>,
    pool: &mut Q,
    tx: &mut Vec<F>,
    peer: Ipv4Addr,
    roce: RoceRepr<'_>,
) {
    let Some(&dst) = neighbours.get(&peer) else { return };
    let from = std::net::SocketAddrV4::new(cfg.ip, cfg.udp_port);
    let to = std::net::SocketAddrV4::new(peer, wire::udp::port::ROCE_V2);
    let mut b = [0u8; 512];
    if let Ok(n) = (RoceStack { flow: UdpFlow::host_udp(mac, dst, from, to), roce }).emit(&mut b)
        && let Some(f) = fill(pool as &mut dyn Pool<F>, &b[..n])
    {
        tx.push(f);
    }
}
