//! WordCount on real sockets: the `roce::daiet` mapper and reducer behind UDP (DAIET packets,
//! through a `daiet` switch or any router) or TCP (the paper's baseline: the pairs as 20-byte
//! records on a stream), for `softfabric daiet map` and `softfabric daiet reduce`.

use std::io::{BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
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
/// a second (UDP: DAIET has no recovery, so a mapper must not overrun the path).
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
                if let Some(ns) = (rep.packets * 1_000_000_000).checked_div(pps) {
                    let due = Duration::from_nanos(ns);
                    let el = start.elapsed();
                    if due > el {
                        std::thread::sleep(due - el);
                    }
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
/// or `idle` without traffic; write `word count` lines sorted by word to `out`.
pub fn reduce(
    bind: SocketAddr,
    tree: u32,
    ends: u64,
    transport: Transport,
    idle: Duration,
    out: &Path,
) -> Result<ReduceReport, String> {
    let mut red = Reducer::new(tree, AggFn::Sum, ends);
    let mut busy = Duration::ZERO;
    match transport {
        Transport::Udp => {
            let sock = UdpSocket::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
            sock.set_read_timeout(Some(idle)).map_err(|e| e.to_string())?;
            let mut buf = [0u8; 65536];
            while !red.is_done() {
                match sock.recv_from(&mut buf) {
                    Ok((n, _)) => {
                        let t = Instant::now();
                        let _ = red.handle(&buf[..n]);
                        busy += t.elapsed();
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        break;
                    }
                    Err(e) => return Err(format!("recv: {e}")),
                }
            }
        }
        Transport::Tcp => {
            let l = TcpListener::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
            for _ in 0..ends {
                let (mut s, _) = l.accept().map_err(|e| format!("accept: {e}"))?;
                s.set_read_timeout(Some(idle)).ok();
                let mut data = Vec::new();
                s.read_to_end(&mut data).map_err(|e| format!("read: {e}"))?;
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
