//! The poll-mode runtime: what turns a [`Switch`] into a running switch.
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
//! With `clock = "pcap"` time is not read from the system at all: it follows the timestamps of
//! the frames read from pcap ports, one frame at a time, and once the input ends it advances to
//! whenever the traffic manager next has something to send, so a replay's output — frames and
//! their timestamps — is the same on every run. The pipeline stops by itself when everything is
//! sent.

mod stats;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossbeam_channel::{Receiver, Sender, bounded};

pub use stats::StatsCell;

use crate::buf::{Frame, HeapPool, PktBuf, Pool};
use crate::config::{Backend, ClockSource, Config};
use crate::model::builtin;
use crate::port::{AfPacketPort, PcapPort, PortIo, PortStats, RingPeer, RingPort};
use crate::programs::{FromConfig, build_switch};
use crate::switch::{Counters, Program, Switch};

/// A frame for the switch CPU.
#[derive(Debug, Clone)]
pub struct CpuFrame {
    /// Which pipeline sent it.
    pub pipeline: usize,
    /// The port it arrived on.
    pub ingress_port: u16,
    /// Mirror code, if mirrored.
    pub code: Option<u16>,
    /// The frame.
    pub data: Vec<u8>,
}

enum Ctl<C> {
    Command(C, Sender<Result<String, String>>),
}

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
}

impl Summary {
    /// The counters as a table.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<12} {:>12} {:>14} {:>12} {:>14} {:>8} {:>8} {:>9} {:>9}\n",
            "port",
            "rx_packets",
            "rx_bytes",
            "tx_packets",
            "tx_bytes",
            "pfc_rx",
            "pfc_tx",
            "rx_errors",
            "tx_errors"
        );
        for (i, name) in self.ports.iter().enumerate() {
            let c = self.counters.ports.get(i).copied().unwrap_or_default();
            let p = self.port_stats.get(i).copied().unwrap_or_default();
            s += &format!(
                "{:<12} {:>12} {:>14} {:>12} {:>14} {:>8} {:>8} {:>9} {:>9}\n",
                name,
                c.rx_packets,
                c.rx_bytes,
                c.tx_packets,
                c.tx_bytes,
                c.pfc_rx,
                c.pfc_tx,
                p.rx_errors,
                p.tx_errors
            );
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
            "to_cpu {}  from_cpu {}  recirculated {}\n",
            self.counters.to_cpu, self.counters.from_cpu, self.counters.recirculated
        );
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

struct Pipeline<P: Program> {
    id: usize,
    switch: Switch<P, PktBuf>,
    ports: Vec<Option<Box<dyn PortIo<PktBuf>>>>,
    pool: HeapPool,
    burst: usize,
    clock: ClockSource,
    stop: Arc<AtomicBool>,
    ctl: Receiver<Ctl<P::Command>>,
    cpu: Sender<CpuFrame>,
    stats: Arc<StatsCell>,
}

impl<P: Program> Pipeline<P> {
    fn run(mut self) -> Summary {
        let mut rx: Vec<PktBuf> = Vec::with_capacity(self.burst);
        let mut tx: Vec<PktBuf> = Vec::with_capacity(self.burst);
        let start = Instant::now();
        let mut now = 0u64;
        let mut loops = 0u64;
        let mut last_publish = 0u64;
        let mut last_tick = 0u64;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            match self.clock {
                ClockSource::Realtime => now = start.elapsed().as_nanos() as u64,
                ClockSource::Pcap => match self.next_replay_time(now) {
                    Some(t) => now = now.max(t),
                    None => break,
                },
            }
            // Receive. On a replay clock, only the frames stamped with this instant.
            let replay = self.clock == ClockSource::Pcap;
            receive_all(
                &mut self.switch,
                &mut self.ports,
                &mut self.pool,
                &mut rx,
                now,
                if replay { 0 } else { self.burst },
            );
            if now.saturating_sub(last_tick) >= 50_000 || self.clock == ClockSource::Pcap {
                last_tick = now;
                self.switch.tick(now, &mut self.pool);
            }
            transmit_all(&mut self.switch, &mut self.ports, &mut self.pool, &mut tx, now, self.burst);
            for c in self.switch.drain_cpu() {
                let f = CpuFrame {
                    pipeline: self.id,
                    ingress_port: c.ingress_port,
                    code: c.code,
                    data: c.pkt.data().to_vec(),
                };
                let _ = self.cpu.try_send(f);
                self.pool.free(c.pkt);
            }
            loops += 1;
            if loops.is_multiple_of(64) {
                while let Ok(Ctl::Command(cmd, reply)) = self.ctl.try_recv() {
                    let _ = reply.send(self.switch.control(cmd, now));
                }
                if now.saturating_sub(last_publish) >= 1_000_000 || self.clock == ClockSource::Pcap {
                    last_publish = now;
                    self.publish();
                }
            }
        }
        self.finish()
    }

    /// On a replay clock: the time of the next thing to do, or `None` when all is done.
    fn next_replay_time(&self, now: u64) -> Option<u64> {
        let input = self.ports.iter().flatten().filter_map(|p| p.next_rx_time()).min();
        let output = (0..self.ports.len())
            .filter(|&p| self.ports[p].is_some())
            .filter_map(|p| self.switch.next_ready(p as u16, now))
            .min();
        match (input, output) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn port_stats(&self) -> Vec<PortStats> {
        self.ports.iter().map(|p| p.as_ref().map(|p| p.stats()).unwrap_or_default()).collect()
    }

    fn publish(&self) {
        self.stats.store(self.switch.counters(), &self.port_stats());
    }

    fn finish(mut self) -> Summary {
        for p in self.ports.iter_mut().flatten() {
            if let Err(e) = p.flush() {
                tracing::warn!("flushing a port: {e}");
            }
        }
        self.switch.drain_all(&mut self.pool);
        self.publish();
        Summary {
            ports: Vec::new(),
            drop_names: self.switch.drop_reasons().names().to_vec(),
            counters: self.switch.counters().clone(),
            port_stats: self.port_stats(),
        }
    }
}

/// One receive step of a poll loop: a burst of up to `burst` frames from every port into the
/// switch, then recirculated packets. `burst == 0` is the replay clock's step: from each port only
/// a frame stamped `now`, one at a time.
pub fn receive_all<P, F, T>(
    switch: &mut Switch<P, F>,
    ports: &mut [Option<Box<T>>],
    pool: &mut dyn Pool<F>,
    rx: &mut Vec<F>,
    now: u64,
    burst: usize,
) where
    P: Program,
    F: Frame,
    T: PortIo<F> + ?Sized,
{
    for (pid, port) in ports.iter_mut().enumerate() {
        let Some(port) = port.as_mut() else { continue };
        let max = if burst == 0 { usize::from(port.next_rx_time() == Some(now)) } else { burst };
        if max == 0 {
            continue;
        }
        port.rx_burst(pool, rx, max);
        for pkt in rx.drain(..) {
            switch.receive(now, pid as u16, pkt, pool);
        }
    }
    switch.process_recirculated(now, pool);
}

/// One transmit step of a poll loop: for every port, bursts of what the switch releases now,
/// handed to the port; what the port refuses is dropped and counted (`tx_full`).
pub fn transmit_all<P, F, T>(
    switch: &mut Switch<P, F>,
    ports: &mut [Option<Box<T>>],
    pool: &mut dyn Pool<F>,
    tx: &mut Vec<F>,
    now: u64,
    burst: usize,
) where
    P: Program,
    F: Frame,
    T: PortIo<F> + ?Sized,
{
    for (pid, port) in ports.iter_mut().enumerate() {
        let Some(port) = port.as_mut() else { continue };
        port.set_time(now);
        loop {
            let n = switch.transmit(now, pid as u16, tx, burst, pool);
            if n == 0 {
                break;
            }
            port.tx_burst(tx, pool);
            if !tx.is_empty() {
                switch.count_drop(builtin::TX_FULL, tx.len() as u64);
                for p in tx.drain(..) {
                    pool.free(p);
                }
            }
            if n < burst {
                break;
            }
        }
    }
}

/// A running switch.
pub struct Runtime<P: Program> {
    stop: Arc<AtomicBool>,
    pipelines: Vec<JoinHandle<Summary>>,
    ctl: Vec<Sender<Ctl<P::Command>>>,
    stats: Vec<Arc<StatsCell>>,
    cpu: Receiver<CpuFrame>,
    rings: Vec<(String, RingPeer)>,
    port_names: Vec<String>,
    drop_names: Vec<&'static str>,
    stats_interval: Duration,
    control_socket: Option<std::path::PathBuf>,
}

impl<P: FromConfig> Runtime<P> {
    /// Build every pipeline's switch and ports and start them. Configuration problems in the
    /// program's section are found here, before any thread starts.
    pub fn start(cfg: &Config) -> Result<Self> {
        let n = cfg.runtime.lcores.len().max(1);
        let stop = Arc::new(AtomicBool::new(false));
        let (cpu_tx, cpu_rx) = bounded(4096);
        let mut rings = Vec::new();
        let mut built = Vec::new();
        let fanout_base = (std::process::id() as u16).wrapping_mul(31);
        for id in 0..n {
            let switch: Switch<P, PktBuf> = build_switch(cfg)?;
            let mut ports: Vec<Option<Box<dyn PortIo<PktBuf>>>> = Vec::new();
            for (pid, pc) in cfg.ports.iter().enumerate() {
                let port: Option<Box<dyn PortIo<PktBuf>>> = match &pc.backend {
                    Backend::AfPacket { iface } => {
                        let group = (n > 1).then_some(fanout_base.wrapping_add(pid as u16));
                        let p = AfPacketPort::open_fanout(iface, group).with_context(|| {
                            format!(
                                "port {:?}: cannot open interface {iface:?} (AF_PACKET needs root)",
                                pc.name
                            )
                        })?;
                        Some(Box::new(p))
                    }
                    Backend::Pcap { rx, tx } if id == 0 => Some(Box::new(
                        PcapPort::open(rx.as_deref(), tx.as_deref())
                            .with_context(|| format!("port {:?}", pc.name))?,
                    )),
                    Backend::Ring if id == 0 => {
                        let (p, peer) = RingPort::pair(4096);
                        rings.push((pc.name.clone(), peer));
                        Some(Box::new(p))
                    }
                    _ => None,
                };
                ports.push(port);
            }
            built.push((switch, ports));
        }
        let drop_names = built[0].0.drop_reasons().names().to_vec();
        let mut pipelines = Vec::new();
        let mut ctl = Vec::new();
        let mut stats = Vec::new();
        let cores = core_affinity::get_core_ids().unwrap_or_default();
        for (id, (switch, ports)) in built.into_iter().enumerate() {
            let (ctl_tx, ctl_rx) = bounded(64);
            let cell = Arc::new(StatsCell::new(cfg.ports.len(), drop_names.len()));
            let p = Pipeline {
                id,
                switch,
                ports,
                pool: HeapPool::new(cfg.runtime.pool_buffers, cfg.runtime.dataroom),
                burst: cfg.runtime.burst,
                clock: cfg.runtime.clock,
                stop: stop.clone(),
                ctl: ctl_rx,
                cpu: cpu_tx.clone(),
                stats: cell.clone(),
            };
            let core = cfg.runtime.lcores.get(id).and_then(|c| cores.iter().find(|k| k.id == *c).copied());
            let handle = std::thread::Builder::new().name(format!("pipeline-{id}")).spawn(move || {
                if let Some(c) = core
                    && !core_affinity::set_for_current(c)
                {
                    tracing::warn!("pipeline {id}: could not pin to core {}", c.id);
                }
                p.run()
            })?;
            pipelines.push(handle);
            ctl.push(ctl_tx);
            stats.push(cell);
        }
        tracing::info!(
            "{} pipeline(s) running program {:?} on {} port(s): {}",
            n,
            cfg.program,
            cfg.ports.len(),
            cfg.ports.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
        );
        Ok(Self {
            stop,
            pipelines,
            ctl,
            stats,
            cpu: cpu_rx,
            rings,
            port_names: cfg.ports.iter().map(|p| p.name.clone()).collect(),
            drop_names,
            stats_interval: Duration::from_secs_f64(cfg.runtime.stats_interval_s),
            control_socket: cfg.runtime.control_socket.clone(),
        })
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
        let mut answer = Err("no pipeline".to_string());
        for (i, c) in self.ctl.iter().enumerate() {
            let cmd = P::parse_command(line, &self.port_names)?;
            let (tx, rx) = bounded(1);
            c.send(Ctl::Command(cmd, tx)).map_err(|_| "pipeline stopped".to_string())?;
            let r =
                rx.recv_timeout(Duration::from_secs(5)).map_err(|_| "pipeline did not answer".to_string())?;
            if i == 0 {
                answer = r;
            }
        }
        answer
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
    pub fn serve(&self) -> Result<()> {
        let listener = match &self.control_socket {
            Some(path) => {
                let _ = std::fs::remove_file(path);
                let l =
                    UnixListener::bind(path).with_context(|| format!("control socket {}", path.display()))?;
                l.set_nonblocking(true)?;
                tracing::info!("control socket {}", path.display());
                Some(l)
            }
            None => None,
        };
        let mut last = Instant::now();
        let mut prev = self.snapshot();
        while !self.stop.load(Ordering::Relaxed) && !self.pipelines.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
            while let Ok(f) = self.cpu.try_recv() {
                tracing::debug!(pipeline = f.pipeline, port = f.ingress_port, code = ?f.code, len = f.data.len(), "frame for the CPU");
            }
            if let Some(l) = &listener
                && let Ok((stream, _)) = l.accept()
            {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let mut w = stream.try_clone()?;
                for line in BufReader::new(stream).lines().map_while(|l| l.ok()) {
                    if line.trim().is_empty() {
                        continue;
                    }
                    let answer = match self.command(line.trim()) {
                        Ok(s) => format!("ok {}\n", s.trim_end()),
                        Err(e) => format!("error {e}\n"),
                    };
                    if w.write_all(answer.as_bytes()).is_err() {
                        break;
                    }
                }
            }
            if last.elapsed() >= self.stats_interval {
                let dt = last.elapsed().as_secs_f64();
                last = Instant::now();
                let cur = self.snapshot();
                log_rates(&prev, &cur, dt);
                prev = cur;
            }
        }
        if let Some(path) = &self.control_socket {
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }

    /// Stop the pipelines and collect their final counters.
    pub fn stop(self) -> Summary {
        self.stop.store(true, Ordering::Relaxed);
        let mut s = Summary {
            ports: self.port_names.clone(),
            drop_names: self.drop_names.clone(),
            ..Summary::default()
        };
        for h in self.pipelines {
            match h.join() {
                Ok(p) => {
                    s.counters.add(&p.counters);
                    add_port_stats(&mut s.port_stats, &p.port_stats);
                }
                Err(_) => tracing::error!("a pipeline panicked"),
            }
        }
        s
    }
}

fn add_port_stats(acc: &mut Vec<PortStats>, more: &[PortStats]) {
    if acc.len() < more.len() {
        acc.resize(more.len(), PortStats::default());
    }
    for (a, b) in acc.iter_mut().zip(more) {
        a.rx += b.rx;
        a.tx += b.tx;
        a.rx_errors += b.rx_errors;
        a.tx_errors += b.tx_errors;
    }
}

fn log_rates(prev: &Summary, cur: &Summary, dt: f64) {
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

/// Run a switch until SIGINT/SIGTERM (or, on a replay clock, until the replay is done) and return
/// its final counters.
pub fn run<P: FromConfig>(cfg: &Config) -> Result<Summary> {
    let rt = Runtime::<P>::start(cfg)?;
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, rt.stop_flag()).context("installing a signal handler")?;
    }
    rt.serve()?;
    Ok(rt.stop())
}
