//! `dataplane resources` prints what a program declares in full — headers with their fields,
//! the parser, metadata, each table's key fields, match kinds, actions and default, register
//! cells, hash inputs — then the size report, for every example configuration.

use std::process::Command;

fn resources(config: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config").join(config);
    let out = Command::new(env!("CARGO_BIN_EXE_dataplane"))
        .args(["resources", "--config"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn l2l3_prints_its_typed_declarations() {
    let s = resources("l2l3.toml");
    for want in [
        "program l2l3, 2 ports",
        "  ipv4 (20 B): version 4, ihl 4, dscp 6, ecn 2, total_len 16,",
        "  state start: extract ethernet; select (ethernet.ether_type) { 0x8100: vlan, 0x800: ipv4, 0x806: arp, default: accept }",
        "  state ipv4: extract ipv4; advance ipv4.ihl * 4 - 20 bytes; select (ipv4.protocol, ipv4.frag_offset)",
        "  state int: extract int_shim (hpcc_int_shim); select (int_shim.compact) { 0x1: int_compact, default: int_full }",
        "  state int_full: extract int_hop (hpcc_int_hop) x int_shim.max_hop (at most 8); -> accept",
        "  state int_compact: extract int_hop_compact (hpcc_int_hop_compact) x int_shim.max_hop (at most 8); -> accept",
        "  program: l4_src_port 16, l4_dst_port 16, nexthop 32, ecmp_group 16",
        "  exact dmac [4096]: key (ethernet.dst_addr 48 exact); actions forward(port 16), flood(); default flood",
        "  lpm ipv4_lpm [1024]: key (ipv4.dst_addr 32 lpm); actions connected(port 16), ecmp(group 16), local(); default no_route",
        "  selector ecmp_groups [256]: key (meta.ecmp_group 16 selector); actions set_nexthop(nexthop 32); default no_route; selector ecmp_hash, up to 16 members",
        "  exact neighbor [1024]: key (meta.nexthop 32 exact); actions set_neighbor(dst_mac 48, port 16); default unresolved",
        "  hash ecmp_hash [1]: Crc16Arc (poly 0x8005, init 0x0000, reflected, xorout 0x0000), 16 bits of (ipv4.src_addr, ipv4.dst_addr, ipv4.protocol, meta.l4_src_port, meta.l4_dst_port)",
        "  digest mac_learn [1]: (ethernet.src_addr, meta.ingress_port) to the control plane, into dmac",
        "resource                     kind         entries    key b    value b       memory",
        "traffic manager:",
    ] {
        assert!(s.contains(want), "missing {want:?} in\n{s}");
    }
}

#[test]
fn the_translator_prints_its_typed_declarations() {
    let s = resources("dta-translator.toml");
    for want in [
        "  dta_base (3 B): opcode 8, seqnum 8, immediate 1, retransmittable 1, priority 2, epoch 4",
        "  state udp: extract udp; meta.l4_src_port = udp.src_port; meta.l4_dst_port = udp.dst_port; select (udp.dst_port) { 0x9c68: dta, 0x12b7: roce,",
        "  state dta: extract dta_base; select (dta_base.opcode) { 0x1: dta_keywrite, 0x2: dta_append, 0x3: dta_keyincrement, 0x4: dta_postcarder, 0x5: dta_sketch_merge, default: accept }",
        "  exact dta_lists [1024]: key (dta_append.list_id 32 exact); actions set_qp(dta_qp 16); default dta_no_list",
        "  exact dta_reporter_seq [65536]: key (ipv4.src_addr 32 exact, udp.src_port 16 exact); actions track(epoch 4, next_seq 8, seen 128, last_notice_ns 64)",
        "  meter dta_collector_meters [1]: trTCM, packets",
        "  hash dta_slot_hash_0 [1]: Crc32Poly(0x741b8cd7) (poly 0x741b8cd7, init 0xffffffff, reflected, xorout 0xffffffff), 32 bits of (dta_keywrite.key)",
        "  hash dta_slot_hash_3 [1]: Crc32Poly(0xf4acfb13) (poly 0xf4acfb13, init 0xffffffff, reflected, xorout 0xffffffff), 32 bits of (dta_keywrite.key)",
        "  register dta_qps [6]: cell (next_psn 24, oldest_unacked_psn 24, outstanding 32); index meta.dta_qp",
    ] {
        assert!(s.contains(want), "missing {want:?} in\n{s}");
    }
}

#[test]
fn every_example_prints_a_parser_and_its_resources() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if !name.ends_with(".toml") || name.starts_with("collector") {
            continue;
        }
        let s = resources(&name);
        assert!(s.contains("parser:\n  state start: extract ethernet"), "{name}:\n{s}");
        assert!(s.contains(" resources, "), "{name}:\n{s}");
    }
}
