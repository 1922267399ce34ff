//! The Internet checksum (RFC 1071) with incremental update (RFC 1624).
//!
//! Used by the IPv4 header and UDP. Sums are kept unfolded in a `u64` so that several pieces
//! (a pseudo-header, a header, a payload) can be added before the one fold at the end.

use core::net::Ipv4Addr;

/// Add `data`, read as big-endian 16-bit words (an odd last byte padded with zero), to `acc`.
///
/// The sum is not folded; pass it to [`finish`] or [`fold`]. Pieces must start at even offsets
/// of the checksummed stream, which holds for every header boundary here.
#[inline]
pub fn accumulate(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rest = chunks.remainder();
    let mut tail = [0u8; 4];
    tail[..rest.len()].copy_from_slice(rest);
    acc + u64::from(u32::from_be_bytes(tail))
}

/// Fold an unfolded sum to 16 bits with end-around carry.
#[inline]
pub fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The checksum field value for an unfolded sum: the one's complement of the folded sum.
#[inline]
pub fn finish(sum: u64) -> u16 {
    !fold(sum)
}

/// The Internet checksum of `data`.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    finish(accumulate(0, data))
}

/// Update `checksum` after a 16-bit word of the covered data changed from `old` to `new`
/// (RFC 1624, eqn. 3: `HC' = ~(~HC + ~m + m')`).
#[inline]
pub fn update_u16(checksum: u16, old: u16, new: u16) -> u16 {
    let sum = u64::from(!checksum) + u64::from(!old) + u64::from(new);
    !fold(sum)
}

/// Update `checksum` after an aligned 32-bit field of the covered data changed.
#[inline]
pub fn update_u32(checksum: u16, old: u32, new: u32) -> u16 {
    let c = update_u16(checksum, (old >> 16) as u16, (new >> 16) as u16);
    update_u16(c, old as u16, new as u16)
}

/// Unfolded sum of the IPv4 pseudo-header used by UDP and TCP.
#[inline]
pub fn ipv4_pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u64 {
    u64::from(src.to_bits()) + u64::from(dst.to_bits()) + u64::from(protocol) + u64::from(length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(accumulate(0, &data)), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(checksum(&[0x12, 0x34, 0x56]), checksum(&[0x12, 0x34, 0x56, 0x00]));
    }

    #[test]
    fn incremental_update_matches_recompute() {
        let mut data = [0x45u8, 0x00, 0x00, 0x54, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01];
        let c0 = checksum(&data);
        let old = u16::from_be_bytes([data[8], data[9]]);
        data[8] -= 1;
        let new = u16::from_be_bytes([data[8], data[9]]);
        let c1 = update_u16(c0, old, new);
        // Both are valid encodings of the same one's-complement value.
        let full = checksum(&data);
        assert!(c1 == full || (c1 == 0xffff && full == 0) || (c1 == 0 && full == 0xffff));
    }
}
