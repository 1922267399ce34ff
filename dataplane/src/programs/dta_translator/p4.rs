//! `dta_translator` in P4: the data-plane half of the translator — Key-Write, Key-Increment and
//! Append reports turned into RoCEv2 WRITEs and FETCH_ADDs with their ICRC — on top of `l2l3`;
//! what needs memory or timers a switch does not have goes to the control plane (the CPU port).
//!
//! Step by step (Rust → P4):
//! - a report to a collector or to the switch (`translate`) → `dta_collectors` (the declared
//!   table: a collector's address) or `dta_local_ip`; to the switch, the collector by key hash
//!   (`keywrite_collector`) → four byte tables giving the key's CRC-32C and a range match on it
//!   (`dta_key_collector`);
//! - the store's QP (`key_collector`, `ready_qp`, `dta_lists`) → `dta_store` (collector and
//!   primitive → QP, its replica groups, metering, the Key-Increment N) and the declared
//!   `dta_lists`;
//! - redundancy N (one request per copy) → a multicast group of N replicas to the collector's
//!   port, replica `n` being copy `n` (its replication ID) in egress;
//! - the sequence window of a retransmittable reporter (`ReporterSeq`) → in-order reports only
//!   (`dta_seq_expect`, one 16-bit cell per reporter hash: epoch and next number); anything else
//!   (a gap, a resend, a restart, a first report) goes to the control plane, which holds the
//!   window, sends the NACKs and sets the cell;
//! - the meter (`admit`) → the declared `dta_collector_meters`, executed per RDMA packet in
//!   egress with the Rust colour rules;
//! - the request (`Qp::build`, `Requester::post`) → `dta_qp_state` (the QP's connection: its
//!   collector QPN, R_Key, region, addresses; written by the control plane after the CM
//!   exchange), the PSN from `dta_qp_psn` (one increment per packet), the slot and checksum
//!   from four (copy, key byte) tables tabulating `KeyHash` exactly (CRC is affine in the key),
//!   the Append head from `dta_append_head`, and the ICRC by the target's CRC-32 over the
//!   masked fields (`wire::roce::icrc`).

use std::fmt::Write as _;

use wire::dta::{self, BaseForm, KeyHash, Priority};

use super::DtaTranslator;
use super::qp::Store;
use crate::config::Config;
use crate::model::param;
use crate::p4::TabulatedFn;
use crate::p4::{Arg, Entry, ExportError, ExtraHeader, KeyVal, Pipe, ProgramP4};
use crate::programs::dta_reporter::p4::{LOCAL_IP_TABLE, affine_parts, local_ip_entries};

/// Drop and punt counter indices (`dta_translator_stats`).
const STATS: [&str; 10] = [
    "translated",
    "to_cpu",
    "bad_redundancy",
    "redundancy_mismatch",
    "no_store",
    "no_list",
    "rate_low",
    "rate_over_high",
    "store_down",
    "rdma_packets",
];

fn stat(name: &str) -> usize {
    STATS.iter().position(|s| *s == name).unwrap_or(0)
}

/// Multicast groups: 0 is l2l3's flood group; each QP then has `max_redundancy` groups.
const FIRST_QP_GROUP: u16 = 1;

impl DtaTranslator {
    /// The P4 rendering of this translator as `cfg` configures it.
    pub(super) fn rendering(&self, cfg: &Config) -> Result<ProgramP4, ExportError> {
        let data_len = self.s.format.keywrite_data_len;
        let slot_len = dta::layout::keywrite_slot_len(data_len);
        let max_n = self.s.max_redundancy;
        let mut p = self.l2l3.rendering(cfg);
        p.actions.extend([
            (
                "dta_collectors",
                "set_collector",
                "meta.dta_collector = dta_collector;\nmeta.dta_known = 1;".to_string(),
            ),
            ("dta_collectors", "by_key_hash", "meta.dta_known = 0;".to_string()),
            ("dta_lists", "set_qp", "meta.dta_qp = dta_qp;".to_string()),
            ("dta_lists", "dta_no_list", "meta.dta_qp = 0xffff;".to_string()),
        ]);
        p.extra_headers.extend([
            ExtraHeader::wire("roce_reth", &wire::roce::RETH),
            ExtraHeader::wire("roce_atomic_eth", &wire::roce::ATOMIC_ETH),
            raw_header("rdma_payload", &[("checksum_le", 32), ("data", (data_len * 8) as u16)]),
            raw_header("rdma_append", &[("data_le", 32)]),
            raw_header("roce_icrc", &[("icrc", 32)]),
        ]);
        p.meta.extend([
            param("dta_local", 1),
            param("dta_known", 1),
            param("dta_go", 1),
            param("dta_punt", 1),
            param("dta_prio", 2),
            param("dta_n", 8),
            param("dta_chash", 32),
            param("dta_c0", 32),
            param("dta_c1", 32),
            param("dta_c2", 32),
            param("dta_c3", 32),
            param("dta_group", 16),
            param("dta_need_n", 8),
            param("dta_in_order", 1),
            param("dta_seq_cell", 16),
            param("dta_seq_next", 16),
            param("dta_up", 1),
            param("dta_dqpn", 24),
            param("dta_rkey", 32),
            param("dta_copy", 8),
            param("dta_slot", 32),
            param("dta_csum", 32),
            param("dta_s0", 32),
            param("dta_s1", 32),
            param("dta_s2", 32),
            param("dta_s3", 32),
            param("dta_x0", 32),
            param("dta_x1", 32),
            param("dta_x2", 32),
            param("dta_x3", 32),
            param("dta_psn", 24),
            param("dta_color", 2),
            param("dta_va", 64),
            param("dta_mask", 32),
            param("dta_last", 32),
            param("dta_head", 32),
            param("dta_icrc", 32),
        ]);
        p.bridge = vec![
            param("dta_op", 2),
            param("dta_qp", 16),
            param("dta_collector", 8),
            param("dta_bprio", 2),
            param("dta_metered", 1),
            param("dta_key", 32),
            param("dta_data", (data_len * 8) as u16),
            param("dta_count", 64),
        ];
        // The l2l3 steps run for everything that is not a report for us.
        let l2l3 = self.l2l3.ingress_apply(&|_| String::new());
        p.ingress_apply = format!(
            "{}\nif (meta.dta_go == 0) {{\n    {}\n}}",
            self.ingress_p4(),
            l2l3.trim_end().replace('\n', "\n    ")
        );
        let decls = self.ingress_decls(&mut p.entries);
        p.ingress_decls.push_str(&decls);
        let l2l3_egress = std::mem::take(&mut p.egress_apply);
        let decls = self.egress_decls(slot_len, &mut p.entries)?;
        p.egress_decls.push_str(&decls);
        p.egress_apply = self.egress_p4(&l2l3_egress, data_len, slot_len);
        p.egress_tables.extend(["dta_collector_meters", "dta_qp_state"]);
        p.not_emitted.extend([
            (
                "dta_reporter_seq",
                "the 128-number window, the epoch and the NACK pacing per reporter are the control plane's: \
                 the data plane translates in-order reports only (`dta_seq_expect`) and sends the rest to the \
                 CPU port"
                    .to_string(),
            ),
            (
                "dta_qps",
                "retransmission rings, the oldest unacknowledged PSN and the in-flight count need memory a \
                 switch does not have: the next PSN is `dta_qp_psn`, the rest is the control plane's (ACKs and \
                 NAKs go to the CPU port)"
                    .to_string(),
            ),
            ("dta_parked", "a CPU queue on a hardware switch: reports the data plane cannot take go to the CPU port".into()),
            (
                "dta_sketches",
                "Sketch-Merge (ordered column merges per reporter) goes to the CPU port".into(),
            ),
        ]);
        // The slot hash units: tabulated exactly by the (copy, byte) tables instead.
        for d in self.resources.list() {
            if d.name.starts_with("dta_slot_hash") {
                p.not_emitted.push((
                    d.name,
                    "its CRC of the key's four bytes is affine over GF(2): tabulated exactly in `dta_sb0..3` \
                     (one lookup per byte for every copy), so neither target needs a custom CRC unit per copy"
                        .to_string(),
                ));
            }
        }
        p.added.extend([
            ("dta_local_ip", "exact on IPv4 destination: the switch's own addresses".to_string()),
            ("dta_kb0..kb3", "exact on a key byte, 256 entries each (installed at start): the key's CRC-32C, in parts".into()),
            ("dta_key_collector", "range on the key's CRC-32C and the primitive: the collector of a report to the switch".into()),
            ("dta_store", "exact on collector and primitive: the Key-Write or Key-Increment store's QP".into()),
            ("dta_qp_info", "exact on the QP: its collector, replica groups, metering and Key-Increment N".into()),
            ("dta_seq_expect", "register, 16 bits × 4096: per reporter hash, epoch and next sequence number".into()),
            ("dta_translator_stats", format!("packet counter, index: {}", STATS.join(", "))),
            ("dta_translator_egress_stats (egress)", "packet counter, the same indices, for what egress counts".into()),
            ("dta_qp_state (egress)", "exact on the QP: its connection, written by the control plane after the CM exchange".into()),
            ("dta_qp_psn (egress)", "register, 24 bits per QP: the next PSN".into()),
            ("dta_append_head (egress)", "register, 32 bits per QP: an Append ring's next entry".into()),
            (
                "dta_sb0..sb3 (egress)",
                format!("exact on (copy, key byte), {} entries each (installed at start): the copy's slot hash and the checksum, in parts", usize::from(max_n) * 256),
            ),
        ]);
        let mut chain = vec![vec!["dta_local_ip", "dta_collectors", "dta_kb0..kb3", "router_mac"]];
        chain.append(&mut p.chain);
        chain.push(vec!["dta_key_collector", "dta_lists"]);
        chain.push(vec!["dta_store", "dta_seq_expect (register)"]);
        chain.push(vec!["dta_qp_info"]);
        chain.push(vec!["dta_qp_state (egress)", "dta_sb0..sb3 (egress)", "dta_collector_meters (egress)"]);
        chain.push(vec!["dta_qp_psn (egress)", "dta_append_head (egress)"]);
        chain.push(vec!["ICRC hash (egress)"]);
        p.chain = chain;
        p.recirculation =
            "none: a report's N copies are N replicas of one multicast group (copy n = replication ID n), \
                           not a loop; l2l3 does not loop."
                .into();
        let port_ips: Vec<_> = cfg.ports.iter().map(|p| p.ipv4.first().map(|a| a.0)).collect();
        p.entries.extend(self.dta_entries(&port_ips));
        p.limitations.extend(self.dta_limitations(slot_len));
        Ok(p)
    }

    fn ingress_p4(&self) -> String {
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

    fn ingress_decls(&self, entries: &mut Vec<Entry>) -> String {
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

    fn egress_decls(&self, slot_len: usize, entries: &mut Vec<Entry>) -> Result<String, ExportError> {
        let max_n = self.s.max_redundancy;
        let mut s = format!(
            "    action dta_qp_state_set(bit<24> dst_qpn, bit<32> rkey, bit<64> va, bit<32> mask, bit<32> last, bit<48> src_mac, bit<48> dst_mac, bit<32> src_ip, bit<32> dst_ip, bit<16> src_port) {{
        meta.dta_up = 1;
        meta.dta_dqpn = dst_qpn;
        meta.dta_rkey = rkey;
        meta.dta_va = va;
        meta.dta_mask = mask;
        meta.dta_last = last;
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.src_addr = src_ip;
        hdr.ipv4.dst_addr = dst_ip;
        hdr.udp.src_port = src_port;
    }}
    action dta_qp_state_down() {{
        meta.dta_up = 0;
    }}
    table dta_qp_state {{
        key = {{
            meta.dta_qp: exact @name(\"dta_qp\");
        }}
        actions = {{
            dta_qp_state_set;
            dta_qp_state_down;
        }}
        default_action = dta_qp_state_down();
        size = {qps};
    }}
#ifdef SF_TNA
    Register<bit<32>, bit<16>>({qps}, 0) dta_qp_psn;
    RegisterAction<bit<32>, bit<16>, bit<32>>(dta_qp_psn) dta_psn_next = {{
        void apply(inout bit<32> v, out bit<32> rv) {{
            rv = v;
            v = (v + 1) & 0xffffff;
        }}
    }};
    Register<bit<32>, bit<16>>({qps}, 0) dta_append_head;
    RegisterAction<bit<32>, bit<16>, bit<32>>(dta_append_head) dta_head_next = {{
        void apply(inout bit<32> v, out bit<32> rv) {{
            rv = v;
            if (v >= meta.dta_last) {{
                v = 0;
            }} else {{
                v = v + 1;
            }}
        }}
    }};
    // The ICRC: one CRC-32 unit per frame shape.
    Hash<bit<32>>(HashAlgorithm_t.CRC32) dta_icrc_kw;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) dta_icrc_ap;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) dta_icrc_ki;
    Counter<bit<32>, bit<8>>({n}, CounterType_t.PACKETS) dta_translator_egress_stats;
#else
    register<bit<32>>({qps}) dta_qp_psn;
    register<bit<32>>({qps}) dta_append_head;
    counter({n}, CounterType.packets) dta_translator_egress_stats;
#endif
",
            qps = self.qps.len().max(1),
            n = STATS.len(),
        );
        // The slot of copy n and the checksum, tabulated per key byte (both are CRCs of the key's
        // little-endian bytes: affine in the key for a fixed copy).
        let mode = self.s.key_hash;
        let slot_parts: Vec<[[u32; 256]; 4]> =
            (0..max_n).map(|n| affine_parts(|k| KeyHash::with_mode(k, mode).slot(n))).collect();
        let csum = affine_parts(|k| KeyHash::with_mode(k, mode).checksum());
        for i in 0..4 {
            let mut rows = Vec::new();
            for (n, parts) in slot_parts.iter().enumerate() {
                for b in 0..256 {
                    rows.push((
                        vec![n as u128, b as u128],
                        vec![u128::from(parts[i][b]), u128::from(csum[i][b])],
                    ));
                }
            }
            s.push_str(
                &TabulatedFn {
                    name: ["dta_sb0", "dta_sb1", "dta_sb2", "dta_sb3"][i],
                    keys: vec![
                        ("meta.dta_copy".into(), "copy", 8),
                        (
                            format!("meta.dta_key[{}:{}]", i * 8 + 7, i * 8),
                            ["key_byte0", "key_byte1", "key_byte2", "key_byte3"][i],
                            8,
                        ),
                    ],
                    params: vec![("slot", 32), ("csum", 32)],
                    body: format!("meta.dta_s{i} = slot;\nmeta.dta_x{i} = csum;"),
                    rows,
                }
                .render(Pipe::Egress, entries),
            );
        }
        if !slot_len.is_power_of_two() {
            return Err(ExportError::Unsupported(format!(
                "Key-Write slot of {slot_len} bytes: not a power of two"
            )));
        }
        Ok(s)
    }

    fn egress_p4(&self, l2l3: &str, data_len: usize, slot_len: usize) -> String {
        let invalid = crate::p4::invalidate_parsed_except(&self.resources, &["ethernet", "ipv4", "udp"]);
        let ack_mask = self.s.requester.ack_req_every.next_power_of_two().max(1) - 1;
        let kw_len = 4 + data_len;
        let (dscp, ecn) = (self.s.dscp, self.s.ecn);
        let icrc_common = "64w0xffffffffffffffff,
            hdr.ipv4.version, hdr.ipv4.ihl, 8w0xff, hdr.ipv4.total_len, hdr.ipv4.identification,
            hdr.ipv4.reserved_flag, hdr.ipv4.dont_frag, hdr.ipv4.more_frags, hdr.ipv4.frag_offset, 8w0xff,
            hdr.ipv4.protocol, 16w0xffff, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
            hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0xffff,
            hdr.roce_bth.opcode, hdr.roce_bth.se, hdr.roce_bth.migreq, hdr.roce_bth.pad_count, hdr.roce_bth.tver,
            hdr.roce_bth.pkey, 8w0xff, hdr.roce_bth.dest_qp, hdr.roce_bth.ack_req, hdr.roce_bth.reserved2,
            hdr.roce_bth.psn";
        let icrc = |unit: &str, tail: &str| {
            format!(
                "#ifdef SF_TNA
        meta.dta_icrc = dta_icrc_{unit}.get({{ {icrc_common},
            {tail} }});
#else
        hash(meta.dta_icrc, HashAlgorithm.crc32, 32w0, {{ {icrc_common},
            {tail} }}, 64w0x100000000);
#endif"
            )
        };
        let reth = "hdr.roce_reth.va, hdr.roce_reth.rkey, hdr.roce_reth.dma_len";
        let kw_icrc = icrc("kw", &format!("{reth}, hdr.rdma_payload.checksum_le, hdr.rdma_payload.data"));
        let ap_icrc = icrc("ap", &format!("{reth}, hdr.rdma_append.data_le"));
        let ki_icrc = icrc(
            "ki",
            "hdr.roce_atomic_eth.va, hdr.roce_atomic_eth.rkey, hdr.roce_atomic_eth.swap_add, hdr.roce_atomic_eth.compare",
        );
        let le = |e: &str| format!("{e}[7:0] ++ {e}[15:8] ++ {e}[23:16] ++ {e}[31:24]");
        let shift = slot_len.trailing_zeros();
        format!(
            "bool rdma = meta.dta_op != 0;
if (rdma) {{
    // One RDMA request per replica (frames::request over the QP's template).
    meta.dta_copy = (bit<8>)SF_EGRESS_RID;
    dta_qp_state.apply();
    if (meta.dta_up == 0) {{
        // The QP is not connected (no dta_qp_state entry yet): dropped and counted.
        dta_translator_egress_stats.count({store_down});
        SF_EGRESS_DROP();
        rdma = false;
    }}
}}
if (rdma) {{
    // The collector's meter, per RDMA packet, with admit()'s colour rules: low priority passes
    // green only, medium green and yellow, high always (counted when over the peak).
#ifdef SF_TNA
    meta.dta_color = (bit<2>)dta_collector_meters.execute((bit<32>)meta.dta_collector);
#else
    dta_collector_meters.execute_meter((bit<32>)meta.dta_collector, meta.dta_color);
#endif
    if (meta.dta_metered == 1 && meta.dta_color != 0 && (meta.dta_bprio == 0 || (meta.dta_bprio == 1 && meta.dta_color != 1))) {{
        dta_translator_egress_stats.count({rate_low});
        SF_EGRESS_DROP();
        rdma = false;
    }} else if (meta.dta_metered == 1 && meta.dta_color != 0 && meta.dta_color != 1) {{
        dta_translator_egress_stats.count({rate_over_high});
    }}
}}
if (rdma) {{
{invalid}    hdr.roce_bth.setValid();
    hdr.roce_bth.dest_qp = meta.dta_dqpn;
#ifdef SF_TNA
    meta.dta_psn = (bit<24>)dta_psn_next.execute(meta.dta_qp);
#else
    bit<32> psn;
    dta_qp_psn.read(psn, (bit<32>)meta.dta_qp);
    dta_qp_psn.write((bit<32>)meta.dta_qp, (psn + 1) & 0xffffff);
    meta.dta_psn = (bit<24>)psn;
#endif
    hdr.ipv4.version = 4;
    hdr.ipv4.ihl = 5;
    hdr.ipv4.dscp = {dscp};
    hdr.ipv4.ecn = {ecn};
    hdr.ipv4.identification = 0;
    hdr.ipv4.reserved_flag = 0;
    hdr.ipv4.dont_frag = 1;
    hdr.ipv4.more_frags = 0;
    hdr.ipv4.frag_offset = 0;
    hdr.ipv4.ttl = 64;
    hdr.ipv4.protocol = 17;
    hdr.ethernet.ether_type = 0x0800;
    hdr.udp.setValid();
    hdr.udp.dst_port = 4791;
    hdr.udp.checksum = 0;
    hdr.roce_bth.se = 0;
    hdr.roce_bth.migreq = 0;
    hdr.roce_bth.pad_count = 0;
    hdr.roce_bth.tver = 0;
    hdr.roce_bth.pkey = 0xffff;
    hdr.roce_bth.fecn = 0;
    hdr.roce_bth.becn = 0;
    hdr.roce_bth.reserved1 = 0;
    hdr.roce_bth.reserved2 = 0;
    hdr.roce_bth.psn = meta.dta_psn;
    // AckReq every {ack_every} packets of the QP.
    hdr.roce_bth.ack_req = (meta.dta_psn & {ack_mask}) == {ack_mask} ? 1w1 : 1w0;
    hdr.roce_icrc.setValid();
    dta_translator_egress_stats.count({rdma});
    if (meta.dta_op == 2) {{
        // Append: one entry at the ring's head, little-endian.
#ifdef SF_TNA
        meta.dta_head = dta_head_next.execute(meta.dta_qp);
#else
        dta_append_head.read(meta.dta_head, (bit<32>)meta.dta_qp);
        dta_append_head.write((bit<32>)meta.dta_qp, meta.dta_head >= meta.dta_last ? 32w0 : meta.dta_head + 1);
#endif
        hdr.roce_bth.opcode = 0x0a;
        hdr.roce_reth.setValid();
        hdr.roce_reth.rkey = meta.dta_rkey;
        hdr.roce_reth.va = meta.dta_va + (bit<64>)(meta.dta_head << 2);
        hdr.roce_reth.dma_len = 4;
        hdr.rdma_append.setValid();
        hdr.rdma_append.data_le = {append_le};
        hdr.ipv4.total_len = {ap_ip};
        hdr.udp.length = {ap_udp};
{ap_icrc}
        SF_TRUNCATE({ap_frame});
    }} else {{
        // Key-Write / Key-Increment copy n: its slot and the key's checksum, from the byte tables.
        dta_sb0.apply();
        dta_sb1.apply();
        dta_sb2.apply();
        dta_sb3.apply();
        meta.dta_slot = (meta.dta_s0 ^ meta.dta_s1 ^ meta.dta_s2 ^ meta.dta_s3) & meta.dta_mask;
        meta.dta_csum = meta.dta_x0 ^ meta.dta_x1 ^ meta.dta_x2 ^ meta.dta_x3;
        if (meta.dta_op == 1) {{
            hdr.roce_bth.opcode = 0x0a;
            hdr.roce_reth.setValid();
            hdr.roce_reth.rkey = meta.dta_rkey;
            hdr.roce_reth.va = meta.dta_va + (((bit<64>)meta.dta_slot) << {shift});
            hdr.roce_reth.dma_len = {slot_len};
            hdr.rdma_payload.setValid();
            hdr.rdma_payload.checksum_le = {csum_le};
            hdr.rdma_payload.data = meta.dta_data;
            hdr.ipv4.total_len = {kw_ip};
            hdr.udp.length = {kw_udp};
{kw_icrc}
            SF_TRUNCATE({kw_frame});
        }} else {{
            hdr.roce_bth.opcode = 0x14;
            hdr.roce_atomic_eth.setValid();
            hdr.roce_atomic_eth.rkey = meta.dta_rkey;
            hdr.roce_atomic_eth.va = meta.dta_va + (((bit<64>)meta.dta_slot) << 3);
            hdr.roce_atomic_eth.swap_add = meta.dta_count;
            hdr.roce_atomic_eth.compare = 0;
            hdr.ipv4.total_len = {ki_ip};
            hdr.udp.length = {ki_udp};
{ki_icrc}
            SF_TRUNCATE({ki_frame});
        }}
    }}
    // The ICRC goes on the wire in little-endian byte order (wire::roce::icrc::fill).
    hdr.roce_icrc.icrc = {icrc_le};
}} else if (meta.dta_op == 0) {{
    {l2l3}
}}",
            rate_low = stat("rate_low"),
            rate_over_high = stat("rate_over_high"),
            store_down = stat("store_down"),
            rdma = stat("rdma_packets"),
            ack_every = ack_mask + 1,
            append_le = le("meta.dta_key"),
            csum_le = le("meta.dta_csum"),
            icrc_le = le("meta.dta_icrc"),
            ap_ip = 20 + 8 + 12 + 16 + 4 + 4,
            ap_udp = 8 + 12 + 16 + 4 + 4,
            ap_frame = 14 + 20 + 8 + 12 + 16 + 4 + 4,
            kw_ip = 20 + 8 + 12 + 16 + kw_len + 4,
            kw_udp = 8 + 12 + 16 + kw_len + 4,
            kw_frame = (14 + 20 + 8 + 12 + 16 + kw_len + 4).max(60),
            ki_ip = 20 + 8 + 12 + 28 + 4,
            ki_udp = 8 + 12 + 28 + 4,
            ki_frame = 14 + 20 + 8 + 12 + 28 + 4,
            kw_icrc = kw_icrc.replace('\n', "\n            ").replace("            #", "#"),
            ap_icrc = ap_icrc.replace('\n', "\n        ").replace("        #", "#"),
            ki_icrc = ki_icrc.replace('\n', "\n            ").replace("            #", "#"),
            l2l3 = l2l3.trim_end().replace('\n', "\n    "),
        )
    }

    /// The control-plane state the configuration implies: collectors, stores and their replica
    /// groups, lists, key ranges, meters, the switch's addresses. The QPs' connections
    /// (`dta_qp_state`) come from the CM exchange at run time.
    fn dta_entries(&self, port_ips: &[Option<std::net::Ipv4Addr>]) -> Vec<Entry> {
        let mut e = local_ip_entries(port_ips);
        let max_n = u16::from(self.s.max_redundancy);
        for (i, c) in self.collectors.iter().enumerate() {
            e.push(Entry::Table {
                pipe: Pipe::Ingress,
                table: "dta_collectors",
                keys: vec![("hdr.ipv4.dst_addr".into(), KeyVal::Exact(u128::from(c.ip.to_bits())))],
                action: "set_collector",
                args: vec![Arg { name: "dta_collector", value: i as u128 }],
            });
        }
        for (op, list) in [(1u128, &self.kw_collectors), (3u128, &self.ki_collectors)] {
            for (j, &c) in list.iter().enumerate() {
                let Some((lo, hi)) = dta::keywrite_collector_range(j, list.len()) else { continue };
                e.push(Entry::Table {
                    pipe: Pipe::Ingress,
                    table: "dta_key_collector",
                    keys: vec![
                        ("meta.dta_op".into(), KeyVal::Exact(op)),
                        ("meta.dta_chash".into(), KeyVal::Range(u128::from(lo), u128::from(hi))),
                    ],
                    action: "set",
                    args: vec![Arg { name: "collector", value: c as u128 }],
                });
            }
        }
        for (qi, q) in self.qps.iter().enumerate() {
            let c = &self.collectors[q.collector];
            let group = FIRST_QP_GROUP + qi as u16 * max_n;
            let op = match q.store {
                Store::KeyWrite { .. } => 1u128,
                Store::KeyIncrement => 3,
                Store::Append { list, .. } => {
                    e.push(Entry::Table {
                        pipe: Pipe::Ingress,
                        table: "dta_lists",
                        keys: vec![("hdr.dta_append.list_id".into(), KeyVal::Exact(u128::from(list)))],
                        action: "set_qp",
                        args: vec![Arg { name: "dta_qp", value: qi as u128 }],
                    });
                    2
                }
                _ => continue,
            };
            if op != 2 {
                e.push(Entry::Table {
                    pipe: Pipe::Ingress,
                    table: "dta_store",
                    keys: vec![
                        ("meta.dta_collector".into(), KeyVal::Exact(q.collector as u128)),
                        ("meta.dta_op".into(), KeyVal::Exact(op)),
                    ],
                    action: "set",
                    args: vec![Arg { name: "qp", value: qi as u128 }],
                });
            }
            e.push(Entry::Table {
                pipe: Pipe::Ingress,
                table: "dta_qp_info",
                keys: vec![("meta.dta_qp".into(), KeyVal::Exact(qi as u128))],
                action: "set",
                args: vec![
                    Arg { name: "collector", value: q.collector as u128 },
                    Arg { name: "group", value: u128::from(group) + 1 },
                    Arg { name: "metered", value: u128::from(c.metered) },
                    Arg {
                        name: "need_n",
                        value: if op == 3 { u128::from(c.keyincrement_redundancy.unwrap_or(0)) } else { 0 },
                    },
                ],
            });
            // The replica groups, to the collector's port as the routes and static neighbours
            // give it at export.
            if let Some(nh) = self.l2l3.resolve(c.ip) {
                let copies = if op == 2 { 1 } else { max_n };
                for n in 1..=copies {
                    e.push(Entry::Replicas { group: group + n - 1, port: nh.port, copies: n });
                }
            }
        }
        for (i, c) in self.collectors.iter().enumerate() {
            if c.metered {
                let u = u64::from(super::UNITS);
                e.push(Entry::Meter {
                    pipe: Pipe::Egress,
                    name: "dta_collector_meters",
                    index: i as u32,
                    cir: c.rate.cir / u,
                    cbs: c.rate.cbs / u,
                    pir: c.rate.pir / u,
                    pbs: c.rate.pbs / u,
                });
            }
        }
        e
    }

    fn dta_limitations(&self, slot_len: usize) -> Vec<String> {
        let mut l = vec![
            "the control plane (the CPU port, `SF_CPU_PORT`) is not exported: it connects every store's QP \
             with the IB CM and writes `dta_qp_state` (collector QPN, R_Key, region, mask and last entry, MACs, \
             addresses, UDP source port) and the QP's starting PSN into `dta_qp_psn`; it takes the collectors' \
             ACKs, NAKs and CM MADs, the reports the data plane does not translate (out of sequence, \
             immediate, Postcarder, Sketch-Merge, unknown opcodes), sends reporters their NACKs and sets \
             `dta_seq_expect`. Until a QP's `dta_qp_state` entry exists its reports are dropped and counted \
             (`store_down`)."
                .to_string(),
            "retransmission: the data plane keeps no copy of what it sent, as the DTA prototype's Tofino \
             translator: a NAK or a timeout loses the WRITEs after it (the control plane sees the NAK, counts \
             the loss and resynchronises `dta_qp_psn`). The Rust translator's go-back-N, congestion window and \
             replays after a reconnection are not on the targets."
                .to_string(),
            format!(
                "Append: one entry per WRITE (4 bytes at the ring's head, `dta_append_head`), not the Rust \
                 translator's batches of B: {}× the packets at the collector, the same data; no head marks.",
                self.qps
                    .iter()
                    .filter_map(|q| match &q.store {
                        Store::Append { batcher, .. } => Some(batcher.batch()),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(1)
            ),
            "metering: `dta_collector_meters` runs per RDMA packet in egress (the Rust translator charges a \
             report's packets at once, before sending any): low priority passes green, medium green and \
             yellow; high priority over the peak is sent and counted (`rate_over_high`) where the Rust \
             translator parks it; no slow-down messages."
                .to_string(),
            format!(
                "slots: `KeyHash` ({:?}) of copy n and the Key-Write checksum are CRCs of the key's bytes, affine \
                 over GF(2), so four (copy, byte) tables whose parts XOR to the hash give them exactly on both \
                 targets (no custom CRC extern, no runtime CRC parameters); {slot_len}-byte Key-Write slots.",
                self.s.key_hash
            ),
            "ICRC: computed in egress by the target's CRC-32 (ISO-HDLC, as `wire::roce::icrc`) over eight \
             0xff bytes and the masked IPv4, UDP and BTH fields, the RETH or AtomicETH and the payload — all \
             headers the program builds, a fixed-size frame per primitive; the collector's NIC checks it as \
             usual. On TNA this needs one hash over up to 80 bytes of input; if the compiler cannot fit it, the \
             fallback is the DTA prototype's: the collector's NIC with ICRC checking off."
                .to_string(),
            "frame length: v1model truncates each RDMA packet to its frame (the report's trailing bytes cut); \
             Tofino 1 cannot cut in egress, so a report's Ethernet padding may follow the ICRC (the IPv4 length \
             bounds the packet, as in the prototype)."
                .to_string(),
            "AckReq: set when the PSN's low bits are all ones (every `ack_every` packets, rounded up to a power \
             of two), not by the Rust requester's window rules."
                .to_string(),
        ];
        if !self.collectors.iter().all(|c| self.l2l3.resolve(c.ip).is_some()) {
            l.push(
                "a collector without a route and static neighbour at export has no replica groups: its reports are \
                 replicated nowhere (the targets drop them); add a static neighbour."
                    .into(),
            );
        }
        if self.s.default_priority != Priority::Low {
            l.push(format!("short-form reports take priority {:?}.", self.s.default_priority));
        }
        l
    }
}

/// A header the program builds with no `wire` specification of its own: fields as listed.
fn raw_header(instance: &'static str, fields: &[(&str, u16)]) -> ExtraHeader {
    let t = format!("{instance}_h");
    let mut d = format!("// {instance}: built by the translator.\nheader {t} {{\n");
    for (f, w) in fields {
        let _ = writeln!(d, "    bit<{w}> {f};");
    }
    d.push_str("}\n\n");
    ExtraHeader { instance, type_name: t, decl: Some(d) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The (copy, byte) tables give `KeyHash`'s slot of every copy and its checksum, in both
    /// modes: what the P4 XORs is what the Rust translator and the collector's queries compute.
    #[test]
    fn the_byte_tables_give_every_copys_slot_and_the_checksum() {
        for mode in [dta::KeyHashMode::Independent, dta::KeyHashMode::Reference] {
            let parts: Vec<_> =
                (0..8).map(|n| affine_parts(|k| KeyHash::with_mode(k, mode).slot(n))).collect();
            let csum = affine_parts(|k| KeyHash::with_mode(k, mode).checksum());
            let mut x = 0x9e37_79b9u32;
            for _ in 0..5_000 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let b = x.to_le_bytes();
                let xor = |t: &[[u32; 256]; 4]| (0..4).fold(0, |a, i| a ^ t[i][usize::from(b[i])]);
                let h = KeyHash::with_mode(x, mode);
                assert_eq!(xor(&csum), h.checksum());
                for (n, p) in parts.iter().enumerate() {
                    assert_eq!(xor(p), h.slot(n as u8), "{mode:?} copy {n} key {x:#x}");
                }
            }
        }
    }
}
