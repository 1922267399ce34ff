use super::*;

fn params() -> ConnectParams {
    ConnectParams {
        local_ip: Ipv4Addr::new(10, 0, 0, 101),
        remote_ip: Ipv4Addr::new(10, 0, 0, 51),
        port: 1337,
        local_qpn: 0x100,
        start_psn: 0xabcdef,
        ca_guid: 0x0202_03ff_fe04_0506,
        path_mtu: 3,
        transport: Transport::Rc,
        src_port: 0xd079,
    }
}

fn cfg() -> CmConfig {
    CmConfig { response_timeout_ns: 1000, max_req_tries: 3, backoff_initial_ns: 5000, backoff_max_ns: 40_000 }
}

/// Encode and decode, as the wire would.
fn over_wire(m: &CmMadRepr) -> CmMadRepr {
    let mut b = [0u8; 256];
    m.emit(&mut b).unwrap();
    CmMadRepr::parse(&b).unwrap()
}

#[test]
fn req_rep_rtu_establishes_both_sides() {
    let mut c = CmClient::new(cfg(), params(), 7);
    let mut s = CmServer::new(cfg(), 0x11);
    let req = over_wire(&c.connect(0));
    let CmMessage::Req(r) = req.message else { panic!() };
    assert_eq!(r.service_id, 0x0000_0000_0106_0539);
    assert_eq!((r.local_qpn, r.starting_psn), (0x100, 0xabcdef));
    let cma = CmaHeaderRepr::parse(&r.private_data).unwrap();
    assert_eq!(cma.addrs, CmaAddrs::V4 { src: params().local_ip, dst: params().remote_ip });
    let mut seen = None;
    let out = s.handle_packet(10, params().local_ip, &req, &mut |r| {
        seen = Some(*r);
        Accept::Yes { qpn: 0x77, psn: 0x123 }
    });
    assert_eq!(seen.unwrap().port, 1337);
    let rep = over_wire(&out.send.unwrap());
    let out = c.handle_packet(20, &rep);
    let Some(ClientEvent::Established(conn)) = out.event else { panic!("{out:?}") };
    assert_eq!((conn.remote_qpn, conn.remote_psn, conn.local_psn), (0x77, 0x123, 0xabcdef));
    let rtu = over_wire(&out.send.unwrap());
    let out = s.handle_packet(30, params().local_ip, &rtu, &mut |_| unreachable!());
    let Some(ServerEvent::Established(sc)) = out.event else { panic!() };
    assert_eq!((sc.remote_qpn, sc.remote_psn, sc.local_qpn), (0x100, 0xabcdef, 0x77));
    assert_eq!(c.connection(), Some(conn));
}

#[test]
fn lost_req_is_resent_then_times_out_with_backoff() {
    let mut c = CmClient::new(cfg(), params(), 1);
    c.connect(0);
    assert!(c.handle_timeout(999).send.is_none());
    assert!(matches!(c.handle_timeout(1000).send.unwrap().message, CmMessage::Req(_)));
    assert!(c.handle_timeout(2000).send.is_some());
    let out = c.handle_timeout(3000);
    assert_eq!(out.event, Some(ClientEvent::Failed(ConnectError::Timeout)));
    assert_eq!(c.state(), ClientState::Backoff { until: 8000, why: ConnectError::Timeout });
    assert!(c.handle_timeout(7999).send.is_none());
    // A new attempt with a new communication ID.
    let Some(m) = c.handle_timeout(8000).send else { panic!() };
    let CmMessage::Req(r) = m.message else { panic!() };
    assert_eq!(r.local_comm_id, 3);
}

#[test]
fn rej_backs_off_exponentially_and_duplicates_are_handled() {
    let mut c = CmClient::new(cfg(), params(), 1);
    let mut s = CmServer::new(cfg(), 0x11);
    let req = c.connect(0);
    let rej = s.handle_packet(1, params().local_ip, &req, &mut |_| Accept::No(28)).send.unwrap();
    assert_eq!(c.handle_packet(2, &rej).event, Some(ClientEvent::Failed(ConnectError::Rejected(28))));
    assert_eq!(c.poll_timeout(), Some(5002));
    let req = c.handle_timeout(5002).send.unwrap();
    let rej = s.handle_packet(5003, params().local_ip, &req, &mut |_| Accept::No(28)).send.unwrap();
    c.handle_packet(5004, &rej);
    assert_eq!(c.poll_timeout(), Some(5004 + 10_000), "the backoff doubles");
    // Accepted at last; the REP is lost, the REQ resent, the same REP comes back.
    let req = c.handle_timeout(15_004).send.unwrap();
    let rep1 = s
        .handle_packet(15_005, params().local_ip, &req, &mut |_| Accept::Yes { qpn: 9, psn: 1 })
        .send
        .unwrap();
    let req2 = c.handle_timeout(16_004).send.unwrap();
    let rep2 = s.handle_packet(16_005, params().local_ip, &req2, &mut |_| unreachable!()).send.unwrap();
    assert_eq!(rep1, rep2);
    assert!(matches!(c.handle_packet(16_006, &rep2).event, Some(ClientEvent::Established(_))));
    // No timer resends a REP: one REP per REQ received. Without its RTU the connection
    // expires after `max_req_tries` response timeouts from the last REP.
    assert!(s.handle_timeout(16_005 + 1000).send.is_none());
    assert_eq!(s.poll_timeout(), Some(16_005 + 3 * 1000));
    assert!(matches!(s.handle_timeout(16_005 + 3000).event, Some(ServerEvent::TimedOut(_))));
}

#[test]
fn dreq_is_answered_and_reported() {
    let mut c = CmClient::new(cfg(), params(), 1);
    let mut s = CmServer::new(cfg(), 0x11);
    let req = c.connect(0);
    let rep =
        s.handle_packet(1, params().local_ip, &req, &mut |_| Accept::Yes { qpn: 9, psn: 1 }).send.unwrap();
    let rtu = c.handle_packet(2, &rep).send.unwrap();
    s.handle_packet(3, params().local_ip, &rtu, &mut |_| unreachable!());
    let dreq = c.reset(4, ConnectError::Disconnected).unwrap();
    let out = s.handle_packet(5, params().local_ip, &dreq, &mut |_| unreachable!());
    assert!(matches!(out.send.unwrap().message, CmMessage::Drep(_)));
    assert!(matches!(out.event, Some(ServerEvent::Disconnected(_))));
    assert_eq!(s.connections().count(), 0);
}

#[test]
fn metadata_is_four_little_endian_words() {
    let m = Metadata { va: 0x1122_3344_5566_7788, len: 0x1000, rkey: 0xabcd };
    let b = m.encode();
    assert_eq!(b, [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 0x10, 0, 0, 0xcd, 0xab, 0, 0]);
    assert_eq!(Metadata::decode(&b), Some(m));
    assert_eq!(Metadata::decode(&b[..15]), None);
}

/// Connect a client of QPN `qpn` from `ip` to `s`: (client, server's connection).
fn connect_one(s: &mut CmServer, ip: Ipv4Addr, qpn: u32, id: u32) -> (CmClient, Connection) {
    let mut c = CmClient::new(cfg(), ConnectParams { local_ip: ip, local_qpn: qpn, ..params() }, id);
    let req = over_wire(&c.connect(0));
    let rep = s.handle_packet(1, ip, &req, &mut |_| Accept::Yes { qpn: 0x700 + qpn, psn: 1 }).send.unwrap();
    let out = c.handle_packet(2, &over_wire(&rep));
    let rtu = over_wire(&out.send.unwrap());
    let Some(ServerEvent::Established(sc)) = s.handle_packet(3, ip, &rtu, &mut |_| unreachable!()).event
    else {
        panic!()
    };
    (c, sc)
}

/// The attack: DREQs guessed from another address, or with the IDs but not the QPN, or a
/// comm ID off by one — none disconnects; the peer's own does.
#[test]
fn only_the_peer_naming_the_connection_disconnects_it() {
    let mut s = CmServer::with_seed(cfg(), 0x11, 0xdead_beef);
    let ip = params().local_ip;
    let (mut c, sc) = connect_one(&mut s, ip, 0x100, 9);
    let dreq = |local: u32, remote: u32, qpn: u32| {
        over_wire(&CmMadRepr::send(
            1,
            CmMessage::Dreq(DreqRepr {
                local_comm_id: local,
                remote_comm_id: remote,
                remote_qpn: qpn,
                private_data: [0; private_len::DREQ],
            }),
        ))
    };
    let attacker = Ipv4Addr::new(10, 0, 0, 66);
    let tries = [
        (attacker, dreq(sc.remote_comm_id, sc.local_comm_id, sc.local_qpn)),
        (ip, dreq(sc.remote_comm_id, sc.local_comm_id, sc.local_qpn + 1)),
        (ip, dreq(sc.remote_comm_id + 1, sc.local_comm_id, sc.local_qpn)),
        (ip, dreq(sc.remote_comm_id, sc.local_comm_id.wrapping_add(1), sc.local_qpn)),
    ];
    for (src, m) in &tries {
        let out = s.handle_packet(10, *src, m, &mut |_| unreachable!());
        assert_eq!((out.send, out.event), (None, None));
    }
    assert_eq!(s.stats().bad_dreqs, 4);
    assert_eq!(s.connections().count(), 1, "the connection is intact");
    // The client ignores a DREQ that does not name it either.
    let Some(conn) = c.connection() else { panic!() };
    let bad = dreq(conn.remote_comm_id, conn.local_comm_id, conn.local_qpn + 1);
    assert!(c.handle_packet(11, &bad).event.is_none());
    assert!(c.connection().is_some());
    // The real one.
    let real = over_wire(&c.reset(12, ConnectError::Disconnected).unwrap());
    let out = s.handle_packet(13, ip, &real, &mut |_| unreachable!());
    assert!(matches!(out.event, Some(ServerEvent::Disconnected(_))));
    assert_eq!(s.connections().count(), 0);
}

#[test]
fn server_communication_ids_are_not_sequential_and_differ_by_seed() {
    let ids = |seed: u32| {
        let mut s = CmServer::with_seed(cfg(), 0x11, seed);
        (0..8).map(|_| s.next_comm_id()).collect::<Vec<u32>>()
    };
    let a = ids(1);
    assert_ne!(a, ids(2));
    let steps: std::collections::HashSet<u32> = a.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    assert!(steps.len() > 4, "{a:x?}");
    assert!(a.iter().all(|&i| i != 0));
}

/// A REQ for `qpn` from `ip` with communication ID `id`, answered with `qpn`: the server's reply.
fn req_from(s: &mut CmServer, now: u64, ip: Ipv4Addr, qpn: u32, id: u32) -> CmMessage {
    let mut c = CmClient::new(cfg(), ConnectParams { local_ip: ip, local_qpn: qpn, ..params() }, id);
    let req = over_wire(&c.connect(0));
    s.handle_packet(now, ip, &req, &mut |_| Accept::Yes { qpn: 0x4000 + id, psn: 1 }).send.unwrap().message
}

/// The attack: one address sends 100 REQs for fresh QPs (no RTU); it never holds more than its
/// per-source share, each REQ gets exactly one reply, the half-open ones it displaces are
/// counted, and they expire; another host's connections are never touched.
#[test]
fn connection_floods_are_limited_and_half_open_ones_expire() {
    let mut s = CmServer::with_seed(cfg(), 0x11, 5);
    s.set_limits(CmLimits { per_source: 10, total: 15 });
    let flooder = Ipv4Addr::new(10, 0, 0, 66);
    let other = Ipv4Addr::new(10, 0, 0, 7);
    for q in 0..5 {
        connect_one(&mut s, other, 0x200 + q, 1000 + q * 16);
    }
    for q in 0..100u32 {
        assert!(matches!(req_from(&mut s, 1, flooder, 0x1000 + q, q * 16), CmMessage::Rep(_)));
        assert!(s.connections().filter(|c| !c.1).count() <= 10);
    }
    assert_eq!((s.stats().half_open_evicted, s.stats().over_limit), (90, 0));
    assert_eq!(s.connections().count(), 15);
    // No timer sends anything: 100 REQs bought 100 replies, no more.
    assert!(s.handle_timeout(2).send.is_none());
    // The flooder's 10 half-open connections expire after max_req_tries response timeouts.
    let mut expired = 0;
    while let Some(ServerEvent::TimedOut(_)) = s.handle_timeout(1 + 3000).event {
        expired += 1;
    }
    assert_eq!((expired, s.stats().half_open_expired), (10, 10));
    assert_eq!(s.connections().count(), 5, "the other host's, established, stay");
}

/// The bypass: REQs that reuse one QPN with fresh communication IDs each replace the last
/// half-open one (counted) instead of piling up past every limit.
#[test]
fn reqs_reusing_one_qpn_with_fresh_ids_hold_one_connection() {
    let mut s = CmServer::with_seed(cfg(), 0x11, 5);
    s.set_limits(CmLimits { per_source: 4, total: 8 });
    let flooder = Ipv4Addr::new(10, 0, 0, 66);
    for id in 0..3000u32 {
        assert!(matches!(req_from(&mut s, u64::from(id), flooder, 0x55, id + 1), CmMessage::Rep(_)));
    }
    assert_eq!(s.connections().count(), 1);
    assert_eq!(s.stats().half_open_replaced, 2999);
}

/// A flood from several sources fills the total with half-open connections; a legitimate
/// restarted peer still connects (the most flooding source's oldest half-open one makes room),
/// and only established connections can make the server refuse.
#[test]
fn a_legitimate_reconnect_gets_through_a_flood() {
    let mut s = CmServer::with_seed(cfg(), 0x11, 5);
    s.set_limits(CmLimits { per_source: 64, total: 128 });
    for f in 0..4u8 {
        let ip = Ipv4Addr::new(10, 9, 0, f);
        for q in 0..200u32 {
            req_from(&mut s, 1, ip, q, u32::from(f) * 1000 + q + 1);
        }
    }
    assert_eq!(s.connections().count(), 128);
    let peer = Ipv4Addr::new(10, 0, 0, 7);
    for q in 0..8 {
        connect_one(&mut s, peer, 0x200 + q, 50_000 + q * 16);
    }
    assert_eq!(s.connections().filter(|c| c.1).count(), 8, "the peer's eight QPs are established");
    assert_eq!(s.stats().over_limit, 0);
    // Established connections are never evicted: a server full of them refuses.
    let mut s = CmServer::with_seed(cfg(), 0x11, 5);
    s.set_limits(CmLimits { per_source: 2, total: 3 });
    connect_one(&mut s, Ipv4Addr::new(10, 0, 0, 1), 1, 100);
    connect_one(&mut s, Ipv4Addr::new(10, 0, 0, 2), 2, 200);
    connect_one(&mut s, Ipv4Addr::new(10, 0, 0, 3), 3, 300);
    assert!(
        matches!(req_from(&mut s, 5, Ipv4Addr::new(10, 0, 0, 4), 4, 400), CmMessage::Rej(r) if r.reason == 3)
    );
    assert_eq!(s.stats().over_limit, 1);
}

/// The RTU is lost: the peer's first packet on the new QP establishes the connection.
#[test]
fn data_on_a_half_open_connection_establishes_it() {
    let mut s = CmServer::new(cfg(), 0x11);
    let ip = params().local_ip;
    let mut c = CmClient::new(cfg(), params(), 7);
    let req = over_wire(&c.connect(0));
    let rep = s.handle_packet(1, ip, &req, &mut |_| Accept::Yes { qpn: 0x77, psn: 1 }).send.unwrap();
    assert!(matches!(c.handle_packet(2, &over_wire(&rep)).event, Some(ClientEvent::Established(_))));
    assert_eq!(s.establish_by_data(Ipv4Addr::new(10, 0, 0, 9), 0x77), None, "not from another address");
    assert_eq!(s.establish_by_data(ip, 0x78), None, "not for another QP");
    let conn = s.establish_by_data(ip, 0x77).unwrap();
    assert_eq!(conn.local_qpn, 0x77);
    assert_eq!(s.connections().filter(|c| c.1).count(), 1);
    assert_eq!(s.poll_timeout(), None, "nothing left to expire");
}

/// The server resends no REP, so the client repeats its RTU every response timeout (up to
/// `max_req_tries` in all) until the peer confirms the connection; the server takes a late RTU
/// once and ignores its copies.
#[test]
fn the_client_repeats_its_rtu_until_confirmed() {
    let mut c = CmClient::new(cfg(), params(), 7);
    let mut s = CmServer::new(cfg(), 0x11);
    let ip = params().local_ip;
    let req = over_wire(&c.connect(0));
    let rep = s.handle_packet(1, ip, &req, &mut |_| Accept::Yes { qpn: 0x77, psn: 1 }).send.unwrap();
    let first = c.handle_packet(2, &over_wire(&rep)).send.unwrap();
    assert!(matches!(first.message, CmMessage::Rtu(_)));
    // The first RTU is lost; two copies follow, one response timeout apart, then no more.
    assert_eq!(c.poll_timeout(), Some(1002));
    let copy = c.handle_timeout(1002).send.unwrap();
    assert_eq!(copy, first);
    assert!(c.handle_timeout(1500).send.is_none());
    assert!(c.handle_timeout(2002).send.is_some());
    assert_eq!(c.poll_timeout(), None, "max_req_tries RTUs in all");
    let est = s.handle_packet(2003, ip, &over_wire(&copy), &mut |_| unreachable!());
    assert!(matches!(est.event, Some(ServerEvent::Established(_))));
    assert_eq!(s.handle_packet(2004, ip, &over_wire(&copy), &mut |_| unreachable!()).event, None);
    // Confirmed at once: no copies at all.
    let mut c = CmClient::new(cfg(), params(), 9);
    let req = over_wire(&c.connect(0));
    let rep = s.handle_packet(1, ip, &req, &mut |_| Accept::Yes { qpn: 0x78, psn: 1 }).send.unwrap();
    c.handle_packet(2, &over_wire(&rep));
    c.confirm();
    assert_eq!(c.poll_timeout(), None);
}
