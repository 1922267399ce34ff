//! The event loop, the fabric built from a [`LabConfig`], and the host model.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::config::Config;
use dataplane::programs::build_switch;
use dataplane::programs::l2l3::L2l3;
use dataplane::switch::Switch;
use nic_agent::dcqcn::{CnpGenerator, DcqcnConfig, DcqcnRp};
use nic_agent::hpcc::{Hpcc, HpccConfig};
use nic_agent::pacer::{Hold, Pacer};
use wire::ethernet::{EtherType, EthernetAddress};
use wire::hpcc_int::{IntHeader, IntRepr, NEXT_BTH};
use wire::pfc::MacControlRepr;
use wire::roce::{AethRepr, BthRepr, NakCode, Opcode, Syndrome};
use wire::stack::UdpFlow;

use super::config::{Cc, LabConfig, Topology};

/// INT slots a sender allocates (paths here are at most 3 switches).
const INT_HOPS: u8 = 5;
/// Queue (and PFC priority) of data; ACKs, NAKs and CNPs go on 7 (strict, never paused).
const DATA_QUEUE: u8 = 3;
const DSCP_DATA: u8 = DATA_QUEUE << 3;
const DSCP_CTRL: u8 = 7 << 3;
const ECT0: u8 = 2;
const CE: u8 = 3;
/// Bytes of a data frame around its payload: Ethernet, IPv4, UDP, BTH, ICRC, plus INT.
const BASE_HEADERS: usize = 14 + 20 + 8 + 12 + 4;

/// One flow's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowResult {
    /// Index in the configuration's flow list (sorted by start).
    pub id: usize,
    /// Source host.
    pub src: usize,
    /// Destination host.
    pub dst: usize,
    /// Bytes.
    pub size: u64,
    /// Start, ns.
    pub start_ns: u64,
    /// Flow completion time (the receiver has every byte), ns; `None` if unfinished.
    pub fct_ns: Option<u64>,
    /// The FCT alone on an idle fabric: base RTT plus serialisation of every packet at line rate.
    pub standalone_ns: u64,
}

impl FlowResult {
    /// FCT over the standalone FCT, at least 1.
    pub fn slowdown(&self) -> Option<f64> {
        self.fct_ns.map(|f| (f as f64 / self.standalone_ns as f64).max(1.0))
    }
}

/// A queue sample of one switch port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSample {
    /// Time, ns.
    pub time_ns: u64,
    /// Switch.
    pub switch: usize,
    /// Port.
    pub port: u16,
    /// Bytes queued, all queues.
    pub bytes: u64,
}

/// A PFC frame a switch sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcEvent {
    /// Time, ns.
    pub time_ns: u64,
    /// Switch.
    pub switch: usize,
    /// Port it left by.
    pub port: u16,
    /// Pause (XOFF) or resume (XON).
    pub pause: bool,
}

/// Everything a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct LabResult {
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// Queue samples.
    pub queues: Vec<QueueSample>,
    /// PFC frames sent by switches.
    pub pfc: Vec<PfcEvent>,
    /// Per switch port: bytes sent and the port's rate (utilisation over the run).
    pub links: Vec<(usize, u16, u64, u64)>,
    /// Base RTT of the longest path, ns (HPCC++'s `T`).
    pub base_rtt_ns: u64,
    /// Events processed.
    pub events: u64,
    /// Virtual time simulated, ns.
    pub simulated_ns: u64,
    /// Frames switches dropped (any reason).
    pub switch_drops: u64,
    /// Go-back-N retransmissions (NAKs acted on).
    pub retransmits: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Host(usize),
    Switch(usize),
}

enum Kind {
    Arrive { node: Node, port: u16, frame: PktBuf },
    SwitchPoll { sw: usize, port: u16 },
    HostWake { host: usize },
    FlowStart { flow: usize },
    FlowTimer { flow: usize },
    Sample,
}

struct Event {
    t: u64,
    seq: u64,
    kind: Kind,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    /// The earliest first (a max-heap of reversed order).
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

struct PortState {
    peer: Node,
    peer_port: u16,
    free_at: u64,
    poll_at: Option<u64>,
    tx_bytes: u64,
}

struct SwitchNode {
    sw: Switch<L2l3, PktBuf>,
    ports: Vec<PortState>,
}

enum FlowCc {
    Hpcc(Box<Hpcc>),
    Dcqcn(DcqcnRp),
}

struct Flow {
    spec: super::FlowSpec,
    qpn: u32,
    snd_nxt: u64,
    snd_una: u64,
    pacer: Pacer,
    cc: FlowCc,
    timer_at: Option<u64>,
    done_ns: Option<u64>,
}

struct RxFlow {
    expected: u32,
    bytes: u64,
    nak_for: Option<u32>,
    cnp: CnpGenerator,
}

struct Host {
    ip: Ipv4Addr,
    mac: EthernetAddress,
    gw_mac: EthernetAddress,
    free_at: u64,
    paused_until: u64,
    wake_at: Option<u64>,
    ctrl: VecDeque<PktBuf>,
    active: Vec<usize>,
    rr: usize,
    rx: HashMap<u32, RxFlow>,
}

struct Lab<'a> {
    cfg: &'a LabConfig,
    events: BinaryHeap<Event>,
    seq: u64,
    now: u64,
    pool: HeapPool,
    switches: Vec<SwitchNode>,
    hosts: Vec<Host>,
    /// Per host: its switch and port.
    attach: Vec<(usize, u16)>,
    flows: Vec<Flow>,
    out: Vec<PktBuf>,
    result: LabResult,
    data_frame_len: usize,
}

fn host_ip(h: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, (h >> 8) as u8, h as u8, 2)
}

/// The host whose address is `ip` (the inverse of [`host_ip`]).
fn host_of(ip: Ipv4Addr) -> Option<usize> {
    let [a, b, c, d] = ip.octets();
    (a == 10 && d == 2).then_some(usize::from(b) << 8 | usize::from(c))
}

fn host_mac(h: usize) -> EthernetAddress {
    EthernetAddress([2, 0, (h >> 8) as u8, h as u8, 0, 2])
}

fn switch_mac(s: usize, p: usize) -> EthernetAddress {
    EthernetAddress([2, 0x5f, s as u8, (p >> 8) as u8, p as u8, 1])
}

/// The INT header length of a data packet (HPCC++ runs).
fn int_len(cc: Cc) -> usize {
    match cc {
        Cc::Hpcc => IntRepr::empty(INT_HOPS).buffer_len(),
        Cc::Dcqcn => 0,
    }
}

/// A port's description in the generated switch configuration.
struct PortSpec {
    mac: EthernetAddress,
    ip: String,
    peer: Node,
    peer_port: u16,
}

/// Build the switches: ports, addresses, routes (shortest paths, ECMP over equal ones) and the
/// TM, as `dataplane` configuration text.
/// The switches, and per host the switch and port it hangs off.
type Fabric = (Vec<SwitchNode>, Vec<(usize, u16)>);

fn build_fabric(cfg: &LabConfig) -> Result<Fabric, String> {
    let n = cfg.hosts();
    let nsw = match cfg.topology {
        Topology::Star { .. } => 1,
        Topology::Dumbbell { .. } => 2,
    };
    let mut ports: Vec<Vec<PortSpec>> = (0..nsw).map(|_| Vec::new()).collect();
    let mut attach = Vec::with_capacity(n);
    for h in 0..n {
        let s = match cfg.topology {
            Topology::Star { .. } => 0,
            Topology::Dumbbell { .. } => h % 2,
        };
        let p = ports[s].len();
        ports[s].push(PortSpec {
            mac: switch_mac(s, p),
            ip: format!("10.{}.{}.1/24", h >> 8, h & 255),
            peer: Node::Host(h),
            peer_port: 0,
        });
        attach.push((s, p as u16));
    }
    if nsw == 2 {
        let (p0, p1) = (ports[0].len(), ports[1].len());
        ports[0].push(PortSpec {
            mac: switch_mac(0, p0),
            ip: "172.16.0.0/31".into(),
            peer: Node::Switch(1),
            peer_port: p1 as u16,
        });
        ports[1].push(PortSpec {
            mac: switch_mac(1, p1),
            ip: "172.16.0.1/31".into(),
            peer: Node::Switch(0),
            peer_port: p0 as u16,
        });
    }
    let rate_g = cfg.rate_bps / 1_000_000_000;
    let speed = if rate_g > 0 { format!("{rate_g}G") } else { format!("{}M", cfg.rate_bps / 1_000_000) };
    // Buffer as the reference simulator's run.py: 16·bw/50 MB (32 MB at 100G); headroom 3 × the
    // link's BDP; ECN (DCQCN runs) kmin 100·bw/25 KB, kmax 400·bw/25 KB, pmax 0.2.
    let bdp = cfg.rate_bps / 8 * cfg.delay_ns / 1_000_000_000;
    let buffer = (16 * rate_g.max(1) / 50).max(1) << 20;
    let headroom = (3 * bdp).max(3 * (cfg.mtu as u64 + 200));
    let ecn = match cfg.cc {
        Cc::Dcqcn => format!(
            "ecn = [{{ queue = {DATA_QUEUE}, kmin = {}, kmax = {}, pmax = 0.2 }}]\n",
            100 * rate_g.max(1) / 25 * 1000,
            400 * rate_g.max(1) / 25 * 1000
        ),
        Cc::Hpcc => String::new(),
    };
    let mut switches = Vec::with_capacity(nsw);
    for (s, sp) in ports.into_iter().enumerate() {
        let mut text = String::from("program = \"l2l3\"\n");
        for (p, port) in sp.iter().enumerate() {
            text.push_str(&format!(
                "[[port]]\nname = \"p{p}\"\nbackend = \"ring\"\nmac = \"{}\"\nspeed = \"{speed}\"\nipv4 = [\"{}\"]\n",
                port.mac, port.ip
            ));
        }
        text.push_str(&format!(
            "[tm]\nbuffer_bytes = {buffer}\nheadroom_bytes = {headroom}\nlossless = [{DATA_QUEUE}]\nmax_packets = 262144\nseed = {}\n{ecn}",
            cfg.seed.wrapping_add(s as u64)
        ));
        text.push_str(&format!("[l2l3]\nint_switch_id = {}\n", s + 1));
        let mut neighbors = Vec::new();
        let mut routes = Vec::new();
        for (p, port) in sp.iter().enumerate() {
            match port.peer {
                Node::Host(h) => neighbors.push(format!(
                    "{{ ip = \"{}\", mac = \"{}\", port = \"p{p}\" }}",
                    host_ip(h),
                    host_mac(h)
                )),
                Node::Switch(o) => {
                    let other_ip = if o == 1 { "172.16.0.1" } else { "172.16.0.0" };
                    neighbors.push(format!(
                        "{{ ip = \"{other_ip}\", mac = \"{}\", port = \"p{p}\" }}",
                        switch_mac(o, usize::from(port.peer_port))
                    ));
                    for h in (0..n).filter(|h| h % 2 == o) {
                        routes.push(format!(
                            "{{ prefix = \"10.{}.{}.0/24\", via = [\"{other_ip}\"] }}",
                            h >> 8,
                            h & 255
                        ));
                    }
                }
            }
        }
        text.push_str(&format!("neighbor = [{}]\n", neighbors.join(", ")));
        if !routes.is_empty() {
            text.push_str(&format!("route = [{}]\n", routes.join(", ")));
        }
        let file = cfg.file.with_extension(format!("switch{s}.toml"));
        let c = Config::parse(&file, &text).map_err(|e| format!("switch {s}: {e}"))?;
        let mut sw: Switch<L2l3, PktBuf> = build_switch(&c).map_err(|e| format!("switch {s}: {e}"))?;
        sw.set_cut_through(false);
        let ports = sp
            .iter()
            .map(|p| PortState {
                peer: p.peer,
                peer_port: p.peer_port,
                free_at: 0,
                poll_at: None,
                tx_bytes: 0,
            })
            .collect();
        switches.push(SwitchNode { sw, ports });
    }
    Ok((switches, attach))
}

/// Run a lab to its end (`duration`, or earlier when every flow is done and the fabric idle).
/// `progress` is called with the virtual time now and then.
pub fn run(cfg: &LabConfig, mut progress: impl FnMut(u64)) -> Result<LabResult, String> {
    let (switches, attach) = build_fabric(cfg)?;
    let n = cfg.hosts();
    let hops_max: u64 = match cfg.topology {
        Topology::Star { .. } => 2,
        Topology::Dumbbell { .. } => 3,
    };
    let data_frame_len = BASE_HEADERS + int_len(cfg.cc) + cfg.mtu;
    let ack_len = (BASE_HEADERS + 4 + int_len(cfg.cc)).max(64);
    let ser = |bytes: usize| bytes as u64 * 8 * 1_000_000_000 / cfg.rate_bps;
    let base_rtt_ns = hops_max * (2 * cfg.delay_ns + ser(data_frame_len) + ser(ack_len));
    let hosts = (0..n)
        .map(|h| Host {
            ip: host_ip(h),
            mac: host_mac(h),
            gw_mac: switch_mac(attach[h].0, usize::from(attach[h].1)),
            free_at: 0,
            paused_until: 0,
            wake_at: None,
            ctrl: VecDeque::new(),
            active: Vec::new(),
            rr: 0,
            rx: HashMap::new(),
        })
        .collect();
    // W_ai's N: the most flows sharing one destination.
    let mut per_dst = vec![0u32; n];
    for f in &cfg.flows {
        per_dst[f.dst] += 1;
    }
    let n_flows = per_dst.iter().copied().max().unwrap_or(1).max(1);
    let mut hcfg = HpccConfig::new(cfg.rate_bps, base_rtt_ns, n_flows);
    hcfg.eta = cfg.hpcc.eta;
    hcfg.max_stage = cfg.hpcc.max_stage;
    hcfg.w_ai_bytes = cfg.hpcc.w_ai_bytes.unwrap_or_else(|| hcfg.w_ai_rule(n_flows));
    let flows = cfg
        .flows
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let (pacer, cc) = match cfg.cc {
                Cc::Hpcc => {
                    let h = Hpcc::new(hcfg);
                    let w = h.window();
                    (Pacer::new(w.rate_bps, Some(w.bytes as u64)), FlowCc::Hpcc(Box::new(h)))
                }
                Cc::Dcqcn => (
                    Pacer::new(cfg.rate_bps as f64, None),
                    FlowCc::Dcqcn(DcqcnRp::new(DcqcnConfig::mellanox(cfg.rate_bps))),
                ),
            };
            Flow {
                spec: *spec,
                qpn: i as u32 + 1,
                snd_nxt: 0,
                snd_una: 0,
                pacer,
                cc,
                timer_at: None,
                done_ns: None,
            }
        })
        .collect::<Vec<_>>();
    // Buffers: every switch's queue-entry table could fill, plus what is on the wires.
    let pool = HeapPool::new(64 * 1024 + 4096 * n, data_frame_len.max(256) + 64);
    let mut lab = Lab {
        cfg,
        events: BinaryHeap::new(),
        seq: 0,
        now: 0,
        pool,
        switches,
        hosts,
        attach,
        flows,
        out: Vec::with_capacity(4),
        result: LabResult {
            flows: Vec::new(),
            queues: Vec::new(),
            pfc: Vec::new(),
            links: Vec::new(),
            base_rtt_ns,
            events: 0,
            simulated_ns: 0,
            switch_drops: 0,
            retransmits: 0,
        },
        data_frame_len,
    };
    for i in 0..lab.flows.len() {
        let t = lab.flows[i].spec.start_ns;
        lab.push(t, Kind::FlowStart { flow: i });
    }
    lab.push(0, Kind::Sample);
    let mut next_progress = 0;
    while let Some(ev) = lab.events.pop() {
        if ev.t > cfg.duration_ns {
            lab.release(ev.kind);
            break;
        }
        lab.now = ev.t;
        lab.result.events += 1;
        if ev.t >= next_progress {
            progress(ev.t);
            next_progress = ev.t + cfg.duration_ns / 100 + 1;
        }
        lab.handle(ev.kind);
        if matches!(lab.events.peek(), Some(e) if matches!(e.kind, Kind::Sample))
            && lab.all_done()
            && lab.fabric_idle()
        {
            break;
        }
    }
    while let Some(ev) = lab.events.pop() {
        lab.release(ev.kind);
    }
    progress(cfg.duration_ns);
    Ok(lab.finish())
}

impl Lab<'_> {
    fn push(&mut self, t: u64, kind: Kind) {
        self.seq += 1;
        self.events.push(Event { t, seq: self.seq, kind });
    }

    fn release(&mut self, k: Kind) {
        if let Kind::Arrive { frame, .. } = k {
            self.pool.free(frame);
        }
    }

    fn all_done(&self) -> bool {
        self.flows.iter().all(|f| f.done_ns.is_some())
    }

    fn fabric_idle(&self) -> bool {
        self.switches.iter().all(|s| (0..s.ports.len()).all(|p| !s.sw.tm().port_has_packets(p as u16)))
    }

    fn ser(&self, bytes: usize) -> u64 {
        (bytes.max(64) as u64 * 8 * 1_000_000_000).div_ceil(self.cfg.rate_bps)
    }

    fn handle(&mut self, k: Kind) {
        match k {
            Kind::Arrive { node: Node::Switch(s), port, frame } => {
                let now = self.now;
                let sn = &mut self.switches[s];
                sn.sw.receive(now, port, frame, &mut self.pool);
                for p in 0..sn.ports.len() {
                    self.schedule_poll(s, p as u16);
                }
            }
            Kind::Arrive { node: Node::Host(h), frame, .. } => {
                self.host_receive(h, &frame);
                self.pool.free(frame);
            }
            Kind::SwitchPoll { sw, port } => self.switch_poll(sw, port),
            Kind::HostWake { host } => {
                if self.hosts[host].wake_at == Some(self.now) {
                    self.hosts[host].wake_at = None;
                    self.host_send(host);
                }
            }
            Kind::FlowStart { flow } => {
                let h = self.flows[flow].spec.src;
                self.hosts[h].active.push(flow);
                self.wake(h, self.now);
            }
            Kind::FlowTimer { flow } => {
                if self.flows[flow].timer_at != Some(self.now) {
                    return;
                }
                self.flows[flow].timer_at = None;
                let now = self.now;
                let f = &mut self.flows[flow];
                if let FlowCc::Dcqcn(rp) = &mut f.cc {
                    rp.on_timer(now);
                    f.pacer.set_rate(rp.rate_bps());
                    let next = rp.next_timer();
                    if f.done_ns.is_none()
                        && let Some(t) = next
                    {
                        f.timer_at = Some(t);
                        self.push(t, Kind::FlowTimer { flow });
                    }
                }
                let h = self.flows[flow].spec.src;
                self.wake(h, now);
            }
            Kind::Sample => {
                let now = self.now;
                for (s, sn) in self.switches.iter().enumerate() {
                    for p in 0..sn.ports.len() {
                        let bytes = sn.sw.tm().port_bytes(p as u16);
                        self.result.queues.push(QueueSample {
                            time_ns: now,
                            switch: s,
                            port: p as u16,
                            bytes,
                        });
                    }
                }
                self.push(now + self.cfg.sample_ns, Kind::Sample);
            }
        }
    }

    /// Make sure port `p` of switch `s` is polled when it next has something to send.
    fn schedule_poll(&mut self, s: usize, p: u16) {
        let now = self.now;
        let sn = &mut self.switches[s];
        let Some(t) = sn.sw.next_ready(p, now) else { return };
        let ps = &mut sn.ports[usize::from(p)];
        let t = t.max(ps.free_at);
        if ps.poll_at.is_some_and(|a| a <= t) {
            return;
        }
        ps.poll_at = Some(t);
        self.push(t, Kind::SwitchPoll { sw: s, port: p });
    }

    fn switch_poll(&mut self, s: usize, p: u16) {
        let now = self.now;
        {
            let ps = &mut self.switches[s].ports[usize::from(p)];
            if ps.poll_at != Some(now) {
                return;
            }
            ps.poll_at = None;
            if ps.free_at > now {
                let t = ps.free_at;
                ps.poll_at = Some(t);
                self.push(t, Kind::SwitchPoll { sw: s, port: p });
                return;
            }
        }
        let mut out = std::mem::take(&mut self.out);
        self.switches[s].sw.transmit(now, p, &mut out, 1, &mut self.pool);
        for f in out.drain(..) {
            let len = f.len();
            if f.data().get(12..14) == Some(&EtherType::MAC_CONTROL.0.to_be_bytes()[..])
                && let Ok(MacControlRepr::Pfc(pfc)) = MacControlRepr::parse(&f.data()[14..])
            {
                let pause = pfc.quanta.iter().any(|&q| q > 0);
                self.result.pfc.push(PfcEvent { time_ns: now, switch: s, port: p, pause });
            }
            let ser = self.ser(len);
            let ps = &mut self.switches[s].ports[usize::from(p)];
            ps.free_at = now + ser;
            ps.tx_bytes += len as u64;
            let (peer, peer_port) = (ps.peer, ps.peer_port);
            self.push(now + ser + self.cfg.delay_ns, Kind::Arrive { node: peer, port: peer_port, frame: f });
        }
        self.out = out;
        self.schedule_poll(s, p);
    }

    fn wake(&mut self, h: usize, t: u64) {
        let host = &mut self.hosts[h];
        let t = t.max(host.free_at);
        if host.wake_at.is_some_and(|w| w <= t) {
            return;
        }
        host.wake_at = Some(t);
        self.push(t, Kind::HostWake { host: h });
    }

    /// Send what the host's NIC may send now: control frames first, then data, round robin
    /// over flows that their pacers let go.
    fn host_send(&mut self, h: usize) {
        let now = self.now;
        if self.hosts[h].free_at > now {
            let t = self.hosts[h].free_at;
            return self.wake(h, t);
        }
        if let Some(f) = self.hosts[h].ctrl.pop_front() {
            return self.host_transmit(h, f);
        }
        if self.hosts[h].paused_until > now {
            let t = self.hosts[h].paused_until;
            return self.wake(h, t);
        }
        let n = self.hosts[h].active.len();
        let mut earliest: Option<u64> = None;
        for k in 0..n {
            let idx = (self.hosts[h].rr + k) % n;
            let fi = self.hosts[h].active[idx];
            let f = &self.flows[fi];
            if f.snd_nxt >= f.spec.size {
                continue;
            }
            let payload = (f.spec.size - f.snd_nxt).min(self.cfg.mtu as u64) as usize;
            let len = self.data_frame_len - self.cfg.mtu + payload;
            match f.pacer.check(now, payload as u64) {
                Ok(()) => {
                    self.hosts[h].rr = (idx + 1) % n;
                    let Some(frame) = self.data_frame(fi, payload) else { return };
                    let f = &mut self.flows[fi];
                    f.pacer.on_sent(now, len as u64, payload as u64);
                    f.snd_nxt += payload as u64;
                    return self.host_transmit(h, frame);
                }
                Err(Hold::Until(t)) => earliest = Some(earliest.map_or(t, |e: u64| e.min(t))),
                Err(Hold::Window) => {}
            }
        }
        if let Some(t) = earliest {
            self.wake(h, t);
        }
    }

    fn host_transmit(&mut self, h: usize, frame: PktBuf) {
        let now = self.now;
        let ser = self.ser(frame.len());
        let (s, p) = self.attach[h];
        self.hosts[h].free_at = now + ser;
        self.push(now + ser + self.cfg.delay_ns, Kind::Arrive { node: Node::Switch(s), port: p, frame });
        self.wake(h, now + ser);
    }

    fn udp_flow(&self, from: usize, to: usize, dscp: u8, ecn: u8, dst_port: u16) -> UdpFlow {
        let (a, b) = (&self.hosts[from], &self.hosts[to]);
        UdpFlow {
            dscp,
            ecn,
            ..UdpFlow::host_udp(
                a.mac,
                a.gw_mac,
                SocketAddrV4::new(a.ip, 49152),
                SocketAddrV4::new(b.ip, dst_port),
            )
        }
    }

    /// A data frame of flow `fi` carrying `payload` bytes from `snd_nxt`.
    fn data_frame(&mut self, fi: usize, payload: usize) -> Option<PktBuf> {
        let f = &self.flows[fi];
        let psn = (f.snd_nxt / self.cfg.mtu as u64) as u32 & 0xff_ffff;
        let last = f.snd_nxt + payload as u64 >= f.spec.size;
        let (port, ecn) = match self.cfg.cc {
            Cc::Hpcc => (wire::udp::port::HPCC_INT, 0),
            Cc::Dcqcn => (wire::udp::port::ROCE_V2, ECT0),
        };
        let flow = self.udp_flow(f.spec.src, f.spec.dst, DSCP_DATA, ecn, port);
        let bth = BthRepr {
            opcode: Opcode::RC_SEND_ONLY,
            pkey: 0xffff,
            dest_qp: f.qpn,
            ack_req: last,
            psn,
            ..BthRepr::default()
        };
        let int = (self.cfg.cc == Cc::Hpcc).then(|| IntRepr { next: NEXT_BTH, ..IntRepr::empty(INT_HOPS) });
        self.frame(&flow, int.as_ref(), &bth, None, payload + 4)
    }

    /// A frame: UDP `flow`, optional INT, BTH, optional AETH, then `tail` zero bytes.
    fn frame(
        &mut self,
        flow: &UdpFlow,
        int: Option<&IntRepr>,
        bth: &BthRepr,
        aeth: Option<&AethRepr>,
        tail: usize,
    ) -> Option<PktBuf> {
        let il = int.map_or(0, |i| i.buffer_len());
        let al = if aeth.is_some() { 4 } else { 0 };
        let udp_payload = il + BthRepr::LEN + al + tail;
        let total = flow.headers_len() + udp_payload;
        let mut b = self.pool.alloc()?;
        let ok = b.append(total.max(60)).is_some_and(|buf| {
            buf.fill(0);
            let Ok(h) = flow.emit_headers(udp_payload, buf) else { return false };
            let mut at = h;
            if let Some(i) = int {
                if i.emit(&mut buf[at..]).is_err() {
                    return false;
                }
                at += il;
            }
            if bth.emit(&mut buf[at..]).is_err() {
                return false;
            }
            at += BthRepr::LEN;
            aeth.is_none_or(|a| a.emit(&mut buf[at..]).is_ok())
        });
        if ok {
            Some(b)
        } else {
            self.pool.free(b);
            None
        }
    }

    fn host_receive(&mut self, h: usize, frame: &PktBuf) {
        let d = frame.data();
        let Some(et) = d.get(12..14) else { return };
        if et == EtherType::MAC_CONTROL.0.to_be_bytes() {
            if let Ok(MacControlRepr::Pfc(pfc)) = MacControlRepr::parse(&d[14..]) {
                let q = pfc.quanta[usize::from(DATA_QUEUE)];
                if pfc.is_enabled(usize::from(DATA_QUEUE)) {
                    let host = &mut self.hosts[h];
                    host.paused_until = if q == 0 {
                        self.now
                    } else {
                        self.now + wire::pfc::pause_duration_ns(q, self.cfg.rate_bps)
                    };
                    let t = host.paused_until;
                    self.wake(h, t);
                }
            }
            return;
        }
        let Ok(ip) = wire::Ipv4Packet::new_checked(&d[14..]) else { return };
        let (src, ecn) = (ip.src_addr(), ip.ecn());
        let Ok(udp) = wire::UdpPacket::new_checked(ip.payload()) else { return };
        let mut body = udp.payload();
        let mut int = None;
        if udp.dst_port() == wire::udp::port::HPCC_INT {
            let Ok(hdr) = IntHeader::new_checked(body) else { return };
            let len = hdr.header_len();
            int = IntRepr::parse(body).ok();
            body = &body[len..];
        }
        let Ok(bth) = BthRepr::parse(body) else { return };
        let Some(peer) = host_of(src).filter(|&p| p < self.hosts.len()) else { return };
        match bth.opcode {
            Opcode::RC_SEND_ONLY => {
                let payload = body.len().saturating_sub(BthRepr::LEN + 4) as u64;
                self.on_data(h, peer, &bth, payload, ecn == CE, int)
            }
            Opcode::RC_ACKNOWLEDGE => {
                let Ok(aeth) = AethRepr::parse(&body[BthRepr::LEN..]) else { return };
                self.on_ack(&bth, &aeth, int)
            }
            Opcode::CNP => {
                let fi = bth.dest_qp as usize - 1;
                if let Some(f) = self.flows.get_mut(fi)
                    && let FlowCc::Dcqcn(rp) = &mut f.cc
                {
                    rp.on_cnp(self.now);
                    f.pacer.set_rate(rp.rate_bps());
                    if f.timer_at.is_none()
                        && let Some(t) = rp.next_timer()
                    {
                        f.timer_at = Some(t);
                        self.push(t, Kind::FlowTimer { flow: fi });
                    }
                }
            }
            _ => {}
        }
    }

    fn on_data(
        &mut self,
        h: usize,
        peer: usize,
        bth: &BthRepr,
        payload: u64,
        ce: bool,
        int: Option<IntRepr>,
    ) {
        let now = self.now;
        let qpn = bth.dest_qp;
        let fi = qpn as usize - 1;
        let rx = self.hosts[h].rx.entry(qpn).or_insert(RxFlow {
            expected: 0,
            bytes: 0,
            nak_for: None,
            cnp: CnpGenerator::new(0),
        });
        let syndrome;
        let psn;
        if bth.psn == rx.expected {
            rx.expected = (rx.expected + 1) & 0xff_ffff;
            rx.bytes += payload;
            rx.nak_for = None;
            syndrome = Syndrome::Ack { credits: 31 };
            psn = bth.psn;
            if let Some(f) = self.flows.get_mut(fi)
                && rx.bytes >= f.spec.size
                && f.done_ns.is_none()
            {
                f.done_ns = Some(now);
            }
        } else if bth.psn.wrapping_sub(rx.expected) & 0x80_0000 != 0 {
            // A duplicate: ACK what we have.
            syndrome = Syndrome::Ack { credits: 31 };
            psn = rx.expected.wrapping_sub(1) & 0xff_ffff;
        } else {
            if rx.nak_for == Some(rx.expected) {
                return;
            }
            rx.nak_for = Some(rx.expected);
            syndrome = Syndrome::Nak(NakCode::PsnSequenceError);
            psn = rx.expected;
        }
        let cnp = ce && rx.cnp.on_ce(now);
        let (port, reflected) = match (self.cfg.cc, int) {
            (Cc::Hpcc, Some(mut i)) => {
                i.reflected = true;
                (wire::udp::port::HPCC_INT, Some(i))
            }
            _ => (wire::udp::port::ROCE_V2, None),
        };
        let flow = self.udp_flow(h, peer, DSCP_CTRL, 0, port);
        let ack =
            BthRepr { opcode: Opcode::RC_ACKNOWLEDGE, pkey: 0xffff, dest_qp: qpn, psn, ..BthRepr::default() };
        let aeth = AethRepr { syndrome, msn: 0 };
        if let Some(f) = self.frame(&flow, reflected.as_ref(), &ack, Some(&aeth), 4) {
            self.hosts[h].ctrl.push_back(f);
        }
        if cnp {
            let flow = self.udp_flow(h, peer, DSCP_CTRL, 0, wire::udp::port::ROCE_V2);
            let b =
                BthRepr { opcode: Opcode::CNP, pkey: 0xffff, dest_qp: qpn, becn: true, ..BthRepr::default() };
            if let Some(f) = self.frame(&flow, None, &b, None, wire::roce::CNP_BODY_LEN + 4) {
                self.hosts[h].ctrl.push_back(f);
            }
        }
        self.wake(h, now);
    }

    fn on_ack(&mut self, bth: &BthRepr, aeth: &AethRepr, int: Option<IntRepr>) {
        let now = self.now;
        let fi = bth.dest_qp as usize - 1;
        let mtu = self.cfg.mtu as u64;
        let Some(f) = self.flows.get_mut(fi) else { return };
        let src = f.spec.src;
        match aeth.syndrome {
            Syndrome::Ack { .. } => {
                // PSNs are packet indices; wrap within 2^24 packets is not reached by lab flows.
                let acked = ((u64::from(bth.psn) + 1) * mtu).min(f.spec.size);
                if acked > f.snd_una {
                    f.pacer.on_acked(acked - f.snd_una);
                    f.snd_una = acked;
                }
                if let (FlowCc::Hpcc(hp), Some(i)) = (&mut f.cc, int.as_ref())
                    && let Some(w) = hp.on_ack(f.snd_una, f.snd_nxt, i)
                {
                    f.pacer.set_rate(w.rate_bps);
                    f.pacer.set_window(Some(w.bytes as u64));
                }
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                // The NAK acknowledges every packet before its PSN (IBTA 9.7.5.2.1), then asks
                // for that PSN again: go back to it, with nothing in flight.
                // A stale NAK, for data already acknowledged, changes nothing.
                let back = (u64::from(bth.psn) * mtu).min(f.spec.size);
                if back >= f.snd_una {
                    f.snd_una = back;
                    if back < f.snd_nxt {
                        f.snd_nxt = back;
                        self.result.retransmits += 1;
                    }
                    f.pacer.set_inflight(f.snd_nxt - f.snd_una);
                }
            }
            _ => {}
        }
        if f.snd_una >= f.spec.size {
            let host = &mut self.hosts[src];
            host.active.retain(|&x| x != fi);
        }
        self.wake(src, now);
    }

    fn finish(mut self) -> LabResult {
        let cfg = self.cfg;
        let ser_rate = |bytes: u64| bytes * 8 * 1_000_000_000 / cfg.rate_bps;
        let hdr = (self.data_frame_len - cfg.mtu) as u64;
        for (i, f) in self.flows.iter().enumerate() {
            let packets = f.spec.size.div_ceil(cfg.mtu as u64);
            let standalone = self.result.base_rtt_ns + ser_rate(f.spec.size + packets * hdr);
            self.result.flows.push(FlowResult {
                id: i,
                src: f.spec.src,
                dst: f.spec.dst,
                size: f.spec.size,
                start_ns: f.spec.start_ns,
                fct_ns: f.done_ns.map(|d| d - f.spec.start_ns),
                standalone_ns: standalone,
            });
        }
        for (s, sn) in self.switches.iter().enumerate() {
            for (p, ps) in sn.ports.iter().enumerate() {
                self.result.links.push((s, p as u16, ps.tx_bytes, cfg.rate_bps));
            }
            // PFC frames end at the switch that obeys them (reason mac_control): not losses.
            let names = sn.sw.drop_reasons().names();
            self.result.switch_drops += sn
                .sw
                .counters()
                .drops
                .iter()
                .zip(names)
                .filter(|(_, n)| **n != "mac_control")
                .map(|(c, _)| c)
                .sum::<u64>();
        }
        self.result.simulated_ns = self.now;
        for sn in &mut self.switches {
            sn.sw.drain_all(&mut self.pool);
        }
        self.result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_found_from_its_address() {
        for h in [0, 1, 255, 256, 4095] {
            assert_eq!(host_of(host_ip(h)), Some(h));
        }
        assert_eq!(host_of(Ipv4Addr::new(10, 0, 1, 1)), None, "a switch port");
    }
}
