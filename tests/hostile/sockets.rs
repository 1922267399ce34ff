//! Every datagram socket a binary listens on, given seeded random datagrams (every length from
//! empty to a full one, random bytes and random bytes behind a valid start): the server stays
//! up, drops each one under a named reason — counted, so received = counted — and stops
//! cleanly on SIGTERM.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cases::Bins;

/// How many datagrams each server gets.
pub const DATAGRAMS: usize = 2000;

/// A server killed if the test fails before it stops it.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Server {
    fn start(bin: &Path, args: &[&str]) -> Self {
        Self(
            Command::new(bin)
                .args(args)
                .env("MALLOC_ARENA_MAX", "2")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn"),
        )
    }

    /// SIGTERM, then its stdout and exit code (it must exit within 2 s).
    fn stop(mut self) -> (String, Option<i32>) {
        let t0 = Instant::now();
        Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status().expect("kill");
        loop {
            if let Some(s) = self.0.try_wait().expect("wait") {
                let mut out = String::new();
                if let Some(o) = self.0.stdout.take() {
                    for l in BufReader::new(o).lines().map_while(Result::ok) {
                        out.push_str(&l);
                        out.push('\n');
                    }
                }
                return (out, s.code());
            }
            assert!(t0.elapsed() < Duration::from_secs(2), "no exit within 2 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Seeded hostile datagrams: every length class, random bytes, or `valid`'s first bytes then
/// random ones.
fn datagrams(seed: u64, valid: &[u8]) -> Vec<Vec<u8>> {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let lens = [0usize, 1, 2, 4, 8, 12, 13, 16, 20, 28, 40, 64, 100, 512, 1024, 1472, 4000, 9000];
    (0..DATAGRAMS)
        .map(|_| {
            let len = lens[(next() % lens.len() as u64) as usize];
            let keep = if next() % 2 == 0 { valid.len().min(len) } else { 0 };
            let mut d: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            d[..keep].copy_from_slice(&valid[..keep]);
            d
        })
        .collect()
}

fn send_all(to: SocketAddr, ds: &[Vec<u8>]) {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    for (i, d) in ds.iter().enumerate() {
        let _ = s.send_to(d, to);
        if i % 64 == 63 {
            // A pace the receivers' socket buffers hold: this tests parsing, not overload.
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    std::thread::sleep(Duration::from_millis(300));
}

/// Datagrams the kernel dropped for the socket bound to `addr` (its receive buffer full): the
/// `drops` column of `/proc/net/udp`. What a loaded machine loses before any program sees it.
fn kernel_drops(addr: SocketAddr) -> u64 {
    let SocketAddr::V4(a) = addr else { return 0 };
    let want = format!("{:08X}:{:04X}", u32::from_le_bytes(a.ip().octets()), a.port());
    let text = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
    text.lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(want.as_str()))
        .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
        .sum()
}

/// The number just before `label` in `text` (`"12 reports"`, `" reports"` → 12).
fn number_before(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)?;
    text[..at].rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// Wait until `addr` (UDP) is bound by someone: a bind of it fails.
fn wait_bound(addr: SocketAddr) {
    let t0 = Instant::now();
    while UdpSocket::bind(addr).is_ok() {
        assert!(t0.elapsed() < Duration::from_secs(20), "{addr} was never bound");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The collector's soft-RNIC (RoCEv2 on UDP 4791).
pub fn collector(repo: &Path, bins: &Bins, dir: &Path) {
    let ip = "127.0.91.1";
    let cfg = dir.join("collector.toml");
    let text = std::fs::read_to_string(repo.join("config/collector.toml")).expect("config");
    std::fs::write(&cfg, text.replace("127.0.0.51", ip)).expect("write");
    let s = Server::start(
        &bins.collector,
        &[
            "serve",
            "--config",
            cfg.to_str().expect("utf-8"),
            "--http",
            "127.0.0.1:0",
            "--stats-interval",
            "0",
        ],
    );
    let to: SocketAddr = format!("{ip}:4791").parse().expect("addr");
    wait_bound(to);
    // A valid BTH start: RC SEND-only to QP 1.
    let valid = [0x04u8, 0x40, 0xff, 0xff, 0, 0, 0, 1, 0x80, 0, 0, 0];
    let ds = datagrams(11, &valid);
    send_all(to, &ds);
    let lost = kernel_drops(to);
    let (out, code) = s.stop();
    assert_eq!(code, Some(0), "{out}");
    // The final counters, as JSON on the last line.
    let total = out.lines().find_map(|l| l.strip_prefix("total: ")).expect("a total line");
    // `"key":N` of the one-line JSON object.
    let g = |k: &str| {
        let at = total.find(&format!("\"{k}\":")).map(|i| i + k.len() + 3);
        at.and_then(|i| total[i..].split(|c: char| !c.is_ascii_digit()).next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let dropped: u64 = [
        "malformed",
        "bad_icrc",
        "unknown_qp",
        "invalid",
        "access_errors",
        "out_of_sequence",
        "duplicates",
        "bad_mads",
        "unroutable",
    ]
    .iter()
    .map(|k| g(k))
    .sum();
    assert_eq!(
        g("rx_packets") + lost,
        DATAGRAMS as u64,
        "every datagram received (or dropped by the kernel): {total}"
    );
    assert_eq!(dropped, g("rx_packets"), "every datagram received dropped under a named reason: {total}");
    println!(
        "hostile sockets: collector soft-RNIC: {DATAGRAMS} datagrams, {dropped} dropped by reason, {lost} by the kernel"
    );
}

/// The DTA translator on the host's UDP stack (reports on 40040, RoCEv2 on 4791).
pub fn translator(repo: &Path, bins: &Bins, dir: &Path) {
    let ip = "127.0.91.2";
    let cfg = dir.join("translator.toml");
    let text = std::fs::read_to_string(repo.join("config/dta-translator-udp.toml")).expect("config");
    let sock = dir.join("translator.sock");
    std::fs::write(
        &cfg,
        text.replace("127.0.0.101", ip)
            .replace("/tmp/softfabric-dta-udp.sock", sock.to_str().expect("utf-8")),
    )
    .expect("write");
    let s = Server::start(&bins.dataplane, &["run", "--config", cfg.to_str().expect("utf-8")]);
    wait_bound(format!("{ip}:40040").parse().expect("addr"));
    // A DTA report's start: version, Key-Write opcode.
    let valid = [0x01u8, 0x01, 0, 0];
    let mut ds = datagrams(12, &valid);
    let (a, b) = ds.split_at_mut(DATAGRAMS / 2);
    let (ra, rb): (SocketAddr, SocketAddr) =
        (format!("{ip}:40040").parse().expect("addr"), format!("{ip}:4791").parse().expect("addr"));
    send_all(ra, a);
    send_all(rb, b);
    let _ = &mut ds;
    let lost = kernel_drops(ra) + kernel_drops(rb);
    let (out, code) = s.stop();
    assert_eq!(code, Some(0), "{out}");
    // The port's line: rx_packets, and rx_errors (datagrams past the buffers' size).
    let port: Vec<u64> = out
        .lines()
        .find(|l| l.starts_with("host"))
        .map(|l| l.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default();
    let (rx, rx_errors) = (port.first().copied(), port.get(6).copied().unwrap_or(0));
    let drops: u64 = out
        .lines()
        .skip_while(|l| !l.starts_with("drops by reason"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    let rx = rx.expect("the port's line");
    assert!(
        rx + rx_errors + lost >= DATAGRAMS as u64,
        "every datagram received, counted as a receive error, or dropped by the kernel ({lost}): {out}"
    );
    assert_eq!(drops, rx, "every frame received dropped under a named reason: {out}");
    println!(
        "hostile sockets: DTA translator (UDP): {rx} frames received and {drops} dropped by reason, {rx_errors} receive errors (too long)"
    );
}

/// Hawkeye's analyzer listening for telemetry reports.
pub fn hawkeye_listen(bins: &Bins, dir: &Path, topology: &Path) {
    let bind = "127.0.91.3:4857";
    let s = Server::start(
        &bins.collector,
        &["hawkeye", "listen", "--bind", bind, "--topology", topology.to_str().expect("utf-8")],
    );
    let to: SocketAddr = bind.parse().expect("addr");
    wait_bound(to);
    let ds = datagrams(13, &[0x48, 0x4b]);
    send_all(to, &ds);
    let lost = kernel_drops(to);
    let (out, code) = s.stop();
    let _ = dir;
    assert_eq!(code, Some(0), "{out}");
    let last = out.lines().last().unwrap_or("");
    let reports = number_before(last, " reports,").unwrap_or(0);
    let bad = number_before(last, " datagrams that were not reports").unwrap_or(0);
    assert_eq!(
        reports + bad + lost,
        DATAGRAMS as u64,
        "every datagram a report, counted as not one, or dropped by the kernel: {out}"
    );
    println!("hostile sockets: hawkeye listen: {bad} of {DATAGRAMS} counted as not reports");
}

/// A DAIET reducer.
pub fn daiet_reduce(bins: &Bins, dir: &Path) {
    let bind = "127.0.91.4:5200";
    let out_file = dir.join("reduced.txt");
    let s = Server::start(
        &bins.softfabric,
        &[
            "daiet",
            "reduce",
            "--bind",
            bind,
            "--tree",
            "1",
            "--ends",
            "1",
            "--idle-s",
            "60",
            "--out",
            out_file.to_str().expect("utf-8"),
        ],
    );
    let to: SocketAddr = bind.parse().expect("addr");
    wait_bound(to);
    let ds = datagrams(14, &[0, 0, 0, 1]);
    send_all(to, &ds);
    let lost = kernel_drops(to);
    let (out, code) = s.stop();
    // Stopped before its END (incomplete, exit 1, said so), or ended by an END a random
    // datagram happened to be.
    assert!(code == Some(1) && out.contains("INCOMPLETE") || code == Some(0), "{out}");
    let n = |label: &str| number_before(&out, label).unwrap_or(0);
    let (packets, ends, refused) = (n(" packets"), n(" ENDs"), n(" refused"));
    assert_eq!(
        packets + ends + refused + lost,
        DATAGRAMS as u64,
        "every datagram counted (or dropped by the kernel): {out}"
    );
    println!("hostile sockets: daiet reduce: {packets} data, {ends} ENDs, {refused} refused of {DATAGRAMS}");
}
