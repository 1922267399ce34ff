//! A running collector: the stores, and the backend serving them on its own thread — the
//! soft-RNIC, or (feature `verbs`) a RoCEv2 NIC through rdma-core.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;

use crate::config::{Attach, Backend, CollectorConfig, StoreKind};
use crate::memory::{MemoryError, RegionInfo};
use crate::rnic::{Notification, Notifier, RnicConfig, RnicStats, SoftRnic};
use crate::store::{Store, Stores};

/// A collector serving RDMA from a backend thread; queries run on any thread.
#[derive(Debug)]
pub struct Collector {
    cfg: CollectorConfig,
    stores: Stores,
    stats: Arc<RnicStats>,
    notifier: Notifier,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    warning: Option<String>,
    /// The R_Keys the backend serves, per store (the NIC's, with `verbs`).
    rkeys: Vec<u32>,
}

impl Collector {
    /// Register the memory, start the configured backend and serve. `seed` varies QPNs, PSNs
    /// and R_Keys between runs (from the config, or the clock).
    pub fn start(cfg: &CollectorConfig) -> Result<Self, StartError> {
        let seed = cfg.seed.unwrap_or_else(|| {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            (t.as_nanos() as u32) ^ std::process::id()
        });
        let (stores, warning) = Stores::new(cfg, seed)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (thread, stats, notifier, nic_rkeys) = match cfg.backend {
            Backend::SoftRnic if matches!(cfg.attach, Attach::AfPacket { .. }) => {
                start_af_packet(cfg, seed, &stores, &stop)?
            }
            Backend::SoftRnic if matches!(cfg.attach, Attach::Dpdk { .. }) => {
                start_dpdk(cfg, seed, &stores, &stop)?
            }
            Backend::SoftRnic => {
                let addr = std::net::SocketAddrV4::new(cfg.ip, cfg.udp_port);
                let mut rnic = SoftRnic::bind(RnicConfig::from_config(cfg, seed), &stores).map_err(|e| {
                    StartError::Backend(format!("cannot bind the soft-RNIC's UDP socket {addr}: {e}"))
                })?;
                let (stats, notifier) = (rnic.stats(), rnic.notifier());
                let s = stop.clone();
                let t = std::thread::Builder::new()
                    .name("soft-rnic".into())
                    .spawn(move || rnic.run(&s))
                    .map_err(StartError::Thread)?;
                (t, stats, notifier, None)
            }
            Backend::Verbs => start_verbs(cfg, &stores, &stop)?,
        };
        // A NIC has R_Keys of its own; the soft-RNIC serves those of the registered memory.
        let rkeys = nic_rkeys.unwrap_or_else(|| {
            stores.stores().iter().map(|st| stores.memory().regions()[st.region].rkey).collect()
        });
        Ok(Self { cfg: cfg.clone(), stores, stats, notifier, stop, thread: Some(thread), warning, rkeys })
    }

    /// Every store with its region as the backend serves it (the R_Key a translator must use).
    pub fn regions(&self) -> Vec<(Store, RegionInfo)> {
        let mem = self.stores.memory();
        self.stores
            .stores()
            .iter()
            .zip(&self.rkeys)
            .map(|(st, &rkey)| (*st, RegionInfo { rkey, ..mem.regions()[st.region] }))
            .collect()
    }

    /// The configuration.
    pub fn config(&self) -> &CollectorConfig {
        &self.cfg
    }

    /// The stores, for queries.
    pub fn stores(&self) -> &Stores {
        &self.stores
    }

    /// The backend's counters (with `verbs`, only connections and immediates: the NIC applies the rest).
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
        let backend = match self.cfg.backend {
            Backend::SoftRnic => format!(
                "soft-RNIC on {}:{} ({}), ICRC check {}",
                self.cfg.ip,
                self.cfg.udp_port,
                match &self.cfg.attach {
                    Attach::Udp => "UDP".into(),
                    Attach::AfPacket { interface } => format!("AF_PACKET on {interface}"),
                    Attach::Dpdk { device, .. } => format!("DPDK device {device}"),
                },
                if self.cfg.icrc { "on" } else { "off" }
            ),
            Backend::Verbs => format!("RDMA NIC (verbs, rdma_cm) on {}", self.cfg.ip),
        };
        let mut s = format!(
            "{backend}, memory: {} MiB {}\n",
            mem.host().len() >> 20,
            if mem.host().hugepages() { "hugepages" } else { "regular pages" },
        );
        for (st, r) in self.regions() {
            let shape = match st.kind {
                StoreKind::KeyWrite { slots, data_len, redundancy, hash } => {
                    format!("{slots} slots of {data_len} B, N={redundancy}, {} hash", hash.name())
                }
                StoreKind::KeyIncrement { slots, redundancy, hash } => {
                    format!("{slots} counters, N={redundancy}, {} hash", hash.name())
                }
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

/// Why the collector could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The stores' memory could not be allocated or registered.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The backend could not start: what it was and why.
    #[error("{0}")]
    Backend(String),
    /// A backend thread could not be spawned.
    #[error("cannot start the backend's thread: {0}")]
    Thread(std::io::Error),
}

/// What a started backend hands the collector: its thread, counters, notifier and, for a NIC,
/// its own R_Keys per store.
type Started = (JoinHandle<()>, Arc<RnicStats>, Notifier, Option<Vec<u32>>);

/// The soft-RNIC on `collector.interface` through AF_PACKET, with that interface's MAC.
fn start_af_packet(
    cfg: &CollectorConfig,
    seed: u32,
    stores: &Stores,
    stop: &Arc<AtomicBool>,
) -> Result<Started, StartError> {
    let Attach::AfPacket { interface: iface } = &cfg.attach else {
        return Err(StartError::Backend("not an AF_PACKET collector".into()));
    };
    let port = ports::port::AfPacketPort::open(iface).map_err(|e| {
        StartError::Backend(format!("cannot open interface {iface:?} with AF_PACKET (needs root): {e}"))
    })?;
    let mac = ports::port::interface_mac(iface)
        .map_err(|e| StartError::Backend(format!("no MAC for {iface:?}: {e}")))?;
    let pool = ports::buf::HeapPool::new(1024, ports::buf::DEFAULT_DATAROOM);
    let mut rnic =
        crate::rnic_port::PortRnic::new(RnicConfig::from_config(cfg, seed), mac, port, pool, stores);
    let (stats, notifier, s) = (rnic.stats(), rnic.notifier(), stop.clone());
    let t = std::thread::Builder::new()
        .name("soft-rnic".into())
        .spawn(move || rnic.run(&s))
        .map_err(StartError::Thread)?;
    Ok((t, stats, notifier, None))
}

/// The soft-RNIC on a DPDK ethdev (`collector.device`), on the first worker lcore of
/// `dpdk.eal_args`, with the device's MAC. Waits until the device is started or fails.
fn start_dpdk(
    cfg: &CollectorConfig,
    seed: u32,
    stores: &Stores,
    stop: &Arc<AtomicBool>,
) -> Result<Started, StartError> {
    use crate::rnic_port::PortRnic;
    use ports::buf::{Frame, Pool};
    use ports::port::{FrameApp, PortIo};
    use wire::ethernet::EthernetAddress;

    let Attach::Dpdk { device, dpdk } = cfg.attach.clone() else {
        return Err(StartError::Backend("not a DPDK collector".into()));
    };
    /// Runs on the lcore: builds the soft-RNIC on the started port, reports it, serves.
    struct Serve {
        rnic: RnicConfig,
        stores: Stores,
        stop: Arc<AtomicBool>,
        started: crossbeam_channel::Sender<Result<(Arc<RnicStats>, Notifier), StartError>>,
    }
    impl FrameApp for Serve {
        type Output = ();
        fn run<F, P, Q>(self, port: P, pool: Q, mac: EthernetAddress)
        where
            F: Frame + Send + 'static,
            P: PortIo<F> + 'static,
            Q: Pool<F> + Send + 'static,
        {
            let mut rnic = PortRnic::new(self.rnic, mac, port, pool, &self.stores);
            tracing::info!("soft-RNIC on DPDK, MAC {mac}");
            let _ = self.started.send(Ok((rnic.stats(), rnic.notifier())));
            rnic.run(&self.stop);
        }
    }
    let (tx, rx) = crossbeam_channel::bounded(1);
    let app = Serve {
        rnic: RnicConfig::from_config(cfg, seed),
        stores: stores.clone(),
        stop: stop.clone(),
        started: tx.clone(),
    };
    let t = std::thread::Builder::new()
        .name("soft-rnic-dpdk".into())
        .spawn(move || {
            if let Err(e) = ports::port::run_on_dpdk(&dpdk, &device, app) {
                let _ =
                    tx.send(Err(StartError::Backend(format!("soft-RNIC on DPDK device {device:?}: {e}"))));
            }
        })
        .map_err(StartError::Thread)?;
    let (stats, notifier) = rx
        .recv()
        .map_err(|_| StartError::Backend("the DPDK thread ended before the soft-RNIC started".into()))??;
    Ok((t, stats, notifier, None))
}

/// Start the verbs backend on its own thread (rdma-core handles stay on the thread that made
/// them) and wait until it listens or fails.
#[cfg(feature = "verbs")]
fn start_verbs(
    cfg: &CollectorConfig,
    stores: &Stores,
    stop: &Arc<AtomicBool>,
) -> Result<Started, StartError> {
    let stats = Arc::new(RnicStats::default());
    let notifier = Notifier::default();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let (ip, st, s, n, stop) = (cfg.ip, stores.clone(), stats.clone(), notifier.clone(), stop.clone());
    let t = std::thread::Builder::new()
        .name("verbs".into())
        .spawn(move || match crate::verbs::VerbsCollector::start(ip, &st, s, n) {
            Ok((mut v, rkeys)) => {
                let _ = tx.send(Ok(rkeys));
                v.run(&stop);
            }
            Err(e) => {
                let _ = tx.send(Err(StartError::Backend(e.to_string())));
            }
        })
        .map_err(StartError::Thread)?;
    let rkeys =
        rx.recv().map_err(|_| StartError::Backend("the verbs thread ended before it started".into()))??;
    Ok((t, stats, notifier, Some(rkeys)))
}

#[cfg(not(feature = "verbs"))]
fn start_verbs(_: &CollectorConfig, _: &Stores, _: &Arc<AtomicBool>) -> Result<Started, StartError> {
    Err(StartError::Backend(
        "collector.backend = \"verbs\": this collector was built without the verbs backend; \
         rebuild with `cargo build --release -p collector --features verbs` (needs libibverbs-dev \
         and librdmacm-dev) on a host with a RoCEv2 NIC"
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// With `backend = "verbs"` and no RDMA device on the address (or no verbs support built
    /// in), starting fails with an error saying what is missing — never a half-started
    /// collector.
    #[test]
    fn a_verbs_collector_without_a_nic_says_what_is_missing() {
        let cfg = CollectorConfig::parse(
            Path::new("t.toml"),
            "[collector]\nip = \"127.0.0.61\"\nmemory = \"pages\"\nbackend = \"verbs\"\n[keywrite]\nport = 1337\nslots = 64\n",
        )
        .unwrap();
        let e = Collector::start(&cfg).expect_err("127.0.0.61 is on no RDMA device");
        let msg = format!("{e:#}");
        let expected = if cfg!(feature = "verbs") {
            "no RDMA device serves 127.0.0.61:1337"
        } else {
            "--features verbs"
        };
        assert!(msg.contains(expected), "{msg}");
    }
}
