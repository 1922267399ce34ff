//! `ufab` in P4: `l2l3`'s steps, the source route's pop at ingress, and at egress the probe
//! stamping (µFAB-C as the paper ran it on a Tofino) — with the differences a P4 target
//! imposes, listed in the export's `SUMMARY.md` and `docs/p4/ufab.md`.
//!
//! Step by step (Rust → P4):
//! - `sr_ingress` (pop the top label, out of the port it names, its TC the queue) → the P4-only
//!   table `ufab_sr` on the top label (`out(port, smac)`, `failed`, default `bad`), the next
//!   label's TTL written, the top label invalidated; under the bottom label the packet is IPv4
//!   again and goes through `l2l3`'s own tables (routed whatever its destination MAC);
//! - `fail_back` (a probe to a failed link comes back as a failure notification) → every label
//!   invalidated, the addresses swapped, the type set to 4, routed by `l2l3`;
//! - data skipping egress (`bypass_egress`, tx_l from the TM's counter) → data takes egress and
//!   adds its length to the port's window (`uf_tx_*`): no target exposes the TM's counter;
//! - `Core::update_tx` → fixed windows of 2^k ns (k the smallest with 2^k ≥ `tx_window_ns`), the
//!   last complete one's bytes, turned into 10 Mb/s units by shifts and adds;
//! - `Core::probe` → the Bloom filter's banks (declared registers, test-and-set), a one-way
//!   record per index (P4-only registers: tag and state in one cell, the bank indices for the
//!   control plane's rebuild, φ, w, period, port), and Φ_l, W_l moved by the differences;
//! - `Core::look` → the same record read (no bit set, nothing written), Φ_l and W_l read by
//!   adding 0 and answered less the record's φ and w when it is the pair's own and live;
//! - `Core::clean` → the control plane's, between two periods (it reads `uf_rec_*`).

use std::fmt::Write as _;

use super::Ufab;
use super::decl::LABEL_NAMES;
use crate::config::Config;
use crate::model::param;
use crate::p4::{Arg, Entry, ExportError, KeyVal, Pipe, ProgramP4};

/// Ingress counter indices (`uf_stats`).
const STATS: [&str; 6] =
    ["bad_route", "ttl_expired", "link_failed", "failure_notifications", "sr_forwarded", "sr_delivered"];
/// Egress counter indices (`uf_estats`).
const ESTATS: [&str; 12] = [
    "probes",
    "finishes",
    "looks",
    "responses",
    "unknown_type",
    "no_slot",
    "added",
    "updated",
    "removed",
    "finish_untracked",
    "omitted_false_positive",
    "omitted_no_record",
];

/// What a probe did (`meta.uf_out`), as [`super::core::Outcome`].
const ADDED: u8 = 1;
const UPDATED: u8 = 2;
const REMOVED: u8 = 3;
const NOT_TRACKED: u8 = 4;
const FALSE_POSITIVE: u8 = 5;
const UNTRACKED: u8 = 6;
/// A look ([`super::core::Core::look`]): the pair's own live record is here (Φ_l and W_l are
/// answered without it), or not; nothing written either way.
const LOOK_OWN: u8 = 7;
const LOOK: u8 = 8;

fn stat(name: &str) -> usize {
    STATS.iter().position(|s| *s == name).unwrap_or(0)
}

fn estat(name: &str) -> usize {
    ESTATS.iter().position(|s| *s == name).unwrap_or(0)
}

/// The smallest k with 2^k ≥ `ns`.
fn log2_ceil(ns: u64) -> u32 {
    64 - ns.saturating_sub(1).leading_zeros()
}

impl Ufab {
    /// The P4 rendering of this switch as `cfg` configures it.
    pub(super) fn rendering(&self, cfg: &Config) -> Result<ProgramP4, ExportError> {
        let records = self.core.records_len();
        if !records.is_power_of_two() {
            return Err(ExportError::Unsupported(format!(
                "ufab.records = {records}: the P4 indexes the pair records by hash bits, so it needs a power of two"
            )));
        }
        let mut p = self.l2l3.rendering(cfg);
        p.meta.extend([
            param("uf_sr_kind", 2),
            param("uf_sr_port", 16),
            param("uf_sr_smac", 48),
            param("uf_deliver", 1),
            param("uf_done", 1),
            param("uf_len", 32),
            param("uf_q", 32),
            param("uf_win", 32),
            param("uf_gap", 32),
            param("uf_cur", 32),
            param("uf_txb", 32),
            param("uf_tx", 32),
            param("uf_period", 32),
            param("uf_h0", 32),
            param("uf_h1", 32),
            param("uf_tag", 32),
            param("uf_b0", 32),
            param("uf_b1", 32),
            param("uf_seen0", 1),
            param("uf_seen1", 1),
            param("uf_idx", 32),
            param("uf_finish", 1),
            param("uf_look", 1),
            param("uf_out", 8),
            param("uf_phi", 32),
            param("uf_w", 32),
            param("uf_old_phi", 32),
            param("uf_old_w", 32),
            param("uf_dphi", 32),
            param("uf_dw", 32),
            param("uf_phi_l", 32),
            param("uf_w_l", 32),
            param("uf_class", 4),
        ]);
        let l2l3 = self.l2l3.ingress_apply_routing(&|_| String::new(), Some("meta.uf_deliver == 1"));
        p.ingress_apply = ingress_apply(&l2l3);
        p.ingress_decls.push_str(&ingress_decls(cfg.ports.len()));
        let l2l3_egress = std::mem::take(&mut p.egress_apply);
        let tx_shift = log2_ceil(self.core.tx_window_ns());
        // The largest power of two not above the period: records' periods in units of at most it.
        let period_shift = 63 - self.core.period_ns().leading_zeros();
        p.egress_decls.push_str(&egress_decls(cfg.ports.len(), records));
        p.egress_apply = self.egress_apply(&l2l3_egress, records, tx_shift, period_shift);
        p.egress_tables.extend(["ufab_bloom0", "ufab_bloom1", "ufab_pair_hash0", "ufab_pair_hash1"]);
        p.not_emitted.extend([
            (
                "ufab_links",
                "Φ_l and W_l are the 32-bit registers `uf_phi_l` and `uf_w_l` (one stateful ALU each, adding \
                 a precomputed difference); tx_l is kept over fixed windows in `uf_tx_win`, `uf_tx_cur` and \
                 `uf_tx_last`"
                    .into(),
            ),
            (
                "ufab_pair_records",
                "one way per index where the Rust switch has four (a set search is a loop): the P4-only \
                 `uf_rec_*` registers, the tag (30 bits of bank 1's hash) and the state in one cell"
                    .into(),
            ),
        ]);
        p.added.extend([
            ("ufab_sr", format!("exact on the top label: out(port, source MAC), failed, default bad; {} entries", cfg.ports.len())),
            ("uf_stats", format!("packet counter, index: {}", STATS.join(", "))),
            ("uf_estats (egress)", format!("packet counter, index: {}", ESTATS.join(", "))),
            ("ufab_port_class (egress)", "exact on the egress port: C_l's speed class".into()),
            (
                "uf_tx_win, uf_tx_cur, uf_tx_last (egress)",
                format!("registers, 32 bits per port: the window (2^{tx_shift} ns), its bytes, the last complete window's"),
            ),
            ("uf_phi_l, uf_w_l (egress)", "registers, 32 bits per port: Φ_l (tokens) and W_l (bytes)".into()),
            (
                "uf_rec_tag, uf_rec_b0, uf_rec_b1, uf_rec_port, uf_rec_phi, uf_rec_w, uf_rec_period (egress)",
                format!(
                    "registers of {records} cells: tag and state, the pair's two bank indices, link, φ, w and the \
                     cleaning period (2^{period_shift} ns) it was last probed in"
                ),
            ),
        ]);
        p.chain.push(vec![
            "ufab_port_class (egress)",
            "uf_tx_win (egress)",
            "ufab_pair_hash0, ufab_pair_hash1 (egress)",
        ]);
        p.chain.push(vec!["uf_tx_cur (egress)", "ufab_bloom0, ufab_bloom1 (egress)"]);
        p.chain.push(vec!["uf_tx_last (egress)", "uf_rec_tag (egress)"]);
        p.chain.push(vec!["uf_rec_phi, uf_rec_w, uf_rec_period, uf_rec_port, uf_rec_b0, uf_rec_b1 (egress)"]);
        p.chain.push(vec!["uf_phi_l, uf_w_l (egress)"]);
        for (i, port) in cfg.ports.iter().enumerate() {
            let (action, args) = if self.failed[i] {
                ("failed", vec![])
            } else {
                let mac = port.mac.0.iter().fold(0u128, |a, &b| a << 8 | u128::from(b));
                ("out", vec![Arg { name: "port", value: i as u128 }, Arg { name: "smac", value: mac }])
            };
            p.entries.push(Entry::Table {
                pipe: Pipe::Ingress,
                table: "ufab_sr",
                keys: vec![("hdr.mpls.label".into(), KeyVal::Exact(i as u128))],
                action,
                args,
            });
            p.entries.push(Entry::Table {
                pipe: Pipe::Egress,
                table: "ufab_port_class",
                keys: vec![("meta.egress_port".into(), KeyVal::Exact(i as u128))],
                action: "set",
                args: vec![Arg {
                    name: "c_l",
                    value: u128::from(wire::ufab::speed_class_of(self.capacity_bps[i])),
                }],
            });
        }
        let bank = self.core.bank_bits();
        let tna_bank = 1u32 << (31 - bank.leading_zeros());
        p.recirculation = "none: one label popped per switch, one probe slot written per switch.".into();
        p.limitations.extend([
            format!(
                "source routes: the parser extracts {} labels (`mpls` … `mpls_{}`); a deeper stack is forwarded \
                 by its top label as in Rust, but a probe under it reaches no IPv4 header, so a failed link \
                 drops it (`uf_stats[link_failed]`) where the Rust switch turns it back.",
                LABEL_NAMES.len(),
                LABEL_NAMES.len() - 1
            ),
            "data packets take egress (no `bypass_egress`): no target exposes the traffic manager's bytes-sent \
             counter to the pipeline, so each packet adds its length to its port's window (one stateful ALU \
             access, as `int_tx_bytes`)."
                .into(),
            format!(
                "tx_l: the bytes of the last complete fixed window of 2^{tx_shift} ns ({} configured), as \
                 10 Mb/s units by `(b·800) >> {tx_shift}` in shifts and adds (no divider); the Rust switch \
                 closes windows of at least `tx_window_ns` at probes and divides by their length.",
                self.core.tx_window_ns()
            ),
            format!(
                "Bloom filter: v1model indexes each bank as the Rust switch does, the CRC-32 modulo {bank} \
                 (`hash()`'s max); Tofino has no modulo, so TNA masks it to the largest power of two below, \
                 {tna_bank} of the {bank} cells (CRCs of structured keys then land in a pattern: the formula's \
                 rate at 20 K pairs in 2^16-bit banks is 6.9 %). A probe sets its bits before its record is \
                 looked at (one access per bank); a pair omitted for want of a record has set them too, until \
                 the next cleaning rebuilds the banks."
            ),
            format!(
                "pair records: one way per index (bits 16–31 then 0–15 of bank 0's hash, masked to {records} \
                 cells; Rust: four ways per set), the tag 30 bits of bank 1's hash (Rust: both hashes and the \
                 port); Φ_l and W_l 32-bit (Rust: 64) and saturating at 0 by the sign bit."
            ),
            format!(
                "cleaning (every {} ns in Rust) is the control plane's: it reads `uf_rec_period` (in units of \
                 2^{period_shift} ns, the largest power of two not above the period), subtracts what stale records added from `uf_phi_l` and `uf_w_l`, frees \
                 finished records and rebuilds the banks from `uf_rec_b0` and `uf_rec_b1`.",
                self.core.period_ns()
            ),
            "a probe too short for its `n_hop` slots is a parser error: its free slot is not extracted and it is \
             dropped as `no_slot` (Rust: `ufab_malformed`)."
                .into(),
            "link failure (`ufab fail PORT`) is the control plane's: it sets the port's `ufab_sr` entry to \
             `failed` and takes the port's members out of the ECMP groups."
                .into(),
        ]);
        Ok(p)
    }

    fn egress_apply(&self, l2l3: &str, records: usize, tx_shift: u32, period_shift: u32) -> String {
        let bank = self.core.bank_bits();
        let tna_mask = (1u32 << (31 - bank.leading_zeros())) - 1;
        let rmask = records - 1;
        let mut s = String::new();
        let _ = write!(
            s,
            "{l2l3}
meta.egress_port = SF_EGRESS_PORT;
// tx_l: the port's bytes in fixed windows of 2^{tx_shift} ns; the last complete window's.
meta.uf_len = SF_PKT_LEN;
meta.uf_q = SF_DEQ_QDEPTH_BYTES;
#ifdef SF_TNA
bit<48> uf_ts = eg_prsr_md.global_tstamp;
#else
bit<48> uf_ts = std.egress_global_timestamp * 1000;
#endif
meta.uf_win = (bit<32>)(uf_ts >> {tx_shift});
meta.uf_period = (bit<32>)(uf_ts >> {period_shift});
#ifdef SF_TNA
meta.uf_gap = uf_tx_win_swap.execute((bit<32>)meta.egress_port);
meta.uf_cur = uf_tx_cur_add.execute((bit<32>)meta.egress_port);
meta.uf_txb = uf_tx_last_roll.execute((bit<32>)meta.egress_port);
#else
bit<32> uf_w0;
uf_tx_win.read(uf_w0, (bit<32>)meta.egress_port);
meta.uf_gap = meta.uf_win - uf_w0;
uf_tx_win.write((bit<32>)meta.egress_port, meta.uf_win);
uf_tx_cur.read(meta.uf_cur, (bit<32>)meta.egress_port);
uf_tx_cur.write((bit<32>)meta.egress_port, meta.uf_gap == 0 ? meta.uf_cur + meta.uf_len : meta.uf_len);
uf_tx_last.read(meta.uf_txb, (bit<32>)meta.egress_port);
if (meta.uf_gap == 1) {{
    meta.uf_txb = meta.uf_cur;
}} else if (meta.uf_gap > 1) {{
    meta.uf_txb = 0;
}}
uf_tx_last.write((bit<32>)meta.egress_port, meta.uf_txb);
#endif
if (hdr.ufab.isValid()) {{
    if (hdr.ufab.type == 2 || hdr.ufab.type == 4) {{
        // Responses and failure notifications pass untouched.
        uf_estats.count({responses});
    }} else if (hdr.ufab.type != 1 && hdr.ufab.type != 3 && hdr.ufab.type != 5) {{
        uf_estats.count({unknown_type});
        SF_EGRESS_DROP();
        exit;
    }} else if (!hdr.ufab_slot.isValid() || hdr.ufab.n_hop == 15
               || hdr.udp.length < 16w20 + ((bit<16>)hdr.ufab.n_hop << 3)) {{
        // No free slot after the filled ones (within the UDP payload).
        uf_estats.count({no_slot});
        SF_EGRESS_DROP();
        exit;
    }} else {{
        meta.uf_finish = hdr.ufab.type == 3 ? 1w1 : 1w0;
        // A look reads the link without the pair and writes nothing.
        meta.uf_look = hdr.ufab.type == 5 ? 1w1 : 1w0;
        meta.uf_phi = (bit<32>)hdr.ufab.phi_pair;
        meta.uf_w = (bit<32>)hdr.ufab_slot.window << 8;
        // The (VM-pair, link) key's two hashes: CRC-32 of its fields, and of them in another order.
#ifdef SF_TNA
        meta.uf_h0 = ufab_pair_hash0.get({{ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.udp.src_port, meta.egress_port }});
        meta.uf_h1 = ufab_pair_hash1.get({{ hdr.ipv4.dst_addr, hdr.ipv4.src_addr, meta.egress_port, hdr.udp.src_port }});
        meta.uf_b0 = meta.uf_h0 & {tna_mask};
        meta.uf_b1 = meta.uf_h1 & {tna_mask};
#else
        hash(meta.uf_h0, HashAlgorithm.crc32, 32w0, {{ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.udp.src_port, meta.egress_port }}, 64w0x100000000);
        hash(meta.uf_h1, HashAlgorithm.crc32, 32w0, {{ hdr.ipv4.dst_addr, hdr.ipv4.src_addr, meta.egress_port, hdr.udp.src_port }}, 64w0x100000000);
        hash(meta.uf_b0, HashAlgorithm.crc32, 32w0, {{ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.udp.src_port, meta.egress_port }}, 32w{bank});
        hash(meta.uf_b1, HashAlgorithm.crc32, 32w0, {{ hdr.ipv4.dst_addr, hdr.ipv4.src_addr, meta.egress_port, hdr.udp.src_port }}, 32w{bank});
#endif
        meta.uf_idx = (meta.uf_h0[15:0] ++ meta.uf_h0[31:16]) & {rmask};
        meta.uf_tag = meta.uf_h1 & 0xfffffffc;
        // The Bloom filter: test-and-set, one access per bank (a finish or a look only reads its
        // record).
        meta.uf_seen0 = 0;
        meta.uf_seen1 = 0;
        if (meta.uf_finish == 0 && meta.uf_look == 0) {{
#ifdef SF_TNA
            meta.uf_seen0 = uf_bloom0_tas.execute(meta.uf_b0);
            meta.uf_seen1 = uf_bloom1_tas.execute(meta.uf_b1);
#else
            ufab_bloom0_bit.read(meta.uf_seen0, meta.uf_b0);
            ufab_bloom0_bit.write(meta.uf_b0, 1);
            ufab_bloom1_bit.read(meta.uf_seen1, meta.uf_b1);
            ufab_bloom1_bit.write(meta.uf_b1, 1);
#endif
        }}
        // The record: own (live or finished), free, or another pair's.
#ifdef SF_TNA
        meta.uf_out = uf_rec_decide.execute(meta.uf_idx);
#else
        bit<32> cell;
        uf_rec_tag.read(cell, meta.uf_idx);
        bool own = (cell & 0xfffffffc) == meta.uf_tag && cell[1:0] != 0;
        if (meta.uf_look == 1) {{
            meta.uf_out = own && cell[1:0] == 1 ? 8w{look_own} : 8w{look};
        }} else if (own && cell[1:0] == 1) {{
            if (meta.uf_finish == 1) {{
                meta.uf_out = {removed};
                uf_rec_tag.write(meta.uf_idx, meta.uf_tag | 2);
            }} else {{
                meta.uf_out = {updated};
            }}
        }} else if (own) {{
            if (meta.uf_finish == 1) {{
                meta.uf_out = {not_tracked};
            }} else {{
                meta.uf_out = {added};
                uf_rec_tag.write(meta.uf_idx, meta.uf_tag | 1);
            }}
        }} else if (meta.uf_finish == 1) {{
            meta.uf_out = {not_tracked};
        }} else if (meta.uf_seen0 == 1 && meta.uf_seen1 == 1) {{
            meta.uf_out = {false_positive};
        }} else if (cell[1:0] == 1) {{
            meta.uf_out = {untracked};
        }} else {{
            meta.uf_out = {added};
            uf_rec_tag.write(meta.uf_idx, meta.uf_tag | 1);
        }}
#endif
        // What the pair adds now and what it added before.
        bool uf_keep = meta.uf_out == {added} || meta.uf_out == {updated};
        bool uf_had = meta.uf_out == {updated} || meta.uf_out == {removed} || meta.uf_out == {look_own};
        bool uf_moved = uf_keep || meta.uf_out == {removed};
#ifdef SF_TNA
        meta.uf_old_phi = uf_rec_phi_swap.execute(meta.uf_idx);
        meta.uf_old_w = uf_rec_w_swap.execute(meta.uf_idx);
        if (uf_moved) {{
            uf_rec_period_set.execute(meta.uf_idx);
        }}
        if (meta.uf_out == {added}) {{
            uf_rec_port_set.execute(meta.uf_idx);
            uf_rec_b0_set.execute(meta.uf_idx);
            uf_rec_b1_set.execute(meta.uf_idx);
        }}
#else
        uf_rec_phi.read(meta.uf_old_phi, meta.uf_idx);
        uf_rec_w.read(meta.uf_old_w, meta.uf_idx);
        if (uf_keep) {{
            uf_rec_phi.write(meta.uf_idx, meta.uf_phi);
            uf_rec_w.write(meta.uf_idx, meta.uf_w);
        }} else if (meta.uf_out == {removed}) {{
            uf_rec_phi.write(meta.uf_idx, 0);
            uf_rec_w.write(meta.uf_idx, 0);
        }}
        if (uf_moved) {{
            uf_rec_period.write(meta.uf_idx, meta.uf_period);
        }}
        if (meta.uf_out == {added}) {{
            uf_rec_port.write(meta.uf_idx, meta.egress_port);
            uf_rec_b0.write(meta.uf_idx, meta.uf_b0);
            uf_rec_b1.write(meta.uf_idx, meta.uf_b1);
        }}
#endif
        meta.uf_old_phi = uf_had ? meta.uf_old_phi : 32w0;
        meta.uf_old_w = uf_had ? meta.uf_old_w : 32w0;
        meta.uf_dphi = meta.uf_look == 1 ? 32w0 : (uf_keep ? meta.uf_phi : 32w0) - meta.uf_old_phi;
        meta.uf_dw = meta.uf_look == 1 ? 32w0 : (uf_keep ? meta.uf_w : 32w0) - meta.uf_old_w;
        // Φ_l and W_l move by the differences (at least 0).
#ifdef SF_TNA
        meta.uf_phi_l = uf_phi_l_add.execute((bit<32>)meta.egress_port);
        meta.uf_w_l = uf_w_l_add.execute((bit<32>)meta.egress_port);
#else
        uf_phi_l.read(meta.uf_phi_l, (bit<32>)meta.egress_port);
        meta.uf_phi_l = meta.uf_phi_l + meta.uf_dphi;
        if (meta.uf_phi_l[31:31] == 1) {{
            meta.uf_phi_l = 0;
        }}
        uf_phi_l.write((bit<32>)meta.egress_port, meta.uf_phi_l);
        uf_w_l.read(meta.uf_w_l, (bit<32>)meta.egress_port);
        meta.uf_w_l = meta.uf_w_l + meta.uf_dw;
        if (meta.uf_w_l[31:31] == 1) {{
            meta.uf_w_l = 0;
        }}
        uf_w_l.write((bit<32>)meta.egress_port, meta.uf_w_l);
#endif
        if (meta.uf_look == 1) {{
            // Answered without the pair's own record (at least 0).
            meta.uf_phi_l = meta.uf_phi_l - meta.uf_old_phi;
            if (meta.uf_phi_l[31:31] == 1) {{
                meta.uf_phi_l = 0;
            }}
            meta.uf_w_l = meta.uf_w_l - meta.uf_old_w;
            if (meta.uf_w_l[31:31] == 1) {{
                meta.uf_w_l = 0;
            }}
        }}
        // Counters.
        if (meta.uf_finish == 1) {{
            uf_estats.count({finishes});
        }} else if (meta.uf_look == 1) {{
            uf_estats.count({looks});
        }} else {{
            uf_estats.count({probes});
        }}
        if (meta.uf_out == {added}) {{
            uf_estats.count({c_added});
        }} else if (meta.uf_out == {updated}) {{
            uf_estats.count({c_updated});
        }} else if (meta.uf_out == {removed}) {{
            uf_estats.count({c_removed});
        }} else if (meta.uf_out == {not_tracked}) {{
            uf_estats.count({c_not_tracked});
        }} else if (meta.uf_out == {false_positive}) {{
            uf_estats.count({c_false_positive});
        }} else if (meta.uf_out == {untracked}) {{
            uf_estats.count({c_untracked});
        }}
        // The slot: W_l (256 B), Φ_l, tx_l (10 Mb/s), q_l (1 KiB, 12 bits), C_l's class.
        ufab_port_class.apply();
        meta.uf_tx = ((meta.uf_txb << 9) + (meta.uf_txb << 8) + (meta.uf_txb << 5)) >> {tx_shift};
        bit<32> wu = (meta.uf_w_l + 255) >> 8;
        bit<32> qu = meta.uf_q >> 10;
        hdr.ufab_slot.window = wu > 0xffff ? 16w0xffff : (bit<16>)wu;
        hdr.ufab_slot.phi_l = meta.uf_phi_l > 0xffff ? 16w0xffff : (bit<16>)meta.uf_phi_l;
        hdr.ufab_slot.tx_l = meta.uf_tx > 0xffff ? 16w0xffff : (bit<16>)meta.uf_tx;
        hdr.ufab_slot.q_l = qu > 0xfff ? 12w0xfff : (bit<12>)qu;
        hdr.ufab_slot.c_l = meta.uf_class;
        hdr.ufab.n_hop = hdr.ufab.n_hop + 1;
        hdr.udp.checksum = 0;
    }}
}}",
            l2l3 = l2l3.trim_end(),
            responses = estat("responses"),
            unknown_type = estat("unknown_type"),
            no_slot = estat("no_slot"),
            probes = estat("probes"),
            finishes = estat("finishes"),
            looks = estat("looks"),
            c_added = estat("added"),
            c_updated = estat("updated"),
            c_removed = estat("removed"),
            c_not_tracked = estat("finish_untracked"),
            c_false_positive = estat("omitted_false_positive"),
            c_untracked = estat("omitted_no_record"),
            added = ADDED,
            updated = UPDATED,
            removed = REMOVED,
            not_tracked = NOT_TRACKED,
            false_positive = FALSE_POSITIVE,
            untracked = UNTRACKED,
            look_own = LOOK_OWN,
            look = LOOK,
        );
        s
    }
}

/// The ingress steps: the source route, then `l2l3` unless the label forwarded the packet.
fn ingress_apply(l2l3: &str) -> String {
    let mut invalidate = String::new();
    for name in LABEL_NAMES {
        let _ = write!(invalidate, "\n            hdr.{name}.setInvalid();");
    }
    format!(
        "meta.uf_deliver = 0;
meta.uf_done = 0;
if (hdr.mpls.isValid()) {{
    ufab_sr.apply();
    if (meta.uf_sr_kind == 0) {{
        // A label past the ports.
        uf_stats.count({bad_route});
        SF_DROP();
        exit;
    }} else if (meta.uf_sr_kind == 2) {{
        // The link is failed: a probe or finish goes back to its sender as a failure notification.
        if (hdr.ufab.isValid() && (hdr.ufab.type == 1 || hdr.ufab.type == 3 || hdr.ufab.type == 5)) {{{invalidate}
            hdr.ethernet.ether_type = 0x0800;
            bit<32> src = hdr.ipv4.src_addr;
            hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
            hdr.ipv4.dst_addr = src;
            hdr.udp.checksum = 0;
            hdr.ufab.type = 4;
            meta.uf_deliver = 1;
            uf_stats.count({failure_notifications});
        }} else {{
            uf_stats.count({link_failed});
            SF_DROP();
            exit;
        }}
    }} else if (hdr.mpls.ttl <= 1) {{
        uf_stats.count({ttl_expired});
        SF_DROP();
        exit;
    }} else if (hdr.mpls.bos == 1) {{
        // The bottom label: IPv4 again, routed by l2l3.
        hdr.mpls.setInvalid();
        hdr.ethernet.ether_type = 0x0800;
        meta.uf_deliver = 1;
        uf_stats.count({sr_delivered});
    }} else {{
        // Pop: out of the port the label names, its TC the queue, the next label's TTL one less.
        SF_SET_QUEUE(hdr.mpls.tc);
        hdr.mpls_1.ttl = hdr.mpls.ttl - 1;
        hdr.mpls.setInvalid();
        hdr.ethernet.src_addr = meta.uf_sr_smac;
        SF_SET_EGRESS(meta.uf_sr_port);
        meta.uf_done = 1;
        uf_stats.count({sr_forwarded});
    }}
}}
if (meta.uf_done == 0) {{
    {l2l3}
}}",
        bad_route = stat("bad_route"),
        failure_notifications = stat("failure_notifications"),
        link_failed = stat("link_failed"),
        ttl_expired = stat("ttl_expired"),
        sr_delivered = stat("sr_delivered"),
        sr_forwarded = stat("sr_forwarded"),
        l2l3 = l2l3.trim_end().replace('\n', "\n    "),
    )
}

fn ingress_decls(ports: usize) -> String {
    format!(
        "#ifdef SF_TNA
    Counter<bit<32>, bit<8>>({n}, CounterType_t.PACKETS) uf_stats;
#else
    counter({n}, CounterType.packets) uf_stats;
#endif
    action ufab_sr_out(bit<16> port, bit<48> smac) {{
        meta.uf_sr_kind = 1;
        meta.uf_sr_port = port;
        meta.uf_sr_smac = smac;
    }}
    action ufab_sr_failed() {{
        meta.uf_sr_kind = 2;
    }}
    action ufab_sr_bad() {{
        meta.uf_sr_kind = 0;
    }}
    table ufab_sr {{
        key = {{
            hdr.mpls.label: exact @name(\"label\");
        }}
        actions = {{
            ufab_sr_out;
            ufab_sr_failed;
            ufab_sr_bad;
        }}
        default_action = ufab_sr_bad();
        size = {ports};
    }}
",
        n = STATS.len()
    )
}

fn egress_decls(ports: usize, records: usize) -> String {
    format!(
        "    action ufab_port_class_set(bit<4> c_l) {{
        meta.uf_class = c_l;
    }}
    table ufab_port_class {{
        key = {{
            meta.egress_port: exact @name(\"egress_port\");
        }}
        actions = {{
            ufab_port_class_set;
        }}
        default_action = ufab_port_class_set(0);
        size = {ports};
    }}
#ifdef SF_TNA
    Counter<bit<32>, bit<8>>({n}, CounterType_t.PACKETS) uf_estats;
    Register<bit<32>, bit<32>>({ports}, 0) uf_tx_win;
    Register<bit<32>, bit<32>>({ports}, 0) uf_tx_cur;
    Register<bit<32>, bit<32>>({ports}, 0) uf_tx_last;
    Register<bit<32>, bit<32>>({ports}, 0) uf_phi_l;
    Register<bit<32>, bit<32>>({ports}, 0) uf_w_l;
    Register<bit<32>, bit<32>>({records}, 0) uf_rec_tag;
    Register<bit<32>, bit<32>>({records}, 0) uf_rec_b0;
    Register<bit<32>, bit<32>>({records}, 0) uf_rec_b1;
    Register<bit<16>, bit<32>>({records}, 0) uf_rec_port;
    Register<bit<32>, bit<32>>({records}, 0) uf_rec_phi;
    Register<bit<32>, bit<32>>({records}, 0) uf_rec_w;
    Register<bit<32>, bit<32>>({records}, 0) uf_rec_period;
{ras}#else
    counter({n}, CounterType.packets) uf_estats;
    register<bit<32>>({ports}) uf_tx_win;
    register<bit<32>>({ports}) uf_tx_cur;
    register<bit<32>>({ports}) uf_tx_last;
    register<bit<32>>({ports}) uf_phi_l;
    register<bit<32>>({ports}) uf_w_l;
    register<bit<32>>({records}) uf_rec_tag;
    register<bit<32>>({records}) uf_rec_b0;
    register<bit<32>>({records}) uf_rec_b1;
    register<bit<16>>({records}) uf_rec_port;
    register<bit<32>>({records}) uf_rec_phi;
    register<bit<32>>({records}) uf_rec_w;
    register<bit<32>>({records}) uf_rec_period;
#endif
",
        n = ESTATS.len(),
        ras = tna_register_actions(),
    )
}

/// The TNA `RegisterAction`s: one per register, each a stateful ALU's update.
fn tna_register_actions() -> String {
    let ra = crate::p4::tna_register_action;
    let mut s = String::new();
    // The window: how many windows since the port's last packet; now this one.
    s.push_str(&ra("uf_tx_win_swap", "uf_tx_win", 32, 32, "rv = meta.uf_win - v;\nv = meta.uf_win;"));
    // This window's bytes; the old window's returned when it ended.
    s.push_str(&ra(
        "uf_tx_cur_add",
        "uf_tx_cur",
        32,
        32,
        "rv = v;\nif (meta.uf_gap == 0) {\n    v = v + meta.uf_len;\n} else {\n    v = meta.uf_len;\n}",
    ));
    // The last complete window: the one that just ended, or none (an idle window between).
    s.push_str(&ra(
        "uf_tx_last_roll",
        "uf_tx_last",
        32,
        32,
        "if (meta.uf_gap == 1) {\n    v = meta.uf_cur;\n} else if (meta.uf_gap > 1) {\n    v = 0;\n}\nrv = v;",
    ));
    for bank in ["0", "1"] {
        s.push_str(&ra(
            &format!("uf_bloom{bank}_tas"),
            &format!("ufab_bloom{bank}_bit"),
            1,
            1,
            "rv = v;\nv = 1;",
        ));
    }
    s.push_str(&ra(
        "uf_rec_decide",
        "uf_rec_tag",
        32,
        8,
        &format!(
            "bool own = (v & 0xfffffffc) == meta.uf_tag && v[1:0] != 0;
if (meta.uf_look == 1) {{
    if (own && v[1:0] == 1) {{
        rv = {LOOK_OWN};
    }} else {{
        rv = {LOOK};
    }}
}} else if (own && v[1:0] == 1) {{
    if (meta.uf_finish == 1) {{
        v = meta.uf_tag | 2;
        rv = {REMOVED};
    }} else {{
        rv = {UPDATED};
    }}
}} else if (own) {{
    if (meta.uf_finish == 1) {{
        rv = {NOT_TRACKED};
    }} else {{
        v = meta.uf_tag | 1;
        rv = {ADDED};
    }}
}} else if (meta.uf_finish == 1) {{
    rv = {NOT_TRACKED};
}} else if (meta.uf_seen0 == 1 && meta.uf_seen1 == 1) {{
    rv = {FALSE_POSITIVE};
}} else if (v[1:0] == 1) {{
    rv = {UNTRACKED};
}} else {{
    v = meta.uf_tag | 1;
    rv = {ADDED};
}}"
        ),
    ));
    for (field, new) in [("phi", "meta.uf_phi"), ("w", "meta.uf_w")] {
        s.push_str(&ra(
            &format!("uf_rec_{field}_swap"),
            &format!("uf_rec_{field}"),
            32,
            32,
            &format!(
                "rv = v;\nif (meta.uf_out == {ADDED} || meta.uf_out == {UPDATED}) {{\n    v = {new};\n}} else if (meta.uf_out == {REMOVED}) {{\n    v = 0;\n}}"
            ),
        ));
    }
    s.push_str(&ra("uf_rec_period_set", "uf_rec_period", 32, 0, "v = meta.uf_period;"));
    s.push_str(&ra("uf_rec_port_set", "uf_rec_port", 16, 0, "v = meta.egress_port;"));
    s.push_str(&ra("uf_rec_b0_set", "uf_rec_b0", 32, 0, "v = meta.uf_b0;"));
    s.push_str(&ra("uf_rec_b1_set", "uf_rec_b1", 32, 0, "v = meta.uf_b1;"));
    for (name, reg, d) in
        [("uf_phi_l_add", "uf_phi_l", "meta.uf_dphi"), ("uf_w_l_add", "uf_w_l", "meta.uf_dw")]
    {
        s.push_str(&ra(
            name,
            reg,
            32,
            32,
            &format!(
                "bit<32> n = v + {d};\nif (n[31:31] == 1) {{\n    v = 0;\n}} else {{\n    v = n;\n}}\nrv = v;"
            ),
        ));
    }
    s
}
