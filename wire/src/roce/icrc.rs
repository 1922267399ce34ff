//! The RoCEv2 invariant CRC (IBTA Annex A17.4.1).
//!
//! CRC-32 (the zlib / ISO-HDLC polynomial) over: eight `0xff` bytes standing for the masked
//! LRH, the IPv4 header with TOS, TTL and header checksum set to all-ones, the UDP header with
//! its checksum set to all-ones, the BTH with its FECN/BECN/reserved byte set to all-ones, then
//! the rest of the packet up to the ICRC. The result is stored least-significant byte first.
//!
//! The masked fields are fed to the CRC as constants while the packet itself is read in place:
//! nothing is copied. Debian's `python3-scapy` (`scapy.contrib.roce.BTH.compute_icrc`) computes
//! the same value; a test cross-checks the two.

use crate::error::{Error, Result, need};
use crate::ipv4::{Ipv4Packet, protocol};
use crate::udp;

use super::{BthRepr, ICRC_LEN};
use crate::crc32::{SLICE8, shift8};

/// The register after `data` from `init`, bit by bit (no final XOR): for constants and tests.
const fn register_bitwise(init: u32, data: &[u8]) -> u32 {
    let mut crc = init;
    let mut i = 0;
    while i < data.len() {
        crc = shift8(crc ^ data[i] as u32);
        i += 1;
    }
    crc
}

/// Bitwise CRC-32/ISO-HDLC, for the one constant below.
const fn crc32_bitwise(data: &[u8]) -> u32 {
    !register_bitwise(!0, data)
}

/// The CRC after the eight `0xff` bytes of the masked LRH.
const MASKED_LRH_CRC: u32 = crc32_bitwise(&[0xff; 8]);

/// The register after the 8 bytes of `x` (little-endian) from a zero register.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn register_of_bytes8(x: u64) -> u32 {
    let b = x.to_le_bytes();
    let mut r = 0;
    let mut i = 0;
    while i < 8 {
        r ^= SLICE8[7 - i][b[i] as usize];
        i += 1;
    }
    r
}

/// The register after the 16 bytes of `x` (little-endian) from a zero register, bit by bit:
/// the reference the folding path's reduction is tested against.
#[cfg(test)]
fn register_of_block(x: u128) -> u32 {
    register_bitwise(0, &x.to_le_bytes())
}

/// ICRC over an IPv4 packet of exactly `ip.len()` bytes whose header is `ihl` bytes long.
/// The caller guarantees `ip.len() >= ihl + 8 + 12 + 4`.
#[inline]
pub(crate) fn compute_unchecked(ip: &[u8], ihl: usize) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(crc) = clmul::icrc(ip, ihl) {
        return crc;
    }
    portable(ip, ihl)
}

/// The ICRC fed to a table-driven CRC in pieces, the masked fields as constants. Any IHL, any
/// length, any CPU.
fn portable(ip: &[u8], ihl: usize) -> u32 {
    let bth = ihl + udp::HEADER_LEN;
    let end = ip.len() - ICRC_LEN;
    let mut h = crc32fast::Hasher::new_with_initial(MASKED_LRH_CRC);
    h.update(&ip[0..1]); // version, IHL
    h.update(&[0xff]); // TOS (DSCP, ECN)
    h.update(&ip[2..8]); // total length, identification, flags, fragment offset
    h.update(&[0xff]); // TTL
    h.update(&ip[9..10]); // protocol
    h.update(&[0xff, 0xff]); // header checksum
    h.update(&ip[12..ihl + 6]); // addresses, options; UDP ports and length
    h.update(&[0xff, 0xff]); // UDP checksum
    h.update(&ip[bth..bth + 4]); // BTH opcode, flags, P_Key
    h.update(&[0xff]); // FECN, BECN, resv6
    h.update(&ip[bth + 5..end]); // rest of BTH, extension headers, payload, pad
    h.finalize()
}

/// Carry-less-multiply folding (PCLMULQDQ) for the common case: a 20-byte IPv4 header and a
/// length that is a multiple of four, as every RoCEv2 packet's is.
///
/// Why by hand: crc32fast only uses PCLMULQDQ for inputs of 128 bytes and more and falls back to
/// a byte-at-a-time table for the short, masked pieces of a RoCEv2 header, which costs several
/// times the rest of building the packet; crc-fast has a high fixed cost per call and no way to
/// mask fields in place. This is the audited hot spot of the crate.
///
/// The trick that makes masking free and needs no tail handling: with the CRC register at zero,
/// leading zero bytes change nothing, and XORing the initial register `!0` into the first four
/// `0xff` bytes of the masked LRH turns them into zeros. So the ICRC input `ff×8 ‖ S` (S the IP
/// packet up to the ICRC) has the same CRC as the virtual stream `0^z ‖ ff×4 ‖ S` started from a
/// zero register, and `z` can be chosen so that the stream is whole 16-byte blocks ending exactly
/// at the end of S. Each block is one unaligned load from the packet ORed with a constant mask
/// (the masked header fields, and the `ff×4` in block 0); blocks are folded with the reflected
/// CRC-32 constants of Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"
/// (also used by Linux's crc32-pclmul and zlib); the last 128 bits are reduced with one more
/// multiply and an 8-byte table step (see `finish`).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
pub(crate) mod clmul {
    use core::arch::x86_64::{
        __cpuid, __m128i, _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_loadu_si128, _mm_or_si128,
        _mm_set_epi64x, _mm_setzero_si128, _mm_slli_si128, _mm_srli_si128, _mm_xor_si128,
    };
    use core::sync::atomic::{AtomicU8, Ordering};

    /// x^(128+32) and x^(128-32) mod P, bit-reflected: fold one 128-bit block into the next.
    const K3: u64 = 0x1_7519_97d0;
    const K4: u64 = 0x0_ccaa_009e;

    /// Offsets, in a 20-byte IPv4 header followed by UDP and BTH, of the bytes the ICRC sets to
    /// all-ones: TOS, TTL, header checksum (2), UDP checksum (2), BTH FECN/BECN/resv6.
    const MASKED: [usize; 7] = [1, 8, 10, 11, 26, 27, 32];

    /// Per `z / 4`, the masks of blocks 0..4 of `0^z ‖ ff×4 ‖ S` (later blocks have none).
    const MASKS: [[u128; 4]; 4] = masks();

    const fn masks() -> [[u128; 4]; 4] {
        let mut m = [[0u128; 4]; 4];
        let mut zi = 0;
        while zi < 4 {
            let z = zi * 4;
            let mut i = 0;
            while i < 4 + MASKED.len() {
                // The four 0xff bytes at z..z+4, then the masked header bytes shifted by z+4.
                let pos = if i < 4 { z + i } else { MASKED[i - 4] + z + 4 };
                m[zi][pos / 16] |= 0xffu128 << (8 * (pos % 16));
                i += 1;
            }
            zi += 1;
        }
        m
    }

    /// Whether this CPU has PCLMULQDQ (CPUID.1:ECX bit 1), asked once.
    pub(crate) fn available() -> bool {
        static STATE: AtomicU8 = AtomicU8::new(0);
        match STATE.load(Ordering::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                let ecx = __cpuid(1).ecx;
                let ok = ecx & (1 << 1) != 0;
                STATE.store(if ok { 2 } else { 1 }, Ordering::Relaxed);
                ok
            }
        }
    }

    /// The shape of the virtual stream for an IP packet of `len` bytes (ICRC included): the
    /// number of leading zero bytes `z` and of 16-byte blocks. `len` is a multiple of 4, >= 44.
    #[inline(always)]
    pub(crate) const fn shape(len: usize) -> (usize, usize) {
        let l = len - super::ICRC_LEN;
        let z = (16 - (4 + l) % 16) % 16;
        (z, (z + 4 + l) / 16)
    }

    /// Whether the folding path applies: a 20-byte IPv4 header, a length that is a multiple of
    /// 4 and at least 44, and a CPU with PCLMULQDQ.
    #[inline(always)]
    pub(crate) fn applies(ihl: usize, len: usize) -> bool {
        ihl == 20 && len >= 44 && len.is_multiple_of(4) && available()
    }

    /// The ICRC by folding, when [`applies`] holds.
    #[inline]
    pub(super) fn icrc(ip: &[u8], ihl: usize) -> Option<u32> {
        // SAFETY: `applies` confirmed PCLMULQDQ and the length contract of `icrc_whole`.
        applies(ihl, ip.len()).then(|| unsafe { icrc_whole(ip) })
    }

    /// The folded state after the first `blocks` blocks of the virtual stream of a packet of
    /// `ip_len` bytes, folded once more so that block `blocks` can be XORed into it. Only the
    /// first `max(16, 16 * blocks - z - 4)` bytes of the packet are read, from `ip`.
    ///
    /// This is what a template precomputes for the bytes that never change.
    pub(crate) fn prefix_state(ip: &[u8], ip_len: usize, blocks: usize) -> Option<u128> {
        if !applies(20, ip_len) {
            return None;
        }
        let (z, total) = shape(ip_len);
        if blocks == 0 || blocks >= total || ip.len() < 16 || ip.len() + z + 4 < 16 * blocks {
            return None;
        }
        // SAFETY: PCLMULQDQ is available (`applies`); block 0 reads ip[0..16] and block i >= 1
        // reads ip[16i - z - 4..16i - z + 12], all within the length checked above.
        unsafe { Some(to_u128(fold(fold_head(ip.as_ptr(), z, blocks)))) }
    }

    /// The ICRC of `ip`, every block folded.
    ///
    /// # Safety
    /// [`applies`] must hold for `ip.len()`.
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn icrc_whole(ip: &[u8]) -> u32 {
        let (z, total) = shape(ip.len());
        // SAFETY: block 0 reads S[0..16] (S, the packet without its ICRC, is at least 40
        // bytes); block i >= 1 reads S[16i - z - 4..16i - z + 12], and the last ends at
        // 16(total - 1) - z + 12 = |S|.
        finish(unsafe { fold_head(ip.as_ptr(), z, total) })
    }

    /// The ICRC of `ip` from the state [`prefix_state`] computed for its first `from` blocks,
    /// `from >= 1`, with the shape `(z, total)` of `ip.len()` computed once by the caller: the
    /// template path, which folds only the blocks that change (no block-0 case, no shape
    /// arithmetic per packet).
    ///
    /// # Safety
    /// [`applies`] must hold for `ip.len()`, `(z, total)` must be `shape(ip.len())`, and
    /// `1 <= from < total`.
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    pub(crate) unsafe fn icrc_after_prefix(
        ip: &[u8],
        state: u128,
        from: usize,
        z: usize,
        total: usize,
    ) -> u32 {
        let s = ip.as_ptr();
        // SAFETY: block i >= 1 reads S[16i - z - 4..16i - z + 12]; the last (i = total - 1)
        // ends at |S| (see `icrc_whole`), within `ip` by the caller's contract.
        unsafe {
            let x = _mm_xor_si128(vector(state), block_at(s, z, from));
            finish(fold_blocks(s, z, x, from + 1..total))
        }
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn vector(m: u128) -> __m128i {
        _mm_set_epi64x((m >> 64) as i64, m as i64)
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn to_u128(v: __m128i) -> u128 {
        let lo = _mm_cvtsi128_si64(v) as u64;
        let hi = _mm_cvtsi128_si64(_mm_srli_si128::<8>(v)) as u64;
        u128::from(lo) | (u128::from(hi) << 64)
    }

    /// Block 0 of the virtual stream `0^z ‖ ff×4 ‖ S` of the packet at `s`, masked.
    ///
    /// # Safety
    /// 16 bytes at `s` must be readable.
    #[inline(always)]
    unsafe fn block0(s: *const u8, z: usize) -> __m128i {
        // SAFETY: the load is within the bounds the caller guarantees; unaligned loads are what
        // `_mm_loadu_si128` is for, and SSE2 is part of the x86_64 baseline.
        unsafe {
            let first = _mm_loadu_si128(s.cast::<__m128i>());
            let shifted = match z {
                0 => _mm_slli_si128::<4>(first),
                4 => _mm_slli_si128::<8>(first),
                8 => _mm_slli_si128::<12>(first),
                _ => _mm_setzero_si128(),
            };
            _mm_or_si128(shifted, vector(MASKS[z / 4][0]))
        }
    }

    /// Block `i >= 1` of the virtual stream, masked where the header's masked bytes fall (a
    /// mask is loaded as it is stored: a little-endian u128 is the two lanes in order).
    ///
    /// # Safety
    /// 16 bytes at `s + 16i - z - 4` must be readable.
    #[inline(always)]
    unsafe fn block_at(s: *const u8, z: usize, i: usize) -> __m128i {
        // SAFETY: as in `block0`.
        unsafe {
            let b = _mm_loadu_si128(s.add(16 * i - z - 4).cast::<__m128i>());
            match MASKS[z / 4].get(i) {
                Some(m) => _mm_or_si128(b, _mm_loadu_si128((m as *const u128).cast::<__m128i>())),
                None => b,
            }
        }
    }

    /// Multiply a 128-bit state by x^128 mod P (bit-reflected), ready for the next block.
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    fn fold(x: __m128i) -> __m128i {
        let k = _mm_set_epi64x(K4 as i64, K3 as i64);
        _mm_xor_si128(_mm_clmulepi64_si128::<0x00>(x, k), _mm_clmulepi64_si128::<0x11>(x, k))
    }

    /// Fold blocks `range` (all >= 1) of the packet at `s` into `x`, one after another.
    ///
    /// # Safety
    /// As [`block_at`] for every block of the range.
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn fold_blocks(s: *const u8, z: usize, mut x: __m128i, range: core::ops::Range<usize>) -> __m128i {
        for i in range {
            // SAFETY: forwarded from the caller.
            x = _mm_xor_si128(fold(x), unsafe { block_at(s, z, i) });
        }
        x
    }

    /// The state after blocks `0..n` of the packet at `s` (block 0 XORed in as it is).
    ///
    /// # Safety
    /// As [`block0`], and as [`block_at`] for blocks `1..n`.
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn fold_head(s: *const u8, z: usize, n: usize) -> __m128i {
        // SAFETY: forwarded from the caller.
        unsafe { fold_blocks(s, z, block0(s, z), 1..n) }
    }

    /// Test hook: [`finish`] on a plain value.
    #[cfg(test)]
    pub(super) fn finish_96(v: u128) -> u32 {
        // SAFETY: the test checked `available` first.
        unsafe { finish(vector(v)) }
    }

    /// Reduce a folded 128-bit state to the CRC (final XOR included).
    ///
    /// The state is congruent, modulo the polynomial, to the whole stream placed as the last 16
    /// bytes of a message. One carry-less multiply by x^96 mod P folds its first 8 bytes onto
    /// the rest, leaving a 96-bit value `y` equal to that message times x^32 (the "last 64-bit
    /// fold" of the PCLMULQDQ papers). Its remainder is the register after `y`'s first 8 bytes
    /// from zero, XOR its last 4: an 8-byte table step, shorter than a Barrett reduction's three
    /// dependent multiplies. (A test checks this against the 16-byte table step.)
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    fn finish(x: __m128i) -> u32 {
        let k = _mm_set_epi64x(K4 as i64, K3 as i64);
        let y = to_u128(_mm_xor_si128(_mm_clmulepi64_si128::<0x10>(x, k), _mm_srli_si128::<8>(x)));
        !(super::register_of_bytes8(y as u64) ^ (y >> 64) as u32)
    }
}

/// The ICRC state over the constant start of one packet shape, computed once so that each packet
/// only folds the blocks that change (see [`crate::stack::RoceTemplate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IcrcPrefix {
    ip_len: usize,
    /// When the folding path applies: the folded state, the blocks it covers, and the shape
    /// `(z, total)` of `ip_len`.
    state: Option<PrefixState>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PrefixState {
    state: u128,
    blocks: usize,
    z: usize,
    total: usize,
}

impl IcrcPrefix {
    /// `constant` holds the first bytes of the IP packet that every packet of the shape shares
    /// (a 20-byte IPv4 header is assumed), and `ip_len` is the IP packet length, ICRC included.
    pub(crate) fn new(constant: &[u8], ip_len: usize) -> Self {
        #[cfg(target_arch = "x86_64")]
        if clmul::applies(20, ip_len) {
            let (z, total) = clmul::shape(ip_len);
            let blocks = ((constant.len() + z + 4) / 16).min(total - 1);
            let state = clmul::prefix_state(constant, ip_len, blocks).map(|state| PrefixState {
                state,
                blocks,
                z,
                total,
            });
            return Self { ip_len, state };
        }
        Self { ip_len, state: None }
    }

    /// The ICRC of `ip`, a packet of this shape (its constant bytes as given to `new`).
    #[inline]
    pub(crate) fn compute(&self, ip: &[u8]) -> u32 {
        #[cfg(target_arch = "x86_64")]
        if let Some(p) = self.state
            && ip.len() == self.ip_len
        {
            // SAFETY: `state` exists only if `applies` held for `ip_len` (PCLMULQDQ present, a
            // length that is a multiple of 4 and at least 44), `(z, total)` is its shape and
            // `prefix_state` accepted `1 <= blocks < total`; `ip` has exactly that length.
            #[allow(unsafe_code)]
            return unsafe { clmul::icrc_after_prefix(ip, p.state, p.blocks, p.z, p.total) };
        }
        compute_unchecked(ip, crate::ipv4::HEADER_LEN)
    }
}

/// Check an IPv4 packet is long enough to carry UDP, a BTH and an ICRC; return the header length
/// and the packet bounded by its total length.
fn bounds(ip: &[u8]) -> Result<(usize, usize)> {
    let p = Ipv4Packet::new_checked(ip)?;
    if p.protocol() != protocol::UDP {
        return Err(Error::Invalid { field: "ipv4.protocol", value: u64::from(p.protocol()) });
    }
    let ihl = p.header_len();
    let total = usize::from(p.total_len());
    need("roce", ihl + udp::HEADER_LEN + BthRepr::LEN + ICRC_LEN, total)?;
    Ok((ihl, total))
}

/// Compute the ICRC of the RoCEv2 packet `ip`, which starts at the IPv4 header and ends at the
/// IPv4 total length with the 4-byte ICRC field (bytes after the total length are ignored).
pub fn compute(ip: &[u8]) -> Result<u32> {
    let (ihl, total) = bounds(ip)?;
    Ok(compute_unchecked(&ip[..total], ihl))
}

/// The ICRC stored in the packet (it is little-endian on the wire).
pub fn stored(ip: &[u8]) -> Result<u32> {
    let (_, total) = bounds(ip)?;
    let mut b = [0u8; 4];
    b.copy_from_slice(&ip[total - ICRC_LEN..total]);
    Ok(u32::from_le_bytes(b))
}

/// Check the stored ICRC against the packet.
pub fn verify(ip: &[u8]) -> Result<()> {
    let (ihl, total) = bounds(ip)?;
    let ip = &ip[..total];
    let computed = compute_unchecked(ip, ihl);
    let mut b = [0u8; 4];
    b.copy_from_slice(&ip[total - ICRC_LEN..]);
    let stored = u32::from_le_bytes(b);
    if stored == computed { Ok(()) } else { Err(Error::Checksum { field: "icrc", stored, computed }) }
}

/// Compute the ICRC and store it in the last four bytes of the packet.
pub fn fill(ip: &mut [u8]) -> Result<u32> {
    let (ihl, total) = bounds(ip)?;
    let c = compute_unchecked(&ip[..total], ihl);
    ip[total - ICRC_LEN..total].copy_from_slice(&c.to_le_bytes());
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_lrh_constant_matches_crc32fast() {
        assert_eq!(MASKED_LRH_CRC, crc32fast::hash(&[0xff; 8]));
        assert_eq!(crc32_bitwise(b"123456789"), 0xcbf4_3926);
    }

    /// The packet scapy 2.5 builds for
    /// `Ether()/IP(src="10.0.0.1",dst="10.0.0.2")/UDP(sport=1234,dport=4791,chksum=0)/
    ///  BTH(opcode=0x0a,dqpn=0x12,psn=5)/Raw(16 zero bytes + b"abcdefgh")`
    /// (an RDMA WRITE Only with an all-zero RETH), ICRC included, from the IP header on.
    const SCAPY_WRITE: &str = "4500004400010000401166a60a0000010a000002 04d212b700300000 0a00ffff0000001200000005 00000000000000000000000000000000 6162636465666768 ee83fcd7";

    fn hex(s: &str) -> [u8; 68] {
        let s: String = s.split_whitespace().collect();
        let mut out = [0u8; 68];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    #[test]
    fn scapy_known_answer() {
        let mut p = hex(SCAPY_WRITE);
        assert_eq!(compute(&p).unwrap(), 0xd7fc_83ee);
        verify(&p).unwrap();
        // The masked fields do not matter ...
        p[1] = 0x02; // ECN
        p[8] = 1; // TTL
        p[10] ^= 0x55; // IP checksum
        p[26] = 0x12; // UDP checksum
        p[32] = 0xc0; // FECN, BECN
        verify(&p).unwrap();
        // ... everything else does.
        p[40] ^= 1;
        assert!(matches!(verify(&p), Err(Error::Checksum { field: "icrc", .. })));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn fold_to_96_then_8_byte_table_is_the_block_register() {
        if !clmul::available() {
            return;
        }
        let mut x = 0x0123_4567_89ab_cdefu64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let lo = x;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = u128::from(lo) | (u128::from(x) << 64);
            assert_eq!(clmul::finish_96(v), !register_of_block(v));
        }
    }

    #[test]
    fn fast_path_matches_portable() {
        // Random IHL-5 packets of every length a RoCEv2 packet can have, up to 1 KiB.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut buf = [0u8; 1024];
        for len in (44..=1024).step_by(4) {
            for _ in 0..8 {
                for b in buf.iter_mut() {
                    *b = next() as u8;
                }
                let ip = &buf[..len];
                assert_eq!(compute_unchecked(ip, 20), portable(ip, 20), "length {len}");
            }
        }
    }

    #[test]
    fn short_or_wrong_packets() {
        let p = hex(SCAPY_WRITE);
        let mut q = p;
        q[9] = 6;
        assert_eq!(verify(&q).unwrap_err().field(), "ipv4.protocol");
        let mut q = p;
        q[3] = 20 + 8 + 8; // total length too small for a BTH and ICRC
        assert_eq!(verify(&q).unwrap_err().field(), "roce");
        assert_eq!(verify(&p[..40]).unwrap_err().field(), "ipv4.total_len");
    }
}
