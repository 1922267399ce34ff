//! The translator's fast path against its declarations.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

use wire::dta::{DtaRepr, MergeOp, Primitive, Priority, Sequence};
use wire::stack::UdpFlow;

use super::*;
use crate::buf::{HeapPool, PktBuf, Pool};
use crate::programs::build_switch;
use crate::programs::conformance::{Checked, check};
use crate::switch::Switch;

const CFG: &str = r#"
program = "dta_translator"
[[port]]
name = "p0"
backend = "ring"
mac = "02:5f:00:00:00:01"
speed = "100G"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "p1"
backend = "ring"
mac = "02:5f:00:00:00:02"
speed = "100G"
ipv4 = ["10.0.0.1/24"]
[l2l3]
neighbor = [{ ip = "10.0.0.51", mac = "02:00:00:00:00:51", port = "p1" }]
[dta]
[[dta.collector]]
name = "c0"
ip = "10.0.0.51"
keywrite = 1337
append = [{ list = 7, port = 1338 }, { list = 5000, port = 1340 }]
sketch = [{ id = 3, port = 1341, rows = 2, columns = 64, reporters = [1] }]
"#;

const REPORTER: EthernetAddress = EthernetAddress([2, 0, 0, 0, 1, 2]);
const P0: EthernetAddress = EthernetAddress([0x02, 0x5f, 0, 0, 0, 1]);

/// A report frame from 10.0.1.2 to `dst`, UDP port `port`.
fn report(dst: [u8; 4], port: u16, r: &DtaRepr<'_>) -> Vec<u8> {
    let flow = UdpFlow::host_udp(
        REPORTER,
        P0,
        SocketAddrV4::new(Ipv4Addr::new(10, 0, 1, 2), 40041),
        SocketAddrV4::new(dst.into(), port),
    );
    let n = r.buffer_len();
    let mut f = vec![0u8; flow.headers_len() + n];
    flow.emit_headers(n, &mut f).unwrap();
    r.emit(&mut f[flow.headers_len()..]).unwrap();
    f
}

/// Low priority: with the collector not connected each report is dropped (`dta_store_down`)
/// after its lookups, where a high-priority one would wait behind the first parked one.
fn seq(n: u8) -> Option<Sequence> {
    Some(Sequence { seqnum: n, retransmittable: true, priority: Priority::Low, epoch: 0 })
}

/// Reports and other traffic through a translator whose collector is not connected: every
/// lookup is on its declared key; the frames the fast path takes as reports (counted under a
/// `dta_` reason) are exactly those the declared parser takes to a DTA primitive.
#[test]
fn lookups_and_offsets_are_the_declared_ones() {
    let cfg = Config::parse(Path::new("t.toml"), CFG).unwrap();
    let mut sw: Switch<DtaTranslator, PktBuf> = build_switch(&cfg).unwrap();
    let mut pool = HeapPool::new(256, 2048);
    let counters = [0u8; 8];
    let col = [10, 0, 0, 51];
    let frames: Vec<(&str, Vec<u8>, bool)> = vec![
        (
            "append, a listed ID past the direct table",
            report(
                col,
                40040,
                &DtaRepr {
                    immediate: false,
                    seq: seq(0),
                    primitive: Primitive::Append { list_id: 5000, data: 1 },
                },
            ),
            true,
        ),
        (
            "append, an unknown list",
            report(
                col,
                40040,
                &DtaRepr {
                    immediate: false,
                    seq: seq(1),
                    primitive: Primitive::Append { list_id: 99_999, data: 1 },
                },
            ),
            true,
        ),
        (
            "sketch",
            report(
                col,
                40040,
                &DtaRepr {
                    immediate: false,
                    seq: seq(2),
                    primitive: Primitive::SketchMerge {
                        sketch_id: 3,
                        reporter_id: 1,
                        column: 0,
                        op: MergeOp::Sum,
                        counters: &counters,
                    },
                },
            ),
            true,
        ),
        (
            "keywrite",
            report(
                col,
                40040,
                &DtaRepr {
                    immediate: false,
                    seq: seq(3),
                    primitive: Primitive::KeyWrite { redundancy: 2, key: 9, data: &[1, 2, 3, 4] },
                },
            ),
            true,
        ),
        (
            "to the translator itself",
            report(
                [10, 0, 1, 1],
                40040,
                &DtaRepr {
                    immediate: false,
                    seq: seq(4),
                    primitive: Primitive::Append { list_id: 7, data: 1 },
                },
            ),
            true,
        ),
        (
            "another UDP port: forwarded",
            report(
                col,
                40041,
                &DtaRepr {
                    immediate: false,
                    seq: None,
                    primitive: Primitive::Append { list_id: 7, data: 1 },
                },
            ),
            false,
        ),
    ];
    let names = sw.drop_reasons().names().to_vec();
    let dta_drops = |sw: &Switch<DtaTranslator, PktBuf>| -> u64 {
        sw.counters().drops.iter().zip(&names).filter(|(_, n)| n.starts_with("dta_")).map(|(c, _)| c).sum()
    };
    let mut checked = Checked::default();
    for (what, f, is_report) in &frames {
        // Taken: dropped under a DTA reason, consumed, or (high priority, the store not yet
        // connected) parked.
        let before = dta_drops(&sw) + sw.counters().consumed + sw.program().stats().parked;
        let mut b = pool.alloc().unwrap();
        assert!(b.set(f));
        sw.receive(0, 0, b, &mut pool);
        let mut out = Vec::new();
        for p in 0..2 {
            sw.transmit(0, p, &mut out, 32, &mut pool);
        }
        for f in out.drain(..) {
            pool.free(f);
        }
        let p = sw.program();
        let mut lookups = vec![
            ("dta_lists", p.lists.take_trace()),
            ("dta_sketches", p.sketches.take_trace()),
            ("dta_reporter_seq", p.reporters.take_trace()),
        ];
        lookups.extend(p.l2l3.take_traces());
        check(p.resources(), f, &[("ingress_port", 0)], &lookups, &mut checked)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let parsed = p.resources().parser().run(f).unwrap();
        let declared_report =
            ["dta_keywrite", "dta_append", "dta_keyincrement", "dta_postcarder", "dta_sketch_merge"]
                .iter()
                .any(|h| parsed.is_valid(h));
        let taken = dta_drops(&sw) + sw.counters().consumed + sw.program().stats().parked > before;
        assert_eq!((declared_report, taken), (*is_report, *is_report), "{what}");
    }
    // A report cut short: the declared parser rejects it, the fast path drops it as malformed.
    let mut short = report(
        col,
        40040,
        &DtaRepr { immediate: false, seq: seq(5), primitive: Primitive::Append { list_id: 7, data: 1 } },
    );
    short.truncate(short.len() - 2);
    let total = (short.len() - 14) as u16;
    short[16..18].copy_from_slice(&total.to_be_bytes());
    short[38..40].copy_from_slice(&(total - 20).to_be_bytes());
    wire::Ipv4Packet::new_checked(&mut short[14..]).unwrap().fill_checksum();
    assert!(sw.program().resources().parser().run(&short).is_err());
    let malformed = sw.drop_reasons().names().iter().position(|n| *n == "dta_malformed").unwrap();
    let before = sw.counters().drops[malformed];
    let mut b = pool.alloc().unwrap();
    assert!(b.set(&short));
    sw.receive(0, 0, b, &mut pool);
    assert_eq!(sw.counters().drops[malformed], before + 1);
    for t in ["dta_lists", "dta_sketches", "dta_reporter_seq"] {
        assert!(checked.tables.contains(&t), "{t} never looked up: {checked:?}");
    }
}
