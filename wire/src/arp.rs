//! ARP for IPv4 over Ethernet (RFC 826): the 28-byte body after the Ethernet header.

use core::net::Ipv4Addr;

use crate::error::{Error, Result, chunk};
use crate::ethernet::EthernetAddress;
use crate::field::array_at;
use crate::spec::Header;

/// Length of an Ethernet/IPv4 ARP body.
pub const LEN: usize = 28;

/// The fields of an Ethernet/IPv4 ARP body.
pub mod field {
    use crate::spec::Field;

    /// Hardware type (1: Ethernet).
    pub const HTYPE: Field = Field::bytes("htype", 0, 2);
    /// Protocol type (0x0800: IPv4).
    pub const PTYPE: Field = Field::bytes("ptype", 2, 2);
    /// Hardware address length (6).
    pub const HLEN: Field = Field::bytes("hlen", 4, 1);
    /// Protocol address length (4).
    pub const PLEN: Field = Field::bytes("plen", 5, 1);
    /// Operation.
    pub const OPER: Field = Field::bytes("oper", 6, 2);
    /// Sender hardware address.
    pub const SENDER_MAC: Field = Field::bytes("sender_mac", 8, 6);
    /// Sender protocol address.
    pub const SENDER_IP: Field = Field::bytes("sender_ip", 14, 4);
    /// Target hardware address.
    pub const TARGET_MAC: Field = Field::bytes("target_mac", 18, 6);
    /// Target protocol address.
    pub const TARGET_IP: Field = Field::bytes("target_ip", 24, 4);
}

/// The Ethernet/IPv4 ARP body.
pub const HEADER: Header = Header {
    name: "arp",
    fields: &[
        field::HTYPE,
        field::PTYPE,
        field::HLEN,
        field::PLEN,
        field::OPER,
        field::SENDER_MAC,
        field::SENDER_IP,
        field::TARGET_MAC,
        field::TARGET_IP,
    ],
    len: LEN,
};
/// Operation: request.
pub const OP_REQUEST: u16 = 1;
/// Operation: reply.
pub const OP_REPLY: u16 = 2;

fixed_view!(
    /// A read/write view of an ARP body.
    ArpPacket,
    LEN,
    "arp"
);

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Hardware type (1 = Ethernet).
    pub fn htype(&self) -> u16 {
        field::HTYPE.get_u16(self.buffer.as_ref())
    }
    /// Protocol type (0x0800 = IPv4).
    pub fn ptype(&self) -> u16 {
        field::PTYPE.get_u16(self.buffer.as_ref())
    }
    /// Hardware and protocol address lengths.
    pub fn lengths(&self) -> (u8, u8) {
        (field::HLEN.get_u8(self.buffer.as_ref()), field::PLEN.get_u8(self.buffer.as_ref()))
    }
    /// Operation.
    pub fn op(&self) -> u16 {
        field::OPER.get_u16(self.buffer.as_ref())
    }
    /// Sender hardware address.
    pub fn sender_mac(&self) -> EthernetAddress {
        EthernetAddress(array_at(self.buffer.as_ref(), field::SENDER_MAC.byte()))
    }
    /// Sender protocol address.
    pub fn sender_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from_bits(field::SENDER_IP.get_u32(self.buffer.as_ref()))
    }
    /// Target hardware address.
    pub fn target_mac(&self) -> EthernetAddress {
        EthernetAddress(array_at(self.buffer.as_ref(), field::TARGET_MAC.byte()))
    }
    /// Target protocol address.
    pub fn target_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from_bits(field::TARGET_IP.get_u32(self.buffer.as_ref()))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Turn a request into the reply `mac` gives for the requested address, in place: the
    /// requester becomes the target and `mac` the sender.
    pub fn make_reply(&mut self, mac: EthernetAddress) {
        let b = self.buffer.as_mut();
        let (requester_mac, requester_ip, asked_ip) = (
            array_at::<6>(b, field::SENDER_MAC.byte()),
            array_at::<4>(b, field::SENDER_IP.byte()),
            array_at::<4>(b, field::TARGET_IP.byte()),
        );
        field::OPER.set_u16(b, OP_REPLY);
        b[field::SENDER_MAC.range()].copy_from_slice(&mac.0);
        b[field::SENDER_IP.range()].copy_from_slice(&asked_ip);
        b[field::TARGET_MAC.range()].copy_from_slice(&requester_mac);
        b[field::TARGET_IP.range()].copy_from_slice(&requester_ip);
    }
}

/// A parsed Ethernet/IPv4 ARP body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// Operation (1 request, 2 reply; others kept as they are).
    pub op: u16,
    /// Sender hardware address.
    pub sender_mac: EthernetAddress,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address.
    pub target_mac: EthernetAddress,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Parse an ARP body; only Ethernet/IPv4 ARP (htype 1, ptype 0x0800, lengths 6 and 4) is
    /// supported.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let p = ArpPacket::new_checked(buf)?;
        if p.htype() != 1 {
            return Err(Error::Unsupported { field: "arp.htype", value: u64::from(p.htype()) });
        }
        if p.ptype() != 0x0800 {
            return Err(Error::Unsupported { field: "arp.ptype", value: u64::from(p.ptype()) });
        }
        if p.lengths() != (6, 4) {
            return Err(Error::Invalid { field: "arp.hlen", value: u64::from(p.lengths().0) });
        }
        Ok(Self {
            op: p.op(),
            sender_mac: p.sender_mac(),
            sender_ip: p.sender_ip(),
            target_mac: p.target_mac(),
            target_ip: p.target_ip(),
        })
    }

    /// Length: 28.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the body.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let b = chunk::<LEN>("arp", buf)?;
        field::HTYPE.set_u16(b, 1);
        field::PTYPE.set_u16(b, 0x0800);
        field::HLEN.set_u8(b, 6);
        field::PLEN.set_u8(b, 4);
        field::OPER.set_u16(b, self.op);
        b[field::SENDER_MAC.range()].copy_from_slice(&self.sender_mac.0);
        field::SENDER_IP.set_u32(b, self.sender_ip.to_bits());
        b[field::TARGET_MAC.range()].copy_from_slice(&self.target_mac.0);
        field::TARGET_IP.set_u32(b, self.target_ip.to_bits());
        Ok(())
    }
}

/// Write a whole ARP request frame into `buf`: "who has `target`? tell `ip`", broadcast from
/// `mac`, zero-padded to the 60-byte minimum. Returns its length (60).
pub fn emit_request(buf: &mut [u8], mac: EthernetAddress, ip: Ipv4Addr, target: Ipv4Addr) -> Result<usize> {
    let n = crate::ethernet::MIN_FRAME_LEN;
    crate::error::space("arp_request", n, buf.len())?;
    let b = &mut buf[..n];
    b.fill(0);
    let eth = crate::ethernet::EthernetRepr {
        src_addr: mac,
        dst_addr: EthernetAddress::BROADCAST,
        vlan: None,
        ethertype: crate::ethernet::EtherType::ARP,
    };
    eth.emit(b)?;
    let req = ArpRepr {
        op: OP_REQUEST,
        sender_mac: mac,
        sender_ip: ip,
        target_mac: EthernetAddress([0; 6]),
        target_ip: target,
    };
    req.emit(&mut b[eth.buffer_len()..])?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_becomes_reply() {
        // A request as Linux sends it: who has 10.0.0.1? tell 10.0.0.2 (02:..:02).
        #[rustfmt::skip]
        let mut req = [
            0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,
            0x02, 0, 0, 0, 0, 0x02, 10, 0, 0, 2,
            0, 0, 0, 0, 0, 0, 10, 0, 0, 1,
        ];
        let r = ArpRepr::parse(&req).unwrap();
        assert_eq!((r.op, r.target_ip), (OP_REQUEST, Ipv4Addr::new(10, 0, 0, 1)));
        ArpPacket::new_checked(&mut req[..]).unwrap().make_reply(EthernetAddress([2, 0, 0, 0, 0, 1]));
        let reply = ArpRepr::parse(&req).unwrap();
        assert_eq!(
            reply,
            ArpRepr {
                op: OP_REPLY,
                sender_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
                sender_ip: Ipv4Addr::new(10, 0, 0, 1),
                target_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
                target_ip: Ipv4Addr::new(10, 0, 0, 2),
            }
        );
        let mut out = [0u8; 28];
        reply.emit(&mut out).unwrap();
        assert_eq!(out, req);
        req[2] = 0x86;
        assert_eq!(ArpRepr::parse(&req).unwrap_err().field(), "arp.ptype");
        assert_eq!(ArpRepr::parse(&req[..27]).unwrap_err().field(), "arp");
    }
}
