//! A run's results as CSV files: `flows.csv` (FCT and slowdown per flow), `queues.csv` (queue
//! bytes and bytes sent per switch port, sampled), `rates.csv` (bytes delivered per running
//! flow, sampled), `pfc.csv` (pause and resume frames), `links.csv` (utilisation over the run).
//! Every number is an integer or printed with fixed precision, so the same run gives the same
//! bytes.

use std::fmt::Write as _;
use std::path::Path;

use super::LabResult;

/// The CSV texts, by file name.
pub fn csv(r: &LabResult) -> Vec<(&'static str, String)> {
    let mut flows = String::from("id,src,dst,size,start_ns,fct_ns,standalone_ns,slowdown\n");
    for f in &r.flows {
        let fct = f.fct_ns.map_or(String::new(), |v| v.to_string());
        let sd = f.slowdown().map_or(String::new(), |v| format!("{v:.4}"));
        let _ = writeln!(
            flows,
            "{},{},{},{},{},{fct},{},{sd}",
            f.id, f.src, f.dst, f.size, f.start_ns, f.standalone_ns
        );
    }
    let mut queues = String::from("time_ns,switch,port,bytes,tx_bytes\n");
    for q in &r.queues {
        let _ = writeln!(queues, "{},{},{},{},{}", q.time_ns, q.switch, q.port, q.bytes, q.tx_bytes);
    }
    let mut rates = String::from("time_ns,flow,rx_bytes\n");
    for s in &r.rates {
        let _ = writeln!(rates, "{},{},{}", s.time_ns, s.flow, s.rx_bytes);
    }
    let mut pfc = String::from("time_ns,switch,port,kind\n");
    for e in &r.pfc {
        let _ = writeln!(
            pfc,
            "{},{},{},{}",
            e.time_ns,
            e.switch,
            e.port,
            if e.pause { "pause" } else { "resume" }
        );
    }
    let mut links = String::from("switch,port,tx_bytes,rate_bps,utilisation\n");
    let secs = r.simulated_ns.max(1) as f64 * 1e-9;
    for &(s, p, bytes, rate) in &r.links {
        let u = bytes as f64 * 8.0 / (rate as f64 * secs);
        let _ = writeln!(links, "{s},{p},{bytes},{rate},{u:.4}");
    }
    vec![
        ("flows.csv", flows),
        ("queues.csv", queues),
        ("rates.csv", rates),
        ("pfc.csv", pfc),
        ("links.csv", links),
    ]
}

/// Write the CSV files into `dir` (created if needed).
pub fn write(r: &LabResult, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in csv(r) {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}
