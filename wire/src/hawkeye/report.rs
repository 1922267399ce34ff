//! Hawkeye telemetry reports: what a switch's control side sends the analyzer when a polling
//! packet passes (seed `001` §3.4; the public prototype reads registers over bfrt and has no wire
//! format of its own, so this one is ours). One UDP payload, big-endian, at most
//! [`MAX_REPORT_LEN`] bytes (a 1500-byte MTU less IPv4 and UDP):
//!
//! ```text
//! header (20 B)
//!   0  magic     16   0x4857 ("HW")
//!   2  version    8   1
//!   3  flag       8   the polling copy's flag after this switch's egress rules (1, 2 or 3);
//!                    0 on a snapshot no polling copy made (full polling, an operator's ask)
//!   4  switch_id 16
//!   6  event_id   8   the polling packet's event ID
//!   7  reserved   8   0
//!   8  in_port   16   the port the polling packet entered this switch on
//!  10  out_port  16   the port this copy left by
//!  12  seq       32   this switch's report number (0, 1, 2, … over all events)
//!  16  part       8   this report's index among the event's reports at this switch
//!  17  last       8   1 on the event's last report at this switch, else 0
//!  18  count     16   entries that follow
//! entries, ENTRY_LEN (40 B) each
//!   0  kind       8   1 port, 2 flow, 3 port-pair meter
//!   1  reserved   8   0
//!   2  port      16   the egress port (port, flow) or the meter's out-port
//!   4  epoch_id  32   the epoch: timestamp / epoch length (its lap, not its index)
//!   8  body      32   by kind:
//!      port:  pkts 32 | paused 32 | qdepth_sum 64 | 0 × 16
//!      flow:  src_ip 32 | dst_ip 32 | protocol 8 | 0 8 | src_port 16 | dst_port 16 | pkts 32 |
//!             paused 32 | qdepth_sum 48
//!      meter: in_port 16 | 0 16 | bytes 64 | 0 × 20
//! ```
//!
//! `qdepth_sum` is the sum of the queue depth in bytes at enqueue over the epoch's packets that
//! were not paused; `paused` counts packets that waited on PFC or left a paused port. A flow's
//! 48-bit sum holds 2^48 bytes: more than an epoch can queue.

use super::FiveTuple;
use crate::error::{Error, Result, need, space};
use crate::field::{set_u16, set_u32, set_u64, u16_at as get_u16, u32_at as get_u32, u64_at as get_u64};
use core::net::Ipv4Addr;

/// The magic number, `"HW"`.
pub const MAGIC: u16 = 0x4857;
/// The format version.
pub const VERSION: u8 = 1;
/// Header length.
pub const HEADER_LEN: usize = 20;
/// Entry length.
pub const ENTRY_LEN: usize = 40;
/// The longest report: a 1500-byte MTU less 20 bytes of IPv4 and 8 of UDP.
pub const MAX_REPORT_LEN: usize = 1472;
/// Entries in the longest report.
pub const MAX_ENTRIES: usize = (MAX_REPORT_LEN - HEADER_LEN) / ENTRY_LEN;

/// A report's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportHeader {
    /// The polling copy's flag after this switch's egress rules.
    pub flag: u8,
    /// The reporting switch.
    pub switch_id: u16,
    /// The polling packet's event ID.
    pub event_id: u8,
    /// The port the polling packet entered this switch on.
    pub in_port: u16,
    /// The port this copy left by.
    pub out_port: u16,
    /// This switch's report number.
    pub seq: u32,
    /// Index among the event's reports at this switch.
    pub part: u8,
    /// The event's last report at this switch.
    pub last: bool,
}

/// One telemetry entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Entry {
    /// An egress port in one epoch.
    Port {
        /// The port.
        port: u16,
        /// The epoch (timestamp / epoch length).
        epoch_id: u32,
        /// Packets.
        pkts: u32,
        /// Packets that waited on PFC or left while the port was paused.
        paused: u32,
        /// Queue depth at enqueue, bytes, summed over unpaused packets.
        qdepth_sum: u64,
    },
    /// A flow at an egress port in one epoch.
    Flow {
        /// The egress port.
        port: u16,
        /// The epoch.
        epoch_id: u32,
        /// The flow.
        flow: FiveTuple,
        /// Packets.
        pkts: u32,
        /// Paused packets.
        paused: u32,
        /// Queue depth at enqueue, bytes, summed over unpaused packets (48 bits).
        qdepth_sum: u64,
    },
    /// Bytes from `in_port` to `out_port` in one epoch (the port-pair meter).
    Meter {
        /// The egress port.
        out_port: u16,
        /// The epoch.
        epoch_id: u32,
        /// The ingress port.
        in_port: u16,
        /// Bytes.
        bytes: u64,
    },
}

const FLOW_QDEPTH_MAX: u64 = (1 << 48) - 1;

impl Entry {
    /// Parse one entry (exactly [`ENTRY_LEN`] bytes or more; the rest is ignored).
    pub fn parse(b: &[u8]) -> Result<Self> {
        need("hawkeye_report.entry", ENTRY_LEN, b.len())?;
        let port = get_u16(b, 2);
        let epoch_id = get_u32(b, 4);
        match b[0] {
            1 => Ok(Self::Port {
                port,
                epoch_id,
                pkts: get_u32(b, 8),
                paused: get_u32(b, 12),
                qdepth_sum: get_u64(b, 16),
            }),
            2 => Ok(Self::Flow {
                port,
                epoch_id,
                flow: FiveTuple {
                    src_ip: Ipv4Addr::from_bits(get_u32(b, 8)),
                    dst_ip: Ipv4Addr::from_bits(get_u32(b, 12)),
                    protocol: b[16],
                    src_port: get_u16(b, 18),
                    dst_port: get_u16(b, 20),
                },
                pkts: get_u32(b, 22),
                paused: get_u32(b, 26),
                qdepth_sum: (u64::from(get_u16(b, 30)) << 32) | u64::from(get_u32(b, 32)),
            }),
            3 => Ok(Self::Meter { out_port: port, epoch_id, in_port: get_u16(b, 8), bytes: get_u64(b, 12) }),
            k => Err(Error::Unsupported { field: "hawkeye_report.entry.kind", value: u64::from(k) }),
        }
    }

    /// Write the entry into the first [`ENTRY_LEN`] bytes of `b` (a flow's queue-depth sum
    /// saturates at 2^48 − 1).
    pub fn emit(&self, b: &mut [u8]) -> Result<()> {
        space("hawkeye_report.entry", ENTRY_LEN, b.len())?;
        let b = &mut b[..ENTRY_LEN];
        b.fill(0);
        match *self {
            Self::Port { port, epoch_id, pkts, paused, qdepth_sum } => {
                b[0] = 1;
                set_u16(b, 2, port);
                set_u32(b, 4, epoch_id);
                set_u32(b, 8, pkts);
                set_u32(b, 12, paused);
                set_u64(b, 16, qdepth_sum);
            }
            Self::Flow { port, epoch_id, flow, pkts, paused, qdepth_sum } => {
                b[0] = 2;
                set_u16(b, 2, port);
                set_u32(b, 4, epoch_id);
                set_u32(b, 8, flow.src_ip.to_bits());
                set_u32(b, 12, flow.dst_ip.to_bits());
                b[16] = flow.protocol;
                set_u16(b, 18, flow.src_port);
                set_u16(b, 20, flow.dst_port);
                set_u32(b, 22, pkts);
                set_u32(b, 26, paused);
                let q = qdepth_sum.min(FLOW_QDEPTH_MAX);
                set_u16(b, 30, (q >> 32) as u16);
                set_u32(b, 32, q as u32);
            }
            Self::Meter { out_port, epoch_id, in_port, bytes } => {
                b[0] = 3;
                set_u16(b, 2, out_port);
                set_u32(b, 4, epoch_id);
                set_u16(b, 8, in_port);
                set_u64(b, 12, bytes);
            }
        }
        Ok(())
    }
}

/// A report read from a buffer: the header and its entries, each parsed when iterated.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// The header.
    pub header: ReportHeader,
    entries: &'a [u8],
}

impl<'a> Report<'a> {
    /// Parse a report: the header must be whole, the magic and version ours, and `count`
    /// entries must follow (trailing bytes are ignored). Entries are checked as they are read.
    pub fn parse(b: &'a [u8]) -> Result<Self> {
        need("hawkeye_report", HEADER_LEN, b.len())?;
        if get_u16(b, 0) != MAGIC {
            return Err(Error::Invalid { field: "hawkeye_report.magic", value: u64::from(get_u16(b, 0)) });
        }
        if b[2] != VERSION {
            return Err(Error::Unsupported { field: "hawkeye_report.version", value: u64::from(b[2]) });
        }
        let count = usize::from(get_u16(b, 18));
        let len = HEADER_LEN + count * ENTRY_LEN;
        need("hawkeye_report.count", len, b.len())?;
        let header = ReportHeader {
            flag: b[3],
            switch_id: get_u16(b, 4),
            event_id: b[6],
            in_port: get_u16(b, 8),
            out_port: get_u16(b, 10),
            seq: get_u32(b, 12),
            part: b[16],
            last: b[17] != 0,
        };
        Ok(Self { header, entries: &b[HEADER_LEN..len] })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len() / ENTRY_LEN
    }

    /// Whether it has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries, each parsed (an unknown kind is an error, the others still read).
    pub fn entries(&self) -> impl Iterator<Item = Result<Entry>> + 'a {
        self.entries.chunks_exact(ENTRY_LEN).map(Entry::parse)
    }
}

/// Bytes of a report of `entries` entries.
pub const fn report_len(entries: usize) -> usize {
    HEADER_LEN + entries * ENTRY_LEN
}

/// Write a report of `entries` into `b`; returns its length. At most [`MAX_ENTRIES`].
pub fn emit_report(header: &ReportHeader, entries: &[Entry], b: &mut [u8]) -> Result<usize> {
    if entries.len() > MAX_ENTRIES {
        return Err(Error::Invalid { field: "hawkeye_report.count", value: entries.len() as u64 });
    }
    let n = report_len(entries.len());
    space("hawkeye_report", n, b.len())?;
    set_u16(b, 0, MAGIC);
    b[2] = VERSION;
    b[3] = header.flag;
    set_u16(b, 4, header.switch_id);
    b[6] = header.event_id;
    b[7] = 0;
    set_u16(b, 8, header.in_port);
    set_u16(b, 10, header.out_port);
    set_u32(b, 12, header.seq);
    b[16] = header.part;
    b[17] = u8::from(header.last);
    set_u16(b, 18, entries.len() as u16);
    for (i, e) in entries.iter().enumerate() {
        e.emit(&mut b[HEADER_LEN + i * ENTRY_LEN..])?;
    }
    Ok(n)
}

/// The first word of a report carried as DTA Append data: [`MAGIC`] in the high half, the
/// number of words that follow in the low half.
pub const fn frame_word(words: u16) -> u32 {
    ((MAGIC as u32) << 16) | words as u32
}

/// A report as the 32-bit words of DTA Append reports (one list per switch): a
/// [`frame_word`], then the report's bytes as big-endian words, the last zero-padded.
pub fn words(report: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let n = report.len().div_ceil(4);
    core::iter::once(frame_word(n as u16)).chain(report.chunks(4).map(|c| {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        u32::from_be_bytes(w)
    }))
}

/// The reports in an Append list's words, in order: each report's words after its frame word
/// (turn them back into bytes with `to_be_bytes`, then [`Report::parse`]). A word that is not
/// a frame word where one is due, or a frame longer than the words left, ends the walk with an
/// error naming `hawkeye_report.frame`.
pub fn frames(words: &[u32]) -> impl Iterator<Item = Result<&[u32]>> + '_ {
    let mut at = 0usize;
    let mut failed = false;
    core::iter::from_fn(move || {
        if failed || at >= words.len() {
            return None;
        }
        let w = words[at];
        let n = (w & 0xffff) as usize;
        if w >> 16 != u32::from(MAGIC) || at + 1 + n > words.len() {
            failed = true;
            return Some(Err(Error::Invalid { field: "hawkeye_report.frame", value: u64::from(w) }));
        }
        let f = &words[at + 1..at + 1 + n];
        at += 1 + n;
        Some(Ok(f))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_back_and_bad_ones_name_their_field() {
        let h = ReportHeader {
            flag: 3,
            switch_id: 7,
            event_id: 42,
            in_port: 1,
            out_port: 2,
            seq: 9,
            part: 0,
            last: true,
        };
        let e = [
            Entry::Port { port: 2, epoch_id: 5, pkts: 10, paused: 3, qdepth_sum: 1 << 40 },
            Entry::Flow {
                port: 2,
                epoch_id: 5,
                flow: FiveTuple {
                    src_ip: Ipv4Addr::new(10, 0, 0, 1),
                    dst_ip: Ipv4Addr::new(10, 0, 0, 2),
                    protocol: 17,
                    src_port: 0xc000,
                    dst_port: 4791,
                },
                pkts: 4,
                paused: 1,
                qdepth_sum: 12345,
            },
            Entry::Meter { out_port: 2, epoch_id: 5, in_port: 1, bytes: 1500 },
        ];
        let mut b = [0u8; 200];
        let n = emit_report(&h, &e, &mut b).unwrap();
        assert_eq!(n, 20 + 3 * 40);
        assert_eq!(&b[..4], &[0x48, 0x57, 1, 3]);
        let r = Report::parse(&b[..n]).unwrap();
        assert_eq!(r.header, h);
        let back: Vec<Entry> = r.entries().map(Result::unwrap).collect();
        assert_eq!(back, e);
        assert_eq!(Report::parse(&b[..n - 1]).unwrap_err().field(), "hawkeye_report.count");
        assert_eq!(Report::parse(&b[..10]).unwrap_err().field(), "hawkeye_report");
        let mut bad = b;
        bad[0] = 0;
        assert_eq!(Report::parse(&bad[..n]).unwrap_err().field(), "hawkeye_report.magic");
        let mut bad = b;
        bad[20] = 9;
        assert!(Report::parse(&bad[..n]).unwrap().entries().next().unwrap().is_err());
        assert_eq!(MAX_ENTRIES, 36);
        const { assert!(report_len(MAX_ENTRIES) <= MAX_REPORT_LEN) };
    }

    #[test]
    fn reports_travel_as_append_words_and_come_back() {
        let h = ReportHeader {
            flag: 1,
            switch_id: 3,
            event_id: 9,
            in_port: 0,
            out_port: 1,
            seq: 0,
            part: 0,
            last: true,
        };
        let e = [Entry::Meter { out_port: 1, epoch_id: 2, in_port: 0, bytes: 77 }];
        let mut b = [0u8; 60];
        let n = emit_report(&h, &e, &mut b).unwrap();
        let mut list: Vec<u32> = words(&b[..n]).collect();
        list.extend(words(&b[..n]));
        assert_eq!(list[0], frame_word(15));
        let got: Vec<&[u32]> = frames(&list).map(Result::unwrap).collect();
        assert_eq!(got.len(), 2);
        let bytes: Vec<u8> = got[1].iter().flat_map(|w| w.to_be_bytes()).collect();
        let r = Report::parse(&bytes).unwrap();
        assert_eq!(r.header, h);
        assert_eq!(r.entries().next().unwrap().unwrap(), e[0]);
        // A broken list ends with an error, after what read well.
        list.push(7);
        let all: Vec<_> = frames(&list).collect();
        assert_eq!(all.len(), 3);
        assert_eq!(all[2].unwrap_err().field(), "hawkeye_report.frame");
    }
}
