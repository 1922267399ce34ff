//! The translator's egress in P4: the QP state, the RoCEv2 request built from the report, its ICRC.

use wire::dta::KeyHash;

use super::super::DtaTranslator;
use super::*;

impl DtaTranslator {
    pub(super) fn egress_decls(
        &self,
        slot_len: usize,
        entries: &mut Vec<Entry>,
    ) -> Result<String, ExportError> {
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

    pub(super) fn egress_p4(&self, l2l3: &str, data_len: usize, slot_len: usize) -> String {
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
}
