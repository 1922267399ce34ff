//! The DTA loss-and-fault suite on a virtual clock: reporter → translator → collector with loss
//! on every hop (reports, NACKs, RDMA requests, acknowledgements), collector death and restart,
//! translator restart, reporter restart. Each case prints what was sent, stored and counted
//! lost, and checks **stored + counted-lost = sent** exactly, where counted-lost is what the
//! translator's counters say: reports it counted unrecoverable (`seq_unrecoverable`), reports it
//! dropped under a named reason (every `dta_*` reason but duplicates), and data items given up
//! with their RDMA requests or with a restarted collector's memory (`lost_entries`,
//! `region_lost_entries`). Reports are retransmittable and of high priority, as DTA's critical
//! reports are: with loss alone, nothing may be lost at all.
//!
//! A stream's last reports can only be found missing by a later report, so each run ends with a
//! lossless tail. The same cases run on real frames, with `iptables` loss in network
//! namespaces, in `tests/netns.rs`' DTA case.

#[path = "dta/lab.rs"]
mod lab;

use lab::{C0, C0_MAC, Collector, Lab, Loss, REPORTER, config};
use roce::dta::{MAX_KEEP, ReportSender};
use wire::dta::{self, DtaRepr, Primitive, Priority};

const COLLECTORS: &str = r#"
[[dta.collector]]
name = "c0"
ip = "10.0.0.51"
keywrite = 1337
keyincrement = 1339
postcarder = { port = 1336, hops = 5, cache = 1024 }
append = [{ list = 0, port = 1340, batch = 16 }, { list = 2, port = 1342, batch = 1 }]
"#;
const KW_SLOTS: u32 = 16384;
const PC_SLOTS: u32 = 1024;

fn collector(seed: u32) -> Collector {
    Collector::new(
        C0,
        C0_MAC,
        &[
            (1337, KW_SLOTS * 8),
            (1339, KW_SLOTS * 8),
            (1336, PC_SLOTS * 32),
            (1340, 65536 * 4),
            (1342, 65536 * 4),
        ],
        seed,
    )
}

/// The lab's translator (`join_ms = 0` unless `extra` says: its reporters start with it).
fn new_lab(extra: &str) -> Lab {
    let cfg = config(&format!("nack_interval_us = 5\n{extra}"), COLLECTORS, &[(C0, C0_MAC)]);
    let mut lab = Lab::new(&cfg, vec![collector(7)]);
    lab.connect(200_000);
    lab
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Append to list 0 (batches of 16).
    Append,
    /// Key-Write, N = 1, keys on distinct slots.
    KeyWrite,
    /// Key-Increment of 1, N = 1, keys on distinct slots, three increments per key.
    KeyIncrement,
    /// Postcarder, 5 hops per path, paths on distinct slots and cache entries.
    Postcarder,
}

/// Keys whose copy-0 slot (masked to `slots`) no other key shares.
fn distinct_keys(n: usize, slots: u32, slot: impl Fn(u32) -> u32) -> Vec<u32> {
    let mut used = std::collections::HashSet::new();
    (1u32..).filter(|&k| used.insert(slot(k) & (slots - 1))).take(n).collect()
}

/// What a workload sends and how to read it back.
struct Workload {
    kind: Kind,
    keys: Vec<u32>,
}

impl Workload {
    fn new(kind: Kind, reports: usize) -> Self {
        let keys = match kind {
            Kind::Append => Vec::new(),
            Kind::KeyWrite | Kind::KeyIncrement => distinct_keys(reports, KW_SLOTS, |k| {
                dta::keywrite_slot_hash(k, 0, dta::KeyHashMode::Independent)
            }),
            Kind::Postcarder => distinct_keys(reports / 5 + 1, PC_SLOTS, dta::keywrite_checksum),
        };
        Self { kind, keys }
    }

    /// Report `i` (0-based): its primitive.
    fn primitive(&self, i: u32) -> Primitive<'static> {
        match self.kind {
            Kind::Append => Primitive::Append { list_id: 0, data: i + 1 },
            Kind::KeyWrite => {
                let key = self.keys[i as usize];
                let data: &'static [u8; 4] = Box::leak(Box::new((i + 1).to_be_bytes()));
                Primitive::KeyWrite { redundancy: 1, key, data }
            }
            Kind::KeyIncrement => {
                Primitive::KeyIncrement { redundancy: 1, key: self.keys[i as usize / 3], counter: 1 }
            }
            Kind::Postcarder => {
                let key = self.keys[i as usize / 5];
                let hop = (i % 5) as u8 + 1;
                Primitive::Postcarder { key, hop, data: key.wrapping_mul(8) + u32::from(hop) }
            }
        }
    }

    /// How many of the first `sent` reports the collector's memory holds.
    fn stored(&self, c: &Collector, sent: u32) -> u64 {
        match self.kind {
            Kind::Append => {
                let mem = c.region(1340);
                let mut seen = std::collections::HashSet::new();
                for w in mem.chunks_exact(4) {
                    let v = u32::from_le_bytes(w.try_into().unwrap());
                    if (1..=sent).contains(&v) {
                        assert!(seen.insert(v), "entry {v} stored twice");
                    }
                }
                seen.len() as u64
            }
            Kind::KeyWrite => {
                let mem = c.region(1337);
                (0..sent)
                    .filter(|&i| {
                        let key = self.keys[i as usize];
                        let s = (dta::keywrite_slot_hash(key, 0, dta::KeyHashMode::Independent)
                            & (KW_SLOTS - 1)) as usize
                            * 8;
                        mem[s..s + 4] == dta::keywrite_checksum(key).to_le_bytes()
                            && mem[s + 4..s + 8] == (i + 1).to_be_bytes()
                    })
                    .count() as u64
            }
            Kind::KeyIncrement => {
                let mem = c.region(1339);
                self.keys[..(sent as usize).div_ceil(3)]
                    .iter()
                    .map(|&key| {
                        let s = (dta::keywrite_slot_hash(key, 0, dta::KeyHashMode::Independent)
                            & (KW_SLOTS - 1)) as usize
                            * 8;
                        u64::from_le_bytes(mem[s..s + 8].try_into().unwrap())
                    })
                    .sum()
            }
            Kind::Postcarder => {
                // A path is stored when its slot holds its key's checksum; each of its hops
                // that holds the right value is one postcard stored.
                let mem = c.region(1336);
                let paths = (sent as usize).div_ceil(5);
                self.keys[..paths]
                    .iter()
                    .map(|&key| {
                        let s = (dta::keywrite_checksum(key) & (PC_SLOTS - 1)) as usize * 32;
                        if mem[s + 20..s + 24] != dta::keywrite_checksum(key).to_le_bytes() {
                            return 0;
                        }
                        (1..=5u32)
                            .filter(|&h| {
                                let o = s + 4 * (h as usize - 1);
                                mem[o..o + 4] == key.wrapping_mul(8).wrapping_add(h).to_be_bytes()
                            })
                            .count() as u64
                    })
                    .sum()
            }
        }
    }
}

/// One run's accounting.
#[derive(Debug, Default)]
struct Tally {
    sent: u64,
    stored: u64,
    /// seq_unrecoverable.
    unrecoverable: u64,
    /// Reports dropped under a named reason (duplicates excluded).
    dropped: u64,
    /// lost_entries + region_lost_entries.
    given_up: u64,
    /// unknown_entries: atomics whose connection was lost before their ACK (applied or not).
    unknown: u64,
    /// Frames the links lost: reporter→translator, translator→collector, back, NACKs.
    link_lost: [u64; 4],
    /// Reports sent while no translator was running (a restart): lost on the way, and no
    /// counter anywhere can hold them — DTA reports are not acknowledged.
    into_outage: u64,
}

impl Tally {
    fn lost(&self) -> u64 {
        self.unrecoverable + self.dropped + self.given_up
    }

    /// stored + lost + `extra` = sent, up to the items of unknown outcome (each applied or
    /// not): stored + lost + extra ≤ sent ≤ that + unknown.
    fn closes(&self, extra: u64) -> bool {
        let known = self.stored + self.lost() + extra;
        known <= self.sent && self.sent <= known + self.unknown
    }
}

/// Reports lost under the translator's named reasons (`drop_is_loss`), in all and per reason.
fn report_drops(lab: &Lab) -> (u64, Vec<(&'static str, u64)>) {
    let names = lab.sw.drop_reasons().names();
    let mut v = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let c = lab.sw.counters().drops[i];
        if c > 0 && dataplane::programs::dta_translator::drop_is_loss(n) {
            v.push((*n, c));
        }
    }
    (v.iter().map(|x| x.1).sum(), v)
}

/// A reporter: a `ReportSender` whose reports reach the lab through `lab.report_bytes` (with
/// the lab's reporter→translator loss), and whose NACKs come back through `nack_loss`.
struct Reporter {
    sender: ReportSender,
    nack_loss: Loss,
    buf: [u8; 64],
    /// Hung: NACKs are not answered.
    deaf: bool,
}

impl Reporter {
    fn new(epoch: u8, nack_loss: Loss) -> Self {
        Self { sender: ReportSender::new(MAX_KEEP, epoch), nack_loss, buf: [0; 64], deaf: false }
    }

    fn send(&mut self, lab: &mut Lab, p: Primitive<'_>) {
        let seq = self.sender.sequence(true, Priority::High);
        let r = DtaRepr { immediate: false, seq: Some(seq), primitive: p };
        let len = self.sender.emit(&r, &mut self.buf).unwrap();
        let b = self.buf;
        lab.report_bytes(REPORTER, C0, &b[..len]);
    }

    fn handle_nacks(&mut self, lab: &mut Lab) {
        for (_, nack) in lab.nacks() {
            if self.deaf || self.nack_loss.lose() {
                continue;
            }
            let mut resend = Vec::new();
            self.sender.on_nack(&nack, 0, |b| resend.push(b.to_vec()));
            for b in resend {
                lab.report_bytes(REPORTER, C0, &b);
            }
        }
    }
}

/// Run `reports` reports of `kind`, one every `gap_us` (a 1 µs step), `per_mille` loss on both
/// hops in both directions; `fault(lab, i)` runs before report `i`. The last 300 reports and
/// the NACKs after them are lossless (the tail). Returns the tally.
fn run(
    kind: Kind,
    reports: u32,
    gap_us: usize,
    per_mille: u64,
    fault: impl FnMut(&mut Lab, &mut Reporter, u32, &mut Tally),
) -> (Lab, Tally) {
    run_with("", kind, reports, gap_us, per_mille, fault)
}

/// [`run`] with `extra` `[dta]` settings.
fn run_with(
    extra: &str,
    kind: Kind,
    reports: u32,
    gap_us: usize,
    per_mille: u64,
    mut fault: impl FnMut(&mut Lab, &mut Reporter, u32, &mut Tally),
) -> (Lab, Tally) {
    let mut lab = new_lab(extra);
    let w = Workload::new(kind, reports as usize + 300);
    let seed = u64::from(reports) * 31 + per_mille;
    lab.to_translator = Loss::new(seed + 1, per_mille);
    lab.to_collector = Loss::new(seed + 2, per_mille);
    lab.from_collector = Loss::new(seed + 3, per_mille);
    let mut rep = Reporter::new(3, Loss::new(seed + 4, per_mille));
    let mut t = Tally::default();
    let total = reports + 300;
    for i in 0..total {
        if i == reports {
            t.link_lost =
                [lab.to_translator.lost, lab.to_collector.lost, lab.from_collector.lost, rep.nack_loss.lost];
            lab.to_translator = Loss::none();
            lab.to_collector = Loss::none();
            lab.from_collector = Loss::none();
            rep.nack_loss = Loss::none();
        }
        fault(&mut lab, &mut rep, i, &mut t);
        rep.send(&mut lab, w.primitive(i));
        for _ in 0..gap_us {
            lab.step();
            rep.handle_nacks(&mut lab);
        }
    }
    for _ in 0..50_000 {
        lab.step();
        rep.handle_nacks(&mut lab);
    }
    let st = lab.sw.program().stats();
    t.sent = u64::from(total);
    t.stored = w.stored(&lab.collectors[0], total);
    t.unrecoverable = st.seq_unrecoverable;
    t.dropped = report_drops(&lab).0;
    t.given_up = st.lost_entries + st.region_lost_entries;
    t.unknown = st.unknown_entries;
    t.into_outage = lab.outage;
    println!(
        "{kind:?} {reports} reports, 1 per {gap_us} µs, {:.1} % loss: sent {} stored {} counted lost {} \
         (unrecoverable {}, dropped {:?}, given up {}) into outage {}; link lost {}/{}/{} NACKs lost {}; \
         resent {} retransmitted {} replayed {} resets {}\n{st:?}",
        per_mille as f64 / 10.0,
        t.sent,
        t.stored,
        t.lost(),
        t.unrecoverable,
        report_drops(&lab).1,
        t.given_up,
        t.into_outage,
        t.link_lost[0],
        t.link_lost[1],
        t.link_lost[2],
        t.link_lost[3],
        rep.sender.resent,
        st.retransmitted,
        st.replayed,
        st.resets,
    );
    (lab, t)
}

fn check_lossless(kind: Kind, reports: u32, gap_us: usize, per_mille: u64) {
    let (lab, t) = run(kind, reports, gap_us, per_mille, |_, _, _, _| {});
    // (NACKs are few: at 1 % none of them may be lost.)
    assert!(t.link_lost[..3].iter().all(|&l| l > 0), "a link lost nothing: {t:?}");
    let _ = lab;
    assert!(t.closes(0), "{kind:?}: stored + counted lost = sent (up to unknown outcomes); {t:?}");
    assert_eq!(t.stored, t.sent, "{kind:?}: high-priority reports, loss only: none lost; {t:?}");
}

// 10 k reports/s (one per 100 µs) and 100 k reports/s (one per 10 µs), 1 % and 5 % loss.

#[test]
fn append_under_loss() {
    for (gap, pm) in [(100, 10), (100, 50), (10, 10), (10, 50)] {
        check_lossless(Kind::Append, if gap == 100 { 1000 } else { 4000 }, gap, pm);
    }
}

#[test]
fn keywrite_under_loss() {
    for (gap, pm) in [(100, 10), (100, 50), (10, 10), (10, 50)] {
        check_lossless(Kind::KeyWrite, if gap == 100 { 1000 } else { 4000 }, gap, pm);
    }
}

#[test]
fn keyincrement_under_loss() {
    for (gap, pm) in [(100, 10), (100, 50), (10, 10), (10, 50)] {
        check_lossless(Kind::KeyIncrement, if gap == 100 { 999 } else { 3999 }, gap, pm);
    }
}

#[test]
fn postcarder_under_loss() {
    for (gap, pm) in [(100, 10), (100, 50), (10, 10), (10, 50)] {
        check_lossless(Kind::Postcarder, if gap == 100 { 1000 } else { 3000 }, gap, pm);
    }
}

/// The collector is killed (-9: its memory and connections gone) mid-run and restarted 20 ms
/// later with new regions. The translator finds its QPs dead (timeouts), reconnects, learns the
/// new regions, and counts what it wrote to the old ones and what it could not write meanwhile.
#[test]
fn collector_death_is_counted() {
    for kind in [Kind::Append, Kind::KeyWrite, Kind::KeyIncrement] {
        let mut down_at = None;
        let (lab, t) = run(kind, 3000, 100, 10, |lab, _, i, _| {
            if i == 1000 {
                lab.collectors[0].up = false;
                down_at = Some(lab.now);
            }
            if i == 1200 {
                lab.collectors[0] = collector(99);
            }
        });
        let st = lab.sw.program().stats();
        assert!(st.resets >= 1 && st.region_lost_entries > 0, "{st:?}");
        assert!(t.closes(0), "{kind:?}: stored + counted lost = sent (up to unknown outcomes); {t:?}");
        assert!(t.stored > 0, "{kind:?}: writes resumed after the restart");
        assert!(down_at.is_some());
    }
}

/// The collector stops answering for 70 ms (a pause, a link flap) but keeps its memory: the
/// translator's QPs time out and reconnect to the same regions, replay what was unacknowledged,
/// and Append continues at its ring position; the high-priority reports that come while the QP
/// reconnects wait (parked) — nothing lost, nothing written twice.
#[test]
fn collector_pause_loses_nothing() {
    for kind in [Kind::Append, Kind::KeyWrite] {
        let (lab, t) = run(kind, 3000, 100, 0, |lab, _, i, _| {
            if i == 1000 {
                lab.collectors[0].up = false;
            }
            // 70 ms: longer than the requester's retries (7, the timeout doubling from 200 µs).
            if i == 1700 {
                lab.collectors[0].up = true;
            }
        });
        let st = lab.sw.program().stats();
        assert!(st.resets >= 1, "{st:?}");
        assert_eq!(st.region_lost_entries, 0, "{st:?}");
        assert!(t.closes(0), "{kind:?}: {t:?}");
        // Reports that came while the QP was reconnecting waited (high priority, parked).
        assert_eq!((t.stored, t.lost()), (t.sent, 0), "{kind:?}: {t:?}");
        assert!(st.parked > 0 && st.unparked == st.parked, "{st:?}");
    }
}

/// A reporter hangs (stops answering NACKs) and restarts mid-run, a new epoch, its kept
/// reports gone: the reports the translator was still missing from it are counted
/// unrecoverable when the new epoch shows up; everything else is stored.
#[test]
fn reporter_restart_is_counted() {
    let (lab, t) = run(Kind::Append, 3000, 10, 50, |lab, rep, i, _| {
        if i == 1400 {
            rep.deaf = true;
        }
        // The link is lossless for the last 20 reports before the restart, so every gap the
        // old epoch left is one the translator has seen (a report lost at its very end could
        // be revealed only by a later report of the same epoch, and none comes).
        if i == 1480 {
            lab.to_translator = Loss::none();
        }
        if i == 1500 {
            *rep = Reporter::new(9, Loss::new(77, 50));
            lab.to_translator = Loss::new(78, 50);
        }
    });
    let st = lab.sw.program().stats();
    assert_eq!(st.reporter_restarts, 1);
    assert!(t.unrecoverable > 0, "{t:?}");
    assert!(t.closes(0), "{t:?}");
}

/// The translator is stopped (SIGTERM: it writes out what it holds, waits for the ACKs, sends
/// DREQs) and a new one starts 5 ms later, with fresh CM communication IDs: it connects
/// within milliseconds (under 200 ms with a metadata SEND lost) without the collector's help, learns each Append list's head from the
/// collector's metadata and continues it — no entry written over, none twice. The reports sent
/// into the outage are lost on the way, where no counter can see them (DTA reports are not
/// acknowledged); everything else is stored or counted.
#[test]
fn translator_restart_reconnects_and_continues() {
    for kind in [Kind::Append, Kind::KeyWrite, Kind::KeyIncrement] {
        let (mut restarted, mut ready_after) = (0u64, None);
        let (mut old_lost, mut old_unknown) = (0, 0);
        // The new translator joins the reporter mid-stream (join_ms, the default 100).
        let (lab, mut t) = run_with("join_ms = 100", kind, 3000, 100, 10, |lab, _, i, _| {
            if i == 1050 {
                lab.stop_translator(200_000);
                let conns = lab.collectors[0].ep.connections().count();
                assert_eq!(conns, 0, "{kind:?}: the DREQs freed every QP on the collector");
                // What the stopped translator counted goes with its final summary.
                let st = lab.sw.program().stats();
                old_lost =
                    st.seq_unrecoverable + report_drops(lab).0 + st.lost_entries + st.region_lost_entries;
                old_unknown = st.unknown_entries;
            }
            // The new translator first hears the reporter at number 1100 % 256 = 76, at least
            // JOIN_MIN: mid-stream. (Below it, it would take the reporter for new and NACK its
            // numbers from 0 — the trade-off `join_ms` documents.)
            if i == 1100 {
                lab.start_translator();
                restarted = lab.now;
            }
            if i > 1100 && ready_after.is_none() && lab.sw.program().ready() {
                ready_after = Some(lab.now - restarted);
            }
        });
        let ready_after = ready_after.expect("the new translator connected");
        // Milliseconds; a lost metadata SEND costs the collector's ACK timeout (67 ms).
        assert!(ready_after < 200_000_000, "{kind:?}: ready after {ready_after} ns");
        assert!(t.into_outage > 0);
        t.unknown += old_unknown;
        assert!(t.closes(old_lost + t.into_outage), "{kind:?}: {t:?} + {old_lost}");
        let conns: Vec<_> = lab.collectors[0].ep.connections().collect();
        assert_eq!(conns.len(), 5, "{kind:?}: {conns:?}");
    }
}

/// Reports (in reversed groups of 4, and of 32: a report overtaken by up to 31, the most the
/// 8-bit sequence numbers allow with `wire::dta::RESEND_WINDOW`) and the collector's replies
/// (each step's in reverse) reordered, on top of 5 % loss: nothing is stored twice, and
/// stored + counted lost = sent. With groups of 4 nothing is lost; with 32, a NACK reaches the
/// reporter 32 reports late, which leaves 64 numbers' time to recover a report and the rare one
/// that needs longer is counted.
#[test]
fn reordering_stores_nothing_twice_and_loses_nothing_uncounted() {
    for (kind, group) in [(Kind::Append, 4), (Kind::KeyWrite, 4), (Kind::Append, 32)] {
        let (_, t) = run(kind, 4000, 10, 50, |lab, _, i, _| {
            if i == 0 {
                lab.reorder_replies = true;
                lab.reorder_group = group;
            }
            // Reports (NACKed resends included) arrive in reversed groups.
            lab.reorder_reports = i < 4000;
        });
        assert!(t.closes(0), "{kind:?}, groups of {group}: {t:?}");
        if group <= 4 {
            assert_eq!(t.lost(), 0, "{kind:?}, groups of {group}: {t:?}");
        } else {
            assert!(t.lost() * 100 < t.sent, "{kind:?}, groups of {group}: {t:?}");
        }
    }
}
