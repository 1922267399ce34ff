//! The fields of every DTA header, from the header's own first byte.

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
    /// The reporter's epoch (our extension, the four low reserved bits): a reporter picks a
    /// nonzero epoch when it starts, so the translator sees a restart; 0 (a reference
    /// reporter) means none.
    pub const EPOCH: Field = Field::new("epoch", 20, 4);
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
    /// Extended flag (our extension): a [`nack_ext`](super::nack_ext) header follows.
    pub const EXTENDED: Field = Field::new("extended", 10, 1);
    /// Reserved.
    pub const RESERVED: Field = Field::new("reserved", 11, 5);
}

/// The NACK extension (ours), after the 2-byte NACK when its extended flag is set.
pub mod nack_ext {
    use crate::spec::Field;

    /// What is NACKed: 0 a range of reports, 1 a sketch column, 2 a hello answered, 3 a
    /// stream's progress.
    pub const KIND: Field = Field::bytes("kind", 0, 1);
    /// Reports: how many are missing after the NACK's seqnum (1..=128).
    pub const COUNT: Field = Field::bytes("count", 1, 1);
    /// Reports: the reporter epoch the NACK is about.
    pub const EPOCH: Field = Field::bytes("epoch", 2, 1);
    /// Reserved.
    pub const RESERVED: Field = Field::bytes("reserved", 3, 1);
    /// Sketch: the sketch.
    pub const SKETCH_ID: Field = Field::bytes("sketch_id", 4, 2);
    /// Sketch: the reporter whose column is out of order.
    pub const REPORTER_ID: Field = Field::bytes("reporter_id", 6, 2);
    /// Sketch: the last column merged in order from it (`0xffffffff`: none this round).
    pub const COLUMN: Field = Field::bytes("column", 8, 4);
    /// Progress: the stream's first number the translator tracks (in the count byte).
    pub const FIRST: Field = Field::bytes("first", 1, 1);
    /// Progress: flags in the reserved byte (bit 0 joined mid-stream, bit 1 final).
    pub const FLAGS: Field = Field::bytes("flags", 3, 1);
    /// Progress: reports settled in order (bytes 4..8, over the sketch fields).
    pub const SETTLED: Field = Field::bytes("settled", 4, 4);
    /// Progress: the translator's incarnation (bytes 8..12, over the column).
    pub const INCARNATION: Field = Field::bytes("incarnation", 8, 4);
    /// Progress: of the settled reports, those counted lost (4 bytes after the extension).
    pub const LOST: Field = Field::bytes("lost", 12, 4);
    /// Progress: numbers passed since the first tracked, to the newest seen (the NACK's seqnum).
    pub const SPAN: Field = Field::bytes("span", 16, 4);
}
