//! `hawkeye` in P4: `l2l3`'s steps, the polling packets' fan-out at ingress, and at egress the
//! epoch telemetry, the survival rules and the event de-duplication — with the differences a
//! P4 target imposes, listed in the export's `SUMMARY.md` and `docs/p4/hawkeye.md`.
//!
//! Step by step (Rust → P4):
//! - the victim's port (`L2l3::resolve_flow`) → `l2l3`'s own tables: the polling packet is
//!   routed through them with the victim's 5-tuple written into a temporary IPv4 header (so it
//!   takes exactly the path the victim takes), its MACs restored after;
//! - the fan-out (`rules::fanout`) → unicast or the flood group, the ingress port pruned;
//! - "paused" (the TM's 802.1Qbb state) → no target exposes it to the pipeline: PFC frames are
//!   sent to the egress of the port they arrived on (as the prototype reflects them), which keeps
//!   `hk_pause_until` from the frame's own pause time for the data priority (not a fixed timer);
//! - `Telemetry::record` → the declared registers, indexed by epoch bank, each cell reset on the
//!   first touch in a new lap (its `epoch_id`); on TNA one `RegisterAction` per register;
//! - `rules::survive` and the de-duplication → the same conditions on the current epoch's port
//!   cell, the pause state and the meter; a surviving copy is cloned to the CPU port (the control
//!   side, which reads the registers and sends the reports).

use std::fmt::Write as _;

use super::Hawkeye;
use crate::config::Config;
use crate::model::param;
use crate::p4::{Arg, Entry, ExportError, KeyVal, Pipe, ProgramP4};

/// Counter indices (`hk_stats`).
const STATS: [&str; 6] = ["polling", "no_trace", "no_route", "pruned", "duplicate", "survived"];

fn stat(name: &str) -> usize {
    STATS.iter().position(|s| *s == name).unwrap_or(0)
}

impl Hawkeye {
    /// The P4 rendering of this switch as `cfg` configures it.
    pub(super) fn rendering(&self, cfg: &Config) -> Result<ProgramP4, ExportError> {
        let mut p = self.l2l3.rendering(cfg);
        let ports = cfg.ports.len();
        let (epochs, shift, slots) = (self.tel.epochs(), self.tel.shift(), self.tel.slots());
        // The data priority whose pause the telemetry counts: the lowest lossless one.
        let lossless = cfg.tm.lossless;
        let prio = if lossless == 0 { 3 } else { lossless.trailing_zeros() as usize };
        p.meta.extend([
            param("hk_poll", 1),
            param("hk_found", 1),
            param("hk_victim", 16),
            param("hk_smac", 48),
            param("hk_dmac", 48),
            param("hk_epoch", 32),
            param("hk_fresh", 1),
            param("hk_mfresh", 1),
            param("hk_ffresh", 1),
            param("hk_q", 32),
            param("hk_ports_word", 32),
            param("hk_paused", 1),
            param("hk_qdepth", 32),
            param("hk_idx", 32),
            param("hk_collide", 1),
            param("hk_crc", 32),
            param("hk_until", 32),
            param("hk_now", 32),
            param("hk_qshift", 8),
            param("hk_cell", 32),
            param("hk_tag", 32),
            param("hk_keep", 1),
        ]);
        p.bridge = vec![param("hk_pfc", 1), param("ingress_port", 16)];
        p.egress_mirror = true;
        let l2l3 = self.l2l3.ingress_apply_routing(
            &|port| format!("meta.hk_found = 1;\nmeta.hk_victim = {port};"),
            Some("meta.hk_poll == 1"),
        );
        p.ingress_apply = format!(
            "meta.hk_poll = 0;
meta.hk_found = 0;
if (hdr.pfc.isValid()) {{
    // PFC: to the egress of the port it came in on, which keeps that port's pause state.
    meta.hk_pfc = 1;
    meta.ingress_port = SF_INGRESS_PORT;
    SF_SET_EGRESS(SF_INGRESS_PORT);
    SF_SET_QUEUE({q});
}} else {{
    if (hdr.polling.isValid()) {{
        hk_stats.count({polling});
        if (hdr.polling.flag == 0) {{
            hk_stats.count({no_trace});
            SF_DROP();
            exit;
        }}
        // Route it as the victim flow: its 5-tuple in a temporary IPv4 header.
        meta.hk_poll = 1;
        meta.hk_smac = hdr.ethernet.src_addr;
        meta.hk_dmac = hdr.ethernet.dst_addr;
        hdr.ipv4.setValid();
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.protocol = hdr.polling.protocol;
        hdr.ipv4.src_addr = hdr.polling.src_ip;
        hdr.ipv4.dst_addr = hdr.polling.dst_ip;
        meta.l4_src_port = hdr.polling.src_port;
        meta.l4_dst_port = hdr.polling.dst_port;
    }}
    {l2l3}
    if (meta.hk_poll == 1) {{
        hdr.ipv4.setInvalid();
        hdr.ethernet.src_addr = meta.hk_smac;
        hdr.ethernet.dst_addr = meta.hk_dmac;
        if (meta.hk_found == 0) {{
            hk_stats.count({no_route});
            SF_DROP();
        }} else {{
            hdr.polling.ingress_port = (bit<9>)SF_INGRESS_PORT;
            SF_SET_QUEUE({q});
            if (hdr.polling.flag == 1) {{
                hdr.polling.egress_port = (bit<9>)meta.hk_victim;
                SF_SET_EGRESS(meta.hk_victim);
            }} else {{
                if (hdr.polling.flag == 3) {{
                    hdr.polling.egress_port = (bit<9>)meta.hk_victim;
                }} else {{
                    hdr.polling.egress_port = 0x1ff;
                }}
                SF_MCAST(1, SF_INGRESS_PORT);
            }}
        }}
    }}
}}",
            q = self.polling_queue,
            polling = stat("polling"),
            no_trace = stat("no_trace"),
            no_route = stat("no_route"),
            l2l3 = l2l3.trim_end().replace('\n', "\n    "),
        );
        p.ingress_decls.push_str(&format!(
            "#ifdef SF_TNA
    Counter<bit<32>, bit<8>>({n}, CounterType_t.PACKETS) hk_stats;
#else
    counter({n}, CounterType.packets) hk_stats;
#endif
",
            n = STATS.len()
        ));
        let l2l3_egress = std::mem::take(&mut p.egress_apply);
        p.egress_decls.push_str(&self.egress_decls(ports, slots));
        p.egress_apply = self.egress_p4(&l2l3_egress, ports, epochs, shift, slots, prio);
        p.egress_tables.extend([
            "hawkeye_flows",
            "hawkeye_ports",
            "hawkeye_port_meter",
            "hawkeye_last_event",
            "hawkeye_flow_hash",
        ]);
        p.added.extend([
            ("hk_stats", format!("packet counter, index: {}", STATS.join(", "))),
            ("hk_pause_until (egress)", "register, 32 bits per port: the end of the port's pause, in 1.024 µs units".into()),
            ("hk_port_quantum (egress)", "exact on the port: the shift turning pause quanta into 1.024 µs units".into()),
            (
                "hk_*32 (egress, TNA)",
                "32-bit registers in place of the declared 64-bit sums (queue depth, meter bytes, the event's time), \
                 which a Tofino stateful ALU cannot hold"
                    .into(),
            ),
        ]);
        let mut chain = vec![vec!["router_mac"]];
        chain.extend(p.chain.drain(1..));
        p.chain = chain;
        p.chain.push(vec![
            "hk_port_quantum (egress)",
            "hk_pause_until (egress)",
            "hawkeye_flow_hash (egress)",
        ]);
        p.chain.push(vec!["hawkeye_ports, hawkeye_port_meter, hawkeye_flows epoch cells (egress)"]);
        p.chain.push(vec!["hawkeye_flows tuple cells (egress)"]);
        p.chain.push(vec!["hawkeye_flows counters, hawkeye_last_event (egress)"]);
        for (i, port) in cfg.ports.iter().enumerate() {
            // 512 bit times a quantum, in 1 024 ns units: quanta >> s, s the largest with
            // 2^s ≤ speed · 1024 / 512e9 (a pause counted at most twice its length).
            let per_unit = port.tm.speed_bps.saturating_mul(1024) / 512_000_000_000;
            let s = if per_unit == 0 { 0 } else { 63 - per_unit.leading_zeros() };
            p.entries.push(Entry::Table {
                pipe: Pipe::Egress,
                table: "hk_port_quantum",
                keys: vec![("meta.egress_port".into(), KeyVal::Exact(i as u128))],
                action: "set",
                args: vec![Arg { name: "shift", value: u128::from(s) }],
            });
        }
        p.entries.push(Entry::Mirror { session: 1, port: ports as u16, max_len: 128 });
        p.limitations.extend([
            format!(
                "pause state: no target exposes its traffic manager's 802.1Qbb state to the pipeline. PFC frames \
                 are sent to the egress of the port they came in on (the prototype's reflection), which keeps \
                 `hk_pause_until` from the frame's pause time for priority {prio} (the lowest lossless), rounded \
                 up to a power-of-two fraction of the port's quantum, in 1.024 µs units; a packet is paused when \
                 it leaves before that. The Rust switch reads the TM: the packet waited on PFC or its port is \
                 paused now."
            ),
            "egress queue: the queue a packet left is `eg_intr_md.egress_qid` on Tofino; v1model declares no \
             queue id in `standard_metadata` (p4c 1.2.5.16), so on BMv2 it is `std.priority`, the queue ingress \
             chose (with `--priority-queues`)."
                .to_string(),
            "sums: the declared 64-bit queue-depth sums, meter bytes and event times are 32-bit registers on \
             TNA (`hk_*32`), wrapping beyond 2^32; queue depth is Tofino's 80-byte cells times 80, BMv2's packets \
             times the packet's length."
                .into(),
            "the control side (snapshots and reports) is the CPU's: every surviving polling copy is cloned to the \
             CPU port (session 1, egress-to-egress), where it reads the registers as the Rust program's tick does."
                .into(),
            "a polling packet for a victim with no route or neighbour is counted both in `hk_stats[no_route]` and in \
             `l2l3_drops` (the routing tables drop it first)."
                .into(),
            "flow slots: the declared CRC-32 of the 5-tuple (`hawkeye_flow_hash`), masked; a packet of a flow whose \
             slot another flow holds this epoch is not merged (both compare addresses, ports and protocol) and the \
             older entry stays: the Rust switch evicts it to its control side (§3.3) and counts `collisions`, but an \
             egress pipeline cannot hand a register's old contents to the CPU per packet (TNA's digests are \
             ingress-only), so a target keeps the first flow and loses the newer one's counts."
                .into(),
            "tracing lookback: the survival rules read this epoch's port cell and meter and the pause state now; \
             the Rust switch also reads the previous epoch's pause counts, every kept epoch's meter and, on the \
             victim port, the victim flow's own paused count (one register read per packet per array on TNA: \
             reading other banks needs an array per epoch)."
                .into(),
        ]);
        Ok(p)
    }

    fn egress_decls(&self, ports: usize, slots: usize) -> String {
        format!(
            "    action hk_port_quantum_set(bit<8> shift) {{
        meta.hk_qshift = shift;
    }}
    table hk_port_quantum {{
        key = {{
            meta.egress_port: exact @name(\"egress_port\");
        }}
        actions = {{
            hk_port_quantum_set;
        }}
        default_action = hk_port_quantum_set(0);
        size = {ports};
    }}
#ifdef SF_TNA
    Counter<bit<32>, bit<8>>({n}, CounterType_t.PACKETS) hk_estats;
    Register<bit<32>, bit<32>>({ports}, 0) hk_pause_until;
    RegisterAction<bit<32>, bit<32>, bit<32>>(hk_pause_until) hk_pause_set = {{
        void apply(inout bit<32> v) {{
            v = meta.hk_until;
        }}
    }};
    RegisterAction<bit<32>, bit<32>, bit<32>>(hk_pause_until) hk_pause_get = {{
        void apply(inout bit<32> v, out bit<32> rv) {{
            rv = v;
        }}
    }};
    // 32-bit sums in place of the declared 64-bit ones.
    Register<bit<32>, bit<32>>({pcells}, 0) hk_port_qsum32;
    Register<bit<32>, bit<32>>({mcells}, 0) hk_meter_bytes32;
    Register<bit<32>, bit<32>>({fcells}, 0) hk_flow_qsum32;
    Register<bit<32>, bit<32>>({ports}, 0) hk_last_at32;
    // The victim 5-tuple's CRC-32 for the de-duplication tag (one call per Hash instance).
    Hash<bit<32>>(HashAlgorithm_t.CRC32) hk_victim_hash;
{ras}#else
    counter({n}, CounterType.packets) hk_estats;
    register<bit<32>>({ports}) hk_pause_until;
#endif
",
            n = STATS.len(),
            pcells = self.tel.epochs() * self.tel.stride(),
            mcells = self.tel.epochs() * self.tel.stride() * self.tel.stride(),
            fcells = self.tel.epochs() * slots,
            ras = tna_register_actions(),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn egress_p4(
        &self,
        l2l3: &str,
        ports: usize,
        epochs: usize,
        shift: u32,
        slots: usize,
        prio: usize,
    ) -> String {
        let (emask, smask) = (epochs - 1, slots - 1);
        // Port cells per bank, a power of two: indices by shifts.
        let ps = ports.next_power_of_two().trailing_zeros();
        let mut s = format!(
            "// A copy on its way to the CPU (the control side) leaves as it is.
#ifdef SF_TNA
if (meta.bridge_kind == 1) {{
    exit;
}}
#else
if (std.instance_type == 2) {{
    exit;
}}
#endif
meta.egress_port = SF_EGRESS_PORT;
#ifdef SF_TNA
bit<48> ts = eg_prsr_md.global_tstamp;
meta.hk_qdepth = ((bit<32>)eg_intr_md.enq_qdepth) * 80;
#else
bit<48> ts = std.egress_global_timestamp * 1000;
meta.hk_qdepth = ((bit<32>)std.enq_qdepth) * SF_PKT_LEN;
#endif
meta.hk_now = (bit<32>)(ts >> 10);
meta.hk_epoch = (bit<32>)(ts >> {shift});
bit<32> bank = meta.hk_epoch & {emask};
if (hdr.pfc.isValid()) {{
    // The port's pause, from the frame's time for priority {prio}.
    if (hdr.pfc.opcode == 0x0101 && hdr.pfc.class_enable[{prio}:{prio}] == 1) {{
        hk_port_quantum.apply();
        meta.hk_until = meta.hk_now + (((bit<32>)hdr.pfc.quanta{prio}) >> meta.hk_qshift);
#ifdef SF_TNA
        hk_pause_set.execute((bit<32>)SF_EGRESS_PORT);
#else
        hk_pause_until.write((bit<32>)SF_EGRESS_PORT, meta.hk_until);
#endif
    }}
    SF_EGRESS_DROP();
    exit;
}}
// Paused: the port's pause has not ended.
#ifdef SF_TNA
meta.hk_until = hk_pause_get.execute((bit<32>)SF_EGRESS_PORT);
#else
hk_pause_until.read(meta.hk_until, (bit<32>)SF_EGRESS_PORT);
#endif
meta.hk_paused = (meta.hk_until > meta.hk_now) ? 1w1 : 1w0;
// The queue it left: the telemetry counts the configured queues only.
#ifdef SF_TNA
bit<8> hk_qid = (bit<8>)eg_intr_md.egress_qid;
#else
// v1model declares no egress queue id; the queue is the priority ingress set (SF_SET_QUEUE).
bit<8> hk_qid = (bit<8>)std.priority;
#endif
"
        );
        // `[hawkeye] queues` as a comparison chain (no variable shift on the targets).
        let qcond = if self.tel_queues == 0xff {
            "true".to_string()
        } else {
            let qs: Vec<String> = (0..8u8)
                .filter(|q| self.tel_queues & (1 << q) != 0)
                .map(|q| format!("hk_qid == {q}"))
                .collect();
            format!("({})", qs.join(" || "))
        };
        // Polling copies: the survival rules, then de-duplication, then the clone to the CPU.
        let _ = write!(
            s,
            "if (hdr.polling.isValid()) {{
    // The current epoch's cell of this port, and the meter from the packet's in-port.
    meta.hk_idx = (bank << {ps}) + (bit<32>)SF_EGRESS_PORT;
    bit<32> cell_epoch;
    bit<32> cell_paused;
    bit<32> meter_epoch;
    bit<32> meter_bytes;
    bit<32> midx = (bank << {ms}) + ((bit<32>)hdr.polling.ingress_port << {ps}) + (bit<32>)SF_EGRESS_PORT;
#ifdef SF_TNA
    cell_epoch = hk_port_epoch_get.execute(meta.hk_idx);
    cell_paused = hk_port_paused_get.execute(meta.hk_idx);
    meter_epoch = hk_meter_epoch_get.execute(midx);
    meter_bytes = hk_meter_bytes_get.execute(midx);
#else
    hawkeye_ports_epoch_id.read(cell_epoch, meta.hk_idx);
    hawkeye_ports_paused.read(cell_paused, meta.hk_idx);
    hawkeye_port_meter_epoch_id.read(meter_epoch, midx);
    bit<64> mb;
    hawkeye_port_meter_bytes.read(mb, midx);
    meter_bytes = (bit<32>)mb;
#endif
    bool paused = meta.hk_paused == 1 || (cell_epoch == meta.hk_epoch && cell_paused > 0);
    bool traffic = meter_epoch == meta.hk_epoch && meter_bytes > 0;
    bool victim_port = (bit<16>)hdr.polling.egress_port == SF_EGRESS_PORT;
    meta.hk_keep = 0;
    if (victim_port && (hdr.polling.flag == 1 || hdr.polling.flag == 3)) {{
        meta.hk_keep = 1;
        hdr.polling.flag = paused ? 2w3 : 2w1;
    }} else if (!victim_port && (hdr.polling.flag == 2 || hdr.polling.flag == 3) && paused && traffic) {{
        meta.hk_keep = 1;
        hdr.polling.flag = 2;
    }}
    if (meta.hk_keep == 0) {{
        hk_estats.count({pruned});
        SF_EGRESS_DROP();
        exit;
    }}
    // One event of one victim flow per port per window: 23 bits of the victim 5-tuple's CRC-32.
    bit<32> vh;
#ifdef SF_TNA
    vh = hk_victim_hash.get({{ hdr.polling.src_ip, hdr.polling.dst_ip, hdr.polling.protocol, hdr.polling.src_port, hdr.polling.dst_port }});
#else
    hash(vh, HashAlgorithm.crc32, 32w0, {{ hdr.polling.src_ip, hdr.polling.dst_ip, hdr.polling.protocol, hdr.polling.src_port, hdr.polling.dst_port }}, 64w0x100000000);
#endif
    meta.hk_tag = 32w0x80000000 | (vh & 0x7fffff) << 8 | (bit<32>)hdr.polling.event_id;
    bit<32> last_tag;
    bit<32> last_at;
#ifdef SF_TNA
    last_tag = hk_last_tag_swap.execute((bit<32>)SF_EGRESS_PORT);
    last_at = hk_last_at_swap.execute((bit<32>)SF_EGRESS_PORT);
#else
    hawkeye_last_event_event.read(last_tag, (bit<32>)SF_EGRESS_PORT);
    bit<64> at64;
    hawkeye_last_event_at_ns.read(at64, (bit<32>)SF_EGRESS_PORT);
    last_at = (bit<32>)(at64 >> 10);
    hawkeye_last_event_event.write((bit<32>)SF_EGRESS_PORT, meta.hk_tag);
    hawkeye_last_event_at_ns.write((bit<32>)SF_EGRESS_PORT, (bit<64>)meta.hk_now << 10);
#endif
    if (last_tag == meta.hk_tag && meta.hk_now - last_at < {dedup_units}) {{
        hk_estats.count({duplicate});
        SF_EGRESS_DROP();
        exit;
    }}
    hk_estats.count({survived});
    SF_CLONE_E2E(1);
}} else {{
",
            ps = ps,
            ms = 2 * ps,
            pruned = stat("pruned"),
            duplicate = stat("duplicate"),
            survived = stat("survived"),
            dedup_units = (self.dedup_ns >> 10).max(1),
        );
        // Data packets: l2l3's egress, then the telemetry.
        let _ = write!(
            s,
            "    {l2l3}
    if (hdr.ipv4.isValid() && {qcond}) {{
        // Port cell and meter cell of this epoch (reset on the first touch in a new lap).
        meta.hk_idx = (bank << {ps}) + (bit<32>)SF_EGRESS_PORT;
        bit<32> midx = (bank << {ms}) + ((bit<32>)meta.ingress_port << {ps}) + (bit<32>)SF_EGRESS_PORT;
        meta.hk_q = meta.hk_paused == 1 ? 32w0 : meta.hk_qdepth;
#ifdef SF_TNA
        meta.hk_fresh = hk_port_epoch_set.execute(meta.hk_idx);
        hk_port_pkts_add.execute(meta.hk_idx);
        hk_port_paused_add.execute(meta.hk_idx);
        hk_port_qsum_add.execute(meta.hk_idx);
        meta.hk_mfresh = hk_meter_epoch_set.execute(midx);
        hk_meter_bytes_add.execute(midx);
#else
        bit<32> e;
        bit<32> c;
        bit<64> c64;
        hawkeye_ports_epoch_id.read(e, meta.hk_idx);
        bool fresh = e != meta.hk_epoch;
        hawkeye_ports_epoch_id.write(meta.hk_idx, meta.hk_epoch);
        hawkeye_ports_pkts.read(c, meta.hk_idx);
        hawkeye_ports_pkts.write(meta.hk_idx, fresh ? 32w1 : c + 1);
        hawkeye_ports_paused.read(c, meta.hk_idx);
        hawkeye_ports_paused.write(meta.hk_idx, (fresh ? 32w0 : c) + (bit<32>)meta.hk_paused);
        hawkeye_ports_qdepth_sum.read(c64, meta.hk_idx);
        hawkeye_ports_qdepth_sum.write(meta.hk_idx, (fresh ? 64w0 : c64) + (bit<64>)meta.hk_qdepth);
        hawkeye_port_meter_epoch_id.read(e, midx);
        fresh = e != meta.hk_epoch;
        hawkeye_port_meter_epoch_id.write(midx, meta.hk_epoch);
        hawkeye_port_meter_bytes.read(c64, midx);
        hawkeye_port_meter_bytes.write(midx, (fresh ? 64w0 : c64) + (bit<64>)SF_PKT_LEN);
#endif
        // The flow's slot: the declared CRC-32 of the 5-tuple.
#ifdef SF_TNA
        meta.hk_crc = hawkeye_flow_hash.get({{ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol, meta.l4_src_port, meta.l4_dst_port }});
#else
        hash(meta.hk_crc, HashAlgorithm.crc32, 32w0, {{ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol, meta.l4_src_port, meta.l4_dst_port }}, 64w0x100000000);
#endif
        meta.hk_idx = (bank << {ss}) + (meta.hk_crc & {smask});
        meta.hk_ports_word = (bit<32>)meta.l4_src_port << 16 | (bit<32>)meta.l4_dst_port;
#ifdef SF_TNA
        meta.hk_ffresh = hk_flow_epoch_set.execute(meta.hk_idx);
        bit<1> d1 = hk_flow_src_cmp.execute(meta.hk_idx);
        bit<1> d2 = hk_flow_dst_cmp.execute(meta.hk_idx);
        bit<1> d3 = hk_flow_ports_cmp.execute(meta.hk_idx);
        bit<1> d4 = hk_flow_proto_cmp.execute(meta.hk_idx);
        meta.hk_collide = d1 | d2 | d3 | d4;
        if (meta.hk_collide == 0) {{
            hk_flow_port_set.execute(meta.hk_idx);
            hk_flow_pkts_add.execute(meta.hk_idx);
            hk_flow_paused_add.execute(meta.hk_idx);
            hk_flow_qsum_add.execute(meta.hk_idx);
        }}
#else
        bit<32> fe;
        bit<32> fs;
        bit<32> fd;
        bit<32> fp;
        bit<8> fproto;
        hawkeye_flows_epoch_id.read(fe, meta.hk_idx);
        hawkeye_flows_pkts.read(c, meta.hk_idx);
        bool ffresh = fe != meta.hk_epoch || c == 0;
        hawkeye_flows_src_addr.read(fs, meta.hk_idx);
        hawkeye_flows_dst_addr.read(fd, meta.hk_idx);
        hawkeye_flows_ports.read(fp, meta.hk_idx);
        hawkeye_flows_protocol.read(fproto, meta.hk_idx);
        if (ffresh) {{
            hawkeye_flows_epoch_id.write(meta.hk_idx, meta.hk_epoch);
            hawkeye_flows_src_addr.write(meta.hk_idx, hdr.ipv4.src_addr);
            hawkeye_flows_dst_addr.write(meta.hk_idx, hdr.ipv4.dst_addr);
            hawkeye_flows_ports.write(meta.hk_idx, meta.hk_ports_word);
            hawkeye_flows_protocol.write(meta.hk_idx, hdr.ipv4.protocol);
            c = 0;
            hawkeye_flows_paused.write(meta.hk_idx, 0);
            hawkeye_flows_qdepth_sum.write(meta.hk_idx, 0);
        }}
        if (ffresh || (fs == hdr.ipv4.src_addr && fd == hdr.ipv4.dst_addr && fp == meta.hk_ports_word && fproto == hdr.ipv4.protocol)) {{
            hawkeye_flows_egress_port.write(meta.hk_idx, SF_EGRESS_PORT);
            hawkeye_flows_pkts.write(meta.hk_idx, c + 1);
            hawkeye_flows_paused.read(c, meta.hk_idx);
            hawkeye_flows_paused.write(meta.hk_idx, c + (bit<32>)meta.hk_paused);
            hawkeye_flows_qdepth_sum.read(c64, meta.hk_idx);
            hawkeye_flows_qdepth_sum.write(meta.hk_idx, c64 + (bit<64>)meta.hk_q);
        }}
#endif
    }}
}}",
            l2l3 = l2l3.trim_end().replace('\n', "\n    "),
            ps = ps,
            ms = 2 * ps,
            ss = slots.trailing_zeros(),
            qcond = qcond,
        );
        s
    }
}

/// The TNA `RegisterAction`s: one per register per packet path, each a stateful ALU's update.
fn tna_register_actions() -> String {
    let get = |name: &str, reg: &str| {
        format!(
            "    RegisterAction<bit<32>, bit<32>, bit<32>>({reg}) {name} = {{\n        void apply(inout bit<32> v, out bit<32> rv) {{\n            rv = v;\n        }}\n    }};\n"
        )
    };
    // Epoch cell: 1 when it held another lap (the other cells restart), and it now holds this one.
    let epoch_set = |name: &str, reg: &str| {
        format!(
            "    RegisterAction<bit<32>, bit<32>, bit<1>>({reg}) {name} = {{\n        void apply(inout bit<32> v, out bit<1> rv) {{\n            if (v != meta.hk_epoch) {{\n                rv = 1;\n            }} else {{\n                rv = 0;\n            }}\n            v = meta.hk_epoch;\n        }}\n    }};\n"
        )
    };
    // A counter: restarts from `inc` in a fresh epoch, else adds it.
    let add = |name: &str, reg: &str, fresh: &str, inc: &str| {
        format!(
            "    RegisterAction<bit<32>, bit<32>, bit<32>>({reg}) {name} = {{\n        void apply(inout bit<32> v) {{\n            if ({fresh} == 1) {{\n                v = {inc};\n            }} else {{\n                v = v + {inc};\n            }}\n        }}\n    }};\n"
        )
    };
    // A tuple field: written in a fresh epoch; else 1 when it differs (a collision).
    let cmp_w = |name: &str, reg: &str, new: &str, w: u32| {
        format!(
            "    RegisterAction<bit<{w}>, bit<32>, bit<1>>({reg}) {name} = {{\n        void apply(inout bit<{w}> v, out bit<1> rv) {{\n            if (meta.hk_ffresh == 1) {{\n                v = {new};\n                rv = 0;\n            }} else if (v != {new}) {{\n                rv = 1;\n            }} else {{\n                rv = 0;\n            }}\n        }}\n    }};\n"
        )
    };
    let cmp = |name: &str, reg: &str, new: &str| cmp_w(name, reg, new, 32);
    let set = |name: &str, reg: &str, val: &str, w: u32| {
        format!(
            "    RegisterAction<bit<{w}>, bit<32>, bit<{w}>>({reg}) {name} = {{\n        void apply(inout bit<{w}> v) {{\n            v = {val};\n        }}\n    }};\n"
        )
    };
    let swap = |name: &str, reg: &str, val: &str| {
        format!(
            "    RegisterAction<bit<32>, bit<32>, bit<32>>({reg}) {name} = {{\n        void apply(inout bit<32> v, out bit<32> rv) {{\n            rv = v;\n            v = {val};\n        }}\n    }};\n"
        )
    };
    let mut s = String::new();
    s.push_str(&get("hk_port_epoch_get", "hawkeye_ports_epoch_id"));
    s.push_str(&get("hk_port_paused_get", "hawkeye_ports_paused"));
    s.push_str(&get("hk_meter_epoch_get", "hawkeye_port_meter_epoch_id"));
    s.push_str(&get("hk_meter_bytes_get", "hk_meter_bytes32"));
    s.push_str(&swap("hk_last_tag_swap", "hawkeye_last_event_event", "meta.hk_tag"));
    s.push_str(&swap("hk_last_at_swap", "hk_last_at32", "meta.hk_now"));
    s.push_str(&epoch_set("hk_port_epoch_set", "hawkeye_ports_epoch_id"));
    s.push_str(&add("hk_port_pkts_add", "hawkeye_ports_pkts", "meta.hk_fresh", "1"));
    s.push_str(&add(
        "hk_port_paused_add",
        "hawkeye_ports_paused",
        "meta.hk_fresh",
        "(bit<32>)meta.hk_paused",
    ));
    s.push_str(&add("hk_port_qsum_add", "hk_port_qsum32", "meta.hk_fresh", "meta.hk_qdepth"));
    s.push_str(&epoch_set("hk_meter_epoch_set", "hawkeye_port_meter_epoch_id"));
    s.push_str(&add("hk_meter_bytes_add", "hk_meter_bytes32", "meta.hk_mfresh", "SF_PKT_LEN"));
    s.push_str(&epoch_set("hk_flow_epoch_set", "hawkeye_flows_epoch_id"));
    s.push_str(&cmp("hk_flow_src_cmp", "hawkeye_flows_src_addr", "hdr.ipv4.src_addr"));
    s.push_str(&cmp("hk_flow_dst_cmp", "hawkeye_flows_dst_addr", "hdr.ipv4.dst_addr"));
    s.push_str(&cmp("hk_flow_ports_cmp", "hawkeye_flows_ports", "meta.hk_ports_word"));
    s.push_str(&cmp_w("hk_flow_proto_cmp", "hawkeye_flows_protocol", "hdr.ipv4.protocol", 8));
    s.push_str(&set("hk_flow_port_set", "hawkeye_flows_egress_port", "(bit<16>)SF_EGRESS_PORT", 16));
    s.push_str(&add("hk_flow_pkts_add", "hawkeye_flows_pkts", "meta.hk_ffresh", "1"));
    s.push_str(&add(
        "hk_flow_paused_add",
        "hawkeye_flows_paused",
        "meta.hk_ffresh",
        "(bit<32>)meta.hk_paused",
    ));
    s.push_str(&add("hk_flow_qsum_add", "hk_flow_qsum32", "meta.hk_ffresh", "meta.hk_q"));
    s
}
