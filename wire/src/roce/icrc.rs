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

/// Bitwise CRC-32/ISO-HDLC update, for the one constant below.
const fn crc32_bitwise(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    let mut i = 0;
    while i < data.len() {
        crc ^= data[i] as u32;
        let mut k = 0;
        while k < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
            k += 1;
        }
        i += 1;
    }
    !crc
}

/// The CRC after the eight `0xff` bytes of the masked LRH.
const MASKED_LRH_CRC: u32 = crc32_bitwise(&[0xff; 8]);

/// ICRC over an IPv4 packet of exactly `ip.len()` bytes whose header is `ihl` bytes long.
/// The caller guarantees `ip.len() >= ihl + 8 + 12 + 4`.
#[inline]
pub(crate) fn compute_unchecked(ip: &[u8], ihl: usize) -> u32 {
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

/// Check an IPv4 packet is long enough to carry UDP, a BTH and an ICRC; return the header length
/// and the packet bounded by its total length.
fn bounds(ip: &[u8]) -> Result<(usize, usize)> {
    let p = Ipv4Packet::new_checked(ip)?;
    if p.protocol() != protocol::UDP {
        return Err(Error::Invalid {
            field: "ipv4.protocol",
            value: u64::from(p.protocol()),
        });
    }
    let ihl = p.header_len();
    let total = usize::from(p.total_len());
    need(
        "roce",
        ihl + udp::HEADER_LEN + BthRepr::LEN + ICRC_LEN,
        total,
    )?;
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
    if stored == computed {
        Ok(())
    } else {
        Err(Error::Checksum {
            field: "icrc",
            stored,
            computed,
        })
    }
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
        assert!(matches!(
            verify(&p),
            Err(Error::Checksum { field: "icrc", .. })
        ));
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
