//! Sketch-Merge (seed §3): the copies of one sketch, reported column by column by several
//! switches, merged in order per reporter and written in batches of complete columns; columns
//! a reporter was asked for again and never sent are given up and counted.

use wire::dta::MergeOp;

use super::state::{HOLD_PERIOD_NS, HeldSince};

/// How long a reporter with columns asked for again must stay silent (no column of the sketch
/// from it) before they are given up: far longer than a resend takes (a NACK's round trip),
/// short enough that a finished reporter's last columns are counted within a second.
pub const SKETCH_GIVE_UP_NS: u64 = 500_000_000;

/// What a sketch column report did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SketchOutcome {
    /// Merged.
    Merged,
    /// Not the reporter's next column: NACK it with the last column merged from it.
    OutOfOrder {
        /// The last in-order column from this reporter (`u32::MAX` if none this round).
        last: u32,
    },
    /// The column belongs to the next round, and this round's column is not written yet:
    /// NACK it (the reporter resends later).
    TooEarly {
        /// The last in-order column from this reporter.
        last: u32,
    },
    /// A reporter ID not configured for the sketch.
    UnknownReporter,
    /// A column outside the sketch, or the wrong number of counters.
    BadShape,
}

/// Merges the copies of one sketch reported column by column by several switches (seed §3:
/// per-reporter in-order columns, per-column contribution counts, batches of C columns written
/// together once complete).
#[derive(Debug, Clone)]
pub struct SketchMerger {
    rows: usize,
    columns: u32,
    batch: u32,
    reporters: Vec<u16>,
    /// Per reporter: the next column expected, and its round.
    next: Vec<(u32, u32)>,
    /// Per column: merged counters.
    merged: Vec<u32>,
    /// Per column: contributions this round, and the round.
    count: Vec<(u16, u32)>,
    /// The first column of the next batch to write, and its round.
    flush: (u32, u32),
    /// Per column: the hold period of its first contribution this round ([`HeldSince`]).
    period: Vec<u32>,
    held: HeldSince,
    /// When the last batch taken got its oldest column's first contribution, at the latest.
    last_since: u64,
    /// Per column: reporters' contributions merged this round (not given up): the first one
    /// sets the counters, the others are merged into them.
    real: Vec<u16>,
    /// Contributions merged and not yet written.
    merged_held: u64,
    /// Per reporter: the furthest column of this round seen from it ahead of the one expected
    /// (it sends in order, so every column from the expected one to this was sent and is
    /// wanted again), and when a column of it last came.
    ahead: Vec<Option<u32>>,
    heard: Vec<u64>,
}

impl SketchMerger {
    /// A sketch of `columns` × `rows` merged from `reporters`, written `batch` columns at a
    /// time (`columns` is rounded up to a multiple of `batch`).
    pub fn new(rows: u16, columns: u32, reporters: &[u16], batch: u32) -> Self {
        let batch = batch.clamp(1, columns.max(1));
        let columns = columns.max(1).div_ceil(batch) * batch;
        Self {
            rows: usize::from(rows.max(1)),
            columns,
            batch,
            reporters: reporters.to_vec(),
            next: vec![(0, 0); reporters.len()],
            merged: vec![0; columns as usize * usize::from(rows.max(1))],
            count: vec![(0, 0); columns as usize],
            flush: (0, 0),
            period: vec![0; columns as usize],
            held: HeldSince::default(),
            last_since: u64::MAX,
            real: vec![0; columns as usize],
            merged_held: 0,
            ahead: vec![None; reporters.len()],
            heard: vec![0; reporters.len()],
        }
    }

    /// Reports this merger holds for the sketch unwritten: contributions merged into columns
    /// not yet written, and columns seen sent that are wanted again (a NACK asked for them).
    pub fn held(&self) -> u64 {
        self.merged_held + self.wanted()
    }

    /// Columns seen sent from a reporter and not merged: asked for again, not yet come.
    pub fn wanted(&self) -> u64 {
        self.ahead
            .iter()
            .zip(&self.next)
            .filter_map(|(a, &(want, _))| a.map(|a| u64::from(a.saturating_sub(want)) + 1))
            .sum()
    }

    /// Give up the columns wanted again from each reporter silent since `now - quiet`: each
    /// counts as that reporter's contribution (none: the column is written with the others'
    /// merged, or zero), the reporter is expected from the column after them, and batches they
    /// held back can be written ([`take_batch`](Self::take_batch)). How many were given up
    /// (reports lost: the caller counts them).
    pub fn give_up(&mut self, now: u64, quiet: u64) -> u64 {
        let mut n = 0;
        for r in 0..self.reporters.len() {
            let Some(ahead) = self.ahead[r] else { continue };
            if now.saturating_sub(self.heard[r]) < quiet {
                continue;
            }
            let (mut c, round) = self.next[r];
            while c <= ahead {
                let ci = c as usize;
                if self.count[ci].1 != round {
                    if self.count[ci].0 != 0 {
                        // The previous round's column is still unwritten: wait for it.
                        break;
                    }
                    self.count[ci] = (0, round);
                }
                if self.count[ci].0 == 0 {
                    self.period[ci] = self.held.take(now);
                }
                self.count[ci].0 += 1;
                n += 1;
                c += 1;
            }
            self.next[r] = if c == self.columns { (0, round + 1) } else { (c, round) };
            self.ahead[r] = None;
        }
        n
    }

    /// A column `reporter` sent, refused before it could be merged (over the rate, the window
    /// full, the store down, no room to park it), come at `at`: it is wanted again like a column
    /// seen ahead — the reporter's next column gets a sketch NACK, and a reporter that falls
    /// silent has it given up ([`give_up`](Self::give_up)) — so it is counted once, where its
    /// fate is known. A column behind the one expected (merged already) or of an unknown
    /// reporter changes nothing.
    pub fn defer(&mut self, reporter: u16, column: u32, at: u64) {
        let Some(r) = self.reporters.iter().position(|&x| x == reporter) else { return };
        let (want, _) = self.next[r];
        if column >= self.columns || column < want {
            return;
        }
        self.heard[r] = self.heard[r].max(at);
        self.ahead[r] = Some(self.ahead[r].map_or(column, |a| a.max(column)));
    }

    /// Forget what is held (the translator stops, having counted [`held`](Self::held) lost).
    pub fn discard(&mut self) {
        self.merged_held = 0;
        self.ahead.iter_mut().for_each(|a| *a = None);
    }

    /// When the last batch taken got its oldest column's first contribution, at the latest.
    pub fn last_since(&self) -> u64 {
        self.last_since
    }

    /// When the oldest column merged and not yet written got its first contribution, at the
    /// latest (`None`: none).
    pub fn oldest(&self) -> Option<u64> {
        self.held.oldest()
    }

    /// Rows (counters per column).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns per write.
    pub fn batch(&self) -> u32 {
        self.batch
    }

    /// Memory of the merge buffer.
    pub fn bytes(&self) -> usize {
        self.merged.len() * 4 + self.count.len() * 8 + self.real.len() * 2 + self.period.len() * 4
    }

    /// Merge `counters` (`rows` big-endian `u32`s) from `reporter` for `column` with `op`, come
    /// at `at` and held since `now` (earlier for a report that was parked).
    pub fn merge(
        &mut self,
        at: u64,
        now: u64,
        reporter: u16,
        column: u32,
        op: MergeOp,
        counters: &[u8],
    ) -> SketchOutcome {
        let Some(r) = self.reporters.iter().position(|&x| x == reporter) else {
            return SketchOutcome::UnknownReporter;
        };
        if column >= self.columns || counters.len() != 4 * self.rows {
            return SketchOutcome::BadShape;
        }
        self.heard[r] = self.heard[r].max(at);
        let (want, round) = self.next[r];
        // The last column merged from this reporter: none yet, or the end of its last round.
        let last = match (want, round) {
            (0, 0) => u32::MAX,
            (0, _) => self.columns - 1,
            (w, _) => w - 1,
        };
        if column != want {
            if column > want {
                // Sent in order: every column from `want` to this one was sent, and is wanted.
                self.ahead[r] = Some(self.ahead[r].map_or(column, |a| a.max(column)));
            }
            return SketchOutcome::OutOfOrder { last };
        }
        let c = column as usize;
        if self.count[c].1 != round {
            // This column still holds the previous round: it has not been written yet.
            if self.count[c].0 != 0 {
                return SketchOutcome::TooEarly { last };
            }
            self.count[c] = (0, round);
        }
        if self.count[c].0 == 0 {
            self.period[c] = self.held.take(now);
        }
        let first = self.real[c] == 0;
        let cells = &mut self.merged[c * self.rows..(c + 1) * self.rows];
        for (cell, b) in cells.iter_mut().zip(counters.chunks_exact(4)) {
            let v = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            *cell = if first { v } else { op.apply(*cell, v) };
        }
        self.count[c].0 += 1;
        self.real[c] += 1;
        self.merged_held += 1;
        if self.ahead[r].is_some_and(|a| a <= column) {
            self.ahead[r] = None;
        }
        self.next[r] = if column + 1 == self.columns { (0, round + 1) } else { (column + 1, round) };
        SketchOutcome::Merged
    }

    /// The next complete batch, if the batch due next has every reporter's copy of every
    /// column: its first column and its counters (columns × rows little-endian `u32`s, written
    /// into `out`), and how many reports were merged into it. The batch is then cleared for the next round. [`last_since`](Self::last_since)
    /// then tells when its oldest column's first contribution came.
    pub fn take_batch<'a>(&mut self, out: &'a mut Vec<u8>) -> Option<(u32, &'a [u8], u64)> {
        let (start, round) = self.flush;
        let m = self.reporters.len() as u16;
        let done = (start..start + self.batch).all(|c| self.count[c as usize] == (m, round));
        if !done {
            return None;
        }
        out.clear();
        let lo = start as usize * self.rows;
        let hi = (start + self.batch) as usize * self.rows;
        for v in &mut self.merged[lo..hi] {
            out.extend_from_slice(&v.to_le_bytes());
            *v = 0;
        }
        self.last_since = u64::MAX;
        let mut contributions = 0;
        for c in start..start + self.batch {
            self.count[c as usize] = (0, round + 1);
            let real = u64::from(std::mem::take(&mut self.real[c as usize]));
            self.merged_held -= real;
            contributions += real;
            self.held.release(self.period[c as usize]);
            self.last_since = self.last_since.min(u64::from(self.period[c as usize]) * HOLD_PERIOD_NS);
        }
        let next = start + self.batch;
        self.flush = if next >= self.columns { (0, round + 1) } else { (next, round) };
        Some((start, out.as_slice(), contributions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(vals: &[u32]) -> Vec<u8> {
        vals.iter().flat_map(|v| v.to_be_bytes()).collect()
    }

    #[test]
    fn sketch_merges_in_order_and_writes_complete_batches() {
        let mut s = SketchMerger::new(2, 4, &[10, 20], 2);
        let mut out = Vec::new();
        assert_eq!(s.merge(0, 0, 10, 0, MergeOp::Sum, &col(&[1, 2])), SketchOutcome::Merged);
        assert_eq!(s.merge(0, 0, 10, 2, MergeOp::Sum, &col(&[1, 2])), SketchOutcome::OutOfOrder { last: 0 });
        assert_eq!(s.merge(0, 0, 30, 0, MergeOp::Sum, &col(&[1, 2])), SketchOutcome::UnknownReporter);
        assert_eq!(s.merge(0, 0, 20, 0, MergeOp::Sum, &col(&[1])), SketchOutcome::BadShape);
        s.merge(0, 0, 10, 1, MergeOp::Sum, &col(&[3, 4]));
        assert!(s.take_batch(&mut out).is_none(), "reporter 20 has not sent columns 0 and 1");
        s.merge(0, 0, 20, 0, MergeOp::Sum, &col(&[10, 20]));
        s.merge(0, 0, 20, 1, MergeOp::Sum, &col(&[30, 40]));
        let (start, bytes, _) = s.take_batch(&mut out).unwrap();
        assert_eq!(start, 0);
        let v: Vec<u32> = bytes.chunks(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(v, [11, 22, 33, 44]);
        // Finish the round; reporter 10 starts the next round's column 0 at once (it was written).
        for r in [10, 20] {
            s.merge(0, 0, r, 2, MergeOp::Max, &col(&[5, 5]));
            s.merge(0, 0, r, 3, MergeOp::Max, &col(&[u32::from(r), 1]));
        }
        assert_eq!(s.merge(0, 0, 10, 0, MergeOp::Sum, &col(&[1, 1])), SketchOutcome::Merged);
        let (start, bytes, _) = s.take_batch(&mut out).unwrap();
        assert_eq!(start, 2);
        let v: Vec<u32> = bytes.chunks(4).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(v, [5, 5, 20, 1]);
    }

    #[test]
    fn sketch_holds_back_a_round_until_the_column_is_written() {
        let mut s = SketchMerger::new(1, 2, &[1, 2], 2);
        s.merge(0, 0, 1, 0, MergeOp::Sum, &col(&[1]));
        s.merge(0, 0, 1, 1, MergeOp::Sum, &col(&[1]));
        // Reporter 1 is a round ahead; reporter 2 has sent nothing: column 0 is not written.
        assert_eq!(s.merge(0, 0, 1, 0, MergeOp::Sum, &col(&[9])), SketchOutcome::TooEarly { last: 1 });
    }

    #[test]
    fn columns_wanted_again_are_held_then_given_up_when_the_reporter_falls_silent() {
        let ms = 1_000_000;
        let mut s = SketchMerger::new(1, 8, &[1, 2], 1);
        let mut out = Vec::new();
        for c in 0..2 {
            s.merge(0, 0, 1, c, MergeOp::Min, &col(&[7]));
        }
        // Reporter 2's column 0 is lost; its columns 1 and 3 come (2 lost too): out of order.
        assert_eq!(
            s.merge(ms, ms, 2, 1, MergeOp::Min, &col(&[5])),
            SketchOutcome::OutOfOrder { last: u32::MAX }
        );
        assert_eq!(
            s.merge(ms, ms, 2, 3, MergeOp::Min, &col(&[5])),
            SketchOutcome::OutOfOrder { last: u32::MAX }
        );
        // Held: reporter 1's two columns, merged and unwritten, and reporter 2's 0..=3 wanted.
        assert_eq!((s.wanted(), s.held()), (4, 6));
        assert_eq!(s.give_up(ms + 100 * ms, 500 * ms), 0, "not silent long enough");
        // The resend of column 0 comes: merged, three still wanted.
        assert_eq!(s.merge(200 * ms, 200 * ms, 2, 0, MergeOp::Min, &col(&[9])), SketchOutcome::Merged);
        assert_eq!((s.wanted(), s.held()), (3, 3 + 3));
        let (start, bytes, n) = s.take_batch(&mut out).unwrap();
        assert_eq!((start, bytes, n), (0, &7u32.to_le_bytes()[..], 2));
        assert!(s.take_batch(&mut out).is_none(), "column 1 waits for reporter 2");
        // Silent for 500 ms: columns 1..=3 given up; column 1 is written with reporter 1's
        // value alone; reporter 2 is expected from column 4.
        assert_eq!(s.give_up(700 * ms, 500 * ms), 3);
        assert_eq!((s.wanted(), s.held()), (0, 1));
        let (start, bytes, n) = s.take_batch(&mut out).unwrap();
        assert_eq!((start, bytes, n), (1, &7u32.to_le_bytes()[..], 1));
        assert!(s.take_batch(&mut out).is_none(), "column 2 waits for reporter 1");
        // A column given up first does not count as the first value: the next one sets it.
        s.merge(701 * ms, 701 * ms, 1, 2, MergeOp::Min, &col(&[4]));
        let (_, bytes, n) = s.take_batch(&mut out).unwrap();
        assert_eq!((bytes, n), (&4u32.to_le_bytes()[..], 1), "min of 4 alone, not of 0 and 4");
        assert_eq!(s.merge(702 * ms, 702 * ms, 2, 4, MergeOp::Min, &col(&[3])), SketchOutcome::Merged);
        s.discard();
        assert_eq!(s.held(), 0);
    }

    #[test]
    fn a_column_refused_before_merging_is_wanted_until_it_comes_or_is_given_up() {
        let col = |v: u32| [v.to_be_bytes(), v.to_be_bytes()].concat();
        let mut m = SketchMerger::new(2, 8, &[1], 4);
        assert_eq!(m.merge(0, 0, 1, 0, MergeOp::Sum, &col(5)), SketchOutcome::Merged);
        // Column 1 refused (the window full, say): wanted again, not lost.
        m.defer(1, 1, 10);
        assert_eq!(m.wanted(), 1);
        // The next column is out of order: NACKed with the last merged (0).
        assert_eq!(m.merge(20, 20, 1, 2, MergeOp::Sum, &col(7)), SketchOutcome::OutOfOrder { last: 0 });
        assert_eq!(m.wanted(), 2);
        // It comes again: merged, nothing wanted after the column after it comes too.
        assert_eq!(m.merge(30, 30, 1, 1, MergeOp::Sum, &col(6)), SketchOutcome::Merged);
        assert_eq!(m.merge(31, 31, 1, 2, MergeOp::Sum, &col(7)), SketchOutcome::Merged);
        assert_eq!(m.wanted(), 0);
        // A column behind the expected one, or of an unknown reporter, changes nothing.
        m.defer(1, 0, 40);
        m.defer(9, 5, 40);
        assert_eq!(m.wanted(), 0);
        // Refused and never sent again: given up once the reporter is silent, counted once.
        m.defer(1, 3, 50);
        assert_eq!(m.give_up(50 + SKETCH_GIVE_UP_NS - 1, SKETCH_GIVE_UP_NS), 0);
        assert_eq!(m.give_up(50 + SKETCH_GIVE_UP_NS, SKETCH_GIVE_UP_NS), 1);
        assert_eq!(m.wanted(), 0);
    }
}
