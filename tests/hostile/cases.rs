//! The shipped files the generator starts from, what kind each is, and the commands a mutant of
//! each kind goes through: its `check`, then (when `check` accepts it) a short bounded run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use crate::exec::Step;
use crate::mutate::{self, Mutation, Paths};

/// What a shipped file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A switch configuration (`dataplane check/run`).
    Switch,
    /// A collector configuration (`collector check/serve`).
    Collector,
    /// A lab file (`softfabric lab check/run`).
    Lab,
    /// A Hawkeye scenario (`softfabric hawkeye trace`).
    Scenario,
    /// A DAIET WordCount lab (`softfabric daiet lab`).
    DaietLab,
}

/// A shipped file.
#[derive(Debug, Clone)]
pub struct Shipped {
    /// Its kind.
    pub kind: FileKind,
    /// Its path relative to the repository (and to the work copy).
    pub rel: PathBuf,
    /// Its parsed text.
    pub doc: Table,
}

/// The TOML files the generator walks: every switch, collector, lab, scenario and DAIET lab
/// file of `config/`, and the switch files the tests ship (P4 golden configs, the replay).
pub fn shipped(repo: &Path) -> Vec<Shipped> {
    let mut files = Vec::new();
    for dir in ["config", "dataplane/tests/p4", "dataplane/tests/data/replay"] {
        collect(&repo.join(dir), &mut files);
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("shipped file");
        let doc: Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let rel = f.strip_prefix(repo).expect("under the repo").to_path_buf();
        let kind = if doc.contains_key("program") {
            FileKind::Switch
        } else if doc.contains_key("collector") {
            FileKind::Collector
        } else if doc.contains_key("scenario") {
            FileKind::Scenario
        } else if is_daiet(&doc) {
            FileKind::DaietLab
        } else if doc.contains_key("lab") || doc.contains_key("topology") {
            FileKind::Lab
        } else {
            panic!("{}: a shipped TOML file the generator does not know how to run", rel.display());
        };
        out.push(Shipped { kind, rel, doc });
    }
    out
}

fn is_daiet(doc: &Table) -> bool {
    doc.contains_key("corpus") && (doc.contains_key("mappers") || doc.contains_key("reducers"))
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
}

/// Copy `repo`'s input folders into `work`, so mutants sit beside the files their originals
/// name by relative path.
pub fn copy_inputs(repo: &Path, work: &Path) {
    for dir in ["config", "dataplane/tests/p4", "dataplane/tests/data/replay"] {
        copy_dir(&repo.join(dir), &work.join(dir));
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("work dir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            if !p.ends_with("tna") && !p.ends_with("v1model") {
                copy_dir(&p, &t);
            }
        } else {
            std::fs::copy(&p, &t).expect("copy");
        }
    }
}

/// The binaries under test.
#[derive(Debug, Clone)]
pub struct Bins {
    pub softfabric: PathBuf,
    pub dataplane: PathBuf,
    pub collector: PathBuf,
    pub nic_agent: PathBuf,
}

impl Bins {
    /// This build's binaries (`cargo test --workspace` builds every one).
    pub fn find() -> Self {
        let sf = PathBuf::from(env!("CARGO_BIN_EXE_softfabric"));
        let other = |n: &str| {
            let p = sf.with_file_name(n);
            assert!(p.exists(), "{} not built: run `cargo test --workspace`", p.display());
            p
        };
        Self {
            dataplane: other("dataplane"),
            collector: other("collector"),
            nic_agent: other("nic-agent"),
            softfabric: sf,
        }
    }
}

/// One mutant: the file it came from, the mutation, its text, and its place in the work copy.
#[derive(Debug, Clone)]
pub struct Case {
    pub kind: FileKind,
    pub rel: PathBuf,
    pub mutation: Mutation,
    pub doc: std::sync::Arc<Table>,
}

impl Case {
    /// Every case of `files`.
    pub fn all(files: &[Shipped], paths: &Paths) -> Vec<Case> {
        let mut out = Vec::new();
        for f in files {
            let doc = std::sync::Arc::new(f.doc.clone());
            for m in mutate::mutations(&f.doc, paths) {
                out.push(Case { kind: f.kind, rel: f.rel.clone(), mutation: m, doc: doc.clone() });
            }
        }
        out
    }

    /// The steps this mutant goes through, written into `dir` (beside its original in the
    /// work copy, under a name of its own) with scratch space `scratch`. The first step is the
    /// check; the rest run only if it accepted the file.
    pub fn steps(&self, bins: &Bins, work: &Path, id: usize, scratch: &Path) -> Option<Vec<Step>> {
        let text = mutate::apply(&self.doc, &self.mutation)?;
        let dir = work.join(self.rel.parent().unwrap_or(Path::new("")));
        let stem = self.rel.file_stem().and_then(|s| s.to_str()).unwrap_or("f");
        let file = dir.join(format!("{stem}.hostile{id}.toml"));
        std::fs::write(&file, &text).ok()?;
        let key = self.mutation.path.first().map(|_| mutate::show(&self.mutation.path)).unwrap_or_default();
        let touched =
            |k: &str| key == k || key.starts_with(&format!("{k}.")) || key.starts_with(&format!("{k}["));
        let f = file.clone();
        Some(match self.kind {
            FileKind::Switch => {
                let run = write_run(&dir, stem, id, runnable_switch(&text, scratch, &touched));
                let mut s = vec![
                    Step::new(&bins.dataplane, [arg("check"), arg("--config"), f.clone().into()], &dir)
                        .within(Duration::from_secs(20)),
                ];
                s.push(
                    Step::new(&bins.dataplane, [arg("resources"), arg("--config"), f.clone().into()], &dir)
                        .within(Duration::from_secs(20)),
                );
                s.push(
                    Step::new(
                        &bins.dataplane,
                        [
                            arg("p4"),
                            arg("export"),
                            arg("--config"),
                            f.clone().into(),
                            arg("--target"),
                            arg("v1model"),
                            arg("--out"),
                            scratch.join("p4").into(),
                        ],
                        &dir,
                    )
                    .within(Duration::from_secs(20))
                    .may_refuse(),
                );
                if let Some(r) = run {
                    s.push(
                        Step::new(&bins.dataplane, [arg("run"), arg("--config"), r.into()], &dir)
                            .daemon(Duration::from_millis(600)),
                    );
                }
                s
            }
            FileKind::Collector => {
                let run = write_run(&dir, stem, id, runnable_collector(&text, id, &touched));
                let mut s = vec![
                    Step::new(&bins.collector, [arg("check"), arg("--config"), f.clone().into()], &dir)
                        .within(Duration::from_secs(20)),
                ];
                if let Some(r) = run {
                    s.push(
                        Step::new(
                            &bins.collector,
                            [
                                arg("serve"),
                                arg("--config"),
                                r.into(),
                                arg("--http"),
                                arg("127.0.0.1:0"),
                                arg("--duration"),
                                arg("0.4"),
                            ],
                            &dir,
                        )
                        .within(Duration::from_secs(20)),
                    );
                }
                s
            }
            FileKind::Lab => {
                let run = write_run(&dir, stem, id, short_lab(&text, &touched));
                let mut s = vec![
                    Step::new(&bins.softfabric, [arg("lab"), arg("check"), f.clone().into()], &dir)
                        .within(Duration::from_secs(20)),
                ];
                if let Some(r) = run {
                    s.push(
                        Step::new(
                            &bins.softfabric,
                            [
                                arg("lab"),
                                arg("run"),
                                r.into(),
                                arg("--out"),
                                scratch.join("out").into(),
                                arg("--quiet"),
                            ],
                            &dir,
                        )
                        // A long simulation is no hang: it is asked to stop, and must, results kept (exit 1).
                        .daemon(Duration::from_secs(60))
                        .also_ok(&[1]),
                    );
                }
                s
            }
            FileKind::Scenario => vec![
                Step::new(&bins.softfabric, [arg("hawkeye"), arg("trace"), f.clone().into(), arg("0")], &dir)
                    .within(Duration::from_secs(20)),
            ],
            FileKind::DaietLab => vec![
                Step::new(&bins.softfabric, [arg("daiet"), arg("lab"), f.clone().into()], &dir)
                    .within(Duration::from_secs(90)),
            ],
        })
    }
}

/// `text` (a runnable variant, if any) written beside the mutant as `STEM.hostileID.run.toml`.
fn write_run(dir: &Path, stem: &str, id: usize, text: Option<String>) -> Option<PathBuf> {
    let p = dir.join(format!("{stem}.hostile{id}.run.toml"));
    std::fs::write(&p, text?).ok().map(|()| p)
}

fn arg(s: &str) -> std::ffi::OsString {
    s.into()
}

/// A switch file made runnable here: ports on interfaces, DPDK devices or the host's UDP
/// stack become in-memory rings, the control socket moves into `scratch` — except where the
/// mutation is (`touched`), which is kept as it is.
fn runnable_switch(text: &str, scratch: &Path, touched: &dyn Fn(&str) -> bool) -> Option<String> {
    let mut doc: Table = toml::from_str(text).ok()?;
    if let Some(Value::Array(ports)) = doc.get_mut("port") {
        for (i, p) in ports.iter_mut().enumerate() {
            let Value::Table(p) = p else { continue };
            let backend = p.get("backend").and_then(Value::as_str).unwrap_or("");
            if touched(&format!("port[{i}]"))
                && !touched(&format!("port[{i}].mac"))
                && !touched(&format!("port[{i}].ipv4"))
            {
                // The mutation is about this port's backend: leave it.
                if matches!(backend, "af_packet" | "dpdk" | "udp") {
                    return None;
                }
                continue;
            }
            if matches!(backend, "af_packet" | "dpdk" | "udp") {
                p.insert("backend".into(), Value::String("ring".into()));
                for k in ["iface", "device", "bind", "udp_ports"] {
                    p.remove(k);
                }
            }
        }
    }
    if !touched("dpdk") {
        doc.remove("dpdk");
    }
    if let Some(Value::Table(rt)) = doc.get_mut("runtime")
        && let Some(Value::String(sock)) = rt.get("control_socket")
    {
        // The case's own socket: its scratch directory's, or, where the path is the mutation,
        // that path under the scratch directory if relative (cases run side by side in one
        // directory, and two of them must not share a socket).
        let own = if !touched("runtime.control_socket") {
            scratch.join("ctl.sock")
        } else if Path::new(sock).is_relative() && !sock.is_empty() {
            scratch.join(sock)
        } else {
            PathBuf::from(sock)
        };
        rt.insert("control_socket".into(), Value::String(own.display().to_string()));
    }
    toml::to_string(&doc).ok()
}

/// A collector file made runnable side by side with others: its address a loopback one of
/// its own.
fn runnable_collector(text: &str, id: usize, touched: &dyn Fn(&str) -> bool) -> Option<String> {
    let mut doc: Table = toml::from_str(text).ok()?;
    if !touched("collector.ip")
        && !touched("collector.interface")
        && !touched("collector.device")
        && let Some(Value::Table(c)) = doc.get_mut("collector")
    {
        if c.contains_key("interface") || c.contains_key("device") {
            return None;
        }
        c.insert(
            "ip".into(),
            Value::String(format!("127.{}.{}.{}", 60 + id / 65_000 % 60, id / 250 % 250, 1 + id % 250)),
        );
    }
    toml::to_string(&doc).ok()
}

/// A lab file cut to 20 µs of virtual time with no run to completion, unless the mutation is
/// about those keys.
fn short_lab(text: &str, touched: &dyn Fn(&str) -> bool) -> Option<String> {
    let mut doc: Table = toml::from_str(text).ok()?;
    if let Some(Value::Table(lab)) = doc.get_mut("lab") {
        if !touched("lab.duration_us") {
            lab.insert("duration_us".into(), Value::Integer(20));
        }
        if !touched("lab.run_to_completion_us") {
            lab.remove("run_to_completion_us");
        }
    }
    toml::to_string(&doc).ok()
}
