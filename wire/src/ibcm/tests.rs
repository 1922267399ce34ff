use super::*;

fn req() -> ReqRepr {
    let mut private_data = [0u8; private_len::REQ];
    CmaHeaderRepr {
        version: 0,
        port: 0xd079,
        addrs: CmaAddrs::V4 { src: Ipv4Addr::new(10, 0, 0, 101), dst: Ipv4Addr::new(10, 0, 0, 51) },
    }
    .emit(&mut private_data)
    .unwrap();
    ReqRepr {
        local_comm_id: 1337,
        vendor_id: 0x0015b3,
        service_id: rdma_cm_service_id(port_space::TCP, 1337),
        local_ca_guid: 0xb8ce_f603_00d2_1326,
        local_qkey: 0,
        local_qpn: 1337,
        responder_resources: 0,
        local_eecn: 0,
        initiator_depth: 3,
        remote_eecn: 0,
        remote_cm_response_timeout: 20,
        transport_type: transport::RC,
        e2e_flow_control: true,
        starting_psn: 0xe6fb20,
        local_cm_response_timeout: 20,
        retry_count: 7,
        pkey: 0xffff,
        path_mtu: 3,
        rdc_exists: false,
        rnr_retry_count: 7,
        max_cm_retries: 15,
        srq: false,
        extended_transport_type: 0,
        primary_path: PathRepr {
            local_lid: 0xffff,
            remote_lid: 0xffff,
            local_gid: ipv4_mapped_gid(Ipv4Addr::new(10, 0, 0, 101)),
            remote_gid: ipv4_mapped_gid(Ipv4Addr::new(10, 0, 0, 51)),
            flow_label: 0,
            packet_rate: 3,
            traffic_class: 0,
            hop_limit: 64,
            sl: 0,
            subnet_local: false,
            local_ack_timeout: 18,
        },
        alternate_path: PathRepr::default(),
        private_data,
    }
}

#[test]
fn req_layout_and_roundtrip() {
    let mad = CmMadRepr::send(0x1234, CmMessage::Req(req()));
    let mut buf = [0u8; MAD_LEN];
    mad.emit(&mut buf).unwrap();
    assert_eq!(&buf[..4], &[1, 0x07, 2, 0x03]);
    assert_eq!(&buf[16..18], &[0x00, 0x10]);
    let d = &buf[MAD_HEADER_LEN..];
    assert_eq!(&d[5..8], &[0x00, 0x15, 0xb3]);
    assert_eq!(&d[8..16], &[0, 0, 0, 0, 0x01, 0x06, 0x05, 0x39]);
    assert_eq!(&d[32..36], &[0x00, 0x05, 0x39, 0x00]);
    assert_eq!(&d[44..48], &[0xe6, 0xfb, 0x20, (20 << 3) | 7]);
    assert_eq!(d[50], (3 << 4) | 7);
    assert_eq!(&d[140..144], &[0x00, 0x40, 0xd0, 0x79]);
    assert_eq!(&d[156..160], &[10, 0, 0, 101]);
    assert_eq!(CmMadRepr::parse(&buf).unwrap(), mad);
    let p = MadPacket::new_checked(&buf[..]).unwrap();
    assert_eq!(p.local_comm_id(), 1337);
    let cma = CmaHeaderRepr::parse(&d[140..]).unwrap();
    assert_eq!(cma.port, 0xd079);
}

#[test]
fn rep_fields_where_the_reference_reads_them() {
    // The reference translator reads the REP's local QPN at bytes 12-14 and its starting PSN
    // at bytes 20-22 of the message area.
    let rep = RepRepr {
        local_comm_id: 7,
        remote_comm_id: 1337,
        local_qkey: 0,
        local_qpn: 0x00ab_cdef,
        local_eecn: 0,
        starting_psn: 0x0012_3456,
        responder_resources: 0,
        initiator_depth: 0,
        target_ack_delay: 15,
        failover_accepted: 0,
        e2e_flow_control: false,
        rnr_retry_count: 7,
        srq: false,
        local_ca_guid: 1,
        private_data: [0; private_len::REP],
    };
    let mut buf = [0u8; MAD_LEN];
    CmMadRepr::send(1, CmMessage::Rep(rep)).emit(&mut buf).unwrap();
    let d = &buf[MAD_HEADER_LEN..];
    assert_eq!(&d[12..15], &[0xab, 0xcd, 0xef]);
    assert_eq!(&d[20..23], &[0x12, 0x34, 0x56]);
}

#[test]
fn wrong_class_or_attribute() {
    let mut buf = [0u8; MAD_LEN];
    CmMadRepr::send(1, CmMessage::Req(req())).emit(&mut buf).unwrap();
    let mut b = buf;
    b[1] = 0x04;
    assert_eq!(CmMadRepr::parse(&b).unwrap_err().field(), "mad.mgmt_class");
    let mut b = buf;
    b[17] = 0x11;
    assert_eq!(CmMadRepr::parse(&b).unwrap_err(), Error::Unsupported { field: "mad.attr_id", value: 0x11 });
    assert_eq!(CmMadRepr::parse(&buf[..255]).unwrap_err().field(), "mad");
}
