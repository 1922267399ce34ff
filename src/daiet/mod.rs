//! DAIET's WordCount (seed `002` §5): the experiment in the lab ([`lab`]) and the job on real
//! sockets ([`net`]), both over `roce::daiet`'s mapper and reducer. `softfabric daiet` runs them.

pub mod lab;
pub mod net;

use std::fmt::Write as _;
use std::path::Path;

use self::lab::{LabFile, Mode, Run};

/// The paper's figures (§5, Figure 3): data reduction at the reducers against TCP, packet
/// reduction against UDP and TCP (median), reducer time against TCP (median).
pub const PAPER: &str = "paper (24 mappers, 12 reducers, one BMv2, 16 K cells, collision-free 500 MB): \
data −86.9 … −89.3 % vs TCP; packets −88.1 … −90.5 % (median −90.5 %) vs UDP, median −42 % vs TCP; \
reducer time median −83.6 % vs TCP";

fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

/// Per reducer the change `a/b − 1` of a quantity, as percentages: (min, median, max) — a
/// reduction is negative.
fn reduction(a: &Run, b: &Run, q: impl Fn(&lab::ReducerRun) -> u64) -> (f64, f64, f64) {
    spread(
        a.reducers
            .iter()
            .zip(&b.reducers)
            .map(|(x, y)| 100.0 * (q(x) as f64 / (q(y) as f64).max(1.0) - 1.0))
            .collect(),
    )
}

/// A change in percent with its sign.
fn pct(v: f64) -> String {
    format!("{v:+.1}").replace('-', "−")
}

/// Run every mode at every register size of `file` and report the reductions as the paper's
/// Figure 3 does, with `results.csv` in `out` when given.
pub fn lab_report(path: &Path, out: Option<&Path>) -> Result<String, String> {
    let f = LabFile::load(path)?;
    let text = roce::daiet::corpus(&f.corpus_spec(), |k| f.collision_index(k));
    let want = roce::daiet::word_count(&text);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# DAIET WordCount: {} — {} mappers, {} reducers, {}, corpus {} B ({} distinct words, Zipf {}, {}), combine {}, loss {}",
        path.display(),
        f.mappers,
        f.reducers,
        if f.leaves == 0 { "one switch".to_string() } else { format!("{} leaves under one spine", f.leaves) },
        text.len(),
        want.len(),
        f.corpus.zipf,
        if f.corpus.collision_free { "collision-free" } else { "collisions" },
        f.combine,
        f.loss
    );
    let tcp = lab::run(&f, &text, &want, Mode::Tcp, 0)?;
    let udp = lab::run(&f, &text, &want, Mode::Udp, 0)?;
    let mut csv = String::from("cells,mode,reducer,packets,bytes,pairs,time_ns\n");
    for (m, r) in [(&tcp, "tcp"), (&udp, "udp")] {
        for (i, x) in m.reducers.iter().enumerate() {
            let _ = writeln!(csv, "0,{r},{i},{},{},{},{}", x.packets, x.bytes, x.pairs, x.time_ns);
        }
    }
    let _ = writeln!(
        s,
        "\n| cells | data vs TCP (min / median / max) | packets vs UDP | packets vs TCP | reducer time vs TCP (median) | switch: pairs, aggregated, spilled | exact | lost (pairs) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for &cells in &f.cells {
        let d = lab::run(&f, &text, &want, Mode::Daiet, cells)?;
        for (i, x) in d.reducers.iter().enumerate() {
            let _ = writeln!(csv, "{cells},daiet,{i},{},{},{},{}", x.packets, x.bytes, x.pairs, x.time_ns);
        }
        let data = reduction(&d, &tcp, |x| x.bytes);
        let pu = reduction(&d, &udp, |x| x.packets);
        let pt = reduction(&d, &tcp, |x| x.packets);
        let tt = reduction(&d, &tcp, |x| x.time_ns);
        let _ = writeln!(
            s,
            "| {cells} | {} / {} / {} % | {} / {} / {} % | {} / {} / {} % | {} % | {} / {} / {} | {} | {} |",
            pct(data.0),
            pct(data.1),
            pct(data.2),
            pct(pu.0),
            pct(pu.1),
            pct(pu.2),
            pct(pt.0),
            pct(pt.1),
            pct(pt.2),
            pct(tt.1),
            d.switch_pairs.0,
            d.switch_pairs.1,
            d.switch_pairs.2,
            if d.exact && d.complete {
                "yes".to_string()
            } else {
                format!(
                    "no: {} words off, {} occurrences missing, {} of {} reducers never completed",
                    d.words_off, d.count_missing, d.incomplete, f.reducers
                )
            },
            d.lost_pairs,
        );
    }
    let _ = writeln!(
        s,
        "\nbaselines: TCP {} packets / {} B at the reducers (modelled), UDP {} packets / {} B; UDP exact: {}",
        tcp.reducers.iter().map(|x| x.packets).sum::<u64>(),
        tcp.reducers.iter().map(|x| x.bytes).sum::<u64>(),
        udp.reducers.iter().map(|x| x.packets).sum::<u64>(),
        udp.reducers.iter().map(|x| x.bytes).sum::<u64>(),
        udp.exact && udp.complete,
    );
    let _ = writeln!(s, "{PAPER}");
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("results.csv"), csv).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("results.md"), &s).map_err(|e| e.to_string())?;
    }
    Ok(s)
}
