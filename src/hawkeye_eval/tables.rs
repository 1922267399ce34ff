//! An evaluation's results as CSV and Markdown tables.

use super::{Results, Scenario, Score, Sweep, VARIANTS};

/// The results as CSV and as a Markdown table: per scenario and variant, the score and the
/// overheads per incident. "precision strict" counts every wrong diagnosis; "precision
/// verified" leaves out the wrong ones the lab confirms as true background findings; in a
/// `no_anomaly` scenario every claim is wrong, and "PFC claims" (storm, deadlock, injection)
/// must be 0.
pub fn tables(results: &[(Scenario, [Score; VARIANTS.len()])]) -> (String, String) {
    let mut csv = String::from(
        "scenario,class,variant,traces,detected,right,wrong,undiagnosed,wrong_elsewhere,background_confirmed,precision_strict,precision_at_locus,precision_verified,recall,\
         incidents,reports,telemetry_bytes_per_trace,switches_per_incident,polling_bytes_per_trace,collection_us,no_anomaly,pfc_claims,traces_with_wrong,innocent_hosts\n",
    );
    let mut md = String::from(
        "| scenario | class | variant | traces | detected | right | wrong | undiagnosed | wrong elsewhere | background confirmed | precision strict | precision at locus | precision verified | recall \
         | incidents | telemetry B/trace | switches/incident | polling B/trace | collection µs | no anomaly | PFC claims | traces with a wrong claim | hosts named without PAUSE |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (s, scores) in results {
        let name = s.path.file_stem().map(|x| x.to_string_lossy().to_string()).unwrap_or_default();
        for (v, sc) in VARIANTS.iter().zip(scores) {
            let (bytes, switches, polling, coll) = sc.overheads();
            let row = [
                name.clone(),
                s.class_name().to_string(),
                v.to_string(),
                sc.traces.to_string(),
                sc.detected.to_string(),
                sc.right.to_string(),
                sc.wrong.to_string(),
                sc.undiagnosed.to_string(),
                sc.elsewhere.to_string(),
                sc.background.to_string(),
                format!("{:.3}", sc.precision()),
                format!("{:.3}", sc.precision_at_locus()),
                format!("{:.3}", sc.precision_verified()),
                format!("{:.3}", sc.recall()),
                sc.incidents.to_string(),
                format!("{bytes:.0}"),
                format!("{switches:.1}"),
                format!("{polling:.0}"),
                format!("{coll:.0}"),
                sc.no_anomaly.to_string(),
                sc.pfc_claims().to_string(),
                sc.traces_with_wrong.to_string(),
                sc.innocent_hosts.to_string(),
            ];
            let (a, b) = row.split_at(14);
            csv += &a.join(",");
            csv.push(',');
            csv += &[b[0].clone(), sc.reports.to_string()].join(",");
            csv.push(',');
            csv += &b[1..].join(",");
            csv.push('\n');
            md += &format!("| {} |\n", row.join(" | "));
        }
    }
    (csv, md)
}

/// Hawkeye's score per class over every scenario of the results (a `no_anomaly` scenario per
/// load), as a Markdown table: strict and verified precision, recall; for `no_anomaly`, the
/// claims it made (each a false positive), the PFC claims among them, the traces with any.
pub fn class_summary(results: &Results) -> String {
    let hk = VARIANTS.iter().position(|v| *v == "hawkeye").unwrap_or(0);
    let mut rows: Vec<(String, u32, Score)> = Vec::new();
    for (s, scores) in results {
        let key = match s.class {
            Some(c) => c.name().to_string(),
            None => format!(
                "{} at load {}",
                s.class_name(),
                s.loads.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("/")
            ),
        };
        match rows.iter_mut().find(|r| r.0 == key) {
            Some(r) => {
                r.1 += 1;
                r.2.add(scores[hk]);
            }
            None => rows.push((key, 1, scores[hk])),
        }
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let mut md = String::from(
        "| class | scenarios | traces | right | wrong | precision strict | precision verified | recall | no anomaly | undiagnosed | PFC claims | wrong claims per trace | traces with a wrong claim | hosts named without PAUSE |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (k, n, sc) in rows {
        let anomaly = !k.starts_with(super::scenario::NO_ANOMALY);
        let p = |x: f64| if anomaly { format!("{x:.3}") } else { "—".into() };
        md += &format!(
            "| {k} | {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {} | {} |\n",
            sc.traces,
            sc.right,
            sc.wrong,
            p(sc.precision()),
            p(sc.precision_verified()),
            p(sc.recall()),
            sc.no_anomaly,
            sc.undiagnosed,
            sc.pfc_claims(),
            sc.wrong_per_trace(),
            sc.traces_with_wrong,
            sc.innocent_hosts,
        );
    }
    md
}

/// A sweep as CSV and a Markdown table: per class, epoch and threshold, Hawkeye's verified
/// precision and recall.
pub fn sweep_tables(results: &[(Sweep, Results)]) -> (String, String) {
    let mut csv = String::from("class,epoch_ns,rtt_factor,traces,right,wrong,precision_verified,recall\n");
    let mut md = String::from(
        "| class | epoch (µs) | threshold (× RTT) | traces | precision verified | recall |\n|---|---|---|---|---|---|\n",
    );
    let hk = VARIANTS.iter().position(|v| *v == "hawkeye").unwrap_or(0);
    for (sw, res) in results {
        let (e, f) = (sw.epoch_ns.unwrap_or(0), sw.rtt_factor.unwrap_or(0.0));
        for (s, scores) in res {
            let sc = scores[hk];
            csv += &format!(
                "{},{e},{f},{},{},{},{:.3},{:.3}\n",
                s.class_name(),
                sc.traces,
                sc.right,
                sc.wrong,
                sc.precision_verified(),
                sc.recall()
            );
            md += &format!(
                "| {} | {:.0} | {f} | {} | {:.3} | {:.3} |\n",
                s.class_name(),
                e as f64 / 1000.0,
                sc.traces,
                sc.precision_verified(),
                sc.recall()
            );
        }
    }
    (csv, md)
}
