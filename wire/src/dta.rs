//! Direct Telemetry Access reports (reporter → translator, UDP port 40040) and NACKs
//! (translator → reporter, UDP port 40044), wire-compatible with the reference implementation
//! (github.com/jonlanglet/DTA), with two extensions of ours: a priority in the 3-byte base header
//! and the Sketch-Merge primitive (opcode 5).
//!
//! The base header has two forms that cannot be told apart on the wire; the receiver is
//! configured with one ([`BaseForm`]):
//!
//! * short, 2 bytes: opcode 8, immediate 1, reserved 7 (the reference reporter);
//! * long, 3 bytes: opcode 8, seqnum 8, immediate 1, retransmittable 1, **priority 2**, reserved 4
//!   (the reference generators and `-DDO_NACK_TRACKING` translator; priority is ours and sits in
//!   the two high reserved bits, so reference reports read as low priority).
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
//! translator and the collector need (CRC-32/ISO-HDLC over the key's little-endian bytes).

use crate::error::{Error, Result, need, space};
use crate::field::{set_u16, set_u32, set_u64};
use crate::spec::Header;

/// The fields of every DTA header, from the header's own first byte.
pub mod field {
    /// The short base header (reference reporter).
    pub mod base_short {
        use crate::spec::Field;

        /// Opcode.
        pub const OPCODE: Field = Field::bytes("opcode", 0, 1);
        /// Immediate flag.
        pub const IMMEDIATE: Field = Field::new("immediate", 8, 1);
        /// Reserved.
        pub const RESERVED: Field = Field::new("reserved", 9, 7);
    }

    /// The long base header (reference generators; priority ours).
    pub mod base_long {
        use crate::spec::Field;

        /// Opcode.
        pub const OPCODE: Field = Field::bytes("opcode", 0, 1);
        /// Sequence number.
        pub const SEQNUM: Field = Field::bytes("seqnum", 1, 1);
        /// Immediate flag.
        pub const IMMEDIATE: Field = Field::new("immediate", 16, 1);
        /// Retransmittable flag.
        pub const RETRANSMITTABLE: Field = Field::new("retransmittable", 17, 1);
        /// Priority (our extension, the two high reserved bits).
        pub const PRIORITY: Field = Field::new("priority", 18, 2);
        /// Reserved.
        pub const RESERVED: Field = Field::new("reserved", 20, 4);
    }

    /// Key-Write.
    pub mod keywrite {
        use crate::spec::Field;

        /// Redundancy N.
        pub const REDUNDANCY: Field = Field::bytes("redundancy", 0, 1);
        /// Key.
        pub const KEY: Field = Field::bytes("key", 1, 4);
        /// Data of the default 4-byte build (12 and 28 bytes in the larger builds).
        pub const DATA: Field = Field::bytes("data", 5, 4);
    }

    /// Key-Increment.
    pub mod keyincrement {
        use crate::spec::Field;

        /// Redundancy N.
        pub const REDUNDANCY: Field = Field::bytes("redundancy", 0, 1);
        /// Key.
        pub const KEY: Field = Field::bytes("key", 1, 4);
        /// Increment.
        pub const COUNTER: Field = Field::bytes("counter", 5, 8);
    }

    /// Append.
    pub mod append {
        use crate::spec::Field;

        /// List ID.
        pub const LIST_ID: Field = Field::bytes("list_id", 0, 4);
        /// Datum.
        pub const DATA: Field = Field::bytes("data", 4, 4);
    }

    /// Postcarder.
    pub mod postcarder {
        use crate::spec::Field;

        /// Key.
        pub const KEY: Field = Field::bytes("key", 0, 4);
        /// Hop number.
        pub const HOP: Field = Field::bytes("hop", 4, 1);
        /// Datum.
        pub const DATA: Field = Field::bytes("data", 5, 4);
    }

    /// Sketch-Merge (our extension), before its counters.
    pub mod sketch_merge {
        use crate::spec::Field;

        /// Sketch ID.
        pub const SKETCH_ID: Field = Field::bytes("sketch_id", 0, 2);
        /// Reporter ID.
        pub const REPORTER_ID: Field = Field::bytes("reporter_id", 2, 2);
        /// Column.
        pub const COLUMN: Field = Field::bytes("column", 4, 4);
        /// 32-bit counters that follow.
        pub const COUNTER_COUNT: Field = Field::bytes("counter_count", 8, 2);
        /// Merge operation.
        pub const MERGE_OP: Field = Field::bytes("merge_op", 10, 1);
        /// Reserved.
        pub const RESERVED: Field = Field::bytes("reserved", 11, 1);
    }

    /// NACK (translator → reporter).
    pub mod nack {
        use crate::spec::Field;

        /// Last in-order sequence number.
        pub const SEQNUM: Field = Field::bytes("seqnum", 0, 1);
        /// NACK flag.
        pub const NACK: Field = Field::new("nack", 8, 1);
        /// Slow-down flag (our extension).
        pub const SLOW_DOWN: Field = Field::new("slow_down", 9, 1);
        /// Reserved.
        pub const RESERVED: Field = Field::new("reserved", 10, 6);
    }
}

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
        field::base_long::RESERVED,
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
    fields: &[field::nack::SEQNUM, field::nack::NACK, field::nack::SLOW_DOWN, field::nack::RESERVED],
    len: NACK_LEN,
};

/// Length of the short base header.
pub const SHORT_BASE_LEN: usize = 2;
/// Length of the long base header.
pub const LONG_BASE_LEN: usize = 3;
/// Length of a DTA NACK.
pub const NACK_LEN: usize = 2;
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
}

// ---------------------------------------------------------------------------------------------
// Views

/// A read/write view of a DTA report: base header of the given form, then the sub-header.
#[derive(Debug, Clone)]
pub struct DtaPacket<T: AsRef<[u8]>> {
    buffer: T,
    form: BaseForm,
}

impl<T: AsRef<[u8]>> DtaPacket<T> {
    /// Wrap a buffer without checking it; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T, form: BaseForm) -> Self {
        Self { buffer, form }
    }

    /// Wrap a buffer after checking it holds the base header.
    pub fn new_checked(buffer: T, form: BaseForm) -> Result<Self> {
        need("dta.base", form.len(), buffer.as_ref().len())?;
        Ok(Self { buffer, form })
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The base form.
    pub const fn form(&self) -> BaseForm {
        self.form
    }

    /// Raw opcode byte.
    pub fn opcode(&self) -> u8 {
        field::base_long::OPCODE.get_u8(self.buffer.as_ref())
    }

    fn flags(&self) -> u8 {
        self.buffer.as_ref()[self.form.len() - 1]
    }

    /// Immediate flag: the collector's CPU should be told of this report.
    pub fn immediate(&self) -> bool {
        field::base_long::IMMEDIATE.get_bool(&[0, 0, self.flags()])
    }

    /// Sequence number (long form only).
    pub fn seqnum(&self) -> Option<u8> {
        (self.form == BaseForm::Long).then(|| field::base_long::SEQNUM.get_u8(self.buffer.as_ref()))
    }

    /// Retransmittable flag (long form only; false in the short form).
    pub fn retransmittable(&self) -> bool {
        self.form == BaseForm::Long && field::base_long::RETRANSMITTABLE.get_bool(self.buffer.as_ref())
    }

    /// Raw 2-bit priority (long form only; 0 in the short form).
    pub fn priority_bits(&self) -> u8 {
        if self.form == BaseForm::Long { field::base_long::PRIORITY.get_u8(self.buffer.as_ref()) } else { 0 }
    }

    /// The bytes after the base header.
    pub fn primitive(&self) -> &[u8] {
        &self.buffer.as_ref()[self.form.len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DtaPacket<T> {
    /// Set the sequence number (long form only; does nothing on the short form).
    pub fn set_seqnum(&mut self, s: u8) {
        if self.form == BaseForm::Long {
            field::base_long::SEQNUM.set_u8(self.buffer.as_mut(), s);
        }
    }

    /// The bytes after the base header, writable.
    pub fn primitive_mut(&mut self) -> &mut [u8] {
        let h = self.form.len();
        &mut self.buffer.as_mut()[h..]
    }
}

fixed_view!(
    /// A view of a Key-Write sub-header: redundancy, key, then the data bytes.
    KeyWriteHeader, 9, "dta.keywrite"
);

impl<T: AsRef<[u8]>> KeyWriteHeader<T> {
    /// Redundancy N: how many copies to write.
    pub fn redundancy(&self) -> u8 {
        field::keywrite::REDUNDANCY.get_u8(self.buffer.as_ref())
    }
    /// Key.
    pub fn key(&self) -> u32 {
        field::keywrite::KEY.get_u32(self.buffer.as_ref())
    }
    /// Everything after the key (the data, and any trailing bytes).
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::keywrite::DATA.byte()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> KeyWriteHeader<T> {
    /// Set the redundancy.
    pub fn set_redundancy(&mut self, n: u8) {
        field::keywrite::REDUNDANCY.set_u8(self.buffer.as_mut(), n);
    }
    /// Set the key.
    pub fn set_key(&mut self, k: u32) {
        field::keywrite::KEY.set_u32(self.buffer.as_mut(), k);
    }
    /// The data bytes (and anything after them), writable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::keywrite::DATA.byte()..]
    }
}

fixed_view!(
    /// A view of a Key-Increment sub-header.
    KeyIncrementHeader, 13, "dta.keyincrement"
);

impl<T: AsRef<[u8]>> KeyIncrementHeader<T> {
    /// Redundancy N.
    pub fn redundancy(&self) -> u8 {
        field::keyincrement::REDUNDANCY.get_u8(self.buffer.as_ref())
    }
    /// Key.
    pub fn key(&self) -> u32 {
        field::keyincrement::KEY.get_u32(self.buffer.as_ref())
    }
    /// The increment.
    pub fn counter(&self) -> u64 {
        field::keyincrement::COUNTER.get_u64(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> KeyIncrementHeader<T> {
    /// Set the redundancy.
    pub fn set_redundancy(&mut self, n: u8) {
        field::keyincrement::REDUNDANCY.set_u8(self.buffer.as_mut(), n);
    }
    /// Set the key.
    pub fn set_key(&mut self, k: u32) {
        field::keyincrement::KEY.set_u32(self.buffer.as_mut(), k);
    }
    /// Set the increment.
    pub fn set_counter(&mut self, c: u64) {
        field::keyincrement::COUNTER.set_u64(self.buffer.as_mut(), c);
    }
}

fixed_view!(
    /// A view of an Append sub-header.
    AppendHeader, 8, "dta.append"
);

impl<T: AsRef<[u8]>> AppendHeader<T> {
    /// List ID.
    pub fn list_id(&self) -> u32 {
        field::append::LIST_ID.get_u32(self.buffer.as_ref())
    }
    /// Datum.
    pub fn data(&self) -> u32 {
        field::append::DATA.get_u32(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AppendHeader<T> {
    /// Set the list ID.
    pub fn set_list_id(&mut self, l: u32) {
        field::append::LIST_ID.set_u32(self.buffer.as_mut(), l);
    }
    /// Set the datum.
    pub fn set_data(&mut self, d: u32) {
        field::append::DATA.set_u32(self.buffer.as_mut(), d);
    }
}

fixed_view!(
    /// A view of a Postcarder sub-header.
    PostcarderHeader, 9, "dta.postcarder"
);

impl<T: AsRef<[u8]>> PostcarderHeader<T> {
    /// Flow key.
    pub fn key(&self) -> u32 {
        field::postcarder::KEY.get_u32(self.buffer.as_ref())
    }
    /// Hop number (1-based in the reference).
    pub fn hop(&self) -> u8 {
        field::postcarder::HOP.get_u8(self.buffer.as_ref())
    }
    /// The hop's value.
    pub fn data(&self) -> u32 {
        field::postcarder::DATA.get_u32(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PostcarderHeader<T> {
    /// Set the flow key.
    pub fn set_key(&mut self, k: u32) {
        field::postcarder::KEY.set_u32(self.buffer.as_mut(), k);
    }
    /// Set the hop number.
    pub fn set_hop(&mut self, h: u8) {
        field::postcarder::HOP.set_u8(self.buffer.as_mut(), h);
    }
    /// Set the value.
    pub fn set_data(&mut self, d: u32) {
        field::postcarder::DATA.set_u32(self.buffer.as_mut(), d);
    }
}

fixed_view!(
    /// A view of a Sketch-Merge sub-header (our opcode 5): 12 fixed bytes, then the counters.
    SketchMergeHeader, 12, "dta.sketchmerge"
);

impl<T: AsRef<[u8]>> SketchMergeHeader<T> {
    /// Sketch ID.
    pub fn sketch_id(&self) -> u16 {
        field::sketch_merge::SKETCH_ID.get_u16(self.buffer.as_ref())
    }
    /// Reporter ID.
    pub fn reporter_id(&self) -> u16 {
        field::sketch_merge::REPORTER_ID.get_u16(self.buffer.as_ref())
    }
    /// Index of the first column carried.
    pub fn column(&self) -> u32 {
        field::sketch_merge::COLUMN.get_u32(self.buffer.as_ref())
    }
    /// Number of 32-bit counters that follow.
    pub fn counter_count(&self) -> u16 {
        field::sketch_merge::COUNTER_COUNT.get_u16(self.buffer.as_ref())
    }
    /// Raw merge operation.
    pub fn merge_op(&self) -> u8 {
        field::sketch_merge::MERGE_OP.get_u8(self.buffer.as_ref())
    }
    /// Counter `i`, if within the buffer.
    pub fn counter(&self, i: usize) -> Option<u32> {
        let at = SKETCH_MERGE.len + 4 * i;
        let b = self.buffer.as_ref();
        (at + 4 <= b.len()).then(|| crate::field::u32_at(b, at))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SketchMergeHeader<T> {
    /// Set counter `i`; returns `false` (and writes nothing) past the buffer.
    pub fn set_counter(&mut self, i: usize, v: u32) -> bool {
        let at = SKETCH_MERGE.len + 4 * i;
        let b = self.buffer.as_mut();
        let fits = at + 4 <= b.len();
        if fits {
            set_u32(b, at, v);
        }
        fits
    }
}

fixed_view!(
    /// A view of a DTA NACK (translator → reporter).
    NackHeader, 2, "dta.nack"
);

impl<T: AsRef<[u8]>> NackHeader<T> {
    /// The last in-order sequence number the translator holds.
    pub fn seqnum(&self) -> u8 {
        field::nack::SEQNUM.get_u8(self.buffer.as_ref())
    }
    /// NACK flag.
    pub fn nack(&self) -> bool {
        field::nack::NACK.get_bool(self.buffer.as_ref())
    }
    /// Slow-down flag (our extension, the high reserved bit).
    pub fn slow_down(&self) -> bool {
        field::nack::SLOW_DOWN.get_bool(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NackHeader<T> {
    /// Set the sequence number.
    pub fn set_seqnum(&mut self, s: u8) {
        field::nack::SEQNUM.set_u8(self.buffer.as_mut(), s);
    }
    /// Set the NACK flag (reserved bits zero).
    pub fn set_nack(&mut self, n: bool) {
        self.buffer.as_mut()[field::nack::NACK.byte()] = field::nack::NACK.place_u8(u8::from(n));
    }
}

// ---------------------------------------------------------------------------------------------
// Reprs

/// How Sketch-Merge combines a reporter's counters with the column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MergeOp {
    /// Element-wise sum (Count-Min, Count sketches).
    Sum = 0,
    /// Element-wise maximum (HyperLogLog registers).
    Max = 1,
    /// Element-wise minimum.
    Min = 2,
}

impl MergeOp {
    /// Decode; unknown values are [`Error::Unsupported`].
    pub const fn from_u8(v: u8) -> Result<Self> {
        Ok(match v {
            0 => Self::Sum,
            1 => Self::Max,
            2 => Self::Min,
            _ => {
                return Err(Error::Unsupported { field: "dta.sketchmerge.merge_op", value: v as u64 });
            }
        })
    }

    /// Merge one counter.
    pub const fn apply(self, a: u32, b: u32) -> u32 {
        match self {
            Self::Sum => a.wrapping_add(b),
            Self::Max => {
                if a > b {
                    a
                } else {
                    b
                }
            }
            Self::Min => {
                if a < b {
                    a
                } else {
                    b
                }
            }
        }
    }
}

/// One primitive's sub-header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive<'a> {
    /// Key-Write: store `data` under `key` in N slots.
    KeyWrite {
        /// Redundancy N.
        redundancy: u8,
        /// Key.
        key: u32,
        /// Data, exactly the configured length.
        data: &'a [u8],
    },
    /// Append `data` to list `list_id`.
    Append {
        /// List ID.
        list_id: u32,
        /// Datum.
        data: u32,
    },
    /// Key-Increment: add `counter` to the N slots of `key`.
    KeyIncrement {
        /// Redundancy N.
        redundancy: u8,
        /// Key.
        key: u32,
        /// Increment.
        counter: u64,
    },
    /// Postcarder: one hop's value of a flow's path.
    Postcarder {
        /// Flow key.
        key: u32,
        /// Hop number.
        hop: u8,
        /// Value.
        data: u32,
    },
    /// Sketch-Merge: a run of counters of one sketch column from one reporter.
    SketchMerge {
        /// Sketch ID.
        sketch_id: u16,
        /// Reporter ID.
        reporter_id: u16,
        /// First column.
        column: u32,
        /// Merge operation.
        op: MergeOp,
        /// Counters, big-endian 32-bit each (length a multiple of 4).
        counters: &'a [u8],
    },
}

impl Primitive<'_> {
    /// The opcode of this primitive.
    pub const fn opcode(&self) -> Opcode {
        match self {
            Self::KeyWrite { .. } => Opcode::KeyWrite,
            Self::Append { .. } => Opcode::Append,
            Self::KeyIncrement { .. } => Opcode::KeyIncrement,
            Self::Postcarder { .. } => Opcode::Postcarder,
            Self::SketchMerge { .. } => Opcode::SketchMerge,
        }
    }

    /// Sub-header length.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Self::KeyWrite { data, .. } => field::keywrite::DATA.byte() + data.len(),
            Self::Append { .. } => APPEND.len,
            Self::KeyIncrement { .. } => KEYINCREMENT.len,
            Self::Postcarder { .. } => POSTCARDER.len,
            Self::SketchMerge { counters, .. } => SKETCH_MERGE.len + counters.len(),
        }
    }
}

/// A parsed DTA report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DtaRepr<'a> {
    /// Immediate flag.
    pub immediate: bool,
    /// Sequencing fields: `Some` for the long base form, `None` for the short one.
    pub seq: Option<Sequence>,
    /// The primitive.
    pub primitive: Primitive<'a>,
}

impl<'a> DtaRepr<'a> {
    /// Parse a report (the UDP payload). Bytes after the sub-header are ignored, as the
    /// reference translator ignores them.
    ///
    /// Fields are read at fixed offsets after one length check per sub-header (the translator
    /// parses every report with this; always inlined, so the report's fields stay in registers
    /// instead of going through a returned struct in memory).
    #[inline(always)]
    pub fn parse(buf: &'a [u8], format: Format) -> Result<Self> {
        let base = format.base.len();
        need("dta.base", base, buf.len())?;
        let opcode = Opcode::from_u8(buf[field::base_long::OPCODE.byte()])?;
        // The flags byte: the last of either form; the long form's fields at their offsets.
        let flags = [0, 0, buf[base - 1]];
        let seq = match format.base {
            BaseForm::Short => None,
            BaseForm::Long => Some(Sequence {
                seqnum: buf[field::base_long::SEQNUM.byte()],
                retransmittable: field::base_long::RETRANSMITTABLE.get_bool(&flags),
                priority: Priority::from_bits(field::base_long::PRIORITY.get_u8(&flags))?,
            }),
        };
        let body = &buf[base..];
        let be32 = |b: &[u8], i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let primitive = match opcode {
            Opcode::KeyWrite => {
                use field::keywrite::*;
                need("dta.keywrite", KEYWRITE.len, body.len())?;
                let n = format.keywrite_data_len;
                let at = DATA.byte();
                need("dta.keywrite.data", n, body.len() - at)?;
                Primitive::KeyWrite {
                    redundancy: body[REDUNDANCY.byte()],
                    key: be32(body, KEY.byte()),
                    data: &body[at..at + n],
                }
            }
            Opcode::Append => {
                use field::append::*;
                let b = body.first_chunk::<{ APPEND.len }>().ok_or(Error::Truncated {
                    field: "dta.append",
                    need: APPEND.len,
                    have: body.len(),
                })?;
                Primitive::Append { list_id: be32(b, LIST_ID.byte()), data: be32(b, DATA.byte()) }
            }
            Opcode::KeyIncrement => {
                use field::keyincrement::*;
                let b = body.first_chunk::<{ KEYINCREMENT.len }>().ok_or(Error::Truncated {
                    field: "dta.keyincrement",
                    need: KEYINCREMENT.len,
                    have: body.len(),
                })?;
                let c = COUNTER.get_u64(b);
                Primitive::KeyIncrement {
                    redundancy: b[REDUNDANCY.byte()],
                    key: be32(b, KEY.byte()),
                    counter: c,
                }
            }
            Opcode::Postcarder => {
                use field::postcarder::*;
                let b = body.first_chunk::<{ POSTCARDER.len }>().ok_or(Error::Truncated {
                    field: "dta.postcarder",
                    need: POSTCARDER.len,
                    have: body.len(),
                })?;
                Primitive::Postcarder {
                    key: be32(b, KEY.byte()),
                    hop: b[HOP.byte()],
                    data: be32(b, DATA.byte()),
                }
            }
            Opcode::SketchMerge => {
                let h = SketchMergeHeader::new_checked(body)?;
                let op = MergeOp::from_u8(h.merge_op())?;
                let n = 4 * usize::from(h.counter_count());
                need("dta.sketchmerge.counter_count", SKETCH_MERGE.len + n, body.len())?;
                Primitive::SketchMerge {
                    sketch_id: h.sketch_id(),
                    reporter_id: h.reporter_id(),
                    column: h.column(),
                    op,
                    counters: &body[SKETCH_MERGE.len..SKETCH_MERGE.len + n],
                }
            }
        };
        Ok(Self { immediate: field::base_long::IMMEDIATE.get_bool(&flags), seq, primitive })
    }

    /// The base form this report is emitted in.
    pub const fn form(&self) -> BaseForm {
        if self.seq.is_some() { BaseForm::Long } else { BaseForm::Short }
    }

    /// Length of base header and sub-header.
    pub const fn buffer_len(&self) -> usize {
        self.form().len() + self.primitive.buffer_len()
    }

    /// Write the report. Sketch-Merge counters must be whole 32-bit words, at most 65 535.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        if let Primitive::SketchMerge { counters, .. } = self.primitive
            && (!counters.len().is_multiple_of(4) || counters.len() / 4 > usize::from(u16::MAX))
        {
            return Err(Error::Invalid {
                field: "dta.sketchmerge.counter_count",
                value: counters.len() as u64,
            });
        }
        space("dta", self.buffer_len(), buf.len())?;
        buf[field::base_long::OPCODE.byte()] = self.primitive.opcode() as u8;
        let at = match self.seq {
            None => {
                use field::base_short::*;
                buf[IMMEDIATE.byte()] = IMMEDIATE.place_u8(u8::from(self.immediate));
                SHORT_BASE_LEN
            }
            Some(s) => {
                use field::base_long::*;
                buf[SEQNUM.byte()] = s.seqnum;
                buf[IMMEDIATE.byte()] = IMMEDIATE.place_u8(u8::from(self.immediate))
                    | RETRANSMITTABLE.place_u8(u8::from(s.retransmittable))
                    | PRIORITY.place_u8(s.priority as u8);
                LONG_BASE_LEN
            }
        };
        let b = &mut buf[at..];
        match self.primitive {
            Primitive::KeyWrite { redundancy, key, data } => {
                use field::keywrite::*;
                b[REDUNDANCY.byte()] = redundancy;
                set_u32(b, KEY.byte(), key);
                b[DATA.byte()..DATA.byte() + data.len()].copy_from_slice(data);
            }
            Primitive::Append { list_id, data } => {
                set_u32(b, field::append::LIST_ID.byte(), list_id);
                set_u32(b, field::append::DATA.byte(), data);
            }
            Primitive::KeyIncrement { redundancy, key, counter } => {
                use field::keyincrement::*;
                b[REDUNDANCY.byte()] = redundancy;
                set_u32(b, KEY.byte(), key);
                set_u64(b, COUNTER.byte(), counter);
            }
            Primitive::Postcarder { key, hop, data } => {
                use field::postcarder::*;
                set_u32(b, KEY.byte(), key);
                b[HOP.byte()] = hop;
                set_u32(b, DATA.byte(), data);
            }
            Primitive::SketchMerge { sketch_id, reporter_id, column, op, counters } => {
                use field::sketch_merge::*;
                set_u16(b, SKETCH_ID.byte(), sketch_id);
                set_u16(b, REPORTER_ID.byte(), reporter_id);
                set_u32(b, COLUMN.byte(), column);
                set_u16(b, COUNTER_COUNT.byte(), (counters.len() / 4) as u16);
                b[MERGE_OP.byte()] = op as u8;
                b[RESERVED.byte()] = 0;
                b[SKETCH_MERGE.len..SKETCH_MERGE.len + counters.len()].copy_from_slice(counters);
            }
        }
        Ok(())
    }
}

/// A DTA NACK: "I hold everything up to `seqnum`; resend what follows", and (our extension,
/// in the high reserved bit) "slow down": the translator's path to the collector is over its
/// rate. The reference translator sends `nack` set and the other bits zero; a reference reporter
/// ignores the reserved bits. A message with only `slow_down` set asks for no resend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NackRepr {
    /// Last in-order sequence number.
    pub seqnum: u8,
    /// NACK flag: resend what follows `seqnum`.
    pub nack: bool,
    /// Slow-down flag: reports are being dropped or parked for rate.
    pub slow_down: bool,
}

impl NackRepr {
    /// Parse a NACK (the UDP payload).
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = NackHeader::new_checked(buf)?;
        Ok(Self { seqnum: h.seqnum(), nack: h.nack(), slow_down: h.slow_down() })
    }

    /// Length: 2.
    pub const fn buffer_len(&self) -> usize {
        NACK_LEN
    }

    /// Write the NACK.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        space("dta.nack", NACK_LEN, buf.len())?;
        use field::nack::*;
        buf[SEQNUM.byte()] = self.seqnum;
        buf[NACK.byte()] = NACK.place_u8(u8::from(self.nack)) | SLOW_DOWN.place_u8(u8::from(self.slow_down));
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Collector addressing

/// The Key-Write checksum stored with each slot: CRC-32/ISO-HDLC over the key's four
/// little-endian bytes (the reference byte-swaps the key before hashing).
#[inline]
pub fn keywrite_checksum(key: u32) -> u32 {
    KeyHash::new(key).checksum()
}

/// The slot hash of copy `n` of `key`: CRC-32/ISO-HDLC over the key's little-endian bytes and
/// the byte `n`. Mask it with the (power-of-two) slot count to get the slot index.
#[inline]
pub fn keywrite_slot_hash(key: u32, n: u8) -> u32 {
    KeyHash::new(key).slot(n)
}

/// A key's Key-Write hashes, sharing the CRC over its four bytes: the checksum is the CRC of
/// the key, and copy `n`'s slot hash continues it with one more byte.
///
/// Hand-written rather than `crc32fast::hash`: these inputs are 4 and 5 bytes, where one
/// slice-by-4 step (four independent table lookups) and one byte step cost a handful of
/// instructions and crc32fast's per-call setup dominates (the translator hashes every report).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHash {
    state: u32,
}

impl KeyHash {
    /// The CRC state after the key's little-endian bytes.
    #[inline]
    pub fn new(key: u32) -> Self {
        Self { state: crate::crc32::step4(!0, key) }
    }

    /// The key's checksum.
    #[inline]
    pub const fn checksum(&self) -> u32 {
        !self.state
    }

    /// The slot hash of copy `n`.
    #[inline]
    pub fn slot(&self, n: u8) -> u32 {
        !crate::crc32::step(self.state, n)
    }
}

/// Spread keys that differ in a few bits over the slot hash's range: murmur3's 32-bit
/// finaliser, a bijection on `u32`.
///
/// Why a reporter needs it: the slot hash is a CRC of the key, affine over GF(2), so keys that
/// differ in a few bits (consecutive numbers, a CRC of neighbouring 5-tuples) land in a small
/// affine subspace of slots and collide in whole groups — and since `CRC(k ‖ n) = CRC(k ‖ 0) ⊕
/// c_n`, in every copy at once. The multiply-xorshift finaliser is not affine, so scrambled keys
/// spread over the slots as random keys do.
#[inline]
pub const fn scramble_key(x: u32) -> u32 {
    let mut h = x;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// Which of `n` collectors holds `key` (Key-Write and Key-Increment spread keys over collectors
/// by hash): CRC-32C of the key's little-endian bytes, modulo `n`. A different CRC than the slot
/// hash, so a collector's keys still spread over all its slots. `n` must be at least 1.
#[inline]
pub fn keywrite_collector(key: u32, n: usize) -> usize {
    let c = crc32c(&key.to_le_bytes());
    (c as usize) % n.max(1)
}

/// CRC-32C (Castagnoli), bitwise: only a few bytes per report go through it.
const fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    let mut i = 0;
    while i < data.len() {
        crc ^= data[i] as u32;
        let mut b = 0;
        while b < 8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82f6_3b78 } else { crc >> 1 };
            b += 1;
        }
        i += 1;
    }
    !crc
}

/// The collector memory layouts both the translator and the collector's queries depend on
/// (design `DTA.md`, "Memory layouts"). The defaults are the reference implementation's.
pub mod layout {
    use super::KeyHash;

    /// Bytes of a Key-Write slot holding `data_len` bytes of data: the 4-byte checksum and the
    /// data, rounded up to a power of two (8 for the default 4 bytes of data).
    pub const fn keywrite_slot_len(data_len: usize) -> usize {
        (4 + data_len).next_power_of_two()
    }

    /// Write a Key-Write slot for the key `hash` was made from: the checksum as a
    /// little-endian `u32` (as the reference stores it), then the data as reported (network
    /// order), then zeros.
    #[inline]
    pub fn keywrite_slot(hash: &KeyHash, data: &[u8], slot: &mut [u8]) {
        slot[..4].copy_from_slice(&hash.checksum().to_le_bytes());
        let n = data.len().min(slot.len().saturating_sub(4));
        crate::field::copy_short(&mut slot[4..], &data[..n]);
        crate::field::zero_short(&mut slot[4 + n..]);
    }

    /// A Key-Increment slot: one 64-bit counter, little-endian (the responder's byte order).
    pub const KEYINCREMENT_SLOT_LEN: usize = 8;

    /// An Append entry: a 32-bit datum, little-endian (the reference byte-swaps Append data).
    pub const APPEND_ENTRY_LEN: usize = 4;

    /// A Postcarder slot: 32 bytes, of which 5 hop values (4 bytes each, network order) and,
    /// our extension in the reference's padding, the key's Key-Write checksum (little-endian)
    /// at offset 20, so a query can tell whose path a slot holds.
    pub const POSTCARDER_SLOT_LEN: usize = 32;
    /// Hops a Postcarder slot holds.
    pub const POSTCARDER_HOPS: usize = 5;
    /// Bytes of a Postcarder slot actually written: values and checksum.
    pub const POSTCARDER_WRITE_LEN: usize = 24;

    /// The slot of `key`'s path in a Postcarder store of `slots` (a power of two) slots: its
    /// Key-Write checksum, masked (the reference's `CRC32(key) & mask`).
    pub fn postcarder_slot_index(key: u32, slots: u64) -> u64 {
        u64::from(KeyHash::new(key).checksum()) & slots.saturating_sub(1)
    }

    /// Write the 24 meaningful bytes of a Postcarder slot.
    pub fn postcarder_slot(key: u32, hops: &[u32; POSTCARDER_HOPS], slot: &mut [u8]) {
        for (i, h) in hops.iter().enumerate() {
            slot[4 * i..4 * i + 4].copy_from_slice(&h.to_be_bytes());
        }
        slot[20..24].copy_from_slice(&KeyHash::new(key).checksum().to_le_bytes());
    }

    /// Byte offset of sketch column `column` (each column `rows` counters of 4 bytes,
    /// little-endian, columns contiguous).
    pub const fn sketch_column_offset(column: u32, rows: u16) -> u64 {
        column as u64 * rows as u64 * 4
    }

    /// The slot of copy `n` of a key in a Key-Write or Key-Increment store of `slots` slots (a
    /// power of two): the copy's slot hash, masked.
    #[inline]
    pub fn key_slot_index(hash: &KeyHash, n: u8, slots: u64) -> u64 {
        hash.slot(n) as u64 & (slots - 1)
    }

    /// The column a key counts in, in row `row` of a Count-Min sketch of `columns` columns:
    /// the slot hash of copy `row`, modulo `columns` (reporters building sketches and the
    /// collector's point estimate agree on it).
    #[inline]
    pub fn sketch_column_for(key: u32, row: u16, columns: u32) -> u32 {
        KeyHash::new(key).slot(row as u8) % columns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_spread_over_collectors_and_layouts_hold() {
        let mut counts = [0u32; 3];
        for k in 0..30_000u32 {
            counts[keywrite_collector(k, 3)] += 1;
        }
        assert!(counts.iter().all(|&c| (9_000..11_000).contains(&c)), "{counts:?}");
        // CRC-32C check value.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(layout::keywrite_slot_len(4), 8);
        assert_eq!(layout::keywrite_slot_len(12), 16);
        assert_eq!(layout::keywrite_slot_len(28), 32);
        let mut slot = [0xffu8; 8];
        layout::keywrite_slot(&KeyHash::new(1), &[0xaa, 0xbb, 0xcc, 0xdd], &mut slot);
        assert_eq!(slot, [0x79, 0xb8, 0xf8, 0x99, 0xaa, 0xbb, 0xcc, 0xdd]);
        let mut nack = [0u8; 2];
        NackRepr { seqnum: 7, nack: false, slow_down: true }.emit(&mut nack).unwrap();
        assert_eq!(nack, [7, 0x40]);
    }

    #[test]
    fn design_test_vectors() {
        // ../shared/design/DTA.md, "Test vectors".
        let vectors: [(u32, u32, [u32; 4]); 3] = [
            (0, 0x2144df1c, [0xc622f71d, 0xb125c78b, 0x282c9631, 0x5f2ba6a7]),
            (1, 0x99f8b879, [0xfb42dead, 0x8c45ee3b, 0x154cbf81, 0x624b8f17]),
            (123456, 0x092db2ae, [0xe3654cd0, 0x94627c46, 0x0d6b2dfc, 0x7a6c1d6a]),
        ];
        for (key, checksum, slots) in vectors {
            assert_eq!(keywrite_checksum(key), checksum, "checksum of key {key}");
            for (n, slot) in slots.into_iter().enumerate() {
                assert_eq!(keywrite_slot_hash(key, n as u8), slot, "slot hash of key {key}, n={n}");
            }
        }
        // The table CRC agrees with crc32fast on these short inputs.
        for key in [0u32, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(keywrite_checksum(key), crc32fast::hash(&key.to_le_bytes()));
            let k = key.to_le_bytes();
            for n in [0u8, 3, 255] {
                assert_eq!(keywrite_slot_hash(key, n), crc32fast::hash(&[k[0], k[1], k[2], k[3], n]));
            }
        }
        // "key 1: slot 173 of 256" for n = 0.
        assert_eq!(keywrite_slot_hash(1, 0) & 255, 173);
    }

    #[test]
    fn priority_rides_in_the_reserved_bits() {
        let r = DtaRepr {
            immediate: true,
            seq: Some(Sequence { seqnum: 9, retransmittable: true, priority: Priority::High }),
            primitive: Primitive::Append { list_id: 1, data: 2 },
        };
        let mut b = [0u8; 11];
        r.emit(&mut b).unwrap();
        assert_eq!(&b[..3], &[2, 9, 0b1110_0000]);
        assert_eq!(DtaRepr::parse(&b, Format::default()).unwrap(), r);
        b[2] |= 0x30;
        assert_eq!(DtaRepr::parse(&b, Format::default()).unwrap_err().field(), "dta.priority");
    }

    #[test]
    fn bad_reports_name_their_field() {
        let f = Format::default();
        assert_eq!(
            DtaRepr::parse(&[9, 0, 0, 0], f).unwrap_err(),
            Error::Unsupported { field: "dta.opcode", value: 9 }
        );
        assert_eq!(DtaRepr::parse(&[1, 0], f).unwrap_err().field(), "dta.base");
        assert_eq!(DtaRepr::parse(&[1, 0, 0, 2, 0, 0, 0, 1, 0xaa], f).unwrap_err().field(), "dta.keywrite");
        let wide = Format { keywrite_data_len: 12, ..f };
        assert_eq!(
            DtaRepr::parse(&[1, 0, 0, 2, 0, 0, 0, 1, 1, 2, 3, 4], wide).unwrap_err().field(),
            "dta.keywrite.data"
        );
        let mut sm = [0u8; 3 + 12 + 4];
        sm[0] = 5;
        sm[3 + 9] = 2; // two counters claimed, one present
        assert_eq!(DtaRepr::parse(&sm, f).unwrap_err().field(), "dta.sketchmerge.counter_count");
        sm[3 + 9] = 1;
        sm[3 + 10] = 7;
        assert_eq!(DtaRepr::parse(&sm, f).unwrap_err().field(), "dta.sketchmerge.merge_op");
    }
}
