//! What `hawkeye` declares on top of `l2l3`'s: polling packets in its parser (the telemetry
//! banks and their hash are declared in [`super::telemetry`], the de-duplication register by
//! the program).

use wire::hawkeye;

use crate::model::decl::{FieldRef, Next, StateDecl};
use crate::model::{ParserDecl, Resources, inst, on};
use crate::programs::l2l3::decl as l2;

/// Polling packets' EtherType.
pub const ETHERTYPE_POLLING: u16 = 0x6888;

/// The parser: `l2l3`'s, with EtherType 0x6888 (untagged or VLAN-tagged) going to the polling
/// header.
pub fn parser() -> ParserDecl {
    let mut p = l2::parser();
    for name in ["start", "vlan"] {
        let s = p.states.iter_mut().find(|s| s.name == name).expect("l2l3 parses Ethernet and VLAN");
        s.transitions.push(on(u64::from(ETHERTYPE_POLLING), Next::State("polling")));
    }
    p.states.push(StateDecl::new("polling", &[inst("polling", &hawkeye::HEADER)], &[], &[], Next::Accept));
    // MAC Control (PFC): the Rust switch's traffic manager consumes these before the program;
    // a P4 target's pipeline sees them, and Hawkeye's rendering reads their pause times.
    let start = p.states.iter_mut().find(|s| s.name == "start").expect("l2l3 parses Ethernet");
    start.transitions.push(on(u64::from(wire::ethernet::EtherType::MAC_CONTROL.0), Next::State("pfc")));
    p.states.push(StateDecl::new("pfc", &[inst("pfc", &wire::pfc::PFC)], &[], &[], Next::Accept));
    p
}

/// The flow hash's inputs: the 5-tuple ECMP hashes.
pub const FLOW_INPUTS: [FieldRef; 5] = l2::ECMP_INPUTS;

/// The declarations besides the telemetry's and the de-duplication register's: the parser.
pub fn declare(res: &mut Resources) {
    res.set_parser(parser());
}
