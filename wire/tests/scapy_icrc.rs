//! The RoCEv2 ICRC against an independent implementation: Debian's `python3-scapy`
//! (`scapy.contrib.roce.BTH.compute_icrc`).
//!
//! * 300 random packets built by our [`RoceStack`] — WRITE Only with RETH, WRITE Only with
//!   Immediate, FETCH_ADD, ACK, SEND Only, CNP, 50 of each — are handed to scapy, which
//!   recomputes every ICRC (and rebuilds every other byte) and must agree.
//! * 300 random packets built by scapy (random TOS, TTL, ID, flags, FECN/BECN, lengths) must pass
//!   our `icrc::verify` and parse with `RoceRepr`.
//!
//! Without scapy the tests say they are skipped (see `support/scapy.rs`).

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;

use wire::ethernet::EthernetAddress;
use wire::roce::{AethRepr, AtomicEthRepr, BthRepr, ImmDtRepr, Opcode, RethRepr, RoceRepr, Syndrome, icrc};
use wire::stack::{RoceStack, UdpFlow};
use wire::{EthernetRepr, Ipv4Repr, UdpRepr};

#[path = "support/scapy.rs"]
mod support;

use support::scapy;

const PER_KIND: usize = 50;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scapy/roce_icrc.py")
}

/// A small deterministic generator, so a failure names a reproducible packet.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_packets() -> Vec<Vec<u8>> {
    let mut rng = XorShift(0x5eed_cafe_f00d_0001);
    let kinds = [
        Opcode::RC_RDMA_WRITE_ONLY,
        Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
        Opcode::RC_FETCH_ADD,
        Opcode::RC_ACKNOWLEDGE,
        Opcode::RC_SEND_ONLY,
        Opcode::CNP,
    ];
    let mut out = Vec::new();
    for i in 0..kinds.len() * PER_KIND {
        let op = kinds[i % kinds.len()];
        let payload: Vec<u8> = match op {
            Opcode::CNP => vec![0; 16],
            Opcode::RC_FETCH_ADD | Opcode::RC_ACKNOWLEDGE => Vec::new(),
            _ => (0..rng.below(100)).map(|_| rng.next() as u8).collect(),
        };
        let flow = UdpFlow {
            eth_src: EthernetAddress([2, 0, 0, 0, 0, rng.next() as u8]),
            eth_dst: EthernetAddress([2, 0, 0, 0, 1, rng.next() as u8]),
            vlan: None,
            ip_src: Ipv4Addr::from_bits(rng.next() as u32),
            ip_dst: Ipv4Addr::from_bits(rng.next() as u32),
            dscp: rng.below(64) as u8,
            ecn: rng.below(4) as u8,
            ttl: rng.next() as u8,
            ident: rng.next() as u16,
            dont_frag: rng.below(2) == 1,
            src_port: 49152 + rng.below(16384) as u16,
            dst_port: 4791,
        };
        let bth = BthRepr {
            opcode: op,
            solicited: rng.below(2) == 1,
            migreq: rng.below(2) == 1,
            pad_count: 0,
            pkey: 0xffff,
            fecn: rng.below(2) == 1,
            becn: op == Opcode::CNP || rng.below(2) == 1,
            dest_qp: rng.below(1 << 24) as u32,
            ack_req: rng.below(2) == 1,
            psn: rng.below(1 << 24) as u32,
        };
        let mut roce = RoceRepr::new(bth, &payload);
        match op {
            Opcode::RC_RDMA_WRITE_ONLY | Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE => {
                roce.ext.reth =
                    Some(RethRepr { va: rng.next(), rkey: rng.next() as u32, dma_len: payload.len() as u32 });
                if op == Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE {
                    roce.ext.immdt = Some(ImmDtRepr { imm: rng.next() as u32 });
                }
            }
            Opcode::RC_FETCH_ADD => {
                roce.ext.atomic_eth = Some(AtomicEthRepr {
                    va: rng.next() & !7,
                    rkey: rng.next() as u32,
                    swap_add: rng.next(),
                    compare: 0,
                })
            }
            Opcode::RC_ACKNOWLEDGE => {
                roce.ext.aeth = Some(AethRepr {
                    syndrome: Syndrome::from_u8([0x1f, 0x60, 0x62, 0x2e][rng.below(4) as usize]),
                    msn: rng.below(1 << 24) as u32,
                })
            }
            _ => {}
        }
        let stack = RoceStack { flow, roce };
        let mut buf = vec![0u8; stack.buffer_len()];
        let n = stack.emit(&mut buf).expect("build");
        buf.truncate(n);
        out.push(buf);
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex")).collect()
}

#[test]
fn scapy_agrees_with_our_icrc() {
    let Some(py) = scapy() else { return };
    let packets = random_packets();
    assert!(packets.len() >= 200);
    let dir = std::env::temp_dir().join(format!("softfabric-icrc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ours.hex");
    let text: String = packets.iter().map(|p| hex(p) + "\n").collect();
    std::fs::write(&file, text).unwrap();
    let out = Command::new(&py).arg(script()).arg("check").arg(&file).output().expect("run scapy");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "scapy failed: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).ok();
    assert!(!stdout.contains("mismatch"), "scapy disagrees:\n{stdout}");
    assert!(
        stdout.contains(&format!("checked {} bad 0", packets.len())),
        "unexpected scapy output:\n{stdout}"
    );
}

#[test]
fn scapy_built_packets_verify_with_ours() {
    let Some(py) = scapy() else { return };
    let count = 6 * PER_KIND;
    let out = Command::new(&py)
        .arg(script())
        .args(["build", "20261122", &count.to_string()])
        .output()
        .expect("run scapy");
    assert!(out.status.success(), "scapy failed: {}", String::from_utf8_lossy(&out.stderr));
    let frames: Vec<Vec<u8>> = String::from_utf8(out.stdout).unwrap().lines().map(unhex).collect();
    assert_eq!(frames.len(), count);
    let mut by_opcode = std::collections::BTreeMap::new();
    for (i, f) in frames.iter().enumerate() {
        let eth = EthernetRepr::parse(f).unwrap();
        let ip = &f[eth.buffer_len()..];
        Ipv4Repr::parse(ip).unwrap();
        icrc::verify(ip).unwrap_or_else(|e| panic!("frame {i} ({}): {e}", hex(f)));
        let udp = UdpRepr::parse(&ip[20..]).unwrap();
        let roce =
            RoceRepr::parse(&ip[28..28 + udp.payload_len]).unwrap_or_else(|e| panic!("frame {i}: {e}"));
        *by_opcode.entry(roce.bth.opcode.0).or_insert(0) += 1;
        // A flipped payload bit must fail.
        let mut bad = ip.to_vec();
        let last = bad.len() - 5;
        bad[last] ^= 0x10;
        assert!(icrc::verify(&bad).is_err(), "frame {i}: corruption not detected");
    }
    assert_eq!(by_opcode.len(), 6, "every kind present: {by_opcode:?}");
}
