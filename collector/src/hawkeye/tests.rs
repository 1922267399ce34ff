use std::net::Ipv4Addr;

use wire::hawkeye::FiveTuple;
use wire::hawkeye::report::{Entry, ReportHeader};

use super::*;

fn flow(src: u8, dst: u8, sport: u16) -> FiveTuple {
    FiveTuple {
        src_ip: Ipv4Addr::new(10, 0, src, 2),
        dst_ip: Ipv4Addr::new(10, 0, dst, 2),
        protocol: 17,
        src_port: sport,
        dst_port: 4791,
    }
}

fn report(t: u64, sw: u16, flag: u8, in_port: u16, out_port: u16, entries: Vec<Entry>) -> Received {
    Received {
        t_ns: t,
        header: ReportHeader {
            flag,
            switch_id: sw,
            event_id: 5,
            in_port,
            out_port,
            seq: 0,
            part: 0,
            last: true,
        },
        entries,
    }
}

fn port(port: u16, pkts: u32, paused: u32, qdepth_sum: u64) -> Entry {
    Entry::Port { port, epoch_id: 1, pkts, paused, qdepth_sum }
}

fn fl(port: u16, f: FiveTuple, pkts: u32, paused: u32, qdepth_sum: u64) -> Entry {
    Entry::Flow { port, epoch_id: 1, flow: f, pkts, paused, qdepth_sum }
}

fn meter(in_port: u16, out_port: u16, bytes: u64) -> Entry {
    Entry::Meter { out_port, epoch_id: 1, in_port, bytes }
}

/// h0 — S1 —(P1:P0)— S2 — P1: h1 (the victim's receiver), P2: h2 (the incast's receiver);
/// bursts from h3, h4 (on S2's ports 3, 4) into h2 … or a host on P2 injecting PAUSE.
fn two_switches() -> Topology {
    let mut t = Topology::default();
    let h = |n: u32| Peer::Host { host: n, ip: Ipv4Addr::new(10, 0, n as u8, 2) };
    t.link(1, 0, h(0));
    t.link(1, 1, Peer::Switch { switch_id: 2, port: 0 });
    t.link(2, 0, Peer::Switch { switch_id: 1, port: 1 });
    t.link(2, 1, h(1));
    t.link(2, 2, h(2));
    t.link(2, 3, h(3));
    t.link(2, 4, h(4));
    t
}

/// The victim h0 → h2's flow is paused at S1.P1 (S2 pauses it); at S2.P2 the queue is deep,
/// with (`burst`) or without two burst flows from h3 and h4.
fn incident(burst: bool) -> Incident {
    let victim = flow(0, 2, 1000);
    let (b1, b2) = (flow(3, 2, 1001), flow(4, 2, 1002));
    let s1 = report(
        10,
        1,
        1,
        0,
        1,
        vec![port(1, 100, 80, 2000), fl(1, victim, 100, 80, 2000), meter(0, 1, 100_000)],
    );
    let e2 = if burst {
        bursts_at_s2p2(victim, b1, b2)
    } else {
        // Paused by the host on P2: a queue that builds with no contention (one flow).
        vec![meter(0, 2, 20_000), port(2, 20, 20, 0), fl(2, victim, 20, 20, 0)]
    };
    let s2 = report(20, 2, 1, 0, 2, e2);
    Incident { event: 5, t_ns: 10, reports: vec![s1, s2], victim: Some(victim), victims: Vec::new() }
}

#[test]
fn a_burst_behind_a_paused_link_is_an_incast_with_the_burst_flows_as_root_cause() {
    let topo = two_switches();
    let (g, ds) = analyze(&incident(true), &topo, &Params::default());
    let d = ds[0].clone();
    assert_eq!(g.victim_path.len(), 2);
    assert_eq!(d.anomaly, Some(Anomaly::MicroBurstIncast), "{d:?}");
    let p = |s, p| PortId { switch_id: s, port: p };
    assert_eq!(d.pfc_path, vec![p(1, 1), p(2, 2)]);
    let Some(RootCause::Flows { port, flows }) = &d.root_cause else { panic!("{d:?}") };
    assert_eq!(*port, p(2, 2));
    let named: Vec<FiveTuple> = flows.iter().map(|f| f.0).collect();
    assert!(named.contains(&flow(3, 2, 1001)) && named.contains(&flow(4, 2, 1002)), "{named:?}");
    assert!(!named.contains(&flow(0, 2, 1000)), "the victim is not its own cause: {named:?}");
    // The outputs render.
    let j = render::json(&incident(true), &g, &d);
    assert_eq!(j["anomaly"], "microburst_incast");
    assert!(render::svg(&render::dot(&g, &d)).unwrap().contains("<svg"));
}

#[test]
fn a_paused_end_with_no_contention_is_a_pfc_storm_from_the_host_across() {
    let (_, ds) = analyze(&incident(false), &two_switches(), &Params::default());
    let d = ds[0].clone();
    assert_eq!(d.anomaly, Some(Anomaly::PfcStorm), "{d:?}");
    assert_eq!(
        d.root_cause,
        Some(RootCause::Host {
            port: PortId { switch_id: 2, port: 2 },
            host: Some((2, Ipv4Addr::new(10, 0, 2, 2)))
        })
    );
}

/// A walk that ends at a host port where nothing contends and no pause was ever seen (one busy
/// flow into the host) names no host: a host is a PFC source only where it paused its port.
#[test]
fn an_unpaused_host_port_without_contention_names_no_host() {
    let mut inc = incident(false);
    // S2.P2 queued (a mean depth of 3000 bytes) with the victim alone, never paused.
    let victim = flow(0, 2, 1000);
    inc.reports[1].entries = vec![meter(0, 2, 20_000), port(2, 20, 0, 60_000), fl(2, victim, 20, 0, 60_000)];
    let (_, ds) = analyze(&inc, &two_switches(), &Params::default());
    assert!(ds.iter().all(|d| !matches!(d.root_cause, Some(RootCause::Host { .. }))), "{ds:?}");
    let why = ds[0].undiagnosed.as_deref().unwrap_or_default();
    assert!(why.contains("S2.P2") && why.contains("no pause"), "{ds:?}");
}

/// [`NO_ANOMALY_RULE`](crate::hawkeye::diagnose::NO_ANOMALY_RULE): the same burst behind a
/// paused link is no anomaly when the victim was paused for under 5 % of its packets on its
/// path (PFC touched it, did not stop it), and an incast again when paused for more; plain
/// contention by one flow alone is no anomaly.
#[test]
fn congestion_that_is_no_anomaly_says_so() {
    let topo = two_switches();
    let victim = flow(0, 2, 1000);
    // 3 of 200 packets paused at S1.P1: 1.5 %.
    let mut inc = incident(true);
    inc.reports[0].entries = vec![port(1, 200, 3, 2000), fl(1, victim, 200, 3, 2000), meter(0, 1, 100_000)];
    let (_, ds) = analyze(&inc, &topo, &Params::default());
    assert!(ds.iter().all(|d| d.anomaly.is_none()), "{ds:?}");
    let why = ds[0].no_anomaly.as_deref().unwrap_or_default();
    assert!(why.contains("3 of their") && why.contains("S2.P2"), "{ds:?}");
    assert!(render::summary(&ds[0]).starts_with("No anomaly"));
    // The threshold is a parameter: at 1 % the same incident is an incast.
    let (_, ds) = analyze(&inc, &topo, &Params { min_victim_paused: 0.01, ..Params::default() });
    assert_eq!(ds[0].anomaly, Some(Anomaly::MicroBurstIncast), "{ds:?}");
    // No PFC anywhere, one flow queued at S2.P2 (the victim, alone).
    let mut inc = incident(true);
    inc.reports[0].entries = vec![port(1, 100, 0, 0), fl(1, victim, 100, 0, 0), meter(0, 1, 100_000)];
    inc.reports[1].entries = vec![meter(0, 2, 20_000), port(2, 20, 0, 60_000), fl(2, victim, 20, 0, 60_000)];
    let (_, ds) = analyze(&inc, &topo, &Params::default());
    assert!(ds.iter().all(|d| d.anomaly.is_none()), "{ds:?}");
}

/// Four switches in a square, each pausing the next: the loop S1.P1 → S2.P1 → S3.P1 → S4.P1 →
/// S1.P1, with contention at S3.P1 (in-loop) or a branch S2.P2 → a host pausing it.
fn square(branch: bool) -> (Topology, Incident) {
    let mut t = Topology::default();
    for s in 1..=4u16 {
        let next = s % 4 + 1;
        t.link(s, 1, Peer::Switch { switch_id: next, port: 0 });
        t.link(next, 0, Peer::Switch { switch_id: s, port: 1 });
        t.link(s, 2, Peer::Host { host: u32::from(s), ip: Ipv4Addr::new(10, 0, s as u8, 2) });
        t.link(s, 3, Peer::Host { host: 10 + u32::from(s), ip: Ipv4Addr::new(10, 0, 10 + s as u8, 2) });
    }
    let victim = flow(11, 3, 7);
    let mut reports = Vec::new();
    for s in 1..=4u16 {
        let mut e = vec![port(1, 100, 100, 0), meter(0, 1, 50_000), meter(3, 1, 50_000)];
        e.push(fl(1, flow(s as u8, (s % 4 + 1) as u8, s), 100, 100, 0));
        if s == 2 && branch {
            e.extend([meter(0, 2, 50_000), port(2, 50, 50, 0), fl(2, flow(9, 2, 9), 50, 50, 0)]);
        }
        if s == 3 && !branch {
            // Two flows contending, one heavier (two equal flows at one depth wait for each
            // other alike: the paper's net weight is 0 for both).
            e[0] = port(1, 300, 100, 200 * 20_000);
            e.extend([
                fl(1, flow(13, 4, 31), 130, 0, 130 * 20_000),
                fl(1, flow(13, 4, 32), 70, 0, 70 * 20_000),
            ]);
        }
        reports.push(report(u64::from(s), s, if s == 1 { 1 } else { 2 }, 3, 1, e));
    }
    (t, Incident { event: 5, t_ns: 1, reports, victim: Some(victim), victims: Vec::new() })
}

#[test]
fn a_loop_with_contention_inside_is_an_in_loop_deadlock() {
    let (t, inc) = square(false);
    let (_, ds) = analyze(&inc, &t, &Params::default());
    let d = ds[0].clone();
    assert_eq!(d.anomaly, Some(Anomaly::InLoopDeadlock), "{d:?}");
    assert_eq!(d.deadlock_loop.len(), 4);
    let Some(RootCause::Flows { port, .. }) = &d.root_cause else { panic!("{d:?}") };
    assert_eq!(*port, PortId { switch_id: 3, port: 1 });
}

#[test]
fn a_loop_with_a_branch_to_a_pausing_host_is_an_out_of_loop_deadlock_by_injection() {
    let (t, inc) = square(true);
    let (_, ds) = analyze(&inc, &t, &Params::default());
    let d = ds[0].clone();
    assert_eq!(d.anomaly, Some(Anomaly::OutOfLoopDeadlockInjection), "{d:?}");
    assert_eq!(
        d.root_cause,
        Some(RootCause::Host {
            port: PortId { switch_id: 2, port: 2 },
            host: Some((2, Ipv4Addr::new(10, 0, 2, 2)))
        })
    );
}

/// A host that pauses its port while flows contend there is still the injector: the queue is
/// what its pause built up, and a host pauses nothing in normal operation.
#[test]
fn a_paused_host_port_with_contention_in_its_queue_is_still_a_storm() {
    let mut inc = incident(true);
    // The bursts' port is paused by h2 itself now: most of its packets waited on PFC.
    for e in &mut inc.reports[1].entries {
        if let Entry::Port { port: 2, paused, .. } = e {
            *paused = 300;
        }
    }
    let (_, ds) = analyze(&inc, &two_switches(), &Params::default());
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].anomaly, Some(Anomaly::PfcStorm), "{:?}", ds[0]);
    assert!(matches!(ds[0].root_cause, Some(RootCause::Host { host: Some((2, _)), .. })));
}

/// A walk ending at a port paused by a switch whose telemetry shows no cause stopped short: no
/// storm is blamed on a switch; the result says where the trace ended.
#[test]
fn a_pause_from_a_switch_with_no_cause_in_its_telemetry_is_undiagnosed() {
    let mut inc = incident(false);
    // S2 reports nothing but its meter: the trace ends at S1.P1, paused by S2.
    inc.reports[1].entries = vec![meter(0, 2, 20_000)];
    let (_, ds) = analyze(&inc, &two_switches(), &Params::default());
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert!(ds[0].anomaly.is_none(), "{:?}", ds[0]);
    let why = ds[0].undiagnosed.as_deref().unwrap();
    assert!(why.contains("S1.P1") && why.contains("switch S2"), "{why}");
}

/// One initiator, two walks: the victim's own port reaches the pausing host straight (a storm)
/// and another victim-path port reaches it through the loop's branch: one diagnosis, the
/// deadlock. With two branches, the host's beats contention on the other.
#[test]
fn walks_to_one_initiator_give_one_diagnosis_and_a_host_branch_comes_first() {
    let (t, mut inc) = square(true);
    // The victim path also crosses S2.P2 (the branch's end, paused by host 2).
    inc.reports.push(report(5, 2, 1, 0, 2, vec![port(2, 50, 50, 0)]));
    // A second branch: S4.P1's switch-facing loop port also feeds a congested host port on S1.
    inc.reports[0].entries.extend([
        meter(0, 3, 50_000),
        port(3, 300, 0, 300 * 20_000),
        fl(3, flow(20, 11, 1), 150, 0, 150 * 20_000),
        fl(3, flow(21, 11, 2), 150, 0, 150 * 20_000),
    ]);
    let (g, ds) = analyze(&inc, &t, &Params::default());
    assert!(g.port_port.len() >= 6, "two branches out of the loop: {:?}", g.port_port);
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].anomaly, Some(Anomaly::OutOfLoopDeadlockInjection), "{:?}", ds[0]);
    assert_eq!(ds[0].deadlock_loop.len(), 4);
}

#[test]
fn bad_inputs_are_undiagnosed_with_the_reason() {
    let topo = two_switches();
    // No victim-path copy.
    let mut inc = incident(true);
    for r in &mut inc.reports {
        r.header.flag = 2;
    }
    let (_, ds) = analyze(&inc, &topo, &Params::default());
    let d = ds[0].clone();
    assert!(d.anomaly.is_none() && d.undiagnosed.as_deref().unwrap().contains("no victim"), "{d:?}");
    // A switch the topology does not know.
    let mut inc = incident(true);
    inc.reports[1].header.switch_id = 99;
    let (_, ds) = analyze(&inc, &topo, &Params::default());
    let d = ds[0].clone();
    assert!(d.undiagnosed.as_deref().unwrap().contains("switch 99"), "{d:?}");
    // Nothing reported.
    let inc = Incident { event: 1, t_ns: 0, reports: Vec::new(), victim: None, victims: Vec::new() };
    let (_, ds) = analyze(&inc, &topo, &Params::default());
    let d = ds[0].clone();
    assert!(d.undiagnosed.is_some());
    assert!(render::summary(&d).starts_with("Undiagnosed"));
    // Topologies that do not hold together.
    assert!(Topology::from_json("{}").is_err());
    let one_way = r#"{"switches":[{"switch_id":1,"ports":[{"port":0,"switch_id":2,"peer_port":0}]}]}"#;
    assert!(Topology::from_json(one_way).unwrap_err().to_string().contains("does not face it back"));
    // Truncated bytes.
    assert!(Received::parse(0, &[0x48, 0x57, 1]).is_err());
}

#[test]
fn reports_of_one_event_within_the_window_form_one_incident() {
    let r = |t, e| {
        let mut x = report(t, 1, 1, 0, 1, Vec::new());
        x.header.event_id = e;
        x
    };
    let inc = incidents(vec![r(0, 1), r(500, 1), r(100, 2), r(5000, 1)], 1000);
    let sizes: Vec<(u8, usize)> = inc.iter().map(|i| (i.event, i.reports.len())).collect();
    assert_eq!(sizes, vec![(1, 2), (2, 1), (1, 1)]);
}

/// No PFC anywhere: plain contention, at the victim-path port where the victim waited most
/// (the deepest queue), naming the flows that contend there.
#[test]
fn no_pfc_is_plain_contention_at_the_deepest_victim_port() {
    let victim = flow(0, 2, 1000);
    let (b1, b2, other) = (flow(3, 2, 1001), flow(4, 2, 1002), flow(0, 1, 1003));
    // S1.P1: a shallow queue shared with another flow; S2.P2: deep, with two bursts.
    let s1 = report(
        10,
        1,
        1,
        0,
        1,
        vec![
            port(1, 200, 0, 200 * 2_000),
            fl(1, victim, 20, 0, 20 * 1_000),
            fl(1, other, 180, 0, 180 * 2_100),
            meter(0, 1, 200_000),
        ],
    );
    let s2 = report(20, 2, 1, 0, 2, bursts_at_s2p2(victim, b1, b2));
    let inc =
        Incident { event: 5, t_ns: 10, reports: vec![s1, s2], victim: Some(victim), victims: Vec::new() };
    let (g, ds) = analyze(&inc, &two_switches(), &Params::default());
    assert!(g.port_port.is_empty());
    contention_at_s2p2_names(&ds, b1, b2);
}

/// S2.P2's epoch 1: a deep queue (30 KB at each enqueue), the victim's 20 packets and two
/// bursts of 200.
fn bursts_at_s2p2(victim: FiveTuple, b1: FiveTuple, b2: FiveTuple) -> Vec<Entry> {
    vec![
        port(2, 420, 0, 420 * 30_000),
        fl(2, victim, 20, 0, 20 * 30_000),
        fl(2, b1, 200, 0, 200 * 30_000),
        fl(2, b2, 200, 0, 200 * 30_000),
        meter(0, 2, 20_000),
        meter(3, 2, 200_000),
        meter(4, 2, 200_000),
    ]
}

/// One diagnosis, plain contention at S2.P2 naming `b1` and `b2`; the flows it names.
fn contention_at_s2p2_names(ds: &[Diagnosis], b1: FiveTuple, b2: FiveTuple) -> Vec<FiveTuple> {
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].anomaly, Some(Anomaly::FlowContention), "{ds:?}");
    let Some(RootCause::Flows { port, flows }) = &ds[0].root_cause else { panic!("{ds:?}") };
    assert_eq!(*port, PortId { switch_id: 2, port: 2 });
    let named: Vec<FiveTuple> = flows.iter().map(|f| f.0).collect();
    assert!(named.contains(&b1) && named.contains(&b2), "{flows:?}");
    named
}

/// A flow that crossed the port's empty queue in the epoch before the burst is no real
/// contributor to it. (Replayed as one queue, the two epochs' sums spread that flow's 600
/// packets over the burst, and every burst packet "waited for" them: it came out first, the
/// bursts last.) Replayed epoch by epoch (`Even`) it is not named; in queue order its packets,
/// at depth 0, can only have been the packet at the head when a burst packet came: less than
/// one packet for each of the three flows that waited, of the 30 each of their packets waited
/// for, and named last.
#[test]
fn a_flow_of_the_quiet_epoch_before_a_burst_is_not_its_contributor() {
    let victim = flow(0, 2, 1000);
    let (b1, b2, early) = (flow(3, 2, 1001), flow(4, 2, 1002), flow(1, 2, 1003));
    let s1 = report(10, 1, 1, 0, 1, vec![port(1, 20, 0, 0), fl(1, victim, 20, 0, 0), meter(0, 1, 20_000)]);
    // Epoch 0: `early` alone through the empty queue; epoch 1: the bursts.
    let mut e2 = vec![
        Entry::Port { port: 2, epoch_id: 0, pkts: 600, paused: 0, qdepth_sum: 0 },
        Entry::Flow { port: 2, epoch_id: 0, flow: early, pkts: 600, paused: 0, qdepth_sum: 0 },
        Entry::Meter { out_port: 2, epoch_id: 0, in_port: 1, bytes: 600_000 },
    ];
    e2.extend(bursts_at_s2p2(victim, b1, b2));
    let s2 = report(20, 2, 1, 0, 2, e2);
    let inc =
        Incident { event: 5, t_ns: 10, reports: vec![s1, s2], victim: Some(victim), victims: Vec::new() };
    for replay in [Replay::Even, Replay::QueueOrder] {
        let (_, ds) = analyze(&inc, &two_switches(), &Params { replay, ..Params::default() });
        contention_at_s2p2_names(&ds, b1, b2);
        let Some(RootCause::Flows { flows, .. }) = &ds[0].root_cause else { unreachable!() };
        let early_w: f64 = flows.iter().filter(|f| f.0 == early).map(|f| f.1).sum();
        match replay {
            Replay::Even => assert_eq!(early_w, 0.0, "{flows:?}"),
            Replay::QueueOrder => {
                assert!(early_w < 3.0 && flows.last().map(|f| f.0) == Some(early), "{flows:?}")
            }
        }
    }
}

/// The assembler closes an incident once its window has passed, as `incidents` groups them.
#[test]
fn the_assembler_closes_incidents_after_their_window() {
    let r = |t, e| {
        let mut x = report(t, 1, 1, 0, 1, Vec::new());
        x.header.event_id = e;
        x
    };
    let mut a = Assembler::new(1000);
    for x in [r(0, 1), r(100, 2), r(500, 1)] {
        a.push(x);
    }
    assert!(a.poll(900).is_empty(), "both still open");
    let done = a.poll(1050);
    assert_eq!(done.iter().map(|i| (i.event, i.reports.len())).collect::<Vec<_>>(), vec![(1, 2)]);
    a.push(r(1200, 1));
    let rest = a.flush();
    assert_eq!(rest.iter().map(|i| (i.event, i.reports.len())).collect::<Vec<_>>(), vec![(2, 1), (1, 1)]);
}

mod props {
    use proptest::prelude::*;

    use super::*;

    fn any_flow() -> impl Strategy<Value = FiveTuple> {
        (0u8..6, 0u8..6, 0u16..4).prop_map(|(s, d, p)| flow(s, d, 1000 + p))
    }

    fn any_entry() -> impl Strategy<Value = Entry> {
        prop_oneof![
            (0u16..6, 0u32..3, any::<u32>(), any::<u32>(), any::<u64>()).prop_map(
                |(port, epoch_id, pkts, paused, q)| {
                    Entry::Port { port, epoch_id, pkts, paused, qdepth_sum: q }
                }
            ),
            (0u16..6, 0u32..3, any_flow(), any::<u32>(), any::<u32>(), 0u64..(1 << 48)).prop_map(
                |(port, epoch_id, flow, pkts, paused, q)| Entry::Flow {
                    port,
                    epoch_id,
                    flow,
                    pkts,
                    paused,
                    qdepth_sum: q
                }
            ),
            (0u16..6, 0u32..3, 0u16..6, any::<u64>()).prop_map(|(out_port, epoch_id, in_port, bytes)| {
                Entry::Meter { out_port, epoch_id, in_port, bytes }
            }),
        ]
    }

    fn any_report() -> impl Strategy<Value = Received> {
        (0u64..1000, 1u16..4, 0u8..4, 0u16..6, 0u16..6, proptest::collection::vec(any_entry(), 0..12))
            .prop_map(|(t, sw, flag, i, o, entries)| report(t, sw, flag, i, o, entries))
    }

    proptest! {
        /// Whatever the reports say — counts that overflow, paused above packets, ports the
        /// topology lacks, loops — the analyzer answers (at least one diagnosis, each
        /// rendered) and never panics.
        #[test]
        fn any_incident_gets_an_answer(reports in proptest::collection::vec(any_report(), 0..8)) {
            let mut t = two_switches();
            t.link(3, 0, Peer::Switch { switch_id: 1, port: 2 });
            t.link(1, 2, Peer::Switch { switch_id: 3, port: 0 });
            let inc = Incident { event: 5, t_ns: 0, reports, victim: None, victims: Vec::new() };
            let (g, ds) = analyze(&inc, &t, &Params::default());
            prop_assert!(!ds.is_empty());
            for d in &ds {
                // Exactly one outcome: an anomaly, undiagnosed, or no anomaly.
                let outcomes = [d.anomaly.is_some(), d.undiagnosed.is_some(), d.no_anomaly.is_some()];
                prop_assert_eq!(outcomes.iter().filter(|x| **x).count(), 1);
                let _ = render::json(&inc, &g, d).to_string();
                let _ = render::summary(d);
                let _ = render::dot(&g, d);
            }
        }

        /// A lab JSON-lines input of arbitrary text is read or refused, never a panic.
        #[test]
        fn any_text_is_read_or_refused(text in ".{0,400}") {
            let _ = lab::reports(&text);
            let _ = lab::polls(&text);
            let _ = Topology::from_json(&text);
        }
    }
}

/// Two victims' copies in one incident: each victim's own path is the chain of copies from its
/// source host's switch, hop by hop — what victim-only polling would have collected for it.
#[test]
fn each_victims_own_path_is_the_chain_from_its_host() {
    let topo = two_switches();
    let (a, b) = (flow(0, 2, 1), flow(3, 1, 2));
    let reports = vec![
        report(1, 1, 1, 0, 1, vec![fl(1, a, 5, 0, 0)]),
        report(2, 2, 1, 0, 2, vec![fl(2, a, 5, 0, 0)]),
        report(3, 2, 1, 3, 1, vec![fl(1, b, 5, 0, 0)]),
        report(4, 2, 2, 0, 4, vec![]),
    ];
    let inc = Incident { event: 5, t_ns: 1, reports, victim: Some(b), victims: vec![a, b] };
    let hops = |v| -> Vec<(u16, u16, u16)> {
        victim_path_reports(&inc, &v, &topo)
            .iter()
            .map(|r| (r.header.switch_id, r.header.in_port, r.header.out_port))
            .collect()
    };
    assert_eq!(hops(a), vec![(1, 0, 1), (2, 0, 2)]);
    assert_eq!(hops(b), vec![(2, 3, 1)]);
    assert!(hops(flow(9, 1, 3)).is_empty(), "a host the topology does not know");
}

/// A loop with heavy contention inside it and a light one at a branch's end: the loop's own
/// contention started it (in-loop); made heavier than the loop's, the branch's end is the
/// initiator (out-of-loop, flow contention).
#[test]
fn a_light_branch_does_not_outweigh_contention_in_the_loop() {
    let (t, mut inc) = square(false);
    // S2.P1 (a loop port) also feeds S2's host port 2, congested by two light flows.
    let branch = |w: u64| {
        vec![
            meter(0, 2, 50_000),
            port(2, 20, 0, 20 * w),
            fl(2, flow(20, 2, 1), 14, 0, 14 * w),
            fl(2, flow(21, 2, 2), 6, 0, 6 * w),
        ]
    };
    inc.reports[1].entries.extend(branch(2_000));
    let (_, ds) = analyze(&inc, &t, &Params::default());
    assert_eq!(ds[0].anomaly, Some(Anomaly::InLoopDeadlock), "{:?}", ds[0]);
    let (t, mut inc) = square(false);
    inc.reports[1].entries.extend(branch(2_000_000));
    let (_, ds) = analyze(&inc, &t, &Params::default());
    assert_eq!(ds[0].anomaly, Some(Anomaly::OutOfLoopDeadlockContention), "{:?}", ds[0]);
    let Some(RootCause::Flows { port, .. }) = &ds[0].root_cause else { panic!("{:?}", ds[0]) };
    assert_eq!(*port, PortId { switch_id: 2, port: 2 });
}

/// Two branches out of a loop: one ends at a host port busy with a single flow and never
/// paused (Table 2's injection signature, but no pause to confirm a host injecting), the other
/// at a port where two flows contend. The contention is the initiator: a host port that was
/// never paused is not a host injecting PFC (before the fix, the unpaused port was named as
/// the injector, which in the lab named the receivers of line-rate loop flows).
#[test]
fn an_unpaused_host_port_does_not_outrank_contention_at_another_branch() {
    let (t, mut inc) = square(true);
    let s2 = &mut inc.reports[1].entries;
    s2.truncate(s2.len() - 3);
    s2.extend([
        // S2.P2: one flow, a deep queue, nothing paused.
        meter(0, 2, 50_000),
        port(2, 20, 0, 20 * 2_000_000),
        fl(2, flow(20, 2, 1), 20, 0, 20 * 2_000_000),
        // S2.P3: two flows contending.
        meter(0, 3, 50_000),
        port(3, 20, 0, 20 * 2_000_000),
        fl(3, flow(21, 12, 1), 14, 0, 14 * 2_000_000),
        fl(3, flow(22, 12, 2), 6, 0, 6 * 2_000_000),
    ]);
    let (_, ds) = analyze(&inc, &t, &Params::default());
    assert_eq!(ds[0].anomaly, Some(Anomaly::OutOfLoopDeadlockContention), "{:?}", ds[0]);
    let Some(RootCause::Flows { port, .. }) = &ds[0].root_cause else { panic!("{:?}", ds[0]) };
    assert_eq!(*port, PortId { switch_id: 2, port: 3 });
    // With S2.P2 paused (the host there sent PFC), the injection is the answer again.
    let (t, mut inc2) = (t, inc.clone());
    for e in &mut inc2.reports[1].entries {
        if let Entry::Port { port: 2, paused, .. } = e {
            *paused = 10;
        }
    }
    let (_, ds) = analyze(&inc2, &t, &Params::default());
    assert_eq!(ds[0].anomaly, Some(Anomaly::OutOfLoopDeadlockInjection), "{:?}", ds[0]);
}
