//! Reprs: the parsed form of a report ([`DtaRepr`], its [`Primitive`]) and of a NACK.

use super::*;

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
                epoch: field::base_long::EPOCH.get_u8(&flags),
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
                    | PRIORITY.place_u8(s.priority as u8)
                    | EPOCH.place_u8(s.epoch & 0xf);
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
/// ignores the reserved bits. A message with only `slow_down` set asks for no resend. Our
/// translator says more in the extension ([`NackExt`]): which reports are missing, or which
/// sketch column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NackRepr {
    /// Last in-order sequence number (the report before the first missing one).
    pub seqnum: u8,
    /// NACK flag: resend what follows `seqnum`.
    pub nack: bool,
    /// Slow-down flag: reports are being dropped or parked for rate.
    pub slow_down: bool,
    /// Our extension, if present.
    pub ext: Option<NackExt>,
}

/// What an extended NACK names (our extension; 12 bytes after the NACK, layout in
/// [`field::nack_ext`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NackExt {
    /// Kind 0: `count` reports after the NACK's seqnum are missing (resend exactly those), from
    /// the reporter incarnation `epoch`.
    Reports {
        /// Reports missing, 1..=128.
        count: u8,
        /// The reporter epoch (0..=15).
        epoch: u8,
    },
    /// Kind 1: a sketch column out of order: `reporter_id` should resend `sketch_id`'s columns
    /// after `column` (the last merged in order; `u32::MAX` when none this round).
    Sketch {
        /// The sketch.
        sketch_id: u16,
        /// The reporter.
        reporter_id: u16,
        /// The last column merged in order from it.
        column: u32,
    },
    /// Kind 2: a reporter's [`HelloRepr`] heard — its tracking starts afresh, under `epoch` —
    /// echoing the hello's `nonce` (layout: epoch in the epoch byte, nonce in the column word).
    Hello {
        /// The epoch the reporter announced.
        epoch: u8,
        /// The hello's nonce.
        nonce: u32,
    },
    /// Kind 3 (the NACK's seqnum: the newest number seen): where a reporter's stream stands
    /// at this translator, sent to each active
    /// reporter every few milliseconds (and once more, `final`, when the translator stops).
    /// `settled` reports of the stream, counted from the first number the translator tracks
    /// (`first`), are each settled: written and acknowledged, or counted lost — `lost` of them,
    /// at this translator; none of them is still held. A reporter that hears a new
    /// `incarnation` knows the old translator is gone, and what it had settled. Layout: the
    /// first number in the count byte, flags in the reserved byte (bit 0 `joined`, bit 1
    /// `final`), `settled` over the sketch fields, `incarnation` over the column, then 8 more
    /// bytes: `lost`, `span`.
    Progress {
        /// The stream's epoch.
        epoch: u8,
        /// The stream's first number the translator tracks (0 for a stream tracked from its
        /// start).
        first: u8,
        /// The translator joined the stream mid-way (it restarted while the reporter sent):
        /// `first` is the first number it heard, not the stream's first.
        joined: bool,
        /// The translator is stopping: nothing after `settled` will be taken.
        last: bool,
        /// Reports settled in order, from `first` on.
        settled: u32,
        /// Of them, counted lost at this translator.
        lost: u32,
        /// Numbers passed from `first` to the newest seen (the NACK's seqnum), that one
        /// included: with the newest, where the tracking began in the reporter's numbering.
        span: u32,
        /// The translator's incarnation (a value of its start's own).
        incarnation: u32,
    },
}

/// Opcode of a reporter's hello (our extension, never a report): see [`HelloRepr`].
pub const HELLO_OPCODE: u8 = 6;

/// Length of a hello: the 3-byte long base header and a 4-byte nonce.
pub const HELLO_LEN: usize = 7;

/// A reporter's hello (our extension): sent when it starts, before its first report, to every
/// collector address it reports to (the collector's ToR translator takes it). It says "my
/// stream from this source address and port starts now, numbered from 0 in `epoch`": the
/// translator counts what the previous stream of that source still missed and tracks the new
/// one from scratch, so a restart is never read against the old stream's window whatever
/// epoch it draws. The translator answers with a NACK carrying [`NackExt::Hello`] and the
/// `nonce` (the reporter's proof that this start was heard). Layout: long base header with
/// opcode 6, seqnum 0, flags 0, the epoch in its epoch bits; then the nonce, big-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HelloRepr {
    /// The reporter's epoch for this start (1..=15).
    pub epoch: u8,
    /// A value of this start's own, echoed in the answer.
    pub nonce: u32,
}

impl HelloRepr {
    /// Parse a hello (the UDP payload); an error if it is not one.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        need("dta.hello", HELLO_LEN, buf.len())?;
        if buf[0] != HELLO_OPCODE {
            return Err(Error::Unsupported { field: "dta.opcode", value: u64::from(buf[0]) });
        }
        Ok(Self {
            epoch: field::base_long::EPOCH.get_u8(buf),
            nonce: u32::from_be_bytes([buf[3], buf[4], buf[5], buf[6]]),
        })
    }

    /// Write the hello.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        space("dta.hello", HELLO_LEN, buf.len())?;
        buf[..HELLO_LEN].fill(0);
        buf[0] = HELLO_OPCODE;
        buf[field::base_long::EPOCH.byte()] |= field::base_long::EPOCH.place_u8(self.epoch & 0x0f);
        set_u32(buf, 3, self.nonce);
        Ok(())
    }
}

impl NackRepr {
    /// A plain NACK or slow-down message (no extension), as the reference sends.
    pub const fn plain(seqnum: u8, nack: bool, slow_down: bool) -> Self {
        Self { seqnum, nack, slow_down, ext: None }
    }

    /// Parse a NACK (the UDP payload).
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = NackHeader::new_checked(buf)?;
        let ext = if field::nack::EXTENDED.get_bool(buf) {
            need("dta.nack_ext", NACK_LEN + NACK_EXT_LEN, buf.len())?;
            let e = &buf[NACK_LEN..NACK_LEN + NACK_EXT_LEN];
            use field::nack_ext::*;
            Some(match KIND.get_u8(e) {
                0 => NackExt::Reports { count: COUNT.get_u8(e), epoch: EPOCH.get_u8(e) },
                1 => NackExt::Sketch {
                    sketch_id: SKETCH_ID.get_u16(e),
                    reporter_id: REPORTER_ID.get_u16(e),
                    column: COLUMN.get_u32(e),
                },
                2 => NackExt::Hello { epoch: EPOCH.get_u8(e), nonce: COLUMN.get_u32(e) },
                3 => {
                    let total = NACK_LEN + NACK_EXT_LEN + PROGRESS_EXTRA_LEN;
                    need("dta.nack_ext.progress", total, buf.len())?;
                    let e = &buf[NACK_LEN..total];
                    let flags = FLAGS.get_u8(e);
                    NackExt::Progress {
                        epoch: EPOCH.get_u8(e),
                        first: FIRST.get_u8(e),
                        joined: flags & 1 != 0,
                        last: flags & 2 != 0,
                        settled: SETTLED.get_u32(e),
                        lost: LOST.get_u32(e),
                        span: SPAN.get_u32(e),
                        incarnation: INCARNATION.get_u32(e),
                    }
                }
                k => return Err(Error::Unsupported { field: "dta.nack_ext.kind", value: u64::from(k) }),
            })
        } else {
            None
        };
        Ok(Self { seqnum: h.seqnum(), nack: h.nack(), slow_down: h.slow_down(), ext })
    }

    /// Length: 2, 14 with the extension, 18 with a progress extension.
    pub const fn buffer_len(&self) -> usize {
        match self.ext {
            None => NACK_LEN,
            Some(NackExt::Progress { .. }) => NACK_LEN + NACK_EXT_LEN + PROGRESS_EXTRA_LEN,
            Some(_) => NACK_LEN + NACK_EXT_LEN,
        }
    }

    /// Write the NACK.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        space("dta.nack", self.buffer_len(), buf.len())?;
        {
            use field::nack::*;
            buf[SEQNUM.byte()] = self.seqnum;
            buf[NACK.byte()] = NACK.place_u8(u8::from(self.nack))
                | SLOW_DOWN.place_u8(u8::from(self.slow_down))
                | EXTENDED.place_u8(u8::from(self.ext.is_some()));
        }
        let Some(ext) = self.ext else { return Ok(()) };
        let e = &mut buf[NACK_LEN..self.buffer_len()];
        e.fill(0);
        use field::nack_ext::*;
        match ext {
            NackExt::Reports { count, epoch } => {
                e[COUNT.byte()] = count;
                e[EPOCH.byte()] = epoch;
            }
            NackExt::Sketch { sketch_id, reporter_id, column } => {
                e[KIND.byte()] = 1;
                set_u16(e, SKETCH_ID.byte(), sketch_id);
                set_u16(e, REPORTER_ID.byte(), reporter_id);
                set_u32(e, COLUMN.byte(), column);
            }
            NackExt::Hello { epoch, nonce } => {
                e[KIND.byte()] = 2;
                e[EPOCH.byte()] = epoch;
                set_u32(e, COLUMN.byte(), nonce);
            }
            NackExt::Progress { epoch, first, joined, last, settled, lost, span, incarnation } => {
                e[KIND.byte()] = 3;
                e[EPOCH.byte()] = epoch;
                e[FIRST.byte()] = first;
                e[FLAGS.byte()] = u8::from(joined) | u8::from(last) << 1;
                set_u32(e, SETTLED.byte(), settled);
                set_u32(e, INCARNATION.byte(), incarnation);
                set_u32(e, LOST.byte(), lost);
                set_u32(e, SPAN.byte(), span);
            }
        }
        Ok(())
    }
}
