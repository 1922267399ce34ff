//! Hostile input, by generator (issue 53): every key of every shipped switch, collector, lab,
//! scenario, DAIET and NS-3 file, and every flag of every binary, given boundary values by its
//! type; each mutant through `check` and, where accepted, a short bounded run, under a memory
//! limit. And every datagram socket a binary listens on, given random datagrams: each counted.
//!
//! A case passes when every command it ran exited 0 or 2 (or a documented outcome code) —
//! never a signal, a panic (101) or an abort, never past its time bound — and every exit 2
//! named the key (or flag) that was changed. A file `check` accepted must then run: a run that
//! refuses it (exit 2) means `check` let through what `run` cannot do.
//!
//! `SOFTFABRIC_HOSTILE_CASES=N` runs N cases of each test (default: a few thousand in all,
//! a few minutes on two cores; `all` for every one), `SOFTFABRIC_HOSTILE_SEED=S` picks which
//! (default 1), `SOFTFABRIC_HOSTILE_ONLY=substring` only the cases whose description has it,
//! `SOFTFABRIC_HOSTILE_VERBOSE=1` prints every command and how it ended.
//! docs/RELIABILITY.md lists the classes and their limits.

mod cases;
mod cli;
mod exec;
mod mutate;
mod ns3;
mod sockets;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use exec::{Outcome, Step};

/// How a case's steps are made: from its number (naming its files) and its scratch directory.
pub type Build = Box<dyn Fn(usize, &Path) -> Option<Vec<Step>> + Send + Sync>;

/// A case: a description, the key its errors must name, and how to build its steps.
pub struct Plan {
    /// What the case is, for the report.
    pub what: String,
    /// The word an exit-2 message must contain.
    pub key: String,
    /// The file's other keys: a message may name one of them instead (a contradiction between
    /// two keys is about both), counted apart.
    pub others: std::sync::Arc<Vec<String>>,
    /// The group it belongs to (file and key, or binary and flag): cases are taken round-robin
    /// over groups, so a sample covers every key.
    pub group: String,
    /// Build the steps (`id` names the case's files, `scratch` is its own directory).
    pub steps: Build,
}

/// What one case came to.
enum Verdict {
    /// Refused with exit 2 naming the key.
    Refused,
    /// Refused with exit 2 naming another key of the file (the other side of a contradiction).
    RefusedOther,
    /// Accepted, and every step after the check ended cleanly.
    Ran,
    /// Not built (the mutation did not apply).
    Skipped,
    /// A failure: which step, why, what it said.
    Failed(String),
}

fn judge(steps: &[Step], key: &str, others: &[String], scratch: &Path) -> Verdict {
    let verbose = std::env::var_os("SOFTFABRIC_HOSTILE_VERBOSE").is_some();
    for (i, step) in steps.iter().enumerate() {
        let o: Outcome = exec::run(step, scratch);
        if verbose {
            println!("  `{}` -> {:?} {:?} in {:.1?}: {}", step.show(), o.code, o.signal, o.elapsed, o.said());
        }
        if let Some(why) = o.failure(step) {
            return Verdict::Failed(format!(
                "`{}`: {why} after {:.1?}: {}",
                step.show(),
                o.elapsed,
                o.said()
            ));
        }
        if o.code == Some(2) {
            if i > 0 && !step.may_refuse {
                return Verdict::Failed(format!(
                    "`{}` refused what the check before it accepted: {}",
                    step.show(),
                    o.said()
                ));
            }
            if !o.stderr.trim_start().starts_with("error") {
                return Verdict::Failed(format!(
                    "`{}` exit 2 without an error message: {}",
                    step.show(),
                    o.said()
                ));
            }
            // A check of its own after the first (an export) refuses and the rest still run.
            let then = if i > 0 { None } else { Some(Verdict::Refused) };
            if key.is_empty() || o.stderr.contains(key) {
                match then {
                    Some(v) => return v,
                    None => continue,
                }
            }
            // Another key of the file, named as a key (`: port[0].ipv4:`, `.via:`).
            let names_other = others.iter().any(|k| {
                [format!(": {k}:"), format!(".{k}:"), format!("].{k}:"), format!(": {k}[")]
                    .iter()
                    .any(|p| o.stderr.contains(p.as_str()))
            });
            if names_other {
                match then {
                    Some(_) => return Verdict::RefusedOther,
                    None => continue,
                }
            }
            return Verdict::Failed(format!("`{}` exit 2 without naming {key:?}: {}", step.show(), o.said()));
        }
        if o.code == Some(0) && o.terminated && step.kind == exec::Kind::Batch {
            return Verdict::Failed(format!("`{}` was stopped", step.show()));
        }
    }
    Verdict::Ran
}

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch directory for this test.
fn scratch_root(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("softfabric-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

/// How many cases to run, and which.
fn budget(default: usize) -> (usize, u64, Option<String>) {
    let n = match std::env::var("SOFTFABRIC_HOSTILE_CASES").ok().as_deref() {
        Some("all") => usize::MAX,
        Some(n) => n.parse().expect("SOFTFABRIC_HOSTILE_CASES: a number or `all`"),
        None => default,
    };
    let seed = std::env::var("SOFTFABRIC_HOSTILE_SEED").ok().map_or(1, |s| s.parse().expect("a seed"));
    (n, seed, std::env::var("SOFTFABRIC_HOSTILE_ONLY").ok())
}

/// A seeded shuffle (SplitMix64), so that a seed names the same sample on every machine.
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..v.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// Take `n` of `plans`, round-robin over their groups in a seeded order, so that a sample
/// covers every group before it takes a second case of any.
fn sample(mut plans: Vec<Plan>, n: usize, seed: u64, only: Option<&str>) -> (usize, Vec<Plan>) {
    if let Some(o) = only {
        plans.retain(|p| p.what.contains(o));
    }
    let total = plans.len();
    shuffle(&mut plans, seed);
    let mut groups: Vec<(String, Vec<Plan>)> = Vec::new();
    for p in plans {
        match groups.iter_mut().find(|(g, _)| *g == p.group) {
            Some((_, v)) => v.push(p),
            None => groups.push((p.group.clone(), vec![p])),
        }
    }
    let mut out = Vec::new();
    while out.len() < n && groups.iter().any(|(_, v)| !v.is_empty()) {
        for (_, v) in &mut groups {
            if out.len() >= n {
                break;
            }
            if let Some(p) = v.pop() {
                out.push(p);
            }
        }
    }
    (total, out)
}

/// Run `plans` on a few threads; print a summary and every failure; fail if there is one.
fn run_all(name: &str, plans: Vec<Plan>, default: usize) {
    let (n, seed, only) = budget(default);
    let (total, plans) = sample(plans, n, seed, only.as_deref());
    let root = scratch_root(name);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2) * 2;
    let next = AtomicUsize::new(0);
    let counts = [AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)];
    let failures = Mutex::new(Vec::new());
    let t0 = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(p) = plans.get(i) else { break };
                    let scratch = root.join(format!("c{i}"));
                    std::fs::create_dir_all(&scratch).expect("scratch");
                    let verdict = match (p.steps)(i, &scratch) {
                        None => Verdict::Skipped,
                        Some(steps) => judge(&steps, &p.key, &p.others, &scratch),
                    };
                    match verdict {
                        Verdict::Refused => counts[0].fetch_add(1, Ordering::Relaxed),
                        Verdict::Ran => counts[1].fetch_add(1, Ordering::Relaxed),
                        Verdict::Skipped => counts[2].fetch_add(1, Ordering::Relaxed),
                        Verdict::RefusedOther => counts[3].fetch_add(1, Ordering::Relaxed),
                        Verdict::Failed(why) => {
                            failures.lock().unwrap().push(format!("{}\n    {why}", p.what));
                            0
                        }
                    };
                    let _ = std::fs::remove_dir_all(&scratch);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let [refused, ran, skipped, other] = counts.map(|c| c.into_inner());
    println!(
        "hostile {name}: {} cases of {total} generated (seed {seed}) in {:.0} s: {refused} refused with exit 2 naming the key, {other} naming the other key of a contradiction, \
         {ran} accepted and run cleanly, {skipped} not applicable, {} failed",
        plans.len(),
        t0.elapsed().as_secs_f64(),
        failures.len()
    );
    for f in &failures {
        println!("FAIL {f}");
    }
    // The summary also where CI prints it (a passing test's output is captured).
    let summary = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{name}.txt"));
    let _ = std::fs::write(
        &summary,
        format!(
            "hostile {name}: {} cases of {total} (seed {seed}): {refused} refused naming the key, {other} naming the other key \
             of a contradiction, {ran} accepted and run cleanly, {skipped} not applicable, {} failed\n",
            plans.len(),
            failures.len()
        ),
    );
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        failures.is_empty(),
        "{} of {} hostile {name} cases failed (listed above)",
        failures.len(),
        plans.len()
    );
}

#[test]
fn every_key_of_every_shipped_file_at_its_boundaries() {
    let repo = repo();
    let bins = std::sync::Arc::new(cases::Bins::find());
    let work = scratch_root("files-work");
    cases::copy_inputs(&repo, &work);
    let paths = mutate::Paths {
        dir: work.join("config").display().to_string(),
        file: {
            let f = work.join("an-existing-file.txt");
            std::fs::write(&f, "keep me\n").expect("file");
            f.display().to_string()
        },
        missing: work.join("no-such-dir/x").display().to_string(),
    };
    let files = cases::shipped(&repo);
    let work = std::sync::Arc::new(work);
    let mut plans = Vec::new();
    let key_names: std::collections::HashMap<PathBuf, std::sync::Arc<Vec<String>>> =
        files.iter().map(|f| (f.rel.clone(), std::sync::Arc::new(mutate::key_names(&f.doc)))).collect();
    for c in cases::Case::all(&files, &paths) {
        let (bins, work) = (bins.clone(), work.clone());
        plans.push(Plan {
            what: format!("{}: {}", c.rel.display(), c.mutation.describe()),
            others: key_names[&c.rel].clone(),
            key: c.mutation.key(),
            group: format!("{}: {}", c.rel.display(), mutate::group(&c.mutation.path)),
            steps: Box::new(move |id, scratch| c.steps(&bins, &work, id, scratch)),
        });
    }
    for p in ns3::plans(&repo, &bins, &work) {
        plans.push(p);
    }
    let replay_input = |root: &Path| std::fs::read(root.join("dataplane/tests/data/replay/in.pcap")).ok();
    run_all("files", plans, 2500);
    // No mutant destroyed an input (a pcap port whose tx file is its own rx file).
    assert_eq!(replay_input(&work), replay_input(&repo), "the replay's input capture was overwritten");
    let _ = std::fs::remove_dir_all(&*work);
}

#[test]
fn every_flag_of_every_binary_at_its_boundaries() {
    let bins = cases::Bins::find();
    let work = scratch_root("flags-work");
    let plans = cli::plans(&repo(), &bins, &work);
    run_all("flags", plans, 1500);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn every_socket_takes_hostile_datagrams_counting_each() {
    let repo = repo();
    let bins = cases::Bins::find();
    let dir = scratch_root("sockets");
    sockets::collector(&repo, &bins, &dir);
    sockets::translator(&repo, &bins, &dir);
    sockets::hawkeye_listen(
        &bins,
        &dir,
        &repo.join("collector/benches/data/hawkeye-fattree-k4/hawkeye_topology.json"),
    );
    sockets::daiet_reduce(&bins, &dir);
    let _ = std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-sockets.txt"),
        format!("hostile sockets: 4 servers × {} random datagrams, every one counted\n", sockets::DATAGRAMS),
    );
    let _ = std::fs::remove_dir_all(&dir);
}
