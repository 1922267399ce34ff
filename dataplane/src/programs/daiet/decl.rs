//! What `daiet` declares on top of `l2l3`'s: its parser (UDP port 10000 to the preamble or the
//! END header, then the pairs) and the field the tree table matches. The registers are declared
//! by [`super::Daiet::build`].

use wire::daiet;

use crate::model::decl::{FieldRef, Next, StateDecl};
use crate::model::{KeyDecl, ParserDecl, Resources, TableDecl, action, inst, on, param, stack};
use crate::programs::l2l3::decl as l2;

/// The parser: `l2l3`'s, with UDP to the DAIET port going to the preamble and, unless the
/// frame type is END (1), its pairs (as many as it says, at most `max_entries`: more is a
/// parser error). An END packet (5 bytes, padded to the Ethernet minimum) is read through the
/// preamble's layout: its tree ID sits where a data packet's pair count is, and the preamble's
/// last 4 bytes are padding — so one header serves both and the parser needs no lookahead.
pub fn parser(max_entries: usize) -> ParserDecl {
    let mut p = l2::parser();
    let udp = p.states.iter_mut().find(|s| s.name == "udp").expect("l2l3 parses UDP");
    udp.transitions.push(on(u64::from(wire::udp::port::DAIET), Next::State("daiet")));
    p.states.push(StateDecl::new(
        "daiet",
        &[inst("daiet", &daiet::PREAMBLE)],
        &[FieldRef::hdr("daiet", &daiet::field::preamble::FRAME_TYPE)],
        &[on(u64::from(daiet::FRAME_END), Next::Accept)],
        Next::State("daiet_entries"),
    ));
    p.states.push(StateDecl::new(
        "daiet_entries",
        &[stack(
            "daiet_entry",
            &daiet::ENTRY,
            FieldRef::hdr("daiet", &daiet::field::preamble::NUMBER_OF_ENTRIES),
            max_entries,
        )],
        &[],
        &[],
        Next::Accept,
    ));
    p
}

/// `meta.daiet_tree`: the packet's tree ID (from the preamble or the END header).
pub const TREE: FieldRef = FieldRef::meta("daiet_tree", 32);

/// `daiet_trees`: a tree's slot among the configured (its register offset and size, its
/// function, its children), or unknown.
pub fn trees(size: usize) -> TableDecl {
    TableDecl::new(
        "daiet_trees",
        size,
        &[KeyDecl::exact(TREE)],
        vec![action(
            "set_tree",
            &[
                param("slot", 8),
                param("offset", 32),
                param("mask", 32),
                param("function", 2),
                param("children", 32),
            ],
        )],
        "unknown_tree",
    )
}

/// The declarations besides the registers: the parser.
pub fn declare(res: &mut Resources, max_entries: usize) {
    res.set_parser(parser(max_entries));
}
