//! MPLS label stack entries (RFC 3032), used by µFAB as its source-routing header: the
//! sender's µFAB-E pushes one entry per switch on the chosen path, whose label is the egress port
//! at that switch, and each switch pops the top entry and sends the packet out of that port
//! (seed `003` §4.1, "packet path is enforced by source routing"; Appendix G draws an "SR
//! header" before the probe). The bottom-of-stack entry restores the inner EtherType: IPv4.
//!
//! ```text
//! label 20 | tc 3 | s (bottom of stack) 1 | ttl 8
//! ```
//!
//! Stacks sit between the Ethernet header (EtherType 0x8847) and the IPv4 header.

use crate::error::{Result, need, space};
use crate::spec::Header;

/// The fields of one label stack entry.
pub mod field {
    use crate::spec::Field;

    /// Label (µFAB: the egress port at this hop).
    pub const LABEL: Field = Field::new("label", 0, 20);
    /// Traffic class.
    pub const TC: Field = Field::new("tc", 20, 3);
    /// Bottom of stack.
    pub const BOS: Field = Field::new("bos", 23, 1);
    /// Time to live.
    pub const TTL: Field = Field::bytes("ttl", 3, 1);
}

/// One label stack entry.
pub const HEADER: Header =
    Header { name: "mpls", fields: &[field::LABEL, field::TC, field::BOS, field::TTL], len: LEN };

/// Length of one entry.
pub const LEN: usize = 4;
/// Largest label.
pub const MAX_LABEL: u32 = (1 << 20) - 1;

fixed_view!(
    /// A read/write view of one label stack entry.
    MplsEntry,
    LEN,
    "mpls"
);

impl<T: AsRef<[u8]>> MplsEntry<T> {
    /// Label.
    pub fn label(&self) -> u32 {
        field::LABEL.get_u32(self.buffer.as_ref())
    }
    /// Traffic class.
    pub fn tc(&self) -> u8 {
        field::TC.get_u8(self.buffer.as_ref())
    }
    /// Bottom of stack.
    pub fn bottom(&self) -> bool {
        field::BOS.get_bool(self.buffer.as_ref())
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        field::TTL.get_u8(self.buffer.as_ref())
    }
}

/// One label stack entry, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MplsRepr {
    /// Label, 20 bits.
    pub label: u32,
    /// Traffic class, 3 bits.
    pub tc: u8,
    /// Bottom of stack.
    pub bottom: bool,
    /// Time to live.
    pub ttl: u8,
}

impl MplsRepr {
    /// Parse the entry at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        need("mpls", LEN, buf.len())?;
        let e = MplsEntry::new_unchecked(buf);
        Ok(Self { label: e.label(), tc: e.tc(), bottom: e.bottom(), ttl: e.ttl() })
    }

    /// Write the entry; the label and TC are masked to their widths.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        space("mpls", LEN, buf.len())?;
        let w = ((self.label & MAX_LABEL) << 12)
            | (u32::from(self.tc & 7) << 9)
            | (u32::from(self.bottom) << 8)
            | u32::from(self.ttl);
        buf[..LEN].copy_from_slice(&w.to_be_bytes());
        Ok(())
    }
}

/// The number of entries of the stack at the start of `buf`, down to the bottom-of-stack one;
/// an error if the buffer ends first.
pub fn stack_depth(buf: &[u8]) -> Result<usize> {
    let mut n = 0;
    loop {
        let e = MplsRepr::parse(buf.get(n * LEN..).unwrap_or(&[]))?;
        n += 1;
        if e.bottom {
            return Ok(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let r = MplsRepr { label: 0xabcde, tc: 5, bottom: true, ttl: 64 };
        let mut b = [0u8; 4];
        r.emit(&mut b).unwrap();
        assert_eq!(b, [0xab, 0xcd, 0xeb, 64]);
        assert_eq!(MplsRepr::parse(&b).unwrap(), r);
    }

    #[test]
    fn depth() {
        let mut b = [0u8; 12];
        MplsRepr { label: 1, ttl: 9, ..Default::default() }.emit(&mut b).unwrap();
        MplsRepr { label: 2, bottom: true, ttl: 9, ..Default::default() }.emit(&mut b[4..]).unwrap();
        assert_eq!(stack_depth(&b).unwrap(), 2);
        assert_eq!(stack_depth(&b[..6]).unwrap_err().field(), "mpls");
        assert_eq!(stack_depth(&[0u8; 8]).unwrap_err().field(), "mpls");
    }
}
