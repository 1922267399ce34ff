//! What the DTA translator declares on top of `l2l3`'s: reports and RoCEv2 in its parser, the
//! collector, list and sketch tables, the reporters' sequence state, the collectors' meters, the
//! slot hash and the queue pairs.
//!
//! Not P4-shaped here, and said so in each declaration's detail: the queue pairs' retransmission
//! rings and the IB CM exchange (a Tofino translator keeps them on its CPU, as the DTA
//! prototype's controller does), and the parked reports (a CPU queue there).

use wire::dta::{self, BaseForm};
use wire::roce::{self, Opcode};
use wire::udp;

use crate::model::decl::{Decl, DeclKind, FieldRef, Next, StateDecl, Transition};
use crate::model::{HashAlgo, KeyDecl, Param, ParserDecl, Resources, TableDecl, action, inst, on, param};
use crate::programs::l2l3::decl as l2;

/// `meta.dta_collector`: the collector a report goes to.
pub const COLLECTOR: Param = param("dta_collector", 8);
/// `meta.dta_qp`: the queue pair that writes it.
pub const QP: Param = param("dta_qp", 16);

/// Fields the fast path and the tables read.
pub mod at {
    use crate::model::FieldRef;
    use wire::dta::field;

    /// `dta_append.list_id`.
    pub const LIST_ID: FieldRef = FieldRef::hdr("dta_append", &field::append::LIST_ID);
    /// `dta_sketch_merge.sketch_id`.
    pub const SKETCH_ID: FieldRef = FieldRef::hdr("dta_sketch_merge", &field::sketch_merge::SKETCH_ID);
    /// `dta_keywrite.key`.
    pub const KEYWRITE_KEY: FieldRef = FieldRef::hdr("dta_keywrite", &field::keywrite::KEY);
    /// `udp.src_port` (with the source address, a reporter's identity).
    pub const UDP_SRC_PORT: FieldRef = FieldRef::hdr("udp", &wire::udp::field::SRC_PORT);
}

/// The parser: `l2l3`'s, with UDP to the report port going on to the DTA base header of the
/// configured form and its primitive, and UDP to 4791 to the RoCEv2 headers a collector answers
/// with (ACKs, atomic ACKs, the CM's UD SENDs, the metadata SEND).
pub fn parser(form: BaseForm, keywrite_data_len: usize, report_port: u16) -> ParserDecl {
    let mut p = l2::parser();
    let udp = p.states.iter_mut().find(|s| s.name == "udp").expect("l2l3 parses UDP");
    udp.transitions.insert(0, on(u64::from(report_port), Next::State("dta")));
    udp.transitions.insert(1, on(u64::from(udp::port::ROCE_V2), Next::State("roce")));
    let (base, base_name) = match form {
        BaseForm::Long => (&dta::BASE_LONG, dta::BASE_LONG.name),
        BaseForm::Short => (&dta::BASE_SHORT, dta::BASE_SHORT.name),
    };
    let opcode = FieldRef::hdr(base_name, &dta::field::base_long::OPCODE);
    let kw = dta::keywrite_header(keywrite_data_len).unwrap_or(&dta::KEYWRITE);
    let prim = |name: &'static str, h: &'static wire::spec::Header| {
        StateDecl::new(name, &[inst(name, h)], &[], &[], Next::Accept)
    };
    let bth_op = FieldRef::hdr("roce_bth", &roce::field::bth::OPCODE);
    let op = |o: Opcode, next: &'static str| on(u64::from(o.0), Next::State(next));
    p.states.extend([
        StateDecl::new(
            "dta",
            &[inst(base_name, base)],
            &[opcode],
            &[
                on(1, Next::State("dta_keywrite")),
                on(2, Next::State("dta_append")),
                on(3, Next::State("dta_keyincrement")),
                on(4, Next::State("dta_postcarder")),
                on(5, Next::State("dta_sketch_merge")),
            ],
            // An unknown opcode is dropped by ingress, counted as dta_unknown_opcode.
            Next::Accept,
        ),
        prim("dta_keywrite", kw),
        prim("dta_append", &dta::APPEND),
        prim("dta_keyincrement", &dta::KEYINCREMENT),
        prim("dta_postcarder", &dta::POSTCARDER),
        prim("dta_sketch_merge", &dta::SKETCH_MERGE),
        StateDecl::new(
            "roce",
            &[inst("roce_bth", &roce::BTH)],
            &[bth_op],
            &[
                op(Opcode::RC_ACKNOWLEDGE, "roce_aeth"),
                op(Opcode::RC_ATOMIC_ACKNOWLEDGE, "roce_atomic_ack"),
                op(Opcode::UD_SEND_ONLY, "roce_deth"),
            ],
            // The metadata SEND and anything else: the payload follows the BTH.
            Next::Accept,
        ),
        prim("roce_aeth", &roce::AETH),
        StateDecl::new(
            "roce_atomic_ack",
            &[inst("roce_aeth", &roce::AETH), inst("roce_atomic_ack_eth", &roce::ATOMIC_ACK_ETH)],
            &[],
            &[],
            Next::Accept,
        ),
        prim("roce_deth", &roce::DETH),
    ]);
    p
}

/// `dta_lists`: the queue pair of an Append list.
pub fn lists() -> TableDecl {
    TableDecl::new(
        "dta_lists",
        1024,
        &[KeyDecl::exact(at::LIST_ID)],
        vec![action("set_qp", &[QP])],
        "dta_no_list",
    )
}

/// `dta_sketches`: the queue pair of a sketch.
pub fn sketches() -> TableDecl {
    TableDecl::new(
        "dta_sketches",
        256,
        &[KeyDecl::exact(at::SKETCH_ID)],
        vec![action("set_qp", &[QP])],
        "dta_no_sketch",
    )
}

/// `dta_reporter_seq`: each reporter's (address and port) epoch, sequence window and last NACK.
pub fn reporter_seq(size: usize) -> TableDecl {
    TableDecl::new(
        "dta_reporter_seq",
        size,
        &[KeyDecl::exact(l2::at::IPV4_SRC), KeyDecl::exact(at::UDP_SRC_PORT)],
        vec![action(
            "track",
            &[param("epoch", 4), param("next_seq", 8), param("seen", 128), param("last_notice_ns", 64)],
        )],
        "first_report",
    )
}

/// The translator's declarations besides its tables' own constructors: metadata, parser, the
/// collector table, the slot hash, the queue pairs and the parked reports.
pub fn declare(
    res: &mut Resources,
    s: &super::Settings,
    collectors: usize,
    qps: usize,
    qp_bytes: usize,
    park: usize,
) {
    let (window, key_hash, copies) = (s.requester.window, s.key_hash, s.max_redundancy);
    res.declare_metadata(&[COLLECTOR, QP]);
    res.set_parser(parser(s.format.base, s.format.keywrite_data_len, s.udp_port));
    res.declare(Decl {
        name: "dta_collectors",
        size: collectors,
        kind: DeclKind::Table(TableDecl::new(
            "dta_collectors",
            collectors,
            &[KeyDecl::exact(l2::at::IPV4_DST)],
            vec![action("set_collector", &[COLLECTOR])],
            "by_key_hash",
        )),
        bytes: collectors * 64,
        detail: "a report to the translator itself goes to keywrite_collector(key, n)".into(),
    });
    match key_hash {
        dta::KeyHashMode::Reference => res.declare(Decl {
            name: "dta_slot_hash",
            size: 1,
            kind: DeclKind::Hash {
                algo: HashAlgo::Crc32IsoHdlc,
                width: 32,
                inputs: vec![at::KEYWRITE_KEY, FieldRef::meta("dta_copy", 8)],
            },
            bytes: 0,
            detail: "CRC-32 of the key's little-endian bytes and the copy number (wire::dta::KeyHash), \
                     the reference's slot hash (key_hash = \"reference\")"
                .into(),
        }),
        dta::KeyHashMode::Independent => {
            for n in 0..copies {
                res.declare(Decl {
                    name: COPY_HASH_NAMES[usize::from(n) % COPY_HASH_NAMES.len()],
                    size: 1,
                    kind: DeclKind::Hash {
                        algo: HashAlgo::Crc32Poly(dta::COPY_POLYNOMIALS[usize::from(n) % 8]),
                        width: 32,
                        inputs: vec![at::KEYWRITE_KEY],
                    },
                    bytes: 0,
                    detail: format!("the slot of Key-Write / Key-Increment copy {n}: its own polynomial"),
                });
            }
        }
    }
    res.declare(Decl {
        name: "dta_qps",
        size: qps,
        kind: DeclKind::Register {
            cell: vec![param("next_psn", 24), param("oldest_unacked_psn", 24), param("outstanding", 32)],
            index: Some(FieldRef::meta(QP.name, QP.width)),
        },
        bytes: qp_bytes,
        detail: format!(
            "RC queue pairs with retransmission rings of {window} requests and the primitives' state \
             (append batches, postcard paths, sketch columns); their CM exchange is control-plane work"
        ),
    });
    res.declare(Decl {
        name: "dta_parked",
        size: park,
        kind: DeclKind::Register { cell: vec![param("report", (super::MAX_REPORT * 8) as u16)], index: None },
        bytes: park * std::mem::size_of::<super::Parked>(),
        detail: "high-priority reports waiting for the rate (a CPU queue on a hardware switch)".into(),
    });
}

/// The per-copy slot hash units' names (copies 0..8).
const COPY_HASH_NAMES: [&str; 8] = [
    "dta_slot_hash_0",
    "dta_slot_hash_1",
    "dta_slot_hash_2",
    "dta_slot_hash_3",
    "dta_slot_hash_4",
    "dta_slot_hash_5",
    "dta_slot_hash_6",
    "dta_slot_hash_7",
];

/// A state's transitions, for tests.
pub fn transitions<'a>(p: &'a ParserDecl, state: &str) -> &'a [Transition] {
    p.state(state).map_or(&[], |s| &s.transitions)
}
