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
pub fn fold(sum: u64) -> u16 {
    // Branch-free: after 64→33 bits, three 16-bit end-around folds always reach 16 bits
    // (< 2^33 → < 2^18 → ≤ 0x10002 → ≤ 0xffff).
    let s = (sum & 0xffff_ffff) + (sum >> 32);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    let s = (s & 0xffff) + (s >> 16);
    s as u16
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
    fn fold_matches_repeated_end_around_carry() {
        let slow = |mut s: u64| {
            while s > 0xffff {
                s = (s & 0xffff) + (s >> 16);
            }
            s as u16
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let edges = [0, 0xffff, 0x1_0000, 0x1_fffe, 0xffff_ffff, 0x1_0000_0000, 0x1_ffff_fffe, u64::MAX];
        for v in edges.into_iter().chain((0..10_000).map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x >> (x % 48)
        })) {
            assert_eq!(fold(v), slow(v), "{v:#x}");
        }
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
