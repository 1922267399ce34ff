//! `Switch::receive_burst` handles a burst as a vector (receive counters once per burst, runs of
//! packets cutting through one port accounted once per run). What users rely on: a burst gives
//! exactly what the same frames received one at a time give — the same frames out of every
//! port in the same order with the same egress metadata, the same drops, CPU packets, switch
//! and TM counters — whatever the program decides (ports, floods, multicast, drops, mirrors,
//! emitted packets, egress drops and recirculation), with PFC frames inside bursts, shaped
//! ports, RED/ECN queues and a small cut-through stage.

#[macro_use]
#[path = "support/program.rs"]
mod program;

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::model::{DropReasons, Resources};
use dataplane::switch::{Dest, EgressMd, Emitter, IngressMd, McastGroups, Program, Switch, SwitchOptions};
use dataplane::tm::{PortTmConfig, Red, TmConfig, TrafficManager};
use proptest::prelude::*;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::ipv4::Ipv4Repr;
use wire::pfc::{MacControlRepr, PfcRepr};

/// Where ingress reads its action (then the queue, then egress's action), and the sequence byte.
const ACTION: usize = 50;
const SEQ: usize = 53;
/// Where egress stamps what it saw (28 bytes).
const STAMP: usize = 56;
/// The shortest data frame.
const MIN_LEN: usize = 96;

/// Data frames are IPv4, ECN-capable (so a RED queue marks them); in the payload, byte
/// [`ACTION`] says what ingress does with a frame, the next its queue, the next what egress
/// does; egress stamps what it saw from [`STAMP`] on.
struct Steer {
    resources: Resources,
    egress: bool,
}

impl Program for Steer {
    type Command = ();

    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        let d = pkt.data();
        if d.len() < MIN_LEN {
            return; // a PAUSE frame passed on: dropped by the default destination
        }
        md.qid = d[ACTION + 1] % 8;
        md.dest = match d[ACTION] {
            p @ 0..=3 => Dest::Port(u16::from(p)), // port 3 does not exist
            10 => {
                md.exclude_ingress = true;
                Dest::Multicast(1) // {0, 1} less the ingress port: one copy from port 0
            }
            11 => Dest::Multicast(2), // {1, 2}: two copies
            12 => Dest::Multicast(7), // no such group
            13 => Dest::Cpu,
            14 => {
                md.mirror = Some(5);
                Dest::Port(1)
            }
            15 => {
                let seq = d[SEQ];
                out.emit(Dest::Port(2), 0, |b| {
                    let Some(x) = b.append(MIN_LEN) else { return false };
                    x.fill(0);
                    x[ACTION] = 2;
                    x[SEQ] = seq;
                    true
                });
                Dest::Port(1)
            }
            16 => {
                md.bypass_egress = true;
                Dest::Port(2)
            }
            17 => Dest::Consume,
            18 => Dest::Multicast(3), // {2}: one copy
            19 => {
                md.exclude_ingress = true;
                Dest::Multicast(4) // {0, 0, 2} less the ingress port: one copy from port 0
            }
            _ => return, // dropped under the default reason
        };
    }

    fn egress<F: Frame>(&mut self, pkt: &mut F, md: &mut EgressMd) {
        let action = pkt.data()[ACTION + 2];
        let d = &mut pkt.data_mut()[STAMP..];
        d[0..8].copy_from_slice(&md.deq.enq_qdepth.to_be_bytes());
        d[8..16].copy_from_slice(&md.tx_bytes.to_be_bytes());
        d[16] = md.deq.paused_mask;
        d[17] = u8::from(md.deq.waited_on_pfc) | u8::from(md.deq.ecn_marked) << 1;
        d[18..20].copy_from_slice(&md.deq.enq.rid.to_be_bytes());
        d[20..28].copy_from_slice(&md.speed_bps.to_be_bytes());
        match action {
            1 => md.drop = Some(dataplane::model::builtin::PROGRAM),
            2 if md.deq.enq.recirc_pass == 0 => md.recirculate = true,
            3 => md.mirror = Some(9),
            _ => {}
        }
    }

    fn has_egress(&self) -> bool {
        self.egress
    }

    no_commands!();
}

#[derive(Debug, Clone, Copy)]
struct Setup {
    egress: bool,
    cut_through: bool,
    staged_max: usize,
    shaped: bool,
    red: bool,
    pfc_to_program: bool,
}

fn switch(s: Setup) -> (Switch<Steer, PktBuf>, HeapPool) {
    let ports = (0..3u8)
        .map(|i| {
            let mut p = PortTmConfig::new(10_000_000_000, EthernetAddress([2, 0, 0, 0, 0, i]));
            if s.shaped && i == 2 {
                p.shape_bps = 1_000_000_000;
            }
            p
        })
        .collect();
    let mut tm = TmConfig { buffer_bytes: 64 << 20, ..TmConfig::default() };
    if s.red {
        tm.ecn[3] = Some(Red { kmin: 100, kmax: 400, pmax: 0.5 });
    }
    let tm = TrafficManager::new(tm, ports).unwrap();
    let mut mcast = McastGroups::default();
    mcast.set(1, vec![(0, 10), (1, 11)]);
    mcast.set(2, vec![(1, 21), (2, 22)]);
    mcast.set(3, vec![(2, 31)]);
    mcast.set(4, vec![(0, 40), (0, 41), (2, 42)]);
    let opts = SwitchOptions {
        cut_through: s.cut_through,
        staged_max: s.staged_max,
        pfc_to_program: s.pfc_to_program,
        ..SwitchOptions::default()
    };
    let sw = Switch::new(
        Steer { resources: Resources::new(), egress: s.egress },
        DropReasons::new(),
        mcast,
        tm,
        opts,
    );
    (sw, HeapPool::new(4096, 2048))
}

/// A frame to receive: what ingress and egress do with it, or a PFC frame.
#[derive(Debug, Clone)]
enum In {
    Data { port: u16, action: u8, qid: u8, egress: u8, len: usize },
    Pfc { port: u16, mask: u8, quanta: u16 },
}

#[derive(Debug, Clone)]
enum Step {
    Burst(Vec<In>),
    Transmit { port: u16, max: usize },
    Advance(u64),
}

fn build(pool: &mut HeapPool, f: &In, seq: u8) -> (u16, PktBuf) {
    let mut b = pool.alloc().unwrap();
    match *f {
        In::Data { port, action, qid, egress, len } => {
            let d = b.append(len).unwrap();
            d.fill(0);
            d[12..14].copy_from_slice(&EtherType::IPV4.0.to_be_bytes());
            Ipv4Repr {
                src_addr: [10, 0, 0, 1].into(),
                dst_addr: [10, 0, 0, 2].into(),
                protocol: 253,
                payload_len: len - 34,
                ttl: 64,
                dscp: 0,
                ecn: 2, // ECT(0)
                ident: 0,
                dont_frag: true,
                more_frags: false,
                frag_offset: 0,
            }
            .emit(&mut d[14..])
            .unwrap();
            d[ACTION] = action;
            d[ACTION + 1] = qid;
            d[ACTION + 2] = egress;
            d[SEQ] = seq;
            (port, b)
        }
        In::Pfc { port, mask, quanta } => {
            let d = b.append(wire::ethernet::MIN_FRAME_LEN).unwrap();
            let repr = MacControlRepr::Pfc(PfcRepr::pause(mask, quanta));
            wire::pfc::emit_frame(EthernetAddress([2, 0, 0, 0, 9, 9]), &repr, d).unwrap();
            (port, b)
        }
    }
}

/// Everything observable after `steps`: per step the frames each port sent (or after a burst
/// the ports the TM marked touched), then the CPU
/// packets, the switch's counters, the TM's statistics and per-port tx counters.
type Trace = (Vec<Vec<(u16, Vec<u8>)>>, Vec<(Vec<u8>, u16, Option<u16>)>, String);

fn run(s: Setup, steps: &[Step], as_burst: bool) -> Trace {
    let (mut sw, mut pool) = switch(s);
    let mut now = 1_000;
    let mut seq = 0u8;
    let mut sent = Vec::new();
    let mut rx = Vec::new();
    for step in steps {
        match step {
            Step::Burst(frames) => {
                // Frames of one burst arrive on one port, the first frame's.
                let port = match frames[0] {
                    In::Data { port, .. } | In::Pfc { port, .. } => port,
                };
                for f in frames {
                    seq = seq.wrapping_add(1);
                    rx.push(build(&mut pool, f, seq).1);
                }
                if as_burst {
                    sw.receive_burst(now, port, &mut rx, &mut pool);
                } else {
                    for f in rx.drain(..) {
                        sw.receive(now, port, f, &mut pool);
                    }
                }
                sw.process_recirculated(now, &mut pool);
                // The ports a virtual-time driver would re-read.
                let mut touched = Vec::new();
                sw.take_touched(|p| touched.push((p, Vec::new())));
                sent.push(touched);
            }
            Step::Transmit { port, max } => {
                let mut v = Vec::new();
                sw.transmit(now, *port, &mut v, *max, &mut pool);
                sent.push(v.iter().map(|f| (*port, f.data().to_vec())).collect());
                for f in v {
                    pool.free(f);
                }
            }
            Step::Advance(ns) => now += ns,
        }
    }
    // Whatever is left, every port to the end.
    let mut last = Vec::new();
    for port in 0..3u16 {
        let mut v = Vec::new();
        while sw.transmit(now + 1_000_000_000, port, &mut v, 64, &mut pool) > 0 {
            for f in v.drain(..) {
                last.push((port, f.data().to_vec()));
                pool.free(f);
            }
        }
    }
    sent.push(last);
    let cpu = sw.drain_cpu().map(|c| (c.pkt.data().to_vec(), c.ingress_port, c.code)).collect();
    let tx: Vec<_> = (0..3).map(|p| sw.tm().tx_counters(p)).collect();
    let state = format!("{:?}\n{:?}\n{:?}", sw.counters(), sw.tm().stats(), tx);
    (sent, cpu, state)
}

fn data() -> impl Strategy<Value = In> {
    (
        prop_oneof![10 => 0u16..3, 1 => Just(3u16)], // port 3 does not exist
        prop_oneof![6 => 0u8..4, 4 => 10u8..20, 1 => Just(99u8)],
        prop_oneof![3 => Just(0u8), 1 => 0u8..8],
        prop_oneof![6 => Just(0u8), 1 => 1u8..4],
        MIN_LEN..300,
    )
        .prop_map(|(port, action, qid, egress, len)| In::Data { port, action, qid, egress, len })
}

fn input() -> impl Strategy<Value = In> {
    prop_oneof![
        12 => data(),
        1 => (0u16..3, any::<u8>(), 0u16..3).prop_map(|(port, mask, quanta)| In::Pfc { port, mask, quanta }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => prop::collection::vec(input(), 1..40).prop_map(Step::Burst),
        3 => (0u16..3, 1usize..40).prop_map(|(port, max)| Step::Transmit { port, max }),
        1 => prop_oneof![Just(0u64), 1u64..2_000].prop_map(Step::Advance),
    ]
}

fn setup() -> impl Strategy<Value = Setup> {
    (any::<bool>(), prop_oneof![4 => Just(true), 1 => Just(false)], prop_oneof![Just(256usize), 1usize..5])
        .prop_flat_map(|(egress, cut_through, staged_max)| {
            (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(move |(shaped, red, pfc_to_program)| {
                Setup { egress, cut_through, staged_max, shaped, red, pfc_to_program }
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn a_burst_gives_what_its_frames_one_at_a_time_give(
        s in setup(),
        steps in prop::collection::vec(step(), 1..30),
    ) {
        let one = run(s, &steps, false);
        let burst = run(s, &steps, true);
        prop_assert_eq!(&one.0, &burst.0, "frames sent");
        prop_assert_eq!(&one.1, &burst.1, "CPU packets");
        prop_assert_eq!(&one.2, &burst.2, "counters");
    }
}

/// The common case the runs are for: many frames to one idle port in one burst. Both ways
/// agree, and the frames really cut through (sent at the first transmit, not queued).
#[test]
fn a_long_run_to_one_port_cuts_through_whole() {
    let s = Setup {
        egress: true,
        cut_through: true,
        staged_max: 256,
        shaped: false,
        red: false,
        pfc_to_program: false,
    };
    let burst: Vec<In> = (0..32)
        .map(|i| In::Data { port: 0, action: 1 + (i / 16) as u8, qid: 0, egress: 0, len: MIN_LEN })
        .collect();
    let steps =
        [Step::Burst(burst), Step::Transmit { port: 1, max: 32 }, Step::Transmit { port: 2, max: 32 }];
    let one = run(s, &steps, false);
    let b = run(s, &steps, true);
    assert_eq!(one, b);
    // The burst touched ports 1 and 2; each sent its 16 at the first transmit.
    assert_eq!(b.0[0], vec![(1, Vec::new()), (2, Vec::new())]);
    assert_eq!(b.0[1].len(), 16);
    assert_eq!(b.0[2].len(), 16);
    // Each packet saw the port's tx bytes up to and including itself, and an empty queue.
    for (i, (_, f)) in b.0[1].iter().enumerate() {
        let at = |o: usize| u64::from_be_bytes(f[STAMP + o..STAMP + o + 8].try_into().unwrap());
        assert_eq!(at(8), MIN_LEN as u64 * (i as u64 + 1));
        assert_eq!(at(0), 0);
    }
}
