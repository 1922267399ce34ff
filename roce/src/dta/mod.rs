//! The reporter's side of DTA (seed §3.2, §4.1), sans-IO: what the `dta_reporter` switch
//! program, the `dataplane report` load generator and the lab's reporter hosts share.
//!
//! [`ReportSender`] numbers retransmittable reports (they alone advance the sequence number the
//! translator tracks), keeps the last K of them, and on a NACK hands back every kept report
//! after the NACKed number, in order. A slow-down message (our NACK extension) halves the rate a
//! sender should use; the rate recovers additively.
//!
//! [`collector_for`] is the reporters' stateless collector mapping (seed §3.3): Key-Write and
//! Key-Increment by key hash, Append by list ID, Postcarder by key, Sketch-Merge by sketch.
//! [`LoadGen`] (`load`) produces a configured stream of reports of one primitive, and
//! [`ReporterAgent`] (`agent`) sends it as a host does: framed, paced, answering NACKs.

mod agent;
mod backoff;
mod load;

pub use agent::{HELLO_TRIES, HELLO_WAIT_NS, ReporterAgent, ReporterConfig, ReporterStats, TAIL_PROBES};
pub use backoff::{
    Backoff, MIN_RATE_SCALE, PROBE_DOUBLING_NS, PROBE_DOUBLING_REPORTS, RATE_DOUBLING_NS,
    RATE_DOUBLING_REPORTS, SLOW_DOWN_EVERY, SLOWEST_DOUBLING_NS,
};
pub use load::{LoadGen, LoadKind, LoadSpec};

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use wire::dta::{self, DtaRepr, NackExt, NackRepr, Primitive, Priority, Sequence};
use wire::stack::UdpFlow;

/// Longest report handled: a Sketch-Merge of up to 61 rows.
pub const MAX_REPORT: usize = 256;

/// A priority's configuration name: `"low"`, `"medium"` or `"high"`.
pub fn parse_priority(s: &str) -> Option<Priority> {
    match s {
        "low" => Some(Priority::Low),
        "medium" => Some(Priority::Medium),
        "high" => Some(Priority::High),
        _ => None,
    }
}

/// Most reports a sender keeps: half the 8-bit sequence space, the window in which a NACKed
/// number is unambiguous.
pub const MAX_KEEP: usize = 128;

/// Numbers, keeps and resends reports for one reporter.
///
/// Each start of a reporter is an epoch (1..=15, carried in every retransmittable report), so
/// the translator tells a restart from a gap. Numbers start at 0 in each epoch. A NACK naming a
/// range (our extension) brings back exactly those reports; a plain NACK (the reference's)
/// everything after its number. A NACKed report no longer kept is counted unrecoverable once,
/// however often the translator asks for it again.
#[derive(Debug, Clone)]
pub struct ReportSender {
    next: u8,
    epoch: u8,
    keep: usize,
    kept: VecDeque<(u8, [u8; MAX_REPORT], u16)>,
    /// Numbers already counted unrecoverable, until they are used again.
    counted: [u64; 4],
    /// Reports resent after NACKs.
    pub resent: u64,
    /// Key-Write reports resent with the data of a newer report of the same key (so a late
    /// resend never puts an older value back over a newer one).
    pub resent_refreshed: u64,
    /// NACKed reports no longer kept (lost for good).
    pub unrecoverable: u64,
    /// Slow-down messages received.
    pub slow_downs: u64,
    /// NACKs for another epoch of this reporter (a previous run's), ignored.
    pub foreign_nacks: u64,
    backoff: Backoff,
}

impl ReportSender {
    /// A sender of epoch `epoch` (taken into 1..=15) keeping the last `keep` retransmittable
    /// reports (at most [`MAX_KEEP`]).
    pub fn new(keep: usize, epoch: u8) -> Self {
        let keep = keep.clamp(1, MAX_KEEP);
        Self {
            next: 0,
            epoch: epoch_of(epoch),
            keep,
            kept: VecDeque::with_capacity(keep),
            counted: [0; 4],
            resent: 0,
            resent_refreshed: 0,
            unrecoverable: 0,
            slow_downs: 0,
            foreign_nacks: 0,
            backoff: Backoff::default(),
        }
    }

    /// The epoch.
    pub fn epoch(&self) -> u8 {
        self.epoch
    }

    /// The sequence fields of the next report: retransmittable ones (high priority by default)
    /// take the next number; the others carry 0 and are not tracked.
    pub fn sequence(&mut self, retransmittable: bool, priority: Priority) -> Sequence {
        self.backoff.on_report();
        if !retransmittable {
            return Sequence { seqnum: 0, retransmittable: false, priority, epoch: 0 };
        }
        let s = self.next;
        self.next = s.wrapping_add(1);
        self.counted[usize::from(s / 64)] &= !(1 << (s % 64));
        Sequence { seqnum: s, retransmittable: true, priority, epoch: self.epoch }
    }

    /// Emit `r` into `buf` and, if it is retransmittable, keep a copy. Returns its length.
    pub fn emit(&mut self, r: &DtaRepr<'_>, buf: &mut [u8]) -> Option<usize> {
        let n = r.buffer_len();
        if n > MAX_REPORT || r.emit(buf).is_err() {
            return None;
        }
        if let Some(s) = r.seq.filter(|s| s.retransmittable) {
            if self.kept.len() == self.keep {
                self.kept.pop_front();
            }
            let mut b = [0u8; MAX_REPORT];
            b[..n].copy_from_slice(&buf[..n]);
            self.kept.push_back((s.seqnum, b, n as u16));
        }
        Some(n)
    }

    /// The newest kept report, to send again as a tail probe: a stream's last reports can be
    /// found missing only by a later report, so a reporter that has stopped sends its newest
    /// once more (a duplicate the translator drops, or the missing report itself), and any gap
    /// before it is NACKed.
    pub fn newest(&self) -> Option<&[u8]> {
        self.kept.back().map(|(_, b, n)| &b[..usize::from(*n)])
    }

    /// Handle a NACK or slow-down message received at `now` (ns); the reports to resend,
    /// oldest first, go to `resend`.
    pub fn on_nack(&mut self, n: &NackRepr, now: u64, mut resend: impl FnMut(&[u8])) {
        if n.slow_down {
            self.slow_downs += 1;
            self.backoff.on_slow_down(now);
        }
        if !n.nack {
            return;
        }
        let from = n.seqnum.wrapping_add(1);
        // How many numbers after the NACKed one, within what was sent (the 128 before `next`).
        let sent_after = self.next.wrapping_sub(from);
        let count = match n.ext {
            Some(NackExt::Reports { count, epoch }) => {
                if epoch != self.epoch {
                    self.foreign_nacks += 1;
                    return;
                }
                count
            }
            // A sketch column's NACK is the sketch sender's business, a hello's answer the
            // reporter's start.
            Some(NackExt::Sketch { .. } | NackExt::Hello { .. } | NackExt::Progress { .. }) => return,
            // A plain NACK: everything after its number.
            None => sent_after,
        };
        if sent_after == 0 || sent_after > 128 {
            return;
        }
        let count = count.min(sent_after);
        for k in 0..count {
            let s = from.wrapping_add(k);
            // Only within RESEND_WINDOW of the newest: an older resend could reach the
            // translator looking like a number ahead of its window.
            let recent = self.next.wrapping_sub(s) <= wire::dta::RESEND_WINDOW;
            match self.kept.iter().position(|(x, _, _)| *x == s).filter(|_| recent) {
                Some(i) => {
                    let (_, b, len) = &self.kept[i];
                    let b = &b[..usize::from(*len)];
                    let mut fresh = [0u8; MAX_REPORT];
                    match self.refreshed(i, b, &mut fresh) {
                        Some(n) => {
                            resend(&fresh[..n]);
                            self.resent_refreshed += 1;
                        }
                        None => resend(b),
                    }
                    self.resent += 1;
                }
                None => {
                    let (w, bit) = (usize::from(s / 64), 1u64 << (s % 64));
                    if self.counted[w] & bit == 0 {
                        self.counted[w] |= bit;
                        self.unrecoverable += 1;
                    }
                }
            }
        }
    }

    /// Kept report `i` (`b`), if it is a Key-Write and a newer kept report wrote the same key:
    /// report `i` (its number, epoch and priority) carrying the newest such report's data,
    /// emitted into `out`, and its length. The translator writes reports in arrival order, so
    /// a resend of the old value would replace the newer one the collector already holds
    /// (`tests/dta_e2e.rs` saw it under CPU load); the resend fills the number with the key's
    /// latest value instead.
    fn refreshed(&self, i: usize, b: &[u8], out: &mut [u8; MAX_REPORT]) -> Option<usize> {
        let key = keywrite_key(b)?;
        // Same key, same length (so the same data size): the newest kept one.
        let (_, nb, _) = self.kept.iter().skip(i + 1).rev().find(|(_, nb, nlen)| {
            usize::from(*nlen) == b.len() && keywrite_key(&nb[..b.len()]) == Some(key)
        })?;
        // The data is the report's tail after the Key-Write sub-header's key and redundancy,
        // whatever data size the deployment uses: copy it over, numbers and flags kept.
        let head = keywrite_data_at(b)?;
        out[..b.len()].copy_from_slice(b);
        out[head..b.len()].copy_from_slice(&nb[head..b.len()]);
        Some(b.len())
    }

    /// Whether slow-down messages hold the rate below nominal now.
    pub fn slowed(&self) -> bool {
        self.backoff.slowed()
    }

    /// The share (0, 1] of its nominal rate the reporter should use at `now` (ns)
    /// ([`Backoff::scale`]).
    pub fn rate_scale(&mut self, now: u64) -> f64 {
        self.backoff.scale(now)
    }
}

/// A reporter epoch in 1..=15 from any byte (0 would read as a reference reporter's "none").
pub const fn epoch_of(x: u8) -> u8 {
    match x % 15 {
        0 => 15,
        e => e,
    }
}

/// The key of report `b` if it is a Key-Write (any data size).
fn keywrite_key(b: &[u8]) -> Option<u32> {
    match DtaRepr::parse(b, dta::Format::default()).ok()?.primitive {
        Primitive::KeyWrite { key, .. } => Some(key),
        _ => None,
    }
}

/// Where a Key-Write report's data starts in `b`.
fn keywrite_data_at(b: &[u8]) -> Option<usize> {
    let r = DtaRepr::parse(b, dta::Format::default()).ok()?;
    let Primitive::KeyWrite { data, .. } = r.primitive else { return None };
    r.buffer_len().checked_sub(data.len())
}

/// The collector (index into `n` collectors) a report goes to: Key-Write, Key-Increment and
/// Postcarder by [`dta::keywrite_collector`] of the key, Append by list ID and Sketch-Merge by
/// sketch ID, modulo `n`. The same function at every reporter and in queries, so the mapping is
/// stateless and can be recomputed centrally. `n` must be at least 1.
pub fn collector_for(p: &Primitive<'_>, n: usize) -> usize {
    let n = n.max(1);
    match *p {
        Primitive::KeyWrite { key, .. }
        | Primitive::KeyIncrement { key, .. }
        | Primitive::Postcarder { key, .. } => dta::keywrite_collector(key, n),
        Primitive::Append { list_id, .. } => list_id as usize % n,
        Primitive::SketchMerge { sketch_id, .. } => usize::from(sketch_id) % n,
    }
}

/// Bytes of an Ethernet/IPv4/UDP frame over `flow` carrying a report of `len` bytes, padded to
/// the Ethernet minimum.
pub fn report_frame_len(flow: &UdpFlow, len: usize) -> usize {
    wire::ethernet::MIN_FRAME_LEN.max(flow.headers_len() + len)
}

/// Write the frame carrying `report` over `flow` into `frame` (exactly
/// [`report_frame_len`] bytes; the padding zero). `false` if it does not fit.
pub fn write_report_frame(flow: &UdpFlow, report: &[u8], frame: &mut [u8]) -> bool {
    frame.fill(0);
    flow.emit_with(report.len(), false, frame, |p| {
        p.copy_from_slice(report);
        Ok(())
    })
    .is_ok()
}

/// The destination of a report among `collectors` (see [`collector_for`]).
pub fn destination(r: &DtaRepr<'_>, collectors: &[Ipv4Addr]) -> Option<Ipv4Addr> {
    collectors.get(collector_for(&r.primitive, collectors.len())).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::dta::Format;

    /// A sender of `epoch` keeping `keep`, after sending `n` retransmittable Append reports.
    fn sender_after(keep: usize, epoch: u8, n: u32) -> ReportSender {
        let mut s = ReportSender::new(keep, epoch);
        let mut buf = [0u8; 64];
        for i in 0..n {
            let seq = s.sequence(true, Priority::High);
            assert_eq!(seq.epoch, epoch);
            let r = DtaRepr {
                immediate: false,
                seq: Some(seq),
                primitive: Primitive::Append { list_id: 1, data: i },
            };
            s.emit(&r, &mut buf).unwrap();
        }
        s
    }

    /// A NACKed Key-Write whose key a newer kept report wrote since goes out again with the
    /// newest value (its own number kept): a late resend never puts an older value back. Other
    /// keys and other primitives are resent as they were.
    #[test]
    fn a_resent_keywrite_carries_the_newest_value_of_its_key() {
        let mut s = ReportSender::new(16, 3);
        let mut buf = [0u8; 64];
        // Reports 0..6: key 7 = 0, key 8 = 1, key 7 = 2, append, key 7 = 4, key 9 = 5.
        for (i, key) in [7u32, 8, 7, 0, 7, 9].into_iter().enumerate() {
            let seq = s.sequence(true, Priority::High);
            let v = (i as u32).to_be_bytes();
            let primitive = if key == 0 {
                Primitive::Append { list_id: 1, data: 99 }
            } else {
                Primitive::KeyWrite { redundancy: 2, key, data: &v }
            };
            s.emit(&DtaRepr { immediate: false, seq: Some(seq), primitive }, &mut buf).unwrap();
        }
        let mut got = Vec::new();
        s.on_nack(&NackRepr::plain(255, true, false), 0, |b| {
            let r = DtaRepr::parse(b, Format::default()).unwrap();
            let v = match r.primitive {
                Primitive::KeyWrite { key, data, .. } => {
                    Some((key, u32::from_be_bytes(data.try_into().unwrap())))
                }
                _ => None,
            };
            got.push((r.seq.unwrap().seqnum, v));
        });
        assert_eq!(
            got,
            [
                (0, Some((7, 4))),
                (1, Some((8, 1))),
                (2, Some((7, 4))),
                (3, None),
                (4, Some((7, 4))),
                (5, Some((9, 5)))
            ]
        );
        assert_eq!((s.resent, s.resent_refreshed), (6, 2));
    }

    #[test]
    fn nack_resends_what_follows_in_order() {
        let mut s = sender_after(4, 1, 6);
        let mut got = Vec::new();
        s.on_nack(&NackRepr::plain(2, true, false), 0, |b| {
            let r = DtaRepr::parse(b, Format::default()).unwrap();
            got.push(r.seq.unwrap().seqnum);
        });
        assert_eq!(got, [3, 4, 5]);
        // Too old: 0 and 1 are no longer kept.
        got.clear();
        s.on_nack(&NackRepr::plain(255, true, false), 0, |b| got.push(b[1]));
        assert_eq!(got, [2, 3, 4, 5]);
        assert_eq!(s.unrecoverable, 2);
        // Asked again, the same two are not counted twice.
        s.on_nack(&NackRepr::plain(255, true, false), 0, |_| {});
        assert_eq!(s.unrecoverable, 2);
        // Slow down halves, once per SLOW_DOWN_EVERY reports however many come, then recovers.
        s.on_nack(&NackRepr::plain(0, false, true), 0, |_| unreachable!());
        s.on_nack(&NackRepr::plain(0, false, true), 0, |_| unreachable!());
        assert_eq!(s.slow_downs, 2);
        assert_eq!(s.rate_scale(0), 0.5);
        for _ in 0..SLOW_DOWN_EVERY {
            s.sequence(true, Priority::High);
        }
        s.on_nack(&NackRepr::plain(0, false, true), 0, |_| unreachable!());
        assert!(s.rate_scale(1000) < 0.5);
        // Untracked reports carry 0 and do not advance.
        assert_eq!(s.sequence(false, Priority::Low).seqnum, 0);
        assert_eq!(s.sequence(true, Priority::High).seqnum, 6 + SLOW_DOWN_EVERY as u8);
    }

    #[test]
    fn a_range_nack_brings_back_exactly_the_range_of_its_epoch() {
        let mut s = sender_after(8, 7, 10);
        let range = |first: u8, count: u8, epoch: u8| NackRepr {
            seqnum: first.wrapping_sub(1),
            nack: true,
            slow_down: false,
            ext: Some(NackExt::Reports { count, epoch }),
        };
        let mut got = Vec::new();
        s.on_nack(&range(4, 2, 7), 0, |b| got.push(b[1]));
        assert_eq!(got, [4, 5]);
        // Another epoch's NACK (a previous run of this reporter) is not ours.
        s.on_nack(&range(4, 2, 3), 0, |_| unreachable!());
        assert_eq!(s.foreign_nacks, 1);
        // 0 and 1 are no longer kept (8 kept): lost, counted once; 2 comes back.
        got.clear();
        s.on_nack(&range(0, 3, 7), 0, |b| got.push(b[1]));
        s.on_nack(&range(0, 3, 7), 0, |_| {});
        assert_eq!((got.as_slice(), s.unrecoverable), (&[2u8][..], 2));
        // Numbers not sent yet are never asked for.
        s.on_nack(&range(10, 5, 7), 0, |_| unreachable!());
        assert_eq!(s.unrecoverable, 2);
        assert_eq!(epoch_of(0), 15);
        assert_eq!(epoch_of(16), 1);
    }
}
