//! `daiet` in P4: `l2l3`'s steps, and DAIET's Algorithm 1 one pair per pipeline pass, the
//! packet recirculated until its pairs are done — with the differences a P4 target imposes,
//! listed in the export's `SUMMARY.md` and `docs/p4/daiet.md`.
//!
//! The reference prototype (P4_14 on BMv2) met P4's rule that a table — and on a Tofino a
//! register — is applied once per packet by unrolling its loop over the pairs; that works on
//! BMv2 only, since a Tofino register array is one stateful ALU, one access per pass. This
//! export handles the paper's 10 pairs per packet the way a Tofino can: one pair per pass.
//!
//! Step by step (Rust → P4):
//! - the tree (`daiet_trees`) → the declared exact table; its action gives the register offset,
//!   the mask, the function and the children;
//! - a pair (`Daiet::pair`) → the pair at the packet's position (the low bits of `frame_type`,
//!   whose top bit marks a packet between two passes): its cell by the declared CRC-32 hash
//!   unit; an empty cell stores it and pushes the index, the same key aggregates, and the pair
//!   is then removed from the packet (its header invalid, the count one less); a different key
//!   leaves it in the packet, the position one on; the packet recirculates until no pair is
//!   left to look at; then the spilled pairs still in it go on to the reducer, routed by
//!   `l2l3` — the packet is the spillover bucket — or, with none, it is consumed;
//! - END (the children counter at zero) → the END packet becomes the flush: each pass pops one
//!   cell off the index stack and appends its pair; at `max_entries` pairs or an empty stack it
//!   leaves towards the reducer (routed by `l2l3`, TTL 64) while a copy with its pairs stripped
//!   recirculates (TNA: a multicast copy to the recirculation port; v1model: an
//!   egress-to-egress clone to it); with the stack empty it leaves as the END and the counter is
//!   reset.

use std::fmt::Write as _;

use super::Daiet;
use crate::config::Config;
use crate::model::param;
use crate::p4::{Arg, Entry, ExportError, KeyVal, Pipe, ProgramP4};

/// The recirculation port: pipe 0's on a Tofino 1; on BMv2 a port number with no interface,
/// whose copies egress recirculates.
pub const RECIRC_PORT: u16 = 68;
/// Frame type of a flushing packet inside the switch.
const FLUSHING: u8 = 0x40;
/// Top bit of the frame type: a data packet between two passes (the low bits its position).
const PASSING: u8 = 0x80;

/// Counter indices (`dt_stats`).
const STATS: [&str; 11] = [
    "malformed",
    "pairs",
    "stored",
    "aggregated",
    "spilled",
    "ends",
    "unknown_tree",
    "end_no_children",
    "flush_packets",
    "ends_sent",
    "recirculations",
];

fn stat(name: &str) -> usize {
    STATS.iter().position(|s| *s == name).unwrap_or(0)
}

impl Daiet {
    /// The P4 rendering of this switch as `cfg` configures it.
    pub(super) fn rendering(&self, cfg: &Config) -> Result<ProgramP4, ExportError> {
        let mut p = self.l2l3.rendering(cfg);
        let max = self.max_entries;
        p.meta.extend([
            param("daiet_tree", 32),
            param("dt_known", 1),
            param("dt_slot", 8),
            param("dt_offset", 32),
            param("dt_mask", 32),
            param("dt_function", 2),
            param("dt_children", 32),
            param("dt_pos", 8),
            param("dt_n", 32),
            param("dt_key", 128),
            param("dt_value", 32),
            param("dt_h", 32),
            param("dt_idx", 32),
            param("dt_old", 32),
            param("dt_top", 32),
            param("dt_out", 2),
            param("dt_route", 1),
            param("dt_skip", 1),
            param("dt_recirc", 1),
            param("dt_emit", 1),
            param("dt_c0", 1),
            param("dt_c1", 1),
            param("dt_c2", 1),
            param("dt_c3", 1),
        ]);
        p.bridge.push(param("dt_emit", 1));
        p.actions.extend([
            (
                "daiet_trees",
                "set_tree",
                "meta.dt_known = 1;\nmeta.dt_slot = slot;\nmeta.dt_offset = offset;\nmeta.dt_mask = mask;\n\
                 meta.dt_function = function;\nmeta.dt_children = children;"
                    .to_string(),
            ),
            ("daiet_trees", "unknown_tree", "meta.dt_known = 0;".to_string()),
        ]);
        // Recirculated packets come in on the recirculation port, which has no router MAC:
        // what the program routes is routed as if from port 0 (whatever its destination MAC).
        let l2l3 = self.l2l3.ingress_apply_routing(&|_| String::new(), Some("meta.dt_route == 1")).replacen(
            "meta.ingress_port = SF_INGRESS_PORT;",
            "meta.ingress_port = SF_INGRESS_PORT;\nif (meta.dt_route == 1) {\n    meta.ingress_port = 0;\n}",
            1,
        );
        p.ingress_apply = ingress(&l2l3, max, self.udp_port);
        p.ingress_decls.push_str(&ingress_decls(cfg.ports.len()));
        p.ingress_decls.push_str(&tna_key_registers(self.keys.len()));
        p.egress_mirror = true;
        p.on_parser_error =
            format!("if (hdr.daiet.isValid()) {{\n    dt_stats.count({});\n}}", stat("malformed"));
        let l2l3_egress = std::mem::take(&mut p.egress_apply);
        p.egress_apply = egress(&l2l3_egress, max);
        p.not_emitted.push((
            "daiet_spillover",
            "the packet is the spillover bucket: a pair whose cell holds another key stays in its packet, which \
             goes on to the reducer with the spilled pairs only once its other pairs are aggregated"
                .into(),
        ));
        p.not_emitted.push((
            "daiet_tree_state.spill",
            "the pairs in the tree's spillover bucket: the P4 has no bucket (the packet is one)".into(),
        ));
        p.added.extend([
            ("dt_stats", format!("packet counter, index: {}", STATS.join(", "))),
            (
                "dt_source",
                "exact on the egress port: the source address of what the switch sends (its address there, or \
                 `source_ip`)"
                    .into(),
            ),
            (
                "dt_key0, dt_key1, dt_key2, dt_key3 (TNA)",
                "the declared 128-bit key cells as four 32-bit registers, one stateful ALU each".into(),
            ),
        ]);
        p.chain.push(vec!["daiet_trees"]);
        p.chain.push(vec!["daiet_key_hash", "daiet_tree_state (children, top)"]);
        p.chain.push(vec!["daiet_valid", "daiet_index_stack"]);
        p.chain.push(vec!["daiet_keys"]);
        p.chain.push(vec!["daiet_values"]);
        for (i, t) in self.trees.iter().enumerate() {
            p.entries.push(Entry::Table {
                pipe: Pipe::Ingress,
                table: "daiet_trees",
                keys: vec![("meta.daiet_tree".into(), KeyVal::Exact(u128::from(t.id)))],
                action: "set_tree",
                args: vec![
                    Arg { name: "slot", value: i as u128 },
                    Arg { name: "offset", value: t.offset as u128 },
                    Arg { name: "mask", value: u128::from(t.mask) },
                    Arg {
                        name: "function",
                        value: match t.func {
                            roce::daiet::AggFn::Sum => 0,
                            roce::daiet::AggFn::Min => 1,
                            roce::daiet::AggFn::Max => 2,
                        },
                    },
                    Arg { name: "children", value: u128::from(t.children) },
                ],
            });
            p.entries.push(Entry::Register {
                name: "daiet_tree_state_remaining".to_string(),
                index: i as u32,
                value: u128::from(t.children),
            });
        }
        for i in 0..cfg.ports.len() {
            if let Some(ip) = self.source_ip.or_else(|| self.l2l3.port_address(i as u16)) {
                p.entries.push(Entry::Table {
                    pipe: Pipe::Ingress,
                    table: "dt_source",
                    keys: vec![("meta.egress_port".into(), KeyVal::Exact(i as u128))],
                    action: "set",
                    args: vec![Arg { name: "ip", value: u128::from(u32::from(ip)) }],
                });
            }
        }
        // The recirculating copy of a flush: TNA multicast group 1 (target ID 2) to the
        // recirculation port; v1model clone session 2 to it.
        p.entries.push(Entry::Multicast { group: 1, ports: vec![RECIRC_PORT], prune_ingress: false });
        p.entries.push(Entry::Mirror { session: 2, port: RECIRC_PORT, max_len: 16384 });
        p.recirculation = format!(
            "one pass per pair: a data packet of n pairs takes n passes (the paper's 10: ten), each through the \
             recirculation port ({RECIRC_PORT}); a flush takes one pass per stored pair plus one for the END. A \
             Tofino register is one stateful ALU access per pass, so the reference's unrolled loop (BMv2 only) \
             cannot be compiled for it; the pass rate is the price."
        );
        p.limitations.extend([
            "spillover: no bucket of one packet's worth of pairs; a colliding pair stays in its own packet, which \
             goes on to the reducer with its spilled pairs once the others are aggregated (Rust: the bucket fills \
             from several packets and leaves when full)."
                .into(),
            "what the switch sends (flushed pairs, the END, spilled pairs going on) is the packet that came in, \
             rewritten as the Rust switch builds a new one: its address on the egress port (`dt_source`), UDP \
             port 10000, TTL 64, identification 0, DF; but a flush made from a 60-byte END frame keeps that frame's \
             9 trailing padding bytes after its pairs (outside the UDP length: no target cuts a packet's tail \
             short in ingress)."
                .into(),
            format!(
                "recirculation: TNA recirculates through port {RECIRC_PORT} (pipe 0's; another pipe has its own), \
                 v1model through port {RECIRC_PORT} without an interface, whose egress recirculates; a recirculated \
                 packet the program routes is routed as if it came in on port 0. v1model's \
                 `recirculate_preserving_field_list(0)` preserves no metadata on purpose (the packet carries its \
                 state in its DAIET header): p4c-bm2-ss warns `no user metadata fields tagged with @field_list(0)`."
            ),
            "sums saturate at 2^32 − 1 as in Rust (v1model compares, TNA's stateful ALU saturates with \
             `|+|`); min and max as in Rust."
                .into(),
            "bad input: pairs past the packet or more than `max_entries` are parser errors, dropped and counted \
             in `dt_stats[malformed]` (Rust: `daiet_malformed`, `daiet_too_many_entries`); an unknown frame type \
             is read as data (Rust: malformed)."
                .into(),
        ]);
        Ok(p)
    }
}

/// Set the UDP and IPv4 lengths for `n` (an expression) pairs after the preamble.
fn lengths(n: &str) -> String {
    format!(
        "hdr.udp.length = 16w17 + ((bit<16>){n} << 4) + ((bit<16>){n} << 2);
hdr.ipv4.total_len = hdr.udp.length + 16w20;
hdr.udp.checksum = 0;"
    )
}

fn ingress(l2l3: &str, max: usize, udp_port: u16) -> String {
    let mut take = String::new();
    let mut drop_at = String::new();
    let mut append = String::new();
    for i in 0..max {
        let _ = write!(
            take,
            "\n        if (meta.dt_pos == {i}) {{\n            meta.dt_key = hdr.daiet_entry[{i}].key;\n            meta.dt_value = hdr.daiet_entry[{i}].value;\n        }}"
        );
        let _ = write!(
            drop_at,
            "\n            if (meta.dt_pos == {i}) {{\n                hdr.daiet_entry[{i}].setInvalid();\n            }}"
        );
        let _ = write!(
            append,
            "\n            if (meta.dt_n == {i}) {{\n                hdr.daiet_entry[{i}].setValid();\n                hdr.daiet_entry[{i}].key = meta.dt_key;\n                hdr.daiet_entry[{i}].value = meta.dt_value;\n            }}"
        );
    }
    format!(
        "meta.dt_route = 0;
meta.dt_skip = 0;
meta.dt_recirc = 0;
meta.dt_emit = 0;
if (hdr.daiet.isValid()) {{
    // Pairs past the packet, or more than the parser takes: a parser error.
    bool bad;
#ifdef SF_TNA
    bad = ig_prsr_md.parser_err != 0;
#else
    // v1model: a parser error was counted and dropped first (`on_parser_error`).
    bad = false;
#endif
    bad = bad || (hdr.daiet.frame_type != 1 && hdr.daiet.number_of_entries > {max});
    if (bad) {{
        dt_stats.count({malformed});
        SF_DROP();
        exit;
    }}
    bit<8> ft = hdr.daiet.frame_type;
    // An END carries its tree ID where a data packet's count is.
    meta.daiet_tree = ft == 1 ? hdr.daiet.number_of_entries : hdr.daiet.tree_id;
    daiet_trees.apply();
    if (meta.dt_known == 0) {{
        dt_stats.count({unknown_tree});
        SF_DROP();
        exit;
    }}
    meta.dt_skip = 1;
    if (ft == 1) {{
        // END: one child fewer; the last one turns this packet into the flush.
#ifdef SF_TNA
        meta.dt_old = dt_children_dec.execute((bit<32>)meta.dt_slot);
#else
        daiet_tree_state_remaining.read(meta.dt_old, (bit<32>)meta.dt_slot);
        if (meta.dt_old > 0) {{
            daiet_tree_state_remaining.write((bit<32>)meta.dt_slot, meta.dt_old - 1);
        }}
#endif
        if (meta.dt_old == 0) {{
            dt_stats.count({end_no_children});
            SF_DROP();
            exit;
        }}
        dt_stats.count({ends});
        if (meta.dt_old > 1) {{
            SF_DROP();
            exit;
        }}
        hdr.daiet.frame_type = {flushing};
        hdr.daiet.number_of_entries = 0;
        hdr.daiet.tree_id = meta.daiet_tree;
        ft = {flushing};
    }}
    if (ft == {flushing}) {{
        // The flush: one stored pair per pass, appended to the packet.
        meta.dt_n = hdr.daiet.number_of_entries;
#ifdef SF_TNA
        meta.dt_top = dt_top_pop.execute((bit<32>)meta.dt_slot);
#else
        daiet_tree_state_top.read(meta.dt_top, (bit<32>)meta.dt_slot);
        if (meta.dt_top > 0) {{
            daiet_tree_state_top.write((bit<32>)meta.dt_slot, meta.dt_top - 1);
        }}
#endif
        if (meta.dt_top > 0) {{
#ifdef SF_TNA
            meta.dt_idx = dt_stack_get.execute(meta.dt_offset + meta.dt_top - 1);
            dt_valid_clear.execute(meta.dt_idx);
            meta.dt_key[127:96] = dt_key0_get.execute(meta.dt_idx);
            meta.dt_key[95:64] = dt_key1_get.execute(meta.dt_idx);
            meta.dt_key[63:32] = dt_key2_get.execute(meta.dt_idx);
            meta.dt_key[31:0] = dt_key3_get.execute(meta.dt_idx);
            meta.dt_value = dt_value_get.execute(meta.dt_idx);
#else
            daiet_index_stack_index.read(meta.dt_idx, meta.dt_offset + meta.dt_top - 1);
            daiet_valid_bit.write(meta.dt_idx, 0);
            daiet_keys_key.read(meta.dt_key, meta.dt_idx);
            daiet_values_value.read(meta.dt_value, meta.dt_idx);
#endif{append}
            meta.dt_n = meta.dt_n + 1;
            hdr.daiet.number_of_entries = meta.dt_n;
            {lengths_n}
            if (meta.dt_n == {max} || meta.dt_top == 1) {{
                // Out to the reducer, and a copy without its pairs goes round again.
                hdr.ipv4.ttl = 64;
                meta.dt_route = 1;
                meta.dt_emit = 1;
                dt_stats.count({flush_packets});
            }} else {{
                meta.dt_recirc = 1;
            }}
        }} else {{
            // The stack is empty: the END, and the tree starts a new round.
            hdr.daiet.frame_type = 1;
            hdr.daiet.number_of_entries = hdr.daiet.tree_id;
            hdr.daiet.tree_id = 0;
            hdr.udp.length = 16w13;
            hdr.ipv4.total_len = 16w33;
            hdr.udp.checksum = 0;
            hdr.ipv4.ttl = 64;
            meta.dt_route = 1;
#ifdef SF_TNA
            dt_children_reset.execute((bit<32>)meta.dt_slot);
#else
            daiet_tree_state_remaining.write((bit<32>)meta.dt_slot, meta.dt_children);
#endif
            dt_stats.count({ends_sent});
        }}
    }} else {{
        // A data packet: the pair at its position.
        meta.dt_pos = ft & 0x7f;
        meta.dt_n = hdr.daiet.number_of_entries;{take}
#ifdef SF_TNA
        meta.dt_h = daiet_key_hash.get({{ meta.dt_key }});
#else
        hash(meta.dt_h, HashAlgorithm.crc32, 32w0, {{ meta.dt_key }}, 64w0x100000000);
#endif
        meta.dt_idx = meta.dt_offset + (meta.dt_h & meta.dt_mask);
        dt_stats.count({pairs});
        // 0 stored, 1 aggregated, 2 spilled.
#ifdef SF_TNA
        meta.dt_old = (bit<32>)dt_valid_set.execute(meta.dt_idx);
        if (meta.dt_old == 0) {{
            dt_key0_set.execute(meta.dt_idx);
            dt_key1_set.execute(meta.dt_idx);
            dt_key2_set.execute(meta.dt_idx);
            dt_key3_set.execute(meta.dt_idx);
            dt_value_set.execute(meta.dt_idx);
            meta.dt_top = dt_top_push.execute((bit<32>)meta.dt_slot);
            dt_stack_set.execute(meta.dt_offset + meta.dt_top);
            meta.dt_out = 0;
        }} else {{
            meta.dt_c0 = dt_key0_cmp.execute(meta.dt_idx);
            meta.dt_c1 = dt_key1_cmp.execute(meta.dt_idx);
            meta.dt_c2 = dt_key2_cmp.execute(meta.dt_idx);
            meta.dt_c3 = dt_key3_cmp.execute(meta.dt_idx);
            if (meta.dt_c0 == 1 && meta.dt_c1 == 1 && meta.dt_c2 == 1 && meta.dt_c3 == 1) {{
                if (meta.dt_function == 0) {{
                    dt_value_sum.execute(meta.dt_idx);
                }} else if (meta.dt_function == 1) {{
                    dt_value_min.execute(meta.dt_idx);
                }} else {{
                    dt_value_max.execute(meta.dt_idx);
                }}
                meta.dt_out = 1;
            }} else {{
                meta.dt_out = 2;
            }}
        }}
#else
        bit<1> valid;
        daiet_valid_bit.read(valid, meta.dt_idx);
        if (valid == 0) {{
            daiet_valid_bit.write(meta.dt_idx, 1);
            daiet_keys_key.write(meta.dt_idx, meta.dt_key);
            daiet_values_value.write(meta.dt_idx, meta.dt_value);
            daiet_tree_state_top.read(meta.dt_top, (bit<32>)meta.dt_slot);
            daiet_index_stack_index.write(meta.dt_offset + meta.dt_top, meta.dt_idx);
            daiet_tree_state_top.write((bit<32>)meta.dt_slot, meta.dt_top + 1);
            meta.dt_out = 0;
        }} else {{
            bit<128> k;
            daiet_keys_key.read(k, meta.dt_idx);
            if (k == meta.dt_key) {{
                bit<32> v;
                daiet_values_value.read(v, meta.dt_idx);
                if (meta.dt_function == 0) {{
                    bit<32> s = v + meta.dt_value;
                    v = s < v ? 32w0xffffffff : s;
                }} else if (meta.dt_function == 1) {{
                    v = meta.dt_value < v ? meta.dt_value : v;
                }} else {{
                    v = meta.dt_value > v ? meta.dt_value : v;
                }}
                daiet_values_value.write(meta.dt_idx, v);
                meta.dt_out = 1;
            }} else {{
                meta.dt_out = 2;
            }}
        }}
#endif
        if (meta.dt_out == 2) {{
            // Spilled: it stays in the packet; the next pair is one on.
            dt_stats.count({spilled});
            meta.dt_pos = meta.dt_pos + 1;
        }} else {{
            if (meta.dt_out == 0) {{
                dt_stats.count({stored});
            }} else {{
                dt_stats.count({aggregated});
            }}{drop_at}
            meta.dt_n = meta.dt_n - 1;
            hdr.daiet.number_of_entries = meta.dt_n;
            {lengths_n2}
        }}
        if ((bit<32>)meta.dt_pos < meta.dt_n) {{
            hdr.daiet.frame_type = {passing} | meta.dt_pos;
            meta.dt_recirc = 1;
        }} else if (meta.dt_n > 0) {{
            // What spilled goes on to the reducer.
            hdr.daiet.frame_type = 0;
            meta.dt_route = 1;
        }} else {{
            SF_DROP();
            exit;
        }}
    }}
    if (meta.dt_route == 1) {{
        meta.dt_skip = 0;
    }}
}}
if (meta.dt_skip == 0) {{
    {l2l3}
}}
if (meta.dt_route == 1 && meta.dt_skip == 0) {{
    // What the switch sends goes from its own address and the DAIET port, as a new datagram.
    dt_source.apply();
    hdr.udp.src_port = {udp_port};
    hdr.ipv4.dscp = 0;
    hdr.ipv4.ecn = 0;
    hdr.ipv4.identification = 0;
    hdr.ipv4.dont_frag = 1;
    hdr.ipv4.ttl = 64;
}}
if (meta.dt_recirc == 1) {{
    dt_stats.count({recirculations});
    SF_SET_EGRESS({recirc});
}}
if (meta.dt_emit == 1) {{
#ifdef SF_TNA
    // The copy that goes round again: multicast group 1 (target ID 2), the recirculation port.
    SF_MCAST(2, 0x1ff);
#endif
    dt_stats.count({recirculations});
}}",
        unknown_tree = stat("unknown_tree"),
        malformed = stat("malformed"),
        end_no_children = stat("end_no_children"),
        ends = stat("ends"),
        flushing = FLUSHING,
        passing = PASSING,
        pairs = stat("pairs"),
        stored = stat("stored"),
        aggregated = stat("aggregated"),
        spilled = stat("spilled"),
        flush_packets = stat("flush_packets"),
        ends_sent = stat("ends_sent"),
        recirculations = stat("recirculations"),
        recirc = RECIRC_PORT,
        udp_port = udp_port,
        lengths_n = lengths("meta.dt_n").replace('\n', "\n            "),
        lengths_n2 = lengths("meta.dt_n").replace('\n', "\n            "),
        l2l3 = l2l3.trim_end().replace('\n', "\n    "),
    )
}

fn ingress_decls(ports: usize) -> String {
    format!(
        "#ifdef SF_TNA
    Counter<bit<32>, bit<8>>({n}, CounterType_t.PACKETS) dt_stats;
#else
    counter({n}, CounterType.packets) dt_stats;
#endif
    action dt_source_set(bit<32> ip) {{
        hdr.ipv4.src_addr = ip;
    }}
    action dt_source_keep() {{
    }}
    table dt_source {{
        key = {{
            meta.egress_port: exact @name(\"egress_port\");
        }}
        actions = {{
            dt_source_set;
            dt_source_keep;
        }}
        default_action = dt_source_keep();
        size = {ports};
    }}
",
        n = STATS.len()
    )
}

fn egress(l2l3: &str, max: usize) -> String {
    let mut strip = String::new();
    for i in 0..max {
        let _ = write!(strip, "\n    hdr.daiet_entry[{i}].setInvalid();");
    }
    format!(
        "{l2l3}
if (hdr.daiet.isValid() && SF_EGRESS_PORT == {recirc}) {{
    // Round again: a flush's copy loses the pairs that went out.
    bool strip;
#ifdef SF_TNA
    strip = meta.dt_emit == 1;
#else
    strip = std.instance_type == 2;
#endif
    if (strip) {{
        hdr.daiet.frame_type = {flushing};
        hdr.daiet.number_of_entries = 0;{strip}
        {lengths}
    }}
#ifdef SF_TNA
    // (The recirculation port brings it back to ingress.)
#else
    recirculate_preserving_field_list(0);
#endif
}} else if (hdr.daiet.isValid() && hdr.daiet.frame_type == {flushing}) {{
    // A flushed packet leaves as data.
    hdr.daiet.frame_type = 0;
#ifdef SF_TNA
    // (Its copy round again left the traffic manager as a multicast copy.)
#else
    // Its copy round again: an egress-to-egress clone to the recirculation port.
    SF_CLONE_E2E(2);
#endif
}}",
        l2l3 = l2l3.trim_end(),
        recirc = RECIRC_PORT,
        flushing = FLUSHING,
        lengths = lengths("32w0").replace('\n', "\n        "),
    )
}

/// The TNA `RegisterAction`s, declared in the ingress control.
pub(super) fn tna_register_actions() -> String {
    let ra = crate::p4::tna_register_action;
    let mut s = String::new();
    s.push_str(&ra(
        "dt_children_dec",
        "daiet_tree_state_remaining",
        32,
        32,
        "rv = v;\nif (v > 0) {\n    v = v - 1;\n}",
    ));
    s.push_str(&ra("dt_children_reset", "daiet_tree_state_remaining", 32, 0, "v = meta.dt_children;"));
    s.push_str(&ra("dt_top_pop", "daiet_tree_state_top", 32, 32, "rv = v;\nif (v > 0) {\n    v = v - 1;\n}"));
    s.push_str(&ra("dt_top_push", "daiet_tree_state_top", 32, 32, "rv = v;\nv = v + 1;"));
    s.push_str(&ra("dt_stack_get", "daiet_index_stack_index", 32, 32, "rv = v;"));
    s.push_str(&ra("dt_stack_set", "daiet_index_stack_index", 32, 0, "v = meta.dt_idx;"));
    s.push_str(&ra("dt_valid_set", "daiet_valid_bit", 1, 1, "rv = v;\nv = 1;"));
    s.push_str(&ra("dt_valid_clear", "daiet_valid_bit", 1, 0, "v = 0;"));
    for (k, hi, lo) in [(0, 127, 96), (1, 95, 64), (2, 63, 32), (3, 31, 0)] {
        let reg = format!("dt_key{k}");
        s.push_str(&ra(&format!("dt_key{k}_get"), &reg, 32, 32, "rv = v;"));
        s.push_str(&ra(&format!("dt_key{k}_set"), &reg, 32, 0, &format!("v = meta.dt_key[{hi}:{lo}];")));
        s.push_str(&ra(
            &format!("dt_key{k}_cmp"),
            &reg,
            32,
            1,
            &format!("if (v == meta.dt_key[{hi}:{lo}]) {{\n    rv = 1;\n}} else {{\n    rv = 0;\n}}"),
        ));
    }
    s.push_str(&ra("dt_value_get", "daiet_values_value", 32, 32, "rv = v;"));
    s.push_str(&ra("dt_value_set", "daiet_values_value", 32, 0, "v = meta.dt_value;"));
    s.push_str(&ra("dt_value_sum", "daiet_values_value", 32, 0, "v = v |+| meta.dt_value;"));
    s.push_str(&ra(
        "dt_value_min",
        "daiet_values_value",
        32,
        0,
        "if (meta.dt_value < v) {\n    v = meta.dt_value;\n}",
    ));
    s.push_str(&ra(
        "dt_value_max",
        "daiet_values_value",
        32,
        0,
        "if (meta.dt_value > v) {\n    v = meta.dt_value;\n}",
    ));
    s
}

/// The TNA declarations the generated ones lack: the key cells as four 32-bit registers.
pub(super) fn tna_key_registers(cells: usize) -> String {
    let mut s = String::from("#ifdef SF_TNA\n");
    for k in 0..4 {
        let _ = writeln!(s, "    Register<bit<32>, bit<32>>({cells}, 0) dt_key{k};");
    }
    s.push_str(&tna_register_actions());
    s.push_str("#endif\n");
    s
}
