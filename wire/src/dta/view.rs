//! Views: a DTA report (base header of either form, then its sub-header) and each sub-header,
//! read and written in place.

use super::*;

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
    /// Extended flag (our extension): the NACK extension follows.
    pub fn extended(&self) -> bool {
        field::nack::EXTENDED.get_bool(self.buffer.as_ref())
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
