//! What a run reports: per-port and per-reason counters, summed over pipelines.

use crate::port::PortStats;
use crate::switch::Counters;

/// What a pipeline reports when it stops.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Port names.
    pub ports: Vec<String>,
    /// Drop reason names.
    pub drop_names: Vec<&'static str>,
    /// The switches' counters, summed over pipelines.
    pub counters: Counters,
    /// The backends' counters, summed over pipelines.
    pub port_stats: Vec<PortStats>,
    /// Device statistics that are not zero (DPDK xstats), per port name, at the end.
    pub device_stats: Vec<(String, Vec<(String, u64)>)>,
    /// Each pipeline's program counters once stopped ([`Program::final_stats`]), e.g. the DTA
    /// translator's `show dta stats` line with what the stop itself counted.
    ///
    /// [`Program::final_stats`]: crate::switch::Program::final_stats
    pub program_stats: Vec<String>,
}

impl Summary {
    /// The counters as a table.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<12} {:>12} {:>14} {:>12} {:>14} {:>8} {:>8} {:>9} {:>9} {:>9}\n",
            "port",
            "rx_packets",
            "rx_bytes",
            "tx_packets",
            "tx_bytes",
            "pfc_rx",
            "pfc_tx",
            "rx_errors",
            "tx_errors",
            "rx_missed"
        );
        for (i, name) in self.ports.iter().enumerate() {
            let c = self.counters.ports.get(i).copied().unwrap_or_default();
            let p = self.port_stats.get(i).copied().unwrap_or_default();
            s += &format!(
                "{:<12} {:>12} {:>14} {:>12} {:>14} {:>8} {:>8} {:>9} {:>9} {:>9}\n",
                name,
                c.rx_packets,
                c.rx_bytes,
                c.tx_packets,
                c.tx_bytes,
                c.pfc_rx,
                c.pfc_tx,
                p.rx_errors,
                p.tx_errors,
                p.rx_missed
            );
        }
        // Fault injection ([[port]] inject_loss), when any: what the ports lost on purpose.
        let injected: Vec<String> = self
            .ports
            .iter()
            .zip(&self.port_stats)
            .filter(|(_, p)| p.injected > 0)
            .map(|(n, p)| format!("{n} {}", p.injected))
            .collect();
        if !injected.is_empty() {
            s += &format!("injected loss: {}\n", injected.join(", "));
        }
        s += "drops by reason:\n";
        let mut any = false;
        for (i, &n) in self.counters.drops.iter().enumerate() {
            if n > 0 {
                any = true;
                s += &format!("  {:<20} {n}\n", self.drop_names.get(i).copied().unwrap_or("unknown"));
            }
        }
        if !any {
            s += "  (none)\n";
        }
        s += &format!(
            "to_cpu {}  from_cpu {}  recirculated {}  consumed {}\n",
            self.counters.to_cpu, self.counters.from_cpu, self.counters.recirculated, self.counters.consumed
        );
        for p in &self.program_stats {
            s += &format!("program: {p}\n");
        }
        for (port, stats) in &self.device_stats {
            s += &format!("device statistics of {port} (non-zero):\n");
            for (name, v) in stats {
                s += &format!("  {name:<32} {v}\n");
            }
        }
        s
    }

    /// Drops counted under `name`.
    pub fn drops(&self, name: &str) -> u64 {
        self.drop_names
            .iter()
            .position(|n| *n == name)
            .and_then(|i| self.counters.drops.get(i))
            .copied()
            .unwrap_or(0)
    }
}

pub(super) fn add_port_stats(acc: &mut Vec<PortStats>, more: &[PortStats]) {
    if acc.len() < more.len() {
        acc.resize(more.len(), PortStats::default());
    }
    for (a, b) in acc.iter_mut().zip(more) {
        a.rx += b.rx;
        a.tx += b.tx;
        a.rx_errors += b.rx_errors;
        a.tx_errors += b.tx_errors;
        a.rx_missed += b.rx_missed;
        a.injected += b.injected;
    }
}

pub(super) fn log_rates(prev: &Summary, cur: &Summary, dt: f64) {
    for (i, name) in cur.ports.iter().enumerate() {
        let (a, b) = (
            prev.counters.ports.get(i).copied().unwrap_or_default(),
            cur.counters.ports.get(i).copied().unwrap_or_default(),
        );
        let rx_pps = (b.rx_packets - a.rx_packets) as f64 / dt;
        let tx_pps = (b.tx_packets - a.tx_packets) as f64 / dt;
        let rx_bps = (b.rx_bytes - a.rx_bytes) as f64 * 8.0 / dt;
        let tx_bps = (b.tx_bytes - a.tx_bytes) as f64 * 8.0 / dt;
        tracing::info!(port = %name, rx_pps = rx_pps as u64, rx_bps = rx_bps as u64, tx_pps = tx_pps as u64, tx_bps = tx_bps as u64, pfc_rx = b.pfc_rx, pfc_tx = b.pfc_tx, "port");
    }
    let drops: Vec<String> = cur
        .counters
        .drops
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(i, n)| format!("{}={n}", cur.drop_names.get(i).copied().unwrap_or("?")))
        .collect();
    if !drops.is_empty() {
        tracing::info!(drops = %drops.join(" "), "drops so far");
    }
}
