//! The NS-3 inputs (`config/ns3/`: the HPCC simulator's `config.txt`, topology and flow files):
//! every key of `config.txt` and every field of the first lines of the other two given boundary
//! values, lines removed and duplicated, then `lab check --ns3` and a short `lab run --ns3`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::Plan;
use crate::cases::Bins;
use crate::exec::Step;

/// Values for a numeric field.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "1e400",
    "nan",
    "inf",
    "-inf",
    "0.5",
    "x",
];

/// Values for a rate or delay field.
const UNITS: &[&str] =
    &["0Gbps", "-1Gbps", "1e30Gbps", "nanGbps", "0ms", "-1ms", "1e30ms", "nanms", "100", "1Tbps"];

/// One mutation of the three files: which file, its new text, what it is.
struct Change {
    file: &'static str,
    text: String,
    what: String,
    key: String,
}

fn lines(t: &str) -> Vec<String> {
    t.lines().map(str::to_string).collect()
}

fn join(l: &[String]) -> String {
    let mut s = l.join("\n");
    s.push('\n');
    s
}

/// Every change of `config.txt`: each key's value replaced, the key removed or given twice.
fn config_changes(text: &str) -> Vec<Change> {
    let l = lines(text);
    let mut out = Vec::new();
    for (i, line) in l.iter().enumerate() {
        let mut f = line.split_whitespace();
        let Some(key) = f.next() else { continue };
        let vals: Vec<&str> = f.collect();
        let key = key.to_string();
        let mut set = |v: &str, what: String| {
            let mut m = l.clone();
            m[i] = format!("{key} {v}");
            out.push(Change { file: "config.txt", text: join(&m), what, key: key.clone() });
        };
        let is_rate = vals.first().is_some_and(|v| v.ends_with("b/s"));
        if is_rate {
            for v in ["0Mb/s", "-1Mb/s", "1e30Gb/s", "nanMb/s", "50", "5Tb/s"] {
                set(v, format!("{key} {v}"));
            }
        } else {
            for v in NUMBERS {
                set(v, format!("{key} {v}"));
            }
        }
        set("", format!("{key} (no value)"));
        set(&"a".repeat(1 << 20), format!("{key} (1 MiB value)"));
        let mut m = l.clone();
        m.remove(i);
        out.push(Change {
            file: "config.txt",
            text: join(&m),
            what: format!("{key} removed"),
            key: key.clone(),
        });
        let mut m = l.clone();
        m.insert(i + 1, format!("{key} {}", if is_rate { "1Mb/s" } else { "7" }));
        out.push(Change {
            file: "config.txt",
            text: join(&m),
            what: format!("{key} twice"),
            key: key.clone(),
        });
    }
    out
}

/// Every change of a topology or flow file: each field of its first (declared) lines given
/// boundary values, a declared line removed or duplicated.
fn data_changes(file: &'static str, text: &str, declared_lines: usize) -> Vec<Change> {
    let l = lines(text);
    let mut out = Vec::new();
    for i in 0..declared_lines.min(l.len()) {
        let fields: Vec<&str> = l[i].split_whitespace().collect();
        for (j, f) in fields.iter().enumerate() {
            let unit = f.chars().any(|c| c.is_ascii_alphabetic())
                && f.chars().next().is_some_and(|c| c.is_ascii_digit());
            let vals: &[&str] = if unit { UNITS } else { NUMBERS };
            for v in vals {
                let mut g = fields.clone();
                g[j] = v;
                let mut m = l.clone();
                m[i] = g.join(" ");
                out.push(Change {
                    file,
                    text: join(&m),
                    what: format!("{file} line {} field {} := {v}", i + 1, j + 1),
                    key: file.to_string(),
                });
            }
        }
        let mut m = l.clone();
        m.remove(i);
        out.push(Change {
            file,
            text: join(&m),
            what: format!("{file} line {} removed", i + 1),
            key: file.to_string(),
        });
        let mut m = l.clone();
        m.insert(i, l[i].clone());
        out.push(Change {
            file,
            text: join(&m),
            what: format!("{file} line {} twice", i + 1),
            key: file.to_string(),
        });
    }
    out.push(Change { file, text: String::new(), what: format!("{file} empty"), key: file.to_string() });
    out
}

/// Every NS-3 case.
pub fn plans(repo: &Path, bins: &Arc<Bins>, _work: &Path) -> Vec<Plan> {
    let dir = repo.join("config/ns3");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("config/ns3");
    let (config, topology, flow) = (read("config.txt"), read("topology.txt"), read("flow.txt"));
    let topo_lines = 2 + topology
        .lines()
        .next()
        .and_then(|h| h.split_whitespace().nth(2)?.parse::<usize>().ok())
        .unwrap_or(0);
    let flow_lines = 1 + flow.lines().next().and_then(|h| h.trim().parse::<usize>().ok()).unwrap_or(0);
    let mut changes = config_changes(&config);
    changes.extend(data_changes("topology.txt", &topology, topo_lines));
    changes.extend(data_changes("flow.txt", &flow, flow_lines));
    let originals = Arc::new([config, topology, flow]);
    changes
        .into_iter()
        .map(|c| {
            let (bins, originals) = (bins.clone(), originals.clone());
            Plan {
                what: format!("config/ns3: {}", c.what),
                key: c.key.clone(),
                others: Default::default(),
                group: format!("config/ns3 {} {}", c.file, c.what.split(" := ").next().unwrap_or("")),
                steps: Box::new(move |_, s| {
                    let d = s.join("ns3");
                    let r = s.join("ns3-run");
                    for dir in [&d, &r] {
                        std::fs::create_dir_all(dir).ok()?;
                    }
                    for (name, orig) in
                        ["config.txt", "topology.txt", "flow.txt"].iter().zip(originals.iter())
                    {
                        let text = if *name == c.file { &c.text } else { orig };
                        std::fs::write(d.join(name), text).ok()?;
                        // The run: 20 µs after the first flow, unless the stop time is the change.
                        let run = if *name == "config.txt" && c.key != "SIMULATOR_STOP_TIME" {
                            text.lines()
                                .map(|l| {
                                    if l.starts_with("SIMULATOR_STOP_TIME") {
                                        "SIMULATOR_STOP_TIME 2.00002".to_string()
                                    } else {
                                        l.to_string()
                                    }
                                })
                                .collect::<Vec<_>>()
                                .join("\n")
                        } else {
                            text.clone()
                        };
                        std::fs::write(r.join(name), run).ok()?;
                    }
                    Some(vec![
                        Step::new(
                            &bins.softfabric,
                            ["lab".into(), "check".into(), "--ns3".into(), d.into_os_string()],
                            s,
                        )
                        .within(Duration::from_secs(20)),
                        Step::new(
                            &bins.softfabric,
                            [
                                "lab".into(),
                                "run".into(),
                                "--ns3".into(),
                                r.into_os_string(),
                                "--out".into(),
                                s.join("out").into_os_string(),
                                "--quiet".into(),
                            ],
                            s,
                        )
                        .daemon(Duration::from_secs(60))
                        .also_ok(&[1]),
                    ])
                }),
            }
        })
        .collect()
}
