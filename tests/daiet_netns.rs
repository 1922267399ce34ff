//! DAIET's WordCount on real sockets (root; skipped with a message otherwise, a failure under
//! `SOFTFABRIC_REQUIRE_NETNS=1`): six namespaces on AF_PACKET veths around one `dataplane run`
//! with the `daiet` program — four mappers (`softfabric daiet map`, UDP DAIET packets) and two
//! reducers (`softfabric daiet reduce`), 256 cells per tree so keys collide and spill. The
//! reducers' output, merged, must equal `softfabric daiet count` of the corpus word for word,
//! and each reducer must get one END (the switch's) and far fewer pairs than the mappers sent.

#[path = "../dataplane/tests/support/netns.rs"]
mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::{available, must, run};

const MAPPERS: usize = 4;
const REDUCERS: usize = 2;

/// Six hosts: mapper k on 10.0.k.2 (switch 10.0.k.1), reducer r on 10.0.(4+r).2.
struct Hosts {
    ns: Vec<String>,
    sw: Vec<String>,
}

impl Hosts {
    fn new() -> Self {
        let id = std::process::id() % 100_000;
        let n = MAPPERS + REDUCERS;
        let h = Self {
            ns: (0..n).map(|k| format!("sfdm{id}h{k}")).collect(),
            sw: (0..n).map(|k| format!("sfd{id}s{k}")).collect(),
        };
        h.cleanup();
        for k in 0..n {
            let (ns, sw) = (&h.ns[k], &h.sw[k]);
            must(&["ip", "netns", "add", ns]);
            must(&["ip", "link", "add", sw, "type", "veth", "peer", "name", "eth0", "netns", ns]);
            must(&["ip", "link", "set", sw, "up"]);
            must(&["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]);
            must(&["ip", "-n", ns, "link", "set", "eth0", "address", &format!("02:00:00:00:{k:02x}:02")]);
            must(&["ip", "-n", ns, "addr", "add", &format!("10.0.{k}.2/24"), "dev", "eth0"]);
            must(&["ip", "-n", ns, "link", "set", "eth0", "up"]);
            must(&["ip", "-n", ns, "link", "set", "lo", "up"]);
            must(&["ip", "-n", ns, "route", "add", "default", "via", &format!("10.0.{k}.1")]);
        }
        h
    }

    fn cleanup(&self) {
        for ns in &self.ns {
            let _ = run(&["ip", "netns", "del", ns]);
        }
        for sw in &self.sw {
            let _ = run(&["ip", "link", "del", sw]);
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        self.cleanup();
    }
}

fn softfabric(ns: &str, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_softfabric")]).args(args);
    c
}

fn wait(child: Child, what: &str) -> String {
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed: {said}");
    said
}

#[test]
fn wordcount_through_a_daiet_switch_on_veths_is_exact() {
    if !available() {
        return;
    }
    let hosts = Hosts::new();
    let dir = std::env::temp_dir().join(format!("softfabric-daiet-netns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |f: &str| -> PathBuf { dir.join(f) };

    // The switch: a port per host; the reducers' MACs known (they only listen).
    let mut cfg = String::from("program = \"daiet\"\n[runtime]\nstats_interval_s = 60\n");
    for (k, sw) in hosts.sw.iter().enumerate() {
        cfg.push_str(&format!(
            "[[port]]\nname = \"p{k}\"\nbackend = \"af_packet\"\niface = \"{sw}\"\nmac = \"02:da:00:00:00:{k:02x}\"\n\
             speed = \"10G\"\nipv4 = [\"10.0.{k}.1/24\"]\n"
        ));
    }
    cfg.push_str("[l2l3]\nneighbor = [");
    for r in 0..REDUCERS {
        let k = MAPPERS + r;
        cfg.push_str(&format!(
            "{{ ip = \"10.0.{k}.2\", mac = \"02:00:00:00:{k:02x}:02\", port = \"p{k}\" }}, "
        ));
    }
    cfg.push_str("]\n");
    for r in 0..REDUCERS {
        cfg.push_str(&format!(
            "[[daiet.tree]]\nid = {}\nreducer = \"10.0.{}.2\"\nchildren = {MAPPERS}\ncells = 256\n",
            r + 1,
            MAPPERS + r
        ));
    }
    let cfg = dataplane::config::Config::parse(&path("switch.toml"), &cfg).unwrap();
    let switch = dataplane::runtime::Runtime::start(&cfg).expect("the daiet switch starts");

    // The corpus and its plain count.
    let corpus = path("corpus.txt");
    let c = Command::new(env!("CARGO_BIN_EXE_softfabric"))
        .args([
            "daiet",
            "corpus",
            "--bytes",
            "150000",
            "--vocabulary",
            "3000",
            "--zipf",
            "1",
            "--seed",
            "5",
            "--out",
        ])
        .arg(&corpus)
        .output()
        .unwrap();
    assert!(c.status.success());
    let want_file = path("want.txt");
    let c = Command::new(env!("CARGO_BIN_EXE_softfabric"))
        .args(["daiet", "count"])
        .arg(&corpus)
        .arg("--out")
        .arg(&want_file)
        .output()
        .unwrap();
    assert!(c.status.success());

    // Reducers first, then the mappers.
    let reducers: Vec<Child> = (0..REDUCERS)
        .map(|r| {
            let k = MAPPERS + r;
            softfabric(
                &hosts.ns[k],
                &[
                    "daiet",
                    "reduce",
                    "--bind",
                    &format!("10.0.{k}.2:10000"),
                    "--tree",
                    &(r + 1).to_string(),
                    "--ends",
                    "1",
                    "--idle-s",
                    "15",
                    "--out",
                    path(&format!("r{r}.txt")).to_str().unwrap(),
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let to: Vec<String> = (0..REDUCERS).map(|r| format!("10.0.{}.2:10000", MAPPERS + r)).collect();
    let mappers: Vec<Child> = (0..MAPPERS)
        .map(|m| {
            softfabric(
                &hosts.ns[m],
                &[
                    "daiet",
                    "map",
                    corpus.to_str().unwrap(),
                    "--split",
                    &format!("{m}/{MAPPERS}"),
                    "--reducers",
                    &to.join(","),
                    "--pps",
                    "5000",
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut sent_pairs = 0u64;
    for (m, c) in mappers.into_iter().enumerate() {
        let said = wait(c, &format!("mapper {m}"));
        sent_pairs += said.split_whitespace().nth(2).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    }
    let mut got = Vec::new();
    let mut received_pairs = 0u64;
    for (r, c) in reducers.into_iter().enumerate() {
        let said = wait(c, &format!("reducer {r}"));
        assert!(said.contains(" 1 ENDs"), "one END, the switch's: {said}");
        let w: Vec<&str> = said.split_whitespace().collect();
        let at = w.iter().position(|x| *x == "pairs,").unwrap();
        received_pairs += w[at - 1].parse::<u64>().unwrap();
        got.extend(std::fs::read_to_string(path(&format!("r{r}.txt"))).unwrap().lines().map(String::from));
    }
    let counters = switch.command("show daiet").unwrap_or_default();
    drop(switch.stop());
    got.sort();
    let mut want: Vec<String> =
        std::fs::read_to_string(&want_file).unwrap().lines().map(String::from).collect();
    want.sort();
    assert_eq!(got.len(), want.len(), "distinct words; switch said:\n{counters}");
    assert!(got == want, "the reducers' output differs from the plain count; switch said:\n{counters}");
    assert!(
        sent_pairs > 0 && received_pairs * 2 < sent_pairs,
        "aggregated: {received_pairs} of {sent_pairs}"
    );
    // The switch aggregated every pair the mappers sent, and keys collided and spilled.
    let field = |name: &str| -> u64 {
        let w: Vec<&str> = counters.split_whitespace().collect();
        w.iter().position(|x| *x == name).and_then(|i| w.get(i + 1)?.parse().ok()).unwrap_or(0)
    };
    assert_eq!(field("pairs"), sent_pairs, "{counters}");
    assert!(field("spilled") > 0 && field("spill_packets") > 0, "{counters}");
    assert_eq!(field("lost_no_next_hop"), 0, "{counters}");
    eprintln!("{counters}");
    std::fs::remove_dir_all(&dir).ok();
}
