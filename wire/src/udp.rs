//! UDP headers (RFC 768). On IPv4 the checksum is optional; 0 means "none", and RoCEv2 sends 0.

use core::net::Ipv4Addr;

use crate::checksum;
use crate::error::{Error, Result, chunk, need};
use crate::ipv4::protocol;
use crate::spec::Header;

/// Header length.
pub const HEADER_LEN: usize = 8;

/// The fields of the header.
pub mod field {
    use crate::spec::Field;

    /// Source port.
    pub const SRC_PORT: Field = Field::bytes("src_port", 0, 2);
    /// Destination port.
    pub const DST_PORT: Field = Field::bytes("dst_port", 2, 2);
    /// Length of header and payload.
    pub const LENGTH: Field = Field::bytes("length", 4, 2);
    /// Checksum (0: none).
    pub const CHECKSUM: Field = Field::bytes("checksum", 6, 2);
}

/// The first four bytes of a TCP or UDP header, the ports: what an ECMP hash reads of either.
pub const L4_PORTS: Header = Header { name: "l4_ports", fields: &[field::SRC_PORT, field::DST_PORT], len: 4 };

/// The UDP header.
pub const HEADER: Header = Header {
    name: "udp",
    fields: &[field::SRC_PORT, field::DST_PORT, field::LENGTH, field::CHECKSUM],
    len: HEADER_LEN,
};

/// Well-known and project UDP ports.
pub mod port {
    /// RoCEv2 (IANA).
    pub const ROCE_V2: u16 = 4791;
    /// DTA reports, reporter → translator (reference implementation).
    pub const DTA: u16 = 40040;
    /// DTA NACKs, translator → reporter (reference implementation).
    pub const DTA_NACK: u16 = 40044;
    /// µFAB probes and responses (our choice; the paper uses source routing).
    pub const UFAB: u16 = 40050;
    /// HPCC++ INT probes (our choice; the draft leaves transport open).
    pub const HPCC_INT: u16 = 40051;
    /// DAIET key/value packets (the reference tests use 10000).
    pub const DAIET: u16 = 10000;
}

view!(
    /// A read/write view of a UDP datagram.
    UdpPacket
);

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Check that the header fits and that the length field is at least 8 and within the buffer.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("udp", HEADER_LEN, b.len())?;
        let len = usize::from(field::LENGTH.get_u16(b));
        if len < HEADER_LEN {
            return Err(Error::Invalid { field: "udp.length", value: len as u64 });
        }
        need("udp.length", len, b.len())
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        field::SRC_PORT.get_u16(self.buffer.as_ref())
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        field::DST_PORT.get_u16(self.buffer.as_ref())
    }

    /// Length field: header plus payload.
    pub fn len(&self) -> u16 {
        field::LENGTH.get_u16(self.buffer.as_ref())
    }

    /// Whether the length field is zero (never true for a checked packet).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checksum field (0 = none).
    pub fn checksum(&self) -> u16 {
        field::CHECKSUM.get_u16(self.buffer.as_ref())
    }

    /// The payload, bounded by the length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// Whether the checksum is absent (0) or correct for these addresses.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let len = self.len();
        let b = &self.buffer.as_ref()[..usize::from(len)];
        let sum = checksum::ipv4_pseudo_header(src, dst, protocol::UDP, len);
        checksum::fold(checksum::accumulate(sum, b)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Set the source port. Does not update the checksum.
    pub fn set_src_port(&mut self, p: u16) {
        field::SRC_PORT.set_u16(self.buffer.as_mut(), p);
    }

    /// Set the destination port. Does not update the checksum.
    pub fn set_dst_port(&mut self, p: u16) {
        field::DST_PORT.set_u16(self.buffer.as_mut(), p);
    }

    /// Set the length field.
    pub fn set_len(&mut self, len: u16) {
        field::LENGTH.set_u16(self.buffer.as_mut(), len);
    }

    /// Set the checksum field.
    pub fn set_checksum(&mut self, c: u16) {
        field::CHECKSUM.set_u16(self.buffer.as_mut(), c);
    }

    /// Compute and store the checksum over the pseudo-header, header and payload. A computed
    /// value of 0 is sent as `0xffff` (RFC 768).
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        let len = self.len();
        self.set_checksum(0);
        let b = &self.buffer.as_ref()[..usize::from(len)];
        let sum = checksum::ipv4_pseudo_header(src, dst, protocol::UDP, len);
        let c = match checksum::finish(checksum::accumulate(sum, b)) {
            0 => 0xffff,
            c => c,
        };
        self.set_checksum(c);
    }

    /// The payload, writable, bounded by the length field.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..len]
    }
}

/// A parsed UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length (length field minus 8).
    pub payload_len: usize,
}

impl UdpRepr {
    /// Parse the header at the start of `buf` and check its length. The checksum is checked
    /// separately with [`UdpPacket::verify_checksum`], which needs the IP addresses.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let p = UdpPacket::new_checked(buf)?;
        Ok(Self {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: usize::from(p.len()) - HEADER_LEN,
        })
    }

    /// Header length: 8.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header with checksum 0 (none). Use [`UdpPacket::fill_checksum`] once the
    /// payload is in place to add one.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let len = self.payload_len + HEADER_LEN;
        if len > usize::from(u16::MAX) {
            return Err(Error::Invalid { field: "udp.length", value: len as u64 });
        }
        let (s, d, l) =
            (self.src_port.to_be_bytes(), self.dst_port.to_be_bytes(), (len as u16).to_be_bytes());
        // The fields are the four 16-bit words in order; the checksum is 0.
        *chunk::<HEADER_LEN>("udp", buf)? = [s[0], s[1], d[0], d[1], l[0], l[1], 0, 0];
        const _: () = assert!(field::LENGTH.offset == 32 && field::CHECKSUM.offset == 48);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_roundtrip() {
        let mut buf = [0u8; 13];
        UdpRepr { src_port: 40041, dst_port: port::DTA, payload_len: 5 }.emit(&mut buf).unwrap();
        buf[8..].copy_from_slice(b"hello");
        let (s, d) = (Ipv4Addr::new(10, 0, 0, 200), Ipv4Addr::new(10, 0, 0, 51));
        let mut p = UdpPacket::new_checked(&mut buf[..]).unwrap();
        p.fill_checksum(s, d);
        assert_ne!(p.checksum(), 0);
        assert!(p.verify_checksum(s, d));
        assert!(!p.verify_checksum(s, Ipv4Addr::new(10, 0, 0, 52)));
    }

    #[test]
    fn bad_lengths() {
        let mut buf = [0u8; 8];
        buf[5] = 7;
        assert_eq!(UdpRepr::parse(&buf).unwrap_err().field(), "udp.length");
        buf[5] = 9;
        assert_eq!(UdpRepr::parse(&buf).unwrap_err().field(), "udp.length");
        assert_eq!(UdpRepr::parse(&buf[..4]).unwrap_err().field(), "udp");
    }
}
