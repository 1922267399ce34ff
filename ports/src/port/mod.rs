//! Port backends behind one burst interface.
//!
//! [`PortIo`] moves bursts of [`Frame`]s: `rx_burst` fills buffers taken from a pool,
//! `tx_burst` consumes buffers from the front of a vector. A backend that hands buffers to
//! hardware (DPDK's `rte_eth_tx_burst` takes ownership of mbufs and frees them after sending)
//! implements the same calls without copying; the backends here copy into and out of the
//! kernel or a file, and give their buffers back to the pool.
//!
//! | backend | use |
//! |---|---|
//! | [`MemPort`] | single-threaded in-memory queues: benchmarks and the lab |
//! | [`RingPort`] | in-memory channels to another thread: tests of the runtime |
//! | [`PcapPort`] | replay a capture in, write what leaves to a capture |
//! | [`AfPacketPort`] | a Linux interface (veth, any NIC) through an AF_PACKET socket |
//! | [`UdpPort`] | the host's own IP stack through UDP sockets (no root): a translator as a service |
//! | `dpdk::DpdkPort` | a DPDK ethdev queue (feature `dpdk`, when DPDK was found at build time) |

#[allow(unsafe_code)]
mod af_packet;
#[cfg(dpdk)]
#[allow(unsafe_code)]
pub mod dpdk;
mod dpdk_app;
mod dpdk_config;
mod lossy;
mod mem;
mod pcap;
#[allow(unsafe_code)]
mod udp;

pub use af_packet::{AfPacketPort, interface_mac};
pub use dpdk_app::{DpdkAppError, FrameApp, run_on_dpdk};
pub use dpdk_config::{DpdkConfig, DpdkConfigError, RawDpdkConfig};
pub use lossy::Lossy;
pub use mem::{MemPort, RingPeer, RingPort};
pub use pcap::{PcapError, PcapPort};
pub use udp::{
    UdpPort, bind_batched, identify_gro_segment, next_hop, peer_mac, resolve_next_hop, stamp_icrc_for_segment,
};

use crate::buf::{Frame, Pool};

/// Counters a backend keeps of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames received from the medium.
    pub rx: u64,
    /// Frames sent to the medium.
    pub tx: u64,
    /// Frames the medium gave that could not be taken (no buffer, too long, offload).
    pub rx_errors: u64,
    /// Frames the medium refused.
    pub tx_errors: u64,
    /// Frames the medium dropped because the port did not take them in time: a full socket
    /// buffer or receive ring (DPDK's `imissed`). Zero where the backend cannot tell.
    pub rx_missed: u64,
    /// Frames lost on purpose, either way, by fault injection ([`Lossy`]).
    pub injected: u64,
}

/// A port: bursts in, bursts out.
pub trait PortIo<F>: Send {
    /// Receive up to `max` frames, appending them to `out` in buffers from `pool`. Returns how
    /// many were added.
    fn rx_burst(&mut self, pool: &mut dyn Pool<F>, out: &mut Vec<F>, max: usize) -> usize;

    /// Send frames from the front of `pkts`, removing those sent (their buffers go back to
    /// `pool` or to the device). Returns how many were sent; the rest stay in `pkts`.
    fn tx_burst(&mut self, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>) -> usize;

    /// Counters.
    fn stats(&self) -> PortStats;

    /// For replayed captures: the timestamp (ns) of the next frame `rx_burst` would return.
    fn next_rx_time(&self) -> Option<u64> {
        None
    }

    /// Whether the port will never receive again (a capture read to its end).
    fn rx_done(&self) -> bool {
        false
    }

    /// The time to stamp frames sent from now on (captures written on a replay clock).
    fn set_time(&mut self, _now: u64) {}

    /// Flush buffered output at shutdown.
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    /// A file descriptor that polls readable when a frame has arrived (a socket), for a runtime
    /// that sleeps while idle and must wake when one comes ([`crate::host::Idle::Sleep`]);
    /// `None` for a port with none (memory, captures, DPDK: the runtime sleeps by the clock).
    fn rx_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
}

/// A boxed port is a port (so wrappers such as [`Lossy`] take any backend).
impl<F, P: PortIo<F> + ?Sized> PortIo<F> for Box<P> {
    fn rx_burst(&mut self, pool: &mut dyn Pool<F>, out: &mut Vec<F>, max: usize) -> usize {
        (**self).rx_burst(pool, out, max)
    }
    fn tx_burst(&mut self, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>) -> usize {
        (**self).tx_burst(pkts, pool)
    }
    fn stats(&self) -> PortStats {
        (**self).stats()
    }
    fn next_rx_time(&self) -> Option<u64> {
        (**self).next_rx_time()
    }
    fn rx_done(&self) -> bool {
        (**self).rx_done()
    }
    fn set_time(&mut self, now: u64) {
        (**self).set_time(now)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        (**self).flush()
    }
    fn rx_fd(&self) -> Option<std::os::fd::RawFd> {
        (**self).rx_fd()
    }
}

/// Copy `data` into a buffer from `pool`; `None` (and the buffer back) if none is free or it
/// does not fit. For frames a runtime makes itself (ARP answers, replies).
pub fn fill<F: Frame>(pool: &mut dyn Pool<F>, data: &[u8]) -> Option<F> {
    let mut b = pool.alloc()?;
    if b.set(data) {
        Some(b)
    } else {
        pool.free(b);
        None
    }
}
