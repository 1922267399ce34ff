//! IPv4 headers (RFC 791), with ECN (RFC 3168) and DSCP.
//!
//! Options are accepted (IHL > 5) and skipped; [`Ipv4Repr::emit`] writes a 20-byte header.

use core::net::Ipv4Addr;

use crate::checksum;
use crate::error::{Error, Result, chunk, need};
use crate::field::{set_u16, set_u32, u16_at, u32_at};

/// Length of a header without options.
pub const HEADER_LEN: usize = 20;

/// IP protocol numbers used here.
pub mod protocol {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
}

/// ECN codepoints (RFC 3168).
pub mod ecn {
    /// Not ECN-capable transport.
    pub const NOT_ECT: u8 = 0b00;
    /// ECN-capable transport (1).
    pub const ECT1: u8 = 0b01;
    /// ECN-capable transport (0).
    pub const ECT0: u8 = 0b10;
    /// Congestion experienced.
    pub const CE: u8 = 0b11;
}

view!(
    /// A read/write view of an IPv4 packet.
    Ipv4Packet
);

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Check that the header, its options and the total length all fit in the buffer, and that
    /// IHL and total length are consistent. Bytes past the total length (Ethernet padding)
    /// are allowed and ignored.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("ipv4", HEADER_LEN, b.len())?;
        let ihl = usize::from(b[0] & 0x0f);
        if ihl < 5 {
            return Err(Error::Invalid { field: "ipv4.ihl", value: ihl as u64 });
        }
        need("ipv4.ihl", ihl * 4, b.len())?;
        let total = usize::from(u16_at(b, 2));
        if total < ihl * 4 {
            return Err(Error::Invalid { field: "ipv4.total_len", value: total as u64 });
        }
        need("ipv4.total_len", total, b.len())
    }

    /// IP version field (4 for a valid packet).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[0] & 0x0f) * 4
    }

    /// Differentiated services code point.
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[1] >> 2
    }

    /// ECN codepoint.
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[1] & 0x03
    }

    /// Total length of header and payload.
    pub fn total_len(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 2)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 4)
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.buffer.as_ref()[6] & 0x40 != 0
    }

    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        self.buffer.as_ref()[6] & 0x20 != 0
    }

    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 6) & 0x1fff
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[8]
    }

    /// Protocol of the payload.
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[9]
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 10)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from_bits(u32_at(self.buffer.as_ref(), 12))
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from_bits(u32_at(self.buffer.as_ref(), 16))
    }

    /// Whether the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        let b = self.buffer.as_ref();
        let hl = self.header_len();
        // The common header without options: five fixed words, no loop.
        let sum = match b.first_chunk::<HEADER_LEN>() {
            Some(h) if hl == HEADER_LEN => {
                let w = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
                w(0) + w(4) + w(8) + w(12) + w(16)
            }
            _ => checksum::accumulate(0, &b[..hl]),
        };
        checksum::fold(sum) == 0xffff
    }

    /// The payload, bounded by the total length.
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        &b[self.header_len()..usize::from(self.total_len())]
    }

    /// The header and payload, bounded by the total length (without Ethernet padding).
    pub fn packet(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Set DSCP, keeping ECN. Does not update the checksum.
    pub fn set_dscp(&mut self, dscp: u8) {
        let b = self.buffer.as_mut();
        b[1] = (dscp << 2) | (b[1] & 0x03);
    }

    /// Set the ECN codepoint and update the checksum incrementally.
    pub fn set_ecn_update_checksum(&mut self, ecn: u8) {
        let b = self.buffer.as_mut();
        let old = u16_at(b, 0);
        b[1] = (b[1] & 0xfc) | (ecn & 0x03);
        let new = u16_at(b, 0);
        let c = checksum::update_u16(u16_at(b, 10), old, new);
        set_u16(b, 10, c);
    }

    /// Set the total length. Does not update the checksum.
    pub fn set_total_len(&mut self, len: u16) {
        set_u16(self.buffer.as_mut(), 2, len);
    }

    /// Set the identification. Does not update the checksum.
    pub fn set_ident(&mut self, v: u16) {
        set_u16(self.buffer.as_mut(), 4, v);
    }

    /// Set the TTL. Does not update the checksum.
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[8] = ttl;
    }

    /// Set the source address. Does not update the checksum.
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[12..16].copy_from_slice(&a.octets());
    }

    /// Set the destination address. Does not update the checksum.
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[16..20].copy_from_slice(&a.octets());
    }

    /// Set the checksum field.
    pub fn set_checksum(&mut self, c: u16) {
        set_u16(self.buffer.as_mut(), 10, c);
    }

    /// Recompute the header checksum from scratch.
    pub fn fill_checksum(&mut self) {
        let h = self.header_len();
        let b = self.buffer.as_mut();
        set_u16(b, 10, 0);
        let c = checksum::checksum(&b[..h]);
        set_u16(b, 10, c);
    }

    /// Decrement the TTL by one and update the checksum incrementally (RFC 1624), as a router
    /// does. Returns the new TTL; a TTL of 0 is left unchanged and 0 is returned.
    #[inline]
    pub fn decrement_ttl(&mut self) -> u8 {
        let b = self.buffer.as_mut();
        let ttl = b[8];
        if ttl == 0 {
            return 0;
        }
        b[8] = ttl - 1;
        // RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), where the word m = TTL·256 + protocol
        // becomes m' = m − 256, so ~m + m' is the constant 0xfeff.
        let sum = u32::from(!u16_at(b, 10)) + 0xfeff;
        let sum = (sum & 0xffff) + (sum >> 16);
        set_u16(b, 10, !(sum as u16));
        ttl - 1
    }

    /// The payload, writable, bounded by the total length.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (h, t) = (self.header_len(), usize::from(self.total_len()));
        &mut self.buffer.as_mut()[h..t]
    }
}

/// A parsed IPv4 header. Options are not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Payload protocol.
    pub protocol: u8,
    /// Payload length in bytes (total length minus header length).
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP, 0..=63.
    pub dscp: u8,
    /// ECN codepoint, 0..=3.
    pub ecn: u8,
    /// Identification.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
    /// More-fragments flag.
    pub more_frags: bool,
    /// Fragment offset in 8-byte units, 0..=8191.
    pub frag_offset: u16,
}

impl Ipv4Repr {
    /// Parse the header at the start of `buf`, checking version and lengths. The checksum is not
    /// checked here: use [`Ipv4Packet::verify_checksum`], so callers can count it separately.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let p = Ipv4Packet::new_checked(buf)?;
        if p.version() != 4 {
            return Err(Error::Invalid { field: "ipv4.version", value: u64::from(p.version()) });
        }
        Ok(Self {
            src_addr: p.src_addr(),
            dst_addr: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()) - p.header_len(),
            ttl: p.ttl(),
            dscp: p.dscp(),
            ecn: p.ecn(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
            more_frags: p.more_frags(),
            frag_offset: p.frag_offset(),
        })
    }

    /// Header length emitted: always 20.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write a 20-byte header with a correct checksum into the start of `buf`. The payload is
    /// the caller's to write. Fails if the payload length does not fit the 16-bit total length.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let total = self.payload_len + HEADER_LEN;
        if total > usize::from(u16::MAX) {
            return Err(Error::Invalid { field: "ipv4.total_len", value: total as u64 });
        }
        self.write(total as u16, chunk::<HEADER_LEN>("ipv4", buf)?);
        Ok(())
    }

    /// Write the 20 header bytes for this total length, checksum included. The checksum is
    /// summed from the field values rather than read back from memory.
    #[inline(always)]
    fn write(&self, total: u16, b: &mut [u8; HEADER_LEN]) {
        let tos = (self.dscp << 2) | (self.ecn & 0x03);
        let flags = (u16::from(self.dont_frag) << 14)
            | (u16::from(self.more_frags) << 13)
            | (self.frag_offset & 0x1fff);
        let (src, dst) = (self.src_addr.to_bits(), self.dst_addr.to_bits());
        let sum = 0x4500
            + u64::from(tos)
            + u64::from(total)
            + u64::from(self.ident)
            + u64::from(flags)
            + (u64::from(self.ttl) << 8)
            + u64::from(self.protocol)
            + u64::from(src >> 16)
            + u64::from(src & 0xffff)
            + u64::from(dst >> 16)
            + u64::from(dst & 0xffff);
        b[0] = 0x45;
        b[1] = tos;
        set_u16(b, 2, total);
        set_u16(b, 4, self.ident);
        set_u16(b, 6, flags);
        b[8] = self.ttl;
        b[9] = self.protocol;
        set_u16(b, 10, checksum::finish(sum));
        set_u32(b, 12, src);
        set_u32(b, 16, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Ipv4Repr {
        Ipv4Repr {
            src_addr: Ipv4Addr::new(10, 0, 0, 1),
            dst_addr: Ipv4Addr::new(10, 0, 0, 2),
            protocol: protocol::UDP,
            payload_len: 8,
            ttl: 64,
            dscp: 26,
            ecn: ecn::ECT0,
            ident: 1,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        }
    }

    #[test]
    fn emit_has_valid_checksum_and_parses_back() {
        let mut buf = [0u8; 28];
        sample().emit(&mut buf).unwrap();
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(Ipv4Repr::parse(&buf).unwrap(), sample());
    }

    #[test]
    fn options_are_skipped() {
        let mut buf = [0u8; 32];
        let mut r = sample();
        r.payload_len = 4;
        r.emit(&mut buf).unwrap();
        // Rewrite as IHL 6 with a 4-byte NOP option block, total length 28.
        buf.copy_within(20..24, 24);
        buf[20..24].copy_from_slice(&[1, 1, 1, 0]);
        buf[0] = 0x46;
        buf[3] = 28;
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        p.fill_checksum();
        assert!(p.verify_checksum());
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.payload().len(), 4);
        assert_eq!(Ipv4Repr::parse(&buf).unwrap().payload_len, 4);
    }

    #[test]
    fn decrement_ttl_keeps_checksum_valid() {
        let mut buf = [0u8; 28];
        sample().emit(&mut buf).unwrap();
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        for expect in (0..64u8).rev() {
            assert_eq!(p.decrement_ttl(), expect);
            assert!(p.verify_checksum());
        }
        assert_eq!(p.decrement_ttl(), 0);
        p.set_ecn_update_checksum(ecn::CE);
        assert!(p.verify_checksum());
        assert_eq!(p.ecn(), ecn::CE);
    }

    #[test]
    fn ttl_shortcut_matches_the_general_update() {
        let mut buf = [0u8; 28];
        sample().emit(&mut buf).unwrap();
        // The TTL shortcut agrees with the general RFC 1624 update for every checksum and word.
        for hc in (0..=u16::MAX).step_by(7).chain([0, 0xfeff, 0xff00, 0xffff]) {
            for m in [0x0100u16, 0x0111, 0x4006, 0x8011, 0xff01, 0xffff] {
                let mut h = buf;
                h[8..10].copy_from_slice(&m.to_be_bytes());
                h[10..12].copy_from_slice(&hc.to_be_bytes());
                Ipv4Packet::new_unchecked(&mut h[..]).decrement_ttl();
                let want = checksum::update_u16(hc, m, m - 0x100);
                assert_eq!(u16::from_be_bytes([h[10], h[11]]), want, "hc {hc:#x} m {m:#x}");
            }
        }
    }

    #[test]
    fn inconsistent_lengths_name_the_field() {
        let mut buf = [0u8; 28];
        sample().emit(&mut buf).unwrap();
        let mut bad = buf;
        bad[0] = 0x44;
        assert_eq!(Ipv4Repr::parse(&bad).unwrap_err().field(), "ipv4.ihl");
        let mut bad = buf;
        bad[0] = 0x4f;
        assert_eq!(Ipv4Repr::parse(&bad).unwrap_err().field(), "ipv4.ihl");
        let mut bad = buf;
        bad[3] = 40;
        assert_eq!(Ipv4Repr::parse(&bad).unwrap_err().field(), "ipv4.total_len");
        let mut bad = buf;
        bad[3] = 10;
        assert_eq!(Ipv4Repr::parse(&bad).unwrap_err().field(), "ipv4.total_len");
        let mut bad = buf;
        bad[0] = 0x65;
        assert_eq!(Ipv4Repr::parse(&bad).unwrap_err().field(), "ipv4.version");
    }
}
