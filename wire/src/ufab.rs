//! µFAB probe and response packets (seed `003`, Appendix G, Figure 22), carried in UDP (port
//! 40050) or after a source-routing header.
//!
//! ```text
//! header (4 bytes): type 4 | n_hop 4 | phi_pair 24
//! per hop (8 bytes, × slots): w 16 | phi_l 16 | tx_l 16 | q_l 12 | c_l 4
//! ```
//!
//! Figure 22 draws φ_{a→b} as 16 bits and its legend says 24; we use 24, which keeps the header
//! word-aligned. The sender allocates one slot per hop of the (source-routed) path and writes its
//! window w^l_{a→b} into each; the switch at hop `n_hop` reads that window, replaces it with the
//! link total W_l, writes Φ_l, tx_l, q_l and C_l, and increments `n_hop`. Units, chosen so that
//! 100G and 400G links fit:
//!
//! | field | unit | range |
//! |---|---|---|
//! | φ_{a→b}, Φ_l | bandwidth tokens (B_u per token is a deployment parameter) | 2^24, 2^16 (saturating) |
//! | w^l_{a→b} / W_l | 256 bytes | 16 MiB |
//! | tx_l | 10 Mb/s | 655 Gb/s |
//! | q_l | 1 KiB | 4 MiB |
//! | C_l | speed class ([`speed_class_bps`]) | 100M … 800G |

use crate::error::{Error, Result, need, space};
use crate::field::set_u16;
use crate::spec::Header;

/// The fields of the header and of one hop record.
pub mod field {
    /// The 4-byte header.
    pub mod header {
        use crate::spec::Field;

        /// Packet type.
        pub const TYPE: Field = Field::new("type", 0, 4);
        /// Hops traversed so far.
        pub const N_HOP: Field = Field::new("n_hop", 4, 4);
        /// φ_{a→b}, the pair's tokens.
        pub const PHI_PAIR: Field = Field::bytes("phi_pair", 1, 3);
    }

    /// One 8-byte hop record.
    pub mod hop {
        use crate::spec::Field;

        /// w^l_{a→b} as sent, W_l as the switch writes it (256 B units).
        pub const WINDOW: Field = Field::bytes("window", 0, 2);
        /// Φ_l (tokens).
        pub const PHI_L: Field = Field::bytes("phi_l", 2, 2);
        /// tx_l (10 Mb/s units).
        pub const TX_L: Field = Field::bytes("tx_l", 4, 2);
        /// q_l (1 KiB units).
        pub const Q_L: Field = Field::new("q_l", 48, 12);
        /// C_l speed class.
        pub const C_L: Field = Field::new("c_l", 60, 4);
    }
}

/// The header.
pub const HEADER: Header = Header {
    name: "ufab",
    fields: &[field::header::TYPE, field::header::N_HOP, field::header::PHI_PAIR],
    len: HEADER_LEN,
};

/// One hop record (a stack of them follows the header).
pub const HOP: Header = Header {
    name: "ufab_hop",
    fields: &[field::hop::WINDOW, field::hop::PHI_L, field::hop::TX_L, field::hop::Q_L, field::hop::C_L],
    len: HOP_LEN,
};

/// Header length.
pub const HEADER_LEN: usize = 4;
/// Length of one hop record.
pub const HOP_LEN: usize = 8;
/// Most hop slots (`n_hop` is 4 bits).
pub const MAX_HOPS: usize = 15;
/// Unit of windows, in bytes.
pub const WINDOW_UNIT_BYTES: u64 = 256;
/// Unit of tx_l, in bits per second.
pub const TX_UNIT_BPS: u64 = 10_000_000;
/// Unit of q_l, in bytes.
pub const QLEN_UNIT_BYTES: u64 = 1024;

/// Speed classes of the C_l field, in bits per second; the index is the code, 0 = unknown.
/// Codes 10–12 (100, 200 and 500 Mb/s: shaped ports, lab links) came after the others, so the
/// codes are not in speed order.
const SPEED_CLASSES: [u64; 13] = [
    0,
    1_000_000_000,
    10_000_000_000,
    25_000_000_000,
    40_000_000_000,
    50_000_000_000,
    100_000_000_000,
    200_000_000_000,
    400_000_000_000,
    800_000_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
];

/// The link speed a C_l code stands for; `None` for 0 (unknown) and reserved codes.
pub const fn speed_class_bps(code: u8) -> Option<u64> {
    if code == 0 || code as usize >= SPEED_CLASSES.len() { None } else { Some(SPEED_CLASSES[code as usize]) }
}

/// The C_l code of a link speed: the largest class not above it (0 below 100 Mb/s).
pub fn speed_class_of(bps: u64) -> u8 {
    (1..SPEED_CLASSES.len())
        .filter(|&i| SPEED_CLASSES[i] <= bps)
        .max_by_key(|&i| SPEED_CLASSES[i])
        .unwrap_or(0) as u8
}

/// Packet type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum UfabKind {
    /// Probe from the sender's µFAB-E, collecting each hop's state.
    Probe = 1,
    /// The receiver's response carrying the probe's telemetry back.
    Response = 2,
    /// The pair finished (idle or migrated): switches remove it from Φ_l and W_l.
    Finish = 3,
    /// Failure notification.
    FailureResponse = 4,
    /// A look (not in the paper's App. G): a probe that reads each link and changes nothing.
    /// Joining and migrating test candidates against Φ_l *without* the pair (§3.5's
    /// C_l ≥ (Φ_l + φ)·B_u); a switch answers a look with Φ_l and W_l less the pair's own
    /// record on that link, if it has one, and leaves its state (filter, records, sums) as it
    /// was. A look the pair sent as a probe of φ = 0 would zero its own record on every link it
    /// shares with its current path until its next probe, and other pairs would see room there
    /// that is not.
    Look = 5,
}

impl UfabKind {
    /// Decode the 4-bit type; other values are [`Error::Unsupported`].
    pub const fn from_u8(v: u8) -> Result<Self> {
        Ok(match v {
            1 => Self::Probe,
            2 => Self::Response,
            3 => Self::Finish,
            4 => Self::FailureResponse,
            5 => Self::Look,
            _ => {
                return Err(Error::Unsupported { field: "ufab.type", value: v as u64 });
            }
        })
    }
}

view!(
    /// A read/write view of a µFAB probe or response.
    UfabPacket
);

impl<T: AsRef<[u8]>> UfabPacket<T> {
    /// Check the header fits and `n_hop` slots lie within the buffer.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("ufab", HEADER_LEN, b.len())?;
        need("ufab.n_hop", HEADER_LEN + HOP_LEN * usize::from(field::header::N_HOP.get_u8(b)), b.len())
    }

    /// Raw 4-bit type.
    pub fn kind_bits(&self) -> u8 {
        field::header::TYPE.get_u8(self.buffer.as_ref())
    }

    /// Hops traversed so far.
    pub fn n_hop(&self) -> u8 {
        field::header::N_HOP.get_u8(self.buffer.as_ref())
    }

    /// φ_{a→b}: the pair's tokens (sender's in a probe, receiver's in a response).
    pub fn phi_pair(&self) -> u32 {
        field::header::PHI_PAIR.get_u24(self.buffer.as_ref())
    }

    /// Hop slots the buffer holds (at most 15).
    pub fn slots(&self) -> usize {
        ((self.buffer.as_ref().len() - HEADER_LEN) / HOP_LEN).min(MAX_HOPS)
    }

    /// Hop record `i` (`i < slots()`).
    pub fn hop(&self, i: usize) -> UfabHopRepr {
        UfabHopRepr::read(&self.buffer.as_ref()[HEADER_LEN + HOP_LEN * i..])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UfabPacket<T> {
    /// Set `n_hop`.
    pub fn set_n_hop(&mut self, n: u8) {
        field::header::N_HOP.set_u8(self.buffer.as_mut(), n);
    }

    /// Overwrite hop record `i` (`i < slots()`).
    pub fn set_hop(&mut self, i: usize, hop: &UfabHopRepr) {
        hop.write(&mut self.buffer.as_mut()[HEADER_LEN + HOP_LEN * i..]);
    }
}

/// One hop's record, in wire units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct UfabHopRepr {
    /// w^l_{a→b} as sent (the pair's window on this link), replaced by W_l (the link's total
    /// window) at the switch; units of 256 B.
    pub window: u16,
    /// Φ_l: total tokens of the active pairs on the link (seed `003` §3.3).
    pub phi_l: u16,
    /// tx_l: the link's TX rate, units of 10 Mb/s.
    pub tx_l: u16,
    /// q_l: the egress queue, units of 1 KiB, 12 bits.
    pub q_l: u16,
    /// C_l: the egress port's speed class, 4 bits.
    pub c_l: u8,
}

impl UfabHopRepr {
    fn read(b: &[u8]) -> Self {
        use field::hop::*;
        Self {
            window: WINDOW.get_u16(b),
            phi_l: PHI_L.get_u16(b),
            tx_l: TX_L.get_u16(b),
            q_l: Q_L.get_u16(b),
            c_l: C_L.get_u8(b),
        }
    }

    fn write(&self, b: &mut [u8]) {
        use field::hop::*;
        set_u16(b, WINDOW.byte(), self.window);
        set_u16(b, PHI_L.byte(), self.phi_l);
        set_u16(b, TX_L.byte(), self.tx_l);
        Q_L.set_u16(b, self.q_l);
        C_L.set_u8(b, self.c_l);
    }

    /// Window field in bytes.
    pub const fn window_bytes(&self) -> u64 {
        self.window as u64 * WINDOW_UNIT_BYTES
    }

    /// tx_l in bits per second.
    pub const fn tx_bps(&self) -> u64 {
        self.tx_l as u64 * TX_UNIT_BPS
    }

    /// q_l in bytes.
    pub const fn q_bytes(&self) -> u64 {
        self.q_l as u64 * QLEN_UNIT_BYTES
    }

    /// Encode a window in bytes (rounded up, saturating).
    pub fn encode_window(bytes: u64) -> u16 {
        bytes.div_ceil(WINDOW_UNIT_BYTES).min(u64::from(u16::MAX)) as u16
    }

    /// Encode a TX rate (saturating).
    pub fn encode_tx(bps: u64) -> u16 {
        (bps / TX_UNIT_BPS).min(u64::from(u16::MAX)) as u16
    }

    /// Encode a queue length (truncated, as tx_l is; saturating at 12 bits). Not rounded up:
    /// Eqn (3) reads q_l as load, and on a busy link one frame is nearly always queued behind
    /// a probe — rounded up, that frame read as 2 KiB and every window on the link shrank
    /// until tx_l·T settled about 1 KiB short of C_l·T (§5.2: 5 Gb/s pairs held at 4.6–4.9).
    pub fn encode_q(bytes: u64) -> u16 {
        (bytes / QLEN_UNIT_BYTES).min(0x0fff) as u16
    }
}

/// A parsed probe, response, finish or failure packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UfabRepr {
    /// Type.
    pub kind: UfabKind,
    /// Hops traversed.
    pub n_hop: u8,
    /// φ_{a→b}, 24 bits.
    pub phi_pair: u32,
    /// Hop slots carried (`n_hop <= slots <= 15`).
    pub slots: u8,
    /// The slots; entries at `slots` and beyond are zero.
    pub hops: [UfabHopRepr; MAX_HOPS],
}

impl UfabRepr {
    /// Parse a packet; every whole 8-byte record after the header (up to 15) is a slot.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let p = UfabPacket::new_checked(buf)?;
        let kind = UfabKind::from_u8(p.kind_bits())?;
        let slots = p.slots();
        let mut hops = [UfabHopRepr::default(); MAX_HOPS];
        for (i, h) in hops.iter_mut().enumerate().take(slots) {
            *h = p.hop(i);
        }
        Ok(Self { kind, n_hop: p.n_hop(), phi_pair: p.phi_pair(), slots: slots as u8, hops })
    }

    /// Length: header and slots.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + HOP_LEN * self.slots as usize
    }

    /// Write the packet.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        if usize::from(self.slots) > MAX_HOPS {
            return Err(Error::Invalid { field: "ufab.slots", value: u64::from(self.slots) });
        }
        if self.n_hop > self.slots {
            return Err(Error::Invalid { field: "ufab.n_hop", value: u64::from(self.n_hop) });
        }
        space("ufab", self.buffer_len(), buf.len())?;
        use field::header::*;
        buf[TYPE.byte()] = TYPE.place_u8(self.kind as u8) | N_HOP.place_u8(self.n_hop);
        PHI_PAIR.set_u24(buf, self.phi_pair);
        for (i, h) in self.hops.iter().enumerate().take(usize::from(self.slots)) {
            h.write(&mut buf[HEADER_LEN + HOP_LEN * i..]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_bit_layout() {
        let h = UfabHopRepr { window: 0x1234, phi_l: 0x5678, tx_l: 0x9abc, q_l: 0xdef, c_l: 6 };
        let mut b = [0u8; 8];
        h.write(&mut b);
        assert_eq!(b, [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf6]);
        assert_eq!(UfabHopRepr::read(&b), h);
    }

    /// q_l is truncated to 1 KiB units: one ~1.1 KB frame queued reads 1 KiB, not 2; under a
    /// KiB reads 0; the field saturates at 12 bits.
    #[test]
    fn queue_units_truncate() {
        assert_eq!(UfabHopRepr::encode_q(0), 0);
        assert_eq!(UfabHopRepr::encode_q(1023), 0);
        assert_eq!(UfabHopRepr::encode_q(1078), 1);
        assert_eq!(UfabHopRepr::encode_q(2 * 1078), 2);
        assert_eq!(UfabHopRepr::encode_q(u64::MAX), 0x0fff);
    }

    #[test]
    fn speed_classes() {
        assert_eq!(speed_class_of(100_000_000_000), 6);
        assert_eq!(speed_class_of(400_000_000_000), 8);
        assert_eq!(speed_class_of(30_000_000_000), 3);
        assert_eq!(speed_class_of(1), 0);
        assert_eq!(speed_class_of(99_999_999), 0);
        assert_eq!(speed_class_of(200_000_000), 11);
        assert_eq!(speed_class_of(999_999_999), 12);
        assert_eq!(speed_class_of(1_000_000_000), 1);
        assert_eq!(speed_class_bps(6), Some(100_000_000_000));
        assert_eq!(speed_class_bps(11), Some(200_000_000));
        assert_eq!(speed_class_bps(13), None);
        // Every code is its class's own.
        for code in 1..13u8 {
            assert_eq!(speed_class_of(speed_class_bps(code).unwrap()), code);
        }
        // 400G at full rate fits in tx_l.
        assert!(UfabHopRepr::encode_tx(400_000_000_000) < u16::MAX);
    }

    #[test]
    fn n_hop_past_the_buffer() {
        let b = [(1 << 4) | 3, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            UfabRepr::parse(&b).unwrap_err(),
            Error::Truncated { field: "ufab.n_hop", need: 28, have: 12 }
        );
        assert_eq!(UfabRepr::parse(&[0x51, 0, 0, 0]).unwrap_err().field(), "ufab.n_hop");
        assert_eq!(UfabRepr::parse(&[0x60, 0, 0, 0]).unwrap_err().field(), "ufab.type");
        assert_eq!(UfabRepr::parse(&[0x50, 0, 0, 0]).unwrap().kind, UfabKind::Look);
    }
}
