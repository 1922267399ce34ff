use super::*;

const OK: &str = "[lab]\nduration_us = 10\ncc = \"hpcc\"\n[topology]\nkind = \"star\"\nhosts = 3\nrate = \"100G\"\ndelay_ns = 1000\n";

#[test]
fn bad_input_names_file_line_and_reason() {
    let p = Path::new("l.toml");
    assert!(LabConfig::parse(p, OK).is_ok());
    let e = LabConfig::parse(p, &OK.replace("\"hpcc\"", "\"cubic\"")).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (3, "lab.cc"));
    assert!(e.reason.contains("unknown CC \"cubic\""), "{e}");
    let e = LabConfig::parse(p, &OK.replace("\"100G\"", "\"0G\"")).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (7, "topology.rate"));
    assert!(e.to_string().starts_with("l.toml:7: topology.rate: a link of zero rate"), "{e}");
    let e = LabConfig::parse(p, &format!("{OK}[[flow]]\nsrc = 0\ndst = 5\nsize = 1\nstart_ns = 0\n"))
        .unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (11, "flow[0].dst"));
    let e = LabConfig::parse(p, &format!("{OK}colour = 1\n")).unwrap_err();
    assert_eq!(e.line, 9);
    let e = LabConfig::parse(p, &OK.replace("\"star\"", "\"torus\"")).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (5, "topology.kind"));
    let e = LabConfig::parse(p, &OK.replace("kind = \"star\"", "kind = \"fat_tree\"")).unwrap_err();
    assert!(e.reason.contains("needs `k`"), "{e}");
}

/// The switches' programs and the hosts' agents: unknown names, misplaced keys, hosts and
/// switches that do not exist, a flow on a host that runs no RC agent.
#[test]
fn programs_and_agents_are_checked() {
    let p = Path::new("a.toml");
    let rep = "[[host]]\nids = [0]\nagent = \"dta_reporter\"\nto = [\"10.0.2.2\"]\ncount = 10\n";
    let c = LabConfig::parse(p, &format!("{OK}[switches]\nprogram = \"macswap\"\n{rep}")).unwrap();
    assert_eq!(c.switch_program(0).program, "macswap");
    assert!(matches!(&c.host_agents[0], HostAgent::DtaReporter(r) if r.count == 10));
    assert_eq!(c.host_agents[1], HostAgent::Rc);
    let e = LabConfig::parse(p, &format!("{OK}[switches]\nprogram = \"tofino\"\n")).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (10, "switches.program"));
    assert!(e.reason.contains("unknown program \"tofino\"") && e.reason.contains("l2l3"), "{e}");
    // The switches' own sections are built at load: a [tm] (the lab writes one) or a value out
    // of range is refused there, naming the line of `sections`, not at run time.
    let e = LabConfig::parse(p, &format!("{OK}[switches]\nsections = \"[tm]\\nseed = 1\\n\"\n")).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (10, "switches.sections"), "{e}");
    assert!(e.reason.contains("duplicate key") && e.reason.contains("writes each switch's"), "{e}");
    let e = LabConfig::parse(
        p,
        &format!("{OK}[switches]\nsections = \"[runtime]\\nstats_interval_s = 0.0\\n\"\n"),
    )
    .unwrap_err();
    assert!(e.reason.contains("runtime.stats_interval_s"), "{e}");
    let e = LabConfig::parse(p, &format!("{OK}[[switch]]\nid = 1\nprogram = \"l2l3\"\n")).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (10, "switch[0].id"));
    let e = LabConfig::parse(p, &format!("{OK}{}", rep.replace("dta_reporter", "dta_sender"))).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (11, "host[0].agent"));
    let e = LabConfig::parse(p, &format!("{OK}{}", rep.replace("to = [\"10.0.2.2\"]\n", ""))).unwrap_err();
    assert_eq!(e.key, "host[0].to", "{e}");
    let e = LabConfig::parse(p, &format!("{OK}{}", rep.replace("10.0.2.2", "ten"))).unwrap_err();
    assert!(e.key == "host[0].to" && e.reason.contains("\"ten\" is not an IPv4 address"), "{e}");
    let e = LabConfig::parse(p, &format!("{OK}{}", rep.replace("[0]", "[7]"))).unwrap_err();
    assert_eq!(e.key, "host[0].ids", "{e}");
    let e = LabConfig::parse(p, &format!("{OK}{rep}{rep}")).unwrap_err();
    assert!(e.key == "host[1].ids" && e.reason.contains("given an agent twice"), "{e}");
    let e = LabConfig::parse(p, &format!("{OK}{}", rep.replace("dta_reporter", "rc"))).unwrap_err();
    assert!(e.key == "host[0].agent" && e.reason.contains("for agent \"dta_reporter\""), "{e}");
    let flow = "[[flow]]\nsrc = 1\ndst = 0\nsize = 1000\nstart_ns = 0\n";
    let e = LabConfig::parse(p, &format!("{OK}{rep}{flow}")).unwrap_err();
    assert!(e.key == "host[0].agent" && e.reason.contains("host 0 runs a flow (1 to 0)"), "{e}");
}

/// An explicit topology: links by name, a host cut off from the rest, a link of zero rate.
#[test]
fn explicit_topologies_are_checked() {
    let p = Path::new("x.toml");
    let head = "[lab]\nduration_us = 10\ncc = \"dcqcn\"\n[topology]\nkind = \"explicit\"\nhosts = 3\nswitches = 2\nrate = \"100G\"\ndelay_ns = 500\n";
    let link = |a: &str, b: &str| format!("[[link]]\na = \"{a}\"\nb = \"{b}\"\n");
    let ok =
        format!("{head}{}{}{}{}", link("h0", "s0"), link("h1", "s0"), link("h2", "s1"), link("s0", "s1"));
    let c = LabConfig::parse(p, &ok).unwrap();
    assert_eq!((c.hosts(), c.topology.switches, c.topology.links.len()), (3, 2, 4));
    assert_eq!(c.topology.links[3].delay_ns, 500);
    let cut = format!("{head}{}{}{}", link("h0", "s0"), link("h1", "s0"), link("h2", "s1"));
    let e = LabConfig::parse(p, &cut).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (6, "topology.hosts"));
    assert!(e.reason.contains("host 2 is disconnected"), "{e}");
    let zero = format!("{ok}rate = \"0G\"\n");
    let e = LabConfig::parse(p, &zero).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (22, "link[3].rate"));
    assert!(e.reason.contains("zero rate"), "{e}");
    let e = LabConfig::parse(p, &format!("{head}{}", link("h0", "q9"))).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (12, "link[0].b"));
}

/// A CDF file that is not monotone is named with its own line.
#[test]
fn a_bad_cdf_file_is_named_by_file_and_line() {
    let dir = std::env::temp_dir().join(format!("softfabric-cdf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.cdf"), "0 0\n1000 50\n500 80\n2000 100\n").unwrap();
    let lab = format!("{OK}[[poisson]]\ncdf = \"bad.cdf\"\nload = 0.3\n");
    let e = LabConfig::parse(&dir.join("l.toml"), &lab).unwrap_err();
    assert_eq!((&e.file, e.line, e.key.as_str()), (&dir.join("bad.cdf"), 3, "poisson[0].cdf"));
    assert!(e.reason.contains("not monotone"), "{e}");
    let long = lab.replace("bad.cdf", "websearch").replace("duration_us = 10\n", "duration_us = 10000\n");
    let c = LabConfig::parse(&dir.join("l.toml"), &long).unwrap();
    assert!(!c.flows.is_empty() && c.hpcc.ai_rate_bps == Some(40e6));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Synchronized burst groups: an incast repeated `repeat` times every `period_ns` gives one flow
/// per sender per burst, at the burst's start; a repeat without a period is refused by name.
#[test]
fn incast_bursts_repeat_every_period() {
    let text = |extra: &str| {
        format!(
            "[lab]\nduration_us = 100\ncc = \"hpcc\"\n[topology]\nkind = \"star\"\nhosts = 4\nrate = \"100G\"\ndelay_ns = 1000\n\
             [[incast]]\nsenders = [1, 2, 3]\ndst = 0\nsize = 1000\nstart_ns = 5000\n{extra}"
        )
    };
    let c = LabConfig::parse(std::path::Path::new("burst.toml"), &text("repeat = 3\nperiod_ns = 20000\n"))
        .unwrap();
    let starts: Vec<(usize, u64)> = c.flows.iter().map(|f| (f.src, f.start_ns)).collect();
    assert_eq!(starts.len(), 9);
    for k in 0..3u64 {
        for s in 1..=3usize {
            assert!(starts.contains(&(s, 5000 + k * 20000)), "{starts:?}");
        }
    }
    let e =
        LabConfig::parse(std::path::Path::new("burst.toml"), &text("repeat = 2\n")).unwrap_err().to_string();
    assert!(e.contains("incast[0].period_ns"), "{e}");
}

/// µFAB's multi-path VM-pairs (Appendix F): `paths` splits a flow into one connection per path,
/// its bytes spread evenly, all of one VM-pair; `[ufab] paths` is the default of flows that
/// name none; `set_pair_paths` (`--paths`) splits the one-path ones; out of range is refused
/// naming the key.
#[test]
fn paths_split_a_vm_pair_into_connections() {
    let p = Path::new("m.toml");
    let flow = |extra: &str| format!("[[flow]]\nsrc = 0\ndst = 1\nsize = 1001\nstart_ns = 5\n{extra}");
    let c = LabConfig::parse(p, &format!("{OK}{}{}", flow("paths = 3\n"), flow(""))).unwrap();
    let sizes: Vec<(u64, Option<u32>)> = c.flows.iter().map(|f| (f.size, f.vm_pair)).collect();
    assert_eq!(sizes, [(334, Some(0)), (334, Some(0)), (333, Some(0)), (1001, None)]);
    let c =
        LabConfig::parse(p, &format!("{OK}[ufab]\npaths = 2\n{}{}", flow("paths = 1\n"), flow(""))).unwrap();
    let sizes: Vec<(u64, Option<u32>)> = c.flows.iter().map(|f| (f.size, f.vm_pair)).collect();
    assert_eq!(sizes, [(1001, None), (501, Some(1)), (500, Some(1))]);
    let mut c = LabConfig::parse(p, &format!("{OK}{}{}", flow("paths = 2\n"), flow(""))).unwrap();
    c.set_pair_paths(2).unwrap();
    let sizes: Vec<(u64, Option<u32>)> = c.flows.iter().map(|f| (f.size, f.vm_pair)).collect();
    assert_eq!(sizes, [(501, Some(0)), (500, Some(0)), (501, Some(1)), (500, Some(1))]);
    assert!(c.clone().set_pair_paths(9).is_err());
    // `[ufab] paths` is checked itself, with no flow to split.
    let e = LabConfig::parse(p, &format!("{OK}[ufab]\npaths = 0\n")).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (10, "ufab.paths"), "{e}");
    for bad in ["paths = 0\n", "paths = 9\n"] {
        let e = LabConfig::parse(p, &format!("{OK}{}", flow(bad))).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (14, "flow[0].paths"), "{e}");
        assert!(e.reason.contains("1 to 8 underlay paths"), "{e}");
    }
}

/// Route overrides that send a host's packets round a cycle are refused; ones that only
/// reroute them (Hawkeye's deadlock scenarios) are not. So are times past the lab's bound and
/// flows past its count, before anything is built of them.
#[test]
fn forwarding_loops_times_and_counts_are_refused() {
    let p = Path::new("r.toml");
    // s0 – s1 – s2 in a line, h0 on s0, h1 on s2.
    let line = "[lab]\nduration_us = 10\ncc = \"hpcc\"\n[topology]\nkind = \"explicit\"\nhosts = 2\nswitches = 3\n\
                rate = \"100G\"\ndelay_ns = 1000\n[[link]]\na = \"h0\"\nb = \"s0\"\n[[link]]\na = \"h1\"\nb = \"s2\"\n\
                [[link]]\na = \"s0\"\nb = \"s1\"\n[[link]]\na = \"s1\"\nb = \"s2\"\n";
    assert!(LabConfig::parse(p, line).is_ok());
    // s1 sends h1's packets back to s0, which sends them to s1: a loop.
    let e = LabConfig::parse(p, &format!("{line}[[switch]]\nid = 1\nroute = [{{ host = 1, via = 0 }}]\n"))
        .unwrap_err();
    assert!(e.key == "switch[0].route" && e.reason.contains("forwarding loop"), "{e}");
    // Toward h0 the same override is the shortest path: no loop.
    assert!(
        LabConfig::parse(p, &format!("{line}[[switch]]\nid = 1\nroute = [{{ host = 0, via = 0 }}]\n"))
            .is_ok()
    );
    // A time past 1000 s of virtual time is refused where it is read.
    let e = LabConfig::parse(p, &OK.replace("duration_us = 10", "duration_us = 9223372036854775807"))
        .unwrap_err();
    assert_eq!(e.key, "lab.duration_us", "{e}");
    let e =
        LabConfig::parse(p, &OK.replace("delay_ns = 1000", "delay_ns = 18446744073709551615")).unwrap_err();
    assert_eq!(e.key, "topology.delay_ns", "{e}");
    // A switch count past the bound, before any switch is built.
    let e = LabConfig::parse(p, &line.replace("switches = 3", "switches = 9007199254740992")).unwrap_err();
    assert_eq!(e.key, "topology.switches", "{e}");
    // Poisson arrivals past the flow bound over the run, before any is drawn.
    let long = OK.replace("duration_us = 10", "duration_us = 1000000000");
    let e =
        LabConfig::parse(p, &format!("{long}[[poisson]]\ncdf = \"websearch\"\nload = 0.9\n")).unwrap_err();
    assert!(e.key == "poisson[0].load" && e.reason.contains("arrivals expected"), "{e}");
}
