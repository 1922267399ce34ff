//! Capture-file ports: frames read from a pcap, frames sent written to a pcap.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::DataLink;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};

use super::{PortIo, PortStats, fill};
use crate::buf::{Frame, Pool};

/// Why a capture port could not open (each says which file).
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The input cannot be opened.
    #[error("cannot open capture {}: {error}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// The input is not a pcap file.
    #[error("{} is not a pcap file: {error}", path.display())]
    NotPcap {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: pcap_file::PcapError,
    },
    /// The input's link type is not Ethernet.
    #[error("{}: link type {link:?}, expected Ethernet", path.display())]
    NotEthernet {
        /// The file.
        path: PathBuf,
        /// Its link type.
        link: DataLink,
    },
    /// The output cannot be created.
    #[error("cannot create capture {}: {error}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// The output's header cannot be written.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: pcap_file::PcapError,
    },
}

/// A port reading frames from one capture and writing what it sends to another (either may be
/// absent). Sent frames are stamped with the time set by [`PortIo::set_time`] — the runtime's
/// clock, which on a replay is the input's timestamps, so a replay writes the same bytes every
/// time.
pub struct PcapPort {
    reader: Option<PcapReader<BufReader<File>>>,
    /// The next frame and its timestamp, read ahead so its time is known before it is taken.
    next: Option<(u64, Vec<u8>)>,
    writer: Option<PcapWriter<BufWriter<File>>>,
    now: u64,
    stats: PortStats,
    rx_done: bool,
}

impl std::fmt::Debug for PcapPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapPort").field("stats", &self.stats).field("rx_done", &self.rx_done).finish()
    }
}

impl PcapPort {
    /// Open the input (if any, which must be an Ethernet capture) and create the output (if any).
    pub fn open(rx: Option<&Path>, tx: Option<&Path>) -> Result<Self, PcapError> {
        let reader = match rx {
            Some(p) => {
                let f = File::open(p).map_err(|e| PcapError::Open { path: p.into(), error: e })?;
                let r = PcapReader::new(BufReader::new(f))
                    .map_err(|e| PcapError::NotPcap { path: p.into(), error: e })?;
                if r.header().datalink != DataLink::ETHERNET {
                    return Err(PcapError::NotEthernet { path: p.into(), link: r.header().datalink });
                }
                Some(r)
            }
            None => None,
        };
        let writer = match tx {
            Some(p) => {
                let f = File::create(p).map_err(|e| PcapError::Create { path: p.into(), error: e })?;
                let header = PcapHeader {
                    datalink: DataLink::ETHERNET,
                    snaplen: 65535,
                    endianness: pcap_file::Endianness::native(),
                    ..PcapHeader::default()
                };
                Some(
                    PcapWriter::with_header(BufWriter::new(f), header)
                        .map_err(|e| PcapError::Write { path: p.into(), error: e })?,
                )
            }
            None => None,
        };
        let mut port = Self {
            rx_done: reader.is_none(),
            reader,
            next: None,
            writer,
            now: 0,
            stats: PortStats::default(),
        };
        port.read_ahead();
        Ok(port)
    }

    fn read_ahead(&mut self) {
        let Some(r) = self.reader.as_mut() else { return };
        match r.next_packet() {
            Some(Ok(p)) => self.next = Some((p.timestamp.as_nanos() as u64, p.data.into_owned())),
            Some(Err(e)) => {
                tracing::warn!("capture read error, ending input: {e}");
                self.stats.rx_errors += 1;
                self.next = None;
                self.rx_done = true;
            }
            None => {
                self.next = None;
                self.rx_done = true;
            }
        }
    }
}

impl<F: Frame> PortIo<F> for PcapPort {
    fn rx_burst(&mut self, pool: &mut dyn Pool<F>, out: &mut Vec<F>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some((_, data)) = self.next.as_ref() else { break };
            match fill(pool, data) {
                Some(b) => {
                    out.push(b);
                    n += 1;
                    self.stats.rx += 1;
                }
                None if pool.available() == 0 => break,
                None => self.stats.rx_errors += 1,
            }
            self.read_ahead();
        }
        n
    }

    fn tx_burst(&mut self, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>) -> usize {
        let n = pkts.len();
        for p in pkts.drain(..) {
            if let Some(w) = self.writer.as_mut() {
                let rec = PcapPacket::new(Duration::from_nanos(self.now), p.len() as u32, p.data());
                match w.write_packet(&rec) {
                    Ok(_) => self.stats.tx += 1,
                    Err(e) => {
                        tracing::warn!("capture write error: {e}");
                        self.stats.tx_errors += 1;
                    }
                }
            } else {
                self.stats.tx += 1;
            }
            pool.free(p);
        }
        n
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn next_rx_time(&self) -> Option<u64> {
        self.next.as_ref().map(|(t, _)| *t)
    }

    fn rx_done(&self) -> bool {
        self.rx_done
    }

    fn set_time(&mut self, now: u64) {
        self.now = now;
    }

    /// Finish the output capture (further frames are counted but not written).
    fn flush(&mut self) -> std::io::Result<()> {
        match self.writer.take() {
            Some(w) => w.into_writer().flush(),
            None => Ok(()),
        }
    }
}
