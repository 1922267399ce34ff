//! Control-plane state a configuration implies, target-neutral, and its two renderings: a
//! `bfrt_python` script for TNA and `simple_switch_CLI` commands for v1model.

use std::fmt::Write as _;

/// One key field's match value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyVal {
    /// Exact.
    Exact(u128),
    /// Value and prefix length.
    Lpm(u128, u8),
    /// An inclusive range (a range match; entries of such a table take their position in the
    /// list as priority).
    Range(u128, u128),
}

/// A value and its width in bits, for action data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Arg {
    /// Parameter name, as the action declares it.
    pub name: &'static str,
    /// Value.
    pub value: u128,
}

/// One piece of control-plane state.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entry {
    /// A match-action entry.
    Table {
        /// The control the table is in.
        pipe: super::Pipe,
        /// Table (the declared name).
        table: &'static str,
        /// Key fields' P4 names (`hdr.ipv4.dst_addr`), as the table's key lists them, and values.
        keys: Vec<(String, KeyVal)>,
        /// Action (the declared name, without the table prefix).
        action: &'static str,
        /// Action data.
        args: Vec<Arg>,
    },
    /// A group of an action-selector table: `group` chooses among `members`, each an action
    /// with its data.
    SelectorGroup {
        /// Table.
        table: &'static str,
        /// The group ID (the table's key value).
        group: u32,
        /// The key field's P4 name.
        key: String,
        /// Members: action and data.
        members: Vec<(&'static str, Vec<Arg>)>,
    },
    /// A multicast group replicating to `ports`; `prune_ingress`: never back out of the port it
    /// came in on.
    Multicast {
        /// Group ID as the program numbers it (0 based); targets use `group + 1`.
        group: u16,
        /// Ports.
        ports: Vec<u16>,
        /// Whether a copy to the ingress port is pruned.
        prune_ingress: bool,
    },
    /// A multicast group of `copies` replicas to one port, replica `n` with replication ID `n`
    /// (the copy number egress reads).
    Replicas {
        /// Group ID as the program numbers it (0 based); targets use `group + 1`.
        group: u16,
        /// Port.
        port: u16,
        /// Copies.
        copies: u16,
    },
    /// An ingress mirror (clone) session to `port`, its copies cut to `max_len` bytes on TNA
    /// (the mirror header included; v1model cuts in egress).
    Mirror {
        /// Session ID.
        session: u16,
        /// Port.
        port: u16,
        /// Truncation.
        max_len: u16,
    },
    /// A packet meter's rates (packets per second, bursts in packets).
    Meter {
        /// The control it is in.
        pipe: super::Pipe,
        /// Meter.
        name: &'static str,
        /// Index.
        index: u32,
        /// Committed rate.
        cir: u64,
        /// Committed burst.
        cbs: u64,
        /// Peak rate.
        pir: u64,
        /// Peak burst.
        pbs: u64,
    },
    /// A register cell's initial value.
    Register {
        /// Register.
        name: String,
        /// Index.
        index: u32,
        /// Value.
        value: u128,
    },
}

fn control(pipe: super::Pipe) -> &'static str {
    match pipe {
        super::Pipe::Ingress => "SfIngress",
        super::Pipe::Egress => "SfEgress",
    }
}

fn hex(v: u128) -> String {
    format!("{v:#x}")
}

/// The P4 name of an action of `table`.
pub fn action_name(table: &str, action: &str) -> String {
    format!("{table}_{action}")
}

/// `simple_switch_CLI` commands for v1model (the ingress control is `SfIngress`).
pub fn v1model_cli(entries: &[Entry]) -> String {
    let mut s = String::from(
        "# simple_switch_CLI commands: the table entries and multicast groups the configuration implies.\n",
    );
    let (mut member, mut group, mut node) = (0u32, 0u32, 0u32);
    let mut range_rank = std::collections::BTreeMap::new();
    for e in entries {
        match e {
            Entry::Table { pipe, table, keys, action, args } => {
                let control = control(*pipe);
                let k: Vec<String> = keys
                    .iter()
                    .map(|(_, v)| match v {
                        KeyVal::Exact(x) => hex(*x),
                        KeyVal::Lpm(x, l) => format!("{}/{l}", hex(*x)),
                        KeyVal::Range(lo, hi) => format!("{}->{}", hex(*lo), hex(*hi)),
                    })
                    .collect();
                let mut a: Vec<String> = args.iter().map(|a| hex(a.value)).collect();
                // A range match takes a priority (BMv2: lower wins); ranges here never overlap.
                if keys.iter().any(|(_, v)| matches!(v, KeyVal::Range(..))) {
                    let n = range_rank.entry(*table).or_insert(0u32);
                    *n += 1;
                    a.push(n.to_string());
                }
                let _ = writeln!(
                    s,
                    "table_add {control}.{table} {control}.{} {} => {}",
                    action_name(table, action),
                    k.join(" "),
                    a.join(" ")
                );
            }
            Entry::SelectorGroup { table, group: g, members, .. } => {
                let prof = format!("SfIngress.{table}_selector");
                let first = member;
                for (action, args) in members {
                    let a: Vec<String> = args.iter().map(|a| hex(a.value)).collect();
                    let _ = writeln!(
                        s,
                        "act_prof_create_member {prof} SfIngress.{} {}",
                        action_name(table, action),
                        a.join(" ")
                    );
                    member += 1;
                }
                let _ = writeln!(s, "act_prof_create_group {prof}");
                for m in first..member {
                    let _ = writeln!(s, "act_prof_add_member_to_group {prof} {m} {group}");
                }
                let _ = writeln!(
                    s,
                    "table_indirect_add_with_group SfIngress.{table} {} => {group}",
                    hex(u128::from(*g))
                );
                group += 1;
            }
            Entry::Multicast { group: g, ports, .. } => {
                let mgrp = u32::from(*g) + 1;
                let _ = writeln!(s, "mc_mgrp_create {mgrp}");
                let p: Vec<String> = ports.iter().map(ToString::to_string).collect();
                // Node handles are allocated from 0 in creation order.
                let _ = writeln!(s, "mc_node_create 0 {}", p.join(" "));
                let _ = writeln!(s, "mc_node_associate {mgrp} {node}");
                node += 1;
            }
            Entry::Replicas { group: g, port, copies } => {
                let mgrp = u32::from(*g) + 1;
                let _ = writeln!(s, "mc_mgrp_create {mgrp}");
                for rid in 0..*copies {
                    let _ = writeln!(s, "mc_node_create {rid} {port}");
                    let _ = writeln!(s, "mc_node_associate {mgrp} {node}");
                    node += 1;
                }
            }
            Entry::Mirror { session, port, .. } => {
                let _ = writeln!(s, "mirroring_add {session} {port}");
            }
            Entry::Meter { pipe, name, index, cir, cbs, pir, pbs } => {
                // BMv2 packet meters take rates in packets per microsecond.
                let _ = writeln!(
                    s,
                    "meter_set_rates {}.{name} {index} {}:{cbs} {}:{pbs}",
                    control(*pipe),
                    *cir as f64 / 1e6,
                    *pir as f64 / 1e6
                );
            }
            Entry::Register { name, index, value } => {
                // simple_switch_CLI's register_write takes a decimal value (it refuses `0x…`).
                let _ = writeln!(s, "register_write SfIngress.{name} {index} {value}");
            }
        }
    }
    s
}

/// A `bfrt_python` script for TNA (run with `bfshell -b FILE`; the program is `p4`).
pub fn tna_bfrt(program: &str, entries: &[Entry]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# bfrt_python: the table entries and multicast groups the configuration implies.");
    let _ = writeln!(s, "p4 = bfrt.{program}.pipe");
    let _ = writeln!(s, "ing = p4.SfIngress");
    let _ = writeln!(s, "egr = p4.SfEgress");
    let (mut member, mut node) = (0u32, 1u32);
    let mut range_rank = std::collections::BTreeMap::new();
    for e in entries {
        match e {
            Entry::Table { pipe, table, keys, action, args } => {
                let c = if *pipe == super::Pipe::Egress { "egr" } else { "ing" };
                let mut kv: Vec<String> = Vec::new();
                for (name, v) in keys {
                    let f = key_name(name);
                    match v {
                        KeyVal::Exact(x) => kv.push(format!("{f}={}", hex(*x))),
                        KeyVal::Lpm(x, l) => kv.push(format!("{f}={}, {f}_p_length={l}", hex(*x))),
                        KeyVal::Range(lo, hi) => {
                            kv.push(format!("{f}_start={}, {f}_end={}", hex(*lo), hex(*hi)))
                        }
                    }
                }
                if keys.iter().any(|(_, v)| matches!(v, KeyVal::Range(..))) {
                    let n = range_rank.entry(*table).or_insert(0u32);
                    kv.push(format!("MATCH_PRIORITY={n}"));
                    *n += 1;
                }
                kv.extend(args.iter().map(|a| format!("{}={}", a.name, hex(a.value))));
                let _ = writeln!(s, "{c}.{table}.add_with_{}({})", action_name(table, action), kv.join(", "));
            }
            Entry::SelectorGroup { table, group, members, key } => {
                let first = member;
                for (action, args) in members {
                    let mut kv = vec![format!("ACTION_MEMBER_ID={member}")];
                    kv.extend(args.iter().map(|a| format!("{}={}", a.name, hex(a.value))));
                    let _ = writeln!(
                        s,
                        "ing.{table}_profile.add_with_{}({})",
                        action_name(table, action),
                        kv.join(", ")
                    );
                    member += 1;
                }
                let ids: Vec<String> = (first..member).map(|m| m.to_string()).collect();
                let status: Vec<&str> = (first..member).map(|_| "True").collect();
                let _ = writeln!(
                    s,
                    "ing.{table}_selector.entry(SELECTOR_GROUP_ID={group}, MAX_GROUP_SIZE=16, ACTION_MEMBER_ID=[{}], ACTION_MEMBER_STATUS=[{}]).push()",
                    ids.join(", "),
                    status.join(", ")
                );
                let _ = writeln!(
                    s,
                    "ing.{table}.entry({}={group}, SELECTOR_GROUP_ID={group}).push()",
                    key_name(key)
                );
            }
            Entry::Multicast { group, ports, prune_ingress } => {
                let p: Vec<String> = ports.iter().map(ToString::to_string).collect();
                let _ = writeln!(
                    s,
                    "bfrt.pre.node.entry(MULTICAST_NODE_ID={node}, MULTICAST_RID=0, MULTICAST_LAG_ID=[], DEV_PORT=[{}]).push()",
                    p.join(", ")
                );
                let _ = writeln!(
                    s,
                    "bfrt.pre.mgid.entry(MGID={}, MULTICAST_NODE_ID=[{node}], MULTICAST_NODE_L1_XID_VALID=[False], MULTICAST_NODE_L1_XID=[0]).push()",
                    group + 1
                );
                if *prune_ingress {
                    // Ingress sets level2_exclusion_id to its port: prune that port's copy.
                    for port in ports {
                        let _ = writeln!(
                            s,
                            "bfrt.pre.prune.entry(MULTICAST_L2_XID={port}, DEV_PORT=[{port}]).push()"
                        );
                    }
                }
                node += 1;
            }
            Entry::Replicas { group, port, copies } => {
                let nodes: Vec<String> = (node..node + u32::from(*copies)).map(|n| n.to_string()).collect();
                for rid in 0..*copies {
                    let _ = writeln!(
                        s,
                        "bfrt.pre.node.entry(MULTICAST_NODE_ID={node}, MULTICAST_RID={rid}, MULTICAST_LAG_ID=[], DEV_PORT=[{port}]).push()"
                    );
                    node += 1;
                }
                let xid: Vec<&str> = nodes.iter().map(|_| "False").collect();
                let zeros: Vec<&str> = nodes.iter().map(|_| "0").collect();
                let _ = writeln!(
                    s,
                    "bfrt.pre.mgid.entry(MGID={}, MULTICAST_NODE_ID=[{}], MULTICAST_NODE_L1_XID_VALID=[{}], MULTICAST_NODE_L1_XID=[{}]).push()",
                    group + 1,
                    nodes.join(", "),
                    xid.join(", "),
                    zeros.join(", ")
                );
            }
            Entry::Mirror { session, port, max_len } => {
                let _ = writeln!(
                    s,
                    "bfrt.mirror.cfg.entry_with_normal(sid={session}, direction=\"INGRESS\", session_enable=True, ucast_egress_port={port}, ucast_egress_port_valid=True, max_pkt_len={max_len}).push()"
                );
            }
            Entry::Meter { pipe, name, index, cir, cbs, pir, pbs } => {
                let c = if *pipe == super::Pipe::Egress { "egr" } else { "ing" };
                let _ = writeln!(
                    s,
                    "{c}.{name}.mod(METER_INDEX={index}, METER_SPEC_CIR_PPS={cir}, METER_SPEC_PIR_PPS={pir}, METER_SPEC_CBS_PKTS={cbs}, METER_SPEC_PBS_PKTS={pbs})"
                );
            }
            Entry::Register { name, index, value } => {
                let _ = writeln!(s, "ing.{name}.mod({index}, {})", hex(*value));
            }
        }
    }
    s
}

/// The name a key field is given in the P4 (`@name`) and so in bfrt_python's keyword
/// arguments: `hdr.ipv4.dst_addr` → `ipv4_dst_addr`, `meta.ecmp_group` → `ecmp_group`.
pub fn key_name(p4: &str) -> String {
    p4.trim_start_matches("hdr.").trim_start_matches("meta.").replace('.', "_")
}
