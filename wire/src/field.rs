//! Big-endian field access on byte slices.
//!
//! Views check their length once in `new_checked`; after that, these accessors index within
//! bounds. They take fixed offsets so the compiler folds the bounds checks together.

#[inline(always)]
pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline(always)]
pub(crate) fn u24_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]])
}

#[inline(always)]
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline(always)]
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

#[inline(always)]
pub(crate) fn set_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
pub(crate) fn set_u24(b: &mut [u8], at: usize, v: u32) {
    let x = v.to_be_bytes();
    b[at..at + 3].copy_from_slice(&x[1..]);
}

#[inline(always)]
pub(crate) fn set_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
pub(crate) fn set_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

/// Copy `N` bytes starting at `at` into an array.
#[inline(always)]
pub(crate) fn array_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

/// Copy `src` into the start of `dst` (`dst.len() >= src.len()`), without a call into `memcpy`
/// for the short runs packet headers and DTA payloads are: up to 32 bytes are moved with two
/// fixed-size, possibly overlapping, copies. Longer runs use `copy_from_slice`.
#[inline(always)]
pub fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    let dst = &mut dst[..n];
    match n {
        0 => {}
        1..=3 => {
            for (d, s) in dst.iter_mut().zip(src) {
                *d = *s;
            }
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        8..=15 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        16..=32 => {
            dst[..16].copy_from_slice(&src[..16]);
            dst[n - 16..].copy_from_slice(&src[n - 16..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// Zero `dst` without a call into `memset` for short runs (up to 32 bytes: two fixed-size,
/// possibly overlapping, stores), as [`copy_short`] copies.
#[inline(always)]
pub fn zero_short(dst: &mut [u8]) {
    let n = dst.len();
    match n {
        0 => {}
        1..=3 => dst.iter_mut().for_each(|d| *d = 0),
        4..=7 => {
            dst[..4].fill(0);
            dst[n - 4..].fill(0);
        }
        8..=15 => {
            dst[..8].fill(0);
            dst[n - 8..].fill(0);
        }
        16..=32 => {
            dst[..16].fill(0);
            dst[n - 16..].fill(0);
        }
        _ => dst.fill(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_short_zeroes_every_length_and_nothing_else() {
        for n in 0..=80 {
            let mut dst = [0xa5u8; 81];
            zero_short(&mut dst[..n]);
            assert!(dst[..n].iter().all(|&b| b == 0), "length {n}");
            assert_eq!(dst[n], 0xa5, "length {n} wrote past the end");
        }
    }

    #[test]
    fn copy_short_copies_every_length() {
        let src: [u8; 80] = core::array::from_fn(|i| i as u8 + 1);
        for n in 0..=80 {
            let mut dst = [0u8; 81];
            copy_short(&mut dst, &src[..n]);
            assert_eq!(&dst[..n], &src[..n]);
            assert!(dst[n..].iter().all(|&b| b == 0), "length {n} wrote past the end");
        }
    }
}
