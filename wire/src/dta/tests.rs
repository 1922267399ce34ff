use super::addressing::crc32c;
use super::*;

#[test]
fn keys_spread_over_collectors_and_layouts_hold() {
    let mut counts = [0u32; 3];
    for k in 0..30_000u32 {
        counts[keywrite_collector(k, 3)] += 1;
    }
    assert!(counts.iter().all(|&c| (9_000..11_000).contains(&c)), "{counts:?}");
    // The ranges a switch matches give the same collector, and cover the hash space.
    for n in [1usize, 2, 3, 5, 7, 16] {
        let ranges: Vec<(u32, u32)> = (0..n).map(|i| keywrite_collector_range(i, n).unwrap()).collect();
        assert_eq!(ranges[0].0, 0);
        assert_eq!(ranges[n - 1].1, u32::MAX);
        for w in ranges.windows(2) {
            assert_eq!(w[0].1 + 1, w[1].0, "n = {n}: {ranges:?}");
        }
        for k in 0..2_000u32 {
            let c = keywrite_collector_hash(k);
            let i = ranges.iter().position(|&(lo, hi)| (lo..=hi).contains(&c)).unwrap();
            assert_eq!(i, keywrite_collector(k, n), "key {k}, n = {n}");
        }
        assert_eq!(keywrite_collector_range(n, n), None);
    }
    // CRC-32C check value.
    assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    assert_eq!(layout::keywrite_slot_len(4), 8);
    assert_eq!(layout::keywrite_slot_len(12), 16);
    assert_eq!(layout::keywrite_slot_len(28), 32);
    let mut slot = [0xffu8; 8];
    layout::keywrite_slot(&KeyHash::new(1), &[0xaa, 0xbb, 0xcc, 0xdd], &mut slot);
    assert_eq!(slot, [0x79, 0xb8, 0xf8, 0x99, 0xaa, 0xbb, 0xcc, 0xdd]);
    let mut nack = [0u8; 2];
    NackRepr::plain(7, false, true).emit(&mut nack).unwrap();
    assert_eq!(nack, [7, 0x40]);
}

#[test]
fn design_test_vectors() {
    // ../shared/design/DTA.md, "Test vectors".
    let vectors: [(u32, u32, [u32; 4]); 3] = [
        (0, 0x2144df1c, [0xc622f71d, 0xb125c78b, 0x282c9631, 0x5f2ba6a7]),
        (1, 0x99f8b879, [0xfb42dead, 0x8c45ee3b, 0x154cbf81, 0x624b8f17]),
        (123456, 0x092db2ae, [0xe3654cd0, 0x94627c46, 0x0d6b2dfc, 0x7a6c1d6a]),
    ];
    for (key, checksum, slots) in vectors {
        assert_eq!(keywrite_checksum(key), checksum, "checksum of key {key}");
        for (n, slot) in slots.into_iter().enumerate() {
            assert_eq!(
                keywrite_slot_hash(key, n as u8, KeyHashMode::Reference),
                slot,
                "slot hash of key {key}, n={n}"
            );
        }
    }
    // The table CRC agrees with crc32fast on these short inputs.
    for key in [0u32, 1, 0xdead_beef, u32::MAX] {
        assert_eq!(keywrite_checksum(key), crc32fast::hash(&key.to_le_bytes()));
        let k = key.to_le_bytes();
        for n in [0u8, 3, 255] {
            assert_eq!(
                keywrite_slot_hash(key, n, KeyHashMode::Reference),
                crc32fast::hash(&[k[0], k[1], k[2], k[3], n])
            );
        }
    }
    // "key 1: slot 173 of 256" for n = 0.
    assert_eq!(keywrite_slot_hash(1, 0, KeyHashMode::Reference) & 255, 173);
}

#[test]
fn independent_copies_are_distinct_maps_and_total() {
    let h = KeyHash::new(0x1234_5678);
    let slots: Vec<u32> = (0..=255u8).map(|n| h.slot(n)).collect();
    let mut d = slots.clone();
    d.sort_unstable();
    d.dedup();
    assert!(d.len() > 250, "copies should land apart: {} distinct of 256", d.len());
    // No copy's slot hash is the checksum, whatever the key.
    for k in 0..1000u32 {
        let h = KeyHash::new(scramble_key(k));
        for n in 0..8 {
            assert_ne!(h.slot(n), h.checksum());
        }
    }
    assert_eq!(KeyHashMode::parse("reference"), Some(KeyHashMode::Reference));
    assert_eq!(KeyHashMode::parse(KeyHashMode::Independent.name()), Some(KeyHashMode::Independent));
    assert_eq!(KeyHashMode::parse("crc"), None);
}

#[test]
fn priority_rides_in_the_reserved_bits() {
    let r = DtaRepr {
        immediate: true,
        seq: Some(Sequence { seqnum: 9, retransmittable: true, priority: Priority::High, epoch: 0 }),
        primitive: Primitive::Append { list_id: 1, data: 2 },
    };
    let mut b = [0u8; 11];
    r.emit(&mut b).unwrap();
    assert_eq!(&b[..3], &[2, 9, 0b1110_0000]);
    assert_eq!(DtaRepr::parse(&b, Format::default()).unwrap(), r);
    b[2] |= 0x30;
    assert_eq!(DtaRepr::parse(&b, Format::default()).unwrap_err().field(), "dta.priority");
}

#[test]
fn bad_reports_name_their_field() {
    let f = Format::default();
    assert_eq!(
        DtaRepr::parse(&[9, 0, 0, 0], f).unwrap_err(),
        Error::Unsupported { field: "dta.opcode", value: 9 }
    );
    assert_eq!(DtaRepr::parse(&[1, 0], f).unwrap_err().field(), "dta.base");
    assert_eq!(DtaRepr::parse(&[1, 0, 0, 2, 0, 0, 0, 1, 0xaa], f).unwrap_err().field(), "dta.keywrite");
    let wide = Format { keywrite_data_len: 12, ..f };
    assert_eq!(
        DtaRepr::parse(&[1, 0, 0, 2, 0, 0, 0, 1, 1, 2, 3, 4], wide).unwrap_err().field(),
        "dta.keywrite.data"
    );
    let mut sm = [0u8; 3 + 12 + 4];
    sm[0] = 5;
    sm[3 + 9] = 2; // two counters claimed, one present
    assert_eq!(DtaRepr::parse(&sm, f).unwrap_err().field(), "dta.sketchmerge.counter_count");
    sm[3 + 9] = 1;
    sm[3 + 10] = 7;
    assert_eq!(DtaRepr::parse(&sm, f).unwrap_err().field(), "dta.sketchmerge.merge_op");
}

#[test]
fn flow_keys_of_neighbouring_crcs_spread_over_slots() {
    // The tables are fixed: a change would move every flow's key on every reporter.
    assert_eq!(
        flow_key(0),
        FLOW_KEY_TABLES[0][0] ^ FLOW_KEY_TABLES[1][0] ^ FLOW_KEY_TABLES[2][0] ^ FLOW_KEY_TABLES[3][0]
    );
    assert_eq!(
        flow_key(0x0403_0201),
        FLOW_KEY_TABLES[0][1] ^ FLOW_KEY_TABLES[1][2] ^ FLOW_KEY_TABLES[2][3] ^ FLOW_KEY_TABLES[3][4]
    );
    // Consecutive CRCs (an affine family) in 2^12 slots: copy 0 and copy 1 collide about as
    // random keys do (each ~n²/2s pairs), and the two copies' collisions are not the same pairs.
    let (n, slots) = (2_000u32, 1u64 << 12);
    let mut both = 0;
    let mut each = [0u32; 2];
    let hashes: Vec<KeyHash> = (0..n).map(|i| KeyHash::new(flow_key(0x1234_0000 + i))).collect();
    let mut seen = [std::collections::HashMap::new(), std::collections::HashMap::new()];
    let mut pairs: [std::collections::HashSet<(u32, u32)>; 2] = Default::default();
    for (i, h) in hashes.iter().enumerate() {
        for c in 0..2u8 {
            let s = layout::key_slot_index(h, c, slots);
            let prev: &mut Vec<u32> = seen[usize::from(c)].entry(s).or_default();
            for &j in prev.iter() {
                each[usize::from(c)] += 1;
                pairs[usize::from(c)].insert((j, i as u32));
            }
            prev.push(i as u32);
        }
    }
    for p in &pairs[0] {
        if pairs[1].contains(p) {
            both += 1;
        }
    }
    let expect = f64::from(n) * f64::from(n) / 2.0 / slots as f64; // ~488
    for e in each {
        assert!((f64::from(e) - expect).abs() < expect * 0.25, "{each:?} vs {expect}");
    }
    assert!(both <= 3, "{both} pairs collide in both copies");
}
