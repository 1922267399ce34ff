//! IPv4 headers (RFC 791), with ECN (RFC 3168) and DSCP.
//!
//! Options are accepted (IHL > 5) and skipped; [`Ipv4Repr::emit`] writes a 20-byte header.

use core::net::Ipv4Addr;

use crate::checksum;
use crate::error::{Error, Result, chunk, need};
use crate::field::{set_u16, set_u32, u16_at};
use crate::spec::Header;

/// Length of a header without options.
pub const HEADER_LEN: usize = 20;

/// The fields of the header without options.
pub mod field {
    use crate::spec::Field;

    /// Version (4).
    pub const VERSION: Field = Field::new("version", 0, 4);
    /// Header length in 32-bit words.
    pub const IHL: Field = Field::new("ihl", 4, 4);
    /// Differentiated services code point.
    pub const DSCP: Field = Field::new("dscp", 8, 6);
    /// ECN codepoint.
    pub const ECN: Field = Field::new("ecn", 14, 2);
    /// Total length of header and payload.
    pub const TOTAL_LEN: Field = Field::bytes("total_len", 2, 2);
    /// Identification.
    pub const IDENT: Field = Field::bytes("identification", 4, 2);
    /// The reserved flag (must be 0).
    pub const FLAG_RESERVED: Field = Field::new("reserved_flag", 48, 1);
    /// Don't fragment.
    pub const DONT_FRAG: Field = Field::new("dont_frag", 49, 1);
    /// More fragments.
    pub const MORE_FRAGS: Field = Field::new("more_frags", 50, 1);
    /// Fragment offset in 8-byte units.
    pub const FRAG_OFFSET: Field = Field::new("frag_offset", 51, 13);
    /// Time to live.
    pub const TTL: Field = Field::bytes("ttl", 8, 1);
    /// Protocol of the payload.
    pub const PROTOCOL: Field = Field::bytes("protocol", 9, 1);
    /// Header checksum.
    pub const CHECKSUM: Field = Field::bytes("hdr_checksum", 10, 2);
    /// Source address.
    pub const SRC_ADDR: Field = Field::bytes("src_addr", 12, 4);
    /// Destination address.
    pub const DST_ADDR: Field = Field::bytes("dst_addr", 16, 4);
}

/// The IPv4 header without options.
pub const HEADER: Header = Header {
    name: "ipv4",
    fields: &[
        field::VERSION,
        field::IHL,
        field::DSCP,
        field::ECN,
        field::TOTAL_LEN,
        field::IDENT,
        field::FLAG_RESERVED,
        field::DONT_FRAG,
        field::MORE_FRAGS,
        field::FRAG_OFFSET,
        field::TTL,
        field::PROTOCOL,
        field::CHECKSUM,
        field::SRC_ADDR,
        field::DST_ADDR,
    ],
    len: HEADER_LEN,
};

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

/// Whether the checksum of a header without options is correct: its five words summed, no
/// loop. What [`Ipv4Packet::verify_checksum`] does for such a header, for callers that read
/// the header at a fixed offset.
#[inline]
pub fn header_checksum_ok(h: &[u8; HEADER_LEN]) -> bool {
    let w = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
    checksum::fold(w(0) + w(4) + w(8) + w(12) + w(16)) == 0xffff
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Check that the header, its options and the total length all fit in the buffer, and that
    /// IHL and total length are consistent. Bytes past the total length (Ethernet padding)
    /// are allowed and ignored.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("ipv4", HEADER_LEN, b.len())?;
        let ihl = usize::from(field::IHL.get_u8(b));
        if ihl < 5 {
            return Err(Error::Invalid { field: "ipv4.ihl", value: ihl as u64 });
        }
        need("ipv4.ihl", ihl * 4, b.len())?;
        let total = usize::from(field::TOTAL_LEN.get_u16(b));
        if total < ihl * 4 {
            return Err(Error::Invalid { field: "ipv4.total_len", value: total as u64 });
        }
        need("ipv4.total_len", total, b.len())
    }

    /// IP version field (4 for a valid packet).
    pub fn version(&self) -> u8 {
        field::VERSION.get_u8(self.buffer.as_ref())
    }

    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(field::IHL.get_u8(self.buffer.as_ref())) * 4
    }

    /// Differentiated services code point.
    pub fn dscp(&self) -> u8 {
        field::DSCP.get_u8(self.buffer.as_ref())
    }

    /// ECN codepoint.
    pub fn ecn(&self) -> u8 {
        field::ECN.get_u8(self.buffer.as_ref())
    }

    /// Total length of header and payload.
    pub fn total_len(&self) -> u16 {
        field::TOTAL_LEN.get_u16(self.buffer.as_ref())
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        field::IDENT.get_u16(self.buffer.as_ref())
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        field::DONT_FRAG.get_bool(self.buffer.as_ref())
    }

    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        field::MORE_FRAGS.get_bool(self.buffer.as_ref())
    }

    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        field::FRAG_OFFSET.get_u16(self.buffer.as_ref())
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        field::TTL.get_u8(self.buffer.as_ref())
    }

    /// Protocol of the payload.
    pub fn protocol(&self) -> u8 {
        field::PROTOCOL.get_u8(self.buffer.as_ref())
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        field::CHECKSUM.get_u16(self.buffer.as_ref())
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from_bits(field::SRC_ADDR.get_u32(self.buffer.as_ref()))
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from_bits(field::DST_ADDR.get_u32(self.buffer.as_ref()))
    }

    /// Whether the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        let b = self.buffer.as_ref();
        let hl = self.header_len();
        // The common header without options: five fixed words, no loop.
        match b.first_chunk::<HEADER_LEN>() {
            Some(h) if hl == HEADER_LEN => header_checksum_ok(h),
            _ => checksum::fold(checksum::accumulate(0, &b[..hl])) == 0xffff,
        }
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
        field::DSCP.set_u8(self.buffer.as_mut(), dscp);
    }

    /// Set the ECN codepoint and update the checksum incrementally.
    pub fn set_ecn_update_checksum(&mut self, ecn: u8) {
        let b = self.buffer.as_mut();
        let old = u16_at(b, 0);
        field::ECN.set_u8(b, ecn);
        let new = u16_at(b, 0);
        let c = checksum::update_u16(field::CHECKSUM.get_u16(b), old, new);
        field::CHECKSUM.set_u16(b, c);
    }

    /// Set the total length. Does not update the checksum.
    pub fn set_total_len(&mut self, len: u16) {
        field::TOTAL_LEN.set_u16(self.buffer.as_mut(), len);
    }

    /// Set the identification. Does not update the checksum.
    pub fn set_ident(&mut self, v: u16) {
        field::IDENT.set_u16(self.buffer.as_mut(), v);
    }

    /// Set the TTL. Does not update the checksum.
    pub fn set_ttl(&mut self, ttl: u8) {
        field::TTL.set_u8(self.buffer.as_mut(), ttl);
    }

    /// Set the source address. Does not update the checksum.
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        field::SRC_ADDR.set_u32(self.buffer.as_mut(), a.to_bits());
    }

    /// Set the destination address. Does not update the checksum.
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        field::DST_ADDR.set_u32(self.buffer.as_mut(), a.to_bits());
    }

    /// Set the checksum field.
    pub fn set_checksum(&mut self, c: u16) {
        field::CHECKSUM.set_u16(self.buffer.as_mut(), c);
    }

    /// Recompute the header checksum from scratch.
    pub fn fill_checksum(&mut self) {
        let h = self.header_len();
        let b = self.buffer.as_mut();
        field::CHECKSUM.set_u16(b, 0);
        let c = checksum::checksum(&b[..h]);
        field::CHECKSUM.set_u16(b, c);
    }

    /// Decrement the TTL by one and update the checksum incrementally (RFC 1624), as a router
    /// does. Returns the new TTL; a TTL of 0 is left unchanged and 0 is returned.
    #[inline]
    pub fn decrement_ttl(&mut self) -> u8 {
        let b = self.buffer.as_mut();
        let ttl = field::TTL.get_u8(b);
        if ttl == 0 {
            return 0;
        }
        field::TTL.set_u8(b, ttl - 1);
        // RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), where the word m = TTL·256 + protocol
        // becomes m' = m − 256, so ~m + m' is the constant 0xfeff.
        let sum = u32::from(!field::CHECKSUM.get_u16(b)) + 0xfeff;
        let sum = (sum & 0xffff) + (sum >> 16);
        field::CHECKSUM.set_u16(b, !(sum as u16));
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
        // Whole bytes and words, each at its field's offset (version and IHL, DSCP and ECN, the
        // flags and fragment offset share theirs).
        b[field::VERSION.byte()] = 0x45;
        b[field::DSCP.byte()] = tos;
        set_u16(b, field::TOTAL_LEN.byte(), total);
        set_u16(b, field::IDENT.byte(), self.ident);
        set_u16(b, field::FRAG_OFFSET.byte(), flags);
        b[field::TTL.byte()] = self.ttl;
        b[field::PROTOCOL.byte()] = self.protocol;
        set_u16(b, field::CHECKSUM.byte(), checksum::finish(sum));
        set_u32(b, field::SRC_ADDR.byte(), src);
        set_u32(b, field::DST_ADDR.byte(), dst);
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
