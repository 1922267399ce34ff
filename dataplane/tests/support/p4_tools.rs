//! The real P4 tools the P4 tests run, found once for both (`p4_compile.rs`, `p4_bmv2.rs`):
//! p4c as `SOFTFABRIC_P4C` (its `p4c.sh`, or a folder holding `p4test` and `p4c-bm2-ss`) or
//! `../shared/tools/p4c.sh` beside the workspace; BMv2 as `SOFTFABRIC_BMV2` (its `bmv2.sh`) or
//! `../shared/tools/bmv2.sh`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// How to run one p4c tool.
pub enum P4c {
    /// `p4c.sh TOOL [--tna] FILE …`.
    Script(PathBuf),
    /// A folder holding `p4test` and `p4c-bm2-ss` (TNA needs the script's includes).
    Bin(PathBuf),
}

impl P4c {
    /// The command running `tool` (`p4test`, `p4c-bm2-ss`), with the TNA includes if `tna`.
    pub fn command(&self, tool: &str, tna: bool) -> Command {
        match self {
            P4c::Script(s) => {
                let mut c = Command::new("bash");
                c.arg(s).arg(tool);
                if tna {
                    c.arg("--tna");
                }
                c
            }
            P4c::Bin(dir) => Command::new(dir.join(tool)),
        }
    }
}

/// `../shared/tools/<script>` beside the workspace, if it is there.
fn shared(script: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools").join(script);
    p.exists().then_some(p)
}

/// Run `script path` once per test process, before any parallel use: the shared tools unpack
/// themselves into a cache folder on first use, and two first uses at once raced (one ran
/// `p4c-bm2-ss` while the other was still writing it: "Text file busy", seen on a fresh CI
/// machine). Whatever this prints or fails with, the tests' own calls report.
fn unpacked(script: PathBuf, done: &'static OnceLock<()>) -> PathBuf {
    done.get_or_init(|| {
        let _ = Command::new("bash")
            .arg(&script)
            .arg("path")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    });
    script
}

/// p4c, if found.
pub fn p4c() -> Option<P4c> {
    static DONE: OnceLock<()> = OnceLock::new();
    if let Some(p) = std::env::var_os("SOFTFABRIC_P4C").map(PathBuf::from) {
        return Some(if p.is_dir() { P4c::Bin(p) } else { P4c::Script(unpacked(p, &DONE)) });
    }
    shared("p4c.sh").map(|s| P4c::Script(unpacked(s, &DONE)))
}

/// BMv2's `bmv2.sh`, if found.
#[allow(dead_code)] // p4_compile.rs needs no BMv2
pub fn bmv2() -> Option<PathBuf> {
    static DONE: OnceLock<()> = OnceLock::new();
    std::env::var_os("SOFTFABRIC_BMV2")
        .map(PathBuf::from)
        .or_else(|| shared("bmv2.sh"))
        .map(|s| unpacked(s, &DONE))
}
