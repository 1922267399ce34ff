//! IB CM MADs and librdmacm's private-data header. Whatever parses must round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::ibcm::{CmMadRepr, CmaHeaderRepr, MadPacket};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = MadPacket::new_checked(data) {
        let _ = (p.tid(), p.attr_id(), p.local_comm_id(), p.remote_comm_id(), p.data().len());
    }
    if let Ok(m) = CmMadRepr::parse(data) {
        let mut b = [0u8; 256];
        m.emit(&mut b).unwrap();
        assert_eq!(CmMadRepr::parse(&b).unwrap(), m);
    }
    if let Ok(c) = CmaHeaderRepr::parse(data) {
        let mut b = [0u8; 36];
        c.emit(&mut b).unwrap();
        assert_eq!(CmaHeaderRepr::parse(&b).unwrap(), c);
    }
});
