//! The `ufab` program: the core's accounting, its Bloom filter against the formula, and one
//! switch's source routing, probe stamping, failure notifications and bad input, by hand.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

use proptest::prelude::*;
use wire::EthernetAddress;
use wire::mpls::MplsRepr;
use wire::stack::UdpFlow;
use wire::ufab::{UfabHopRepr, UfabKind, UfabRepr};

use super::core::{Core, Outcome, pair_key};
use super::*;
use crate::buf::{HeapPool, PktBuf, Pool};
use crate::model::Resources;
use crate::programs::build_switch;
use crate::switch::Switch;

fn core(bloom: usize, records: usize) -> Core {
    Core::new(&mut Resources::default(), 4, bloom, records, 1_000_000_000, 10_000)
}

fn key(i: u32, port: u16) -> [u8; 12] {
    pair_key([10, 0, (i >> 8) as u8, i as u8], [10, 1, 0, 1], (i >> 16) as u16, port)
}

/// Add, update by difference, finish, come back, clean: Φ_l and W_l are exactly the sums of
/// the pairs the link has live.
#[test]
fn phi_l_and_w_l_follow_joins_window_changes_finishes_and_silent_quits() {
    let mut c = core(20480, 1024);
    assert_eq!(c.probe(10, &key(1, 1), 1, 5, 3000, false), Outcome::Added);
    assert_eq!(c.probe(20, &key(2, 1), 1, 2, 1000, false), Outcome::Added);
    assert_eq!((c.link(1).phi_l, c.link(1).w_l), (7, 4000));
    // Pair 1's window grows to 5000, its tokens drop to 4: moved by the differences.
    assert_eq!(c.probe(30, &key(1, 1), 1, 4, 5000, false), Outcome::Updated);
    assert_eq!((c.link(1).phi_l, c.link(1).w_l), (6, 6000));
    // Another link is its own.
    assert_eq!(c.probe(30, &key(1, 2), 2, 4, 5000, false), Outcome::Added);
    assert_eq!((c.link(1).phi_l, c.link(2).phi_l), (6, 4));
    // Pair 2 finishes; a second finish finds nothing.
    assert_eq!(c.probe(40, &key(2, 1), 1, 2, 1000, true), Outcome::Removed);
    assert_eq!(c.probe(41, &key(2, 1), 1, 2, 1000, true), Outcome::NotTracked);
    assert_eq!((c.link(1).phi_l, c.link(1).w_l), (4, 5000));
    // It comes back before the cleaning (its bits are still set): its own tombstone, re-added.
    assert_eq!(c.probe(50, &key(2, 1), 1, 3, 2000, false), Outcome::Added);
    assert_eq!((c.link(1).phi_l, c.link(1).w_l), (7, 7000));
    // Period 1 (1 s): pair 2 probes again, pair 1 on link 1 falls silent.
    c.clean(1_000_000_000);
    assert_eq!(c.probe(1_500_000_000, &key(2, 1), 1, 3, 2000, false), Outcome::Updated);
    // Period 2: pair 1 had no probe in period 1 — and none in period 0's end either: cleaned.
    assert!(c.clean(2_000_000_000));
    assert_eq!((c.link(1).phi_l, c.link(1).w_l), (3, 2000));
    assert_eq!((c.link(2).phi_l, c.link(2).w_l), (0, 0), "pair 1 on link 2 was silent too");
    assert_eq!(c.stats.cleaned, 2);
    // Cleaning rebuilt the filter: the cleaned pair is new again, the live one still known.
    assert!(!c.bloom_contains(&key(1, 1)));
    assert!(c.bloom_contains(&key(2, 1)));
    assert_eq!(c.probe(2_100_000_000, &key(1, 1), 1, 5, 3000, false), Outcome::Added);
    assert_eq!(c.link(1).phi_l, 8);
}

/// A look answers Φ_l and W_l without the pair's own live record and writes nothing: the sums,
/// the records and the filter are as before, and a pair it does not know is not added.
#[test]
fn a_look_reads_the_link_without_the_pair_and_changes_nothing() {
    let mut c = core(20480, 1024);
    assert_eq!(c.probe(10, &key(1, 1), 1, 50, 12_000, false), Outcome::Added);
    assert_eq!(c.probe(20, &key(2, 1), 1, 20, 5_000, false), Outcome::Added);
    let before = (c.link(1), c.live_pairs(), c.stats.added, c.stats.updated);
    // Pair 1 looks at link 1: the others' sums only.
    assert_eq!(c.look(&key(1, 1), 1), Some((20, 5_000)));
    // A pair the link does not carry sees the whole link, and is not added.
    assert_eq!(c.look(&key(3, 1), 1), Some((70, 17_000)));
    assert!(!c.bloom_contains(&key(3, 1)));
    assert_eq!((c.link(1), c.live_pairs(), c.stats.added, c.stats.updated), before);
    assert_eq!((c.stats.looks, c.stats.looks_own), (2, 1));
    // A finished pair's tombstone is not its record: the link is read whole.
    assert_eq!(c.probe(30, &key(2, 1), 1, 20, 5_000, true), Outcome::Removed);
    assert_eq!(c.look(&key(2, 1), 1), Some((50, 12_000)));
    assert_eq!(c.look(&key(1, 9), 9), None, "past the ports");
    // The looker's next probe is an update of its own record, as if it had never looked.
    assert_eq!(c.probe(40, &key(1, 1), 1, 50, 13_000, false), Outcome::Updated);
    assert_eq!((c.link(1).phi_l, c.link(1).w_l), (50, 13_000));
}

/// The paper's sizing: 20 K pairs in a 20 KB two-bank filter give under 5 % false positives,
/// and the measured rate is the formula's `(1 − e^{−n/m})²`.
#[test]
fn bloom_false_positives_at_20k_pairs_match_the_formula() {
    let mut c = core(20 * 1024, 65536);
    let n = 20_000u32;
    for i in 0..n {
        let o = c.probe(1, &key(i, 0), 0, 1, 256, false);
        assert!(matches!(o, Outcome::Added | Outcome::FalsePositive | Outcome::Untracked));
    }
    // Keys never inserted: the fraction the filter claims is the false-positive rate.
    let trials = 200_000u32;
    let fp = (n..n + trials).filter(|&i| c.bloom_contains(&key(i, 0))).count() as f64 / f64::from(trials);
    // Keys added: those omitted as false positives did not set bits, so the filter holds fewer
    // than n; the formula at the number it holds.
    let held = c.stats.added as usize;
    let want = c.false_positive_rate(held);
    assert!(fp < 0.05, "false positives {fp:.4} at 20 K pairs");
    eprintln!("false positives at 20 K pairs: measured {fp:.4}, formula {want:.4}");
    assert!((fp - want).abs() < 0.005, "measured {fp:.4}, formula {want:.4}");
    // And the pairs omitted on insertion are about that rate too, as §3.6 expects.
    let omitted = c.stats.omitted as f64 / f64::from(n);
    assert!(omitted < 0.05, "omitted {omitted:.4}");
    assert_eq!(c.stats.untracked, 0, "64 K records hold 20 K pairs");
    assert_eq!(c.link(0).phi_l, c.stats.added);
}

proptest! {
    /// Whatever the sequence of probes, finishes and cleanings, each link's Φ_l and W_l are the
    /// sums of φ and w over the pairs live on it (nothing added is lost or double-counted).
    #[test]
    fn sums_equal_the_live_pairs(ops in proptest::collection::vec((0u32..12, 0u16..3, 1u32..50, 0u32..100_000, 0u8..8, 0u64..300_000_000), 1..300)) {
        let mut c = Core::new(&mut Resources::default(), 3, 64, 8, 1_000_000_000, 10_000);
        let mut now = 0u64;
        // The model: per (pair, port), the (φ, w) it holds on the link while live, and the
        // period it was last probed in.
        let mut live: std::collections::HashMap<(u32, u16), (u64, u64, u64)> = Default::default();
        for (pair, port, phi, w, op, dt) in ops {
            now += dt;
            if c.clean(now) {
                let period = now / 1_000_000_000;
                live.retain(|_, v| v.2 + 1 >= period);
            }
            let k = key(pair, port);
            match c.probe(now, &k, port, phi, w, op == 0) {
                Outcome::Added | Outcome::Updated => {
                    live.insert((pair, port), (u64::from(phi), u64::from(w), now / 1_000_000_000));
                }
                Outcome::Removed => {
                    live.remove(&(pair, port));
                }
                _ => {}
            }
            for p in 0..3u16 {
                let (phi_l, w_l) = live.iter().filter(|(k, _)| k.1 == p).fold((0, 0), |a, (_, v)| (a.0 + v.0, a.1 + v.1));
                prop_assert_eq!((c.link(p).phi_l, c.link(p).w_l), (phi_l, w_l));
            }
        }
    }
}

const CFG: &str = r#"
program = "ufab"
[[port]]
name = "h0"
backend = "ring"
speed = "10G"
mac = "02:4b:00:00:00:00"
ipv4 = ["10.0.0.1/24"]
[[port]]
name = "h1"
backend = "ring"
speed = "10G"
mac = "02:4b:00:00:00:01"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "core"
backend = "ring"
speed = "100G"
mac = "02:4b:00:00:00:02"
ipv4 = ["10.9.0.1/24"]
[l2l3]
neighbor = [{ ip = "10.0.0.2", mac = "02:00:00:00:00:02", port = "h0" },
            { ip = "10.0.1.2", mac = "02:00:00:00:01:02", port = "h1" }]
[ufab]
tx_window_ns = 10000
"#;

const SW0: EthernetAddress = EthernetAddress([2, 0x4b, 0, 0, 0, 0]);
const H0: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
const H1: EthernetAddress = EthernetAddress([2, 0, 0, 0, 1, 2]);

fn flow(dport: u16) -> UdpFlow {
    UdpFlow::host_udp(
        H0,
        SW0,
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 777),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 2), dport),
    )
}

/// A µFAB packet from h0 to h1, with `route` pushed as its source route (none if empty).
fn ufab_frame(
    pool: &mut HeapPool,
    kind: UfabKind,
    route: &[u16],
    slots: u8,
    n_hop: u8,
    phi: u32,
    w: u64,
) -> PktBuf {
    let mut hops = [UfabHopRepr::default(); wire::ufab::MAX_HOPS];
    for h in hops.iter_mut().take(usize::from(slots)) {
        h.window = UfabHopRepr::encode_window(w);
    }
    let r = UfabRepr { kind, n_hop, phi_pair: phi, slots, hops };
    let f = flow(wire::udp::port::UFAB);
    let mut b = vec![0u8; 256];
    let n = f.emit_with(r.buffer_len(), false, &mut b, |p| r.emit(p)).unwrap();
    let n = if route.is_empty() { n } else { wire::mpls::push_route(&mut b, n, route, 3, 16).unwrap() };
    let mut pkt = pool.alloc().unwrap();
    pkt.append(n).unwrap().copy_from_slice(&b[..n]);
    pkt
}

fn data_frame(pool: &mut HeapPool, route: &[u16], len: usize) -> PktBuf {
    let f = flow(4791);
    let mut b = vec![0u8; 2048];
    let n = f.emit_with(len - f.headers_len(), false, &mut b, |_| Ok(())).unwrap();
    let n = if route.is_empty() { n } else { wire::mpls::push_route(&mut b, n, route, 3, 16).unwrap() };
    let mut pkt = pool.alloc().unwrap();
    pkt.append(n).unwrap().copy_from_slice(&b[..n]);
    pkt
}

fn drain(sw: &mut Switch<Ufab, PktBuf>, pool: &mut HeapPool, port: u16, now: u64) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let mut out = Vec::new();
    while sw.transmit(now, port, &mut v, 64, pool) > 0 {
        for f in v.drain(..) {
            out.push(f.data().to_vec());
            pool.free(f);
        }
    }
    out
}

fn count(sw: &Switch<Ufab, PktBuf>, name: &str) -> u64 {
    let i = sw.drop_reasons().names().iter().position(|n| *n == name).unwrap();
    sw.counters().drops[i]
}

fn switch() -> (Switch<Ufab, PktBuf>, HeapPool) {
    let cfg = Config::parse(Path::new("t.toml"), CFG).unwrap();
    (build_switch(&cfg).unwrap(), HeapPool::new(512, 2048))
}

/// A probe source-routed to h1 (one label, the bottom): popped, routed to the host by `l2l3`,
/// slot 0 stamped with the link's Φ_l = φ, W_l = w, C_l = 10G's class, and `n_hop` = 1; a
/// second pair on the same link makes Φ_l and W_l the sums.
#[test]
fn a_probe_is_popped_delivered_and_stamped_with_the_links_sums() {
    let (mut sw, mut pool) = switch();
    sw.receive(1000, 0, ufab_frame(&mut pool, UfabKind::Probe, &[1], 3, 0, 5, 4096), &mut pool);
    let out = drain(&mut sw, &mut pool, 1, 2000);
    assert_eq!(out.len(), 1);
    let f = &out[0];
    assert_eq!(&f[12..14], &[0x08, 0x00], "the label is popped");
    assert_eq!(&f[0..6], &H1.0, "routed to h1 by l2l3");
    let r = UfabRepr::parse(&f[14 + 20 + 8..]).unwrap();
    assert_eq!((r.kind, r.n_hop, r.slots, r.phi_pair), (UfabKind::Probe, 1, 3, 5));
    assert_eq!(r.hops[0].window_bytes(), 4096);
    assert_eq!(r.hops[0].phi_l, 5);
    assert_eq!(r.hops[0].c_l, wire::ufab::speed_class_of(10_000_000_000));
    // A second pair (another pair ID) on the same link.
    let mut p = ufab_frame(&mut pool, UfabKind::Probe, &[1], 3, 0, 2, 1024);
    p.data_mut()[14 + 4 + 20..14 + 4 + 22].copy_from_slice(&778u16.to_be_bytes());
    sw.receive(3000, 0, p, &mut pool);
    let r = UfabRepr::parse(&drain(&mut sw, &mut pool, 1, 4000)[0][42..]).unwrap();
    assert_eq!((r.hops[0].phi_l, r.hops[0].window_bytes()), (7, 5120));
    assert_eq!(sw.program().stats().probes, 2);
    assert_eq!(sw.program().stats().sr_delivered, 2);
    // The finish of the first: removed, its slot stamped (the acknowledgement).
    sw.receive(5000, 0, ufab_frame(&mut pool, UfabKind::Finish, &[1], 3, 0, 5, 4096), &mut pool);
    let r = UfabRepr::parse(&drain(&mut sw, &mut pool, 1, 6000)[0][42..]).unwrap();
    assert_eq!((r.kind, r.n_hop, r.hops[0].phi_l, r.hops[0].window_bytes()), (UfabKind::Finish, 1, 2, 1024));
}

/// A look through the switch: its slot carries the link without the looking pair, the link's
/// sums are untouched (a probe after it reads them whole), and it is counted as a look.
#[test]
fn a_look_probe_is_stamped_without_the_pair_and_leaves_the_link_as_it_was() {
    let (mut sw, mut pool) = switch();
    sw.receive(1000, 0, ufab_frame(&mut pool, UfabKind::Probe, &[1], 3, 0, 5, 4096), &mut pool);
    drain(&mut sw, &mut pool, 1, 2000);
    let mut p = ufab_frame(&mut pool, UfabKind::Probe, &[1], 3, 0, 2, 1024);
    p.data_mut()[14 + 4 + 20..14 + 4 + 22].copy_from_slice(&778u16.to_be_bytes());
    sw.receive(3000, 0, p, &mut pool);
    drain(&mut sw, &mut pool, 1, 4000);
    // The first pair looks: the other pair's φ = 2 and 1 KiB only.
    sw.receive(5000, 0, ufab_frame(&mut pool, UfabKind::Look, &[1], 3, 0, 0, 0), &mut pool);
    let r = UfabRepr::parse(&drain(&mut sw, &mut pool, 1, 6000)[0][42..]).unwrap();
    assert_eq!((r.kind, r.n_hop, r.hops[0].phi_l, r.hops[0].window_bytes()), (UfabKind::Look, 1, 2, 1024));
    assert_eq!((sw.program().stats().looks, sw.program().stats().probes), (1, 2));
    assert_eq!((sw.program().core().link(1).phi_l, sw.program().core().link(1).w_l), (7, 5120));
    assert_eq!(sw.program().core_stats().looks_own, 1);
}

/// Two labels: the top is popped and the frame leaves by its port still source-routed, label
/// TTL less one, source MAC the port's, queue the label's TC; the probe's slot is stamped for
/// that link (the core port, 100G).
#[test]
fn a_transit_hop_pops_the_top_label_and_forwards_by_it() {
    let (mut sw, mut pool) = switch();
    sw.receive(1000, 0, ufab_frame(&mut pool, UfabKind::Probe, &[2, 5], 2, 0, 9, 512), &mut pool);
    let out = drain(&mut sw, &mut pool, 2, 2000);
    assert_eq!(out.len(), 1);
    let f = &out[0];
    assert_eq!(&f[12..14], &[0x88, 0x47]);
    assert_eq!(&f[6..12], &[2, 0x4b, 0, 0, 0, 2]);
    assert_eq!(MplsRepr::parse(&f[14..]).unwrap(), MplsRepr { label: 5, tc: 3, bottom: true, ttl: 15 });
    let r = UfabRepr::parse(&f[18 + 28..]).unwrap();
    assert_eq!((r.n_hop, r.hops[0].phi_l), (1, 9));
    assert_eq!(r.hops[0].c_l, wire::ufab::speed_class_of(100_000_000_000));
    assert_eq!(sw.program().stats().sr_forwarded, 1);
}

/// tx_l: a probe opens a window; 100 frames of 1000 bytes through h1, one per µs (8 Gb/s,
/// skipping egress as data does); the next probe carries the port's rate over that window.
#[test]
fn tx_l_is_the_ports_rate_over_the_last_window() {
    let (mut sw, mut pool) = switch();
    let mut t = 1_000_000u64;
    sw.receive(t - 1000, 0, ufab_frame(&mut pool, UfabKind::Probe, &[], 1, 0, 1, 256), &mut pool);
    drain(&mut sw, &mut pool, 1, t - 500);
    // 1000-byte frames, one every 1 µs on a 10G port: 8 Gb/s.
    for _ in 0..100 {
        sw.receive(t, 0, data_frame(&mut pool, &[], 1000), &mut pool);
        drain(&mut sw, &mut pool, 1, t + 900);
        t += 1000;
    }
    sw.receive(t, 0, ufab_frame(&mut pool, UfabKind::Probe, &[], 1, 0, 1, 256), &mut pool);
    let f = drain(&mut sw, &mut pool, 1, t + 900);
    let r = UfabRepr::parse(&f[0][42..]).unwrap();
    let gbps = r.hops[0].tx_bps() as f64 / 1e9;
    // The window runs from probe to probe, a microsecond of silence at each end: within 10 %.
    assert!((7.2..=8.5).contains(&gbps), "tx_l {gbps} Gb/s");
}

/// A failed link: a probe bound for it comes back to its sender as a failure notification
/// (labels stripped, addresses swapped, n_hop unchanged); data bound for it is dropped by name;
/// restored, probes pass again.
#[test]
fn a_failed_link_turns_probes_back_and_drops_data() {
    let (mut sw, mut pool) = switch();
    let ports = ["h0".to_string(), "h1".to_string(), "core".to_string()];
    sw.control(Command::parse("ufab fail core", &ports).unwrap(), 0).unwrap();
    sw.receive(1000, 0, ufab_frame(&mut pool, UfabKind::Probe, &[2, 5], 2, 0, 9, 512), &mut pool);
    let back = drain(&mut sw, &mut pool, 0, 2000);
    assert_eq!(back.len(), 1);
    let f = &back[0];
    assert_eq!(&f[12..14], &[0x08, 0x00]);
    assert_eq!(&f[0..6], &H0.0, "routed back to the sender");
    assert_eq!(&f[14 + 12..14 + 16], &[10, 0, 1, 2], "source: the receiver");
    assert_eq!(&f[14 + 16..14 + 20], &[10, 0, 0, 2], "destination: the sender");
    let ip = wire::Ipv4Packet::new_checked(&f[14..]).unwrap();
    assert!(ip.verify_checksum());
    let r = UfabRepr::parse(&f[42..]).unwrap();
    assert_eq!((r.kind, r.n_hop), (UfabKind::FailureResponse, 0));
    assert!(drain(&mut sw, &mut pool, 2, 2000).is_empty());
    sw.receive(3000, 0, data_frame(&mut pool, &[2, 5], 200), &mut pool);
    assert_eq!(count(&sw, "ufab_link_failed"), 1);
    assert_eq!(sw.program().stats().failure_notifications, 1);
    sw.control(Command::parse("ufab restore core", &ports).unwrap(), 0).unwrap();
    sw.receive(4000, 0, ufab_frame(&mut pool, UfabKind::Probe, &[2, 5], 2, 0, 9, 512), &mut pool);
    assert_eq!(drain(&mut sw, &mut pool, 2, 5000).len(), 1);
    // Failed ports from the configuration, and a bad name refused with the key.
    let cfg = format!("{CFG}failed_ports = [\"h1\"]\n");
    let sw: Switch<Ufab, PktBuf> = build_switch(&Config::parse(Path::new("t.toml"), &cfg).unwrap()).unwrap();
    assert!(sw.program().is_failed(1) && !sw.program().is_failed(0));
    let bad = format!("{CFG}failed_ports = [\"nope\"]\n");
    let Err(e) = build_switch::<Ufab, PktBuf>(&Config::parse(Path::new("t.toml"), &bad).unwrap()) else {
        panic!("a bad port name must be refused")
    };
    assert!(e.to_string().contains("ufab.failed_ports"), "{e}");
}

/// Bad input, each dropped under its name: no free slot, n_hop past the buffer, an unknown
/// type, a label past the ports, an expired label TTL, a truncated label.
#[test]
fn bad_probes_and_routes_are_dropped_by_name() {
    let (mut sw, mut pool) = switch();
    sw.receive(1000, 0, ufab_frame(&mut pool, UfabKind::Probe, &[1], 2, 2, 1, 256), &mut pool);
    drain(&mut sw, &mut pool, 1, 2000);
    assert_eq!(count(&sw, "ufab_no_slot"), 1);
    // n_hop 3 claims more slots than the UDP payload holds.
    let mut p = ufab_frame(&mut pool, UfabKind::Probe, &[], 2, 0, 1, 256);
    p.data_mut()[42] = (1 << 4) | 3;
    sw.receive(3000, 0, p, &mut pool);
    drain(&mut sw, &mut pool, 1, 4000);
    assert_eq!(count(&sw, "ufab_malformed"), 1);
    let mut p = ufab_frame(&mut pool, UfabKind::Probe, &[], 2, 0, 1, 256);
    p.data_mut()[42] = 9 << 4;
    sw.receive(5000, 0, p, &mut pool);
    drain(&mut sw, &mut pool, 1, 6000);
    assert_eq!(count(&sw, "ufab_unknown_type"), 1);
    sw.receive(7000, 0, data_frame(&mut pool, &[40, 1], 200), &mut pool);
    assert_eq!(count(&sw, "ufab_bad_route"), 1);
    let mut d = data_frame(&mut pool, &[2, 1], 200);
    d.data_mut()[17] = 1;
    sw.receive(8000, 0, d, &mut pool);
    assert_eq!(count(&sw, "ufab_ttl_expired"), 1);
    let mut t = pool.alloc().unwrap();
    let b = t.append(16).unwrap();
    b.fill(0);
    b[12..14].copy_from_slice(&[0x88, 0x47]);
    sw.receive(9000, 0, t, &mut pool);
    assert_eq!(count(&sw, "ufab_malformed"), 2);
}

proptest! {
    /// Arbitrary frames — a third of them source-routed, a third µFAB probes with arbitrary
    /// bytes — on any port, through egress and ticks: nothing panics and every frame is taken in.
    #[test]
    fn arbitrary_frames_never_panic(frames in proptest::collection::vec((0u16..3, 0u8..3, proptest::collection::vec(any::<u8>(), 0..160)), 1..40)) {
        let (mut sw, mut pool) = switch();
        let mut now = 1_000u64;
        let n = frames.len() as u64;
        for (port, shape, mut bytes) in frames {
            match shape {
                0 if bytes.len() >= 14 => bytes[12..14].copy_from_slice(&[0x88, 0x47]),
                1 if bytes.len() >= 42 => {
                    bytes[12..14].copy_from_slice(&[0x08, 0x00]);
                    bytes[14] = 0x45;
                    bytes[20] = 0;
                    bytes[21] = 0;
                    bytes[23] = 17;
                    bytes[36..38].copy_from_slice(&wire::udp::port::UFAB.to_be_bytes());
                }
                _ => {}
            }
            let mut f = pool.alloc().unwrap();
            if let Some(b) = f.append(bytes.len()) {
                b.copy_from_slice(&bytes);
            }
            sw.receive(now, port, f, &mut pool);
            now += 1_000;
            for p in 0..3 {
                drain(&mut sw, &mut pool, p, now);
            }
            sw.tick(now, &mut pool);
        }
        let rx: u64 = sw.counters().ports.iter().map(|p| p.rx_packets).sum();
        prop_assert_eq!(rx, n);
    }
}

proptest! {
    /// The fixed-offset check of which frames need egress agrees with the parsed one, on
    /// frames whose every field it reads is drawn from the values that decide (EtherType,
    /// version and IHL, protocol, the fragment bits, the UDP port) or arbitrary, at arbitrary
    /// lengths.
    #[test]
    fn needs_egress_fast_and_parsed_agree(
        ethertype in prop_oneof![Just(0x0800u16), Just(0x8100), Just(0x8847), any::<u16>()],
        vihl in prop_oneof![Just(0x45u8), Just(0x46), Just(0x55), any::<u8>()],
        proto in prop_oneof![Just(17u8), Just(6), any::<u8>()],
        frag in prop_oneof![Just([0u8, 0]), Just([0x20, 0]), Just([0x40, 0]), Just([0x01, 0]), Just([0, 1]), any::<[u8; 2]>()],
        dport in prop_oneof![Just(wire::udp::port::UFAB), Just(wire::udp::port::HPCC_INT), any::<u16>()],
        rest in any::<[u8; 8]>(),
        len in prop_oneof![3 => Just(64usize), 1 => 0usize..64],
    ) {
        let mut f = vec![0u8; 64];
        f[12..14].copy_from_slice(&ethertype.to_be_bytes());
        f[14] = vihl;
        f[16..18].copy_from_slice(&rest[..2]);
        f[20..22].copy_from_slice(&frag);
        f[23] = proto;
        f[34..36].copy_from_slice(&rest[2..4]);
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f[38..42].copy_from_slice(&rest[4..]);
        // The same decisive fields behind a VLAN tag or a label, four bytes on.
        if ethertype != 0x0800 {
            f[16..18].copy_from_slice(&[0x08, 0x00]);
            f[18] = vihl;
            f[27] = proto;
            f[40..42].copy_from_slice(&dport.to_be_bytes());
        }
        f.truncate(len);
        prop_assert_eq!(needs_egress(&f), needs_egress_parsed(&f));
    }
}
