//! The exported v1model programs on BMv2, against our switch: each program's check captures
//! (the input frames, and what this switch sent for them, kept equal to its output by the
//! program's own tests) go through `simple_switch` 1.15.5 running the program exported from the
//! same configuration and compiled by `p4c-bm2-ss`, with the exported `entries.txt` (and the
//! runtime state the capture's run had) loaded by `simple_switch_CLI`. Every frame BMv2 sends on
//! a port must equal the frame our switch sent there, byte for byte, or differ only as a
//! difference the program's documentation names ([`Difference`]): counted, printed, and checked
//! (a RoCE frame whose AckReq bit differs must still carry a correct ICRC).
//!
//! The tools are `../shared/tools/p4c.sh` and `../shared/tools/bmv2.sh` beside the workspace, or
//! the scripts named by `SOFTFABRIC_P4C` and `SOFTFABRIC_BMV2`; where either is absent the test
//! prints SKIPPED — and fails under `SOFTFABRIC_REQUIRE_P4C=1` (`.ci/run` sets both where it
//! finds them). BMv2 needs its runtime packages (`bmv2.sh`'s header; `.ci/run` installs them).
//!
//! BMv2 runs with `--priority-queues 8` (the programs choose queues by priority) and reads
//! each port from `p<i>_in.pcap` after `--use-files` seconds, long enough to load the entries
//! first — the test fails, saying so, if loading took longer.

#[path = "support/p4_tools.rs"]
mod p4_tools;

use std::path::{Path, PathBuf};
use std::process::Command;

use p4_tools::{P4c, bmv2, p4c};
use std::time::{Duration, Instant};

/// How a frame BMv2 sent may differ from ours, each named where the program documents it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Difference {
    /// `docs/p4/dta_translator.md`: the P4 sets the BTH AckReq bit by the PSN's low bits, the
    /// Rust translator by its requester's window rules, and so the ICRC differs — BMv2's must
    /// verify.
    AckReqAndIcrc,
    /// `docs/p4/dta_reporter.md`, `docs/p4/hawkeye.md`: a packet and the copy the program makes
    /// of it (a report, a polling copy) leave one port in the other order — BMv2 sends the
    /// clone first, our switch the packet it came from.
    CloneFirst,
    /// `docs/p4/l2l3.md`: our switch asks ARP for an unresolved next hop itself; on a target
    /// that is the control plane's work, so BMv2 sends no such request (a broadcast ARP request
    /// from a MAC no input frame carried).
    SwitchArpRequest,
    /// `docs/p4/daiet.md`: the P4 takes one pair a pass, so a reducer's flush comes in other
    /// packets than ours — other pair order and packing, a flush built from an END frame with
    /// its padding after the pairs. Per port the DAIET frames (UDP to 10000) must carry the same
    /// pairs (tree, key, value) and the same ENDs, from the same addresses and ports; every
    /// other frame is compared as usual.
    DaietPacking,
    /// `docs/p4/hawkeye.md`: frames of different queues leave a port in another order — BMv2's
    /// priority queues serve the polling copy (its own queue) before data queued earlier, by a
    /// margin that varies with the machine's load; within a queue the order is kept. Checked:
    /// the same frames, and in the same order within each class (EtherType and IPv4 TOS).
    QueueOrder,
}

/// A frame's queue class for [`Difference::QueueOrder`]: EtherType, and the TOS of IPv4.
fn queue_class(f: &[u8]) -> (u16, u8) {
    let ethertype = f.get(12..14).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let tos = if ethertype == 0x0800 { f.get(15).copied().unwrap_or(0) } else { 0 };
    (ethertype, tos)
}

/// A DAIET frame's (addresses, ports, TTL), its pairs (tree, key, value) and its ENDs' trees.
type DaietContent = (Vec<u8>, Vec<(u32, Vec<u8>, u32)>, Vec<u32>);

/// What a port's DAIET frames carry, to compare as [`Difference::DaietPacking`] does: each
/// frame's (addresses, ports, TTL) and, sorted, every pair (tree, key, value) and every END's
/// tree; `None` for a frame that is not DAIET.
fn daiet_content(f: &[u8]) -> Option<DaietContent> {
    if f.len() < 42 + 5 || f[12..14] != [0x08, 0x00] || f[23] != 17 || f[36..38] != 10_000u16.to_be_bytes() {
        return None;
    }
    // Source and destination addresses, UDP ports, TTL.
    let head = [&f[26..34], &f[34..38], &f[22..23]].concat();
    let udp_len = usize::from(u16::from_be_bytes([f[38], f[39]]));
    let body = f.get(42..34 + udp_len)?;
    let word = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    match body[0] & 0x7f {
        0 if body.len() >= 9 => {
            let (n, tree) = (word(&body[1..5]) as usize, word(&body[5..9]));
            let pairs = body[9..]
                .chunks_exact(20)
                .take(n)
                .map(|c| (tree, c[..16].to_vec(), word(&c[16..20])))
                .collect();
            Some((head, pairs, Vec::new()))
        }
        1 => Some((head, Vec::new(), vec![word(&body[1..5])])),
        _ => None,
    }
}

impl Difference {
    /// Whether `ours` and `bmv2` (one frame each) differ only as this difference allows.
    fn explains(self, ours: &[u8], bmv2: &[u8]) -> bool {
        match self {
            Difference::CloneFirst
            | Difference::SwitchArpRequest
            | Difference::DaietPacking
            | Difference::QueueOrder => false,
            Difference::AckReqAndIcrc => {
                // Ethernet, IPv4 (20 B), UDP: the BTH at 42; its byte 8 holds AckReq (bit 7).
                const ACK_REQ: usize = 42 + 8;
                if ours.len() != bmv2.len() || ours.len() < ACK_REQ + 4 {
                    return false;
                }
                let icrc_at = ours.len() - 4;
                let same = (0..ours.len()).all(|k| {
                    ours[k] == bmv2[k] || (k == ACK_REQ && (ours[k] ^ bmv2[k]) == 0x80) || k >= icrc_at
                });
                same && wire::roce::icrc::verify(&bmv2[14..]).is_ok()
            }
        }
    }
}

/// One program's check captures.
struct Case {
    program: &'static str,
    /// The captures' folder, from the workspace root.
    dir: &'static str,
    /// The configuration our switch ran (the P4 is exported from it).
    config: &'static str,
    /// Input capture per port (files in `dir`).
    inputs: &'static [(u16, &'static str)],
    /// Every port of the configuration, and for each what our switch sent (`None`: nothing).
    expected: &'static [(u16, Option<&'static str>)],
    /// The CPU port, whose frames go to the control plane (the Rust switch's is in-process):
    /// counted and printed, not compared.
    cpu: Option<u16>,
    /// `simple_switch_CLI` files in `dir` loaded after `entries.txt`.
    runtime: &'static [&'static str],
    /// Differences the program documents.
    differences: &'static [Difference],
}

const CASES: &[Case] = &[
    Case {
        program: "macswap",
        dir: "docs/p4/macswap",
        config: "replay.toml",
        inputs: &[(0, "in_p0.pcap"), (1, "in_p1.pcap")],
        expected: &[(0, Some("expected_p0.pcap")), (1, Some("expected_p1.pcap"))],
        cpu: None,
        runtime: &[],
        differences: &[],
    },
    Case {
        program: "l2l3",
        dir: "dataplane/tests/data/replay",
        config: "replay.toml",
        inputs: &[(0, "in.pcap")],
        expected: &[
            (0, Some("expected_p0.pcap")),
            (1, Some("expected_p1.pcap")),
            (2, Some("expected_p2.pcap")),
        ],
        cpu: None,
        runtime: &[],
        differences: &[Difference::SwitchArpRequest],
    },
    Case {
        program: "dta_reporter",
        dir: "docs/p4/dta_reporter",
        config: "replay.toml",
        inputs: &[(0, "in_p0.pcap")],
        expected: &[(0, Some("expected_p0.pcap")), (1, Some("expected_p1.pcap"))],
        cpu: None,
        runtime: &[],
        differences: &[Difference::CloneFirst],
    },
    Case {
        program: "dta_translator",
        dir: "docs/p4/dta_translator",
        config: "translator.toml",
        inputs: &[(0, "in_p0.pcap")],
        expected: &[(0, None), (1, Some("expected_p1.pcap"))],
        cpu: Some(64),
        runtime: &["runtime_entries.txt"],
        differences: &[Difference::AckReqAndIcrc],
    },
    Case {
        program: "hawkeye",
        dir: "docs/p4/hawkeye",
        config: "replay.toml",
        inputs: &[(0, "in_p0.pcap")],
        expected: &[
            (0, Some("expected_p0.pcap")),
            (1, Some("expected_p1.pcap")),
            (2, Some("expected_p2.pcap")),
        ],
        cpu: Some(3),
        runtime: &[],
        differences: &[Difference::QueueOrder],
    },
    Case {
        program: "daiet",
        dir: "docs/p4/daiet",
        config: "replay.toml",
        inputs: &[(0, "in_p0.pcap"), (1, "in_p1.pcap")],
        expected: &[
            (0, Some("expected_p0.pcap")),
            (1, Some("expected_p1.pcap")),
            (2, Some("expected_p2.pcap")),
            (3, Some("expected_p3.pcap")),
        ],
        cpu: None,
        runtime: &[],
        differences: &[Difference::DaietPacking],
    },
    Case {
        program: "ufab",
        dir: "docs/p4/ufab",
        config: "replay.toml",
        inputs: &[(0, "in_p0.pcap")],
        expected: &[
            (0, Some("expected_p0.pcap")),
            (1, Some("expected_p1.pcap")),
            (2, Some("expected_p2.pcap")),
        ],
        cpu: None,
        runtime: &[],
        differences: &[],
    },
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The frames of a pcap file (none for a missing or header-less file: BMv2 leaves a port that
/// sent nothing at 0 bytes). Read by hand: BMv2 writes snaplen 0, which `pcap-file` takes for
/// a limit every record breaks; a record cut short (BMv2 writing) ends the list.
fn frames(path: &Path) -> Vec<Vec<u8>> {
    let Ok(b) = std::fs::read(path) else { return Vec::new() };
    if b.len() < 24 {
        return Vec::new();
    }
    let le = b[..4] == [0xd4, 0xc3, 0xb2, 0xa1] || b[..4] == [0x4d, 0x3c, 0xb2, 0xa1];
    let u32_at = |k: usize| {
        let w = [b[k], b[k + 1], b[k + 2], b[k + 3]];
        if le { u32::from_le_bytes(w) } else { u32::from_be_bytes(w) }
    };
    let (mut at, mut out) = (24, Vec::new());
    while at + 16 <= b.len() {
        let n = u32_at(at + 8) as usize;
        if at + 16 + n > b.len() {
            break;
        }
        out.push(b[at + 16..at + 16 + n].to_vec());
        at += 16 + n;
    }
    out
}

fn empty_pcap(path: &Path) {
    let f = std::fs::File::create(path).unwrap();
    let _ = pcap_file::pcap::PcapWriter::new(f).unwrap();
}

/// Runs one case; `Err` says what differs.
fn run(case: &Case, p4c: &P4c, bmv2: &Path, thrift: u16) -> Result<String, String> {
    let src = root().join(case.dir);
    let work = std::env::temp_dir().join(format!("softfabric-bmv2-{}-{}", case.program, std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    // Export (the configuration's captures are relative to its folder) and compile.
    let o = Command::new(env!("CARGO_BIN_EXE_dataplane"))
        .args(["p4", "export", "--config", case.config, "--target", "v1model", "--out"])
        .arg(&work)
        .current_dir(&src)
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(format!("export: {}", String::from_utf8_lossy(&o.stderr)));
    }
    let json = work.join("prog.json");
    let o = p4c
        .command("p4c-bm2-ss", false)
        .arg(work.join(format!("{}.p4", case.program)))
        .arg("-o")
        .arg(&json)
        .current_dir(&work)
        .output()
        .unwrap();
    if !o.status.success() {
        return Err(format!("p4c-bm2-ss: {}", String::from_utf8_lossy(&o.stderr)));
    }
    // Ports: every configured port and the CPU port read a capture (empty where none comes in).
    let mut ports: Vec<u16> = case.expected.iter().map(|e| e.0).chain(case.cpu).collect();
    ports.sort_unstable();
    for &p in &ports {
        let input = work.join(format!("p{p}_in.pcap"));
        match case.inputs.iter().find(|i| i.0 == p) {
            Some((_, f)) => {
                std::fs::copy(src.join(f), &input).unwrap();
            }
            None => empty_pcap(&input),
        }
    }
    let mut cli = String::new();
    for f in std::iter::once(work.join("entries.txt")).chain(case.runtime.iter().map(|f| src.join(f))) {
        let text = std::fs::read_to_string(&f).unwrap();
        cli.extend(
            text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).map(|l| format!("{l}\n")),
        );
    }
    // Long enough to load the entries before the first packet (about 3,000 a second here).
    let delay = 5 + cli.lines().count() as u64 / 300;
    let mut ss = Command::new("bash");
    ss.arg(bmv2).arg("simple_switch").arg("--use-files").arg(delay.to_string());
    for &p in &ports {
        ss.arg("-i").arg(format!("{p}@p{p}"));
    }
    // Its own device ID too: two switches with one ID share a notifications socket
    // (/tmp/bmv2-<id>-notifications.ipc) and the second does not start.
    ss.args(["--thrift-port", &thrift.to_string(), "--device-id", &thrift.to_string()])
        .args(["--log-file", "ss", "--log-flush"])
        .arg(&json)
        .args(["--", "--priority-queues", "8"])
        .current_dir(&work)
        .stdout(std::fs::File::create(work.join("ss.out")).unwrap())
        .stderr(std::fs::File::create(work.join("ss.err")).unwrap());
    let started = Instant::now();
    let mut child = ss.spawn().unwrap();
    let kill = |child: &mut std::process::Child| {
        // simple_switch runs under bash's exec: the child is the switch.
        let _ = child.kill();
        let _ = child.wait();
    };
    // The CLI connects once the switch listens on its Thrift port.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], thrift));
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if started.elapsed() > Duration::from_secs(delay) {
            kill(&mut child);
            return Err(format!("simple_switch never listened on {addr} (see {}/ss.txt)", work.display()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The commands from a file (a pipe written while the CLI's output fills would deadlock).
    let commands = work.join("cli.txt");
    std::fs::write(&commands, &cli).unwrap();
    let o = Command::new("bash")
        .arg(bmv2)
        .args(["simple_switch_CLI", "--thrift-port", &thrift.to_string()])
        .current_dir(&work)
        .stdin(std::fs::File::open(&commands).unwrap())
        .output()
        .unwrap();
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    if !o.status.success() {
        kill(&mut child);
        return Err(format!("simple_switch_CLI failed: {out}"));
    }
    let errors: Vec<&str> = out.lines().filter(|l| l.contains("Error") || l.contains("Invalid")).collect();
    if !errors.is_empty() {
        kill(&mut child);
        return Err(format!("simple_switch_CLI refused entries: {}", errors.join(" | ")));
    }
    if started.elapsed() >= Duration::from_secs(delay) {
        kill(&mut child);
        return Err(format!("loading the entries took {:?}, past --use-files {delay}", started.elapsed()));
    }
    // Wait for every expected frame (BMv2 flushes each), then a second for any extra.
    let want: Vec<(u16, Vec<Vec<u8>>)> = case
        .expected
        .iter()
        .map(|(p, f)| (*p, f.map(|f| frames(&src.join(f))).unwrap_or_default()))
        .collect();
    let until = Instant::now() + Duration::from_secs(delay + 30);
    while Instant::now() < until {
        if want.iter().all(|(p, w)| frames(&work.join(format!("p{p}_out.pcap"))).len() >= w.len()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    kill(&mut child);
    // Compare.
    let mut report = Vec::new();
    let mut wrong = Vec::new();
    // The input frames' source MACs: a frame from any other is the switch's own.
    let sources: Vec<Vec<u8>> = case
        .inputs
        .iter()
        .flat_map(|(_, f)| frames(&src.join(f)))
        .filter(|f| f.len() >= 12)
        .map(|f| f[6..12].to_vec())
        .collect();
    let switch_arp_request = |f: &[u8]| {
        f.len() >= 22
            && f[12..14] == [0x08, 0x06]
            && f[20..22] == [0, 1]
            && !sources.contains(&f[6..12].to_vec())
    };
    let allows = |d: Difference| case.differences.contains(&d);
    for (p, w) in &want {
        let mut got = frames(&work.join(format!("p{p}_out.pcap")));
        let mut w = w.clone();
        let mut explained = 0;
        if allows(Difference::DaietPacking) {
            // The DAIET frames apart, compared by content; the rest below, frame by frame.
            let content = |fs: &[Vec<u8>]| {
                let (mut heads, mut pairs, mut ends) = (Vec::new(), Vec::new(), Vec::new());
                for c in fs.iter().filter_map(|f| daiet_content(f)) {
                    heads.push(c.0);
                    pairs.extend(c.1);
                    ends.extend(c.2);
                }
                heads.sort();
                heads.dedup();
                pairs.sort();
                ends.sort();
                (heads, pairs, ends)
            };
            let (ours, theirs) = (content(&w), content(&got));
            if ours != theirs {
                wrong.push(format!(
                    "port {p}: DAIET content differs: ours {} pairs and ENDs {:?}, BMv2's {} pairs and ENDs {:?}",
                    ours.1.len(),
                    ours.2,
                    theirs.1.len(),
                    theirs.2
                ));
            }
            explained += got.iter().filter(|f| daiet_content(f).is_some() && !w.contains(f)).count();
            let count = |fs: &[Vec<u8>]| fs.iter().filter(|f| daiet_content(f).is_some()).count();
            report.push(format!(
                "p{p} DAIET frames {}/{} carrying {} pairs and {} ENDs",
                count(&got),
                count(&w),
                theirs.1.len(),
                theirs.2.len()
            ));
            w.retain(|f| daiet_content(f).is_none());
            got.retain(|f| daiet_content(f).is_none());
        }
        if allows(Difference::QueueOrder) && got != w {
            let (mut a, mut b) = (w.clone(), got.clone());
            a.sort();
            b.sort();
            let classes: Vec<(u16, u8)> = w.iter().chain(&got).map(|f| queue_class(f)).collect();
            let in_class = |fs: &[Vec<u8>], c: (u16, u8)| -> Vec<Vec<u8>> {
                fs.iter().filter(|f| queue_class(f) == c).cloned().collect()
            };
            if a == b && classes.iter().all(|&c| in_class(&w, c) == in_class(&got, c)) {
                explained += w.iter().zip(&got).filter(|(x, y)| x != y).count();
                got = w.clone();
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < w.len() || j < got.len() {
            let (ours, theirs) = (w.get(i), got.get(j));
            if ours.is_some() && ours == theirs {
                (i, j) = (i + 1, j + 1);
            } else if let (Some(o), Some(t)) = (ours, theirs)
                && case.differences.iter().any(|d| d.explains(o, t))
            {
                explained += 1;
                (i, j) = (i + 1, j + 1);
            } else if allows(Difference::CloneFirst)
                && i + 1 < w.len()
                && j + 1 < got.len()
                && w[i] == got[j + 1]
                && w[i + 1] == got[j]
            {
                explained += 2;
                (i, j) = (i + 2, j + 2);
            } else if allows(Difference::SwitchArpRequest) && ours.is_some_and(|o| switch_arp_request(o)) {
                explained += 1;
                i += 1;
            } else {
                let (a, b) = (ours.map_or(&[][..], |o| &o[..]), theirs.map_or(&[][..], |t| &t[..]));
                let at: Vec<usize> = (0..a.len().min(b.len())).filter(|&k| a[k] != b[k]).take(8).collect();
                wrong.push(format!(
                    "port {p}: our frame {i} ({} B) against BMv2's frame {j} ({} B), first differing bytes at {at:?}",
                    a.len(),
                    b.len()
                ));
                (i, j) = ((i + 1).min(w.len()), (j + 1).min(got.len()));
            }
        }
        report.push(format!("p{p} {}/{} ({explained} by a named difference)", got.len(), w.len()));
    }
    if let Some(c) = case.cpu {
        report
            .push(format!("cpu p{c} {} (not compared)", frames(&work.join(format!("p{c}_out.pcap"))).len()));
    }
    let line = format!("{:<15} {}", case.program, report.join(", "));
    if wrong.is_empty() {
        let _ = std::fs::remove_dir_all(&work);
        Ok(line)
    } else {
        Err(format!("{line}\n  {}\n  (kept in {})", wrong.join("\n  "), work.display()))
    }
}

#[test]
fn every_program_with_check_captures_behaves_on_bmv2_as_on_our_switch() {
    let (Some(p4c), Some(bmv2)) = (p4c(), bmv2()) else {
        assert!(
            std::env::var("SOFTFABRIC_REQUIRE_P4C").as_deref() != Ok("1"),
            "SOFTFABRIC_REQUIRE_P4C=1 and no p4c.sh or bmv2.sh (../shared/tools, or SOFTFABRIC_P4C / SOFTFABRIC_BMV2)"
        );
        eprintln!("SKIPPED: no p4c.sh or bmv2.sh (../shared/tools, or SOFTFABRIC_P4C / SOFTFABRIC_BMV2)");
        return;
    };
    // Two at a time: p4c takes most of the time.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(case) = CASES.get(i) else { break };
                    // A thrift port per case and process (cases run two at a time).
                    let thrift = 20_000 + (std::process::id() % 2_000) as u16 * 8 + i as u16;
                    let mut r = run(case, &p4c, &bmv2, thrift);
                    // DAIET's flush recirculates; under host load BMv2 lets the next input
                    // frame (the END) overtake the recirculating one and flushes a pair
                    // unmerged (seen only with the machine busy: 5 pairs for our 4). The same
                    // captures are run again, at most three times in all; a difference in every
                    // run still fails, and a pass after a retry says so.
                    let mut runs = 1;
                    while runs < 3 && r.as_ref().is_err_and(|e| e.contains("DAIET content differs")) {
                        runs += 1;
                        r = run(case, &p4c, &bmv2, thrift).map(|l| {
                            format!("{l} (passed on run {runs}: BMv2's recirculation raced under load)")
                        });
                    }
                    results.lock().unwrap().push((i, r));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    let mut failed = Vec::new();
    for (_, r) in &results {
        match r {
            Ok(l) => eprintln!("{l}"),
            Err(e) => {
                eprintln!("{e}");
                failed.push(e.clone());
            }
        }
    }
    assert!(failed.is_empty(), "BMv2 and our switch differ:\n{}", failed.join("\n"));
}
