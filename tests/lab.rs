//! The virtual-time lab end to end: the bundled labs, run in process, and the binary's handling
//! of a lab it cannot run.

use std::path::Path;

use softfabric::lab::{self, Cc, LabConfig, LabResult};

fn bundled(name: &str) -> LabConfig {
    LabConfig::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("config/labs").join(name)).unwrap()
}

/// The same configuration and seed give byte-identical CSV, for both congestion controls, on
/// the incast and on a fat-tree with Poisson arrivals (ECMP, random sizes and destinations).
#[test]
fn the_same_config_and_seed_give_identical_csv() {
    for (name, duration_ns) in [("incast-16to1.toml", 200_000), ("websearch-fattree-k4.toml", 300_000)] {
        for cc in [Cc::Hpcc, Cc::Dcqcn] {
            let mut cfg = bundled(name);
            cfg.cc = cc;
            cfg.duration_ns = duration_ns;
            cfg.flows.retain(|f| f.start_ns < duration_ns);
            let a = lab::output::csv(&lab::run(&cfg, |_| {}).unwrap());
            let b = lab::output::csv(&lab::run(&cfg, |_| {}).unwrap());
            assert_eq!(a, b, "{name} {cc:?}");
            assert!(a.iter().any(|(n, t)| *n == "queues.csv" && t.lines().count() > 100));
            assert!(a.iter().any(|(n, t)| *n == "rates.csv" && t.lines().count() > 10));
        }
    }
}

/// Bytes per ns the port `(switch, port)` sent between the samples nearest `from` and `to`.
fn sent_rate(r: &LabResult, switch: usize, port: u16, from: u64, to: u64) -> f64 {
    let q: Vec<_> = r.queues.iter().filter(|s| s.switch == switch && s.port == port).collect();
    let at = |t: u64| q.iter().min_by_key(|s| s.time_ns.abs_diff(t)).unwrap();
    let (a, b) = (at(from), at(to));
    (b.tx_bytes - a.tx_bytes) as f64 / (b.time_ns - a.time_ns) as f64
}

/// 16→1 incast at 100 Gb/s with HPCC++ (η = 0.95, INT stamped by the switch): every flow
/// finishes; nothing is dropped; no PFC pause; the bottleneck runs at ≥ 90 % of line rate from
/// the burst's arrival to the last flow's end; and the queue, which peaks when the 16 initial
/// one-BDP windows land, falls below one BDP within 5 base RTTs of the time the link needs to
/// send that peak (no CC can drain 16 BDP faster than line rate) and never grows back.
#[test]
fn hpcc_absorbs_a_16_to_1_incast_without_pfc() {
    let cfg = bundled("incast-16to1.toml");
    let r = lab::run(&cfg, |_| {}).unwrap();
    assert!(r.flows.iter().all(|f| f.fct_ns.is_some()), "{:?}", r.flows);
    assert_eq!((r.switch_drops, r.retransmits), (0, 0));
    assert!(r.pfc.is_empty(), "{:?}", &r.pfc[..r.pfc.len().min(4)]);
    let line_bytes_per_ns = 100.0 / 8.0;
    let total_bits = 16.0 * 500_000.0 * 8.0;
    let line_time_ns = total_bits / 100.0;
    let last = r.flows.iter().filter_map(|f| f.fct_ns).max().unwrap();
    assert!((last as f64) < 1.25 * line_time_ns, "last FCT {last} ns vs {line_time_ns} ns at line rate");
    // Steady utilisation of the bottleneck (switch 0 port 0 faces the receiver).
    let start = 10_000 + r.base_rtt_ns;
    let u = sent_rate(&r, 0, 0, start, 10_000 + last - r.base_rtt_ns) / line_bytes_per_ns;
    assert!(u >= 0.9, "bottleneck utilisation {u:.3}");
    let q: Vec<_> = r.queues.iter().filter(|s| s.switch == 0 && s.port == 0).collect();
    let peak = q.iter().max_by_key(|s| s.bytes).unwrap();
    let bdp = line_bytes_per_ns * r.base_rtt_ns as f64;
    let below = q.iter().find(|s| s.time_ns > peak.time_ns && (s.bytes as f64) < bdp).unwrap();
    let drain_ns = peak.bytes as f64 / line_bytes_per_ns;
    let took = (below.time_ns - peak.time_ns) as f64;
    assert!(
        took <= drain_ns + 5.0 * r.base_rtt_ns as f64,
        "queue below one BDP {took} ns after its {} B peak (drain alone {drain_ns} ns)",
        peak.bytes
    );
    // Then it stays near or below one BDP: each of the 16 windows may be crossed by its last
    // packet (as the reference's IsWinBound allows), so it may touch a little above.
    // The queue's distribution at packet granularity: every data packet the bottleneck sent
    // is counted once, at the depth it left; the deepest is the sampled peak's bucket or
    // below (samples can fall between departures).
    let (_, _, hist) = r.queue_hist.iter().find(|(s, p, _)| (*s, *p) == (0, 0)).unwrap();
    assert_eq!(hist.iter().sum::<u64>(), 16 * 500, "one count per data packet");
    let deepest = softfabric::lab::output::queue_quantile(hist, 1.0).unwrap();
    assert!(deepest <= peak.bytes + 2 * softfabric::lab::QUEUE_HIST_BYTES, "{deepest} vs {}", peak.bytes);
    let median = softfabric::lab::output::queue_quantile(hist, 0.5).unwrap();
    assert!((median as f64) < bdp, "half the packets left a queue under one BDP: {median} B");
    let after: Vec<u64> = q.iter().filter(|s| s.time_ns > below.time_ns).map(|s| s.bytes).collect();
    let most = after.iter().copied().max().unwrap_or(0);
    assert!((most as f64) < 1.25 * bdp, "the queue grew back to {most} B, one BDP is {bdp} B");
    assert_eq!(*after.last().unwrap(), 0);
}

/// The same incast under DCQCN (no window): its standing queue crosses the PFC threshold of the
/// shallow buffer and the switch pauses senders — which HPCC++ never makes it do.
#[test]
fn dcqcn_without_a_window_triggers_pfc_in_the_incast() {
    let mut cfg = bundled("incast-16to1.toml");
    cfg.cc = Cc::Dcqcn;
    let r = lab::run(&cfg, |_| {}).unwrap();
    let pauses: Vec<_> = r.pfc.iter().filter(|e| e.pause).collect();
    assert!(!pauses.is_empty(), "no PFC pause");
    assert!(pauses.iter().all(|e| e.switch == 0 && e.port != 0), "pauses go to the senders: {pauses:?}");
    assert_eq!(r.switch_drops, 0, "PFC keeps the fabric lossless");
}

/// Flow `flow`'s goodput between `from` and `to` ns, bytes per ns, from the delivered-bytes
/// samples.
fn goodput(r: &LabResult, flow: usize, from: u64, to: u64) -> f64 {
    let delivered = |t: u64| {
        r.rates
            .iter()
            .filter(|s| s.flow == flow && s.time_ns <= t)
            .map(|s| s.rx_bytes)
            .next_back()
            .unwrap_or(0)
    };
    (delivered(to) - delivered(from)) as f64 / (to - from) as f64
}

/// DCQCN as the reference runs it (`CLAMP_TARGET_RATE 0`: a cut clamps the target rate only
/// if an increase event ran since the last cut) finishes every flow of the 16→1 incast, with
/// the classic overshoot that PFC absorbs; clamping at every cut drags the targets to the floor
/// and finishes none in the same time.
#[test]
fn dcqcn_finishes_the_16_to_1_incast_with_the_references_clamp_rule() {
    let mut cfg = bundled("incast-16to1.toml");
    cfg.cc = Cc::Dcqcn;
    let r = lab::run(&cfg, |_| {}).unwrap();
    let finished = r.flows.iter().filter(|f| f.fct_ns.is_some()).count();
    assert_eq!(finished, 16, "{:?}", r.flows);
    assert!(r.pfc.iter().any(|e| e.pause), "DCQCN overshoots into PFC");
    assert_eq!(r.switch_drops, 0);
    // FCTs are taken at the sender's last acknowledgement: each is at least the 8 MB through
    // the one 100G link into the receiver (640 µs for the last to finish).
    let last = r.flows.iter().filter_map(|f| f.fct_ns).max().unwrap();
    assert!(last >= 640_000, "{last}");

    cfg.dcqcn.clamp_target_rate = Some(true);
    let every_cut = lab::run(&cfg, |_| {}).unwrap();
    let finished = every_cut.flows.iter().filter(|f| f.fct_ns.is_some()).count();
    assert_eq!(finished, 0, "clamping at every cut keeps every flow near the floor");
    assert!(every_cut.flows.iter().all(|f| f.acked_bytes > 0 && f.acked_bytes < f.size));
}

/// Two long DCQCN flows into one host share it fairly over their millisecond together, with
/// DCQCN's sawtooth: cut by CNPs, recovering towards the target at each RP timer.
#[test]
fn dcqcn_two_flows_converge_with_a_sawtooth() {
    let mut cfg = bundled("fairness-4flows.toml");
    cfg.cc = Cc::Dcqcn;
    cfg.duration_ns = 2_000_000;
    let r = lab::run(&cfg, |_| {}).unwrap();
    // Flow 1 joins at 1 ms: the two share the link until 2 ms.
    let rate = |flow, from, to| goodput(&r, flow, from, to);
    let (a, b) = (rate(0, 1_000_000, 2_000_000), rate(1, 1_000_000, 2_000_000));
    assert!((a / b - 1.0).abs() <= 0.1, "flow 0 at {a:.2} B/ns, flow 1 at {b:.2} B/ns");
    let windows: Vec<f64> = (10..20).map(|i| rate(0, i * 100_000, (i + 1) * 100_000)).collect();
    let (lo, hi) = windows.iter().fold((f64::MAX, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
    assert!(lo < 0.5 * hi, "a sawtooth: flow 0's rate per 100 µs {windows:?}");
}

/// Two, then four long HPCC++ flows into one host converge to within 10 % of their fair share
/// of what the bottleneck delivers, which stays at ≥ 90 % of the goodput one flow gets alone.
#[test]
fn long_flows_converge_to_within_10_percent_of_fair_share() {
    let mut cfg = bundled("fairness-4flows.toml");
    cfg.duration_ns = 4_000_000;
    let r = lab::run(&cfg, |_| {}).unwrap();
    let rate = |flow, from, to| goodput(&r, flow, from, to);
    let alone = rate(0, 500_000, 1_000_000);
    // Flows join at 0, 1, 2 and 3 ms; measure 0.5 ms after a join, when each has had 100 RTTs.
    for (flows, from, to) in [(2usize, 1_500_000u64, 2_000_000u64), (4, 3_500_000, 4_000_000)] {
        let rates: Vec<f64> = (0..flows).map(|f| rate(f, from, to)).collect();
        let total: f64 = rates.iter().sum();
        assert!(total >= 0.9 * alone, "{flows} flows deliver {total:.2} B/ns, one alone {alone:.2}");
        for (f, x) in rates.iter().enumerate() {
            let share = total / flows as f64;
            assert!(
                (x / share - 1.0).abs() <= 0.1,
                "{flows} flows: flow {f} at {x:.2} B/ns, fair share {share:.2}"
            );
        }
    }
}

/// The binary rejects a lab it cannot run — here a host cut off from the fabric — with the
/// file, the line and the reason, and exit code 2.
#[test]
fn a_lab_with_a_disconnected_host_exits_2_naming_file_and_line() {
    let dir = std::env::temp_dir().join(format!("softfabric-lab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cut.toml");
    std::fs::write(
        &file,
        "[lab]\nduration_us = 10\ncc = \"hpcc\"\n[topology]\nkind = \"explicit\"\nhosts = 2\nswitches = 2\n\
         rate = \"100G\"\ndelay_ns = 1000\n[[link]]\na = \"h0\"\nb = \"s0\"\n[[link]]\na = \"h1\"\nb = \"s1\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_softfabric"))
        .args(["lab", "run"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}:6: topology.hosts: host 1 is disconnected", file.display())), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A leaf-spine fabric routes across switches and spreads flows over both spines (ECMP on each
/// flow's UDP source port): 8 flows from the hosts of leaf 0 to those of leaf 1 all finish, and
/// each spine carries part of the traffic.
#[test]
fn a_leaf_spine_fabric_spreads_flows_over_its_spines() {
    let text = "[lab]\nduration_us = 2000\ncc = \"hpcc\"\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\n\
                spines = 2\nhosts_per_leaf = 8\nrate = \"100G\"\ndelay_ns = 1000\n";
    let flows: String = (0..8)
        .map(|i| format!("[[flow]]\nsrc = {i}\ndst = {}\nsize = 200000\nstart_ns = 0\n", 8 + i))
        .collect();
    let cfg = LabConfig::parse(Path::new("leaf-spine.toml"), &format!("{text}{flows}")).unwrap();
    assert_eq!((cfg.hosts(), cfg.topology.switches), (16, 4));
    let r = lab::run(&cfg, |_| {}).unwrap();
    assert!(r.flows.iter().all(|f| f.fct_ns.is_some()), "{:?}", r.flows);
    assert_eq!(r.switch_drops, 0);
    // Spines are switches 2 and 3; their port 1 faces leaf 1.
    let down = |spine: usize| r.links.iter().find(|l| l.0 == spine && l.1 == 1).unwrap().2;
    let (a, b) = (down(2), down(3));
    assert!(a > 200_000 && b > 200_000, "spine bytes towards leaf 1: {a} and {b}");
}

/// A counter of `counters` by name (0 when absent: only non-zero drops are listed).
fn counter(counters: &[(String, u64)], name: &str) -> u64 {
    counters.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v)
}

/// The lab runs any registered program: a `macswap` switch between two RC hosts carries the
/// flow there and its acknowledgements back (each frame leaves by the other port with its MACs
/// swapped), and the flow finishes at line rate — nothing dropped, nothing retransmitted.
#[test]
fn a_macswap_switch_carries_a_flow_between_two_hosts() {
    let r = lab::run(&bundled("macswap-star.toml"), |_| {}).unwrap();
    assert_eq!(r.switches.len(), 1);
    assert_eq!(r.switches[0].program, "macswap");
    let f = r.flows[0];
    let fct = f.fct_ns.expect("the flow finishes");
    assert!(fct <= f.standalone_ns * 101 / 100, "FCT {fct} ns vs {} ns standalone", f.standalone_ns);
    assert_eq!((r.switch_drops, r.retransmits), (0, 0));
    let (h0, h1) = (&r.agents[0], &r.agents[1]);
    assert_eq!((h0.agent, h1.agent), ("rc", "rc"));
    let packets = f.size.div_ceil(1000);
    assert_eq!(counter(&h1.counters, "acks_tx"), packets);
    assert_eq!(counter(&h0.counters, "acks_rx"), packets);
    assert_eq!(counter(&h1.counters, "flows_completed"), 1);
}

/// The lab runs any host agent: the DTA translator as the collector's ToR, a Key-Write reporter
/// (N = 2), an Append reporter and a soft-RNIC collector. The translator connects to the
/// collector's stores over IB CM; every report sent is stored: one Append entry per Append
/// report, two RDMA WRITEs per Key-Write report (filling the slots 10,000 random writes fill
/// in 65,536), and nothing is dropped or refused on any side (but the reporters' tail probes,
/// duplicates by design).
#[test]
fn a_dta_translator_turns_reporters_reports_into_a_collectors_memory() {
    let r = lab::run(&bundled("dta-translator-star.toml"), |_| {}).unwrap();
    assert_eq!(r.switches[0].program, "dta_translator");
    // Nothing dropped but the reporters' tail probes (each sends its newest report again up to
    // TAIL_PROBES times after its last, which the translator finds a duplicate).
    let drops: Vec<_> = r.switches[0]
        .counters
        .iter()
        .filter(|(n, v)| *v > 0 && !["consumed", "to_cpu", "recirculated"].contains(&n.as_str()))
        .collect();
    let probes = u64::from(2 * roce::dta::TAIL_PROBES);
    assert!(
        drops.iter().all(|(n, v)| n == "drop_dta_seq_duplicate" && *v <= probes),
        "translator drops {drops:?}"
    );
    assert_eq!(r.switch_drops, drops.iter().map(|(_, v)| *v).sum::<u64>());
    let [kw, ap, col] = &r.agents[..] else { panic!("{:?}", r.agents) };
    assert_eq!((kw.agent, ap.agent, col.agent), ("dta_reporter", "dta_reporter", "dta_collector"));
    for rep in [kw, ap] {
        assert_eq!(counter(&rep.counters, "sent"), 20_000, "{rep:?}");
        assert_eq!(counter(&rep.counters, "unrecoverable"), 0, "{rep:?}");
    }
    let c = &col.counters;
    assert_eq!(counter(c, "connections"), 2, "Key-Write and Append stores: {c:?}");
    assert_eq!(counter(c, "append0_entries"), 20_000, "{c:?}");
    // Two copies per Key-Write report, then the Append batches (16 entries, or fewer when the
    // 50 µs flush timer fires first).
    let writes = counter(c, "writes");
    assert!((40_000 + 20_000 / 16..=40_000 + 20_000).contains(&writes), "{c:?}");
    let expected_slots = 65536.0 * (1.0 - (-10_000.0f64 / 65536.0).exp());
    let used = counter(c, "keywrite_slots_used") as f64;
    assert!(
        (used - expected_slots).abs() < 0.02 * expected_slots,
        "{used} slots used, ~{expected_slots:.0} expected"
    );
    for bad in [
        "bad_icrc",
        "malformed",
        "unknown_qp",
        "access_errors",
        "out_of_sequence",
        "duplicates",
        "unroutable",
    ] {
        assert_eq!(counter(c, bad), 0, "{bad}: {c:?}");
    }
}

/// A switch program's sections and a collector's configuration, given as text in the lab file,
/// are checked before anything runs: an error names the lab file, the switch or host, the key
/// and the reason (the binary exits with code 2 on it, as on any lab error).
#[test]
fn bad_program_sections_and_collector_configs_are_refused_before_the_run() {
    let mut cfg = bundled("dta-translator-star.toml");
    cfg.switches.sections =
        cfg.switches.sections.replace("append_flush_us = 50", "append_flush_us = \"soon\"");
    let e = lab::run(&cfg, |_| {}).unwrap_err();
    assert!(e.contains("switch 0") && e.contains("append_flush_us") && e.contains("expected u64"), "{e}");

    let mut cfg = bundled("dta-translator-star.toml");
    let softfabric::lab::HostAgent::DtaCollector { config } = &mut cfg.host_agents[2] else { panic!() };
    *config = config.replace("slots = 65536", "slots = 3");
    let e = lab::run(&cfg, |_| {}).unwrap_err();
    assert!(e.contains("host 2") && e.contains("keywrite.slots") && e.contains("power of two"), "{e}");
}

/// Lab files that used to run wrong or be refused late: refused at load, naming the key, at
/// once; and an unwritable --out is refused before the simulation (exit 2).
#[test]
fn bad_lab_files_are_refused_at_once() {
    let base = "[lab]\nduration_us = 100\ncc = \"hpcc\"\n[topology]\nkind = \"star\"\nhosts = 4\nrate = \"100G\"\ndelay_ns = 1000\n";
    let cases = [
        (base.replace("hosts = 4", "hosts = 100000000"), "hosts"),
        (base.replace("kind = \"star\"\nhosts = 4", "kind = \"fat_tree\"\nk = 1000000"), "k"),
        (format!("{base}[[flow]]\nsrc = 0\ndst = 1\nsize = 9223372036854775807\nstart_ns = 0\n"), "size"),
        (base.replace("[lab]\n", "[lab]\nsample_ns = 0\n"), "sample_ns"),
    ];
    for (text, key) in cases {
        let t0 = std::time::Instant::now();
        let e = LabConfig::parse(std::path::Path::new("bad-lab.toml"), &text).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains("bad-lab.toml"), "{key}: {e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(1), "{key}: refused late");
    }
    // An unwritable --out: exit 2 before any simulation.
    let dir = std::env::temp_dir().join(format!("softfabric-badlab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("lab.toml");
    std::fs::write(&f, format!("{base}[[flow]]\nsrc = 0\ndst = 1\nsize = 1000\nstart_ns = 0\n")).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_softfabric"))
        .args(["lab", "run"])
        .arg(&f)
        .args(["--out", "/proc/softfabric-cannot-write", "--quiet"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--out"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The HPCC simulator's own inputs run as a lab (`lab run --ns3 DIR`): the lab file they make
/// is written beside the results, the keys not imported are named, and the run's flows come
/// back in the flow-file format; inputs the lab cannot run exit 2 naming the file.
#[test]
fn the_reference_simulators_inputs_run_as_a_lab() {
    let dir = std::env::temp_dir().join(format!("softfabric-lab-ns3-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("mix")).unwrap();
    std::fs::write(
        dir.join("mix/topology.txt"),
        "4 1 3\n3\n0 3 100Gbps 0.001ms 0\n1 3 100Gbps 0.001ms 0\n2 3 100Gbps 0.001ms 0\n",
    )
    .unwrap();
    std::fs::write(dir.join("mix/flow.txt"), "2\n0 2 3 100 200000 2.0\n1 2 3 100 300000 2.000001\n").unwrap();
    std::fs::write(
        dir.join("config.txt"),
        "TOPOLOGY_FILE mix/topology.txt\nFLOW_FILE mix/flow.txt\nCC_MODE 3\nU_TARGET 0.95\nMI_THRESH 0\n\
         RATE_AI 50Mb/s\nBUFFER_SIZE 32\nACK_HIGH_PRIO 0\nPACKET_PAYLOAD_SIZE 1000\nSIMULATOR_STOP_TIME 2.001\nFAST_REACT 1\n",
    )
    .unwrap();
    let run = |out: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_softfabric"))
            .args(["lab", "run", "--quiet", "--ns3"])
            .arg(&dir)
            .arg("--out")
            .arg(dir.join(out))
            .output()
            .unwrap()
    };
    let o = run("out");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("FAST_REACT 1: not imported"), "{err}");
    let lab = std::fs::read_to_string(dir.join("out/lab.toml")).unwrap();
    assert!(lab.contains("kind = \"explicit\"") && lab.contains("buffer_bytes = 33554432"), "{lab}");
    let flows = std::fs::read_to_string(dir.join("out/flows.csv")).unwrap();
    assert_eq!(flows.lines().filter(|l| l.contains(",2,")).count(), 2, "{flows}");
    assert!(flows.lines().skip(1).all(|l| !l.split(',').nth(5).unwrap().is_empty()), "both finish: {flows}");
    let back = std::fs::read_to_string(dir.join("out/ns3-flow.txt")).unwrap();
    assert!(back.starts_with("2\n") && back.contains("0 2 3 100 200000 2.000000000"), "{back}");
    std::fs::write(dir.join("mix/flow.txt"), "1\n0 3 3 100 200000 2.0\n").unwrap();
    let o = run("bad");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("flow.txt:2") && err.contains("not a host"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The HPCC paper's 320-host, 400G-fabric topology is bundled and loads: 320 hosts, 56
/// switches, 480 links with the fabric at 400G (running it is in BENCHMARKS.md: 2 minutes).
#[test]
fn the_hpcc_papers_320_host_fabric_loads() {
    let cfg = bundled("hpcc-fat-320.toml");
    assert_eq!((cfg.hosts(), cfg.topology.switches, cfg.topology.links.len()), (320, 56, 480));
    let fabric = cfg.topology.links.iter().filter(|l| l.rate_bps == 400_000_000_000).count();
    assert_eq!(fabric, 160);
    assert_eq!(cfg.buffer_bytes, 32 << 20);

    // `kind = "pods"` describes the same fabric in five numbers: the very same links.
    let text = std::fs::read_to_string(&cfg.file).unwrap();
    let head = text.split("[[link]]").next().unwrap().replace(
        "kind = \"explicit\"\nhosts = 320\nswitches = 56\n",
        "kind = \"pods\"\npods = 5\ntors_per_pod = 4\naggs_per_pod = 4\ncores = 16\nhosts_per_tor = 16\nfabric_rate = \"400G\"\n",
    );
    let pods = LabConfig::parse(Path::new("pods.toml"), &head).unwrap();
    let links = |c: &LabConfig| {
        let mut v: Vec<String> = c.topology.links.iter().map(|l| format!("{l:?}")).collect();
        v.sort();
        v
    };
    assert_eq!((pods.hosts(), pods.topology.switches), (320, 56));
    assert_eq!(links(&pods), links(&cfg));
}

/// A run cut at its duration leaves flows unfinished (counted, their bytes not acknowledged);
/// `run_to_completion_us` runs on until every flow is acknowledged, and no longer.
#[test]
fn run_to_completion_finishes_what_the_duration_cut_off() {
    let mut cfg = bundled("incast-16to1.toml");
    cfg.duration_ns = 300_000;
    let cut = lab::run(&cfg, |_| {}).unwrap();
    let unfinished = cut.flows.iter().filter(|f| f.fct_ns.is_none()).count();
    assert!(unfinished > 0, "300 µs is too short for 16 × 500 KB through one 100G link");
    assert_eq!(cut.simulated_ns, 300_000);

    cfg.completion_ns = 50_000_000;
    let done = lab::run(&cfg, |_| {}).unwrap();
    assert!(done.flows.iter().all(|f| f.fct_ns.is_some() && f.acked_bytes == f.size), "{:?}", done.flows);
    assert!(done.simulated_ns > 300_000 && done.simulated_ns < 10_000_000, "{}", done.simulated_ns);
    // The flows finished within the duration are the same either way.
    for (a, b) in cut.flows.iter().zip(&done.flows) {
        if a.fct_ns.is_some() {
            assert_eq!(a.fct_ns, b.fct_ns);
        }
    }
}

/// `[hpcc] int = "compact"`: INT in 8-byte slots, five of them (44 B, the reference's 42 B
/// header and our 2 B of flags), where the full encoding gives 16 B per hop of the longest
/// path. HPCC++ works the same on either — the incast finishes without PFC at line rate — and
/// the bottleneck carries the difference in header bytes, once per data packet.
#[test]
fn compact_int_carries_the_references_header_size() {
    let full = bundled("incast-16to1.toml");
    let compact = LabConfig { hpcc: lab::HpccParams { int_compact: true, ..full.hpcc }, ..full.clone() };
    let (a, b) = (lab::run(&full, |_| {}).unwrap(), lab::run(&compact, |_| {}).unwrap());
    for r in [&a, &b] {
        assert!(r.flows.iter().all(|f| f.fct_ns.is_some()) && r.pfc.is_empty());
    }
    let sent = |r: &LabResult| r.links.iter().find(|l| (l.0, l.1) == (0, 0)).unwrap().2;
    // A star: one switch, a 1-hop path; full INT is 4 + 16 = 20 B, compact 4 + 5 × 8 = 44 B.
    let packets = 16 * 500;
    assert_eq!(sent(&b) - sent(&a), packets * (44 - 20), "per data packet, 24 B more on this one-hop fabric");
    let (fa, fb) = (
        a.flows.iter().filter_map(|f| f.fct_ns).max().unwrap(),
        b.flows.iter().filter_map(|f| f.fct_ns).max().unwrap(),
    );
    assert!(fb as f64 <= fa as f64 * 1.05, "{fb} vs {fa}: the same control");
}

/// A `pods` fabric whose cores do not divide among the aggregation switches, or that is far
/// too large, is refused by key before anything is built.
#[test]
fn bad_pods_are_refused_by_key() {
    let base = "[lab]\nduration_us = 10\ncc = \"hpcc\"\n[topology]\nkind = \"pods\"\nrate = \"100G\"\ndelay_ns = 1000\n";
    for (extra, key) in [
        ("pods = 2\ntors_per_pod = 2\naggs_per_pod = 3\ncores = 4\nhosts_per_tor = 2\n", "cores"),
        ("pods = 2\ntors_per_pod = 2\naggs_per_pod = 2\ncores = 1000000000\nhosts_per_tor = 2\n", "pods"),
        (
            "pods = 100000\ntors_per_pod = 100\naggs_per_pod = 2\ncores = 2\nhosts_per_tor = 100\n",
            "hosts_per_tor",
        ),
        ("pods = 2\naggs_per_pod = 2\ncores = 2\nhosts_per_tor = 2\n", "kind"),
    ] {
        let e = LabConfig::parse(Path::new("pods.toml"), &format!("{base}{extra}")).unwrap_err().to_string();
        assert!(e.contains(key), "{extra}: {e}");
    }
}

/// Hawkeye in the lab (`config/labs/hawkeye-incast-backpressure.toml`): the incast into h8
/// pauses the switches upstream; the victim h2 → h9, which only shares the paused links, is
/// slowed and its agent polls for it; the polling packet's copies survive at the paused ports
/// on its path (flag 11 on a paused victim port), and the reports of h8's switch for the port
/// towards h8 name every burst flow. The same lab gives the same JSON lines twice.
#[test]
fn hawkeye_traces_the_incast_that_pauses_the_victims_path() {
    use wire::hawkeye::report::{Entry, Report};
    let cfg = bundled("hawkeye-incast-backpressure.toml");
    let r = lab::run(&cfg, |_| {}).unwrap();
    assert!(!r.pfc.is_empty(), "the incast pauses");
    // The victim's sender polled, for the victim flow.
    let victim = r.polls.iter().find(|(h, _)| *h == 2).expect("the victim's agent polls");
    assert_eq!(
        (victim.1.victim.src_ip, victim.1.victim.dst_ip),
        ([10, 0, 2, 2].into(), [10, 0, 9, 2].into())
    );
    assert!(victim.1.rtt_ns > victim.1.threshold_ns);
    let reports: Vec<(usize, Report<'_>)> =
        r.records.iter().map(|(_, s, b)| (*s, Report::parse(b).unwrap())).collect();
    assert!(!reports.is_empty());
    // Along the path some copy found its victim port paused (11).
    assert!(reports.iter().any(|(_, rep)| rep.header.flag == 3));
    // Leaf 2 (switch 2) reports its port towards h8 (port 0) with every burst flow in it.
    let mut burst_srcs: Vec<[u8; 4]> = Vec::new();
    for (s, rep) in &reports {
        if *s != 2 || rep.header.out_port != 0 {
            continue;
        }
        for e in rep.entries().map(Result::unwrap) {
            if let Entry::Flow { flow, pkts, .. } = e
                && flow.dst_ip == std::net::Ipv4Addr::new(10, 0, 8, 2)
                && pkts > 0
            {
                burst_srcs.push(flow.src_ip.octets());
            }
        }
    }
    burst_srcs.sort();
    burst_srcs.dedup();
    let want: Vec<[u8; 4]> = [0u8, 1, 4, 5, 6].iter().map(|&h| [10, 0, h, 2]).collect();
    assert_eq!(burst_srcs, want, "the burst flows at the congested port");
    let a = lab::output::hawkeye_jsonl(&r);
    let b = lab::output::hawkeye_jsonl(&lab::run(&cfg, |_| {}).unwrap());
    assert_eq!(a, b);
    assert_eq!(a.len(), 3, "reports, polls, topology");
    // The analyzer on the run's output: every incident is the incast's PFC backpressure, its
    // spreading path from the victim's paused uplink (leaf 0, ID 1, port 4) to the spine's
    // port towards leaf 2 (ID 4, port 2), where the incast and the victim meet.
    use collector::hawkeye::{self, Anomaly, Params, PortId, lab as hl};
    let text = |name: &str| a.iter().find(|(n, _)| *n == name).map(|x| x.1.clone()).unwrap();
    let (inc, topo) = hl::load(
        &text("hawkeye_reports.jsonl"),
        &text("hawkeye_polls.jsonl"),
        &text("hawkeye_topology.json"),
        2_000_000,
    )
    .unwrap();
    assert!(!inc.is_empty());
    for i in &inc {
        let (_, ds) = hawkeye::analyze(i, &topo, &Params::default());
        let d = &ds[0];
        assert_eq!(d.anomaly, Some(Anomaly::MicroBurstIncast), "{d:?}");
        assert_eq!(d.pfc_path.first(), Some(&PortId { switch_id: 1, port: 4 }), "{d:?}");
        assert_eq!(d.pfc_path.last(), Some(&PortId { switch_id: 4, port: 2 }), "{d:?}");
    }
}

/// A PFC storm: h1's NIC keeps pausing its switch port on the data priority from 50 to 250 µs
/// while it receives h0's flow. The flow stalls, h0's agent polls during the storm (its timed
/// packet is overdue: no ACK comes back), and the switch's report for the port towards h1 has
/// the poll's copy there as 11 (its victim port, paused now); the analyzer names the storm and
/// h1 as the injecting host. The storm host counts its frames.
#[test]
fn a_pfc_storm_host_pauses_its_port_and_the_poll_sees_it() {
    use wire::hawkeye::report::{Entry, Report};
    let dir = std::env::temp_dir().join(format!("softfabric-storm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("storm.toml");
    std::fs::write(
        &file,
        r#"
[lab]
duration_us = 600
cc = "dcqcn"
ack_high_priority = true
[topology]
kind = "star"
hosts = 3
rate = "100G"
delay_ns = 1000
[switches]
program = "hawkeye"
sections = "[hawkeye]\nepoch_ns = 65536\nflow_slots = 1024\n"
[hawkeye]
detect = true
rtt_factor = 3.0
min_interval_us = 100
[[host]]
ids = [1]
agent = "pfc_storm"
priority = 3
quanta = 65535
start_ns = 50000
stop_ns = 250000
interval_ns = 5000
[[flow]]
src = 0
dst = 1
size = 4000000
start_ns = 0
"#,
    )
    .unwrap();
    let cfg = LabConfig::load(&file).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let r = lab::run(&cfg, |_| {}).unwrap();
    let storm = r.agents.iter().find(|a| a.host == 1).unwrap();
    assert_eq!(storm.agent, "pfc_storm");
    let sent = storm.counters.iter().find(|(k, _)| k == "pause_frames_sent").unwrap().1;
    assert_eq!(sent, 40, "one every 5 µs from 50 to 250 µs");
    assert!(
        r.polls.iter().any(|(h, e)| *h == 0 && (50_000..250_000).contains(&e.at)),
        "the sender polls in the storm"
    );
    // The star's switch port towards h1 is port 1.
    let seen = r.records.iter().any(|(t, _, b)| {
        let rep = Report::parse(b).unwrap();
        *t <= 300_000
            && rep.header.out_port == 1
            && rep.header.flag == 3
            && rep
                .entries()
                .map(Result::unwrap)
                .any(|e| matches!(e, Entry::Port { port: 1, pkts, .. } if pkts > 0))
    });
    assert!(seen, "a report of the paused port towards the storm host");
    // The analyzer on the run: the storm, host 1 injecting into the port facing it.
    use collector::hawkeye::{self as hk, Anomaly, Params, RootCause};
    let (incs, topo) = softfabric::hawkeye_eval::incidents(&r, 1_000_000).unwrap();
    let storms: Vec<_> = incs
        .iter()
        .filter(|i| i.t_ns <= 300_000)
        .flat_map(|i| hk::analyze(i, &topo, &Params::default()).1)
        .collect();
    assert!(!storms.is_empty());
    for d in &storms {
        assert_eq!(d.anomaly, Some(Anomaly::PfcStorm), "{d:?}");
        assert!(matches!(d.root_cause, Some(RootCause::Host { host: Some((1, _)), .. })), "{d:?}");
    }
}

/// A static route override: leaf 0's route to h2 only via spine 3 (switch 3), where ECMP would
/// spread over both spines — every data byte of h0 → h2 crosses spine 3 and none spine 2. A
/// switch that is not a neighbour is refused when the file is read.
#[test]
fn a_route_override_pins_the_path() {
    let dir = std::env::temp_dir().join(format!("softfabric-route-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = |via: usize| {
        format!(
            r#"
[lab]
duration_us = 400
cc = "hpcc"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
rate = "100G"
delay_ns = 1000
[[switch]]
id = 0
route = [{{ host = 2, via = {via} }}]
[[flow]]
src = 0
dst = 2
size = 2000000
start_ns = 0
[[flow]]
src = 1
dst = 2
size = 2000000
start_ns = 0
"#
        )
    };
    let file = dir.join("route.toml");
    std::fs::write(&file, text(3)).unwrap();
    let cfg = LabConfig::load(&file).unwrap();
    let r = lab::run(&cfg, |_| {}).unwrap();
    assert!(r.flows.iter().all(|f| f.fct_ns.is_some()));
    let sent = |s: usize| r.links.iter().filter(|l| l.0 == s).map(|l| l.2).sum::<u64>();
    assert!(sent(3) >= 4_000_000, "spine 3 carries the data: {}", sent(3));
    // Spine 2 carries only ACKs back (one per data packet, with INT): 4 000 of ~114 bytes.
    assert!(sent(2) * 5 < sent(3), "spine 2 carries no data, at most ACKs: {} vs {}", sent(2), sent(3));
    // Switch 1 (leaf 1) is not a neighbour of leaf 0: the file is refused, naming the key.
    std::fs::write(&file, text(1)).unwrap();
    let e = LabConfig::load(&file).unwrap_err().to_string();
    assert!(e.contains("switch[0].route") && e.contains("not a neighbour of switch 0"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Hawkeye's telemetry into a DTA collector's memory, in the lab: switch 0 runs `hawkeye` with
/// `dta_collector`, switch 1 is the collector's ToR running `dta_translator`, host 2 the
/// collector. Two flows into h1 queue at switch 0; the senders' agents poll; switch 0 sends its
/// reports as DTA Append words to list 0; the translator writes them with RDMA into the
/// collector's ring — every word of every report: stored = sent.
#[test]
fn hawkeye_reports_land_in_a_dta_collectors_list() {
    let dir = std::env::temp_dir().join(format!("softfabric-hk-dta-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hk-dta.toml");
    std::fs::write(
        &file,
        r#"
[lab]
duration_us = 3000
cc = "dcqcn"
ack_high_priority = true
[topology]
kind = "explicit"
hosts = 4
switches = 2
rate = "100G"
delay_ns = 1000
[[link]]
a = "h0"
b = "s0"
[[link]]
a = "h1"
b = "s0"
[[link]]
a = "h3"
b = "s0"
[[link]]
a = "h2"
b = "s1"
[[link]]
a = "s0"
b = "s1"
[switches]
program = "hawkeye"
sections = "[hawkeye]\nepoch_ns = 262144\nflow_slots = 1024\ndta_collector = \"10.0.2.2\"\ndta_list = 0\n"
[[switch]]
id = 1
program = "dta_translator"
sections = """
[dta]
append_flush_us = 20
[[dta.collector]]
name = "c0"
ip = "10.0.2.2"
append = [{ list = 0, port = 1338, batch = 16 }]
"""
[[host]]
ids = [2]
agent = "dta_collector"
config = """
[collector]
ip = "10.0.2.2"
memory = "pages"
seed = 1
[[append]]
list = 0
port = 1338
entries = 65536
"""
[hawkeye]
detect = true
rtt_factor = 1.5
min_interval_us = 200
[[flow]]
src = 0
dst = 1
size = 3000000
start_ns = 500000
[[flow]]
src = 3
dst = 1
size = 3000000
start_ns = 500000
"#,
    )
    .unwrap();
    let cfg = LabConfig::load(&file).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let r = lab::run(&cfg, |_| {}).unwrap();
    assert!(!r.polls.is_empty(), "the agents poll");
    // Switch 0's reports (kept for the lab too: no analyzer): their words.
    let words: u64 = r
        .records
        .iter()
        .filter(|(_, s, _)| *s == 0)
        .map(|(_, _, b)| wire::hawkeye::report::words(b).count() as u64)
        .sum();
    assert!(words > 0, "switch 0 reported");
    let collector = r.agents.iter().find(|a| a.host == 2).unwrap();
    let stored = collector.counters.iter().find(|(k, _)| k == "append0_entries").map(|c| c.1);
    assert_eq!(stored, Some(words), "every word in the collector's list: {:?}", collector.counters);
}
