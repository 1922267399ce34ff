//! µFAB end to end in the lab, on the CI-sized versions of the paper's experiments
//! (`config/labs/ufab/*-small.toml`): the goals of seed `003` measured by
//! `softfabric::lab::ufab_report` — bandwidth guarantees with work conservation (§5.2), the
//! in-flight bound (§3.4), probe overhead (§5.4), recovery from a core switch failure (§5.4) —
//! and what µFAB adds over HPCC++ and DCQCN with ECMP on the same lab.

use std::path::Path;

use softfabric::lab::{self, Cc, LabConfig, ufab_report};

fn bundled(name: &str) -> LabConfig {
    LabConfig::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs/ufab").join(name)).unwrap()
}

/// Counter `name` summed over the hosts' agents.
fn agents_counter(r: &lab::LabResult, name: &str) -> u64 {
    r.agents.iter().flat_map(|a| a.counters.iter()).filter(|(k, _)| k == name).map(|(_, v)| v).sum()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// §5.2 at CI size (12 VFs of 1, 2 and 5 Gb/s joining every 2 ms on the two-pod testbed, every
/// fabric link 10G), over five seeds: the dissatisfaction ratio's median is within the paper's
/// "close to zero" (≤ 1 % of the volume) and no seed is far off; every pair reaches its
/// guarantee, in well under 1 ms in the median; in flight never exceeds 3 C·T_max; probes take
/// 1.3 % of the bytes in the median (our probe is 106 B on the wire at five hops — labels,
/// IPv4, UDP, 8 B per hop — so L_w = 4 KB bounds it at 2.5 %, where the paper's 53 B gives
/// 1.28 %: pairs sending more than L_w per RTT probe once per RTT, and stay below); nothing is
/// dropped.
#[test]
fn the_testbed_gives_every_vf_its_guarantee() {
    let (mut diss, mut joins, mut probes) = (Vec::new(), Vec::new(), Vec::new());
    for seed in 1..=5 {
        let mut cfg = bundled("guarantee-testbed-small.toml");
        cfg.seed = seed;
        let r = lab::run(&cfg, |_| {}).unwrap();
        let rep = ufab_report::report(&cfg, &r, 200_000);
        assert_eq!(r.switch_drops, 0, "seed {seed}");
        assert!(rep.max_inflight_bdp <= 3.0, "seed {seed}: in flight {:.2} C·T_max", rep.max_inflight_bdp);
        assert!(rep.probe_overhead <= 0.015, "seed {seed}: probes {:.4}", rep.probe_overhead);
        probes.push(rep.probe_overhead);
        for p in &rep.pairs {
            let t = p.reached_ns.unwrap_or_else(|| panic!("seed {seed}: flow {} never reached", p.flow));
            joins.push(t as f64);
        }
        assert!(rep.dissatisfaction < 0.03, "seed {seed}: dissatisfaction {:.4}", rep.dissatisfaction);
        diss.push(rep.dissatisfaction);
    }
    assert!(median(diss.clone()) <= 0.01, "dissatisfaction per seed {diss:?}");
    assert!(median(probes.clone()) <= 0.013, "probe overhead per seed {probes:?}");
    assert!(median(joins.clone()) < 200_000.0, "time to guarantee {joins:?}");
}

/// Appendix F: every VM-pair over two underlay paths (`--paths 2`: the tenant spreads it over two
/// connections, Algorithm 2 splits its tokens, its receiver admits it as one VM-pair). On the
/// CI-sized §5.2 run, three seeds: every VM-pair (its two flows' bytes summed) at its guarantee
/// within 1 ms, ≤ 1 % of the volume short, probes ≤ 1.3 % (each path probes per 2·L_w, so the
/// VM-pair per L_w), in flight ≤ 3 C·T_max. A VM-pair's paths get at least its tokens between
/// them and at most twice (Algorithm 2 keeps a path under its fair share at that share and
/// gives the others its spare too). They are on two routes, except where the second path found
/// only its sibling's route qualified and the run ended before its looks found another: one
/// VM-pair of the 36 here (seed 3's last joiner, 6 ms before the end).
#[test]
fn two_paths_per_vm_pair_meet_the_goals_on_distinct_routes() {
    let mut shared = Vec::new();
    for seed in 1..=3 {
        let mut cfg = bundled("guarantee-testbed-small.toml");
        cfg.seed = seed;
        cfg.set_pair_paths(2).unwrap();
        assert_eq!(cfg.flows.len(), 24);
        let r = lab::run(&cfg, |_| {}).unwrap();
        let rep = ufab_report::report(&cfg, &r, 200_000);
        assert_eq!(r.switch_drops, 0, "seed {seed}");
        assert_eq!(rep.pairs.len(), 12, "seed {seed}: one goal per VM-pair");
        for p in &rep.pairs {
            assert_eq!(p.paths, 2);
            let t = p.reached_ns.unwrap_or_else(|| panic!("seed {seed}: VM-pair {} never reached", p.flow));
            assert!(t <= 1_000_000, "seed {seed}: VM-pair {} took {t} ns", p.flow);
        }
        assert!(rep.dissatisfaction <= 0.01, "seed {seed}: dissatisfaction {:.4}", rep.dissatisfaction);
        assert!(rep.probe_overhead <= 0.013, "seed {seed}: probes {:.4}", rep.probe_overhead);
        assert!(rep.max_inflight_bdp <= 3.0, "seed {seed}: in flight {:.2}", rep.max_inflight_bdp);
        // Flows 2k and 2k + 1 are VM-pair k's paths.
        for k in 0..12u64 {
            let rows: Vec<_> = r.ufab_pairs.iter().filter(|x| x.flow / 2 == k).collect();
            assert_eq!(rows.len(), 2, "seed {seed}: {rows:?}");
            if rows[0].route == rows[1].route {
                shared.push((seed, k));
            }
            let g = cfg.flows[2 * k as usize].guarantee_bps.unwrap() as f64 / cfg.ufab.b_u_bps;
            let phi = rows[0].phi + rows[1].phi;
            assert!(phi >= g - 1e-9 && phi <= 2.0 * g, "seed {seed}: VM-pair {k}: φ {phi:.2} of {g} tokens");
        }
    }
    assert!(shared.len() <= 1, "VM-pairs with both paths on one route: {shared:?}");
}

/// A placement one qualified move cannot undo, undone by a swap (`nic-agent`'s `try_swap`, not
/// in the paper): in seed 3 of the CI-sized §5.2 run, host 0's 5 Gb/s pair joins at 20 ms onto
/// links host 2's 5 Gb/s pair is on, and no other path has room for the latter (1.26 % of the
/// volume short without swaps, measured when they came in). It and host 2's 2 Gb/s pair to the
/// same peer, on another path, trade paths at once, and both paths are then qualified. (Seed
/// 24 was this test's until L_w was counted from the response: it still swaps, but its last
/// 5 Gb/s pair, joining at 22 ms, then needs 2.1 ms, 1.15 % short.)
#[test]
fn a_stuck_pair_swaps_paths_with_its_hosts_pair() {
    let mut cfg = bundled("guarantee-testbed-small.toml");
    cfg.seed = 3;
    let r = lab::run(&cfg, |_| {}).unwrap();
    let rep = ufab_report::report(&cfg, &r, 200_000);
    let swaps: u64 = agents_counter(&r, "ufab_swaps");
    assert!(swaps >= 1, "no swap: {:?}", r.ufab_moves);
    // Each swap is two moves at the same instant.
    let moved: Vec<_> = r.ufab_moves.iter().filter(|m| m.3 == "swap").collect();
    assert_eq!(moved.len() as u64, 2 * swaps, "{moved:?}");
    for pair in moved.chunks(2) {
        assert_eq!(pair[0].0, pair[1].0, "{moved:?}");
    }
    for p in &rep.pairs {
        assert!(p.reached_ns.is_some(), "flow {} never reached its guarantee", p.flow);
    }
    assert!(rep.dissatisfaction <= 0.01, "dissatisfaction {:.4}", rep.dissatisfaction);
    assert_eq!(r.switch_drops, 0);
}

/// The same lab with HPCC++ and DCQCN on ECMP (no guarantees): a third of the volume and more
/// is short of the guarantees; µFAB's shortfall is a small fraction of theirs.
#[test]
fn ecmp_baselines_miss_the_guarantees_ufab_keeps() {
    let mut cfg = bundled("guarantee-testbed-small.toml");
    let ufab = ufab_report::report(&cfg, &lab::run(&cfg, |_| {}).unwrap(), 200_000);
    for cc in [Cc::Hpcc, Cc::Dcqcn] {
        cfg.set_cc(cc);
        assert_eq!(cfg.switch_program(0).program, "l2l3");
        let rep = ufab_report::report(&cfg, &lab::run(&cfg, |_| {}).unwrap(), 200_000);
        assert!(rep.dissatisfaction > 0.2, "{cc:?}: {:.3}", rep.dissatisfaction);
        assert!(
            ufab.dissatisfaction * 5.0 < rep.dissatisfaction,
            "{cc:?}: {:.3} vs µFAB {:.3}",
            rep.dissatisfaction,
            ufab.dissatisfaction
        );
        assert_eq!(rep.probe_overhead, 0.0);
    }
}

/// §5.4 at CI size: 7 VFs into host 7 joining every 1 ms, core switch s8 failing at 9 ms. The
/// pairs that were on it get failure notifications from its neighbours, move at once and are
/// back at their guarantee within 5 ms (the goal; here within a millisecond); what the failure
/// took is counted at the switch; the rest keep their guarantees.
#[test]
fn a_core_failure_moves_its_pairs_back_to_their_guarantee_within_5_ms() {
    let cfg = bundled("failure-testbed-small.toml");
    let r = lab::run(&cfg, |_| {}).unwrap();
    let rep = ufab_report::report(&cfg, &r, 200_000);
    assert!(!rep.recoveries.is_empty(), "no pair was on the failed core: {:?}", r.ufab_moves);
    for rc in &rep.recoveries {
        let back = rc.back_after_ns.unwrap_or_else(|| panic!("flow {} never came back", rc.flow));
        assert!(back < 5_000_000, "flow {} back after {back} ns", rc.flow);
    }
    let failed: u64 = r
        .switches
        .iter()
        .flat_map(|s| s.counters.iter())
        .filter(|(k, _)| k == "drop_switch_failed" || k == "drop_ufab_link_failed")
        .map(|(_, v)| v)
        .sum();
    assert_eq!(failed, r.switch_drops, "every drop is the failure's");
    // The moved pairs' failure notifications reached their hosts.
    let notes: u64 = agents_counter(&r, "ufab_failures_rx");
    assert!(notes > 0);
    assert!(rep.dissatisfaction < 0.02, "dissatisfaction {:.4}", rep.dissatisfaction);
    assert!(rep.max_inflight_bdp <= 3.0);
}

/// A µFAB run is deterministic: the same seed gives the same bytes in every CSV.
#[test]
fn the_same_seed_gives_the_same_run() {
    let cfg = bundled("failure-testbed-small.toml");
    let a = lab::output::csv(&lab::run(&cfg, |_| {}).unwrap());
    let b = lab::output::csv(&lab::run(&cfg, |_| {}).unwrap());
    assert_eq!(a, b);
    assert!(a.iter().any(|(n, _)| *n == "ufab_pairs.csv"));
}

/// Figure 12's 14 → 1 incast (`incast-14to1.toml`, the file itself: 8 ms of virtual time): 14
/// pairs of 0.5 Gb/s guarantees start at once into one 10G host. Two-stage admission keeps the
/// in-flight bytes under §3.4's 3 C·T_max at every sample — pairs report the window they send
/// with while they ramp, not Eqn (3)'s target, which wound the links' W_l up to 3.56 C·T — and
/// the RTT stays within a few base RTTs; every pair gets its guarantee; nothing is dropped.
#[test]
fn an_incast_stays_under_the_in_flight_bound() {
    let cfg = bundled("incast-14to1.toml");
    let r = lab::run(&cfg, |_| {}).unwrap();
    let rep = ufab_report::report(&cfg, &r, 200_000);
    assert_eq!(r.switch_drops, 0);
    assert!(rep.max_inflight_bdp <= 3.0, "in flight {:.2} C·T_max", rep.max_inflight_bdp);
    let (_, p99, max) = rep.rtt_us.expect("RTT samples");
    assert!(p99 <= 3 * r.base_rtt_ns / 1000, "RTT p99 {p99} µs, base {} ns", r.base_rtt_ns);
    assert!(max <= 4 * r.base_rtt_ns / 1000, "RTT max {max} µs, base {} ns", r.base_rtt_ns);
    assert_eq!(rep.pairs.len(), 14);
    for p in &rep.pairs {
        assert!(p.reached_ns.is_some(), "flow {} never reached its guarantee", p.flow);
    }
    assert!(rep.dissatisfaction <= 0.01, "dissatisfaction {:.4}", rep.dissatisfaction);
}

/// Figure 15b's shape: one host keeps its 10G link busy with N pairs, each to another host of
/// a star. Scalable probing (§4.1: a probe per L_w = 4 KB sent, at most one outstanding) bounds
/// the probe bytes by L_p / (L_p + L_w) — 1.44 % for this one-hop probe of 60 B — however many
/// pairs share the link: one pair probes once per RTT (below the bound), and with more pairs the
/// overhead goes steady at the bound instead of growing (pairs whose packets wait their turn at
/// the NIC are not stalled, so no keepalive probe is sent for them).
#[test]
fn probe_overhead_goes_steady_at_its_bound() {
    let bound = 60.0 / (60.0 + 4096.0);
    let mut seen = Vec::new();
    for n in [1usize, 16, 64] {
        let mut text = format!(
            "[lab]\nseed = 1\nduration_us = 5000\ncc = \"ufab\"\nmtu = 1000\nsample_ns = 10000\n\n\
             [ufab]\nb_u = \"100M\"\n\n\
             [topology]\nkind = \"star\"\nhosts = {}\nrate = \"10G\"\ndelay_ns = 1000\n",
            n + 1
        );
        for dst in 1..=n {
            text += &format!(
                "\n[[flow]]\nsrc = 0\ndst = {dst}\nsize = 10000000000\nstart_ns = 0\nguarantee = \"100M\"\nclass = 0\n"
            );
        }
        let cfg = LabConfig::parse(Path::new("probe-sweep.toml"), &text).unwrap();
        let r = lab::run(&cfg, |_| {}).unwrap();
        let rep = ufab_report::report(&cfg, &r, 200_000);
        seen.push((n, rep.probe_overhead));
    }
    assert!(seen[0].1 < bound, "{seen:?}");
    for &(n, o) in &seen[1..] {
        assert!(o > 0.9 * bound && o < 1.05 * bound, "{n} pairs: {o:.4} against {bound:.4}: {seen:?}");
    }
}
