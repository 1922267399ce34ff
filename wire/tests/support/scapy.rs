//! Finding Debian's `python3-scapy` for the cross-checks in `tests/` (shared by the `wire`
//! and `dataplane` test suites through `#[path]`).
//!
//! `SOFTFABRIC_PYTHON` picks the interpreter (default `/usr/bin/python3`, where Debian installs
//! scapy). Without scapy a test says it is skipped; with `SOFTFABRIC_REQUIRE_SCAPY=1` (as
//! `.ci/run` sets) a missing scapy fails it.

use std::process::Command;

/// The interpreter to run scapy scripts with.
pub fn python() -> String {
    std::env::var("SOFTFABRIC_PYTHON").unwrap_or_else(|_| {
        if std::path::Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3".into()
        } else {
            "python3".into()
        }
    })
}

/// `Some(python)` if scapy's RoCE module imports; `None` (after saying so) if not and allowed.
pub fn scapy() -> Option<String> {
    let py = python();
    let ok = Command::new(&py)
        .args(["-c", "import scapy.contrib.roce"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if ok {
        return Some(py);
    }
    if std::env::var("SOFTFABRIC_REQUIRE_SCAPY").as_deref() == Ok("1") {
        panic!(
            "scapy is required (SOFTFABRIC_REQUIRE_SCAPY=1) but `{py} -c 'import scapy.contrib.roce'` failed"
        );
    }
    eprintln!("SKIPPED: scapy not found for {py}; install Debian's python3-scapy to run this cross-check");
    None
}
