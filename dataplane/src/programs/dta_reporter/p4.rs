//! `dta_reporter` in P4: `l2l3`'s steps, then [`DtaReporter`]'s `observe` on every IPv4 packet
//! sent to one port, the report built from an ingress clone in egress.
//!
//! Step by step (Rust → P4):
//! - the flow's CRC-32 over the 5-tuple → the declared hash unit `dta_reporter_flow_key`;
//! - [`wire::dta::flow_key`] (four byte tables) → four P4-only exact tables
//!   `dta_key_b0..b3` with fixed entries the control plane installs at start, which also give the four parts of the key's
//!   collector hash (CRC-32C of a tabulated key is the XOR of each table's CRC-32C image: the
//!   CRC is affine), so neither target needs a custom CRC;
//! - `trigger = "change"`: the `dta_reporter_flows` cell read, compared and written → two
//!   32-bit registers (`flow_key`, `last_value`), one `RegisterAction` each on TNA: "same as
//!   before" from each, report when either differs; `trigger = "sample"`: the xorshift draw →
//!   the target's random extern against `2^32 / sample`;
//! - the collector ([`wire::dta::keywrite_collector`], or the list's) → `dta_collector`, a range
//!   match on the collector hash giving the clone session towards that collector;
//! - the sequence number → the `dta_reporter_seqnum` register, one increment per report;
//! - the report frame (`write_report_frame`) → an ingress clone (v1model
//!   `clone_preserving_field_list`, TNA mirror) rewritten in egress into Ethernet/IPv4/UDP/DTA
//!   from `dta_report_dest` (the collector's next hop, resolved at export) and cut to the
//!   report (v1model `truncate`, the TNA session's `max_pkt_len`).

use std::fmt::Write as _;
use std::net::Ipv4Addr;

use wire::dta::{self, Priority};
use wire::udp::port::DTA_NACK;

use super::{DtaReporter, ReportKind, Trigger};
use crate::config::Config;
use crate::model::param;
use crate::p4::{Arg, Entry, ExportError, ExtraHeader, KeyVal, Pipe, ProgramP4, TabulatedFn};

/// Reporter counter indices (`dta_reporter_stats`): the Rust program's [`super::ReporterStats`].
const STATS: [&str; 4] = ["observed", "reports", "unroutable", "nacks"];

fn stat(name: &str) -> usize {
    STATS.iter().position(|s| *s == name).unwrap_or(0)
}

/// The Ethernet minimum without the FCS, as the Rust reporter pads its frames.
const MIN_FRAME: usize = wire::ethernet::MIN_FRAME_LEN;

impl DtaReporter {
    /// The P4 rendering of this reporter as `cfg` configures it.
    pub(super) fn rendering(&self, cfg: &Config) -> Result<ProgramP4, ExportError> {
        // Key-Increment's sampled byte count is scaled by the sampling rate: a shift on both
        // targets when it is a power of two; Tofino cannot multiply otherwise.
        let scale = match self.trigger {
            Trigger::Sample(n) => n,
            Trigger::Change => 1,
        };
        let (opcode, prim, prim_len): (u8, &'static wire::spec::Header, usize) = match self.kind {
            ReportKind::KeyWrite { .. } => (1, &dta::KEYWRITE, dta::KEYWRITE.len),
            ReportKind::Append { .. } => (2, &dta::APPEND, dta::APPEND.len),
            ReportKind::KeyIncrement { .. } => {
                if !scale.is_power_of_two() {
                    return Err(ExportError::Unsupported(format!(
                        "dta_reporter: Key-Increment sampled one in {scale} scales byte counts by {scale}, which \
                         a switch ALU can only do as a shift: use a power of two"
                    )));
                }
                (3, &dta::KEYINCREMENT, dta::KEYINCREMENT.len)
            }
        };
        let mut p = self.l2l3.rendering(cfg);
        let report_len = dta::LONG_BASE_LEN + prim_len;
        let frame_len = 14 + 20 + 8 + report_len;
        let pad = MIN_FRAME.saturating_sub(frame_len);
        p.extra_headers.push(ExtraHeader::wire("dta_base", &dta::BASE_LONG));
        p.extra_headers.push(ExtraHeader::wire(prim.name, prim));
        if pad > 0 {
            p.extra_headers.push(ExtraHeader::zeros("dta_pad", pad));
        }
        p.meta.extend([
            param("dta_fwd", 1),
            param("dta_fwd_port", 16),
            param("dta_crc", 32),
            param("dta_k0", 32),
            param("dta_k1", 32),
            param("dta_k2", 32),
            param("dta_k3", 32),
            param("dta_c0", 32),
            param("dta_c1", 32),
            param("dta_c2", 32),
            param("dta_c3", 32),
            param("dta_chash", 32),
            param("dta_session", 10),
            param("dta_report", 1),
            param("dta_value", 32),
            param("dta_local", 1),
            param("dta_epoch", 4),
        ]);
        p.bridge = vec![param("dta_key", 32), param("dta_seq", 8), param("dta_collector", 8)];
        match self.kind {
            ReportKind::KeyWrite { .. } => p.bridge.push(param("dta_data", 32)),
            ReportKind::KeyIncrement { .. } => p.bridge.push(param("dta_count", 64)),
            ReportKind::Append { .. } => {}
        }
        let bridge_bytes = 1 + p.bridge.iter().map(|b| usize::from(b.width)).sum::<usize>().div_ceil(8);
        p.tna_clone_parser = Some(
            "// The clone was cut to its mirror header, Ethernet and 20 bytes of IPv4 (the session's\n\
             // max_pkt_len): egress rewrites those and adds the rest.\n\
             pkt.extract(hdr.ethernet);\npkt.extract(hdr.ipv4);\ntransition accept;"
                .into(),
        );
        p.ingress_apply =
            self.l2l3.ingress_apply(&|port| format!("meta.dta_fwd = 1;\nmeta.dta_fwd_port = {port};"));
        let local = self.local_nack_check();
        p.ingress_apply = format!("{local}{}\n{}", p.ingress_apply, self.observe_p4(scale));
        let decls = self.ingress_decls(&mut p.entries);
        p.ingress_decls.push_str(&decls);
        p.egress_apply = self.egress_p4(&p, report_len, frame_len, pad, opcode, prim.name);
        p.egress_decls.push_str(&self.egress_decls());
        p.egress_tables.push("dta_report_dest");
        p.not_emitted.push((
            "dta_reporter_kept",
            "reports kept for NACKs are 2 048-bit cells, and a NACK resends several: neither a stateful ALU \
             nor BMv2 without a loop can do it — on the targets a NACK to the switch is counted (`nacks`) and \
             the translator counts what it asked for as unrecoverable when its window passes"
                .into(),
        ));
        p.added.extend([
            ("dta_key_b0..b3", "exact on one byte of the flow CRC, 256 entries each (installed at start): the flow key's and its collector hash's parts".into()),
            ("dta_collector", "range on the collector hash: the clone session and collector index".into()),
            ("dta_local_ip", "exact on IPv4 destination: the switch's own addresses (a NACK to it)".into()),
            ("dta_reporter_seqnum", "register, 8 bits, one cell: the next sequence number".into()),
            ("dta_reporter_stats", format!("packet counter, index: {}", STATS.join(", "))),
            ("dta_report_dest (egress)", "exact on the collector index: the report's MACs and addresses, and the epoch".into()),
        ]);
        for (name, _) in &p.not_emitted {
            debug_assert!(self.resources.get(name).is_some(), "{name} is declared");
        }
        let mut chain = vec![vec!["dta_local_ip"]];
        chain.append(&mut p.chain);
        p.chain = chain;
        p.chain.push(vec!["dta_reporter_flow_key (hash)"]);
        p.chain.push(vec!["dta_key_b0", "dta_key_b1", "dta_key_b2", "dta_key_b3"]);
        p.chain.push(vec!["dta_reporter_flows (registers)"]);
        p.chain.push(vec!["dta_collector"]);
        p.chain.push(vec!["dta_reporter_seqnum (register)"]);
        p.chain.push(vec!["dta_report_dest (egress)"]);
        p.entries.extend(self.report_entries(bridge_bytes));
        p.limitations.extend(self.report_limitations(scale));
        Ok(p)
    }

    /// A NACK or slow-down message to one of the switch's addresses: counted and consumed.
    fn local_nack_check(&self) -> String {
        format!(
            "// A DTA NACK or slow-down to the switch: counted and consumed (no kept reports to resend).
if (hdr.dta_nack.isValid()) {{
    dta_local_ip.apply();
    if (meta.dta_local == 1) {{
        dta_reporter_stats.count({nacks});
        SF_DROP();
        exit;
    }}
}}
",
            nacks = stat("nacks")
        )
    }

    fn observe_p4(&self, scale: u32) -> String {
        let mut s = format!(
            "// dta_reporter's observe: IPv4 sent to one port, not a report or NACK passing through.
if (meta.dta_fwd == 1 && hdr.ipv4.isValid() && !(hdr.udp.isValid() && (hdr.udp.dst_port == {udp} || hdr.udp.dst_port == {nack}))) {{
    dta_reporter_stats.count({observed});
    // The flow key: CRC-32 of the 5-tuple, then wire::dta::flow_key's byte tables (never 0).
#ifdef SF_TNA
    meta.dta_crc = dta_reporter_flow_key.get({{ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol, meta.l4_src_port, meta.l4_dst_port }});
#else
    hash(meta.dta_crc, HashAlgorithm.crc32, 32w0, {{ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol, meta.l4_src_port, meta.l4_dst_port }}, 64w0x100000000);
#endif
    dta_key_b0.apply();
    dta_key_b1.apply();
    dta_key_b2.apply();
    dta_key_b3.apply();
    meta.dta_key = meta.dta_k0 ^ meta.dta_k1 ^ meta.dta_k2 ^ meta.dta_k3;
    meta.dta_chash = meta.dta_c0 ^ meta.dta_c1 ^ meta.dta_c2 ^ meta.dta_c3;
    if (meta.dta_key == 0) {{
        meta.dta_key = 1;
        meta.dta_chash = {chash1:#x};
    }}
    meta.dta_value = 16w{sid:#x} ++ meta.dta_fwd_port;
",
            udp = self.udp_port,
            nack = DTA_NACK,
            observed = stat("observed"),
            chash1 = dta::keywrite_collector_hash(1),
            sid = self.switch_id,
        );
        match self.trigger {
            Trigger::Change => {
                let _ = write!(
                    s,
                    "    // trigger = \"change\": the flow's first packet and every change of its egress port.
    bit<32> slot = meta.dta_key & {mask:#x};
#ifdef SF_TNA
    bit<1> same_key = dta_flows_key_update.execute(slot);
    bit<1> same_value = dta_flows_value_update.execute(slot);
    if (same_key == 0 || same_value == 0) {{
        meta.dta_report = 1;
    }}
#else
    bit<32> old_key;
    bit<32> old_value;
    dta_reporter_flows_flow_key.read(old_key, slot);
    dta_reporter_flows_last_value.read(old_value, slot);
    if (old_key != meta.dta_key || old_value != meta.dta_value) {{
        meta.dta_report = 1;
    }}
    dta_reporter_flows_flow_key.write(slot, meta.dta_key);
    dta_reporter_flows_last_value.write(slot, meta.dta_value);
#endif
",
                    mask = self.flow_mask
                );
            }
            Trigger::Sample(n) => {
                let cond = if n == 1 {
                    "true".to_string()
                } else {
                    format!("r < {:#x}", (1u64 << 32) / u64::from(n))
                };
                let _ = write!(
                    s,
                    "    // trigger = \"sample\": one packet in {n}, drawn by the target's generator.
#ifdef SF_TNA
    bit<32> r = dta_rng.get();
#else
    bit<32> r;
    random(r, 32w0, 32w0xffffffff);
#endif
    if ({cond}) {{
        meta.dta_report = 1;
    }}
"
                );
            }
        }
        let data = match self.kind {
            ReportKind::KeyWrite { .. } => "            meta.dta_data = meta.dta_value;\n".to_string(),
            ReportKind::KeyIncrement { .. } => format!(
                "            meta.dta_count = ((bit<64>)hdr.ipv4.total_len) << {};\n",
                scale.trailing_zeros()
            ),
            ReportKind::Append { .. } => String::new(),
        };
        let seq = if self.retransmittable {
            "#ifdef SF_TNA\n            meta.dta_seq = dta_seq_next.execute(0);\n#else\n            dta_reporter_seqnum.read(meta.dta_seq, 0);\n            dta_reporter_seqnum.write(0, meta.dta_seq + 1);\n#endif\n"
        } else {
            "            // Not retransmittable: sequence number 0.\n"
        };
        let _ = write!(
            s,
            "    if (meta.dta_report == 1) {{
        dta_collector.apply();
        if (meta.dta_session == 0) {{
            // No path to the collector at export (no route or neighbour): counted, not sent.
            dta_reporter_stats.count({unroutable});
        }} else {{
{data}{seq}            SF_CLONE_I2E(meta.dta_session);
            dta_reporter_stats.count({reports});
        }}
    }}
}}",
            unroutable = stat("unroutable"),
            reports = stat("reports"),
        );
        s
    }

    fn ingress_decls(&self, entries: &mut Vec<Entry>) -> String {
        let mut s = String::from(LOCAL_IP_TABLE);
        s.push_str(
            "#ifdef SF_TNA
    Counter<bit<32>, bit<8>>(4, CounterType_t.PACKETS) dta_reporter_stats;
#else
    counter(4, CounterType.packets) dta_reporter_stats;
#endif
    action dta_collector_set(bit<10> session, bit<8> collector) {
        meta.dta_session = session;
        meta.dta_collector = collector;
    }
    action dta_collector_none() {
        meta.dta_session = 0;
    }
    table dta_collector {
        key = {
            meta.dta_chash: range @name(\"dta_chash\");
        }
        actions = {
            dta_collector_set;
            dta_collector_none;
        }
        default_action = dta_collector_none();
        size = 64;
    }
",
        );
        // The flow key's byte tables (their entries installed at start).
        for (i, t) in dta::FLOW_KEY_TABLES.iter().enumerate() {
            s.push_str(
                &TabulatedFn {
                    name: ["dta_key_b0", "dta_key_b1", "dta_key_b2", "dta_key_b3"][i],
                    keys: vec![(
                        format!("meta.dta_crc[{}:{}]", i * 8 + 7, i * 8),
                        ["crc_byte0", "crc_byte1", "crc_byte2", "crc_byte3"][i],
                        8,
                    )],
                    params: vec![("key", 32), ("chash", 32)],
                    body: format!("meta.dta_k{i} = key;\nmeta.dta_c{i} = chash;"),
                    rows: t
                        .iter()
                        .enumerate()
                        .map(|(b, &v)| {
                            (vec![b as u128], vec![u128::from(v), u128::from(collector_part(i, v))])
                        })
                        .collect(),
                }
                .render(Pipe::Ingress, entries),
            );
        }
        if self.retransmittable {
            s.push_str(
                "#ifdef SF_TNA
    Register<bit<8>, bit<1>>(1, 0) dta_reporter_seqnum;
    RegisterAction<bit<8>, bit<1>, bit<8>>(dta_reporter_seqnum) dta_seq_next = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            v = v + 1;
        }
    };
#else
    register<bit<8>>(1) dta_reporter_seqnum;
#endif
",
            );
        }
        match self.trigger {
            Trigger::Change => s.push_str(
                "#ifdef SF_TNA
    // One stateful ALU per half of the flow cell: 1 when the cell already held the value.
    RegisterAction<bit<32>, bit<32>, bit<1>>(dta_reporter_flows_flow_key) dta_flows_key_update = {
        void apply(inout bit<32> v, out bit<1> rv) {
            if (v == meta.dta_key) {
                rv = 1;
            } else {
                rv = 0;
            }
            v = meta.dta_key;
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<1>>(dta_reporter_flows_last_value) dta_flows_value_update = {
        void apply(inout bit<32> v, out bit<1> rv) {
            if (v == meta.dta_value) {
                rv = 1;
            } else {
                rv = 0;
            }
            v = meta.dta_value;
        }
    };
#endif
",
            ),
            Trigger::Sample(_) => s.push_str("#ifdef SF_TNA\n    Random<bit<32>>() dta_rng;\n#endif\n"),
        }
        s
    }

    fn egress_decls(&self) -> String {
        "    action dta_report_dest_set(bit<48> src_mac, bit<48> dst_mac, bit<32> src_ip, bit<32> dst_ip, bit<4> epoch) {
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.src_addr = src_ip;
        hdr.ipv4.dst_addr = dst_ip;
        meta.dta_epoch = epoch;
    }
    action dta_report_dest_none() {
        SF_EGRESS_DROP();
    }
    table dta_report_dest {
        key = {
            meta.dta_collector: exact @name(\"dta_collector\");
        }
        actions = {
            dta_report_dest_set;
            dta_report_dest_none;
        }
        default_action = dta_report_dest_none();
        size = 64;
    }
"
        .into()
    }

    #[allow(clippy::too_many_arguments)]
    fn egress_p4(
        &self,
        p: &ProgramP4,
        report_len: usize,
        frame_len: usize,
        pad: usize,
        opcode: u8,
        prim: &str,
    ) -> String {
        let invalid = crate::p4::invalidate_parsed_except(&self.resources, &["ethernet", "ipv4", "udp"]);
        let (retx, prio) = (u8::from(self.retransmittable), priority_bits(self.priority));
        let fields = match self.kind {
            ReportKind::KeyWrite { redundancy } => format!(
                "    hdr.dta_keywrite.redundancy = {redundancy};\n    hdr.dta_keywrite.key = meta.dta_key;\n    hdr.dta_keywrite.data = meta.dta_data;\n"
            ),
            ReportKind::KeyIncrement { redundancy } => format!(
                "    hdr.dta_keyincrement.redundancy = {redundancy};\n    hdr.dta_keyincrement.key = meta.dta_key;\n    hdr.dta_keyincrement.counter = meta.dta_count;\n"
            ),
            ReportKind::Append { list } => {
                format!("    hdr.dta_append.list_id = {list:#x};\n    hdr.dta_append.data = meta.dta_key;\n")
            }
        };
        let epoch = if self.retransmittable { "meta.dta_epoch" } else { "0" };
        let pad_set = if pad > 0 { "    hdr.dta_pad.setValid();\n    hdr.dta_pad.zeros = 0;\n" } else { "" };
        let l2l3 = p.egress_apply.trim_end().replace('\n', "\n    ");
        format!(
            "if (SF_EGRESS_IS_CLONE) {{
    // The report (roce::dta::write_report_frame): Ethernet / IPv4 / UDP / DTA, {frame_len} bytes{padded}.
{invalid}    dta_report_dest.apply();
    hdr.ethernet.ether_type = 0x0800;
    hdr.ipv4.version = 4;
    hdr.ipv4.ihl = 5;
    hdr.ipv4.dscp = 0;
    hdr.ipv4.ecn = 0;
    hdr.ipv4.total_len = {ip_len};
    hdr.ipv4.identification = 0;
    hdr.ipv4.reserved_flag = 0;
    hdr.ipv4.dont_frag = 1;
    hdr.ipv4.more_frags = 0;
    hdr.ipv4.frag_offset = 0;
    hdr.ipv4.ttl = 64;
    hdr.ipv4.protocol = 17;
    hdr.udp.setValid();
    hdr.udp.src_port = {sport:#x};
    hdr.udp.dst_port = {dport};
    hdr.udp.length = {udp_len};
    hdr.udp.checksum = 0;
    hdr.dta_base.setValid();
    hdr.dta_base.opcode = {opcode};
    hdr.dta_base.seqnum = meta.dta_seq;
    hdr.dta_base.immediate = 0;
    hdr.dta_base.retransmittable = {retx};
    hdr.dta_base.priority = {prio};
    hdr.dta_base.epoch = {epoch};
    hdr.{prim}.setValid();
{fields}{pad_set}    SF_TRUNCATE({out_len});
}} else {{
    {l2l3}
}}",
            padded = if pad > 0 {
                format!(", padded with {pad} zeros to the Ethernet minimum")
            } else {
                String::new()
            },
            ip_len = 20 + 8 + report_len,
            udp_len = 8 + report_len,
            sport = self.src_port,
            dport = self.udp_port,
            out_len = frame_len + pad,
        )
    }

    /// The collector ranges, the clone sessions, and each collector's report header.
    fn report_entries(&self, bridge_bytes: usize) -> Vec<Entry> {
        let mut e = Vec::new();
        let n = self.collectors.len();
        let mac = mac_value;
        let fixed = match self.kind {
            ReportKind::Append { list } => Some(list as usize % n.max(1)),
            _ => None,
        };
        for (i, &ip) in self.collectors.iter().enumerate() {
            let Some(nh) = self.l2l3.resolve(ip) else { continue };
            let Some(src) =
                self.source_ip.or_else(|| self.port_ips.get(usize::from(nh.port)).copied().flatten())
            else {
                continue;
            };
            let range = match fixed {
                Some(c) if c == i => Some((0, u128::from(u32::MAX))),
                Some(_) => None,
                None => dta::keywrite_collector_range(i, n).map(|(lo, hi)| (u128::from(lo), u128::from(hi))),
            };
            let session = i as u16 + 1;
            if let Some((lo, hi)) = range {
                e.push(Entry::Table {
                    pipe: Pipe::Ingress,
                    table: "dta_collector",
                    keys: vec![("meta.dta_chash".into(), KeyVal::Range(lo, hi))],
                    action: "set",
                    args: vec![
                        Arg { name: "session", value: u128::from(session) },
                        Arg { name: "collector", value: i as u128 },
                    ],
                });
            }
            e.push(Entry::Mirror { session, port: nh.port, max_len: (bridge_bytes + 14 + 20) as u16 });
            e.push(Entry::Table {
                pipe: Pipe::Egress,
                table: "dta_report_dest",
                keys: vec![("meta.dta_collector".into(), KeyVal::Exact(i as u128))],
                action: "set",
                args: vec![
                    Arg { name: "src_mac", value: mac(nh.src_mac) },
                    Arg { name: "dst_mac", value: mac(nh.dst_mac) },
                    Arg { name: "src_ip", value: u128::from(src.to_bits()) },
                    Arg { name: "dst_ip", value: u128::from(ip.to_bits()) },
                    Arg { name: "epoch", value: u128::from(self.epoch_cfg.unwrap_or(1)) },
                ],
            });
        }
        e.extend(local_ip_entries(&self.port_ips));
        e
    }

    fn report_limitations(&self, scale: u32) -> Vec<String> {
        let mut l = vec![
            "flow key: wire::dta::flow_key (four byte tables) on every target, so a flow has the same key on \
             our switch, BMv2 and Tofino and the translator's queries find it."
                .to_string(),
            "retransmission: reports keep their sequence numbers (the translator finds and counts gaps), but a \
             NACK to the switch is counted (`dta_reporter_stats[nacks]`) and consumed: the kept reports \
             (`dta_reporter_kept`) and resending stay in the Rust switch; what was NACKed is counted \
             unrecoverable by the translator."
                .to_string(),
            "slow-down: the Rust reporter thins low and medium priority after a slow-down message; the targets \
             do not (no rate state): the translator's meter still drops and counts what is over the rate."
                .to_string(),
            "report path: the collector's next hop is resolved at export (routes and static neighbours) into a \
             clone session and `dta_report_dest`; a collector without a resolved path gets no entries and its \
             reports are counted `unroutable`. The report's TM queue is the session's (not `queue`)."
                .to_string(),
            "report copies: v1model clones (I2E, metadata by `@field_list(1)`) and truncates in egress; TNA \
             mirrors with a mirror header and the session's `max_pkt_len` (mirror header, Ethernet and 20 bytes \
             of IPv4)."
                .to_string(),
        ];
        if self.retransmittable && self.epoch_cfg.is_none() {
            l.push(
                "epoch: not configured, so the Rust switch picks one per start; the export writes 1 in \
                 `dta_report_dest`, and the control plane should write a fresh one (1..=15) at each start so the \
                 translator tells a restart from a gap."
                    .into(),
            );
        }
        if let Trigger::Sample(n) = self.trigger {
            l.push(format!(
                "sampling: one packet in {n} by the target's random generator (BMv2 `random`, Tofino `Random`) \
                 against 2^32/{n}, where the Rust switch draws from its xorshift; byte counts scaled by a shift of \
                 {}.",
                scale.trailing_zeros()
            ));
        }
        l
    }
}

/// The collector-hash part of flow-key table `i`'s value `v`: CRC-32C(k) is affine in `k`, so
/// CRC-32C(k₀ ⊕ k₁ ⊕ k₂ ⊕ k₃) = ⊕ (CRC-32C(kᵢ) ⊕ c) ⊕ c (four terms: the constant `c` =
/// CRC-32C(0) cancels in pairs, so table 0 carries it once).
fn collector_part(i: usize, v: u32) -> u32 {
    let c0 = dta::keywrite_collector_hash(0);
    let lin = dta::keywrite_collector_hash(v) ^ c0;
    if i == 0 { lin ^ c0 } else { lin }
}

fn priority_bits(p: Priority) -> u8 {
    p as u8
}

/// `dta_local_ip`: whether the IPv4 destination is one of the switch's addresses
/// (`meta.dta_local`), a P4-only table both DTA programs use.
pub(crate) const LOCAL_IP_TABLE: &str = "    action dta_local_ip_hit() {
        meta.dta_local = 1;
    }
    action dta_local_ip_miss() {
        meta.dta_local = 0;
    }
    table dta_local_ip {
        key = {
            hdr.ipv4.dst_addr: exact @name(\"ipv4_dst_addr\");
        }
        actions = {
            dta_local_ip_hit;
            dta_local_ip_miss;
        }
        default_action = dta_local_ip_miss();
        size = 64;
    }
";

/// `dta_local_ip`'s entries: the ports' addresses.
pub(crate) fn local_ip_entries(port_ips: &[Option<Ipv4Addr>]) -> Vec<Entry> {
    let mut local: Vec<Ipv4Addr> = port_ips.iter().flatten().copied().collect();
    local.sort();
    local.dedup();
    local
        .into_iter()
        .map(|ip| Entry::Table {
            pipe: Pipe::Ingress,
            table: "dta_local_ip",
            keys: vec![("hdr.ipv4.dst_addr".into(), KeyVal::Exact(u128::from(ip.to_bits())))],
            action: "hit",
            args: vec![],
        })
        .collect()
}

/// A MAC address as a table value.
pub(crate) fn mac_value(m: wire::EthernetAddress) -> u128 {
    let b = m.0;
    u128::from(u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]]))
}

/// Four byte tables whose parts, XORed, give `f(k)` for an `f` affine over GF(2) (a CRC of the
/// four bytes of `k`, with any init and xor-out): part 0 of byte `b` is `f(b)`, part `i ≥ 1`
/// is `f(b << 8i) ⊕ f(0)`.
pub(crate) fn affine_parts(f: impl Fn(u32) -> u32) -> [[u32; 256]; 4] {
    let mut t = [[0u32; 256]; 4];
    let f0 = f(0);
    for (i, row) in t.iter_mut().enumerate() {
        for (b, cell) in row.iter_mut().enumerate() {
            let v = f((b as u32) << (8 * i));
            *cell = if i == 0 { v } else { v ^ f0 };
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the P4 computes from a flow's CRC — the four tables' key and collector-hash parts,
    /// XORed — is the Rust reporter's key and the collector hash every reporter, translator and
    /// query computes from it.
    #[test]
    fn the_byte_tables_give_the_key_and_its_collector_hash() {
        let mut x = 0x2545_f491u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let b = x.to_le_bytes();
            let (mut key, mut chash) = (0u32, 0u32);
            for (i, t) in dta::FLOW_KEY_TABLES.iter().enumerate() {
                let v = t[usize::from(b[i])];
                key ^= v;
                chash ^= collector_part(i, v);
            }
            assert_eq!(key, dta::flow_key(x));
            assert_eq!(chash, dta::keywrite_collector_hash(key), "crc {x:#x}");
        }
    }
}
