//! CRC hash units, as a P4 target offers them.

use crc::{Crc, Table};

use super::{Decl, DeclKind, FieldRef, Resources};

// Slice-by-16 tables for the 32-bit CRCs the fast paths take per packet or per pair (DAIET's
// 16-byte keys: one step where a byte-wise table takes sixteen).
static CRC32_ISO_HDLC: Crc<u32, Table<16>> = Crc::<u32, Table<16>>::new(&crc::CRC_32_ISO_HDLC);
static CRC32C: Crc<u32, Table<16>> = Crc::<u32, Table<16>>::new(&crc::CRC_32_ISCSI);
static CRC16_ARC: Crc<u16> = Crc::<u16>::new(&crc::CRC_16_ARC);
static CRC16_XMODEM: Crc<u16> = Crc::<u16>::new(&crc::CRC_16_XMODEM);
static CRC16_IBM_3740: Crc<u16> = Crc::<u16>::new(&crc::CRC_16_IBM_3740);

/// Hash algorithms.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlgo {
    /// CRC-32/ISO-HDLC (zlib's CRC-32; Tofino's `HashAlgorithm_t.CRC32`).
    Crc32IsoHdlc,
    /// CRC-32C (Castagnoli).
    Crc32c,
    /// CRC-16/ARC (poly 0x8005, reflected; Tofino's and BMv2's `CRC16`).
    Crc16Arc,
    /// CRC-16/XMODEM (poly 0x1021, not reflected).
    Crc16Xmodem,
    /// CRC-16/IBM-3740, also called CRC-16/CCITT-FALSE (poly 0x1021, init 0xffff).
    Crc16Ccitt,
    /// The first four bytes, big-endian (P4's identity hash).
    Identity,
    /// A 32-bit CRC of another polynomial (normal form), reflected, init and xor-out all ones:
    /// what Tofino's `CRCPolynomial` extern declares (the DTA translator's per-copy slot hashes).
    Crc32Poly(u32),
}

impl std::fmt::Debug for HashAlgo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Crc32IsoHdlc => f.write_str("Crc32IsoHdlc"),
            Self::Crc32c => f.write_str("Crc32c"),
            Self::Crc16Arc => f.write_str("Crc16Arc"),
            Self::Crc16Xmodem => f.write_str("Crc16Xmodem"),
            Self::Crc16Ccitt => f.write_str("Crc16Ccitt"),
            Self::Identity => f.write_str("Identity"),
            Self::Crc32Poly(p) => write!(f, "Crc32Poly({p:#010x})"),
        }
    }
}

impl HashAlgo {
    /// Parse a configuration name.
    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "crc32" | "crc32_iso_hdlc" => Self::Crc32IsoHdlc,
            "crc32c" => Self::Crc32c,
            "crc16" | "crc16_arc" => Self::Crc16Arc,
            "crc16_xmodem" => Self::Crc16Xmodem,
            "crc16_ccitt" => Self::Crc16Ccitt,
            "identity" => Self::Identity,
            _ => return None,
        })
    }

    /// Its parameters, as a P4 target's CRC polynomial declaration needs them.
    pub fn polynomial(self) -> String {
        match self {
            Self::Crc32IsoHdlc => "poly 0x04c11db7, init 0xffffffff, reflected, xorout 0xffffffff".into(),
            Self::Crc32c => "poly 0x1edc6f41, init 0xffffffff, reflected, xorout 0xffffffff".into(),
            Self::Crc16Arc => "poly 0x8005, init 0x0000, reflected, xorout 0x0000".into(),
            Self::Crc16Xmodem => "poly 0x1021, init 0x0000, not reflected, xorout 0x0000".into(),
            Self::Crc16Ccitt => "poly 0x1021, init 0xffff, not reflected, xorout 0x0000".into(),
            Self::Identity => "identity".into(),
            Self::Crc32Poly(p) => format!("poly {p:#010x}, init 0xffffffff, reflected, xorout 0xffffffff"),
        }
    }

    /// The hash of `data`.
    #[inline]
    pub fn hash(self, data: &[u8]) -> u32 {
        match self {
            Self::Crc32IsoHdlc => CRC32_ISO_HDLC.checksum(data),
            Self::Crc32c => CRC32C.checksum(data),
            Self::Crc16Arc => u32::from(CRC16_ARC.checksum(data)),
            Self::Crc16Xmodem => u32::from(CRC16_XMODEM.checksum(data)),
            Self::Crc16Ccitt => u32::from(CRC16_IBM_3740.checksum(data)),
            Self::Identity => {
                let mut b = [0u8; 4];
                let n = data.len().min(4);
                b[..n].copy_from_slice(&data[..n]);
                u32::from_be_bytes(b)
            }
            Self::Crc32Poly(p) => {
                // Bitwise: a declaration's reference value, not a per-packet path (the
                // translator's fast path uses wire's tables for the same polynomials).
                let r = p.reverse_bits();
                let mut crc = !0u32;
                for &b in data {
                    crc ^= u32::from(b);
                    for _ in 0..8 {
                        crc = if crc & 1 != 0 { (crc >> 1) ^ r } else { crc >> 1 };
                    }
                }
                !crc
            }
        }
    }
}

/// A hash unit: an algorithm and an output width.
#[derive(Debug, Clone, Copy)]
pub struct HashUnit {
    algo: HashAlgo,
    mask: u32,
}

impl HashUnit {
    /// Declare a hash unit over `inputs` (concatenated) producing `bits`-wide outputs (1..=32).
    pub fn new(
        res: &mut Resources,
        name: &'static str,
        algo: HashAlgo,
        bits: u32,
        inputs: &[FieldRef],
    ) -> Self {
        let bits = bits.clamp(1, 32);
        res.declare(Decl {
            name,
            size: 1,
            kind: DeclKind::Hash { algo, width: bits as u16, inputs: inputs.to_vec() },
            bytes: 0,
            detail: String::new(),
        });
        Self { algo, mask: if bits == 32 { u32::MAX } else { (1 << bits) - 1 } }
    }

    /// The hash of `data`, truncated to the unit's width.
    #[inline]
    pub fn hash(&self, data: &[u8]) -> u32 {
        self.algo.hash(data) & self.mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        // The catalogue "check" value of each algorithm: the hash of "123456789".
        let d = b"123456789";
        assert_eq!(HashAlgo::Crc32IsoHdlc.hash(d), 0xcbf4_3926);
        assert_eq!(HashAlgo::Crc32c.hash(d), 0xe306_9283);
        assert_eq!(HashAlgo::Crc32Poly(0x04c1_1db7).hash(d), 0xcbf4_3926);
        assert_eq!(HashAlgo::Crc32Poly(0x1edc_6f41).hash(d), 0xe306_9283);
        // The DTA translator's per-copy units agree with wire's tables.
        for (n, &p) in wire::dta::COPY_POLYNOMIALS.iter().enumerate() {
            let key = 0x1234_5678u32;
            let want = wire::dta::keywrite_slot_hash(key, n as u8, wire::dta::KeyHashMode::Independent);
            assert_eq!(HashAlgo::Crc32Poly(p).hash(&key.to_le_bytes()), want, "copy {n}");
        }
        assert_eq!(HashAlgo::Crc16Arc.hash(d), 0xbb3d);
        assert_eq!(HashAlgo::Crc16Xmodem.hash(d), 0x31c3);
        assert_eq!(HashAlgo::Crc16Ccitt.hash(d), 0x29b1);
        assert_eq!(HashAlgo::Identity.hash(&[1, 2]), 0x0102_0000);
        let mut r = Resources::new();
        let h = HashUnit::new(&mut r, "ecmp", HashAlgo::Crc16Arc, 4, &[]);
        assert!(h.hash(d) < 16);
        // The DTA slot hash is this unit's CRC-32.
        assert_eq!(HashAlgo::Crc32IsoHdlc.hash(&[1, 0, 0, 0, 0]), 0xfb42_dead);
    }
}
