//! Hawkeye through `dataplane run` on AF_PACKET between two network namespaces: host 0 sends a
//! UDP flow to host 1, then polls for it (a polling packet from a raw socket, as the detection
//! agent sends one); the switch's control side sends its telemetry report over UDP to an
//! analyzer listening in host 1, which the test reads back: the switch, the event, the port the
//! flow leaves by, and the flow with every packet counted. Needs root; skipped with a message
//! otherwise (a failure under `SOFTFABRIC_REQUIRE_NETNS`).

#[path = "support/netns.rs"]
mod support;

use std::process::Command;
use std::time::Duration;

use support::{Lab, Switch, available};
use wire::hawkeye::report::{Entry, Report};

const PACKETS: usize = 20;

#[test]
fn a_poll_brings_a_telemetry_report_to_the_analyzer() {
    if !available() {
        return;
    }
    let lab = Lab::routed("hk");
    let rest = format!(
        "{}\n[hawkeye]\nswitch_id = 42\nepoch_ns = 1073741824\nflow_slots = 1024\nanalyzer = \"10.0.2.2:4857\"\n",
        support::ROUTED_PORTS
    );
    let sw = Switch::start_program(
        std::path::Path::new(env!("CARGO_BIN_EXE_dataplane")),
        &lab,
        "hk",
        "hawkeye",
        &rest,
    );
    // The analyzer: one report, printed as hex.
    let listen = "import socket,binascii\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
                  s.bind(('0.0.0.0',4857))\ns.settimeout(15)\nd,_=s.recvfrom(2048)\nprint(binascii.hexlify(d).decode())\n";
    let analyzer = Command::new("ip")
        .args(["netns", "exec", &lab.ns[1], "python3", "-c", listen])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // Neighbours resolved first (the switch drops a packet whose next hop it is still asking
    // for), then the flow, then the poll from a raw socket to the switch's MAC on its port 0.
    let ping = lab.exec(0, &["ping", "-c", "2", "-i", "0.2", "-W", "2", "10.0.2.2"]);
    assert!(ping.status.success(), "ping: {}", String::from_utf8_lossy(&ping.stdout));
    let send = format!(
        "import socket,struct,time\n\
         u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\nu.bind(('10.0.1.2',5000))\n\
         for i in range({PACKETS}):\n    u.sendto(b'x'*64,('10.0.2.2',9000))\n    time.sleep(0.01)\n\
         r=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\nr.bind(('eth0',0))\n\
         me=open('/sys/class/net/eth0/address').read().strip().replace(':','')\n\
         hdr=bytes([0x40,0xff,0x80,0xff,0x80,7])+socket.inet_aton('10.0.1.2')+socket.inet_aton('10.0.2.2')+bytes([17])+struct.pack('!HH',5000,9000)\n\
         f=bytes.fromhex('025f00000001')+bytes.fromhex(me)+b'\\x68\\x88'+hdr\n\
         r.send(f+bytes(60-len(f)))\n"
    );
    let out = lab.exec(0, &["python3", "-c", &send]);
    assert!(out.status.success(), "sender: {}", String::from_utf8_lossy(&out.stderr));
    let got = analyzer.wait_with_output().unwrap();
    let table = sw.stop();
    assert!(got.status.success(), "no report reached the analyzer; the switch said:\n{table}");
    let hex = String::from_utf8_lossy(&got.stdout).trim().to_string();
    let bytes: Vec<u8> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    let r = Report::parse(&bytes).unwrap();
    assert_eq!((r.header.switch_id, r.header.event_id, r.header.in_port, r.header.out_port), (42, 7, 0, 1));
    // The flow's packets, in the current epoch and the one before (the flow may straddle a
    // boundary): every one counted, by its 5-tuple.
    let mut pkts = 0;
    for e in r.entries().map(Result::unwrap) {
        if let Entry::Flow { flow, pkts: n, .. } = e
            && flow.dst_port == 9000
        {
            assert_eq!(
                (flow.src_ip, flow.src_port, flow.protocol),
                (std::net::Ipv4Addr::new(10, 0, 1, 2), 5000, 17)
            );
            pkts += n;
        }
    }
    assert_eq!(pkts as usize, PACKETS, "{:?}", r.header);
}
