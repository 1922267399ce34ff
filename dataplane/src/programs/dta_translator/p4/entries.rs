//! The translator's control-plane state and the limitations its P4 lists.

use wire::dta::{self, Priority};

use super::super::DtaTranslator;
use super::*;

impl DtaTranslator {
    /// The control-plane state the configuration implies: collectors, stores and their replica
    /// groups, lists, key ranges, meters, the switch's addresses. The QPs' connections
    /// (`dta_qp_state`) come from the CM exchange at run time.
    pub(super) fn dta_entries(&self, port_ips: &[Option<std::net::Ipv4Addr>]) -> Vec<Entry> {
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
                let u = u64::from(super::super::UNITS);
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

    pub(super) fn dta_limitations(&self, slot_len: usize) -> Vec<String> {
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
