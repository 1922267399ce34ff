//! DTA through a crash of any one party, on real frames in network namespaces (root; skipped
//! with a message otherwise, a failure under `SOFTFABRIC_REQUIRE_NETNS=1`), in the lab of
//! `tests/support/dta_lab.rs`. For every primitive, each party is taken down mid-stream while
//! reports flow at 20 k/s and another started in its place:
//!
//! * the **reporter** (`dataplane report` as a process) SIGKILLed — what it had sent read from
//!   its journal, to one burst — or SIGTERMed (its summary), then a new one started: the
//!   translator counts the old stream's holes at the new one's hello;
//! * the **translator** (`dataplane run` as a process) SIGKILLed or SIGTERMed, another started
//!   300 ms later: its reporter counts what none could;
//! * the **collector** stopped (its memory and QPs gone, nothing said on the wire: the same
//!   as a SIGKILL, which is all a soft-RNIC collector's stop can be — its memory is the
//!   process's) and another started 200 ms later: the translator counts what the old one held.
//!
//! Each case prints sent / stored / lost by reason / unknown / pending and asserts
//! stored + counted lost + pending ≤ sent ≤ that + unknown.

#[path = "support/dta_lab.rs"]
mod lab;
#[path = "support/in_netns.rs"]
mod netns_thread;
#[path = "../dataplane/tests/support/netns.rs"]
mod support;

use std::time::Duration;

use dataplane::runtime::report;
use lab::*;
use softfabric::dta_demo::accounting;
use support::available;

/// The collector dies mid-run (its memory and QPs gone) and another starts 200 ms later, for
/// every primitive: the translator reconnects on its own, high-priority reports wait while it
/// does, and what the old collector held is counted (`region_lost_entries`).
#[test]
fn collector_death_on_real_frames_is_counted() {
    if !available() {
        return;
    }
    for (i, kind) in KINDS.into_iter().enumerate() {
        let net = network(&format!("dk{i}"));
        let collector = start_collector(&net);
        let rt = start_translator(&net, 0);
        let ns0 = net.ns[0].clone();
        let count = 40_000;
        let sender = std::thread::spawn(move || {
            run(&ns0, spec(kind, count), count, 20_000, report::fresh_epoch(), 200)
        });
        std::thread::sleep(Duration::from_millis(600));
        collector.stop();
        std::thread::sleep(Duration::from_millis(200));
        let collector = start_collector(&net);
        let r = sender.join().unwrap();
        settle(&rt);
        let stored = stored(kind, collector.stores(), r.sent).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let a = accounting(&rt).unwrap();
        eprintln!(
            "{kind:?}, collector killed: sent {} stored {stored} counted lost {} pending {} unknown {}; {:?} {:?}",
            r.sent, a.lost, a.pending, a.unknown, a.stats, a.dropped
        );
        assert!(a.stats.get("resets") > 0, "{kind:?}: the translator saw the collector go: {:?}", a.stats);
        assert!(stored > 0, "{kind:?}: writes resumed into the new collector");
        assert!(
            a.closes(stored, r.sent),
            "{kind:?}: stored {stored} + counted lost {} + pending {} = sent {} (up to {} of unknown outcome)",
            a.lost,
            a.pending,
            r.sent,
            a.unknown
        );
        let _ = rt.stop();
        collector.stop();
    }
}

/// Stop the parties of a case.
fn continue_after(rt: dataplane::runtime::Runtime, collector: collector::Collector) {
    let _ = rt.stop();
    collector.stop();
}

/// Keys (Key-Write) and paths (Postcarder) of the second reporter in the reporter cases: past
/// the first's, so each report has a slot of its own.
const SECOND_BASE: u32 = 30_001;

/// The reporter dies mid-stream — `dataplane report` SIGKILLed, or SIGTERMed (it stops, answers
/// NACKs for its linger, prints its summary) — and a new one starts with a new hello, for the
/// primitives whose reports a second run can send without touching the first's data. The
/// translator counts, at the new stream's hello, every report of the old stream it still
/// missed (`seq_unrecoverable`); what the killed one had sent is read from its journal, which
/// is behind by at most the burst it died sending. stored + counted lost + pending ≤ sent ≤
/// that + unknown, with sent known to a burst after a SIGKILL and exactly after a SIGTERM.
/// A new Sketch-Merge reporter of the same reporter ID re-enters the round its predecessor left
/// half-merged: the translator's sketch NACK names the last column merged and the reporter
/// goes forward past it (`sketch_skipped`); every column of the round is then stored once or
/// counted.
#[test]
fn reporter_killed_or_stopped_mid_stream_is_counted() {
    if !available() {
        return;
    }
    let mut k = 0;
    for kind in KINDS {
        for kill in [true, false] {
            k += 1;
            let net = network(&format!("rk{k}"));
            let collector = start_collector(&net);
            let rt = start_translator(&net, 0);
            let dir = std::env::temp_dir().join(format!("softfabric-rk{k}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let journal = dir.join("journal");
            let count = 24_000;
            let mut first = spawn_reporter(&net.ns[0], kind, count, 1, 20_000, &journal);
            std::thread::sleep(Duration::from_millis(600));
            let (first_lo, first_hi) = if kill {
                first.kill().unwrap();
                let _ = first.wait();
                let j = report::Journal::read(&journal).unwrap_or_else(|e| panic!("{e}"));
                assert!(!j.ended && j.sent > 0 && j.sent < count, "{kind:?}: killed mid-stream: {j:?}");
                (j.sent, j.sent + ports::host::BURST as u64)
            } else {
                std::process::Command::new("kill").args(["-TERM", &first.id().to_string()]).status().unwrap();
                let out = first.wait_with_output().unwrap();
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                assert!(
                    out.status.success(),
                    "{kind:?}: the reporter's SIGTERM exit {:?}:\n{text}",
                    out.status
                );
                assert!(text.contains("interrupted"), "{kind:?}: stopped mid-stream:\n{text}");
                let sent = summary_sent(&text).unwrap_or_else(|| panic!("no summary in:\n{text}"));
                let j = report::Journal::read(&journal).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    j,
                    report::JournalEntry { sent, ended: true },
                    "{kind:?}: the journal's last word"
                );
                (sent, sent)
            };
            let base = if matches!(kind, Kind::KeyWrite | Kind::Postcarder) { SECOND_BASE } else { 1 };
            let second =
                run(&net.ns[0], spec_from(kind, count, base), count, 20_000, report::fresh_epoch(), 300);
            settle(&rt);
            let s = collector.stores();
            let stored = match kind {
                Kind::Append => stored_appends_of_two_runs(s, first_hi, second.sent),
                Kind::KeyIncrement => stored(kind, s, u64::MAX),
                Kind::SketchMerge => stored(kind, s, count),
                _ => stored_from(kind, s, first_hi, 1)
                    .and_then(|a| Ok(a + stored_from(kind, s, second.sent, base)?)),
            }
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            let a = accounting(&rt).unwrap();
            let known = stored + a.lost + a.pending;
            eprintln!(
                "{kind:?}, reporter {}: sent {first_lo}..={first_hi} + {} stored {stored} counted lost {} pending {} \
                 unknown {}; {} reporter restarts, {} unrecoverable; {} sketch columns skipped; {:?}",
                if kill { "SIGKILLed" } else { "SIGTERMed" },
                second.sent,
                a.lost,
                a.pending,
                a.unknown,
                a.stats.get("reporter_restarts"),
                a.stats.get("seq_unrecoverable"),
                second.sketch_skipped,
                a.dropped
            );
            assert_eq!(second.hellos, (1, 0), "{kind:?}: the new reporter's hello was answered");
            assert!(a.stats.get("reporter_restarts") >= 1, "{kind:?}: {:?}", a.stats);
            if kind == Kind::SketchMerge {
                // A sketch column is state, not an event: each column of the round holds the
                // reporter ID's contribution once — its predecessor's where that was merged
                // (the new one skips those columns), its own after — or is counted.
                assert!(
                    second.sketch_skipped > 0,
                    "the new reporter went forward to its predecessor's position"
                );
                assert_eq!(known, count, "{kind:?}: every column of the round stored or counted, once");
                continue_after(rt, collector);
                continue;
            }
            assert!(
                known <= first_hi + second.sent && first_lo + second.sent <= known + a.unknown,
                "{kind:?}: stored + counted lost + pending {known} ≤ sent {first_lo}..={first_hi} + {} ≤ that + \
                 unknown {}",
                second.sent,
                a.unknown
            );
            let _ = std::fs::remove_dir_all(&dir);
            let _ = rt.stop();
            collector.stop();
        }
    }
}

/// The translator dies mid-stream — SIGKILL, or SIGTERM — and another starts 300 ms later
/// while the reporter goes on. Nobody can count what arrives while none runs, nor what a
/// killed one held; the reporter can, from the progress each translator sends it (what it has
/// settled: written and acknowledged, or counted lost): after a SIGTERM the stopped one's last
/// word says exactly where it stood, and what came after is counted lost by the reporter;
/// after a SIGKILL what the dead one had not settled is of unknown outcome, counted as such.
/// For each primitive: stored + counted lost + pending ≤ sent ≤ that + unknown, with nothing
/// unknown after a SIGTERM.
#[test]
fn translator_crash_mid_stream_is_counted_by_the_reporter() {
    if !available() {
        return;
    }
    let mut k = 0;
    for kind in KINDS {
        for kill in [true, false] {
            k += 1;
            let net = network(&format!("x{k}"));
            let collector = start_collector(&net);
            let (mut t1, _sock) = spawn_translator(&net, &format!("x{k}"));
            let ns0 = net.ns[0].clone();
            let count = 24_000;
            let sender = std::thread::spawn(move || {
                run(&ns0, spec(kind, count), count, 20_000, report::fresh_epoch(), 300)
            });
            std::thread::sleep(Duration::from_millis(450));
            let old = if kill {
                t1.kill().unwrap();
                let _ = t1.wait();
                None
            } else {
                std::process::Command::new("kill").args(["-TERM", &t1.id().to_string()]).status().unwrap();
                let out = t1.wait_with_output().unwrap();
                assert!(out.status.success(), "the translator's SIGTERM exit: {:?}", out.status);
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                Some(
                    softfabric::dta_demo::final_accounting_printed(&text)
                        .unwrap_or_else(|| panic!("no final counters in:\n{text}")),
                )
            };
            std::thread::sleep(Duration::from_millis(300));
            let rt = start_translator(&net, 2000);
            let r = sender.join().unwrap();
            settle(&rt);
            let stored = stored(kind, collector.stores(), r.sent).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            let new = accounting(&rt).unwrap();
            let (old_lost, old_pending, old_unknown) =
                old.as_ref().map_or((0, 0, 0), |a| (a.lost, a.pending, a.unknown));
            let known = stored
                + new.lost
                + new.pending
                + old_lost
                + old_pending
                + r.lost_translator_down
                + r.lost_at_killed_translator;
            let unknown = new.unknown + old_unknown + r.unknown_translator_crash;
            eprintln!(
                "{kind:?}, translator {}: sent {} stored {stored}; the new translator counted {} lost, {} pending; \
                 the old one {old_lost} lost, {old_pending} pending; the reporter: {} translator restarts, {} lost \
                 while none ran, {} counted lost by the killed one, {} of unknown outcome; {:?}",
                if kill { "SIGKILLed" } else { "SIGTERMed" },
                r.sent,
                new.lost,
                new.pending,
                r.translator_restarts,
                r.lost_translator_down,
                r.lost_at_killed_translator,
                r.unknown_translator_crash,
                new.stats
            );
            assert_eq!(r.sent, count);
            assert_eq!(r.translator_restarts, 1, "the reporter heard the new translator");
            if kind == Kind::SketchMerge {
                // A sketch is the reporter's state: the new translator's sketch NACK has the
                // reporter send the round again from the last column merged (none), so the
                // round is whole again whatever the dead one held — and a column the stopped
                // one counted lost at its stop may be stored after all: counted lost is an
                // upper bound here, never short.
                assert!(
                    stored <= r.sent && r.sent <= stored + new.lost + new.pending + old_lost + old_pending,
                    "{kind:?}: stored {stored} ≤ sent {} ≤ stored + counted lost + pending",
                    r.sent
                );
                continue_after(rt, collector);
                continue;
            }
            assert!(
                known <= r.sent && r.sent <= known + unknown,
                "{kind:?}: stored + counted lost + pending {known} ≤ sent {} ≤ that + unknown {unknown}",
                r.sent
            );
            if kill {
                assert!(r.unknown_translator_crash > 0, "a crash mid-stream leaves some outcome unknown");
            } else {
                assert_eq!(unknown, 0, "a stop's last word leaves nothing unknown");
                assert!(r.lost_translator_down > 0, "reports were sent while none ran");
            }
            let _ = rt.stop();
            collector.stop();
        }
    }
}
