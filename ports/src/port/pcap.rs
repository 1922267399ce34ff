//! Capture-file ports: frames read from a pcap, frames sent written to a pcap.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use pcap_file::DataLink;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};

use super::{PortIo, PortStats, fill};
use crate::buf::{Frame, Pool};

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
    pub fn open(rx: Option<&Path>, tx: Option<&Path>) -> anyhow::Result<Self> {
        use anyhow::Context;
        let reader = match rx {
            Some(p) => {
                let f = File::open(p).with_context(|| format!("cannot open capture {}", p.display()))?;
                let r = PcapReader::new(BufReader::new(f))
                    .with_context(|| format!("{} is not a pcap file", p.display()))?;
                anyhow::ensure!(
                    r.header().datalink == DataLink::ETHERNET,
                    "{}: link type {:?}, expected Ethernet",
                    p.display(),
                    r.header().datalink
                );
                Some(r)
            }
            None => None,
        };
        let writer = match tx {
            Some(p) => {
                let f = File::create(p).with_context(|| format!("cannot create capture {}", p.display()))?;
                let header = PcapHeader {
                    datalink: DataLink::ETHERNET,
                    snaplen: 65535,
                    endianness: pcap_file::Endianness::native(),
                    ..PcapHeader::default()
                };
                Some(
                    PcapWriter::with_header(BufWriter::new(f), header)
                        .with_context(|| format!("cannot write {}", p.display()))?,
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
