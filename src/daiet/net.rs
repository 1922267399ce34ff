//! WordCount on real sockets: the `roce::daiet` mapper and reducer behind UDP (DAIET packets,
//! through a `daiet` switch or any router) or TCP (the paper's baseline: the pairs as 20-byte
//! records on a stream), for `softfabric daiet map` and `softfabric daiet reduce`.

use std::io::{BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use roce::daiet::{AggFn, Mapper, Reducer, word_of};
use wire::daiet::{DaietEntry, ENTRY_LEN};

/// How the pairs travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// DAIET packets over UDP.
    Udp,
    /// 20-byte records over TCP.
    Tcp,
}

impl Transport {
    /// From its name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "udp" | "daiet" => Some(Self::Udp),
            "tcp" => Some(Self::Tcp),
            _ => None,
        }
    }
}

/// What a mapper sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct MapReport {
    /// Pairs.
    pub pairs: u64,
    /// Datagrams (UDP) or 0.
    pub packets: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// Words longer than a key, not sent.
    pub too_long: u64,
}

/// Map split `i` of `n` of `text` to `reducers` (tree `trees[r]` each), at most `pps` datagrams
/// a second (UDP: DAIET has no recovery, so a mapper must not overrun the path). Stops when
/// `stop` is set (SIGTERM), with an error saying how far it got.
#[allow(clippy::too_many_arguments)]
pub fn map(
    text: &str,
    i: usize,
    n: usize,
    reducers: &[SocketAddr],
    trees: &[u32],
    combine: bool,
    transport: Transport,
    pps: u64,
    max_entries: usize,
    stop: &AtomicBool,
) -> Result<MapReport, String> {
    let mut m = Mapper::new(trees.to_vec(), if transport == Transport::Tcp { 1000 } else { max_entries });
    roce::daiet::map_words(roce::daiet::split(text, i, n), combine, &mut m);
    let mut buf = vec![0u8; wire::daiet::PREAMBLE_LEN + 1000 * ENTRY_LEN];
    let mut rep = MapReport::default();
    match transport {
        Transport::Udp => {
            let sock = UdpSocket::bind("0.0.0.0:0").map_err(|e| format!("bind: {e}"))?;
            let start = Instant::now();
            while let Some((r, len)) = m.poll_transmit(&mut buf) {
                if let Some(ns) = rep.packets.saturating_mul(1_000_000_000).checked_div(pps) {
                    let due = Duration::from_nanos(ns);
                    // Paced, in slices short enough to notice a stop.
                    // `elapsed` read once per round: read twice, the clock may pass `due`
                    // between the test and the subtraction (a panic, seen in CI).
                    loop {
                        let left = due.saturating_sub(start.elapsed());
                        if left.is_zero() || stop.load(Ordering::Relaxed) {
                            break;
                        }
                        std::thread::sleep(left.min(Duration::from_millis(50)));
                    }
                }
                if stop.load(Ordering::Relaxed) {
                    return Err(format!(
                        "interrupted after {} datagrams: the reducers' result is incomplete",
                        rep.packets
                    ));
                }
                sock.send_to(&buf[..len], reducers[r])
                    .map_err(|e| format!("send to {}: {e}", reducers[r]))?;
                rep.packets += 1;
            }
        }
        Transport::Tcp => {
            let mut streams: Vec<BufWriter<TcpStream>> = Vec::new();
            for a in reducers {
                let s = TcpStream::connect(a).map_err(|e| format!("connect {a}: {e}"))?;
                streams.push(BufWriter::new(s));
            }
            while let Some((r, len)) = m.poll_transmit(&mut buf) {
                if stop.load(Ordering::Relaxed) {
                    return Err("interrupted: the reducers' result is incomplete".into());
                }
                if let Ok(wire::daiet::DaietRepr::Data { entries, .. }) =
                    wire::daiet::DaietRepr::parse(&buf[..len])
                {
                    streams[r].write_all(entries.as_bytes()).map_err(|e| format!("write: {e}"))?;
                }
            }
            for s in streams {
                s.into_inner().map_err(|e| format!("flush: {e}"))?.shutdown(std::net::Shutdown::Write).ok();
            }
        }
    }
    rep.pairs = m.stats.pairs;
    rep.bytes = m.stats.bytes;
    rep.too_long = m.stats.too_long;
    Ok(rep)
}

/// The most a reducer holds of one mapper's TCP stream (1 GiB).
pub const MAX_STREAM_BYTES: u64 = 1 << 30;

/// What a reducer received.
#[derive(Debug, Clone)]
pub struct ReduceReport {
    /// The reducer's counters.
    pub stats: roce::daiet::ReducerStats,
    /// Whether every expected END (or stream) arrived before the timeout.
    pub complete: bool,
    /// Handling and sorting, wall time.
    pub busy: Duration,
    /// Distinct words.
    pub words: usize,
}

/// Reduce tree `tree` on `bind` until `ends` END packets (UDP) or `ends` closed streams (TCP),
/// or `idle` without traffic, or `stop` (SIGTERM); write `word count` lines sorted by word to
/// `out`. A TCP stream is held in memory: one past [`MAX_STREAM_BYTES`] is refused.
pub fn reduce(
    bind: SocketAddr,
    tree: u32,
    ends: u64,
    transport: Transport,
    idle: Duration,
    out: &Path,
    stop: &AtomicBool,
) -> Result<ReduceReport, String> {
    let mut red = Reducer::new(tree, AggFn::Sum, ends);
    let mut busy = Duration::ZERO;
    // Waits in slices short enough to notice a stop; `idle` counts from the last arrival.
    let slice = idle.min(Duration::from_millis(50));
    match transport {
        Transport::Udp => {
            let sock = UdpSocket::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
            sock.set_read_timeout(Some(slice)).map_err(|e| e.to_string())?;
            let mut buf = [0u8; 65536];
            let mut last = Instant::now();
            while !red.is_done() && !stop.load(Ordering::Relaxed) && last.elapsed() < idle {
                match sock.recv_from(&mut buf) {
                    Ok((n, _)) => {
                        last = Instant::now();
                        let t = Instant::now();
                        let _ = red.handle(&buf[..n]);
                        busy += t.elapsed();
                    }
                    Err(e) if ports::input::is_idle_read(&e) => {}
                    Err(e) => return Err(format!("recv: {e}")),
                }
            }
        }
        Transport::Tcp => {
            let l = TcpListener::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
            l.set_nonblocking(true).map_err(|e| e.to_string())?;
            let mut last = Instant::now();
            let mut accepted = 0;
            while accepted < ends && !stop.load(Ordering::Relaxed) && last.elapsed() < idle {
                let mut s = match l.accept() {
                    Ok((s, _)) => s,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                        ) =>
                    {
                        std::thread::sleep(slice.min(Duration::from_millis(5)));
                        continue;
                    }
                    Err(e) => return Err(format!("accept: {e}")),
                };
                accepted += 1;
                s.set_nonblocking(false).ok();
                s.set_read_timeout(Some(idle)).ok();
                let mut data = Vec::new();
                (&mut s)
                    .take(MAX_STREAM_BYTES + 1)
                    .read_to_end(&mut data)
                    .map_err(|e| format!("read: {e}"))?;
                if data.len() as u64 > MAX_STREAM_BYTES {
                    return Err(format!("a mapper's stream is longer than {} MiB", MAX_STREAM_BYTES >> 20));
                }
                last = Instant::now();
                let t = Instant::now();
                for rec in data.chunks_exact(ENTRY_LEN) {
                    let e = DaietEntry::read(rec);
                    red.merge(e.key, e.value);
                }
                red.stats.bytes += data.len() as u64;
                red.stats.ends += 1;
                busy += t.elapsed();
            }
        }
    }
    let t = Instant::now();
    let sorted = red.sorted();
    busy += t.elapsed();
    let f = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = BufWriter::new(f);
    let mut lines: Vec<(String, u32)> = sorted.iter().map(|(k, v)| (word_of(k), *v)).collect();
    lines.sort();
    for (word, c) in &lines {
        writeln!(w, "{word} {c}").map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())?;
    Ok(ReduceReport { stats: red.stats, complete: red.is_done(), busy, words: lines.len() })
}
