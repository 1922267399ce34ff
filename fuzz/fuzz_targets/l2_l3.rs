//! Ethernet / 802.1Q, IPv4, UDP and MAC Control (PFC, PAUSE) parsers on arbitrary frames.
//! Whatever parses must emit and parse back to the same repr.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::arp::ArpRepr;
use wire::pfc::MacControlRepr;
use wire::{EthernetRepr, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr};

fuzz_target!(|data: &[u8]| {
    if let Ok(eth) = EthernetRepr::parse(data) {
        let mut b = [0u8; 18];
        eth.emit(&mut b).unwrap();
        assert_eq!(EthernetRepr::parse(&b[..eth.buffer_len()]).unwrap(), eth);
        let rest = &data[eth.buffer_len()..];
        let _ = MacControlRepr::parse(rest);
        if let Ok(a) = ArpRepr::parse(rest) {
            let mut b = [0u8; 28];
            a.emit(&mut b).unwrap();
            assert_eq!(ArpRepr::parse(&b).unwrap(), a);
        }
        if let Ok(p) = Ipv4Packet::new_checked(rest) {
            let _ = (p.verify_checksum(), p.payload());
            if let Ok(u) = UdpPacket::new_checked(p.payload()) {
                let _ = u.verify_checksum(p.src_addr(), p.dst_addr());
            }
        }
    }
    if let Ok(ip) = Ipv4Repr::parse(data) {
        let mut b = vec![0u8; 20 + ip.payload_len];
        ip.emit(&mut b).unwrap();
        assert_eq!(Ipv4Repr::parse(&b).unwrap(), ip);
    }
    if let Ok(u) = UdpRepr::parse(data) {
        let mut b = vec![0u8; 8 + u.payload_len];
        u.emit(&mut b).unwrap();
        assert_eq!(UdpRepr::parse(&b).unwrap(), u);
    }
    if let Ok(m) = MacControlRepr::parse(data) {
        let mut b = [0u8; 20];
        m.emit(&mut b).unwrap();
        assert_eq!(MacControlRepr::parse(&b).unwrap(), m);
    }
});
