//! [`DynSwitch`]: a switch whatever its program, for the runtimes that pick the program from a
//! configuration (the poll-mode runtime, the lab, the tools).
//!
//! [`Switch<P, F>`] is generic over its program so that ingress and egress are inlined into the
//! per-packet loop. `DynSwitch` is the same switch behind one call per burst, per port poll or
//! per timer: what a runtime does to a switch, never what the switch does per packet, so the
//! indirection costs one call per burst of up to 32 packets.

use super::{Counters, CpuPacket, PortId, Program, Switch};
use crate::buf::{Frame, Pool};
use crate::model::{DropReason, DropReasons, Resources};
use crate::port::PortIo;
use crate::tm::TrafficManager;

/// What a runtime does to a switch, whatever program it runs (see [`Switch`] for each call).
pub trait DynSwitch<F>: Send {
    /// One iteration of a poll-mode loop, the runtime's one call per iteration: a burst from
    /// every port into the switch (`rx_burst == 0`: the replay step, only frames stamped `now`),
    /// recirculated packets, the program's periodic task when `tick`, then bursts of up to
    /// `tx_burst` out to every port, and the packets for the CPU appended to `cpu`. The loop's body is compiled for the
    /// program, as a `Switch<P, F>` driven directly would be.
    #[allow(clippy::too_many_arguments)]
    fn poll(
        &mut self,
        now: u64,
        ports: &mut [Option<Box<dyn PortIo<F>>>],
        pool: &mut dyn Pool<F>,
        rx: &mut Vec<F>,
        tx: &mut Vec<F>,
        rx_burst: usize,
        tx_burst: usize,
        tick: bool,
        cpu: &mut Vec<CpuPacket<F>>,
    );
    /// [`Switch::receive_burst`].
    fn receive_burst(&mut self, now: u64, port: PortId, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>);
    /// [`Switch::receive`].
    fn receive(&mut self, now: u64, port: PortId, pkt: F, pool: &mut dyn Pool<F>);
    /// [`Switch::process_recirculated`].
    fn process_recirculated(&mut self, now: u64, pool: &mut dyn Pool<F>);
    /// [`Switch::transmit`].
    fn transmit(
        &mut self,
        now: u64,
        port: PortId,
        out: &mut Vec<F>,
        max: usize,
        pool: &mut dyn Pool<F>,
    ) -> usize;
    /// [`Switch::tick`].
    fn tick(&mut self, now: u64, pool: &mut dyn Pool<F>);
    /// [`Switch::stop`].
    fn stop(&mut self, now: u64, force: bool, pool: &mut dyn Pool<F>) -> bool;
    /// [`Program::tick_interval`].
    fn tick_interval(&self) -> Option<u64>;
    /// [`Switch::next_ready`].
    fn next_ready(&self, port: PortId, now: u64) -> Option<u64>;
    /// [`Switch::take_touched`]: the ports are appended to `out`.
    fn take_touched(&mut self, out: &mut Vec<PortId>);
    /// [`Switch::drain_all`].
    fn drain_all(&mut self, pool: &mut dyn Pool<F>);
    /// [`Switch::count_drop`].
    fn count_drop(&mut self, reason: DropReason, n: u64);
    /// [`Switch::counters`].
    fn counters(&self) -> &Counters;
    /// [`Switch::drop_reasons`].
    fn drop_reasons(&self) -> &DropReasons;
    /// [`Switch::tm`].
    fn tm(&self) -> &TrafficManager<F>;
    /// [`Switch::set_cut_through`].
    fn set_cut_through(&mut self, on: bool);
    /// Parse one line of the program's control protocol ([`Program::parse_command`]) and apply
    /// it ([`Program::control`]).
    fn command(&mut self, line: &str, ports: &[String], now: u64) -> Result<String, String>;
    /// The program's declarations ([`Program::resources`]).
    fn resources(&self) -> &Resources;
    /// [`Program::take_records`].
    fn take_records(&mut self, out: &mut Vec<Vec<u8>>);
    /// [`Program::final_stats`].
    fn final_stats(&mut self) -> Option<String>;
}

impl<P: Program, F: Frame + Send + 'static> DynSwitch<F> for Switch<P, F> {
    fn poll(
        &mut self,
        now: u64,
        ports: &mut [Option<Box<dyn PortIo<F>>>],
        pool: &mut dyn Pool<F>,
        rx: &mut Vec<F>,
        tx: &mut Vec<F>,
        rx_burst: usize,
        tx_burst: usize,
        tick: bool,
        cpu: &mut Vec<CpuPacket<F>>,
    ) {
        crate::runtime::receive_all(self, ports, pool, rx, now, rx_burst);
        if tick {
            Switch::tick(self, now, pool);
        }
        crate::runtime::transmit_all(self, ports, pool, tx, now, tx_burst);
        cpu.extend(Switch::drain_cpu(self));
    }

    #[inline]
    fn receive_burst(&mut self, now: u64, port: PortId, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>) {
        Switch::receive_burst(self, now, port, pkts, pool)
    }

    fn receive(&mut self, now: u64, port: PortId, pkt: F, pool: &mut dyn Pool<F>) {
        Switch::receive(self, now, port, pkt, pool)
    }

    #[inline]
    fn process_recirculated(&mut self, now: u64, pool: &mut dyn Pool<F>) {
        Switch::process_recirculated(self, now, pool)
    }

    #[inline]
    fn transmit(
        &mut self,
        now: u64,
        port: PortId,
        out: &mut Vec<F>,
        max: usize,
        pool: &mut dyn Pool<F>,
    ) -> usize {
        Switch::transmit(self, now, port, out, max, pool)
    }

    fn tick(&mut self, now: u64, pool: &mut dyn Pool<F>) {
        Switch::tick(self, now, pool)
    }

    fn stop(&mut self, now: u64, force: bool, pool: &mut dyn Pool<F>) -> bool {
        Switch::stop(self, now, force, pool)
    }

    fn tick_interval(&self) -> Option<u64> {
        self.program().tick_interval()
    }

    fn next_ready(&self, port: PortId, now: u64) -> Option<u64> {
        Switch::next_ready(self, port, now)
    }

    fn take_touched(&mut self, out: &mut Vec<PortId>) {
        Switch::take_touched(self, |p| out.push(p))
    }

    fn drain_all(&mut self, pool: &mut dyn Pool<F>) {
        Switch::drain_all(self, pool)
    }

    fn count_drop(&mut self, reason: DropReason, n: u64) {
        Switch::count_drop(self, reason, n)
    }

    fn counters(&self) -> &Counters {
        Switch::counters(self)
    }

    fn drop_reasons(&self) -> &DropReasons {
        Switch::drop_reasons(self)
    }

    fn tm(&self) -> &TrafficManager<F> {
        Switch::tm(self)
    }

    fn set_cut_through(&mut self, on: bool) {
        Switch::set_cut_through(self, on)
    }

    fn command(&mut self, line: &str, ports: &[String], now: u64) -> Result<String, String> {
        let cmd = P::parse_command(line, ports)?;
        self.control(cmd, now)
    }

    fn resources(&self) -> &Resources {
        self.program().resources()
    }

    fn take_records(&mut self, out: &mut Vec<Vec<u8>>) {
        self.program_mut().take_records(out)
    }

    fn final_stats(&mut self) -> Option<String> {
        self.program_mut().final_stats()
    }
}
