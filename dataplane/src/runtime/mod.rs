//! The poll-mode runtime: what turns a [`Switch`](crate::switch::Switch) into a running switch.
//!
//! One pipeline thread per configured lcore, pinned with `core_affinity`, each with its own
//! switch instance (program tables, TM), buffer pool and port handles, busy-polling its ports in
//! bursts. AF_PACKET ports are opened once per pipeline in a fan-out group, so the kernel spreads
//! received flows over the pipelines and any pipeline can send on any port; pcap and ring ports
//! belong to the first pipeline. The control thread (the caller's) logs per-second stats through
//! `tracing`, forwards control commands from a Unix socket and packets for the CPU, and stops the
//! pipelines on request; the final per-port and per-reason counters come back in a [`Summary`].
//!
//! Pipelines and the control thread share nothing mutable but lock-free structures: crossbeam
//! channels for commands and CPU packets, and relaxed atomics for published counters.
//!
//! With DPDK ports (feature `dpdk`) the EAL starts first, from `dpdk.eal_args`; the pipelines
//! then run on its worker lcores instead of threads pinned by `core_affinity`, every port's
//! buffers are mbufs from one mempool per socket, each DPDK port gets one rx and one tx queue
//! per pipeline (RSS spreads flows over them), and the control thread also logs link state and
//! device drop counters. Other backends work alongside, on the same mbufs.
//!
//! With `clock = "pcap"` time is not read from the system at all: it follows the timestamps of
//! the frames read from pcap ports, one frame at a time, and once the input ends it advances to
//! whenever the traffic manager next has something to send, so a replay's output — frames and
//! their timestamps — is the same on every run. The pipeline stops by itself when everything is
//! sent.

pub mod control;
mod pipeline;
pub mod report;
mod stats;
mod summary;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, bounded};

pub use pipeline::{CpuFrame, receive_all, transmit_all};
pub use stats::StatsCell;
pub use summary::Summary;

use crate::buf::{Frame, HeapPool, PktBuf};
use crate::config::{Backend, Config, ConfigError, PortConfig};
use crate::port::{AfPacketPort, PcapPort, PortIo, RingPeer, RingPort};
use crate::programs;
use crate::switch::DynSwitch;
use pipeline::{Ctl, Pipeline};
use summary::{add_port_stats, log_rates};

/// A problem found while starting the switch — a port that cannot be opened, a DPDK EAL that
/// will not initialise — before any packet was forwarded. `dataplane run` exits with code 2.
/// The message carries the whole cause: what was being done, then why it failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

/// Why the switch could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The configuration is wrong (the program's section, a table entry): with file and line.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A port, DPDK or a pipeline thread could not be started.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// Stopped (SIGINT/SIGTERM) before it had started: nothing ran.
    #[error("stopped by a signal before the pipelines started")]
    Stopped,
    /// The runtime's own I/O failed (the control socket, a signal handler).
    #[error("{what}: {error}")]
    Io {
        /// What the runtime was doing.
        what: String,
        /// The error.
        error: std::io::Error,
    },
}

/// `e` and every error it was caused by, joined by ": ".
fn chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg += ": ";
        msg += &s.to_string();
        src = s.source();
    }
    msg
}

/// A [`SetupError`] saying `what` failed and why.
fn setup(what: impl std::fmt::Display, e: impl std::error::Error) -> RuntimeError {
    setup_msg(format!("{what}: {}", chain(&e)))
}

/// A [`SetupError`] that is `e` (which says what it was about) and its causes.
#[cfg(dpdk)]
fn setup_of(e: impl std::error::Error) -> RuntimeError {
    setup_msg(chain(&e))
}

/// A [`SetupError`] with a message of its own.
fn setup_msg(msg: String) -> RuntimeError {
    RuntimeError::Setup(SetupError(msg))
}

/// A [`RuntimeError::Io`].
fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RuntimeError {
    let what = what.into();
    move |error| RuntimeError::Io { what, error }
}

/// A pipeline running on a thread, or on a DPDK worker lcore.
enum Handle {
    Thread(JoinHandle<Summary>),
    #[cfg(dpdk)]
    Lcore(crate::port::dpdk::LcoreJob<Summary>),
}

impl Handle {
    fn is_finished(&self) -> bool {
        match self {
            Self::Thread(h) => h.is_finished(),
            #[cfg(dpdk)]
            Self::Lcore(j) => j.is_finished(),
        }
    }

    fn join(self) -> std::thread::Result<Summary> {
        match self {
            Self::Thread(h) => h.join(),
            #[cfg(dpdk)]
            Self::Lcore(j) => j.join(),
        }
    }
}

/// What the DPDK backend keeps while the switch runs.
#[cfg(dpdk)]
struct DpdkState {
    eal: crate::port::dpdk::Eal,
    last_xstats: Vec<Vec<(String, u64)>>,
    last_link: Vec<Option<crate::port::dpdk::Link>>,
}

/// A running switch.
pub struct Runtime {
    stop: Arc<AtomicBool>,
    pipelines: Vec<Handle>,
    ctl: Vec<Sender<Ctl>>,
    stats: Vec<Arc<StatsCell>>,
    cpu: Receiver<CpuFrame>,
    rings: Vec<(String, RingPeer)>,
    port_names: Vec<String>,
    drop_names: Vec<&'static str>,
    stats_interval: Duration,
    control_socket: Option<std::path::PathBuf>,
    // Declared last: dropped after the pipelines have been joined (see Drop).
    #[cfg(dpdk)]
    dpdk: Option<std::sync::Mutex<DpdkState>>,
}

/// A non-DPDK port for pipeline `id` of `n`: AF_PACKET ports are opened by every pipeline (in a
/// fan-out group when there are several), pcap and ring ports by the first only.
fn open_port<F: Frame + 'static>(
    pc: &PortConfig,
    pid: usize,
    id: usize,
    n: usize,
    fanout_base: u16,
    rings: &mut Vec<(String, RingPeer)>,
) -> Result<Option<Box<dyn PortIo<F>>>, RuntimeError> {
    let port = open_backend(pc, pid, id, n, fanout_base, rings)?;
    Ok(match port {
        Some(p) if pc.inject_loss > 0.0 => {
            tracing::warn!(port = %pc.name, p = pc.inject_loss, "fault injection: the port loses frames on purpose");
            let seed = (pid as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ std::process::id() as u64;
            Some(Box::new(crate::port::Lossy::new(p, pc.inject_loss, seed)))
        }
        p => p,
    })
}

fn open_backend<F: Frame + 'static>(
    pc: &PortConfig,
    pid: usize,
    id: usize,
    n: usize,
    fanout_base: u16,
    rings: &mut Vec<(String, RingPeer)>,
) -> Result<Option<Box<dyn PortIo<F>>>, RuntimeError> {
    Ok(match &pc.backend {
        Backend::AfPacket { iface } => {
            let group = (n > 1).then_some(fanout_base.wrapping_add(pid as u16));
            let p = AfPacketPort::open_fanout(iface, group).map_err(|e| {
                setup(
                    format_args!(
                        "port {:?}: cannot open interface {iface:?} (AF_PACKET needs root)",
                        pc.name
                    ),
                    e,
                )
            })?;
            Some(Box::new(p))
        }
        Backend::Pcap { rx, tx } if id == 0 => Some(Box::new(
            PcapPort::open(rx.as_deref(), tx.as_deref())
                .map_err(|e| setup(format_args!("port {:?}", pc.name), e))?,
        )),
        Backend::Udp { bind, listen } if id == 0 => Some(Box::new(
            crate::port::UdpPort::open(*bind, pc.mac, listen)
                .map_err(|e| setup(format_args!("port {:?}", pc.name), e))?,
        )),
        Backend::Ring if id == 0 => {
            let (p, peer) = RingPort::pair(4096);
            rings.push((pc.name.clone(), peer));
            Some(Box::new(p))
        }
        _ => None,
    })
}

/// What every pipeline shares, to build one.
struct Common {
    stop: Arc<AtomicBool>,
    cpu: Sender<CpuFrame>,
    cpu_rx: Receiver<CpuFrame>,
    drop_names: Vec<&'static str>,
    ctl: Vec<Sender<Ctl>>,
    stats: Vec<Arc<StatsCell>>,
}

impl Runtime {
    /// Build every pipeline's switch and ports and start them. Configuration problems in the
    /// program's section are found here, before any thread starts; problems opening ports or
    /// starting DPDK are [`SetupError`]s.
    pub fn start(cfg: &Config) -> Result<Self, RuntimeError> {
        Self::start_until(cfg, &AtomicBool::new(false))
    }

    /// [`Self::start`], given up ([`RuntimeError::Stopped`]) if `stop` is set while the
    /// pipelines' pools are made (a signal during a start of seconds).
    pub fn start_until(cfg: &Config, stop: &AtomicBool) -> Result<Self, RuntimeError> {
        if cfg.dpdk.is_some() {
            #[cfg(dpdk)]
            return Self::start_dpdk(cfg);
            #[cfg(not(dpdk))]
            return Err(setup_msg(format!(
                "{}: ports use backend \"dpdk\", but this dataplane was built without DPDK \
                 (pkg-config found no libdpdk at build time): install libdpdk-dev (scripts/setup-dpdk.sh) \
                 and rebuild",
                cfg.file.display()
            )));
        }
        let n = cfg.runtime.lcores.len().max(1);
        let mut rings = Vec::new();
        let mut built = Vec::new();
        let fanout_base = (std::process::id() as u16).wrapping_mul(31);
        for id in 0..n {
            let switch = programs::build::<PktBuf>(cfg)?;
            let mut ports = Vec::new();
            for (pid, pc) in cfg.ports.iter().enumerate() {
                ports.push(open_port::<PktBuf>(pc, pid, id, n, fanout_base, &mut rings)?);
            }
            built.push((switch, ports));
        }
        let mut common = Self::common(built[0].0.drop_reasons().names().to_vec());
        let mut pipelines = Vec::new();
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        for (id, (switch, ports)) in built.into_iter().enumerate() {
            let p = Self::pipeline(
                cfg,
                &mut common,
                id,
                switch,
                ports,
                HeapPool::new_until(cfg.runtime.pool_buffers, cfg.runtime.dataroom, || {
                    stop.load(Ordering::Relaxed)
                })
                .ok_or(RuntimeError::Stopped)?,
            );
            let core = cfg.runtime.lcores.get(id).and_then(|c| cores.iter().find(|k| k.id == *c).copied());
            let handle = std::thread::Builder::new()
                .name(format!("pipeline-{id}"))
                .spawn(move || {
                    if let Some(c) = core
                        && !core_affinity::set_for_current(c)
                    {
                        tracing::warn!("pipeline {id}: could not pin to core {}", c.id);
                    }
                    p.run()
                })
                .map_err(|e| setup(format_args!("pipeline {id}: cannot start its thread"), e))?;
            pipelines.push(Handle::Thread(handle));
        }
        Ok(Self::assemble(cfg, common, pipelines, rings))
    }

    /// Start with DPDK: the EAL from `dpdk.eal_args`, a mempool per socket, every DPDK port
    /// with one queue pair per worker lcore, then one pipeline per worker lcore.
    #[cfg(dpdk)]
    fn start_dpdk(cfg: &Config) -> Result<Self, RuntimeError> {
        use crate::port::dpdk::{DpdkPort, Eal, Mbuf, MbufPool};
        let Some(d) = &cfg.dpdk else { unreachable!("start_dpdk without a [dpdk] section") };
        // Every switch is built before the EAL starts, so program errors cost no EAL.
        let mut built: Vec<Box<dyn DynSwitch<Mbuf>>> = Vec::new();
        let first = programs::build::<Mbuf>(cfg)?;
        let mut eal = Eal::init(&d.eal_args).map_err(setup_of)?;
        let workers = eal.workers().to_vec();
        if let Some(why) = cfg.program_info().single_pipeline
            && workers.len() > 1
        {
            return Err(setup_msg(format!(
                "program {:?} runs one pipeline ({why}), but dpdk.eal_args give {} worker lcores ({workers:?}): give one (e.g. -l 0-1)",
                cfg.program,
                workers.len()
            )));
        }
        let n = workers.len();
        built.push(first);
        for _ in 1..n {
            built.push(programs::build::<Mbuf>(cfg)?);
        }
        let dpdk_ports = cfg.ports.iter().filter(|p| matches!(p.backend, Backend::Dpdk { .. })).count();
        // Each rx ring full, each tx ring full, and every lcore's cache with a burst in flight.
        let need = (dpdk_ports * n) as u32 * (u32::from(d.rx_ring) + u32::from(d.tx_ring))
            + n as u32 * (d.mbuf_cache * 3 / 2 + 2 * cfg.runtime.burst as u32);
        if d.mbufs < need {
            return Err(setup_of(crate::port::dpdk::DpdkError::TooFewMbufs { n: d.mbufs, need }));
        }
        let mut pools: Vec<MbufPool> = Vec::new();
        for &l in &workers {
            let socket = eal.lcore_socket(l);
            pools.push(
                eal.pool(socket, d.mbufs, d.mbuf_cache, cfg.runtime.dataroom as u32).map_err(setup_of)?,
            );
        }
        let mut port_ids = vec![None; cfg.ports.len()];
        for (pid, pc) in cfg.ports.iter().enumerate() {
            if let Backend::Dpdk { device } = &pc.backend {
                let id = eal.find_port(&pc.name, device).map_err(setup_of)?;
                eal.start_port(&pc.name, device, id, &pools, d.rx_ring, d.tx_ring, d.promiscuous, d.rss)
                    .map_err(setup_of)?;
                if let Some(l) = eal.link(id) {
                    tracing::info!(port = %pc.name, device = %device, dpdk_port = id, up = l.up, speed_mbps = l.speed_mbps, "DPDK port started");
                }
                port_ids[pid] = Some(id);
            }
        }
        let mut rings = Vec::new();
        let fanout_base = (std::process::id() as u16).wrapping_mul(31);
        let mut common = Self::common(built[0].drop_reasons().names().to_vec());
        let mut pipelines = Vec::new();
        for (id, switch) in built.into_iter().enumerate() {
            let mut ports: Vec<Option<Box<dyn PortIo<Mbuf>>>> = Vec::new();
            for (pid, pc) in cfg.ports.iter().enumerate() {
                ports.push(match port_ids[pid] {
                    Some(port_id) => Some(Box::new(DpdkPort::new(port_id, id as u16))),
                    None => open_port::<Mbuf>(pc, pid, id, n, fanout_base, &mut rings)?,
                });
            }
            let p = Self::pipeline(cfg, &mut common, id, switch, ports, pools[id]);
            let job = eal.launch(workers[id], move || p.run()).map_err(setup_of)?;
            pipelines.push(Handle::Lcore(job));
        }
        tracing::info!("pipelines on DPDK worker lcores {workers:?}");
        let mut rt = Self::assemble(cfg, common, pipelines, rings);
        let nports = eal.ports().len();
        rt.dpdk = Some(std::sync::Mutex::new(DpdkState {
            eal,
            last_xstats: vec![Vec::new(); nports],
            last_link: vec![None; nports],
        }));
        Ok(rt)
    }

    /// Link changes and device losses (from the xstats) of DPDK ports since the last call, logged.
    fn log_devices(&self) {
        #[cfg(dpdk)]
        if let Some(d) = &self.dpdk
            && let Ok(mut d) = d.lock()
        {
            let d = &mut *d;
            for (i, port) in d.eal.ports().iter().enumerate() {
                let link = d.eal.link(port.port_id);
                if link != d.last_link[i] {
                    if let Some(l) = link {
                        tracing::info!(port = %port.name, up = l.up, speed_mbps = l.speed_mbps, full_duplex = l.full_duplex, "link");
                    }
                    d.last_link[i] = link;
                }
                // Extended statistics that count loss (missed, errors, no mbuf, drops,
                // discards): what grew since the last interval.
                let now = d.eal.xstats(port.port_id);
                let grew: Vec<String> = now
                    .iter()
                    .filter(|(name, _)| {
                        ["miss", "err", "nombuf", "drop", "discard"].iter().any(|k| name.contains(k))
                    })
                    .filter_map(|(name, v)| {
                        let was = d.last_xstats[i].iter().find(|(n, _)| n == name).map_or(0, |(_, w)| *w);
                        (*v > was).then(|| format!("{name}+{}", v - was))
                    })
                    .collect();
                if !grew.is_empty() {
                    tracing::warn!(port = %port.name, counters = %grew.join(" "), "device losses in the last interval");
                }
                d.last_xstats[i] = now;
            }
        }
    }

    fn common(drop_names: Vec<&'static str>) -> Common {
        let (cpu, cpu_rx) = bounded(4096);
        Common {
            stop: Arc::new(AtomicBool::new(false)),
            cpu,
            cpu_rx,
            drop_names,
            ctl: Vec::new(),
            stats: Vec::new(),
        }
    }

    fn pipeline<F: Frame, Pl>(
        cfg: &Config,
        common: &mut Common,
        id: usize,
        switch: Box<dyn DynSwitch<F>>,
        ports: Vec<Option<Box<dyn PortIo<F>>>>,
        pool: Pl,
    ) -> Pipeline<F, Pl> {
        let (ctl_tx, ctl_rx) = bounded(64);
        let cell = Arc::new(StatsCell::new(cfg.ports.len(), common.drop_names.len()));
        common.ctl.push(ctl_tx);
        common.stats.push(cell.clone());
        Pipeline {
            id,
            switch,
            ports,
            port_names: cfg.ports.iter().map(|p| p.name.clone()).collect(),
            pool,
            burst: cfg.runtime.burst,
            idle_sleep_ns: cfg.runtime.idle_sleep_max_us * 1000,
            clock: cfg.runtime.clock,
            stop: common.stop.clone(),
            ctl: ctl_rx,
            cpu: common.cpu.clone(),
            stats: cell,
        }
    }

    fn assemble(
        cfg: &Config,
        common: Common,
        pipelines: Vec<Handle>,
        rings: Vec<(String, RingPeer)>,
    ) -> Self {
        tracing::info!(
            "{} pipeline(s) running program {:?} on {} port(s): {}",
            pipelines.len(),
            cfg.program,
            cfg.ports.len(),
            cfg.ports.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
        );
        Self {
            stop: common.stop,
            pipelines,
            ctl: common.ctl,
            stats: common.stats,
            cpu: common.cpu_rx,
            rings,
            port_names: cfg.ports.iter().map(|p| p.name.clone()).collect(),
            drop_names: common.drop_names,
            stats_interval: Duration::from_secs_f64(cfg.runtime.stats_interval_s),
            control_socket: cfg.runtime.control_socket.clone(),
            #[cfg(dpdk)]
            dpdk: None,
        }
    }

    /// The far ends of the `ring` ports, by port name.
    pub fn ring(&self, name: &str) -> Option<RingPeer> {
        self.rings.iter().find(|(n, _)| n == name).map(|(_, p)| p.clone())
    }

    /// The flag that stops the pipelines when set (signal handlers set it).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Parse a control line and apply it in every pipeline; the first pipeline's answer.
    pub fn command(&self, line: &str) -> Result<String, String> {
        self.commands().run(line)
    }

    /// The pipelines' command queues, for a thread of its own (the control socket's).
    pub fn commands(&self) -> control::Commands {
        control::Commands::new(self.ctl.clone())
    }

    /// The counters the pipelines last published, summed.
    pub fn snapshot(&self) -> Summary {
        let mut s = Summary {
            ports: self.port_names.clone(),
            drop_names: self.drop_names.clone(),
            ..Summary::default()
        };
        for cell in &self.stats {
            let (c, p) = cell.load();
            s.counters.add(&c);
            add_port_stats(&mut s.port_stats, &p);
        }
        s
    }

    /// Serve the control thread's duties until the stop flag is set or every pipeline has ended
    /// (a finished replay): stats every interval, CPU packets, the control socket.
    pub fn serve(&self) -> Result<(), RuntimeError> {
        // The socket is served on threads of its own: no client can hold this loop (or SIGTERM).
        let _control = match &self.control_socket {
            Some(path) => Some(
                control::ControlSocket::open(path, self.commands()).map_err(|e| setup_msg(e.to_string()))?,
            ),
            None => None,
        };
        let mut last = Instant::now();
        let mut prev = self.snapshot();
        while !self.stop.load(Ordering::Relaxed) && !self.pipelines.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
            while let Ok(f) = self.cpu.try_recv() {
                tracing::debug!(pipeline = f.pipeline, port = f.ingress_port, code = ?f.code, len = f.data.len(), "frame for the CPU");
            }
            if last.elapsed() >= self.stats_interval {
                let dt = last.elapsed().as_secs_f64();
                last = Instant::now();
                let cur = self.snapshot();
                log_rates(&prev, &cur, dt);
                self.log_devices();
                prev = cur;
            }
        }
        Ok(())
    }

    /// Stop the pipelines and collect their final counters.
    pub fn stop(mut self) -> Summary {
        let mut s = Summary {
            ports: self.port_names.clone(),
            drop_names: self.drop_names.clone(),
            ..Summary::default()
        };
        for p in self.join_all() {
            s.counters.add(&p.counters);
            add_port_stats(&mut s.port_stats, &p.port_stats);
            s.program_stats.extend(p.program_stats);
        }
        #[cfg(dpdk)]
        if let Some(d) = self.dpdk.take() {
            let mut d = d.into_inner().unwrap_or_else(|e| e.into_inner());
            for port in d.eal.ports().to_vec() {
                let nonzero: Vec<(String, u64)> =
                    d.eal.xstats(port.port_id).into_iter().filter(|(_, v)| *v != 0).collect();
                s.device_stats.push((port.name.clone(), nonzero));
            }
            // Every mbuf is back (the pipelines drained their switches): release DPDK.
            d.eal.cleanup();
        }
        s
    }

    /// Stop the pipelines and wait for each; the summaries of those that did not panic.
    fn join_all(&mut self) -> Vec<Summary> {
        self.stop.store(true, Ordering::Relaxed);
        let mut out = Vec::new();
        for h in self.pipelines.drain(..) {
            match h.join() {
                Ok(p) => out.push(p),
                Err(_) => tracing::error!("a pipeline panicked"),
            }
        }
        out
    }
}

impl Drop for Runtime {
    /// A runtime dropped without [`Runtime::stop`] (an error while serving) still stops and
    /// joins its pipelines before DPDK, declared after them, is released.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.pipelines.drain(..) {
            let _ = h.join();
        }
    }
}

/// Run a switch until SIGINT/SIGTERM (or, on a replay clock, until the replay is done) and return
/// its final counters.
pub fn run(cfg: &Config) -> Result<Summary, RuntimeError> {
    // Caught from the start: a signal while the pipelines start stops them once they run.
    let early = ports::input::stop_on_signals().map_err(io("installing a signal handler"))?;
    let rt = Runtime::start_until(cfg, &early)?;
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, rt.stop_flag()).map_err(io("installing a signal handler"))?;
    }
    if early.load(Ordering::Relaxed) {
        rt.stop_flag().store(true, Ordering::Relaxed);
    }
    rt.serve()?;
    Ok(rt.stop())
}
