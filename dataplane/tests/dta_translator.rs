//! The DTA translator end to end on a virtual clock: reports in on p0, RoCEv2 out on p1 to
//! collectors that are passive endpoints built from `roce` (CM server, responder QPs over
//! regions, the metadata SEND), with deterministic loss where a test asks for it.

#[path = "dta/lab.rs"]
mod lab;

use lab::{C0, C0_MAC, Collector, Lab, Loss, REPORTER, config, standard_lab};
use wire::dta::{self, DtaRepr, MergeOp, Primitive, Priority, Sequence};

fn kw(key: u32, n: u8, data: &[u8; 4], seq: Option<Sequence>) -> DtaRepr<'_> {
    DtaRepr { immediate: false, seq, primitive: Primitive::KeyWrite { redundancy: n, key, data } }
}

fn long(seqnum: u8, retransmittable: bool, priority: Priority) -> Option<Sequence> {
    Some(Sequence { seqnum, retransmittable, priority, epoch: 0 })
}

#[test]
fn connects_with_cm_and_learns_every_region() {
    let lab = standard_lab("");
    let qps = lab.sw.program().queue_pairs();
    assert_eq!(qps.len(), 8);
    let c = &lab.collectors[0];
    for q in qps {
        let (name, meta, slots) = (q.name, q.region, q.slots);
        let port =
            c.regions.iter().find(|r| r.1 == meta.rkey).map(|r| r.0).unwrap_or_else(|| panic!("{name}"));
        let (_, rkey, va) = *c.regions.iter().find(|r| r.0 == port).unwrap();
        assert_eq!((meta.rkey, meta.va), (rkey, va), "{name}");
        assert!(slots > 0, "{name}");
    }
    // REQ/REP/RTU and the metadata SEND, acknowledged: eight connections, nothing refused.
    let st = c.ep.stats();
    assert_eq!(st.connections, 8);
    assert_eq!((st.access_errors, st.invalid, st.unknown_qp), (0, 0, 0));
    assert_eq!(lab.sw.program().stats().connects, 8);
}

/// With `key_hash = "reference"`, copy n of a Key-Write lands at `CRC32(key ‖ n) & 255` (the
/// design's test vectors), holding the key's checksum and the data, for N = 1..4 interleaved.
#[test]
fn keywrite_copies_land_at_the_test_vector_slots() {
    let mut lab = standard_lab("key_hash = \"reference\"");
    let vectors: [(u32, u32, [u32; 4]); 3] = [
        (0, 0x2144df1c, [0xc622f71d, 0xb125c78b, 0x282c9631, 0x5f2ba6a7]),
        (1, 0x99f8b879, [0xfb42dead, 0x8c45ee3b, 0x154cbf81, 0x624b8f17]),
        (123456, 0x092db2ae, [0xe3654cd0, 0x94627c46, 0x0d6b2dfc, 0x7a6c1d6a]),
    ];
    // Interleave: every key with every N, N rising per key, keys round-robin.
    let mut i = 0u8;
    for n in 1..=4u8 {
        for (key, _, _) in vectors {
            let data = [n, i, 0xab, 0xcd];
            lab.report(REPORTER, C0, &kw(key, n, &data, long(i, false, Priority::Low)));
            i += 1;
        }
    }
    lab.run(50);
    let mem = lab.collectors[0].region(1337);
    for (key, checksum, slots) in vectors {
        for (n, slot_hash) in slots.iter().enumerate() {
            let s = (slot_hash & 255) as usize * 8;
            let slot = &mem[s..s + 8];
            assert_eq!(&slot[..4], &checksum.to_le_bytes(), "key {key} copy {n}: checksum");
            // The last report that wrote copy n of this key had N = 4 (every copy is written by
            // N = 4, the last round).
            assert_eq!(slot[4], 4, "key {key} copy {n}: from the N=4 report");
            assert_eq!(&slot[6..8], &[0xab, 0xcd]);
        }
    }
    // Copies beyond N were never written by smaller N: check the N = 1 round alone.
    let mut lab = standard_lab("key_hash = \"reference\"");
    lab.report(REPORTER, C0, &kw(123456, 1, &[9, 9, 9, 9], None.or(long(0, false, Priority::Low))));
    lab.run(20);
    let mem = lab.collectors[0].region(1337);
    let used: Vec<usize> = (0..256).filter(|s| mem[s * 8..s * 8 + 8] != [0; 8]).collect();
    assert_eq!(used, [(0xe3654cd0u32 & 255) as usize]);
}

/// By default each copy hashes with its own polynomial: copy n lands at
/// `keywrite_slot_hash(key, n, Independent) & 255`, and the copies of a key are not the
/// reference's (whose copies differ by a constant XOR).
#[test]
fn keywrite_copies_hash_independently_by_default() {
    let mut lab = standard_lab("");
    let keys = [0u32, 1, 123_456, 0xdead_beef];
    for (i, &key) in keys.iter().enumerate() {
        lab.report(REPORTER, C0, &kw(key, 4, &[i as u8, 1, 2, 3], long(i as u8, false, Priority::Low)));
    }
    lab.run(50);
    let mem = lab.collectors[0].region(1337);
    let mut written = std::collections::HashSet::new();
    for (i, &key) in keys.iter().enumerate() {
        for n in 0..4u8 {
            let s = (dta::keywrite_slot_hash(key, n, dta::KeyHashMode::Independent) & 255) as usize;
            written.insert(s);
            let slot = &mem[s * 8..s * 8 + 8];
            // A later key may have taken the slot; then it holds that key's checksum.
            let owner = keys[i..]
                .iter()
                .rev()
                .find(|&&k| {
                    (0..4u8).any(|m| {
                        (dta::keywrite_slot_hash(k, m, dta::KeyHashMode::Independent) & 255) as usize == s
                    })
                })
                .copied()
                .unwrap();
            assert_eq!(&slot[..4], &dta::keywrite_checksum(owner).to_le_bytes(), "key {key} copy {n}");
        }
        let reference: Vec<u32> =
            (0..4u8).map(|n| dta::keywrite_slot_hash(key, n, dta::KeyHashMode::Reference) & 255).collect();
        let ours: Vec<u32> =
            (0..4u8).map(|n| dta::keywrite_slot_hash(key, n, dta::KeyHashMode::Independent) & 255).collect();
        assert_ne!(reference, ours);
    }
    let used = (0..256).filter(|s| mem[s * 8..s * 8 + 8] != [0; 8]).count();
    assert_eq!(used, written.len(), "exactly the copies' slots are written");
}

/// A Key-Increment report whose N is not the store's is refused under its own reason: the
/// store's queries take the minimum over its N copies, and a copy the report did not write
/// would read 0.
#[test]
fn keyincrement_with_another_n_than_the_stores_is_refused() {
    let collectors = r#"
[[dta.collector]]
name = "c0"
ip = "10.0.0.51"
keyincrement = 1339
keyincrement_redundancy = 2
"#;
    let c = Collector::new(C0, C0_MAC, &[(1339, 4096 * 8)], 7);
    let mut lab = Lab::new(&config("", collectors, &[(C0, C0_MAC)]), vec![c]);
    lab.connect(200_000);
    for n in [1u8, 2, 3] {
        let r = DtaRepr {
            immediate: false,
            seq: long(0, false, Priority::Low),
            primitive: Primitive::KeyIncrement { redundancy: n, key: 5, counter: 10 },
        };
        lab.report(REPORTER, C0, &r);
    }
    lab.run(50);
    assert_eq!(lab.drops("dta_redundancy_mismatch"), 2);
    let mem = lab.collectors[0].region(1339);
    let h = dta::KeyHash::new(5);
    for n in 0..3u8 {
        let s = (h.slot(n) & 4095) as usize * 8;
        let v = u64::from_le_bytes(mem[s..s + 8].try_into().unwrap());
        assert_eq!(v, if n < 2 { 10 } else { 0 }, "copy {n}: only the N=2 report was applied");
    }
}

#[test]
fn keyincrement_counters_equal_the_sums() {
    let mut lab = standard_lab("");
    // Keys whose two copies land on slots no other key uses (collision-free).
    let mut keys = Vec::new();
    let mut used = std::collections::HashSet::new();
    let mut k = 0u32;
    while keys.len() < 100 {
        let s: Vec<u32> =
            (0..2).map(|n| dta::keywrite_slot_hash(k, n, dta::KeyHashMode::Independent) & 4095).collect();
        if s[0] != s[1] && !used.contains(&s[0]) && !used.contains(&s[1]) {
            used.extend(s);
            keys.push(k);
        }
        k += 1;
    }
    let mut sums = vec![0u64; keys.len()];
    for round in 0..20u64 {
        for (i, &key) in keys.iter().enumerate() {
            let add = round * 1000 + i as u64;
            sums[i] += add;
            let r = DtaRepr {
                immediate: false,
                seq: long(0, false, Priority::Low),
                primitive: Primitive::KeyIncrement { redundancy: 2, key, counter: add },
            };
            lab.report(REPORTER, C0, &r);
        }
        lab.run(5);
    }
    lab.run(100);
    let mem = lab.collectors[0].region(1339);
    for (i, &key) in keys.iter().enumerate() {
        for n in 0..2 {
            let s = (dta::keywrite_slot_hash(key, n, dta::KeyHashMode::Independent) & 4095) as usize * 8;
            let v = u64::from_le_bytes(mem[s..s + 8].try_into().unwrap());
            assert_eq!(v, sums[i], "key {key} copy {n}");
        }
    }
    assert_eq!(lab.sw.program().stats().reports[2], 2000);
}

/// Append entries read back in order from each list's ring.
fn read_list(mem: &[u8], n: usize) -> Vec<u32> {
    (0..n).map(|i| u32::from_le_bytes(mem[4 * i..4 * i + 4].try_into().unwrap())).collect()
}

fn append(list: u32, data: u32, seq: Option<Sequence>) -> DtaRepr<'static> {
    DtaRepr { immediate: false, seq, primitive: Primitive::Append { list_id: list, data } }
}

#[test]
fn append_batches_and_flushes_partial_batches() {
    let mut lab = standard_lab("append_flush_us = 20");
    // 37 entries into list 0 (batch 16): two full batches at once, five after the flush timer.
    for i in 0..37u32 {
        lab.report(REPORTER, C0, &append(0, i + 1, long(0, false, Priority::Low)));
    }
    lab.run(5);
    assert_eq!(
        read_list(lab.collectors[0].region(1340), 37)[..33],
        (1..=32).chain([0]).collect::<Vec<_>>()[..]
    );
    lab.run(40);
    assert_eq!(read_list(lab.collectors[0].region(1340), 38), (1..=37).chain([0]).collect::<Vec<_>>());
}

/// 1 % of packets between the translator and the collector lost, each way: after recovery every
/// Append entry is in memory exactly once and in order, and every Key-Write slot holds the right
/// value. The reports are high priority: while a QP's congestion window is closed by a loss they
/// wait (parked, in arrival order) — low-priority ones would be dropped and counted
/// (`dta_window_full`).
#[test]
fn loss_to_the_collector_is_recovered() {
    let mut lab = standard_lab("");
    lab.to_collector = Loss::new(11, 10);
    lab.from_collector = Loss::new(12, 10);
    let per_list = 3000u32;
    let mut kw_last = std::collections::HashMap::new();
    for i in 0..per_list {
        for list in 0..4u32 {
            lab.report(REPORTER, C0, &append(list, list << 24 | (i + 1), long(0, false, Priority::High)));
        }
        let key = i % 50;
        let data = (i + 1).to_be_bytes();
        lab.report(REPORTER, C0, &kw(key, 2, &data, long(0, false, Priority::High)));
        kw_last.insert(key, data);
        // 5 reports per µs of the lab's clock: what a 40 M reports/s burst would be when the
        // window of 16 384 held everything; with the congestion window the reports park, and
        // the queue (4096) must not overflow.
        lab.step();
    }
    lab.run(20_000);
    assert!(
        lab.to_collector.lost > 50 && lab.from_collector.lost > 0,
        "{} {}",
        lab.to_collector.lost,
        lab.from_collector.lost
    );
    let st = lab.sw.program().stats();
    assert!(st.retransmitted > 0);
    for (list, port) in [(0u32, 1340u16), (1, 1341), (2, 1342), (3, 1343)] {
        let got = read_list(lab.collectors[0].region(port), per_list as usize + 1);
        let want: Vec<u32> = (1..=per_list).map(|i| list << 24 | i).chain([0]).collect();
        let first_wrong = got.iter().zip(&want).position(|(a, b)| a != b);
        assert_eq!(
            first_wrong,
            None,
            "list {list}: every entry once, in order ({:?})",
            lab.sw.program().stats()
        );
    }
    let mem = lab.collectors[0].region(1337);
    for (key, data) in kw_last {
        for n in 0..2 {
            let s = (dta::keywrite_slot_hash(key, n, dta::KeyHashMode::Independent) & 255) as usize * 8;
            // A key's slot may be shared with another key's copy: the checksum says whose it is.
            if mem[s..s + 4] == dta::keywrite_checksum(key).to_le_bytes() {
                assert_eq!(&mem[s + 4..s + 8], &data, "key {key} copy {n}");
            }
        }
    }
    assert_eq!(lab.drops("dta_window_full"), 0);
}

/// 1 % of reports lost between the reporter and the translator: retransmittable high-priority
/// reports are NACKed (as ranges) and resent; none is lost. Reports after a gap are translated
/// at once, so a resent Append entry lands after the ones that followed it: every report once,
/// in report order except for the resent ones.
#[test]
fn loss_from_reporters_is_recovered_by_nack() {
    use roce::dta::ReportSender;
    let mut lab = standard_lab("nack_interval_us = 5");
    lab.to_translator = Loss::new(5, 10);
    let mut sender = ReportSender::new(256, 5);
    let n = 20_000u32;
    let mut buf = [0u8; 64];
    for i in 0..n {
        let seq = sender.sequence(true, Priority::High);
        let r = append(2, i + 1, Some(seq));
        let len = sender.emit(&r, &mut buf).unwrap();
        let b = buf;
        lab.report_bytes(REPORTER, C0, &b[..len]);
        if i % 4 == 0 {
            lab.step();
        }
        for (_, nack) in lab.nacks() {
            let mut resend = Vec::new();
            sender.on_nack(&nack, 0, |b| resend.push(b.to_vec()));
            for b in resend {
                lab.report_bytes(REPORTER, C0, &b);
            }
        }
    }
    // The tail: resend until the translator has everything (a NACK needs a later report); the
    // last 50 fillers go without loss, so every hole is seen and asked for.
    let mut link_lost = 0;
    for k in 0..200 {
        if k == 150 {
            link_lost = lab.to_translator.lost;
            lab.to_translator = Loss::none();
        }
        lab.run(10);
        let seq = sender.sequence(true, Priority::High);
        let r = append(3, 0, Some(seq));
        let len = sender.emit(&r, &mut buf).unwrap();
        let b = buf;
        lab.report_bytes(REPORTER, C0, &b[..len]);
        for (_, nack) in lab.nacks() {
            let mut resend = Vec::new();
            sender.on_nack(&nack, 0, |b| resend.push(b.to_vec()));
            for b in resend {
                lab.report_bytes(REPORTER, C0, &b);
            }
        }
    }
    lab.run(1000);
    assert!(link_lost > 100, "{link_lost}");
    assert_eq!(sender.unrecoverable, 0);
    let mut got = read_list(lab.collectors[0].region(1342), n as usize + 1);
    got.sort_unstable();
    let want: Vec<u32> = [0].into_iter().chain(1..=n).collect();
    assert_eq!(got, want, "every report once");
    let st = lab.sw.program().stats();
    assert!(st.seq_gaps > 0 && st.nacks > 0, "{st:?}");
    assert_eq!((st.seq_recovered, st.seq_unrecoverable), (st.seq_gaps, 0), "{st:?}");
    // Every frame that reached the translator was a report translated once or a counted
    // duplicate (a resend of a number NACKed again before its resend came): what was sent
    // beyond the reports, the resends, is what the link lost plus those duplicates.
    let dups = lab.drops("dta_seq_duplicate");
    assert_eq!(sender.resent, link_lost + dups, "{st:?}");
    assert!(dups < st.seq_gaps, "{dups} duplicates for {} gaps", st.seq_gaps);
}

/// With the collector path limited, low priority is dropped and counted, high priority is all
/// delivered (parked while over the rate), and the reporter is told to slow down.
#[test]
fn rate_limit_drops_low_and_delivers_all_high() {
    let collectors = r#"
[[dta.collector]]
name = "c0"
ip = "10.0.0.51"
rate = 100000
burst = 16
append = [{ list = 0, port = 1340, batch = 1 }, { list = 1, port = 1341, batch = 1 }]
"#;
    let c = Collector::new(C0, C0_MAC, &[(1340, 65536 * 4), (1341, 65536 * 4)], 3);
    let mut lab =
        Lab::new(&config("park = 100000\nnack_interval_us = 100", collectors, &[(C0, C0_MAC)]), vec![c]);
    lab.connect(200_000);
    // 2000 high and 2000 low reports in 1 ms (4 M/s) against 100 k packets/s.
    for i in 0..2000u32 {
        lab.report(REPORTER, C0, &append(0, i + 1, long(0, false, Priority::High)));
        lab.report(REPORTER, C0, &append(1, i + 1, long(0, false, Priority::Low)));
        if i % 4 == 0 {
            lab.step();
        }
    }
    // 2000 packets at 100 k/s take 20 ms.
    lab.run(30_000);
    let high = read_list(lab.collectors[0].region(1340), 2001);
    assert_eq!(high, (1..=2000).chain([0]).collect::<Vec<_>>(), "every high-priority report, in order");
    let low = lab.drops("dta_rate_limited");
    assert!(low > 1500, "low priority dropped: {low}");
    let st = lab.sw.program().stats();
    assert!(st.parked > 1500 && st.unparked == st.parked, "{st:?}");
    assert!(st.slow_downs > 0);
    assert!(lab.nacks().iter().any(|(ip, n)| *ip == REPORTER && n.slow_down && !n.nack));
}

#[test]
fn postcarder_and_sketch_merge() {
    let mut lab = standard_lab("");
    // A 5-hop path, postcards out of order.
    for hop in [3u8, 1, 5, 2, 4] {
        let r = DtaRepr {
            immediate: false,
            seq: long(0, false, Priority::Low),
            primitive: Primitive::Postcarder { key: 77, hop, data: 100 + u32::from(hop) },
        };
        lab.report(REPORTER, C0, &r);
    }
    // Four reporters merge an 8-column sketch of 2 rows (sum).
    for col in 0..8u32 {
        for rep in 1..=4u16 {
            let counters: Vec<u8> =
                [col * 10 + u32::from(rep), 1].iter().flat_map(|v| v.to_be_bytes()).collect();
            let r = DtaRepr {
                immediate: false,
                seq: long(0, false, Priority::Low),
                primitive: Primitive::SketchMerge {
                    sketch_id: 9,
                    reporter_id: rep,
                    column: col,
                    op: MergeOp::Sum,
                    counters: &counters,
                },
            };
            lab.report(REPORTER, C0, &r);
        }
    }
    lab.run(50);
    let mem = lab.collectors[0].region(1336);
    let s = dta::layout::postcarder_slot_index(77, 1024) as usize * 32;
    let hops: Vec<u32> =
        (0..5).map(|i| u32::from_be_bytes(mem[s + 4 * i..s + 4 * i + 4].try_into().unwrap())).collect();
    assert_eq!(hops, [101, 102, 103, 104, 105]);
    assert_eq!(&mem[s + 20..s + 24], &dta::keywrite_checksum(77).to_le_bytes());
    let sk = lab.collectors[0].region(1350);
    for col in 0..8u32 {
        let o = col as usize * 8;
        let a = u32::from_le_bytes(sk[o..o + 4].try_into().unwrap());
        let b = u32::from_le_bytes(sk[o + 4..o + 8].try_into().unwrap());
        assert_eq!((a, b), (4 * col * 10 + 10, 4), "column {col}: element-wise sum of 4 reporters");
    }
    // An out-of-order column is NACKed back to its reporter.
    let counters = [0u8; 8];
    let r = DtaRepr {
        immediate: false,
        seq: long(0, false, Priority::Low),
        primitive: Primitive::SketchMerge {
            sketch_id: 9,
            reporter_id: 1,
            column: 5,
            op: MergeOp::Sum,
            counters: &counters,
        },
    };
    lab.report(REPORTER, C0, &r);
    lab.run(2);
    let nacks = lab.nacks();
    // It names the sketch, the reporter and the last column merged in order (32 bits).
    let want = wire::dta::NackExt::Sketch { sketch_id: 9, reporter_id: 1, column: 7 };
    assert!(
        nacks.iter().any(|(ip, n)| *ip == REPORTER && n.nack && n.seqnum == 7 && n.ext == Some(want)),
        "{nacks:?}"
    );
}

#[test]
fn immediate_flag_becomes_write_with_immediate() {
    let mut lab = standard_lab("");
    let r = DtaRepr {
        immediate: true,
        seq: long(0, false, Priority::Low),
        primitive: Primitive::KeyWrite { redundancy: 2, key: 5, data: &[1, 2, 3, 4] },
    };
    lab.report(REPORTER, C0, &r);
    lab.report(REPORTER, C0, &DtaRepr { immediate: true, ..append(1, 9, long(0, false, Priority::Low)) });
    lab.run(20);
    let imms: Vec<Option<u32>> = lab.collectors[0]
        .events
        .iter()
        .filter_map(|e| match e {
            roce::endpoint::Event::Applied { imm: Some(i), .. } => Some(Some(*i)),
            _ => None,
        })
        .collect();
    // One notification for the Key-Write (its first copy, the key) and one for the Append
    // (flushed at once, the list ID).
    assert_eq!(imms, [Some(5), Some(1)]);
    assert_eq!(read_list(lab.collectors[0].region(1341), 2), [9, 0]);
}

#[test]
fn bad_reports_are_dropped_by_reason() {
    let mut lab = standard_lab("max_redundancy = 3");
    lab.report_bytes(REPORTER, C0, &[9, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]); // opcode 9
    lab.report(REPORTER, C0, &kw(1, 0, &[0; 4], long(0, false, Priority::Low)));
    lab.report(REPORTER, C0, &kw(1, 4, &[0; 4], long(0, false, Priority::Low)));
    lab.report(REPORTER, C0, &append(42, 1, long(0, false, Priority::Low)));
    lab.report_bytes(REPORTER, C0, &[1, 0, 0, 2, 0, 0]); // truncated Key-Write
    lab.run(5);
    assert_eq!(lab.drops("dta_unknown_opcode"), 1);
    assert_eq!(lab.drops("dta_bad_redundancy"), 2);
    assert_eq!(lab.drops("dta_no_list"), 1);
    assert_eq!(lab.drops("dta_malformed"), 1);
    assert_eq!(lab.collectors[0].ep.stats().applied, 0, "nothing reached the collector");
}

#[test]
fn acks_for_unknown_qps_are_counted_and_ignored() {
    let mut lab = standard_lab("");
    let ack = roce::frames::reply(0x999, &roce::responder::Reply::Ack { psn: 1, msn: 1 }).unwrap();
    let mut b = lab::collector_frame(C0_MAC, C0, lab::TRANSLATOR_IP, ack);
    lab.sw.receive(lab.now, 1, dataplane::buf::PktBuf::from_bytes(&b), &mut lab.pool);
    // A bad ICRC is dropped too.
    let n = b.len();
    b[n - 1] ^= 1;
    lab.sw.receive(lab.now, 1, dataplane::buf::PktBuf::from_bytes(&b), &mut lab.pool);
    assert_eq!(lab.drops("roce_unknown_qp"), 1);
    assert_eq!(lab.drops("roce_bad_icrc"), 1);
}

/// A collector that rejects (no listener on the port) is retried with backoff; once it listens,
/// the translator connects. A collector that restarts (new QPNs, new keys) is reconnected to.
#[test]
fn rejects_timeouts_and_restarts_are_retried() {
    let collectors = r#"
[[dta.collector]]
name = "c0"
ip = "10.0.0.51"
append = [{ list = 0, port = 1340, batch = 1 }]
"#;
    // First the collector listens on another port: every REQ is rejected.
    let c = Collector::new(C0, C0_MAC, &[(2000, 4096)], 1);
    let mut lab = Lab::new(&config("retry_limit = 2", collectors, &[(C0, C0_MAC)]), vec![c]);
    lab.run(5_000);
    assert!(!lab.sw.program().ready());
    assert_eq!(lab.collectors[0].ep.stats().connections, 0);
    // It restarts listening on the right port.
    lab.collectors[0] = Collector::new(C0, C0_MAC, &[(1340, 4096)], 2);
    lab.connect(200_000);
    lab.report(REPORTER, C0, &append(0, 7, long(0, false, Priority::Low)));
    lab.run(10);
    assert_eq!(read_list(lab.collectors[0].region(1340), 1), [7]);
    // It restarts again (new QPN and key): the old QP times out, the translator reconnects.
    lab.collectors[0] = Collector::new(C0, C0_MAC, &[(1340, 4096)], 3);
    lab.report(REPORTER, C0, &append(0, 8, long(0, false, Priority::Low)));
    lab.run(5_000);
    lab.connect(200_000);
    assert!(lab.sw.program().stats().resets >= 1);
    lab.report(REPORTER, C0, &append(0, 9, long(0, false, Priority::Low)));
    lab.run(10);
    assert_eq!(read_list(lab.collectors[0].region(1340), 1), [9]);
}

/// A collector whose NIC writes by DMA (the verbs backend) asks for marks in its 24-byte
/// metadata: every Append batch then ends with a WRITE with Immediate whose data is the list's
/// count after it (bit 31: a report asked for a notification), from which the collector follows
/// the head without seeing a write.
#[test]
fn append_batches_are_marked_for_a_collector_that_asks() {
    let collectors = r#"
[[dta.collector]]
name = "c0"
ip = "10.0.0.51"
append = [{ list = 0, port = 1340, batch = 4 }]
"#;
    let mut c = Collector::new(C0, C0_MAC, &[(1340, 64 * 4)], 1);
    let rkey = c.regions[0].1;
    c.ep.memory_mut().get_mut(rkey).unwrap().ring.as_mut().unwrap().marks = true;
    let mut lab = Lab::new(&config("", collectors, &[(C0, C0_MAC)]), vec![c]);
    lab.connect(200_000);
    for i in 0..10u32 {
        let mut r = append(0, i + 1, long(0, false, Priority::Low));
        r.immediate = i == 5;
        lab.report(REPORTER, C0, &r);
    }
    lab.run(1000);
    assert_eq!(read_list(lab.collectors[0].region(1340), 11), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0]);
    // Marks: after 4 entries; after 6 (the immediate report closes its batch early and asks
    // for a notification); then the rest, the last at 10. Each moves the head forward.
    let marks: Vec<u32> = lab.collectors[0]
        .events
        .iter()
        .filter_map(|e| match e {
            roce::endpoint::Event::Applied { imm: Some(m), .. } => Some(*m),
            _ => None,
        })
        .collect();
    let mut head = 0u64;
    for &m in &marks {
        let next = dta::layout::append_head_from_mark(head, m);
        assert!(next > head, "{marks:?}");
        head = next;
    }
    assert_eq!(head, 10, "{marks:?}");
    assert_eq!(marks.iter().filter(|&&m| dta::layout::append_mark_notifies(m)).count(), 1, "{marks:?}");
    assert_eq!(marks[1], dta::layout::append_mark(6, true), "{marks:?}");
}

/// A stream's last hole, whose resend is lost, has no later report to bring it up: the
/// translator's timer NACKs it again (every millisecond, paced) and it is recovered; a hole
/// whose reporter has gone silent for a second is counted unrecoverable.
#[test]
fn the_timer_asks_again_for_the_last_holes_and_gives_up_on_silent_reporters() {
    use roce::dta::ReportSender;
    let mut lab = standard_lab("");
    let mut sender = ReportSender::new(128, 3);
    let mut buf = [0u8; 64];
    let mut frames = Vec::new();
    for i in 0..10u32 {
        let seq = sender.sequence(true, Priority::High);
        let len = sender.emit(&append(2, i + 1, Some(seq)), &mut buf).unwrap();
        frames.push(buf[..len].to_vec());
    }
    // Report 8 is lost; 9 reveals it; the first resend is lost too.
    for (i, f) in frames.iter().enumerate() {
        if i != 8 {
            lab.report_bytes(REPORTER, C0, f);
        }
    }
    lab.run(5);
    let first = lab.nacks();
    assert_eq!(first.len(), 1, "{first:?}");
    let mut resend = Vec::new();
    sender.on_nack(&first[0].1, 0, |b| resend.push(b.to_vec()));
    assert_eq!(resend.len(), 1, "report 8 resent, and lost");
    // No more reports: the timer asks again within a few milliseconds.
    lab.run(3000);
    let again = lab.nacks();
    assert!(!again.is_empty(), "the timer NACKed the last hole again");
    let mut resend = Vec::new();
    sender.on_nack(&again[0].1, 0, |b| resend.push(b.to_vec()));
    for b in resend {
        lab.report_bytes(REPORTER, C0, &b);
    }
    lab.run(100);
    // The resent report lands after the one that followed it.
    assert_eq!(read_list(lab.collectors[0].region(1342), 10), [1, 2, 3, 4, 5, 6, 7, 8, 10, 9]);
    let st = lab.sw.program().stats();
    assert_eq!(
        (st.seq_gaps, st.seq_recovered, st.seq_unrecoverable, lab.sw.program().seq_missing()),
        (1, 1, 0, 0)
    );

    // Another reporter loses report 1 and then goes silent: counted after a second.
    let other = std::net::Ipv4Addr::new(10, 0, 1, 3);
    let mut s2 = ReportSender::new(128, 4);
    for i in 0..3u32 {
        let seq = s2.sequence(true, Priority::High);
        let len = s2.emit(&append(3, 100 + i, Some(seq)), &mut buf).unwrap();
        if i != 1 {
            let b = buf;
            lab.report_bytes(other, C0, &b[..len]);
        }
    }
    lab.run(10);
    assert_eq!(lab.sw.program().seq_missing(), 1);
    for _ in 0..1100 {
        lab.run(1000);
    }
    let st = lab.sw.program().stats();
    assert_eq!((st.seq_unrecoverable, lab.sw.program().seq_missing()), (1, 0), "{st:?}");
}

/// Configurations that used to pass and then fail or corrupt: each refused, naming its key.
#[test]
fn bad_configs_are_refused_by_key() {
    use dataplane::buf::PktBuf;
    use dataplane::config::Config;
    use dataplane::programs::build_switch;
    use dataplane::programs::dta_translator::DtaTranslator;
    let build = |extra: &str, collectors: &str| -> Result<(), String> {
        let text = config(extra, collectors, &[(C0, C0_MAC)]);
        let cfg = Config::parse(std::path::Path::new("bad.toml"), &text).map_err(|e| e.to_string())?;
        build_switch::<DtaTranslator, PktBuf>(&cfg).map(|_| ()).map_err(|e| e.to_string())
    };
    let one = |stores: &str| format!("[[dta.collector]]\nname = \"c0\"\nip = \"10.0.0.51\"\n{stores}\n");
    for (extra, stores, key) in [
        // A Key-Increment store on the Key-Write store's port: both connections would get one
        // region, and FETCH_ADDs land in Key-Write memory.
        ("", "keywrite = 1337\nkeyincrement = 1337", "dta.collector[0].keyincrement"),
        ("", "keywrite = 1337\nappend = [{ list = 0, port = 1337 }]", "dta.collector[0].append[0].port"),
        ("region_timeout_ms = 9223372036854775807", "keywrite = 1337", "dta.region_timeout_ms"),
        ("ack_probe_us = 100000000000", "keywrite = 1337", "dta.ack_probe_us"),
    ] {
        let e = build(extra, &one(stores)).expect_err(key);
        assert!(e.contains(key), "{key}: {e}");
    }
    // udp_ports listed twice, and a pool larger than the machine's memory.
    let port = |extra: &str| {
        format!(
            "program = \"l2l3\"\n[runtime]\n{extra}\n[[port]]\nname = \"h\"\nbackend = \"udp\"\nbind = \"127.0.0.1\"\n\
             udp_ports = [40040, 40040]\nmac = \"02:00:00:00:00:01\"\nspeed = \"10G\"\n"
        )
    };
    let e = Config::parse(std::path::Path::new("bad.toml"), &port("")).unwrap_err().to_string();
    assert!(e.contains("port[0].udp_ports") && e.contains("twice"), "{e}");
    let e = Config::parse(
        std::path::Path::new("bad.toml"),
        &port("pool_buffers = 16000000").replace("40040, 40040", "40040"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("runtime.pool_buffers") && e.contains("available"), "{e}");
}

/// The captures `docs/p4/dta_translator/` gives a P4 target: the reports this lab sends into p0
/// (`in_p0.pcap`), the RDMA requests this translator sends for them on p1 (`expected_p1.pcap`),
/// the configuration (`translator.toml`, the lab's) and the state the control plane would have
/// written after the CM exchange (`runtime_entries.txt`: each QP's `dta_qp_state` entry and
/// starting PSN, as this run connected them). Key-Write N = 2, Key-Increment N = 2 and an Append
/// to a list of batch 1: what the data plane of the P4 translates. Regenerated with
/// `SOFTFABRIC_BLESS=1`; otherwise compared, so they cannot drift from the Rust program.
#[test]
fn the_p4_check_captures_are_this_translators_output() {
    use pcap_file::DataLink;
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};

    // A fixed CM seed: the same QPNs and starting PSNs every run.
    let mut lab = standard_lab("seed = 7");
    lab.capture = true;
    let seq = long(0, false, Priority::Low);
    let reports: Vec<Vec<u8>> = vec![
        kw_bytes(&kw(0x0001_e240, 2, &[1, 2, 3, 4], seq)),
        kw_bytes(&DtaRepr {
            immediate: false,
            seq,
            primitive: Primitive::KeyIncrement { redundancy: 2, key: 0xbeef, counter: 1500 },
        }),
        kw_bytes(&DtaRepr {
            immediate: false,
            seq,
            primitive: Primitive::Append { list_id: 2, data: 0xa1b2_c3d4 },
        }),
        kw_bytes(&kw(7, 1, &[9, 8, 7, 6], seq)),
    ];
    let mut inputs = Vec::new();
    for r in &reports {
        inputs.push(lab::report_frame(REPORTER, C0, r));
        lab.report_bytes(REPORTER, C0, r);
        lab.run(2);
    }
    lab.run(50);
    let qps = lab.sw.program().queue_pairs();
    // The requests: RoCEv2 to the collector with a WRITE or FETCH_ADD opcode, but not the
    // requester's zero-length WRITEs asking for an ACK (ack probes: no data, not on the targets).
    let requests: Vec<Vec<u8>> = std::mem::take(&mut lab.captured)
        .into_iter()
        .filter(|f| {
            lab::udp_of(f).is_some_and(|u| {
                u.2 == 4791
                    && (f[u.3] == 0x14 || (f[u.3] == 0x0a && f[u.3 + 12 + 12..u.3 + 12 + 16] != [0; 4]))
            })
        })
        .collect();
    assert_eq!(requests.len(), 2 + 2 + 1 + 1, "one request per copy");
    // The runtime state per QP used: its entry as the control plane writes it after the CM
    // exchange, and the PSN of its first request here.
    let mut runtime = String::from(
        "# The control plane's state after the CM exchange of the recorded run (simple_switch_CLI).\n",
    );
    let mut done = Vec::new();
    for f in &requests {
        let (src, dst, _, l4, _) = lab::udp_of(f).unwrap();
        let dqpn = u32::from_be_bytes([0, f[l4 + 5], f[l4 + 6], f[l4 + 7]]);
        let psn = u32::from_be_bytes([0, f[l4 + 9], f[l4 + 10], f[l4 + 11]]);
        let qi = qps.iter().position(|q| q.remote_qpn == dqpn).unwrap();
        if done.contains(&qi) {
            continue;
        }
        done.push(qi);
        let q = &qps[qi];
        let mac = |b: &[u8]| b.iter().fold(0u64, |a, &x| a << 8 | u64::from(x));
        let sport = u16::from_be_bytes([f[l4 - 8], f[l4 - 7]]);
        let last = q.slots - 1;
        runtime.push_str(&format!(
            "table_add SfEgress.dta_qp_state SfEgress.dta_qp_state_set {qi:#x} => {dqpn:#x} {:#x} {:#x} {last:#x} {last:#x} {:#x} {:#x} {:#x} {:#x} {sport:#x}\n",
            q.region.rkey,
            q.region.va,
            mac(&f[6..12]),
            mac(&f[0..6]),
            src.to_bits(),
            dst.to_bits(),
        ));
        runtime.push_str(&format!("register_write SfEgress.dta_qp_psn {qi} {psn}\n"));
    }
    let pcap = |frames: &[Vec<u8>]| {
        let mut w = PcapWriter::with_header(
            Vec::new(),
            PcapHeader { datalink: DataLink::ETHERNET, ..PcapHeader::default() },
        )
        .unwrap();
        for (i, f) in frames.iter().enumerate() {
            let ts = std::time::Duration::from_micros(1_000_000 + i as u64);
            w.write_packet(&PcapPacket::new(ts, f.len() as u32, f)).unwrap();
        }
        w.into_writer()
    };
    let files: [(&str, Vec<u8>); 4] = [
        ("in_p0.pcap", pcap(&inputs)),
        ("expected_p1.pcap", pcap(&requests)),
        ("runtime_entries.txt", runtime.into_bytes()),
        ("translator.toml", lab.cfg_text.clone().into_bytes()),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/p4/dta_translator");
    if std::env::var("SOFTFABRIC_BLESS").as_deref() == Ok("1") {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in &files {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        return;
    }
    for (name, bytes) in &files {
        let on_disk = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            on_disk == *bytes,
            "docs/p4/dta_translator/{name} differs (SOFTFABRIC_BLESS=1 to regenerate)"
        );
    }
}

fn kw_bytes(r: &DtaRepr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b).unwrap();
    b
}

/// A reporter restarts and draws its previous epoch (1 start in 15 did). Without a hello the
/// new stream is read against the old window: its first numbers are dropped as duplicates, or
/// numbers never sent are counted lost. With the hello (`HelloRepr`, answered with the nonce) the
/// translator tracks the new stream from scratch: every report of both runs is stored once,
/// nothing dropped, nothing counted lost that was not.
#[test]
fn a_reporter_restart_that_reuses_its_epoch_is_clean_after_a_hello() {
    use roce::dta::ReportSender;
    use wire::dta::{HelloRepr, NackExt};
    for hello in [false, true] {
        let mut lab = standard_lab("nack_interval_us = 5");
        let mut buf = [0u8; 64];
        let mut run = |lab: &mut _, first: u32, n: u32| {
            let lab: &mut Lab = lab;
            let mut sender = ReportSender::new(128, 7);
            for i in 0..n {
                let seq = sender.sequence(true, Priority::High);
                let len = sender.emit(&append(2, first + i, Some(seq)), &mut buf).unwrap();
                let b = buf;
                lab.report_bytes(REPORTER, C0, &b[..len]);
                lab.step();
            }
            lab.run(1000);
        };
        run(&mut lab, 1, 200);
        if hello {
            let mut h = [0u8; wire::dta::HELLO_LEN];
            HelloRepr { epoch: 7, nonce: 0xfeed_5eed }.emit(&mut h).unwrap();
            lab.report_bytes(REPORTER, C0, &h);
            lab.run(10);
            let nacks = lab.nacks();
            assert!(
                nacks.iter().any(|(ip, n)| *ip == REPORTER
                    && !n.nack
                    && n.ext == Some(NackExt::Hello { epoch: 7, nonce: 0xfeed_5eed })),
                "the hello is answered with its nonce: {nacks:?}"
            );
        }
        // The restarted reporter: same epoch 7, numbers from 0 again.
        run(&mut lab, 1001, 200);
        let st = lab.sw.program().stats();
        let mut got = read_list(lab.collectors[0].region(1342), 400);
        got.retain(|&v| v != 0);
        got.sort_unstable();
        let want: Vec<u32> = (1..=200).chain(1001..=1200).collect();
        if hello {
            assert_eq!(got, want, "every report of both runs stored once");
            assert_eq!(lab.drops("dta_seq_duplicate"), 0);
            assert_eq!((st.seq_unrecoverable, st.hellos, st.reporter_restarts), (0, 1, 1), "{st:?}");
            assert_eq!(lab.drops("dta_hello"), 1, "the hello is consumed, counted by name");
        } else {
            // What the hello prevents: the new stream read against the old window — here 200
            // reports in, its numbers 0.. read as 56 ahead: 56 phantom losses, never sent (or,
            // at other counts, its first numbers dropped as duplicates).
            assert!(lab.drops("dta_seq_duplicate") > 0 || st.seq_unrecoverable > 0, "{st:?}");
        }
    }
}
