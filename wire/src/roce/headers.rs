//! The InfiniBand transport headers RoCEv2 carries (IBTA Vol. 1 §9.2–9.5, Annex A17):
//! BTH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt and DETH.

use crate::error::{Error, Result, chunk};
use crate::field::{set_u16, set_u24, set_u32, set_u64};
use crate::spec::Header;

use super::Opcode;

use super::field;

/// The BTH.
pub const BTH: Header = Header {
    name: "roce_bth",
    fields: &[
        field::bth::OPCODE,
        field::bth::SE,
        field::bth::MIGREQ,
        field::bth::PAD_COUNT,
        field::bth::TVER,
        field::bth::PKEY,
        field::bth::FECN,
        field::bth::BECN,
        field::bth::RESERVED1,
        field::bth::DEST_QP,
        field::bth::ACK_REQ,
        field::bth::RESERVED2,
        field::bth::PSN,
    ],
    len: BthRepr::LEN,
};

/// The RETH.
pub const RETH: Header = Header {
    name: "roce_reth",
    fields: &[field::reth::VA, field::reth::RKEY, field::reth::DMA_LEN],
    len: RethRepr::LEN,
};

/// The AtomicETH.
pub const ATOMIC_ETH: Header = Header {
    name: "roce_atomic_eth",
    fields: &[
        field::atomic_eth::VA,
        field::atomic_eth::RKEY,
        field::atomic_eth::SWAP_ADD,
        field::atomic_eth::COMPARE,
    ],
    len: AtomicEthRepr::LEN,
};

/// The AETH.
pub const AETH: Header =
    Header { name: "roce_aeth", fields: &[field::aeth::SYNDROME, field::aeth::MSN], len: AethRepr::LEN };

/// The AtomicAckETH.
pub const ATOMIC_ACK_ETH: Header = Header {
    name: "roce_atomic_ack_eth",
    fields: &[field::atomic_ack_eth::ORIGINAL],
    len: AtomicAckEthRepr::LEN,
};

/// The ImmDt.
pub const IMM_DT: Header = Header { name: "roce_imm_dt", fields: &[field::imm_dt::IMM], len: ImmDtRepr::LEN };

/// The DETH.
pub const DETH: Header = Header {
    name: "roce_deth",
    fields: &[field::deth::QKEY, field::deth::RESERVED, field::deth::SRC_QP],
    len: DethRepr::LEN,
};

// ---------------------------------------------------------------------------------------------
// BTH

fixed_view!(
    /// A view of the 12-byte Base Transport Header.
    BthHeader, 12, "bth"
);

impl<T: AsRef<[u8]>> BthHeader<T> {
    /// Opcode.
    pub fn opcode(&self) -> Opcode {
        Opcode(field::bth::OPCODE.get_u8(self.buffer.as_ref()))
    }
    /// Solicited event.
    pub fn solicited(&self) -> bool {
        field::bth::SE.get_bool(self.buffer.as_ref())
    }
    /// Migration request.
    pub fn migreq(&self) -> bool {
        field::bth::MIGREQ.get_bool(self.buffer.as_ref())
    }
    /// Pad count: bytes of padding before the ICRC (0..=3).
    pub fn pad_count(&self) -> u8 {
        field::bth::PAD_COUNT.get_u8(self.buffer.as_ref())
    }
    /// Transport header version (0).
    pub fn tver(&self) -> u8 {
        field::bth::TVER.get_u8(self.buffer.as_ref())
    }
    /// Partition key.
    pub fn pkey(&self) -> u16 {
        field::bth::PKEY.get_u16(self.buffer.as_ref())
    }
    /// Forward explicit congestion notification.
    pub fn fecn(&self) -> bool {
        field::bth::FECN.get_bool(self.buffer.as_ref())
    }
    /// Backward explicit congestion notification.
    pub fn becn(&self) -> bool {
        field::bth::BECN.get_bool(self.buffer.as_ref())
    }
    /// Destination queue pair, 24 bits.
    pub fn dest_qp(&self) -> u32 {
        field::bth::DEST_QP.get_u24(self.buffer.as_ref())
    }
    /// Acknowledge request.
    pub fn ack_req(&self) -> bool {
        field::bth::ACK_REQ.get_bool(self.buffer.as_ref())
    }
    /// Packet sequence number, 24 bits.
    pub fn psn(&self) -> u32 {
        field::bth::PSN.get_u24(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> BthHeader<T> {
    /// Set the opcode.
    pub fn set_opcode(&mut self, op: Opcode) {
        field::bth::OPCODE.set_u8(self.buffer.as_mut(), op.0);
    }
    /// Set the destination QP (24 bits).
    pub fn set_dest_qp(&mut self, qp: u32) {
        field::bth::DEST_QP.set_u24(self.buffer.as_mut(), qp);
    }
    /// Set the acknowledge-request bit.
    pub fn set_ack_req(&mut self, a: bool) {
        field::bth::ACK_REQ.set_bool(self.buffer.as_mut(), a);
    }
    /// Set the PSN (24 bits).
    pub fn set_psn(&mut self, psn: u32) {
        field::bth::PSN.set_u24(self.buffer.as_mut(), psn);
    }
    /// Set FECN.
    pub fn set_fecn(&mut self, v: bool) {
        field::bth::FECN.set_bool(self.buffer.as_mut(), v);
    }
    /// Set BECN.
    pub fn set_becn(&mut self, v: bool) {
        field::bth::BECN.set_bool(self.buffer.as_mut(), v);
    }
}

/// A parsed BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BthRepr {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited event.
    pub solicited: bool,
    /// Migration request (the reference DTA translator sets it).
    pub migreq: bool,
    /// Pad count, 0..=3. The packet builder derives it from the payload length.
    pub pad_count: u8,
    /// Partition key (`0xffff` is the default partition).
    pub pkey: u16,
    /// FECN.
    pub fecn: bool,
    /// BECN (set in CNPs).
    pub becn: bool,
    /// Destination QP, 24 bits.
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// PSN, 24 bits.
    pub psn: u32,
}

impl BthRepr {
    /// Header length.
    pub const LEN: usize = 12;

    /// Parse a BTH. Transport version other than 0 is [`Error::Unsupported`].
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = BthHeader::new_checked(buf)?;
        if h.tver() != 0 {
            return Err(Error::Unsupported { field: "bth.tver", value: u64::from(h.tver()) });
        }
        Ok(Self {
            opcode: h.opcode(),
            solicited: h.solicited(),
            migreq: h.migreq(),
            pad_count: h.pad_count(),
            pkey: h.pkey(),
            fecn: h.fecn(),
            becn: h.becn(),
            dest_qp: h.dest_qp(),
            ack_req: h.ack_req(),
            psn: h.psn(),
        })
    }

    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Write the header; reserved bits are zero and 24-bit fields are masked.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        self.write(chunk::<{ Self::LEN }>("bth", buf)?);
        Ok(())
    }

    /// Write the header into exactly its length of bytes, every byte (reserved ones zero).
    #[inline(always)]
    pub fn write(&self, b: &mut [u8; Self::LEN]) {
        use field::bth::*;
        b[OPCODE.byte()] = self.opcode.0;
        b[SE.byte()] = SE.place_u8(u8::from(self.solicited))
            | MIGREQ.place_u8(u8::from(self.migreq))
            | PAD_COUNT.place_u8(self.pad_count);
        set_u16(b, PKEY.byte(), self.pkey);
        b[FECN.byte()] = FECN.place_u8(u8::from(self.fecn)) | BECN.place_u8(u8::from(self.becn));
        set_u24(b, DEST_QP.byte(), self.dest_qp);
        b[ACK_REQ.byte()] = ACK_REQ.place_u8(u8::from(self.ack_req));
        set_u24(b, PSN.byte(), self.psn);
    }
}

// ---------------------------------------------------------------------------------------------
// RETH

fixed_view!(
    /// A view of the 16-byte RDMA Extended Transport Header.
    RethHeader, 16, "reth"
);

impl<T: AsRef<[u8]>> RethHeader<T> {
    /// Remote virtual address.
    pub fn va(&self) -> u64 {
        field::reth::VA.get_u64(self.buffer.as_ref())
    }
    /// Remote key.
    pub fn rkey(&self) -> u32 {
        field::reth::RKEY.get_u32(self.buffer.as_ref())
    }
    /// DMA length of the whole message.
    pub fn dma_len(&self) -> u32 {
        field::reth::DMA_LEN.get_u32(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RethHeader<T> {
    /// Set the remote virtual address.
    pub fn set_va(&mut self, va: u64) {
        field::reth::VA.set_u64(self.buffer.as_mut(), va);
    }
    /// Set the remote key.
    pub fn set_rkey(&mut self, k: u32) {
        field::reth::RKEY.set_u32(self.buffer.as_mut(), k);
    }
    /// Set the DMA length.
    pub fn set_dma_len(&mut self, l: u32) {
        field::reth::DMA_LEN.set_u32(self.buffer.as_mut(), l);
    }
}

/// A parsed RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RethRepr {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length of the whole message.
    pub dma_len: u32,
}

impl RethRepr {
    /// Header length.
    pub const LEN: usize = 16;

    /// Parse a RETH.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = RethHeader::new_checked(buf)?;
        Ok(Self { va: h.va(), rkey: h.rkey(), dma_len: h.dma_len() })
    }

    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Write the header.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        self.write(chunk::<{ Self::LEN }>("reth", buf)?);
        Ok(())
    }

    /// Write the header into exactly its length of bytes, every byte (reserved ones zero).
    #[inline(always)]
    pub fn write(&self, b: &mut [u8; Self::LEN]) {
        set_u64(b, field::reth::VA.byte(), self.va);
        set_u32(b, field::reth::RKEY.byte(), self.rkey);
        set_u32(b, field::reth::DMA_LEN.byte(), self.dma_len);
    }
}

// ---------------------------------------------------------------------------------------------
// AtomicETH

fixed_view!(
    /// A view of the 28-byte Atomic Extended Transport Header (FETCH_ADD, CMP_SWAP).
    AtomicEthHeader, 28, "atomic_eth"
);

impl<T: AsRef<[u8]>> AtomicEthHeader<T> {
    /// Remote virtual address of the 64-bit word.
    pub fn va(&self) -> u64 {
        field::atomic_eth::VA.get_u64(self.buffer.as_ref())
    }
    /// Remote key.
    pub fn rkey(&self) -> u32 {
        field::atomic_eth::RKEY.get_u32(self.buffer.as_ref())
    }
    /// Swap value (CMP_SWAP) or addend (FETCH_ADD).
    pub fn swap_add(&self) -> u64 {
        field::atomic_eth::SWAP_ADD.get_u64(self.buffer.as_ref())
    }
    /// Compare value (CMP_SWAP).
    pub fn compare(&self) -> u64 {
        field::atomic_eth::COMPARE.get_u64(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AtomicEthHeader<T> {
    /// Set the remote virtual address.
    pub fn set_va(&mut self, va: u64) {
        field::atomic_eth::VA.set_u64(self.buffer.as_mut(), va);
    }
    /// Set the remote key.
    pub fn set_rkey(&mut self, k: u32) {
        field::atomic_eth::RKEY.set_u32(self.buffer.as_mut(), k);
    }
    /// Set the swap value or addend.
    pub fn set_swap_add(&mut self, v: u64) {
        field::atomic_eth::SWAP_ADD.set_u64(self.buffer.as_mut(), v);
    }
    /// Set the compare value.
    pub fn set_compare(&mut self, v: u64) {
        field::atomic_eth::COMPARE.set_u64(self.buffer.as_mut(), v);
    }
}

/// A parsed AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AtomicEthRepr {
    /// Remote virtual address (8-byte aligned for a valid request).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap value or addend.
    pub swap_add: u64,
    /// Compare value.
    pub compare: u64,
}

impl AtomicEthRepr {
    /// Header length.
    pub const LEN: usize = 28;

    /// Parse an AtomicETH.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = AtomicEthHeader::new_checked(buf)?;
        Ok(Self { va: h.va(), rkey: h.rkey(), swap_add: h.swap_add(), compare: h.compare() })
    }

    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Write the header.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        self.write(chunk::<{ Self::LEN }>("atomic_eth", buf)?);
        Ok(())
    }

    /// Write the header into exactly its length of bytes, every byte (reserved ones zero).
    #[inline(always)]
    pub fn write(&self, b: &mut [u8; Self::LEN]) {
        set_u64(b, field::atomic_eth::VA.byte(), self.va);
        set_u32(b, field::atomic_eth::RKEY.byte(), self.rkey);
        set_u64(b, field::atomic_eth::SWAP_ADD.byte(), self.swap_add);
        set_u64(b, field::atomic_eth::COMPARE.byte(), self.compare);
    }
}

// ---------------------------------------------------------------------------------------------
// AETH

fixed_view!(
    /// A view of the 4-byte ACK Extended Transport Header.
    AethHeader, 4, "aeth"
);

impl<T: AsRef<[u8]>> AethHeader<T> {
    /// The syndrome.
    pub fn syndrome(&self) -> Syndrome {
        Syndrome::from_u8(field::aeth::SYNDROME.get_u8(self.buffer.as_ref()))
    }
    /// Message sequence number, 24 bits.
    pub fn msn(&self) -> u32 {
        field::aeth::MSN.get_u24(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AethHeader<T> {
    /// Set the syndrome.
    pub fn set_syndrome(&mut self, s: Syndrome) {
        field::aeth::SYNDROME.set_u8(self.buffer.as_mut(), s.to_u8());
    }
    /// Set the MSN (24 bits).
    pub fn set_msn(&mut self, msn: u32) {
        field::aeth::MSN.set_u24(self.buffer.as_mut(), msn);
    }
}

/// NAK codes (IBTA Vol. 1 Table 47).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// PSN sequence error: the responder expects the PSN in the NAK's BTH.
    PsnSequenceError,
    /// Invalid request.
    InvalidRequest,
    /// Remote access error (bad R_Key, bounds, or access rights).
    RemoteAccessError,
    /// Remote operational error.
    RemoteOperationalError,
    /// Invalid RD request.
    InvalidRdRequest,
    /// A reserved code (5..=31).
    Reserved(u8),
}

/// An AETH syndrome (IBTA Vol. 1 §9.7.5.1). Every byte value decodes to exactly one syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledgement with an end-to-end credit count (31 = invalid).
    Ack {
        /// Credit count code, 0..=31.
        credits: u8,
    },
    /// Receiver-not-ready NAK with a timer code (see [`rnr_timer_ns`]).
    RnrNak {
        /// Timer code, 0..=31.
        timer: u8,
    },
    /// Negative acknowledgement.
    Nak(NakCode),
    /// A reserved encoding, kept as its raw byte.
    Reserved(u8),
}

impl Syndrome {
    /// Decode a syndrome byte.
    pub const fn from_u8(b: u8) -> Self {
        if b & 0x80 != 0 {
            return Self::Reserved(b);
        }
        let v = b & 0x1f;
        match (b >> 5) & 0x03 {
            0 => Self::Ack { credits: v },
            1 => Self::RnrNak { timer: v },
            3 => Self::Nak(match v {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                c => NakCode::Reserved(c),
            }),
            _ => Self::Reserved(b),
        }
    }

    /// Encode as a syndrome byte.
    pub const fn to_u8(self) -> u8 {
        match self {
            Self::Ack { credits } => credits & 0x1f,
            Self::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Self::Nak(c) => {
                0x60 | match c {
                    NakCode::PsnSequenceError => 0,
                    NakCode::InvalidRequest => 1,
                    NakCode::RemoteAccessError => 2,
                    NakCode::RemoteOperationalError => 3,
                    NakCode::InvalidRdRequest => 4,
                    NakCode::Reserved(c) => c & 0x1f,
                }
            }
            Self::Reserved(b) => b,
        }
    }
}

/// The RNR NAK timer in nanoseconds for a 5-bit timer code (IBTA Vol. 1 Table 45).
pub const fn rnr_timer_ns(code: u8) -> u64 {
    // In units of 10 µs (0.01 ms), for codes 0..=31; code 0 is the longest (655.36 ms).
    const TABLE_10US: [u64; 32] = [
        65_536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048,
        3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
    ];
    TABLE_10US[(code & 0x1f) as usize] * 10_000
}

/// A parsed AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AethRepr {
    /// Syndrome.
    pub syndrome: Syndrome,
    /// Message sequence number, 24 bits.
    pub msn: u32,
}

impl AethRepr {
    /// Header length.
    pub const LEN: usize = 4;

    /// Parse an AETH.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = AethHeader::new_checked(buf)?;
        Ok(Self { syndrome: h.syndrome(), msn: h.msn() })
    }

    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Write the header.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        self.write(chunk::<{ Self::LEN }>("aeth", buf)?);
        Ok(())
    }

    /// Write the header into exactly its length of bytes, every byte (reserved ones zero).
    #[inline(always)]
    pub fn write(&self, b: &mut [u8; Self::LEN]) {
        b[field::aeth::SYNDROME.byte()] = self.syndrome.to_u8();
        set_u24(b, field::aeth::MSN.byte(), self.msn);
    }
}

// ---------------------------------------------------------------------------------------------
// AtomicAckETH

fixed_view!(
    /// A view of the 8-byte Atomic Acknowledge Extended Transport Header.
    AtomicAckEthHeader, 8, "atomic_ack_eth"
);

impl<T: AsRef<[u8]>> AtomicAckEthHeader<T> {
    /// The value the 64-bit word held before the atomic operation.
    pub fn original(&self) -> u64 {
        field::atomic_ack_eth::ORIGINAL.get_u64(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AtomicAckEthHeader<T> {
    /// Set the original remote data.
    pub fn set_original(&mut self, v: u64) {
        field::atomic_ack_eth::ORIGINAL.set_u64(self.buffer.as_mut(), v);
    }
}

/// A parsed AtomicAckETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AtomicAckEthRepr {
    /// The original remote data.
    pub original: u64,
}

impl AtomicAckEthRepr {
    /// Header length.
    pub const LEN: usize = 8;

    /// Parse an AtomicAckETH.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        Ok(Self { original: AtomicAckEthHeader::new_checked(buf)?.original() })
    }

    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Write the header.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        self.write(chunk::<{ Self::LEN }>("atomic_ack_eth", buf)?);
        Ok(())
    }

    /// Write the header into exactly its length of bytes, every byte (reserved ones zero).
    #[inline(always)]
    pub fn write(&self, b: &mut [u8; Self::LEN]) {
        set_u64(b, field::atomic_ack_eth::ORIGINAL.byte(), self.original);
    }
}

// ---------------------------------------------------------------------------------------------
// ImmDt

fixed_view!(
    /// A view of the 4-byte Immediate Data header.
    ImmDtHeader, 4, "immdt"
);

impl<T: AsRef<[u8]>> ImmDtHeader<T> {
    /// The immediate value as it is on the wire (big-endian).
    pub fn imm(&self) -> u32 {
        field::imm_dt::IMM.get_u32(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ImmDtHeader<T> {
    /// Set the immediate value.
    pub fn set_imm(&mut self, v: u32) {
        field::imm_dt::IMM.set_u32(self.buffer.as_mut(), v);
    }
}

/// A parsed ImmDt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ImmDtRepr {
    /// The immediate value.
    pub imm: u32,
}

impl ImmDtRepr {
    /// Header length.
    pub const LEN: usize = 4;

    /// Parse an ImmDt.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        Ok(Self { imm: ImmDtHeader::new_checked(buf)?.imm() })
    }

    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Write the header.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        self.write(chunk::<{ Self::LEN }>("immdt", buf)?);
        Ok(())
    }

    /// Write the header into exactly its length of bytes, every byte (reserved ones zero).
    #[inline(always)]
    pub fn write(&self, b: &mut [u8; Self::LEN]) {
        set_u32(b, field::imm_dt::IMM.byte(), self.imm);
    }
}

// ---------------------------------------------------------------------------------------------
// DETH

fixed_view!(
    /// A view of the 8-byte Datagram Extended Transport Header (UD).
    DethHeader, 8, "deth"
);

impl<T: AsRef<[u8]>> DethHeader<T> {
    /// Queue key.
    pub fn qkey(&self) -> u32 {
        field::deth::QKEY.get_u32(self.buffer.as_ref())
    }
    /// Source QP, 24 bits.
    pub fn src_qp(&self) -> u32 {
        field::deth::SRC_QP.get_u24(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DethHeader<T> {
    /// Set the queue key.
    pub fn set_qkey(&mut self, k: u32) {
        field::deth::QKEY.set_u32(self.buffer.as_mut(), k);
    }
    /// Set the source QP (24 bits).
    pub fn set_src_qp(&mut self, qp: u32) {
        field::deth::SRC_QP.set_u24(self.buffer.as_mut(), qp);
    }
}

/// A parsed DETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DethRepr {
    /// Queue key (`0x80010000` for the GSI, QP 1).
    pub qkey: u32,
    /// Source QP, 24 bits.
    pub src_qp: u32,
}

impl DethRepr {
    /// Header length.
    pub const LEN: usize = 8;

    /// Parse a DETH.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = DethHeader::new_checked(buf)?;
        Ok(Self { qkey: h.qkey(), src_qp: h.src_qp() })
    }

    /// Header length.
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Write the header.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        self.write(chunk::<{ Self::LEN }>("deth", buf)?);
        Ok(())
    }

    /// Write the header into exactly its length of bytes, every byte (reserved ones zero).
    #[inline(always)]
    pub fn write(&self, b: &mut [u8; Self::LEN]) {
        set_u32(b, field::deth::QKEY.byte(), self.qkey);
        b[field::deth::RESERVED.byte()] = 0;
        set_u24(b, field::deth::SRC_QP.byte(), self.src_qp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syndrome_is_a_bijection_on_bytes() {
        for b in 0..=255u8 {
            assert_eq!(Syndrome::from_u8(b).to_u8(), b, "byte {b:#x}");
        }
        assert_eq!(Syndrome::from_u8(0x60), Syndrome::Nak(NakCode::PsnSequenceError));
        assert_eq!(Syndrome::from_u8(0x62), Syndrome::Nak(NakCode::RemoteAccessError));
        assert_eq!(Syndrome::from_u8(0x1f), Syndrome::Ack { credits: 31 });
        assert_eq!(Syndrome::from_u8(0x2e), Syndrome::RnrNak { timer: 14 });
    }

    #[test]
    fn rnr_timer_table() {
        assert_eq!(rnr_timer_ns(0), 655_360_000);
        assert_eq!(rnr_timer_ns(1), 10_000);
        assert_eq!(rnr_timer_ns(14), 1_280_000);
        assert_eq!(rnr_timer_ns(31), 491_520_000);
    }

    #[test]
    fn bth_layout() {
        let r = BthRepr {
            opcode: Opcode::RC_RDMA_WRITE_ONLY,
            solicited: true,
            migreq: true,
            pad_count: 2,
            pkey: 0xffff,
            fecn: false,
            becn: true,
            dest_qp: 0x00ab_cdef,
            ack_req: true,
            psn: 0x0012_3456,
        };
        let mut b = [0u8; 12];
        r.emit(&mut b).unwrap();
        assert_eq!(b, [0x0a, 0xe0, 0xff, 0xff, 0x40, 0xab, 0xcd, 0xef, 0x80, 0x12, 0x34, 0x56]);
        assert_eq!(BthRepr::parse(&b).unwrap(), r);
        b[1] |= 0x01;
        assert_eq!(BthRepr::parse(&b).unwrap_err().field(), "bth.tver");
    }
}
