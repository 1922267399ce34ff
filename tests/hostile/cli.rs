//! Every flag of every binary, found from its `--help` (not from a list), its type found by
//! asking clap (the error a non-number gives), and boundary values of that type substituted
//! into one valid, short invocation of its subcommand.
//!
//! The one list here is [`BASES`]: for each subcommand, an invocation that runs briefly and
//! cleanly. A subcommand `--help` shows that has no base fails the test, so a new one cannot be
//! missed; a new flag of a known subcommand is found and attacked without any change here.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::Plan;
use crate::cases::Bins;
use crate::exec::Step;

/// How a base invocation runs.
#[derive(Clone, Copy)]
enum Mode {
    /// Must finish within the bound (seconds).
    Batch(u64),
    /// Stopped with SIGTERM after this many milliseconds.
    Daemon(u64),
}

/// One base: binary, subcommand path, its arguments (templates: `{w}` the work directory,
/// `{s}` the case's scratch directory, `{ip}` a loopback address of its own), how it runs,
/// and exit codes besides 0 and 2 that are a clean outcome (1: "ran, and the job failed", e.g.
/// a query with no server to answer it, a transfer that did not complete).
struct Base {
    bin: &'static str,
    sub: &'static [&'static str],
    args: &'static [&'static str],
    mode: Mode,
    also_ok: &'static [i32],
}

const fn b(
    bin: &'static str,
    sub: &'static [&'static str],
    args: &'static [&'static str],
    mode: Mode,
    also_ok: &'static [i32],
) -> Base {
    Base { bin, sub, args, mode, also_ok }
}

use Mode::{Batch, Daemon};

/// One short, valid invocation per subcommand.
const BASES: &[Base] = &[
    b("softfabric", &["lab", "run"], &["{w}/lab.toml", "--out", "{s}/out", "--quiet"], Daemon(60_000), &[1]),
    b("softfabric", &["lab", "check"], &["{w}/lab.toml"], Batch(20), &[]),
    b(
        "softfabric",
        &["lab", "compare"],
        &["{w}/lab.toml", "--out", "{s}/out", "--quiet"],
        Daemon(90_000),
        &[1],
    ),
    b(
        "softfabric",
        &["hawkeye", "eval"],
        &["{w}/hk", "--traces", "1", "--threads", "1"],
        Daemon(120_000),
        &[1],
    ),
    b(
        "softfabric",
        &["hawkeye", "sweep"],
        &["{w}/hk", "--traces", "1", "--threads", "1", "--epochs", "262144", "--factors", "3"],
        Daemon(120_000),
        &[1],
    ),
    b("softfabric", &["hawkeye", "trace"], &["{w}/hk/incast.toml", "0"], Batch(20), &[]),
    b("softfabric", &["hawkeye", "generate"], &["{s}/gen", "--seed", "1", "--count", "7"], Batch(30), &[]),
    b("softfabric", &["daiet", "lab"], &["{w}/daiet.toml", "--out", "{s}/out"], Batch(90), &[]),
    b(
        "softfabric",
        &["daiet", "corpus"],
        &["--bytes", "2000", "--vocabulary", "50", "--out", "{s}/corpus.txt"],
        // --bytes at its boundary writes a gigabyte: 21 s on a slow 2-core CI machine (the
        // 20 s bound failed CI), seconds elsewhere — bounded work, given its own bound.
        Batch(90),
        &[],
    ),
    b("softfabric", &["daiet", "count"], &["{w}/corpus.txt", "--out", "{s}/count.txt"], Batch(20), &[]),
    b(
        "softfabric",
        &["daiet", "map"],
        &["{w}/corpus.txt", "--split", "0/1", "--reducers", "127.0.0.1:9", "--pps", "2000"],
        Daemon(10_000),
        &[1],
    ),
    b(
        "softfabric",
        &["daiet", "reduce"],
        &["--bind", "{ip}:0", "--tree", "1", "--ends", "1", "--idle-s", "0.3", "--out", "{s}/reduced.txt"],
        Batch(30),
        &[1],
    ),
    b("dataplane", &["run"], &["--config", "{w}/switch.toml"], Daemon(600), &[]),
    b("dataplane", &["check"], &["--config", "{w}/switch.toml"], Batch(20), &[]),
    b("dataplane", &["resources"], &["--config", "{w}/switch.toml"], Batch(20), &[]),
    b(
        "dataplane",
        &["p4", "export"],
        &["--config", "{w}/switch.toml", "--target", "tna", "--out", "{s}/p4"],
        Batch(20),
        &[],
    ),
    b(
        "dataplane",
        &["report"],
        &["--to", "{ip}", "--count", "200", "--rate", "2000", "--pcap", "{s}/r.pcap", "--linger-ms", "10"],
        Daemon(10_000),
        &[],
    ),
    b(
        "collector",
        &["serve"],
        &["--config", "{s}/collector.toml", "--http", "127.0.0.1:0", "--duration", "0.3"],
        Daemon(10_000),
        &[],
    ),
    b("collector", &["check"], &["--config", "{s}/collector.toml"], Batch(20), &[]),
    b("collector", &["query", "--http", "127.0.0.1:9", "keywrite"], &["7"], Batch(20), &[1]),
    b("collector", &["query", "--http", "127.0.0.1:9", "keyincrement"], &["7"], Batch(20), &[1]),
    b("collector", &["query", "--http", "127.0.0.1:9", "append"], &["0"], Batch(20), &[1]),
    b("collector", &["query", "--http", "127.0.0.1:9", "postcarder"], &["7"], Batch(20), &[1]),
    b("collector", &["query", "--http", "127.0.0.1:9", "sketch"], &["0"], Batch(20), &[1]),
    b("collector", &["query", "--http", "127.0.0.1:9", "notifications"], &[], Batch(20), &[1]),
    b("collector", &["query", "--http", "127.0.0.1:9", "stats"], &[], Batch(20), &[1]),
    b("collector", &["query", "--http", "127.0.0.1:9", "regions"], &[], Batch(20), &[1]),
    b("collector", &["hawkeye", "analyze"], &["{w}/hawkeye-run"], Batch(60), &[]),
    b(
        "collector",
        &["hawkeye", "dta"],
        &["--http", "127.0.0.1:9", "--list", "1", "--topology", "{w}/hawkeye-run/hawkeye_topology.json"],
        Batch(20),
        &[1],
    ),
    b(
        "collector",
        &["hawkeye", "listen"],
        &["--bind", "{ip}:0", "--topology", "{w}/hawkeye-run/hawkeye_topology.json", "--duration", "0.3"],
        Daemon(10_000),
        &[],
    ),
    b("nic-agent", &["send"], NIC_SEND, Daemon(10_000), &[1]),
    b("nic-agent", &["recv"], NIC_RECV, Daemon(10_000), &[1]),
];

/// `nic-agent`'s arguments both ways: an interface, addresses that never answer (so a run
/// ends at its deadline), then each side's own.
macro_rules! nic_args {
    ($($own:expr),*) => {
        &["--iface", "lo", "--ip", "{ip}", "--gateway", "127.0.0.3", "--peer", "127.0.0.4", "--deadline-s", "0.5", $($own),*]
    };
}
const NIC_SEND: &[&str] = nic_args!("--file", "{w}/corpus.txt");
const NIC_RECV: &[&str] = nic_args!("--size", "1000", "--out", "{s}/got.bin");

/// Subcommands with no arguments to vary (`softfabric demo` runs the whole demo; CI runs it).
const NO_ARGS: &[(&str, &[&str])] = &[("softfabric", &["demo"])];

/// A flag's value type, as clap's parser reveals it.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Int,
    Float,
    Ip,
    SocketAddr,
    Enum(Vec<String>),
    Text { output: bool },
}

/// An option of a subcommand, from its help.
#[derive(Debug, Clone)]
struct Opt {
    /// `--name`, or the positional's index among the base's positionals (`None` for options).
    long: String,
    /// The placeholder (`<COUNT>`); empty for a switch.
    value: String,
    /// The default, if help gives one.
    default: Option<String>,
    /// Possible values, if help lists them.
    possible: Vec<String>,
    /// Comma-separated list.
    list: bool,
}

/// `bin sub… --help`, parsed: subcommands and options.
fn help(bin: &Path, sub: &[&str]) -> (Vec<String>, Vec<Opt>) {
    let out = Command::new(bin).args(sub).arg("--help").output().expect("help");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut subs = Vec::new();
    let mut opts: Vec<Opt> = Vec::new();
    let mut section = "";
    for line in text.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            section = if line.starts_with("Commands") {
                "commands"
            } else if line.starts_with("Options") {
                "options"
            } else {
                ""
            };
            continue;
        }
        let t = line.trim_start();
        let indent = line.len() - t.len();
        match section {
            "commands" if indent == 2 => {
                let name = t.split_whitespace().next().unwrap_or("");
                if !name.is_empty() && name != "help" {
                    subs.push(name.to_string());
                }
            }
            "options" if t.starts_with('-') && indent <= 6 => {
                let spec = t.split("  ").next().unwrap_or("");
                let Some(long) = spec.split(", ").find(|s| s.starts_with("--")) else { continue };
                let mut parts = long.splitn(2, ' ');
                let name = parts.next().unwrap_or("").to_string();
                let value = parts.next().unwrap_or("").to_string();
                if name == "--help" || name == "--version" {
                    continue;
                }
                opts.push(Opt { long: name, value, default: None, possible: vec![], list: false });
            }
            "options" => {}
            _ => {}
        }
        if section == "options"
            && let Some(o) = opts.last_mut()
        {
            if let Some(d) = between(t, "[default: ", "]") {
                o.default = Some(d.to_string());
            }
            if let Some(p) = between(t, "[possible values: ", "]") {
                o.possible = p.split(", ").map(str::to_string).collect();
            }
            if t.contains("comma-separated") {
                o.list = true;
            }
        }
    }
    (subs, opts)
}

fn between<'a>(t: &'a str, a: &str, b: &str) -> Option<&'a str> {
    let i = t.find(a)? + a.len();
    let j = t[i..].find(b)? + i;
    Some(&t[i..j])
}

/// What clap says of `value` for `--flag` (or as the positional at `at`) in the base's
/// otherwise valid `tokens` (clap reports a structural error — an unknown or missing argument —
/// before any value's, so the probe must be a whole command). A value clap takes lets the
/// command start: it runs in `cwd` and is stopped after a few seconds.
fn probe(
    bin: &Path,
    tokens: &[String],
    own_end: usize,
    at: Option<usize>,
    flag: &str,
    value: &str,
    cwd: &Path,
) -> String {
    let Some(args) = substitute(tokens.to_vec(), own_end, at, flag, Some(value)) else {
        return String::new();
    };
    let step = Step::new(bin, args, cwd).daemon(Duration::from_secs(3));
    crate::exec::run(&step, cwd).stderr
}

fn type_of(o: &Opt, said: &str) -> Ty {
    if !o.possible.is_empty() {
        return Ty::Enum(o.possible.clone());
    }
    let s = said.to_lowercase();
    if s.contains("invalid digit") || s.contains("number too large") {
        Ty::Int
    } else if s.contains("invalid float") || s.contains("is not a number") {
        Ty::Float
    } else if s.contains("socket address") {
        Ty::SocketAddr
    } else if s.contains("ip address") || s.contains("ipv4 address") {
        Ty::Ip
    } else {
        let v = format!("{} {}", o.long, o.value).to_lowercase();
        Ty::Text { output: ["out", "json", "svg", "pcap"].iter().any(|k| v.contains(k)) }
    }
}

/// A 120 KiB argument: near the kernel's limit for one (128 KiB).
fn long_arg() -> String {
    "a".repeat(120 << 10)
}

fn values(ty: &Ty, default: Option<&str>, w: &Path) -> Vec<String> {
    let mut v: Vec<String> = match ty {
        Ty::Int => [
            "0",
            "1",
            "-1",
            "256",
            "65536",
            "1000000",
            "1000000000",
            "2147483648",
            "4294967296",
            "9007199254740992",
            "9223372036854775807",
            "18446744073709551615",
            "18446744073709551616",
            "1e3",
            "0x10",
        ]
        .map(str::to_string)
        .to_vec(),
        Ty::Float => {
            ["0", "-0", "-1", "nan", "NaN", "inf", "-inf", "1e308", "1e-320", "1e400", "1e19", "0x1p3"]
                .map(str::to_string)
                .to_vec()
        }
        Ty::Ip => ["0.0.0.0", "255.255.255.255", "224.0.0.1", "::1"].map(str::to_string).to_vec(),
        Ty::SocketAddr => ["0.0.0.0:0", "255.255.255.255:1", "224.0.0.1:5000", "[::1]:0", "127.0.0.1:65535"]
            .map(str::to_string)
            .to_vec(),
        Ty::Enum(p) => {
            let mut v = p.clone();
            v.push("softfabric-bogus".into());
            v
        }
        Ty::Text { output } => {
            let mut v = vec![
                "-".to_string(),
                "softfabric-no-such-thing".into(),
                w.join("no-such-dir/x").display().to_string(),
            ];
            if *output {
                v.push("/proc/softfabric/x".into());
                v.push(w.join("a-file").display().to_string() + "/x");
            } else {
                v.push("/dev/zero".into());
                v.push("/".into());
                v.push(w.display().to_string());
            }
            v
        }
    };
    v.push(String::new());
    v.push(long_arg());
    if let Some(d) = default
        && !d.is_empty()
    {
        // The list forms: duplicates, an empty element, many.
        v.push(format!("{d},{d}"));
        v.push(format!("{d},"));
        v.push(vec![d; 5000].join(","));
    }
    v
}

/// Fill a base's templates.
fn fill(a: &str, w: &Path, s: &Path, ip: &str) -> String {
    a.replace("{w}", &w.display().to_string()).replace("{s}", &s.display().to_string()).replace("{ip}", ip)
}

/// A loopback address of case `id`'s own (so that parallel cases never share a socket).
fn loopback(id: usize) -> String {
    format!("127.{}.{}.{}", 100 + id / 62_500 % 100, id / 250 % 250, 1 + id % 250)
}

/// The files the bases read, written into `w`.
fn prepare(repo: &Path, w: &Path, bins: &Bins) {
    let lab = std::fs::read_to_string(repo.join("config/labs/incast-16to1.toml")).expect("lab");
    let mut doc: toml::Table = toml::from_str(&lab).expect("lab toml");
    if let Some(toml::Value::Table(l)) = doc.get_mut("lab") {
        l.insert("duration_us".into(), toml::Value::Integer(30));
        l.remove("run_to_completion_us");
    }
    std::fs::write(w.join("lab.toml"), toml::to_string(&doc).expect("lab text")).expect("lab");
    // A Hawkeye scenario directory of one short scenario on the bundled base.
    let hk = w.join("hk");
    std::fs::create_dir_all(&hk).expect("hk");
    let base = std::fs::read_to_string(repo.join("config/labs/hawkeye/_fattree-k4.toml")).expect("base");
    std::fs::write(hk.join("_base.toml"), base.replace("duration_us = 1500", "duration_us = 600"))
        .expect("base");
    let sc =
        std::fs::read_to_string(repo.join("config/labs/hawkeye/microburst-incast.toml")).expect("scenario");
    std::fs::write(
        hk.join("incast.toml"),
        sc.replace("_fattree-k4.toml", "_base.toml").replace("start_us = 400", "start_us = 100"),
    )
    .expect("scenario");
    std::fs::copy(repo.join("config/labs/daiet/wordcount-small.toml"), w.join("daiet.toml")).expect("daiet");
    let corpus = (0..400).map(|i| format!("w{} ", i % 37)).collect::<String>();
    std::fs::write(w.join("corpus.txt"), corpus).expect("corpus");
    std::fs::write(w.join("a-file"), "x").expect("file");
    std::fs::write(
        w.join("switch.toml"),
        format!(
            "program = \"l2l3\"\n[runtime]\ncontrol_socket = \"{}\"\n[[port]]\nname = \"p0\"\nbackend = \"ring\"\nmac = \"02:00:00:00:00:01\"\nspeed = \"10G\"\nipv4 = [\"10.0.1.1/24\"]\n[[port]]\nname = \"p1\"\nbackend = \"ring\"\nmac = \"02:00:00:00:00:02\"\nspeed = \"10G\"\nipv4 = [\"10.0.2.1/24\"]\n",
            w.join("ctl-base.sock").display()
        ),
    )
    .expect("switch");
    let run = Command::new(&bins.softfabric)
        .args(["lab", "run"])
        .arg(repo.join("config/labs/hawkeye-incast-backpressure.toml"))
        .arg("--out")
        .arg(w.join("hawkeye-run"))
        .arg("--quiet")
        .output()
        .expect("hawkeye lab");
    assert!(
        run.status.success(),
        "the Hawkeye lab the analyzer cases read: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The commands of a base's `sub` (its `--option value` pairs left out).
fn commands(sub: &[&'static str]) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < sub.len() {
        if sub[i].starts_with("--") {
            i += 2;
        } else {
            out.push(sub[i]);
            i += 1;
        }
    }
    out
}

/// Every flag case.
pub fn plans(repo: &Path, bins: &Bins, w: &Path) -> Vec<Plan> {
    prepare(repo, w, bins);
    let bin_of = |name: &str| -> PathBuf {
        match name {
            "softfabric" => bins.softfabric.clone(),
            "dataplane" => bins.dataplane.clone(),
            "collector" => bins.collector.clone(),
            _ => bins.nic_agent.clone(),
        }
    };
    // Walk every binary's subcommand tree from its help: every command with options, leaves
    // or not (`collector query --http`).
    let mut found: Vec<(&'static str, Vec<String>, Vec<Opt>, bool)> = Vec::new();
    for name in ["softfabric", "dataplane", "collector", "nic-agent"] {
        let bin = bin_of(name);
        let mut stack = vec![Vec::<String>::new()];
        while let Some(path) = stack.pop() {
            let p: Vec<&str> = path.iter().map(String::as_str).collect();
            let (subs, opts) = help(&bin, &p);
            let leaf = subs.is_empty();
            if leaf || !opts.is_empty() {
                found.push((name, path.clone(), opts, leaf));
            }
            for s in subs {
                let mut q = path.clone();
                q.push(s);
                stack.push(q);
            }
        }
    }
    let collector_cfg =
        std::fs::read_to_string(repo.join("config/collector.toml")).expect("collector config");
    let mut plans = Vec::new();
    let mut missing = Vec::new();
    for (name, path, opts, leaf) in found {
        let p: Vec<&str> = path.iter().map(String::as_str).collect();
        if NO_ARGS.iter().any(|(b, s)| *b == name && *s == p.as_slice()) {
            continue;
        }
        // A leaf's own base; for a command above leaves, the first base below it.
        let base = BASES.iter().find(|b| {
            let c = commands(b.sub);
            b.bin == name && if leaf { c == p } else { c.starts_with(&p) }
        });
        let Some(base) = base else {
            missing.push(format!("{name} {}", p.join(" ")));
            continue;
        };
        let bin = bin_of(name);
        // The whole argument list as tokens: the base's subcommands (with their options), then
        // its arguments. Options of this command go after its own name.
        let tokens: Vec<&'static str> = base.sub.iter().chain(base.args).copied().collect();
        let own_end = {
            let mut seen = 0;
            let mut at = tokens.len();
            for (i, t) in tokens.iter().enumerate() {
                if seen == p.len() {
                    at = i;
                    break;
                }
                if !t.starts_with("--") && (i == 0 || !tokens[i - 1].starts_with("--")) {
                    seen += 1;
                }
            }
            if leaf { tokens.len() } else { at }
        };
        let pw = w.join("probe");
        std::fs::create_dir_all(&pw).expect("probe dir");
        std::fs::write(pw.join("collector.toml"), collector_cfg.replace("127.0.0.51", "127.99.0.1"))
            .expect("probe");
        let probe_tokens: Vec<String> = tokens.iter().map(|a| fill(a, w, &pw, "127.99.0.1")).collect();
        // The positionals of a leaf: its base arguments that are neither a flag nor a flag's value.
        let mut positional = Vec::new();
        if leaf {
            let mut i = base.sub.len();
            while i < tokens.len() {
                if tokens[i].starts_with("--") {
                    let takes = opts.iter().any(|o| o.long == tokens[i] && !o.value.is_empty());
                    i += if takes { 2 } else { 1 };
                } else {
                    positional.push(i);
                    i += 1;
                }
            }
        }
        let mut targets: Vec<(Option<usize>, Opt, Ty)> = Vec::new();
        for o in &opts {
            if o.value.is_empty() {
                targets.push((None, o.clone(), Ty::Text { output: false }));
                continue;
            }
            let said = probe(&bin, &probe_tokens, own_end, None, &o.long, "softfabric-probe", &pw);
            targets.push((None, o.clone(), type_of(o, &said)));
        }
        for (k, &at) in positional.iter().enumerate() {
            let said = probe(&bin, &probe_tokens, own_end, Some(at), "", "softfabric-probe", &pw);
            let o = Opt {
                long: format!("#{k}"),
                value: "<ARG>".into(),
                default: None,
                possible: vec![],
                list: false,
            };
            let ty = type_of(&o, &said);
            targets.push((Some(at), o, ty));
        }
        for (at, o, ty) in targets {
            let group = format!("{name} {} {}", p.join(" "), o.long);
            let key = match at {
                None => o.long.trim_start_matches('-').to_string(),
                Some(_) => String::new(),
            };
            let vals: Vec<Option<String>> = if o.value.is_empty() {
                vec![None]
            } else {
                let d =
                    if o.list { o.default.clone().or_else(|| base_value(&tokens, &o.long)) } else { None };
                let mut v: Vec<Option<String>> = values(&ty, d.as_deref(), w).into_iter().map(Some).collect();
                if at.is_none() {
                    v.push(Some(TWICE.into()));
                }
                v
            };
            for val in vals {
                let shown = match &val {
                    None => "(present)".to_string(),
                    Some(v) if v == TWICE => "(given twice)".to_string(),
                    Some(v) if v.len() > 60 => format!("{}… ({} bytes)", crate::exec::cut(v, 30), v.len()),
                    Some(v) => format!("{v:?}"),
                };
                let what = format!("{name} {} {} {shown}", p.join(" "), o.long);
                let (bin, long, cfg, tokens) =
                    (bin.clone(), o.long.clone(), collector_cfg.clone(), tokens.clone());
                let (mode, also_ok) = (base.mode, base.also_ok);
                let w = w.to_path_buf();
                plans.push(Plan {
                    what,
                    key: key.clone(),
                    others: Default::default(),
                    group: group.clone(),
                    steps: Box::new(move |id, s| {
                        let ip = loopback(id);
                        std::fs::write(s.join("collector.toml"), cfg.replace("127.0.0.51", &ip)).ok()?;
                        let filled: Vec<String> = tokens.iter().map(|a| fill(a, &w, s, &ip)).collect();
                        let args = substitute(filled, own_end, at, &long, val.as_deref())?;
                        let step = Step::new(&bin, args, s).also_ok(also_ok);
                        Some(vec![match mode {
                            Mode::Batch(secs) => step.within(Duration::from_secs(secs)),
                            Mode::Daemon(ms) => step.daemon(Duration::from_millis(ms)),
                        }])
                    }),
                });
            }
        }
    }
    assert!(missing.is_empty(), "subcommands with no base invocation in tests/hostile/cli.rs: {missing:?}");
    plans
}

/// The value that stands for "the flag given twice".
const TWICE: &str = "\u{0}twice";

/// `tokens` with `long` (an option of the command whose arguments end at `own_end`) set to
/// `val` — replaced where the base gives it, inserted at `own_end` otherwise — or, for a
/// positional (`at`), that argument replaced. A switch (`val` None) is added.
fn substitute(
    mut tokens: Vec<String>,
    own_end: usize,
    at: Option<usize>,
    long: &str,
    val: Option<&str>,
) -> Option<Vec<String>> {
    match (at, val) {
        (Some(i), Some(v)) => tokens[i] = v.to_string(),
        (Some(_), None) => return None,
        (None, None) => tokens.insert(own_end, long.to_string()),
        (None, Some(TWICE)) => {
            let first = tokens.iter().position(|a| a == long).and_then(|j| tokens.get(j + 1).cloned());
            let v = first.unwrap_or_else(|| "1".into());
            tokens.insert(own_end, v.clone());
            tokens.insert(own_end, long.to_string());
            tokens.insert(own_end, v);
            tokens.insert(own_end, long.to_string());
        }
        (None, Some(v)) => match tokens.iter().position(|a| a == long) {
            Some(j) => tokens[j + 1] = v.to_string(),
            None => {
                tokens.insert(own_end, v.to_string());
                tokens.insert(own_end, long.to_string());
            }
        },
    }
    Some(tokens)
}

/// The value the base gives `long`, for list flags with no default.
fn base_value(tokens: &[&str], long: &str) -> Option<String> {
    let j = tokens.iter().position(|a| *a == long)?;
    tokens.get(j + 1).map(|s| s.to_string()).filter(|s| !s.contains('{'))
}
