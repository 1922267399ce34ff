//! The control socket: a Unix stream socket taking one command per line (the program's control
//! protocol, e.g. `show`, `route add …`) and answering `ok …` or `error …` per line.
//!
//! No client can stall the switch or another client:
//! * the socket has a thread of its own; the supervisor never reads from or writes to a client,
//!   so SIGTERM stops the switch however its clients behave;
//! * each connection is served on a thread of its own, at most [`MAX_CLIENTS`] at once (one more
//!   is answered `error busy` and closed);
//! * a line is at most [`MAX_LINE`] bytes: a longer one is answered with an error and the
//!   connection closed, without reading the rest into memory;
//! * a client silent for [`IDLE`] is closed, and an answer it does not read within [`IDLE`] is
//!   given up (the connection closed);
//! * a command waits at most [`ANSWER`] for the pipelines.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Sender, bounded};

use super::pipeline::Ctl;

/// The longest command line (64 KiB).
pub const MAX_LINE: usize = 64 << 10;
/// Connections served at once.
pub const MAX_CLIENTS: usize = 8;
/// How long a client may stay silent, or leave an answer unread, before it is closed.
pub const IDLE: Duration = Duration::from_secs(2);
/// How long a command waits for each pipeline's answer.
pub const ANSWER: Duration = Duration::from_secs(5);

/// The pipelines' command queues: applies a line in every pipeline, answers with the first's.
#[derive(Clone)]
pub struct Commands {
    ctl: Vec<Sender<Ctl>>,
}

impl Commands {
    /// Over these queues.
    pub(super) fn new(ctl: Vec<Sender<Ctl>>) -> Self {
        Self { ctl }
    }

    /// Apply `line` in every pipeline; the first pipeline's answer.
    pub fn run(&self, line: &str) -> Result<String, String> {
        let mut answer = Err("no pipeline".to_string());
        for (i, c) in self.ctl.iter().enumerate() {
            let (tx, rx) = bounded(1);
            c.send(Ctl::Command(line.to_string(), tx)).map_err(|_| "pipeline stopped".to_string())?;
            let r = rx.recv_timeout(ANSWER).map_err(|_| "pipeline did not answer".to_string())?;
            if i == 0 {
                answer = r;
            }
        }
        answer
    }
}

/// Why the control socket could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// Another running dataplane answers on it.
    #[error("control socket {}: another running dataplane is listening on it (runtime.control_socket)", .0.display())]
    InUse(PathBuf),
    /// Something that is not a socket is there: it is not removed.
    #[error("control socket {}: the path exists and is not a socket; it is left as it is (runtime.control_socket)", .0.display())]
    NotASocket(PathBuf),
    /// The socket could not be made.
    #[error("control socket {}: {error} (runtime.control_socket)", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

/// Whether `path` can become a control socket: nothing there, or a stale socket (no one
/// answers on it), in a directory that exists. What `check` and `run` both ask.
pub fn usable(path: &Path) -> Result<(), ControlError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(ControlError::InUse(path.to_path_buf()));
            }
            Ok(())
        }
        Ok(_) => Err(ControlError::NotASocket(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if dir.is_dir() {
                Ok(())
            } else {
                Err(ControlError::Io {
                    path: path.to_path_buf(),
                    error: std::io::Error::new(std::io::ErrorKind::NotFound, "its directory does not exist"),
                })
            }
        }
        Err(error) => Err(ControlError::Io { path: path.to_path_buf(), error }),
    }
}

/// A control socket being served.
pub struct ControlSocket {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ControlSocket {
    /// Listen on `path` (a stale socket there is replaced; anything else is refused) and serve
    /// `commands` until dropped.
    pub fn open(path: &Path, commands: Commands) -> Result<Self, ControlError> {
        usable(path)?;
        let io = |error| ControlError::Io { path: path.to_path_buf(), error };
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
            std::fs::remove_file(path).map_err(io)?;
        }
        let l = UnixListener::bind(path).map_err(io)?;
        l.set_nonblocking(true).map_err(io)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("control".into())
            .spawn(move || accept_loop(&l, &commands, &s))
            .map_err(io)?;
        tracing::info!("control socket {}", path.display());
        Ok(Self { path: path.to_path_buf(), stop, thread: Some(thread) })
    }
}

impl Drop for ControlSocket {
    /// Stop accepting (within 50 ms) and remove the socket. Connections still open end on their
    /// own within [`IDLE`]; nothing waits for them.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn accept_loop(l: &UnixListener, commands: &Commands, stop: &Arc<AtomicBool>) {
    let clients = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        let stream = match l.accept() {
            Ok((s, _)) => s,
            Err(e)
                if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) =>
            {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(e) => {
                tracing::warn!("control socket: accept: {e}");
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(IDLE));
        let _ = stream.set_write_timeout(Some(IDLE));
        if clients.fetch_add(1, Ordering::AcqRel) >= MAX_CLIENTS {
            clients.fetch_sub(1, Ordering::AcqRel);
            let _ = (&stream).write_all(format!("error busy: {MAX_CLIENTS} clients connected\n").as_bytes());
            continue;
        }
        let (commands, clients, stop) = (commands.clone(), clients.clone(), stop.clone());
        let spawned = std::thread::Builder::new().name("control-client".into()).spawn(move || {
            serve_client(stream, &commands, &stop);
            clients.fetch_sub(1, Ordering::AcqRel);
        });
        if spawned.is_err() {
            tracing::warn!("control socket: cannot start a thread for a client");
        }
    }
}

/// One client: a line at a time until it closes, goes silent, sends a line past [`MAX_LINE`]
/// or stops reading its answers.
fn serve_client(stream: UnixStream, commands: &Commands, stop: &AtomicBool) {
    let Ok(mut w) = stream.try_clone() else { return };
    let mut r = BufReader::new(stream);
    let mut line = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        line.clear();
        // One byte past the limit tells a long line from one that ends there.
        match (&mut r).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE && !line.ends_with(b"\n") {
            let _ = w.write_all(format!("error line longer than {MAX_LINE} bytes\n").as_bytes());
            return;
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            if w.write_all(b"error not UTF-8 text\n").is_err() {
                return;
            }
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let answer = match commands.run(text) {
            Ok(s) => format!("ok {}\n", s.trim_end()),
            Err(e) => format!("error {e}\n"),
        };
        if w.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}
