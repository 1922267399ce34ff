//! What `daiet` declares on top of `l2l3`'s: its parser (UDP port 10000 to the preamble or the
//! END header, then the pairs) and the field the tree table matches. The registers are declared
//! by [`super::Daiet::build`].

use wire::daiet;

use crate::model::decl::{FieldRef, Next, StateDecl};
use crate::model::{KeyDecl, ParserDecl, Resources, TableDecl, action, inst, on, param, stack};
use crate::programs::l2l3::decl as l2;

/// The parser: `l2l3`'s, with UDP to the DAIET port going to the frame type: data (0) to the
/// preamble and its pairs (as many as it says, at most `max_entries`), END (1) to the END header.
pub fn parser(max_entries: usize) -> ParserDecl {
    let mut p = l2::parser();
    let udp = p.states.iter_mut().find(|s| s.name == "udp").expect("l2l3 parses UDP");
    udp.transitions.push(on(u64::from(wire::udp::port::DAIET), Next::State("daiet")));
    // The frame type is the first byte of both: look at it through the END header's.
    p.states.push(StateDecl::new(
        "daiet",
        &[],
        &[FieldRef::hdr("daiet_end", &daiet::field::end::FRAME_TYPE)],
        &[on(u64::from(daiet::FRAME_END), Next::State("daiet_end"))],
        Next::State("daiet_data"),
    ));
    p.states.push(StateDecl::new("daiet_end", &[inst("daiet_end", &daiet::END)], &[], &[], Next::Accept));
    p.states.push(StateDecl::new(
        "daiet_data",
        &[
            inst("daiet", &daiet::PREAMBLE),
            stack(
                "daiet_entry",
                &daiet::ENTRY,
                FieldRef::hdr("daiet", &daiet::field::preamble::NUMBER_OF_ENTRIES),
                max_entries,
            ),
        ],
        &[],
        &[],
        Next::Accept,
    ));
    p
}

/// `meta.daiet_tree`: the packet's tree ID (from the preamble or the END header).
pub const TREE: FieldRef = FieldRef::meta("daiet_tree", 32);

/// `daiet_trees`: a tree's slot among the configured (its register offset and size, its
/// function), or unknown.
pub fn trees(size: usize) -> TableDecl {
    TableDecl::new(
        "daiet_trees",
        size,
        &[KeyDecl::exact(TREE)],
        vec![action(
            "set_tree",
            &[param("slot", 8), param("offset", 32), param("mask", 32), param("function", 2)],
        )],
        "unknown_tree",
    )
}

/// The declarations besides the registers: the parser.
pub fn declare(res: &mut Resources, max_entries: usize) {
    res.set_parser(parser(max_entries));
}
