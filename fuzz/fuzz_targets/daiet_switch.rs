//! Arbitrary frames through a `daiet` switch (two trees of 4 cells, so collisions, spills and
//! flushes happen within a few inputs): the first byte picks the port, the second the shape —
//! an IPv4/UDP frame to port 10000 whose payload is the rest (a DAIET packet or not), or the
//! bytes as they are. Ticks drive the flushes. Nothing may panic.
#![no_main]

use std::sync::Mutex;

use dataplane::programs::daiet::Daiet;
use libfuzzer_sys::fuzz_target;

#[path = "support/mod.rs"]
mod support;
use support::Harness;

const CFG: &str = r#"
program = "daiet"
[[port]]
name = "h0"
backend = "ring"
speed = "10G"
mac = "02:da:00:00:00:00"
ipv4 = ["10.0.0.1/24"]
[[port]]
name = "r0"
backend = "ring"
speed = "10G"
mac = "02:da:00:00:00:01"
ipv4 = ["10.0.1.1/24"]
[l2l3]
neighbor = [{ ip = "10.0.1.2", mac = "02:00:00:00:01:02", port = "r0" }]
[[daiet.tree]]
id = 1
reducer = "10.0.1.2"
children = 2
cells = 4
[[daiet.tree]]
id = 2
reducer = "10.0.9.9"
children = 1
cells = 4
function = "max"
"#;

static STATE: Mutex<Option<Harness<Daiet>>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut guard = STATE.lock().unwrap();
    let st = guard.get_or_insert_with(|| Harness::new(CFG, 2));
    let (Some(&port), Some(&shape)) = (data.first(), data.get(1)) else { return };
    let rest = &data[2..];
    let bytes = if shape & 1 == 0 {
        // Ethernet, IPv4 (20 bytes), UDP to 10000 with its length, then the rest.
        let mut b = vec![0u8; 42];
        b[12..14].copy_from_slice(&[0x08, 0x00]);
        b[14] = 0x45;
        b[23] = 17;
        b[26..30].copy_from_slice(&[10, 0, 0, 2]);
        b[30..34].copy_from_slice(&[10, 0, 1, 2]);
        b[36..38].copy_from_slice(&10000u16.to_be_bytes());
        let udp_len = (8 + rest.len()).min(usize::from(u16::MAX)) as u16;
        b[38..40].copy_from_slice(&udp_len.to_be_bytes());
        b.extend_from_slice(rest);
        b
    } else {
        rest.to_vec()
    };
    st.step(port, &bytes, 7_919);
});
