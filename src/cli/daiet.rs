//! `softfabric daiet`: the WordCount lab, the corpus generator, mappers and reducers on sockets.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum DaietCmd {
    /// Run a DAIET lab file (config/labs/daiet/): every register size with DAIET, and the UDP
    /// and TCP baselines; the reductions at the reducers as a Markdown table (with --out, also
    /// results.csv and results.md there).
    Lab {
        /// The lab file.
        file: PathBuf,
        /// Where the results go.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write a seeded corpus: Zipf-distributed words of 3 to 16 letters.
    Corpus {
        /// Bytes of text (1 to 1 GiB: it is made in memory).
        #[arg(long, default_value_t = 1_000_000)]
        bytes: usize,
        /// Distinct words (1 to 1 000 000).
        #[arg(long, default_value_t = 10_000)]
        vocabulary: usize,
        /// Zipf exponent (0: uniform; at most 10).
        #[arg(long, default_value_t = 1.0, value_parser = zipf)]
        zipf: f64,
        /// Seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only words whose register index (CRC-32 mod CELLS) is distinct: the paper's
        /// collision-free corpus (CELLS from the vocabulary to 2^24).
        #[arg(long)]
        collision_free_cells: Option<usize>,
        /// The file written.
        #[arg(long)]
        out: PathBuf,
    },
    /// Count the words of a file plainly (`word count` lines, sorted): what the reducers'
    /// output must equal.
    Count {
        /// The corpus.
        input: PathBuf,
        /// The file written.
        #[arg(long)]
        out: PathBuf,
    },
    /// One mapper: split I of N of the corpus, its pairs to the reducers (one tree each).
    Map {
        /// The corpus.
        input: PathBuf,
        /// `I/N`: this mapper's split.
        #[arg(long)]
        split: String,
        /// The reducers' `address:port` (IPv4), comma-separated, in tree order, each once (at
        /// most 1024).
        #[arg(long, value_delimiter = ',')]
        reducers: Vec<std::net::SocketAddr>,
        /// Their tree IDs (default 1, 2, …), each once.
        #[arg(long, value_delimiter = ',')]
        trees: Vec<u32>,
        /// Count each word once per mapper (the combiner).
        #[arg(long)]
        combine: bool,
        /// `udp` (DAIET packets) or `tcp` (the baseline).
        #[arg(long, default_value = "udp")]
        transport: String,
        /// Most datagrams a second (0: as fast as the socket takes them; at most 10^8).
        #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
        pps: u64,
        /// Pairs per packet.
        #[arg(long, default_value_t = 10)]
        max_entries: usize,
    },
    /// One reducer: tree T on ADDRESS:PORT until ENDS END packets (or streams), then its
    /// result as `word count` lines.
    Reduce {
        /// Where to listen.
        #[arg(long)]
        bind: std::net::SocketAddr,
        /// Its tree ID.
        #[arg(long)]
        tree: u32,
        /// END packets (UDP: 1 through a DAIET switch, the mappers without one) or streams
        /// (TCP) to wait for (1 to 100 000).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        ends: u64,
        /// `udp` or `tcp`.
        #[arg(long, default_value = "udp")]
        transport: String,
        /// Give up after this long without traffic, seconds (0.001 to 3600).
        #[arg(long, default_value_t = 10.0, value_parser = idle_s)]
        idle_s: f64,
        /// The result.
        #[arg(long)]
        out: PathBuf,
    },
}

/// `--zipf`: a Zipf exponent, 0 to 10.
fn zipf(s: &str) -> Result<f64, String> {
    ports::input::ranged(s, 0.0, roce::daiet::MAX_ZIPF, false, "")
}

/// `--idle-s`: 0.001 to 3600 s.
fn idle_s(s: &str) -> Result<f64, String> {
    ports::input::ranged(s, 0.001, 3600.0, false, "s")
}

pub fn run(cmd: DaietCmd) -> ExitCode {
    use softfabric::daiet::net::{self, Transport};
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let failed = |e: String| {
        eprintln!("error: {e}");
        ExitCode::FAILURE
    };
    let transport =
        |t: &str| Transport::parse(t).ok_or_else(|| format!("--transport {t:?}: expected udp or tcp"));
    // A corpus is read whole: at most what `corpus` makes, and what memory holds.
    let read = |flag: &str, p: &Path| {
        let text = ports::input::read_flag(flag, p, roce::daiet::MAX_CORPUS_BYTES as u64)?;
        ports::input::fits_in_memory(4 * text.len() as u128)
            .map_err(|e| format!("{flag} {}: {e}", p.display()))?;
        Ok::<_, String>(text)
    };
    let stop = match ports::input::stop_on_signals() {
        Ok(s) => s,
        Err(e) => return failed(format!("installing a signal handler: {e}")),
    };
    match cmd {
        DaietCmd::Lab { file, out } => {
            if let Some(o) = &out
                && let Err(e) = ports::input::writable_dir("--out", o)
            {
                return fail(e);
            }
            match softfabric::daiet::lab_report(&file, out.as_deref()) {
                Ok(s) => {
                    print!("{s}");
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        DaietCmd::Corpus { bytes, vocabulary, zipf, seed, collision_free_cells, out } => {
            let spec =
                roce::daiet::CorpusSpec { bytes, vocabulary, zipf_s: zipf, seed, collision_free_cells };
            if let Err((k, why)) = spec.check() {
                let flag = match k {
                    "zipf_s" => "--zipf",
                    "collision_free_cells" => "--collision-free-cells",
                    "vocabulary" => "--vocabulary",
                    _ => "--bytes",
                };
                return fail(format!("{flag} {why}"));
            }
            if let Err(e) = ports::input::fits_in_memory(2 * bytes as u128)
                .map_err(|e| format!("--bytes {bytes}: {e}"))
                .and_then(|()| ports::input::writable_file("--out", &out))
            {
                return fail(e);
            }
            let text = roce::daiet::corpus(&spec, softfabric::daiet::lab::register_index);
            match std::fs::write(&out, &text) {
                Ok(()) => {
                    println!("{}: {} bytes", out.display(), text.len());
                    ExitCode::SUCCESS
                }
                Err(e) => failed(format!("--out {}: {e}", out.display())),
            }
        }
        DaietCmd::Count { input, out } => {
            let text = match read("INPUT", &input)
                .and_then(|t| ports::input::writable_file("--out", &out).map(|()| t))
            {
                Ok(t) => t,
                Err(e) => return fail(e),
            };
            let c = roce::daiet::word_count(&text);
            let mut s = String::new();
            for (w, n) in &c {
                s.push_str(&format!("{w} {n}\n"));
            }
            match std::fs::write(&out, s) {
                Ok(()) => {
                    println!("{}: {} words", out.display(), c.len());
                    ExitCode::SUCCESS
                }
                Err(e) => failed(format!("--out {}: {e}", out.display())),
            }
        }
        DaietCmd::Map { input, split, reducers, trees, combine, transport: t, pps, max_entries } => {
            let parsed = split
                .split_once('/')
                .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
                .filter(|(i, n)| i < n && *n <= 65_536);
            let Some((i, n)) = parsed else {
                return fail(format!("--split {split:?}: expected I/N with I < N ≤ 65536"));
            };
            if reducers.is_empty() || reducers.len() > 1024 {
                return fail("--reducers: expected 1 to 1024 address:port".into());
            }
            if let Some(r) = reducers.iter().find(|r| match r {
                std::net::SocketAddr::V4(a) => {
                    a.port() == 0 || a.ip().is_unspecified() || a.ip().is_broadcast() || a.ip().is_multicast()
                }
                std::net::SocketAddr::V6(_) => true,
            }) {
                return fail(format!("--reducers: {r} is not an IPv4 unicast address and port of a reducer"));
            }
            if let Some(r) =
                reducers.iter().enumerate().find_map(|(k, r)| reducers[..k].contains(r).then_some(r))
            {
                return fail(format!("--reducers: {r} is given twice (one tree per reducer)"));
            }
            if !(1..=64).contains(&max_entries) {
                return fail(format!(
                    "--max-entries {max_entries}: expected 1 to 64 (a switch takes at most its own max_entries)"
                ));
            }
            let trees = if trees.is_empty() { (1..=reducers.len() as u32).collect() } else { trees };
            if trees.len() != reducers.len() {
                return fail("--trees: expected one tree ID per reducer".into());
            }
            if let Some(t) = trees.iter().enumerate().find_map(|(k, t)| trees[..k].contains(t).then_some(t)) {
                return fail(format!("--trees: tree {t} is given twice"));
            }
            let tr = match transport(&t) {
                Ok(tr) => tr,
                Err(e) => return fail(e),
            };
            let text = match read("INPUT", &input) {
                Ok(t) => t,
                Err(e) => return fail(e),
            };
            match net::map(&text, i, n, &reducers, &trees, combine, tr, pps, max_entries, &stop) {
                Ok(rep) => {
                    println!(
                        "mapper {i}/{n}: {} pairs, {} datagrams, {} bytes, {} words too long",
                        rep.pairs, rep.packets, rep.bytes, rep.too_long
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => failed(e),
            }
        }
        DaietCmd::Reduce { bind, tree, ends, transport: t, idle_s, out } => {
            let tr =
                match transport(&t).and_then(|tr| ports::input::writable_file("--out", &out).map(|()| tr)) {
                    Ok(tr) => tr,
                    Err(e) => return fail(e),
                };
            if bind.is_ipv6()
                || bind.ip().is_multicast()
                || matches!(bind, std::net::SocketAddr::V4(a) if a.ip().is_broadcast())
            {
                return fail(format!(
                    "--bind {bind}: expected an IPv4 address of this host (or 0.0.0.0) and a port"
                ));
            }
            match net::reduce(bind, tree, ends, tr, std::time::Duration::from_secs_f64(idle_s), &out, &stop) {
                Ok(rep) => {
                    println!(
                        "reducer tree {tree}: {} packets, {} bytes, {} pairs, {} ENDs, {} words, {} refused, {} saturated, busy {:.3} ms{}",
                        rep.stats.packets,
                        rep.stats.bytes,
                        rep.stats.pairs,
                        rep.stats.ends,
                        rep.words,
                        rep.stats.refused,
                        rep.stats.saturated,
                        rep.busy.as_secs_f64() * 1e3,
                        if rep.complete {
                            ""
                        } else {
                            " — INCOMPLETE: ENDs missing (DAIET has no loss recovery)"
                        }
                    );
                    if rep.complete { ExitCode::SUCCESS } else { ExitCode::FAILURE }
                }
                Err(e) if e.starts_with("bind") => fail(format!("--bind {e}")),
                Err(e) => failed(e),
            }
        }
    }
}
