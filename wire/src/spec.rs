//! Bit-level field specifications: the one description of each header's layout.
//!
//! Every format's `field` module (smoltcp's `mod field`, with bit widths) names its fields as
//! [`Field`] constants — offset from the header's first bit and width in bits — and its
//! `HEADER` constant lists them as a [`Header`]. The views' accessors read and write through
//! those constants (each `get`/`set` below folds to the shifts and masks a hand-written accessor
//! has, since the field is a constant), and the switch's declared parsers and the P4 exporter
//! take their layouts from the same constants, so a field changed here changes everywhere.
//!
//! Fields are big-endian (network order) and numbered from the most significant bit of the
//! header's first byte, as P4 and the RFCs draw them. A field up to 64 bits wide reads as an
//! integer; wider fields (Key-Write data) are byte-aligned and read as bytes.

use crate::field::{u16_at, u24_at, u32_at, u64_at};

/// One field: name, offset from the header's first bit, width in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Field {
    /// Its name, as P4 headers and `dataplane resources` print it.
    pub name: &'static str,
    /// Offset of its first (most significant) bit from the header's first bit.
    pub offset: u16,
    /// Width in bits.
    pub width: u16,
}

impl Field {
    /// A field of `width` bits at bit `offset`.
    pub const fn new(name: &'static str, offset: u16, width: u16) -> Self {
        Self { name, offset, width }
    }

    /// A field of `bytes` whole bytes at byte `at`.
    pub const fn bytes(name: &'static str, at: usize, bytes: usize) -> Self {
        Self { name, offset: (at * 8) as u16, width: (bytes * 8) as u16 }
    }

    /// The byte its first bit is in.
    #[inline(always)]
    pub const fn byte(&self) -> usize {
        (self.offset / 8) as usize
    }

    /// One past the byte its last bit is in.
    #[inline(always)]
    pub const fn end(&self) -> usize {
        (self.offset as usize + self.width as usize).div_ceil(8)
    }

    /// Whether it starts and ends on byte boundaries.
    pub const fn is_byte_aligned(&self) -> bool {
        self.offset.is_multiple_of(8) && self.width.is_multiple_of(8)
    }

    /// Its byte range, for a byte-aligned field.
    #[inline(always)]
    pub const fn range(&self) -> core::ops::Range<usize> {
        self.byte()..self.end()
    }

    /// The mask of its width, right-aligned.
    #[inline(always)]
    const fn mask(&self) -> u64 {
        if self.width >= 64 { u64::MAX } else { (1u64 << self.width) - 1 }
    }

    /// Right shift that aligns it in a big-endian window of `window` bits starting at its byte.
    #[inline(always)]
    const fn shift(&self, window: u32) -> u32 {
        window - (self.offset % 8) as u32 - self.width as u32
    }

    /// `v` in this field's bits of its byte, the other bits 0: several fields of one byte are
    /// written at once by or-ing these (each field's own byte must be that byte).
    #[inline(always)]
    pub const fn place_u8(&self, v: u8) -> u8 {
        ((v as u64 & self.mask()) << self.shift(8)) as u8
    }

    /// `v` in this field's bits of the 16-bit word at its byte, the other bits 0 (the word
    /// starts at this field's byte, not another's).
    #[inline(always)]
    pub const fn place_u16(&self, v: u16) -> u16 {
        ((v as u64 & self.mask()) << self.shift(16)) as u16
    }

    /// Read a field that lies within one byte.
    #[inline(always)]
    pub fn get_u8(&self, b: &[u8]) -> u8 {
        debug_assert!(self.offset % 8 + self.width <= 8);
        ((u64::from(b[self.byte()]) >> self.shift(8)) & self.mask()) as u8
    }

    /// Read a field that lies within the two bytes from its first.
    #[inline(always)]
    pub fn get_u16(&self, b: &[u8]) -> u16 {
        debug_assert!(self.offset % 8 + self.width <= 16);
        ((u64::from(u16_at(b, self.byte())) >> self.shift(16)) & self.mask()) as u16
    }

    /// Read a field that lies within the three bytes from its first.
    #[inline(always)]
    pub fn get_u24(&self, b: &[u8]) -> u32 {
        debug_assert!(self.offset % 8 + self.width <= 24);
        ((u64::from(u24_at(b, self.byte())) >> self.shift(24)) & self.mask()) as u32
    }

    /// Read a field that lies within the four bytes from its first.
    #[inline(always)]
    pub fn get_u32(&self, b: &[u8]) -> u32 {
        debug_assert!(self.offset % 8 + self.width <= 32);
        ((u64::from(u32_at(b, self.byte())) >> self.shift(32)) & self.mask()) as u32
    }

    /// Read a field that lies within the eight bytes from its first.
    #[inline(always)]
    pub fn get_u64(&self, b: &[u8]) -> u64 {
        debug_assert!(self.offset % 8 + self.width <= 64);
        (u64_at(b, self.byte()) >> self.shift(64)) & self.mask()
    }

    /// Whether a one-bit field is set.
    #[inline(always)]
    pub fn get_bool(&self, b: &[u8]) -> bool {
        self.get_u8(b) != 0
    }

    /// Write a field that lies within one byte (the other bits kept).
    #[inline(always)]
    pub fn set_u8(&self, b: &mut [u8], v: u8) {
        let (s, m) = (self.shift(8), self.mask() as u8);
        let i = self.byte();
        b[i] = (b[i] & !(m << s)) | ((v & m) << s);
    }

    /// Write a field that lies within the two bytes from its first (the other bits kept).
    #[inline(always)]
    pub fn set_u16(&self, b: &mut [u8], v: u16) {
        let (s, m) = (self.shift(16), self.mask() as u16);
        let i = self.byte();
        let w = (u16_at(b, i) & !(m << s)) | ((v & m) << s);
        b[i..i + 2].copy_from_slice(&w.to_be_bytes());
    }

    /// Write a field that lies within the three bytes from its first (the other bits kept).
    #[inline(always)]
    pub fn set_u24(&self, b: &mut [u8], v: u32) {
        let (s, m) = (self.shift(24), self.mask() as u32);
        let i = self.byte();
        let w = (u24_at(b, i) & !(m << s)) | ((v & m) << s);
        b[i..i + 3].copy_from_slice(&w.to_be_bytes()[1..]);
    }

    /// Write a field that lies within the four bytes from its first (the other bits kept).
    #[inline(always)]
    pub fn set_u32(&self, b: &mut [u8], v: u32) {
        let (s, m) = (self.shift(32), self.mask() as u32);
        let i = self.byte();
        let w = (u32_at(b, i) & !(m << s)) | ((v & m) << s);
        b[i..i + 4].copy_from_slice(&w.to_be_bytes());
    }

    /// Write a field that lies within the eight bytes from its first (the other bits kept).
    #[inline(always)]
    pub fn set_u64(&self, b: &mut [u8], v: u64) {
        let (s, m) = (self.shift(64), self.mask());
        let i = self.byte();
        let w = (u64_at(b, i) & !(m << s)) | ((v & m) << s);
        b[i..i + 8].copy_from_slice(&w.to_be_bytes());
    }

    /// Set or clear a one-bit field.
    #[inline(always)]
    pub fn set_bool(&self, b: &mut [u8], v: bool) {
        self.set_u8(b, u8::from(v))
    }

    /// Read any field up to 64 bits wide from a header's bytes, wherever it lies: what
    /// interpreters and tests use. `None` if `b` is too short or the field wider than 64 bits.
    pub fn read(&self, b: &[u8]) -> Option<u64> {
        if self.width > 64 || b.len() < self.end() {
            return None;
        }
        let mut v = 0u64;
        for bit in self.offset..self.offset + self.width {
            let byte = b[usize::from(bit / 8)];
            v = (v << 1) | u64::from((byte >> (7 - bit % 8)) & 1);
        }
        Some(v)
    }

    /// Write any field up to 64 bits wide (the value's low `width` bits), wherever it lies.
    /// `None` if `b` is too short or the field wider than 64 bits.
    pub fn write(&self, b: &mut [u8], v: u64) -> Option<()> {
        if self.width > 64 || b.len() < self.end() {
            return None;
        }
        for (i, bit) in (self.offset..self.offset + self.width).enumerate() {
            let one = (v >> (self.width as usize - 1 - i)) & 1 == 1;
            let (at, m) = (usize::from(bit / 8), 0x80u8 >> (bit % 8));
            b[at] = if one { b[at] | m } else { b[at] & !m };
        }
        Some(())
    }
}

/// A header's fixed part: its name, its fields in order, its length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Its name, as P4 and `dataplane resources` print it (`ipv4`, `roce_bth`).
    pub name: &'static str,
    /// Every bit of the header, in order, reserved bits as fields named `reserved…`.
    pub fields: &'static [Field],
    /// Length in bytes.
    pub len: usize,
}

impl Header {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Whether the fields tile the header: each starts where the last ended and the last ends
    /// at its length, so every bit is named exactly once.
    pub fn is_tiled(&self) -> bool {
        let mut at = 0u32;
        for f in self.fields {
            if u32::from(f.offset) != at || f.width == 0 {
                return false;
            }
            at += u32::from(f.width);
        }
        at as usize == self.len * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_and_generic_access_agree_at_every_offset_and_width() {
        for width in 1..=32u16 {
            for offset in (0..8u16).filter(|o| o + width <= 32) {
                let f = Field::new("f", offset + 8, width);
                let v = 0xdead_beef_u64 & ((1 << width) - 1);
                let mut a = [0xa5u8; 12];
                let mut b = a;
                f.write(&mut a, v).unwrap();
                if offset + width <= 8 {
                    f.set_u8(&mut b, v as u8);
                    assert_eq!(u64::from(f.get_u8(&a)), v);
                } else if offset + width <= 16 {
                    f.set_u16(&mut b, v as u16);
                    assert_eq!(u64::from(f.get_u16(&a)), v);
                } else {
                    f.set_u32(&mut b, v as u32);
                    assert_eq!(u64::from(f.get_u32(&a)), v);
                }
                assert_eq!(a, b, "offset {offset} width {width}: the other bits are kept");
                assert_eq!(f.read(&a), Some(v));
            }
        }
        let f = Field::bytes("mac", 0, 6);
        assert_eq!(f.get_u64(&[1, 2, 3, 4, 5, 6, 7, 8]), 0x0102_0304_0506);
        assert_eq!(f.range(), 0..6);
        assert_eq!(f.read(&[1, 2, 3]), None, "too short");
    }

    #[test]
    fn a_header_is_tiled_by_its_fields() {
        const H: Header = Header {
            name: "h",
            fields: &[Field::new("a", 0, 4), Field::new("b", 4, 12), Field::bytes("c", 2, 2)],
            len: 4,
        };
        assert!(H.is_tiled());
        assert_eq!(H.field("b").map(|f| f.width), Some(12));
        const GAP: Header = Header { fields: &[Field::new("a", 0, 4), Field::bytes("c", 2, 2)], ..H };
        assert!(!GAP.is_tiled());
    }
}
