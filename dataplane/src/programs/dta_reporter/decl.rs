//! What `dta_reporter` declares on top of `l2l3`'s: DTA NACKs in its parser, the flow registers
//! and their hash, and the reports it keeps for resending.

use wire::{dta, udp};

use crate::model::decl::{Decl, DeclKind, FieldRef, Next, StateDecl};
use crate::model::{ParserDecl, Resources, inst, on, param};
use crate::programs::l2l3::decl as l2;

/// The parser: `l2l3`'s, with UDP to the NACK port going on to a DTA NACK.
pub fn parser() -> ParserDecl {
    let mut p = l2::parser();
    let udp = p.states.iter_mut().find(|s| s.name == "udp").expect("l2l3 parses UDP");
    udp.transitions.insert(0, on(u64::from(udp::port::DTA_NACK), Next::State("dta_nack")));
    p.states.push(StateDecl::new("dta_nack", &[inst("dta_nack", &dta::NACK)], &[], &[], Next::Accept));
    p
}

/// The flow key's hash inputs: the 5-tuple ECMP hashes.
pub const FLOW_INPUTS: [FieldRef; 5] = l2::ECMP_INPUTS;

/// The flow registers' cell: the flow's key (0: empty) and the last value reported.
pub const FLOW_CELL: [crate::model::Param; 2] = [param("flow_key", 32), param("last_value", 32)];

/// The reporter's declarations besides its registers' and hash's own constructors.
pub fn declare(res: &mut Resources, keep: usize) {
    res.set_parser(parser());
    res.declare(Decl {
        name: "dta_reporter_kept",
        size: keep,
        kind: DeclKind::Register {
            cell: vec![param("report", (super::MAX_REPORT * 8) as u16)],
            index: Some(FieldRef::hdr("dta_nack", &dta::field::nack::SEQNUM)),
        },
        bytes: keep * (super::MAX_REPORT + 4),
        detail: "retransmittable reports kept for NACKs, by sequence number".into(),
    });
}
