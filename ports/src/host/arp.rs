//! ARP for a host, sans-IO: answering requests for its address, and resolving a next hop.
//!
//! One implementation for every runtime that owns an address on a frame port — the host runtime
//! ([`super::HostPort`]) of the NIC agent, the soft-RNIC and the report generator, and the UDP
//! port backend, which answers for the peers behind the host's stack. (A switch's ARP is its
//! program's: `l2l3` answers for its ports' addresses in its own pipeline.)

use std::net::Ipv4Addr;

use wire::arp::{self, ArpRepr};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, MIN_FRAME_LEN};

/// The ARP request in `frame`, if it is one.
pub fn request_in(frame: &[u8]) -> Option<ArpRepr> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::ARP {
        return None;
    }
    ArpRepr::parse(eth.payload()).ok().filter(|a| a.op == arp::OP_REQUEST)
}

/// The reply to `req` saying `target_ip` is at `mac`, as a whole frame (padded to the minimum).
pub fn reply(req: &ArpRepr, mac: EthernetAddress) -> [u8; MIN_FRAME_LEN] {
    let mut f = [0u8; MIN_FRAME_LEN];
    let r = ArpRepr {
        op: arp::OP_REPLY,
        sender_mac: mac,
        sender_ip: req.target_ip,
        target_mac: req.sender_mac,
        target_ip: req.sender_ip,
    };
    let e = EthernetRepr { src_addr: mac, dst_addr: req.sender_mac, vlan: None, ethertype: EtherType::ARP };
    // Fixed sizes that fit: neither write can fail.
    let _ = e.emit(&mut f);
    let _ = r.emit(&mut f[e.buffer_len()..]);
    f
}

/// If `frame` is an ARP request for an address `mac_of` knows, the reply frame.
pub fn answer(
    frame: &[u8],
    mac_of: impl FnOnce(Ipv4Addr) -> Option<EthernetAddress>,
) -> Option<[u8; MIN_FRAME_LEN]> {
    let req = request_in(frame)?;
    Some(reply(&req, mac_of(req.target_ip)?))
}

/// Resolving one address: a request now and then, until a reply names it.
#[derive(Debug, Clone)]
pub struct Resolver {
    mac: EthernetAddress,
    ip: Ipv4Addr,
    target: Ipv4Addr,
    retry_ns: u64,
    last_sent: Option<u64>,
    found: Option<EthernetAddress>,
}

impl Resolver {
    /// Resolve `target` from `ip` at `mac`, asking again every `retry_ns`.
    pub fn new(mac: EthernetAddress, ip: Ipv4Addr, target: Ipv4Addr, retry_ns: u64) -> Self {
        Self { mac, ip, target, retry_ns, last_sent: None, found: None }
    }

    /// The answer, once one came.
    pub fn found(&self) -> Option<EthernetAddress> {
        self.found
    }

    /// A frame that arrived: a reply from the target resolves it.
    pub fn handle_packet(&mut self, frame: &[u8]) {
        let Ok(eth) = EthernetFrame::new_checked(frame) else { return };
        if eth.ethertype() != EtherType::ARP {
            return;
        }
        if let Ok(a) = ArpRepr::parse(eth.payload())
            && a.op == arp::OP_REPLY
            && a.sender_ip == self.target
        {
            self.found = Some(a.sender_mac);
        }
    }

    /// A request to send at `now`, if one is due (the first at once, then every `retry_ns`).
    pub fn poll_transmit(&mut self, now: u64) -> Option<[u8; MIN_FRAME_LEN]> {
        if self.found.is_some() || self.last_sent.is_some_and(|t| now.saturating_sub(t) < self.retry_ns) {
            return None;
        }
        self.last_sent = Some(now);
        let mut f = [0u8; MIN_FRAME_LEN];
        arp::emit_request(&mut f, self.mac, self.ip, self.target).ok()?;
        Some(f)
    }

    /// When the next request is due.
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.found.is_some() {
            return None;
        }
        Some(self.last_sent.map_or(0, |t| t + self.retry_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const B: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    #[test]
    fn a_request_is_answered_and_resolves_its_asker() {
        let (ip_a, ip_b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut r = Resolver::new(A, ip_a, ip_b, 1000);
        let req = r.poll_transmit(0).unwrap();
        assert!(r.poll_transmit(999).is_none(), "paced");
        assert_eq!(r.poll_timeout(), Some(1000));
        // B answers for its own address only.
        assert!(answer(&req, |ip| (ip == ip_a).then_some(B)).is_none());
        let rep = answer(&req, |ip| (ip == ip_b).then_some(B)).unwrap();
        r.handle_packet(&rep);
        assert_eq!(r.found(), Some(B));
        assert!(r.poll_transmit(5000).is_none() && r.poll_timeout().is_none());
        // Not ARP, or a reply from someone else: ignored.
        let mut other = Resolver::new(A, ip_a, Ipv4Addr::new(10, 0, 0, 9), 1000);
        other.handle_packet(&rep);
        other.handle_packet(&[0u8; 20]);
        assert_eq!(other.found(), None);
    }
}
