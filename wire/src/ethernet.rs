//! Ethernet II frames with an optional IEEE 802.1Q tag.
//!
//! Buffers hold the frame from the destination address up to, not including, the FCS (NICs and
//! the kernel add and strip it). A frame with one 802.1Q tag (TPID `0x8100`) carries its
//! priority code point, which selects the priority queue of the switch.

use core::fmt;

use crate::error::{Error, Result, chunk, need};
use crate::field::array_at;
use crate::spec::Header;

/// The fields of the Ethernet II header and of the 802.1Q tag.
pub mod field {
    use crate::spec::Field;

    /// Destination address.
    pub const DST_ADDR: Field = Field::bytes("dst_addr", 0, 6);
    /// Source address.
    pub const SRC_ADDR: Field = Field::bytes("src_addr", 6, 6);
    /// EtherType (the TPID `0x8100` when a tag follows).
    pub const ETHER_TYPE: Field = Field::bytes("ether_type", 12, 2);

    /// The 802.1Q tag after the TPID, from its own first byte (frame byte 14).
    pub mod vlan {
        use crate::spec::Field;

        /// Priority code point.
        pub const PCP: Field = Field::new("pcp", 0, 3);
        /// Drop eligible indicator.
        pub const DEI: Field = Field::new("dei", 3, 1);
        /// VLAN identifier.
        pub const VID: Field = Field::new("vid", 4, 12);
        /// EtherType of the payload.
        pub const ETHER_TYPE: Field = Field::bytes("ether_type", 2, 2);
    }
}

/// The Ethernet II header.
pub const HEADER: Header = Header {
    name: "ethernet",
    fields: &[field::DST_ADDR, field::SRC_ADDR, field::ETHER_TYPE],
    len: HEADER_LEN,
};

/// The 802.1Q tag that follows a header whose EtherType is [`EtherType::VLAN`].
pub const VLAN_HEADER: Header = Header {
    name: "vlan",
    fields: &[field::vlan::PCP, field::vlan::DEI, field::vlan::VID, field::vlan::ETHER_TYPE],
    len: VLAN_TAG_LEN,
};

/// A 48-bit Ethernet address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: Self = Self([0xff; 6]);
    /// The MAC Control multicast address PAUSE and PFC frames are sent to: `01:80:c2:00:00:01`.
    pub const MAC_CONTROL: Self = Self([0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);

    /// The address bytes.
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// Group (multicast or broadcast) address: the I/G bit of the first octet is set.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// The broadcast address.
    pub const fn is_broadcast(&self) -> bool {
        matches!(self.0, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
    }

    /// The all-zero address, which no station owns.
    pub const fn is_zero(&self) -> bool {
        matches!(self.0, [0, 0, 0, 0, 0, 0])
    }

    /// Parse `aa:bb:cc:dd:ee:ff`: six colon-separated pairs of hex digits, nothing more.
    pub fn parse(s: &str) -> Option<Self> {
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for o in &mut out {
            let p = parts.next()?;
            if p.len() != 2 {
                return None;
            }
            *o = u8::from_str_radix(p, 16).ok()?;
        }
        parts.next().is_none().then_some(Self(out))
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

/// An EtherType value. Unknown values are kept as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtherType(pub u16);

impl EtherType {
    /// IPv4.
    pub const IPV4: Self = Self(0x0800);
    /// ARP.
    pub const ARP: Self = Self(0x0806);
    /// IEEE 802.1Q customer VLAN tag (TPID).
    pub const VLAN: Self = Self(0x8100);
    /// IPv6.
    pub const IPV6: Self = Self(0x86dd);
    /// IEEE 802.3 MAC Control: PAUSE (802.3x) and PFC (802.1Qbb).
    pub const MAC_CONTROL: Self = Self(0x8808);
    /// MPLS unicast (µFAB's source route, [`crate::mpls`]).
    pub const MPLS: Self = Self(0x8847);
    /// RoCE v1 (IB GRH directly over Ethernet).
    pub const ROCE_V1: Self = Self(0x8915);
    /// Hawkeye polling packets (reference switch code).
    pub const HAWKEYE_POLLING: Self = Self(0x6888);
}

/// Length of an untagged Ethernet II header.
pub const HEADER_LEN: usize = 14;
/// Length of an 802.1Q tag.
pub const VLAN_TAG_LEN: usize = 4;
/// Minimum frame length without the FCS; shorter frames are padded with zeros.
pub const MIN_FRAME_LEN: usize = 60;

view!(
    /// A read/write view of an Ethernet II frame, optionally 802.1Q tagged.
    EthernetFrame
);

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Check the buffer holds the whole header.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("ethernet", HEADER_LEN, b.len())?;
        if field::ETHER_TYPE.get_u16(b) == EtherType::VLAN.0 {
            need("ethernet.vlan", HEADER_LEN + VLAN_TAG_LEN, b.len())?;
        }
        Ok(())
    }

    /// Destination address.
    pub fn dst_addr(&self) -> EthernetAddress {
        EthernetAddress(array_at(self.buffer.as_ref(), field::DST_ADDR.byte()))
    }

    /// Source address.
    pub fn src_addr(&self) -> EthernetAddress {
        EthernetAddress(array_at(self.buffer.as_ref(), field::SRC_ADDR.byte()))
    }

    /// The EtherType at offset 12 (the TPID when tagged).
    pub fn outer_ethertype(&self) -> EtherType {
        EtherType(field::ETHER_TYPE.get_u16(self.buffer.as_ref()))
    }

    /// Whether the frame carries an 802.1Q tag.
    pub fn is_tagged(&self) -> bool {
        self.outer_ethertype() == EtherType::VLAN
    }

    /// The EtherType of the payload (after the tag, if tagged).
    pub fn ethertype(&self) -> EtherType {
        if self.is_tagged() {
            EtherType(field::vlan::ETHER_TYPE.get_u16(&self.buffer.as_ref()[HEADER_LEN..]))
        } else {
            self.outer_ethertype()
        }
    }

    /// The tag control information of a tagged frame.
    pub fn vlan(&self) -> Option<VlanRepr> {
        self.is_tagged().then(|| {
            let tag = &self.buffer.as_ref()[HEADER_LEN..];
            VlanRepr {
                pcp: field::vlan::PCP.get_u8(tag),
                dei: field::vlan::DEI.get_bool(tag),
                vid: field::vlan::VID.get_u16(tag),
            }
        })
    }

    /// Header length: 14, or 18 when tagged.
    pub fn header_len(&self) -> usize {
        if self.is_tagged() { HEADER_LEN + VLAN_TAG_LEN } else { HEADER_LEN }
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Set the destination address.
    pub fn set_dst_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::DST_ADDR.range()].copy_from_slice(&a.0);
    }

    /// Set the source address.
    pub fn set_src_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::SRC_ADDR.range()].copy_from_slice(&a.0);
    }

    /// Set the payload EtherType (after the tag, if tagged).
    pub fn set_ethertype(&mut self, t: EtherType) {
        if self.is_tagged() {
            field::vlan::ETHER_TYPE.set_u16(&mut self.buffer.as_mut()[HEADER_LEN..], t.0);
        } else {
            field::ETHER_TYPE.set_u16(self.buffer.as_mut(), t.0);
        }
    }

    /// Set the priority code point of a tagged frame; does nothing on an untagged one.
    pub fn set_pcp(&mut self, pcp: u8) {
        if self.is_tagged() {
            field::vlan::PCP.set_u8(&mut self.buffer.as_mut()[HEADER_LEN..], pcp);
        }
    }

    /// The bytes after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buffer.as_mut()[h..]
    }
}

/// An 802.1Q tag's control information.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlanRepr {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 0..=4095.
    pub vid: u16,
}

impl VlanRepr {
    /// Decode a 16-bit TCI.
    pub fn from_tci(tci: u16) -> Self {
        let b = tci.to_be_bytes();
        Self {
            pcp: field::vlan::PCP.get_u8(&b),
            dei: field::vlan::DEI.get_bool(&b),
            vid: field::vlan::VID.get_u16(&b),
        }
    }

    /// Encode as a 16-bit TCI (out-of-range fields are masked).
    pub fn tci(&self) -> u16 {
        let mut b = [0u8; 2];
        field::vlan::PCP.set_u8(&mut b, self.pcp);
        field::vlan::DEI.set_bool(&mut b, self.dei);
        field::vlan::VID.set_u16(&mut b, self.vid);
        u16::from_be_bytes(b)
    }
}

/// A parsed Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Source address.
    pub src_addr: EthernetAddress,
    /// Destination address.
    pub dst_addr: EthernetAddress,
    /// The 802.1Q tag, if any.
    pub vlan: Option<VlanRepr>,
    /// EtherType of the payload. With `vlan: None` it must not be [`EtherType::VLAN`].
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Parse the header at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let frame = EthernetFrame::new_checked(buf)?;
        Ok(Self {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            vlan: frame.vlan(),
            ethertype: frame.ethertype(),
        })
    }

    /// Header length on the wire.
    pub const fn buffer_len(&self) -> usize {
        if self.vlan.is_some() { HEADER_LEN + VLAN_TAG_LEN } else { HEADER_LEN }
    }

    /// Write the header into the first [`buffer_len`](Self::buffer_len) bytes of `buf`.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        match self.vlan {
            None => {
                let b = chunk::<HEADER_LEN>("ethernet", buf)?;
                b[field::DST_ADDR.range()].copy_from_slice(&self.dst_addr.0);
                b[field::SRC_ADDR.range()].copy_from_slice(&self.src_addr.0);
                field::ETHER_TYPE.set_u16(b, self.ethertype.0);
            }
            Some(v) => {
                let b = chunk::<{ HEADER_LEN + VLAN_TAG_LEN }>("ethernet", buf)?;
                b[field::DST_ADDR.range()].copy_from_slice(&self.dst_addr.0);
                b[field::SRC_ADDR.range()].copy_from_slice(&self.src_addr.0);
                field::ETHER_TYPE.set_u16(b, EtherType::VLAN.0);
                let tag = &mut b[HEADER_LEN..];
                tag[..2].copy_from_slice(&v.tci().to_be_bytes());
                field::vlan::ETHER_TYPE.set_u16(tag, self.ethertype.0);
            }
        }
        Ok(())
    }

    /// The priority code point, if tagged.
    pub fn pcp(&self) -> Option<u8> {
        self.vlan.map(|v| v.pcp)
    }
}

impl fmt::Display for EthernetRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ethernet {} > {} type {:#06x}", self.src_addr, self.dst_addr, self.ethertype.0)?;
        if let Some(v) = self.vlan {
            write!(f, " vlan {} pcp {}", v.vid, v.pcp)?;
        }
        Ok(())
    }
}

/// Whether a frame is untagged IPv4 with a header without options: EtherType 0x0800 and the
/// version/IHL byte 0x45 (bytes 12..15), read as one word. The common frame that fast paths
/// read at fixed offsets (the IPv4 header at byte 14, its payload at 34); `false` if the frame
/// is shorter than 15 bytes.
#[inline(always)]
pub fn untagged_ipv4_without_options(frame: &[u8]) -> bool {
    frame.get(12..15).is_some_and(|b| u32::from_be_bytes([b[0], b[1], b[2], 0]) == 0x0800_4500)
}

/// Parse error helper for callers that expect a given EtherType.
pub fn expect_ethertype(got: EtherType, want: EtherType) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(Error::Unsupported { field: "ethernet.ethertype", value: u64::from(got.0) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only EtherType 0x0800 with version 4 and a five-word header is the common frame: a VLAN
    /// tag, IPv4 options, another version or a frame cut before byte 15 is not.
    #[test]
    fn the_common_frame_is_untagged_ipv4_without_options() {
        let mut f = [0u8; 15];
        f[12..15].copy_from_slice(&[0x08, 0x00, 0x45]);
        assert!(untagged_ipv4_without_options(&f));
        assert!(!untagged_ipv4_without_options(&f[..14]));
        for (at, v) in [(12, 0x81), (13, 0x06), (14, 0x46), (14, 0x65), (14, 0x44)] {
            let mut g = f;
            g[at] = v;
            assert!(!untagged_ipv4_without_options(&g), "byte {at} = {v:#04x}");
        }
    }

    #[test]
    fn mac_addresses_parse_from_colon_hex_only() {
        assert_eq!(
            EthernetAddress::parse("aa:BB:cc:00:11:22"),
            Some(EthernetAddress([0xaa, 0xbb, 0xcc, 0, 0x11, 0x22]))
        );
        assert_eq!(EthernetAddress::parse("aa:bb:cc:00:11:22:33"), None);
        assert_eq!(EthernetAddress::parse("aa:bb:cc:00:11"), None);
        assert_eq!(EthernetAddress::parse("a:bb:cc:00:11:22"), None);
    }

    #[test]
    fn tagged_frame() {
        let mut buf = [0u8; 64];
        let repr = EthernetRepr {
            src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
            dst_addr: EthernetAddress::BROADCAST,
            vlan: Some(VlanRepr { pcp: 3, dei: false, vid: 100 }),
            ethertype: EtherType::IPV4,
        };
        repr.emit(&mut buf).unwrap();
        assert_eq!(&buf[12..18], &[0x81, 0x00, 0x60, 0x64, 0x08, 0x00]);
        let f = EthernetFrame::new_checked(&buf[..]).unwrap();
        assert_eq!(f.header_len(), 18);
        assert_eq!(EthernetRepr::parse(&buf).unwrap(), repr);
    }

    #[test]
    fn truncated_tag_is_an_error() {
        let mut buf = [0u8; 16];
        buf[12] = 0x81;
        let e = EthernetFrame::new_checked(&buf[..]).unwrap_err();
        assert_eq!(e.field(), "ethernet.vlan");
        assert!(EthernetFrame::new_checked(&buf[..10]).is_err());
    }
}
