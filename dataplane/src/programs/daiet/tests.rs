//! The `daiet` program: Algorithm 1 by hand (store, aggregate, spill, END, flush), WordCount
//! through one switch with collisions and spills equal to a plain count, bad input by name,
//! and arbitrary frames.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

use proptest::prelude::*;
use roce::daiet::{self as d, CorpusSpec, Mapper, Reducer, key_of, word_of};
use wire::EthernetAddress;
use wire::daiet::DaietEntry;
use wire::stack::UdpFlow;

use super::*;
use crate::buf::{HeapPool, PktBuf, Pool};
use crate::programs::build_switch;
use crate::switch::Switch;

/// Mappers on h0 and h1, reducers 10.0.2.2 (tree 1) and 10.0.3.2 (tree 2) behind r0 and r1.
fn cfg(cells: usize, children: u32) -> String {
    format!(
        r#"
program = "daiet"
[[port]]
name = "h0"
backend = "ring"
speed = "10G"
mac = "02:da:00:00:00:00"
ipv4 = ["10.0.0.1/24"]
[[port]]
name = "h1"
backend = "ring"
speed = "10G"
mac = "02:da:00:00:00:01"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "r0"
backend = "ring"
speed = "10G"
mac = "02:da:00:00:00:02"
ipv4 = ["10.0.2.1/24"]
[[port]]
name = "r1"
backend = "ring"
speed = "10G"
mac = "02:da:00:00:00:03"
ipv4 = ["10.0.3.1/24"]
[l2l3]
neighbor = [{{ ip = "10.0.2.2", mac = "02:00:00:00:02:02", port = "r0" }},
            {{ ip = "10.0.3.2", mac = "02:00:00:00:03:02", port = "r1" }}]
[[daiet.tree]]
id = 1
reducer = "10.0.2.2"
children = {children}
cells = {cells}
[[daiet.tree]]
id = 2
reducer = "10.0.3.2"
children = {children}
cells = {cells}
"#
    )
}

const SW: EthernetAddress = EthernetAddress([2, 0xda, 0, 0, 0, 0]);
const REDUCERS: [Ipv4Addr; 2] = [Ipv4Addr::new(10, 0, 2, 2), Ipv4Addr::new(10, 0, 3, 2)];

fn switch(cells: usize, children: u32) -> (Switch<Daiet, PktBuf>, HeapPool) {
    let cfg = Config::parse(Path::new("t.toml"), &cfg(cells, children)).unwrap();
    (build_switch(&cfg).unwrap(), HeapPool::new(4096, 2048))
}

/// A frame from mapper host `m` (10.0.m.2 on port m) carrying `payload` to reducer `r`.
fn frame(pool: &mut HeapPool, m: u8, r: usize, payload: &[u8]) -> PktBuf {
    let f = UdpFlow::host_udp(
        EthernetAddress([2, 0, 0, 0, m, 2]),
        SW,
        SocketAddrV4::new(Ipv4Addr::new(10, 0, m, 2), 10000),
        SocketAddrV4::new(REDUCERS[r], 10000),
    );
    let mut b = vec![0u8; 2048];
    let n = f.emit_with(payload.len(), false, &mut b, |p| {
        p.copy_from_slice(payload);
        Ok(())
    });
    let n = n.unwrap();
    let mut pkt = pool.alloc().unwrap();
    pkt.append(n).unwrap().copy_from_slice(&b[..n]);
    pkt
}

fn data(pool: &mut HeapPool, r: usize, tree: u32, pairs: &[(&str, u32)]) -> PktBuf {
    let e: Vec<DaietEntry> =
        pairs.iter().map(|(w, v)| DaietEntry { key: key_of(w).unwrap(), value: *v }).collect();
    let mut b = [0u8; 1500];
    let n = d::write_data(tree, &e, &mut b).unwrap();
    frame(pool, 0, r, &b[..n])
}

fn end(pool: &mut HeapPool, r: usize, tree: u32) -> PktBuf {
    let mut b = [0u8; 8];
    let n = d::write_end(tree, &mut b).unwrap();
    frame(pool, 0, r, &b[..n])
}

/// Every frame out of `port`, ticking until the flushes are done.
fn drain(sw: &mut Switch<Daiet, PktBuf>, pool: &mut HeapPool, port: u16, now: &mut u64) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let mut out = Vec::new();
    loop {
        let mut got = 0;
        while sw.transmit(*now, port, &mut v, 64, pool) > 0 {
            for f in v.drain(..) {
                out.push(f.data().to_vec());
                pool.free(f);
                got += 1;
            }
        }
        if got == 0 && !sw.program().is_flushing() {
            return out;
        }
        *now += 20_000;
        sw.tick(*now, pool);
    }
}

/// The UDP payload of a frame the switch sent, checked to be addressed to `reducer`.
fn payload(f: &[u8], reducer: Ipv4Addr) -> &[u8] {
    assert_eq!(&f[14 + 16..14 + 20], &reducer.octets());
    assert_eq!(u16::from_be_bytes([f[14 + 22], f[14 + 23]]), 10000);
    let len = usize::from(u16::from_be_bytes([f[14 + 24], f[14 + 25]]));
    &f[14 + 28..14 + 20 + len]
}

fn count(sw: &Switch<Daiet, PktBuf>, name: &str) -> u64 {
    let i = sw.drop_reasons().names().iter().position(|n| *n == name).unwrap();
    sw.counters().drops[i]
}

/// Store, aggregate and spill (with one cell every key collides), then END from both children:
/// the stored pair, then the spillover, then one END reach the reducer; nothing before.
#[test]
fn pairs_are_stored_aggregated_spilled_and_flushed_after_the_last_end() {
    let (mut sw, mut pool) = switch(1, 2);
    let mut now = 1000;
    sw.receive(now, 0, data(&mut pool, 0, 1, &[("apple", 1), ("apple", 2), ("pear", 5)]), &mut pool);
    sw.receive(now, 1, data(&mut pool, 0, 1, &[("apple", 4), ("plum", 1)]), &mut pool);
    let s = sw.program().stats();
    assert_eq!((s.pairs, s.stored, s.aggregated, s.spilled), (5, 1, 2, 2));
    sw.receive(now, 0, end(&mut pool, 0, 1), &mut pool);
    assert!(drain(&mut sw, &mut pool, 2, &mut now).is_empty(), "one child has not ended");
    sw.receive(now, 1, end(&mut pool, 0, 1), &mut pool);
    let out = drain(&mut sw, &mut pool, 2, &mut now);
    let got: Vec<_> = out
        .iter()
        .map(|f| match wire::daiet::DaietRepr::parse(payload(f, REDUCERS[0])).unwrap() {
            wire::daiet::DaietRepr::Data { tree_id, entries } => {
                assert_eq!(tree_id, 1);
                entries.iter().map(|e| (word_of(&e.key), e.value)).collect::<Vec<_>>()
            }
            wire::daiet::DaietRepr::End { tree_id } => vec![(format!("END {tree_id}"), 0)],
        })
        .collect();
    assert_eq!(
        got,
        vec![
            vec![("apple".into(), 7)],
            vec![("pear".into(), 5), ("plum".into(), 1)],
            vec![("END 1".into(), 0)]
        ]
    );
    assert_eq!(sw.program().held(1), Some((0, 0)), "the tree is reset");
    // The next round aggregates afresh.
    sw.receive(now, 0, data(&mut pool, 0, 1, &[("apple", 1)]), &mut pool);
    assert_eq!(sw.program().held(1), Some((1, 0)));
}

/// A full spillover bucket leaves at once, before any END.
#[test]
fn a_full_spillover_bucket_leaves_at_once() {
    let (mut sw, mut pool) = switch(1, 1);
    let mut now = 1000;
    let words: Vec<String> = (0..11).map(|i| format!("w{i}")).collect();
    let pairs: Vec<(&str, u32)> = words.iter().map(|w| (w.as_str(), 1)).collect();
    sw.receive(now, 0, data(&mut pool, 0, 1, &pairs[..10]), &mut pool);
    sw.receive(now, 0, data(&mut pool, 0, 1, &pairs[10..]), &mut pool);
    let out = drain(&mut sw, &mut pool, 2, &mut now);
    assert_eq!(out.len(), 1, "ten spilled pairs, one packet");
    assert_eq!(sw.program().stats().spill_packets, 1);
    assert_eq!(sw.program().held(1), Some((1, 0)));
}

/// WordCount through the switch with 64 cells per tree and a Zipf corpus (collisions and spills
/// happen): the reducers' output equals a plain word count, word for word, and every pair the
/// mappers sent is stored, aggregated or spilled.
#[test]
fn wordcount_through_the_switch_equals_a_plain_count() {
    let spec =
        CorpusSpec { bytes: 60_000, vocabulary: 800, zipf_s: 1.0, seed: 7, collision_free_cells: None };
    let text = d::corpus(&spec, |k| crate::model::HashAlgo::Crc32IsoHdlc.hash(k) as usize);
    let want = d::word_count(&text);
    for combine in [false, true] {
        let (mut sw, mut pool) = switch(64, 2);
        let mut now = 1000;
        let mut sent = 0;
        let mut buf = [0u8; 512];
        for m in 0..2u8 {
            let mut mapper = Mapper::new(vec![1, 2], 10);
            d::map_words(d::split(&text, usize::from(m), 2), combine, &mut mapper);
            while let Some((r, len)) = mapper.poll_transmit(&mut buf) {
                sw.receive(now, u16::from(m), frame(&mut pool, m, r, &buf[..len]), &mut pool);
                now += 100;
            }
            sent += mapper.stats.pairs;
        }
        let s = sw.program().stats();
        assert_eq!(s.pairs, sent);
        assert_eq!(s.stored + s.aggregated + s.spilled, sent);
        assert!(s.spilled > 0 && s.spill_packets > 0, "collisions happened: {s:?}");
        let mut got = BTreeMap::new();
        for (r, port) in [(0usize, 2u16), (1, 3)] {
            let mut red = Reducer::new(r as u32 + 1, d::AggFn::Sum, 1);
            for f in drain(&mut sw, &mut pool, port, &mut now) {
                red.handle(payload(&f, REDUCERS[r])).unwrap();
            }
            assert!(red.is_done(), "one END from the switch");
            for (k, v) in red.sorted() {
                got.insert(word_of(&k), u64::from(v));
            }
        }
        assert_eq!(got, want, "combine {combine}");
        let s = sw.program().stats();
        assert_eq!(s.lost_no_next_hop, 0);
        assert_eq!(s.flushes, 2);
    }
}

/// Bad input is dropped by name: pairs past the packet, more than 10, an unknown tree, an END
/// for a tree with no children left, an unknown frame type.
#[test]
fn bad_packets_are_dropped_by_name() {
    let (mut sw, mut pool) = switch(64, 1);
    let now = 1000;
    let mut p = data(&mut pool, 0, 1, &[("a", 1)]);
    // number_of_entries = 3 with one pair there.
    p.data_mut()[14 + 28 + 4] = 3;
    sw.receive(now, 0, p, &mut pool);
    assert_eq!(count(&sw, "daiet_malformed"), 1);
    let words: Vec<String> = (0..11).map(|i| format!("x{i}")).collect();
    let pairs: Vec<(&str, u32)> = words.iter().map(|w| (w.as_str(), 1)).collect();
    sw.receive(now, 0, data(&mut pool, 0, 1, &pairs), &mut pool);
    assert_eq!(count(&sw, "daiet_too_many_entries"), 1);
    sw.receive(now, 0, data(&mut pool, 0, 9, &[("a", 1)]), &mut pool);
    assert_eq!(count(&sw, "daiet_unknown_tree"), 1);
    let mut p = end(&mut pool, 0, 1);
    p.data_mut()[14 + 28] = 7;
    sw.receive(now, 0, p, &mut pool);
    assert_eq!(count(&sw, "daiet_malformed"), 2);
    assert_eq!(sw.program().stats().pairs, 0);
}

/// A flush longer than one burst: data for the tree meanwhile goes to the reducer as it is, an
/// END has no children left; every pair still arrives once.
#[test]
fn during_a_flush_data_passes_through_and_an_end_is_refused() {
    let (mut sw, mut pool) = switch(1024, 1);
    let mut now = 1000;
    let words: Vec<String> = (0..400).map(|i| format!("k{i}")).collect();
    for c in words.chunks(10) {
        let pairs: Vec<(&str, u32)> = c.iter().map(|w| (w.as_str(), 2)).collect();
        sw.receive(now, 0, data(&mut pool, 0, 1, &pairs), &mut pool);
    }
    let stored = sw.program().held(1).unwrap();
    sw.receive(now, 0, end(&mut pool, 0, 1), &mut pool);
    assert!(sw.program().is_flushing(), "{stored:?} pairs take more than one burst");
    sw.receive(now, 0, data(&mut pool, 0, 1, &[("late", 1)]), &mut pool);
    sw.receive(now, 0, end(&mut pool, 0, 1), &mut pool);
    assert_eq!(count(&sw, "daiet_end_no_children"), 1);
    let mut red = Reducer::new(1, d::AggFn::Sum, 1);
    for f in drain(&mut sw, &mut pool, 2, &mut now) {
        red.handle(payload(&f, REDUCERS[0])).unwrap();
    }
    assert!(red.is_done());
    let s = sw.program().stats();
    assert_eq!(s.passed_through, 1);
    assert_eq!(red.stats.pairs, s.pairs_sent + 1);
    let total: u64 = red.sorted().iter().map(|(_, v)| u64::from(*v)).sum();
    assert_eq!(total, 801);
}

/// Ordinary traffic is `l2l3`'s: a UDP frame to another port is routed unchanged.
#[test]
fn other_traffic_is_routed() {
    let (mut sw, mut pool) = switch(64, 1);
    let mut now = 1000;
    let mut p = data(&mut pool, 0, 1, &[("a", 1)]);
    p.data_mut()[14 + 22..14 + 24].copy_from_slice(&4791u16.to_be_bytes());
    sw.receive(now, 0, p, &mut pool);
    let out = drain(&mut sw, &mut pool, 2, &mut now);
    assert_eq!(out.len(), 1);
    assert_eq!(sw.program().stats().pairs, 0);
}

proptest! {
    /// Arbitrary frames (and arbitrary UDP payloads to the DAIET port) never panic.
    #[test]
    fn arbitrary_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), as_daiet in any::<bool>()) {
        let (mut sw, mut pool) = switch(4, 1);
        let pkt = if as_daiet {
            frame(&mut pool, 0, 0, &bytes)
        } else {
            let mut p = pool.alloc().unwrap();
            p.append(bytes.len()).unwrap().copy_from_slice(&bytes);
            p
        };
        sw.receive(1000, 0, pkt, &mut pool);
        sw.tick(21_000, &mut pool);
    }
}

/// A reducer whose MAC the switch does not know yet: the flush waits (an ARP request goes out)
/// and nothing is lost; once the neighbour is known the next tick sends it all.
#[test]
fn a_flush_waits_for_the_reducers_mac() {
    let text = cfg(64, 1).replace(
        "neighbor = [{ ip = \"10.0.2.2\", mac = \"02:00:00:00:02:02\", port = \"r0\" },\n            ",
        "neighbor = [",
    );
    let c = Config::parse(Path::new("t.toml"), &text).unwrap();
    let (mut sw, mut pool): (Switch<Daiet, PktBuf>, _) =
        (build_switch(&c).unwrap(), HeapPool::new(4096, 2048));
    let mut now = 1000;
    sw.receive(now, 0, data(&mut pool, 0, 1, &[("a", 1), ("b", 2)]), &mut pool);
    sw.receive(now, 0, end(&mut pool, 0, 1), &mut pool);
    assert!(sw.program().is_flushing());
    let mut arp = Vec::new();
    for _ in 0..5 {
        now += 20_000;
        sw.tick(now, &mut pool);
        let mut v = Vec::new();
        while sw.transmit(now, 2, &mut v, 64, &mut pool) > 0 {}
        for f in v.drain(..) {
            arp.push(f.data().to_vec());
            pool.free(f);
        }
    }
    assert!(sw.program().is_flushing(), "still waiting");
    assert!(!arp.is_empty() && arp.iter().all(|f| f[12..14] == [0x08, 0x06]), "only ARP requests meanwhile");
    let names: Vec<String> = ["h0", "h1", "r0", "r1"].iter().map(|s| s.to_string()).collect();
    let cmd = Command::parse("neighbor add 10.0.2.2 02:00:00:00:02:02 r0", &names).unwrap();
    sw.control(cmd, now).unwrap();
    sw.tick(now + 20_000, &mut pool);
    let mut red = Reducer::new(1, d::AggFn::Sum, 1);
    for f in drain(&mut sw, &mut pool, 2, &mut now).iter().filter(|f| f[12..14] == [0x08, 0x00]) {
        red.handle(payload(f, REDUCERS[0])).unwrap();
    }
    assert!(red.is_done());
    assert_eq!(red.len(), 2);
    assert_eq!(sw.program().stats().lost_no_next_hop, 0);
}

/// Sums saturate at `u32::MAX` (counted), min and max trees keep the least and the greatest.
#[test]
fn sums_saturate_and_min_max_trees_keep_their_extremes() {
    let (mut sw, mut pool) = switch(64, 1);
    let mut now = 1000;
    sw.receive(now, 0, data(&mut pool, 0, 1, &[("big", u32::MAX - 1), ("big", 5), ("big", 7)]), &mut pool);
    assert_eq!(sw.program().stats().saturated, 2);
    sw.receive(now, 0, end(&mut pool, 0, 1), &mut pool);
    let mut red = Reducer::new(1, d::AggFn::Sum, 1);
    for f in drain(&mut sw, &mut pool, 2, &mut now) {
        red.handle(payload(&f, REDUCERS[0])).unwrap();
    }
    assert_eq!(red.sorted(), vec![(key_of("big").unwrap(), u32::MAX)]);
    for (func, want) in [("min", 3u32), ("max", 9)] {
        let text = cfg(64, 1).replacen("cells = 64\n", &format!("cells = 64\nfunction = \"{func}\"\n"), 1);
        let c = Config::parse(Path::new("t.toml"), &text).unwrap();
        let mut sw: Switch<Daiet, PktBuf> = build_switch(&c).unwrap();
        sw.receive(now, 0, data(&mut pool, 0, 1, &[("w", 5), ("w", 3), ("w", 9)]), &mut pool);
        sw.receive(now, 0, end(&mut pool, 0, 1), &mut pool);
        let mut red = Reducer::new(1, d::AggFn::parse(func).unwrap(), 1);
        for f in drain(&mut sw, &mut pool, 2, &mut now) {
            red.handle(payload(&f, REDUCERS[0])).unwrap();
        }
        assert_eq!(red.sorted(), vec![(key_of("w").unwrap(), want)], "{func}");
    }
}
