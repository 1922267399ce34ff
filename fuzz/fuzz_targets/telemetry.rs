//! HPCC++ INT, µFAB probes, Hawkeye polling packets and telemetry reports, and DAIET packets. Whatever parses must round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::daiet::DaietRepr;
use wire::hawkeye::PollingRepr;
use wire::hawkeye::report::{Report, emit_report};
use wire::hpcc_int::{IntHeader, IntRepr};
use wire::ufab::{UfabPacket, UfabRepr};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = IntHeader::new_checked(data) {
        for i in 0..usize::from(h.max_hop()) {
            let _ = h.hop(i);
        }
    }
    if let Ok(r) = IntRepr::parse(data) {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        assert_eq!(IntRepr::parse(&b).unwrap(), r);
    }
    if let Ok(p) = UfabPacket::new_checked(data) {
        for i in 0..p.slots() {
            let _ = p.hop(i);
        }
    }
    if let Ok(r) = UfabRepr::parse(data) {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        assert_eq!(UfabRepr::parse(&b).unwrap(), r);
    }
    if let Ok(r) = PollingRepr::parse(data) {
        let mut b = [0u8; 19];
        r.emit(&mut b).unwrap();
        assert_eq!(PollingRepr::parse(&b).unwrap(), r);
    }
    if let Ok(r) = Report::parse(data) {
        // Whatever reads, entries and all, must write back the same bytes' meaning.
        let entries: Result<Vec<_>, _> = r.entries().collect();
        if let Ok(entries) = entries {
            if entries.len() <= wire::hawkeye::report::MAX_ENTRIES {
                let mut b = vec![0u8; wire::hawkeye::report::report_len(entries.len())];
                emit_report(&r.header, &entries, &mut b).unwrap();
                let back = Report::parse(&b).unwrap();
                assert_eq!(back.header, r.header);
                assert!(back.entries().map(Result::unwrap).eq(entries.iter().copied()));
            }
        }
    }
    if let Ok(r) = DaietRepr::parse(data) {
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b).unwrap();
        let back = DaietRepr::parse(&b).unwrap();
        assert_eq!(back, r);
        if let DaietRepr::Data { entries, .. } = back {
            assert_eq!(entries.iter().count(), entries.len());
        }
    }
});
