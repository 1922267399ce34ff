//! InfiniBand Communication Management MADs (IBTA Vol. 1 §12.6) as carried over RoCEv2, and the
//! private-data header librdmacm puts in a REQ.
//!
//! On RoCEv2 a CM MAD travels in a UD SEND Only (opcode `0x64`) to QP 1 with a DETH whose Q_Key
//! is `0x80010000`. The MAD is 256 bytes: a 24-byte common header (base version 1, management
//! class `0x07`, class version 2) and 232 bytes of message. The messages here are REQ, REP, RTU,
//! REJ, DREQ and DREP; MRA, LAP and APR are [`Error::Unsupported`].
//!
//! librdmacm (`RDMA_PS_TCP`) uses service ID `0x0000000001060000 | port` and begins the REQ
//! private data with [`CmaHeaderRepr`]: version, IP version, source port, source and destination
//! addresses (IPv4 in the last four bytes of each 16-byte field).

use core::net::Ipv4Addr;

use crate::error::{Error, Result, space};
use crate::field::{array_at, set_u16, set_u24, set_u32, set_u64, u16_at, u24_at, u32_at, u64_at};

/// Length of a MAD.
pub const MAD_LEN: usize = 256;
/// Length of the common MAD header.
pub const MAD_HEADER_LEN: usize = 24;
/// Length of a CM message (the MAD data area).
pub const CM_DATA_LEN: usize = MAD_LEN - MAD_HEADER_LEN;
/// MAD base version.
pub const BASE_VERSION: u8 = 1;
/// Management class of the communication manager.
pub const MGMT_CLASS_CM: u8 = 0x07;
/// CM class version.
pub const CM_CLASS_VERSION: u8 = 2;
/// MAD method `Send`, used by every CM message.
pub const METHOD_SEND: u8 = 0x03;

/// CM attribute IDs.
pub mod attr {
    /// Connection request.
    pub const REQ: u16 = 0x0010;
    /// Message receipt acknowledgement (not supported here).
    pub const MRA: u16 = 0x0011;
    /// Reject.
    pub const REJ: u16 = 0x0012;
    /// Reply to a REQ.
    pub const REP: u16 = 0x0013;
    /// Ready to use.
    pub const RTU: u16 = 0x0014;
    /// Disconnection request.
    pub const DREQ: u16 = 0x0015;
    /// Reply to a DREQ.
    pub const DREP: u16 = 0x0016;
}

/// Private-data lengths per message.
pub mod private_len {
    /// REQ.
    pub const REQ: usize = 92;
    /// REP.
    pub const REP: usize = 196;
    /// RTU.
    pub const RTU: usize = 224;
    /// REJ.
    pub const REJ: usize = 148;
    /// DREQ.
    pub const DREQ: usize = 220;
    /// DREP.
    pub const DREP: usize = 224;
}

/// Length of a REJ's additional reject information.
pub const REJ_ARI_LEN: usize = 72;

/// librdmacm port spaces.
pub mod port_space {
    /// `RDMA_PS_TCP` (reliable connected).
    pub const TCP: u16 = 0x0106;
    /// `RDMA_PS_UDP`.
    pub const UDP: u16 = 0x0111;
    /// `RDMA_PS_IB`.
    pub const IB: u16 = 0x013f;
}

/// The service ID librdmacm uses for `port` in `port_space`.
pub const fn rdma_cm_service_id(port_space: u16, port: u16) -> u64 {
    ((port_space as u64) << 16) | port as u64
}

/// The port of a librdmacm service ID.
pub const fn rdma_cm_port(service_id: u64) -> u16 {
    service_id as u16
}

/// Transport service types in a REQ.
pub mod transport {
    /// Reliable connection.
    pub const RC: u8 = 0;
    /// Unreliable connection.
    pub const UC: u8 = 1;
    /// Reliable datagram.
    pub const RD: u8 = 2;
}

/// A GID for an IPv4 address: `::ffff:a.b.c.d`, as RoCEv2 uses.
pub const fn ipv4_mapped_gid(a: Ipv4Addr) -> [u8; 16] {
    let o = a.octets();
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, o[0], o[1], o[2], o[3]]
}

#[inline]
fn bits(b: u8, shift: u8, width: u8) -> u8 {
    (b >> shift) & ((1u8 << width) - 1)
}

// ---------------------------------------------------------------------------------------------
// The MAD view

fixed_view!(
    /// A read/write view of a 256-byte CM MAD: the common header and the message area.
    MadPacket,
    MAD_LEN,
    "mad"
);

impl<T: AsRef<[u8]>> MadPacket<T> {
    /// Base version (1).
    pub fn base_version(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// Management class (`0x07` for CM).
    pub fn mgmt_class(&self) -> u8 {
        self.buffer.as_ref()[1]
    }
    /// Class version (2 for CM).
    pub fn class_version(&self) -> u8 {
        self.buffer.as_ref()[2]
    }
    /// Method byte, including the response bit.
    pub fn method(&self) -> u8 {
        self.buffer.as_ref()[3]
    }
    /// Status.
    pub fn status(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 4)
    }
    /// Class-specific field.
    pub fn class_specific(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 6)
    }
    /// Transaction ID.
    pub fn tid(&self) -> u64 {
        u64_at(self.buffer.as_ref(), 8)
    }
    /// Attribute ID: which CM message this is.
    pub fn attr_id(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 16)
    }
    /// Attribute modifier.
    pub fn attr_mod(&self) -> u32 {
        u32_at(self.buffer.as_ref(), 20)
    }
    /// The 232-byte message area.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[MAD_HEADER_LEN..MAD_LEN]
    }
    /// Local communication ID (every CM message starts with it).
    pub fn local_comm_id(&self) -> u32 {
        u32_at(self.data(), 0)
    }
    /// Remote communication ID (every message but REQ has it at offset 4).
    pub fn remote_comm_id(&self) -> u32 {
        u32_at(self.data(), 4)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MadPacket<T> {
    /// Set the transaction ID.
    pub fn set_tid(&mut self, tid: u64) {
        set_u64(self.buffer.as_mut(), 8, tid);
    }
    /// The message area, writable.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[MAD_HEADER_LEN..MAD_LEN]
    }
}

// ---------------------------------------------------------------------------------------------
// Message reprs

/// One path in a REQ (primary or alternate): 44 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PathRepr {
    /// Local port LID (`0xffff` on RoCE).
    pub local_lid: u16,
    /// Remote port LID.
    pub remote_lid: u16,
    /// Local port GID.
    pub local_gid: [u8; 16],
    /// Remote port GID.
    pub remote_gid: [u8; 16],
    /// Flow label, 20 bits.
    pub flow_label: u32,
    /// Packet rate, 6 bits.
    pub packet_rate: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Service level, 4 bits.
    pub sl: u8,
    /// Subnet local.
    pub subnet_local: bool,
    /// Local ACK timeout, 5 bits.
    pub local_ack_timeout: u8,
}

impl PathRepr {
    const LEN: usize = 44;

    fn parse(b: &[u8]) -> Self {
        let w = u32_at(b, 36);
        Self {
            local_lid: u16_at(b, 0),
            remote_lid: u16_at(b, 2),
            local_gid: array_at(b, 4),
            remote_gid: array_at(b, 20),
            flow_label: w >> 12,
            packet_rate: (w & 0x3f) as u8,
            traffic_class: b[40],
            hop_limit: b[41],
            sl: bits(b[42], 4, 4),
            subnet_local: b[42] & 0x08 != 0,
            local_ack_timeout: bits(b[43], 3, 5),
        }
    }

    fn emit(&self, b: &mut [u8]) {
        set_u16(b, 0, self.local_lid);
        set_u16(b, 2, self.remote_lid);
        b[4..20].copy_from_slice(&self.local_gid);
        b[20..36].copy_from_slice(&self.remote_gid);
        set_u32(b, 36, ((self.flow_label & 0xf_ffff) << 12) | u32::from(self.packet_rate & 0x3f));
        b[40] = self.traffic_class;
        b[41] = self.hop_limit;
        b[42] = ((self.sl & 0x0f) << 4) | (u8::from(self.subnet_local) << 3);
        b[43] = (self.local_ack_timeout & 0x1f) << 3;
    }
}

/// Connection request (IBTA Vol. 1 Table 106).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReqRepr {
    /// Local communication ID.
    pub local_comm_id: u32,
    /// Vendor ID, 24 bits.
    pub vendor_id: u32,
    /// Service ID (librdmacm: [`rdma_cm_service_id`]).
    pub service_id: u64,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// Local Q_Key.
    pub local_qkey: u32,
    /// Local QPN, 24 bits.
    pub local_qpn: u32,
    /// Responder resources (outstanding RDMA READ/atomic the requester accepts).
    pub responder_resources: u8,
    /// Local EE context number, 24 bits.
    pub local_eecn: u32,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Remote EE context number, 24 bits.
    pub remote_eecn: u32,
    /// Remote CM response timeout, 5 bits.
    pub remote_cm_response_timeout: u8,
    /// Transport service type, 2 bits ([`transport`]).
    pub transport_type: u8,
    /// End-to-end flow control.
    pub e2e_flow_control: bool,
    /// Starting PSN of the requester's send queue, 24 bits.
    pub starting_psn: u32,
    /// Local CM response timeout, 5 bits.
    pub local_cm_response_timeout: u8,
    /// Retry count, 3 bits.
    pub retry_count: u8,
    /// Partition key.
    pub pkey: u16,
    /// Path MTU code, 4 bits (1 = 256 … 5 = 4096).
    pub path_mtu: u8,
    /// RDC exists.
    pub rdc_exists: bool,
    /// RNR retry count, 3 bits.
    pub rnr_retry_count: u8,
    /// Max CM retries, 4 bits.
    pub max_cm_retries: u8,
    /// SRQ.
    pub srq: bool,
    /// Extended transport type, 3 bits.
    pub extended_transport_type: u8,
    /// Primary path.
    pub primary_path: PathRepr,
    /// Alternate path (all zero when there is none).
    pub alternate_path: PathRepr,
    /// Private data (librdmacm: a [`CmaHeaderRepr`] then the user's data).
    pub private_data: [u8; private_len::REQ],
}

impl ReqRepr {
    fn parse(b: &[u8]) -> Self {
        Self {
            local_comm_id: u32_at(b, 0),
            vendor_id: u24_at(b, 5),
            service_id: u64_at(b, 8),
            local_ca_guid: u64_at(b, 16),
            local_qkey: u32_at(b, 28),
            local_qpn: u24_at(b, 32),
            responder_resources: b[35],
            local_eecn: u24_at(b, 36),
            initiator_depth: b[39],
            remote_eecn: u24_at(b, 40),
            remote_cm_response_timeout: bits(b[43], 3, 5),
            transport_type: bits(b[43], 1, 2),
            e2e_flow_control: b[43] & 1 != 0,
            starting_psn: u24_at(b, 44),
            local_cm_response_timeout: bits(b[47], 3, 5),
            retry_count: bits(b[47], 0, 3),
            pkey: u16_at(b, 48),
            path_mtu: bits(b[50], 4, 4),
            rdc_exists: b[50] & 0x08 != 0,
            rnr_retry_count: bits(b[50], 0, 3),
            max_cm_retries: bits(b[51], 4, 4),
            srq: b[51] & 0x08 != 0,
            extended_transport_type: bits(b[51], 0, 3),
            primary_path: PathRepr::parse(&b[52..52 + PathRepr::LEN]),
            alternate_path: PathRepr::parse(&b[96..96 + PathRepr::LEN]),
            private_data: array_at(b, 140),
        }
    }

    fn emit(&self, b: &mut [u8]) {
        set_u32(b, 0, self.local_comm_id);
        b[4] = 0;
        set_u24(b, 5, self.vendor_id);
        set_u64(b, 8, self.service_id);
        set_u64(b, 16, self.local_ca_guid);
        set_u32(b, 24, 0);
        set_u32(b, 28, self.local_qkey);
        set_u24(b, 32, self.local_qpn);
        b[35] = self.responder_resources;
        set_u24(b, 36, self.local_eecn);
        b[39] = self.initiator_depth;
        set_u24(b, 40, self.remote_eecn);
        b[43] = ((self.remote_cm_response_timeout & 0x1f) << 3)
            | ((self.transport_type & 0x03) << 1)
            | u8::from(self.e2e_flow_control);
        set_u24(b, 44, self.starting_psn);
        b[47] = ((self.local_cm_response_timeout & 0x1f) << 3) | (self.retry_count & 0x07);
        set_u16(b, 48, self.pkey);
        b[50] =
            ((self.path_mtu & 0x0f) << 4) | (u8::from(self.rdc_exists) << 3) | (self.rnr_retry_count & 0x07);
        b[51] = ((self.max_cm_retries & 0x0f) << 4)
            | (u8::from(self.srq) << 3)
            | (self.extended_transport_type & 0x07);
        self.primary_path.emit(&mut b[52..96]);
        self.alternate_path.emit(&mut b[96..140]);
        b[140..].copy_from_slice(&self.private_data);
    }
}

/// Reply to a REQ (IBTA Vol. 1 Table 107).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RepRepr {
    /// Local communication ID.
    pub local_comm_id: u32,
    /// Remote communication ID (the REQ's local one).
    pub remote_comm_id: u32,
    /// Local Q_Key.
    pub local_qkey: u32,
    /// Local QPN, 24 bits: where the requester sends.
    pub local_qpn: u32,
    /// Local EE context number, 24 bits.
    pub local_eecn: u32,
    /// Starting PSN of the replier's send queue, 24 bits.
    pub starting_psn: u32,
    /// Responder resources.
    pub responder_resources: u8,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Target ACK delay, 5 bits.
    pub target_ack_delay: u8,
    /// Failover accepted, 2 bits.
    pub failover_accepted: u8,
    /// End-to-end flow control.
    pub e2e_flow_control: bool,
    /// RNR retry count, 3 bits.
    pub rnr_retry_count: u8,
    /// SRQ.
    pub srq: bool,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// Private data.
    pub private_data: [u8; private_len::REP],
}

impl RepRepr {
    fn parse(b: &[u8]) -> Self {
        Self {
            local_comm_id: u32_at(b, 0),
            remote_comm_id: u32_at(b, 4),
            local_qkey: u32_at(b, 8),
            local_qpn: u24_at(b, 12),
            local_eecn: u24_at(b, 16),
            starting_psn: u24_at(b, 20),
            responder_resources: b[24],
            initiator_depth: b[25],
            target_ack_delay: bits(b[26], 3, 5),
            failover_accepted: bits(b[26], 1, 2),
            e2e_flow_control: b[26] & 1 != 0,
            rnr_retry_count: bits(b[27], 5, 3),
            srq: b[27] & 0x10 != 0,
            local_ca_guid: u64_at(b, 28),
            private_data: array_at(b, 36),
        }
    }

    fn emit(&self, b: &mut [u8]) {
        set_u32(b, 0, self.local_comm_id);
        set_u32(b, 4, self.remote_comm_id);
        set_u32(b, 8, self.local_qkey);
        set_u32(b, 12, (self.local_qpn & 0xff_ffff) << 8);
        set_u32(b, 16, (self.local_eecn & 0xff_ffff) << 8);
        set_u32(b, 20, (self.starting_psn & 0xff_ffff) << 8);
        b[24] = self.responder_resources;
        b[25] = self.initiator_depth;
        b[26] = ((self.target_ack_delay & 0x1f) << 3)
            | ((self.failover_accepted & 0x03) << 1)
            | u8::from(self.e2e_flow_control);
        b[27] = ((self.rnr_retry_count & 0x07) << 5) | (u8::from(self.srq) << 4);
        set_u64(b, 28, self.local_ca_guid);
        b[36..].copy_from_slice(&self.private_data);
    }
}

/// Ready to use (IBTA Vol. 1 Table 108).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RtuRepr {
    /// Local communication ID.
    pub local_comm_id: u32,
    /// Remote communication ID.
    pub remote_comm_id: u32,
    /// Private data.
    pub private_data: [u8; private_len::RTU],
}

/// Reject (IBTA Vol. 1 Table 109).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RejRepr {
    /// Local communication ID.
    pub local_comm_id: u32,
    /// Remote communication ID.
    pub remote_comm_id: u32,
    /// Which message is rejected, 2 bits (0 REQ, 1 REP, 2 other).
    pub message_rejected: u8,
    /// Reject info length, 7 bits.
    pub reject_info_len: u8,
    /// Reason (IBTA Table 112; 28 = consumer reject).
    pub reason: u16,
    /// Additional reject information.
    pub ari: [u8; REJ_ARI_LEN],
    /// Private data.
    pub private_data: [u8; private_len::REJ],
}

/// Disconnection request (IBTA Vol. 1 Table 110).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DreqRepr {
    /// Local communication ID.
    pub local_comm_id: u32,
    /// Remote communication ID.
    pub remote_comm_id: u32,
    /// Remote QPN or EECN, 24 bits.
    pub remote_qpn: u32,
    /// Private data.
    pub private_data: [u8; private_len::DREQ],
}

/// Reply to a DREQ (IBTA Vol. 1 Table 111).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DrepRepr {
    /// Local communication ID.
    pub local_comm_id: u32,
    /// Remote communication ID.
    pub remote_comm_id: u32,
    /// Private data.
    pub private_data: [u8; private_len::DREP],
}

/// One CM message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmMessage {
    /// REQ.
    Req(ReqRepr),
    /// REP.
    Rep(RepRepr),
    /// RTU.
    Rtu(RtuRepr),
    /// REJ.
    Rej(RejRepr),
    /// DREQ.
    Dreq(DreqRepr),
    /// DREP.
    Drep(DrepRepr),
}

impl CmMessage {
    /// The attribute ID of this message.
    pub const fn attr_id(&self) -> u16 {
        match self {
            Self::Req(_) => attr::REQ,
            Self::Rep(_) => attr::REP,
            Self::Rtu(_) => attr::RTU,
            Self::Rej(_) => attr::REJ,
            Self::Dreq(_) => attr::DREQ,
            Self::Drep(_) => attr::DREP,
        }
    }

    /// The sender's communication ID.
    pub const fn local_comm_id(&self) -> u32 {
        match self {
            Self::Req(m) => m.local_comm_id,
            Self::Rep(m) => m.local_comm_id,
            Self::Rtu(m) => m.local_comm_id,
            Self::Rej(m) => m.local_comm_id,
            Self::Dreq(m) => m.local_comm_id,
            Self::Drep(m) => m.local_comm_id,
        }
    }

    fn parse(attr_id: u16, b: &[u8]) -> Result<Self> {
        Ok(match attr_id {
            attr::REQ => Self::Req(ReqRepr::parse(b)),
            attr::REP => Self::Rep(RepRepr::parse(b)),
            attr::RTU => Self::Rtu(RtuRepr {
                local_comm_id: u32_at(b, 0),
                remote_comm_id: u32_at(b, 4),
                private_data: array_at(b, 8),
            }),
            attr::REJ => Self::Rej(RejRepr {
                local_comm_id: u32_at(b, 0),
                remote_comm_id: u32_at(b, 4),
                message_rejected: bits(b[8], 6, 2),
                reject_info_len: bits(b[9], 1, 7),
                reason: u16_at(b, 10),
                ari: array_at(b, 12),
                private_data: array_at(b, 84),
            }),
            attr::DREQ => Self::Dreq(DreqRepr {
                local_comm_id: u32_at(b, 0),
                remote_comm_id: u32_at(b, 4),
                remote_qpn: u24_at(b, 8),
                private_data: array_at(b, 12),
            }),
            attr::DREP => Self::Drep(DrepRepr {
                local_comm_id: u32_at(b, 0),
                remote_comm_id: u32_at(b, 4),
                private_data: array_at(b, 8),
            }),
            a => {
                return Err(Error::Unsupported { field: "mad.attr_id", value: u64::from(a) });
            }
        })
    }

    fn emit(&self, b: &mut [u8]) {
        match self {
            Self::Req(m) => m.emit(b),
            Self::Rep(m) => m.emit(b),
            Self::Rtu(m) => {
                set_u32(b, 0, m.local_comm_id);
                set_u32(b, 4, m.remote_comm_id);
                b[8..].copy_from_slice(&m.private_data);
            }
            Self::Rej(m) => {
                set_u32(b, 0, m.local_comm_id);
                set_u32(b, 4, m.remote_comm_id);
                b[8] = (m.message_rejected & 0x03) << 6;
                b[9] = (m.reject_info_len & 0x7f) << 1;
                set_u16(b, 10, m.reason);
                b[12..84].copy_from_slice(&m.ari);
                b[84..].copy_from_slice(&m.private_data);
            }
            Self::Dreq(m) => {
                set_u32(b, 0, m.local_comm_id);
                set_u32(b, 4, m.remote_comm_id);
                set_u32(b, 8, (m.remote_qpn & 0xff_ffff) << 8);
                b[12..].copy_from_slice(&m.private_data);
            }
            Self::Drep(m) => {
                set_u32(b, 0, m.local_comm_id);
                set_u32(b, 4, m.remote_comm_id);
                b[8..].copy_from_slice(&m.private_data);
            }
        }
    }
}

/// A whole CM MAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmMadRepr {
    /// Method byte, including the response bit ([`METHOD_SEND`] for every CM message).
    pub method: u8,
    /// Status.
    pub status: u16,
    /// Class-specific field.
    pub class_specific: u16,
    /// Transaction ID.
    pub tid: u64,
    /// Attribute modifier.
    pub attr_mod: u32,
    /// The message.
    pub message: CmMessage,
}

impl CmMadRepr {
    /// A `Send` MAD carrying `message`.
    pub const fn send(tid: u64, message: CmMessage) -> Self {
        Self { method: METHOD_SEND, status: 0, class_specific: 0, tid, attr_mod: 0, message }
    }

    /// Parse a MAD (the UD SEND payload). Base version, class and class version must be those of
    /// CM; unknown attributes are [`Error::Unsupported`].
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let p = MadPacket::new_checked(buf)?;
        if p.base_version() != BASE_VERSION {
            return Err(Error::Unsupported { field: "mad.base_version", value: u64::from(p.base_version()) });
        }
        if p.mgmt_class() != MGMT_CLASS_CM {
            return Err(Error::Unsupported { field: "mad.mgmt_class", value: u64::from(p.mgmt_class()) });
        }
        if p.class_version() != CM_CLASS_VERSION {
            return Err(Error::Unsupported {
                field: "mad.class_version",
                value: u64::from(p.class_version()),
            });
        }
        Ok(Self {
            method: p.method(),
            status: p.status(),
            class_specific: p.class_specific(),
            tid: p.tid(),
            attr_mod: p.attr_mod(),
            message: CmMessage::parse(p.attr_id(), p.data())?,
        })
    }

    /// Length: 256.
    pub const fn buffer_len(&self) -> usize {
        MAD_LEN
    }

    /// Write the 256-byte MAD.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        space("mad", MAD_LEN, buf.len())?;
        let b = &mut buf[..MAD_LEN];
        b[0] = BASE_VERSION;
        b[1] = MGMT_CLASS_CM;
        b[2] = CM_CLASS_VERSION;
        b[3] = self.method;
        set_u16(b, 4, self.status);
        set_u16(b, 6, self.class_specific);
        set_u64(b, 8, self.tid);
        set_u16(b, 16, self.message.attr_id());
        set_u16(b, 18, 0);
        set_u32(b, 20, self.attr_mod);
        self.message.emit(&mut b[MAD_HEADER_LEN..]);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// librdmacm private data header

/// Length of librdmacm's `struct cma_hdr`.
pub const CMA_HEADER_LEN: usize = 36;

fixed_view!(
    /// A read/write view of librdmacm's private-data header.
    CmaHeader,
    CMA_HEADER_LEN,
    "cma"
);

impl<T: AsRef<[u8]>> CmaHeader<T> {
    /// CMA version (0).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// IP version (4 or 6), from the high nibble.
    pub fn ip_version(&self) -> u8 {
        self.buffer.as_ref()[1] >> 4
    }
    /// The initiator's source port.
    pub fn port(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 2)
    }
    /// Source address field (16 bytes).
    pub fn src_addr(&self) -> [u8; 16] {
        array_at(self.buffer.as_ref(), 4)
    }
    /// Destination address field (16 bytes).
    pub fn dst_addr(&self) -> [u8; 16] {
        array_at(self.buffer.as_ref(), 20)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> CmaHeader<T> {
    /// Set the initiator's source port.
    pub fn set_port(&mut self, p: u16) {
        set_u16(self.buffer.as_mut(), 2, p);
    }
}

/// Addresses in a CMA header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmaAddrs {
    /// IPv4 (in the last four bytes of each field).
    V4 {
        /// Source.
        src: Ipv4Addr,
        /// Destination.
        dst: Ipv4Addr,
    },
    /// IPv6.
    V6 {
        /// Source.
        src: [u8; 16],
        /// Destination.
        dst: [u8; 16],
    },
}

/// librdmacm's private-data header at the start of a REQ's private data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmaHeaderRepr {
    /// CMA version (0).
    pub version: u8,
    /// The initiator's source port.
    pub port: u16,
    /// Source and destination addresses.
    pub addrs: CmaAddrs,
}

impl CmaHeaderRepr {
    /// Parse the header at the start of `buf`. An IP version other than 4 or 6 is
    /// [`Error::Unsupported`].
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = CmaHeader::new_checked(buf)?;
        let (s, d) = (h.src_addr(), h.dst_addr());
        let addrs = match h.ip_version() {
            4 => CmaAddrs::V4 {
                src: Ipv4Addr::new(s[12], s[13], s[14], s[15]),
                dst: Ipv4Addr::new(d[12], d[13], d[14], d[15]),
            },
            6 => CmaAddrs::V6 { src: s, dst: d },
            v => {
                return Err(Error::Unsupported { field: "cma.ip_version", value: u64::from(v) });
            }
        };
        Ok(Self { version: h.version(), port: h.port(), addrs })
    }

    /// Length: 36.
    pub const fn buffer_len(&self) -> usize {
        CMA_HEADER_LEN
    }

    /// Write the header.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        space("cma", CMA_HEADER_LEN, buf.len())?;
        let b = &mut buf[..CMA_HEADER_LEN];
        b.fill(0);
        b[0] = self.version;
        set_u16(b, 2, self.port);
        match self.addrs {
            CmaAddrs::V4 { src, dst } => {
                b[1] = 4 << 4;
                b[16..20].copy_from_slice(&src.octets());
                b[32..36].copy_from_slice(&dst.octets());
            }
            CmaAddrs::V6 { src, dst } => {
                b[1] = 6 << 4;
                b[4..20].copy_from_slice(&src);
                b[20..36].copy_from_slice(&dst);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
