//! A PFC storm's two reports, shared by the CLI tests: the victim 10.0.0.2 → 10.0.1.2 is paused
//! at S1.P1 (its link to S2), and S2.P1 is paused by host 1, the host it faces.

use wire::hawkeye::FiveTuple;
use wire::hawkeye::report::{Entry, ReportHeader, emit_report};

/// Two switches in a line, a host at each end.
pub const TOPOLOGY: &str = r#"{"switches":[
 {"switch_id":1,"ports":[{"port":0,"host":0,"ip":"10.0.0.2"},{"port":1,"switch_id":2,"peer_port":0}]},
 {"switch_id":2,"ports":[{"port":0,"switch_id":1,"peer_port":1},{"port":1,"host":1,"ip":"10.0.1.2"}]}]}"#;

/// The storm's reports as bytes: S1's, then S2's (event 9, flag 11, in 0 out 1).
pub fn reports() -> [Vec<u8>; 2] {
    let victim = FiveTuple {
        src_ip: [10, 0, 0, 2].into(),
        dst_ip: [10, 0, 1, 2].into(),
        protocol: 17,
        src_port: 1000,
        dst_port: 4791,
    };
    let report = |sw: u16, pkts: u32, paused: u32, qdepth_sum: u64, bytes: u64| {
        let h = ReportHeader {
            flag: 3,
            switch_id: sw,
            event_id: 9,
            in_port: 0,
            out_port: 1,
            seq: 0,
            part: 0,
            last: true,
        };
        let e = [
            Entry::Port { port: 1, epoch_id: 1, pkts, paused, qdepth_sum },
            Entry::Flow { port: 1, epoch_id: 1, flow: victim, pkts, paused, qdepth_sum },
            Entry::Meter { out_port: 1, epoch_id: 1, in_port: 0, bytes },
        ];
        let mut b = vec![0u8; 1472];
        let n = emit_report(&h, &e, &mut b).unwrap();
        b.truncate(n);
        b
    };
    [report(1, 50, 40, 10_000, 50_000), report(2, 10, 10, 0, 10_000)]
}
