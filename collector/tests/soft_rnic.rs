//! The soft-RNIC over a real UDP socket, driven packet by packet by a `collector::peer::UdpPeer`:
//! the CM handshake and metadata SEND, then writes that must never touch memory — wrong
//! R_Key, VA out of bounds, length past the region's end (each NAKed remote-access-error), a
//! bad ICRC and an unknown QPN (each dropped silently) — with memory hashed before and after
//! and every case counted; and a WRITE with Immediate, whose immediate reaches subscribers.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::time::Duration;

use collector::peer::{Received, UdpPeer};
use collector::{Collector, CollectorConfig, Notification};
use roce::frames;
use roce::requester::{Op, Transport};
use wire::roce::{NakCode, Opcode, Syndrome};

const COLLECTOR: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 71);
const ME: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 72);

/// A received reply: opcode, PSN, AETH syndrome.
fn head(r: Option<Received>) -> Option<(Opcode, u32, Option<Syndrome>)> {
    r.map(|r| (r.opcode, r.psn, r.syndrome))
}

fn memory_hash(c: &Collector) -> u64 {
    let mut h = DefaultHasher::new();
    for i in 0..c.stores().stores().len() {
        c.stores().memory().view(i).to_vec().hash(&mut h);
    }
    h.finish()
}

#[test]
fn immediates_notify_and_bad_writes_never_touch_memory() {
    let cfg = CollectorConfig::parse(
        Path::new("t.toml"),
        &format!(
            "[collector]\nip = \"{COLLECTOR}\"\nmemory = \"pages\"\nseed = 5\n[keywrite]\nport = 1337\nslots = 1024\n"
        ),
    )
    .unwrap();
    let c = Collector::start(&cfg).unwrap();
    let peer = UdpPeer::bind(ME, COLLECTOR, Duration::from_millis(300)).unwrap();

    // CM: REQ → REP → RTU, then the metadata SEND, which the peer ACKs.
    let (conn, meta) = peer.connect(1337, 0x77, 1000).unwrap();
    let region = c.stores().memory().regions()[0];
    assert_eq!((meta.va, meta.len, meta.rkey), (region.va, region.len as u32, region.rkey));

    let write = |psn: u32, qpn: u32, va: u64, rkey: u32, data: &[u8], spoil: bool| {
        let op = Op::Write { va, rkey, imm: None };
        peer.send(frames::request(Transport::Rc, qpn, psn, true, &op, data), spoil).unwrap();
    };
    // A good write lands and is ACKed.
    let mut psn = conn.local_psn;
    write(psn, conn.remote_qpn, meta.va + 8, meta.rkey, &[1, 2, 3, 4, 5, 6, 7, 8], false);
    let (op, p, syn) = head(peer.recv()).expect("an ACK");
    assert_eq!((op, p), (Opcode::RC_ACKNOWLEDGE, psn));
    assert!(matches!(syn, Some(Syndrome::Ack { .. })), "{syn:?}");
    assert_eq!(c.stores().memory().view(0).to_vec()[8..16], [1, 2, 3, 4, 5, 6, 7, 8]);
    psn += 1;

    // A WRITE with Immediate lands, is ACKed, and its immediate reaches every subscriber: a
    // library subscriber and the HTTP `/notifications` query.
    let subscriber = c.subscribe(16);
    let http_notes = c.subscribe(16);
    let op = Op::Write { va: meta.va + 16, rkey: meta.rkey, imm: Some(0xdead_beef) };
    peer.send(frames::request(Transport::Rc, conn.remote_qpn, psn, true, &op, &[9; 8]), false).unwrap();
    let (op, p, _) = head(peer.recv()).expect("an ACK for the WRITE with Immediate");
    assert_eq!((op, p), (Opcode::RC_ACKNOWLEDGE, psn));
    assert_eq!(c.stores().memory().view(0).to_vec()[16..24], [9; 8]);
    let note = subscriber.recv_timeout(Duration::from_secs(2)).expect("a notification");
    assert_eq!(note, Notification { port: 1337, imm: 0xdead_beef });
    let (status, body) = collector::http::answer(&c, &http_notes, "/notifications?wait_ms=2000");
    assert_eq!(status, 200);
    assert_eq!(body, serde_json::json!([{ "port": 1337, "imm": 0xdead_beef_u32 }]));
    assert_eq!(c.stats().snapshot().immediates, 1);
    psn += 1;

    let before = memory_hash(&c);
    let s0 = c.stats().snapshot();
    // Wrong R_Key, VA past and below the region, a length past its end: remote-access-error
    // NAKs for the request's PSN.
    let end = meta.va + u64::from(meta.len);
    for (va, rkey) in
        [(meta.va, meta.rkey ^ 0x100), (end, meta.rkey), (meta.va - 8, meta.rkey), (end - 4, meta.rkey)]
    {
        write(psn, conn.remote_qpn, va, rkey, &[0xee; 8], false);
        let (op, p, syn) = head(peer.recv()).expect("a NAK");
        assert_eq!(
            (op, p, syn),
            (Opcode::RC_ACKNOWLEDGE, psn, Some(Syndrome::Nak(NakCode::RemoteAccessError)))
        );
    }
    // A bad ICRC and an unknown QPN: dropped without an answer.
    write(psn, conn.remote_qpn, meta.va, meta.rkey, &[0xee; 8], true);
    assert_eq!(head(peer.recv()), None, "a bad ICRC must get no answer");
    write(psn, conn.remote_qpn ^ 0x40, meta.va, meta.rkey, &[0xee; 8], false);
    assert_eq!(head(peer.recv()), None, "an unknown QPN must get no answer");
    // Not RoCEv2 at all: dropped, counted as malformed.
    peer.socket().send_to(&[0xff; 10], SocketAddrV4::new(COLLECTOR, 4791)).unwrap();
    std::thread::sleep(Duration::from_millis(50));

    assert_eq!(memory_hash(&c), before, "collector memory changed");
    let s = c.stats().snapshot();
    assert_eq!(s.access_errors - s0.access_errors, 4);
    assert_eq!(s.bad_icrc - s0.bad_icrc, 1);
    assert_eq!(s.unknown_qp - s0.unknown_qp, 1);
    assert_eq!(s.malformed - s0.malformed, 1);
    assert_eq!(s.writes - s0.writes, 0);
    c.stop();
}
