//! Direct Telemetry Access reports (reporter → translator, UDP port 40040) and NACKs
//! (translator → reporter, UDP port 40044), wire-compatible with the reference implementation
//! (github.com/jonlanglet/DTA), with two extensions of ours: a priority in the 3-byte base header
//! and the Sketch-Merge primitive (opcode 5).
//!
//! The base header has two forms that cannot be told apart on the wire; the receiver is
//! configured with one ([`BaseForm`]):
//!
//! * short, 2 bytes: opcode 8, immediate 1, reserved 7 (the reference reporter);
//! * long, 3 bytes: opcode 8, seqnum 8, immediate 1, retransmittable 1, **priority 2**,
//!   **epoch 4** (the reference generators and `-DDO_NACK_TRACKING` translator have 6 reserved
//!   bits there; priority and the reporter epoch are ours, so reference reports read as low
//!   priority with no epoch).
//!
//! A NACK (2 bytes: last seqnum held, nack 1, slow-down 1 (ours), extended 1 (ours), reserved
//! 5) may carry our 12-byte extension ([`NackExt`]) when the extended flag is set: a range of
//! missing reports (count, reporter epoch), an out-of-order sketch column (sketch, reporter,
//! 32-bit column), or the answer to a reporter's hello (epoch, nonce). A hello ([`HelloRepr`],
//! opcode 6, ours) is a reporter announcing a new stream from its address and port. A reference reporter reads the first two bytes only and resends everything
//! after the seqnum, a superset of the range.
//!
//! Sub-headers follow directly: Key-Write (redundancy 8, key 32, data 4/12/28 bytes),
//! Key-Increment (redundancy 8, key 32, counter 64), Append (list 32, data 32), Postcarder
//! (key 32, hop 8, data 32) and Sketch-Merge (sketch 16, reporter 16, column 32, count 16,
//! merge op 8, reserved 8, counters 32 × count).
//!
//! The wire layer checks structure only. Semantic bounds — redundancy within the configured
//! maximum, a hop number within the path length, a list that exists — are the translator's.
//!
//! [`keywrite_checksum`] and [`keywrite_slot_hash`] give the collector memory addressing both the
//! translator and the collector need: the checksum is CRC-32/ISO-HDLC over the key's
//! little-endian bytes; each copy's slot comes from its own CRC polynomial by default
//! ([`KeyHashMode::Independent`]) or, for compatibility, from the reference's hash
//! ([`KeyHashMode::Reference`]).

use crate::error::{Error, Result, need, space};
use crate::field::{set_u16, set_u32, set_u64};
use crate::spec::Header;

/// The fields of every DTA header, from the header's own first byte.
pub mod field;

mod addressing;
mod repr;
mod view;

pub use addressing::*;
pub use repr::*;
pub use view::*;

/// How far behind its newest report a reporter resends one (and the translator asks again for a
/// missing one): 96 of the 128 numbers a sequence number can name unambiguously. The 32 left
/// over are slack: a resend overtaken in flight by up to 32 newer reports still reads as behind
/// the translator's newest, never as a number ahead of it (which would move the translator's
/// window past reports it has not seen, and have it NACK, and translate again, reports it has).
pub const RESEND_WINDOW: u8 = 96;

/// The short base header.
pub const BASE_SHORT: Header = Header {
    name: "dta_base_short",
    fields: &[field::base_short::OPCODE, field::base_short::IMMEDIATE, field::base_short::RESERVED],
    len: SHORT_BASE_LEN,
};

/// The long base header.
pub const BASE_LONG: Header = Header {
    name: "dta_base",
    fields: &[
        field::base_long::OPCODE,
        field::base_long::SEQNUM,
        field::base_long::IMMEDIATE,
        field::base_long::RETRANSMITTABLE,
        field::base_long::PRIORITY,
        field::base_long::EPOCH,
    ],
    len: LONG_BASE_LEN,
};

/// Key-Write with 4 data bytes (the reference's default build).
pub const KEYWRITE: Header = Header {
    name: "dta_keywrite",
    fields: &[field::keywrite::REDUNDANCY, field::keywrite::KEY, field::keywrite::DATA],
    len: 9,
};
/// Key-Write with 12 data bytes.
pub const KEYWRITE_12: Header = Header {
    name: "dta_keywrite",
    fields: &[field::keywrite::REDUNDANCY, field::keywrite::KEY, crate::spec::Field::bytes("data", 5, 12)],
    len: 17,
};
/// Key-Write with 28 data bytes.
pub const KEYWRITE_28: Header = Header {
    name: "dta_keywrite",
    fields: &[field::keywrite::REDUNDANCY, field::keywrite::KEY, crate::spec::Field::bytes("data", 5, 28)],
    len: 33,
};

/// The Key-Write header for `data_len` data bytes (4, 12 or 28).
pub const fn keywrite_header(data_len: usize) -> Option<&'static Header> {
    match data_len {
        4 => Some(&KEYWRITE),
        12 => Some(&KEYWRITE_12),
        28 => Some(&KEYWRITE_28),
        _ => None,
    }
}

/// Key-Increment.
pub const KEYINCREMENT: Header = Header {
    name: "dta_keyincrement",
    fields: &[field::keyincrement::REDUNDANCY, field::keyincrement::KEY, field::keyincrement::COUNTER],
    len: 13,
};

/// Append.
pub const APPEND: Header =
    Header { name: "dta_append", fields: &[field::append::LIST_ID, field::append::DATA], len: 8 };

/// Postcarder.
pub const POSTCARDER: Header = Header {
    name: "dta_postcarder",
    fields: &[field::postcarder::KEY, field::postcarder::HOP, field::postcarder::DATA],
    len: 9,
};

/// Sketch-Merge, before its `counter_count` 32-bit counters.
pub const SKETCH_MERGE: Header = Header {
    name: "dta_sketch_merge",
    fields: &[
        field::sketch_merge::SKETCH_ID,
        field::sketch_merge::REPORTER_ID,
        field::sketch_merge::COLUMN,
        field::sketch_merge::COUNTER_COUNT,
        field::sketch_merge::MERGE_OP,
        field::sketch_merge::RESERVED,
    ],
    len: 12,
};

/// NACK.
pub const NACK: Header = Header {
    name: "dta_nack",
    fields: &[
        field::nack::SEQNUM,
        field::nack::NACK,
        field::nack::SLOW_DOWN,
        field::nack::EXTENDED,
        field::nack::RESERVED,
    ],
    len: NACK_LEN,
};

/// The NACK extension (ours), after the NACK when its extended flag is set.
pub const NACK_EXT: Header = Header {
    name: "dta_nack_ext",
    fields: &[
        field::nack_ext::KIND,
        field::nack_ext::COUNT,
        field::nack_ext::EPOCH,
        field::nack_ext::RESERVED,
        field::nack_ext::SKETCH_ID,
        field::nack_ext::REPORTER_ID,
        field::nack_ext::COLUMN,
    ],
    len: NACK_EXT_LEN,
};

/// Length of the short base header.
pub const SHORT_BASE_LEN: usize = 2;
/// Length of the long base header.
pub const LONG_BASE_LEN: usize = 3;
/// Length of a DTA NACK.
pub const NACK_LEN: usize = 2;
/// Length of the NACK extension.
pub const NACK_EXT_LEN: usize = 12;
/// Bytes a progress extension ([`NackExt::Progress`]) carries after the 12 of the extension
/// (its `lost` and `span` counts).
pub const PROGRESS_EXTRA_LEN: usize = 8;
/// Key-Write data length of the reference default build.
pub const DEFAULT_KEYWRITE_DATA_LEN: usize = 4;

/// DTA opcodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Opcode {
    /// Key-Write.
    KeyWrite = 1,
    /// Append.
    Append = 2,
    /// Key-Increment.
    KeyIncrement = 3,
    /// Postcarder.
    Postcarder = 4,
    /// Sketch-Merge (our extension).
    SketchMerge = 5,
}

impl Opcode {
    /// Decode an opcode byte; unknown values are [`Error::Unsupported`].
    pub const fn from_u8(v: u8) -> Result<Self> {
        Ok(match v {
            1 => Self::KeyWrite,
            2 => Self::Append,
            3 => Self::KeyIncrement,
            4 => Self::Postcarder,
            5 => Self::SketchMerge,
            _ => {
                return Err(Error::Unsupported { field: "dta.opcode", value: v as u64 });
            }
        })
    }
}

/// Which base-header form a receiver expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BaseForm {
    /// 2 bytes, no sequence number (reference reporter).
    Short,
    /// 3 bytes with sequence number, retransmittable flag and priority (reference generators).
    #[default]
    Long,
}

impl BaseForm {
    /// Header length of this form.
    pub const fn len(self) -> usize {
        match self {
            Self::Short => SHORT_BASE_LEN,
            Self::Long => LONG_BASE_LEN,
        }
    }

    /// Never empty; present for symmetry with `len`.
    pub const fn is_empty(self) -> bool {
        false
    }
}

/// How to parse reports: the base form and the Key-Write data length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Format {
    /// Base header form.
    pub base: BaseForm,
    /// Key-Write data bytes: 4 by default, 12 or 28 in the reference's larger builds.
    pub keywrite_data_len: usize,
}

impl Default for Format {
    fn default() -> Self {
        Self { base: BaseForm::Long, keywrite_data_len: DEFAULT_KEYWRITE_DATA_LEN }
    }
}

/// Report priority (our extension, in the long base header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(u8)]
pub enum Priority {
    /// Dropped first under rate limiting.
    #[default]
    Low = 0,
    /// Medium.
    Medium = 1,
    /// Parked and re-injected rather than dropped.
    High = 2,
}

impl Priority {
    /// Decode the 2-bit field; 3 is [`Error::Invalid`].
    pub const fn from_bits(v: u8) -> Result<Self> {
        Ok(match v {
            0 => Self::Low,
            1 => Self::Medium,
            2 => Self::High,
            _ => {
                return Err(Error::Invalid { field: "dta.priority", value: v as u64 });
            }
        })
    }
}

/// The sequencing fields of the long base header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sequence {
    /// Per-reporter sequence number (wraps at 8 bits).
    pub seqnum: u8,
    /// The reporter keeps this report for retransmission; the translator tracks its sequence.
    pub retransmittable: bool,
    /// Priority.
    pub priority: Priority,
    /// The reporter's epoch, 0..=15 (our extension): nonzero and new at each start of a
    /// reporter of ours, so the translator tells a restart from a gap; 0 for reference
    /// reporters (and for reports whose sequence is not tracked).
    pub epoch: u8,
}

#[cfg(test)]
mod tests;
