//! Builders that write a whole frame — Ethernet, IPv4, UDP and a payload — into a caller's
//! buffer with no allocation. [`RoceStack`] adds the RoCEv2 headers and the ICRC; the DTA
//! translator and the NIC agent build every RoCEv2 packet with it.

use core::net::Ipv4Addr;

use crate::error::{Result, space};
use crate::ethernet::{EtherType, EthernetAddress, EthernetRepr, VlanRepr};
use crate::ipv4::{self, Ipv4Repr};
use crate::roce::{RoceRepr, icrc};
use crate::udp::{self, UdpPacket, UdpRepr};

/// The addressing of one Ethernet/IPv4/UDP flow: everything the headers carry but the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpFlow {
    /// Ethernet source.
    pub eth_src: EthernetAddress,
    /// Ethernet destination.
    pub eth_dst: EthernetAddress,
    /// 802.1Q tag, if any.
    pub vlan: Option<VlanRepr>,
    /// IPv4 source.
    pub ip_src: Ipv4Addr,
    /// IPv4 destination.
    pub ip_dst: Ipv4Addr,
    /// DSCP.
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: u8,
    /// TTL.
    pub ttl: u8,
    /// IPv4 identification.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
}

impl UdpFlow {
    /// Length of the Ethernet, IPv4 and UDP headers.
    pub const fn headers_len(&self) -> usize {
        let eth = if self.vlan.is_some() { 18 } else { 14 };
        eth + ipv4::HEADER_LEN + udp::HEADER_LEN
    }

    fn ethernet(&self) -> EthernetRepr {
        EthernetRepr {
            src_addr: self.eth_src,
            dst_addr: self.eth_dst,
            vlan: self.vlan,
            ethertype: EtherType::IPV4,
        }
    }

    /// Write the Ethernet, IPv4 (with checksum) and UDP (checksum 0) headers for a UDP payload of
    /// `payload_len` bytes. Returns the header length; the payload goes right after.
    #[inline]
    pub fn emit_headers(&self, payload_len: usize, buf: &mut [u8]) -> Result<usize> {
        let eth = self.ethernet();
        let l2 = eth.buffer_len();
        let total = self.headers_len();
        space("udp_flow", total, buf.len())?;
        eth.emit(buf)?;
        Ipv4Repr {
            src_addr: self.ip_src,
            dst_addr: self.ip_dst,
            protocol: ipv4::protocol::UDP,
            payload_len: udp::HEADER_LEN + payload_len,
            ttl: self.ttl,
            dscp: self.dscp,
            ecn: self.ecn,
            ident: self.ident,
            dont_frag: self.dont_frag,
            more_frags: false,
            frag_offset: 0,
        }
        .emit(&mut buf[l2..])?;
        UdpRepr {
            src_port: self.src_port,
            dst_port: self.dst_port,
            payload_len,
        }
        .emit(&mut buf[l2 + ipv4::HEADER_LEN..])?;
        Ok(total)
    }

    /// Write a whole frame: headers, then `payload_len` bytes written by `payload`, then the
    /// UDP checksum if `udp_checksum` (otherwise 0). Returns the frame length.
    pub fn emit_with(
        &self,
        payload_len: usize,
        udp_checksum: bool,
        buf: &mut [u8],
        payload: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<usize> {
        let h = self.headers_len();
        space("udp_flow", h + payload_len, buf.len())?;
        self.emit_headers(payload_len, buf)?;
        payload(&mut buf[h..h + payload_len])?;
        if udp_checksum {
            let udp_at = h - udp::HEADER_LEN;
            UdpPacket::new_unchecked(&mut buf[udp_at..h + payload_len])
                .fill_checksum(self.ip_src, self.ip_dst);
        }
        Ok(h + payload_len)
    }
}

/// A whole RoCEv2 packet: a flow's addressing and a [`RoceRepr`]. The UDP destination port is
/// always 4791, whatever `flow.dst_port` says; the UDP checksum is 0 as RoCEv2 requires, and the
/// ICRC is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceStack<'a> {
    /// Addressing; `src_port` gives ECMP entropy per QP.
    pub flow: UdpFlow,
    /// BTH, extension headers and payload.
    pub roce: RoceRepr<'a>,
}

impl RoceStack<'_> {
    /// Frame length.
    pub fn buffer_len(&self) -> usize {
        self.flow.headers_len() + self.roce.buffer_len()
    }

    /// Write the frame into `buf` and return its length: Ethernet / IPv4 / UDP / BTH /
    /// (extension headers) / payload / pad / ICRC.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let flow = UdpFlow {
            dst_port: udp::port::ROCE_V2,
            ..self.flow
        };
        let roce_len = self.roce.buffer_len();
        let h = flow.headers_len();
        space("roce_stack", h + roce_len, buf.len())?;
        flow.emit_headers(roce_len, buf)?;
        self.roce.emit(&mut buf[h..])?;
        let ip_at = h - udp::HEADER_LEN - ipv4::HEADER_LEN;
        let ip = &mut buf[ip_at..h + roce_len];
        let crc = icrc::compute_unchecked(ip, ipv4::HEADER_LEN);
        let n = ip.len();
        ip[n - 4..].copy_from_slice(&crc.to_le_bytes());
        Ok(h + roce_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::{BthRepr, Opcode, RethRepr};

    fn flow() -> UdpFlow {
        UdpFlow {
            eth_src: EthernetAddress([0x02, 0xfc, 0, 0, 0, 1]),
            eth_dst: EthernetAddress([0x02, 0xfc, 0, 0, 0, 5]),
            vlan: None,
            ip_src: Ipv4Addr::new(10, 0, 0, 1),
            ip_dst: Ipv4Addr::new(10, 0, 0, 2),
            dscp: 0,
            ecn: 0,
            ttl: 64,
            ident: 1,
            dont_frag: false,
            src_port: 1234,
            dst_port: 0,
        }
    }

    #[test]
    fn write_only_matches_scapy() {
        // Ether(dst="02:fc:00:00:00:05", src="02:fc:00:00:00:01")/IP(src="10.0.0.1",
        // dst="10.0.0.2")/UDP(sport=1234,dport=4791,chksum=0)/BTH(opcode=0x0a,dqpn=0x12,psn=5)/
        // Raw(16 zero bytes + b"abcdefgh"), as built by scapy 2.5: an 82-byte WRITE.
        let expect = "02fc0000000502fc0000000108004500004400010000401166a60a0000010a00000204d212b70030\
                      00000a00ffff0000001200000005000000000000000000000000000000006162636465666768ee83fcd7";
        let mut roce = RoceRepr::new(
            BthRepr {
                opcode: Opcode::RC_RDMA_WRITE_ONLY,
                pkey: 0xffff,
                dest_qp: 0x12,
                psn: 5,
                ..Default::default()
            },
            b"abcdefgh",
        );
        roce.reth = Some(RethRepr {
            va: 0,
            rkey: 0,
            dma_len: 0,
        });
        // The scapy packet carries an all-zero RETH, so its DMA length (0) is not the payload's;
        // the builder writes what it is given.
        let mut buf = [0u8; 128];
        let n = RoceStack { flow: flow(), roce }.emit(&mut buf).unwrap();
        assert_eq!(n, 82);
        let got: String = buf[..n].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, expect);
    }
}
