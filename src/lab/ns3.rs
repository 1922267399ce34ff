//! The HPCC simulator's own inputs as a lab: its `config.txt`, the topology file and the flow
//! file it names (`alibaba-edu/High-Precision-Congestion-Control`, `simulation/mix/`), turned
//! into the lab file they describe and checked as one (`softfabric lab run --ns3 DIR`).
//!
//! * **Topology** (`TOPOLOGY_FILE`): `N S L`, the `S` switch node ids, then `L` links
//!   `a b rate delay error_rate` (`100Gbps`, `0.001ms`). Nodes that are not switches are
//!   hosts; hosts and switches are numbered in the order of their ids (`h0`, `s0`, …). A link
//!   with a nonzero error rate is refused: the lab has no random loss on links.
//! * **Flows** (`FLOW_FILE`): a count, then `src dst priority dport size start_s`, as the
//!   reference's `traffic_gen.py` writes them; priority and port are not used (every flow is
//!   RoCEv2 data in the lossless class). The run starts at the first flow: start times are
//!   shifted by it (the generator starts at 2 s), and it lasts until `SIMULATOR_STOP_TIME`
//!   shifted the same way.
//! * **config.txt** keys taken: `CC_MODE` (1 DCQCN, 3 HPCC), `U_TARGET`, `MI_THRESH`,
//!   `RATE_AI`, `RATE_HAI`, `MIN_RATE`, `BUFFER_SIZE` (MB), `ACK_HIGH_PRIO`,
//!   `PACKET_PAYLOAD_SIZE`, `SIMULATOR_STOP_TIME`. Every other key is listed as not imported
//!   ([`Imported::ignored`]) — among them the ECN maps (the lab derives kmin/kmax from the
//!   link rate with `run.py`'s rule), `INT_MULTI`, `HAS_WIN`/`VAR_WIN`, `FAST_REACT`,
//!   `L2_*` and the trace and monitor outputs.
//!
//! [`flow_file`] writes a lab's flows in the flow-file format, so the same workload can be fed
//! to both simulators.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::config::{FlowSpec, LabConfig, LabError};

/// A lab made from the simulator's inputs.
#[derive(Debug)]
pub struct Imported {
    /// The lab.
    pub lab: LabConfig,
    /// The lab file it is, as text (written beside the results).
    pub text: String,
    /// `config.txt` keys not imported, with their values.
    pub ignored: Vec<(String, String)>,
}

fn bad(file: &Path, line: usize, key: &str, reason: String) -> LabError {
    LabError { file: file.to_path_buf(), line, key: key.to_string(), reason }
}

/// A rate as the simulator writes it (`100Gbps`, `50Mb/s`) as the lab writes one (`100G`).
fn rate(v: &str) -> Option<String> {
    let t = v.trim().trim_end_matches("ps").trim_end_matches("b/s").trim_end_matches('b');
    let (num, unit) = t.split_at(t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len()));
    let x: f64 = num.parse().ok()?;
    let mul = match unit {
        "G" => 1e9,
        "M" => 1e6,
        "K" | "k" => 1e3,
        "" => 1.0,
        _ => return None,
    };
    let bps = x * mul;
    (bps.is_finite() && bps >= 1.0).then(|| format!("{}M", (bps / 1e6).round().max(1.0)))
}

/// A delay as the simulator writes it (`0.001ms`, `1us`, `1000ns`), in ns.
fn delay_ns(v: &str) -> Option<u64> {
    let t = v.trim();
    let (num, unit) = t.split_at(t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len()));
    let x: f64 = num.parse().ok()?;
    let mul = match unit {
        "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "ns" | "" => 1.0,
        _ => return None,
    };
    let ns = x * mul;
    (0.0..1e15).contains(&ns).then_some(ns.round() as u64)
}

/// Read a file the configuration names: as written, else relative to `dir`, else its file name
/// in `dir` (the reference's configs name `mix/…` relative to its `simulation/` directory).
fn read_named(dir: &Path, cfg: &Path, key: &str, v: &str) -> Result<(PathBuf, String), LabError> {
    let p = Path::new(v);
    let tries = [p.to_path_buf(), dir.join(p), dir.join(p.file_name().unwrap_or_default())];
    for t in &tries {
        if let Ok(s) = std::fs::read_to_string(t) {
            return Ok((t.clone(), s));
        }
    }
    Err(bad(
        cfg,
        0,
        key,
        format!("cannot read {v:?} (tried as written, in {} and by its name there)", dir.display()),
    ))
}

/// Import the simulator's inputs in `dir` (its `config.txt` and the files it names).
pub fn import(dir: &Path) -> Result<Imported, LabError> {
    let cfg_path = dir.join("config.txt");
    let text = std::fs::read_to_string(&cfg_path)
        .map_err(|e| bad(&cfg_path, 0, "-", format!("cannot read: {e}")))?;
    let mut keys: Vec<(String, String, usize)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let mut f = l.split_whitespace();
        if let Some(k) = f.next().filter(|k| !k.starts_with('#')) {
            keys.push((k.to_string(), f.collect::<Vec<_>>().join(" "), i + 1));
        }
    }
    let get = |k: &str| keys.iter().find(|(n, _, _)| n == k).map(|(_, v, l)| (v.as_str(), *l));
    let need = |k: &str| get(k).ok_or_else(|| bad(&cfg_path, 0, k, "missing".into()));
    let num = |k: &str, v: &str, l: usize| -> Result<f64, LabError> {
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| bad(&cfg_path, l, k, format!("{v:?} is not a number")))
    };
    let used = [
        "TOPOLOGY_FILE",
        "FLOW_FILE",
        "CC_MODE",
        "U_TARGET",
        "MI_THRESH",
        "RATE_AI",
        "RATE_HAI",
        "MIN_RATE",
        "BUFFER_SIZE",
        "ACK_HIGH_PRIO",
        "PACKET_PAYLOAD_SIZE",
        "SIMULATOR_STOP_TIME",
    ];
    let ignored = keys
        .iter()
        .filter(|(k, _, _)| !used.contains(&k.as_str()))
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect();

    let (cc_v, cc_l) = need("CC_MODE")?;
    let cc = match cc_v {
        "1" => "dcqcn",
        "3" => "hpcc",
        v => {
            return Err(bad(&cfg_path, cc_l, "CC_MODE", format!("{v}: the lab runs 1 (DCQCN) and 3 (HPCC)")));
        }
    };

    // Topology.
    let (tv, _) = need("TOPOLOGY_FILE")?;
    let (tpath, ttext) = read_named(dir, &cfg_path, "TOPOLOGY_FILE", tv)?;
    let mut lines = ttext.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, head) = lines.next().ok_or_else(|| bad(&tpath, 1, "-", "empty".into()))?;
    let h: Vec<usize> = head.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let [n, s, l] = h[..] else {
        return Err(bad(&tpath, 1, "-", format!("{head:?}: expected \"nodes switches links\"")));
    };
    let (li, sw_line) = lines.next().ok_or_else(|| bad(&tpath, 2, "-", "no switch list".into()))?;
    let mut is_switch = vec![false; n];
    let ids: Vec<&str> = sw_line.split_whitespace().collect();
    if ids.len() != s {
        return Err(bad(&tpath, li + 1, "-", format!("{} switch ids, the first line says {s}", ids.len())));
    }
    for id in ids {
        match id.parse::<usize>().ok().filter(|&x| x < n) {
            Some(x) => is_switch[x] = true,
            None => return Err(bad(&tpath, li + 1, "-", format!("{id:?} is not a node id below {n}"))),
        }
    }
    // Lab names: hosts and switches in id order.
    let mut name = vec![String::new(); n];
    let (mut hosts, mut switches) = (0usize, 0usize);
    for (id, sw) in is_switch.iter().enumerate() {
        name[id] = if *sw {
            switches += 1;
            format!("s{}", switches - 1)
        } else {
            hosts += 1;
            format!("h{}", hosts - 1)
        };
    }
    let mut links = String::new();
    let mut first: Option<(String, u64)> = None;
    let mut count = 0;
    for (i, line) in lines {
        let f: Vec<&str> = line.split_whitespace().collect();
        let at = |reason: String| bad(&tpath, i + 1, "-", reason);
        let [a, b, r, d, e] = f[..] else {
            return Err(at(format!("{line:?}: expected \"a b rate delay error\"")));
        };
        let node = |x: &str| {
            x.parse::<usize>()
                .ok()
                .filter(|&v| v < n)
                .ok_or_else(|| at(format!("{x:?} is not a node id below {n}")))
        };
        let (a, b) = (node(a)?, node(b)?);
        let r = rate(r).ok_or_else(|| at(format!("{r:?} is not a rate")))?;
        let d = delay_ns(d).ok_or_else(|| at(format!("{d:?} is not a delay")))?;
        if e.parse::<f64>() != Ok(0.0) {
            return Err(at(format!("error rate {e}: the lab has no random loss on links")));
        }
        first.get_or_insert((r.clone(), d));
        let _ = write!(
            links,
            "[[link]]\na = \"{}\"\nb = \"{}\"\nrate = \"{r}\"\ndelay_ns = {d}\n",
            name[a], name[b]
        );
        count += 1;
    }
    if count != l {
        return Err(bad(&tpath, 0, "-", format!("{count} links, the first line says {l}")));
    }
    let (rate0, delay0) = first.ok_or_else(|| bad(&tpath, 0, "-", "no links".into()))?;

    // Flows.
    let (fv, _) = need("FLOW_FILE")?;
    let (fpath, ftext) = read_named(dir, &cfg_path, "FLOW_FILE", fv)?;
    let mut flines = ftext.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, fhead) = flines.next().ok_or_else(|| bad(&fpath, 1, "-", "empty".into()))?;
    let nf: usize = fhead
        .trim()
        .parse()
        .map_err(|_| bad(&fpath, 1, "-", format!("{fhead:?}: expected the flow count")))?;
    let host_of =
        |id: usize| -> Option<usize> { (!is_switch.get(id)?).then(|| name[id][1..].parse().ok()).flatten() };
    let mut raw = Vec::with_capacity(nf);
    for (i, line) in flines {
        let f: Vec<&str> = line.split_whitespace().collect();
        let at = |reason: String| bad(&fpath, i + 1, "-", reason);
        let [src, dst, _prio, _dport, size, start] = f[..] else {
            return Err(at(format!("{line:?}: expected \"src dst priority dport size start_s\"")));
        };
        let host = |x: &str| {
            x.parse::<usize>().ok().and_then(host_of).ok_or_else(|| at(format!("{x:?} is not a host")))
        };
        let size: u64 = size.parse().map_err(|_| at(format!("{size:?} is not a size")))?;
        let start: f64 = start
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| at(format!("{start:?} is not a time")))?;
        raw.push((host(src)?, host(dst)?, size, (start * 1e9).round() as u64));
    }
    if raw.len() != nf {
        return Err(bad(&fpath, 1, "-", format!("{} flows, the first line says {nf}", raw.len())));
    }
    let t0 = raw.iter().map(|f| f.3).min().unwrap_or(0);

    // Run time, and the parameters.
    let stop_ns = match get("SIMULATOR_STOP_TIME") {
        Some((v, l)) => (num("SIMULATOR_STOP_TIME", v, l)? * 1e9).round().max(0.0) as u64,
        None => raw.iter().map(|f| f.3).max().unwrap_or(0) + 10_000_000,
    };
    let duration_us = (stop_ns.saturating_sub(t0) / 1000).max(1);
    let mut lab = format!("[lab]\nduration_us = {duration_us}\ncc = \"{cc}\"\n");
    if let Some((v, l)) = get("PACKET_PAYLOAD_SIZE") {
        let _ = writeln!(lab, "mtu = {}", num("PACKET_PAYLOAD_SIZE", v, l)? as u64);
    }
    if let Some((v, l)) = get("ACK_HIGH_PRIO") {
        let _ = writeln!(lab, "ack_high_priority = {}", num("ACK_HIGH_PRIO", v, l)? != 0.0);
    }
    let _ = write!(
        lab,
        "[topology]\nkind = \"explicit\"\nhosts = {hosts}\nswitches = {switches}\nrate = \"{rate0}\"\ndelay_ns = {delay0}\n"
    );
    if let Some((v, l)) = get("BUFFER_SIZE") {
        let _ = writeln!(lab, "buffer_bytes = {}", (num("BUFFER_SIZE", v, l)? * 1024.0 * 1024.0) as u64);
    }
    lab.push_str(&links);
    let rate_key = |k: &str| -> Result<Option<String>, LabError> {
        match get(k) {
            Some((v, l)) => {
                rate(v).map(Some).ok_or_else(|| bad(&cfg_path, l, k, format!("{v:?} is not a rate")))
            }
            None => Ok(None),
        }
    };
    if cc == "hpcc" {
        lab.push_str("[hpcc]\n");
        if let Some((v, l)) = get("U_TARGET") {
            let _ = writeln!(lab, "eta = {}", num("U_TARGET", v, l)?);
        }
        if let Some((v, l)) = get("MI_THRESH") {
            let _ = writeln!(lab, "max_stage = {}", num("MI_THRESH", v, l)? as u32);
        }
        if let Some(r) = rate_key("RATE_AI")? {
            let _ = writeln!(lab, "ai_rate = \"{r}\"");
        }
    } else {
        lab.push_str("[dcqcn]\n");
        for (k, key) in [("RATE_AI", "ai_rate"), ("RATE_HAI", "hai_rate"), ("MIN_RATE", "min_rate")] {
            if let Some(r) = rate_key(k)? {
                let _ = writeln!(lab, "{key} = \"{r}\"");
            }
        }
    }
    for (src, dst, size, start) in &raw {
        let _ = write!(lab, "[[flow]]\nsrc = {src}\ndst = {dst}\nsize = {size}\nstart_ns = {}\n", start - t0);
    }
    let cfg = LabConfig::parse(&cfg_path, &lab)?;
    Ok(Imported { lab: cfg, text: lab, ignored })
}

/// `flows` in the simulator's flow-file format (`traffic_gen.py`'s output: the count, then
/// `src dst 3 100 size start_s`, starting at `start_s`), host `h` being node `h` (the
/// simulator's topologies number hosts first).
pub fn flow_file(flows: &[FlowSpec], start_s: f64) -> String {
    let mut s = format!("{}\n", flows.len());
    for f in flows {
        let _ = writeln!(s, "{} {} 3 100 {} {:.9}", f.src, f.dst, f.size, start_s + f.start_ns as f64 / 1e9);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("softfabric-ns3-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn rates_and_delays_as_the_simulator_writes_them() {
        assert_eq!(rate("100Gbps").as_deref(), Some("100000M"));
        assert_eq!(rate("50Mb/s").as_deref(), Some("50M"));
        assert_eq!(rate("400Gbps").as_deref(), Some("400000M"));
        assert_eq!(rate("fast"), None);
        assert_eq!(delay_ns("0.001ms"), Some(1000));
        assert_eq!(delay_ns("1us"), Some(1000));
        assert_eq!(delay_ns("-1ms"), None);
    }

    #[test]
    fn a_one_switch_topology_and_its_flows_become_a_lab() {
        let d = dir("ok");
        // Node 2 is the switch (ids need not put switches last); three hosts.
        write(
            &d,
            "topology.txt",
            "4 1 3\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n3 2 100Gbps 0.001ms 0\n",
        );
        write(&d, "flow.txt", "2\n0 3 3 100 20000 2.000001\n1 3 3 100 30000 2.000000\n");
        write(
            &d,
            "config.txt",
            "TOPOLOGY_FILE mix/topology.txt\nFLOW_FILE mix/flow.txt\nCC_MODE 3\nU_TARGET 0.95\nMI_THRESH 0\n\
             RATE_AI 50Mb/s\nBUFFER_SIZE 32\nACK_HIGH_PRIO 0\nPACKET_PAYLOAD_SIZE 1000\nSIMULATOR_STOP_TIME 2.01\n\
             HAS_WIN 1\nKMAX_MAP 3 25000000000 400 50000000000 800 100000000000 1600\n",
        );
        let i = import(&d).unwrap();
        assert_eq!(i.lab.hosts(), 3);
        assert_eq!(i.lab.topology.switches, 1);
        assert_eq!(i.lab.buffer_bytes, 32 << 20);
        assert_eq!(i.lab.hpcc.eta, 0.95);
        assert!(!i.lab.ack_high_priority());
        // Node 3 is host 2; times shifted to the first flow.
        let mut f: Vec<_> = i.lab.flows.iter().map(|f| (f.src, f.dst, f.size, f.start_ns)).collect();
        f.sort_unstable();
        assert_eq!(f, [(0, 2, 20000, 1000), (1, 2, 30000, 0)]);
        assert_eq!(i.lab.duration_ns, 10_000_000);
        assert!(
            i.ignored.iter().any(|(k, _)| k == "HAS_WIN") && i.ignored.iter().any(|(k, _)| k == "KMAX_MAP")
        );
        // And back: the lab's flows in the flow-file format.
        let text = flow_file(&i.lab.flows, 2.0);
        assert!(text.starts_with("2\n") && text.contains(" 3 100 30000 2.000000000"), "{text}");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn what_the_lab_cannot_run_is_refused_naming_file_and_line() {
        let d = dir("bad");
        write(&d, "topology.txt", "3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0.01\n");
        write(&d, "flow.txt", "1\n0 1 3 100 20000 2.0\n");
        write(&d, "config.txt", "TOPOLOGY_FILE topology.txt\nFLOW_FILE flow.txt\nCC_MODE 3\n");
        let e = import(&d).unwrap_err();
        assert!(
            e.file.ends_with("topology.txt") && e.line == 4 && e.reason.contains("no random loss"),
            "{e}"
        );
        write(&d, "topology.txt", "3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n");
        write(&d, "config.txt", "TOPOLOGY_FILE topology.txt\nFLOW_FILE flow.txt\nCC_MODE 7\n");
        let e = import(&d).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (3, "CC_MODE"), "{e}");
        write(&d, "config.txt", "TOPOLOGY_FILE topology.txt\nFLOW_FILE flow.txt\nCC_MODE 1\n");
        write(&d, "flow.txt", "1\n0 2 3 100 20000 2.0\n");
        let e = import(&d).unwrap_err();
        assert!(e.file.ends_with("flow.txt") && e.reason.contains("not a host"), "{e}");
        std::fs::remove_dir_all(&d).ok();
    }
}
