use super::*;
use crate::requester::{Op, Requester, RequesterConfig, Response};
use wire::roce::{AethRepr, AtomicEthRepr, BthRepr, ImmDtRepr, Opcode, RethRepr, RoceExt, Syndrome};

fn mem() -> Regions<Vec<u8>> {
    let mut m = Regions::new();
    m.add(Region { rkey: 0x42, va: 0x10_0000, write: true, atomic: true, buf: vec![0u8; 4096], ring: None });
    m.add(Region { rkey: 0x43, va: 0x20_0000, write: false, atomic: false, buf: vec![0u8; 64], ring: None });
    m
}

fn reth(va: u64, rkey: u32, len: u32) -> RoceExt {
    RoceExt { reth: Some(RethRepr { va, rkey, dma_len: len }), ..RoceExt::default() }
}

#[test]
fn in_order_writes_execute_and_ack_on_request() {
    let mut m = mem();
    let mut r = Responder::new(Transport::Rc, 10);
    let o = r.handle_packet(
        Opcode::RC_RDMA_WRITE_ONLY,
        10,
        false,
        &reth(0x10_0008, 0x42, 4),
        &[1, 2, 3, 4],
        &mut m,
    );
    assert_eq!(o.verdict, Verdict::Executed);
    assert_eq!(o.reply, Reply::None);
    let ext = RoceExt { immdt: Some(ImmDtRepr { imm: 99 }), ..reth(0x10_0010, 0x42, 2) };
    let o = r.handle_packet(Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 11, true, &ext, &[5, 6], &mut m);
    assert_eq!(o.reply, Reply::Ack { psn: 11, msn: 2 });
    assert_eq!(o.delivery, Delivery::Write { rkey: 0x42, va: 0x10_0010, len: 2, imm: Some(99) });
    assert_eq!(&m.get(0x42).unwrap().buf[8..12], &[1, 2, 3, 4]);
    assert_eq!(&m.get(0x42).unwrap().buf[16..18], &[5, 6]);
    assert_eq!(r.expected_psn(), 12);
}

#[test]
fn access_errors_touch_nothing_and_nak() {
    let mut m = mem();
    let before = m.clone();
    let mut r = Responder::new(Transport::Rc, 0);
    let cases = [
        (reth(0x10_0000, 0x99, 4), AccessError::BadKey),
        (reth(0x0f_fff0, 0x42, 4), AccessError::OutOfBounds),
        (reth(0x10_0ffe, 0x42, 4), AccessError::OutOfBounds),
        (reth(0x20_0000, 0x43, 4), AccessError::NoPermission),
    ];
    for (ext, err) in cases {
        let o = r.handle_packet(Opcode::RC_RDMA_WRITE_ONLY, 0, false, &ext, &[9; 4], &mut m);
        assert_eq!(o.verdict, Verdict::AccessError(err));
        assert_eq!(o.reply, Reply::Nak { psn: 0, msn: 0, code: NakCode::RemoteAccessError });
    }
    let misaligned = RoceExt {
        atomic_eth: Some(AtomicEthRepr { va: 0x10_0004, rkey: 0x42, swap_add: 1, compare: 0 }),
        ..RoceExt::default()
    };
    let o = r.handle_packet(Opcode::RC_FETCH_ADD, 0, true, &misaligned, &[], &mut m);
    assert_eq!(o.verdict, Verdict::AccessError(AccessError::Misaligned));
    for (a, b) in m.regions().iter().zip(before.regions()) {
        assert_eq!(a.buf, b.buf, "memory unchanged");
    }
    assert_eq!(r.expected_psn(), 0, "a refused request is not consumed");
    // A zero-length WRITE is not checked at all.
    let o = r.handle_packet(Opcode::RC_RDMA_WRITE_ONLY, 0, true, &reth(0, 0, 0), &[], &mut m);
    assert_eq!(o.reply, Reply::Ack { psn: 0, msn: 1 });
}

#[test]
fn gap_naks_once_duplicates_reack_atomics_replay() {
    let mut m = mem();
    let mut r = Responder::new(Transport::Rc, 0);
    let fa = |add| RoceExt {
        atomic_eth: Some(AtomicEthRepr { va: 0x10_0100, rkey: 0x42, swap_add: add, compare: 0 }),
        ..RoceExt::default()
    };
    assert_eq!(
        r.handle_packet(Opcode::RC_FETCH_ADD, 0, true, &fa(5), &[], &mut m).reply,
        Reply::AtomicAck { psn: 0, msn: 1, original: 0 }
    );
    // 2 and 3 arrive before 1: one NAK for the gap.
    let w = reth(0x10_0000, 0x42, 1);
    let o = r.handle_packet(Opcode::RC_RDMA_WRITE_ONLY, 2, false, &w, &[1], &mut m);
    assert_eq!(o.reply, Reply::Nak { psn: 1, msn: 1, code: NakCode::PsnSequenceError });
    assert_eq!(r.handle_packet(Opcode::RC_RDMA_WRITE_ONLY, 3, true, &w, &[1], &mut m).reply, Reply::None);
    // The duplicate atomic gets its first result and adds nothing.
    let o = r.handle_packet(Opcode::RC_FETCH_ADD, 0, true, &fa(5), &[], &mut m);
    assert_eq!((o.reply, o.verdict), (Reply::AtomicAck { psn: 0, msn: 1, original: 0 }, Verdict::Duplicate));
    assert_eq!(u64::from_le_bytes(m.get(0x42).unwrap().buf[0x100..0x108].try_into().unwrap()), 5);
    // 1, 2, 3 in order now; a later duplicate write is re-acked with the latest PSN.
    for psn in 1..=3 {
        assert_eq!(
            r.handle_packet(Opcode::RC_RDMA_WRITE_ONLY, psn, false, &w, &[1], &mut m).verdict,
            Verdict::Executed
        );
    }
    let o = r.handle_packet(Opcode::RC_RDMA_WRITE_ONLY, 2, false, &w, &[7], &mut m);
    assert_eq!((o.reply, o.verdict), (Reply::Ack { psn: 3, msn: 4 }, Verdict::Duplicate));
    assert_eq!(m.get(0x42).unwrap().buf[0], 1, "a duplicate is not executed again");
}

#[test]
fn multi_packet_write_and_invalid_middle() {
    let mut m = mem();
    let mut r = Responder::new(Transport::Rc, 0);
    let first = reth(0x10_0000, 0x42, 6);
    assert_eq!(
        r.handle_packet(Opcode::RC_RDMA_WRITE_FIRST, 0, false, &first, &[1, 2], &mut m).verdict,
        Verdict::Executed
    );
    let none = RoceExt::default();
    r.handle_packet(Opcode::RC_RDMA_WRITE_MIDDLE, 1, false, &none, &[3, 4], &mut m);
    let o = r.handle_packet(Opcode::RC_RDMA_WRITE_LAST, 2, true, &none, &[5, 6], &mut m);
    assert_eq!(o.reply, Reply::Ack { psn: 2, msn: 1 });
    assert_eq!(&m.get(0x42).unwrap().buf[..6], &[1, 2, 3, 4, 5, 6]);
    // A middle with no first is invalid.
    let o = r.handle_packet(Opcode::RC_RDMA_WRITE_MIDDLE, 3, false, &none, &[1], &mut m);
    assert_eq!(o.verdict, Verdict::Invalid);
    assert_eq!(o.reply, Reply::Nak { psn: 3, msn: 1, code: NakCode::InvalidRequest });
}

#[test]
fn uc_resyncs_on_a_new_message() {
    let mut m = mem();
    let mut r = Responder::new(Transport::Uc, 0);
    let w = reth(0x10_0000, 0x42, 1);
    assert_eq!(r.handle_packet(Opcode::UC_RDMA_WRITE_ONLY, 5, true, &w, &[1], &mut m).reply, Reply::None);
    assert_eq!(r.expected_psn(), 6);
    assert_eq!(
        r.handle_packet(Opcode::UC_RDMA_WRITE_MIDDLE, 9, false, &RoceExt::default(), &[1], &mut m).verdict,
        Verdict::OutOfSequence
    );
}

/// A requester and a responder over a lossy link (every 7th packet lost each way): every
/// write lands exactly once in order, every atomic is applied exactly once.
#[test]
fn requester_and_responder_recover_from_loss() {
    let mut n = 0u32;
    let lost = simulate(&mut || {
        n += 1;
        n.is_multiple_of(7)
    });
    assert!(lost > 100, "{lost}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
    /// The same under random loss of up to 30 % each way.
    #[test]
    fn recovery_under_random_loss(seed in 1u64.., percent in 0u64..30) {
        let mut x = seed;
        simulate(&mut || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 100 < percent
        });
    }
}

/// Run 2000 requests (every tenth a FETCH_ADD) through a link that drops a packet whenever
/// `lose` says so; check the outcome; return how many packets were lost.
fn simulate(lose: &mut dyn FnMut() -> bool) -> u32 {
    let mut m = mem();
    // Retry budget: a resend round makes no progress when its first packet or the ACK is lost,
    // about half the time at 29 % loss each way, so IB's 7 retries (8 such rounds in a row,
    // p ≈ 0.4 % per stall, hundreds of stalls per run) fail a run now and then — correct IB
    // behaviour, but not what this test is about. With 24 the QP fails in none of 3000 runs at
    // 29 % loss; exhausting the budget is tested in the requester's own tests.
    let cfg = RequesterConfig {
        window: 64,
        ack_req_every: 8,
        timeout_ns: 10_000,
        retry_limit: 24,
        ..RequesterConfig::default()
    };
    let mut req = Requester::new(cfg, 7, 1000);
    let mut resp = Responder::new(Transport::Rc, 1000);
    let (mut now, mut sent, mut lost) = (0u64, 0u32, 0u32);
    let mut wire: Vec<(u32, Op, Vec<u8>, bool)> = Vec::new();
    let total = 2000u32;
    let mut next = 0u32;
    let mut applied_adds = 0u64;
    while resp.stats().executed < u64::from(total) {
        now += 100;
        // Post what the window allows.
        while next < total && req.can_post() {
            let op = if next % 10 == 9 {
                Op::FetchAdd { va: 0x10_0800, rkey: 0x42, add: 1 }
            } else {
                Op::Write { va: 0x10_0000 + u64::from(next % 256) * 4, rkey: 0x42, imm: None }
            };
            let payload = if op.is_atomic() { vec![] } else { next.to_le_bytes().to_vec() };
            let p = req.post(now, op, &payload, false).unwrap();
            if p.send_now {
                wire.push((p.psn, op, payload, p.ack_req));
            }
            next += 1;
        }
        if req.handle_timeout(now).is_err() {
            panic!("QP failed");
        }
        while let Some(x) = req.poll_transmit(now) {
            wire.push((x.psn, x.op, x.payload.to_vec(), x.ack_req));
        }
        for (psn, op, payload, ack_req) in wire.drain(..) {
            sent += 1;
            if lose() {
                lost += 1;
                continue;
            }
            let (opcode, ext) = match op {
                Op::Write { va, rkey, .. } => {
                    (Opcode::RC_RDMA_WRITE_ONLY, reth(va, rkey, payload.len() as u32))
                }
                Op::FetchAdd { va, rkey, add } => (
                    Opcode::RC_FETCH_ADD,
                    RoceExt {
                        atomic_eth: Some(AtomicEthRepr { va, rkey, swap_add: add, compare: 0 }),
                        ..RoceExt::default()
                    },
                ),
                _ => unreachable!(),
            };
            let o = resp.handle_packet(opcode, psn, ack_req, &ext, &payload, &mut m);
            if matches!(o.delivery, Delivery::Atomic { .. }) {
                applied_adds += 1;
            }
            let (op, psn, syndrome) = match o.reply {
                Reply::None => continue,
                Reply::Ack { psn, .. } => (Opcode::RC_ACKNOWLEDGE, psn, Syndrome::Ack { credits: 31 }),
                Reply::Nak { psn, code, .. } => (Opcode::RC_ACKNOWLEDGE, psn, Syndrome::Nak(code)),
                Reply::AtomicAck { psn, .. } => {
                    (Opcode::RC_ATOMIC_ACKNOWLEDGE, psn, Syndrome::Ack { credits: 31 })
                }
            };
            sent += 1;
            if lose() {
                lost += 1;
                continue;
            }
            let bth = BthRepr { opcode: op, psn, ..BthRepr::default() };
            let r = req.handle_packet(now, &bth, &AethRepr { syndrome, msn: 0 });
            assert!(!matches!(r, Response::Fatal(_)), "{r:?}");
        }
        assert!(now < 1_000_000_000, "no progress: executed {}", resp.stats().executed);
    }
    assert_eq!(applied_adds, u64::from(total / 10), "each atomic applied exactly once");
    let counter = u64::from_le_bytes(m.get(0x42).unwrap().buf[0x800..0x808].try_into().unwrap());
    assert_eq!(counter, u64::from(total / 10));
    assert_eq!(resp.expected_psn(), psn_add(1000, total));
    let _ = sent;
    lost
}

/// The attack: a WRITE First inside the region whose RETH length runs past its end. Nothing is
/// written — not the First, not the Last — and the First is NAKed.
#[test]
fn a_multi_packet_write_past_the_end_writes_nothing() {
    let mut m = mem();
    let before = m.get(0x42).unwrap().buf.clone();
    let mut r = Responder::new(Transport::Rc, 0);
    // 4096-byte region at 0x10_0000: First of 8 bytes at its last 8, the message 16 long.
    let o = r.handle_packet(
        Opcode::RC_RDMA_WRITE_FIRST,
        0,
        false,
        &reth(0x10_0000 + 4088, 0x42, 16),
        &[7; 8],
        &mut m,
    );
    assert!(matches!(o.reply, Reply::Nak { code: NakCode::RemoteAccessError, .. }), "{:?}", o.reply);
    let o = r.handle_packet(Opcode::RC_RDMA_WRITE_LAST, 1, true, &RoceExt::default(), &[7; 8], &mut m);
    assert!(!matches!(o.verdict, Verdict::Executed));
    assert_eq!(m.get(0x42).unwrap().buf, before, "memory unchanged");
    // Inside: First and Last land.
    let mut r = Responder::new(Transport::Rc, 0);
    r.handle_packet(
        Opcode::RC_RDMA_WRITE_FIRST,
        0,
        false,
        &reth(0x10_0000 + 4080, 0x42, 16),
        &[1; 8],
        &mut m,
    );
    let o = r.handle_packet(Opcode::RC_RDMA_WRITE_LAST, 1, true, &RoceExt::default(), &[2; 8], &mut m);
    assert_eq!(o.verdict, Verdict::Executed);
    assert_eq!(&m.get(0x42).unwrap().buf[4080..4096], &[[1u8; 8], [2; 8]].concat()[..]);
}
