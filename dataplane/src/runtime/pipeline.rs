//! One pipeline's poll loop, and the receive and transmit steps every poll loop shares (the
//! benches run them too).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use super::StatsCell;
use super::summary::Summary;
use crate::buf::{Frame, Pool};
use crate::config::ClockSource;
use crate::model::builtin;
use crate::port::{PortIo, PortStats};
use crate::switch::{CpuPacket, DynSwitch};

/// Longest a stopping pipeline waits for its program to finish (acknowledgements, DREQs).
pub const STOP_GRACE_NS: u64 = 500_000_000;

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

/// What the control thread asks of a pipeline.
pub(super) enum Ctl {
    /// One line of the program's control protocol, and where its answer goes.
    Command(String, Sender<Result<String, String>>),
}

/// The program's periodic task runs every this many ns on the real clock.
const TICK_NS: u64 = 50_000;

/// One pipeline: a switch, its ports and its buffers, polled in a loop on its own lcore.
pub(super) struct Pipeline<F, Pl> {
    pub(super) id: usize,
    pub(super) switch: Box<dyn DynSwitch<F>>,
    pub(super) ports: Vec<Option<Box<dyn PortIo<F>>>>,
    /// Port names, for the control protocol.
    pub(super) port_names: Vec<String>,
    pub(super) pool: Pl,
    pub(super) burst: usize,
    /// `[runtime] idle_sleep_max_us`, ns (0: busy-poll).
    pub(super) idle_sleep_ns: u64,
    pub(super) clock: ClockSource,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) ctl: Receiver<Ctl>,
    pub(super) cpu: Sender<CpuFrame>,
    pub(super) stats: Arc<StatsCell>,
}

impl<F: Frame + Send + 'static, Pl: Pool<F> + Send + 'static> Pipeline<F, Pl> {
    pub(super) fn run(mut self) -> Summary {
        let mut rx: Vec<F> = Vec::with_capacity(self.burst);
        let mut tx: Vec<F> = Vec::with_capacity(self.burst);
        let start = Instant::now();
        let mut now = 0u64;
        let mut loops = 0u64;
        let mut last_publish = 0u64;
        let mut last_tick = 0u64;
        let mut to_cpu = Vec::new();
        let idle_fds = self.idle_fds();
        let mut last_activity = 0u64;
        loop {
            if self.stop.load(Ordering::Relaxed) {
                if self.clock == ClockSource::Realtime {
                    self.wind_down(start, &mut rx, &mut tx, &mut to_cpu);
                }
                break;
            }
            match self.clock {
                ClockSource::Realtime => now = start.elapsed().as_nanos() as u64,
                ClockSource::Pcap => match self.next_replay_time(now) {
                    Some(t) => now = now.max(t),
                    None => break,
                },
            }
            self.step(now, self.clock == ClockSource::Pcap, &mut last_tick, &mut rx, &mut tx, &mut to_cpu);
            for c in to_cpu.drain(..) {
                let f = CpuFrame {
                    pipeline: self.id,
                    ingress_port: c.ingress_port,
                    code: c.code,
                    data: c.pkt.data().to_vec(),
                };
                let _ = self.cpu.try_send(f);
                self.pool.free(c.pkt);
            }
            if let Some(fds) = &idle_fds {
                let activity = self.activity();
                if activity == last_activity {
                    self.idle_wait(fds, now, last_tick);
                }
                last_activity = activity;
            }
            loops += 1;
            if loops.is_multiple_of(64) {
                while let Ok(Ctl::Command(line, reply)) = self.ctl.try_recv() {
                    let _ = reply.send(self.switch.command(&line, &self.port_names, now));
                }
                if now.saturating_sub(last_publish) >= 1_000_000 || self.clock == ClockSource::Pcap {
                    last_publish = now;
                    self.publish();
                }
            }
        }
        self.finish()
    }

    /// The ports' descriptors to sleep on when idle (`[runtime] idle_sleep_max_us`), if it is
    /// set, the clock is real and every port has one (at most [`ports::host::MAX_WAIT_FDS`]
    /// ports); else `None`: busy-poll (with a warning when the setting cannot be honoured).
    fn idle_fds(&self) -> Option<Vec<std::os::fd::RawFd>> {
        if self.idle_sleep_ns == 0 || self.clock != ClockSource::Realtime {
            return None;
        }
        let fds: Option<Vec<_>> = self.ports.iter().map(|p| p.as_ref().and_then(|p| p.rx_fd())).collect();
        match fds {
            Some(f) if f.len() <= ports::host::MAX_WAIT_FDS => Some(f),
            Some(f) => {
                tracing::warn!(
                    "runtime.idle_sleep_max_us: {} ports, more than the {} an idle wait watches: busy-polling",
                    f.len(),
                    ports::host::MAX_WAIT_FDS
                );
                None
            }
            None => {
                tracing::warn!(
                    "runtime.idle_sleep_max_us: a port has no descriptor to wait on (only AF_PACKET ports do): busy-polling"
                );
                None
            }
        }
    }

    /// Frames received and sent so far, on every port: unchanged over a loop, the loop was idle.
    fn activity(&self) -> u64 {
        self.switch.counters().ports.iter().map(|p| p.rx_packets + p.tx_packets).sum()
    }

    /// After an idle loop at `now`: sleep until a frame arrives on `fds`, the next tick
    /// ([`TICK_NS`] after `last_tick`) or the earliest port with something to send, at most
    /// `idle_sleep_ns`; a wait shorter than [`ports::host::SPIN_NS`] is not worth the sleep.
    fn idle_wait(&self, fds: &[std::os::fd::RawFd], now: u64, last_tick: u64) {
        let mut until = last_tick + TICK_NS;
        for pid in 0..self.ports.len() {
            if let Some(t) = self.switch.next_ready(pid as u16, now) {
                until = until.min(t);
            }
        }
        let ns = until.saturating_sub(now).min(self.idle_sleep_ns);
        if ns >= ports::host::SPIN_NS {
            ports::host::wait_readable(fds, ns);
        }
    }

    /// One iteration: receive (on a replay clock, only the frames stamped with this instant),
    /// the program's periodic task when due (every 50 µs, every step on a replay clock),
    /// transmit — one call into the switch.
    #[inline]
    fn step(
        &mut self,
        now: u64,
        replay: bool,
        last_tick: &mut u64,
        rx: &mut Vec<F>,
        tx: &mut Vec<F>,
        to_cpu: &mut Vec<CpuPacket<F>>,
    ) {
        let tick = now.saturating_sub(*last_tick) >= TICK_NS || replay;
        if tick {
            *last_tick = now;
        }
        let rx_burst = if replay { 0 } else { self.burst };
        self.switch.poll(now, &mut self.ports, &mut self.pool, rx, tx, rx_burst, self.burst, tick, to_cpu);
    }

    /// Stopping on the real clock: keep polling — receiving, ticking, sending — while the
    /// program finishes ([`Program::stop`](crate::switch::Program::stop): the DTA translator's
    /// writes acknowledged, its connections closed with DREQs), for at most [`STOP_GRACE_NS`];
    /// then it is told to finish at once, and what that sends goes out.
    fn wind_down(
        &mut self,
        start: Instant,
        rx: &mut Vec<F>,
        tx: &mut Vec<F>,
        to_cpu: &mut Vec<CpuPacket<F>>,
    ) {
        let t0 = start.elapsed().as_nanos() as u64;
        let mut last_tick = 0;
        loop {
            let now = start.elapsed().as_nanos() as u64;
            let force = now.saturating_sub(t0) >= STOP_GRACE_NS;
            let done = self.switch.stop(now, force, &mut self.pool);
            self.step(now, false, &mut last_tick, rx, tx, to_cpu);
            for c in to_cpu.drain(..) {
                self.pool.free(c.pkt);
            }
            if done || force {
                return;
            }
        }
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
            device_stats: Vec::new(),
            program_stats: self.switch.final_stats().into_iter().collect(),
        }
    }
}

/// One receive step of a poll loop: a burst of up to `burst` frames from every port into the
/// switch, then recirculated packets. `burst == 0` is the replay clock's step: from each port only
/// a frame stamped `now`, one at a time.
pub fn receive_all<S, F, T>(
    switch: &mut S,
    ports: &mut [Option<Box<T>>],
    pool: &mut dyn Pool<F>,
    rx: &mut Vec<F>,
    now: u64,
    burst: usize,
) where
    S: DynSwitch<F> + ?Sized,
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
        switch.receive_burst(now, pid as u16, rx, pool);
    }
    switch.process_recirculated(now, pool);
}

/// One transmit step of a poll loop: for every port, bursts of what the switch releases now,
/// handed to the port; what the port refuses is dropped and counted (`tx_full`).
pub fn transmit_all<S, F, T>(
    switch: &mut S,
    ports: &mut [Option<Box<T>>],
    pool: &mut dyn Pool<F>,
    tx: &mut Vec<F>,
    now: u64,
    burst: usize,
) where
    S: DynSwitch<F> + ?Sized,
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
