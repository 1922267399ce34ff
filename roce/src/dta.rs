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
//! [`LoadGen`] produces a configured stream of reports of one primitive for the load generator.

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
    /// Reports produced so far.
    pub produced: u64,
    /// The sender: sequence numbers, kept reports, NACK handling.
    pub sender: ReportSender,
}

impl LoadGen {
    /// A generator for `spec`, keeping the last `keep` retransmittable reports.
    pub fn new(spec: LoadSpec, keep: usize) -> Self {
        Self { spec, produced: 0, sender: ReportSender::new(keep) }
    }

    /// Key number `k` as sent.
    pub fn key(spec: &LoadSpec, k: u32) -> u32 {
        if spec.scramble { wire::dta::scramble_key(k) } else { k }
    }

    /// The `i`-th report's primitive (data that needs bytes is written into `kw`).
    pub fn primitive<'a>(spec: &LoadSpec, i: u64, kw: &'a mut [u8; 28]) -> Primitive<'a> {
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
        }
    }

    /// Write the next report's DTA bytes into `buf`; returns its length and the index of the
    /// collector (of `collectors`) it goes to.
    pub fn next_report(&mut self, buf: &mut [u8], collectors: usize) -> Option<(usize, usize)> {
        let i = self.produced;
        let mut kw = [0u8; 28];
        let primitive = Self::primitive(&self.spec, i, &mut kw);
        let seq = self.sender.sequence(self.spec.retransmittable, self.spec.priority);
        let immediate = self.spec.immediate_every != 0 && i.is_multiple_of(self.spec.immediate_every);
        let r = DtaRepr { immediate, seq: Some(seq), primitive };
        let n = self.sender.emit(&r, buf)?;
        self.produced += 1;
        Some((n, collector_for(&primitive, collectors)))
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

#[cfg(test)]
mod load_tests {
    use super::*;
    use wire::dta::Format;

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
            let mut g = LoadGen::new(spec(kind), 8);
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
            g.sender.on_nack(&NackRepr { seqnum: 15, nack: true, slow_down: false }, |b| back.push(b[1]));
            assert_eq!(back, [16, 17, 18, 19]);
        }
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
