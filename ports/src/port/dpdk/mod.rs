//! The DPDK port backend: the EAL, per-socket mbuf pools, ethdev ports, and [`Mbuf`] — an
//! `rte_mbuf` the switch works on in place.
//!
//! * [`Eal`] initialises DPDK from `dpdk.eal_args` (`-l 0-1 --no-huge -m 512 --vdev=net_ring0`),
//!   creates one mempool per NUMA socket in use, configures each port with one rx and one tx
//!   queue per pipeline (RSS spreads received flows over them), starts it, and on drop stops and
//!   closes the ports, frees the pools, calls `rte_eal_cleanup` and removes the runtime and
//!   hugepage files this process made.
//! * Pipelines run on the EAL's worker lcores ([`Eal::launch`]), as testpmd's forwarding cores
//!   do, so `-l` decides where they run.
//! * [`Mbuf`] implements [`Frame`] over the mbuf's own headroom, data and tailroom: nothing is
//!   copied between the NIC and the program. [`DpdkPort`] receives straight into the switch's
//!   burst vector and transmits from it; `rte_eth_tx_burst` takes ownership of what it sends.
//!
//! Every `unsafe` block here calls DPDK or dereferences an mbuf the caller owns; each says why
//! that is sound.
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dpdk_sys as sys;

use super::{PortIo, PortStats};
use crate::buf::{Frame, HEADROOM, Pool};

mod eal;
mod ethdev;
mod lcore;
mod mbuf;

pub use ethdev::DpdkPort;
pub use lcore::LcoreJob;
pub use mbuf::{Mbuf, MbufPool};

/// Most mbufs one `rx_burst`/`tx_burst` call moves.
pub const MAX_BURST: usize = 512;

/// Why the DPDK backend could not start.
#[derive(Debug, thiserror::Error)]
pub enum DpdkError {
    /// `rte_eal_init` failed.
    #[error("DPDK EAL initialisation failed: {reason}{culprit}\n  EAL arguments: {args}")]
    EalInit {
        /// The arguments, as passed.
        args: String,
        /// `rte_strerror(rte_errno)`.
        reason: String,
        /// What the EAL said about the failing argument or device, if anything.
        culprit: String,
    },
    /// This process already initialised (and perhaps cleaned up) the EAL: DPDK allows it once.
    #[error("the DPDK EAL can be initialised once per process")]
    AlreadyInitialised,
    /// No worker lcore to run a pipeline on.
    #[error(
        "dpdk.eal_args give no worker lcore (only the main lcore {main}): pipelines run on worker \
         lcores, so give at least two, e.g. -l 0-1 (main 0, one pipeline on 1)"
    )]
    NoWorkers {
        /// The main lcore.
        main: u32,
    },
    /// A port's device does not exist.
    #[error("port {port:?}: DPDK has no device {device:?} (probed devices: {available}){eal}")]
    NoDevice {
        /// The switch port.
        port: String,
        /// The device named in the configuration.
        device: String,
        /// What DPDK did probe.
        available: String,
        /// What the EAL complained about while probing, if anything (a vdev that failed).
        eal: String,
    },
    /// A mempool could not be created.
    #[error(
        "dpdk.mbufs: cannot create a mempool of {n} mbufs of {size} B (cache {cache}) on socket \
         {socket}: {reason}; give the EAL more memory (-m or --socket-mem) or ask for fewer mbufs"
    )]
    Mempool {
        /// Mbufs asked for.
        n: u32,
        /// Bytes per mbuf data room.
        size: u32,
        /// Cache per lcore.
        cache: u32,
        /// The socket.
        socket: i32,
        /// `rte_strerror(rte_errno)`.
        reason: String,
    },
    /// Too few mbufs to fill the rings.
    #[error(
        "dpdk.mbufs: {n} mbufs cannot fill {need} ring slots and per-lcore caches; ask for at least {need}"
    )]
    TooFewMbufs {
        /// Mbufs configured.
        n: u32,
        /// Mbufs the rings and caches need.
        need: u32,
    },
    /// A port could not be set up.
    #[error("port {port:?} (DPDK device {device:?}): {step}: {reason}")]
    Port {
        /// The switch port.
        port: String,
        /// The DPDK device.
        device: String,
        /// What was being done.
        step: &'static str,
        /// Why it failed.
        reason: String,
    },
    /// A worker lcore could not be launched.
    #[error("cannot launch a pipeline on lcore {lcore}: {reason}")]
    Launch {
        /// The lcore.
        lcore: u32,
        /// Why.
        reason: String,
    },
}

fn strerror(errno: c_int) -> String {
    // SAFETY: rte_strerror returns a pointer to a static or thread-local NUL-terminated string.
    unsafe { CStr::from_ptr(sys::rte_strerror(errno)) }.to_string_lossy().into_owned()
}

fn last_error() -> String {
    // SAFETY: reads the calling thread's rte_errno.
    strerror(unsafe { sys::sf_errno() })
}

static EAL_USED: AtomicBool = AtomicBool::new(false);

/// One configured and started ethdev.
#[derive(Debug, Clone)]
pub struct EthPort {
    /// The switch port's name.
    pub name: String,
    /// The DPDK device.
    pub device: String,
    /// The DPDK port id.
    pub port_id: u16,
    /// Queues configured (one per pipeline).
    pub queues: u16,
}

/// Link state of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// Whether the link is up.
    pub up: bool,
    /// Speed, Mb/s (0 if unknown).
    pub speed_mbps: u32,
    /// Full duplex.
    pub full_duplex: bool,
}

/// The DPDK environment of one process: EAL, mempools, ports. Dropping it stops everything and
/// removes the files DPDK made.
pub struct Eal {
    /// What the EAL complained about during init although it succeeded (devices that failed
    /// to probe): reported with a missing device.
    complaints: Vec<String>,
    pools: Vec<(i32, NonNull<sys::rte_mempool>)>,
    ports: Vec<EthPort>,
    workers: Vec<u32>,
    files: eal::EalFiles,
    cleaned: bool,
}

// SAFETY: the mempool pointers are only used through DPDK's thread-safe mempool API, and ports
// are only configured from the thread that owns the `Eal`.
unsafe impl Send for Eal {}
// SAFETY: as above; shared references only read link state and statistics, which DPDK allows
// from any thread.
unsafe impl Sync for Eal {}

impl std::fmt::Debug for Eal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eal").field("ports", &self.ports).field("workers", &self.workers).finish()
    }
}
