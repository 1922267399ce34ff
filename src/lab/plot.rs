//! A run's results as SVG plots (`plotters`): FCT slowdown by flow size, queue lengths,
//! link utilisation and flow throughput over time, and PFC pause frames.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

use super::LabResult;
use super::output::{SlowdownBin, slowdown_bins};

const SIZE: (u32, u32) = (900, 520);
/// Series at most per time plot (the busiest ones).
const SERIES: usize = 8;
const COLOURS: [RGBColor; SERIES] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// Points of one line.
type Series = Vec<(f64, f64)>;

fn io<E: std::fmt::Display>(e: E) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Draw the lines `series` (name, points) on time (µs) × `y_desc` axes into `path`.
fn time_plot(
    path: &Path,
    title: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> std::io::Result<()> {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(io)?;
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (x_max, y_max) = pts.fold((1.0f64, 0.0f64), |(x, y), &(a, b)| (x.max(a), y.max(b)));
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, 0f64..(y_max * 1.08).max(1e-9))
        .map_err(io)?;
    chart.configure_mesh().x_desc("time (µs)").y_desc(y_desc).draw().map_err(io)?;
    for (i, (name, points)) in series.iter().enumerate() {
        let c = COLOURS[i % SERIES];
        chart
            .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
            .map_err(io)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    if !series.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(io)?;
    }
    root.present().map_err(io)
}

/// FCT slowdown (p50, p95, p99 per 5 % size bin) against flow size, one set of lines per run:
/// `runs` are (label, result), e.g. HPCC++ and DCQCN on the same lab.
pub fn slowdown(path: &Path, title: &str, runs: &[(&str, &LabResult)]) -> std::io::Result<()> {
    let bins: Vec<(&str, Vec<SlowdownBin>)> =
        runs.iter().map(|(name, r)| (*name, slowdown_bins(&r.flows, 20))).collect();
    let all = bins.iter().flat_map(|(_, b)| b.iter());
    let (lo, hi, y_max) = all.fold((f64::MAX, 1.0f64, 1.0f64), |(lo, hi, y), b| {
        (lo.min(b.max_size as f64), hi.max(b.max_size as f64), y.max(b.p99))
    });
    let lo = if lo == f64::MAX { 1.0 } else { lo };
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(io)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((lo / 1.5..hi * 1.5).log_scale(), (1f64..y_max * 1.2).log_scale())
        .map_err(io)?;
    chart
        .configure_mesh()
        .x_desc("flow size (bytes, upper end of each 5 % bin)")
        .y_desc("FCT slowdown")
        .draw()
        .map_err(io)?;
    for (r, (name, bins)) in bins.iter().enumerate() {
        for (k, (pname, pick)) in [
            ("p50", (|b: &SlowdownBin| b.p50) as fn(&SlowdownBin) -> f64),
            ("p95", |b| b.p95),
            ("p99", |b| b.p99),
        ]
        .into_iter()
        .enumerate()
        {
            let c = COLOURS[(r * 3 + k) % SERIES];
            let pts: Vec<(f64, f64)> = bins.iter().map(|b| (b.max_size as f64, pick(b))).collect();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(io)?
                .label(format!("{name} {pname}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(io)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(io)?;
    root.present().map_err(io)
}

/// Queue bytes over time of the ports whose queue peaked highest.
fn queues(path: &Path, r: &LabResult) -> std::io::Result<()> {
    let mut per: BTreeMap<(usize, u16), Vec<(f64, f64)>> = BTreeMap::new();
    for q in &r.queues {
        per.entry((q.switch, q.port)).or_default().push((q.time_ns as f64 / 1e3, q.bytes as f64 / 1e3));
    }
    let series = busiest(per, |p| p.iter().map(|&(_, y)| y).fold(0.0, f64::max));
    time_plot(path, "Egress queue, busiest ports", "queue (KB)", &series)
}

/// Rates over time are averaged over this window (ns): sampled every µs, a flow of a few Gb/s
/// sends less than a packet per sample.
const RATE_WINDOW_NS: u64 = 20_000;

/// Bits per second over trailing windows of `RATE_WINDOW_NS` from cumulative (time ns, bytes)
/// points, as (time µs, bits/s).
fn windowed_rate(points: &[(u64, u64)]) -> Vec<(f64, f64)> {
    let mut j = 0;
    let mut out = Vec::with_capacity(points.len());
    for (i, &(t, b)) in points.iter().enumerate() {
        while j + 1 < i && t - points[j + 1].0 >= RATE_WINDOW_NS {
            j += 1;
        }
        let (t0, b0) = points[j];
        if t > t0 {
            out.push((t as f64 / 1e3, (b - b0) as f64 * 8.0 / ((t - t0) as f64 * 1e-9)));
        }
    }
    out
}

/// Utilisation over time (bytes sent over the port's rate, 20 µs windows) of the ports that
/// sent most.
fn utilisation(path: &Path, r: &LabResult) -> std::io::Result<()> {
    let rate: BTreeMap<(usize, u16), u64> = r.links.iter().map(|&(s, p, _, rate)| ((s, p), rate)).collect();
    let mut sent: BTreeMap<(usize, u16), Vec<(u64, u64)>> = BTreeMap::new();
    for q in &r.queues {
        sent.entry((q.switch, q.port)).or_default().push((q.time_ns, q.tx_bytes));
    }
    let per = sent
        .into_iter()
        .map(|(key, pts)| {
            let link = rate.get(&key).copied().unwrap_or(1).max(1) as f64;
            (key, windowed_rate(&pts).into_iter().map(|(t, bps)| (t, bps / link * 100.0)).collect())
        })
        .collect();
    let series = busiest(per, |p| p.iter().map(|&(_, y)| y).sum());
    time_plot(path, "Link utilisation, busiest ports (20 µs windows)", "utilisation (%)", &series)
}

/// Goodput over time (20 µs windows) of the largest flows.
fn rates(path: &Path, r: &LabResult) -> std::io::Result<()> {
    let mut per: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
    for s in &r.rates {
        per.entry(s.flow).or_default().push((s.time_ns, s.rx_bytes));
    }
    let mut flows: Vec<usize> = per.keys().copied().collect();
    flows.sort_by_key(|&f| (std::cmp::Reverse(r.flows.get(f).map_or(0, |x| x.size)), f));
    flows.truncate(SERIES);
    flows.sort_unstable();
    let series = flows
        .iter()
        .map(|f| {
            let pts = windowed_rate(&per[f]).into_iter().map(|(t, bps)| (t, bps / 1e9)).collect();
            (format!("flow {f}"), pts)
        })
        .collect::<Vec<_>>();
    time_plot(path, "Flow goodput, largest flows (20 µs windows)", "goodput (Gb/s)", &series)
}

/// PFC pause frames: per port, the cumulative number sent.
fn pfc(path: &Path, r: &LabResult) -> std::io::Result<()> {
    let mut per: BTreeMap<(usize, u16), Vec<(f64, f64)>> = BTreeMap::new();
    for e in r.pfc.iter().filter(|e| e.pause) {
        let v = per.entry((e.switch, e.port)).or_default();
        let n = v.len() as f64 + 1.0;
        v.push((e.time_ns as f64 / 1e3, n));
    }
    let series = busiest(per, |p| p.len() as f64);
    let title = format!("PFC pause frames sent: {}", r.pfc.iter().filter(|e| e.pause).count());
    time_plot(path, &title, "pauses sent (cumulative)", &series)
}

/// The `SERIES` series with the highest `score`, named `s<switch>.p<port>`, in port order.
fn busiest(
    per: BTreeMap<(usize, u16), Series>,
    score: impl Fn(&[(f64, f64)]) -> f64,
) -> Vec<(String, Series)> {
    let mut v: Vec<((usize, u16), Series)> = per.into_iter().collect();
    v.sort_by(|a, b| score(&b.1).total_cmp(&score(&a.1)).then(a.0.cmp(&b.0)));
    v.truncate(SERIES);
    // Leave out ports with next to nothing (ACK directions) beside the busy ones.
    let top = v.first().map_or(0.0, |(_, p)| score(p));
    v.retain(|(_, p)| score(p) > 0.0 && score(p) >= top * 0.01);
    v.sort_by_key(|(k, _)| *k);
    v.into_iter().map(|((s, p), pts)| (format!("s{s}.p{p}"), pts)).collect()
}

/// Write every plot of one run into `dir`: `slowdown.svg`, `queues.svg`, `utilisation.svg`,
/// `rates.svg`, `pfc.svg`.
pub fn write(r: &LabResult, label: &str, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    slowdown(&dir.join("slowdown.svg"), &format!("FCT slowdown by flow size ({label})"), &[(label, r)])?;
    queues(&dir.join("queues.svg"), r)?;
    utilisation(&dir.join("utilisation.svg"), r)?;
    rates(&dir.join("rates.svg"), r)?;
    pfc(&dir.join("pfc.svg"), r)
}
