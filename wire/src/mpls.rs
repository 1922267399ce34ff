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

/// Push a source route onto the untagged Ethernet frame in `buf[..frame_len]`: one entry per
/// egress port of `ports` (the first on top, the last the bottom of stack), traffic class `tc`,
/// TTL `ttl`, EtherType set to MPLS. The payload moves back by 4 bytes per entry. Returns the new
/// frame length.
pub fn push_route(buf: &mut [u8], frame_len: usize, ports: &[u16], tc: u8, ttl: u8) -> Result<usize> {
    let l2 = crate::ethernet::HEADER_LEN;
    need("mpls.frame", l2, frame_len.min(buf.len()))?;
    if ports.is_empty() {
        return Err(crate::Error::Invalid { field: "mpls.route", value: 0 });
    }
    let add = ports.len() * LEN;
    space("mpls.route", frame_len + add, buf.len())?;
    buf.copy_within(l2..frame_len, l2 + add);
    for (i, &p) in ports.iter().enumerate() {
        MplsRepr { label: u32::from(p), tc, bottom: i + 1 == ports.len(), ttl }
            .emit(&mut buf[l2 + i * LEN..])?;
    }
    buf[12..14].copy_from_slice(&crate::ethernet::EtherType::MPLS.0.to_be_bytes());
    Ok(frame_len + add)
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
    fn push_a_route() {
        let mut b = [0u8; 64];
        b[12..14].copy_from_slice(&[0x08, 0x00]);
        b[14] = 0x45;
        let n = push_route(&mut b, 20, &[3, 7], 3, 16).unwrap();
        assert_eq!(n, 28);
        assert_eq!(&b[12..14], &[0x88, 0x47]);
        assert_eq!(MplsRepr::parse(&b[14..]).unwrap(), MplsRepr { label: 3, tc: 3, bottom: false, ttl: 16 });
        assert_eq!(MplsRepr::parse(&b[18..]).unwrap(), MplsRepr { label: 7, tc: 3, bottom: true, ttl: 16 });
        assert_eq!(b[22], 0x45);
        assert_eq!(stack_depth(&b[14..]).unwrap(), 2);
        assert!(push_route(&mut b, 60, &[1, 2], 0, 1).is_err());
        assert!(push_route(&mut b, 20, &[], 0, 1).is_err());
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
