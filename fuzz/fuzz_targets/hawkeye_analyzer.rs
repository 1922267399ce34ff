//! The Hawkeye analyzer's inputs, whatever they hold: bytes as a telemetry report (UDP from a
//! switch), as the words of a DTA Append list, and as text in each of a lab run's three files
//! (reports and polls as JSON lines, the topology as JSON). Whatever parses is grouped into
//! incidents and diagnosed against a small fixed topology and against the parsed one: every
//! incident gets at least one answer, and nothing panics.
#![no_main]

use collector::hawkeye::{self, Params, Received, Topology, dta, lab};
use libfuzzer_sys::fuzz_target;

const TOPOLOGY: &str = r#"{"switches":[
 {"switch_id":1,"ports":[{"port":0,"host":0,"ip":"10.0.0.2"},{"port":1,"switch_id":2,"peer_port":0}]},
 {"switch_id":2,"ports":[{"port":0,"switch_id":1,"peer_port":1},{"port":1,"host":1,"ip":"10.0.1.2"}]}]}"#;

fn diagnose(reports: Vec<Received>, topos: &[&Topology]) {
    let incs = hawkeye::incidents(reports, 2_000_000);
    for inc in &incs {
        for t in topos {
            let (_, ds) = hawkeye::analyze(inc, t, &Params::default());
            assert!(!ds.is_empty(), "every incident is answered");
            for d in &ds {
                let _ = hawkeye::render::summary(d);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let fixed = Topology::from_json(TOPOLOGY).unwrap();
    let mut reports = Vec::new();
    if let Ok(r) = Received::parse(0, data) {
        reports.push(r);
    }
    let words: Vec<u32> =
        data.chunks(4).map(|c| c.iter().fold(0u32, |w, &b| (w << 8) | u32::from(b))).collect();
    reports.extend(dta::reports(&words, 1).0);
    let text = String::from_utf8_lossy(data);
    if let Ok(r) = lab::reports(&text) {
        reports.extend(r);
    }
    let polls = lab::polls(&text).unwrap_or_default();
    let parsed = Topology::from_json(&text).ok();
    let mut topos = vec![&fixed];
    if let Some(t) = &parsed {
        topos.push(t);
    }
    let mut incs = hawkeye::incidents(reports.clone(), 2_000_000);
    lab::attach_victims(&mut incs, &polls, 2_000_000);
    for inc in &incs {
        for v in &inc.victims {
            let _ = hawkeye::victim_path_reports(inc, v, &fixed);
        }
    }
    diagnose(reports, &topos);
});
