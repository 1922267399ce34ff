//! The HPCC simulator's own inputs as a lab: its `config.txt`, the topology file and the flow
//! file it names (`alibaba-edu/High-Precision-Congestion-Control`, `simulation/mix/`), turned
//! into the lab file they describe and checked as one (`softfabric lab run --ns3 DIR`).
//!
//! The files are read as the simulator reads them: the counts on their first lines say how many
//! entries follow, and only that many are read — the reference's own files carry more lines
//! after them (help text, links and flows the counts leave out). Every count is bounded before
//! anything is allocated, and the whole is checked before the run: unknown nodes, links from a
//! node to itself, flows to their own source or from a switch, a stop time before the first
//! flow; each error names the file and its line (or the `config.txt` key).
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
//! * **config.txt**: `KEY value…` lines; a key given twice takes its last value, as the
//!   simulator's sequential read does.
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
    (1.0..=1e15).contains(&bps).then(|| format!("{}M", (bps / 1e6).round().max(1.0)))
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

/// The most nodes a topology file may declare (hosts and switches).
pub const MAX_NODES: usize = 1 << 16;
/// The most links a topology file may declare.
pub const MAX_LINKS: usize = 1 << 20;

/// Read a file the configuration names: as written, else relative to `dir`, else its file name
/// in `dir` (the reference's configs name `mix/…` relative to its `simulation/` directory).
fn read_named(
    dir: &Path,
    cfg: &Path,
    key: &str,
    v: &str,
    line: usize,
) -> Result<(PathBuf, String), LabError> {
    let p = Path::new(v);
    let tries = [p.to_path_buf(), dir.join(p), dir.join(p.file_name().unwrap_or_default())];
    let mut why = String::new();
    for t in &tries {
        match ports::input::read_text(t, ports::input::MAX_TEXT_BYTES) {
            Ok(s) => return Ok((t.clone(), s)),
            Err(ports::input::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => why = format!(": {e}"),
        }
    }
    Err(bad(
        cfg,
        line,
        key,
        format!("cannot read {v:?} (tried as written, in {} and by its name there){why}", dir.display()),
    ))
}

/// The lines of a data file as the simulator reads them: the declared ones, in order, with
/// their 1-based line numbers; empty lines skipped.
struct Lines<'a> {
    path: &'a Path,
    it: std::iter::Enumerate<std::str::Lines<'a>>,
}

impl<'a> Lines<'a> {
    fn new(path: &'a Path, text: &'a str) -> Self {
        Self { path, it: text.lines().enumerate() }
    }

    /// The next declared line, or an error saying what was missing.
    fn next(&mut self, what: &str) -> Result<(usize, Vec<&'a str>), LabError> {
        match self.it.by_ref().find(|(_, l)| !l.trim().is_empty()) {
            Some((i, l)) => Ok((i + 1, l.split_whitespace().collect())),
            None => Err(bad(self.path, 0, "-", format!("the file ends before {what}"))),
        }
    }
}

/// Import the simulator's inputs in `dir` (its `config.txt` and the files it names).
pub fn import(dir: &Path) -> Result<Imported, LabError> {
    let cfg_path = dir.join("config.txt");
    let text = ports::input::read_text(&cfg_path, ports::input::MAX_TEXT_BYTES)
        .map_err(|e| bad(&cfg_path, 0, "-", e.to_string()))?;
    // Every key with its value and line; a key given twice keeps its last value.
    let mut keys: Vec<(String, String, usize)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let mut f = l.split_whitespace();
        if let Some(k) = f.next().filter(|k| !k.starts_with('#')) {
            let v = f.collect::<Vec<_>>().join(" ");
            keys.retain(|(n, _, _)| n != k);
            keys.push((k.to_string(), v, i + 1));
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
    for (k, v, l) in &keys {
        if used.contains(&k.as_str()) && v.is_empty() {
            return Err(bad(&cfg_path, *l, k, "no value".into()));
        }
    }
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

    // Topology: N S L, the S switch ids, then L links.
    let (tv, tl) = need("TOPOLOGY_FILE")?;
    let (tpath, ttext) = read_named(dir, &cfg_path, "TOPOLOGY_FILE", tv, tl)?;
    let mut lines = Lines::new(&tpath, &ttext);
    let (hl, head) = lines.next("its first line, \"nodes switches links\"")?;
    let counts: Vec<usize> = head.iter().filter_map(|x| x.parse().ok()).collect();
    let [n, s, l] = counts[..] else {
        return Err(bad(&tpath, hl, "-", format!("{:?}: expected \"nodes switches links\"", head.join(" "))));
    };
    if !(2..=MAX_NODES).contains(&n) || s == 0 || s >= n || !(1..=MAX_LINKS).contains(&l) {
        return Err(bad(
            &tpath,
            hl,
            "-",
            format!(
                "{n} nodes, {s} switches, {l} links: expected 2 to {MAX_NODES} nodes, 1 switch or more and at least one host, 1 to {MAX_LINKS} links"
            ),
        ));
    }
    let (li, ids) = lines.next("its second line, the switch ids")?;
    let mut is_switch = vec![false; n];
    if ids.len() != s {
        return Err(bad(&tpath, li, "-", format!("{} switch ids, the first line says {s}", ids.len())));
    }
    for id in ids {
        match id.parse::<usize>().ok().filter(|&x| x < n) {
            Some(x) if is_switch[x] => {
                return Err(bad(&tpath, li, "-", format!("switch {x} is listed twice")));
            }
            Some(x) => is_switch[x] = true,
            None => return Err(bad(&tpath, li, "-", format!("{id:?} is not a node id below {n}"))),
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
    // Per host, the line of its link (a host has one: its NIC port); per link, its line.
    let mut host_link: Vec<usize> = vec![0; n];
    let mut link_lines = Vec::with_capacity(l);
    for k in 0..l {
        let (i, f) = lines.next(&format!("link {} of the {l} the first line declares", k + 1))?;
        link_lines.push(i);
        let at = |reason: String| bad(&tpath, i, "-", reason);
        let [a, b, r, d, e] = f[..] else {
            return Err(at(format!("{:?}: expected \"a b rate delay error\"", f.join(" "))));
        };
        let node = |x: &str| {
            x.parse::<usize>()
                .ok()
                .filter(|&v| v < n)
                .ok_or_else(|| at(format!("{x:?} is not a node id below {n}")))
        };
        let (a, b) = (node(a)?, node(b)?);
        if a == b {
            return Err(at(format!("a link from node {a} to itself")));
        }
        if !is_switch[a] && !is_switch[b] {
            return Err(at(format!("a link between hosts {a} and {b}: a host's one link goes to a switch")));
        }
        for h in [a, b].into_iter().filter(|&h| !is_switch[h]) {
            if host_link[h] != 0 {
                return Err(at(format!(
                    "host {h} already has its link (line {}): a host has one",
                    host_link[h]
                )));
            }
            host_link[h] = i;
        }
        let r = rate(r).ok_or_else(|| at(format!("{r:?} is not a rate")))?;
        let d = delay_ns(d)
            .filter(|&d| d <= super::config::MAX_DELAY_NS)
            .ok_or_else(|| at(format!("{d:?} is not a delay of at most 1 s")))?;
        if e.parse::<f64>() != Ok(0.0) {
            return Err(at(format!("error rate {e}: the lab has no random loss on links")));
        }
        first.get_or_insert((r.clone(), d));
        let _ = write!(
            links,
            "[[link]]\na = \"{}\"\nb = \"{}\"\nrate = \"{r}\"\ndelay_ns = {d}\n",
            name[a], name[b]
        );
    }
    let (rate0, delay0) = first.ok_or_else(|| bad(&tpath, 0, "-", "no links".into()))?;

    // Flows: a count, then that many flows.
    let (fv, fl) = need("FLOW_FILE")?;
    let (fpath, ftext) = read_named(dir, &cfg_path, "FLOW_FILE", fv, fl)?;
    let mut flines = Lines::new(&fpath, &ftext);
    let (fh, fhead) = flines.next("its first line, the flow count")?;
    let nf: usize = fhead
        .first()
        .and_then(|x| x.parse().ok())
        .filter(|&c| fhead.len() == 1 && (1..=super::config::MAX_FLOWS).contains(&c))
        .ok_or_else(|| {
            bad(
                &fpath,
                fh,
                "-",
                format!("{:?}: expected the flow count, 1 to {}", fhead.join(" "), super::config::MAX_FLOWS),
            )
        })?;
    let host_of =
        |id: usize| -> Option<usize> { (!is_switch.get(id)?).then(|| name[id][1..].parse().ok()).flatten() };
    let mut raw = Vec::with_capacity(nf);
    for k in 0..nf {
        let (i, f) = flines.next(&format!("flow {} of the {nf} the first line declares", k + 1))?;
        let at = |reason: String| bad(&fpath, i, "-", reason);
        let [src, dst, _prio, _dport, size, start] = f[..] else {
            return Err(at(format!("{:?}: expected \"src dst priority dport size start_s\"", f.join(" "))));
        };
        let host = |x: &str| {
            x.parse::<usize>().ok().and_then(host_of).ok_or_else(|| {
                at(format!(
                    "{x:?} is not a host (the hosts are the nodes {} does not list as switches)",
                    tpath.display()
                ))
            })
        };
        let (src, dst) = (host(src)?, host(dst)?);
        if src == dst {
            return Err(at(format!("a flow from host {src} to itself")));
        }
        let size: u64 =
            size.parse().ok().filter(|&z| z > 0 && z <= super::config::MAX_FLOW_BYTES).ok_or_else(|| {
                at(format!("{size:?} is not a size of 1 to {} bytes", super::config::MAX_FLOW_BYTES))
            })?;
        let start_ns = start
            .parse::<f64>()
            .ok()
            .map(|x| x * 1e9)
            .filter(|x| x.is_finite() && *x >= 0.0 && *x <= 1e15)
            .ok_or_else(|| at(format!("{start:?} is not a start time in s")))?;
        raw.push((src, dst, size, start_ns.round() as u64, i));
    }
    let (t0, first_line) = raw.iter().map(|f| (f.3, f.4)).min().unwrap_or((0, 0));

    // Run time: from the first flow to the stop time, within what a lab runs.
    let stop_ns = match get("SIMULATOR_STOP_TIME") {
        Some((v, l)) => {
            let t = num("SIMULATOR_STOP_TIME", v, l)?;
            let ns = t * 1e9;
            if !(0.0..=1e15).contains(&ns) || (ns.round() as u64) <= t0 {
                return Err(bad(
                    &cfg_path,
                    l,
                    "SIMULATOR_STOP_TIME",
                    format!(
                        "{v} s: not after the first flow's start, {} s ({}:{first_line}): nothing would run",
                        t0 as f64 / 1e9,
                        fpath.display()
                    ),
                ));
            }
            ns.round() as u64
        }
        None => raw.iter().map(|f| f.3).max().unwrap_or(0) + 10_000_000,
    };
    if stop_ns - t0 > super::config::MAX_TIME_NS {
        let l = get("SIMULATOR_STOP_TIME").map_or(0, |(_, l)| l);
        return Err(bad(
            &cfg_path,
            l,
            "SIMULATOR_STOP_TIME",
            format!(
                "{} s after the first flow: at most {} s of virtual time",
                (stop_ns - t0) as f64 / 1e9,
                super::config::MAX_TIME_NS / 1_000_000_000
            ),
        ));
    }
    let duration_us = ((stop_ns - t0) / 1000).max(1);
    // Queues sampled every µs, or less often on a long run: at most MAX_SAMPLES in all (each
    // link has at most two switch ports).
    let sample_ns = (duration_us * 1000).saturating_mul(2 * l as u64) / super::config::MAX_SAMPLES + 1;
    let sample_ns = sample_ns.max(1000);
    let mut lab = format!("[lab]\nduration_us = {duration_us}\ncc = \"{cc}\"\nsample_ns = {sample_ns}\n");
    if let Some((v, l)) = get("PACKET_PAYLOAD_SIZE") {
        let mtu = num("PACKET_PAYLOAD_SIZE", v, l)?;
        if !(64.0..=1400.0).contains(&mtu) {
            return Err(bad(
                &cfg_path,
                l,
                "PACKET_PAYLOAD_SIZE",
                format!("{v}: the lab takes 64 to 1400 bytes"),
            ));
        }
        let _ = writeln!(lab, "mtu = {}", mtu as u64);
    }
    if let Some((v, l)) = get("ACK_HIGH_PRIO") {
        let _ = writeln!(lab, "ack_high_priority = {}", num("ACK_HIGH_PRIO", v, l)? != 0.0);
    }
    let _ = write!(
        lab,
        "[topology]\nkind = \"explicit\"\nhosts = {hosts}\nswitches = {switches}\nrate = \"{rate0}\"\ndelay_ns = {delay0}\n"
    );
    if let Some((v, l)) = get("BUFFER_SIZE") {
        let mb = num("BUFFER_SIZE", v, l)?;
        if !(0.0625..=1e6).contains(&mb) {
            return Err(bad(&cfg_path, l, "BUFFER_SIZE", format!("{v} MB: expected 0.0625 to 10^6")));
        }
        let _ = writeln!(lab, "buffer_bytes = {}", (mb * 1024.0 * 1024.0) as u64);
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
            let eta = num("U_TARGET", v, l)?;
            if !(eta > 0.0 && eta <= 1.0) {
                return Err(bad(&cfg_path, l, "U_TARGET", format!("{v}: in (0, 1]")));
            }
            let _ = writeln!(lab, "eta = {eta}");
        }
        if let Some((v, l)) = get("MI_THRESH") {
            let m = num("MI_THRESH", v, l)?;
            if !(0.0..=1000.0).contains(&m) || m.fract() != 0.0 {
                return Err(bad(
                    &cfg_path,
                    l,
                    "MI_THRESH",
                    format!("{v}: a whole number of stages, 0 to 1000"),
                ));
            }
            let _ = writeln!(lab, "max_stage = {}", m as u32);
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
    for (src, dst, size, start, _) in &raw {
        let _ = write!(lab, "[[flow]]\nsrc = {src}\ndst = {dst}\nsize = {size}\nstart_ns = {}\n", start - t0);
    }
    // What the lab itself refuses of it (a host with no link, a link between hosts …), said
    // of the lab these inputs make (written beside a run's results as lab.toml).
    let made = dir.join("lab.toml (made from config.txt and the files it names)");
    let cfg = LabConfig::parse(&made, &lab).map_err(|e| {
        // Said of the input it came from: the config.txt key, or the line of a link or flow.
        let flow_line = |k: usize| raw.get(k).map_or(0, |f| f.4);
        let index = |key: &str, table: &str| {
            key.strip_prefix(table)?.strip_prefix('[')?.split(']').next()?.parse::<usize>().ok()
        };
        let key_line = |k: &str| get(k).map_or(0, |(_, l)| l);
        let (file, line, key) = if let Some(k) = index(&e.key, "link") {
            (tpath.clone(), link_lines.get(k).copied().unwrap_or(0), "-".to_string())
        } else if let Some(k) = index(&e.key, "flow") {
            (fpath.clone(), flow_line(k), "-".to_string())
        } else {
            let from = match e.key.as_str() {
                "lab.mtu" => "PACKET_PAYLOAD_SIZE",
                k if k.starts_with("lab.") => "SIMULATOR_STOP_TIME",
                "topology.buffer_bytes" | "switches.sections" => "BUFFER_SIZE",
                "hpcc.eta" => "U_TARGET",
                "hpcc.max_stage" => "MI_THRESH",
                "hpcc.ai_rate" | "dcqcn.ai_rate" => "RATE_AI",
                "dcqcn.hai_rate" => "RATE_HAI",
                "dcqcn.min_rate" => "MIN_RATE",
                _ => "",
            };
            if from.is_empty() {
                (tpath.clone(), 0, "-".to_string())
            } else {
                (cfg_path.clone(), key_line(from), from.to_string())
            }
        };
        LabError {
            file,
            line,
            key,
            reason: format!("{} (in the lab these inputs make, at {})", e.reason, e.key),
        }
    })?;
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

    #[test]
    fn only_the_declared_lines_are_read_and_the_whole_is_checked() {
        let d = dir("declared");
        // Two links declared, then a link to a node that does not exist and help text; one flow
        // declared, then a flow from a host to itself and help text — as the reference ships.
        write(
            &d,
            "topology.txt",
            "3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n0 9 1Gbps 1ms 0\n\nFirst line: total node #, switch node #, link #\n",
        );
        write(&d, "flow.txt", "1\n0 1 3 100 20000 2.0\n1 1 3 100 1 2\n\nFirst line: # of flows\n");
        write(
            &d,
            "config.txt",
            "TOPOLOGY_FILE topology.txt\nFLOW_FILE flow.txt\nCC_MODE 3\nSIMULATOR_STOP_TIME 2.001\n",
        );
        let i = import(&d).unwrap();
        assert_eq!((i.lab.topology.links.len(), i.lab.flows.len()), (2, 1));
        // A stop time before the first flow runs nothing: refused, naming the key.
        write(
            &d,
            "config.txt",
            "TOPOLOGY_FILE topology.txt\nFLOW_FILE flow.txt\nCC_MODE 3\nSIMULATOR_STOP_TIME 1.5\n",
        );
        let e = import(&d).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("SIMULATOR_STOP_TIME", 4), "{e}");
        // A key given twice takes its last value, as the simulator's sequential read does.
        write(
            &d,
            "config.txt",
            "TOPOLOGY_FILE topology.txt\nFLOW_FILE flow.txt\nCC_MODE 7\nCC_MODE 1\nSIMULATOR_STOP_TIME 2.001\n",
        );
        assert!(import(&d).is_ok());
        // Declared counts the lines do not hold, a node linked to itself, counts past the
        // bounds: refused at the line, before anything is allocated for them.
        for (topo, want) in [
            ("3 1 3\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n", "ends before link 3"),
            ("3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 1 100Gbps 0.001ms 0\n", "to itself"),
            ("18446744073709551615 1 2\n2\n", "nodes"),
            ("3 1 99999999999\n2\n", "links"),
        ] {
            write(&d, "topology.txt", topo);
            let e = import(&d).unwrap_err();
            assert!(e.file.ends_with("topology.txt") && e.reason.contains(want), "{want}: {e}");
        }
        std::fs::remove_dir_all(&d).ok();
    }
}
