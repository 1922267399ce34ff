//! Arbitrary frames through a `hawkeye` switch (three ports, routes, an analyzer): ingress,
//! the traffic manager, egress with the telemetry and the polling rules, the control side's
//! reports. The first byte picks the port, the second whether the frame is made a polling
//! packet (EtherType 0x6888). Nothing may panic, and the switch takes in every frame.
#![no_main]

use std::sync::Mutex;

use dataplane::programs::hawkeye::Hawkeye;
use libfuzzer_sys::fuzz_target;

#[path = "support/mod.rs"]
mod support;
use support::Harness;

const CFG: &str = r#"
program = "hawkeye"
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
speed = "10G"
mac = "02:4b:00:00:00:02"
ipv4 = ["10.0.2.1/24"]
[l2l3]
neighbor = [{ ip = "10.0.0.2", mac = "02:00:00:00:00:02", port = "h0" },
            { ip = "10.0.1.2", mac = "02:00:00:00:01:02", port = "h1" },
            { ip = "10.0.2.100", mac = "02:00:00:00:02:64", port = "h2" }]
[hawkeye]
flow_slots = 1024
analyzer = "10.0.2.100:9999"
"#;

static STATE: Mutex<Option<Harness<Hawkeye>>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut guard = STATE.lock().unwrap();
    let st = guard.get_or_insert_with(|| Harness::new(CFG, 3));
    let (Some(&port), Some(&polling)) = (data.first(), data.get(1)) else { return };
    let mut bytes = data[2..].to_vec();
    if polling & 1 == 1 && bytes.len() >= 14 {
        bytes[12] = 0x68;
        bytes[13] = 0x88;
    }
    st.step(port, &bytes, 1_000);
});
