//! Builders that write a whole frame — Ethernet, IPv4, UDP and a payload — into a caller's
//! buffer with no allocation. [`RoceStack`] adds the RoCEv2 headers and the ICRC for any packet;
//! [`RoceTemplate`] is the per-QP fast path for a stream of packets of one shape (one opcode and
//! payload length), which is what the DTA translator and the NIC agent send.

use core::net::{Ipv4Addr, SocketAddrV4};

use crate::error::{Error, Result, space};
use crate::ethernet::{EtherType, EthernetAddress, EthernetRepr, VlanRepr};
use crate::ipv4::{self, Ipv4Repr};
use crate::roce::icrc::IcrcPrefix;
use crate::roce::{
    BthRepr, ICRC_LEN, Layout, Opcode, PSN_MASK, RethRepr, RoceExt, RoceRepr, icrc, write_tail,
};
use crate::udp::{self, UdpPacket, UdpRepr};

/// The addressing of one Ethernet/IPv4/UDP flow: everything the headers carry but the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpFlow {
    /// Ethernet source.
    pub eth_src: EthernetAddress,
    /// Ethernet destination.
    pub eth_dst: EthernetAddress,
    /// 802.1Q tag, if any.
    pub vlan: Option<VlanRepr>,
    /// IPv4 source.
    pub ip_src: Ipv4Addr,
    /// IPv4 destination.
    pub ip_dst: Ipv4Addr,
    /// DSCP.
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: u8,
    /// TTL.
    pub ttl: u8,
    /// IPv4 identification.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
}

impl UdpFlow {
    /// A datagram from `src` to `dst` with the plain IPv4 header our senders write: no VLAN,
    /// DSCP and ECN 0, TTL 64, DF set, identification 0 (override fields with `..`). The UDP
    /// port, the soft-RNIC on a UDP socket and the load generator also assume it for what the
    /// kernel sent, since a socket does not hand its header over — older kernels wrote
    /// identification 0 with DF; recent ones write their own (README, the collector section).
    pub const fn host_udp(
        eth_src: EthernetAddress,
        eth_dst: EthernetAddress,
        src: SocketAddrV4,
        dst: SocketAddrV4,
    ) -> Self {
        Self {
            eth_src,
            eth_dst,
            vlan: None,
            ip_src: *src.ip(),
            ip_dst: *dst.ip(),
            dscp: 0,
            ecn: 0,
            ttl: 64,
            ident: 0,
            dont_frag: true,
            src_port: src.port(),
            dst_port: dst.port(),
        }
    }

    /// Length of the Ethernet, IPv4 and UDP headers.
    pub const fn headers_len(&self) -> usize {
        let eth = if self.vlan.is_some() { 18 } else { 14 };
        eth + ipv4::HEADER_LEN + udp::HEADER_LEN
    }

    fn ethernet(&self) -> EthernetRepr {
        EthernetRepr {
            src_addr: self.eth_src,
            dst_addr: self.eth_dst,
            vlan: self.vlan,
            ethertype: EtherType::IPV4,
        }
    }

    /// Write the Ethernet, IPv4 (with checksum) and UDP (checksum 0) headers for a UDP payload of
    /// `payload_len` bytes. Returns the header length; the payload goes right after.
    #[inline]
    pub fn emit_headers(&self, payload_len: usize, buf: &mut [u8]) -> Result<usize> {
        let eth = self.ethernet();
        let l2 = eth.buffer_len();
        let total = self.headers_len();
        space("udp_flow", total, buf.len())?;
        eth.emit(buf)?;
        Ipv4Repr {
            src_addr: self.ip_src,
            dst_addr: self.ip_dst,
            protocol: ipv4::protocol::UDP,
            payload_len: udp::HEADER_LEN + payload_len,
            ttl: self.ttl,
            dscp: self.dscp,
            ecn: self.ecn,
            ident: self.ident,
            dont_frag: self.dont_frag,
            more_frags: false,
            frag_offset: 0,
        }
        .emit(&mut buf[l2..])?;
        UdpRepr { src_port: self.src_port, dst_port: self.dst_port, payload_len }
            .emit(&mut buf[l2 + ipv4::HEADER_LEN..])?;
        Ok(total)
    }

    /// Write a whole frame: headers, then `payload_len` bytes written by `payload`, then the
    /// UDP checksum if `udp_checksum` (otherwise 0). Returns the frame length.
    pub fn emit_with(
        &self,
        payload_len: usize,
        udp_checksum: bool,
        buf: &mut [u8],
        payload: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<usize> {
        let h = self.headers_len();
        space("udp_flow", h + payload_len, buf.len())?;
        self.emit_headers(payload_len, buf)?;
        payload(&mut buf[h..h + payload_len])?;
        if udp_checksum {
            let udp_at = h - udp::HEADER_LEN;
            UdpPacket::new_unchecked(&mut buf[udp_at..h + payload_len])
                .fill_checksum(self.ip_src, self.ip_dst);
        }
        Ok(h + payload_len)
    }
}

/// A whole RoCEv2 packet: a flow's addressing and a [`RoceRepr`]. The UDP destination port is
/// always 4791, whatever `flow.dst_port` says; the UDP checksum is 0 as RoCEv2 requires, and the
/// ICRC is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceStack<'a> {
    /// Addressing; `src_port` gives ECMP entropy per QP.
    pub flow: UdpFlow,
    /// BTH, extension headers and payload.
    pub roce: RoceRepr<'a>,
}

impl RoceStack<'_> {
    /// Frame length.
    pub fn buffer_len(&self) -> usize {
        self.flow.headers_len() + self.roce.buffer_len()
    }

    /// Write the frame into `buf` and return its length: Ethernet / IPv4 / UDP / BTH /
    /// (extension headers) / payload / pad / ICRC.
    #[inline]
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let flow = UdpFlow { dst_port: udp::port::ROCE_V2, ..self.flow };
        let roce_len = self.roce.buffer_len();
        let h = flow.headers_len();
        space("roce_stack", h + roce_len, buf.len())?;
        flow.emit_headers(roce_len, buf)?;
        self.roce.emit(&mut buf[h..])?;
        let ip_at = h - udp::HEADER_LEN - ipv4::HEADER_LEN;
        let ip = &mut buf[ip_at..h + roce_len];
        let crc = icrc::compute_unchecked(ip, ipv4::HEADER_LEN);
        let n = ip.len();
        ip[n - 4..].copy_from_slice(&crc.to_le_bytes());
        Ok(h + roce_len)
    }
}

/// Bytes of the BTH that are the same in every packet of a template: all but AckReq and PSN.
const BTH_CONSTANT: usize = 8;
/// Longest constant prefix: tagged Ethernet, IPv4, UDP, the constant BTH bytes.
const PREFIX_MAX: usize = 18 + ipv4::HEADER_LEN + udp::HEADER_LEN + BTH_CONSTANT;

/// Where an RDMA request lands in the responder's memory: virtual address and R_Key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RemoteAddr {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key of the memory region.
    pub rkey: u32,
}

/// A prebuilt RoCEv2 packet shape for one queue pair, one opcode and one payload length.
///
/// Everything but the PSN, the AckReq bit, the extension headers and the payload is the same in
/// every packet of a QP's stream: addresses, ports, IP length and checksum (the identification
/// is the flow's, constant, as RFC 6864 allows with DF set), UDP length, BTH opcode, P_Key and
/// destination QP. `new` writes those bytes once, and also folds the ICRC over the blocks that
/// only they cover; `emit` copies them, writes the rest and folds the remaining blocks.
#[derive(Debug, Clone)]
pub struct RoceTemplate {
    prefix: [u8; PREFIX_MAX],
    l2_len: usize,
    opcode: Opcode,
    layout: Layout,
    payload_len: usize,
    frame_len: usize,
    icrc: IcrcPrefix,
    /// `Some(has immediate data)` when the opcode carries a RETH and a payload and nothing
    /// else (an RDMA WRITE Only, with or without immediate): the shape
    /// [`write_rdma_write`](Self::write_rdma_write) accepts, decided once.
    rdma_write_imm: Option<bool>,
}

impl RoceTemplate {
    /// A template for packets of `flow` (UDP destination forced to 4791) with this BTH
    /// (`psn` and `ack_req` are per packet and ignored here) carrying `payload_len` bytes.
    pub fn new(flow: &UdpFlow, bth: &BthRepr, payload_len: usize) -> Result<Self> {
        let layout = bth
            .opcode
            .layout()
            .ok_or(Error::Unsupported { field: "bth.opcode", value: u64::from(bth.opcode.0) })?;
        if payload_len > 0 && !layout.payload {
            return Err(Error::Invalid { field: "roce.payload", value: payload_len as u64 });
        }
        let pad = crate::roce::pad_len(payload_len);
        let roce_len = BthRepr::LEN + layout.ext_len() + payload_len + pad + ICRC_LEN;
        let flow = UdpFlow { dst_port: udp::port::ROCE_V2, ..*flow };
        let mut prefix = [0u8; PREFIX_MAX];
        let h = flow.emit_headers(roce_len, &mut prefix)?;
        let bth = BthRepr { pad_count: pad as u8, psn: 0, ack_req: false, ..*bth };
        let mut bth_bytes = [0u8; BthRepr::LEN];
        bth.write(&mut bth_bytes);
        prefix[h..h + BTH_CONSTANT].copy_from_slice(&bth_bytes[..BTH_CONSTANT]);
        let l2_len = h - udp::HEADER_LEN - ipv4::HEADER_LEN;
        let ip_len = ipv4::HEADER_LEN + udp::HEADER_LEN + roce_len;
        let icrc = IcrcPrefix::new(&prefix[l2_len..h + BTH_CONSTANT], ip_len);
        let rdma_write_imm =
            (layout.reth && !layout.atomic_eth && !layout.deth && !layout.aeth).then_some(layout.immdt);
        Ok(Self {
            prefix,
            l2_len,
            opcode: bth.opcode,
            layout,
            payload_len,
            frame_len: h + roce_len,
            icrc,
            rdma_write_imm,
        })
    }

    /// Length of every frame this template emits.
    pub const fn frame_len(&self) -> usize {
        self.frame_len
    }

    /// The opcode of this template.
    pub const fn opcode(&self) -> Opcode {
        self.opcode
    }

    /// Write one packet: the template's constant bytes, then AckReq and PSN, the extension
    /// headers (which must be those the opcode calls for), the payload (exactly the template's
    /// length), pad, and the ICRC. Returns the frame length.
    ///
    /// For a burst, [`write`](Self::write) every packet and then [`seal`](Self::seal) them:
    /// computing a packet's ICRC right after writing it waits for its stores to retire.
    #[inline]
    pub fn emit(
        &self,
        buf: &mut [u8],
        psn: u32,
        ack_req: bool,
        ext: &RoceExt,
        payload: &[u8],
    ) -> Result<usize> {
        let n = self.write(buf, psn, ack_req, ext, payload)?;
        self.seal(&mut buf[..n]);
        Ok(n)
    }

    /// Write one packet as [`emit`](Self::emit) does, with a zero ICRC; [`seal`](Self::seal)
    /// completes it. Returns the frame length.
    #[inline]
    pub fn write(
        &self,
        buf: &mut [u8],
        psn: u32,
        ack_req: bool,
        ext: &RoceExt,
        payload: &[u8],
    ) -> Result<usize> {
        if payload.len() != self.payload_len {
            return Err(Error::Invalid { field: "roce.payload", value: payload.len() as u64 });
        }
        if ext.layout(self.layout.payload) != self.layout {
            ext.check(self.opcode, payload.len())?;
        }
        let tail = self.head(buf, psn, ack_req)?;
        write_tail(tail, ext, payload)?;
        Ok(self.frame_len)
    }

    /// The hot path of a WRITE template: an RDMA WRITE of `payload` to `va` (RETH, then the
    /// immediate data if the template's opcode has it), written field by field. Same result as
    /// [`write`](Self::write) with the equivalent [`RoceExt`]; unsealed.
    #[inline]
    pub fn write_rdma_write(
        &self,
        buf: &mut [u8],
        psn: u32,
        ack_req: bool,
        at: RemoteAddr,
        imm: Option<u32>,
        payload: &[u8],
    ) -> Result<usize> {
        let RemoteAddr { va, rkey } = at;
        if self.rdma_write_imm != Some(imm.is_some()) {
            return Err(Error::Invalid { field: "roce.reth", value: 0 });
        }
        if payload.len() != self.payload_len {
            return Err(Error::Invalid { field: "roce.payload", value: payload.len() as u64 });
        }
        // Fixed-size pieces split off the frame: one length check each, none per field. (The
        // template's lengths make every split succeed once `head` has.)
        let short = Error::NoSpace { field: "roce_template", need: self.frame_len, have: buf.len() };
        let t = self.head(buf, psn, ack_req)?;
        let (reth, rest) = t.split_first_chunk_mut::<{ RethRepr::LEN }>().ok_or(short)?;
        reth[0..8].copy_from_slice(&va.to_be_bytes());
        reth[8..12].copy_from_slice(&rkey.to_be_bytes());
        reth[12..16].copy_from_slice(&(payload.len() as u32).to_be_bytes());
        let rest = match imm {
            Some(imm) => {
                let (i, rest) = rest.split_first_chunk_mut::<4>().ok_or(short)?;
                *i = imm.to_be_bytes();
                rest
            }
            None => rest,
        };
        // What is left is the payload, 0-3 bytes of pad, and the ICRC (the template's length).
        let (data, tail) = rest.split_at_mut_checked(payload.len()).ok_or(short)?;
        crate::field::copy_short(data, payload);
        // Zero the pad and the ICRC (4 to 7 bytes) with two fixed-size stores: `zero_short`
        // without its dispatch on the length, which costs 6 instructions a packet here.
        *tail.first_chunk_mut::<4>().ok_or(short)? = [0; 4];
        *tail.last_chunk_mut::<ICRC_LEN>().ok_or(short)? = [0; ICRC_LEN];
        Ok(self.frame_len)
    }

    /// The hot path of an atomic template (FETCH_ADD or CMP_SWAP): the AtomicETH written field
    /// by field; unsealed.
    #[inline]
    pub fn write_atomic(
        &self,
        buf: &mut [u8],
        psn: u32,
        ack_req: bool,
        at: RemoteAddr,
        swap_add: u64,
        compare: u64,
    ) -> Result<usize> {
        let RemoteAddr { va, rkey } = at;
        if !self.layout.atomic_eth {
            return Err(Error::Invalid { field: "roce.atomic_eth", value: 0 });
        }
        let t = self.head(buf, psn, ack_req)?;
        t[0..8].copy_from_slice(&va.to_be_bytes());
        t[8..12].copy_from_slice(&rkey.to_be_bytes());
        t[12..20].copy_from_slice(&swap_add.to_be_bytes());
        t[20..28].copy_from_slice(&compare.to_be_bytes());
        t[28..32].fill(0);
        Ok(self.frame_len)
    }

    /// Copy the constant prefix, write AckReq and PSN; the rest of the frame (after the BTH)
    /// is returned for the caller.
    #[inline(always)]
    fn head<'b>(&self, buf: &'b mut [u8], psn: u32, ack_req: bool) -> Result<&'b mut [u8]> {
        space("roce_template", self.frame_len, buf.len())?;
        let b = &mut buf[..self.frame_len];
        let p = self.l2_len + ipv4::HEADER_LEN + udp::HEADER_LEN + BTH_CONSTANT;
        // Two fixed-size copies rather than one of variable length, so no call to memcpy.
        if self.l2_len == 14 {
            b[..50].copy_from_slice(&self.prefix[..50]);
        } else {
            b[..PREFIX_MAX].copy_from_slice(&self.prefix);
        }
        let word = (u32::from(ack_req) << 31) | (psn & PSN_MASK);
        b[p..p + 4].copy_from_slice(&word.to_be_bytes());
        Ok(&mut b[p + 4..])
    }

    /// Compute and store the ICRC of a frame this template wrote (`frame` is exactly
    /// [`frame_len`](Self::frame_len) bytes; anything else is left unsealed, as a packet whose
    /// ICRC a receiver rejects).
    #[inline]
    pub fn seal(&self, frame: &mut [u8]) {
        if frame.len() != self.frame_len {
            return;
        }
        let ip = &mut frame[self.l2_len..];
        let crc = self.icrc.compute(ip);
        let n = ip.len();
        ip[n - ICRC_LEN..].copy_from_slice(&crc.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::{BthRepr, Opcode, RethRepr};

    /// The addressing of scapy's default frame in `write_only_matches_scapy`, also used by the
    /// template tests.
    pub(super) fn flow() -> UdpFlow {
        UdpFlow {
            eth_src: EthernetAddress([0x02, 0xfc, 0, 0, 0, 1]),
            eth_dst: EthernetAddress([0x02, 0xfc, 0, 0, 0, 5]),
            vlan: None,
            ip_src: Ipv4Addr::new(10, 0, 0, 1),
            ip_dst: Ipv4Addr::new(10, 0, 0, 2),
            dscp: 0,
            ecn: 0,
            ttl: 64,
            ident: 1,
            dont_frag: false,
            src_port: 1234,
            dst_port: 0,
        }
    }

    #[test]
    fn write_only_matches_scapy() {
        // Ether(dst="02:fc:00:00:00:05", src="02:fc:00:00:00:01")/IP(src="10.0.0.1",
        // dst="10.0.0.2")/UDP(sport=1234,dport=4791,chksum=0)/BTH(opcode=0x0a,dqpn=0x12,psn=5)/
        // Raw(16 zero bytes + b"abcdefgh"), as built by scapy 2.5: an 82-byte WRITE.
        let expect = "02fc0000000502fc0000000108004500004400010000401166a60a0000010a00000204d212b70030\
                      00000a00ffff0000001200000005000000000000000000000000000000006162636465666768ee83fcd7";
        let mut roce = RoceRepr::new(
            BthRepr {
                opcode: Opcode::RC_RDMA_WRITE_ONLY,
                pkey: 0xffff,
                dest_qp: 0x12,
                psn: 5,
                ..Default::default()
            },
            b"abcdefgh",
        );
        roce.ext.reth = Some(RethRepr { va: 0, rkey: 0, dma_len: 0 });
        // The scapy packet carries an all-zero RETH, so its DMA length (0) is not the payload's;
        // the builder writes what it is given.
        let mut buf = [0u8; 128];
        let n = RoceStack { flow: flow(), roce }.emit(&mut buf).unwrap();
        assert_eq!(n, 82);
        let got: String = buf[..n].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, expect);
    }
}

#[cfg(test)]
mod template_tests {
    use super::*;
    use crate::ethernet::VlanRepr;
    use crate::roce::{AethRepr, AtomicEthRepr, DethRepr, ImmDtRepr, RethRepr, Syndrome};

    /// The field-by-field WRITE and atomic writers give the same frames as `emit` with the
    /// equivalent extension headers, and refuse a template of another shape.
    #[test]
    fn specialised_writers_match_emit() {
        let payload: [u8; 40] = core::array::from_fn(|i| i as u8 + 1);
        let bth = |opcode| BthRepr { opcode, pkey: 0xffff, dest_qp: 0x33, ..Default::default() };
        for len in 0..=40 {
            for imm in [None, Some(0xabcd_0123u32)] {
                let op = if imm.is_some() {
                    Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE
                } else {
                    Opcode::RC_RDMA_WRITE_ONLY
                };
                let t = RoceTemplate::new(&super::tests::flow(), &bth(op), len).unwrap();
                let ext = RoceExt {
                    reth: Some(RethRepr { va: 0x1122_3344_5566_7788, rkey: 0x99, dma_len: len as u32 }),
                    immdt: imm.map(|imm| ImmDtRepr { imm }),
                    ..RoceExt::default()
                };
                let (mut a, mut b) = ([0xeeu8; 160], [0x11u8; 160]);
                let n = t.emit(&mut a, 0x12_3456, true, &ext, &payload[..len]).unwrap();
                let m = t
                    .write_rdma_write(
                        &mut b,
                        0x12_3456,
                        true,
                        RemoteAddr { va: 0x1122_3344_5566_7788, rkey: 0x99 },
                        imm,
                        &payload[..len],
                    )
                    .unwrap();
                t.seal(&mut b[..m]);
                assert_eq!(&a[..n], &b[..m], "len {len} imm {imm:?}");
                assert!(
                    t.write_rdma_write(
                        &mut b,
                        0,
                        false,
                        RemoteAddr::default(),
                        imm.xor(Some(1)),
                        &payload[..len]
                    )
                    .is_err()
                );
            }
        }
        for op in [Opcode::RC_FETCH_ADD, Opcode::RC_COMPARE_SWAP] {
            let t = RoceTemplate::new(&super::tests::flow(), &bth(op), 0).unwrap();
            let ext = RoceExt {
                atomic_eth: Some(AtomicEthRepr { va: 0x40, rkey: 7, swap_add: 5, compare: 9 }),
                ..RoceExt::default()
            };
            let (mut a, mut b) = ([0xeeu8; 128], [0x11u8; 128]);
            let n = t.emit(&mut a, 3, true, &ext, &[]).unwrap();
            let m = t.write_atomic(&mut b, 3, true, RemoteAddr { va: 0x40, rkey: 7 }, 5, 9).unwrap();
            t.seal(&mut b[..m]);
            assert_eq!(&a[..n], &b[..m]);
            assert!(t.write_rdma_write(&mut b, 0, false, RemoteAddr::default(), None, &[]).is_err());
        }
    }

    /// Every supported opcode, payload lengths 0..80, with and without a VLAN tag: the template
    /// writes the same bytes as the general builder.
    #[test]
    fn template_matches_general_builder() {
        // Masked fields (TOS, TTL) non-zero, so the precomputed prefix fold is exercised on them.
        let mut flow = UdpFlow { dscp: 26, ecn: 2, ttl: 17, ..super::tests::flow() };
        let payload: [u8; 80] = core::array::from_fn(|i| i as u8 ^ 0x5a);
        for vlan in [None, Some(VlanRepr { pcp: 3, dei: false, vid: 7 })] {
            flow.vlan = vlan;
            for op in 0..=255u8 {
                let Some(layout) = Opcode(op).layout() else {
                    continue;
                };
                let max = if layout.payload { 80 } else { 0 };
                for len in 0..=max {
                    if op == Opcode::CNP.0 && len != 16 {
                        continue;
                    }
                    let bth = BthRepr {
                        opcode: Opcode(op),
                        pkey: 0xffff,
                        dest_qp: 0x123456,
                        migreq: true,
                        ..Default::default()
                    };
                    let t = RoceTemplate::new(&flow, &bth, len).unwrap();
                    let ext = RoceExt {
                        deth: layout.deth.then_some(DethRepr { qkey: 0x8001_0000, src_qp: 1 }),
                        reth: layout.reth.then_some(RethRepr {
                            va: 0x1122_3344_5566_7788 + len as u64,
                            rkey: 9,
                            dma_len: len as u32,
                        }),
                        atomic_eth: layout.atomic_eth.then_some(AtomicEthRepr {
                            va: 64,
                            rkey: 3,
                            swap_add: 5,
                            compare: 0,
                        }),
                        aeth: layout
                            .aeth
                            .then_some(AethRepr { syndrome: Syndrome::Ack { credits: 31 }, msn: 77 }),
                        atomic_ack_eth: layout
                            .atomic_ack_eth
                            .then_some(crate::roce::AtomicAckEthRepr { original: 8 }),
                        immdt: layout.immdt.then_some(ImmDtRepr { imm: 0xdead_beef }),
                    };
                    let psn = 0x00ab_cdef ^ len as u32;
                    let mut a = [0u8; 256];
                    let n = t.emit(&mut a, psn, len % 2 == 1, &ext, &payload[..len]).unwrap();
                    let general = RoceStack {
                        flow,
                        roce: RoceRepr {
                            bth: BthRepr { psn, ack_req: len % 2 == 1, ..bth },
                            ext,
                            payload: &payload[..len],
                        },
                    };
                    let mut b = [0u8; 256];
                    let m = general.emit(&mut b).unwrap();
                    assert_eq!(n, m);
                    assert_eq!(&a[..n], &b[..m], "opcode {op:#x} len {len} vlan {vlan:?}");
                    icrc::verify(&a[t.l2_len..n]).unwrap();
                }
            }
        }
    }

    #[test]
    fn template_rejects_the_wrong_shape() {
        let bth = BthRepr { opcode: Opcode::RC_RDMA_WRITE_ONLY, ..Default::default() };
        let t = RoceTemplate::new(&super::tests::flow(), &bth, 8).unwrap();
        let mut buf = [0u8; 128];
        let ext = RoceExt { reth: Some(RethRepr::default()), ..Default::default() };
        assert_eq!(t.emit(&mut buf, 0, false, &ext, &[0; 4]).unwrap_err().field(), "roce.payload");
        assert_eq!(
            t.emit(&mut buf, 0, false, &RoceExt::default(), &[0; 8]).unwrap_err().field(),
            "roce.reth"
        );
        assert_eq!(t.emit(&mut buf[..40], 0, false, &ext, &[0; 8]).unwrap_err().field(), "roce_template");
        let ack = BthRepr { opcode: Opcode::RC_ACKNOWLEDGE, ..Default::default() };
        assert_eq!(RoceTemplate::new(&super::tests::flow(), &ack, 4).unwrap_err().field(), "roce.payload");
    }
}
