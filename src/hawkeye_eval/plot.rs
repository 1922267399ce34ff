//! The evaluation's figures as SVG (`plotters`), shaped like the paper's (seed `001` §4):
//! Figure 7 (precision and recall over epoch sizes and detection thresholds), Figure 8 (Hawkeye
//! against full polling and victim-only polling), Figure 9 (overheads: telemetry collected and
//! polling bytes per incident) and Figure 10 (port-only and flow-only telemetry).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Results, Score, Sweep, VARIANTS};

const COLOURS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

fn io<E: std::fmt::Display>(e: E) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// The class names of `results`, in order (short forms for axis labels).
fn classes(results: &Results) -> Vec<String> {
    results
        .iter()
        .map(|(s, _)| {
            s.class_name()
                .replace("out_of_loop_deadlock_", "ool_")
                .replace("in_loop_deadlock", "in_loop")
                .replace("microburst_incast", "incast")
        })
        .collect()
}

/// Grouped bars: one group per class, one bar per series (name, value per class), on `area`.
fn bars(
    area: &DrawingArea<SVGBackend, Shift>,
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[(String, Vec<f64>)],
    log: bool,
) -> std::io::Result<()> {
    let n = series.len().max(1) as f64;
    let x_max = groups.len().max(1) as f64;
    let y_max = series.iter().flat_map(|s| s.1.iter()).fold(0f64, |a, &b| a.max(b));
    let mut b = ChartBuilder::on(area);
    b.caption(title, ("sans-serif", 18)).margin(10).x_label_area_size(36).y_label_area_size(70);
    let label = |x: &f64| {
        let i = x.floor() as usize;
        if (x - x.floor() - 0.5).abs() < 1e-6 {
            groups.get(i).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    // Each series as rectangles at group + offset.
    macro_rules! draw {
        ($chart:expr, $base:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(groups.len() * 2 + 1)
                .x_label_formatter(&label)
                .y_desc(y_desc)
                .draw()
                .map_err(io)?;
            for (k, (name, values)) in series.iter().enumerate() {
                let c = COLOURS[k % COLOURS.len()];
                let w = 0.8 / n;
                chart
                    .draw_series(values.iter().enumerate().map(|(g, &v)| {
                        let x0 = g as f64 + 0.1 + k as f64 * w;
                        Rectangle::new([(x0, $base), (x0 + w * 0.9, v.max($base))], c.filled())
                    }))
                    .map_err(io)?
                    .label(name.as_str())
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(io)?;
        }};
    }
    if log {
        let lo =
            series.iter().flat_map(|s| s.1.iter()).filter(|v| **v > 0.0).fold(f64::MAX, |a, &b| a.min(b));
        let lo = if lo == f64::MAX { 1.0 } else { lo / 2.0 };
        let chart =
            b.build_cartesian_2d(0f64..x_max, (lo..(y_max * 2.0).max(lo * 10.0)).log_scale()).map_err(io)?;
        draw!(chart, lo);
    } else {
        // Headroom above the bars for the legend.
        let chart = b.build_cartesian_2d(0f64..x_max, 0f64..(y_max * 1.4).max(1.4)).map_err(io)?;
        draw!(chart, 0.0);
    }
    Ok(())
}

/// Precision (verified) and recall per class for `variants`, stacked in one SVG.
fn accuracy(path: &Path, title: &str, results: &Results, variants: &[&str]) -> std::io::Result<()> {
    let root = SVGBackend::new(path, (1000, 760)).into_drawing_area();
    root.fill(&WHITE).map_err(io)?;
    let (top, bottom) = root.split_vertically(380);
    let groups = classes(results);
    let pick = |f: fn(&Score) -> f64| -> Vec<(String, Vec<f64>)> {
        variants
            .iter()
            .filter_map(|v| VARIANTS.iter().position(|x| x == v).map(|i| (v, i)))
            .map(|(v, i)| (v.to_string(), results.iter().map(|(_, sc)| f(&sc[i])).collect()))
            .collect()
    };
    bars(
        &top,
        &format!("{title}: precision (verified)"),
        "precision",
        &groups,
        &pick(Score::precision_verified),
        false,
    )?;
    bars(&bottom, &format!("{title}: recall"), "recall", &groups, &pick(Score::recall), false)?;
    root.present().map_err(io)
}

/// Figures 8, 9 and 10 of one evaluation run into `dir`.
pub fn figures(dir: &Path, results: &Results) -> std::io::Result<()> {
    accuracy(
        &dir.join("fig8-baselines.svg"),
        "Hawkeye vs polling baselines",
        results,
        &["hawkeye", "full_polling", "victim_only"],
    )?;
    accuracy(
        &dir.join("fig10-telemetry.svg"),
        "Telemetry granularity",
        results,
        &["hawkeye", "port_only", "flow_only"],
    )?;
    let path = dir.join("fig9-overhead.svg");
    let root = SVGBackend::new(&path, (1000, 760)).into_drawing_area();
    root.fill(&WHITE).map_err(io)?;
    let (top, bottom) = root.split_vertically(380);
    let groups = classes(results);
    let per = |v: &str, f: fn(&Score) -> f64| -> (String, Vec<f64>) {
        let i = VARIANTS.iter().position(|x| *x == v).unwrap_or(0);
        (v.to_string(), results.iter().map(|(_, sc)| f(&sc[i])).collect())
    };
    let bytes = |s: &Score| s.overheads().0;
    let polling = |s: &Score| s.overheads().2;
    bars(
        &top,
        "Telemetry collected per trace",
        "bytes (log)",
        &groups,
        &[per("hawkeye", bytes), per("full_polling", bytes), per("victim_only", bytes)],
        true,
    )?;
    bars(
        &bottom,
        "Polling packets per trace (full polling needs none)",
        "bytes on links",
        &groups,
        &[per("hawkeye", polling), per("full_polling", polling), per("victim_only", polling)],
        false,
    )?;
    root.present().map_err(io)
}

/// Figure 7: per class, Hawkeye's precision (verified) and recall over the epoch sizes, one line
/// per detection threshold — two SVGs in `dir`.
pub fn sweep_figures(dir: &Path, sweep: &[(Sweep, Results)]) -> std::io::Result<()> {
    let hk = VARIANTS.iter().position(|v| *v == "hawkeye").unwrap_or(0);
    let Some((_, first)) = sweep.first() else { return Ok(()) };
    let groups = classes(first);
    let mut factors: Vec<f64> = sweep.iter().filter_map(|(s, _)| s.rtt_factor).collect();
    factors.sort_by(f64::total_cmp);
    factors.dedup();
    for (file, what, pick) in [
        ("fig7-precision.svg", "precision (verified)", Score::precision_verified as fn(&Score) -> f64),
        ("fig7-recall.svg", "recall", Score::recall as fn(&Score) -> f64),
    ] {
        let path = dir.join(file);
        let root = SVGBackend::new(&path, (1200, 320 * groups.len().div_ceil(2) as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(io)?;
        let panels = root.split_evenly((groups.len().div_ceil(2), 2));
        for (ci, (panel, class)) in panels.iter().zip(&groups).enumerate() {
            let epochs: Vec<f64> =
                sweep.iter().filter_map(|(s, _)| s.epoch_ns).map(|e| e as f64 / 1000.0).collect();
            let (lo, hi) = epochs.iter().fold((f64::MAX, 0f64), |(a, b), &e| (a.min(e), b.max(e)));
            let mut chart = ChartBuilder::on(panel)
                .caption(format!("{class}: {what}"), ("sans-serif", 16))
                .margin(8)
                .x_label_area_size(32)
                .y_label_area_size(44)
                .build_cartesian_2d((lo / 1.3..hi * 1.3).log_scale(), 0f64..1.05)
                .map_err(io)?;
            chart.configure_mesh().x_desc("epoch (µs)").draw().map_err(io)?;
            for (k, f) in factors.iter().enumerate() {
                let c = COLOURS[k % COLOURS.len()];
                let pts: Vec<(f64, f64)> = sweep
                    .iter()
                    .filter(|(s, _)| s.rtt_factor == Some(*f))
                    .filter_map(|(s, r)| Some((s.epoch_ns? as f64 / 1000.0, pick(&r.get(ci)?.1[hk]))))
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                    .map_err(io)?
                    .label(format!("{:.0} % RTT", f * 100.0))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(io)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(io)?;
        }
        root.present().map_err(io)?;
    }
    Ok(())
}
