//! The translator's ingress in P4: the report's classification, sequence check and key hashes.

use std::fmt::Write as _;

use wire::dta::{self, BaseForm};

use super::super::DtaTranslator;
use super::*;

impl DtaTranslator {
    pub(super) fn ingress_p4(&self) -> String {
        let base = match self.s.format.base {
            BaseForm::Long => dta::BASE_LONG.name,
            BaseForm::Short => dta::BASE_SHORT.name,
        };
        let prio = match self.s.format.base {
            BaseForm::Long => format!("hdr.{base}.priority"),
            BaseForm::Short => format!("{}", self.s.default_priority as u8),
        };
        let seq = match self.s.format.base {
            BaseForm::Short => {
                "    // Short base form: no sequence numbers.\n    meta.dta_in_order = 1;\n".to_string()
            }
            BaseForm::Long => format!(
                "    // Retransmittable: in order (epoch and next number as the cell holds them) in the data
    // plane; a gap, resend, restart or first report goes to the control plane, which keeps the
    // window, NACKs, and sets the cell.
    meta.dta_in_order = 1;
    if (hdr.{base}.retransmittable == 1) {{
        bit<12> reporter;
        meta.dta_seq_cell = hdr.{base}.epoch ++ 4w0 ++ hdr.{base}.seqnum;
        meta.dta_seq_next = hdr.{base}.epoch ++ 4w0 ++ (hdr.{base}.seqnum + 1);
#ifdef SF_TNA
        reporter = dta_reporter_hash.get({{ hdr.ipv4.src_addr, hdr.udp.src_port }});
        meta.dta_in_order = dta_seq_check.execute(reporter);
#else
        hash(reporter, HashAlgorithm.crc16, 12w0, {{ hdr.ipv4.src_addr, hdr.udp.src_port }}, 16w4096);
        bit<16> cell;
        dta_seq_expect.read(cell, (bit<32>)reporter);
        if (cell == meta.dta_seq_cell) {{
            dta_seq_expect.write((bit<32>)reporter, meta.dta_seq_next);
        }} else {{
            meta.dta_in_order = 0;
        }}
#endif
    }}
"
            ),
        };
        format!(
            "// DTA: a report (UDP {udp}) to a collector or to the switch is translated here; the rest
// runs l2l3's steps below.
meta.dta_go = 0;
// One application of the local-address table for both branches (BMv2 refuses a table applied
// at two places: multiple successors).
if (hdr.ipv4.isValid() && (hdr.{base}.isValid() || hdr.roce_bth.isValid())) {{
    dta_local_ip.apply();
}}
if (hdr.{base}.isValid() && hdr.ipv4.isValid()) {{
    dta_collectors.apply();
    if (meta.dta_known == 1 || meta.dta_local == 1) {{
        meta.dta_go = 1;
    }}
}} else if (hdr.roce_bth.isValid() && hdr.ipv4.isValid()) {{
    // A collector's ACK, NAK or CM MAD to the switch: the control plane's.
    if (meta.dta_local == 1) {{
        meta.dta_go = 1;
        meta.dta_punt = 1;
    }}
}}
if (meta.dta_go == 1 && meta.dta_punt == 0) {{
    meta.dta_prio = {prio};
    meta.dta_bprio = meta.dta_prio;
{seq}    if (meta.dta_in_order == 0 || hdr.{base}.immediate == 1 || hdr.dta_postcarder.isValid() || hdr.dta_sketch_merge.isValid() || !(hdr.dta_keywrite.isValid() || hdr.dta_keyincrement.isValid() || hdr.dta_append.isValid())) {{
        // Out of order, immediate data, Postcarder, Sketch-Merge, an unknown opcode.
        meta.dta_punt = 1;
    }} else if (hdr.dta_append.isValid()) {{
        meta.dta_op = 2;
        meta.dta_n = 1;
        meta.dta_key = hdr.dta_append.data;
        dta_lists.apply();
    }} else {{
        if (hdr.dta_keywrite.isValid()) {{
            meta.dta_op = 1;
            meta.dta_n = hdr.dta_keywrite.redundancy;
            meta.dta_key = hdr.dta_keywrite.key;
            meta.dta_data = hdr.dta_keywrite.data;
        }} else {{
            meta.dta_op = 3;
            meta.dta_n = hdr.dta_keyincrement.redundancy;
            meta.dta_key = hdr.dta_keyincrement.key;
            meta.dta_count = hdr.dta_keyincrement.counter;
        }}
        if (meta.dta_n == 0 || meta.dta_n > {max_n}) {{
            meta.dta_op = 0;
            dta_translator_stats.count({bad_redundancy});
            SF_DROP();
        }} else if (meta.dta_known == 0) {{
            // To the switch: the collector of the key (keywrite_collector), from its CRC-32C.
            dta_kb0.apply();
            dta_kb1.apply();
            dta_kb2.apply();
            dta_kb3.apply();
            meta.dta_chash = meta.dta_c0 ^ meta.dta_c1 ^ meta.dta_c2 ^ meta.dta_c3;
            dta_key_collector.apply();
        }}
    }}
    if (meta.dta_op != 0 && meta.dta_punt == 0) {{
        if (meta.dta_op != 2) {{
            dta_store.apply();
        }}
        if (meta.dta_qp != 0xffff) {{
            dta_qp_info.apply();
        }}
        if (meta.dta_qp == 0xffff) {{
            meta.dta_op = 0;
            if (meta.dta_op == 2) {{
                dta_translator_stats.count({no_list});
            }} else {{
                dta_translator_stats.count({no_store});
            }}
            SF_DROP();
        }} else if (meta.dta_op == 3 && meta.dta_need_n != 0 && meta.dta_need_n != meta.dta_n) {{
            meta.dta_op = 0;
            dta_translator_stats.count({mismatch});
            SF_DROP();
        }} else {{
            // N replicas to the collector's port: copy n is replication ID n in egress.
            SF_MCAST(meta.dta_group + (bit<16>)meta.dta_n - 1, 0x1ff);
            SF_SET_QUEUE({queue});
            dta_translator_stats.count({translated});
        }}
    }}
}}
if (meta.dta_punt == 1) {{
    SF_SET_EGRESS(SF_CPU_PORT);
    dta_translator_stats.count({to_cpu});
}}",
            udp = self.s.udp_port,
            max_n = self.s.max_redundancy,
            bad_redundancy = stat("bad_redundancy"),
            no_list = stat("no_list"),
            no_store = stat("no_store"),
            mismatch = stat("redundancy_mismatch"),
            queue = self.s.queue,
            translated = stat("translated"),
            to_cpu = stat("to_cpu"),
        )
    }

    pub(super) fn ingress_decls(&self, entries: &mut Vec<Entry>) -> String {
        let mut s = String::from(LOCAL_IP_TABLE);
        let _ = write!(
            s,
            "#ifdef SF_TNA
    Counter<bit<32>, bit<8>>({n}, CounterType_t.PACKETS) dta_translator_stats;
    Hash<bit<12>>(HashAlgorithm_t.CRC16) dta_reporter_hash;
    Register<bit<16>, bit<12>>(4096, 0) dta_seq_expect;
    // In order when the cell holds (epoch, this number); then it holds the next one.
    RegisterAction<bit<16>, bit<12>, bit<1>>(dta_seq_expect) dta_seq_check = {{
        void apply(inout bit<16> v, out bit<1> rv) {{
            if (v == meta.dta_seq_cell) {{
                v = meta.dta_seq_next;
                rv = 1;
            }} else {{
                rv = 0;
            }}
        }}
    }};
#else
    counter({n}, CounterType.packets) dta_translator_stats;
    register<bit<16>>(4096) dta_seq_expect;
#endif
    action dta_key_collector_set(bit<8> collector) {{
        meta.dta_collector = collector;
        meta.dta_known = 1;
    }}
    action dta_key_collector_none() {{
        meta.dta_op = 0;
    }}
    table dta_key_collector {{
        key = {{
            meta.dta_op: exact @name(\"dta_op\");
            meta.dta_chash: range @name(\"dta_chash\");
        }}
        actions = {{
            dta_key_collector_set;
            dta_key_collector_none;
        }}
        default_action = dta_key_collector_none();
        size = 64;
    }}
    action dta_store_set(bit<16> qp) {{
        meta.dta_qp = qp;
    }}
    action dta_store_none() {{
        meta.dta_qp = 0xffff;
    }}
    table dta_store {{
        key = {{
            meta.dta_collector: exact @name(\"dta_collector\");
            meta.dta_op: exact @name(\"dta_op\");
        }}
        actions = {{
            dta_store_set;
            dta_store_none;
        }}
        default_action = dta_store_none();
        size = 256;
    }}
    action dta_qp_info_set(bit<8> collector, bit<16> group, bit<1> metered, bit<8> need_n) {{
        meta.dta_collector = collector;
        meta.dta_group = group;
        meta.dta_metered = metered;
        meta.dta_need_n = need_n;
    }}
    action dta_qp_info_none() {{
        meta.dta_qp = 0xffff;
    }}
    table dta_qp_info {{
        key = {{
            meta.dta_qp: exact @name(\"dta_qp\");
        }}
        actions = {{
            dta_qp_info_set;
            dta_qp_info_none;
        }}
        default_action = dta_qp_info_none();
        size = {qps};
    }}
#ifdef SF_TNA
    // Tofino 1's PCIe CPU port on the 2-pipe part (320 on the 4-pipe): change it for yours.
#define SF_CPU_PORT 192
#else
    // BMv2: start simple_switch with `-i 64@<the control plane's interface>`.
#define SF_CPU_PORT 64
#endif
",
            n = STATS.len(),
            qps = self.qps.len().max(1),
        );
        let kb = affine_parts(dta::keywrite_collector_hash);
        for (i, t) in kb.iter().enumerate() {
            s.push_str(
                &TabulatedFn {
                    name: ["dta_kb0", "dta_kb1", "dta_kb2", "dta_kb3"][i],
                    keys: vec![(
                        format!("meta.dta_key[{}:{}]", i * 8 + 7, i * 8),
                        ["key_byte0", "key_byte1", "key_byte2", "key_byte3"][i],
                        8,
                    )],
                    params: vec![("chash", 32)],
                    body: format!("meta.dta_c{i} = chash;"),
                    rows: t
                        .iter()
                        .enumerate()
                        .map(|(b, &v)| (vec![b as u128], vec![u128::from(v)]))
                        .collect(),
                }
                .render(Pipe::Ingress, entries),
            );
        }
        s
    }
}
