//! PFC on a two-port switch, on a virtual clock.
//!
//! Port 0 (10 Gb/s) faces a sender; port 1 is a slow egress (shaped to 1 Gb/s). Priority 3 is
//! lossless. A bridge program sends everything from one port out of the other on the queue its
//! 802.1Q PCP names.

#[macro_use]
#[path = "support/program.rs"]
mod program;

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::model::{DropReasons, Resources};
use dataplane::switch::{Dest, Emitter, IngressMd, McastGroups, Program, Switch, SwitchOptions};
use dataplane::tm::{PfcThreshold, PortTmConfig, TmConfig, TrafficManager};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, VlanRepr};
use wire::pfc::{MacControlRepr, PfcRepr};

struct Bridge {
    resources: Resources,
}

impl Program for Bridge {
    type Command = ();

    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, _out: &mut Emitter<'_, F>) {
        let pcp = EthernetFrame::new_checked(pkt.data()).ok().and_then(|f| f.vlan()).map_or(0, |v| v.pcp);
        md.qid = pcp;
        md.dest = Dest::Port(1 - md.ingress_port);
    }

    no_commands!();
}

const MAC0: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x10]);
const MAC1: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x11]);

fn switch() -> (Switch<Bridge, PktBuf>, HeapPool) {
    let tm_cfg = TmConfig {
        buffer_bytes: 4 << 20,
        reserve_bytes: 3000,
        headroom_bytes: 100_000,
        lossless: 1 << 3,
        pfc: PfcThreshold::Static { xoff: 30_000, xon: 10_000 },
        ..TmConfig::default()
    };
    let p0 = PortTmConfig::new(10_000_000_000, MAC0);
    let mut p1 = PortTmConfig::new(10_000_000_000, MAC1);
    p1.shape_bps = 1_000_000_000;
    let tm = TrafficManager::new(tm_cfg, vec![p0, p1]).unwrap();
    let sw = Switch::new(
        Bridge { resources: Resources::new() },
        DropReasons::new(),
        McastGroups::default(),
        tm,
        SwitchOptions::default(),
    );
    (sw, HeapPool::new(4096, 2048))
}

fn frame(pool: &mut HeapPool, pcp: u8, len: usize) -> PktBuf {
    let mut b = pool.alloc().unwrap();
    let d = b.append(len).unwrap();
    d.fill(0xab);
    EthernetRepr {
        src_addr: EthernetAddress([2, 0, 0, 0, 9, 9]),
        dst_addr: EthernetAddress([2, 0, 0, 0, 8, 8]),
        vlan: Some(VlanRepr { pcp, dei: false, vid: 10 }),
        ethertype: EtherType(0x88b5),
    }
    .emit(d)
    .unwrap();
    b
}

/// Everything `port` sends at `now`, PAUSE frames separated from the rest.
fn send(
    sw: &mut Switch<Bridge, PktBuf>,
    pool: &mut HeapPool,
    port: u16,
    now: u64,
) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut out = Vec::new();
    sw.transmit(now, port, &mut out, 1 << 20, pool);
    let mut pauses = Vec::new();
    let mut pcps = Vec::new();
    for f in out {
        let e = EthernetFrame::new_checked(f.data()).unwrap();
        if e.ethertype() == EtherType::MAC_CONTROL {
            pauses.push(f.data().to_vec());
        } else {
            pcps.push(e.vlan().unwrap().pcp);
        }
        pool.free(f);
    }
    (pauses, pcps)
}

#[rustfmt::skip]
fn expected_pfc(quanta: u16) -> Vec<u8> {
    let q = quanta.to_be_bytes();
    let mut f = vec![
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, // MAC Control multicast
        0x02, 0x00, 0x00, 0x00, 0x00, 0x10, // port 0's address
        0x88, 0x08, 0x01, 0x01,             // MAC Control, PFC
        0x00, 0x08,                         // class-enable: priority 3
        0, 0, 0, 0, 0, 0, q[0], q[1], 0, 0, 0, 0, 0, 0, 0, 0, // times: priority 3 only
    ];
    f.resize(60, 0);
    f
}

#[test]
fn slow_egress_asserts_pfc_upstream_then_resumes() {
    let (mut sw, mut pool) = switch();
    let mut now = 0u64;
    let mut pauses = Vec::new();
    let mut xoff_at = None;
    // 1500-byte frames at 10 Gb/s (one every 1.2 µs) into a 1 Gb/s egress: the queue grows by
    // 9 frames in 10. The sender obeys the PAUSE after 20 more frames (in flight on the link).
    for i in 0..200 {
        if xoff_at.is_some_and(|a| i > a + 20) {
            break;
        }
        let f = frame(&mut pool, 3, 1500);
        sw.receive(now, 0, f, &mut pool);
        let (p, _) = send(&mut sw, &mut pool, 0, now);
        if !p.is_empty() && xoff_at.is_none() {
            xoff_at = Some(i);
        }
        pauses.extend(p);
        send(&mut sw, &mut pool, 1, now);
        now += 1200;
    }
    // XOFF once 30 000 B beyond the 3000 B reserve are held: the 23rd frame or so.
    let at = xoff_at.expect("PFC asserted");
    assert!((20..=26).contains(&at), "asserted after {at} frames");
    assert_eq!(pauses[0], expected_pfc(0xffff), "byte-exact PAUSE for priority 3");
    assert_eq!(sw.tm().xoff_mask(0), 1 << 3);
    assert_eq!(sw.counters().drops.iter().sum::<u64>(), 0, "lossless: nothing dropped");

    // The sender stops (as PAUSE would make it); the egress drains at 1 Gb/s (12 µs a frame).
    let mut resume = None;
    for _ in 0..100_000 {
        let (p, _) = send(&mut sw, &mut pool, 1, now);
        assert!(p.is_empty());
        let (p, _) = send(&mut sw, &mut pool, 0, now);
        if let Some(f) = p.into_iter().find(|f| f[24..26] == [0, 0]) {
            resume = Some((now, f));
            break;
        }
        now += 1000;
    }
    let (_, f) = resume.expect("RESUME sent after draining");
    assert_eq!(f, expected_pfc(0));
    assert_eq!(sw.tm().xoff_mask(0), 0);
    // At XON the priority group holds at most the XON threshold beyond its reserve.
    assert!(sw.tm().queue_bytes(1, 3) <= 10_000 + 3000, "{}", sw.tm().queue_bytes(1, 3));
}

#[test]
fn received_pause_stops_one_priority_for_exactly_quanta_bit_times() {
    let (mut sw, mut pool) = switch();
    // Port 1 receives PFC for priority 3 with 2000 quanta: 2000 × 512 bit times at 10 Gb/s is
    // 102.4 µs.
    let mut pause = pool.alloc().unwrap();
    let b = pause.append(60).unwrap();
    wire::pfc::emit_frame(MAC1, &MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 2000)), b).unwrap();
    let t0 = 5_000u64;
    sw.receive(t0, 1, pause, &mut pool);
    assert_eq!(sw.counters().ports[1].pfc_rx, 1);
    // Then priority 3 and priority 1 traffic arrives for port 1.
    for _ in 0..4 {
        let f = frame(&mut pool, 3, 100);
        sw.receive(t0, 0, f, &mut pool);
        let f = frame(&mut pool, 1, 100);
        sw.receive(t0, 0, f, &mut pool);
    }
    // Priority 1 keeps flowing while priority 3 waits (the shaper spaces frames 0.8 µs apart).
    let mut pcps = Vec::new();
    let mut now = t0;
    while now < t0 + 102_400 {
        let (_, p) = send(&mut sw, &mut pool, 1, now);
        pcps.extend(p);
        now += 100;
    }
    assert_eq!(pcps, [1, 1, 1, 1]);
    let (_, p) = send(&mut sw, &mut pool, 1, t0 + 102_399);
    assert!(p.is_empty(), "still paused 1 ns before the end");
    let (_, p) = send(&mut sw, &mut pool, 1, t0 + 102_400);
    assert!(!p.is_empty() && p.iter().all(|&pcp| pcp == 3), "resumes exactly at q × 512 / rate: {p:?}");
}
