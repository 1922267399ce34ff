//! Arbitrary frames through a `ufab` switch (three ports, neighbours, one port failed now and
//! then): source routing (MPLS pops, failure notifications), probes stamped at egress, the
//! core's Bloom filter and records, cleaning. The first byte picks the port, the second the
//! shape — an MPLS frame, an IPv4/UDP µFAB packet to port 40050, or the bytes as they are — and
//! the third, odd, flips port h2's failure. Nothing may panic.
#![no_main]

use std::sync::Mutex;

use dataplane::programs::ufab::{Command, Ufab};
use libfuzzer_sys::fuzz_target;

#[path = "support/mod.rs"]
mod support;
use support::Harness;

const CFG: &str = r#"
program = "ufab"
[[port]]
name = "h0"
backend = "ring"
speed = "10G"
mac = "02:4b:00:00:00:00"
ipv4 = ["10.0.0.1/24"]
[[port]]
name = "h1"
backend = "ring"
speed = "10G"
mac = "02:4b:00:00:00:01"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "h2"
backend = "ring"
speed = "100G"
mac = "02:4b:00:00:00:02"
ipv4 = ["10.0.2.1/24"]
[l2l3]
neighbor = [{ ip = "10.0.0.2", mac = "02:00:00:00:00:02", port = "h0" },
            { ip = "10.0.1.2", mac = "02:00:00:00:01:02", port = "h1" },
            { ip = "10.0.2.2", mac = "02:00:00:00:02:02", port = "h2" }]
[ufab]
bloom_bytes = 256
records = 16
clean_period_ns = 1000000
"#;

struct State {
    h: Harness<Ufab>,
    failed: bool,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut guard = STATE.lock().unwrap();
    let st = guard.get_or_insert_with(|| State { h: Harness::new(CFG, 3), failed: false });
    let (Some(&port), Some(&shape), Some(&flip)) = (data.first(), data.get(1), data.get(2)) else { return };
    if flip & 1 == 1 {
        st.failed = !st.failed;
        let names = ["h0".to_string(), "h1".to_string(), "h2".to_string()];
        let line = if st.failed { "ufab fail h2" } else { "ufab restore h2" };
        let _ = st.h.sw.control(Command::parse(line, &names).unwrap(), st.h.now);
    }
    let mut bytes = data[3..].to_vec();
    match shape % 3 {
        0 if bytes.len() >= 14 => bytes[12..14].copy_from_slice(&[0x88, 0x47]),
        1 if bytes.len() >= 42 => {
            bytes[12..14].copy_from_slice(&[0x08, 0x00]);
            bytes[14] = 0x45;
            bytes[20] = 0;
            bytes[21] = 0;
            bytes[23] = 17;
            bytes[36..38].copy_from_slice(&wire::udp::port::UFAB.to_be_bytes());
        }
        _ => {}
    }
    st.h.step(port, &bytes, 7_919);
});
