//! The translator's output checked by an independent implementation: Debian's `python3-scapy`.
//!
//! The standard DTA lab (one collector, every primitive) runs with 1% loss each way between
//! translator and collector, so the capture holds CM, the ACK of the metadata SEND, first
//! transmissions and go-back-N resends. Every frame the translator sent towards the collector
//! goes to a pcap; `tests/scapy/dta_translator_check.py` dissects each with scapy and checks
//! the ICRC (scapy's `compute_icrc`), the IPv4 checksum and lengths, the UDP length, the BTH
//! and the RETH / ImmDt / AtomicETH / DETH fields by opcode. This test then requires that scapy
//! accepted every frame, that its reading of each header equals ours, and that every RDMA
//! operation targets a region the collector announced (its R_Key, inside its bounds).
//!
//! Without scapy the test says it is skipped; `SOFTFABRIC_REQUIRE_SCAPY=1` makes that a failure.

#[path = "dta/lab.rs"]
mod lab;
#[path = "../../wire/tests/support/scapy.rs"]
mod support;

use std::collections::BTreeMap;
use std::fs::File;
use std::process::Command;

use lab::{C0, Loss, REPORTER, standard_lab_with};
use pcap_file::DataLink;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use wire::dta::{DtaRepr, MergeOp, Primitive, Priority, Sequence};
use wire::roce::{Opcode, RoceRepr};

fn seq(seqnum: u8) -> Option<Sequence> {
    Some(Sequence { seqnum, retransmittable: false, priority: Priority::Low, epoch: 0 })
}

/// Reports of every primitive, with and without the immediate flag, Key-Write and
/// Key-Increment at every redundancy 1..=4.
fn send_reports(lab: &mut lab::Lab) {
    for i in 0..400u32 {
        let n = (i % 4) as u8 + 1;
        let imm = i % 7 == 0;
        let data = i.wrapping_mul(2_654_435_761).to_be_bytes();
        let s = seq(i as u8);
        let kw = Primitive::KeyWrite { redundancy: n, key: 1000 + i, data: &data };
        lab.report(REPORTER, C0, &DtaRepr { immediate: imm, seq: s, primitive: kw });
        let ki = Primitive::KeyIncrement { redundancy: n, key: 5000 + i % 50, counter: u64::from(i) + 1 };
        lab.report(REPORTER, C0, &DtaRepr { immediate: imm, seq: s, primitive: ki });
        let ap = Primitive::Append { list_id: i % 4, data: i };
        lab.report(REPORTER, C0, &DtaRepr { immediate: i % 40 == 0, seq: s, primitive: ap });
        if i % 5 == 0 {
            let pc = Primitive::Postcarder { key: i, hop: (i / 5 % 5) as u8 + 1, data: i };
            lab.report(REPORTER, C0, &DtaRepr { immediate: false, seq: s, primitive: pc });
        }
        if i < 32 {
            let counters: Vec<u8> = [i, 2 * i].iter().flat_map(|v| v.to_be_bytes()).collect();
            let sk = Primitive::SketchMerge {
                sketch_id: 9,
                reporter_id: (i % 4) as u16 + 1,
                column: i / 4,
                op: MergeOp::Sum,
                counters: &counters,
            };
            lab.report(REPORTER, C0, &DtaRepr { immediate: false, seq: s, primitive: sk });
        }
        if i % 8 == 0 {
            lab.step();
        }
    }
    lab.run(3000);
}

/// `key=value` fields of one line of the script's output.
fn fields(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace().filter_map(|f| f.split_once('=')).collect()
}

fn num(f: &BTreeMap<&str, &str>, k: &str) -> u64 {
    let v = f.get(k).unwrap_or_else(|| panic!("scapy printed no {k}: {f:?}"));
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn scapy_accepts_every_frame_the_translator_sends() {
    let Some(py) = support::scapy() else { return };
    let mut lab = standard_lab_with("", |lab| {
        lab.capture = true;
        lab.to_collector = Loss::new(0x5eed, 10);
        lab.from_collector = Loss::new(0xfeed, 10);
    });
    send_reports(&mut lab);
    let frames = std::mem::take(&mut lab.captured);
    assert!(lab.to_collector.lost > 0, "the run lost nothing, so no resends were checked");

    let dir = std::env::temp_dir().join(format!("softfabric-dta-scapy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("translator.pcap");
    let header = PcapHeader { datalink: DataLink::ETHERNET, ..PcapHeader::default() };
    let mut w = PcapWriter::with_header(File::create(&pcap).unwrap(), header).unwrap();
    // Three spoiled copies of a WRITE at the end: the checker must reject exactly those.
    let w0 = frames.iter().position(|f| lab::udp_of(f).is_some_and(|u| f[u.3] == 0x0a)).unwrap();
    let (_, _, _, l4, l3) = lab::udp_of(&frames[w0]).unwrap();
    let mut spoiled = vec![frames[w0].clone(); 3];
    spoiled[0][l4 + 12 + 16] ^= 1; // a payload bit: the ICRC no longer matches
    spoiled[1][l3 + 3] += 4; // IP total length beyond the frame
    spoiled[2][l4 + 12 + 15] ^= 4; // RETH DMA length
    for (i, f) in frames.iter().chain(&spoiled).enumerate() {
        let ts = std::time::Duration::from_micros(i as u64);
        w.write_packet(&PcapPacket::new(ts, f.len() as u32, f)).unwrap();
    }
    drop(w);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scapy/dta_translator_check.py");
    let out = Command::new(&py).arg(script).arg(&pcap).output().expect("run scapy");
    std::fs::remove_dir_all(&dir).ok();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "scapy failed: {}", String::from_utf8_lossy(&out.stderr));
    let bad: Vec<&str> = stdout.lines().filter(|l| l.contains(" bad ") && l.starts_with("frame")).collect();
    let n = frames.len();
    let spoiled_bad: Vec<String> = (n..n + 3).map(|i| format!("frame {i} bad ")).collect();
    let real_bad: Vec<&&str> = bad.iter().filter(|l| !spoiled_bad.iter().any(|s| l.starts_with(s))).collect();
    assert!(real_bad.is_empty(), "scapy rejects {} of {n} frames:\n{real_bad:?}", real_bad.len());
    assert_eq!(bad.len(), 3, "the checker accepted a spoiled frame:\n{stdout}");
    assert!(stdout.contains(&format!("checked {} bad 3", n + 3)), "unexpected output:\n{stdout}");

    // scapy's reading of every frame equals ours, and every operation targets a region the
    // collector announced.
    let regions: Vec<(u32, u64, usize)> = lab.collectors[0]
        .regions
        .iter()
        .map(|&(port, rkey, va)| (rkey, va, lab.collectors[0].region(port).len()))
        .collect();
    let mut by_opcode: BTreeMap<u8, usize> = BTreeMap::new();
    let mut psns_seen = std::collections::HashSet::new();
    let mut resent = 0;
    for line in stdout.lines().filter(|l| l.starts_with("frame") && l.contains(" ok ")) {
        let i: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let f = fields(line);
        let frame = &frames[i];
        let (_, _, _, l4, l3) = lab::udp_of(frame).unwrap();
        let total = usize::from(u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]));
        let ours = RoceRepr::parse(&frame[l4..l3 + total]).unwrap_or_else(|e| panic!("frame {i}: {e}"));
        let op = num(&f, "op") as u8;
        assert_eq!(Opcode(op), ours.bth.opcode, "frame {i}");
        assert_eq!(num(&f, "dqpn") as u32, ours.bth.dest_qp, "frame {i}");
        assert_eq!(num(&f, "psn") as u32, ours.bth.psn, "frame {i}");
        assert_eq!(num(&f, "ackreq") == 1, ours.bth.ack_req, "frame {i}");
        assert_eq!(f["payload"], hex(ours.payload), "frame {i}");
        *by_opcode.entry(op).or_default() += 1;
        let (va, rkey, len) = match op {
            0x0a | 0x0b => {
                let reth = ours.ext.reth.unwrap();
                assert_eq!((num(&f, "va"), num(&f, "rkey") as u32), (reth.va, reth.rkey), "frame {i}");
                assert_eq!(num(&f, "len") as u32, reth.dma_len, "frame {i}");
                if op == 0x0b {
                    assert_eq!(num(&f, "imm") as u32, ours.ext.immdt.unwrap().imm, "frame {i}");
                }
                (reth.va, reth.rkey, reth.dma_len as usize)
            }
            0x14 => {
                let a = ours.ext.atomic_eth.unwrap();
                assert_eq!((num(&f, "va"), num(&f, "rkey") as u32), (a.va, a.rkey), "frame {i}");
                assert_eq!(num(&f, "add"), a.swap_add, "frame {i}");
                (a.va, a.rkey, 8)
            }
            _ => continue,
        };
        let &(_, base, size) = regions
            .iter()
            .find(|r| r.0 == rkey)
            .unwrap_or_else(|| panic!("frame {i}: R_Key {rkey:#x} is none the collector announced"));
        assert!(
            va >= base && va - base + len as u64 <= size as u64,
            "frame {i}: {len} bytes at {va:#x} outside the region {base:#x}+{size}"
        );
        if !psns_seen.insert((ours.bth.dest_qp, ours.bth.psn)) {
            resent += 1;
        }
    }
    for (op, what) in [
        (0x0a, "RDMA WRITE Only"),
        (0x0b, "RDMA WRITE Only with Immediate"),
        (0x14, "FETCH_ADD"),
        (0x11, "ACK of the metadata SEND"),
        (0x64, "CM MAD"),
    ] {
        assert!(by_opcode.get(&op).copied().unwrap_or(0) > 0, "no {what} in the capture: {by_opcode:?}");
    }
    assert!(resent > 0, "no retransmission was captured");
    eprintln!("scapy checked {} frames {by_opcode:?}, {resent} resent", frames.len());
}
