//! Per-reporter sequence tracking in a DTA translator: each retransmittable stream's 128-number
//! window (gaps NACKed as ranges, duplicates and stale numbers told apart, joins mid-stream and
//! restarts), and its progress towards the reporter (checkpoints of the settled position,
//! confirmed once nothing held is older). A sans-IO state machine with its own tests.

/// Width of the window of sequence numbers the translator remembers per reporter: half the
/// 8-bit space, so a number ahead of the newest and one behind it are never confused, and the
/// most a reporter keeps for resending ([`roce::dta::MAX_KEEP`]).
pub const SEQ_WINDOW: u32 = 128;

/// The lowest first number at which a translator that has just started takes a reporter for
/// mid-stream ([`ReporterSeq::joining`]).
pub const JOIN_MIN: u8 = 32;

/// What a retransmittable report's sequence number says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeqOutcome {
    /// Translate the report (new, or a missing one resent); `false`: a duplicate, drop it.
    pub translate: bool,
    /// It was one of the missing numbers, now recovered.
    pub recovered: bool,
    /// Numbers that left the window while still missing: lost for good (counted).
    pub lost: u32,
    /// Numbers newly found missing (a gap opened before this report).
    pub gap: u32,
    /// NACK now: the first missing number and how many follow it (a range).
    pub nack: Option<(u8, u8)>,
    /// The reporter restarted (a new epoch): its tracking began again.
    pub restarted: bool,
    /// The tracking just joined the stream mid-way.
    pub joined: bool,
    /// Not translated, and no duplicate either: a number already seen, older than any resend
    /// (more than `wire::dta::RESEND_WINDOW` behind the newest). Either it arrived reordered
    /// behind more reports than 8 bits can order, or 128 or more reports in a row were lost
    /// before it (it then belongs to a later lap); the window cannot tell which.
    pub stale: bool,
}

/// The translator's record of one reporter (source address and port): a window over its 8-bit
/// sequence numbers, like a selective-repeat receiver's. A report ahead of the newest opens a
/// gap for the numbers skipped, which are NACKed as a range at once; the report itself is
/// translated (nothing waits for the gap). A skipped number that arrives later (the reporter's
/// resend) is translated then; one seen twice is a duplicate. A number still missing when the
/// window moves 128 past it can no longer be named in 8 bits and is counted lost. Missing
/// numbers are NACKed again at most every `interval` while reports keep coming. A new epoch is
/// a restarted reporter: the old epoch's missing numbers are lost (counted) and, since our
/// reporters number from 0 at each start, numbers before the first one seen are missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReporterSeq {
    /// The reporter's epoch (0: a reference reporter, which has none).
    pub epoch: u8,
    /// One past the newest number seen.
    next: u8,
    /// Bit `i` set: number `next - 1 - i` was seen (or, for an epoch reporter, was never sent).
    seen: u128,
    /// Bit `i` set: number `next - 1 - i` came before the tracking started and is not known
    /// (a reference reporter's, or one the translator joined mid-stream): accepted once if it
    /// comes (reordered, or resent after a NACK of the translator's former self), never NACKed
    /// nor counted lost.
    unknown: u128,
    /// When the last NACK (or slow-down message) went to it.
    pub last_nack: u64,
    /// Whether a NACK was ever sent (so `last_nack` 0 is meaningful).
    pub nacked: bool,
    /// Reports refused with a slow-down due since the last message went (see
    /// [`may_slow_down`](Self::may_slow_down)).
    refused: u8,
    /// Whether its sequence numbers are tracked yet (an entry made only to pace messages to a
    /// reporter is not).
    tracked: bool,
    /// Start tracking at the first report's number, whatever the epoch: the translator
    /// (re)started while the reporter was sending, and cannot know what came before.
    join: bool,
    /// First number of the run NACKed again last: the next paced NACK names the next younger
    /// run, then wraps to the oldest, so every hole is asked for in turn (a hole whose first
    /// NACK was lost is not left to age out behind an older one).
    renacked: u8,
    /// When a run was last NACKed again: paced on its own, so new gaps (NACKed at once) do not
    /// put off asking again for old ones.
    last_renack: u64,
    /// When its last report came.
    pub last_heard: u64,
    /// Numbers the window has moved over since the tracking started (the stream's position
    /// of `next`, counted from `first_seq`).
    pos: u64,
    /// The first number tracked.
    pub first_seq: u8,
    /// The tracking joined the stream mid-way (`first_seq` is not the stream's first).
    pub joined: bool,
    /// Reports of this stream counted lost here (missing for good, or dropped at ingress under
    /// a reason that is a loss).
    pub lost: u32,
    /// The stream's progress as reported: see [`Progress`].
    pub progress: Progress,
    /// It carries Sketch-Merge columns: a sketch recovers a lost column by its own NACK (the
    /// reporter sends again from the last column merged, under new numbers), so its numbers
    /// missing for good are no loss of their own — the columns are stored, or counted lost by
    /// the merger ([`SketchMerger::give_up`](super::sketch::SketchMerger::give_up)).
    pub columns: bool,
}

/// How many checkpoints of a stream's settled position are kept (one per progress period).
pub const CHECKPOINTS: usize = 8;

/// A stream's progress towards its reporter (`NackExt::Progress`): every progress period the
/// stream's settled position is checkpointed; a checkpoint is confirmed to the reporter once
/// nothing the translator still holds (batches, cached postcards, sketch columns, parked
/// reports, unacknowledged requests) is older than it — so every report up to a confirmed
/// position is written and acknowledged, or counted lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// The way back to the reporter, once known.
    pub back: Option<(crate::switch::PortId, wire::stack::UdpFlow)>,
    /// (time, settled position, lost) checkpoints, oldest overwritten first.
    ck: [(u64, u64, u32); CHECKPOINTS],
    /// Checkpoints taken.
    taken: u64,
    /// The last (settled, lost) confirmed to the reporter.
    pub told: (u64, u32),
}

impl Progress {
    /// Whether no checkpoint was taken yet.
    pub fn is_fresh(&self) -> bool {
        self.taken == 0
    }

    /// Checkpoint `settled` and `lost` at `now`.
    pub fn checkpoint(&mut self, now: u64, settled: u64, lost: u32) {
        self.ck[(self.taken % CHECKPOINTS as u64) as usize] = (now, settled, lost);
        self.taken += 1;
    }

    /// The newest checkpoint taken before `held_since` (everything still held came later), or
    /// the newest of all when nothing is held: (settled, lost).
    pub fn confirmed(&self, held_since: Option<u64>) -> Option<(u64, u32)> {
        let n = self.taken.min(CHECKPOINTS as u64);
        (0..n)
            .map(|k| self.ck[((self.taken - 1 - k) % CHECKPOINTS as u64) as usize])
            .find(|c| held_since.is_none_or(|h| c.0 < h))
            .map(|c| (c.1, c.2))
    }
}

impl ReporterSeq {
    /// A reporter not heard from with a tracked number yet: only its messages are paced. Its
    /// first retransmittable report starts the tracking ([`first`](Self::first)).
    pub fn untracked() -> Self {
        Self { tracked: false, ..Self::first(0, 0) }
    }

    /// [`untracked`](Self::untracked), for a translator that has just started: the reporter
    /// may be mid-stream, so a first report numbered [`JOIN_MIN`] or more starts the tracking at
    /// its own number, the ones before unknown (an epoch reporter is otherwise taken to number
    /// from 0, its earlier numbers missing).
    pub fn joining() -> Self {
        Self { join: true, ..Self::untracked() }
    }

    /// A reporter first heard from with sequence number `seq` in `epoch`: a reporter with an
    /// epoch numbers from 0, so its numbers before `seq` are missing; without one, tracking
    /// starts at `seq` and the numbers before it are unknown.
    pub fn first(seq: u8, epoch: u8) -> Self {
        let next = if epoch == 0 { seq } else { 0 };
        let known = epoch != 0;
        Self {
            epoch,
            next,
            seen: if known { u128::MAX } else { 0 },
            unknown: if known { 0 } else { u128::MAX },
            last_nack: 0,
            nacked: false,
            refused: 0,
            tracked: true,
            join: false,
            renacked: next,
            last_renack: 0,
            last_heard: 0,
            pos: 0,
            first_seq: 0,
            joined: false,
            lost: 0,
            progress: Progress::default(),
            columns: false,
        }
    }

    /// The newest number seen, and the numbers passed from the first tracked to it (that one
    /// included).
    pub fn newest(&self) -> (u8, u64) {
        (self.next.wrapping_sub(1), self.pos)
    }

    /// Whether it tracks a stream's numbers.
    pub fn is_tracked(&self) -> bool {
        self.tracked
    }

    /// Reports of the stream settled in order here, from [`first_seq`](Self::first_seq):
    /// every number before the oldest still missing was taken or counted lost.
    pub fn settled(&self) -> u64 {
        let holes = self.holes();
        if holes == 0 { self.pos } else { self.pos.saturating_sub(128 - u64::from(holes.leading_zeros())) }
    }

    /// The reporter said hello (it starts a new stream, numbered from 0): what the old stream
    /// still missed is given up (returned, to be counted lost; `None` if it was not tracking
    /// a stream), and tracking starts again at
    /// the next report, which is taken as the new stream's (an epoch reporter's numbers before
    /// it missing). NACK pacing is kept. Whatever epoch the new stream draws, even the old
    /// one's, it is never read against the old window.
    pub fn restart(&mut self) -> Option<u32> {
        let lost = self.tracked.then(|| self.missing());
        let back = self.progress.back;
        *self = Self {
            last_nack: self.last_nack,
            nacked: self.nacked,
            last_heard: self.last_heard,
            ..Self::untracked()
        };
        self.progress.back = back;
        lost
    }

    /// Numbers missing in the window.
    pub fn missing(&self) -> u32 {
        self.holes().count_ones()
    }

    /// Bit `i` set: number `next - 1 - i` is missing.
    fn holes(&self) -> u128 {
        !self.seen & !self.unknown
    }

    /// Check a retransmittable report's number `seq` of `epoch` at `now`.
    #[inline]
    pub fn check(&mut self, seq: u8, epoch: u8, now: u64, interval: u64) -> SeqOutcome {
        let mut o = SeqOutcome::default();
        self.last_heard = now;
        if !self.tracked || epoch != self.epoch {
            if self.tracked {
                o.lost = self.missing();
                o.restarted = true;
            }
            // Joined mid-stream only from number JOIN_MIN on: a reporter first heard at a lower
            // number is taken to have just started (its reports before are missing), as it
            // would have to lose JOIN_MIN first reports in a row to look mid-stream.
            let joined = !self.tracked && self.join && seq >= JOIN_MIN;
            let (last_nack, nacked, back) = (self.last_nack, self.nacked, self.progress.back);
            *self = Self { last_nack, nacked, last_heard: now, ..Self::first(seq, epoch) };
            self.progress.back = back;
            if joined {
                self.next = seq;
                self.seen = 0;
                self.unknown = u128::MAX;
                self.first_seq = seq;
                self.joined = true;
                o.joined = true;
                // Said at once: the reporter maps `first_seq` (8 bits) to its own numbering
                // only while fewer than 256 reports have gone since.
                self.progress.taken = 0;
                self.progress.told = (0, 0);
            }
        }
        let d = u32::from(seq.wrapping_sub(self.next));
        if d < SEQ_WINDOW {
            // New: the window moves d + 1; what falls out still missing is lost.
            let k = d + 1;
            let known = self.seen | self.unknown;
            let out = if k >= 128 { known } else { known >> (128 - k) };
            let width = k.min(128);
            let fell_out = width - (out & (u128::MAX >> (128 - width))).count_ones();
            o.lost += fell_out;
            self.lost = self.lost.wrapping_add(fell_out);
            self.seen = if k >= 128 { 1 } else { (self.seen << k) | 1 };
            self.unknown = if k >= 128 { 0 } else { self.unknown << k };
            let from = self.next;
            self.next = seq.wrapping_add(1);
            self.pos += u64::from(k);
            o.translate = true;
            if d > 0 {
                o.gap = d;
                o.nack = Some((from, d as u8));
                self.nacked = true;
                self.last_nack = now;
                return o;
            }
        } else {
            // Behind the newest: a resend of a missing number, or a duplicate.
            let age = u32::from(self.next.wrapping_sub(1).wrapping_sub(seq));
            if self.seen & (1 << age) != 0 {
                o.stale = age >= u32::from(wire::dta::RESEND_WINDOW);
                return o;
            }
            self.seen |= 1 << age;
            o.translate = true;
            // A known gap filled; an unknown number (from before the tracking) just accepted.
            o.recovered = self.unknown & (1 << age) == 0;
            self.unknown &= !(1 << age);
        }
        // Numbers still missing: NACK a run again, paced, each in turn.
        o.nack = self.renack(now, interval);
        o
    }

    /// The run of missing numbers to NACK again now, if any is missing and the last NACK again
    /// was `interval` ago (on a report's arrival, and on the translator's timer: a stream's
    /// last holes have no later report to bring them up).
    pub fn renack(&mut self, now: u64, interval: u64) -> Option<(u8, u8)> {
        if self.holes() == 0 || now.saturating_sub(self.last_renack) < interval {
            return None;
        }
        self.last_renack = now;
        self.nacked = true;
        self.last_nack = now;
        let n = self.next_missing();
        if let Some((first, _)) = n {
            self.renacked = first;
        }
        n
    }

    /// Give up the numbers still missing (their reporter went quiet): they are counted lost,
    /// and returned.
    pub fn give_up(&mut self) -> u32 {
        let n = self.missing();
        self.seen |= !self.unknown;
        self.lost = self.lost.wrapping_add(n);
        n
    }

    /// The run of missing numbers to NACK again: the oldest younger than the last one NACKed
    /// again, or, when there is none, the oldest.
    fn next_missing(&self) -> Option<(u8, u8)> {
        let holes = self.holes();
        if holes == 0 {
            return None;
        }
        // The last run NACKed again, to its youngest number: what is younger comes next.
        let mut age = u32::from(self.next.wrapping_sub(1).wrapping_sub(self.renacked));
        if age < 128 {
            while age > 0 && holes & (1u128 << (age - 1)) != 0 {
                age -= 1;
            }
        }
        // Only what the reporter would still resend (wire::dta::RESEND_WINDOW).
        let holes = holes & ((1u128 << wire::dta::RESEND_WINDOW) - 1);
        if holes == 0 {
            return None;
        }
        let younger = if (1..128).contains(&age) { holes & ((1u128 << age) - 1) } else { 0 };
        let pick = if younger != 0 { younger } else { holes };
        let top = 127 - pick.leading_zeros();
        let run = (!(holes << (127 - top))).leading_zeros().min(top + 1);
        Some((self.next.wrapping_sub(1).wrapping_sub(top as u8), run as u8))
    }

    /// Whether a message to this reporter may go now (and record it if so).
    pub fn may_notify(&mut self, now: u64, interval: u64) -> bool {
        if self.nacked && now.saturating_sub(self.last_nack) < interval {
            return false;
        }
        self.nacked = true;
        self.last_nack = now;
        self.refused = 0;
        true
    }

    /// A report of this reporter was refused and it should slow down: whether a slow-down
    /// message may go now — as any message, once per `interval`, and besides once per
    /// [`SLOW_DOWN_EVERY`](roce::dta::SLOW_DOWN_EVERY) such reports (the most often a reporter
    /// halves its rate). At line rate thousands of reports come in 20 µs: one message each
    /// `interval` let a reporter at 166 M reports/s halve only that often, and 13 halvings
    /// down to what a collector took sent 6,000 reports into a full held queue. Never more
    /// than one message per 32 refused reports, so a flood is not answered packet for packet.
    pub fn may_slow_down(&mut self, now: u64, interval: u64) -> bool {
        self.refused = self.refused.saturating_add(1);
        if u32::from(self.refused) >= roce::dta::SLOW_DOWN_EVERY {
            self.nacked = true;
            self.last_nack = now;
            self.refused = 0;
            return true;
        }
        self.may_notify(now, interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_gaps_are_nacked_as_ranges_and_reports_after_them_translated() {
        let mut r = ReporterSeq::first(250, 0);
        for s in 250..=255u8 {
            assert_eq!(r.check(s, 0, 0, 100), SeqOutcome { translate: true, ..Default::default() });
        }
        assert!(r.check(0, 0, 0, 100).translate, "wraps");
        // 1 and 2 lost: 3 is translated and 1..=2 NACKed as a range.
        let o = r.check(3, 0, 10, 100);
        assert_eq!((o.translate, o.gap, o.nack, o.lost), (true, 2, Some((1, 2)), 0));
        assert_eq!(r.missing(), 2);
        // More reports: the gap is NACKed again only after the interval.
        assert_eq!(r.check(4, 0, 50, 100).nack, None, "paced");
        assert_eq!(r.check(5, 0, 110, 100).nack, Some((1, 2)));
        // The resends arrive: translated, and then duplicates are dropped.
        let o = r.check(2, 0, 120, 100);
        assert!(o.translate && o.recovered);
        assert_eq!(r.check(2, 0, 121, 100), SeqOutcome::default(), "a duplicate");
        assert_eq!(r.check(255, 0, 122, 100), SeqOutcome::default(), "an old duplicate");
        assert!(r.check(1, 0, 300, 100).recovered);
        assert_eq!(r.missing(), 0);
    }

    #[test]
    fn a_seen_number_older_than_any_resend_is_stale_not_a_duplicate() {
        let mut r = ReporterSeq::first(0, 1);
        for s in 0..=199u8 {
            assert!(r.check(s, 1, 0, 100).translate);
        }
        // 199 - RESEND_WINDOW: no reporter resends it (reordered past what 8 bits order, or a
        // later lap after 128 lost in a row).
        let old = 199 - wire::dta::RESEND_WINDOW;
        assert_eq!(r.check(old, 1, 1, 100), SeqOutcome { stale: true, ..Default::default() });
        assert_eq!(r.check(old + 1, 1, 2, 100), SeqOutcome::default(), "a resend's age: a duplicate");
        assert_eq!(r.missing(), 0);
    }

    #[test]
    fn a_gap_never_mistaken_for_a_duplicate_and_old_holes_counted_lost() {
        let mut r = ReporterSeq::first(0, 0);
        assert!(r.check(0, 0, 0, 0).translate);
        // 127 ahead: still new (the old tracker took anything 128 ahead for a duplicate).
        let o = r.check(127, 0, 1, 0);
        assert_eq!((o.translate, o.gap, o.nack), (true, 126, Some((1, 126))));
        // Everything from here moves the window: the 126 holes fall out one by one, lost.
        let mut lost = 0;
        for s in 128..=255u8 {
            lost += r.check(s, 0, 2, 1_000_000).lost;
        }
        assert_eq!(lost, 126);
        assert_eq!(r.missing(), 0);
        // A jump of exactly 128: 128 missing, the window is all holes but the newest.
        let o = r.check(127, 0, 3, 0);
        assert_eq!((o.translate, o.gap), (true, 127));
    }

    /// Reordered (by up to 16) and duplicated reports: each number is translated once, and the
    /// ones never delivered are exactly those counted lost.
    #[test]
    fn reordered_and_duplicated_reports_are_translated_once() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        // 5000 reports (numbers wrap 19 times); each delivered 0, 1 or 2 times, shuffled
        // within blocks of 16.
        let n = 5000usize;
        let mut arrivals: Vec<usize> = Vec::new();
        for i in 0..n {
            let copies = match rnd(100) {
                0..=2 => 0,
                3..=7 => 2,
                _ => 1,
            };
            arrivals.extend(std::iter::repeat_n(i, copies));
        }
        for block in arrivals.chunks_mut(16) {
            for k in (1..block.len()).rev() {
                block.swap(k, rnd(k as u64 + 1) as usize);
            }
        }
        let mut t = ReporterSeq::first(0, 1);
        let mut translated = vec![0u32; n];
        let mut lost = 0;
        for &i in &arrivals {
            let o = t.check(i as u8, 1, 0, 0);
            lost += o.lost;
            if o.translate {
                translated[i] += 1;
            }
        }
        lost += t.missing();
        assert!(translated.iter().all(|&c| c <= 1), "a report translated twice");
        let never = translated.iter().filter(|&&c| c == 0).count() as u32;
        assert_eq!(never, lost, "the reports never translated are the ones counted lost");
    }

    /// The reports before the first one heard (reordered, or resent after its former self
    /// NACKed them) are taken once, never NACKed nor counted lost: for a reference reporter
    /// and one a fresh translator joins mid-stream.
    #[test]
    fn numbers_before_the_first_report_are_taken_once_not_dropped() {
        for mut t in [ReporterSeq::joining(), ReporterSeq::untracked()] {
            let epoch = if t.join { 5 } else { 0 };
            let o = t.check(103, epoch, 0, 0);
            assert!(o.translate && o.nack.is_none(), "{o:?}");
            for s in [102u8, 100, 101] {
                let o = t.check(s, epoch, 1, 0);
                assert!(o.translate && !o.recovered && o.nack.is_none() && o.lost == 0, "{s}: {o:?}");
            }
            assert!(!t.check(101, epoch, 2, 0).translate, "a duplicate");
            // 200 reports later nothing before 103 was ever counted lost.
            let lost: u32 = (104..=255u8).map(|s| t.check(s, epoch, 3, 0).lost).sum();
            assert_eq!((lost, t.missing()), (0, 0));
        }
    }

    #[test]
    fn holes_are_nacked_again_in_turn() {
        // Holes at 2, 5..=6 and 9 (each NACKed once when found); every report in order after
        // them NACKs the next hole again, in turn: 4 asks for 2, 8 for 5..=6, 11 for 9, then
        // round again.
        let mut t = ReporterSeq::first(0, 1);
        let mut again = Vec::new();
        for s in [0u8, 1, 3, 4, 7, 8, 10, 11, 12, 13, 14, 15] {
            let o = t.check(s, 1, u64::from(s), 0);
            if o.gap == 0 {
                again.extend(o.nack);
            }
        }
        assert_eq!(again, [(2, 1), (5, 2), (9, 1), (2, 1), (5, 2), (9, 1), (2, 1)]);
    }

    #[test]
    fn a_reporter_first_heard_below_join_min_is_taken_to_have_just_started() {
        let mut t = ReporterSeq::joining();
        let o = t.check(3, 2, 0, 0);
        assert_eq!((o.gap, o.nack), (3, Some((0, 3))), "0..=2 missing: {o:?}");
    }

    #[test]
    fn a_translator_that_just_started_joins_a_reporter_mid_stream() {
        // An epoch reporter first heard at 200 would have 0..199 missing; one the translator
        // joins mid-stream starts at 200, and a later restart of the reporter numbers from 0.
        let mut t = ReporterSeq::joining();
        let o = t.check(200, 3, 0, 0);
        assert!(o.translate && o.nack.is_none() && o.gap == 0 && o.lost == 0, "{o:?}");
        assert!(t.check(201, 3, 1, 0).nack.is_none());
        let o = t.check(5, 4, 2, 0);
        assert!(o.restarted && o.nack == Some((0, 5)), "{o:?}");
    }

    #[test]
    fn an_entry_made_to_pace_messages_starts_tracking_at_the_first_report() {
        for (seq, epoch) in [(57u8, 0u8), (0, 4)] {
            let mut r = ReporterSeq::untracked();
            assert!(r.may_notify(0, 100), "a slow-down message went first");
            let o = r.check(seq, epoch, 10, 100);
            assert_eq!(
                (o.translate, o.restarted, o.gap, o.lost, o.nack),
                (true, false, 0, 0, None),
                "{seq} {epoch}"
            );
            assert!(r.check(seq.wrapping_add(1), epoch, 20, 100).translate);
            assert_eq!(r.missing(), 0);
        }
    }

    #[test]
    fn a_new_epoch_is_a_restart_numbered_from_zero() {
        let mut r = ReporterSeq::first(5, 3);
        let o = r.check(5, 3, 0, 0);
        assert_eq!((o.translate, o.nack), (true, Some((0, 5))), "0..=4 of epoch 3 missing");
        // The reporter restarts (epoch 9) before resending: those 5 are lost; its reports from 0
        // are new, not duplicates of the old epoch's.
        let o = r.check(0, 9, 10, 0);
        assert_eq!((o.translate, o.restarted, o.lost, o.nack), (true, true, 5, None));
        assert!(r.check(1, 9, 11, 0).translate);
        assert_eq!(r.missing(), 0);
    }

    /// A stream's settled position stops at its oldest missing number, and a checkpoint is
    /// confirmed only once nothing held is older than it.
    #[test]
    fn progress_confirms_checkpoints_older_than_anything_held() {
        let mut t = ReporterSeq::first(0, 3);
        for s in 0..10u8 {
            t.check(s, 3, 0, 1000);
        }
        assert_eq!(t.settled(), 10);
        t.check(12, 3, 0, 1000);
        assert_eq!(t.settled(), 10, "10 and 11 missing");
        t.check(10, 3, 0, 1000);
        assert_eq!(t.settled(), 11);
        assert_eq!(t.give_up(), 1);
        assert_eq!((t.settled(), t.lost), (13, 1));
        let mut g = Progress::default();
        g.checkpoint(100, 5, 0);
        g.checkpoint(200, 9, 1);
        assert_eq!(g.confirmed(None), Some((9, 1)));
        assert_eq!(g.confirmed(Some(150)), Some((5, 0)));
        assert_eq!(g.confirmed(Some(100)), None);
    }
}
