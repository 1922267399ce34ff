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

use wire::dta;

mod egress;
mod entries;
mod ingress;

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
    use wire::dta::KeyHash;

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
