//! The EAL's life: initialisation (its messages captured and the culprit named on failure), worker
//! lcores, and cleanup of the runtime and hugepage files this process made.

use super::*;

/// The files DPDK makes for a primary process: its runtime directory
/// (`/var/run/dpdk/<prefix>`) and, with hugepages, `<prefix>map_*` in each hugetlbfs mount.
#[derive(Debug, Clone)]
pub(super) struct EalFiles {
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
            // Only this process's directory: its parent (`/var/run/dpdk`) is shared by every
            // DPDK process on the machine, and removing it, even empty, races with another
            // one creating its own directory there (its EAL then fails to start).
            let _ = std::fs::remove_dir_all(&self.runtime_dir);
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
