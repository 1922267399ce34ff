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
    // The server resends its REP until the RTU comes.
    assert!(s.handle_timeout(16_005 + 1000).send.is_some());
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
