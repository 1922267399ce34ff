//! A running collector: the stores, and the soft-RNIC serving them on its own thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;

use crate::config::{CollectorConfig, StoreKind};
use crate::rnic::{Notification, Notifier, RnicConfig, RnicStats, SoftRnic};
use crate::store::Stores;

/// A collector serving RDMA on a soft-RNIC thread; queries run on any thread.
#[derive(Debug)]
pub struct Collector {
    cfg: CollectorConfig,
    stores: Stores,
    stats: Arc<RnicStats>,
    notifier: Notifier,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    warning: Option<String>,
}

impl Collector {
    /// Register the memory, bind the soft-RNIC and start serving. `seed` varies QPNs, PSNs and
    /// R_Keys between runs (from the config, or the clock).
    pub fn start(cfg: &CollectorConfig) -> anyhow::Result<Self> {
        let seed = cfg.seed.unwrap_or_else(|| {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            (t.as_nanos() as u32) ^ std::process::id()
        });
        let (stores, warning) = Stores::new(cfg, seed)?;
        let mut rnic = SoftRnic::bind(RnicConfig::from_config(cfg, seed), &stores)?;
        let stats = rnic.stats();
        let notifier = rnic.notifier();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new().name("soft-rnic".into()).spawn(move || rnic.run(&s))?;
        Ok(Self { cfg: cfg.clone(), stores, stats, notifier, stop, thread: Some(thread), warning })
    }

    /// The configuration.
    pub fn config(&self) -> &CollectorConfig {
        &self.cfg
    }

    /// The stores, for queries.
    pub fn stores(&self) -> &Stores {
        &self.stores
    }

    /// The soft-RNIC's counters.
    pub fn stats(&self) -> &RnicStats {
        &self.stats
    }

    /// The memory warning (no hugepages), if any.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// Subscribe to immediate notifications.
    pub fn subscribe(&self, capacity: usize) -> Receiver<Notification> {
        self.notifier.subscribe(capacity)
    }

    /// What it serves, one line per region: store, librdmacm port, VA, length, R_Key.
    pub fn describe(&self) -> String {
        let mem = self.stores.memory();
        let mut s = format!(
            "soft-RNIC on {}:{} (UDP), ICRC check {}, memory: {} MiB {}\n",
            self.cfg.ip,
            self.cfg.udp_port,
            if self.cfg.icrc { "on" } else { "off" },
            mem.host().len() >> 20,
            if mem.host().hugepages() { "hugepages" } else { "regular pages" },
        );
        for st in self.stores.stores() {
            let r = mem.regions()[st.region];
            let shape = match st.kind {
                StoreKind::KeyWrite { slots, data_len, redundancy } => {
                    format!("{slots} slots of {data_len} B, N={redundancy}")
                }
                StoreKind::KeyIncrement { slots, redundancy } => format!("{slots} counters, N={redundancy}"),
                StoreKind::Postcarder { slots } => format!("{slots} paths"),
                StoreKind::Append { entries, .. } => format!("{entries} entries"),
                StoreKind::Sketch { rows, columns, .. } => format!("{columns} columns x {rows} rows"),
            };
            s.push_str(&format!(
                "  {:<14} port {:<5} va {:#014x} len {:>10} rkey {:#010x}  {shape}\n",
                st.kind.name(),
                st.port,
                r.va,
                r.len,
                r.rkey
            ));
        }
        s
    }

    /// Stop serving and wait for the soft-RNIC thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.shutdown();
    }
}
