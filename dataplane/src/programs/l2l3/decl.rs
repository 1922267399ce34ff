//! What `l2l3` declares: its parser over `wire`'s headers, its metadata, its tables, hash unit,
//! multicast groups and MAC-learning digest, as a P4 program of the same switch would.
//!
//! Two of its tables are arrays indexed by port here rather than hash tables (`router_mac`,
//! `smac_rewrite`, `arp_local`: a few entries per port, known from the configuration); they are
//! declared as the exact tables a P4 target would hold them in. MAC learning is done in the data
//! plane here; on a target without that, the `mac_learn` digest tells the control plane, which
//! fills `dmac` (the same entries).

use wire::hpcc_int::{self, MAX_HOPS};
use wire::{arp, ethernet, ipv4, udp};

use crate::model::decl::{Decl, DeclKind, FieldRef, Next, StateDecl};
use crate::model::{KeyDecl, MatchKind, Param, ParserDecl, TableDecl, action, inst, on, param, stack};

/// Instance names, as keys and hash inputs refer to them.
pub mod at {
    use crate::model::FieldRef;
    use wire::{arp, ethernet, ipv4};

    /// `ethernet.dst_addr`.
    pub const ETH_DST: FieldRef = FieldRef::hdr("ethernet", &ethernet::field::DST_ADDR);
    /// `ethernet.src_addr`.
    pub const ETH_SRC: FieldRef = FieldRef::hdr("ethernet", &ethernet::field::SRC_ADDR);
    /// `ipv4.src_addr`.
    pub const IPV4_SRC: FieldRef = FieldRef::hdr("ipv4", &ipv4::field::SRC_ADDR);
    /// `ipv4.dst_addr`.
    pub const IPV4_DST: FieldRef = FieldRef::hdr("ipv4", &ipv4::field::DST_ADDR);
    /// `ipv4.protocol`.
    pub const IPV4_PROTO: FieldRef = FieldRef::hdr("ipv4", &ipv4::field::PROTOCOL);
    /// `arp.target_ip`.
    pub const ARP_TARGET: FieldRef = FieldRef::hdr("arp", &arp::field::TARGET_IP);
}

/// The program's metadata.
pub const L4_SRC_PORT: Param = param("l4_src_port", 16);
/// The destination port of TCP or UDP, set by the parser.
pub const L4_DST_PORT: Param = param("l4_dst_port", 16);
/// The next hop `ipv4_lpm` or `ecmp_groups` chose.
pub const NEXTHOP: Param = param("nexthop", 32);
/// The ECMP group `ipv4_lpm` chose.
pub const ECMP_GROUP: Param = param("ecmp_group", 16);

const fn meta(p: Param) -> FieldRef {
    FieldRef::meta(p.name, p.width)
}

/// `meta.l4_src_port` as a key field.
pub const L4_SRC_KEY: FieldRef = meta(L4_SRC_PORT);

/// `meta.ingress_port`.
pub const INGRESS_PORT: FieldRef = FieldRef::meta("ingress_port", 16);
/// `meta.egress_port`.
pub const EGRESS_PORT: FieldRef = FieldRef::meta("egress_port", 16);

/// The parser: Ethernet, one 802.1Q tag, ARP or IPv4 (options skipped), TCP or UDP ports for
/// ECMP, and on UDP port 40051 the HPCC++ INT shim and its hop slots (stamped at egress).
pub fn parser() -> ParserDecl {
    let eth_type = FieldRef::hdr("ethernet", &ethernet::field::ETHER_TYPE);
    let vlan_type = FieldRef::hdr("vlan", &ethernet::field::vlan::ETHER_TYPE);
    let proto_frag = [at::IPV4_PROTO, FieldRef::hdr("ipv4", &ipv4::field::FRAG_OFFSET)];
    let l3 = [on(0x0800, Next::State("ipv4")), on(0x0806, Next::State("arp"))];
    ParserDecl {
        states: vec![
            StateDecl::new(
                "start",
                &[inst("ethernet", &ethernet::HEADER)],
                &[eth_type],
                &[on(0x8100, Next::State("vlan")), l3[0], l3[1]],
                Next::Accept,
            ),
            StateDecl::new("vlan", &[inst("vlan", &ethernet::VLAN_HEADER)], &[vlan_type], &l3, Next::Accept),
            StateDecl::new("arp", &[inst("arp", &arp::HEADER)], &[], &[], Next::Accept),
            StateDecl::new(
                "ipv4",
                &[inst("ipv4", &ipv4::HEADER)],
                &proto_frag,
                // (protocol, fragment offset 0): the first fragment carries the ports.
                &[on(6 << 13, Next::State("tcp")), on(17 << 13, Next::State("udp"))],
                Next::Accept,
            )
            .advance(FieldRef::hdr("ipv4", &ipv4::field::IHL), 4, 20),
            StateDecl::new("tcp", &[inst("tcp", &udp::L4_PORTS)], &[], &[], Next::Accept)
                .set(L4_SRC_PORT, FieldRef::hdr("tcp", &udp::field::SRC_PORT))
                .set(L4_DST_PORT, FieldRef::hdr("tcp", &udp::field::DST_PORT)),
            StateDecl::new(
                "udp",
                &[inst("udp", &udp::HEADER)],
                &[FieldRef::hdr("udp", &udp::field::DST_PORT)],
                &[on(u64::from(udp::port::HPCC_INT), Next::State("int"))],
                Next::Accept,
            )
            .set(L4_SRC_PORT, FieldRef::hdr("udp", &udp::field::SRC_PORT))
            .set(L4_DST_PORT, FieldRef::hdr("udp", &udp::field::DST_PORT)),
            StateDecl::new(
                "int",
                &[inst("int_shim", &hpcc_int::SHIM)],
                &[FieldRef::hdr("int_shim", &hpcc_int::field::shim::COMPACT)],
                &[on(1, Next::State("int_compact"))],
                Next::State("int_full"),
            ),
            StateDecl::new(
                "int_full",
                &[stack(
                    "int_hop",
                    &hpcc_int::HOP,
                    FieldRef::hdr("int_shim", &hpcc_int::field::shim::MAX_HOP),
                    MAX_HOPS,
                )],
                &[],
                &[],
                Next::Accept,
            ),
            StateDecl::new(
                "int_compact",
                &[stack(
                    "int_hop_compact",
                    &hpcc_int::HOP_COMPACT,
                    FieldRef::hdr("int_shim", &hpcc_int::field::shim::MAX_HOP),
                    MAX_HOPS,
                )],
                &[],
                &[],
                Next::Accept,
            ),
        ],
    }
}

/// `dmac`: where a destination MAC is (forward), or flood (the default).
pub fn dmac(size: usize) -> TableDecl {
    TableDecl::new(
        "dmac",
        size,
        &[KeyDecl::exact(at::ETH_DST)],
        vec![action("forward", &[param("port", 16)]), action("flood", &[])],
        "flood",
    )
}

/// `ipv4_lpm`: a connected subnet (the port), an ECMP group of next hops, or one of the
/// switch's own addresses.
pub fn ipv4_lpm(size: usize) -> TableDecl {
    TableDecl::new(
        "ipv4_lpm",
        size,
        &[KeyDecl::lpm(at::IPV4_DST)],
        vec![
            action("connected", &[param("port", 16)]),
            action("ecmp", &[param("group", 16)]),
            action("local", &[]),
        ],
        "no_route",
    )
}

/// `neighbor`: the next hop's MAC and port.
pub fn neighbor(size: usize) -> TableDecl {
    TableDecl::new(
        "neighbor",
        size,
        &[KeyDecl::exact(meta(NEXTHOP))],
        vec![action("set_neighbor", &[param("dst_mac", 48), param("port", 16)])],
        "unresolved",
    )
}

/// `arp_pending`: next hops an ARP request went out for, and when.
pub fn arp_pending(size: usize) -> TableDecl {
    TableDecl::new(
        "arp_pending",
        size,
        &[KeyDecl::exact(meta(NEXTHOP))],
        vec![action("pending", &[param("since_ns", 64)])],
        "solicit",
    )
}

/// What `l2l3` declares besides its tables' own constructors: metadata, parser, the ECMP
/// selector, the per-port tables, the learning digest and the flood group.
pub fn declare(res: &mut crate::model::Resources, ports: usize, max_groups: usize) {
    res.declare_metadata(&[L4_SRC_PORT, L4_DST_PORT, NEXTHOP, ECMP_GROUP]);
    res.set_parser(parser());
    let table = |t: TableDecl, bytes: usize, detail: &str| Decl {
        name: t.name,
        size: t.size,
        kind: DeclKind::Table(t),
        bytes,
        detail: detail.into(),
    };
    let mut ecmp = TableDecl::new(
        "ecmp_groups",
        max_groups,
        &[crate::model::KeyDecl { field: meta(ECMP_GROUP), kind: MatchKind::Selector }],
        vec![action("set_nexthop", &[param("nexthop", 32)])],
        "no_route",
    );
    ecmp.selector = Some(("ecmp_hash", 16));
    res.declare(table(ecmp, max_groups * 64, ""));
    res.declare(table(
        TableDecl::new(
            "router_mac",
            ports,
            &[KeyDecl::exact(INGRESS_PORT)],
            vec![action("route", &[param("mac", 48)])],
            "bridge",
        ),
        ports * 8,
        "a per-port array here; routed when ethernet.dst_addr is the port's MAC",
    ));
    res.declare(table(
        TableDecl::new(
            "smac_rewrite",
            ports,
            &[KeyDecl::exact(EGRESS_PORT)],
            vec![action("set_smac", &[param("mac", 48)])],
            "nop",
        ),
        0,
        "the same per-port array as router_mac",
    ));
    res.declare(table(
        TableDecl::new(
            "arp_local",
            ports * 4,
            &[KeyDecl::exact(INGRESS_PORT), KeyDecl::exact(at::ARP_TARGET)],
            vec![action("arp_reply", &[param("mac", 48)])],
            "bridge",
        ),
        0,
        "the ports' addresses, per-port arrays here",
    ));
    res.declare(Decl {
        name: "mac_learn",
        size: 1,
        kind: DeclKind::Digest { fields: vec![at::ETH_SRC, INGRESS_PORT], table: "dmac" },
        bytes: 0,
        detail: "learned in the data plane here (at most once a second per MAC)".into(),
    });
    res.declare(Decl {
        name: "flood",
        size: 1,
        kind: DeclKind::Multicast,
        bytes: ports * 4,
        detail: "group 0: every front-panel port, the ingress port excluded".into(),
    });
}

/// The ECMP hash's inputs: the 5-tuple.
pub const ECMP_INPUTS: [FieldRef; 5] =
    [at::IPV4_SRC, at::IPV4_DST, at::IPV4_PROTO, meta(L4_SRC_PORT), meta(L4_DST_PORT)];
