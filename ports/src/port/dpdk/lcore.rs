//! Jobs on the EAL's worker lcores, as testpmd's forwarding cores run: a panic is caught before
//! it can unwind into the EAL's C frames.

use super::*;

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
            // The EAL's wait spins (rte_pause): sleep until the job has returned first, so a main
            // lcore that waits (the collector's) takes no CPU from workers sharing its core. The
            // trampoline sets `done` on every path, just before it returns to the EAL.
            while !self.slot.done.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
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

impl Eal {
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
}
