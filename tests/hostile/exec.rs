//! Running one of our binaries on a hostile input, under a memory limit and a time bound, and
//! judging how it ended.
//!
//! The child runs through `sh -c 'ulimit -v …; exec …'`: an address-space limit the binary sees
//! in `/proc/self/limits` (its memory checks read it), so an allocation sized by input fails
//! the same way here as on a small machine, as an abort. Output goes to files (no pipe to
//! drain), of which the first 4 MiB are read back.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The address space a child may use, KiB (`ulimit -v`).
pub const MEMORY_LIMIT_KIB: u64 = 4 << 20;

/// How a command is expected to end by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// It must finish within its bound: `check`, an export, a bounded lab run.
    Batch,
    /// It may run until stopped (a server, a switch, a load generator asked for a long run):
    /// at its bound it gets SIGTERM and must then exit cleanly within [`TERM_GRACE`].
    Daemon,
}

/// What a stopped daemon is given to exit after SIGTERM.
pub const TERM_GRACE: Duration = Duration::from_secs(2);

/// One invocation.
#[derive(Debug, Clone)]
pub struct Step {
    /// The binary.
    pub bin: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// Batch or daemon.
    pub kind: Kind,
    /// Its time bound.
    pub bound: Duration,
    /// Exit codes that mean "ran, and the job it was given failed", besides 0 and 2 (e.g. 1
    /// for a transfer that did not complete).
    pub also_ok: &'static [i32],
    /// A check of its own that may refuse what the steps before it accepted (a P4 export of a
    /// configuration the switch runs but the target cannot take), naming the key.
    pub may_refuse: bool,
}

impl Step {
    /// `bin args…` in `cwd`.
    pub fn new(bin: &Path, args: impl IntoIterator<Item = impl Into<OsString>>, cwd: &Path) -> Self {
        Self {
            bin: bin.to_path_buf(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: cwd.to_path_buf(),
            kind: Kind::Batch,
            bound: Duration::from_secs(30),
            also_ok: &[],
            may_refuse: false,
        }
    }

    /// A daemon stopped after `bound`.
    pub fn daemon(mut self, bound: Duration) -> Self {
        self.kind = Kind::Daemon;
        self.bound = bound;
        self
    }

    /// A batch job that must end within `bound`.
    pub fn within(mut self, bound: Duration) -> Self {
        self.bound = bound;
        self
    }

    /// Exit codes besides 0 and 2 that are a clean outcome.
    pub fn also_ok(mut self, codes: &'static [i32]) -> Self {
        self.also_ok = codes;
        self
    }

    /// A check of its own ([`Step::may_refuse`]).
    pub fn may_refuse(mut self) -> Self {
        self.may_refuse = true;
        self
    }

    /// The command line, for a report (long arguments shortened).
    pub fn show(&self) -> String {
        let mut s = self.bin.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for a in &self.args {
            let a = a.to_string_lossy();
            s.push(' ');
            if a.len() > 80 {
                s.push_str(&format!("{}…({} bytes)", cut(&a, 60), a.len()));
            } else {
                s.push_str(&a);
            }
        }
        s
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The exit code, if it exited.
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// We sent SIGTERM at its bound.
    pub terminated: bool,
    /// It did not exit after SIGTERM (or a batch job past its bound): killed.
    pub killed: bool,
    /// Wall time.
    pub elapsed: Duration,
    /// The start of stderr.
    pub stderr: String,
    /// The start of stdout.
    pub stdout: String,
}

impl Outcome {
    /// Why this outcome is a failure for `step`, or `None` if it is clean.
    pub fn failure(&self, step: &Step) -> Option<String> {
        if self.killed {
            return Some(match step.kind {
                Kind::Batch => format!("still running after its bound of {:?} (killed)", step.bound),
                Kind::Daemon => format!("did not exit within {TERM_GRACE:?} of SIGTERM (killed)"),
            });
        }
        if let Some(sig) = self.signal {
            let what = match sig {
                6 => "aborted (SIGABRT: an allocation failure or a double panic)",
                9 => "killed (SIGKILL: the kernel's OOM killer?)",
                11 => "crashed (SIGSEGV)",
                15 => "died of SIGTERM (no handler)",
                _ => "ended by a signal",
            };
            return Some(format!("{what}, signal {sig}"));
        }
        match self.code {
            Some(0 | 2) => None,
            Some(c) if step.also_ok.contains(&c) => None,
            Some(101) => Some("panicked (exit 101)".into()),
            Some(134) => Some("aborted (exit 134)".into()),
            Some(c) => Some(format!("exit {c}, expected 0 or 2")),
            None => Some("no exit status".into()),
        }
    }

    /// stderr and stdout, shortened for a report.
    pub fn said(&self) -> String {
        let t = format!("{}{}", self.stderr.trim(), if self.stdout.is_empty() { "" } else { " | stdout …" });
        let t = t.replace('\n', " ⏎ ");
        if t.len() > 400 { format!("{}…", cut(&t, 400)) } else { t }
    }
}

/// `s`'s first `n` bytes or fewer, cut at a character boundary.
pub fn cut(s: &str, n: usize) -> &str {
    let mut i = n.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    &s[..i]
}

/// The first 4 MiB of a file, as text.
fn head(path: &Path) -> String {
    use std::io::Read;
    let mut buf = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(4 << 20).read_to_end(&mut buf);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Send `sig` to `pid` with kill(1) (no unsafe in tests).
fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).stderr(Stdio::null()).status();
}

/// Run `step` with its output in `scratch` (a directory of this case's own).
pub fn run(step: &Step, scratch: &Path) -> Outcome {
    use std::os::unix::process::ExitStatusExt;
    let out_path = scratch.join("stdout");
    let err_path = scratch.join("stderr");
    let out = std::fs::File::create(&out_path).expect("scratch stdout");
    let err = std::fs::File::create(&err_path).expect("scratch stderr");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {MEMORY_LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(&step.bin)
        .args(&step.args)
        .current_dir(&step.cwd)
        // Fewer malloc arenas: each reserves 64 MiB of address space per thread.
        .env("MALLOC_ARENA_MAX", "2")
        .env("RUST_BACKTRACE", "0")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let t0 = Instant::now();
    let mut child = cmd.spawn().expect("spawn sh");
    let pid = child.id();
    let mut terminated = false;
    let mut killed = false;
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break s;
        }
        let t = t0.elapsed();
        if !terminated && t >= step.bound {
            match step.kind {
                Kind::Daemon => {
                    signal(pid, "-TERM");
                    terminated = true;
                }
                Kind::Batch => {
                    killed = true;
                    let _ = child.kill();
                    break child.wait().expect("wait");
                }
            }
        } else if terminated && t >= step.bound + TERM_GRACE {
            killed = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(if t < Duration::from_millis(200) { 2 } else { 10 }));
    };
    Outcome {
        code: status.code(),
        signal: if killed { None } else { status.signal() },
        terminated,
        killed,
        elapsed: t0.elapsed(),
        stderr: head(&err_path),
        stdout: head(&out_path),
    }
}
