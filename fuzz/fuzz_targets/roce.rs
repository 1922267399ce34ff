//! RoCEv2: the whole UDP payload parser, every transport header, and the ICRC over arbitrary
//! IPv4 packets. Whatever parses must emit and parse back to the same repr (pad count aside,
//! which the emitter derives from the payload length).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::roce::{
    AethRepr, AtomicAckEthRepr, AtomicEthRepr, BthRepr, DethRepr, ImmDtRepr, RethRepr, RoceRepr, icrc,
};

fuzz_target!(|data: &[u8]| {
    let _ = (BthRepr::parse(data), RethRepr::parse(data), AtomicEthRepr::parse(data));
    let _ =
        (AethRepr::parse(data), AtomicAckEthRepr::parse(data), ImmDtRepr::parse(data), DethRepr::parse(data));
    if let Ok(r) = RoceRepr::parse(data) {
        let mut b = vec![0u8; r.buffer_len()];
        assert_eq!(r.emit(&mut b).unwrap(), b.len());
        let mut back = RoceRepr::parse(&b).unwrap();
        back.bth.pad_count = r.bth.pad_count;
        assert_eq!(back, r);
    }
    if let Ok(c) = icrc::compute(data) {
        let mut v = data.to_vec();
        assert_eq!(icrc::fill(&mut v).unwrap(), c);
        icrc::verify(&v).unwrap();
    }
    let _ = icrc::stored(data);
});
