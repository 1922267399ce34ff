//! Hawkeye telemetry into a DTA collector's memory on real frames (root; skipped with a message
//! otherwise, a failure under `SOFTFABRIC_REQUIRE_NETNS=1`). Three namespaces and two switches
//! on AF_PACKET veths:
//!
//! ```text
//!  h0 10.0.1.2 ─ p0 [hawkeye] p1 ─ h1 10.0.2.2
//!                       p2 10.0.3.1
//!                       │
//!                    q0 10.0.3.2 [dta_translator] q1 ─ collector 10.0.4.2
//! ```
//!
//! h0 sends a UDP flow to h1 through the `hawkeye` switch, then polls for it (a polling packet
//! from a raw socket, as the detection agent sends one). The switch's control side sends its
//! telemetry report as DTA Append words (list 0) toward the collector; the translator, the
//! collector's ToR, writes them with RoCEv2 into the soft-RNIC collector's ring. The test reads
//! the list back, reassembles and parses the report, and checks every packet of the flow is in
//! it, and that the words the switch counted sent are the words the collector holds.

#[path = "support/in_netns.rs"]
mod netns_thread;
#[path = "../dataplane/tests/support/netns.rs"]
mod support;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use collector::{Collector, CollectorConfig};
use dataplane::config::Config;
use dataplane::runtime::Runtime;
use netns_thread::in_netns;
use softfabric::dta_demo::translator_stats;
use support::{Lab, available, must, run};
use wire::hawkeye::report::{self, Entry, Report};

const PACKETS: usize = 20;
const COLLECTOR: Ipv4Addr = Ipv4Addr::new(10, 0, 4, 2);

/// The third namespace (the collector's) and the switch-to-switch veth, removed on drop.
struct Extra {
    ns: String,
    links: [String; 2],
}

impl Extra {
    fn new(id: &str) -> Self {
        let x = Self { ns: format!("{id}c"), links: [format!("{id}t0"), format!("{id}c0")] };
        x.cleanup();
        must(&["ip", "netns", "add", &x.ns]);
        // hawkeye p2 <-> translator q0, both ends in the root namespace.
        must(&["ip", "link", "add", &x.links[0], "type", "veth", "peer", "name", &format!("{id}t1")]);
        must(&["ip", "link", "set", &x.links[0], "up"]);
        must(&["ip", "link", "set", &format!("{id}t1"), "up"]);
        // translator q1 <-> the collector's eth0.
        must(&["ip", "link", "add", &x.links[1], "type", "veth", "peer", "name", "eth0", "netns", &x.ns]);
        must(&["ip", "link", "set", &x.links[1], "up"]);
        must(&["ip", "netns", "exec", &x.ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]);
        must(&["ip", "-n", &x.ns, "addr", "add", "10.0.4.2/24", "dev", "eth0"]);
        must(&["ip", "-n", &x.ns, "link", "set", "eth0", "up"]);
        must(&["ip", "-n", &x.ns, "link", "set", "lo", "up"]);
        must(&["ip", "-n", &x.ns, "route", "add", "default", "via", "10.0.4.1"]);
        x
    }

    fn cleanup(&self) {
        let _ = run(&["ip", "netns", "del", &self.ns]);
        for l in &self.links {
            let _ = run(&["ip", "link", "del", l]);
        }
    }
}

impl Drop for Extra {
    fn drop(&mut self) {
        self.cleanup();
    }
}

fn port(name: &str, iface: &str, mac: u8, ip: &str) -> String {
    format!(
        "[[port]]\nname = \"{name}\"\nbackend = \"af_packet\"\niface = \"{iface}\"\n\
         mac = \"02:5f:00:00:00:{mac:02x}\"\nspeed = \"10G\"\nipv4 = [\"{ip}\"]\n"
    )
}

fn start(what: &str, text: &str) -> Runtime {
    let cfg = Config::parse(Path::new(what), text).unwrap_or_else(|e| panic!("{what}: {e}"));
    Runtime::start(&cfg).unwrap_or_else(|e| panic!("{what} starts: {e}"))
}

/// A counter of `show`'s answer (`name value` pairs).
fn counter(show: &str, name: &str) -> u64 {
    let mut it = show.split_whitespace();
    while let Some(w) = it.next() {
        if w == name {
            return it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name} in {show}"));
        }
    }
    panic!("no {name} in {show}")
}

#[test]
fn hawkeye_reports_land_in_a_dta_collectors_append_list() {
    if !available() {
        return;
    }
    let lab = Lab::routed("hd");
    let id = lab.ns[0].trim_end_matches('a').to_string();
    let extra = Extra::new(&id);

    let collector_cfg = format!(
        "[collector]\nip = \"{COLLECTOR}\"\nmemory = \"auto\"\n\n[[append]]\nlist = 0\nport = 1338\nentries = 65536\n"
    );
    let cfg = CollectorConfig::parse(Path::new("<netns collector>"), &collector_cfg).unwrap();
    let collector: Collector =
        in_netns(&extra.ns, move || Collector::start(&cfg).expect("the collector starts"));

    let translator = start(
        "<netns translator>",
        &format!(
            "program = \"dta_translator\"\n[runtime]\nburst = 32\n\n{}{}\n[dta]\nappend_flush_us = 200\n\
             cm_timeout_ms = 50\ncm_backoff_ms = 50\n\n[[dta.collector]]\nname = \"c0\"\nip = \"{COLLECTOR}\"\n\
             append = [{{ list = 0, port = 1338, batch = 16 }}]\n",
            port("q0", &format!("{id}t1"), 0x11, "10.0.3.2/24"),
            port("q1", &extra.links[1], 0x12, "10.0.4.1/24"),
        ),
    );
    let t0 = Instant::now();
    loop {
        let s = translator_stats(&translator).unwrap();
        let ready = s.0.iter().find(|(k, _)| k == "ready").map(|x| x.1.clone());
        if let Some((r, q)) = ready.as_deref().and_then(|r| r.split_once('/'))
            && r == q
        {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "the translator did not connect: ready {ready:?}");
        std::thread::sleep(Duration::from_millis(20));
    }

    let hawkeye = start(
        "<netns hawkeye>",
        &format!(
            "program = \"hawkeye\"\n[runtime]\nburst = 32\n\n{}{}{}\n[l2l3]\n\
             route = [{{ prefix = \"10.0.4.0/24\", via = [\"10.0.3.2\"] }}]\n\n\
             [hawkeye]\nswitch_id = 42\nepoch_ns = 1073741824\nflow_slots = 1024\n\
             dta_collector = \"{COLLECTOR}\"\ndta_list = 0\n",
            port("p0", &lab.sw[0], 1, "10.0.1.1/24"),
            port("p1", &lab.sw[1], 2, "10.0.2.1/24"),
            port("p2", &extra.links[0], 3, "10.0.3.1/24"),
        ),
    );

    let ping = lab.exec(0, &["ping", "-c", "2", "-i", "0.2", "-W", "2", "10.0.2.2"]);
    assert!(ping.status.success(), "ping: {}", String::from_utf8_lossy(&ping.stdout));
    // The flow, then polls (event ids 1, 2, …) until a report is in the collector: the first
    // poll's report may find the switch still resolving the translator's MAC, and its words
    // are then counted unsent (`dta_words_unsent`), not lost silently.
    let send = format!(
        "import socket,struct,time\n\
         u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\nu.bind(('10.0.1.2',5000))\n\
         for i in range({PACKETS}):\n    u.sendto(b'x'*64,('10.0.2.2',9000))\n    time.sleep(0.01)\n"
    );
    let out = lab.exec(0, &["python3", "-c", &send]);
    assert!(out.status.success(), "sender: {}", String::from_utf8_lossy(&out.stderr));
    let mut words = Vec::new();
    let mut event = 0u8;
    let t0 = Instant::now();
    while words.is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(15), "no report in the collector's list");
        event += 1;
        let poll = format!(
            "import socket,struct\n\
             r=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\nr.bind(('eth0',0))\n\
             me=open('/sys/class/net/eth0/address').read().strip().replace(':','')\n\
             hdr=bytes([0x40,0xff,0x80,0xff,0x80,{event}])+socket.inet_aton('10.0.1.2')+socket.inet_aton('10.0.2.2')+bytes([17])+struct.pack('!HH',5000,9000)\n\
             f=bytes.fromhex('025f00000001')+bytes.fromhex(me)+b'\\x68\\x88'+hdr\n\
             r.send(f+bytes(60-len(f)))\n"
        );
        let out = lab.exec(0, &["python3", "-c", &poll]);
        assert!(out.status.success(), "poll: {}", String::from_utf8_lossy(&out.stderr));
        std::thread::sleep(Duration::from_millis(300));
        words.extend(collector.stores().append_poll(0, "test", usize::MAX).unwrap().entries);
    }
    // Let the last batch land, then stop both switches and account.
    std::thread::sleep(Duration::from_millis(300));
    words.extend(collector.stores().append_poll(0, "test", usize::MAX).unwrap().entries);
    let show = hawkeye.command("show hawkeye").unwrap();
    eprintln!("{event} poll(s), {} words read back; switch: {show}", words.len());
    let tshow = translator_stats(&translator).unwrap();
    hawkeye.stop();
    translator.stop();

    assert_eq!(
        counter(&show, "dta_words"),
        words.len() as u64,
        "the words the switch sent are the words the collector holds\nswitch: {show}\ntranslator: {tshow:?}"
    );
    assert!(counter(&show, "dta_words_unsent") + counter(&show, "dta_words") > 0);
    // Queried back: the reports in the list, each a whole report of switch 42, the last one
    // for the last poll, with the flow's every packet.
    let reports: Vec<Vec<u8>> =
        report::frames(&words).map(|f| f.unwrap().iter().flat_map(|w| w.to_be_bytes()).collect()).collect();
    for r in &reports {
        assert_eq!(Report::parse(r).unwrap().header.switch_id, 42);
    }
    let last = Report::parse(reports.last().expect("a report")).unwrap();
    assert_eq!(
        (last.header.switch_id, last.header.event_id, last.header.in_port, last.header.out_port),
        (42, event, 0, 1),
        "{show}"
    );
    let pkts: u32 = last
        .entries()
        .map(Result::unwrap)
        .filter_map(|e| match e {
            Entry::Flow { flow, pkts, .. } if flow.dst_port == 9000 => {
                assert_eq!(
                    (flow.src_ip, flow.src_port, flow.protocol),
                    (Ipv4Addr::new(10, 0, 1, 2), 5000, 17)
                );
                Some(pkts)
            }
            _ => None,
        })
        .sum();
    assert_eq!(pkts as usize, PACKETS, "{:?}", last.header);
    // The analyzer reads the same list (`collector hawkeye dta` does this over HTTP): every
    // report, the last poll's event among the incidents, each answered.
    let (received, err) = collector::hawkeye::dta::reports(&words, 0);
    assert!(err.is_none(), "{err:?}");
    assert_eq!(received.len(), reports.len());
    let incs = collector::hawkeye::incidents(received, u64::MAX);
    assert!(incs.iter().any(|i| i.event == event), "{incs:?}");
    let topo = collector::hawkeye::Topology::from_json(
        r#"{"switches":[{"switch_id":42,"ports":[{"port":0,"host":0,"ip":"10.0.1.2"},{"port":1,"host":1,"ip":"10.0.2.2"},{"port":2,"host":2,"ip":"10.0.3.2"}]}]}"#,
    )
    .unwrap();
    for inc in &incs {
        let (_, ds) = collector::hawkeye::analyze(inc, &topo, &collector::hawkeye::Params::default());
        assert!(!ds.is_empty());
    }
}
