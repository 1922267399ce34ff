//! Run a closure on a thread inside a network namespace (the root package's netns tests:
//! `dta_netns.rs`, `hawkeye_dta_netns.rs`; included by `#[path]`).

use std::os::fd::AsRawFd;

/// Run `f` on a thread inside network namespace `ns` (threads it starts stay there: a thread's
/// network namespace is its own, and inherited).
pub fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns(2) with a namespace file descriptor we hold open, for this thread only
        // (CLONE_NEWNET moves the calling thread); no memory is involved.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .expect("the thread in the namespace panicked")
}
