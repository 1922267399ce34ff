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
    files: EalFiles,
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

/// The files DPDK makes for a primary process: its runtime directory
/// (`/var/run/dpdk/<prefix>`) and, with hugepages, `<prefix>map_*` in each hugetlbfs mount.
#[derive(Debug, Clone)]
struct EalFiles {
    prefix: String,
    runtime_dir: PathBuf,
    runtime_dir_existed: bool,
}

impl EalFiles {
    fn from_args(args: &[String]) -> Self {
        let mut prefix = "rte".to_string();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if let Some(p) = a.strip_prefix("--file-prefix=") {
                prefix = p.to_string();
            } else if a == "--file-prefix"
                && let Some(p) = it.next()
            {
                prefix = p.clone();
            }
        }
        // As eal_create_runtime_dir() does: /var/run for root, else $XDG_RUNTIME_DIR or /tmp.
        // SAFETY: getuid cannot fail.
        let base = if unsafe { libc::getuid() } == 0 {
            PathBuf::from("/var/run")
        } else {
            std::env::var_os("XDG_RUNTIME_DIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
        };
        let runtime_dir = base.join("dpdk").join(&prefix);
        let runtime_dir_existed = runtime_dir.exists();
        Self { prefix, runtime_dir, runtime_dir_existed }
    }

    /// Remove what this process made. `primary` says whether it ran as the primary process
    /// (which owns the runtime directory); a directory that existed before is left alone.
    fn remove(&self, primary: bool) {
        if primary && !self.runtime_dir_existed {
            let _ = std::fs::remove_dir_all(&self.runtime_dir);
            if let Some(parent) = self.runtime_dir.parent() {
                // Only if empty.
                let _ = std::fs::remove_dir(parent);
            }
        }
        if primary {
            for dir in hugetlbfs_mounts() {
                let Ok(entries) = std::fs::read_dir(&dir) else { continue };
                let want = format!("{}map_", self.prefix);
                for e in entries.flatten() {
                    if e.file_name().to_string_lossy().starts_with(&want) {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
        }
    }
}

fn hugetlbfs_mounts() -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && f[2] == "hugetlbfs").then(|| PathBuf::from(f[1]))
        })
        .collect()
}

/// Run `f` with the process's stderr going to a temporary file and its stdout to /dev/null, and
/// return what was written to stderr. The EAL logs and getopt's complaints go to stderr, and on
/// a bad option the EAL prints its whole usage text to stdout; this lets a failed initialisation
/// be reported as one clear error instead of a page of usage.
fn capture_output<T>(f: impl FnOnce() -> T) -> (T, String) {
    let path = std::env::temp_dir().join(format!("softfabric-eal-{}.log", std::process::id()));
    let Ok(file) = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path)
    else {
        return (f(), String::new());
    };
    let _ = std::fs::remove_file(&path);
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: dup/dup2/fflush on the process's own standard descriptors; the saved descriptors
    // are restored and closed below whatever `f` does (it does not unwind through here: the EAL
    // is C).
    let saved = unsafe {
        libc::fflush(std::ptr::null_mut());
        let saved = (libc::dup(1), libc::dup(2));
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if null >= 0 {
            libc::dup2(null, 1);
            libc::close(null);
        }
        libc::dup2(fd, 2);
        saved
    };
    let r = f();
    // SAFETY: as above.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        if saved.0 >= 0 {
            libc::dup2(saved.0, 1);
            libc::close(saved.0);
        }
        if saved.1 >= 0 {
            libc::dup2(saved.1, 2);
            libc::close(saved.1);
        }
    }
    let mut text = String::new();
    let mut file = file;
    use std::io::Seek as _;
    let _ = file.seek(std::io::SeekFrom::Start(0));
    let _ = file.read_to_string(&mut text);
    (r, text)
}

/// The lines of EAL output that say what went wrong: failed devices, bad options.
fn culprit_lines(output: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    output
        .lines()
        .map(str::trim)
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            (l.contains("fail")
                || l.contains("invalid")
                || l.contains("unrecognized")
                || l.contains("cannot")
                || l.contains("error")
                || l.contains("not compatible")
                || l.contains("not supported")
                || l.contains("requires an argument")
                || l.contains("no such"))
                && !l.starts_with("usage")
        })
        .filter(|l| seen.insert(*l))
        .map(String::from)
        .collect()
}

impl Eal {
    /// Initialise the EAL with `args` (what a DPDK application takes before `--`). The EAL's
    /// own messages are passed on through `tracing`; on failure they name the culprit in the
    /// error, and whatever runtime files the EAL made are removed.
    pub fn init(args: &[String]) -> Result<Self, DpdkError> {
        if EAL_USED.swap(true, Ordering::SeqCst) {
            return Err(DpdkError::AlreadyInitialised);
        }
        let files = EalFiles::from_args(args);
        let mut cargs: Vec<CString> = Vec::with_capacity(args.len() + 1);
        cargs.push(CString::new("dataplane").unwrap_or_default());
        for a in args {
            // The configuration refused NULs already.
            cargs.push(CString::new(a.as_str()).unwrap_or_default());
        }
        // rte_eal_init may permute argv and keep pointers into it: the strings live for the
        // rest of the process.
        let cargs: &'static mut [CString] = Vec::leak(cargs);
        let argv: &'static mut [*mut c_char] =
            Vec::leak(cargs.iter().map(|c| c.as_ptr().cast_mut()).collect::<Vec<_>>());
        let (ret, output) = capture_output(|| {
            // SAFETY: argv holds argc valid NUL-terminated strings that outlive the call (leaked).
            unsafe { sys::rte_eal_init(argv.len() as c_int, argv.as_mut_ptr()) }
        });
        for l in output.lines().filter(|l| !l.trim().is_empty()) {
            tracing::info!(target: "dpdk", "{l}");
        }
        if ret < 0 {
            let reason = last_error();
            let culprits = culprit_lines(&output);
            let culprit = if culprits.is_empty() {
                String::new()
            } else {
                format!("; the EAL said:\n    {}", culprits.join("\n    "))
            };
            files.remove(true);
            return Err(DpdkError::EalInit { args: args.join(" "), reason, culprit });
        }
        // SAFETY: the EAL is initialised.
        let primary = unsafe { sys::rte_eal_process_type() } == sys::RTE_PROC_PRIMARY;
        let mut eal = Self {
            complaints: culprit_lines(&output),
            pools: Vec::new(),
            ports: Vec::new(),
            workers: Vec::new(),
            files,
            cleaned: false,
        };
        if !primary {
            tracing::warn!("running as a DPDK secondary process");
        }
        let mut lcore = u32::MAX;
        loop {
            // SAFETY: iterating the EAL's lcore table after init.
            lcore = unsafe { sys::rte_get_next_lcore(lcore, 1, 0) };
            if lcore >= sys::RTE_MAX_LCORE {
                break;
            }
            eal.workers.push(lcore);
        }
        if eal.workers.is_empty() {
            // SAFETY: the EAL is initialised.
            let main = unsafe { sys::rte_get_main_lcore() };
            return Err(DpdkError::NoWorkers { main });
        }
        Ok(eal)
    }

    /// The worker lcores, one pipeline each.
    pub fn workers(&self) -> &[u32] {
        &self.workers
    }

    /// The NUMA socket of an lcore (0 when unknown).
    pub fn lcore_socket(&self, lcore: u32) -> i32 {
        // SAFETY: a lookup in the EAL's lcore table.
        let s = unsafe { sys::rte_lcore_to_socket_id(lcore) };
        if s >= sys::RTE_MAX_LCORE { 0 } else { s as i32 }
    }

    /// The mbuf pool of `socket`, created on first use with `n` mbufs of `dataroom` bytes after
    /// the headroom and a per-lcore cache of `cache`.
    pub fn pool(&mut self, socket: i32, n: u32, cache: u32, dataroom: u32) -> Result<MbufPool, DpdkError> {
        if let Some((_, p)) = self.pools.iter().find(|(s, _)| *s == socket) {
            return Ok(MbufPool { mp: *p });
        }
        let size = dataroom + HEADROOM as u32;
        let err = |reason: String| DpdkError::Mempool { n, size, cache, socket, reason };
        let room = u16::try_from(size)
            .map_err(|_| err(format!("a data room of {size} B does not fit DPDK's 16 bits")))?;
        let name = CString::new(format!("sf_mbufs_s{socket}")).unwrap_or_default();
        // SAFETY: the name is a valid C string; DPDK copies it.
        let mp = unsafe { sys::rte_pktmbuf_pool_create(name.as_ptr(), n, cache, 0, room, socket) };
        let mp = NonNull::new(mp).ok_or_else(|| err(last_error()))?;
        self.pools.push((socket, mp));
        Ok(MbufPool { mp })
    }

    /// The DPDK port id of `device`: a device name (PCI address, vdev) or a port number.
    pub fn find_port(&self, port: &str, device: &str) -> Result<u16, DpdkError> {
        let mut id = 0u16;
        let cname = CString::new(device).unwrap_or_default();
        // SAFETY: the name is a valid C string and id a valid out-pointer.
        let found = unsafe { sys::rte_eth_dev_get_port_by_name(cname.as_ptr(), &mut id) } == 0;
        if found {
            return Ok(id);
        }
        if let Ok(n) = device.parse::<u16>() {
            // SAFETY: a lookup in the ethdev table.
            if unsafe { sys::rte_eth_dev_is_valid_port(n) } == 1 {
                return Ok(n);
            }
        }
        let eal = if self.complaints.is_empty() {
            String::new()
        } else {
            format!("; while probing, the EAL said:\n    {}", self.complaints.join("\n    "))
        };
        Err(DpdkError::NoDevice {
            port: port.to_string(),
            device: device.to_string(),
            available: Self::devices(),
            eal,
        })
    }

    /// The probed devices, as `id:name` pairs.
    fn devices() -> String {
        let mut s = String::new();
        for id in 0..sys::RTE_MAX_ETHPORTS as u16 {
            // SAFETY: a lookup in the ethdev table.
            if unsafe { sys::rte_eth_dev_is_valid_port(id) } != 1 {
                continue;
            }
            let mut buf = [0 as c_char; 64];
            // SAFETY: buf is a writable buffer of RTE_ETH_NAME_MAX_LEN (64) bytes.
            if unsafe { sys::rte_eth_dev_get_name_by_port(id, buf.as_mut_ptr()) } == 0 {
                // SAFETY: DPDK wrote a NUL-terminated name.
                let name = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
                let _ = write!(s, "{}{id}:{name}", if s.is_empty() { "" } else { ", " });
            }
        }
        if s.is_empty() { "none".into() } else { s }
    }

    /// Configure `port_id` with one rx and one tx queue per entry of `pools` (rx queue i draws
    /// from `pools[i]`), RSS over them if `rss`, and start it.
    #[allow(clippy::too_many_arguments)]
    pub fn start_port(
        &mut self,
        name: &str,
        device: &str,
        port_id: u16,
        pools: &[MbufPool],
        rx_ring: u16,
        tx_ring: u16,
        promiscuous: bool,
        rss: bool,
    ) -> Result<EthPort, DpdkError> {
        let err = |step: &'static str, reason: String| DpdkError::Port {
            port: name.to_string(),
            device: device.to_string(),
            step,
            reason,
        };
        let nq = pools.len() as u16;
        let mut info = sys::rte_eth_dev_info::default();
        // SAFETY: port_id is valid (find_port) and info a valid out-pointer.
        let r = unsafe { sys::rte_eth_dev_info_get(port_id, &mut info) };
        if r != 0 {
            return Err(err("rte_eth_dev_info_get", strerror(-r)));
        }
        if info.max_rx_queues < nq || info.max_tx_queues < nq {
            return Err(err(
                "queues",
                format!(
                    "{nq} pipelines need {nq} rx and tx queues; the device has {} rx and {} tx",
                    info.max_rx_queues, info.max_tx_queues
                ),
            ));
        }
        let mut conf = sys::rte_eth_conf::default();
        if rss && nq > 1 {
            conf.rxmode.mq_mode = sys::RTE_ETH_MQ_RX_RSS;
            // SAFETY: a constant getter.
            let want = unsafe { sys::sf_rss_hf_ip_udp_tcp() };
            conf.rx_adv_conf.rss_conf.rss_hf = want & info.flow_type_rss_offloads;
            if conf.rx_adv_conf.rss_conf.rss_hf == 0 {
                tracing::warn!(
                    port = name,
                    "the device offers no IP/UDP/TCP RSS: pipelines 1.. receive nothing from it"
                );
                conf.rxmode.mq_mode = 0;
            }
        }
        // SAFETY: port_id valid, conf initialised.
        let r = unsafe { sys::rte_eth_dev_configure(port_id, nq, nq, &conf) };
        if r != 0 {
            return Err(err("rte_eth_dev_configure", strerror(-r)));
        }
        // SAFETY: port_id valid.
        let socket = unsafe { sys::rte_eth_dev_socket_id(port_id) };
        let socket = if socket < 0 { 0 } else { socket as u32 };
        for (q, pool) in pools.iter().enumerate() {
            // SAFETY: port configured with nq queues; q < nq; pool is a live mempool; a null
            // rxconf/txconf means the driver's defaults.
            let r = unsafe {
                sys::rte_eth_rx_queue_setup(
                    port_id,
                    q as u16,
                    rx_ring,
                    socket,
                    std::ptr::null(),
                    pool.mp.as_ptr(),
                )
            };
            if r != 0 {
                return Err(err("rte_eth_rx_queue_setup", strerror(-r)));
            }
            // SAFETY: as above.
            let r =
                unsafe { sys::rte_eth_tx_queue_setup(port_id, q as u16, tx_ring, socket, std::ptr::null()) };
            if r != 0 {
                return Err(err("rte_eth_tx_queue_setup", strerror(-r)));
            }
        }
        // SAFETY: port configured with its queues.
        let r = unsafe { sys::rte_eth_dev_start(port_id) };
        if r != 0 {
            return Err(err("rte_eth_dev_start", strerror(-r)));
        }
        let port = EthPort { name: name.to_string(), device: device.to_string(), port_id, queues: nq };
        self.ports.push(port.clone());
        if promiscuous {
            // SAFETY: port started.
            let r = unsafe { sys::rte_eth_promiscuous_enable(port_id) };
            if r != 0 {
                tracing::warn!(port = name, "cannot enable promiscuous mode: {}", strerror(-r));
            }
        }
        Ok(port)
    }

    /// The MAC address of `port_id`.
    pub fn mac(&self, port_id: u16) -> Option<wire::ethernet::EthernetAddress> {
        let mut a = sys::rte_ether_addr::default();
        // SAFETY: a valid out-pointer; DPDK checks the port id.
        (unsafe { sys::rte_eth_macaddr_get(port_id, &mut a) } == 0)
            .then_some(wire::ethernet::EthernetAddress(a.addr_bytes))
    }

    /// The ports started.
    pub fn ports(&self) -> &[EthPort] {
        &self.ports
    }

    /// Link state, without waiting.
    pub fn link(&self, port_id: u16) -> Option<Link> {
        let mut l = sys::rte_eth_link::default();
        // SAFETY: valid out-pointer; the port exists.
        if unsafe { sys::rte_eth_link_get_nowait(port_id, &mut l) } != 0 {
            return None;
        }
        Some(Link { up: l.link_status() != 0, speed_mbps: l.link_speed, full_duplex: l.link_duplex() != 0 })
    }

    /// Every extended statistic of a port, by name.
    pub fn xstats(&self, port_id: u16) -> Vec<(String, u64)> {
        // SAFETY: a null buffer asks for the count.
        let n = unsafe { sys::rte_eth_xstats_get_names(port_id, std::ptr::null_mut(), 0) };
        if n <= 0 {
            return Vec::new();
        }
        let mut names = vec![sys::rte_eth_xstat_name::default(); n as usize];
        let mut vals = vec![sys::rte_eth_xstat::default(); n as usize];
        // SAFETY: both buffers hold n entries.
        let (a, b) = unsafe {
            (
                sys::rte_eth_xstats_get_names(port_id, names.as_mut_ptr(), n as u32),
                sys::rte_eth_xstats_get(port_id, vals.as_mut_ptr(), n as u32),
            )
        };
        if a != n || b != n {
            return Vec::new();
        }
        vals.iter()
            .filter_map(|v| {
                let name = names.get(v.id as usize)?;
                // SAFETY: DPDK NUL-terminates names within RTE_ETH_XSTATS_NAME_SIZE.
                let s = unsafe { CStr::from_ptr(name.name.as_ptr()) }.to_string_lossy().into_owned();
                Some((s, v.value))
            })
            .collect()
    }

    /// Run `job` on worker `lcore`; [`LcoreJob::join`] waits for its result.
    pub fn launch<T: Send + 'static>(
        &self,
        lcore: u32,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<LcoreJob<T>, DpdkError> {
        let slot = Arc::new(Slot {
            job: Mutex::new(Some(Box::new(job))),
            result: Mutex::new(None),
            done: AtomicBool::new(false),
        });
        let arg = Arc::as_ptr(&slot) as *mut c_void;
        // SAFETY: trampoline::<T> reads `arg` as the Slot<T> that `slot` keeps alive until
        // LcoreJob::join has waited for the lcore (and Drop waits too).
        let r = unsafe { sys::rte_eal_remote_launch(Some(trampoline::<T>), arg, lcore) };
        if r != 0 {
            return Err(DpdkError::Launch { lcore, reason: strerror(-r) });
        }
        Ok(LcoreJob { lcore, slot, joined: false })
    }

    /// Stop and close the ports, free the pools, clean up the EAL and remove its files. Every
    /// mbuf must have been freed and every lcore job joined. Called by `Drop` if not before.
    pub fn cleanup(&mut self) {
        if self.cleaned {
            return;
        }
        self.cleaned = true;
        for p in &self.ports {
            // SAFETY: the port was started by us and no lcore polls it any more.
            unsafe {
                sys::rte_eth_dev_stop(p.port_id);
                sys::rte_eth_dev_close(p.port_id);
            }
        }
        for (_, mp) in self.pools.drain(..) {
            // SAFETY: the pool was created by us; its mbufs are all back (the caller's duty).
            unsafe { sys::rte_mempool_free(mp.as_ptr()) };
        }
        // SAFETY: the EAL was initialised by `init` and is not used after this.
        let primary = unsafe { sys::rte_eal_process_type() } == sys::RTE_PROC_PRIMARY;
        // SAFETY: as above.
        unsafe { sys::rte_eal_cleanup() };
        self.files.remove(primary);
    }
}

impl Drop for Eal {
    fn drop(&mut self) {
        self.cleanup();
    }
}

struct Slot<T> {
    job: Mutex<Option<Box<dyn FnOnce() -> T + Send>>>,
    result: Mutex<Option<std::thread::Result<T>>>,
    done: AtomicBool,
}

unsafe extern "C" fn trampoline<T>(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the Slot<T> that Eal::launch passed, kept alive by its LcoreJob.
    let slot = unsafe { &*(arg as *const Slot<T>) };
    let job = slot.job.lock().ok().and_then(|mut j| j.take());
    if let Some(job) = job {
        // A panic must not unwind into the EAL's C frames.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        if let Ok(mut res) = slot.result.lock() {
            *res = Some(r);
        }
    }
    slot.done.store(true, Ordering::Release);
    0
}

/// A job running on a worker lcore.
pub struct LcoreJob<T> {
    lcore: u32,
    slot: Arc<Slot<T>>,
    joined: bool,
}

impl<T> LcoreJob<T> {
    /// Whether the job has returned.
    pub fn is_finished(&self) -> bool {
        self.slot.done.load(Ordering::Acquire)
    }

    /// Wait for the job and take its result (`Err` if it panicked).
    pub fn join(mut self) -> std::thread::Result<T> {
        self.wait();
        self.slot
            .result
            .lock()
            .ok()
            .and_then(|mut r| r.take())
            .unwrap_or_else(|| Err(Box::new("lcore job left no result")))
    }

    fn wait(&mut self) {
        if !self.joined {
            // SAFETY: waits for the lcore we launched on.
            unsafe { sys::rte_eal_wait_lcore(self.lcore) };
            self.joined = true;
        }
    }
}

impl<T> Drop for LcoreJob<T> {
    fn drop(&mut self) {
        // The lcore still reads the slot until it returns.
        self.wait();
    }
}

/// An `rte_mbuf` the switch owns: one segment, freed back to its mempool on drop.
#[repr(transparent)]
pub struct Mbuf(NonNull<sys::rte_mbuf>);

// SAFETY: an Mbuf is the only handle to its mbuf; mbufs may be freed from any lcore.
unsafe impl Send for Mbuf {}

impl std::fmt::Debug for Mbuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mbuf({:p}, {} B)", self.0, self.len())
    }
}

impl Mbuf {
    #[inline(always)]
    fn m(&self) -> &sys::rte_mbuf {
        // SAFETY: the Mbuf owns a live mbuf (allocated, not freed, not shared).
        unsafe { self.0.as_ref() }
    }

    #[inline(always)]
    fn m_mut(&mut self) -> &mut sys::rte_mbuf {
        // SAFETY: as above, and `&mut self` makes this the only reference.
        unsafe { self.0.as_mut() }
    }

    #[inline(always)]
    fn base(&self) -> *mut u8 {
        self.m().buf_addr.cast::<u8>()
    }

    /// The DPDK port the mbuf was received on.
    pub fn port(&self) -> u16 {
        self.m().port
    }
}

impl Drop for Mbuf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the Mbuf owns the mbuf; it is not used after this.
        unsafe { sys::sf_pktmbuf_free(self.0.as_ptr()) };
    }
}

impl Frame for Mbuf {
    #[inline(always)]
    fn data(&self) -> &[u8] {
        let m = self.m();
        // SAFETY: a single-segment mbuf's data lies within its buffer at data_off for data_len
        // bytes, and we own it.
        unsafe {
            std::slice::from_raw_parts(self.base().add(usize::from(m.data_off)), usize::from(m.data_len))
        }
    }

    #[inline(always)]
    fn data_mut(&mut self) -> &mut [u8] {
        let (off, len) = (usize::from(self.m().data_off), usize::from(self.m().data_len));
        // SAFETY: as for data(), and `&mut self` is the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.base().add(off), len) }
    }

    #[inline(always)]
    fn headroom(&self) -> usize {
        usize::from(self.m().data_off)
    }

    #[inline(always)]
    fn tailroom(&self) -> usize {
        let m = self.m();
        usize::from(m.buf_len) - usize::from(m.data_off) - usize::from(m.data_len)
    }

    #[inline]
    fn prepend(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.headroom() {
            return None;
        }
        let m = self.m_mut();
        m.data_off -= n as u16;
        m.data_len += n as u16;
        m.pkt_len += n as u32;
        let off = usize::from(m.data_off);
        // SAFETY: the n bytes at the new data_off are inside the buffer and owned.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base().add(off), n) })
    }

    #[inline]
    fn adj(&mut self, n: usize) -> bool {
        if n > self.len() {
            return false;
        }
        let m = self.m_mut();
        m.data_off += n as u16;
        m.data_len -= n as u16;
        m.pkt_len -= n as u32;
        true
    }

    #[inline]
    fn append(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.tailroom() {
            return None;
        }
        let m = self.m_mut();
        let at = usize::from(m.data_off) + usize::from(m.data_len);
        m.data_len += n as u16;
        m.pkt_len += n as u32;
        // SAFETY: the n bytes after the old data end are inside the buffer (tailroom) and owned.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base().add(at), n) })
    }

    #[inline]
    fn trim(&mut self, n: usize) -> bool {
        if n > self.len() {
            return false;
        }
        let m = self.m_mut();
        m.data_len -= n as u16;
        m.pkt_len -= n as u32;
        true
    }

    #[inline]
    fn reset(&mut self) {
        // SAFETY: the Mbuf owns the mbuf; rte_pktmbuf_reset restores an empty single segment
        // with the default headroom.
        unsafe { sys::sf_pktmbuf_reset(self.0.as_ptr()) };
    }
}

/// Prefetch the cache line at `p` into all levels (`rte_prefetch0`), inline: a prefetch never
/// faults, whatever the address.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86_64; a prefetch has no architectural effect and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as above, through DPDK's own rte_prefetch0.
    unsafe {
        sys::sf_prefetch0(p.cast());
    }
}

/// A handle to a socket's mbuf mempool: every pipeline on that socket allocates from it, through
/// its lcore's cache.
#[derive(Debug, Clone, Copy)]
pub struct MbufPool {
    mp: NonNull<sys::rte_mempool>,
}

// SAFETY: DPDK mempools are multi-producer, multi-consumer; each lcore uses its own cache.
unsafe impl Send for MbufPool {}

impl Pool<Mbuf> for MbufPool {
    #[inline]
    fn alloc(&mut self) -> Option<Mbuf> {
        // SAFETY: the pool is live for as long as the Eal that made it.
        NonNull::new(unsafe { sys::sf_pktmbuf_alloc(self.mp.as_ptr()) }).map(Mbuf)
    }

    #[inline]
    fn free(&mut self, f: Mbuf) {
        drop(f);
    }

    fn available(&self) -> usize {
        // SAFETY: as above.
        unsafe { sys::rte_mempool_avail_count(self.mp.as_ptr()) as usize }
    }
}

/// One queue of a DPDK port: what one pipeline receives from and sends to.
#[derive(Debug)]
pub struct DpdkPort {
    port_id: u16,
    queue: u16,
    stats: PortStats,
}

impl DpdkPort {
    /// Queue `queue` of started port `port_id`.
    pub fn new(port_id: u16, queue: u16) -> Self {
        Self { port_id, queue, stats: PortStats::default() }
    }
}

impl PortIo<Mbuf> for DpdkPort {
    #[inline]
    fn rx_burst(&mut self, _pool: &mut dyn Pool<Mbuf>, out: &mut Vec<Mbuf>, max: usize) -> usize {
        let max = max.min(MAX_BURST);
        out.reserve(max);
        let len = out.len();
        // SAFETY: `out` has room for `max` more elements after `len`; Mbuf is a transparent
        // non-null pointer, so the driver writes valid Mbufs (non-null, owned by us) into it.
        let n = usize::from(unsafe {
            sys::sf_rx_burst(
                self.port_id,
                self.queue,
                out.as_mut_ptr().add(len).cast::<*mut sys::rte_mbuf>(),
                max as u16,
            )
        });
        // SAFETY: the driver initialised n elements.
        unsafe { out.set_len(len + n) };
        // Chained (multi-segment) mbufs are not supported: drop them as errors. The others'
        // first data line is prefetched, so ingress does not wait for it (as testpmd's forwarding
        // engines do).
        let mut i = len;
        while i < out.len() {
            let m = out[i].m();
            if m.nb_segs != 1 {
                drop(out.remove(i));
                self.stats.rx_errors += 1;
            } else {
                prefetch(out[i].base().wrapping_add(usize::from(m.data_off)));
                i += 1;
            }
        }
        let got = out.len() - len;
        self.stats.rx += got as u64;
        got
    }

    #[inline]
    fn tx_burst(&mut self, pkts: &mut Vec<Mbuf>, _pool: &mut dyn Pool<Mbuf>) -> usize {
        let len = pkts.len().min(MAX_BURST);
        if len == 0 {
            return 0;
        }
        // SAFETY: the first `len` elements are owned Mbufs; tx_burst takes ownership of the
        // first `n` it returns.
        let n = usize::from(unsafe {
            sys::sf_tx_burst(
                self.port_id,
                self.queue,
                pkts.as_mut_ptr().cast::<*mut sys::rte_mbuf>(),
                len as u16,
            )
        });
        // The first n now belong to the driver: move the rest down over them without dropping.
        let rest = pkts.len() - n;
        // SAFETY: elements [n, len) are moved to [0, rest); set_len forgets the stale copies.
        unsafe {
            std::ptr::copy(pkts.as_ptr().add(n), pkts.as_mut_ptr(), rest);
            pkts.set_len(rest);
        }
        self.stats.tx += n as u64;
        n
    }

    /// Counters; `rx_missed` is the device's `imissed` (frames its receive rings had no room
    /// for). That count is per port, not per queue, so only queue 0 reports it: the runtime sums
    /// its pipelines' counters.
    fn stats(&self) -> PortStats {
        let mut s = self.stats;
        if self.queue == 0 {
            let mut e = sys::rte_eth_stats::default();
            // SAFETY: a valid out-pointer; an unknown port makes the call fail, not write.
            if unsafe { sys::rte_eth_stats_get(self.port_id, &mut e) } == 0 {
                s.rx_missed = e.imissed;
            }
        }
        s
    }
}
