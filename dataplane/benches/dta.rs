//! The DTA translator's hot path on one core: bursts of 32 reports (64-byte frames) in, RDMA
//! packets (with ICRC) out, through the whole switch. The collector is played by one coalesced
//! ACK per burst for the last PSN sent — what a NIC's responder does — so the requester's
//! window keeps moving; the collector's own work is not measured.
//!
//! Run: `cargo bench -p dataplane --bench dta`. Figures are kept in BENCHMARKS.md.

#[path = "../tests/dta/lab.rs"]
mod lab;

use std::hint::black_box;
use std::net::SocketAddrV4;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataplane::buf::{Frame, PktBuf, Pool};
use lab::{C0, C0_MAC, Collector, Lab, config, udp_of};
use wire::dta::{DtaRepr, Primitive, Priority, Sequence};
use wire::roce::{AethRepr, BthRepr, Opcode, RoceRepr, Syndrome};
use wire::stack::{RoceStack, UdpFlow};

const BURST: usize = 32;

struct Bench {
    lab: Lab,
    reports: Vec<Vec<u8>>,
    next: usize,
    out: Vec<PktBuf>,
    rx: Vec<PktBuf>,
    ack: Vec<u8>,
    qpn: u32,
    sent: u64,
}

impl Bench {
    fn new(primitive: &str, reports: impl Fn(u32) -> DtaRepr<'static>) -> Self {
        let collectors = r#"
[[dta.collector]]
name = "c0"
ip = "10.0.0.51"
keywrite = 1337
keyincrement = 1339
append = [{ list = 0, port = 1340, batch = 16 }]
"#;
        let c = Collector::new(C0, C0_MAC, &[(1337, 1 << 20), (1339, 1 << 20), (1340, 1 << 20)], 1);
        let mut lab =
            Lab::new(&config("ack_every = 32\nwindow = 8192", collectors, &[(C0, C0_MAC)]), vec![c]);
        lab.connect(200_000);
        let qpn =
            lab.sw.program().queue_pairs().iter().find(|q| q.name.ends_with(primitive)).unwrap().local_qpn;
        // The report frames a NIC would hand over, 64 of them cycling.
        let mut frames = Vec::new();
        for i in 0..64u32 {
            let r = reports(i);
            let mut payload = [0u8; 64];
            let n = r.buffer_len();
            r.emit(&mut payload).unwrap();
            frames.push(lab::report_frame(lab::REPORTER, C0, &payload[..n]));
        }
        Self {
            lab,
            reports: frames,
            next: 0,
            out: Vec::with_capacity(256),
            rx: Vec::with_capacity(BURST),
            ack: vec![0u8; 128],
            qpn,
            sent: 0,
        }
    }

    /// One burst of 32 reports in, what leaves for the collector out, one ACK back.
    fn burst(&mut self) -> usize {
        let l = &mut self.lab;
        l.now += 1000;
        let now = l.now;
        for _ in 0..BURST {
            let mut b = l.pool.alloc().unwrap();
            b.set(&self.reports[self.next]);
            // The next of the cycling frames (a compare, not a division: the harness plays a
            // NIC, whose work is not the translator's).
            self.next += 1;
            if self.next == self.reports.len() {
                self.next = 0;
            }
            self.rx.push(b);
        }
        l.sw.receive_burst(now, 0, &mut self.rx, &mut l.pool);
        let mut n = 0;
        let mut last_psn = None;
        while l.sw.transmit(now, 1, &mut self.out, 256, &mut l.pool) > 0 {
            if let Some(f) = self.out.last() {
                let d = f.data();
                if let Some((_, _, 4791, l4, _)) = udp_of(d) {
                    last_psn = Some(u32::from_be_bytes([0, d[l4 + 9], d[l4 + 10], d[l4 + 11]]));
                }
            }
            n += self.out.len();
            for f in self.out.drain(..) {
                l.pool.free(f);
            }
        }
        self.sent += n as u64;
        if let Some(psn) = last_psn {
            let mut ack = RoceRepr::new(
                BthRepr {
                    opcode: Opcode::RC_ACKNOWLEDGE,
                    pkey: 0xffff,
                    dest_qp: self.qpn,
                    psn,
                    ..BthRepr::default()
                },
                &[],
            );
            ack.ext.aeth = Some(AethRepr { syndrome: Syndrome::Ack { credits: 31 }, msn: 0 });
            let flow = UdpFlow::host_udp(
                C0_MAC,
                lab::TRANSLATOR_P1,
                SocketAddrV4::new(C0, 1),
                SocketAddrV4::new(lab::TRANSLATOR_IP, 4791),
            );
            let s = RoceStack { flow, roce: ack };
            let len = s.emit(&mut self.ack).unwrap();
            let mut b = l.pool.alloc().unwrap();
            b.set(&self.ack[..len.max(60)]);
            l.sw.receive(now, 1, b, &mut l.pool);
        }
        // The runtime runs the timers every 50 µs.
        if (now / 1000).is_multiple_of(50) {
            l.sw.tick(now, &mut l.pool);
        }
        n
    }

    fn check(&self) {
        let p = self.lab.sw.program();
        let drops: u64 = self.lab.sw.counters().drops.iter().sum();
        assert_eq!(drops, 0, "{:?}", self.lab.sw.counters());
        assert!(p.stats().rdma_packets > 0);
    }
}

fn seq() -> Option<Sequence> {
    Some(Sequence { seqnum: 0, retransmittable: false, priority: Priority::Low, epoch: 0 })
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("dta");
    g.throughput(Throughput::Elements(BURST as u64));
    let mut b = Bench::new("keywrite", |i| DtaRepr {
        immediate: false,
        seq: seq(),
        primitive: Primitive::KeyWrite { redundancy: 2, key: i * 7919, data: &[1, 2, 3, 4] },
    });
    assert!(b.burst() >= 2 * BURST);
    g.bench_function("keywrite_n2_burst32", |x| x.iter(|| black_box(b.burst())));
    b.check();
    let mut b = Bench::new("append[0]", |i| DtaRepr {
        immediate: false,
        seq: seq(),
        primitive: Primitive::Append { list_id: 0, data: i },
    });
    assert!(b.burst() >= BURST / 16);
    g.bench_function("append_b16_burst32", |x| x.iter(|| black_box(b.burst())));
    b.check();
    let mut b = Bench::new("keyincrement", |i| DtaRepr {
        immediate: false,
        seq: seq(),
        primitive: Primitive::KeyIncrement { redundancy: 2, key: i * 104_729, counter: 1 },
    });
    assert!(b.burst() >= 2 * BURST);
    g.bench_function("keyincrement_n2_burst32", |x| x.iter(|| black_box(b.burst())));
    b.check();
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
