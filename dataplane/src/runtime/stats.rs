//! Counters a pipeline publishes for the control thread, without locks.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::port::PortStats;
use crate::switch::{Counters, PortCounters};

/// A pipeline's counters as relaxed atomics: the pipeline stores a snapshot every millisecond,
/// the control thread loads one whenever it likes.
#[derive(Debug)]
pub struct StatsCell {
    ports: Vec<[AtomicU64; 12]>,
    drops: Vec<AtomicU64>,
    misc: [AtomicU64; 4],
}

impl StatsCell {
    /// Room for `ports` ports and `drops` drop reasons.
    pub fn new(ports: usize, drops: usize) -> Self {
        Self {
            ports: (0..ports).map(|_| std::array::from_fn(|_| AtomicU64::new(0))).collect(),
            drops: (0..drops).map(|_| AtomicU64::new(0)).collect(),
            misc: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Publish.
    pub fn store(&self, c: &Counters, p: &[PortStats]) {
        for (i, cell) in self.ports.iter().enumerate() {
            let pc = c.ports.get(i).copied().unwrap_or_default();
            let ps = p.get(i).copied().unwrap_or_default();
            let v = [
                pc.rx_packets,
                pc.rx_bytes,
                pc.tx_packets,
                pc.tx_bytes,
                pc.pfc_rx,
                pc.pfc_tx,
                ps.rx,
                ps.tx,
                ps.rx_errors,
                ps.tx_errors,
                ps.rx_missed,
                ps.injected,
            ];
            for (a, x) in cell.iter().zip(v) {
                a.store(x, Ordering::Relaxed);
            }
        }
        for (a, x) in self.drops.iter().zip(&c.drops) {
            a.store(*x, Ordering::Relaxed);
        }
        for (a, x) in self.misc.iter().zip([c.to_cpu, c.from_cpu, c.recirculated, c.consumed]) {
            a.store(x, Ordering::Relaxed);
        }
    }

    /// The last published counters.
    pub fn load(&self) -> (Counters, Vec<PortStats>) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let ports = self
            .ports
            .iter()
            .map(|c| PortCounters {
                rx_packets: get(&c[0]),
                rx_bytes: get(&c[1]),
                tx_packets: get(&c[2]),
                tx_bytes: get(&c[3]),
                pfc_rx: get(&c[4]),
                pfc_tx: get(&c[5]),
            })
            .collect();
        let ps = self
            .ports
            .iter()
            .map(|c| PortStats {
                rx: get(&c[6]),
                tx: get(&c[7]),
                rx_errors: get(&c[8]),
                tx_errors: get(&c[9]),
                rx_missed: get(&c[10]),
                injected: get(&c[11]),
            })
            .collect();
        let c = Counters {
            ports,
            drops: self.drops.iter().map(get).collect(),
            to_cpu: get(&self.misc[0]),
            from_cpu: get(&self.misc[1]),
            recirculated: get(&self.misc[2]),
            consumed: get(&self.misc[3]),
        };
        (c, ps)
    }
}
