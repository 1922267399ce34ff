//! The load generator's journal (`dataplane report --journal`): how many reports the run has
//! sent, kept in a file as it goes, so that what a reporter sent is known after it is killed —
//! the one number only the dead process knew, without which a reporter crash cannot be
//! accounted (`tests/dta_netns.rs`, the reporter SIGKILLed mid-stream).
//!
//! The file is one fixed-width line, rewritten in place (one `pwrite`, no allocation) after each
//! round of the host loop that sent something, once the round's frames were handed to the
//! kernel: `sent <20 digits> running` while the run goes on, `… ended  ` once it has ended.
//! The page cache keeps the last write when the process dies, so after a SIGKILL the reporter
//! had sent what the journal says, or up to one burst ([`ports::host::BURST`]) more: the
//! frames of the round it died in.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes of the journal's line: `sent `, 20 digits, a space, the state (7), a newline.
const LINE: usize = 5 + 20 + 1 + 7 + 1;

/// A run's journal, open for writing.
#[derive(Debug)]
pub struct Journal {
    file: std::fs::File,
    path: PathBuf,
    written: Option<u64>,
    /// A write failed (warned once; the run goes on, the journal is then stale).
    failed: bool,
}

/// What a journal says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalEntry {
    /// Reports sent (first transmissions handed to the port).
    pub sent: u64,
    /// The run ended (its summary was given); otherwise it was running when last written.
    pub ended: bool,
}

/// Why a journal could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The file could not be read.
    #[error("reading the journal {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file is not a journal line.
    #[error("{}: expected `sent <20 digits> running|ended`, found {found:?}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What it held (at most a line's length).
        found: String,
    },
}

impl Journal {
    /// Create (or truncate) the journal at `path`, saying 0 sent.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        let mut j = Journal { file, path: path.to_path_buf(), written: None, failed: false };
        j.file.write_all_at(&line(0, false), 0)?;
        j.written = Some(0);
        Ok(j)
    }

    /// Record `sent` (a write only when it changed, or when the run ends).
    pub fn record(&mut self, sent: u64, ended: bool) {
        if self.written == Some(sent) && !ended {
            return;
        }
        match self.file.write_all_at(&line(sent, ended), 0) {
            Ok(()) => self.written = Some(sent),
            Err(error) if !self.failed => {
                self.failed = true;
                tracing::warn!(path = %self.path.display(), %error, "the journal could not be written; it is stale from here");
            }
            Err(_) => {}
        }
    }

    /// Read the journal at `path`.
    pub fn read(path: &Path) -> Result<JournalEntry, JournalError> {
        let text =
            std::fs::read(path).map_err(|error| JournalError::Read { path: path.to_path_buf(), error })?;
        parse(&text).ok_or_else(|| JournalError::Format {
            path: path.to_path_buf(),
            found: String::from_utf8_lossy(&text[..text.len().min(LINE)]).into_owned(),
        })
    }
}

/// The line for `sent`, built in place: the journal is written from the send loop.
fn line(sent: u64, ended: bool) -> [u8; LINE] {
    let mut l = [b' '; LINE];
    l[..5].copy_from_slice(b"sent ");
    let mut v = sent;
    for d in (0..20).rev() {
        l[5 + d] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    l[26..33].copy_from_slice(if ended { b"ended  " } else { b"running" });
    l[LINE - 1] = b'\n';
    l
}

fn parse(text: &[u8]) -> Option<JournalEntry> {
    let l = text.get(..LINE)?;
    if &l[..5] != b"sent " || l[25] != b' ' || l[LINE - 1] != b'\n' {
        return None;
    }
    let mut sent = 0u64;
    for &c in &l[5..25] {
        if !c.is_ascii_digit() {
            return None;
        }
        sent = sent.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    let ended = match &l[26..33] {
        b"ended  " => true,
        b"running" => false,
        _ => return None,
    };
    Some(JournalEntry { sent, ended })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_reads_back_what_was_last_recorded_and_refuses_anything_else() {
        let dir = std::env::temp_dir().join(format!("softfabric-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("j");
        let mut j = Journal::create(&path).unwrap();
        assert_eq!(Journal::read(&path).unwrap(), JournalEntry { sent: 0, ended: false });
        j.record(12_345, false);
        assert_eq!(Journal::read(&path).unwrap(), JournalEntry { sent: 12_345, ended: false });
        j.record(u64::MAX, true);
        assert_eq!(Journal::read(&path).unwrap(), JournalEntry { sent: u64::MAX, ended: true });
        for bad in [
            &b""[..],
            b"sent 1 running\n",
            b"sent 0000000000000000000x running\n",
            b"sent 99999999999999999999 running\n",
        ] {
            std::fs::write(&path, bad).unwrap();
            assert!(Journal::read(&path).is_err(), "{bad:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    proptest::proptest! {
        #[test]
        fn parse_is_total_and_inverts_line(sent: u64, ended: bool, junk in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            proptest::prop_assert_eq!(parse(&line(sent, ended)), Some(JournalEntry { sent, ended }));
            let _ = parse(&junk);
        }
    }
}
