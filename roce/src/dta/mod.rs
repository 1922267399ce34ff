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
mod load;

pub use agent::{ReporterAgent, ReporterConfig, ReporterStats};
pub use load::{LoadGen, LoadKind, LoadSpec};

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use wire::dta::{self, DtaRepr, NackRepr, Primitive, Priority, Sequence};
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
#[derive(Debug, Clone)]
pub struct ReportSender {
    next: u8,
    keep: usize,
    kept: VecDeque<(u8, [u8; MAX_REPORT], u16)>,
    /// Reports resent after NACKs.
    pub resent: u64,
    /// NACKed reports no longer kept (lost for good).
    pub unrecoverable: u64,
    /// Slow-down messages received.
    pub slow_downs: u64,
    rate_scale: f64,
}

impl ReportSender {
    /// A sender keeping the last `keep` retransmittable reports (at most [`MAX_KEEP`]).
    pub fn new(keep: usize) -> Self {
        let keep = keep.clamp(1, MAX_KEEP);
        Self {
            next: 0,
            keep,
            kept: VecDeque::with_capacity(keep),
            resent: 0,
            unrecoverable: 0,
            slow_downs: 0,
            rate_scale: 1.0,
        }
    }

    /// The sequence fields of the next report: retransmittable ones (high priority by default)
    /// take the next number; the others carry 0 and are not tracked.
    pub fn sequence(&mut self, retransmittable: bool, priority: Priority) -> Sequence {
        if !retransmittable {
            return Sequence { seqnum: 0, retransmittable: false, priority };
        }
        let s = self.next;
        self.next = s.wrapping_add(1);
        Sequence { seqnum: s, retransmittable: true, priority }
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

    /// Handle a NACK or slow-down message; the reports to resend, oldest first, go to `resend`.
    pub fn on_nack(&mut self, n: &NackRepr, mut resend: impl FnMut(&[u8])) {
        if n.slow_down {
            self.slow_downs += 1;
            self.rate_scale = (self.rate_scale / 2.0).max(1.0 / 1024.0);
        }
        if !n.nack {
            return;
        }
        // Everything kept that is newer than the NACKed number (in the 128-wide window ahead).
        let from = n.seqnum.wrapping_add(1);
        let newest = self.next.wrapping_sub(1);
        let wanted = newest.wrapping_sub(n.seqnum);
        if wanted == 0 || wanted >= 128 {
            return;
        }
        let mut found = 0u8;
        for (s, b, len) in &self.kept {
            if s.wrapping_sub(from) < wanted {
                resend(&b[..usize::from(*len)]);
                found += 1;
            }
        }
        self.resent += u64::from(found);
        self.unrecoverable += u64::from(wanted - found);
    }

    /// The share (0, 1] of its nominal rate the reporter should use now; each call recovers a
    /// little (additive increase, per report sent).
    pub fn rate_scale(&mut self) -> f64 {
        let s = self.rate_scale;
        self.rate_scale = (s + 1.0 / 4096.0).min(1.0);
        s
    }
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

    #[test]
    fn nack_resends_what_follows_in_order() {
        let mut s = ReportSender::new(4);
        let mut buf = [0u8; 64];
        for i in 0..6u32 {
            let seq = s.sequence(true, Priority::High);
            let r = DtaRepr {
                immediate: false,
                seq: Some(seq),
                primitive: Primitive::Append { list_id: 1, data: i },
            };
            s.emit(&r, &mut buf).unwrap();
        }
        let mut got = Vec::new();
        s.on_nack(&NackRepr { seqnum: 2, nack: true, slow_down: false }, |b| {
            let r = DtaRepr::parse(b, Format::default()).unwrap();
            got.push(r.seq.unwrap().seqnum);
        });
        assert_eq!(got, [3, 4, 5]);
        // Too old: 0 and 1 are no longer kept.
        got.clear();
        s.on_nack(&NackRepr { seqnum: 255, nack: true, slow_down: false }, |b| got.push(b[1]));
        assert_eq!(got, [2, 3, 4, 5]);
        assert_eq!(s.unrecoverable, 2);
        // Slow down halves, then recovers.
        s.on_nack(&NackRepr { seqnum: 0, nack: false, slow_down: true }, |_| unreachable!());
        assert_eq!(s.rate_scale(), 0.5);
        assert!(s.rate_scale() > 0.5);
        // Untracked reports carry 0 and do not advance.
        assert_eq!(s.sequence(false, Priority::Low).seqnum, 0);
        assert_eq!(s.sequence(true, Priority::High).seqnum, 6);
    }
}
