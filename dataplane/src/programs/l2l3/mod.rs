//! `l2l3`: L2 bridging with MAC learning and IPv4 routing, the switch's proof program.
//!
//! * **L2**: one bridge domain over the front-panel ports. Source MACs are learned per port
//!   (static entries from the config are never aged or moved) and forgotten after
//!   `mac_aging_s`; known unicast goes to its port, everything else floods (multicast group 0,
//!   ingress port excluded).
//! * **L3**: a frame addressed to the ingress port's MAC carrying IPv4 is routed: header checksum
//!   verified, TTL checked, longest-prefix match, next hop chosen among an ECMP group by a
//!   CRC-16 hash of the 5-tuple, MACs rewritten, TTL decremented with an incremental checksum
//!   update (RFC 1624). Connected prefixes come from the ports' addresses.
//! * **ARP**: requests for the switch's own addresses are answered in place; senders on a
//!   connected subnet are learned as neighbors; a routed packet whose next hop has no MAC yet is
//!   dropped and an ARP request for it goes out (at most one per 100 ms per address).
//! * **Drops** are counted as `malformed`, `bad_checksum`, `ttl_expired`, `no_route`,
//!   `no_neighbor`, `same_port`, `to_switch` (IPv4 for the switch itself, which has no IP stack)
//!   and `arp_to_switch` (ARP replies the switch consumed).
//! * **Queue**: DSCP >> 3 by default, or the 802.1Q PCP (`qos = "pcp"`).

use std::net::{Ipv4Addr, SocketAddrV4};

use wire::stack::UdpFlow;

use wire::arp::{self, ArpPacket, ArpRepr};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::hpcc_int::{IntHeader, IntHopRepr};
use wire::ipv4::{Ipv4Packet, protocol};

mod config;
pub mod decl;
mod p4;
mod tables;

pub use self::config::{L2l3Section, NeighborEntry, RouteEntry, StaticMac};
use super::{BuildCtx, FromConfig};
use crate::buf::Frame;
use crate::config::{Config, ConfigError, parse_cidr};
use crate::model::{DropReason, ExactTable, HashAlgo, HashUnit, LpmTable, Resources, builtin};
use crate::switch::{Dest, EgressMd, Emitter, IngressMd, PortId, Program};

/// Largest table `[l2l3]` may size (entries).
const MAX_TABLE: usize = 1 << 24;
/// Default MAC table size.
pub const DEFAULT_MAC_TABLE: usize = 4096;
/// Default MAC aging, seconds.
pub const DEFAULT_MAC_AGING_S: u64 = 300;
/// Default route table size.
pub const DEFAULT_ROUTES: usize = 1024;
/// Default neighbor table size.
pub const DEFAULT_NEIGHBORS: usize = 1024;
/// The multicast group flooding uses: every front-panel port.
pub const FLOOD_GROUP: u16 = 0;
/// Most next hops of one ECMP group.
pub const MAX_PATHS: usize = 16;

/// Entries of [`L2l3::host_adj`], the connected hosts' next-hop cache.
const HOST_ADJ: usize = 256;
/// Most ECMP groups.
pub const MAX_GROUPS: usize = 256;
const ARP_RETRY_NS: u64 = 100_000_000;
/// Queue of the frames the switch itself sends (ARP).
const CONTROL_QUEUE: u8 = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MacEntry {
    port: PortId,
    last_seen: u64,
    is_static: bool,
}

/// Where a prefix leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A directly connected subnet on this port: the destination is the next hop.
    Connected(PortId),
    /// An ECMP group of next hops.
    Group(u16),
    /// One of the switch's own addresses (a /32 "receive" entry, as in VPP's FIB): packets to
    /// it are not forwarded.
    Local,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Neighbor {
    mac: EthernetAddress,
    port: PortId,
    is_static: bool,
}

#[derive(Debug, Clone)]
struct PortL3 {
    mac: EthernetAddress,
    addrs: Vec<(Ipv4Addr, u8)>,
}

#[derive(Debug, Clone, Copy)]
struct Drops {
    bad_checksum: DropReason,
    ttl_expired: DropReason,
    no_route: DropReason,
    no_neighbor: DropReason,
    same_port: DropReason,
    to_switch: DropReason,
    arp_to_switch: DropReason,
}

/// A control-plane command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Add or replace a route via next hops (ECMP if several).
    RouteVia(Ipv4Addr, u8, Vec<Ipv4Addr>),
    /// Add or replace a connected route.
    RouteConnected(Ipv4Addr, u8, PortId),
    /// Remove a route.
    RouteDel(Ipv4Addr, u8),
    /// Add or replace a static neighbor.
    NeighborAdd(Ipv4Addr, EthernetAddress, PortId),
    /// Remove a neighbor.
    NeighborDel(Ipv4Addr),
    /// Add or replace a static MAC entry.
    MacAdd(EthernetAddress, PortId),
    /// Remove a MAC entry.
    MacDel(EthernetAddress),
    /// List the tables.
    Show,
    /// A port's link went down: ECMP leaves out the next hops behind it (a routing daemon's
    /// withdrawal on link-down).
    PortDown(PortId),
    /// The port's link is up again.
    PortUp(PortId),
}

/// The program.
#[derive(Debug)]
pub struct L2l3 {
    resources: Resources,
    ports: Vec<PortL3>,
    port_names: Vec<String>,
    macs: ExactTable<u64, MacEntry>,
    routes: LpmTable<Route>,
    groups: Vec<Vec<Ipv4Addr>>,
    /// Each ECMP group's members resolved to their rewrite — the neighbour's port and MAC, the
    /// port's MAC — member `i` of group `g` at `g * MAX_PATHS + i`, `None` while the
    /// neighbour is unknown; rebuilt whenever a group or a neighbour changes. A route via a
    /// group reads its next hop here in one load (the adjacency of DPDK's and VPP's FIBs), not
    /// through the group's list, the neighbour table's hash and the port (four dependent
    /// loads, a third of the lab's time in ingress at k = 8). The same entries as the tables
    /// hold: a cache, not a table of its own.
    adj: Vec<Option<NextHop>>,
    /// Hosts on connected subnets: their resolved next hop, direct-mapped by the address's low
    /// byte (the host adjacency a connected prefix's hosts get in DPDK's and VPP's FIBs), so a
    /// hit skips the LPM, the neighbour table's hash and the port's MAC. A cache of the tables,
    /// filled from the LPM's and the neighbour table's answers and emptied whenever a route, a
    /// neighbour or a port changes ([`Self::apply`], [`Self::resolve_groups`]).
    host_adj: Vec<Option<(u32, NextHop)>>,
    /// Per group, how many members are usable and which (their positions in the group): every
    /// member while no port is down, so ECMP hashes as it always has; a member whose
    /// neighbour sits behind a port that is down is left out.
    live: Vec<(u8, [u8; MAX_PATHS])>,
    /// Ports whose link is down ([`Command::PortDown`]).
    down: Vec<bool>,
    neighbors: ExactTable<u32, Neighbor>,
    arp_pending: ExactTable<u32, u64>,
    ecmp: HashUnit,
    aging_ns: u64,
    qos_pcp: bool,
    /// HPCC++ INT stamping at egress, with this switch ID.
    int_switch_id: Option<u16>,
    drops: Drops,
    last_aging: u64,
    /// Per port, the source MAC last learned there and when: a burst from one host learns once.
    learn_cache: Vec<(u64, u64)>,
    /// Tests: frames taken by [`Self::route_connected_host`].
    #[cfg(test)]
    fast_taken: u64,
    /// Tests: [`Self::route_connected_host`] switched off (every frame through the general
    /// path), to compare the two.
    #[cfg(test)]
    fast_off: bool,
}

fn mac_key(m: EthernetAddress) -> u64 {
    let b = m.0;
    u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
}

fn prefix_of(a: Ipv4Addr, len: u8) -> Ipv4Addr {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
    Ipv4Addr::from_bits(a.to_bits() & mask)
}

impl L2l3 {
    /// The member of group `g` a flow whose ECMP hash is `hash()` takes: among the live
    /// members; `None` if every one is behind a port that is down.
    #[inline]
    fn member(&self, g: usize, hash: impl FnOnce() -> u32) -> Option<usize> {
        let (n, idx) = self.live.get(g)?;
        match *n {
            0 => None,
            1 => Some(usize::from(idx[0])),
            n => Some(usize::from(idx[hash() as usize % usize::from(n)])),
        }
    }

    /// Whether port `p` is set down.
    pub fn is_down(&self, p: PortId) -> bool {
        self.down.get(usize::from(p)).copied().unwrap_or(false)
    }

    fn is_local_on(&self, port: PortId, ip: Ipv4Addr) -> bool {
        self.ports.get(usize::from(port)).is_some_and(|p| p.addrs.iter().any(|&(a, _)| a == ip))
    }

    fn on_connected_subnet(&self, port: PortId, ip: Ipv4Addr) -> bool {
        self.ports
            .get(usize::from(port))
            .is_some_and(|p| p.addrs.iter().any(|&(a, l)| prefix_of(a, l) == prefix_of(ip, l)))
    }

    /// Learn that `src` is behind `port`. Group addresses and the all-zero address are never
    /// learned (no station owns them; a zero source would otherwise move between ports with
    /// every frame), but their frames are still forwarded.
    #[inline(always)]
    fn learn(&mut self, src: EthernetAddress, port: PortId, now: u64) {
        self.learn_key(mac_key(src), port, now);
    }

    /// [`Self::learn`] of the source whose [`mac_key`] is `key`.
    #[inline(always)]
    fn learn_key(&mut self, key: u64, port: PortId, now: u64) {
        // The hot case inline: the port's last source, learned within the second.
        if let Some(&(cached, at)) = self.learn_cache.get(usize::from(port))
            && cached == key
            && now.saturating_sub(at) < 1_000_000_000
        {
            return;
        }
        self.learn_slow(key, port, now);
    }

    /// [`Self::learn`] past its per-port cache: the MAC table.
    #[cold]
    #[inline(never)]
    fn learn_slow(&mut self, key: u64, port: PortId, now: u64) {
        let b = key.to_be_bytes();
        let src = EthernetAddress([b[2], b[3], b[4], b[5], b[6], b[7]]);
        if usize::from(port) >= self.ports.len() {
            return;
        }
        let pi = usize::from(port);
        if src.is_multicast() || src.is_zero() {
            // Never learned; cached like a learned source, so that a stream of them (DPDK's
            // net_null sends all-zero frames) takes the inline check, not this call, per packet.
            self.learn_cache[pi] = (key, now);
            return;
        }
        match self.macs.get_mut(&key) {
            Some(e) if e.is_static => {}
            // Refresh at most once a second: a table write per packet is not free.
            Some(e) if e.port == port && now.saturating_sub(e.last_seen) < 1_000_000_000 => {}
            Some(e) => {
                e.port = port;
                e.last_seen = now;
                // The MAC may have moved: no other port may skip learning it.
                for (i, c) in self.learn_cache.iter_mut().enumerate() {
                    if i != pi && c.0 == key {
                        *c = (u64::MAX, 0);
                    }
                }
            }
            None => {
                // A full table learns nothing more until entries age out.
                if self.macs.insert(key, MacEntry { port, last_seen: now, is_static: false }).is_err() {
                    return;
                }
            }
        }
        self.learn_cache[pi] = (key, now);
    }

    /// The queue: the PCP, or the IP precedence (DSCP >> 3).
    #[inline]
    fn queue_of(&self, eth: &EthernetFrame<&[u8]>, ip_tos: Option<u8>) -> u8 {
        if self.qos_pcp { eth.vlan().map_or(0, |v| v.pcp) } else { ip_tos.map_or(0, |tos| tos >> 5) }
    }

    /// Send an ARP request for `target` out of `port`, unless one went out recently.
    fn solicit<F: Frame>(&mut self, target: Ipv4Addr, port: PortId, now: u64, out: &mut Emitter<'_, F>) {
        let key = target.to_bits();
        if self.arp_pending.lookup(&key).is_some_and(|&t| now.saturating_sub(t) < ARP_RETRY_NS) {
            return;
        }
        let Some(pl3) = self.ports.get(usize::from(port)) else { return };
        let Some(&(sender_ip, _)) =
            pl3.addrs.iter().find(|&&(a, l)| prefix_of(a, l) == prefix_of(target, l)).or(pl3.addrs.first())
        else {
            return;
        };
        let mac = pl3.mac;
        if self.arp_pending.insert(key, now).is_err() {
            // Table full: forget stale entries and try again.
            self.arp_pending.retain(|_, t| now.saturating_sub(*t) < ARP_RETRY_NS);
            let _ = self.arp_pending.insert(key, now);
        }
        out.emit(Dest::Port(port), CONTROL_QUEUE, |f| {
            let Some(b) = f.append(wire::ethernet::MIN_FRAME_LEN) else { return false };
            arp::emit_request(b, mac, sender_ip, target).is_ok()
        });
    }

    /// ARP: answer requests for our addresses, learn neighbors, consume replies to us.
    /// Returns `false` if the frame is not the switch's business (it is then bridged).
    fn arp<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, l2: usize) -> bool {
        let port = md.ingress_port;
        let Ok(a) = ArpRepr::parse(&pkt.data()[l2..]) else { return false };
        if usize::from(port) >= self.ports.len() {
            return false;
        }
        if a.sender_ip != Ipv4Addr::UNSPECIFIED
            && !a.sender_mac.is_multicast()
            && self.on_connected_subnet(port, a.sender_ip)
        {
            let key = a.sender_ip.to_bits();
            let known = self.neighbors.get(&key);
            if !known.is_some_and(|n| n.is_static || (n.mac == a.sender_mac && n.port == port))
                && self.neighbors.insert(key, Neighbor { mac: a.sender_mac, port, is_static: false }).is_ok()
            {
                self.resolve_groups();
            }
        }
        if !self.is_local_on(port, a.target_ip) {
            return false;
        }
        match a.op {
            arp::OP_REQUEST => {
                let mac = self.ports[usize::from(port)].mac;
                let data = pkt.data_mut();
                let mut eth = EthernetFrame::new_unchecked(&mut data[..]);
                eth.set_dst_addr(a.sender_mac);
                eth.set_src_addr(mac);
                if let Ok(mut ap) = ArpPacket::new_checked(&mut data[l2..]) {
                    ap.make_reply(mac);
                }
                md.dest = Dest::Port(port);
                md.qid = CONTROL_QUEUE;
            }
            _ => md.dest = Dest::Drop(self.drops.arp_to_switch),
        }
        true
    }

    /// The next hop towards `dst`: longest-prefix match, an ECMP member chosen by
    /// `ecmp_key`'s CRC-16 (callers pass the 5-tuple, or a flow's identity), and its neighbor
    /// entry. A next hop without a MAC yet gets an ARP request (at most one per 100 ms) and is
    /// [`NoNextHop::Unresolved`]. `ecmp_key` is only called for a group of several next hops.
    /// Programs built on this one (the DTA translator) reach their own peers through it.
    pub fn next_hop<F: Frame>(
        &mut self,
        dst: Ipv4Addr,
        ecmp_key: impl FnOnce() -> [u8; 13],
        now: u64,
        out: &mut Emitter<'_, F>,
    ) -> Result<NextHop, NoNextHop> {
        if let Some(&Some((ip, nh))) = self.host_adj.get(dst.to_bits() as usize % HOST_ADJ)
            && ip == dst.to_bits()
        {
            // The LPM's and the neighbour table's entries, resolved: the same lookups in a
            // test's trace.
            self.routes.record_lookup(dst);
            self.neighbors.record_lookup(&ip);
            return Ok(nh);
        }
        let route = *self.routes.lookup(dst).ok_or(NoNextHop::NoRoute)?;
        let nexthop = match route {
            Route::Local => return Err(NoNextHop::Local),
            Route::Connected(_) => dst,
            Route::Group(g) => {
                let ecmp = self.ecmp;
                let i = self.member(usize::from(g), || ecmp.hash(&ecmp_key())).ok_or(NoNextHop::NoRoute)?;
                let members = &self.groups[usize::from(g)];
                if let Some(nh) = self.adj[usize::from(g) * MAX_PATHS + i] {
                    // The neighbour table's entry, resolved: the same lookup in a test's trace.
                    self.neighbors.record_lookup(&members[i].to_bits());
                    return Ok(nh);
                }
                members[i]
            }
        };
        let Some(&nb) = self.neighbors.lookup(&nexthop.to_bits()) else {
            // Resolving the next hop is the control plane's work (ARP on its connected port),
            // done on a neighbor miss only: not a match-action lookup.
            let solicit_port = match route {
                Route::Connected(p) => Some(p),
                _ => match self.routes.find(nexthop) {
                    Some(Route::Connected(p)) => Some(*p),
                    _ => None,
                },
            };
            if let Some(p) = solicit_port {
                self.solicit(nexthop, p, now, out);
            }
            return Err(NoNextHop::Unresolved);
        };
        let nh = NextHop { port: nb.port, dst_mac: nb.mac, src_mac: self.ports[usize::from(nb.port)].mac };
        if matches!(route, Route::Connected(_))
            && let Some(slot) = self.host_adj.get_mut(dst.to_bits() as usize % HOST_ADJ)
        {
            *slot = Some((dst.to_bits(), nh));
        }
        Ok(nh)
    }

    /// A UDP flow the switch itself sends to `dst` from port `src_port`: routed by
    /// [`next_hop`](Self::next_hop) (the ECMP key the 5-tuple with an unspecified source), from
    /// `src_ip`, else the switch's address on the port it leaves by; and that port. What
    /// programs that emit datagrams of their own (telemetry reports, flushed aggregates) share.
    pub fn udp_flow_to<F: Frame>(
        &mut self,
        src_ip: Option<Ipv4Addr>,
        src_port: u16,
        dst: SocketAddrV4,
        now: u64,
        out: &mut Emitter<'_, F>,
    ) -> Result<(PortId, UdpFlow), NoNextHop> {
        let key = || {
            let mut k = [0u8; 13];
            k[4..8].copy_from_slice(&dst.ip().octets());
            k[8] = protocol::UDP;
            k[9..11].copy_from_slice(&src_port.to_be_bytes());
            k[11..13].copy_from_slice(&dst.port().to_be_bytes());
            k
        };
        let nh = self.next_hop(*dst.ip(), key, now, out)?;
        let src = src_ip.or_else(|| self.port_address(nh.port)).ok_or(NoNextHop::NoRoute)?;
        Ok((nh.port, UdpFlow::host_udp(nh.src_mac, nh.dst_mac, SocketAddrV4::new(src, src_port), dst)))
    }

    /// The next hop towards `dst` as the switch holds it now, without side effects: what
    /// [`next_hop`](Self::next_hop) gives for a key of `dst` alone, or `None` (no route, local,
    /// unresolved). The P4 export resolves its static paths (reports to collectors) with it.
    pub fn resolve(&self, dst: Ipv4Addr) -> Option<NextHop> {
        let mut k = [0u8; 13];
        k[4..8].copy_from_slice(&dst.octets());
        self.resolve_flow(dst, k)
    }

    /// The next hop a flow to `dst` whose ECMP key is `key` (addresses, protocol, ports: the 13
    /// bytes the data path hashes) takes, as the data path sends it, without side effects;
    /// `None` for no route, a local address or an unresolved neighbour.
    pub fn resolve_flow(&self, dst: Ipv4Addr, key: [u8; 13]) -> Option<NextHop> {
        let nexthop = match *self.routes.find(dst)? {
            Route::Local => return None,
            Route::Connected(_) => dst,
            Route::Group(g) => {
                let i = self.member(usize::from(g), || self.ecmp.hash(&key))?;
                *self.groups[usize::from(g)].get(i)?
            }
        };
        let nb = self.neighbors.get(&nexthop.to_bits())?;
        Some(NextHop { port: nb.port, dst_mac: nb.mac, src_mac: self.ports[usize::from(nb.port)].mac })
    }

    /// The keys each of its tables was looked up with since the last call (tests).
    #[cfg(test)]
    pub(crate) fn take_traces(&self) -> [(&'static str, Vec<u128>); 4] {
        [
            ("dmac", self.macs.take_trace()),
            ("ipv4_lpm", self.routes.take_trace()),
            ("neighbor", self.neighbors.take_trace()),
            ("arp_pending", self.arp_pending.take_trace()),
        ]
    }

    /// The switch's first address on `port`, if it has one.
    pub fn port_address(&self, port: PortId) -> Option<Ipv4Addr> {
        self.ports.get(usize::from(port)).and_then(|p| p.addrs.first()).map(|a| a.0)
    }

    /// The switch's MAC on `port`.
    pub fn port_mac(&self, port: PortId) -> Option<EthernetAddress> {
        self.ports.get(usize::from(port)).map(|p| p.mac)
    }

    /// Whether `ip` is one of the switch's own addresses.
    pub fn is_local(&self, ip: Ipv4Addr) -> bool {
        self.routes.lookup(ip) == Some(&Route::Local)
    }

    /// Every frame [`route_connected_host`](Self::route_connected_host) does not take: parsed,
    /// learned, then ARP, routing or bridging.
    #[inline]
    fn ingress_general<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        let (dst, src, ethertype, l2) = {
            let Ok(eth) = EthernetFrame::new_checked(pkt.data()) else {
                md.dest = Dest::Drop(builtin::MALFORMED);
                return;
            };
            let tos = (eth.ethertype() == EtherType::IPV4).then(|| eth.payload().get(1).copied()).flatten();
            md.qid = self.queue_of(&eth, tos);
            (eth.dst_addr(), eth.src_addr(), eth.ethertype(), eth.header_len())
        };
        let port = md.ingress_port;
        self.learn(src, port, md.ingress_ts);
        if ethertype == EtherType::ARP && self.arp(pkt, md, l2) {
            return;
        }
        if ethertype == EtherType::IPV4 && self.ports.get(usize::from(port)).is_some_and(|p| p.mac == dst) {
            return self.route(pkt, md, l2, out);
        }
        // Bridge.
        if dst.is_multicast() {
            md.dest = Dest::Multicast(FLOOD_GROUP);
            md.exclude_ingress = true;
            return;
        }
        match self.macs.lookup(&mac_key(dst)) {
            Some(e) if e.port == port => md.dest = Dest::Drop(self.drops.same_port),
            Some(e) => md.dest = Dest::Port(e.port),
            None => {
                md.dest = Dest::Multicast(FLOOD_GROUP);
                md.exclude_ingress = true;
            }
        }
    }

    /// The common routed frame in one pass over fixed offsets, as [`ingress`](Program::ingress)
    /// would handle it: untagged IPv4 without options to this port's MAC, a valid header
    /// checksum and length, TTL above 1, to a connected host whose next hop is cached
    /// ([`next_hop`](Self::next_hop)'s first step). The same learning, queue, traces, rewrite and
    /// destination as the general path; `false`, with nothing done, for any other frame, which
    /// the general path then parses and handles (a test compares the two on arbitrary frames).
    #[inline(always)]
    fn route_connected_host(&mut self, data: &mut [u8], md: &mut IngressMd) -> bool {
        #[cfg(test)]
        if self.fast_off {
            return false;
        }
        let port = md.ingress_port;
        let len = data.len();
        let Some(h) = data.first_chunk_mut::<34>() else { return false };
        if !wire::ethernet::untagged_ipv4_without_options(h) {
            return false;
        }
        let Some(p) = self.ports.get(usize::from(port)) else { return false };
        let total = usize::from(u16::from_be_bytes([h[16], h[17]]));
        if h[..6] != p.mac.0 || h[22] <= 1 || total < 20 || 14 + total > len {
            return false;
        }
        if h[14..].first_chunk().is_none_or(|ip| !wire::ipv4::header_checksum_ok(ip)) {
            return false;
        }
        let dst = u32::from_be_bytes([h[30], h[31], h[32], h[33]]);
        let Some(&Some((ip, nh))) = self.host_adj.get(dst as usize % HOST_ADJ) else { return false };
        if ip != dst {
            return false;
        }
        // The source's [`mac_key`]: bytes 6..12, read as the low 48 bits of bytes 4..12.
        let src = u64::from_be_bytes([h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11]]) & 0xffff_ffff_ffff;
        let tos = h[15];
        h[..6].copy_from_slice(&nh.dst_mac.0);
        h[6..12].copy_from_slice(&nh.src_mac.0);
        Ipv4Packet::new_unchecked(&mut h[14..]).decrement_ttl();
        md.qid = if self.qos_pcp { 0 } else { tos >> 5 };
        self.learn_key(src, port, md.ingress_ts);
        self.routes.record_lookup(Ipv4Addr::from_bits(dst));
        self.neighbors.record_lookup(&ip);
        md.dest = Dest::Port(nh.port);
        #[cfg(test)]
        {
            self.fast_taken += 1;
        }
        true
    }

    /// Route an IPv4 packet addressed to the router MAC.
    fn route<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, l2: usize, out: &mut Emitter<'_, F>) {
        let data = pkt.data_mut();
        let Ok(ip) = Ipv4Packet::new_checked(&data[l2..]) else {
            md.dest = Dest::Drop(builtin::MALFORMED);
            return;
        };
        if ip.version() != 4 {
            md.dest = Dest::Drop(builtin::MALFORMED);
            return;
        }
        if !ip.verify_checksum() {
            md.dest = Dest::Drop(self.drops.bad_checksum);
            return;
        }
        let dst = ip.dst_addr();
        // The 5-tuple, for ECMP.
        let key = || {
            let mut key = [0u8; 13];
            key[0..4].copy_from_slice(&ip.src_addr().octets());
            key[4..8].copy_from_slice(&dst.octets());
            key[8] = ip.protocol();
            let (hl, p) = (ip.header_len(), ip.packet());
            let l4 = matches!(ip.protocol(), protocol::TCP | protocol::UDP) && ip.frag_offset() == 0;
            if l4 && p.len() >= hl + 4 {
                key[9..13].copy_from_slice(&p[hl..hl + 4]);
            }
            key
        };
        // TTL is checked before the next hop, so an expiring packet never triggers ARP.
        if ip.ttl() <= 1 && self.routes.lookup(dst).is_some_and(|r| *r != Route::Local) {
            md.dest = Dest::Drop(self.drops.ttl_expired);
            return;
        }
        let nh = match self.next_hop(dst, key, md.ingress_ts, out) {
            Ok(nh) => nh,
            Err(NoNextHop::NoRoute) => return md.dest = Dest::Drop(self.drops.no_route),
            Err(NoNextHop::Local) => return md.dest = Dest::Drop(self.drops.to_switch),
            Err(NoNextHop::Unresolved) => return md.dest = Dest::Drop(self.drops.no_neighbor),
        };
        let mut eth = EthernetFrame::new_unchecked(&mut data[..]);
        eth.set_dst_addr(nh.dst_mac);
        eth.set_src_addr(nh.src_mac);
        Ipv4Packet::new_unchecked(&mut data[l2..]).decrement_ttl();
        md.dest = Dest::Port(nh.port);
    }
}

/// Where a packet goes next (see [`L2l3::next_hop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextHop {
    /// The port it leaves by.
    pub port: PortId,
    /// The next hop's MAC.
    pub dst_mac: EthernetAddress,
    /// The switch's MAC on that port.
    pub src_mac: EthernetAddress,
}

/// Why there is no next hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoNextHop {
    /// No route matches.
    NoRoute,
    /// The destination is the switch itself.
    Local,
    /// The next hop's MAC is not known yet; an ARP request went out.
    Unresolved,
}

/// Stamp one HPCC++ INT hop (`wire::hpcc_int`) into `frame` if it carries an INT header that is
/// not reflected: Ethernet (one VLAN tag at most), IPv4, UDP to port 40051. The record is the
/// egress snapshot of `md` — switch and port ID, link rate, the port's queued bytes, the dequeue
/// time and the port's transmitted bytes — written in place in the next free slot (or the
/// overflow flag set), and the UDP checksum is zeroed. Returns whether the frame carried INT.
pub fn stamp_int(frame: &mut [u8], switch_id: u16, md: &EgressMd) -> bool {
    use wire::{ethernet, ipv4, udp};
    // The declared parser's path (decl::parser), read in place: each offset from wire's field
    // specifications.
    let mut l3 = ethernet::HEADER_LEN;
    let et = ethernet::field::ETHER_TYPE;
    let Some(b) = frame.get(et.range()) else { return false };
    let mut et = u16::from_be_bytes([b[0], b[1]]);
    if et == EtherType::VLAN.0 {
        let inner = ethernet::field::vlan::ETHER_TYPE.range();
        let Some(b) = frame.get(l3 + inner.start..l3 + inner.end) else { return false };
        et = u16::from_be_bytes([b[0], b[1]]);
        l3 += ethernet::VLAN_TAG_LEN;
    }
    if et != EtherType::IPV4.0 {
        return false;
    }
    let Some(ip) = frame.get(l3..l3 + ipv4::HEADER_LEN) else { return false };
    if ipv4::field::VERSION.get_u8(ip) != 4
        || ipv4::field::PROTOCOL.get_u8(ip) != protocol::UDP
        || ipv4::field::MORE_FRAGS.get_bool(ip)
        || ipv4::field::FRAG_OFFSET.get_u16(ip) != 0
    {
        return false;
    }
    let l4 = l3 + usize::from(ipv4::field::IHL.get_u8(ip)) * 4;
    let Some(u) = frame.get(l4..l4 + udp::HEADER_LEN) else { return false };
    if udp::field::DST_PORT.get_u16(u) != wire::udp::port::HPCC_INT {
        return false;
    }
    let Ok(mut h) = IntHeader::new_checked(&mut frame[l4 + wire::udp::HEADER_LEN..]) else { return false };
    if h.reflected() {
        return true;
    }
    let hop = IntHopRepr::from_snapshot(
        switch_id,
        md.egress_port,
        md.speed_bps,
        md.port_qdepth,
        md.deq_ts,
        md.tx_bytes,
    );
    h.push_hop(&hop);
    wire::udp::field::CHECKSUM.set_u16(&mut frame[l4..], 0);
    true
}

impl FromConfig for L2l3 {
    const NAME: &'static str = "l2l3";
    const ABOUT: &'static str =
        "L2 bridging with MAC learning, IPv4 routing with ECMP, ARP, optional HPCC++ INT";
    const SECTIONS: &'static [&'static str] = &["l2l3"];

    fn from_config(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        Self::build(cfg, ctx)
    }

    fn resolved(cfg: &Config) -> Result<String, ConfigError> {
        Ok(Self::section(cfg)?.resolved())
    }

    fn p4(&self, cfg: &Config) -> Result<crate::p4::ProgramP4, crate::p4::ExportError> {
        Ok(self.rendering(cfg))
    }
}

impl Program for L2l3 {
    type Command = Command;

    #[inline]
    fn egress<F: Frame>(&mut self, pkt: &mut F, md: &mut EgressMd) {
        if let Some(id) = self.int_switch_id {
            // A copy: a program that inlines this egress keeps its metadata in registers.
            let m = *md;
            stamp_int(pkt.data_mut(), id, &m);
        }
    }

    /// Egress only stamps INT, when a switch ID is configured.
    #[inline(always)]
    fn has_egress(&self) -> bool {
        self.int_switch_id.is_some()
    }

    #[inline]
    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        if !self.route_connected_host(pkt.data_mut(), md) {
            self.ingress_general(pkt, md, out);
        }
    }

    /// MAC aging and the ARP request table's cleanup, once a second.
    fn tick_interval(&self) -> Option<u64> {
        Some(1_000_000_000)
    }

    fn tick<F: Frame>(&mut self, now: u64, _out: &mut Emitter<'_, F>) {
        if now.saturating_sub(self.last_aging) < 1_000_000_000 {
            return;
        }
        self.last_aging = now;
        let aging = self.aging_ns;
        self.macs.retain(|_, e| e.is_static || now.saturating_sub(e.last_seen) < aging);
        self.learn_cache.fill((u64::MAX, 0));
        self.arp_pending.retain(|_, t| now.saturating_sub(*t) < ARP_RETRY_NS);
    }

    fn control(&mut self, cmd: Command, now: u64) -> Result<String, String> {
        self.apply(cmd, now)
    }

    fn parse_command(line: &str, ports: &[String]) -> Result<Command, String> {
        let w: Vec<&str> = line.split_whitespace().collect();
        let port = |s: &str| {
            ports.iter().position(|p| p == s).map(|i| i as PortId).ok_or(format!("no port named {s:?}"))
        };
        let ip = |s: &str| s.parse::<Ipv4Addr>().map_err(|_| format!("{s:?} is not an IPv4 address"));
        let mac = |s: &str| EthernetAddress::parse(s).ok_or(format!("{s:?} is not a MAC address"));
        let cidr = |s: &str| parse_cidr(s).map_err(|why| format!("{s:?} is not an IPv4 CIDR: {why}"));
        match w.as_slice() {
            ["route", "add", p, "via", hops] => {
                let (a, l) = cidr(p)?;
                Ok(Command::RouteVia(a, l, hops.split(',').map(ip).collect::<Result<_, _>>()?))
            }
            ["route", "add", p, "port", name] => {
                let (a, l) = cidr(p)?;
                Ok(Command::RouteConnected(a, l, port(name)?))
            }
            ["route", "del", p] => {
                let (a, l) = cidr(p)?;
                Ok(Command::RouteDel(a, l))
            }
            ["neighbor", "add", i, m, name] => Ok(Command::NeighborAdd(ip(i)?, mac(m)?, port(name)?)),
            ["neighbor", "del", i] => Ok(Command::NeighborDel(ip(i)?)),
            ["mac", "add", m, name] => Ok(Command::MacAdd(mac(m)?, port(name)?)),
            ["mac", "del", m] => Ok(Command::MacDel(mac(m)?)),
            ["show"] => Ok(Command::Show),
            ["port", "down", name] => Ok(Command::PortDown(port(name)?)),
            ["port", "up", name] => Ok(Command::PortUp(port(name)?)),
            _ => Err(format!(
                "unknown command {line:?}; expected one of: route add <cidr> via <ip>[,<ip>…] | route add <cidr> port <name> | \
                 route del <cidr> | neighbor add <ip> <mac> <port> | neighbor del <ip> | mac add <mac> <port> | mac del <mac> | \
                 port down <port> | port up <port> | show"
            )),
        }
    }

    fn resources(&self) -> &Resources {
        &self.resources
    }
}

/// The UDP header of the IPv4 packet at `l3`, if it is an unfragmented IPv4 UDP datagram with
/// its whole header there (what µFAB, DAIET and INT stamping need): its offset and
/// destination port.
#[inline]
pub(crate) fn udp_at(data: &[u8], l3: usize) -> Option<(usize, u16)> {
    let ip = data.get(l3..l3 + wire::ipv4::HEADER_LEN)?;
    if ip[0] >> 4 != 4 || ip[9] != wire::ipv4::protocol::UDP || (ip[6] & 0x3f) != 0 || ip[7] != 0 {
        return None;
    }
    let l4 = l3 + usize::from(ip[0] & 0x0f) * 4;
    let udp = data.get(l4..l4 + wire::udp::HEADER_LEN)?;
    Some((l4, u16::from_be_bytes([udp[2], udp[3]])))
}

#[cfg(test)]
mod tests;
