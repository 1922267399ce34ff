//! The DTA loss-and-fault cases on real sockets and threads: the load generator, the
//! `dta_translator` runtime on a UDP port and the soft-RNIC collector, on loopback addresses
//! (no root). Loss is injected on the translator's port (`[[port]] inject_loss`: this kernel
//! has no `netem`), so it hits every hop the translator has: reports in, NACKs out, RDMA
//! requests out, acknowledgements and CM in. Each case checks **stored + counted lost = sent**
//! (+ `seq_missing`, reports still being asked for) from what the translator counts (`show dta
//! stats`, drops by reason) and what the collector answers; `dataplane/tests/dta_faults.rs` runs the same accounting on a virtual clock, for
//! every primitive and for restarts on both sides.

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use collector::{Collector, CollectorConfig};
use roce::dta::LoadKind;
use softfabric::dta_demo::{Lab, LabConfig, accounting, load, send};

const LISTS: u32 = 4;

fn ip(last: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, last)
}

fn lab(collector: u8, translator: u8, loss: f64) -> Lab {
    Lab::start(LabConfig {
        collector: ip(collector),
        translator: ip(translator),
        reporter: ip(30),
        keywrite_slots: 1 << 16,
        keywrite_redundancy: 2,
        keyincrement_slots: 1 << 16,
        lists: LISTS,
        append_entries: 1 << 18,
        sketch: (2, 16, 1),
        inject_loss: loss,
        ..LabConfig::demo()
    })
    .expect("collector and translator start and connect")
}

fn counted_lost(lab: &Lab) -> (u64, u64, String) {
    let a = accounting(&lab.translator).unwrap();
    (a.lost, a.pending, format!("{:?} dropped {:?}", a.stats, a.dropped))
}

fn stored_appends(lab: &Lab, sent: u64) -> u64 {
    softfabric::dta_demo::stored_appends(lab.collector.stores(), sent, LISTS)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn append_under_injected_loss_counts_everything() {
    // (rate, reports, loss): 10 k and 100 k reports/s, 1 % and 5 % on every hop.
    for (i, (rate, count, loss)) in
        [(10_000u64, 3_000u64, 0.01), (10_000, 3_000, 0.05), (100_000, 20_000, 0.01), (100_000, 20_000, 0.05)]
            .into_iter()
            .enumerate()
    {
        let lab = lab(70 + i as u8, 120 + i as u8, loss);
        let spec = load(LoadKind::Append { lists: LISTS }, 1);
        let r = lab.send(ip(31 + i as u8), &spec, count, rate).unwrap();
        lab.settle(Duration::from_secs(30)).unwrap();
        let stored = stored_appends(&lab, r.sent);
        let (lost, pending, detail) = counted_lost(&lab);
        let injected: u64 = lab.translator.snapshot().port_stats.iter().map(|p| p.injected).sum();
        eprintln!(
            "Append {count} at {rate}/s, {:.0} % loss: sent {} stored {stored} counted lost {lost} pending {pending}; \
             {injected} frames lost by injection, {} NACKs, {} resent, {} unrecoverable at the reporter; {detail}",
            loss * 100.0,
            r.sent,
            r.nacks,
            r.resent,
            r.unrecoverable
        );
        assert!(injected > 0);
        // Missing reports still asked for (pending) have had 100 ms of the reporter's linger;
        // any still missing is neither stored nor yet counted (counted when the reporter has
        // been silent for 1 s).
        assert_eq!(stored + lost + pending, r.sent, "stored + counted lost + pending = sent; {detail}");
        // High priority, retransmittable, loss alone. A report's number can be named for 96
        // reports (wire::dta::RESEND_WINDOW): 9.6 ms at 10 k/s, 0.96 ms at 100 k/s, in which a
        // NACK must reach the reporter and its resend the translator. Here the NACKs share the
        // translator's one UDP port with the go-back-N retransmissions the RDMA path's loss
        // sets off, on a 2-core machine running all three parties besides other tests: at
        // 100 k/s some of what the link lost is counted unrecoverable, at 10 k/s nearly
        // nothing. Counted; on a virtual clock (dataplane/tests/dta_faults.rs) nothing at all.
        // The kernel drops too when the translator is starved (rx_missed): at 100 k/s on a
        // loaded machine only the accounting is asserted.
        let missed: u64 = lab.translator.snapshot().port_stats.iter().map(|p| p.rx_missed).sum();
        if rate <= 10_000 {
            assert!(lost <= injected + missed, "more lost than the link lost: {detail}");
        }
        lab.stop();
    }
}

/// The collector is stopped (its memory gone) and another started on the same address mid-run:
/// the translator finds its QPs dead, reconnects to the new regions, and counts what the old
/// collector held and what it could not write meanwhile.
#[test]
fn collector_restart_mid_run_is_counted() {
    let Lab { cfg, collector, translator } = lab(90, 140, 0.0);
    let spec = load(LoadKind::Append { lists: LISTS }, 1);
    let t = cfg.translator;
    let sender = std::thread::spawn(move || send(t, ip(40), &spec, 40_000, 20_000).unwrap());
    std::thread::sleep(Duration::from_millis(600));
    collector.stop();
    std::thread::sleep(Duration::from_millis(200));
    let ccfg = CollectorConfig::parse(Path::new("<restarted collector>"), &cfg.collector_toml()).unwrap();
    let collector = Collector::start(&ccfg).unwrap();
    let sent = sender.join().unwrap();
    let lab = Lab { cfg, collector, translator };
    assert_eq!(sent.sent, 40_000);
    lab.settle(Duration::from_secs(30)).unwrap();
    let stored = stored_appends(&lab, sent.sent);
    let (lost, pending, detail) = counted_lost(&lab);
    eprintln!(
        "collector restart: sent {} stored {stored} counted lost {lost} pending {pending}; {detail}",
        sent.sent
    );
    let st = lab.translator_stats().unwrap();
    assert!(st.get("region_lost_entries") > 0 && st.get("resets") > 0, "{detail}");
    assert!(stored > 0, "writes resumed into the new collector");
    assert_eq!(stored + lost + pending, sent.sent, "stored + counted lost + pending = sent; {detail}");
    lab.stop();
}
