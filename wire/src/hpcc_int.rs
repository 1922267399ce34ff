//! HPCC++ in-band telemetry (seed `004`, §6.1): one record per hop, taken at a single egress
//! snapshot, carried in probes (UDP port 40051) that take the data path and queue, or on data
//! packets between two of our agents.
//!
//! The draft leaves the encoding open. Ours is a 4-byte shim and a fixed array of hop slots the
//! sender allocates, so a switch writes in place and the packet never grows:
//!
//! ```text
//! shim:  n_hop 8 | max_hop 8 | flags 8 (bit 7: overflow, bit 6: reflected) | next 8
//! hop (16 bytes, × max_hop ≤ 8):
//!   switch_id 16 | port_id 16 | rate 16 (units of 100 Mb/s) | qlen 16 (units of 128 B, saturating)
//!   ts 32 (ns, wraps every 4.29 s) | tx_bytes 32 (bytes, wraps every 4 GiB)
//! ```
//!
//! Rates from 100 Mb/s to 6.5 Tb/s fit; queues up to 8 MiB are exact to 128 B and larger ones
//! read as 8 MiB.
//!
//! A **compact** header (flag bit 5) carries 8-byte hops, the size of the HPCC simulator's
//! `IntHop` (its header is a fixed 2 + 5 × 8 = 42 bytes; ours with 5 compact slots is 44):
//!
//! ```text
//! hop (8 bytes): rate_code 4 | ts 24 (ns, wraps every 16.8 ms) | tx_units 20 (128 B, wraps
//!                every 128 MiB) | qlen 16 (units of 128 B, saturating)
//! ```
//!
//! `rate_code` indexes [`COMPACT_RATES`]; a rate not in it is sent as the largest one below.
//! Compact hops have no switch or port ID (the simulator's have none either: a sender matches
//! hops by position). Full hops are the default: they name the hop and wrap 256× less often. A sender only ever uses differences of `ts` and `tx_bytes` between two ACKs of
//! the same hop, taken well within one wrap ([`IntHopRepr::ts_delta`],
//! [`IntHopRepr::tx_bytes_delta`]). A switch that finds no free slot sets the overflow flag and
//! leaves the record out; the sender then ignores the feedback, as HPCC's simulator does.
//!
//! `next` says what follows the slots: 0 nothing more of ours (a probe), 1 a RoCEv2 BTH — data
//! or an ACK riding between two of our agents on UDP port 40051, which take the header out and
//! hand on the RoCEv2 packet as it was sent (its ICRC covers it without the INT). A receiver
//! that copies the telemetry back to the sender sets `reflected`; switches stamp only headers
//! that are not reflected. A switch that stamps sets the UDP checksum to zero (IPv4 allows it).

use crate::error::{Error, Result, need, space};
use crate::field::{set_u16, set_u32};
use crate::spec::Header;

/// The fields of the shim and of one hop slot.
pub mod field {
    /// The 4-byte shim.
    pub mod shim {
        use crate::spec::Field;

        /// Hops recorded.
        pub const N_HOP: Field = Field::bytes("n_hop", 0, 1);
        /// Slots allocated.
        pub const MAX_HOP: Field = Field::bytes("max_hop", 1, 1);
        /// Overflow: a switch found no free slot.
        pub const OVERFLOW: Field = Field::new("overflow", 16, 1);
        /// Reflected toward the sender; switches leave it alone.
        pub const REFLECTED: Field = Field::new("reflected", 17, 1);
        /// Compact (8-byte) hop slots.
        pub const COMPACT: Field = Field::new("compact", 18, 1);
        /// Reserved flags.
        pub const RESERVED: Field = Field::new("reserved", 19, 5);
        /// What follows the slots.
        pub const NEXT: Field = Field::bytes("next", 3, 1);
    }

    /// One 16-byte hop slot.
    pub mod hop {
        use crate::spec::Field;

        /// Switch ID.
        pub const SWITCH_ID: Field = Field::bytes("switch_id", 0, 2);
        /// Egress port.
        pub const PORT_ID: Field = Field::bytes("port_id", 2, 2);
        /// Link rate, in units of 100 Mb/s.
        pub const RATE: Field = Field::bytes("rate", 4, 2);
        /// Queue length, in units of 128 B (saturating).
        pub const QLEN: Field = Field::bytes("qlen", 6, 2);
        /// Dequeue timestamp, ns (wraps).
        pub const TS: Field = Field::bytes("ts", 8, 4);
        /// Bytes the port has sent (wraps).
        pub const TX_BYTES: Field = Field::bytes("tx_bytes", 12, 4);
    }

    /// One 8-byte compact hop slot.
    pub mod hop_compact {
        use crate::spec::Field;

        /// Link rate, an index into [`COMPACT_RATES`](super::super::COMPACT_RATES).
        pub const RATE_CODE: Field = Field::new("rate_code", 0, 4);
        /// Dequeue timestamp, ns (low 24 bits).
        pub const TS: Field = Field::new("ts", 4, 24);
        /// Bytes the port has sent, in units of 128 B (low 20 bits).
        pub const TX_UNITS: Field = Field::new("tx_units", 28, 20);
        /// Queue length, in units of 128 B (saturating).
        pub const QLEN: Field = Field::new("qlen", 48, 16);
    }
}

/// The shim.
pub const SHIM: Header = Header {
    name: "hpcc_int_shim",
    fields: &[
        field::shim::N_HOP,
        field::shim::MAX_HOP,
        field::shim::OVERFLOW,
        field::shim::REFLECTED,
        field::shim::COMPACT,
        field::shim::RESERVED,
        field::shim::NEXT,
    ],
    len: SHIM_LEN,
};

/// One hop slot (a header stack of `max_hop` of them follows the shim).
pub const HOP: Header = Header {
    name: "hpcc_int_hop",
    fields: &[
        field::hop::SWITCH_ID,
        field::hop::PORT_ID,
        field::hop::RATE,
        field::hop::QLEN,
        field::hop::TS,
        field::hop::TX_BYTES,
    ],
    len: HOP_LEN,
};

/// One compact hop slot (a stack of `max_hop` of them follows a shim with the compact flag).
pub const HOP_COMPACT: Header = Header {
    name: "hpcc_int_hop_compact",
    fields: &[
        field::hop_compact::RATE_CODE,
        field::hop_compact::TS,
        field::hop_compact::TX_UNITS,
        field::hop_compact::QLEN,
    ],
    len: HOP_COMPACT_LEN,
};

/// Shim length.
pub const SHIM_LEN: usize = 4;
/// Length of one hop record.
pub const HOP_LEN: usize = 16;
/// Length of one compact hop record.
pub const HOP_COMPACT_LEN: usize = 8;
/// Flag: compact (8-byte) hop slots ([`field::shim::COMPACT`]).
pub const FLAG_COMPACT: u8 = field::shim::COMPACT.place_u8(1);
/// The line rates a compact hop's 4-bit code names, in units of 100 Mb/s (code 0: unknown).
pub const COMPACT_RATES: [u16; 16] =
    [0, 1, 10, 25, 50, 100, 250, 400, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000];
/// Bytes of a compact hop's `tx_units`.
pub const COMPACT_TX_UNIT: u32 = 128;
/// Most hop slots a header may carry.
pub const MAX_HOPS: usize = 8;
/// Flag: a switch found no free slot (in the flags byte, [`field::shim::OVERFLOW`]).
pub const FLAG_OVERFLOW: u8 = field::shim::OVERFLOW.place_u8(1);
/// Flag: telemetry copied back toward the sender; switches leave it alone
/// ([`field::shim::REFLECTED`]).
pub const FLAG_REFLECTED: u8 = field::shim::REFLECTED.place_u8(1);
/// `next`: nothing follows (a probe).
pub const NEXT_NONE: u8 = 0;
/// `next`: a RoCEv2 BTH follows.
pub const NEXT_BTH: u8 = 1;
/// Unit of the rate field, in bits per second.
pub const RATE_UNIT_BPS: u64 = 100_000_000;
/// Unit of the queue-length field, in bytes.
pub const QLEN_UNIT_BYTES: u64 = 128;

view!(
    /// A read/write view of an INT header: the shim and `max_hop` slots.
    IntHeader
);

impl<T: AsRef<[u8]>> IntHeader<T> {
    /// Check the shim, that `1 <= max_hop <= 8`, that `n_hop <= max_hop`, and that all slots fit.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("int", SHIM_LEN, b.len())?;
        let max = usize::from(field::shim::MAX_HOP.get_u8(b));
        if max == 0 || max > MAX_HOPS {
            return Err(Error::Invalid { field: "int.max_hop", value: max as u64 });
        }
        let n = field::shim::N_HOP.get_u8(b);
        if usize::from(n) > max {
            return Err(Error::Invalid { field: "int.n_hop", value: u64::from(n) });
        }
        need("int.max_hop", SHIM_LEN + self.hop_len() * max, b.len())
    }

    /// Whether the hop slots are compact (8 bytes).
    pub fn compact(&self) -> bool {
        field::shim::COMPACT.get_bool(self.buffer.as_ref())
    }

    /// Length of one hop slot: [`HOP_LEN`] or [`HOP_COMPACT_LEN`].
    pub fn hop_len(&self) -> usize {
        if self.compact() { HOP_COMPACT_LEN } else { HOP_LEN }
    }

    /// Hops recorded.
    pub fn n_hop(&self) -> u8 {
        field::shim::N_HOP.get_u8(self.buffer.as_ref())
    }

    /// Slots allocated.
    pub fn max_hop(&self) -> u8 {
        field::shim::MAX_HOP.get_u8(self.buffer.as_ref())
    }

    /// Flags.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::shim::OVERFLOW.byte()]
    }

    /// Whether some hop found no free slot.
    pub fn overflow(&self) -> bool {
        field::shim::OVERFLOW.get_bool(self.buffer.as_ref())
    }

    /// Whether this is telemetry copied back toward the sender.
    pub fn reflected(&self) -> bool {
        field::shim::REFLECTED.get_bool(self.buffer.as_ref())
    }

    /// What follows the slots ([`NEXT_NONE`], [`NEXT_BTH`]).
    pub fn next(&self) -> u8 {
        field::shim::NEXT.get_u8(self.buffer.as_ref())
    }

    /// Header length: shim and all slots.
    pub fn header_len(&self) -> usize {
        SHIM_LEN + self.hop_len() * usize::from(self.max_hop())
    }

    /// Hop record `i` (`i < max_hop`).
    pub fn hop(&self, i: usize) -> IntHopRepr {
        let at = SHIM_LEN + self.hop_len() * i;
        if self.compact() {
            IntHopRepr::read_compact(&self.buffer.as_ref()[at..])
        } else {
            IntHopRepr::read(&self.buffer.as_ref()[at..])
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IntHeader<T> {
    /// Record `hop` in the next free slot, as a switch does at egress. Returns `false` and sets
    /// the overflow flag when every slot is taken.
    pub fn push_hop(&mut self, hop: &IntHopRepr) -> bool {
        let compact = self.compact();
        let b = self.buffer.as_mut();
        let n = usize::from(field::shim::N_HOP.get_u8(b));
        if n >= usize::from(field::shim::MAX_HOP.get_u8(b)) {
            field::shim::OVERFLOW.set_bool(b, true);
            return false;
        }
        if compact {
            hop.write_compact(&mut b[SHIM_LEN + HOP_COMPACT_LEN * n..]);
        } else {
            hop.write(&mut b[SHIM_LEN + HOP_LEN * n..]);
        }
        field::shim::N_HOP.set_u8(b, n as u8 + 1);
        true
    }
}

/// One hop's telemetry, in wire units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IntHopRepr {
    /// Switch ID.
    pub switch_id: u16,
    /// Egress port ID.
    pub port_id: u16,
    /// Link bandwidth B, in units of 100 Mb/s.
    pub rate: u16,
    /// Egress queue length, in units of 128 bytes (saturating).
    pub qlen: u16,
    /// Egress timestamp, ns (low 32 bits).
    pub ts: u32,
    /// Bytes transmitted on the port (low 32 bits; a compact hop's are a multiple of 128).
    pub tx_bytes: u32,
    /// Read from a compact slot: `ts` holds 24 bits and `tx_bytes` 27, and deltas wrap there.
    pub compact: bool,
}

impl IntHopRepr {
    /// Encode one egress snapshot in physical units. Rate and queue length saturate; timestamp
    /// and byte counter are truncated to 32 bits.
    pub fn from_snapshot(
        switch_id: u16,
        port_id: u16,
        rate_bps: u64,
        qlen_bytes: u64,
        ts_ns: u64,
        tx_bytes: u64,
    ) -> Self {
        Self {
            switch_id,
            port_id,
            rate: (rate_bps / RATE_UNIT_BPS).min(u64::from(u16::MAX)) as u16,
            qlen: qlen_bytes.div_ceil(QLEN_UNIT_BYTES).min(u64::from(u16::MAX)) as u16,
            ts: ts_ns as u32,
            tx_bytes: tx_bytes as u32,
            compact: false,
        }
    }

    /// Link bandwidth in bits per second.
    pub const fn rate_bps(&self) -> u64 {
        self.rate as u64 * RATE_UNIT_BPS
    }

    /// Queue length in bytes.
    pub const fn qlen_bytes(&self) -> u64 {
        self.qlen as u64 * QLEN_UNIT_BYTES
    }

    /// Nanoseconds from `earlier` to `self` at the same hop, across a wrap.
    pub const fn ts_delta(&self, earlier: &Self) -> u32 {
        let d = self.ts.wrapping_sub(earlier.ts);
        if self.compact { d & 0x00ff_ffff } else { d }
    }

    /// Bytes sent from `earlier` to `self` at the same hop, across a wrap.
    pub const fn tx_bytes_delta(&self, earlier: &Self) -> u32 {
        let d = self.tx_bytes.wrapping_sub(earlier.tx_bytes);
        if self.compact { d & (0x000f_ffff * COMPACT_TX_UNIT) } else { d }
    }

    /// The compact code of this hop's rate: the largest [`COMPACT_RATES`] entry not above it.
    pub fn rate_code(&self) -> u8 {
        COMPACT_RATES
            .iter()
            .enumerate()
            .filter(|(_, r)| **r <= self.rate)
            .max_by_key(|(_, r)| **r)
            .map_or(0, |(i, _)| i as u8)
    }

    fn read_compact(b: &[u8]) -> Self {
        use field::hop_compact::*;
        Self {
            switch_id: 0,
            port_id: 0,
            rate: COMPACT_RATES[usize::from(RATE_CODE.get_u8(b))],
            qlen: QLEN.get_u16(b),
            ts: TS.get_u32(b),
            tx_bytes: TX_UNITS.get_u32(b) * COMPACT_TX_UNIT,
            compact: true,
        }
    }

    fn write_compact(&self, b: &mut [u8]) {
        use field::hop_compact::*;
        RATE_CODE.set_u8(b, self.rate_code());
        TS.set_u32(b, self.ts & 0x00ff_ffff);
        TX_UNITS.set_u32(b, (self.tx_bytes / COMPACT_TX_UNIT) & 0x000f_ffff);
        QLEN.set_u16(b, self.qlen);
    }

    fn read(b: &[u8]) -> Self {
        Self {
            switch_id: field::hop::SWITCH_ID.get_u16(b),
            port_id: field::hop::PORT_ID.get_u16(b),
            rate: field::hop::RATE.get_u16(b),
            qlen: field::hop::QLEN.get_u16(b),
            ts: field::hop::TS.get_u32(b),
            tx_bytes: field::hop::TX_BYTES.get_u32(b),
            compact: false,
        }
    }

    fn write(&self, b: &mut [u8]) {
        set_u16(b, field::hop::SWITCH_ID.byte(), self.switch_id);
        set_u16(b, field::hop::PORT_ID.byte(), self.port_id);
        set_u16(b, field::hop::RATE.byte(), self.rate);
        set_u16(b, field::hop::QLEN.byte(), self.qlen);
        set_u32(b, field::hop::TS.byte(), self.ts);
        set_u32(b, field::hop::TX_BYTES.byte(), self.tx_bytes);
    }
}

/// A parsed INT header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IntRepr {
    /// Slots allocated, 1..=8.
    pub max_hop: u8,
    /// Overflow flag.
    pub overflow: bool,
    /// Reflected flag: telemetry on its way back to the sender.
    pub reflected: bool,
    /// What follows ([`NEXT_NONE`], [`NEXT_BTH`]).
    pub next: u8,
    /// Compact (8-byte) hop slots.
    pub compact: bool,
    /// Hops recorded: the first `n_hop` entries of `hops`.
    pub n_hop: u8,
    /// Hop records; entries at `n_hop` and beyond are zero.
    pub hops: [IntHopRepr; MAX_HOPS],
}

impl IntRepr {
    /// An empty header with `max_hop` slots, as a sender allocates it.
    pub fn empty(max_hop: u8) -> Self {
        Self {
            max_hop,
            overflow: false,
            reflected: false,
            next: NEXT_NONE,
            compact: false,
            n_hop: 0,
            hops: [IntHopRepr::default(); MAX_HOPS],
        }
    }

    /// An empty compact header with `max_hop` slots.
    pub fn empty_compact(max_hop: u8) -> Self {
        Self { compact: true, ..Self::empty(max_hop) }
    }

    /// The recorded hops.
    pub fn recorded(&self) -> &[IntHopRepr] {
        &self.hops[..usize::from(self.n_hop).min(MAX_HOPS)]
    }

    /// Parse an INT header. Unused slots are read as zero whatever they hold.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = IntHeader::new_checked(buf)?;
        let mut r = Self::empty(h.max_hop());
        r.overflow = h.overflow();
        r.reflected = h.reflected();
        r.next = h.next();
        r.compact = h.compact();
        r.n_hop = h.n_hop();
        for (i, hop) in r.hops.iter_mut().enumerate().take(usize::from(r.n_hop)) {
            *hop = h.hop(i);
        }
        Ok(r)
    }

    /// Length: shim and slots.
    pub const fn buffer_len(&self) -> usize {
        SHIM_LEN + if self.compact { HOP_COMPACT_LEN } else { HOP_LEN } * self.max_hop as usize
    }

    /// Write the header; unused slots are zeroed.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        let max = usize::from(self.max_hop);
        if max == 0 || max > MAX_HOPS {
            return Err(Error::Invalid { field: "int.max_hop", value: max as u64 });
        }
        if self.n_hop > self.max_hop {
            return Err(Error::Invalid { field: "int.n_hop", value: u64::from(self.n_hop) });
        }
        space("int", self.buffer_len(), buf.len())?;
        use field::shim::*;
        buf[N_HOP.byte()] = self.n_hop;
        buf[MAX_HOP.byte()] = self.max_hop;
        buf[OVERFLOW.byte()] = OVERFLOW.place_u8(u8::from(self.overflow))
            | REFLECTED.place_u8(u8::from(self.reflected))
            | COMPACT.place_u8(u8::from(self.compact));
        buf[NEXT.byte()] = self.next;
        for i in 0..max {
            let hop = if i < usize::from(self.n_hop) { self.hops[i] } else { IntHopRepr::default() };
            if self.compact {
                hop.write_compact(&mut buf[SHIM_LEN + HOP_COMPACT_LEN * i..]);
            } else {
                hop.write(&mut buf[SHIM_LEN + HOP_LEN * i..]);
            }
        }
        Ok(())
    }
}

/// The IPv4 header at `l3` of `frame` and the UDP header after it: (IPv4 header length, IPv4
/// total length), checked to lie within the frame.
fn ip_udp(frame: &[u8], l3: usize) -> Result<(usize, usize)> {
    let ip = crate::ipv4::Ipv4Packet::new_checked(frame.get(l3..).unwrap_or_default())?;
    if ip.protocol() != crate::ipv4::protocol::UDP {
        return Err(Error::Unsupported { field: "ipv4.protocol", value: u64::from(ip.protocol()) });
    }
    let (ihl, total) = (ip.header_len(), usize::from(ip.total_len()));
    crate::udp::UdpPacket::new_checked(&frame[l3 + ihl..l3 + total])?;
    Ok((ihl, total))
}

/// Set the IPv4 total length and the UDP length, destination port and checksum (0) of the
/// datagram at `l3` after its payload grew or shrank to `udp_payload` bytes.
fn relabel(frame: &mut [u8], l3: usize, ihl: usize, udp_payload: usize, dst_port: u16) {
    let udp_len = crate::udp::HEADER_LEN + udp_payload;
    let mut ip = crate::ipv4::Ipv4Packet::new_unchecked(&mut frame[l3..]);
    ip.set_total_len((ihl + udp_len) as u16);
    ip.fill_checksum();
    let mut udp = crate::udp::UdpPacket::new_unchecked(&mut frame[l3 + ihl..]);
    udp.set_dst_port(dst_port);
    udp.set_len(udp_len as u16);
    udp.set_checksum(0);
}

/// Put `int` (with `next` = [`NEXT_BTH`]) in front of the BTH of the RoCEv2 packet whose IPv4
/// header is at `l3` of `frame[..len]`: the UDP payload moves up, the destination port becomes
/// 40051 and the lengths grow, so the frame is `len + int.buffer_len()` bytes (returned; the
/// buffer must hold them). The RoCEv2 packet itself, ICRC included, is unchanged inside:
/// [`unwrap`] gives it back byte for byte but for the IPv4 and UDP checksums (which the ICRC
/// masks).
pub fn wrap(frame: &mut [u8], len: usize, l3: usize, int: &IntRepr) -> Result<usize> {
    let (ihl, total) = ip_udp(frame.get(..len).unwrap_or_default(), l3)?;
    let il = int.buffer_len();
    let at = l3 + ihl + crate::udp::HEADER_LEN;
    let end = l3 + total;
    space("int", end + il, frame.len())?;
    frame.copy_within(at..end, at + il);
    IntRepr { next: NEXT_BTH, ..*int }.emit(&mut frame[at..at + il])?;
    relabel(frame, l3, ihl, end - at + il, crate::udp::port::HPCC_INT);
    Ok(end + il)
}

/// Take the INT header out of a packet [`wrap`] made (IPv4 header at `l3`): returns the
/// telemetry and the length of the RoCEv2 frame left in `frame` (UDP port 4791, lengths as
/// sent), whose ICRC can then be checked. Errors: not IPv4/UDP to port 40051, a malformed INT
/// header, or one followed by something other than a BTH.
pub fn unwrap(frame: &mut [u8], l3: usize) -> Result<(IntRepr, usize)> {
    let (ihl, total) = ip_udp(frame, l3)?;
    let at = l3 + ihl + crate::udp::HEADER_LEN;
    let end = l3 + total;
    let dport = crate::udp::field::DST_PORT.get_u16(&frame[l3 + ihl..]);
    if dport != crate::udp::port::HPCC_INT {
        return Err(Error::Unsupported { field: "udp.dst_port", value: u64::from(dport) });
    }
    let int = IntRepr::parse(&frame[at..end])?;
    if int.next != NEXT_BTH {
        return Err(Error::Unsupported { field: "int.next", value: u64::from(int.next) });
    }
    let il = int.buffer_len();
    frame.copy_within(at + il..end, at);
    relabel(frame, l3, ihl, end - at - il, crate::udp::port::ROCE_V2);
    Ok((int, end - il))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_fill_slots_then_overflow() {
        let mut buf = [0u8; SHIM_LEN + 2 * HOP_LEN];
        IntRepr::empty(2).emit(&mut buf).unwrap();
        let mut h = IntHeader::new_checked(&mut buf[..]).unwrap();
        let hop = IntHopRepr::from_snapshot(7, 3, 100_000_000_000, 1500, 5_000_000_123, 1 << 33 | 42);
        assert!(h.push_hop(&hop));
        assert!(h.push_hop(&hop));
        assert!(!h.push_hop(&hop));
        let r = IntRepr::parse(&buf).unwrap();
        assert_eq!(r.n_hop, 2);
        assert!(r.overflow);
        let got = r.recorded()[0];
        assert_eq!(got.rate_bps(), 100_000_000_000);
        assert_eq!(got.qlen_bytes(), 1536);
        assert_eq!(got.ts, (5_000_000_123u64 & 0xffff_ffff) as u32);
        assert_eq!(got.tx_bytes, 42);
    }

    #[test]
    fn deltas_cross_the_wrap() {
        let a = IntHopRepr { ts: u32::MAX - 10, tx_bytes: u32::MAX - 99, ..Default::default() };
        let b = IntHopRepr { ts: 20, tx_bytes: 900, ..Default::default() };
        assert_eq!(b.ts_delta(&a), 31);
        assert_eq!(b.tx_bytes_delta(&a), 1000);
    }

    #[test]
    fn compact_slots_are_eight_bytes_and_wrap_at_their_widths() {
        let mut buf = [0u8; SHIM_LEN + 5 * HOP_COMPACT_LEN];
        let r = IntRepr::empty_compact(5);
        assert_eq!(r.buffer_len(), 44, "the simulator's 42 B and our 2 B of flags and next");
        r.emit(&mut buf).unwrap();
        let mut h = IntHeader::new_checked(&mut buf[..]).unwrap();
        assert!(h.compact());
        let t0 = (1u64 << 24) - 5;
        let a = IntHopRepr::from_snapshot(7, 3, 400_000_000_000, 1500, t0, (1 << 27) - 256);
        assert!(h.push_hop(&a));
        let b = IntHopRepr::from_snapshot(7, 3, 400_000_000_000, 1500, t0 + 20, (1 << 27) + 1024);
        assert!(h.push_hop(&b));
        let r = IntRepr::parse(&buf).unwrap();
        let (ga, gb) = (r.recorded()[0], r.recorded()[1]);
        assert_eq!((ga.rate_bps(), ga.qlen_bytes(), ga.switch_id), (400_000_000_000, 1536, 0));
        assert_eq!(gb.ts_delta(&ga), 20, "across the 24-bit wrap");
        assert_eq!(gb.tx_bytes_delta(&ga), 1280, "across the 128 MiB wrap");
        // A rate not in the table goes as the largest below it.
        let odd = IntHopRepr::from_snapshot(0, 0, 300_000_000_000, 0, 0, 0);
        assert_eq!(COMPACT_RATES[usize::from(odd.rate_code())], 2000);
    }

    #[test]
    fn inconsistent_counts() {
        assert_eq!(IntRepr::parse(&[0, 0, 0, 0]).unwrap_err().field(), "int.max_hop");
        assert_eq!(IntRepr::parse(&[0, 9, 0, 0]).unwrap_err().field(), "int.max_hop");
        let mut b = [0u8; SHIM_LEN + HOP_LEN];
        b[1] = 1;
        b[0] = 2;
        assert_eq!(IntRepr::parse(&b).unwrap_err().field(), "int.n_hop");
        b[0] = 0;
        b[1] = 2; // two slots claimed, one present
        assert_eq!(IntRepr::parse(&b).unwrap_err().field(), "int.max_hop");
    }
}
