//! From this crate's decisions to `wire` reprs: the BTH and extension headers of a request,
//! an acknowledgement, or a CM MAD in a UD SEND. The caller adds the addressing
//! ([`wire::stack::RoceStack`]) or uses a per-QP [`wire::stack::RoceTemplate`].

use wire::roce::{
    AethRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, DEFAULT_PKEY, DethRepr, GSI_QKEY, GSI_QP, ImmDtRepr,
    Opcode, PSN_MASK, RethRepr, RoceExt, RoceRepr, Syndrome,
};

use crate::requester::{Op, Transport};
use crate::responder::Reply;

/// A BTH with the defaults every packet here uses (P_Key 0xffff, no SE, no MigReq).
pub const fn bth(opcode: Opcode, dest_qp: u32, psn: u32, ack_req: bool) -> BthRepr {
    BthRepr {
        opcode,
        solicited: false,
        migreq: false,
        pad_count: 0,
        pkey: DEFAULT_PKEY,
        fecn: false,
        becn: false,
        dest_qp: dest_qp & PSN_MASK,
        ack_req,
        psn: psn & PSN_MASK,
    }
}

/// The extension headers of `op` carrying `payload_len` bytes.
pub const fn request_ext(op: &Op, payload_len: usize) -> RoceExt {
    let mut e =
        RoceExt { deth: None, reth: None, atomic_eth: None, aeth: None, atomic_ack_eth: None, immdt: None };
    match *op {
        Op::Write { va, rkey, imm } => {
            e.reth = Some(RethRepr { va, rkey, dma_len: payload_len as u32 });
            if let Some(imm) = imm {
                e.immdt = Some(ImmDtRepr { imm });
            }
        }
        Op::Send { imm } => {
            if let Some(imm) = imm {
                e.immdt = Some(ImmDtRepr { imm });
            }
        }
        Op::FetchAdd { va, rkey, add } => {
            e.atomic_eth = Some(AtomicEthRepr { va, rkey, swap_add: add, compare: 0 });
        }
        Op::CmpSwap { va, rkey, compare, swap } => {
            e.atomic_eth = Some(AtomicEthRepr { va, rkey, swap_add: swap, compare });
        }
    }
    e
}

/// A request packet: `op` with `payload`, at `psn`, to `dest_qp`.
pub fn request<'a>(
    transport: Transport,
    dest_qp: u32,
    psn: u32,
    ack_req: bool,
    op: &Op,
    payload: &'a [u8],
) -> RoceRepr<'a> {
    let mut r = RoceRepr::new(bth(op.opcode(transport), dest_qp, psn, ack_req), payload);
    r.ext = request_ext(op, payload.len());
    r
}

/// The acknowledgement a responder's [`Reply`] calls for, to the requester's `dest_qp`.
pub fn reply(dest_qp: u32, reply: &Reply) -> Option<RoceRepr<'static>> {
    let (opcode, psn, syndrome, msn, atomic) = match *reply {
        Reply::None => return None,
        Reply::Ack { psn, msn } => (Opcode::RC_ACKNOWLEDGE, psn, Syndrome::Ack { credits: 31 }, msn, None),
        Reply::Nak { psn, msn, code } => (Opcode::RC_ACKNOWLEDGE, psn, Syndrome::Nak(code), msn, None),
        Reply::AtomicAck { psn, msn, original } => {
            (Opcode::RC_ATOMIC_ACKNOWLEDGE, psn, Syndrome::Ack { credits: 31 }, msn, Some(original))
        }
    };
    let mut r = RoceRepr::new(bth(opcode, dest_qp, psn, false), &[]);
    r.ext.aeth = Some(AethRepr { syndrome, msn: msn & PSN_MASK });
    r.ext.atomic_ack_eth = atomic.map(|original| AtomicAckEthRepr { original });
    Some(r)
}

/// A CM MAD (256 bytes in `mad`) as a UD SEND Only to the GSI QP 1, Q_Key 0x80010000, from QP 1.
pub fn cm_mad(psn: u32, mad: &[u8]) -> RoceRepr<'_> {
    let mut r = RoceRepr::new(bth(Opcode::UD_SEND_ONLY, GSI_QP, psn, false), mad);
    r.ext.deth = Some(DethRepr { qkey: GSI_QKEY, src_qp: GSI_QP });
    r
}

/// Whether a parsed RoCEv2 packet is a CM MAD (UD SEND Only to QP 1 with the GSI Q_Key).
pub fn is_cm_mad(r: &RoceRepr<'_>) -> bool {
    r.bth.opcode == Opcode::UD_SEND_ONLY
        && r.bth.dest_qp == GSI_QP
        && r.ext.deth.is_some_and(|d| d.qkey == GSI_QKEY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reprs_round_trip_through_wire() {
        let op = Op::Write { va: 0x1000, rkey: 5, imm: Some(9) };
        let r = request(Transport::Rc, 0x12, 3, true, &op, &[1, 2, 3]);
        let mut buf = [0u8; 128];
        let n = r.emit(&mut buf).unwrap();
        let back = RoceRepr::parse(&buf[..n]).unwrap();
        assert_eq!(back.bth.opcode, Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE);
        assert_eq!(back.ext.reth.unwrap().dma_len, 3);
        assert_eq!(back.ext.immdt.unwrap().imm, 9);
        assert_eq!(back.payload, &[1, 2, 3]);

        let a = reply(0x12, &Reply::AtomicAck { psn: 4, msn: 2, original: 77 }).unwrap();
        let n = a.emit(&mut buf).unwrap();
        let back = RoceRepr::parse(&buf[..n]).unwrap();
        assert_eq!(back.ext.atomic_ack_eth.unwrap().original, 77);
        assert!(reply(1, &Reply::None).is_none());

        let mad = [0u8; 256];
        let m = cm_mad(1, &mad);
        assert!(is_cm_mad(&m));
        let n = m.emit(&mut buf.repeat(3)).unwrap();
        assert_eq!(n, 12 + 8 + 256 + 4);
    }
}
