//! The soft-RNIC on a port that moves whole Ethernet frames — an AF_PACKET socket on an
//! interface, a DPDK ethdev (feature `dpdk`), or a host of the virtual-time lab — instead of the
//! host's UDP socket. It is what a NIC sees: the ICRC is checked over the IPv4 header as it
//! arrived (nothing rebuilt), and replies are whole frames sent to the MAC each peer's packets
//! came from.
//!
//! [`RnicAgent`] is that soft-RNIC as a frame-level [`Agent`] over the same `RnicCore` (the
//! `roce` endpoint over registered memory) as the UDP runtime's; [`PortRnic`] runs it on a port
//! with the host runtime (`ports::host`: the port's buffers and clock, ARP answered for the
//! collector's address); the lab runs it on its virtual clock.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ports::buf::{Frame, Pool};
use ports::host::{HostPort, Idle};
use ports::port::PortIo;
use roce::agent::Agent;
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::ipv4::{Ipv4Packet, protocol};
use wire::roce::RoceRepr;
use wire::stack::{RoceStack, UdpFlow};
use wire::udp::UdpPacket;

use crate::rnic::{Notifier, RnicConfig, RnicCore, RnicStats, bump};
use crate::store::Stores;

/// The largest reply the endpoint makes (an ACK, an atomic ACK, a CM MAD, the metadata SEND).
const MAX_REPLY: usize = 512;

/// The soft-RNIC as a frame-level agent: see the module.
pub struct RnicAgent {
    cfg: RnicConfig,
    mac: EthernetAddress,
    core: RnicCore,
    /// The MAC each peer's packets came from: where its replies go.
    neighbours: HashMap<Ipv4Addr, EthernetAddress>,
    /// Replies built, waiting for `poll_transmit`.
    out: VecDeque<([u8; MAX_REPLY], usize)>,
}

impl std::fmt::Debug for RnicAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RnicAgent").field("cfg", &self.cfg).field("mac", &self.mac).finish()
    }
}

impl RnicAgent {
    /// Serve `stores` as `cfg.ip` with MAC `mac`.
    pub fn new(cfg: RnicConfig, mac: EthernetAddress, stores: &Stores) -> Self {
        Self { cfg, mac, core: RnicCore::new(&cfg, stores), neighbours: HashMap::new(), out: VecDeque::new() }
    }

    /// The counters.
    pub fn stats(&self) -> Arc<RnicStats> {
        self.core.stats.clone()
    }

    /// The notification subscribers.
    pub fn notifier(&self) -> Notifier {
        self.core.notifier.clone()
    }

    /// Connections: (our QPN, port, peer).
    pub fn connections(&self) -> Vec<(u32, u16, Ipv4Addr)> {
        self.core.connections()
    }
}

/// Queue the reply frame for `peer`: to the MAC its packets came from (dropped, and counted, if
/// we never heard from it).
fn push_reply(
    cfg: &RnicConfig,
    mac: EthernetAddress,
    neighbours: &HashMap<Ipv4Addr, EthernetAddress>,
    stats: &RnicStats,
    out: &mut VecDeque<([u8; MAX_REPLY], usize)>,
    peer: Ipv4Addr,
    roce: RoceRepr<'_>,
) {
    let Some(&dst) = neighbours.get(&peer) else {
        bump(&stats.unroutable);
        return;
    };
    let from = SocketAddrV4::new(cfg.ip, cfg.udp_port);
    let to = SocketAddrV4::new(peer, wire::udp::port::ROCE_V2);
    let mut b = [0u8; MAX_REPLY];
    match (RoceStack { flow: UdpFlow::host_udp(mac, dst, from, to), roce }).emit(&mut b) {
        Ok(n) => out.push_back((b, n.max(wire::ethernet::MIN_FRAME_LEN))),
        Err(_) => bump(&stats.unroutable),
    }
}

impl Agent for RnicAgent {
    fn handle_packet(&mut self, now: u64, data: &[u8]) {
        let Ok(eth) = EthernetFrame::new_checked(data) else { return };
        if eth.ethertype() != EtherType::IPV4 {
            return;
        }
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
        let Self { core, out, neighbours, mac, cfg } = self;
        let stats = core.stats.clone();
        core.on_ip(now, src, &eth.payload()[..total], cfg.icrc, &mut |peer, roce| {
            push_reply(cfg, *mac, neighbours, &stats, out, peer, roce)
        });
    }

    fn handle_timeout(&mut self, now: u64) {
        let Self { core, out, neighbours, mac, cfg } = self;
        let stats = core.stats.clone();
        core.timers(now, &mut |peer, roce| push_reply(cfg, *mac, neighbours, &stats, out, peer, roce));
    }

    fn poll_transmit(&mut self, _now: u64, _paused: u8, buf: &mut [u8]) -> Option<usize> {
        let (b, n) = self.out.pop_front()?;
        let dst = buf.get_mut(..n)?;
        dst.copy_from_slice(&b[..n]);
        bump(&self.core.stats.tx_packets);
        Some(n)
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.core.poll_timeout()
    }
}

/// The soft-RNIC served on a frame port `P` with buffers `F` from pool `Q`: [`RnicAgent`] on
/// the host runtime, busy-polling as a poll-mode driver does.
pub struct PortRnic<F, P, Q> {
    host: HostPort<F, P, Q>,
    agent: RnicAgent,
}

impl<F, P, Q> std::fmt::Debug for PortRnic<F, P, Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortRnic").field("agent", &self.agent).finish()
    }
}

impl<F: Frame, P: PortIo<F>, Q: Pool<F> + 'static> PortRnic<F, P, Q> {
    /// Serve `stores` on `port`, as `cfg.ip` with MAC `mac`, buffers from `pool`.
    pub fn new(cfg: RnicConfig, mac: EthernetAddress, port: P, pool: Q, stores: &Stores) -> Self {
        Self {
            host: HostPort::new(port, pool, mac, cfg.ip, Idle::Spin),
            agent: RnicAgent::new(cfg, mac, stores),
        }
    }

    /// The counters.
    pub fn stats(&self) -> Arc<RnicStats> {
        self.agent.stats()
    }

    /// The notification subscribers.
    pub fn notifier(&self) -> Notifier {
        self.agent.notifier()
    }

    /// One round: a burst received and handled, the timers, the replies sent. Returns whether
    /// anything arrived or left.
    pub fn poll(&mut self) -> bool {
        self.host.poll(&mut self.agent)
    }

    /// Serve until `stop` is set.
    pub fn run(&mut self, stop: &AtomicBool) {
        self.host.run(&mut self.agent, |_, _| stop.load(Ordering::Relaxed));
    }
}
