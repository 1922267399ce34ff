//! µFAB on real ports: two `nic-agent send --cc ufab` VM-pairs with different guarantees
//! (60 and 120 Mb/s, B_u = 20 Mb/s) in one network namespace, source-routed through
//! `dataplane run` with program `ufab` (AF_PACKET on veths) to one receiver of both flows
//! answering probes (`recv --ufab --flows 2`) in another, over the switch's port shaped to
//! 200 Mb/s — the link both share (slow enough for this machine's two cores to keep up with:
//! the switch, the two senders and the receiver all run on them).
//! Both files arrive intact, every probe is answered and the pair with twice the tokens
//! finishes first.
//!
//! The bar — each pair at least its guarantee on the shaped link and the link at least 90 %
//! used while both send (from the senders' `--progress-ms` lines: frames acknowledged against
//! wall-clock time) — is measured by `scripts/ufab-netns-bar.sh` on optimised binaries, N runs,
//! median and spread (BENCHMARKS.md, "µFAB on real ports"). It was asserted here until
//! 2026-12-02 and failed CI twice on a slow VM with correct binaries: four processes on two cores
//! make it a measure of the machine. The hosts sleep on their sockets when idle
//! ([`ports::host::Idle::Sleep`] waits in `ppoll` on the AF_PACKET socket) and so does the switch
//! (`[runtime] idle_sleep_max_us`, set here), so that nothing polls a core it does not need.
//! `UFAB_BASE_RTT_US` sets the senders' base RTT T (default 3000 µs), `UFAB_SWITCH_IDLE_US` the
//! switch's idle sleep (0: busy-poll).
//!
//! Needs root, `ip`, `ping` and `python3` as the other netns tests do (skipped without them, a
//! failure with `SOFTFABRIC_REQUIRE_NETNS=1`), and the `dataplane` binary built beside
//! `nic-agent` (`cargo test --workspace` builds both).

#[path = "../../dataplane/tests/support/netns.rs"]
mod support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::{Lab, Switch, available};

/// The tests share the machine's two cores with the switch and hosts they start: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn dataplane_bin() -> PathBuf {
    let agent = PathBuf::from(env!("CARGO_BIN_EXE_nic-agent"));
    let bin = agent.with_file_name("dataplane");
    assert!(bin.exists(), "{} not built: run `cargo build -p dataplane` first", bin.display());
    bin
}

/// The number after `label` in `line`.
fn number_after(line: &str, label: &str) -> f64 {
    let at = line.find(label).unwrap_or_else(|| panic!("no {label:?} in {line:?}")) + label.len();
    line[at..]
        .trim_start_matches([' ', '('])
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in {line:?}"))
}

/// The routed lab's ports, the one to the receiver shaped to 200 Mb/s.
fn ports() -> String {
    let to_receiver = "ipv4 = [\"10.0.2.1/24\"]";
    assert!(support::ROUTED_PORTS.contains(to_receiver));
    // First, still in `[runtime]`: the switch sleeps when idle, as the hosts do, so that it
    // leaves the cores it does not need to them (`UFAB_SWITCH_IDLE_US`, default 1000; 0
    // busy-polls).
    let idle = std::env::var("UFAB_SWITCH_IDLE_US").unwrap_or_else(|_| "1000".into());
    format!(
        "idle_sleep_max_us = {idle}\n{}",
        support::ROUTED_PORTS.replace(to_receiver, &format!("shape = \"200M\"\n{to_receiver}"))
    )
}

fn spawn(ns: &str, args: &[String]) -> Child {
    Command::new("ip")
        .args(["netns", "exec", ns, env!("CARGO_BIN_EXE_nic-agent")])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// The routed lab (`tag` names its namespaces) with a `ufab` switch on [`ports`] and a
/// scratch directory, this test alone on the machine; `None` where namespaces are unavailable.
fn ufab_lab(tag: &str) -> Option<(std::sync::MutexGuard<'static, ()>, Lab, Switch, PathBuf)> {
    if !available() {
        return None;
    }
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::routed(tag);
    let sw = Switch::start_program(&dataplane_bin(), &lab, tag, "ufab", &ports());
    let dir = std::env::temp_dir().join(format!("softfabric-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Some((one, lab, sw, dir))
}

/// One run of the two pairs over the shaped link (`tag` names its namespaces): the functional
/// checks asserted, and what each pair and the link carried while both sent (Mb/s, Mb/s, share
/// of the link in %); `None` where namespaces are unavailable.
fn shared_link_run(tag: &str) -> Option<[f64; 3]> {
    let (_one, lab, sw, dir) = ufab_lab(tag)?;
    let size = 8_000_000usize;
    let files: Vec<(PathBuf, PathBuf, Vec<u8>)> = (0..2u64)
        .map(|k| {
            let data: Vec<u8> =
                (0..size as u64).map(|i| ((i ^ k).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8).collect();
            let dst = if k == 0 { dir.join("received.bin") } else { dir.join(format!("received.bin.{k}")) };
            let src = dir.join(format!("sent{k}.bin"));
            std::fs::write(&src, &data).unwrap();
            (src, dst, data)
        })
        .collect();
    // Pair k: QPs 0x11+k → 0x21+k, pair ID k+1, guarantee (k+1) × 60 Mb/s.
    let common = |k: usize| {
        s(&[
            "--iface",
            "eth0",
            "--deadline-s",
            "60",
            "--sender-qp",
            &format!("{}", 0x11 + k),
            "--receiver-qp",
            &format!("{}", 0x21 + k),
        ])
    };
    let receiver = {
        let mut a = s(&["recv", "--ip", "10.0.2.2", "--gateway", "10.0.2.1", "--peer", "10.0.1.2", "--ufab"]);
        a.extend(common(0));
        a.extend(s(&["--flows", "2", "--size", &size.to_string(), "--out", files[0].1.to_str().unwrap()]));
        spawn(&lab.ns[1], &a)
    };
    std::thread::sleep(Duration::from_millis(500));
    let base_rtt_us = std::env::var("UFAB_BASE_RTT_US").unwrap_or_else(|_| "3000".into());
    let senders: Vec<Child> = (0..2)
        .map(|k| {
            let mut a = s(&["send", "--ip", "10.0.1.2", "--gateway", "10.0.1.1", "--peer", "10.0.2.2"]);
            a.extend(common(k));
            a.extend(s(&["--cc", "ufab", "--rate-gbps", "1", "--base-rtt-us", &base_rtt_us, "--route", "1"]));
            a.extend(s(&["--guarantee-gbps", &format!("{}", 0.06 * (k + 1) as f64), "--b-u-mbps", "20"]));
            a.extend(s(&["--pair-id", &format!("{}", k + 1), "--file", files[k].0.to_str().unwrap()]));
            a.extend(s(&["--progress-ms", "5"]));
            spawn(&lab.ns[0], &a)
        })
        .collect();
    let sent: Vec<_> = senders.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let ro = receiver.wait_with_output().unwrap();
    let table = sw.stop();
    let out = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).to_string();
    for (k, so) in sent.iter().enumerate() {
        eprintln!("pair {k} sender: {}", out(so));
    }
    eprintln!("receiver: {}switch:\n{table}", out(&ro));
    assert!(ro.status.success(), "receiver: {}{}", out(&ro), String::from_utf8_lossy(&ro.stderr));
    for (k, so) in sent.iter().enumerate() {
        assert!(so.status.success(), "sender {k}: {}{}", out(so), String::from_utf8_lossy(&so.stderr));
        assert!(std::fs::read(&files[k].1).unwrap() == files[k].2, "pair {k}'s file arrived altered");
        assert!(number_after(&out(so), "responses") > 0.0, "pair {k} had no probe answered: {}", out(so));
    }
    let _ = std::fs::remove_dir_all(&dir);
    // The 120 Mb/s pair finishes first; until then both send. Its rate is over its whole run,
    // the other's first part is the same time: each at least its guarantee (goodput, so the
    // frames' headers are on top), and together at least 90 % of the 200 Mb/s link.
    let secs = |k: usize| number_after(&out(&sent[k]), "bytes in");
    assert!(
        secs(1) < secs(0),
        "the pair with twice the tokens finishes first: {} s vs {} s",
        secs(1),
        secs(0)
    );
    // While both send (from 10 ms after the later one's first progress line to the earlier
    // one's last): each pair's frames on the shaped link, against its guarantee and the link.
    let p: Vec<Vec<(f64, f64)>> = sent.iter().map(|o| progress(&out(o))).collect();
    let (from, to) =
        (p[0][0].0.max(p[1][0].0) + 10_000.0, p[0].last().unwrap().0.min(p[1].last().unwrap().0));
    assert!(to > from + 50_000.0, "the pairs sent together for less than 50 ms: {from} to {to} µs");
    let shared: Vec<f64> =
        p.iter().map(|q| (frames_at(q, to) - frames_at(q, from)) * 8.0 / (to - from)).collect();
    let link = (shared[0] + shared[1]) / 200.0;
    eprintln!(
        "together for {:.0} ms: pair 0 {:.1} Mb/s (guarantee 60), pair 1 {:.1} Mb/s (guarantee 120), link {:.1} %",
        (to - from) / 1e3,
        shared[0],
        shared[1],
        100.0 * link
    );
    Some([shared[0], shared[1], 100.0 * link])
}

/// The functional checks of one run (both files intact, every pair's probes answered, the pair
/// with twice the tokens finishing first) and the figures printed. The bar itself (each pair at
/// its guarantee on the shaped link, the link at least 90 % used while both send) is a
/// measurement of this machine as much as of µFAB — the switch, two senders and the receiver
/// share two cores, and the same binaries met it in 8 of 8 release runs on 2026-11-27 and in 0 of
/// 3 on an idle VM on 2026-12-02 — so it lives in a benchmark, `scripts/ufab-netns-bar.sh`, which
/// runs this test N times on optimised binaries and prints each figure's median, spread and how
/// many runs met the bar (BENCHMARKS.md keeps them). µFAB's guarantees are asserted where time is
/// virtual and the figures are the algorithm's alone: `tests/ufab_lab.rs` and the lab's µFAB
/// experiments. Here the test also fails if the link is less than half used while both send — a
/// stall or a collapse of the windows, not a slow moment of the VM.
#[test]
fn two_pairs_share_a_shaped_link() {
    let Some(r) = shared_link_run("uf0") else { return };
    // One line per run for scripts/ufab-netns-bar.sh.
    eprintln!("ufab-bar shared {:.1} {:.1} {:.1}", r[0], r[1], r[2]);
    assert!(r[2] >= 50.0, "the shaped link was {:.1} % used while both pairs sent: {r:.1?}", r[2]);
}

/// Appendix F on real ports: one VM-pair (a 120 Mb/s guarantee) as two connections
/// (`send --paths 2`: QPs 0x11, 0x12 → 0x21, 0x22, pair IDs 1 and 2), taken back as one file
/// (`recv --paths 2`). The file arrives whole and in order; each path's probes are answered;
/// Algorithm 2 gives each path its share of the VM-pair's 6 tokens (3 each while both send,
/// more to the busier when one is ahead: at least 3, the two together at most twice 6); alone
/// on the shaped link the VM-pair gets at least its guarantee. This switch has one route to
/// the receiver, so both paths take it (a path avoids its sibling's route only while another
/// qualifies: the lab, on the two-pod testbed, shows distinct routes).
/// One run of the VM-pair over two paths (`tag` names its namespaces): the functional checks
/// asserted, its goodput (Gb/s) and how long it ran (s); `None` where namespaces are unavailable.
fn two_paths_run(tag: &str) -> Option<(f64, f64)> {
    let (_one, lab, sw, dir) = ufab_lab(tag)?;
    let size = 3_000_001usize;
    let data: Vec<u8> =
        (0..size as u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8).collect();
    let (src, dst) = (dir.join("sent.bin"), dir.join("received.bin"));
    std::fs::write(&src, &data).unwrap();
    let common = s(&["--iface", "eth0", "--deadline-s", "60", "--sender-qp", "17", "--receiver-qp", "33"]);
    let receiver = {
        let mut a = s(&["recv", "--ip", "10.0.2.2", "--gateway", "10.0.2.1", "--peer", "10.0.1.2", "--ufab"]);
        a.extend(common.clone());
        a.extend(s(&["--paths", "2", "--size", &size.to_string(), "--out", dst.to_str().unwrap()]));
        spawn(&lab.ns[1], &a)
    };
    std::thread::sleep(Duration::from_millis(500));
    let mut a = s(&["send", "--ip", "10.0.1.2", "--gateway", "10.0.1.1", "--peer", "10.0.2.2"]);
    a.extend(common);
    a.extend(s(&["--cc", "ufab", "--rate-gbps", "1", "--base-rtt-us", "3000", "--route", "1"]));
    a.extend(s(&["--guarantee-gbps", "0.12", "--b-u-mbps", "20", "--pair-id", "1", "--paths", "2"]));
    a.extend(s(&["--file", src.to_str().unwrap()]));
    let so = spawn(&lab.ns[0], &a).wait_with_output().unwrap();
    let ro = receiver.wait_with_output().unwrap();
    let table = sw.stop();
    let out = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).to_string();
    eprintln!("sender: {}receiver: {}switch:\n{table}", out(&so), out(&ro));
    assert!(so.status.success(), "sender: {}{}", out(&so), String::from_utf8_lossy(&so.stderr));
    assert!(ro.status.success(), "receiver: {}{}", out(&ro), String::from_utf8_lossy(&ro.stderr));
    assert!(std::fs::read(&dst).unwrap() == data, "the file arrived altered");
    let _ = std::fs::remove_dir_all(&dir);
    let sender = out(&so);
    let pairs: Vec<&str> = sender.lines().filter(|l| l.starts_with("ufab: path")).collect();
    assert_eq!(pairs.len(), 2, "{sender}");
    let phi: Vec<f64> = pairs.iter().map(|l| number_after(l, "phi")).collect();
    assert!(phi.iter().all(|&p| p >= 3.0 - 1e-9) && phi[0] + phi[1] <= 12.0 + 1e-9, "φ per path {phi:?}");
    assert!(number_after(pairs[0], "responses") >= 2.0, "{sender}");
    let sent: Vec<&str> = sender.lines().filter(|l| l.starts_with("sent ")).collect();
    assert_eq!(sent.len(), 2, "{sender}");
    let bytes: f64 = sent.iter().map(|l| number_after(l, "sent")).sum();
    assert_eq!(bytes as usize, size);
    // Goodput of the VM-pair over its whole run (both paths start together): at least the
    // guarantee (120 Mb/s of frames; headers are on top of goodput, start-up inside the run).
    let secs = sent.iter().map(|l| number_after(l, "bytes in")).fold(0.0, f64::max);
    Some((bytes * 8.0 / secs / 1e9, secs))
}

/// The functional checks of one run (the file whole and in order, each path's probes answered,
/// Algorithm 2's token split), its goodput printed for `scripts/ufab-netns-bar.sh`, which
/// measures it against the 0.12 Gb/s guarantee over N runs (see
/// [`two_pairs_share_a_shaped_link`] for why that bar is a benchmark).
#[test]
fn one_vm_pair_over_two_paths_arrives_whole() {
    let Some((gbps, secs)) = two_paths_run("ufp0") else { return };
    eprintln!("ufab-bar two-paths {:.1} {secs:.3}", gbps * 1e3);
    assert!(gbps > 0.0, "the VM-pair moved nothing over {secs:.3} s");
}

/// A sender's `progress` lines: (wall-clock µs, frame bytes acknowledged).
fn progress(out: &str) -> Vec<(f64, f64)> {
    let p: Vec<(f64, f64)> = out
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("progress ")?.split_whitespace();
            let t = w.next()?.parse().ok()?;
            Some((t, w.nth(1)?.parse().ok()?))
        })
        .collect();
    assert!(p.len() >= 2, "no progress lines in {out:?}");
    p
}

/// Frame bytes acknowledged at `t` µs, by linear interpolation between progress lines.
fn frames_at(p: &[(f64, f64)], t: f64) -> f64 {
    match p.iter().position(|x| x.0 >= t) {
        None => p.last().unwrap().1,
        Some(0) => p[0].1,
        Some(i) => {
            let (a, b) = (p[i - 1], p[i]);
            a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0).max(1.0)
        }
    }
}
