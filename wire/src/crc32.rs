//! CRC-32/ISO-HDLC (the zlib polynomial, reflected 0xEDB88320) tables, shared by the RoCEv2
//! ICRC and DTA's key hashes.
//!
//! Hand-written rather than taken from crc32fast: both users feed the register a few bytes at a
//! time at fixed places (masked header fields, a 4-byte key and a copy number), where one table
//! step per byte — or one slice-by-4 step, whose lookups are independent — beats any per-call
//! setup.

/// Eight bit steps of the reflected CRC-32 register: one byte's worth.
pub(crate) const fn shift8(crc: u32) -> u32 {
    shift8_with(crc, 0xedb8_8320)
}

/// Eight bit steps of a reflected CRC-32 register whose polynomial, reflected, is `r`.
const fn shift8_with(mut crc: u32, r: u32) -> u32 {
    let mut k = 0;
    while k < 8 {
        crc = if crc & 1 != 0 { (crc >> 1) ^ r } else { crc >> 1 };
        k += 1;
    }
    crc
}

/// Slice-by-8 tables: `SLICE8[k][v]` is the register after the byte `v` followed by `k` zero
/// bytes, from a zero register. `SLICE8[0]` is the classic byte table. Built at compile time
/// (8 KiB).
pub(crate) static SLICE8: [[u32; 256]; 8] = slices(0x04c1_1db7);

/// Slice-by-`N` tables of the reflected CRC-32 with polynomial `poly` (normal form): `t[k][v]`
/// is the register after the byte `v` followed by `k` zero bytes, from a zero register.
pub(crate) const fn slices<const N: usize>(poly: u32) -> [[u32; 256]; N] {
    let r = reflect(poly);
    let mut t = [[0u32; 256]; N];
    let mut v = 0;
    while v < 256 {
        t[0][v] = shift8_with(v as u32, r);
        v += 1;
    }
    let mut k = 1;
    while k < N {
        let mut v = 0;
        while v < 256 {
            let prev = t[k - 1][v];
            t[k][v] = t[0][(prev & 0xff) as usize] ^ (prev >> 8);
            v += 1;
        }
        k += 1;
    }
    t
}

/// One byte into the register.
#[inline(always)]
pub(crate) fn step(crc: u32, byte: u8) -> u32 {
    SLICE8[0][((crc ^ u32::from(byte)) & 0xff) as usize] ^ (crc >> 8)
}

/// Four bytes (`word`'s little-endian bytes, in that order) into the register: four
/// independent lookups rather than a chain of four.
#[inline(always)]
pub(crate) fn step4(crc: u32, word: u32) -> u32 {
    let x = crc ^ word;
    SLICE8[3][(x & 0xff) as usize]
        ^ SLICE8[2][((x >> 8) & 0xff) as usize]
        ^ SLICE8[1][((x >> 16) & 0xff) as usize]
        ^ SLICE8[0][(x >> 24) as usize]
}

/// Reflect a 32-bit polynomial given in normal (MSB-first) form.
pub(crate) const fn reflect(mut poly: u32) -> u32 {
    let mut r = 0;
    let mut i = 0;
    while i < 32 {
        r = (r << 1) | (poly & 1);
        poly >>= 1;
        i += 1;
    }
    r
}

/// Four bytes (`word`'s little-endian bytes) into a register of the CRC whose slice-by-4 tables
/// are `t`.
#[inline(always)]
pub(crate) fn step4_with(t: &[[u32; 256]; 4], crc: u32, word: u32) -> u32 {
    let x = crc ^ word;
    t[3][(x & 0xff) as usize]
        ^ t[2][((x >> 8) & 0xff) as usize]
        ^ t[1][((x >> 16) & 0xff) as usize]
        ^ t[0][(x >> 24) as usize]
}

/// One byte into a register of the CRC whose tables are `t`.
#[inline(always)]
pub(crate) fn step_with(t: &[[u32; 256]; 4], crc: u32, byte: u8) -> u32 {
    t[0][((crc ^ u32::from(byte)) & 0xff) as usize] ^ (crc >> 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_by_4_is_four_byte_steps() {
        let mut x = 0x1234_5678u32;
        for _ in 0..1000 {
            x = x.wrapping_mul(0x9e37_79b1).rotate_left(7);
            let crc = x.rotate_left(13) ^ 0xdead_beef;
            let bytewise = x.to_le_bytes().iter().fold(crc, |c, &b| step(c, b));
            assert_eq!(step4(crc, x), bytewise);
        }
        // CRC-32 of "1234" is 0x9be3e0a3.
        assert_eq!(!step4(!0, u32::from_le_bytes(*b"1234")), 0x9be3_e0a3);
    }

    #[test]
    fn generic_tables_are_the_named_crcs() {
        // The zlib polynomial through the generic builder is the table above.
        let t = slices::<4>(0x04c1_1db7);
        assert_eq!(t[0], SLICE8[0]);
        let crc = |t: &[[u32; 256]; 4], data: &[u8]| !data.iter().fold(!0, |c, &b| step_with(t, c, b));
        // Check values ("123456789") of CRC-32C, CRC-32Q-reflected variants are not standard, so
        // CRC-32C (Castagnoli, reflected) is the one cross-check besides zlib's.
        assert_eq!(crc(&slices::<4>(0x1edc_6f41), b"123456789"), 0xe306_9283);
        assert_eq!(crc(&t, b"123456789"), 0xcbf4_3926);
        let w = u32::from_le_bytes(*b"1234");
        assert_eq!(!step4_with(&t, !0, w), crc(&t, b"1234"));
        assert_eq!(reflect(0x04c1_1db7), 0xedb8_8320);
    }
}
