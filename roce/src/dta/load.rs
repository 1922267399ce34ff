//! [`LoadGen`]: a configured stream of reports of one primitive, numbered and kept by a
//! [`ReportSender`].

use wire::dta::{DtaRepr, MergeOp, Primitive, Priority};

use super::{MAX_REPORT, ReportSender, collector_for};

/// Which primitive a [`LoadGen`] sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadKind {
    /// Key-Write of `redundancy` copies; data is the report's index (big-endian).
    KeyWrite {
        /// N.
        redundancy: u8,
    },
    /// Key-Increment of `redundancy` copies, adding `counter` each time.
    KeyIncrement {
        /// N.
        redundancy: u8,
        /// Increment.
        counter: u64,
    },
    /// Append to `lists` lists (report i goes to list i mod `lists`); data is the index.
    Append {
        /// Lists used.
        lists: u32,
    },
    /// Postcarder: `hops` postcards per key, hop h carrying value `key * 16 + h`.
    Postcarder {
        /// Hops per path (1..=5).
        hops: u8,
    },
    /// Sketch-Merge: this reporter's copy of sketch `sketch_id`, column by column in order,
    /// round after round (report i is column i mod `columns` of round i / `columns`), each
    /// column `rows` counters of [`LoadGen::sketch_counter`]. A sketch NACK (the translator
    /// missed a column) rewinds the stream to the column after the last one merged.
    SketchMerge {
        /// Sketch ID.
        sketch_id: u16,
        /// This reporter's ID (one of the sketch's `reporters`).
        reporter_id: u16,
        /// Counters per column (1..=61).
        rows: u8,
        /// Columns of the sketch.
        columns: u32,
        /// Merge operation.
        op: MergeOp,
    },
}

/// What a load generator sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadSpec {
    /// Primitive.
    pub kind: LoadKind,
    /// Keys cycle through `0..keys` (Key-Write, Key-Increment, Postcarder), offset by `key_base`.
    pub keys: u32,
    /// First key.
    pub key_base: u32,
    /// Priority of every report.
    pub priority: Priority,
    /// Retransmittable (sequence-numbered and kept) reports.
    pub retransmittable: bool,
    /// Immediate flag on one report in this many (0: never).
    pub immediate_every: u64,
    /// Key-Write data length (4, 12 or 28).
    pub keywrite_data_len: usize,
    /// Send [`wire::dta::scramble_key`] of each key instead of the key (keys that spread over
    /// the slots as random keys do, rather than consecutive numbers).
    pub scramble: bool,
}

/// A stream of reports of one primitive, numbered and kept by a [`ReportSender`].
#[derive(Debug, Clone)]
pub struct LoadGen {
    spec: LoadSpec,
    /// The highest index sent or skipped, plus one: the first transmissions are this less
    /// [`skipped`](Self::skipped).
    pub produced: u64,
    /// The index of the next report to send: below `produced` after a sketch rewind.
    at: u64,
    /// Sketch-Merge columns sent again after a rewind.
    pub rewound: u64,
    /// Sketch-Merge columns never sent: skipped forward past them (a translator that had
    /// merged them from a previous incarnation of this reporter ID).
    pub skipped: u64,
    /// The last rewind: its target index and when, so the NACKs of one loss rewind once.
    last_rewind: Option<(u64, u64)>,
    /// The sender: sequence numbers, kept reports, NACK handling.
    pub sender: ReportSender,
}

impl LoadGen {
    /// A generator for `spec` in reporter epoch `epoch`, keeping the last `keep`
    /// retransmittable reports.
    pub fn new(spec: LoadSpec, keep: usize, epoch: u8) -> Self {
        Self {
            spec,
            produced: 0,
            at: 0,
            rewound: 0,
            skipped: 0,
            last_rewind: None,
            sender: ReportSender::new(keep, epoch),
        }
    }

    /// Whether every report up to `count` went out (after any rewind).
    pub fn done(&self, count: u64) -> bool {
        self.at >= count
    }

    /// The index of the next report to send.
    pub fn at(&self) -> u64 {
        self.at
    }

    /// Sketch-Merge: counter `row` of the column of report `i` from `reporter` (a value each
    /// side can compute: the merged sketch is checked against it).
    pub fn sketch_counter(reporter: u16, i: u64, row: usize) -> u32 {
        (i as u32).wrapping_mul(64).wrapping_add(row as u32).wrapping_add(u32::from(reporter) << 24)
    }

    /// A sketch NACK for `sketch_id` from `reporter_id` naming `last`, the last column the
    /// translator merged (`u32::MAX`: none yet; `columns - 1`: the end of a round) at `now`:
    /// go on from the report after the newest produced that carried it — back (a column was
    /// lost), or forward (an old NACK had rewound the stream further than the translator
    /// needed: the columns it names as merged are not sent again). `true` if the stream moved
    /// (a NACK of this generator's sketch and not a repeat, within 1 ms, of the last rewind).
    pub fn on_sketch_nack(&mut self, sketch_id: u16, reporter_id: u16, last: u32, now: u64) -> bool {
        let LoadKind::SketchMerge { sketch_id: s, reporter_id: r, columns, .. } = self.spec.kind else {
            return false;
        };
        if (s, r) != (sketch_id, reporter_id) || self.produced == 0 {
            return false;
        }
        let columns = u64::from(columns.max(1));
        // The newest report produced that carried column `last`; none: from the very start.
        // (Mapped from the newest produced, not from where the stream is now: after a rewind
        // the translator's position is ahead of it, and read against it mapped to nothing, so
        // every NACK sent the stream back to the start — a livelock at 100 k reports/s.)
        let target = if last == u32::MAX || u64::from(last) >= columns {
            0
        } else {
            let newest = self.produced - 1;
            let base = newest - newest % columns + u64::from(last);
            // Ahead of the newest produced: the previous round's column, if there was a
            // previous round; in the first round, the translator has merged further than this
            // stream has gone — what a previous incarnation of this reporter ID sent — and the
            // stream goes forward past it (rewinding to the start instead was a livelock: every
            // column it then sent was behind, NACKed, and sent it back to the start).
            let idx = if base <= newest { base } else { base.checked_sub(columns).unwrap_or(base) };
            idx + 1
        };
        if target == self.at || self.last_rewind.is_some_and(|(t, w)| t == target && now < w + 1_000_000) {
            return false;
        }
        if target < self.at {
            self.last_rewind = Some((target, now));
        }
        if target > self.produced {
            self.skipped += target - self.produced;
            self.produced = target;
        }
        self.at = target;
        true
    }

    /// Key number `k` as sent.
    pub fn key(spec: &LoadSpec, k: u32) -> u32 {
        if spec.scramble { wire::dta::scramble_key(k) } else { k }
    }

    /// The `i`-th report's primitive (data that needs bytes is written into `kw`).
    pub fn primitive<'a>(spec: &LoadSpec, i: u64, kw: &'a mut [u8; MAX_REPORT]) -> Primitive<'a> {
        let keys = u64::from(spec.keys.max(1));
        let key = Self::key(spec, spec.key_base.wrapping_add((i % keys) as u32));
        match spec.kind {
            LoadKind::KeyWrite { redundancy } => {
                let n = spec.keywrite_data_len.clamp(4, 28);
                kw[..n].fill(0);
                kw[n - 4..n].copy_from_slice(&(i as u32).to_be_bytes());
                Primitive::KeyWrite { redundancy, key, data: &kw[..n] }
            }
            LoadKind::KeyIncrement { redundancy, counter } => {
                Primitive::KeyIncrement { redundancy, key, counter }
            }
            LoadKind::Append { lists } => {
                Primitive::Append { list_id: (i % u64::from(lists.max(1))) as u32, data: i as u32 }
            }
            LoadKind::Postcarder { hops } => {
                let hops = u64::from(hops.clamp(1, 5));
                let key = Self::key(spec, spec.key_base.wrapping_add(((i / hops) % keys) as u32));
                let hop = (i % hops) as u8 + 1;
                Primitive::Postcarder { key, hop, data: key.wrapping_mul(16).wrapping_add(u32::from(hop)) }
            }
            LoadKind::SketchMerge { sketch_id, reporter_id, rows, columns, op } => {
                let rows = usize::from(rows.clamp(1, 61));
                for r in 0..rows {
                    kw[4 * r..4 * r + 4]
                        .copy_from_slice(&Self::sketch_counter(reporter_id, i, r).to_be_bytes());
                }
                let column = (i % u64::from(columns.max(1))) as u32;
                Primitive::SketchMerge { sketch_id, reporter_id, column, op, counters: &kw[..4 * rows] }
            }
        }
    }

    /// Write the next report's DTA bytes into `buf`; returns its length and the index of the
    /// collector (of `collectors`) it goes to.
    pub fn next_report(&mut self, buf: &mut [u8], collectors: usize) -> Option<(usize, usize)> {
        let i = self.at;
        let mut kw = [0u8; MAX_REPORT];
        let primitive = Self::primitive(&self.spec, i, &mut kw);
        let seq = self.sender.sequence(self.spec.retransmittable, self.spec.priority);
        let immediate = self.spec.immediate_every != 0 && i.is_multiple_of(self.spec.immediate_every);
        let r = DtaRepr { immediate, seq: Some(seq), primitive };
        let n = self.sender.emit(&r, buf)?;
        self.at += 1;
        if self.at > self.produced {
            self.produced = self.at;
        } else {
            self.rewound += 1;
        }
        Some((n, collector_for(&primitive, collectors)))
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::dta::destination;
    use wire::dta::{Format, MergeOp, NackRepr};

    fn spec(kind: LoadKind) -> LoadSpec {
        LoadSpec {
            kind,
            keys: 10,
            key_base: 100,
            priority: Priority::High,
            retransmittable: true,
            immediate_every: 4,
            keywrite_data_len: 4,
            scramble: false,
        }
    }

    #[test]
    fn every_primitive_is_numbered_mapped_and_parses_back() {
        let kinds = [
            LoadKind::KeyWrite { redundancy: 2 },
            LoadKind::KeyIncrement { redundancy: 3, counter: 5 },
            LoadKind::Append { lists: 4 },
            LoadKind::Postcarder { hops: 5 },
        ];
        for kind in kinds {
            let mut g = LoadGen::new(spec(kind), 8, 1);
            let mut buf = [0u8; 64];
            for i in 0..20u64 {
                let (n, c) = g.next_report(&mut buf, 3).unwrap();
                let r = DtaRepr::parse(&buf[..n], Format::default()).unwrap();
                assert_eq!(r.seq.unwrap().seqnum, i as u8, "{kind:?}");
                assert_eq!(r.immediate, i % 4 == 0);
                assert_eq!(c, collector_for(&r.primitive, 3));
                match r.primitive {
                    Primitive::KeyWrite { redundancy, key, data } => {
                        assert_eq!((redundancy, key), (2, 100 + (i % 10) as u32));
                        assert_eq!(data, (i as u32).to_be_bytes());
                    }
                    Primitive::KeyIncrement { redundancy, counter, .. } => {
                        assert_eq!((redundancy, counter), (3, 5))
                    }
                    Primitive::Append { list_id, data } => {
                        assert_eq!((list_id, data), ((i % 4) as u32, i as u32))
                    }
                    Primitive::Postcarder { key, hop, data } => {
                        assert_eq!((key, hop), (100 + (i / 5) as u32, (i % 5) as u8 + 1));
                        assert_eq!(data, key * 16 + u32::from(hop));
                    }
                    Primitive::SketchMerge { .. } => unreachable!(),
                }
            }
            assert_eq!(g.produced, 20);
            // A NACK of 15 brings back 16..=19, all kept.
            let mut back = Vec::new();
            g.sender.on_nack(&NackRepr::plain(15, true, false), 0, |b| back.push(b[1]));
            assert_eq!(back, [16, 17, 18, 19]);
        }
    }

    /// Sketch-Merge: columns in order, round after round, counters as `sketch_counter` says;
    /// a sketch NACK rewinds to the column after the last merged, once per loss, and only the
    /// first transmission of a column counts as produced.
    #[test]
    fn sketch_merge_streams_columns_and_rewinds_on_a_sketch_nack() {
        let kind =
            LoadKind::SketchMerge { sketch_id: 3, reporter_id: 2, rows: 4, columns: 8, op: MergeOp::Sum };
        let mut g = LoadGen::new(spec(kind), 128, 1);
        let mut buf = [0u8; 64];
        let mut column_of = |g: &mut LoadGen| {
            let (n, _) = g.next_report(&mut buf, 1).unwrap();
            match DtaRepr::parse(&buf[..n], Format::default()).unwrap().primitive {
                Primitive::SketchMerge {
                    sketch_id: 3,
                    reporter_id: 2,
                    column,
                    op: MergeOp::Sum,
                    counters,
                } => {
                    assert_eq!(counters.len(), 16);
                    (column, u32::from_be_bytes(counters[4..8].try_into().unwrap()))
                }
                p => panic!("{p:?}"),
            }
        };
        let cols: Vec<u32> = (0..11).map(|_| column_of(&mut g).0).collect();
        assert_eq!(cols, [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2]);
        // Another sketch's or reporter's NACK is not ours.
        assert!(!g.on_sketch_nack(4, 2, 5, 0));
        assert!(!g.on_sketch_nack(3, 1, 5, 0));
        // The translator merged round 1 up to column 0: resend from column 1 of round 1.
        assert!(g.on_sketch_nack(3, 2, 0, 10));
        assert!(!g.on_sketch_nack(3, 2, 0, 20), "the same loss NACKed again rewinds once");
        assert_eq!(column_of(&mut g), (1, LoadGen::sketch_counter(2, 9, 1)));
        assert_eq!((g.produced, g.rewound), (11, 1));
        // The end of round 0 merged, nothing of round 1: from column 0 of round 1 (index 8).
        assert!(g.on_sketch_nack(3, 2, 7, 2_000_000));
        assert_eq!(column_of(&mut g).0, 0);
        assert_eq!(g.at(), 9);
        // Nothing merged yet: from the very start.
        assert!(g.on_sketch_nack(3, 2, u32::MAX, 4_000_000));
        assert_eq!(g.at(), 0);
        assert!(!g.done(11));
        // That NACK was old: the translator has merged up to column 1 of round 1 (index 9).
        // The stream goes forward to index 10, not back to the start again.
        assert!(g.on_sketch_nack(3, 2, 1, 4_100_000));
        assert_eq!(g.at(), 10);
        assert_eq!(column_of(&mut g).0, 2);
        assert_eq!(g.produced, 11, "index 10 was produced before");
    }

    /// A reporter restarted mid-round (a new incarnation of its reporter ID) hears that the
    /// translator merged further than it has sent: it goes forward, once, and the columns it
    /// skips are never produced.
    #[test]
    fn a_restarted_sketch_reporter_goes_forward_to_where_its_predecessor_stood() {
        let kind =
            LoadKind::SketchMerge { sketch_id: 3, reporter_id: 2, rows: 4, columns: 64, op: MergeOp::Sum };
        let mut g = LoadGen::new(spec(kind), 128, 1);
        let mut buf = [0u8; 64];
        for _ in 0..3 {
            g.next_report(&mut buf, 1).unwrap();
        }
        // Its predecessor's columns up to 40 were merged this round.
        assert!(g.on_sketch_nack(3, 2, 40, 10));
        assert_eq!(g.at(), 41);
        assert!(!g.on_sketch_nack(3, 2, 40, 20), "the same NACK again moves nothing");
        g.next_report(&mut buf, 1).unwrap();
        assert_eq!((g.produced, g.skipped), (42, 38), "index 41 produced; 3..=40 skipped, never sent");
        assert!(!g.done(64));
    }

    #[test]
    fn mapping_spreads_keys_and_follows_lists() {
        let mut hits = [0u32; 4];
        for key in 0..4000u32 {
            hits[collector_for(&Primitive::KeyIncrement { redundancy: 1, key, counter: 1 }, 4)] += 1;
        }
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)), "{hits:?}");
        assert_eq!(collector_for(&Primitive::Append { list_id: 6, data: 0 }, 4), 2);
        let ips = [Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)];
        let r = DtaRepr { immediate: false, seq: None, primitive: Primitive::Append { list_id: 3, data: 0 } };
        assert_eq!(destination(&r, &ips), Some(ips[1]));
        assert_eq!(destination(&r, &[]), None);
    }
}
