//! The Hawkeye program: epochs, collisions, and one switch's telemetry and trace, by hand.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

use proptest::prelude::*;
use wire::EthernetAddress;
use wire::hawkeye::report::Report;
use wire::pfc::{MacControlRepr, PfcRepr};

use super::telemetry::{Sample, Telemetry};
use super::*;
use crate::buf::{HeapPool, PktBuf, Pool};
use crate::model::Resources;
use crate::programs::build_switch;
use crate::switch::Switch;

fn tuple(src: [u8; 4], dst: [u8; 4], sport: u16) -> FiveTuple {
    FiveTuple { src_ip: src.into(), dst_ip: dst.into(), protocol: 17, src_port: sport, dst_port: 4791 }
}

fn sample(flow: FiveTuple, in_port: u16, out_port: u16, paused: bool) -> Sample {
    Sample { flow: Some(flow), in_port, out_port, bytes: 100, enq_qdepth: 1000, paused }
}

proptest! {
    /// Over any increasing timestamps, what the tables read for the current epoch is exactly
    /// what was recorded in it: a bank reused by a later lap starts from zero (the prototype's
    /// flow entries never reset), and nothing from another lap leaks in.
    #[test]
    fn epochs_wrap_and_reset(steps in proptest::collection::vec((0u64..5_000_000, 0u16..3, any::<bool>()), 1..200)) {
        let mut res = Resources::default();
        let mut t = Telemetry::new(&mut res, 4, 20, 64, 3);
        let f = tuple([10, 0, 0, 1], [10, 0, 1, 1], 7);
        let mut now = 0u64;
        let mut log: Vec<(u64, u16, bool)> = Vec::new();
        for (dt, port, paused) in steps {
            now += dt;
            t.record(now, &sample(f, 0, port, paused));
            log.push((now, port, paused));
            let lap = now >> 20;
            for p in 0..3u16 {
                let this: Vec<_> = log.iter().filter(|(at, q, _)| at >> 20 == lap && *q == p).collect();
                let c = t.port(now, p);
                prop_assert_eq!(c.pkts as usize, this.len());
                prop_assert_eq!(c.paused as usize, this.iter().filter(|e| e.2).count());
                // The port sums every packet's depth, paused ones included (§3.5.1's qdepth[P_j]).
                prop_assert_eq!(c.qdepth_sum, 1000 * this.len() as u64);
                prop_assert_eq!(t.meter(now, 0, p), 100 * this.len() as u64);
            }
            let all_now: Vec<_> = log.iter().filter(|(at, _, _)| at >> 20 == lap).collect();
            let cell = t.flow(now, &f);
            prop_assert_eq!(cell.map(|c| c.pkts as usize).unwrap_or(0), all_now.len());
            // The flow sums unpaused packets' depth only (its port → flow edges exclude them).
            let unpaused = all_now.iter().filter(|e| !e.2).count() as u64;
            prop_assert_eq!(cell.map(|c| c.qdepth_sum).unwrap_or(0), 1000 * unpaused);
        }
    }
}

/// The tracing's lookback: a pause counted in the previous epoch still counts (a port paused
/// since before the epoch began sends, so counts, nothing in it), the meter reads every kept
/// epoch, and the victim flow's own pause is its own — another flow's paused packets on the
/// same port do not make it paused.
#[test]
fn the_tracing_looks_back_over_the_kept_epochs() {
    let mut res = Resources::default();
    let mut t = Telemetry::new(&mut res, 4, 20, 64, 3);
    let (v, o) = (tuple([10, 0, 0, 1], [10, 0, 1, 1], 1), tuple([10, 0, 0, 2], [10, 0, 1, 1], 2));
    t.record(10, &sample(o, 0, 1, true));
    t.record(20, &sample(v, 2, 1, false));
    let next = 1 << 20;
    assert_eq!(t.port(next, 1).paused, 0, "nothing counted this epoch");
    assert!(t.paused_recently(next, 1), "the previous epoch's pause");
    assert!(!t.paused_recently(2 << 20, 1), "two epochs on: no longer");
    assert_eq!(t.meter(3 << 20, 0, 1), 0);
    assert_eq!(t.meter_recent(3 << 20, 0, 1), 100, "three epochs back is kept");
    assert_eq!(t.meter_recent(4 << 20, 0, 1), 0, "four is not");
    assert_eq!(t.flow_paused_recently(next, &v), Some(false), "the victim was not paused");
    assert_eq!(t.flow_paused_recently(next, &o), Some(true));
    assert_eq!(t.flow_paused_recently(next, &tuple([10, 0, 0, 3], [10, 0, 1, 1], 3)), None);
    // A snapshot carries every kept epoch's entries.
    t.record((3 << 20) + 5, &sample(v, 2, 1, false));
    let mut e = Vec::new();
    t.snapshot((3 << 20) + 10, 1, &mut e);
    let laps: std::collections::BTreeSet<u32> = e
        .iter()
        .map(|x| match x {
            Entry::Port { epoch_id, .. } | Entry::Meter { epoch_id, .. } | Entry::Flow { epoch_id, .. } => {
                *epoch_id
            }
        })
        .collect();
    assert_eq!(laps.into_iter().collect::<Vec<_>>(), vec![0, 3]);
}

/// Two flows in one slot (§3.3): the newer evicts the older entry to the control side and
/// takes the slot; a snapshot reports both, and the older one back in the same epoch merged
/// with what was evicted of it; evicted entries older than the kept epochs are forgotten.
#[test]
fn a_collision_evicts_the_older_entry_to_the_control_side() {
    let mut res = Resources::default();
    let mut t = Telemetry::new(&mut res, 4, 20, 1, 2);
    let (a, b) = (tuple([10, 0, 0, 1], [10, 0, 1, 1], 1), tuple([10, 0, 0, 2], [10, 0, 1, 1], 2));
    for _ in 0..3 {
        t.record(10, &sample(a, 0, 1, false));
    }
    for _ in 0..2 {
        t.record(20, &sample(b, 0, 1, true));
    }
    assert_eq!((t.collisions, t.evicted_lost), (1, 0));
    assert_eq!(t.flow(30, &a), None, "a's slot is b's now");
    let c = t.flow(30, &b).unwrap();
    assert_eq!((c.pkts, c.paused, c.qdepth_sum), (2, 2, 0));
    assert_eq!(t.flow_paused_recently(30, &b), Some(true));
    assert_eq!(t.flow_paused_recently(30, &a), Some(false), "found among the evicted");
    // Ports and meters count every packet, whichever flow.
    assert_eq!((t.port(30, 1).pkts, t.port(30, 1).paused), (5, 2));
    let flows = |t: &Telemetry, now: u64| {
        let mut e = Vec::new();
        t.snapshot(now, 1, &mut e);
        let mut f: Vec<(u16, u32, u32)> = e
            .iter()
            .filter_map(|x| match x {
                Entry::Flow { flow, pkts, paused, .. } => Some((flow.src_port, *pkts, *paused)),
                _ => None,
            })
            .collect();
        f.sort_unstable();
        f
    };
    assert_eq!(flows(&t, 30), vec![(1, 3, 0), (2, 2, 2)]);
    // a again, same epoch: it evicts b and its entry is merged with what was evicted of it.
    t.record(40, &sample(a, 0, 1, false));
    assert_eq!(t.collisions, 2);
    assert_eq!(flows(&t, 50), vec![(1, 4, 0), (2, 2, 2)]);
    // Four epochs on, the evicted entries are outside the kept epochs: forgotten.
    t.prune_evicted(4 << 20);
    assert!(t.evicted().is_empty());
}

const CFG: &str = r#"
program = "hawkeye"
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
name = "h2"
backend = "ring"
speed = "10G"
mac = "02:4b:00:00:00:02"
ipv4 = ["10.0.2.1/24"]
[l2l3]
neighbor = [{ ip = "10.0.0.2", mac = "02:00:00:00:00:02", port = "h0" },
            { ip = "10.0.1.2", mac = "02:00:00:00:01:02", port = "h1" },
            { ip = "10.0.2.100", mac = "02:00:00:00:02:64", port = "h2" }]
[hawkeye]
switch_id = 9
analyzer = "10.0.2.100:9999"
"#;

const SW0: EthernetAddress = EthernetAddress([2, 0x4b, 0, 0, 0, 0]);
const SW1: EthernetAddress = EthernetAddress([2, 0x4b, 0, 0, 0, 1]);
const H0: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

fn udp_frame(pool: &mut HeapPool, sport: u16, len: usize) -> PktBuf {
    let flow = UdpFlow::host_udp(
        H0,
        SW0,
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), sport),
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 2), 4791),
    );
    let mut f = pool.alloc().unwrap();
    let b = f.append(len).unwrap();
    flow.emit_with(len - flow.headers_len(), false, b, |_| Ok(())).unwrap();
    f
}

fn polling_frame(pool: &mut HeapPool, flag: PollingFlag, event_id: u8, victim_sport: u16) -> PktBuf {
    let r = PollingRepr {
        flag,
        ingress_port: PORT_NONE,
        egress_port: PORT_NONE,
        event_id,
        victim: tuple([10, 0, 0, 2], [10, 0, 1, 2], victim_sport),
    };
    let mut f = pool.alloc().unwrap();
    let b = f.append(60).unwrap();
    b.fill(0);
    b[0..6].copy_from_slice(&SW0.0);
    b[6..12].copy_from_slice(&H0.0);
    b[12..14].copy_from_slice(&decl::ETHERTYPE_POLLING.to_be_bytes());
    r.emit(&mut b[14..]).unwrap();
    f
}

fn drain(sw: &mut Switch<Hawkeye, PktBuf>, pool: &mut HeapPool, port: u16, now: u64) -> Vec<Vec<u8>> {
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

/// One switch by hand: four packets of the victim flow from h0 to h1, two of them after h1 was
/// paused by PFC; then the victim's agent polls (01). The copy on h1 (the victim's port, paused)
/// goes on as 11, the control side reports h1's epoch: 4 packets, 2 paused, the meter h0 → h1
/// (4 × 100 bytes) and the flow — exactly, as the analyzer receives it on h2.
#[test]
fn a_victims_poll_reports_the_paused_port_its_meter_and_flows() {
    let cfg = Config::parse(Path::new("t.toml"), CFG).unwrap();
    let mut sw: Switch<Hawkeye, PktBuf> = build_switch(&cfg).unwrap();
    let mut pool = HeapPool::new(256, 2048);
    let t0 = 1_000_000u64 << 20; // an epoch boundary
    for _ in 0..2 {
        sw.receive(t0 + 100, 0, udp_frame(&mut pool, 5000, 100), &mut pool);
    }
    assert_eq!(drain(&mut sw, &mut pool, 1, t0 + 200).len(), 2);
    // h1 is paused on priority 0 (the data's: DSCP 0), 100 quanta (5.12 µs at 10 Gb/s).
    let mut pause = pool.alloc().unwrap();
    let b = pause.append(60).unwrap();
    wire::pfc::emit_frame(
        EthernetAddress([2, 0, 0, 0, 1, 2]),
        &MacControlRepr::Pfc(PfcRepr::pause(1, 100)),
        b,
    )
    .unwrap();
    sw.receive(t0 + 300, 1, pause, &mut pool);
    for _ in 0..2 {
        sw.receive(t0 + 400, 0, udp_frame(&mut pool, 5000, 100), &mut pool);
    }
    assert_eq!(drain(&mut sw, &mut pool, 1, t0 + 500).len(), 0, "paused");
    assert_eq!(drain(&mut sw, &mut pool, 1, t0 + 10_000).len(), 2, "after the pause");
    let tel = sw.program().telemetry();
    let p1 = tel.port(t0 + 10_000, 1);
    assert_eq!((p1.pkts, p1.paused), (4, 2));
    // The port sums every packet's depth, the flow unpaused packets' only.
    let f1 = tel.flow(t0 + 10_000, &tuple([10, 0, 0, 2], [10, 0, 1, 2], 5000)).unwrap();
    assert!(f1.qdepth_sum <= p1.qdepth_sum);
    assert_eq!(tel.meter(t0 + 10_000, 0, 1), 400);

    // The victim's agent polls; it arrives on h0 and goes to h1, the victim's port.
    sw.receive(t0 + 20_000, 0, polling_frame(&mut pool, PollingFlag::VictimPath, 42, 5000), &mut pool);
    let out = drain(&mut sw, &mut pool, 1, t0 + 20_100);
    assert_eq!(out.len(), 1);
    let p = PollingRepr::parse(&out[0][14..]).unwrap();
    assert_eq!((p.flag, p.ingress_port, p.egress_port, p.event_id), (PollingFlag::Both, 0, 1, 42));
    // The same event again on the same port: a duplicate.
    sw.receive(t0 + 21_000, 0, polling_frame(&mut pool, PollingFlag::VictimPath, 42, 5000), &mut pool);
    assert!(drain(&mut sw, &mut pool, 1, t0 + 21_100).is_empty());
    assert_eq!(sw.program().stats().survived, 1);
    // The same event for another flow of the same host is another victim (§3.4: one poll per
    // 5-tuple); it never crossed h1, so its copy goes on as 01 — and it is reported too.
    sw.receive(t0 + 22_000, 0, polling_frame(&mut pool, PollingFlag::VictimPath, 42, 5001), &mut pool);
    let out = drain(&mut sw, &mut pool, 1, t0 + 22_100);
    assert_eq!(out.len(), 1, "not a duplicate");
    assert_eq!(sw.program().stats().survived, 2);
    // Its report goes out with the first one's at the tick; the test below reads the first.
    sw.tick(t0 + 25_000, &mut pool);
    let early = drain(&mut sw, &mut pool, 2, t0 + 25_100);
    assert_eq!(early.len(), 2);

    // The control side ran at the tick and reported to the analyzer behind h2.
    let reports = early;
    let f = &reports[0];
    assert_eq!(&f[0..6], &[2, 0, 0, 0, 2, 0x64]);
    assert_eq!(u16::from_be_bytes([f[36], f[37]]), 9999);
    let r = Report::parse(&f[42..]).unwrap();
    assert_eq!((r.header.switch_id, r.header.event_id, r.header.flag), (9, 42, 3));
    assert_eq!((r.header.in_port, r.header.out_port, r.header.last), (0, 1, true));
    let entries: Vec<Entry> = r.entries().map(Result::unwrap).collect();
    let epoch_id = (t0 >> 20) as u32;
    assert_eq!(
        entries,
        vec![
            Entry::Port { port: 1, epoch_id, pkts: 4, paused: 2, qdepth_sum: p1.qdepth_sum },
            Entry::Meter { out_port: 1, epoch_id, in_port: 0, bytes: 400 },
            Entry::Flow {
                port: 1,
                epoch_id,
                flow: tuple([10, 0, 0, 2], [10, 0, 1, 2], 5000),
                pkts: 4,
                paused: 2,
                qdepth_sum: f1.qdepth_sum,
            },
        ]
    );
    let s = sw.program().stats();
    assert_eq!((s.snapshots, s.reports, s.entries, s.reports_unsent), (2, 2, 6, 0));
    assert_eq!(s.report_bytes, 2 * (20 + 3 * 40));
}

/// Full polling (the paper's baseline): `hawkeye snapshot EVENT` reports every port with
/// traffic, flag 00, no polling packet involved; idle ports report nothing.
#[test]
fn a_full_polling_snapshot_reports_every_port_flagged_00() {
    let cfg = Config::parse(Path::new("t.toml"), CFG).unwrap();
    let mut sw: Switch<Hawkeye, PktBuf> = build_switch(&cfg).unwrap();
    let mut pool = HeapPool::new(256, 2048);
    let t0 = 1_000_000u64 << 20;
    for _ in 0..3 {
        sw.receive(t0 + 100, 0, udp_frame(&mut pool, 5000, 100), &mut pool);
    }
    assert_eq!(drain(&mut sw, &mut pool, 1, t0 + 200).len(), 3);
    let names: Vec<String> = ["h0", "h1", "h2"].iter().map(|s| s.to_string()).collect();
    let cmd = Command::parse("hawkeye snapshot 7", &names).unwrap();
    let said = sw.control(cmd, t0 + 1_000).unwrap();
    assert!(said.contains("3 port snapshots queued for event 7"), "{said}");
    assert!(Command::parse("hawkeye snapshot 300", &names).is_err());
    sw.tick(t0 + 2_000, &mut pool);
    let reports = drain(&mut sw, &mut pool, 2, t0 + 2_100);
    let parsed: Vec<Report> = reports.iter().map(|f| Report::parse(&f[42..]).unwrap()).collect();
    assert_eq!(parsed.len(), 1, "idle ports report nothing");
    let r = &parsed[0];
    assert_eq!((r.header.flag, r.header.event_id, r.header.in_port), (0, 7, PORT_NONE));
    assert_eq!((r.header.out_port, r.len()), (1, 3), "h1's port, meter and flow");
    assert_eq!(sw.program().stats().snapshots, 3);
}

/// Bad polling packets are dropped under their reasons; a copy on a port that is neither the
/// victim's nor paused is pruned.
/// Packets of a queue the telemetry does not count (acknowledgements in a priority of their
/// own) are forwarded but not counted; the default is the lossless priorities, else all.
#[test]
fn only_the_telemetry_queues_are_counted() {
    let t0 = 1_000_000u64 << 20;
    for (extra, counted) in [("queues = [5]\n", 0), ("queues = [0, 5]\n", 2), ("", 2)] {
        let text = CFG.replace("[hawkeye]\n", &format!("[hawkeye]\n{extra}"));
        let cfg = Config::parse(Path::new("t.toml"), &text).unwrap();
        let mut sw: Switch<Hawkeye, PktBuf> = build_switch(&cfg).unwrap();
        let mut pool = HeapPool::new(256, 2048);
        for _ in 0..2 {
            sw.receive(t0 + 100, 0, udp_frame(&mut pool, 5000, 100), &mut pool);
        }
        assert_eq!(drain(&mut sw, &mut pool, 1, t0 + 200).len(), 2, "forwarded either way");
        assert_eq!(sw.program().telemetry().port(t0 + 200, 1).pkts, counted, "{extra:?}");
    }
    let lossless = CFG.replace("[hawkeye]\n", "[tm]\nlossless = [3]\n[hawkeye]\n");
    let cfg = Config::parse(Path::new("t.toml"), &lossless).unwrap();
    let sw: Switch<Hawkeye, PktBuf> = build_switch(&cfg).unwrap();
    assert_eq!(sw.program().telemetry_queues(), 1 << 3);
    let bad = CFG.replace("[hawkeye]\n", "[hawkeye]\nqueues = [9]\n");
    let Err(e) = build_switch::<Hawkeye, PktBuf>(&Config::parse(Path::new("t.toml"), &bad).unwrap()) else {
        panic!("queues = [9] accepted")
    };
    assert!(e.to_string().contains("hawkeye.queues"), "{e}");
}

#[test]
fn bad_polling_packets_are_dropped_by_name() {
    let cfg = Config::parse(Path::new("t.toml"), CFG).unwrap();
    let mut sw: Switch<Hawkeye, PktBuf> = build_switch(&cfg).unwrap();
    let mut pool = HeapPool::new(256, 2048);
    let count = |sw: &Switch<Hawkeye, PktBuf>, name: &str| {
        let i = sw.drop_reasons().names().iter().position(|n| *n == name).unwrap();
        sw.counters().drops[i]
    };
    // Truncated: the Ethernet header and 10 bytes.
    let mut f = pool.alloc().unwrap();
    let b = f.append(24).unwrap();
    b.fill(0);
    b[12..14].copy_from_slice(&decl::ETHERTYPE_POLLING.to_be_bytes());
    sw.receive(1000, 0, f, &mut pool);
    assert_eq!(count(&sw, "hawkeye_malformed"), 1);
    sw.receive(1000, 0, polling_frame(&mut pool, PollingFlag::Drop, 1, 1), &mut pool);
    assert_eq!(count(&sw, "hawkeye_no_trace"), 1);
    let mut f = polling_frame(&mut pool, PollingFlag::VictimPath, 1, 1);
    f.data_mut()[14 + 10..14 + 14].copy_from_slice(&[192, 168, 0, 1]);
    sw.receive(1000, 0, f, &mut pool);
    assert_eq!(count(&sw, "hawkeye_no_route"), 1);
    // 10 (PFC causality) from h0: copies to h1 and h2, neither paused: both pruned.
    sw.receive(1000, 0, polling_frame(&mut pool, PollingFlag::PfcCausality, 2, 1), &mut pool);
    for p in 0..3 {
        assert!(drain(&mut sw, &mut pool, p, 2000).is_empty());
    }
    assert_eq!(count(&sw, "hawkeye_pruned"), 2);
    assert_eq!(sw.program().stats().survived, 0);
    let _ = SW1;
}

proptest! {
    /// Arbitrary frames — half of them polling packets with arbitrary headers — through the
    /// program on any port, then egress and the control side: nothing panics, and the switch
    /// took in every frame.
    #[test]
    fn arbitrary_frames_never_panic(frames in proptest::collection::vec((0u16..3, any::<bool>(), proptest::collection::vec(any::<u8>(), 0..120)), 1..40)) {
        let cfg = Config::parse(Path::new("t.toml"), CFG).unwrap();
        let mut sw: Switch<Hawkeye, PktBuf> = build_switch(&cfg).unwrap();
        let mut pool = HeapPool::new(512, 2048);
        let mut now = 1_000u64;
        let n = frames.len() as u64;
        for (port, polling, mut bytes) in frames {
            if polling && bytes.len() >= 14 {
                bytes[12..14].copy_from_slice(&decl::ETHERTYPE_POLLING.to_be_bytes());
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
        let c = sw.counters();
        let rx: u64 = c.ports.iter().map(|p| p.rx_packets).sum();
        prop_assert_eq!(rx, n);
    }
}

/// The byte tables compute the declared hash unit exactly, and the fast 5-tuple read at fixed
/// offsets gives what the parsers give.
#[test]
fn the_flow_hash_tables_and_the_fast_tuple_read_agree_with_the_declarations() {
    let mut res = Resources::default();
    let t = Telemetry::new(&mut res, 4, 20, 65536, 2);
    let mut x = 0x1234_5678_9abc_def0u64;
    for _ in 0..10_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut k = [0u8; 13];
        k[..8].copy_from_slice(&x.to_le_bytes());
        k[8..].copy_from_slice(&x.to_be_bytes()[..5]);
        assert_eq!(t.flow_hash(&k), t.declared_hash(&k));
    }
    let mut pool = HeapPool::new(8, 2048);
    let f = udp_frame(&mut pool, 777, 100);
    let (fast, parsed) = fast_and_parsed(f.data()).expect("the common frame is read at fixed offsets");
    assert_eq!(fast, parsed);
    let flow = Hawkeye::flow_of(f.data()).unwrap();
    assert_eq!(flow.src_port, 777);
    assert!(
        fast.0.iter().any(|e| matches!(e, Entry::Flow { flow: f, pkts: 1, .. } if *f == flow)),
        "{fast:?}"
    );
}

/// `frame` counted by the fixed-offset read and by the parsers, each into fresh tables: what
/// each then holds (port 1's snapshot, collisions, the flow's cell found where the declared
/// hash puts it), or `None` if the fast read declined.
type Counted = (Vec<Entry>, u64, Option<telemetry::FlowCell>);
fn fast_and_parsed(data: &[u8]) -> Option<(Counted, Counted)> {
    let counted = |fast: bool| -> Option<Counted> {
        let mut res = Resources::default();
        let mut t = Telemetry::new(&mut res, 4, 20, 1024, 2);
        let now = 1 << 20;
        if fast {
            if !t.record_ipv4(now, 0, 1, false, 300, data) {
                return None;
            }
        } else {
            let s = Sample {
                flow: None,
                in_port: 0,
                out_port: 1,
                bytes: data.len() as u32,
                enq_qdepth: 300,
                paused: false,
            };
            let k = Hawkeye::flow_of(data).map(|f| telemetry::key(&f));
            t.record_key(now, &s, k.as_ref());
        }
        let mut e = Vec::new();
        t.snapshot(now, 1, &mut e);
        let cell = Hawkeye::flow_of(data).and_then(|f| t.flow(now, &f));
        Some((e, t.collisions, cell))
    };
    Some((counted(true)?, counted(false)?))
}

proptest! {
    /// On any frame the fixed-offset read either declines or counts what the parsers' key
    /// counts: the same port, meter and flow entries.
    #[test]
    fn the_fixed_offset_read_counts_what_the_parsers_count(
        edits in proptest::collection::vec((0usize..60, any::<u8>()), 0..6),
        len in 0usize..100,
    ) {
        let mut pool = HeapPool::new(8, 2048);
        let f = udp_frame(&mut pool, 777, 64);
        let mut data = f.data().to_vec();
        data.resize(len.max(14), 0);
        let untouched = edits.is_empty() && len >= 64;
        for (at, b) in edits {
            if let Some(x) = data.get_mut(at) {
                *x = b;
            }
        }
        match fast_and_parsed(&data) {
            Some((fast, parsed)) => {
                prop_assert!(!fast.0.is_empty() && fast.2.is_some());
                prop_assert_eq!(fast, parsed);
            }
            // The whole common frame (padding after it allowed) is always read fast.
            None => prop_assert!(!untouched),
        }
    }
}

/// With `dta_collector` (and no analyzer) the same report goes out as DTA Append reports, one
/// word each, to list = the switch ID: read back in order, the words frame the report exactly.
#[test]
fn reports_reach_a_dta_collector_as_append_words() {
    let text = CFG
        .replace("analyzer = \"10.0.2.100:9999\"", "dta_collector = \"10.0.2.100\"")
        .replace("switch_id = 9", "switch_id = 9\ndta_list = 77");
    let cfg = Config::parse(Path::new("t.toml"), &text).unwrap();
    let mut sw: Switch<Hawkeye, PktBuf> = build_switch(&cfg).unwrap();
    let mut pool = HeapPool::new(2048, 2048);
    let t0 = 5u64 << 20;
    for _ in 0..3 {
        sw.receive(t0 + 100, 0, udp_frame(&mut pool, 6000, 100), &mut pool);
    }
    drain(&mut sw, &mut pool, 1, t0 + 1000);
    sw.receive(t0 + 2000, 0, polling_frame(&mut pool, PollingFlag::VictimPath, 7, 6000), &mut pool);
    assert_eq!(drain(&mut sw, &mut pool, 1, t0 + 3000).len(), 1);
    sw.tick(t0 + 4000, &mut pool);
    let frames = drain(&mut sw, &mut pool, 2, t0 + 5000);
    let mut words = Vec::new();
    for f in &frames {
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), 40040);
        let r = wire::dta::DtaRepr::parse(&f[42..], wire::dta::Format::default()).unwrap();
        let wire::dta::Primitive::Append { list_id, data } = r.primitive else { panic!("{r:?}") };
        assert_eq!(list_id, 77);
        words.push(data);
    }
    let reports: Vec<&[u32]> = wire::hawkeye::report::frames(&words).map(Result::unwrap).collect();
    assert_eq!(reports.len(), 1);
    let bytes: Vec<u8> = reports[0].iter().flat_map(|w| w.to_be_bytes()).collect();
    let r = Report::parse(&bytes).unwrap();
    assert_eq!((r.header.switch_id, r.header.event_id, r.header.out_port), (9, 7, 1));
    assert_eq!(r.len(), 3, "port, meter, flow");
    let s = sw.program().stats();
    assert_eq!((s.reports, s.dta_reports, s.dta_words, s.dta_words_unsent), (1, 1, frames.len() as u64, 0));
    assert_eq!(s.dta_words, 1 + (20 + 3 * 40) / 4);
}

/// Three switches in a line, by hand: A (10.0.0.2) — S0 — S1 — S2 — D (10.0.2.2), and a burst
/// source C (10.0.3.2) on S1. S1's port towards S2 is paused by PFC while 2 victim packets and
/// 3 burst packets wait there; then A's agent polls for A → D. The trace and every number the
/// three switches report are computed by hand:
/// * S0: the copy leaves by port 1 (the victim's, not paused): flag 01; port 1 had the 4 victim
///   packets, none paused, meter 0 → 1 = 400 bytes, the victim flow 4 packets;
/// * S1: the victim's port 1 paused 5 packets of 7 (2 victim before the pause, 2 victim and 3
///   burst during it): flag 11; meter 0 → 1 = 400 bytes, 2 → 1 = 300 bytes; the victim flow 4
///   packets (2 paused), the burst flow 3 packets (3 paused);
/// * S2: flag 11 arrives and fans out; the copy on the victim's port 1 (not paused at S2) goes
///   on as 01, the other port (back to S1, excluded as the ingress) has none: one report, port 1
///   with the 7 packets, none paused.
#[test]
fn three_switches_trace_and_report_exactly_by_hand() {
    let sw_cfg = |ports: &[(&str, &str, &str)], l2l3: &str, id: u16| {
        let mut t = String::from("program = \"hawkeye\"\n");
        for (name, mac, ip) in ports {
            t.push_str(&format!(
                "[[port]]\nname = \"{name}\"\nbackend = \"ring\"\nspeed = \"10G\"\nmac = \"{mac}\"\nipv4 = [\"{ip}\"]\n"
            ));
        }
        t.push_str(&format!("[l2l3]\n{l2l3}\n[hawkeye]\nswitch_id = {id}\n"));
        let cfg = Config::parse(Path::new("t.toml"), &t).unwrap();
        build_switch::<Hawkeye, PktBuf>(&cfg).unwrap()
    };
    // S0: p0 host A, p1 to S1. S1: p0 from S0, p1 to S2, p2 host C. S2: p0 from S1, p1 host D.
    let mut s0 = sw_cfg(
        &[("a", "02:00:00:00:00:a0", "10.0.0.1/24"), ("up", "02:00:00:00:00:a1", "10.9.1.1/24")],
        "neighbor = [{ ip = \"10.0.0.2\", mac = \"02:00:00:00:0a:02\", port = \"a\" }, { ip = \"10.9.1.2\", mac = \"02:00:00:00:00:b0\", port = \"up\" }]\nroute = [{ prefix = \"10.0.2.0/24\", via = [\"10.9.1.2\"] }, { prefix = \"10.0.3.0/24\", via = [\"10.9.1.2\"] }]",
        10,
    );
    let mut s1 = sw_cfg(
        &[
            ("down", "02:00:00:00:00:b0", "10.9.1.2/24"),
            ("up", "02:00:00:00:00:b1", "10.9.2.1/24"),
            ("c", "02:00:00:00:00:b2", "10.0.3.1/24"),
        ],
        "neighbor = [{ ip = \"10.9.1.1\", mac = \"02:00:00:00:00:a1\", port = \"down\" }, { ip = \"10.9.2.2\", mac = \"02:00:00:00:00:c0\", port = \"up\" }, { ip = \"10.0.3.2\", mac = \"02:00:00:00:0c:02\", port = \"c\" }]\nroute = [{ prefix = \"10.0.2.0/24\", via = [\"10.9.2.2\"] }, { prefix = \"10.0.0.0/24\", via = [\"10.9.1.1\"] }]",
        11,
    );
    let mut s2 = sw_cfg(
        &[("down", "02:00:00:00:00:c0", "10.9.2.2/24"), ("d", "02:00:00:00:00:c1", "10.0.2.1/24")],
        "neighbor = [{ ip = \"10.9.2.1\", mac = \"02:00:00:00:00:b1\", port = \"down\" }, { ip = \"10.0.2.2\", mac = \"02:00:00:00:0d:02\", port = \"d\" }]\nroute = [{ prefix = \"10.0.0.0/24\", via = [\"10.9.2.1\"] }, { prefix = \"10.0.3.0/24\", via = [\"10.9.2.1\"] }]",
        12,
    );
    let mut pool = HeapPool::new(1024, 2048);
    let pkt = |pool: &mut HeapPool, src: [u8; 4], smac: [u8; 6], dmac: [u8; 6], sport: u16| {
        let flow = UdpFlow::host_udp(
            EthernetAddress(smac),
            EthernetAddress(dmac),
            SocketAddrV4::new(src.into(), sport),
            SocketAddrV4::new([10, 0, 2, 2].into(), 4791),
        );
        let mut f = pool.alloc().unwrap();
        let b = f.append(100).unwrap();
        flow.emit_with(100 - flow.headers_len(), false, b, |_| Ok(())).unwrap();
        f
    };
    let victim =
        |pool: &mut HeapPool| pkt(pool, [10, 0, 0, 2], [2, 0, 0, 0, 0xa, 2], [2, 0, 0, 0, 0, 0xa0], 5000);
    let burst =
        |pool: &mut HeapPool| pkt(pool, [10, 0, 3, 2], [2, 0, 0, 0, 0xc, 2], [2, 0, 0, 0, 0, 0xb2], 7000);
    let t0 = 100u64 << 20;
    // Move what `from` sends on `port` into `to` on `to_port`, at `now`.
    fn hop(
        from: &mut Switch<Hawkeye, PktBuf>,
        port: u16,
        to: &mut Switch<Hawkeye, PktBuf>,
        to_port: u16,
        now: u64,
        pool: &mut HeapPool,
    ) -> usize {
        let frames = drain(from, pool, port, now);
        for f in &frames {
            let mut b = pool.alloc().unwrap();
            b.append(f.len()).unwrap().copy_from_slice(f);
            to.receive(now, to_port, b, pool);
        }
        frames.len()
    }
    // Two victim packets through the whole line.
    for _ in 0..2 {
        s0.receive(t0 + 1_000, 0, victim(&mut pool), &mut pool);
    }
    assert_eq!(hop(&mut s0, 1, &mut s1, 0, t0 + 2_000, &mut pool), 2);
    assert_eq!(hop(&mut s1, 1, &mut s2, 0, t0 + 3_000, &mut pool), 2);
    assert_eq!(drain(&mut s2, &mut pool, 1, t0 + 4_000).len(), 2);
    // S2 pauses S1's port 1 (priority 0, 1000 quanta: 51.2 µs at 10 Gb/s).
    let mut pause = pool.alloc().unwrap();
    wire::pfc::emit_frame(
        EthernetAddress([2, 0, 0, 0, 0, 0xc0]),
        &MacControlRepr::Pfc(PfcRepr::pause(1, 1000)),
        pause.append(60).unwrap(),
    )
    .unwrap();
    s1.receive(t0 + 10_000, 1, pause, &mut pool);
    // Two more victim packets and three burst packets wait at S1's port 1.
    for _ in 0..2 {
        s0.receive(t0 + 11_000, 0, victim(&mut pool), &mut pool);
    }
    assert_eq!(hop(&mut s0, 1, &mut s1, 0, t0 + 12_000, &mut pool), 2);
    for _ in 0..3 {
        s1.receive(t0 + 12_000, 2, burst(&mut pool), &mut pool);
    }
    assert_eq!(drain(&mut s1, &mut pool, 1, t0 + 20_000).len(), 0, "paused");
    assert_eq!(hop(&mut s1, 1, &mut s2, 0, t0 + 70_000, &mut pool), 5, "after the pause");
    assert_eq!(drain(&mut s2, &mut pool, 1, t0 + 71_000).len(), 5);
    // A's agent polls for A → D.
    s0.receive(
        t0 + 100_000,
        0,
        polling_frame_for(&mut pool, [10, 0, 0, 2], [10, 0, 2, 2], 5000, 33),
        &mut pool,
    );
    assert_eq!(hop(&mut s0, 1, &mut s1, 0, t0 + 101_000, &mut pool), 1);
    assert_eq!(hop(&mut s1, 1, &mut s2, 0, t0 + 102_000, &mut pool), 1);
    let last = drain(&mut s2, &mut pool, 1, t0 + 103_000);
    assert_eq!(last.len(), 1);
    assert_eq!(PollingRepr::parse(&last[0][14..]).unwrap().flag, PollingFlag::VictimPath);
    assert!(drain(&mut s2, &mut pool, 0, t0 + 103_000).is_empty());
    // Every switch's control side reports (no analyzer: kept for the runtime).
    let epoch_id = (t0 >> 20) as u32;
    let vflow = tuple([10, 0, 0, 2], [10, 0, 2, 2], 5000);
    let bflow = tuple([10, 0, 3, 2], [10, 0, 2, 2], 7000);
    let report = |sw: &mut Switch<Hawkeye, PktBuf>, pool: &mut HeapPool| {
        sw.tick(t0 + 200_000, pool);
        let mut recs = Vec::new();
        sw.program_mut().take_records(&mut recs);
        assert_eq!(recs.len(), 1);
        let r = Report::parse(&recs[0]).unwrap();
        let mut e: Vec<Entry> = r.entries().map(Result::unwrap).collect();
        e.sort_by_key(|x| format!("{x:?}"));
        (r.header, e)
    };
    let (h, e) = report(&mut s0, &mut pool);
    assert_eq!((h.switch_id, h.event_id, h.flag, h.in_port, h.out_port), (10, 33, 1, 0, 1));
    // Nothing queued at S0 (each packet cut through an empty queue): queue-depth sums are 0.
    let mut want = vec![
        Entry::Port { port: 1, epoch_id, pkts: 4, paused: 0, qdepth_sum: 0 },
        Entry::Meter { out_port: 1, epoch_id, in_port: 0, bytes: 400 },
        Entry::Flow { port: 1, epoch_id, flow: vflow, pkts: 4, paused: 0, qdepth_sum: 0 },
    ];
    want.sort_by_key(|x| format!("{x:?}"));
    assert_eq!(e, want);
    let (h, e) = report(&mut s1, &mut pool);
    assert_eq!((h.switch_id, h.event_id, h.flag, h.in_port, h.out_port), (11, 33, 3, 0, 1));
    let port = e.iter().find_map(|x| match x {
        Entry::Port { pkts, paused, .. } => Some((*pkts, *paused)),
        _ => None,
    });
    assert_eq!(port, Some((7, 5)));
    let meters: Vec<(u16, u64)> = e
        .iter()
        .filter_map(|x| match x {
            Entry::Meter { in_port, bytes, .. } => Some((*in_port, *bytes)),
            _ => None,
        })
        .collect();
    assert_eq!(meters, vec![(0, 400), (2, 300)]);
    let flows: Vec<(FiveTuple, u32, u32)> = e
        .iter()
        .filter_map(|x| match x {
            Entry::Flow { flow, pkts, paused, .. } => Some((*flow, *pkts, *paused)),
            _ => None,
        })
        .collect();
    assert_eq!(flows.len(), 2);
    assert!(flows.contains(&(vflow, 4, 2)));
    assert!(flows.contains(&(bflow, 3, 3)));
    let (h, e) = report(&mut s2, &mut pool);
    assert_eq!((h.switch_id, h.event_id, h.flag, h.in_port, h.out_port), (12, 33, 1, 0, 1));
    let port = e.iter().find_map(|x| match x {
        Entry::Port { pkts, paused, .. } => Some((*pkts, *paused)),
        _ => None,
    });
    assert_eq!(port, Some((7, 0)));
}

fn polling_frame_for(pool: &mut HeapPool, src: [u8; 4], dst: [u8; 4], sport: u16, event_id: u8) -> PktBuf {
    let r = PollingRepr {
        flag: PollingFlag::VictimPath,
        ingress_port: PORT_NONE,
        egress_port: PORT_NONE,
        event_id,
        victim: tuple(src, dst, sport),
    };
    let mut f = pool.alloc().unwrap();
    let b = f.append(60).unwrap();
    b.fill(0);
    b[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 0xa0]);
    b[6..12].copy_from_slice(&[2, 0, 0, 0, 0xa, 2]);
    b[12..14].copy_from_slice(&decl::ETHERTYPE_POLLING.to_be_bytes());
    r.emit(&mut b[14..]).unwrap();
    f
}

/// Each `[hawkeye]` key out of range is refused by name, with what it expects (what
/// `dataplane check` prints, exit code 2), and the bounds themselves are taken.
#[test]
fn out_of_range_keys_are_refused_by_name() {
    let build = |extra: &str| {
        let text = CFG.replace("switch_id = 9", &format!("switch_id = 9\n{extra}"));
        let cfg = Config::parse(Path::new("t.toml"), &text).unwrap();
        build_switch::<Hawkeye, PktBuf>(&cfg).map(|_| ()).map_err(|e| e.to_string())
    };
    for (extra, key) in [
        ("epochs = 3", "hawkeye.epochs"),
        ("epochs = 32", "hawkeye.epochs"),
        ("epoch_ns = 1000", "hawkeye.epoch_ns"),
        ("epoch_ns = 512", "hawkeye.epoch_ns"),
        ("epoch_ns = 8589934592", "hawkeye.epoch_ns"),
        ("flow_slots = 1000", "hawkeye.flow_slots"),
        ("polling_queue = 8", "hawkeye.polling_queue"),
        ("dedup_ns = 10", "hawkeye.dedup_ns"),
        ("pending = 0", "hawkeye.pending"),
    ] {
        let e = build(extra).expect_err(extra);
        assert!(e.contains("t.toml") && e.contains(key) && e.contains("expected"), "{extra}: {e}");
    }
    for ok in ["epoch_ns = 1024", "epoch_ns = 4294967296", "epochs = 16", "flow_slots = 1024"] {
        assert_eq!(build(ok), Ok(()), "{ok}");
    }
}
