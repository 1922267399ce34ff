//! What `ufab` declares on top of `l2l3`'s: its parser (the source route's labels, the probe
//! header, the hops filled so far and the free slot a probe's switch writes) and the fields its
//! pair hashes read. The Bloom filter's banks, the pair records and the link registers are
//! declared by [`super::core`].

use wire::{mpls, udp, ufab};

use crate::model::decl::{FieldRef, Next, StateDecl};
use crate::model::{ParserDecl, Resources, inst, on, stack};
use crate::programs::l2l3::decl::{self as l2, at};

/// Labels of a source route the parser extracts, one instance each (`mpls`, `mpls_1`, …): a
/// three-tier Clos path has five switches. The Rust switch pops any depth; a target parses
/// these (the P4 export's limit, in its summary).
pub const SR_LABELS: usize = 8;

/// The label instances' names.
pub const LABEL_NAMES: [&str; SR_LABELS] =
    ["mpls", "mpls_1", "mpls_2", "mpls_3", "mpls_4", "mpls_5", "mpls_6", "mpls_7"];

/// The parser: `l2l3`'s, with EtherType 0x8847 going to the source route's labels (IPv4 under
/// the bottom one), and UDP port 40050 to the probe header, its filled hops and, for a probe or
/// a finish, the free slot after them (`ufab_slot`: the one this switch writes).
pub fn parser() -> ParserDecl {
    let mut p = l2::parser();
    let start = p.states.iter_mut().find(|s| s.name == "start").expect("l2l3 parses Ethernet");
    start.transitions.push(on(u64::from(wire::EtherType::MPLS.0), Next::State("mpls")));
    for (i, name) in LABEL_NAMES.iter().enumerate() {
        // The bottom label: IPv4 follows; else the next label.
        let deeper = LABEL_NAMES.get(i + 1).copied().map_or(Next::Accept, Next::State);
        p.states.push(StateDecl::new(
            name,
            &[inst(name, &mpls::HEADER)],
            &[FieldRef::hdr(name, &mpls::field::BOS)],
            &[on(1, Next::State("ipv4"))],
            deeper,
        ));
    }
    let udp_state = p.states.iter_mut().find(|s| s.name == "udp").expect("l2l3 parses UDP");
    udp_state.transitions.push(on(u64::from(udp::port::UFAB), Next::State("ufab")));
    let kind = FieldRef::hdr("ufab", &ufab::field::header::TYPE);
    p.states.push(StateDecl::new(
        "ufab",
        &[
            inst("ufab", &ufab::HEADER),
            stack("ufab_hop", &ufab::HOP, FieldRef::hdr("ufab", &ufab::field::header::N_HOP), ufab::MAX_HOPS),
        ],
        &[kind],
        &[
            on(ufab::UfabKind::Probe as u64, Next::State("ufab_slot")),
            on(ufab::UfabKind::Finish as u64, Next::State("ufab_slot")),
            on(ufab::UfabKind::Look as u64, Next::State("ufab_slot")),
        ],
        Next::Accept,
    ));
    p.states.push(StateDecl::new("ufab_slot", &[inst("ufab_slot", &ufab::HOP)], &[], &[], Next::Accept));
    p
}

/// The (VM-pair, link) key bank 0's hash reads: source and destination address, the probe's
/// UDP source port (the sender's pair ID) and the egress port.
pub const PAIR_KEY: [FieldRef; 4] = [at::IPV4_SRC, at::IPV4_DST, l2::L4_SRC_KEY, l2::EGRESS_PORT];

/// The same fields in another order, bank 1's hash: CRC-32 again (both targets have it), a
/// different linear map of the key's bits ([`super::core::pair_key_1`]).
pub const PAIR_KEY_1: [FieldRef; 4] = [at::IPV4_DST, at::IPV4_SRC, l2::EGRESS_PORT, l2::L4_SRC_KEY];

/// The declarations besides the core's: the parser.
pub fn declare(res: &mut Resources) {
    res.set_parser(parser());
}
