use std::path::Path;

use wire::EthernetRepr;
use wire::arp::OP_REPLY;
use wire::ipv4::Ipv4Repr;
use wire::udp::UdpRepr;

use super::*;
use crate::buf::{HeapPool, PktBuf, Pool};
use crate::programs::build_switch;
use crate::switch::Switch;

const CFG: &str = r#"
program = "l2l3"
[[port]]
name = "p0"
backend = "ring"
mac = "02:00:00:00:00:10"
speed = "10G"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "p1"
backend = "ring"
mac = "02:00:00:00:00:11"
speed = "10G"
ipv4 = ["10.0.2.1/24"]
[[port]]
name = "p2"
backend = "ring"
mac = "02:00:00:00:00:12"
speed = "10G"
ipv4 = ["10.0.3.1/24"]
[l2l3]
neighbor = [{ ip = "10.0.2.2", mac = "02:00:00:00:02:02", port = "p1" },
            { ip = "10.0.3.2", mac = "02:00:00:00:03:02", port = "p2" }]
route = [{ prefix = "192.168.0.0/16", via = ["10.0.2.2", "10.0.3.2"] },
         { prefix = "172.16.0.0/12", via = ["10.0.2.2"] }]
"#;

const HOST_A: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 1, 2]);
const P0: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x10]);

type Sw = Switch<L2l3, PktBuf>;

fn setup(text: &str) -> (Sw, HeapPool) {
    let cfg = Config::parse(Path::new("test.toml"), text).unwrap();
    (build_switch(&cfg).unwrap(), HeapPool::new(1024, 2048))
}

fn udp_frame(
    src_mac: EthernetAddress,
    dst_mac: EthernetAddress,
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    sport: u16,
) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + 18];
    EthernetRepr { src_addr: src_mac, dst_addr: dst_mac, vlan: None, ethertype: EtherType::IPV4 }
        .emit(&mut f)
        .unwrap();
    Ipv4Repr {
        src_addr: src.into(),
        dst_addr: dst.into(),
        protocol: 17,
        payload_len: 26,
        ttl,
        dscp: 46,
        ecn: 0,
        ident: 7,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut f[14..])
    .unwrap();
    UdpRepr { src_port: sport, dst_port: 9, payload_len: 18 }.emit(&mut f[34..]).unwrap();
    f
}

/// Run one frame in on `port` and collect what every port sends.
fn run(sw: &mut Sw, pool: &mut HeapPool, port: u16, frame: &[u8], now: u64) -> Vec<(u16, Vec<u8>)> {
    let mut b = pool.alloc().unwrap();
    assert!(b.set(frame));
    sw.receive(now, port, b, pool);
    let mut out = Vec::new();
    for p in 0..sw.ports() as u16 {
        let mut v = Vec::new();
        sw.transmit(now, p, &mut v, 64, pool);
        for f in v {
            out.push((p, f.data().to_vec()));
            pool.free(f);
        }
    }
    out
}

/// An ARP reply from `(mac, ip)` to `(mac, ip)`, in a 60-byte frame.
fn arp_reply(from: (EthernetAddress, Ipv4Addr), to: (EthernetAddress, Ipv4Addr)) -> Vec<u8> {
    let mut reply = vec![0u8; 60];
    EthernetRepr { src_addr: from.0, dst_addr: to.0, vlan: None, ethertype: EtherType::ARP }
        .emit(&mut reply)
        .unwrap();
    ArpRepr { op: OP_REPLY, sender_mac: from.0, sender_ip: from.1, target_mac: to.0, target_ip: to.1 }
        .emit(&mut reply[14..])
        .unwrap();
    reply
}

fn drops(sw: &Sw, name: &str) -> u64 {
    let i = sw.drop_reasons().names().iter().position(|n| *n == name).unwrap();
    sw.counters().drops[i]
}

/// Neighbour 10.0.2.2, the next hop of `f` (sent in on p0), gets a new MAC; is
/// removed, so that `f`'s next packet asks for it by ARP on the connected port and is dropped;
/// and is learned again from its ARP reply, `f` routed to the MAC it announced. Each step is
/// checked on `f`'s next packet (times 0–2), from a switch with no `no_neighbor` drop yet.
/// Returns the learned MAC.
fn neighbour_moves_goes_and_is_learned_again(sw: &mut Sw, pool: &mut HeapPool, f: &[u8]) -> EthernetAddress {
    let dst = |out: &[(u16, Vec<u8>)]| (out[0].0, EthernetRepr::parse(&out[0].1).unwrap().dst_addr);
    let moved = EthernetAddress([2, 0, 0, 0, 9, 9]);
    sw.control(Command::NeighborAdd(Ipv4Addr::new(10, 0, 2, 2), moved, 1), 0).unwrap();
    assert_eq!(dst(&run(sw, pool, 0, f, 0)), (1, moved));
    sw.control(Command::NeighborDel(Ipv4Addr::new(10, 0, 2, 2)), 0).unwrap();
    let out = run(sw, pool, 0, f, 0);
    assert_eq!(drops(sw, "no_neighbor"), 1);
    assert_eq!(ArpRepr::parse(&out[0].1[14..]).unwrap().target_ip, Ipv4Addr::new(10, 0, 2, 2));
    let learned = EthernetAddress([2, 0, 0, 0, 2, 7]);
    let reply = arp_reply(
        (learned, Ipv4Addr::new(10, 0, 2, 2)),
        (EthernetAddress([2, 0, 0, 0, 0, 0x11]), Ipv4Addr::new(10, 0, 2, 1)),
    );
    run(sw, pool, 1, &reply, 1);
    assert_eq!(dst(&run(sw, pool, 0, f, 2)), (1, learned));
    learned
}

#[test]
fn routes_with_ttl_and_checksum_update() {
    let (mut sw, mut pool) = setup(CFG);
    let f = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 2, 2], 64, 1000);
    let out = run(&mut sw, &mut pool, 0, &f, 0);
    assert_eq!(out.len(), 1);
    let (port, g) = &out[0];
    assert_eq!(*port, 1);
    let eth = EthernetRepr::parse(g).unwrap();
    assert_eq!(eth.dst_addr, EthernetAddress([2, 0, 0, 0, 2, 2]));
    assert_eq!(eth.src_addr, EthernetAddress([2, 0, 0, 0, 0, 0x11]));
    let ip = Ipv4Packet::new_checked(&g[14..]).unwrap();
    assert_eq!(ip.ttl(), 63);
    assert!(ip.verify_checksum());
    // Only the TTL, the checksum and the MACs changed.
    let mut expect = f.clone();
    expect[0..12].copy_from_slice(&g[0..12]);
    expect[22] = 63;
    expect[24..26].copy_from_slice(&g[24..26]);
    assert_eq!(*g, expect);
    // DSCP 46 (EF) → queue 5.
    assert_eq!(sw.tm().stats().enqueued, 1);
}

#[test]
fn drop_reasons() {
    let (mut sw, mut pool) = setup(CFG);
    assert!(
        run(&mut sw, &mut pool, 0, &udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 2, 2], 1, 1), 0).is_empty()
    );
    assert_eq!(drops(&sw, "ttl_expired"), 1);
    assert!(
        run(&mut sw, &mut pool, 0, &udp_frame(HOST_A, P0, [10, 0, 1, 2], [8, 8, 8, 8], 64, 1), 0).is_empty()
    );
    assert_eq!(drops(&sw, "no_route"), 1);
    let mut bad = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 2, 2], 64, 1);
    bad[24] ^= 0xff;
    assert!(run(&mut sw, &mut pool, 0, &bad, 0).is_empty());
    assert_eq!(drops(&sw, "bad_checksum"), 1);
    let mut short = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 2, 2], 64, 1);
    short[16] = 0xff; // total length past the frame
    assert!(run(&mut sw, &mut pool, 0, &short, 0).is_empty());
    assert!(run(&mut sw, &mut pool, 0, &[0u8; 10], 0).is_empty());
    assert_eq!(drops(&sw, "malformed"), 2);
    assert!(
        run(&mut sw, &mut pool, 0, &udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 3, 1], 64, 1), 0).is_empty()
    );
    assert_eq!(drops(&sw, "to_switch"), 1);
}

#[test]
fn answers_arp_for_its_own_address() {
    let (mut sw, mut pool) = setup(CFG);
    let mut f = vec![0u8; 60];
    arp::emit_request(&mut f, HOST_A, Ipv4Addr::new(10, 0, 1, 2), Ipv4Addr::new(10, 0, 1, 1)).unwrap();
    let out = run(&mut sw, &mut pool, 0, &f, 0);
    assert_eq!(out.len(), 1);
    let (port, r) = &out[0];
    assert_eq!(*port, 0);
    let eth = EthernetRepr::parse(r).unwrap();
    assert_eq!((eth.src_addr, eth.dst_addr), (P0, HOST_A));
    let a = ArpRepr::parse(&r[14..]).unwrap();
    assert_eq!(a.op, OP_REPLY);
    assert_eq!((a.sender_mac, a.sender_ip), (P0, Ipv4Addr::new(10, 0, 1, 1)));
    assert_eq!((a.target_mac, a.target_ip), (HOST_A, Ipv4Addr::new(10, 0, 1, 2)));
    // The requester was learned as a neighbor: the switch can route back to it.
    let back = udp_frame(
        EthernetAddress([2, 0, 0, 0, 2, 2]),
        EthernetAddress([2, 0, 0, 0, 0, 0x11]),
        [10, 0, 2, 2],
        [10, 0, 1, 2],
        9,
        2,
    );
    let out = run(&mut sw, &mut pool, 1, &back, 0);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 0);
    assert_eq!(EthernetRepr::parse(&out[0].1).unwrap().dst_addr, HOST_A);
    // A request for an address that is not the switch's is bridged (flooded), not answered.
    let mut other = f.clone();
    other[14 + 24..14 + 28].copy_from_slice(&[10, 0, 1, 99]);
    let out = run(&mut sw, &mut pool, 0, &other, 0);
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn unresolved_next_hop_sends_arp_then_routes_once_resolved() {
    let (mut sw, mut pool) = setup(CFG);
    let f = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 3, 9], 64, 1);
    let out = run(&mut sw, &mut pool, 0, &f, 0);
    assert_eq!(drops(&sw, "no_neighbor"), 1);
    assert_eq!(out.len(), 1);
    let (port, req) = &out[0];
    assert_eq!(*port, 2);
    let a = ArpRepr::parse(&req[14..]).unwrap();
    assert_eq!(
        (a.op, a.sender_ip, a.target_ip),
        (arp::OP_REQUEST, Ipv4Addr::new(10, 0, 3, 1), Ipv4Addr::new(10, 0, 3, 9))
    );
    // Rate limited: no second request within 100 ms.
    assert!(run(&mut sw, &mut pool, 0, &f, 50_000_000).is_empty());
    // The host answers; the next packet is routed to it.
    let host = EthernetAddress([2, 0, 0, 0, 3, 9]);
    let reply = arp_reply((host, Ipv4Addr::new(10, 0, 3, 9)), (a.sender_mac, a.sender_ip));
    assert!(run(&mut sw, &mut pool, 2, &reply, 60_000_000).is_empty());
    assert_eq!(drops(&sw, "arp_to_switch"), 1);
    let out = run(&mut sw, &mut pool, 0, &f, 70_000_000);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, EthernetRepr::parse(&out[0].1).unwrap().dst_addr), (2, host));
}

#[test]
fn ecmp_spreads_flows_and_keeps_each_on_one_path() {
    let (mut sw, mut pool) = setup(CFG);
    let mut per_port = [0usize; 3];
    for sport in 0..400u16 {
        let f = udp_frame(HOST_A, P0, [10, 0, 1, 2], [192, 168, 7, 7], 64, 1000 + sport);
        let first = run(&mut sw, &mut pool, 0, &f, 0);
        let again = run(&mut sw, &mut pool, 0, &f, 0);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].0, again[0].0, "flow {sport} stays on one path");
        per_port[usize::from(first[0].0)] += 1;
    }
    assert_eq!(per_port[0], 0);
    assert!(per_port[1] > 150 && per_port[2] > 150, "{per_port:?}");
    // A single-member group always uses it.
    let out = run(&mut sw, &mut pool, 0, &udp_frame(HOST_A, P0, [10, 0, 1, 2], [172, 16, 1, 1], 64, 5), 0);
    assert_eq!(out[0].0, 1);
}

#[test]
fn bridges_floods_learns_and_ages() {
    let (mut sw, mut pool) = setup(CFG);
    let b = EthernetAddress([2, 0, 0, 0, 0xb, 0xb]);
    // Unknown destination: flooded to the other ports.
    let f = udp_frame(HOST_A, b, [1, 1, 1, 1], [2, 2, 2, 2], 64, 1);
    let ports: Vec<u16> = run(&mut sw, &mut pool, 0, &f, 0).iter().map(|o| o.0).collect();
    assert_eq!(ports, [1, 2]);
    // B talks from port 2: learned; A was learned on port 0.
    let g = udp_frame(b, HOST_A, [2, 2, 2, 2], [1, 1, 1, 1], 64, 1);
    assert_eq!(run(&mut sw, &mut pool, 2, &g, 1).iter().map(|o| o.0).collect::<Vec<_>>(), [0]);
    assert_eq!(run(&mut sw, &mut pool, 0, &f, 2).iter().map(|o| o.0).collect::<Vec<_>>(), [2]);
    // Frames for a host on the port they came from are filtered.
    assert!(run(&mut sw, &mut pool, 2, &f, 3).is_empty());
    assert_eq!(drops(&sw, "same_port"), 1);
    // After the aging time, B is forgotten and flooding resumes.
    let later = (DEFAULT_MAC_AGING_S + 2) * 1_000_000_000;
    sw.tick(later, &mut pool);
    assert_eq!(run(&mut sw, &mut pool, 0, &f, later).len(), 2);
}

#[test]
fn an_all_zero_source_is_forwarded_but_never_learned() {
    let (mut sw, mut pool) = setup(CFG);
    let zero = EthernetAddress([0; 6]);
    let f = udp_frame(zero, zero, [1, 1, 1, 1], [2, 2, 2, 2], 64, 1);
    // Flooded from every port, whichever port the zero address was last seen on.
    for (t, port) in [(0u64, 0u16), (1, 1), (2, 0), (3, 2)] {
        let mut out: Vec<u16> = run(&mut sw, &mut pool, port, &f, t).iter().map(|o| o.0).collect();
        out.sort_unstable();
        let want: Vec<u16> = (0..3).filter(|&p| p != port).collect();
        assert_eq!(out, want, "from port {port}");
    }
    assert_eq!(drops(&sw, "same_port"), 0);
}

#[test]
fn a_host_that_moves_is_relearned_at_once() {
    let (mut sw, mut pool) = setup(CFG);
    let b = EthernetAddress([2, 0, 0, 0, 0xb, 0xb]);
    let to_b = udp_frame(HOST_A, b, [1, 1, 1, 1], [2, 2, 2, 2], 64, 1);
    let from_b = udp_frame(b, HOST_A, [2, 2, 2, 2], [1, 1, 1, 1], 64, 1);
    run(&mut sw, &mut pool, 0, &to_b, 0);
    for (t, port) in [(1u64, 2u16), (2, 1), (3, 2)] {
        // B appears on `port`, a few nanoseconds after being seen elsewhere.
        run(&mut sw, &mut pool, port, &from_b, t);
        let out = run(&mut sw, &mut pool, 0, &to_b, t);
        assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), [port], "at {t}");
    }
}

/// A route via a group follows its next hop's neighbour entry as it changes — replaced by a
/// command, learned from ARP, removed — (the resolved adjacency is rebuilt each time), and a
/// group added later resolves too.
#[test]
fn a_group_route_follows_its_neighbour_as_it_changes() {
    let (mut sw, mut pool) = setup(CFG);
    let f = udp_frame(HOST_A, P0, [10, 0, 1, 2], [172, 16, 1, 1], 64, 5);
    let dst = |out: &[(u16, Vec<u8>)]| (out[0].0, EthernetRepr::parse(&out[0].1).unwrap().dst_addr);
    assert_eq!(dst(&run(&mut sw, &mut pool, 0, &f, 0)), (1, EthernetAddress([2, 0, 0, 0, 2, 2])));
    neighbour_moves_goes_and_is_learned_again(&mut sw, &mut pool, &f);
    // A group created after the neighbours were known.
    sw.control(Command::RouteVia(Ipv4Addr::new(10, 200, 0, 0), 16, vec![Ipv4Addr::new(10, 0, 3, 2)]), 0)
        .unwrap();
    let g = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 200, 0, 1], 64, 5);
    assert_eq!(dst(&run(&mut sw, &mut pool, 0, &g, 3)), (2, EthernetAddress([2, 0, 0, 0, 3, 2])));
}

/// A connected host's next hop is cached after its first packet (skipping the LPM and the
/// neighbour table), and the cache follows every change: a new MAC, the neighbour
/// removed (ARP, dropped), learned again from its reply, a longer route taking the host
/// elsewhere, and the connected route removed. Two hosts sharing a cache slot (10.0.2.2 and
/// 10.0.3.2: the same low byte) each get their own next hop. Each cached packet still shows
/// the LPM and neighbour lookups it stands for in the tables' traces.
#[test]
fn a_connected_host_follows_its_neighbour_through_the_cache() {
    let (mut sw, mut pool) = setup(CFG);
    let f = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 2, 2], 64, 5);
    let g = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 3, 2], 64, 5);
    let dst = |out: &[(u16, Vec<u8>)]| (out[0].0, EthernetRepr::parse(&out[0].1).unwrap().dst_addr);
    let a = (1, EthernetAddress([2, 0, 0, 0, 2, 2]));
    let b = (2, EthernetAddress([2, 0, 0, 0, 3, 2]));
    for _ in 0..3 {
        assert_eq!(dst(&run(&mut sw, &mut pool, 0, &f, 0)), a);
        assert_eq!(dst(&run(&mut sw, &mut pool, 0, &f, 0)), a);
        assert_eq!(dst(&run(&mut sw, &mut pool, 0, &g, 0)), b);
    }
    let traces = sw.program().take_traces();
    let count = |table: &str, key: u32| {
        traces
            .iter()
            .find(|(t, _)| *t == table)
            .map_or(0, |(_, k)| k.iter().filter(|&&x| x == u128::from(key)).count())
    };
    assert_eq!(count("ipv4_lpm", u32::from_be_bytes([10, 0, 2, 2])), 6, "{traces:?}");
    assert_eq!(count("neighbor", u32::from_be_bytes([10, 0, 2, 2])), 6, "{traces:?}");
    let learned = neighbour_moves_goes_and_is_learned_again(&mut sw, &mut pool, &f);
    // Cached again after it was learned.
    assert_eq!(dst(&run(&mut sw, &mut pool, 0, &f, 2)), (1, learned));
    // The connected route removed (the cached next hop goes with it): no route.
    sw.control(Command::RouteDel(Ipv4Addr::new(10, 0, 2, 0), 24), 0).unwrap();
    assert!(run(&mut sw, &mut pool, 0, &f, 3).is_empty());
    assert_eq!(drops(&sw, "no_route"), 1);
    // Back, cached again; then a /32 via the other neighbour wins over the /24.
    sw.control(Command::RouteConnected(Ipv4Addr::new(10, 0, 2, 0), 24, 1), 0).unwrap();
    assert_eq!(dst(&run(&mut sw, &mut pool, 0, &f, 4)), (1, learned));
    assert_eq!(dst(&run(&mut sw, &mut pool, 0, &f, 4)), (1, learned));
    sw.control(Command::RouteVia(Ipv4Addr::new(10, 0, 2, 2), 32, vec![Ipv4Addr::new(10, 0, 3, 2)]), 0)
        .unwrap();
    assert_eq!(dst(&run(&mut sw, &mut pool, 0, &f, 4)), b);
    assert_eq!(dst(&run(&mut sw, &mut pool, 0, &g, 4)), b);
}

#[test]
fn control_commands() {
    let names = vec!["p0".to_string(), "p1".to_string()];
    assert_eq!(
        L2l3::parse_command("route add 10.9.0.0/16 via 10.0.2.2,10.0.2.3", &names),
        Ok(Command::RouteVia(
            Ipv4Addr::new(10, 9, 0, 0),
            16,
            vec![Ipv4Addr::new(10, 0, 2, 2), Ipv4Addr::new(10, 0, 2, 3)]
        ))
    );
    assert_eq!(
        L2l3::parse_command("mac add 02:00:00:00:00:01 p1", &names),
        Ok(Command::MacAdd(EthernetAddress([2, 0, 0, 0, 0, 1]), 1))
    );
    assert!(
        L2l3::parse_command("mac add 02:00:00:00:00:01 p7", &names)
            .unwrap_err()
            .contains("no port named \"p7\"")
    );
    assert!(
        L2l3::parse_command("route add 10.0.0.0/40 port p0", &names)
            .unwrap_err()
            .contains("prefix length above 32")
    );
    assert!(L2l3::parse_command("flush", &names).unwrap_err().starts_with("unknown command"));
    let (mut sw, mut pool) = setup(CFG);
    sw.control(Command::RouteDel(Ipv4Addr::new(172, 16, 0, 0), 12), 0).unwrap();
    assert!(
        run(&mut sw, &mut pool, 0, &udp_frame(HOST_A, P0, [10, 0, 1, 2], [172, 16, 1, 1], 64, 5), 0)
            .is_empty()
    );
    assert!(
        sw.control(Command::Show, 0).unwrap().contains("neighbor 10.0.2.2 02:00:00:00:02:02 port p1 static")
    );
    // The switch's own addresses are /32 receive entries that no command may take over; a TTL
    // of 1 to them is still "for the switch", not "expired".
    let own = Ipv4Addr::new(10, 0, 3, 1);
    assert!(sw.control(Command::RouteConnected(own, 32, 1), 0).unwrap_err().contains("is a switch address"));
    assert!(sw.control(Command::RouteDel(own, 32), 0).unwrap_err().contains("is a switch address"));
    sw.control(Command::RouteConnected(Ipv4Addr::new(10, 0, 3, 0), 24, 1), 0).unwrap();
    assert!(
        run(&mut sw, &mut pool, 0, &udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 3, 1], 1, 1), 0).is_empty()
    );
    assert_eq!(drops(&sw, "to_switch"), 1);
    assert_eq!(drops(&sw, "ttl_expired"), 0);
}

#[test]
fn config_errors_for_the_program() {
    let cfg =
        Config::parse(Path::new("t.toml"), &CFG.replace("port = \"p2\" }]", "port = \"p9\" }]")).unwrap();
    let e = build_switch::<L2l3, PktBuf>(&cfg).err().unwrap().to_string();
    assert_eq!(e, "t.toml: l2l3.neighbor[1].port: no port named \"p9\"");
    let cfg = Config::parse(Path::new("t.toml"), &CFG.replace("192.168.0.0/16", "192.168.0.0/x")).unwrap();
    let e = build_switch::<L2l3, PktBuf>(&cfg).err().unwrap().to_string();
    assert!(e.starts_with("t.toml: l2l3.route[0].prefix: \"192.168.0.0/x\" is not an IPv4 CIDR"), "{e}");
}

/// A routed UDP frame to the INT port carrying an INT header with `max_hop` slots.
fn int_frame(flags: u8, max_hop: u8) -> Vec<u8> {
    use wire::hpcc_int::IntRepr;
    use wire::stack::UdpFlow;
    let mut int = IntRepr::empty(max_hop);
    int.reflected = flags & wire::hpcc_int::FLAG_REFLECTED != 0;
    int.compact = flags & wire::hpcc_int::FLAG_COMPACT != 0;
    let n = int.buffer_len();
    let mut f = vec![0u8; 42 + n];
    let from = std::net::SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 2), 1);
    let to = std::net::SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 2), wire::udp::port::HPCC_INT);
    UdpFlow::host_udp(HOST_A, P0, from, to).emit_headers(n, &mut f).unwrap();
    f[40] = 0xab; // a checksum the stamp must clear
    int.emit(&mut f[42..]).unwrap();
    f
}

/// With `int_switch_id`, egress records one hop per switch in the next free slot: the switch
/// ID, the egress port, its rate, queue, the dequeue time and transmitted bytes; a full header
/// gets the overflow flag; reflected telemetry and other traffic are left alone.
#[test]
fn int_is_stamped_at_egress() {
    use wire::hpcc_int::{FLAG_REFLECTED, IntRepr};
    let cfg = CFG.replace("[l2l3]\n", "[l2l3]\nint_switch_id = 77\n");
    let (mut sw, mut pool) = setup(&cfg);
    let out = run(&mut sw, &mut pool, 0, &int_frame(0, 2), 5_000_123);
    assert_eq!(out.len(), 1);
    let (port, g) = &out[0];
    assert_eq!(*port, 1);
    assert_eq!(g[40..42], [0, 0], "UDP checksum cleared");
    let int = IntRepr::parse(&g[42..]).unwrap();
    assert_eq!((int.n_hop, int.overflow), (1, false));
    let hop = int.hops[0];
    assert_eq!((hop.switch_id, hop.port_id, hop.rate_bps()), (77, 1, 10_000_000_000));
    assert_eq!(hop.ts, 5_000_123);
    assert_eq!(u64::from(hop.tx_bytes), g.len() as u64, "this packet's bytes, on an idle port");

    // A second pass through the same switch (a two-hop path) takes the next slot; a third overflows.
    // What left, sent back in as if from the next hop's host side: to the switch's MAC, TTL 64.
    let back_in = |g: &[u8]| {
        let mut f = g.to_vec();
        f[0..6].copy_from_slice(&P0.0);
        f[22] = 64;
        Ipv4Packet::new_checked(&mut f[14..]).unwrap().fill_checksum();
        f
    };
    let g2 = run(&mut sw, &mut pool, 0, &back_in(g), 6_000_000).remove(0).1;
    let int2 = IntRepr::parse(&g2[42..]).unwrap();
    assert_eq!(int2.n_hop, 2);
    assert_eq!(int2.hops[1].tx_bytes - int2.hops[0].tx_bytes, g.len() as u32);
    let g3 = run(&mut sw, &mut pool, 0, &back_in(&g2), 7_000_000).remove(0).1;
    let int3 = IntRepr::parse(&g3[42..]).unwrap();
    assert_eq!((int3.n_hop, int3.overflow), (2, true));

    let g = run(&mut sw, &mut pool, 0, &int_frame(FLAG_REFLECTED, 2), 0).remove(0).1;
    assert_eq!(IntRepr::parse(&g[42..]).unwrap().n_hop, 0, "reflected: untouched");
    assert_eq!(g[40], 0xab);
    // Without the key nothing is stamped.
    let (mut plain, mut pool2) = setup(CFG);
    let g = run(&mut plain, &mut pool2, 0, &int_frame(0, 2), 0).remove(0).1;
    assert_eq!(IntRepr::parse(&g[42..]).unwrap().n_hop, 0);
}

/// The fast path against the declarations: every lookup of every table is on the key the
/// declared parser extracts from the same frame (forwarding and routing, tagged and with IPv4
/// options, ECMP over TCP and UDP, ARP), and INT is stamped in the hop slot the declared parser
/// finds.
#[test]
fn lookups_and_offsets_are_the_declared_ones() {
    use crate::model::decl::FieldRef;
    use crate::programs::conformance::{Checked, check};
    let cfg = CFG.replace("[l2l3]\n", "[l2l3]\nint_switch_id = 9\n");
    let (mut sw, mut pool) = setup(&cfg);
    let udp = |dst: [u8; 4], sport: u16| udp_frame(HOST_A, P0, [10, 0, 1, 2], dst, 64, sport);
    let tagged = {
        let f = udp([192, 168, 7, 1], 5);
        let mut t = f[..12].to_vec();
        t.extend_from_slice(&[0x81, 0x00, 0x60, 0x07]);
        t.extend_from_slice(&f[12..]);
        t
    };
    let with_options = {
        let mut f = udp([172, 16, 0, 9], 6);
        // IHL 6: four option bytes (NOPs) between the header and UDP.
        f.splice(34..34, [1, 1, 1, 1]);
        f[14] = 0x46;
        let total = u16::from_be_bytes([f[16], f[17]]) + 4;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        Ipv4Packet::new_checked(&mut f[14..]).unwrap().fill_checksum();
        f
    };
    let tcp = {
        let mut f = udp([192, 168, 9, 9], 77);
        f[23] = 6;
        Ipv4Packet::new_checked(&mut f[14..]).unwrap().fill_checksum();
        f
    };
    let arp_request = {
        let mut f = vec![0u8; 60];
        wire::arp::emit_request(&mut f, HOST_A, Ipv4Addr::new(10, 0, 1, 2), Ipv4Addr::new(10, 0, 1, 1))
            .unwrap();
        f
    };
    let bridged = {
        let mut f = udp([10, 0, 1, 3], 1);
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 1, 3]);
        f
    };
    let frames: Vec<(&str, Vec<u8>)> = vec![
        ("routed", udp([10, 0, 2, 2], 1000)),
        ("ecmp udp", udp([192, 168, 1, 1], 4000)),
        ("ecmp tcp", tcp),
        ("tagged", tagged),
        ("ipv4 options", with_options),
        ("arp", arp_request),
        ("bridged", bridged),
        ("int", int_frame(0, 3)),
    ];
    let mut checked = Checked::default();
    for (i, (what, f)) in frames.iter().enumerate() {
        let out = run(&mut sw, &mut pool, 0, f, 1_000 * i as u64);
        assert!(!out.is_empty(), "{what}: forwarded");
        let p = sw.program();
        let lookups = p.take_traces();
        check(p.resources(), f, &[("ingress_port", 0)], &lookups, &mut checked)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    // Every frame but the ARP request (answered in place) makes header-keyed lookups.
    assert!(checked.exact >= frames.len() - 1, "{checked:?}");
    for t in ["dmac", "ipv4_lpm", "neighbor"] {
        assert!(checked.tables.contains(&t), "{t} never looked up: {checked:?}");
    }

    // The ECMP hash's declared inputs, read by the declared parser, give the member the fast
    // path chose.
    let res = sw.program().resources().clone();
    let crate::model::DeclKind::Hash { inputs, .. } = &res.get("ecmp_hash").unwrap().kind else { panic!() };
    for sport in 0..32u16 {
        let f = udp([192, 168, 1, 1], 4000 + sport);
        let parsed = res.parser().run(&f).unwrap();
        let mut key = Vec::new();
        for i in inputs {
            let v = parsed.get(&f, i).unwrap();
            key.extend_from_slice(&v.to_be_bytes()[8 - usize::from(i.width() / 8)..]);
        }
        let want_port = if sw.program().ecmp.hash(&key) % 2 == 0 { 1 } else { 2 };
        let out = run(&mut sw, &mut pool, 0, &f, 0);
        assert_eq!(out[0].0, want_port, "source port {sport}");
    }

    // INT: the hop written lands in the declared stack's second slot after one stamp.
    let f = int_frame(0, 3);
    let once = run(&mut sw, &mut pool, 0, &f, 0).remove(0).1;
    let mut again = once.clone();
    again[0..6].copy_from_slice(&P0.0);
    again[22] = 64;
    Ipv4Packet::new_checked(&mut again[14..]).unwrap().fill_checksum();
    let twice = run(&mut sw, &mut pool, 0, &again, 0).remove(0).1;
    let parsed = res.parser().run(&twice).unwrap();
    let sw_id = FieldRef::hdr("int_hop", &wire::hpcc_int::field::hop::SWITCH_ID);
    assert_eq!(parsed.get(&twice, &sw_id), Some(9), "the first slot");
    let slot1 = parsed.offset("int_hop").unwrap() + wire::hpcc_int::HOP_LEN;
    assert_eq!(wire::hpcc_int::field::hop::SWITCH_ID.read(&twice[slot1..]), Some(9), "the second slot");
    assert_eq!(parsed.get(&twice, &FieldRef::hdr("int_shim", &wire::hpcc_int::field::shim::N_HOP)), Some(2));

    // A compact header: the declared parser takes the compact branch, and the hop the switch
    // wrote is at the compact stack's first slot, in its 8-byte encoding.
    let f = int_frame(wire::hpcc_int::FLAG_COMPACT, 5);
    let out = run(&mut sw, &mut pool, 0, &f, 0).remove(0).1;
    let parsed = res.parser().run(&out).unwrap();
    assert!(parsed.is_valid("int_hop_compact") && !parsed.is_valid("int_hop"));
    let code = FieldRef::hdr("int_hop_compact", &wire::hpcc_int::field::hop_compact::RATE_CODE);
    let rate = wire::hpcc_int::COMPACT_RATES[parsed.get(&out, &code).unwrap() as usize];
    assert_eq!(u64::from(rate) * wire::hpcc_int::RATE_UNIT_BPS, 10_000_000_000, "the port's 10G");
    let int = wire::hpcc_int::IntRepr::parse(&out[parsed.offset("int_shim").unwrap()..]).unwrap();
    assert_eq!((int.compact, int.n_hop, int.buffer_len()), (true, 1, 44));
}

/// The control socket's commands meet the rules a configuration file meets: a contradiction is
/// refused with its reason and the tables stay exactly as they were.
#[test]
fn contradictory_commands_are_refused_and_change_nothing() {
    use crate::switch::DynSwitch;
    let (mut sw, _) = setup(CFG);
    let ports: Vec<String> = ["p0", "p1", "p2"].map(String::from).to_vec();
    let before = DynSwitch::command(&mut sw, "show", &ports, 0).unwrap();
    for (line, want) in [
        ("route add 10.9.9.1/16 via 10.0.2.2", "host bits"),
        ("route add 10.9.0.0/16 via 10.0.9.9", "no connected subnet"),
        ("route add 10.9.0.0/16 via 10.0.2.1", "switch's own address"),
        ("route add 10.9.0.0/16 via 10.0.2.255", "broadcast"),
        ("route add 10.9.0.0/16 via 10.0.2.2,10.0.2.2", "twice"),
        ("route add 10.9.0.1/16 port p1", "host bits"),
        ("neighbor add 10.0.2.9 02:00:00:00:09:09 p2", "p1's subnet"),
        ("neighbor add 10.0.9.9 02:00:00:00:09:09 p1", "no subnet"),
        ("neighbor add 10.0.2.9 ff:ff:ff:ff:ff:ff p1", "not a station's MAC"),
        ("neighbor add 10.0.2.1 02:00:00:00:09:09 p1", "switch's own address"),
        ("mac add 01:00:5e:00:00:01 p1", "not a station's MAC"),
    ] {
        let e = DynSwitch::command(&mut sw, line, &ports, 0).expect_err(line);
        assert!(e.contains(want), "{line}: {e}");
        assert_eq!(
            DynSwitch::command(&mut sw, "show", &ports, 0).unwrap(),
            before,
            "{line} changed the tables"
        );
    }
    // What is consistent is taken.
    DynSwitch::command(&mut sw, "route add 10.9.0.0/16 via 10.0.2.2,10.0.3.2", &ports, 0).unwrap();
    DynSwitch::command(&mut sw, "neighbor add 10.0.2.9 02:00:00:00:09:09 p1", &ports, 0).unwrap();
}

/// The fixed-offset path for a connected host ([`L2l3::route_connected_host`]) does exactly
/// what the general path does, on arbitrary edits of a routed frame (addresses, EtherType,
/// version and IHL, TTL, length, checksum, ...) and truncations: the same output frames on the
/// same ports, the same drops, the same tables' traces and learned MACs. One switch takes the
/// fast path, the other is held to the general one; the unedited frame is taken by the fast
/// path (counted), so the comparison covers both outcomes.
mod fast_path {
    use proptest::prelude::*;

    use super::*;

    fn pair() -> [(Sw, HeapPool); 2] {
        let mut s = [setup(CFG), setup(CFG)];
        s[1].0.program_mut().fast_off = true;
        // Both learn the host's next hop (the first packet fills the cache).
        let f = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 2, 2], 64, 5);
        for (sw, pool) in &mut s {
            run(sw, pool, 0, &f, 0);
            sw.program().take_traces();
        }
        s
    }

    fn outcome(sw: &mut Sw, pool: &mut HeapPool, port: u16, f: &[u8]) -> impl PartialEq + std::fmt::Debug {
        // The metadata ingress sets (the queue is not visible in the output), then the
        // whole switch on the same frame.
        let mut b = pool.alloc().unwrap();
        assert!(b.set(f));
        let md = sw.ingress_only(1, port, &mut b, pool);
        let rewritten = b.data().to_vec();
        pool.free(b);
        let out = run(sw, pool, port, f, 1);
        let mut macs: Vec<_> = sw.program().macs.iter().map(|(k, e)| (*k, e.port)).collect();
        macs.sort();
        (md, rewritten, out, sw.counters().drops.clone(), sw.program().take_traces(), macs)
    }

    #[test]
    fn the_unedited_frame_takes_the_fast_path() {
        let [(mut a, mut pa), (mut b, mut pb)] = pair();
        let f = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 2, 2], 64, 5);
        assert_eq!(outcome(&mut a, &mut pa, 0, &f), outcome(&mut b, &mut pb, 0, &f));
        assert_eq!(a.program().fast_taken, 2);
        assert_eq!(b.program().fast_taken, 0);
    }

    proptest! {
        #[test]
        fn fast_and_general_paths_agree(
            edits in proptest::collection::vec((0usize..60, any::<u8>()), 0..4),
            len in prop_oneof![3 => Just(60usize), 1 => 0usize..60],
            ttl in 0u8..4,
            port in 0u16..3,
        ) {
            let [(mut a, mut pa), (mut b, mut pb)] = pair();
            let mut f = udp_frame(HOST_A, P0, [10, 0, 1, 2], [10, 0, 2, 2], 64, 5);
            if ttl > 0 {
                Ipv4Packet::new_unchecked(&mut f[14..]).set_ttl(ttl);
                Ipv4Packet::new_unchecked(&mut f[14..]).fill_checksum();
            }
            for (i, v) in edits {
                f[i] = v;
            }
            f.truncate(len.max(1));
            prop_assert_eq!(outcome(&mut a, &mut pa, port, &f), outcome(&mut b, &mut pb, port, &f));
        }
    }
}
