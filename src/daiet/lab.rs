//! DAIET's WordCount in the lab (seed `002` §5): mappers and reducers as `roce::daiet` cores,
//! switches running the real `daiet` program (or `l2l3` for the UDP baseline) from generated
//! configurations, frames moved between them in memory. What the paper measures is volume —
//! bytes and packets received at each reducer — and the reducers' work, so the lab is
//! frame-exact but untimed: no links, no queues filling (every port is drained after every
//! packet), no clock but the switches' ticks. Reducer time is the wall time each reducer spends
//! handling what it received and sorting its result.
//!
//! Topologies: `leaves = 0`, one switch with every mapper and reducer on it (the paper's
//! testbed: one BMv2); `leaves = L`, a two-level tree — L leaf switches share the mappers, each
//! with an uplink to one spine switch that holds the reducers; the leaves' trees have their
//! mappers as children, the spine's has the L leaves.
//!
//! Modes: `daiet` (aggregation on), `udp` (the same DAIET packets through `l2l3` switches: the
//! paper's "UDP without in-network aggregation"), and `tcp`, modelled: each mapper's stream to a
//! reducer is its pairs as 20-byte records, cut into segments of 1 448 bytes (an MSS with
//! timestamps), each received as a frame of 66 header bytes plus the segment, with the SYN and
//! the FIN; the reducer merges the same pairs.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::Instant;

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::config::Config;
use dataplane::switch::DynSwitch;
use roce::daiet::{AggFn, CorpusSpec, Mapper, Reducer, word_of};
use serde::Deserialize;
use wire::EthernetAddress;
use wire::stack::UdpFlow;

/// TCP's maximum segment with timestamps, bytes.
pub const TCP_MSS: u64 = 1448;
/// Ethernet, IPv4 and TCP with timestamps, bytes per segment.
pub const TCP_HEADERS: u64 = 14 + 20 + 32;

/// A lab file (`config/labs/daiet/*.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabFile {
    /// Mappers (the paper: 24).
    pub mappers: usize,
    /// Reducers, one tree each (the paper: 12).
    pub reducers: usize,
    /// 0: one switch; L: L leaf switches under one spine.
    #[serde(default)]
    pub leaves: usize,
    /// The corpus.
    pub corpus: CorpusFile,
    /// Register cells per tree, one run each (the paper: 16 384).
    pub cells: Vec<usize>,
    /// Mapper-side combining (count each word once per mapper).
    #[serde(default)]
    pub combine: bool,
    /// Pairs per packet (the paper: 10).
    #[serde(default = "ten")]
    pub max_entries: usize,
    /// Fraction of mapper packets lost on their way to the first switch (DAIET has no
    /// recovery: what this does is measured), and its seed.
    #[serde(default)]
    pub loss: f64,
}

fn ten() -> usize {
    10
}

/// The corpus section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusFile {
    /// Bytes of text.
    pub bytes: usize,
    /// Distinct words.
    pub vocabulary: usize,
    /// Zipf exponent (0: uniform).
    pub zipf: f64,
    /// Seed.
    pub seed: u64,
    /// Draw only words whose register index is distinct at the smallest `cells` (the paper's
    /// collision-free corpus).
    #[serde(default)]
    pub collision_free: bool,
}

/// How the pairs travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// In-network aggregation.
    Daiet,
    /// DAIET packets through `l2l3` switches.
    Udp,
    /// The TCP model.
    Tcp,
}

impl Mode {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Daiet => "daiet",
            Self::Udp => "udp",
            Self::Tcp => "tcp",
        }
    }
}

/// What one reducer received and did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReducerRun {
    /// Packets received (data and END; TCP: segments, SYN and FIN).
    pub packets: u64,
    /// Frame bytes received.
    pub bytes: u64,
    /// Pairs received.
    pub pairs: u64,
    /// Handling and sorting, ns of wall time.
    pub time_ns: u64,
}

/// One run: a mode at one register size.
#[derive(Debug, Clone)]
pub struct Run {
    /// The mode.
    pub mode: Mode,
    /// Register cells per tree (daiet).
    pub cells: usize,
    /// Per reducer.
    pub reducers: Vec<ReducerRun>,
    /// Pairs the mappers sent.
    pub pairs_sent: u64,
    /// Mapper packets lost before the first switch, and the pairs in them.
    pub lost_packets: u64,
    /// Pairs in the lost packets.
    pub lost_pairs: u64,
    /// Switch counters, summed over the switches: pairs received, aggregated, spilled.
    pub switch_pairs: (u64, u64, u64),
    /// Switch drops (every reason), summed.
    pub switch_drops: u64,
    /// Whether every reducer saw all its ENDs.
    pub complete: bool,
    /// Reducers still waiting for an END (a tree whose END was lost never flushes).
    pub incomplete: usize,
    /// Whether the reducers' output equals the plain word count.
    pub exact: bool,
    /// Words whose count differs from the plain count (lost or wrong).
    pub words_off: usize,
    /// Occurrences missing from the reducers' output.
    pub count_missing: u64,
}

/// The switch's register index of a key (CRC-32, as `daiet`'s hash unit).
pub fn register_index(k: &[u8; 16]) -> usize {
    dataplane::model::HashAlgo::Crc32IsoHdlc.hash(k) as usize
}

/// The largest corpus a DAIET lab file may ask for (256 MiB; `daiet corpus` makes up to 1 GiB).
pub const MAX_LAB_CORPUS: usize = 256 << 20;

impl LabFile {
    /// A key's (tree, cell) at the smallest register size, as one number: words with distinct
    /// ones never collide in any switch (each tree has its own cells).
    pub fn collision_index(&self, k: &[u8; 16]) -> usize {
        let cells = self.cells.iter().copied().min().unwrap_or(1);
        roce::daiet::partition(k, self.reducers) * cells + register_index(k) % cells
    }
}

impl LabFile {
    /// Read and check a lab file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = ports::input::read_text(path, ports::input::MAX_TEXT_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let f: Self = toml::from_str(&text).map_err(|e| {
            format!("{}: {}", path.display(), ports::input::toml_message(&text, e.span(), e.message()))
        })?;
        let bad = |k: &str, why: &str| Err(format!("{}: {k}: {why}", path.display()));
        if f.mappers == 0 || f.mappers > 200 {
            return bad("mappers", "expected 1 to 200");
        }
        if f.reducers == 0 || f.reducers > 50 {
            return bad("reducers", "expected 1 to 50");
        }
        if f.leaves > f.mappers {
            return bad("leaves", "expected at most one leaf per mapper");
        }
        if f.cells.is_empty() || f.cells.iter().any(|c| !c.is_power_of_two() || *c > 1 << 20) {
            return bad("cells", "expected powers of two up to 1 048 576");
        }
        // Each register size is a whole experiment.
        if f.cells.len() > 16 || f.cells.iter().enumerate().any(|(i, c)| f.cells[..i].contains(c)) {
            return bad("cells", "expected at most 16 register sizes, each once");
        }
        // The lab makes the corpus and runs it through every mode and register size, in memory.
        if f.corpus.bytes > MAX_LAB_CORPUS {
            return bad(
                "corpus.bytes",
                &format!("{}: at most {MAX_LAB_CORPUS} bytes in the lab", f.corpus.bytes),
            );
        }
        if let Err((k, why)) = f.corpus_spec().check() {
            return match k {
                "zipf_s" => bad("corpus.zipf", &why),
                // The cells come from reducers × the smallest register: say so.
                "collision_free_cells" => bad(
                    "corpus.collision_free",
                    &format!(
                        "a collision-free corpus needs a cell per word: reducers × the smallest of cells = {} cells, for a vocabulary of {} (at most 2^24 cells)",
                        f.corpus_spec().collision_free_cells.unwrap_or(0),
                        f.corpus.vocabulary
                    ),
                ),
                k => bad(&format!("corpus.{k}"), &why),
            };
        }
        if !(0.0..1.0).contains(&f.loss) {
            return bad("loss", "expected a fraction in [0, 1)");
        }
        if !(1..=64).contains(&f.max_entries) {
            return bad("max_entries", "expected 1 to 64");
        }
        Ok(f)
    }

    /// The corpus's specification.
    pub fn corpus_spec(&self) -> CorpusSpec {
        CorpusSpec {
            bytes: self.corpus.bytes,
            vocabulary: self.corpus.vocabulary,
            zipf_s: self.corpus.zipf,
            seed: self.corpus.seed,
            // Distinct (tree, cell) pairs: `collision_index` below, modulo reducers × cells.
            collision_free_cells: self
                .corpus
                .collision_free
                .then(|| self.reducers * self.cells.iter().copied().min().unwrap_or(1)),
        }
    }
}

fn mac(kind: u8, i: usize) -> EthernetAddress {
    EthernetAddress([2, 0xd0, kind, 0, (i >> 8) as u8, i as u8])
}

/// Mapper `i`'s address (10.1.i/256.i%256 … on its switch port), reducer `r`'s.
fn mapper_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 1, i as u8, 2)
}
fn reducer_ip(r: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 2, r as u8, 2)
}

/// A switch's configuration: `ports` as (name, address/24 of the switch, MAC), neighbours,
/// routes and trees.
fn switch_cfg(
    program: &str,
    ports: &[(String, Ipv4Addr, EthernetAddress)],
    neighbors: &[(Ipv4Addr, EthernetAddress, String)],
    routes: &[(String, Ipv4Addr)],
    trees: &[(u32, Ipv4Addr, usize)],
    cells: usize,
    max_entries: usize,
) -> String {
    let mut s = format!("program = \"{program}\"\n");
    for (name, ip, m) in ports {
        s.push_str(&format!(
            "[[port]]\nname = \"{name}\"\nbackend = \"ring\"\nspeed = \"100G\"\nmac = \"{m}\"\nipv4 = [\"{ip}/24\"]\n"
        ));
    }
    s.push_str("[l2l3]\nneighbor = [");
    let nb: Vec<String> = neighbors
        .iter()
        .map(|(ip, m, p)| format!("{{ ip = \"{ip}\", mac = \"{m}\", port = \"{p}\" }}"))
        .collect();
    s.push_str(&nb.join(", "));
    s.push_str("]\nroute = [");
    let rt: Vec<String> = routes
        .iter()
        .map(|(prefix, via)| format!("{{ prefix = \"{prefix}\", via = [\"{via}\"] }}"))
        .collect();
    s.push_str(&rt.join(", "));
    s.push_str("]\n");
    if program == "daiet" {
        s.push_str(&format!("[daiet]\nmax_entries = {max_entries}\n"));
        for (id, reducer, children) in trees {
            s.push_str(&format!(
                "[[daiet.tree]]\nid = {id}\nreducer = \"{reducer}\"\nchildren = {children}\ncells = {cells}\n"
            ));
        }
    }
    s
}

/// Where a switch port leads.
#[derive(Debug, Clone, Copy)]
enum Peer {
    Mapper,
    Reducer(usize),
    /// Switch `s`, its port `p`.
    Switch(usize, u16),
}

struct Fabric {
    switches: Vec<Box<dyn DynSwitch<PktBuf>>>,
    /// Per switch, per port.
    peers: Vec<Vec<Peer>>,
    /// Mapper `i`: (switch, port, the switch's MAC there).
    mapper_at: Vec<(usize, u16, EthernetAddress)>,
}

fn build(f: &LabFile, mode: Mode, cells: usize) -> Result<Fabric, String> {
    let program = if mode == Mode::Daiet { "daiet" } else { "l2l3" };
    let (m, r) = (f.mappers, f.reducers);
    let mut cfgs = Vec::new();
    let mut peers = Vec::new();
    let mut mapper_at = Vec::new();
    let reducer_nb = |i: usize, port: String| (reducer_ip(i), mac(2, i), port);
    if f.leaves == 0 {
        let mut ports = Vec::new();
        let mut pe = Vec::new();
        for i in 0..m {
            ports.push((format!("m{i}"), Ipv4Addr::new(10, 1, i as u8, 1), mac(0x10, i)));
            pe.push(Peer::Mapper);
            mapper_at.push((0, i as u16, mac(0x10, i)));
        }
        let mut nbs = Vec::new();
        for i in 0..r {
            ports.push((format!("r{i}"), Ipv4Addr::new(10, 2, i as u8, 1), mac(0x20, i)));
            pe.push(Peer::Reducer(i));
            nbs.push(reducer_nb(i, format!("r{i}")));
        }
        let trees: Vec<_> = (0..r).map(|i| (i as u32 + 1, reducer_ip(i), m)).collect();
        cfgs.push(switch_cfg(program, &ports, &nbs, &[], &trees, cells, f.max_entries));
        peers.push(pe);
    } else {
        let l = f.leaves;
        // The spine: a downlink per leaf (10.3.j.1 ↔ leaf 10.3.j.2), the reducers.
        let mut ports = Vec::new();
        let mut pe = Vec::new();
        let mut nbs = Vec::new();
        for j in 0..l {
            ports.push((format!("d{j}"), Ipv4Addr::new(10, 3, j as u8, 1), mac(0x30, j)));
            pe.push(Peer::Switch(1 + j, 0));
            nbs.push((Ipv4Addr::new(10, 3, j as u8, 2), mac(0x31, j), format!("d{j}")));
        }
        for i in 0..r {
            ports.push((format!("r{i}"), Ipv4Addr::new(10, 2, i as u8, 1), mac(0x20, i)));
            pe.push(Peer::Reducer(i));
            nbs.push(reducer_nb(i, format!("r{i}")));
        }
        let trees: Vec<_> = (0..r).map(|i| (i as u32 + 1, reducer_ip(i), l)).collect();
        cfgs.push(switch_cfg(program, &ports, &nbs, &[], &trees, cells, f.max_entries));
        peers.push(pe);
        // The leaves: an uplink (port 0), their mappers.
        for j in 0..l {
            let mine: Vec<usize> = (0..m).filter(|i| i % l == j).collect();
            let mut ports = vec![("up".to_string(), Ipv4Addr::new(10, 3, j as u8, 2), mac(0x31, j))];
            let mut pe = vec![Peer::Switch(0, j as u16)];
            for (k, &i) in mine.iter().enumerate() {
                ports.push((format!("m{i}"), Ipv4Addr::new(10, 1, i as u8, 1), mac(0x10, i)));
                pe.push(Peer::Mapper);
                mapper_at.push((1 + j, 1 + k as u16, mac(0x10, i)));
            }
            let nbs = vec![(Ipv4Addr::new(10, 3, j as u8, 1), mac(0x30, j), "up".to_string())];
            let routes = vec![("10.2.0.0/16".to_string(), Ipv4Addr::new(10, 3, j as u8, 1))];
            let trees: Vec<_> = (0..r).map(|i| (i as u32 + 1, reducer_ip(i), mine.len())).collect();
            cfgs.push(switch_cfg(program, &ports, &nbs, &routes, &trees, cells, f.max_entries));
            peers.push(pe);
        }
        // Mapper i is the k-th of leaf i % l: reorder mapper_at by mapper index.
        let mut by_mapper = vec![(0, 0, mac(0, 0)); m];
        let mut it = mapper_at.into_iter();
        for j in 0..l {
            for i in (0..m).filter(|i| i % l == j) {
                by_mapper[i] = it.next().ok_or("mapper placement")?;
            }
        }
        mapper_at = by_mapper;
    }
    let mut switches = Vec::new();
    for (k, text) in cfgs.iter().enumerate() {
        let cfg = Config::parse(Path::new(&format!("daiet-lab-switch{k}.toml")), text)
            .map_err(|e| e.to_string())?;
        switches.push(dataplane::programs::build::<PktBuf>(&cfg).map_err(|e| e.to_string())?);
    }
    Ok(Fabric { switches, peers, mapper_at })
}

/// Run `mode` at `cells` over `text`; `want` the plain count.
pub fn run(
    f: &LabFile,
    text: &str,
    want: &BTreeMap<String, u64>,
    mode: Mode,
    cells: usize,
) -> Result<Run, String> {
    let trees: Vec<u32> = (1..=f.reducers as u32).collect();
    let ends = match (mode, f.leaves) {
        (Mode::Daiet, _) => 1,
        _ => f.mappers as u64,
    };
    let mut reducers: Vec<Reducer> = trees.iter().map(|&t| Reducer::new(t, AggFn::Sum, ends)).collect();
    let mut runs = vec![ReducerRun::default(); f.reducers];
    let mut run = Run {
        mode,
        cells,
        reducers: Vec::new(),
        pairs_sent: 0,
        lost_packets: 0,
        lost_pairs: 0,
        switch_pairs: (0, 0, 0),
        switch_drops: 0,
        complete: false,
        incomplete: 0,
        exact: false,
        words_off: 0,
        count_missing: 0,
    };
    let mut loss_state = f.corpus.seed ^ 0x1055;
    if mode == Mode::Tcp {
        for i in 0..f.mappers {
            let mut mapper = Mapper::new(trees.clone(), 1000);
            roce::daiet::map_words(roce::daiet::split(text, i, f.mappers), f.combine, &mut mapper);
            // The mapper's pairs per reducer, one stream each.
            let mut streams: Vec<Vec<wire::daiet::DaietEntry>> = vec![Vec::new(); f.reducers];
            drain_mapper_pairs(&mut mapper, &mut streams);
            run.pairs_sent += mapper.stats.pairs;
            for (r, pairs) in streams.into_iter().enumerate() {
                let bytes = pairs.len() as u64 * wire::daiet::ENTRY_LEN as u64;
                let segs = bytes.div_ceil(TCP_MSS);
                let rr = &mut runs[r];
                rr.packets += segs + 2;
                rr.bytes += bytes + (segs + 2) * TCP_HEADERS;
                rr.pairs += pairs.len() as u64;
                let t = Instant::now();
                for p in pairs {
                    reducers[r].merge(p.key, p.value);
                }
                reducers[r].stats.ends += 1;
                rr.time_ns += t.elapsed().as_nanos() as u64;
            }
        }
    } else {
        let mut fab = build(f, mode, cells)?;
        let mut pool = HeapPool::new(8192, 2048);
        let mut now = 1_000u64;
        let mut payload = vec![0u8; 2048];
        let mut frame = vec![0u8; 2048];
        let mut out = Vec::new();
        for i in 0..f.mappers {
            let mut mapper = Mapper::new(trees.clone(), f.max_entries);
            roce::daiet::map_words(roce::daiet::split(text, i, f.mappers), f.combine, &mut mapper);
            let (sw, port, sw_mac) = fab.mapper_at[i];
            while let Some((r, len)) = mapper.poll_transmit(&mut payload) {
                let flow = UdpFlow::host_udp(
                    mac(1, i),
                    sw_mac,
                    SocketAddrV4::new(mapper_ip(i), 10000),
                    SocketAddrV4::new(reducer_ip(r), 10000),
                );
                let n = flow
                    .emit_with(len, false, &mut frame, |p| {
                        p.copy_from_slice(&payload[..len]);
                        Ok(())
                    })
                    .map_err(|e| e.to_string())?;
                if f.loss > 0.0 && roce::daiet::uniform(&mut loss_state) < f.loss {
                    run.lost_packets += 1;
                    run.lost_pairs += u64::from(
                        wire::daiet::DaietPacket::new_unchecked(&payload[..len]).number_of_entries(),
                    );
                    continue;
                }
                let mut p = pool.alloc().ok_or("buffer pool exhausted")?;
                p.append(n).ok_or("frame too long")?.copy_from_slice(&frame[..n]);
                now += 100;
                fab.switches[sw].receive(now, port, p, &mut pool);
                deliver(&mut fab, &mut pool, &mut reducers, &mut runs, now, &mut out);
            }
            run.pairs_sent += mapper.stats.pairs;
        }
        // The flushes: tick until nothing moves.
        let mut idle = 0;
        while idle < 3 {
            now += 20_000;
            for s in fab.switches.iter_mut() {
                s.tick(now, &mut pool);
            }
            if deliver(&mut fab, &mut pool, &mut reducers, &mut runs, now, &mut out) == 0 {
                idle += 1;
            } else {
                idle = 0;
            }
        }
        for s in fab.switches.iter_mut() {
            run.switch_drops += s.counters().drops.iter().sum::<u64>();
            if mode == Mode::Daiet {
                let text = s.command("show daiet", &[], now)?;
                let field = |name: &str| -> u64 {
                    let mut w = text.split_whitespace();
                    while let Some(x) = w.next() {
                        if x == name {
                            return w.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                        }
                    }
                    0
                };
                run.switch_pairs.0 += field("pairs");
                run.switch_pairs.1 += field("aggregated");
                run.switch_pairs.2 += field("spilled");
            }
        }
    }
    // Sorting is the reducer's work too.
    let mut got = BTreeMap::new();
    for (r, red) in reducers.iter().enumerate() {
        let t = Instant::now();
        let sorted = red.sorted();
        runs[r].time_ns += t.elapsed().as_nanos() as u64;
        for (k, v) in sorted {
            got.insert(word_of(&k), u64::from(v));
        }
    }
    run.incomplete = reducers.iter().filter(|r| !r.is_done()).count();
    run.complete = run.incomplete == 0;
    for (w, &c) in want {
        let g = got.get(w).copied().unwrap_or(0);
        if g != c {
            run.words_off += 1;
            run.count_missing += c.saturating_sub(g);
        }
    }
    run.words_off += got.keys().filter(|w| !want.contains_key(*w)).count();
    run.exact = run.words_off == 0;
    run.reducers = runs;
    Ok(run)
}

/// Every pair a mapper has ready, by reducer (the TCP model's streams).
fn drain_mapper_pairs(m: &mut Mapper, streams: &mut [Vec<wire::daiet::DaietEntry>]) {
    let mut buf = vec![0u8; wire::daiet::PREAMBLE_LEN + 1000 * wire::daiet::ENTRY_LEN];
    while let Some((r, len)) = m.poll_transmit(&mut buf) {
        if let Ok(wire::daiet::DaietRepr::Data { entries, .. }) = wire::daiet::DaietRepr::parse(&buf[..len]) {
            streams[r].extend(entries.iter());
        }
    }
}

/// Move every frame the switches send to the next switch or reducer; frames moved.
fn deliver(
    fab: &mut Fabric,
    pool: &mut HeapPool,
    reducers: &mut [Reducer],
    runs: &mut [ReducerRun],
    now: u64,
    out: &mut Vec<PktBuf>,
) -> usize {
    let mut moved = 0;
    loop {
        let mut round = 0;
        for s in 0..fab.switches.len() {
            for p in 0..fab.peers[s].len() {
                while fab.switches[s].transmit(now, p as u16, out, 64, pool) > 0 {
                    for f in out.drain(..) {
                        round += 1;
                        match fab.peers[s][p] {
                            Peer::Mapper => pool.free(f),
                            Peer::Reducer(r) => {
                                let d = f.data();
                                runs[r].packets += 1;
                                runs[r].bytes += d.len() as u64;
                                let t = Instant::now();
                                if d.len() >= 42 && d[12..14] == [8, 0] {
                                    let ulen = usize::from(u16::from_be_bytes([d[38], d[39]]));
                                    let end = (34 + ulen).min(d.len());
                                    if end > 42 {
                                        let before = reducers[r].stats.pairs;
                                        let _ = reducers[r].handle(&d[42..end]);
                                        runs[r].pairs += reducers[r].stats.pairs - before;
                                    }
                                }
                                runs[r].time_ns += t.elapsed().as_nanos() as u64;
                                pool.free(f);
                            }
                            Peer::Switch(t, tp) => fab.switches[t].receive(now, tp, f, pool),
                        }
                    }
                }
            }
        }
        moved += round;
        if round == 0 {
            return moved;
        }
    }
}
