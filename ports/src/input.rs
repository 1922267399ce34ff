//! What every binary's handling of its input shares: files read with a bound, the memory an
//! input may size allocations against, the key a TOML error is about, and the stop flag that
//! SIGINT and SIGTERM raise.
//!
//! Every count or size that comes from a file, a flag or a packet is checked against a limit
//! before anything is allocated; where the limit is the machine, [`memory_budget`] is the
//! number: the memory available, or less if the process's address space is limited
//! (`ulimit -v`), since then an allocation fails before the memory runs out.

use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The largest configuration or input text file read (16 MiB): a file past it is refused
/// before it is read whole (`/dev/zero` as a configuration ends here, not in an abort).
pub const MAX_TEXT_BYTES: u64 = 16 << 20;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// It could not be opened or read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// It is a directory.
    #[error("cannot read: a directory, not a file")]
    Directory,
    /// It is larger than the bound.
    #[error("cannot read: larger than {} MiB (the limit for this input)", .0 >> 20)]
    TooLarge(u64),
    /// It is not UTF-8 text.
    #[error("cannot read: not UTF-8 text")]
    NotText,
}

/// The text of `path`, at most `max` bytes: a longer file (or an endless one, a device) is
/// refused after `max + 1` bytes, never read whole.
pub fn read_text(path: &Path, max: u64) -> Result<String, ReadError> {
    let f = std::fs::File::open(path)?;
    if f.metadata()?.is_dir() {
        return Err(ReadError::Directory);
    }
    let mut buf = Vec::new();
    f.take(max.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(ReadError::TooLarge(max));
    }
    String::from_utf8(buf).map_err(|_| ReadError::NotText)
}

/// `flag PATH`, an input file read whole, with at most `max` bytes: its text, or an error that
/// names the flag (`--config x.toml: cannot read: …`).
pub fn read_flag(flag: &str, path: &Path, max: u64) -> Result<String, String> {
    read_text(path, max).map_err(|e| format!("{flag} {}: {e}", path.display()))
}

/// Why `path` cannot name a file on Linux: a component past 255 bytes, or the whole past 4095.
pub fn path_fits(path: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    if path.as_os_str().len() > 4095 {
        return Err(format!("a path of {} bytes: at most 4095", path.as_os_str().len()));
    }
    if let Some(c) = path.components().find(|c| c.as_os_str().len() > 255) {
        return Err(format!("a name of {} bytes in the path: at most 255", c.as_os_str().as_bytes().len()));
    }
    Ok(())
}

/// `flag PATH`, a directory results go into: made (with its parents) and written to once
/// before any work, so that a path that cannot take them is refused at once, naming the flag,
/// not after a run.
pub fn writable_dir(flag: &str, path: &Path) -> Result<(), String> {
    let probe = path.join(".softfabric-write-test");
    std::fs::create_dir_all(path)
        .and_then(|()| std::fs::write(&probe, b""))
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| format!("{flag} {}: cannot write there: {e}", path.display()))
}

/// `flag PATH`, a file written when the work is done: created (empty) now, so that a path that
/// cannot be one is refused at once, naming the flag.
pub fn writable_file(flag: &str, path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{flag} {}: a directory, not a file", path.display()));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map(drop)
        .map_err(|e| format!("{flag} {}: cannot write: {e}", path.display()))
}

/// The memory available for new allocations (`MemAvailable` in `/proc/meminfo`), bytes; `None`
/// where there is no such file.
pub fn mem_available() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 =
        s.lines().find(|l| l.starts_with("MemAvailable:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The address space this process may still map: its limit (`ulimit -v`, "Max address space"
/// in `/proc/self/limits`) less what it maps now (`VmSize`); `None` when unlimited or unknown.
pub fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max address space"))?;
    let soft = line.trim_start_matches("Max address space").split_whitespace().next()?;
    let limit: u64 = soft.parse().ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 =
        status.lines().find(|l| l.starts_with("VmSize:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(limit.saturating_sub(kib.saturating_mul(1024)))
}

/// The memory an input may have allocated: the smaller of [`mem_available`] and
/// [`address_space_left`]; `None` if neither is known.
pub fn memory_budget() -> Option<u64> {
    match (mem_available(), address_space_left()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `Ok` if `bytes` fit in the [`memory_budget`] with a quarter of it to spare for everything
/// else; otherwise the reason, in MiB, for an error message ("needs 5000 MiB; 3000 MiB are
/// available").
pub fn fits_in_memory(bytes: u128) -> Result<(), String> {
    let Some(budget) = memory_budget() else { return Ok(()) };
    let usable = u128::from(budget) / 4 * 3;
    if bytes <= usable {
        Ok(())
    } else {
        Err(format!(
            "needs {} MiB; {} MiB of memory are available to this process",
            bytes >> 20,
            budget >> 20
        ))
    }
}

/// Where a TOML error is: its 1-based line and the dotted key it is about (`port[1].speed`:
/// the table headers above it and the key its value belongs to), from the error's byte `span`
/// in `text`. Line 0 and an empty key when there is no span. Written here because the TOML
/// parser names the position but not the key, and a person fixes a file by key.
pub fn toml_location(text: &str, span: Option<Range<usize>>) -> (usize, String) {
    let Some(span) = span else { return (0, String::new()) };
    let at = span.start.min(text.len());
    let line_no = text[..at].bytes().filter(|&b| b == b'\n').count() + 1;
    let lines: Vec<&str> = text.lines().collect();
    // The header above, counting array-of-tables entries: `[[port]]` twice above is port[1].
    let mut header = String::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for l in lines.iter().take(line_no) {
        let t = l.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            let n = match counts.iter_mut().find(|(k, _)| *k == name) {
                Some((_, c)) => {
                    *c += 1;
                    *c - 1
                }
                None => {
                    counts.push((name.clone(), 1));
                    0
                }
            };
            header = format!("{name}[{n}]");
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            header = name.trim().to_string();
        }
    }
    // The key: the last `key =` before the error on its line, or on the nearest line above
    // that starts with one (a value that spans lines).
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let col = at - line_start;
    let mut key = None;
    let is_header = |l: &str| {
        let t = l.trim_start();
        t.starts_with('[') && !t.starts_with("[ ") && (t.trim_end().ends_with(']') || t.contains("] "))
    };
    let on_header = lines.get(line_no - 1).is_some_and(|l| is_header(l));
    if on_header {
        // The error is the table itself (a missing field, a wrong type): its header names it.
    } else if let Some(l) = lines.get(line_no - 1) {
        match l.find('=') {
            // On the key itself (`routes = []`, an unknown key).
            Some(eq) if col <= eq && line_key(l.trim_start()).is_some() => key = line_key(l.trim_start()),
            _ => {
                // In a value: scan from the line its key starts on (a value may span lines)
                // to the error, through the arrays and inline tables it is inside.
                let mut from = line_start;
                let mut i = line_no - 1;
                loop {
                    let l = lines[i];
                    if is_header(l) {
                        break;
                    }
                    if line_key(l.trim_start()).is_some() {
                        // The offset of line i: past i newlines.
                        from = text.match_indices('\n').nth(i.wrapping_sub(1)).map_or(0, |(o, _)| o + 1);
                        break;
                    }
                    if i == 0 {
                        break;
                    }
                    i -= 1;
                }
                key = last_key(&text[from.min(at)..at]);
            }
        }
    }
    let key = match (header.is_empty(), key) {
        (true, Some(k)) => k,
        (false, Some(k)) => format!("{header}.{k}"),
        (_, None) => header,
    };
    (line_no, key)
}

/// A TOML error as one line: `key: message (line N)` ([`toml_location`] of its `span`).
pub fn toml_message(text: &str, span: Option<Range<usize>>, message: &str) -> String {
    let (line, key) = toml_location(text, span);
    let key = if key.is_empty() { "-".to_string() } else { key };
    if line == 0 {
        format!("{key}: {}", message.trim_end())
    } else {
        format!("{key}: {} (line {line})", message.trim_end())
    }
}

/// The key of a line that starts `key = …`.
fn line_key(t: &str) -> Option<String> {
    let (k, _) = t.split_once('=')?;
    let k = k.trim();
    (!k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || "_-.\"".contains(c)))
        .then(|| k.replace('"', ""))
}

/// The key whose value holds the end of `s` (a line up to an error), as a dotted path: the keys
/// of the arrays and inline tables the end is inside, then the last `key =` at its depth
/// (`neighbor = [{ ip = "x", mac = "y" }, 7` names `neighbor`; at `"y"`, `neighbor.mac`).
/// Quoted strings are skipped.
fn last_key(s: &str) -> Option<String> {
    // Per open bracket: the key it belongs to; per depth: the last key seen there.
    let mut openers: Vec<Option<String>> = Vec::new();
    let mut last: Vec<Option<String>> = vec![None];
    let b = s.as_bytes();
    let mut i = 0;
    let mut word_start = None;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' && q == b'"' { 2 } else { 1 };
                }
                word_start = None;
            }
            b'=' => {
                if let Some(w) = word_start {
                    let k = s[w..i].trim().to_string();
                    if let Some(l) = last.last_mut() {
                        *l = Some(k);
                    }
                }
                word_start = None;
            }
            b'[' | b'{' => {
                let owner = last.last().cloned().flatten();
                openers.push(owner);
                last.push(None);
                word_start = None;
            }
            b']' | b'}' => {
                openers.pop();
                if last.len() > 1 {
                    last.pop();
                }
                word_start = None;
            }
            b',' => word_start = None,
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.' => {
                if word_start.is_none() {
                    word_start = Some(i);
                }
            }
            b' ' | b'\t' => {}
            _ => word_start = None,
        }
        i += 1;
    }
    // The keys of the brackets open at the end, outermost first, then the last key inside.
    let mut path: Vec<String> = openers.into_iter().flatten().collect();
    if let Some(k) = last.last().cloned().flatten() {
        path.push(k);
    }
    (!path.is_empty()).then(|| path.join("."))
}

/// A finite number in `[lo, hi]` (`lo` excluded when `open`), in `unit`: a flag's value parser
/// (NaN, infinities and numbers out of range are refused, naming the range).
pub fn ranged(s: &str, lo: f64, hi: f64, open: bool, unit: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    let above = if open { v > lo } else { v >= lo };
    if v.is_finite() && above && v <= hi {
        Ok(v)
    } else {
        Err(format!("{s} out of range: {}{lo}..={hi} {unit}", if open { "above " } else { "" }))
    }
}

/// The command line parsed as `C`, every option's value allowed to begin with `-`: clap
/// otherwise reads `--count -1` as a flag `-1` and says "unexpected argument '-1'" without
/// naming `--count`; with this, the value reaches the option's parser, whose error names the
/// option. Errors exit 2, as clap's always do.
pub fn parse_args<C: clap::Parser>() -> C {
    let m = hyphen_values(C::command()).get_matches();
    C::from_arg_matches(&m).unwrap_or_else(|e| e.exit())
}

fn hyphen_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| if a.get_action().takes_values() { a.allow_hyphen_values(true) } else { a })
        .mut_subcommands(hyphen_values)
}

/// A flag that SIGINT and SIGTERM set: what a long-running command polls to stop, cleanly and
/// within its loop's period, with its summary printed. Registering it replaces the default
/// action (death by the signal).
pub fn stop_on_signals() -> std::io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}

/// Whether a socket read's error only means "nothing yet" — a timeout, a would-block, or a
/// signal (the caller looks at its stop flag next) — rather than a failure.
pub fn is_idle_read(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(text: &str, needle: &str) -> (usize, String) {
        let at = text.find(needle).unwrap();
        toml_location(text, Some(at..at + needle.len()))
    }

    #[test]
    fn errors_are_placed_by_key_and_table() {
        let t = "program = \"l2l3\"\n[runtime]\nburst = \"x\"\n[[port]]\nname = \"a\"\n[[port]]\nname = \"b\"\nspeed = 7\n[l2l3]\nneighbor = [{ ip = \"1.2.3.4\", mac = \"zz\" }]\nroute = [\n  { prefix = 5 },\n]\n";
        assert_eq!(loc(t, "\"x\""), (3, "runtime.burst".into()));
        assert_eq!(loc(t, "7"), (8, "port[1].speed".into()));
        assert_eq!(loc(t, "\"zz\""), (10, "l2l3.neighbor.mac".into()));
        assert_eq!(loc(t, "5 }"), (12, "l2l3.route.prefix".into()));
        assert_eq!(loc(t, "\"l2l3\""), (1, "program".into()));
        // An unknown key is placed at the key.
        assert_eq!(loc(t, "route = ["), (11, "l2l3.route".into()));
        // In an inline array of tables, a value that is not one of them is the array's.
        let t = "[l2l3]\nneighbor = [{ ip = \"1.2.3.4\", mac = \"y\" }, \"x\"]\n";
        assert_eq!(loc(t, "\"x\""), (2, "l2l3.neighbor".into()));
        assert_eq!(loc(t, "\"y\""), (2, "l2l3.neighbor.mac".into()));
        // At a table's header, the table.
        let t = "[[tm.ecn]]\nqueue = 3\n[tm.pfc]\nalpha = 1\n";
        assert_eq!(loc(t, "[tm.pfc]"), (3, "tm.pfc".into()));
        assert_eq!(toml_location(t, None), (0, String::new()));
    }

    #[test]
    fn reads_are_bounded() {
        let e = read_text(Path::new("/dev/zero"), 1 << 10).unwrap_err();
        assert!(matches!(e, ReadError::TooLarge(_)), "{e}");
        assert!(matches!(read_text(Path::new("/"), 1 << 10), Err(ReadError::Directory)));
        assert!(read_text(Path::new("/no/such/file"), 1 << 10).is_err());
    }

    #[test]
    fn the_budget_is_at_most_what_is_available() {
        if let (Some(b), Some(a)) = (memory_budget(), mem_available()) {
            assert!(b <= a);
        }
        assert!(fits_in_memory(1).is_ok());
        assert!(fits_in_memory(u128::MAX).is_err());
    }
}
