use super::*;
use crate::buf::PktBuf;

fn mac(i: u8) -> EthernetAddress {
    EthernetAddress([2, 0, 0, 0, 0, i])
}

fn pkt(len: usize) -> PktBuf {
    let mut b = PktBuf::new(9216);
    b.append(len).unwrap().fill(0);
    b
}

fn meta(ingress: u16, egress: u16, qid: u8) -> EnqMeta {
    EnqMeta { ingress_port: ingress, egress_port: egress, qid, ..EnqMeta::default() }
}

fn tm(cfg: TmConfig, ports: Vec<PortTmConfig>) -> TrafficManager<PktBuf> {
    TrafficManager::new(cfg, ports).unwrap()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn strict_priority_goes_first() {
    let mut t = tm(TmConfig::default(), vec![PortTmConfig::new(100_000_000_000, mac(1)); 2]);
    for i in 0..10 {
        t.enqueue(0, pkt(100 + i), meta(0, 1, 0)).unwrap();
        t.enqueue(0, pkt(200 + i), meta(0, 1, 7)).unwrap();
    }
    let order: Vec<u8> = std::iter::from_fn(|| deq(&mut t, 1, 0)).map(|(_, m)| m.enq.qid).collect();
    assert_eq!(order, [vec![7u8; 10], vec![0u8; 10]].concat());
    // Two strict levels: the higher level first.
    let mut cfg = PortTmConfig::new(100_000_000_000, mac(1));
    cfg.sched[5] = QueueSched::Strict(1);
    cfg.sched[6] = QueueSched::Strict(2);
    let mut t = tm(TmConfig::default(), vec![cfg]);
    t.enqueue(0, pkt(64), meta(0, 0, 5)).unwrap();
    t.enqueue(0, pkt(64), meta(0, 0, 6)).unwrap();
    t.enqueue(0, pkt(64), meta(0, 0, 7)).unwrap();
    let order: Vec<u8> = std::iter::from_fn(|| deq(&mut t, 0, 0)).map(|(_, m)| m.enq.qid).collect();
    assert_eq!(order, [6, 5, 7]);
}

#[test]
fn dwrr_shares_follow_weights() {
    let mut cfg = PortTmConfig::new(100_000_000_000, mac(1));
    let weights = [1u32, 2, 3, 4];
    for (q, w) in weights.iter().enumerate() {
        cfg.sched[q] = QueueSched::Dwrr(*w);
    }
    let mut t = tm(TmConfig { buffer_bytes: 64 << 20, ..TmConfig::default() }, vec![cfg]);
    let mut rng = Rng(7);
    // Keep every queue backlogged with packets of random size and count bytes served.
    for q in 0..4u8 {
        for _ in 0..64 {
            t.enqueue(0, pkt(64 + (rng.next() % 1437) as usize), meta(0, 0, q)).unwrap();
        }
    }
    let mut bytes = [0u64; 4];
    for _ in 0..100_000 {
        let (p, m) = deq(&mut t, 0, 0).unwrap();
        bytes[usize::from(m.enq.qid)] += p.len() as u64;
        t.enqueue(0, pkt(64 + (rng.next() % 1437) as usize), meta(0, 0, m.enq.qid)).unwrap();
    }
    let total: u64 = bytes.iter().sum();
    let wsum: u32 = weights.iter().sum();
    for q in 0..4 {
        let share = bytes[q] as f64 / total as f64;
        let want = f64::from(weights[q]) / f64::from(wsum);
        assert!((share / want - 1.0).abs() < 0.02, "queue {q}: share {share:.4}, weight share {want:.4}");
    }
}

#[test]
fn shaping_holds_the_configured_rate() {
    for (rate, overhead) in [(10_000_000_000u64, 0u32), (25_000_000_000, 24), (1_000_000_000, 24)] {
        let mut cfg = PortTmConfig::new(100_000_000_000, mac(1));
        cfg.shape_bps = rate;
        cfg.overhead_bytes = overhead;
        let mut t =
            tm(TmConfig { buffer_bytes: 64 << 20, max_packets: 8192, ..TmConfig::default() }, vec![cfg]);
        let mut rng = Rng(99);
        for _ in 0..512 {
            t.enqueue(0, pkt(64 + (rng.next() % 1437) as usize), meta(0, 0, 0)).unwrap();
        }
        // Poll every 700 ns of virtual time for 10 ms, refilling what leaves.
        let (mut now, mut bits) = (0u64, 0u64);
        while now < 10_000_000 {
            while let Some((p, m)) = deq(&mut t, 0, now) {
                bits += (p.len() as u64 + u64::from(overhead)) * 8;
                t.enqueue(now, pkt(64 + (rng.next() % 1437) as usize), meta(0, 0, m.enq.qid)).unwrap();
            }
            now += 700;
        }
        let measured = bits as f64 / (now as f64 / 1e9);
        assert!((measured / rate as f64 - 1.0).abs() < 0.01, "rate {rate}: measured {measured:.0} b/s");
    }
}

#[test]
fn lossy_queue_is_bounded_by_the_dynamic_threshold() {
    let cfg = TmConfig {
        buffer_bytes: 200_000,
        reserve_bytes: 0,
        headroom_bytes: 0,
        egress_alpha: 1.0,
        ..TmConfig::default()
    };
    let mut t = tm(cfg, vec![PortTmConfig::new(100_000_000_000, mac(1)); 2]);
    let mut n = 0;
    while t.enqueue(0, pkt(1000), meta(0, 1, 0)).is_ok() {
        n += 1;
    }
    // α = 1: a queue may hold as much as is free, so it stops at half the shared pool.
    assert_eq!(n, 100);
    let (_, why) = t.enqueue(0, pkt(1000), meta(0, 1, 0)).unwrap_err();
    assert_eq!(why, TmDrop::QueueFull);
    assert_eq!(t.queue_bytes(1, 0), 100_000);
    assert_eq!(t.shared_used(), 100_000);
    assert_eq!(t.enqueue(0, pkt(64), meta(0, 9, 0)).unwrap_err().1, TmDrop::BadPort);
    // Everything drains, and the accounting returns to zero.
    while deq(&mut t, 1, 0).is_some() {}
    assert_eq!((t.shared_used(), t.port_bytes(1)), (0, 0));
}

#[test]
fn buffer_split_must_hold() {
    let cfg = TmConfig {
        buffer_bytes: 100_000,
        reserve_bytes: 2000,
        lossless: 0b1000,
        headroom_bytes: 50_000,
        ..TmConfig::default()
    };
    let err = TrafficManager::<PktBuf>::new(cfg, vec![PortTmConfig::new(1, mac(1)); 2]).unwrap_err();
    assert!(err.contains("not less than buffer_bytes 100000"), "{err}");
}

fn lossless_tm(xoff: u64, xon: u64) -> TrafficManager<PktBuf> {
    let cfg = TmConfig {
        buffer_bytes: 1 << 20,
        reserve_bytes: 1000,
        headroom_bytes: 20_000,
        lossless: 1 << 3,
        pfc: PfcThreshold::Static { xoff, xon },
        ..TmConfig::default()
    };
    tm(cfg, vec![PortTmConfig::new(10_000_000_000, mac(1)), PortTmConfig::new(10_000_000_000, mac(2))])
}

#[test]
fn xoff_then_xon_on_the_ingress_port() {
    let mut t = lossless_tm(5000, 2000);
    // 1000 B of reserve, then shared bytes: XOFF once 5000 shared bytes are held.
    for i in 0..5 {
        t.enqueue(0, pkt(1000), meta(0, 1, 3)).unwrap();
        assert_eq!(t.xoff_mask(0), 0, "after {} packets", i + 1);
    }
    t.enqueue(0, pkt(1000), meta(0, 1, 3)).unwrap();
    assert_eq!(t.xoff_mask(0), 1 << 3);
    assert_eq!(t.pfc_frame(0, 0), Some(MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff))));
    assert_eq!(t.pfc_frame(0, 1), None);
    // Packets in flight after XOFF go to headroom, not shared.
    t.enqueue(0, pkt(1000), meta(0, 1, 3)).unwrap();
    assert_eq!(t.shared_used(), 5000);
    // Refresh every half pause time: 65535 quanta at 10 Gb/s is 3355.392 µs.
    assert_eq!(t.pfc_frame(0, 1_677_695), None);
    assert_eq!(t.pfc_frame(0, 1_677_696), Some(MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff))));
    // Drain to XON: departures free headroom first, then shared; XON once headroom is empty and
    // shared is at or below 2000.
    let mut resumed_after = None;
    for k in 1..=7 {
        deq(&mut t, 1, 0).unwrap();
        if t.xoff_mask(0) == 0 && resumed_after.is_none() {
            resumed_after = Some(k);
        }
    }
    assert_eq!(resumed_after, Some(4));
    assert_eq!(t.pfc_frame(0, 10), Some(MacControlRepr::Pfc(PfcRepr::resume(1 << 3))));
    assert_eq!(t.pfc_frame(0, 10), None);
}

#[test]
fn received_pause_stops_one_priority_for_quanta_times_512_bit_times() {
    let mut t = lossless_tm(1 << 20, 0);
    for q in [3u8, 4] {
        for _ in 0..4 {
            t.enqueue(0, pkt(100), meta(0, 1, q)).unwrap();
        }
    }
    // 1000 quanta at 10 Gb/s: 1000 × 512 / 1e10 s = 51.2 µs.
    t.receive_mac_control(1, 1_000, &MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 1000)));
    assert_eq!(t.paused_mask(1, 1_000), 1 << 3);
    let mut got = vec![];
    while let Some((_, m)) = deq(&mut t, 1, 2_000) {
        got.push(m.enq.qid);
    }
    assert_eq!(got, [4, 4, 4, 4], "other priorities keep flowing");
    assert!(deq(&mut t, 1, 1_000 + 51_199).is_none());
    let (_, m) = deq(&mut t, 1, 1_000 + 51_200).unwrap();
    assert!(m.waited_on_pfc);
    assert_eq!(m.enq.qid, 3);
    // XON (quanta 0) resumes at once.
    t.receive_mac_control(1, 60_000, &MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 1000)));
    assert!(deq(&mut t, 1, 60_001).is_none());
    t.receive_mac_control(1, 60_002, &MacControlRepr::Pfc(PfcRepr::resume(1 << 3)));
    assert!(deq(&mut t, 1, 60_002).is_some());
    // Legacy PAUSE stops everything.
    t.enqueue(0, pkt(100), meta(0, 1, 4)).unwrap();
    t.receive_mac_control(1, 70_000, &MacControlRepr::Pause { quanta: 10 });
    assert_eq!(t.paused_mask(1, 70_000), 0xff);
    assert_eq!(t.next_ready(1, 70_000), Some(70_512));
}

#[test]
fn ecn_marks_above_kmax_only_ect_packets() {
    let mut ecn = [None; QUEUES];
    ecn[0] = Some(Red { kmin: 1000, kmax: 2000, pmax: 0.0 });
    let mut t = tm(TmConfig { ecn, ..TmConfig::default() }, vec![PortTmConfig::new(1, mac(1))]);
    let frame = |ecn: u8| {
        let repr = wire::Ipv4Repr {
            src_addr: [10, 0, 0, 1].into(),
            dst_addr: [10, 0, 0, 2].into(),
            protocol: 17,
            payload_len: 966,
            ttl: 64,
            dscp: 0,
            ecn,
            ident: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        };
        let mut b = pkt(1000);
        wire::EthernetRepr { src_addr: mac(1), dst_addr: mac(2), vlan: None, ethertype: EtherType::IPV4 }
            .emit(b.data_mut())
            .unwrap();
        repr.emit(&mut b.data_mut()[14..]).unwrap();
        b
    };
    for e in [ecn::ECT0, ecn::ECT0, ecn::NOT_ECT, ecn::ECT1] {
        t.enqueue(0, frame(e), meta(0, 0, 0)).unwrap();
    }
    let marks: Vec<bool> = std::iter::from_fn(|| deq(&mut t, 0, 0))
        .map(|(p, m)| {
            let ip = Ipv4Packet::new_checked(&p.data()[14..]).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(m.ecn_marked, ip.ecn() == ecn::CE);
            m.ecn_marked
        })
        .collect();
    // Depths at dequeue: 4000, 3000 (> kmax: mark), 2000 (not ECT), 1000 (≤ kmin).
    assert_eq!(marks, [true, true, false, false]);
}

/// `dequeue` with its metadata returned alongside, for readable tests.
fn deq(t: &mut TrafficManager<PktBuf>, port: u16, now: u64) -> Option<(PktBuf, DeqMeta)> {
    let mut m = DeqMeta::default();
    t.dequeue(port, now, &mut m).map(|p| (p, m))
}

#[test]
fn entries_grow_on_demand_when_not_preallocated() {
    let cfg = TmConfig { max_packets: 8, preallocate: false, ..TmConfig::default() };
    let mut t = tm(cfg, vec![PortTmConfig::new(100_000_000_000, mac(1)); 2]);
    assert_eq!(t.entries.len(), 0, "nothing allocated up front");
    for _ in 0..8 {
        t.enqueue(0, pkt(100), meta(0, 1, 0)).unwrap();
    }
    assert_eq!(t.entries.len(), 8);
    // Past max_packets: refused as a full buffer, as when preallocated.
    assert!(matches!(t.enqueue(0, pkt(100), meta(0, 1, 0)), Err((_, TmDrop::BufferFull))));
    // Freed entries are reused: the table does not grow again.
    let out: Vec<_> = std::iter::from_fn(|| deq(&mut t, 1, 0)).collect();
    assert_eq!(out.len(), 8);
    for _ in 0..8 {
        t.enqueue(0, pkt(100), meta(0, 1, 0)).unwrap();
    }
    assert_eq!(t.entries.len(), 8);
    // Preallocated: the whole table at once.
    let t = tm(TmConfig { max_packets: 8, ..TmConfig::default() }, vec![PortTmConfig::new(1, mac(1))]);
    assert_eq!(t.entries.len(), 8);
}

fn touched(t: &mut TrafficManager<PktBuf>) -> Vec<u16> {
    let mut v = vec![];
    t.take_touched(|p| v.push(p));
    v
}

/// A virtual-time driver re-reads `next_ready` of the touched ports only, so every change that
/// can make a port ready sooner must touch it: a packet queued there, a PAUSE it owes (the
/// ingress port at XOFF), a RESUME it owes (the ingress port, on a dequeue elsewhere), a MAC
/// Control frame received on it. Dequeues and refusals touch nothing.
#[test]
fn whatever_makes_a_port_ready_sooner_touches_it() {
    let mut t = lossless_tm(5000, 2000);
    assert_eq!(touched(&mut t), Vec::<u16>::new());
    t.enqueue(0, pkt(1000), meta(0, 1, 3)).unwrap();
    assert_eq!(touched(&mut t), [1]);
    assert_eq!(touched(&mut t), Vec::<u16>::new(), "taken once");
    for _ in 0..5 {
        t.enqueue(0, pkt(1000), meta(0, 1, 3)).unwrap();
    }
    assert_eq!(t.xoff_mask(0), 1 << 3);
    assert_eq!(touched(&mut t), [0, 1], "XOFF owed on the ingress port");
    assert_eq!(t.next_ready(0, 7), Some(7));
    t.pfc_frame(0, 7).unwrap();
    let mut resumed = false;
    for _ in 0..6 {
        deq(&mut t, 1, 10).unwrap();
        let tp = touched(&mut t);
        if t.xoff_mask(0) == 0 && !resumed {
            resumed = true;
            assert_eq!(tp, [0], "XON owed on the ingress port");
        } else {
            assert_eq!(tp, Vec::<u16>::new());
        }
    }
    assert!(resumed);
    t.receive_mac_control(1, 20, &MacControlRepr::Pfc(PfcRepr::resume(1 << 3)));
    assert_eq!(touched(&mut t), [1]);
    // A cut-through packet leaves on its port at once.
    let mut p = pkt(100);
    let mut dm = DeqMeta::default();
    assert!(t.cut_through(30, &mut p, meta(0, 1, 4), &mut dm));
    assert_eq!(touched(&mut t), [1]);
}
