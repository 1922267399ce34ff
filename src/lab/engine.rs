//! The event loop, the fabric built from a [`LabConfig`], and the host model.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::config::Config;
use dataplane::programs::build_switch;
use dataplane::programs::l2l3::L2l3;
use dataplane::switch::Switch;
use nic_agent::dcqcn::{DcqcnConfig, DcqcnRp};
use nic_agent::hpcc::{Hpcc, HpccConfig};
use nic_agent::rc::{
    FlowCc, RcReceiver, RcSender, SenderConfig, Transmit, ack_bth, cnp_bth, data_bth, emit_rc, parse_rc,
    rc_frame_len, udp_src_port,
};
use wire::ethernet::{EtherType, EthernetAddress};
use wire::hpcc_int::{IntRepr, MAX_HOPS};
use wire::pfc::MacControlRepr;
use wire::roce::{AethRepr, BthRepr, Opcode};
use wire::stack::UdpFlow;

use dataplane::config::rate_str;

use super::config::{Cc, LabConfig};
use super::topology::{Node, PortEnd, Wiring};

/// Queue (and PFC priority) of data; ACKs, NAKs and CNPs go on 7 (strict, never paused).
const DATA_QUEUE: u8 = 3;
const DSCP_DATA: u8 = DATA_QUEUE << 3;
const DSCP_CTRL: u8 = 7 << 3;
const ECT0: u8 = 2;
const CE: u8 = 3;
/// Bytes of a data frame around its payload: Ethernet, IPv4, UDP, BTH, ICRC, plus INT.
const BASE_HEADERS: usize = 14 + 20 + 8 + 12 + 4;
/// The senders' retransmission timeout: IB's local ACK timeout 12 (4.096 µs · 2^12), far above
/// any queueing delay the lab's buffers allow, so it fires only for a lost tail.
const TIMEOUT_NS: u64 = 4096 << 12;

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
    /// Bytes the port has sent since the start (utilisation over time is its slope).
    pub tx_bytes: u64,
}

/// Bytes one flow's receiver had in order at one time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateSample {
    /// Time, ns.
    pub time_ns: u64,
    /// Flow.
    pub flow: usize,
    /// Bytes delivered in order since the flow started.
    pub rx_bytes: u64,
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
    /// Delivered bytes of every flow running at each sample time.
    pub rates: Vec<RateSample>,
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

/// What happens at an event. Kept small (16 bytes; indices as `u32`, a frame in flight parked
/// in `Lab::parked`): the heap moves events on every push and pop, and that was the engine's
/// largest cost while frames travelled inside them.
#[derive(Clone, Copy)]
enum Kind {
    /// Parked frame `slot` reaches `node`'s `port`.
    Arrive {
        node: Dest,
        port: u16,
        slot: u32,
    },
    SwitchPoll {
        sw: u32,
        port: u16,
    },
    HostWake {
        host: u32,
    },
    FlowStart {
        flow: u32,
    },
    FlowTimer {
        flow: u32,
    },
    Sample,
}

/// A node, compactly.
#[derive(Clone, Copy)]
enum Dest {
    Host(u32),
    Switch(u32),
}

impl From<Node> for Dest {
    fn from(n: Node) -> Self {
        match n {
            Node::Host(h) => Dest::Host(h as u32),
            Node::Switch(s) => Dest::Switch(s as u32),
        }
    }
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
    rate_bps: u64,
    delay_ns: u64,
    free_at: u64,
    poll_at: Option<u64>,
    tx_bytes: u64,
}

struct SwitchNode {
    sw: Switch<L2l3, PktBuf>,
    ports: Vec<PortState>,
}

struct Flow {
    spec: super::FlowSpec,
    /// Its QP number (the same at both ends): flow index + 1.
    qpn: u32,
    /// The sender's RC transport and CC, from its start until every byte is acknowledged.
    tx: Option<Box<RcSender>>,
    /// The receiver's side.
    rx: RcReceiver,
    timer_at: Option<u64>,
    done_ns: Option<u64>,
    /// Base RTT between its hosts, for the standalone FCT.
    pair_rtt_ns: u64,
}

struct Host {
    ip: Ipv4Addr,
    mac: EthernetAddress,
    gw_mac: EthernetAddress,
    rate_bps: u64,
    delay_ns: u64,
    free_at: u64,
    paused_until: u64,
    wake_at: Option<u64>,
    ctrl: VecDeque<PktBuf>,
    active: Vec<usize>,
    rr: usize,
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
    /// Frames on the wires, by slot; `free_slots` are empty ones.
    parked: Vec<Option<PktBuf>>,
    free_slots: Vec<u32>,
    /// Flows done.
    done: usize,
    out: Vec<PktBuf>,
    result: LabResult,
    data_frame_len: usize,
    /// W_ai's N: the most fixed or incast flows sharing one destination.
    n_flows: u32,
    /// INT slots in a data packet.
    int_hops: u8,
    last_sample: u64,
}

/// Address `last` in host `h`'s subnet `10.h/256.h%256.0/24`: 0 the subnet, 1 its gateway (the
/// switch port), 2 the host.
fn host_addr(h: usize, last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, (h >> 8) as u8, h as u8, last)
}

fn host_ip(h: usize) -> Ipv4Addr {
    host_addr(h, 2)
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
    EthernetAddress([2, 0x5f, (s >> 8) as u8, s as u8, p as u8, 1])
}

/// The INT header length of a data packet with `hops` slots (HPCC++ runs).
fn int_len(cc: Cc, hops: u8) -> usize {
    match cc {
        Cc::Hpcc => IntRepr::empty(hops).buffer_len(),
        Cc::Dcqcn => 0,
    }
}

/// The wire time of `bytes` (at least a minimum frame) at `rate_bps`, ns, rounded up.
/// HPCC++'s parameters for a sender at `rate_bps`: the lab's `[hpcc]` over the draft's defaults,
/// `T` the fabric's largest base RTT, `W_ai` from the lab file or the rule of thumb for `n_flows`.
fn hpcc_config(cfg: &LabConfig, rate_bps: u64, base_rtt_ns: u64, n_flows: u32) -> HpccConfig {
    let mut c = HpccConfig::new(rate_bps, base_rtt_ns, n_flows);
    c.eta = cfg.hpcc.eta;
    c.max_stage = cfg.hpcc.max_stage;
    c.w_ai_bytes = match (cfg.hpcc.w_ai_bytes, cfg.hpcc.ai_rate_bps) {
        (Some(w), _) => w,
        (None, Some(ai)) => c.window_of(ai),
        (None, None) => c.w_ai_rule(n_flows),
    };
    c
}

fn ser_ns(bytes: usize, rate_bps: u64) -> u64 {
    (bytes.max(64) as u64 * 8 * 1_000_000_000).div_ceil(rate_bps)
}

/// The fabric's switches, hosts' attachment and path lengths.
struct Fabric {
    switches: Vec<SwitchNode>,
    wiring: Wiring,
    /// Per host: its switch and the port it hangs off.
    attach: Vec<(usize, u16)>,
    /// Per switch with hosts: switch hops from every switch to it (`None`: no hosts there).
    dist_to: Vec<Option<Vec<u32>>>,
}

impl Fabric {
    /// Round trip of one data packet and its ACK between hosts `a` and `b` on an idle fabric,
    /// along the first of the shortest paths: per link, twice the propagation delay plus both
    /// frames' serialisation.
    fn pair_rtt(&self, cfg: &LabConfig, a: usize, b: usize, data: usize, ack: usize) -> u64 {
        let cost = |link: usize| {
            let l = &cfg.topology.links[link];
            2 * l.delay_ns + ser_ns(data, l.rate_bps) + ser_ns(ack, l.rate_bps)
        };
        let (ha, hb) = (self.wiring.host_port[a], self.wiring.host_port[b]);
        let mut rtt = cost(ha.link) + cost(hb.link);
        let (Node::Switch(mut s), Node::Switch(t)) = (ha.peer, hb.peer) else { return rtt };
        let Some(dist) = &self.dist_to[t] else { return rtt };
        while s != t {
            let Some(next) = self.wiring.switch_ports[s]
                .iter()
                .find(|e| matches!(e.peer, Node::Switch(o) if dist[o].wrapping_add(1) == dist[s]))
            else {
                break;
            };
            rtt += cost(next.link);
            let Node::Switch(o) = next.peer else { break };
            s = o;
        }
        rtt
    }
}

/// Build the switches from the topology: ports, addresses (hosts `10.x.y.0/24`, switch–switch
/// links `/31`s in 172.16/12), routes (every shortest path, ECMP over them) and the TM, as the
/// `dataplane` configuration text a user would write.
fn build_fabric(cfg: &LabConfig) -> Result<Fabric, String> {
    let topo = &cfg.topology;
    let w = topo.wiring();
    // A switch port's address: towards a host the host's gateway, towards a switch its end of
    // the link's /31 (the `a` end even).
    let port_ip = |s: usize, end: &PortEnd| -> (Ipv4Addr, u8) {
        match end.peer {
            Node::Host(h) => (host_addr(h, 1), 24),
            Node::Switch(_) => {
                let a_end = topo.links[end.link].a == Node::Switch(s);
                (Ipv4Addr::from(0xac10_0000u32 + 2 * end.link as u32 + u32::from(!a_end)), 31)
            }
        }
    };
    let attach: Vec<(usize, u16)> = (0..topo.hosts).map(|h| w.attach(h)).collect();
    let mut dist_to: Vec<Option<Vec<u32>>> = vec![None; topo.switches];
    for &(s, _) in &attach {
        if dist_to[s].is_none() {
            dist_to[s] = Some(topo.switch_distances(&w, s));
        }
    }
    let host_gbps = topo.links[w.host_port[0].link].rate_bps / 1_000_000_000;
    let ecn = match cfg.cc {
        // The reference's run.py for DCQCN: kmin 100·bw/25 KB, kmax 400·bw/25 KB, pmax 0.2.
        Cc::Dcqcn => format!(
            "ecn = [{{ queue = {DATA_QUEUE}, kmin = {}, kmax = {}, pmax = 0.2 }}]\n",
            100 * host_gbps.max(1) / 25 * 1000,
            400 * host_gbps.max(1) / 25 * 1000
        ),
        Cc::Hpcc => String::new(),
    };
    let mut switches = Vec::with_capacity(topo.switches);
    for (s, ports) in w.switch_ports.iter().enumerate() {
        let mut text = String::from("program = \"l2l3\"\n");
        let mut headroom = 3 * (cfg.mtu as u64 + 200);
        for (p, end) in ports.iter().enumerate() {
            let l = &topo.links[end.link];
            // Headroom as the reference MMU: 3 × the link's bandwidth-delay product.
            headroom = headroom.max(3 * (l.rate_bps / 8 * l.delay_ns / 1_000_000_000));
            let (ip, len) = port_ip(s, end);
            text.push_str(&format!(
                "[[port]]\nname = \"p{p}\"\nbackend = \"ring\"\nmac = \"{}\"\nspeed = \"{}\"\nipv4 = [\"{ip}/{len}\"]\n",
                switch_mac(s, p),
                rate_str(l.rate_bps)
            ));
        }
        text.push_str(&format!(
            "[tm]\nbuffer_bytes = {}\nheadroom_bytes = {headroom}\nlossless = [{DATA_QUEUE}]\nmax_packets = 262144\nseed = {}\n{ecn}",
            cfg.buffer_bytes,
            cfg.seed.wrapping_add(s as u64)
        ));
        text.push_str(&format!("[l2l3]\nint_switch_id = {}\n", s + 1));
        let mut neighbors = Vec::new();
        for (p, end) in ports.iter().enumerate() {
            let (ip, mac) = match end.peer {
                Node::Host(h) => (host_ip(h), host_mac(h)),
                Node::Switch(o) => {
                    let back = &w.switch_ports[o][usize::from(end.peer_port)];
                    (port_ip(o, back).0, switch_mac(o, usize::from(end.peer_port)))
                }
            };
            neighbors.push(format!("{{ ip = \"{ip}\", mac = \"{mac}\", port = \"p{p}\" }}"));
        }
        text.push_str(&format!("neighbor = [{}]\n", neighbors.join(", ")));
        let mut routes = Vec::new();
        for (h, &(t, _)) in attach.iter().enumerate() {
            let Some(dist) = dist_to[t].as_ref().filter(|_| t != s) else { continue };
            let via: Vec<String> = ports
                .iter()
                .filter_map(|end| match end.peer {
                    Node::Switch(o) if dist[o].wrapping_add(1) == dist[s] => {
                        let back = &w.switch_ports[o][usize::from(end.peer_port)];
                        Some(format!("\"{}\"", port_ip(o, back).0))
                    }
                    _ => None,
                })
                .collect();
            routes.push(format!("{{ prefix = \"{}/24\", via = [{}] }}", host_addr(h, 0), via.join(", ")));
        }
        if !routes.is_empty() {
            text.push_str(&format!("route = [{}]\n", routes.join(", ")));
        }
        let file = cfg.file.with_extension(format!("switch{s}.toml"));
        let c = Config::parse(&file, &text).map_err(|e| format!("switch {s}: {e}"))?;
        let mut sw: Switch<L2l3, PktBuf> = build_switch(&c).map_err(|e| format!("switch {s}: {e}"))?;
        sw.set_cut_through(false);
        let ports = ports
            .iter()
            .map(|end| {
                let l = &topo.links[end.link];
                PortState {
                    peer: end.peer,
                    peer_port: end.peer_port,
                    rate_bps: l.rate_bps,
                    delay_ns: l.delay_ns,
                    free_at: 0,
                    poll_at: None,
                    tx_bytes: 0,
                }
            })
            .collect();
        switches.push(SwitchNode { sw, ports });
    }
    Ok(Fabric { switches, wiring: w, attach, dist_to })
}

/// Run a lab to its end (`duration`, or earlier when every flow is done and the fabric idle).
/// `progress` is called with the virtual time now and then.
pub fn run(cfg: &LabConfig, mut progress: impl FnMut(u64)) -> Result<LabResult, String> {
    let fabric = build_fabric(cfg)?;
    let n = cfg.hosts();
    // INT slots a sender allocates: one per switch on the longest shortest path.
    let longest = (fabric.dist_to.iter().flatten())
        .flat_map(|d| d.iter().filter(|&&x| x != u32::MAX).copied())
        .max()
        .unwrap_or(0) as usize
        + 1;
    if cfg.cc == Cc::Hpcc && longest > MAX_HOPS {
        return Err(format!(
            "HPCC++ needs INT from every switch on a path; the longest path has {longest} switches and INT carries {MAX_HOPS}"
        ));
    }
    let int_hops = longest.min(MAX_HOPS) as u8;
    let data_frame_len = BASE_HEADERS + int_len(cfg.cc, int_hops) + cfg.mtu;
    let ack_len = (BASE_HEADERS + 4 + int_len(cfg.cc, int_hops)).max(64);
    // HPCC++'s T: the largest base RTT between two hosts (the reference's GLOBAL_T, maxRtt).
    // One host per switch with hosts stands for them all.
    let mut first_on: Vec<Option<usize>> = vec![None; fabric.switches.len()];
    for (h, &(s, _)) in fabric.attach.iter().enumerate() {
        first_on[s].get_or_insert(h);
    }
    let mut base_rtt_ns = 0;
    for &ha in first_on.iter().flatten() {
        for &hb in first_on.iter().flatten() {
            let (ha, hb) = if ha == hb { (ha, (0..n).find(|&h| h != ha).unwrap_or(ha)) } else { (ha, hb) };
            base_rtt_ns = base_rtt_ns.max(fabric.pair_rtt(cfg, ha, hb, data_frame_len, ack_len));
        }
    }
    let host_link = |h: usize| cfg.topology.links[fabric.wiring.host_port[h].link];
    let hosts = (0..n)
        .map(|h| {
            let (s, p) = fabric.attach[h];
            let l = host_link(h);
            Host {
                ip: host_ip(h),
                mac: host_mac(h),
                gw_mac: switch_mac(s, usize::from(p)),
                rate_bps: l.rate_bps,
                delay_ns: l.delay_ns,
                free_at: 0,
                paused_until: 0,
                wake_at: None,
                ctrl: VecDeque::new(),
                active: Vec::new(),
                rr: 0,
            }
        })
        .collect();
    // W_ai's N: the most fixed or incast flows sharing one destination.
    let mut per_dst = vec![0u32; n];
    for f in &cfg.flows {
        per_dst[f.dst] += 1;
    }
    let n_flows = per_dst.iter().copied().max().unwrap_or(1).max(1);
    let flows = cfg
        .flows
        .iter()
        .enumerate()
        .map(|(i, spec)| Flow {
            spec: *spec,
            qpn: i as u32 + 1,
            tx: None,
            rx: RcReceiver::new(spec.size, 0, 0),
            timer_at: None,
            done_ns: None,
            // Without INT, so both CCs have the same standalone FCT.
            pair_rtt_ns: fabric.pair_rtt(cfg, spec.src, spec.dst, BASE_HEADERS + cfg.mtu, BASE_HEADERS + 4),
        })
        .collect::<Vec<_>>();
    // Buffers, made as needed: every switch's queue-entry table could fill, plus what is on the
    // wires and in the hosts' control queues.
    let pool = HeapPool::lazy(262_144 * fabric.switches.len() + 4096 * n, data_frame_len.max(256) + 64);
    let mut lab = Lab {
        cfg,
        events: BinaryHeap::new(),
        seq: 0,
        now: 0,
        pool,
        switches: fabric.switches,
        hosts,
        attach: fabric.attach,
        flows,
        parked: Vec::new(),
        free_slots: Vec::new(),
        done: 0,
        out: Vec::with_capacity(4),
        result: LabResult {
            flows: Vec::new(),
            queues: Vec::new(),
            rates: Vec::new(),
            pfc: Vec::new(),
            links: Vec::new(),
            base_rtt_ns,
            events: 0,
            simulated_ns: 0,
            switch_drops: 0,
            retransmits: 0,
        },
        data_frame_len,
        n_flows,
        int_hops,
        last_sample: 0,
    };
    // Flows are sorted by start: each start schedules the next, so the heap holds one.
    if let Some(f) = lab.flows.first() {
        let t = f.spec.start_ns;
        lab.push(t, Kind::FlowStart { flow: 0 });
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

    /// Put `frame` on the wire to `node`'s `port`, arriving at `t`.
    fn send_frame(&mut self, t: u64, node: Node, port: u16, frame: PktBuf) {
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.parked[s as usize] = Some(frame);
                s
            }
            None => {
                self.parked.push(Some(frame));
                (self.parked.len() - 1) as u32
            }
        };
        self.push(t, Kind::Arrive { node: node.into(), port, slot });
    }

    /// Take the frame of an arrival off the wire.
    fn unpark(&mut self, slot: u32) -> Option<PktBuf> {
        let f = self.parked.get_mut(slot as usize)?.take();
        self.free_slots.push(slot);
        f
    }

    fn release(&mut self, k: Kind) {
        if let Kind::Arrive { slot, .. } = k
            && let Some(f) = self.unpark(slot)
        {
            self.pool.free(f);
        }
    }

    fn all_done(&self) -> bool {
        self.done == self.flows.len()
    }

    fn fabric_idle(&self) -> bool {
        self.switches.iter().all(|s| (0..s.ports.len()).all(|p| !s.sw.tm().port_has_packets(p as u16)))
    }

    fn handle(&mut self, k: Kind) {
        match k {
            Kind::Arrive { node: Dest::Switch(s), port, slot } => {
                let Some(frame) = self.unpark(slot) else { return };
                let (now, s) = (self.now, s as usize);
                let sn = &mut self.switches[s];
                sn.sw.receive(now, port, frame, &mut self.pool);
                for p in 0..sn.ports.len() {
                    self.schedule_poll(s, p as u16);
                }
            }
            Kind::Arrive { node: Dest::Host(h), slot, .. } => {
                let Some(frame) = self.unpark(slot) else { return };
                self.host_receive(h as usize, &frame);
                self.pool.free(frame);
            }
            Kind::SwitchPoll { sw, port } => self.switch_poll(sw as usize, port),
            Kind::HostWake { host } => {
                let host = host as usize;
                if self.hosts[host].wake_at == Some(self.now) {
                    self.hosts[host].wake_at = None;
                    self.host_send(host);
                }
            }
            Kind::FlowStart { flow } => {
                let flow = flow as usize;
                let h = self.flows[flow].spec.src;
                let tx = self.new_sender(flow);
                self.flows[flow].tx = Some(Box::new(tx));
                self.hosts[h].active.push(flow);
                self.wake(h, self.now);
                self.schedule_timer(flow);
                if let Some(next) = self.flows.get(flow + 1) {
                    let t = next.spec.start_ns;
                    self.push(t, Kind::FlowStart { flow: flow as u32 + 1 });
                }
            }
            Kind::FlowTimer { flow } => {
                let flow = flow as usize;
                if self.flows[flow].timer_at != Some(self.now) {
                    return;
                }
                self.flows[flow].timer_at = None;
                let now = self.now;
                if let Some(tx) = self.flows[flow].tx.as_mut() {
                    tx.handle_timeout(now);
                }
                self.schedule_timer(flow);
                let h = self.flows[flow].spec.src;
                self.wake(h, now);
            }
            Kind::Sample => {
                let now = self.now;
                for (s, sn) in self.switches.iter().enumerate() {
                    for (p, ps) in sn.ports.iter().enumerate() {
                        let bytes = sn.sw.tm().port_bytes(p as u16);
                        self.result.queues.push(QueueSample {
                            time_ns: now,
                            switch: s,
                            port: p as u16,
                            bytes,
                            tx_bytes: ps.tx_bytes,
                        });
                    }
                }
                // Flows running now, or finished since the last sample (their last bytes).
                for (i, f) in self.flows.iter().enumerate() {
                    if f.spec.start_ns <= now && f.done_ns.is_none_or(|d| d > self.last_sample) {
                        self.result.rates.push(RateSample { time_ns: now, flow: i, rx_bytes: f.rx.bytes() });
                    }
                }
                self.last_sample = now;
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
        self.push(t, Kind::SwitchPoll { sw: s as u32, port: p });
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
                self.push(t, Kind::SwitchPoll { sw: s as u32, port: p });
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
            let ps = &mut self.switches[s].ports[usize::from(p)];
            let ser = ser_ns(len, ps.rate_bps);
            ps.free_at = now + ser;
            ps.tx_bytes += len as u64;
            let (peer, peer_port, arrive) = (ps.peer, ps.peer_port, now + ser + ps.delay_ns);
            self.send_frame(arrive, peer, peer_port, f);
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
        self.push(t, Kind::HostWake { host: h as u32 });
    }

    /// The RC sender of flow `fi`, at its host's line rate with the lab's CC.
    fn new_sender(&self, fi: usize) -> RcSender {
        let f = &self.flows[fi];
        let rate = self.hosts[f.spec.src].rate_bps;
        let cc = match self.cfg.cc {
            Cc::Hpcc => FlowCc::Hpcc(Box::new(Hpcc::new(hpcc_config(
                self.cfg,
                rate,
                self.result.base_rtt_ns,
                self.n_flows,
            )))),
            Cc::Dcqcn => FlowCc::Dcqcn(DcqcnRp::new(DcqcnConfig::mellanox(rate))),
        };
        let packets = f.spec.size.div_ceil(self.cfg.mtu as u64).max(1);
        let cfg = SenderConfig {
            size: f.spec.size,
            mtu: self.cfg.mtu,
            dest_qp: f.qpn,
            start_psn: 0,
            overhead: self.data_frame_len - self.cfg.mtu,
            // Enough never to bind before the CC does (the ring is one small slot per packet).
            window_packets: packets.min(1 << 15) as u32,
            ack_every: 1,
            timeout_ns: TIMEOUT_NS,
            retry_limit: 7,
        };
        RcSender::new(cfg, cc)
    }

    /// Make sure flow `fi`'s sender is called when its next timer (DCQCN, timeout) is due.
    fn schedule_timer(&mut self, fi: usize) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let Some(t) = f.tx.as_ref().and_then(|tx| tx.poll_timeout()) else { return };
        let t = t.max(now + 1);
        if f.timer_at.is_some_and(|at| at <= t) {
            return;
        }
        f.timer_at = Some(t);
        self.push(t, Kind::FlowTimer { flow: fi as u32 });
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
            let Some(tx) = self.flows[fi].tx.as_mut() else { continue };
            match tx.poll_transmit(now) {
                Transmit::Send(seg) => {
                    self.hosts[h].rr = (idx + 1) % n;
                    let Some(frame) = self.data_frame(fi, &seg) else { return };
                    return self.host_transmit(h, frame);
                }
                Transmit::Until(t) => earliest = Some(earliest.map_or(t, |e: u64| e.min(t))),
                Transmit::Blocked | Transmit::Done | Transmit::Failed(_) => {}
            }
        }
        if let Some(t) = earliest {
            self.wake(h, t);
        }
    }

    fn host_transmit(&mut self, h: usize, frame: PktBuf) {
        let now = self.now;
        let host = &mut self.hosts[h];
        let ser = ser_ns(frame.len(), host.rate_bps);
        host.free_at = now + ser;
        let (s, p) = self.attach[h];
        let arrive = now + ser + host.delay_ns;
        self.send_frame(arrive, Node::Switch(s), p, frame);
        self.wake(h, now + ser);
    }

    /// Headers from host `from` to `to` for the flow of QP `qpn`: its UDP source port is the
    /// flow's ECMP entropy, as RoCEv2 NICs derive it from the QP; the destination port is
    /// `emit_rc`'s (40051 with INT, 4791 without).
    fn udp_flow(&self, from: usize, to: usize, qpn: u32, dscp: u8, ecn: u8) -> UdpFlow {
        let (a, b) = (&self.hosts[from], &self.hosts[to]);
        let sport = udp_src_port(qpn);
        UdpFlow {
            dscp,
            ecn,
            ..UdpFlow::host_udp(
                a.mac,
                a.gw_mac,
                SocketAddrV4::new(a.ip, sport),
                SocketAddrV4::new(b.ip, wire::udp::port::ROCE_V2),
            )
        }
    }

    /// The data frame of `seg` of flow `fi` (its payload zeros; the lab's hosts check no ICRC,
    /// so it is left zero).
    fn data_frame(&mut self, fi: usize, seg: &nic_agent::rc::Segment) -> Option<PktBuf> {
        let f = &self.flows[fi];
        let ecn = match self.cfg.cc {
            Cc::Hpcc => 0,
            Cc::Dcqcn => ECT0,
        };
        let flow = self.udp_flow(f.spec.src, f.spec.dst, f.qpn, DSCP_DATA, ecn);
        let bth = data_bth(f.qpn, seg);
        let int = (self.cfg.cc == Cc::Hpcc).then(|| IntRepr::empty(self.int_hops));
        let tail = seg.len + usize::from(bth.pad_count) + 4;
        self.frame(&flow, int.as_ref(), &bth, None, tail)
    }

    /// A frame from the pool: UDP `flow`, optional INT, BTH, optional AETH, then `tail` zero
    /// bytes.
    fn frame(
        &mut self,
        flow: &UdpFlow,
        int: Option<&IntRepr>,
        bth: &BthRepr,
        aeth: Option<&AethRepr>,
        tail: usize,
    ) -> Option<PktBuf> {
        let n = rc_frame_len(flow, int, aeth.is_some(), tail).max(60);
        let mut b = self.pool.alloc()?;
        let ok =
            b.append(n).is_some_and(|buf| emit_rc(buf, flow, int, bth, aeth, tail, |t| t.fill(0)).is_ok());
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
                        self.now + wire::pfc::pause_duration_ns(q, host.rate_bps)
                    };
                    let t = host.paused_until;
                    self.wake(h, t);
                }
            }
            return;
        }
        let Ok(p) = parse_rc(d) else { return };
        let Some(peer) = host_of(p.src).filter(|&x| x < self.hosts.len()) else { return };
        // QP numbers are flow numbers + 1 across the lab.
        let Some(fi) = (p.bth.dest_qp as usize).checked_sub(1).filter(|&fi| fi < self.flows.len()) else {
            return;
        };
        match (p.bth.opcode, p.aeth) {
            (Opcode::RC_SEND_ONLY, _) if self.flows[fi].spec.dst == h => {
                self.handle_data(h, peer, fi, &p, &d[p.payload.clone()])
            }
            (Opcode::RC_ACKNOWLEDGE, Some(aeth)) if self.flows[fi].spec.src == h => {
                self.handle_ack(fi, &p.bth, &aeth, p.int.as_ref())
            }
            (Opcode::CNP, _) if self.flows[fi].spec.src == h => {
                if let Some(tx) = self.flows[fi].tx.as_mut() {
                    tx.handle_cnp(self.now);
                }
                self.schedule_timer(fi);
            }
            _ => {}
        }
    }

    fn handle_data(&mut self, h: usize, peer: usize, fi: usize, p: &nic_agent::rc::RcPacket, payload: &[u8]) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let qpn = f.qpn;
        let r = f.rx.handle_data(now, &p.bth, payload, p.ecn == CE);
        if r.completed && f.done_ns.is_none() {
            f.done_ns = Some(now);
            self.done += 1;
        }
        let (ack, cnp) = (r.ack, r.cnp);
        if let Some(ack) = ack {
            let reflected = match (self.cfg.cc, p.int) {
                (Cc::Hpcc, Some(i)) => Some(IntRepr { reflected: true, ..i }),
                _ => None,
            };
            let flow = self.udp_flow(h, peer, qpn, DSCP_CTRL, 0);
            if let Some(f) = self.frame(&flow, reflected.as_ref(), &ack_bth(qpn, &ack), Some(&ack.aeth), 4) {
                self.hosts[h].ctrl.push_back(f);
            }
        }
        if cnp {
            let flow = self.udp_flow(h, peer, qpn, DSCP_CTRL, 0);
            if let Some(f) = self.frame(&flow, None, &cnp_bth(qpn), None, wire::roce::CNP_BODY_LEN + 4) {
                self.hosts[h].ctrl.push_back(f);
            }
        }
        self.wake(h, now);
    }

    fn handle_ack(&mut self, fi: usize, bth: &BthRepr, aeth: &AethRepr, int: Option<&IntRepr>) {
        let now = self.now;
        let f = &mut self.flows[fi];
        let src = f.spec.src;
        let Some(tx) = f.tx.as_mut() else { return };
        tx.handle_ack(now, bth, aeth, int);
        if tx.is_done() {
            let st = tx.stats();
            self.result.retransmits += st.nak_rounds + st.timeouts;
            f.tx = None;
            self.hosts[src].active.retain(|&x| x != fi);
        } else {
            self.schedule_timer(fi);
        }
        self.wake(src, now);
    }

    fn finish(mut self) -> LabResult {
        let cfg = self.cfg;
        // The reference's standalone FCT: the pair's base RTT plus the flow's bytes with their
        // headers (without INT, so both CCs are held to the same yardstick) at the sender's rate.
        let hdr = BASE_HEADERS as u64;
        for (i, f) in self.flows.iter().enumerate() {
            let rate = self.hosts[f.spec.src].rate_bps;
            let packets = f.spec.size.div_ceil(cfg.mtu as u64);
            let standalone = f.pair_rtt_ns + (f.spec.size + packets * hdr) * 8 * 1_000_000_000 / rate;
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
                self.result.links.push((s, p as u16, ps.tx_bytes, ps.rate_bps));
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
