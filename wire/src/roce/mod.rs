//! RoCEv2: InfiniBand transport over UDP/IPv4, destination port 4791 (IBTA Annex A17).
//!
//! A RoCEv2 UDP payload is `BTH / [DETH] / [RETH] / [AtomicETH] / [AETH] / [AtomicAckETH] /
//! [ImmDt] / payload / pad / ICRC`; which extension headers are present follows from the BTH
//! opcode ([`Opcode::layout`]). [`RoceRepr`] parses and emits a whole UDP payload;
//! [`icrc`] computes and checks the invariant CRC over the IP packet.

mod headers;
pub mod icrc;

pub mod field;
pub use headers::{AETH, ATOMIC_ACK_ETH, ATOMIC_ETH, BTH, DETH, IMM_DT, RETH};
pub use headers::{
    AethHeader, AethRepr, AtomicAckEthHeader, AtomicAckEthRepr, AtomicEthHeader, AtomicEthRepr, BthHeader,
    BthRepr, DethHeader, DethRepr, ImmDtHeader, ImmDtRepr, NakCode, RethHeader, RethRepr, Syndrome,
    rnr_timer_ns,
};

use crate::error::{Error, Result, need, space};
use crate::field::copy_short;

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;
/// Length of a CNP's reserved body.
pub const CNP_BODY_LEN: usize = 16;
/// Q_Key of the general services interface (QP 1), used by CM MADs.
pub const GSI_QKEY: u32 = 0x8001_0000;
/// The GSI queue pair number.
pub const GSI_QP: u32 = 1;
/// The default partition key.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// PSNs are 24-bit.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// A BTH opcode. The high 3 bits name the transport (RC, UC, RD, UD), the low 5 the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Opcode(pub u8);

#[allow(missing_docs)]
impl Opcode {
    pub const RC_SEND_FIRST: Self = Self(0x00);
    pub const RC_SEND_MIDDLE: Self = Self(0x01);
    pub const RC_SEND_LAST: Self = Self(0x02);
    pub const RC_SEND_LAST_WITH_IMMEDIATE: Self = Self(0x03);
    pub const RC_SEND_ONLY: Self = Self(0x04);
    pub const RC_SEND_ONLY_WITH_IMMEDIATE: Self = Self(0x05);
    pub const RC_RDMA_WRITE_FIRST: Self = Self(0x06);
    pub const RC_RDMA_WRITE_MIDDLE: Self = Self(0x07);
    pub const RC_RDMA_WRITE_LAST: Self = Self(0x08);
    pub const RC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Self = Self(0x09);
    pub const RC_RDMA_WRITE_ONLY: Self = Self(0x0a);
    pub const RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Self = Self(0x0b);
    pub const RC_RDMA_READ_REQUEST: Self = Self(0x0c);
    pub const RC_RDMA_READ_RESPONSE_FIRST: Self = Self(0x0d);
    pub const RC_RDMA_READ_RESPONSE_MIDDLE: Self = Self(0x0e);
    pub const RC_RDMA_READ_RESPONSE_LAST: Self = Self(0x0f);
    pub const RC_RDMA_READ_RESPONSE_ONLY: Self = Self(0x10);
    pub const RC_ACKNOWLEDGE: Self = Self(0x11);
    pub const RC_ATOMIC_ACKNOWLEDGE: Self = Self(0x12);
    pub const RC_COMPARE_SWAP: Self = Self(0x13);
    pub const RC_FETCH_ADD: Self = Self(0x14);
    pub const UC_SEND_FIRST: Self = Self(0x20);
    pub const UC_SEND_MIDDLE: Self = Self(0x21);
    pub const UC_SEND_LAST: Self = Self(0x22);
    pub const UC_SEND_LAST_WITH_IMMEDIATE: Self = Self(0x23);
    pub const UC_SEND_ONLY: Self = Self(0x24);
    pub const UC_SEND_ONLY_WITH_IMMEDIATE: Self = Self(0x25);
    pub const UC_RDMA_WRITE_FIRST: Self = Self(0x26);
    pub const UC_RDMA_WRITE_MIDDLE: Self = Self(0x27);
    pub const UC_RDMA_WRITE_LAST: Self = Self(0x28);
    pub const UC_RDMA_WRITE_LAST_WITH_IMMEDIATE: Self = Self(0x29);
    pub const UC_RDMA_WRITE_ONLY: Self = Self(0x2a);
    pub const UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE: Self = Self(0x2b);
    pub const UD_SEND_ONLY: Self = Self(0x64);
    pub const UD_SEND_ONLY_WITH_IMMEDIATE: Self = Self(0x65);
    /// Congestion Notification Packet (RoCEv2 Annex A17.9.3).
    pub const CNP: Self = Self(0x81);
}

/// Which headers follow the BTH for an opcode, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    /// DETH (UD).
    pub deth: bool,
    /// RETH.
    pub reth: bool,
    /// AtomicETH.
    pub atomic_eth: bool,
    /// AETH.
    pub aeth: bool,
    /// AtomicAckETH.
    pub atomic_ack_eth: bool,
    /// ImmDt.
    pub immdt: bool,
    /// Whether the opcode carries a payload.
    pub payload: bool,
}

impl Layout {
    const NONE: Self = Self {
        deth: false,
        reth: false,
        atomic_eth: false,
        aeth: false,
        atomic_ack_eth: false,
        immdt: false,
        payload: false,
    };

    /// Total length of the extension headers.
    pub const fn ext_len(&self) -> usize {
        (if self.deth { 8 } else { 0 })
            + (if self.reth { 16 } else { 0 })
            + (if self.atomic_eth { 28 } else { 0 })
            + (if self.aeth { 4 } else { 0 })
            + (if self.atomic_ack_eth { 8 } else { 0 })
            + (if self.immdt { 4 } else { 0 })
    }
}

impl Opcode {
    /// The header layout of a supported opcode: RC and UC SEND/WRITE, RC READ, ACK and atomics,
    /// UD SEND, and CNP. RD, the invalidate variants and reserved values give `None`.
    pub const fn layout(self) -> Option<Layout> {
        let n = Layout::NONE;
        let pay = Layout { payload: true, ..n };
        let transport = self.0 & 0xe0;
        let op = self.0 & 0x1f;
        Some(match (transport, op) {
            (0x00 | 0x20, 0x00..=0x02) => pay,
            (0x00 | 0x20, 0x03) => Layout { immdt: true, ..pay },
            (0x00 | 0x20, 0x04) => pay,
            (0x00 | 0x20, 0x05) => Layout { immdt: true, ..pay },
            (0x00 | 0x20, 0x06) => Layout { reth: true, ..pay },
            (0x00 | 0x20, 0x07 | 0x08) => pay,
            (0x00 | 0x20, 0x09) => Layout { immdt: true, ..pay },
            (0x00 | 0x20, 0x0a) => Layout { reth: true, ..pay },
            (0x00 | 0x20, 0x0b) => Layout { reth: true, immdt: true, ..pay },
            (0x00, 0x0c) => Layout { reth: true, ..n },
            (0x00, 0x0d) => Layout { aeth: true, ..pay },
            (0x00, 0x0e) => pay,
            (0x00, 0x0f | 0x10) => Layout { aeth: true, ..pay },
            (0x00, 0x11) => Layout { aeth: true, ..n },
            (0x00, 0x12) => Layout { aeth: true, atomic_ack_eth: true, ..n },
            (0x00, 0x13 | 0x14) => Layout { atomic_eth: true, ..n },
            (0x60, 0x04) => Layout { deth: true, ..pay },
            (0x60, 0x05) => Layout { deth: true, immdt: true, ..pay },
            (0x80, 0x01) => pay,
            _ => return None,
        })
    }
}

/// The extension headers of one packet; which must be present follows from the opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RoceExt {
    /// DETH (UD SEND).
    pub deth: Option<DethRepr>,
    /// RETH (WRITE First/Only, READ request).
    pub reth: Option<RethRepr>,
    /// AtomicETH (FETCH_ADD, CMP_SWAP).
    pub atomic_eth: Option<AtomicEthRepr>,
    /// AETH (ACK, NAK, READ responses, atomic ACK).
    pub aeth: Option<AethRepr>,
    /// AtomicAckETH (atomic ACK).
    pub atomic_ack_eth: Option<AtomicAckEthRepr>,
    /// Immediate data.
    pub immdt: Option<ImmDtRepr>,
}

impl RoceExt {
    /// Parse the extension headers `layout` calls for from the start of `buf`.
    pub fn parse(buf: &[u8], layout: Layout) -> Result<Self> {
        need("roce", layout.ext_len(), buf.len())?;
        let mut at = 0;
        let mut next = |len: usize| {
            let s = &buf[at..at + len];
            at += len;
            s
        };
        let mut e = Self::default();
        if layout.deth {
            e.deth = Some(DethRepr::parse(next(DethRepr::LEN))?);
        }
        if layout.reth {
            e.reth = Some(RethRepr::parse(next(RethRepr::LEN))?);
        }
        if layout.atomic_eth {
            e.atomic_eth = Some(AtomicEthRepr::parse(next(AtomicEthRepr::LEN))?);
        }
        if layout.aeth {
            e.aeth = Some(AethRepr::parse(next(AethRepr::LEN))?);
        }
        if layout.atomic_ack_eth {
            e.atomic_ack_eth = Some(AtomicAckEthRepr::parse(next(AtomicAckEthRepr::LEN))?);
        }
        if layout.immdt {
            e.immdt = Some(ImmDtRepr::parse(next(ImmDtRepr::LEN))?);
        }
        Ok(e)
    }

    /// Total length of the headers present.
    pub const fn buffer_len(&self) -> usize {
        self.layout(false).ext_len()
    }

    /// The headers present, as a layout (with the given payload flag).
    pub const fn layout(&self, payload: bool) -> Layout {
        Layout {
            deth: self.deth.is_some(),
            reth: self.reth.is_some(),
            atomic_eth: self.atomic_eth.is_some(),
            aeth: self.aeth.is_some(),
            atomic_ack_eth: self.atomic_ack_eth.is_some(),
            immdt: self.immdt.is_some(),
            payload,
        }
    }

    /// `Ok` if these headers and a payload of `payload_len` bytes are what `opcode` carries;
    /// otherwise an error naming the first header (or the payload) that is not.
    pub fn check(&self, opcode: Opcode, payload_len: usize) -> Result<Layout> {
        let want =
            opcode.layout().ok_or(Error::Unsupported { field: "bth.opcode", value: u64::from(opcode.0) })?;
        let have = self.layout(want.payload);
        if have == want && (want.payload || payload_len == 0) {
            return Ok(want);
        }
        let (field, value) = if want.deth != have.deth {
            ("roce.deth", have.deth)
        } else if want.reth != have.reth {
            ("roce.reth", have.reth)
        } else if want.atomic_eth != have.atomic_eth {
            ("roce.atomic_eth", have.atomic_eth)
        } else if want.aeth != have.aeth {
            ("roce.aeth", have.aeth)
        } else if want.atomic_ack_eth != have.atomic_ack_eth {
            ("roce.atomic_ack_eth", have.atomic_ack_eth)
        } else if want.immdt != have.immdt {
            ("roce.immdt", have.immdt)
        } else {
            return Err(Error::Invalid { field: "roce.payload", value: payload_len as u64 });
        };
        Err(Error::Invalid { field, value: u64::from(value) })
    }

    /// Write the headers present, in wire order, at the start of `buf`; returns their length.
    #[inline(always)]
    fn write(&self, buf: &mut [u8]) -> Result<usize> {
        let mut at = 0;
        if let Some(h) = self.deth {
            h.write(chunk(&mut buf[at..])?);
            at += DethRepr::LEN;
        }
        if let Some(h) = self.reth {
            h.write(chunk(&mut buf[at..])?);
            at += RethRepr::LEN;
        }
        if let Some(h) = self.atomic_eth {
            h.write(chunk(&mut buf[at..])?);
            at += AtomicEthRepr::LEN;
        }
        if let Some(h) = self.aeth {
            h.write(chunk(&mut buf[at..])?);
            at += AethRepr::LEN;
        }
        if let Some(h) = self.atomic_ack_eth {
            h.write(chunk(&mut buf[at..])?);
            at += AtomicAckEthRepr::LEN;
        }
        if let Some(h) = self.immdt {
            h.write(chunk(&mut buf[at..])?);
            at += ImmDtRepr::LEN;
        }
        Ok(at)
    }
}

/// Pad bytes that bring a payload of `len` bytes to a multiple of four.
pub const fn pad_len(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// Write extension headers, payload, zero pad and a zero ICRC placeholder at the start of `buf`
/// (checked by the caller to be long enough); returns the length written.
#[inline(always)]
pub(crate) fn write_tail(buf: &mut [u8], ext: &RoceExt, payload: &[u8]) -> Result<usize> {
    let at = ext.write(buf)?;
    let end = at + payload.len();
    copy_short(&mut buf[at..], payload);
    // Pad (0..=3 bytes) and ICRC placeholder: two overlapping 4-byte zero stores.
    let len = end + pad_len(payload.len()) + ICRC_LEN;
    buf[end..end + 4].fill(0);
    buf[len - 4..len].fill(0);
    Ok(len)
}

/// The first `N` bytes of `buf` as an array; a short buffer is [`Error::NoSpace`].
#[inline(always)]
fn chunk<const N: usize>(buf: &mut [u8]) -> Result<&mut [u8; N]> {
    crate::error::chunk("roce", buf)
}

/// A parsed RoCEv2 UDP payload: BTH, the extension headers its opcode calls for, and the payload
/// (without pad bytes and ICRC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceRepr<'a> {
    /// Base transport header. On emit, `pad_count` is derived from the payload length.
    pub bth: BthRepr,
    /// Extension headers.
    pub ext: RoceExt,
    /// Payload, without padding. A CNP's 16 reserved bytes count as its payload.
    pub payload: &'a [u8],
}

impl<'a> RoceRepr<'a> {
    /// A repr with only a BTH and payload; set the extension headers the opcode needs.
    pub const fn new(bth: BthRepr, payload: &'a [u8]) -> Self {
        Self {
            bth,
            ext: RoceExt {
                deth: None,
                reth: None,
                atomic_eth: None,
                aeth: None,
                atomic_ack_eth: None,
                immdt: None,
            },
            payload,
        }
    }

    /// A Congestion Notification Packet to `dest_qp` (RoCEv2 Annex A17.9.3): BTH with BECN set
    /// and P_Key 0xffff, 16 reserved zero bytes.
    pub const fn cnp(dest_qp: u32) -> RoceRepr<'static> {
        const BODY: [u8; CNP_BODY_LEN] = [0; CNP_BODY_LEN];
        RoceRepr::new(
            BthRepr {
                opcode: Opcode::CNP,
                solicited: false,
                migreq: false,
                pad_count: 0,
                pkey: DEFAULT_PKEY,
                fecn: false,
                becn: true,
                dest_qp: dest_qp & PSN_MASK,
                ack_req: false,
                psn: 0,
            },
            &BODY,
        )
    }

    /// Parse a RoCEv2 UDP payload (BTH through ICRC). The ICRC is not checked here; see
    /// [`icrc::verify`], which needs the IP header.
    ///
    /// Checks: supported opcode and transport version, every extension header present, the
    /// pad count within the payload, no payload where the opcode forbids one, a CNP body of 16
    /// bytes, and for RDMA WRITE the RETH DMA length consistent with the payload (equal for
    /// *Only*, at least the payload for *First*).
    pub fn parse(buf: &'a [u8]) -> Result<Self> {
        let bth = BthRepr::parse(buf)?;
        let layout = bth
            .opcode
            .layout()
            .ok_or(Error::Unsupported { field: "bth.opcode", value: u64::from(bth.opcode.0) })?;
        let ext_end = BthRepr::LEN + layout.ext_len();
        need("roce", ext_end + ICRC_LEN, buf.len())?;
        let ext = RoceExt::parse(&buf[BthRepr::LEN..], layout)?;
        let body = &buf[ext_end..buf.len() - ICRC_LEN];
        let pad = usize::from(bth.pad_count);
        if pad > body.len() {
            return Err(Error::Invalid { field: "bth.pad_count", value: pad as u64 });
        }
        let payload = &body[..body.len() - pad];
        if !layout.payload && !body.is_empty() {
            return Err(Error::Invalid { field: "roce.payload", value: body.len() as u64 });
        }
        if bth.opcode == Opcode::CNP && body.len() != CNP_BODY_LEN {
            return Err(Error::Invalid { field: "cnp.reserved", value: body.len() as u64 });
        }
        if let Some(reth) = ext.reth {
            let dma = reth.dma_len as usize;
            let have = payload.len();
            match bth.opcode.0 & 0x1f {
                // WRITE Only (with or without immediate): the DMA length is this payload.
                0x0a | 0x0b if dma > have => {
                    return Err(Error::Truncated { field: "reth.dma_length", need: dma, have });
                }
                0x0a | 0x0b if dma < have => {
                    return Err(Error::Invalid { field: "reth.dma_length", value: dma as u64 });
                }
                // WRITE First: the message is at least this packet.
                0x06 if dma < have => {
                    return Err(Error::Invalid { field: "reth.dma_length", value: dma as u64 });
                }
                _ => {}
            }
        }
        Ok(Self { bth, ext, payload })
    }

    /// Pad bytes needed to bring the payload to a multiple of four.
    pub const fn pad_len(&self) -> usize {
        pad_len(self.payload.len())
    }

    /// Length of the UDP payload this emits: headers, payload, pad and ICRC.
    pub fn buffer_len(&self) -> usize {
        let ext = self.bth.opcode.layout().map_or(0, |l| l.ext_len());
        BthRepr::LEN + ext + self.payload.len() + self.pad_len() + ICRC_LEN
    }

    /// Write the UDP payload into `buf`: headers, payload, zero pad and a zero ICRC placeholder
    /// (fill it with [`icrc::fill`] once the IP and UDP headers are in place). Fails if the
    /// extension headers present do not match the opcode.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let layout = self.ext.check(self.bth.opcode, self.payload.len())?;
        let len = BthRepr::LEN + layout.ext_len() + self.payload.len() + self.pad_len() + ICRC_LEN;
        space("roce", len, buf.len())?;
        let mut bth = self.bth;
        bth.pad_count = self.pad_len() as u8;
        bth.write(chunk(buf)?);
        write_tail(&mut buf[BthRepr::LEN..len], &self.ext, self.payload)?;
        Ok(len)
    }
}

/// Add two PSNs modulo 2^24.
pub const fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// Signed distance from `a` to `b` in 24-bit PSN space, in −2^23..2^23.
#[inline]
pub const fn psn_diff(b: u32, a: u32) -> i32 {
    // The 24-bit difference in the top bits, then an arithmetic shift sign-extends it.
    ((b.wrapping_sub(a) << 8) as i32) >> 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_opcode_roundtrips_its_layout() {
        for op in 0..=255u8 {
            let Some(l) = Opcode(op).layout() else {
                continue;
            };
            let payload: &[u8] = if op == 0x81 {
                &[0; 16]
            } else if l.payload {
                b"xyz"
            } else {
                &[]
            };
            let mut r = RoceRepr::new(BthRepr { opcode: Opcode(op), ..Default::default() }, payload);
            r.ext.deth = l.deth.then_some(DethRepr { qkey: GSI_QKEY, src_qp: 1 });
            r.ext.reth = l.reth.then_some(RethRepr { va: 1, rkey: 2, dma_len: payload.len() as u32 });
            r.ext.atomic_eth = l.atomic_eth.then_some(AtomicEthRepr::default());
            r.ext.aeth = l.aeth.then_some(AethRepr { syndrome: Syndrome::Ack { credits: 31 }, msn: 3 });
            r.ext.atomic_ack_eth = l.atomic_ack_eth.then_some(AtomicAckEthRepr { original: 9 });
            r.ext.immdt = l.immdt.then_some(ImmDtRepr { imm: 7 });
            let mut buf = [0u8; 128];
            let n = r.emit(&mut buf).unwrap();
            let mut back = RoceRepr::parse(&buf[..n]).unwrap();
            back.bth.pad_count = 0;
            assert_eq!(back, r, "opcode {op:#x}");
        }
    }

    #[test]
    fn dma_length_past_payload_is_truncated() {
        let mut r = RoceRepr::new(
            BthRepr { opcode: Opcode::RC_RDMA_WRITE_ONLY, ..Default::default() },
            &[1, 2, 3, 4],
        );
        r.ext.reth = Some(RethRepr { va: 0, rkey: 0, dma_len: 64 });
        let mut buf = [0u8; 64];
        // Emit does not judge the DMA length (a WRITE First may carry less than the message).
        let n = r.emit(&mut buf).unwrap();
        let e = RoceRepr::parse(&buf[..n]).unwrap_err();
        assert_eq!(e, Error::Truncated { field: "reth.dma_length", need: 64, have: 4 });
    }

    #[test]
    fn missing_or_unknown() {
        let r = RoceRepr::new(BthRepr { opcode: Opcode::RC_RDMA_WRITE_ONLY, ..Default::default() }, &[]);
        assert_eq!(r.emit(&mut [0u8; 64]).unwrap_err().field(), "roce.reth");
        let mut buf = [0u8; 32];
        buf[0] = 0x15;
        assert_eq!(
            RoceRepr::parse(&buf).unwrap_err(),
            Error::Unsupported { field: "bth.opcode", value: 0x15 }
        );
        buf[0] = Opcode::RC_ACKNOWLEDGE.0;
        assert_eq!(RoceRepr::parse(&buf[..18]).unwrap_err().field(), "roce");
    }

    #[test]
    fn cnp_layout() {
        let c = RoceRepr::cnp(0x12_3456);
        let mut b = [0u8; 32];
        assert_eq!(c.emit(&mut b).unwrap(), 12 + 16 + 4);
        assert_eq!(&b[..12], &[0x81, 0, 0xff, 0xff, 0x40, 0x12, 0x34, 0x56, 0, 0, 0, 0]);
        assert_eq!(RoceRepr::parse(&b[..32]).unwrap(), c);
    }

    #[test]
    fn psn_arithmetic_wraps() {
        assert_eq!(psn_add(PSN_MASK, 1), 0);
        assert_eq!(psn_diff(0, PSN_MASK), 1);
        assert_eq!(psn_diff(PSN_MASK, 0), -1);
        assert_eq!(psn_diff(10, 5), 5);
        // Every distance in −2^23..2^23 from a spread of starting PSNs, and upper bits ignored.
        for a in [0, 1, 0x7f_ffff, 0x80_0000, PSN_MASK, 0x12_3456] {
            for d in (-(1i32 << 23)..(1 << 23)).step_by(4099).chain([-(1 << 23), (1 << 23) - 1]) {
                let b = psn_add(a, d as u32);
                assert_eq!(psn_diff(b, a), d, "a={a:#x} d={d}");
                assert_eq!(psn_diff(b | 0xff00_0000, a), d);
            }
        }
    }
}
