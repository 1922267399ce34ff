use super::*;
use wire::roce::{AethRepr, BthRepr, NakCode, Opcode, Syndrome};

fn cfg(window: u32, k: u32) -> RequesterConfig {
    RequesterConfig {
        window,
        ack_req_every: k,
        timeout_ns: 1000,
        retry_limit: 3,
        ..RequesterConfig::default()
    }
}

fn write(n: u64) -> Op {
    Op::Write { va: 0x1000 + n * 8, rkey: 7, imm: None }
}

fn resp(opcode: Opcode, psn: u32, syndrome: Syndrome) -> (BthRepr, AethRepr) {
    (BthRepr { opcode, psn, ..BthRepr::default() }, AethRepr { syndrome, msn: 0 })
}

fn ack(psn: u32) -> (BthRepr, AethRepr) {
    resp(Opcode::RC_ACKNOWLEDGE, psn, Syndrome::Ack { credits: 31 })
}

#[test]
fn psns_ack_req_every_k_and_coalesced_acks() {
    let mut r = Requester::new(cfg(64, 4), 0x11, 0xff_fffe);
    let mut acks = Vec::new();
    for i in 0..8 {
        let p = r.post(0, write(i), &[1, 2, 3, 4], false).unwrap();
        assert!(p.send_now);
        acks.push(p.ack_req);
        assert_eq!(p.psn, psn_add(0xff_fffe, i as u32), "PSNs wrap at 2^24");
    }
    // Every fourth packet asks for an acknowledgement.
    assert_eq!(acks, [false, false, false, true, false, false, false, true]);
    assert_eq!(r.outstanding(), 8);
    // One ACK for the fifth packet completes five.
    let (b, a) = ack(psn_add(0xff_fffe, 4));
    assert_eq!(r.handle_packet(10, &b, &a), Response::Acked { completed: 5, atomics: 0 });
    assert_eq!(r.outstanding(), 3);
    // A duplicate of it completes nothing; one for a PSN never sent is ignored.
    assert_eq!(r.handle_packet(11, &b, &a), Response::Acked { completed: 0, atomics: 0 });
    let (b, a) = ack(psn_add(0xff_fffe, 20));
    assert_eq!(r.handle_packet(12, &b, &a), Response::Ignored);
    // The last packet asked; one more does not: a probe is due after the delay.
    assert!(!r.ack_probe_due(15, 0));
    assert!(!r.post(15, write(8), &[], false).unwrap().ack_req);
    assert!(!r.ack_probe_due(100, 100));
    assert!(r.ack_probe_due(200, 100));
    let p = r.post(200, write(9), &[], true).unwrap();
    assert!(p.ack_req);
    assert!(!r.ack_probe_due(400, 100));
}

#[test]
fn window_bounds_outstanding() {
    let mut r = Requester::new(cfg(4, 32), 1, 0);
    for i in 0..4 {
        r.post(0, write(i), &[0; 8], false).unwrap();
    }
    assert_eq!(r.post(0, write(5), &[0; 8], false), Err(PostError::WindowFull));
    assert!(!r.can_post());
    let (b, a) = ack(1);
    r.handle_packet(1, &b, &a);
    assert!(r.can_post());
    // Payload limits.
    assert_eq!(r.post(1, write(0), &[0; MAX_INLINE + 1], false), Err(PostError::Payload(MAX_INLINE + 1)));
    let fa = Op::FetchAdd { va: 0, rkey: 1, add: 1 };
    assert_eq!(r.post(1, fa, &[0; 8], false), Err(PostError::Payload(8)));
}

#[test]
fn sequence_nak_goes_back_n_in_order() {
    let mut r = Requester::new(cfg(64, 100), 1, 100);
    for i in 0..10 {
        r.post(0, write(i), &[i as u8; 4], false).unwrap();
    }
    // The responder got 100..=103 and NAKs 104.
    let (b, a) = resp(Opcode::RC_ACKNOWLEDGE, 104, Syndrome::Nak(NakCode::PsnSequenceError));
    assert_eq!(r.handle_packet(5, &b, &a), Response::Retransmit { completed: 4, from: 104 });
    // Posting while resending queues behind the cursor.
    let p = r.post(6, write(10), &[10; 4], false).unwrap();
    assert!(!p.send_now);
    let mut resent = Vec::new();
    while let Some(x) = r.poll_transmit(6) {
        resent.push((x.psn, x.payload[0], x.ack_req));
    }
    let psns: Vec<u32> = resent.iter().map(|x| x.0).collect();
    assert_eq!(psns, (104..=110).collect::<Vec<_>>());
    assert_eq!(resent.iter().map(|x| x.1).collect::<Vec<_>>(), (4..=10).collect::<Vec<u8>>());
    assert!(resent.last().unwrap().2, "the last resent packet asks for an ACK");
    assert!(!r.retransmitting());
    assert_eq!(r.stats().retransmitted, 7);
    // New posts go out at once again.
    assert!(r.post(7, write(11), &[], false).unwrap().send_now);
}

#[test]
fn timeout_resends_from_the_oldest_then_gives_up() {
    let mut r = Requester::new(cfg(64, 100), 1, 0);
    r.post(0, write(0), &[1], false).unwrap();
    r.post(0, write(1), &[2], false).unwrap();
    assert_eq!(r.handle_timeout(999), Ok(false));
    assert_eq!(r.poll_timeout(), Some(1000));
    assert_eq!(r.handle_timeout(1000), Ok(true));
    let x: Vec<u32> = std::iter::from_fn(|| r.poll_transmit(1000).map(|x| x.psn)).collect();
    assert_eq!(x, [0, 1]);
    // Progress resets the count.
    let (b, a) = ack(0);
    r.handle_packet(1500, &b, &a);
    for t in 1..=3 {
        assert_eq!(r.handle_timeout(1500 + t * 1000), Ok(true), "retry {t}");
        while r.poll_transmit(1500 + t * 1000).is_some() {}
    }
    assert_eq!(r.handle_timeout(5500), Err(QpError::RetryExceeded));
    assert_eq!(r.post(5500, write(3), &[], false), Err(PostError::QpError(QpError::RetryExceeded)));
}

#[test]
fn rnr_nak_waits_its_timer() {
    let mut r = Requester::new(cfg(64, 100), 1, 0);
    for i in 0..3 {
        r.post(0, write(i), &[], false).unwrap();
    }
    // Timer code 1: 0.01 ms.
    let (b, a) = resp(Opcode::RC_ACKNOWLEDGE, 1, Syndrome::RnrNak { timer: 1 });
    let until = 10 + rnr_timer_ns(1);
    assert_eq!(r.handle_packet(10, &b, &a), Response::RnrWait { from: 1, until });
    assert!(r.poll_transmit(until - 1).is_none());
    let x: Vec<u32> = std::iter::from_fn(|| r.poll_transmit(until).map(|x| x.psn)).collect();
    assert_eq!(x, [1, 2]);
}

#[test]
fn remote_access_error_is_fatal_and_later_responses_ignored() {
    let mut r = Requester::new(cfg(64, 100), 1, 0);
    r.post(0, write(0), &[], false).unwrap();
    let (b, a) = resp(Opcode::RC_ACKNOWLEDGE, 0, Syndrome::Nak(NakCode::RemoteAccessError));
    assert_eq!(r.handle_packet(1, &b, &a), Response::Fatal(QpError::Nak(NakCode::RemoteAccessError)));
    assert_eq!(r.error(), Some(QpError::Nak(NakCode::RemoteAccessError)));
    let (b, a) = ack(0);
    assert_eq!(r.handle_packet(2, &b, &a), Response::Ignored);
}

#[test]
fn atomics_always_ask_and_count_in_completions() {
    let mut r = Requester::new(cfg(64, 100), 1, 0);
    r.post(0, write(0), &[], false).unwrap();
    let p = r.post(0, Op::FetchAdd { va: 8, rkey: 1, add: 5 }, &[], false).unwrap();
    assert!(p.ack_req);
    let (b, a) = resp(Opcode::RC_ATOMIC_ACKNOWLEDGE, 1, Syndrome::Ack { credits: 0 });
    assert_eq!(r.handle_packet(1, &b, &a), Response::Acked { completed: 2, atomics: 1 });
}

#[test]
fn uc_numbers_packets_and_keeps_nothing() {
    let c = RequesterConfig { transport: Transport::Uc, ..cfg(4, 4) };
    let mut r = Requester::new(c, 1, 5);
    for i in 0..10 {
        let p = r.post(0, write(i), &[0; 4], false).unwrap();
        assert_eq!((p.psn, p.ack_req, p.send_now), (5 + i as u32, false, true));
    }
    assert_eq!(r.outstanding(), 0);
    assert_eq!(r.post(0, Op::FetchAdd { va: 0, rkey: 0, add: 1 }, &[], false), Err(PostError::AtomicOnUc));
    assert_eq!(write(0).opcode(Transport::Uc), Opcode::UC_RDMA_WRITE_ONLY);
}

#[test]
fn ring_keeps_each_payload_up_to_max_payload() {
    let mut r = Requester::new(RequesterConfig { max_payload: 12, ..cfg(4, 100) }, 1, 0);
    assert_eq!(r.config().max_payload, 12);
    assert_eq!(r.post(0, write(0), &[7; 13], false), Err(PostError::Payload(13)));
    let payloads: [&[u8]; 4] = [&[1; 12], &[2, 3, 4, 5, 6], &[], &[9; 8]];
    for (i, p) in payloads.iter().enumerate() {
        r.post(0, write(i as u64), p, false).unwrap();
    }
    let (b, a) = resp(Opcode::RC_ACKNOWLEDGE, 0, Syndrome::Nak(NakCode::PsnSequenceError));
    assert_eq!(r.handle_packet(1, &b, &a), Response::Retransmit { completed: 0, from: 0 });
    let resent: Vec<Vec<u8>> =
        std::iter::from_fn(|| r.poll_transmit(1).map(|x| x.payload.to_vec())).collect();
    assert_eq!(resent, payloads.iter().map(|p| p.to_vec()).collect::<Vec<_>>());
    // Above MAX_INLINE is clamped.
    let big = Requester::new(RequesterConfig { max_payload: 10_000, ..cfg(4, 100) }, 1, 0);
    assert_eq!(big.config().max_payload, MAX_INLINE);
}

#[test]
fn the_timeout_adapts_to_the_round_trip_and_backs_off() {
    let c = RequesterConfig { timeout_ns: 1000, max_timeout_ns: 1_000_000, ..cfg(64, 1) };
    let mut r = Requester::new(c, 1, 0);
    assert_eq!(r.timeout_ns(), 1000, "the configured timeout until a round trip is measured");
    // Round trips of 100 µs, each request acknowledged: the timeout follows them.
    let mut t = 0;
    for i in 0..20 {
        let p = r.post(t, write(i), &[], false).unwrap();
        assert!(p.ack_req);
        t += 100_000;
        let (b, a) = ack(p.psn);
        assert_eq!(r.handle_packet(t, &b, &a), Response::Acked { completed: 1, atomics: 0 });
    }
    assert_eq!(r.stats().rtt_samples, 20);
    assert_eq!(r.srtt_ns(), Some(100_000));
    let rto = r.timeout_ns();
    assert!((100_000..=150_000).contains(&rto), "SRTT + 4 RTTVAR, RTTVAR decaying: {rto}");
    // A request 100 µs old is not timed out (the fixed 1 µs would have resent it 100 times).
    r.post(t, write(99), &[], false).unwrap();
    assert_eq!(r.handle_timeout(t + 100_000), Ok(false));
    // Consecutive timeouts double it, up to the bound; progress brings it back.
    assert_eq!(r.handle_timeout(t + rto), Ok(true));
    assert_eq!(r.timeout_ns(), 2 * rto);
    while r.poll_transmit(t + rto).is_some() {}
    assert_eq!(r.handle_timeout(t + rto + 2 * rto - 1), Ok(false));
    assert_eq!(r.handle_timeout(t + 3 * rto), Ok(true));
    assert_eq!(r.timeout_ns(), 4 * rto);
    let (b, a) = ack(r.next_psn().wrapping_sub(1));
    r.handle_packet(t + 3 * rto + 10, &b, &a);
    assert_eq!(r.timeout_ns(), rto, "Karn: no sample from the resent request; the estimate stays");
    // Fixed when max_timeout_ns is not above timeout_ns.
    let mut f = Requester::new(cfg(64, 1), 1, 0);
    let p = f.post(0, write(0), &[], false).unwrap();
    let (b, a) = ack(p.psn);
    f.handle_packet(500_000, &b, &a);
    assert_eq!((f.timeout_ns(), f.stats().rtt_samples), (1000, 0));
}

#[test]
fn outstanding_requests_can_be_replayed_on_a_new_requester() {
    let mut old = Requester::new(cfg(16, 4), 1, 100);
    for i in 0..6 {
        old.post(0, write(i), &[i as u8; 3], false).unwrap();
    }
    let (b, a) = ack(101);
    old.handle_packet(1, &b, &a);
    let left: Vec<(Op, Vec<u8>)> = old.outstanding_requests().map(|(o, p)| (o, p.to_vec())).collect();
    assert_eq!(left.len(), 4);
    assert_eq!(left[0], (write(2), vec![2; 3]));
    let mut new = Requester::new(cfg(16, 4), 2, 7000);
    for (op, p) in &left {
        new.post(5, *op, p, false).unwrap();
    }
    new.rewind(5);
    let resent: Vec<(u32, Op)> = std::iter::from_fn(|| new.poll_transmit(5).map(|x| (x.psn, x.op))).collect();
    assert_eq!(resent, (0..4).map(|i| (7000 + i, write(u64::from(i) + 2))).collect::<Vec<_>>());
    assert_eq!(new.stats().timeouts, 0);
}

#[test]
fn a_request_after_a_quiet_spell_asks_for_its_ack_itself() {
    let mut r = Requester::new(RequesterConfig { ack_req_after_ns: 100, ..cfg(64, 32) }, 1, 0);
    // The first asks (nothing asked yet); back-to-back ones do not; one 100 ns after the last
    // that asked does.
    let asks: Vec<bool> = [1000u64, 1010, 1020, 1050, 1130, 1140, 1400]
        .iter()
        .map(|&t| r.post(t, write(t), &[], false).unwrap().ack_req)
        .collect();
    assert_eq!(asks, [true, false, false, false, true, false, true]);
    // Off by default.
    let mut d = Requester::new(cfg(64, 32), 1, 0);
    assert!(!d.post(1000, write(0), &[], false).unwrap().ack_req);
}

#[test]
fn congestion_window_halves_on_a_nak_once_per_window_and_grows_back() {
    let c = RequesterConfig { min_window: 4, ..cfg(64, 8) };
    let mut r = Requester::new(c, 1, 0);
    for i in 0..40 {
        r.post(0, write(i), &[], false).unwrap();
    }
    assert_eq!(r.congestion_window(), 64);
    // A sequence NAK at PSN 8: 32 outstanding after it, the window halves to 16.
    let nak = |psn| resp(Opcode::RC_ACKNOWLEDGE, psn, Syndrome::Nak(NakCode::PsnSequenceError));
    let (b, a) = nak(8);
    assert!(matches!(r.handle_packet(1, &b, &a), Response::Retransmit { completed: 8, from: 8 }));
    assert_eq!((r.congestion_window(), r.stats().window_cuts), (16, 1));
    // 32 outstanding > 16: nothing new is accepted until acknowledgements bring it under.
    assert_eq!(r.room(), 0);
    assert_eq!(r.post(1, write(99), &[], false), Err(PostError::WindowFull));
    // A second NAK inside the same window of requests (before PSN 40) does not cut again.
    let (b, a) = nak(12);
    r.handle_packet(2, &b, &a);
    assert_eq!((r.congestion_window(), r.stats().window_cuts), (16, 1));
    // Acknowledgements grow it by one per window above the threshold.
    let (b, a) = ack(39);
    r.handle_packet(3, &b, &a);
    assert_eq!(r.outstanding(), 0);
    assert_eq!(r.congestion_window(), 17);
    assert_eq!(r.room(), 17);
    // A timeout drops it to min_window; slow start brings it back to the threshold.
    for i in 0..17 {
        r.post(10, write(i), &[], false).unwrap();
    }
    assert!(r.handle_timeout(10_000).unwrap());
    assert_eq!(r.congestion_window(), 4);
    let (b, a) = ack(psn_add(40, 16));
    r.handle_packet(10_001, &b, &a);
    assert_eq!(r.congestion_window(), 8, "slow start up to ssthresh = 17 / 2");
}

#[test]
fn no_congestion_window_without_min_window() {
    let mut r = Requester::new(cfg(64, 8), 1, 0);
    for i in 0..40 {
        r.post(0, write(i), &[], false).unwrap();
    }
    let (b, a) = resp(Opcode::RC_ACKNOWLEDGE, 8, Syndrome::Nak(NakCode::PsnSequenceError));
    r.handle_packet(1, &b, &a);
    assert!(r.handle_timeout(1_000_000).is_ok());
    assert_eq!((r.congestion_window(), r.stats().window_cuts, r.room()), (64, 0, 32));
}

#[test]
fn a_resend_run_stops_at_the_congestion_window() {
    let c = RequesterConfig { min_window: 4, ..cfg(64, 64) };
    let mut r = Requester::new(c, 1, 0);
    for i in 0..40 {
        r.post(0, write(i), &[], false).unwrap();
    }
    // A timeout: the window drops to 4, and only 4 are resent, the 4th asking for an ACK.
    assert!(r.handle_timeout(10_000).unwrap());
    let run: Vec<(u32, bool)> =
        std::iter::from_fn(|| r.poll_transmit(10_000).map(|x| (x.psn, x.ack_req))).collect();
    assert_eq!(run, [(0, false), (1, false), (2, false), (3, true)]);
    assert!(r.peek_transmit(10_000).is_none());
    // Waiting for the window is not a stall the timer forgets: it fires again.
    assert_eq!(r.poll_timeout(), Some(10_000 + r.timeout_ns()));
    // Their ACK opens the window (slow start: 4 more) and the run goes on from 4.
    let (b, a) = ack(3);
    r.handle_packet(10_100, &b, &a);
    let run: Vec<u32> = std::iter::from_fn(|| r.poll_transmit(10_100).map(|x| x.psn)).collect();
    assert_eq!(run, (4..12).collect::<Vec<_>>());
}

#[test]
fn shrink_gives_back_the_ring_only_when_idle() {
    let mut r = Requester::new(cfg(64, 8), 1, 0);
    r.post(0, write(0), &[1, 2], false).unwrap();
    assert!(!r.shrink(), "a request is outstanding");
    let (b, a) = ack(0);
    r.handle_packet(1, &b, &a);
    assert!(r.shrink());
    assert_eq!((r.config().window, r.room()), (1, 1));
    // It still works, one request at a time.
    let p = r.post(2, write(1), &[3], false).unwrap();
    assert_eq!(p.psn, 1);
    assert_eq!(r.post(2, write(2), &[], false), Err(PostError::WindowFull));
    assert_eq!(r.outstanding_requests().next().map(|(_, d)| d.to_vec()), Some(vec![3]));
}

#[test]
fn a_small_ring_grows_with_what_is_outstanding() {
    let c = RequesterConfig { initial_ring: 4, max_payload: 8, ..cfg(64, 64) };
    let mut r = Requester::new(c, 1, 0xff_fffa);
    for i in 0..20u64 {
        r.post(0, write(i), &(i as u32).to_le_bytes(), false).unwrap();
    }
    assert_eq!(r.ring.len(), 32);
    // Every request kept, in order, with its payload, across the PSN wrap.
    let kept: Vec<(Op, Vec<u8>)> = r.outstanding_requests().map(|(o, d)| (o, d.to_vec())).collect();
    let want: Vec<(Op, Vec<u8>)> =
        (0..20u64).map(|i| (write(i), (i as u32).to_le_bytes().to_vec())).collect();
    assert_eq!(kept, want);
    // Resent from the oldest, the same.
    assert!(r.handle_timeout(10_000).unwrap());
    let resent: Vec<u32> = std::iter::from_fn(|| r.poll_transmit(10_000).map(|x| x.psn)).collect();
    assert_eq!(resent, (0..20).map(|k| psn_add(0xff_fffa, k)).collect::<Vec<_>>());
    // Bounded by the window as before.
    for i in 20..64u64 {
        r.post(0, write(i), &[], false).unwrap();
    }
    assert_eq!((r.ring.len(), r.post(0, write(64), &[], false)), (64, Err(PostError::WindowFull)));
}
