//! The reporter's fast path against its declarations.

use std::net::SocketAddrV4;
use std::path::Path;

use wire::EthernetAddress;
use wire::dta::{DtaRepr, Format, Primitive};
use wire::stack::UdpFlow;

use super::*;
use crate::buf::{HeapPool, PktBuf, Pool};
use crate::model::DeclKind;
use crate::programs::build_switch;
use crate::programs::conformance::{Checked, check_frames};
use crate::switch::Switch;

const CFG: &str = r#"
program = "dta_reporter"
[[port]]
name = "r0"
backend = "ring"
speed = "100G"
mac = "02:7e:00:00:00:01"
ipv4 = ["10.0.2.1/24"]
[[port]]
name = "r1"
backend = "ring"
speed = "100G"
mac = "02:7e:00:00:00:02"
ipv4 = ["10.0.1.2/24"]
[l2l3]
route = [{ prefix = "10.0.0.0/24", via = ["10.0.1.1"] }]
neighbor = [{ ip = "10.0.1.1", mac = "02:5f:00:00:00:01", port = "r1" },
            { ip = "10.0.1.9", mac = "02:0b:00:00:00:01", port = "r1" }]
[dta_reporter]
collectors = ["10.0.0.51"]
switch_id = 7
"#;

/// Flows forwarded through the reporter: every table lookup is on its declared key, and each
/// report's flow key is the declared hash of the declared 5-tuple inputs, read by the declared
/// parser from the packet that caused it.
#[test]
fn flow_keys_are_the_declared_hash_of_the_declared_fields() {
    let cfg = Config::parse(Path::new("t.toml"), CFG).unwrap();
    let mut sw: Switch<DtaReporter, PktBuf> = build_switch(&cfg).unwrap();
    let mut pool = HeapPool::new(256, 2048);
    let res = sw.program().resources().clone();
    let DeclKind::Hash { algo, inputs, .. } = &res.get("dta_reporter_flow_key").unwrap().kind else {
        panic!()
    };
    let mut checked = Checked::default();
    for sport in 0..16u16 {
        let flow = UdpFlow::host_udp(
            EthernetAddress([2, 0xa, 0, 0, 0, 1]),
            EthernetAddress([2, 0x7e, 0, 0, 0, 1]),
            SocketAddrV4::new([10, 0, 2, 9].into(), 1000 + sport),
            SocketAddrV4::new([10, 0, 1, 9].into(), 80),
        );
        let mut f = vec![0u8; flow.headers_len() + 10];
        flow.emit_headers(10, &mut f).unwrap();
        let mut b = pool.alloc().unwrap();
        assert!(b.set(&f));
        sw.receive(u64::from(sport), 0, b, &mut pool);
        let mut out = Vec::new();
        sw.transmit(0, 1, &mut out, 32, &mut pool);
        // The flow's own packet, then its report to the collector, routed as a packet of its own.
        assert_eq!(out.len(), 2, "source port {sport}");
        let traces = sw.program().l2l3.take_traces();
        check_frames(&res, &[&f, out[1].data()], &[("ingress_port", 0)], &traces, &mut checked).unwrap();
        let parsed = res.parser().run(&f).unwrap();
        let mut key_bytes = Vec::new();
        for i in inputs {
            let v = parsed.get(&f, i).unwrap();
            key_bytes.extend_from_slice(&v.to_be_bytes()[8 - usize::from(i.width() / 8)..]);
        }
        let want = flow_key(algo.hash(&key_bytes));
        let report = out[1].data();
        let l4 = res.parser().run(report).unwrap().payload;
        let r = DtaRepr::parse(&report[l4..], Format::default()).unwrap();
        let Primitive::KeyWrite { key, data, .. } = r.primitive else { panic!() };
        assert_eq!(key, want, "source port {sport}");
        assert_eq!(data, [0, 7, 0, 1], "switch 7, port r1");
        for p in out {
            pool.free(p);
        }
    }
    assert!(checked.tables.contains(&"ipv4_lpm") && checked.exact >= 16, "{checked:?}");
}
