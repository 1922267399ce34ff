//! `l2l3` in P4: the steps of [`super::L2l3`]'s ingress (learn, ARP, route, bridge) and of its
//! egress INT stamping ([`super::stamp_int`]), written once against the exporter's target
//! macros, and the table entries its configuration and tables hold.
//!
//! Step by step (Rust → P4):
//! - `learn` (data-plane MAC learning) → the `mac_learn` digest; the control plane fills `dmac`;
//! - `arp` (answer for the switch's addresses) → `arp_local` (its hit gives the port's MAC; the
//!   reply is built in place and sent back out of the ingress port); ARP replies to the switch
//!   are dropped (`arp_to_switch`);
//! - `route` (router MAC, checksum, LPM, ECMP, TTL, neighbour, MAC rewrite) → `router_mac`,
//!   the IPv4 checksum (verify and update), `ipv4_lpm`, the `ecmp_groups` selector (its hash:
//!   `ecmp_hash`), `neighbor`, `smac_rewrite`;
//! - bridge (flood multicast and unknown, forward known, drop same-port) → `dmac` and the
//!   `flood` multicast group, the ingress port pruned;
//! - `stamp_int` at egress → the hop slot written in place (unrolled over the slots), with two
//!   P4-only resources the Rust program reads from the port instead: `int_port` (the link rate
//!   and its compact code) and `int_tx_bytes` (bytes sent per port, one register access per
//!   packet).

use std::fmt::Write as _;

use wire::hpcc_int::{COMPACT_RATES, MAX_HOPS, QLEN_UNIT_BYTES, RATE_UNIT_BPS};

use super::{L2l3, Route};
use crate::config::Config;
use crate::model::param;
use crate::p4::{Arg, DigestP4, Entry, KeyVal, Pipe, ProgramP4};

/// Drop-reason counter indices (the `l2l3_drops` counter): the Rust program's named reasons.
const DROPS: [&str; 8] = [
    "malformed",
    "bad_checksum",
    "ttl_expired",
    "no_route",
    "no_neighbor",
    "same_port",
    "to_switch",
    "arp_to_switch",
];

fn drop_index(name: &str) -> usize {
    DROPS.iter().position(|d| *d == name).unwrap_or(0)
}

fn count_drop(name: &str) -> String {
    format!("l2l3_drops.count({});\nSF_DROP();", drop_index(name))
}

fn a(table: &'static str, action: &'static str, body: &str) -> (&'static str, &'static str, String) {
    (table, action, body.to_string())
}

/// The compact INT code of a link rate: the largest listed rate not above it.
fn rate_code(rate_bps: u64) -> u8 {
    let units = rate_bps / RATE_UNIT_BPS;
    COMPACT_RATES.iter().rposition(|&r| u64::from(r) <= units && r > 0).unwrap_or(0) as u8
}

impl L2l3 {
    /// The P4 rendering of this switch as `cfg` configures it.
    pub(crate) fn rendering(&self, cfg: &Config) -> ProgramP4 {
        let mut p = ProgramP4 {
            actions: vec![
                a("dmac", "forward", "meta.l2_hit = 1;\nmeta.l2_port = port;"),
                a("dmac", "flood", "meta.l2_hit = 0;"),
                a(
                    "ipv4_lpm",
                    "connected",
                    "meta.route_kind = 1;\nmeta.nexthop = hdr.ipv4.dst_addr;\n// The neighbour entry sets the port again.\nmeta.egress_port = port;",
                ),
                a("ipv4_lpm", "ecmp", "meta.route_kind = 2;\nmeta.ecmp_group = group;"),
                a("ipv4_lpm", "local", "meta.route_kind = 3;"),
                a("ipv4_lpm", "no_route", "meta.route_kind = 0;"),
                a("ecmp_groups", "set_nexthop", "meta.nexthop = nexthop;"),
                a("ecmp_groups", "no_route", "meta.route_kind = 0;"),
                a("router_mac", "route", "meta.port_mac = mac;"),
                a("router_mac", "bridge", "meta.port_mac = 0;"),
                a("smac_rewrite", "set_smac", "hdr.ethernet.src_addr = mac;"),
                a("smac_rewrite", "nop", ""),
                a("arp_local", "arp_reply", "meta.arp_hit = 1;\nmeta.arp_mac = mac;"),
                a("arp_local", "bridge", "meta.arp_hit = 0;"),
                a("neighbor", "set_neighbor", "meta.nh_hit = 1;\nhdr.ethernet.dst_addr = dst_mac;\nmeta.egress_port = port;"),
                a("neighbor", "unresolved", "meta.nh_hit = 0;"),
            ],
            meta: vec![
                param("ingress_port", 16),
                param("egress_port", 16),
                param("port_mac", 48),
                param("route_kind", 2),
                param("nh_hit", 1),
                param("l2_hit", 1),
                param("l2_port", 16),
                param("arp_hit", 1),
                param("arp_mac", 48),
                param("flood", 1),
            ],
            not_emitted: vec![(
                "arp_pending",
                "resolving a next hop (ARP requests and their rate limit) is the control plane's work: a packet \
                 whose neighbour is unknown is dropped and counted (`no_neighbor`), the control plane ARPs and \
                 fills `neighbor`"
                    .into(),
            )],
            digests: vec![DigestP4 {
                name: "mac_learn",
                id: 1,
                fields: vec![("src_addr", 48, "hdr.ethernet.src_addr"), ("ingress_port", 16, "meta.ingress_port")],
            }],
            chain: vec![
                vec!["router_mac"],
                vec!["arp_local", "ipv4_lpm", "dmac"],
                vec!["ecmp_groups"],
                vec!["neighbor"],
                vec!["smac_rewrite"],
            ],
            recirculation: "none: l2l3 does not loop (one LPM, one selector, one neighbour lookup per packet).".into(),
            ..ProgramP4::default()
        };
        p.added.push(("l2l3_drops", format!("packet counter per drop reason, index: {}", DROPS.join(", "))));
        p.ingress_decls = "#ifdef SF_TNA
    Counter<bit<32>, bit<8>>(8, CounterType_t.PACKETS) l2l3_drops;
#else
    counter(8, CounterType.packets) l2l3_drops;
#endif
"
        .into();
        p.ingress_apply = self.ingress_apply(&|_| String::new());
        self.egress(&mut p);
        p.entries = self.entries(cfg);
        p.limitations = vec![
            format!(
                "ports: the configuration's port i is target port i (BMv2 `-i i@ifname`; on Tofino, dev_port i). {} ports here.",
                self.ports.len()
            ),
            "MAC learning: the Rust program learns in the data plane (refreshing at most once a second); the P4 \
             sends every frame's (source MAC, port) in the `mac_learn` digest and the control plane fills `dmac` \
             (it should de-duplicate). MAC ageing is the control plane's too."
                .into(),
            "neighbours: static ones (configuration) are exported; the Rust program also learns them from ARP \
             replies and requests them for unresolved next hops — on the targets, the control plane's work \
             (`arp_pending` is not emitted)."
                .into(),
            "ECMP: the member a flow takes is chosen by the target's selector (hash `ecmp_hash` over the same \
             five fields), not by the Rust program's `hash mod members`: each flow stays on one path on both, \
             but not necessarily the same path."
                .into(),
            "queues: the queue is chosen as the Rust program does (IPv4 precedence or VLAN PCP: \
             `std.priority` on BMv2, which needs `--priority-queues`; `ig_tm_md.qid` on Tofino); PFC, ECN \
             marking, DWRR weights and buffer thresholds are the target traffic manager's configuration \
             (Tofino's TM, BMv2's queues), not P4, and not exported."
                .into(),
            "IPv4 with options: the header checksum is verified and rewritten over the 20-byte header, so the \
             targets drop such packets as `bad_checksum` where the Rust switch routes them."
                .into(),
            "drop reasons: counted in the P4-only `l2l3_drops` counter, one index per reason, where the Rust \
             switch has named counters."
                .into(),
        ];
        p
    }

    /// The ingress steps; `unicast(port)` is P4 text placed where a packet is sent to one port
    /// (routed or bridged), `port` its expression: programs built on `l2l3` observe it there.
    pub(crate) fn ingress_apply(&self, unicast: &dyn Fn(&str) -> String) -> String {
        self.ingress_apply_routing(unicast, None)
    }

    /// [`Self::ingress_apply`], with `route_also` a condition under which IPv4 is routed even
    /// when the frame is not addressed to the port's MAC (a program routing a packet it built).
    pub(crate) fn ingress_apply_routing(
        &self,
        unicast: &dyn Fn(&str) -> String,
        route_also: Option<&str>,
    ) -> String {
        let to_router = match route_also {
            None => "hdr.ethernet.dst_addr == meta.port_mac".to_string(),
            Some(c) => format!("(hdr.ethernet.dst_addr == meta.port_mac || {c})"),
        };
        let hook = |port: &str, pad: &str| {
            let t = unicast(port);
            if t.is_empty() {
                t
            } else {
                format!("\n{pad}{}", t.trim_end().replace('\n', &format!("\n{pad}")))
            }
        };
        let routed_hook = hook("meta.egress_port", "                ");
        let bridged_hook = hook("meta.l2_port", "            ");
        format!(
            "meta.ingress_port = SF_INGRESS_PORT;
if (!hdr.ethernet.isValid()) {{
    {malformed}
    exit;
}}
// The egress queue: {queue_doc}.
{queue}
// Learning: (source, port) to the control plane (multicast and all-zero sources are not learned).
if (hdr.ethernet.src_addr[40:40] == 0 && hdr.ethernet.src_addr != 0) {{
    mac_learn_send();
}}
router_mac.apply();
bool done = false;
// ARP for one of the switch's addresses on this port: answer a request, consume a reply.
if (hdr.arp.isValid()) {{
    arp_local.apply();
    if (meta.arp_hit == 1) {{
        done = true;
        if (hdr.arp.oper == 1) {{
            hdr.ethernet.dst_addr = hdr.arp.sender_mac;
            hdr.ethernet.src_addr = meta.arp_mac;
            hdr.arp.oper = 2;
            hdr.arp.target_mac = hdr.arp.sender_mac;
            hdr.arp.sender_mac = meta.arp_mac;
            bit<32> asked = hdr.arp.target_ip;
            hdr.arp.target_ip = hdr.arp.sender_ip;
            hdr.arp.sender_ip = asked;
            SF_SET_EGRESS(meta.ingress_port);
            SF_SET_QUEUE({control_queue});
        }} else {{
            {arp_to_switch}
        }}
    }}
}}
// Routed: IPv4 to the port's own MAC.
if (!done && hdr.ipv4.isValid() && meta.port_mac != 0 && {to_router}) {{
    done = true;
    if (hdr.ipv4.version != 4) {{
        {malformed}
    }} else if (SF_CHECKSUM_ERR) {{
        {bad_checksum}
    }} else {{
        ipv4_lpm.apply();
        if (meta.route_kind == 2) {{
            // The default action on a miss is run here: BMv2 runs none for a selector table.
            if (!ecmp_groups.apply().hit) {{
                ecmp_groups_no_route();
            }}
        }}
        if (meta.route_kind == 0) {{
            {no_route}
        }} else if (meta.route_kind == 3) {{
            {to_switch}
        }} else if (hdr.ipv4.ttl <= 1) {{
            {ttl_expired}
        }} else {{
            neighbor.apply();
            if (meta.nh_hit == 0) {{
                {no_neighbor}
            }} else {{
                smac_rewrite.apply();
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                SF_SET_EGRESS(meta.egress_port);{routed_hook}
            }}
        }}
    }}
}}
// Bridged: multicast and unknown destinations flood (never back out of the ingress port).
if (!done) {{
    if (hdr.ethernet.dst_addr[40:40] == 1) {{
        meta.flood = 1;
        SF_MCAST(1, meta.ingress_port);
    }} else {{
        dmac.apply();
        if (meta.l2_hit == 0) {{
            meta.flood = 1;
            SF_MCAST(1, meta.ingress_port);
        }} else if (meta.l2_port == meta.ingress_port) {{
            {same_port}
        }} else {{
            SF_SET_EGRESS(meta.l2_port);{bridged_hook}
        }}
    }}
}}",
            malformed = count_drop("malformed").replace('\n', "\n    "),
            control_queue = super::CONTROL_QUEUE,
            queue_doc = if self.qos_pcp {
                "the VLAN tag's PCP (`qos = \"pcp\"`), else 0"
            } else {
                "the IPv4 precedence (DSCP >> 3), else 0"
            },
            queue = if self.qos_pcp {
                "if (hdr.vlan.isValid()) {\n    SF_SET_QUEUE(hdr.vlan.pcp);\n}"
            } else {
                "if (hdr.ipv4.isValid()) {\n    SF_SET_QUEUE(hdr.ipv4.dscp[5:3]);\n}"
            },
            arp_to_switch = count_drop("arp_to_switch").replace('\n', "\n            "),
            bad_checksum = count_drop("bad_checksum").replace('\n', "\n        "),
            no_route = count_drop("no_route").replace('\n', "\n            "),
            to_switch = count_drop("to_switch").replace('\n', "\n            "),
            ttl_expired = count_drop("ttl_expired").replace('\n', "\n            "),
            no_neighbor = count_drop("no_neighbor").replace('\n', "\n                "),
            same_port = count_drop("same_port").replace('\n', "\n            "),
        )
    }

    /// Egress: the flood copy back to its ingress port pruned (BMv2; Tofino's PRE prunes it),
    /// and INT stamping when the switch has an INT switch ID.
    fn egress(&self, p: &mut ProgramP4) {
        let mut apply = String::from(
            "// A flooded copy never goes back out of its ingress port (BMv2 carries the metadata to egress;\n\
             // on Tofino the PRE prunes it by the L2 exclusion ID and `flood` reads 0 here).\n\
             if (meta.flood == 1 && SF_EGRESS_PORT == meta.ingress_port) {\n    SF_EGRESS_DROP();\n    exit;\n}\n",
        );
        let Some(id) = self.int_switch_id else {
            p.egress_apply = apply;
            return;
        };
        p.added.push((
            "int_port",
            "exact on the egress port: the link rate (100 Mb/s units) and its compact code".into(),
        ));
        p.added
            .push(("int_tx_bytes", "register, 32 bits per port: bytes sent, one access per packet".into()));
        p.egress_decls = format!(
            "    action int_port_set(bit<16> rate, bit<4> rate_code) {{
        meta.int_rate = rate;
        meta.int_rate_code = rate_code;
    }}
    table int_port {{
        key = {{
            meta.egress_port: exact @name(\"egress_port\");
        }}
        actions = {{
            int_port_set;
        }}
        default_action = int_port_set(0, 0);
        size = {};
    }}
#ifdef SF_TNA
    Register<bit<32>, PortId_t>(512, 0) int_tx_bytes;
    RegisterAction<bit<32>, PortId_t, bit<32>>(int_tx_bytes) int_tx_add = {{
        void apply(inout bit<32> v, out bit<32> rv) {{
            v = v + (bit<32>)eg_intr_md.pkt_length;
            rv = v;
        }}
    }};
#else
    register<bit<32>>(512) int_tx_bytes;
#endif
",
            self.ports.len().max(1)
        );
        p.meta.extend([param("int_rate", 16), param("int_rate_code", 4), param("int_tx", 32)]);
        let qround = QLEN_UNIT_BYTES - 1;
        let _ = write!(
            apply,
            "meta.egress_port = SF_EGRESS_PORT;
// Bytes sent on the port, this packet included (every packet, one access).
#ifdef SF_TNA
meta.int_tx = int_tx_add.execute(eg_intr_md.egress_port);
#else
int_tx_bytes.read(meta.int_tx, (bit<32>)SF_EGRESS_PORT);
meta.int_tx = meta.int_tx + SF_PKT_LEN;
int_tx_bytes.write((bit<32>)SF_EGRESS_PORT, meta.int_tx);
#endif
// HPCC++ INT (wire::hpcc_int): one hop in the next free slot, unless reflected; overflow flagged.
if (hdr.int_shim.isValid() && hdr.int_shim.reflected == 0) {{
    int_port.apply();
    bit<32> qbytes = SF_DEQ_QDEPTH_BYTES;
    bit<16> qlen = (bit<16>)((qbytes + {qround}) >> 7);
    bit<32> ts = SF_EGRESS_TS_NS;
    if (hdr.int_shim.n_hop >= hdr.int_shim.max_hop) {{
        hdr.int_shim.overflow = 1;
    }} else if (hdr.int_shim.compact == 0) {{
"
        );
        for k in 0..MAX_HOPS {
            let cond = if k == 0 { "        if" } else { " else if" };
            let _ = write!(
                apply,
                "{cond} (hdr.int_shim.n_hop == {k}) {{
            hdr.int_hop[{k}].switch_id = {id};
            hdr.int_hop[{k}].port_id = meta.egress_port;
            hdr.int_hop[{k}].rate = meta.int_rate;
            hdr.int_hop[{k}].qlen = qlen;
            hdr.int_hop[{k}].ts = ts;
            hdr.int_hop[{k}].tx_bytes = meta.int_tx;
        }}"
            );
        }
        apply.push_str("\n        hdr.int_shim.n_hop = hdr.int_shim.n_hop + 1;\n    } else {\n");
        for k in 0..MAX_HOPS {
            let cond = if k == 0 { "        if" } else { " else if" };
            let _ = write!(
                apply,
                "{cond} (hdr.int_shim.n_hop == {k}) {{
            hdr.int_hop_compact[{k}].rate_code = meta.int_rate_code;
            hdr.int_hop_compact[{k}].ts = ts[23:0];
            hdr.int_hop_compact[{k}].tx_units = meta.int_tx[26:7];
            hdr.int_hop_compact[{k}].qlen = qlen;
        }}"
            );
        }
        apply.push_str(
            "\n        hdr.int_shim.n_hop = hdr.int_shim.n_hop + 1;\n    }\n    // The UDP checksum no longer holds: zero (none), as the Rust stamping does.\n    hdr.udp.checksum = 0;\n}\n",
        );
        p.egress_apply = apply;
        p.chain.push(vec!["int_port (egress)", "int_tx_bytes (egress)"]);
    }

    /// The control-plane state: the tables' entries as the switch holds them now (configured
    /// routes, static neighbours and MACs, the ports' MACs and addresses), the flood group and,
    /// with INT, each port's rate.
    fn entries(&self, cfg: &Config) -> Vec<Entry> {
        let mut e = Vec::new();
        let exact = |f: &str, v: u128| (f.to_string(), KeyVal::Exact(v));
        let mac = |m: wire::EthernetAddress| {
            let b = m.0;
            u128::from(u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]]))
        };
        for (i, port) in self.ports.iter().enumerate() {
            let i = i as u128;
            e.push(Entry::Table {
                pipe: Pipe::Ingress,
                table: "router_mac",
                keys: vec![exact("meta.ingress_port", i)],
                action: "route",
                args: vec![Arg { name: "mac", value: mac(port.mac) }],
            });
            e.push(Entry::Table {
                pipe: Pipe::Ingress,
                table: "smac_rewrite",
                keys: vec![exact("meta.egress_port", i)],
                action: "set_smac",
                args: vec![Arg { name: "mac", value: mac(port.mac) }],
            });
            for &(addr, _) in &port.addrs {
                e.push(Entry::Table {
                    pipe: Pipe::Ingress,
                    table: "arp_local",
                    keys: vec![
                        exact("meta.ingress_port", i),
                        exact("hdr.arp.target_ip", u128::from(addr.to_bits())),
                    ],
                    action: "arp_reply",
                    args: vec![Arg { name: "mac", value: mac(port.mac) }],
                });
            }
        }
        let mut macs: Vec<_> = self.macs.iter().filter(|(_, m)| m.is_static).collect();
        macs.sort_by_key(|(k, _)| **k);
        for (k, m) in macs {
            e.push(Entry::Table {
                pipe: Pipe::Ingress,
                table: "dmac",
                keys: vec![exact("hdr.ethernet.dst_addr", u128::from(*k))],
                action: "forward",
                args: vec![Arg { name: "port", value: u128::from(m.port) }],
            });
        }
        for (prefix, len, route) in self.routes.rules() {
            let (action, args) = match route {
                Route::Connected(port) => ("connected", vec![Arg { name: "port", value: u128::from(*port) }]),
                Route::Group(g) => ("ecmp", vec![Arg { name: "group", value: u128::from(*g) }]),
                Route::Local => ("local", vec![]),
            };
            e.push(Entry::Table {
                pipe: Pipe::Ingress,
                table: "ipv4_lpm",
                keys: vec![("hdr.ipv4.dst_addr".into(), KeyVal::Lpm(u128::from(prefix.to_bits()), len))],
                action,
                args,
            });
        }
        for (g, members) in self.groups.iter().enumerate() {
            e.push(Entry::SelectorGroup {
                table: "ecmp_groups",
                group: g as u32,
                key: "meta.ecmp_group".into(),
                // A member behind a port that is down (`port down`) is left out, as `live` does.
                members: members
                    .iter()
                    .filter(|ip| {
                        !self
                            .neighbors
                            .get(&ip.to_bits())
                            .is_some_and(|nb| self.down.get(usize::from(nb.port)).copied().unwrap_or(false))
                    })
                    .map(|ip| ("set_nexthop", vec![Arg { name: "nexthop", value: u128::from(ip.to_bits()) }]))
                    .collect(),
            });
        }
        let mut nbs: Vec<_> = self.neighbors.iter().collect();
        nbs.sort_by_key(|(k, _)| **k);
        for (ip, nb) in nbs {
            e.push(Entry::Table {
                pipe: Pipe::Ingress,
                table: "neighbor",
                keys: vec![exact("meta.nexthop", u128::from(*ip))],
                action: "set_neighbor",
                args: vec![
                    Arg { name: "dst_mac", value: mac(nb.mac) },
                    Arg { name: "port", value: u128::from(nb.port) },
                ],
            });
        }
        e.push(Entry::Multicast {
            group: 0,
            ports: (0..self.ports.len() as u16).collect(),
            prune_ingress: true,
        });
        if self.int_switch_id.is_some() {
            for (i, port) in cfg.ports.iter().enumerate() {
                let rate = (port.tm.speed_bps / RATE_UNIT_BPS).min(u64::from(u16::MAX));
                e.push(Entry::Table {
                    pipe: Pipe::Egress,
                    table: "int_port",
                    keys: vec![exact("meta.egress_port", i as u128)],
                    action: "set",
                    args: vec![
                        Arg { name: "rate", value: u128::from(rate) },
                        Arg { name: "rate_code", value: u128::from(rate_code(port.tm.speed_bps)) },
                    ],
                });
            }
        }
        e
    }
}

// The egress rounds queue bytes up to 128-byte units with a shift by 7.
const _: () = assert!(QLEN_UNIT_BYTES == 128);
