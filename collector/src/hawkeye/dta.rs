//! Hawkeye reports read back from a DTA collector's Append lists: the composition where each
//! switch's control side sends its reports as DTA Append words (`[hawkeye] dta_collector`,
//! one list per switch) and the translator writes them into collector memory with RDMA.
//!
//! A list holds each report as a frame word then its bytes ([`wire::hawkeye::report::words`]).
//! The list carries no arrival time: every report read in one pass gets the same time, so an
//! incident is the reports of one event ID in that pass (event IDs are the agents' milliseconds
//! mod 256 — read the lists more often than every 256 ms, or two events may share an ID).

use wire::hawkeye::report;

use super::{AnalyzeError, Received};

/// The reports in `words` (one list's entries, oldest first), each stamped `t_ns`; a frame or
/// report that does not parse ends the walk with the error, after the reports before it (a list
/// overwritten mid-frame, or not a Hawkeye list).
pub fn reports(words: &[u32], t_ns: u64) -> (Vec<Received>, Option<AnalyzeError>) {
    let mut out = Vec::new();
    let mut bytes = Vec::new();
    for (index, frame) in report::frames(words).enumerate() {
        let frame = match frame {
            Ok(f) => f,
            Err(source) => return (out, Some(AnalyzeError::Report { index, source })),
        };
        bytes.clear();
        bytes.extend(frame.iter().flat_map(|w| w.to_be_bytes()));
        match Received::parse(t_ns, &bytes) {
            Ok(r) => out.push(r),
            Err(source) => return (out, Some(AnalyzeError::Report { index, source })),
        }
    }
    (out, None)
}

#[cfg(test)]
mod tests {
    use wire::hawkeye::report::{Entry, ReportHeader, emit_report, words};

    use super::*;

    fn report(event_id: u8, out_port: u16, entries: &[Entry]) -> Vec<u8> {
        let h = ReportHeader {
            flag: 1,
            switch_id: 3,
            event_id,
            in_port: 0,
            out_port,
            seq: u32::from(out_port),
            part: 0,
            last: true,
        };
        let mut b = vec![0u8; 1472];
        let n = emit_report(&h, entries, &mut b).unwrap();
        b.truncate(n);
        b
    }

    #[test]
    fn a_lists_words_read_back_as_the_reports_sent_and_a_cut_frame_is_named() {
        let e = [Entry::Port { port: 1, epoch_id: 9, pkts: 10, paused: 3, qdepth_sum: 4000 }];
        let (a, b) = (report(4, 1, &e), report(4, 2, &[]));
        let list: Vec<u32> = words(&a).chain(words(&b)).collect();
        let (got, err) = reports(&list, 7);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(got, vec![Received::parse(7, &a).unwrap(), Received::parse(7, &b).unwrap()]);
        let incs = crate::hawkeye::incidents(got, 1);
        assert_eq!(incs.len(), 1, "one event, one pass: one incident");
        // The list cut inside the second report's frame: the first still reads.
        let (got, err) = reports(&list[..list.len() - 1], 7);
        assert_eq!(got.len(), 1);
        assert!(err.unwrap().to_string().contains("hawkeye_report.frame"));
        // Not a Hawkeye list at all.
        let (got, err) = reports(&[1, 2, 3], 0);
        assert!(got.is_empty() && err.is_some());
    }
}
