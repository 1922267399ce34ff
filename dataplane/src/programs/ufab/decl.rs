//! What `ufab` declares on top of `l2l3`'s: its parser (the source route's top label, the probe
//! header and the hops filled so far) and the fields its pair hashes read. The Bloom filter's
//! banks, the pair records and the link registers are declared by [`super::core`].

use wire::{mpls, udp, ufab};

use crate::model::decl::{FieldRef, Next, StateDecl};
use crate::model::{ParserDecl, Resources, inst, on, stack};
use crate::programs::l2l3::decl::{self as l2, at};

/// The parser: `l2l3`'s, with EtherType 0x8847 going to the source route's top label (then
/// IPv4 under the bottom label), and UDP port 40050 to the probe header and its filled hops.
pub fn parser() -> ParserDecl {
    let mut p = l2::parser();
    let start = p.states.iter_mut().find(|s| s.name == "start").expect("l2l3 parses Ethernet");
    start.transitions.push(on(u64::from(wire::EtherType::MPLS.0), Next::State("mpls")));
    p.states.push(StateDecl::new(
        "mpls",
        &[inst("mpls", &mpls::HEADER)],
        &[FieldRef::hdr("mpls", &mpls::field::BOS)],
        // The bottom label: IPv4 follows. Above it, the next labels are read after the pop.
        &[on(1, Next::State("ipv4"))],
        Next::Accept,
    ));
    let udp_state = p.states.iter_mut().find(|s| s.name == "udp").expect("l2l3 parses UDP");
    udp_state.transitions.push(on(u64::from(udp::port::UFAB), Next::State("ufab")));
    p.states.push(StateDecl::new(
        "ufab",
        &[
            inst("ufab", &ufab::HEADER),
            stack("ufab_hop", &ufab::HOP, FieldRef::hdr("ufab", &ufab::field::header::N_HOP), ufab::MAX_HOPS),
        ],
        &[],
        &[],
        Next::Accept,
    ));
    p
}

/// The (VM-pair, link) key the pair hashes read: source and destination address, the probe's
/// UDP source port (the sender's pair ID) and the egress port.
pub const PAIR_KEY: [FieldRef; 4] = [at::IPV4_SRC, at::IPV4_DST, l2::L4_SRC_KEY, l2::EGRESS_PORT];

/// The declarations besides the core's: the parser.
pub fn declare(res: &mut Resources) {
    res.set_parser(parser());
}
