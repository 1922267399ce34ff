//! DAIET key/value aggregation packets (seed `002`, §4), wire-compatible with the reference P4
//! prototype (github.com/AmedeoSapio/DAIET): UDP (port 10000 in its tests), then either
//!
//! * a data packet: `frame_type 8 (= 0) | number_of_entries 32 | tree_id 32`, then
//!   `number_of_entries` fixed-size pairs `key 128 | value 32`; or
//! * an END packet: `frame_type 8 (= 1) | tree_id 32`, marking the end of one child's partition.
//!
//! Keys are 16 opaque bytes (the reference pads short strings with zeros); values are 32-bit
//! integers aggregated by the tree's function. At most 10 pairs travel in one packet by default;
//! the limit is the switch program's to enforce.

use crate::error::{Error, Result, need, space};
use crate::field::array_at;
use crate::spec::Header;

/// The fields of the preamble, the END packet and one pair.
pub mod field {
    /// A data packet's preamble.
    pub mod preamble {
        use crate::spec::Field;

        /// Frame type (0: data).
        pub const FRAME_TYPE: Field = Field::bytes("frame_type", 0, 1);
        /// Pairs that follow.
        pub const NUMBER_OF_ENTRIES: Field = Field::bytes("number_of_entries", 1, 4);
        /// Tree (reducer) ID.
        pub const TREE_ID: Field = Field::bytes("tree_id", 5, 4);
    }

    /// An END packet.
    pub mod end {
        use crate::spec::Field;

        /// Frame type (1: END).
        pub const FRAME_TYPE: Field = Field::bytes("frame_type", 0, 1);
        /// Tree (reducer) ID.
        pub const TREE_ID: Field = Field::bytes("tree_id", 1, 4);
    }

    /// One key/value pair.
    pub mod entry {
        use crate::spec::Field;

        /// Key, 16 opaque bytes.
        pub const KEY: Field = Field::bytes("key", 0, 16);
        /// Value.
        pub const VALUE: Field = Field::bytes("value", 16, 4);
    }
}

/// A data packet's preamble.
pub const PREAMBLE: Header = Header {
    name: "daiet",
    fields: &[field::preamble::FRAME_TYPE, field::preamble::NUMBER_OF_ENTRIES, field::preamble::TREE_ID],
    len: PREAMBLE_LEN,
};

/// An END packet.
pub const END: Header =
    Header { name: "daiet_end", fields: &[field::end::FRAME_TYPE, field::end::TREE_ID], len: END_LEN };

/// One key/value pair (a stack of them follows the preamble).
pub const ENTRY: Header =
    Header { name: "daiet_entry", fields: &[field::entry::KEY, field::entry::VALUE], len: ENTRY_LEN };

/// Length of the data preamble.
pub const PREAMBLE_LEN: usize = 9;
/// Length of an END packet.
pub const END_LEN: usize = 5;
/// Length of one key/value pair.
pub const ENTRY_LEN: usize = 20;
/// Key length.
pub const KEY_LEN: usize = 16;
/// Default most pairs per packet.
pub const DEFAULT_MAX_ENTRIES: usize = 10;
/// Frame type of a data packet.
pub const FRAME_DATA: u8 = 0;
/// Frame type of an END packet.
pub const FRAME_END: u8 = 1;

/// One key/value pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DaietEntry {
    /// Key.
    pub key: [u8; KEY_LEN],
    /// Value.
    pub value: u32,
}

impl DaietEntry {
    /// Write the pair into 20 bytes.
    pub fn write(&self, b: &mut [u8]) {
        b[field::entry::KEY.range()].copy_from_slice(&self.key);
        field::entry::VALUE.set_u32(b, self.value);
    }

    /// Read a pair from 20 bytes.
    pub fn read(b: &[u8]) -> Self {
        Self { key: array_at(b, field::entry::KEY.byte()), value: field::entry::VALUE.get_u32(b) }
    }
}

/// The pairs of a data packet, in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entries<'a>(&'a [u8]);

impl<'a> Entries<'a> {
    /// Wrap raw pairs; the length must be a multiple of 20.
    pub fn new(raw: &'a [u8]) -> Result<Self> {
        if !raw.len().is_multiple_of(ENTRY_LEN) {
            return Err(Error::Invalid { field: "daiet.entries", value: raw.len() as u64 });
        }
        Ok(Self(raw))
    }

    /// The raw bytes.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    /// Number of pairs.
    pub const fn len(&self) -> usize {
        self.0.len() / ENTRY_LEN
    }

    /// Whether there are none.
    pub const fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Pair `i`.
    pub fn get(&self, i: usize) -> Option<DaietEntry> {
        (i < self.len()).then(|| DaietEntry::read(&self.0[i * ENTRY_LEN..]))
    }

    /// All pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = DaietEntry> + 'a {
        self.0.chunks_exact(ENTRY_LEN).map(DaietEntry::read)
    }
}

view!(
    /// A read/write view of a DAIET packet (after the UDP header).
    DaietPacket
);

impl<T: AsRef<[u8]>> DaietPacket<T> {
    /// Check the frame type is known and that the preamble and every claimed pair fit.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("daiet", 1, b.len())?;
        match field::preamble::FRAME_TYPE.get_u8(b) {
            FRAME_DATA => {
                need("daiet.preamble", PREAMBLE_LEN, b.len())?;
                let n = u64::from(field::preamble::NUMBER_OF_ENTRIES.get_u32(b));
                let want = PREAMBLE_LEN as u64 + n * ENTRY_LEN as u64;
                if want > b.len() as u64 {
                    return Err(Error::Truncated {
                        field: "daiet.number_of_entries",
                        need: usize::try_from(want).unwrap_or(usize::MAX),
                        have: b.len(),
                    });
                }
                Ok(())
            }
            FRAME_END => need("daiet.end", END_LEN, b.len()),
            t => Err(Error::Unsupported { field: "daiet.frame_type", value: u64::from(t) }),
        }
    }

    /// Frame type.
    pub fn frame_type(&self) -> u8 {
        field::preamble::FRAME_TYPE.get_u8(self.buffer.as_ref())
    }

    /// Tree ID.
    pub fn tree_id(&self) -> u32 {
        let f = if self.frame_type() == FRAME_END { field::end::TREE_ID } else { field::preamble::TREE_ID };
        f.get_u32(self.buffer.as_ref())
    }

    /// Number of pairs (data packets; 0 for END).
    pub fn number_of_entries(&self) -> u32 {
        if self.frame_type() == FRAME_DATA {
            field::preamble::NUMBER_OF_ENTRIES.get_u32(self.buffer.as_ref())
        } else {
            0
        }
    }

    /// Pair `i` of a data packet (`i < number_of_entries`).
    pub fn entry(&self, i: usize) -> DaietEntry {
        DaietEntry::read(&self.buffer.as_ref()[PREAMBLE_LEN + ENTRY_LEN * i..])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DaietPacket<T> {
    /// Set the number of pairs of a data packet.
    pub fn set_number_of_entries(&mut self, n: u32) {
        field::preamble::NUMBER_OF_ENTRIES.set_u32(self.buffer.as_mut(), n);
    }

    /// Overwrite pair `i` of a data packet.
    pub fn set_entry(&mut self, i: usize, e: &DaietEntry) {
        e.write(&mut self.buffer.as_mut()[PREAMBLE_LEN + ENTRY_LEN * i..]);
    }
}

/// A parsed DAIET packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DaietRepr<'a> {
    /// Key/value pairs for tree `tree_id`.
    Data {
        /// Tree (reducer) ID.
        tree_id: u32,
        /// The pairs.
        entries: Entries<'a>,
    },
    /// End of one child's partition for tree `tree_id`.
    End {
        /// Tree (reducer) ID.
        tree_id: u32,
    },
}

impl<'a> DaietRepr<'a> {
    /// Parse a packet (the UDP payload). Bytes after the last pair are ignored.
    pub fn parse(buf: &'a [u8]) -> Result<Self> {
        let p = DaietPacket::new_checked(buf)?;
        Ok(match p.frame_type() {
            FRAME_END => Self::End { tree_id: p.tree_id() },
            _ => {
                let n = p.number_of_entries() as usize;
                Self::Data {
                    tree_id: p.tree_id(),
                    entries: Entries(&buf[PREAMBLE_LEN..PREAMBLE_LEN + n * ENTRY_LEN]),
                }
            }
        })
    }

    /// Length on the wire.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Self::Data { entries, .. } => PREAMBLE_LEN + entries.0.len(),
            Self::End { .. } => END_LEN,
        }
    }

    /// Write the packet.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        space("daiet", self.buffer_len(), buf.len())?;
        match self {
            Self::Data { tree_id, entries } => {
                use field::preamble::*;
                FRAME_TYPE.set_u8(buf, FRAME_DATA);
                NUMBER_OF_ENTRIES.set_u32(buf, entries.len() as u32);
                TREE_ID.set_u32(buf, *tree_id);
                buf[PREAMBLE_LEN..PREAMBLE_LEN + entries.0.len()].copy_from_slice(entries.0);
            }
            Self::End { tree_id } => {
                field::end::FRAME_TYPE.set_u8(buf, FRAME_END);
                field::end::TREE_ID.set_u32(buf, *tree_id);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_test_packet() {
        // PREAMBLE(number_of_entries=2, tree_id=7) / ENTRY(key='AA', value=5) / ENTRY(key='BB', value=6)
        let mut raw = [0u8; PREAMBLE_LEN + 2 * ENTRY_LEN];
        raw[..9].copy_from_slice(&[0, 0, 0, 0, 2, 0, 0, 0, 7]);
        raw[9..11].copy_from_slice(b"AA");
        raw[28] = 5;
        raw[29..31].copy_from_slice(b"BB");
        raw[48] = 6;
        let r = DaietRepr::parse(&raw).unwrap();
        let DaietRepr::Data { tree_id, entries } = r else { panic!("not data") };
        assert_eq!(tree_id, 7);
        let pairs: std::vec::Vec<_> = entries.iter().map(|e| (e.key[0], e.value)).collect();
        assert_eq!(pairs, [(b'A', 5), (b'B', 6)]);
        let mut out = [0u8; 49];
        r.emit(&mut out).unwrap();
        assert_eq!(out, raw);
        assert_eq!(DaietRepr::parse(&[1, 0, 0, 0, 8]).unwrap(), DaietRepr::End { tree_id: 8 });
    }

    #[test]
    fn claimed_pairs_past_the_buffer() {
        let e = DaietRepr::parse(&[0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1]).unwrap_err();
        assert_eq!(e.field(), "daiet.number_of_entries");
        assert_eq!(DaietRepr::parse(&[2]).unwrap_err().field(), "daiet.frame_type");
        assert_eq!(DaietRepr::parse(&[1, 0]).unwrap_err().field(), "daiet.end");
    }
}
