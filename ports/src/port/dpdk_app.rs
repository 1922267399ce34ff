//! One DPDK ethdev for a program that is not the switch — the collector's soft-RNIC, a NIC
//! agent: [`run_on_dpdk`] starts the EAL, makes the mempool, starts the device with one queue,
//! runs a [`FrameApp`] on the first worker lcore and cleans everything up when it returns.
//!
//! The application is generic over the frame, port and pool types, so its crate needs no
//! `cfg(dpdk)` of its own: built without DPDK, [`run_on_dpdk`] returns
//! [`DpdkAppError::NotBuilt`] and the application is never instantiated with DPDK's types.

use wire::ethernet::EthernetAddress;

use super::{DpdkConfig, PortIo};
use crate::buf::{Frame, Pool};

/// What runs on the port.
pub trait FrameApp: Send + 'static {
    /// What `run` returns.
    type Output: Send + 'static;

    /// Serve `port` (its MAC is `mac`) with buffers from `pool` until done.
    fn run<F, P, Q>(self, port: P, pool: Q, mac: EthernetAddress) -> Self::Output
    where
        F: Frame + Send + 'static,
        P: PortIo<F> + 'static,
        Q: Pool<F> + Send + 'static;
}

/// Why [`run_on_dpdk`] could not run the application.
#[derive(Debug, thiserror::Error)]
pub enum DpdkAppError {
    /// This build has no DPDK.
    #[error(
        "this program was built without DPDK (feature `dpdk` off, or pkg-config found no libdpdk \
         at build time): install libdpdk-dev (scripts/setup-dpdk.sh) and rebuild"
    )]
    NotBuilt,
    /// DPDK refused (EAL, mempool, device).
    #[cfg(dpdk)]
    #[error(transparent)]
    Dpdk(#[from] super::dpdk::DpdkError),
    /// The device has no MAC address DPDK can tell.
    #[error("DPDK device {0:?} has no MAC address")]
    NoMac(String),
    /// The application panicked on its lcore.
    #[error("the application on lcore {0} panicked")]
    Panicked(u32),
}

/// Start DPDK from `cfg`, start `device` with one rx and one tx queue, and run `app` on the
/// first worker lcore of `cfg.eal_args` (`-l 0-1`: on lcore 1). Blocks until `app` returns;
/// then stops the device and cleans up the EAL. The EAL can start once per process.
pub fn run_on_dpdk<A: FrameApp>(cfg: &DpdkConfig, device: &str, app: A) -> Result<A::Output, DpdkAppError> {
    #[cfg(dpdk)]
    {
        use super::dpdk::{DpdkPort, Eal};
        let mut eal = Eal::init(&cfg.eal_args)?;
        let lcore = eal.workers()[0];
        let socket = eal.lcore_socket(lcore);
        let pool = eal.pool(socket, cfg.mbufs, cfg.mbuf_cache, crate::buf::DEFAULT_DATAROOM as u32)?;
        let id = eal.find_port(device, device)?;
        eal.start_port(device, device, id, &[pool], cfg.rx_ring, cfg.tx_ring, cfg.promiscuous, false)?;
        let mac = eal.mac(id).ok_or_else(|| DpdkAppError::NoMac(device.to_string()))?;
        let job = eal.launch(lcore, move || app.run(DpdkPort::new(id, 0), pool, mac))?;
        let out = job.join().map_err(|_| DpdkAppError::Panicked(lcore));
        eal.cleanup();
        out
    }
    #[cfg(not(dpdk))]
    {
        let _ = (cfg, device, app);
        Err(DpdkAppError::NotBuilt)
    }
}
