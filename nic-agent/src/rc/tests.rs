use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};

use super::*;
use crate::hpcc::HpccConfig;
use wire::EthernetAddress;
use wire::hpcc_int::{IntHeader, IntHopRepr};

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
const MAC_A: EthernetAddress = EthernetAddress([2, 0, 0, 0, 1, 2]);
const MAC_B: EthernetAddress = EthernetAddress([2, 0, 0, 0, 2, 2]);
const QP_A: u32 = 0x11;
const QP_B: u32 = 0x22;
const MTU: usize = 1000;
const DELAY: u64 = 2_000;

fn pattern(offset: u64) -> u8 {
    (offset.wrapping_mul(2_654_435_761) >> 13) as u8
}

fn cfg(size: u64) -> SenderConfig {
    SenderConfig {
        size,
        mtu: MTU,
        dest_qp: QP_B,
        start_psn: 0xff_fff0, // the PSN wraps during the transfer
        overhead: 100,
        window_packets: 256,
        ack_every: 1,
        timeout_ns: 100_000,
        retry_limit: 7,
    }
}

fn flow(from: Ipv4Addr, to: Ipv4Addr, src: EthernetAddress, dst: EthernetAddress) -> UdpFlow {
    UdpFlow::host_udp(src, dst, SocketAddrV4::new(from, 49153), SocketAddrV4::new(to, 4791))
}

/// Runs a transfer of `size` bytes over a link of 10 Gb/s serialisation and `DELAY` each way
/// with one switch hop stamping INT; `drop_data(k)` drops the k-th data frame, `drop_ack(k)`
/// the k-th ACK. Returns the bytes the receiver delivered and the sender.
fn transfer(
    size: u64,
    cc: FlowCc,
    drop_data: impl Fn(u64) -> bool,
    drop_ack: impl Fn(u64) -> bool,
) -> (Vec<u8>, RcSender) {
    let hpcc = matches!(cc, FlowCc::Hpcc(_));
    let mut tx = RcSender::new(cfg(size), cc);
    let mut rx = RcReceiver::new(size, 0xff_fff0, 50_000);
    let (fa, fb) = (flow(A, B, MAC_A, MAC_B), flow(B, A, MAC_B, MAC_A));
    let mut to_b: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut to_a: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut got = Vec::new();
    let (mut now, mut k_data, mut k_ack, mut tx_bytes) = (0u64, 0u64, 0u64, 0u64);
    let mut scratch = Vec::new();
    while now < 1_000_000_000 {
        let mut progressed = false;
        // The sender.
        if let Transmit::Send(seg) = tx.poll_transmit(now) {
            progressed = true;
            let mut buf = vec![0u8; 2048];
            let int = hpcc.then(|| IntRepr::empty(1));
            let tail = seg.len + wire::roce::pad_len(seg.len) + 4;
            let n = emit_rc(&mut buf, &fa, int.as_ref(), &data_bth(QP_B, &seg), None, tail, |p| {
                for (i, b) in p[..seg.len].iter_mut().enumerate() {
                    *b = pattern(seg.offset + i as u64);
                }
            })
            .unwrap();
            seal(&mut buf, n, 14).unwrap();
            buf.truncate(n);
            k_data += 1;
            if !drop_data(k_data) {
                // The switch: one INT hop, at 10 Gb/s with nothing queued.
                if hpcc {
                    let p = parse_rc(&buf).unwrap();
                    let at = p.l3 + 28;
                    tx_bytes += n as u64;
                    let hop = IntHopRepr::from_snapshot(1, 1, 10_000_000_000, 0, now + DELAY, tx_bytes);
                    assert!(IntHeader::new_checked(&mut buf[at..]).unwrap().push_hop(&hop));
                }
                to_b.push_back((now + DELAY, buf));
            }
        }
        // The receiver.
        while to_b.front().is_some_and(|(t, _)| *t <= now) {
            let (_, f) = to_b.pop_front().unwrap();
            let p = parse_rc(&f).unwrap();
            check_icrc(&f, &p, &mut scratch).unwrap();
            let r = rx.handle_data(now, &p.bth, &f[p.payload.clone()], false);
            got.extend_from_slice(r.delivered);
            if let Some(ack) = r.ack {
                let int = p.int.map(|i| IntRepr { reflected: true, ..i });
                let mut buf = vec![0u8; 256];
                let n =
                    emit_rc(&mut buf, &fb, int.as_ref(), &ack_bth(QP_A, &ack), Some(&ack.aeth), 4, |_| {})
                        .unwrap();
                seal(&mut buf, n, 14).unwrap();
                buf.truncate(n);
                k_ack += 1;
                if !drop_ack(k_ack) {
                    to_a.push_back((now + DELAY, buf));
                }
            }
            progressed = true;
        }
        while to_a.front().is_some_and(|(t, _)| *t <= now) {
            let (_, f) = to_a.pop_front().unwrap();
            let p = parse_rc(&f).unwrap();
            check_icrc(&f, &p, &mut scratch).unwrap();
            tx.handle_ack(now, &p.bth, &p.aeth.unwrap(), p.int.as_ref());
            progressed = true;
        }
        if tx.poll_timeout().is_some_and(|t| t <= now) {
            tx.handle_timeout(now);
        }
        if tx.is_done() && rx.is_complete() {
            break;
        }
        if !progressed {
            now += 100;
        }
    }
    (got, tx)
}

fn expect(size: u64) -> Vec<u8> {
    (0..size).map(pattern).collect()
}

#[test]
fn a_message_arrives_intact_and_acknowledged() {
    let size = 300_001; // the last packet has 1 byte and pad
    let (got, tx) = transfer(size, FlowCc::Fixed(10e9), |_| false, |_| false);
    assert!(got == expect(size));
    assert!(tx.is_done());
    assert_eq!(tx.stats(), SenderStats::default());
}

#[test]
fn go_back_n_recovers_lost_data_and_acks() {
    let size = 500_000;
    let (got, tx) = transfer(size, FlowCc::Fixed(10e9), |k| k % 37 == 0, |k| k % 11 == 0);
    assert!(got == expect(size), "delivered {} of {size} bytes", got.len());
    assert!(tx.is_done());
    assert!(tx.stats().nak_rounds > 0 && tx.stats().resent > 0, "{:?}", tx.stats());
}

#[test]
fn a_lost_tail_is_resent_after_the_timeout() {
    // 100 packets: the last one and its first resend are lost.
    let size = 100 * MTU as u64;
    let (got, tx) = transfer(size, FlowCc::Fixed(10e9), |k| k == 100 || k == 101, |_| false);
    assert!(got == expect(size));
    assert_eq!(tx.stats().timeouts, 2);
}

#[test]
fn hpcc_sets_rate_and_window_from_the_reflected_int() {
    let size = 2_000_000;
    let base_rtt = 2 * DELAY + 2_000;
    let cc = FlowCc::Hpcc(Box::new(Hpcc::new(HpccConfig::new(10_000_000_000, base_rtt, 1))));
    let (got, tx) = transfer(size, cc, |_| false, |_| false);
    assert!(got == expect(size));
    let FlowCc::Hpcc(h) = tx.cc() else { unreachable!() };
    // Alone on an idle 10 Gb/s hop HPCC++ holds a window near η·BDP... and never stalls.
    assert!(h.core().utilisation() > 0.0 && h.core().utilisation() < 1.2, "{}", h.core().utilisation());
    assert!(tx.pacer().rate_bps() > 5e9, "rate {}", tx.pacer().rate_bps());
}

#[test]
fn the_receiver_naks_a_gap_once_and_acks_duplicates() {
    let mut rx = RcReceiver::new(10_000, 5, 0);
    let seg = |psn| data_bth(QP_B, &Segment { psn, offset: 0, len: 8, ack_req: true, resend: false });
    let r = rx.handle_data(0, &seg(5), &[1; 8], false);
    assert_eq!((r.ack.unwrap().psn, r.delivered.len()), (5, 8));
    let r = rx.handle_data(0, &seg(7), &[1; 8], false);
    assert_eq!(r.ack.unwrap().aeth.syndrome, Syndrome::Nak(NakCode::PsnSequenceError));
    assert_eq!(r.ack.unwrap().psn, 6);
    assert!(rx.handle_data(0, &seg(8), &[1; 8], true).ack.is_none(), "one NAK per gap");
    let r = rx.handle_data(0, &seg(5), &[1; 8], false);
    assert_eq!((r.ack.unwrap().psn, r.delivered.len()), (5, 0));
    assert_eq!(rx.bytes(), 8);
}

#[test]
fn frames_are_checked_and_bad_ones_refused() {
    let seg = Segment { psn: 3, offset: 0, len: 10, ack_req: true, resend: false };
    let mut buf = vec![0u8; 256];
    let fa = flow(A, B, MAC_A, MAC_B);
    let n = emit_rc(&mut buf, &fa, Some(&IntRepr::empty(2)), &data_bth(QP_B, &seg), None, 10 + 2 + 4, |p| {
        p[..10].fill(9)
    })
    .unwrap();
    seal(&mut buf, n, 14).unwrap();
    let p = parse_rc(&buf[..n]).unwrap();
    assert_eq!((p.bth.psn, p.bth.pad_count, p.payload.len(), p.int.unwrap().max_hop), (3, 2, 10, 2));
    let mut scratch = Vec::new();
    check_icrc(&buf[..n], &p, &mut scratch).unwrap();
    // A flipped payload byte fails the ICRC; a cut frame fails to parse.
    buf[p.payload.start] ^= 1;
    assert_eq!(check_icrc(&buf[..n], &p, &mut scratch).unwrap_err().field(), "icrc");
    for cut in [10, 30, 45, 60, n - 3] {
        let _ = parse_rc(&buf[..cut]);
    }
    assert!(parse_rc(&buf[..40]).is_err());
    assert!(emit_rc(&mut buf[..50], &fa, None, &data_bth(QP_B, &seg), None, 16, |_| {}).is_err());
}

/// One RTT sample per round trip: the first packet sent is timed until the ACK that covers it;
/// a go-back-N round cancels the timed packet (Karn's rule), and a new one is timed after.
#[test]
fn rtt_samples_time_one_packet_to_its_ack_and_skip_resends() {
    let mut tx = RcSender::new(cfg(MTU as u64 * 8), FlowCc::Fixed(100e9));
    tx.set_rtt_sampling(true);
    let mut rx = RcReceiver::new(MTU as u64 * 8, 0xff_fff0, 50_000);
    let mut sent = Vec::new();
    for t in 0..3u64 {
        let Transmit::Send(seg) = tx.poll_transmit(t * 1000) else { panic!() };
        sent.push(seg);
    }
    assert_eq!(tx.take_rtt_sample(), None);
    // The receiver acknowledges the first packet at 25 µs: the sample is 25 µs.
    let zeros = vec![0u8; MTU];
    let r = rx.handle_data(20_000, &data_bth(QP_B, &sent[0]), &zeros[..sent[0].len], false);
    let ack = r.ack.unwrap();
    tx.handle_ack(25_000, &ack_bth(QP_A, &ack), &ack.aeth, None);
    assert_eq!(tx.take_rtt_sample(), Some(25_000));
    assert_eq!(tx.take_rtt_sample(), None, "taken once");
    // The next packet sent is timed; its ACK is lost and the timeout resends: no sample from it.
    let Transmit::Send(seg) = tx.poll_transmit(30_000) else { panic!() };
    assert!(!seg.resend);
    tx.handle_timeout(1_000_000);
    let mut resends = 0;
    while let Transmit::Send(s) = tx.poll_transmit(1_000_000) {
        if s.resend {
            resends += 1;
        }
    }
    assert!(resends > 0);
    let r = rx.handle_data(1_010_000, &data_bth(QP_B, &sent[1]), &zeros[..sent[1].len], false);
    if let Some(ack) = r.ack {
        tx.handle_ack(1_020_000, &ack_bth(QP_A, &ack), &ack.aeth, None);
    }
    assert_eq!(tx.take_rtt_sample(), None, "a resent packet is never timed");
}

/// A flow with bytes outstanding and nothing acknowledged is stalled since its last progress
/// (its first packet sent, then each ACK that moved the oldest byte): Hawkeye's detection agent
/// reads it when no packet is timed (a window-limited or resending flow).
#[test]
fn a_stalled_flow_says_since_when() {
    let mut tx = RcSender::new(cfg(MTU as u64 * 4), FlowCc::Fixed(100e9));
    assert_eq!(tx.stalled_since(), None, "nothing outstanding");
    let mut rx = RcReceiver::new(MTU as u64 * 4, 0xff_fff0, 50_000);
    let mut sent = Vec::new();
    for t in 0..4u64 {
        let Transmit::Send(seg) = tx.poll_transmit(1000 + t * 1000) else { panic!() };
        sent.push(seg);
    }
    assert_eq!(tx.stalled_since(), Some(1000), "since the first packet left");
    let zeros = vec![0u8; MTU];
    let r = rx.handle_data(20_000, &data_bth(QP_B, &sent[0]), &zeros[..sent[0].len], false);
    let ack = r.ack.expect("the first packet is acknowledged");
    tx.handle_ack(25_000, &ack_bth(QP_A, &ack), &ack.aeth, None);
    assert_eq!(tx.stalled_since(), Some(25_000), "progress at the ACK");
    // A timeout goes back to resend: still stalled, from the last progress.
    let before = tx.stalled_since();
    tx.handle_timeout(5_000_000);
    assert_eq!(tx.stalled_since(), before);
    for s in &sent[1..] {
        let r = rx.handle_data(6_000_000, &data_bth(QP_B, s), &zeros[..s.len], false);
        if let Some(ack) = r.ack {
            tx.handle_ack(6_010_000, &ack_bth(QP_A, &ack), &ack.aeth, None);
        }
    }
    assert!(tx.is_done(), "every packet acknowledged");
    assert_eq!(tx.stalled_since(), None, "nothing outstanding");
}
