//! `macswap` in P4: the same steps as [`super::MacSwap::ingress`] — drop what the CPU sends,
//! swap the Ethernet addresses, send out of the paired port (0↔1, 2↔3, …; an odd last port
//! back out of itself). No tables: the pairing is arithmetic on the port number.

use crate::p4::ProgramP4;

/// The rendering for a switch of `ports` front-panel ports.
pub(super) fn rendering(ports: u16) -> ProgramP4 {
    ProgramP4 {
        ingress_apply: format!(
            "// A frame too short for an Ethernet header is not parsed (the Rust program drops it as malformed).
if (!hdr.ethernet.isValid() || SF_INGRESS_PORT >= {ports}) {{
    SF_DROP();
}} else {{
    bit<48> dst = hdr.ethernet.dst_addr;
    hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
    hdr.ethernet.src_addr = dst;
    bit<16> peer = SF_INGRESS_PORT ^ 16w1;
    if (peer >= {ports}) {{
        peer = SF_INGRESS_PORT;
    }}
    SF_SET_EGRESS(peer);
}}"
        ),
        egress_apply: String::new(),
        chain: vec![],
        recirculation: "none: macswap does not loop.".into(),
        limitations: vec![
            format!(
                "ports: the configuration's port i is target port i (BMv2 `-i i@ifname`; on Tofino, dev_port i — map \
                 them with the front-panel numbering of the box). {ports} ports here."
            ),
            "frames shorter than 14 bytes: BMv2 and Tofino parsers reject them before the program runs (the Rust \
             program counts them under `malformed`)."
                .into(),
        ],
        ..ProgramP4::default()
    }
}
