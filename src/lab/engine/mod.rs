//! The event loop over the fabric built from a [`LabConfig`]: switch nodes running any
//! registered program ([`switch_node`]), host nodes running any host agent ([`host_node`]),
//! the RC flow workload ([`rc`]), the events ([`events`]), the addressing ([`fabric`]) and the
//! results ([`results`]).

mod agents;
mod events;
mod fabric;
pub(crate) use fabric::headroom;
pub(crate) use fabric::{check_programs, host_ip};
pub use switch_node::QUEUE_HIST_BYTES;
mod host_node;
mod rc;
mod results;
mod switch_node;

use dataplane::buf::{HeapPool, PktBuf, Pool};

pub use host_node::LabAgent;
pub use results::{AgentSummary, FlowResult, LabResult, PfcEvent, QueueSample, RateSample, SwitchSummary};

use super::config::{HostAgent, LabConfig};
use events::{Dest, Events, Kind};
use host_node::HostNode;
use rc::{BASE_HEADERS, Workload};
use switch_node::SwitchNode;

/// Queue (and PFC priority) of data; ACKs, NAKs and CNPs go on 7 (strict, never paused).
const DATA_QUEUE: u8 = 3;
const DSCP_DATA: u8 = DATA_QUEUE << 3;
const DSCP_CTRL: u8 = 7 << 3;
const ECT0: u8 = 2;

struct Lab<'a> {
    cfg: &'a LabConfig,
    ev: Events,
    now: u64,
    pool: HeapPool,
    switches: Vec<SwitchNode>,
    hosts: Vec<HostNode>,
    workload: Workload,
    out: Vec<PktBuf>,
    result: LabResult,
    last_sample: u64,
    /// Flows started (by their start time) and not yet sampled after they finished, in order.
    live: Vec<usize>,
    /// The next flow to join `live`.
    next_live: usize,
    /// Full polling: per switch, the polls (in `result.polls`) it has snapshotted for.
    full_polled: Vec<usize>,
}

/// Frame buffers the lab makes up front, side by side on huge pages ([`HeapPool::lazy_prefilled`]),
/// per link of the fabric, within bounds; more are made as needed.
const PREFILL_FRAMES_PER_LINK: usize = 32;
const PREFILL_FRAMES: std::ops::RangeInclusive<usize> = 1024..=8192;

/// Set by SIGINT/SIGTERM once [`interrupt_on_signals`] is called: every run then stops at the
/// virtual time it has reached (a simulation asked for hours stops when asked to).
static INTERRUPT: std::sync::LazyLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::LazyLock::new(Default::default);

/// Make SIGINT and SIGTERM stop every run of this process at the virtual time it has reached
/// (instead of killing the process): its results so far are kept, marked interrupted.
pub fn interrupt_on_signals() -> std::io::Result<()> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, INTERRUPT.clone())?;
    }
    Ok(())
}

/// Whether a run was asked to stop ([`interrupt_on_signals`]).
pub fn interrupted() -> bool {
    INTERRUPT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Run a lab to its end (`duration`, or earlier when it has flows and every one is done and the
/// fabric idle), or until SIGINT/SIGTERM if [`interrupt_on_signals`] was called (the
/// result then says so). `progress` is called with the virtual time now and then.
pub fn run(cfg: &LabConfig, mut progress: impl FnMut(u64)) -> Result<LabResult, String> {
    let fabric = fabric::build(cfg)?;
    let workload = Workload::new(cfg, &fabric)?;
    let n = cfg.hosts();
    let mut hosts = Vec::with_capacity(n);
    for h in 0..n {
        let attach = fabric.attach[h];
        let agent: Box<dyn LabAgent> = match &cfg.host_agents[h] {
            HostAgent::Rc if cfg.cc == super::config::Cc::Ufab => {
                let l = cfg.topology.links[fabric.wiring.host_port[h].link];
                Box::new(workload.ufab_host(cfg, h, attach, l.rate_bps))
            }
            HostAgent::Rc => Box::new(workload.host(cfg, h, attach)),
            HostAgent::DtaReporter(r) => Box::new(agents::reporter(h, attach, r)),
            HostAgent::DtaCollector { config } => Box::new(agents::CollectorHost::new(cfg, h, config)?),
            HostAgent::PfcStorm(spec) => {
                Box::new(agents::PfcStorm::new(h, *spec, workload.host(cfg, h, attach)))
            }
        };
        let l = cfg.topology.links[fabric.wiring.host_port[h].link];
        hosts.push(HostNode::new(agent, attach, l.rate_bps, l.delay_ns));
    }
    // Buffers, made as needed: every switch's queue-entry table could fill, plus what is on the
    // wires and in the hosts' control queues. The first are made now on huge pages (a k = 8 fat
    // tree, 384 links, at 50 % load peaks at ~7 000 frames in flight).
    let pool = HeapPool::lazy_prefilled(
        262_144 * fabric.switches.len() + 4096 * n,
        workload.max_frame().max(256) + 64,
        (PREFILL_FRAMES_PER_LINK * cfg.topology.links.len())
            .clamp(*PREFILL_FRAMES.start(), *PREFILL_FRAMES.end()),
    );
    let n_switches = fabric.switches.len();
    let mut lab = Lab {
        cfg,
        ev: Events::default(),
        now: 0,
        pool,
        result: LabResult {
            interrupted: false,
            flows: Vec::new(),
            queues: Vec::new(),
            rates: Vec::new(),
            pfc: Vec::new(),
            links: Vec::new(),
            queue_hist: Vec::new(),
            base_rtt_ns: workload.base_rtt_ns,
            data_frame_len: workload.max_frame(),
            events: 0,
            frame_buffers: (0, 0),
            simulated_ns: 0,
            switch_drops: 0,
            retransmits: 0,
            switches: Vec::new(),
            agents: Vec::new(),
            records: Vec::new(),
            polls: Vec::new(),
            rtt_hist: Vec::new(),
            ufab_pairs: Vec::new(),
            ufab_moves: Vec::new(),
            wiring: fabric
                .wiring
                .switch_ports
                .iter()
                .map(|ports| ports.iter().map(|e| (e.peer, e.peer_port)).collect())
                .collect(),
        },
        switches: fabric.switches,
        hosts,
        workload,
        out: Vec::with_capacity(4),
        last_sample: 0,
        live: Vec::new(),
        next_live: 0,
        full_polled: vec![0; n_switches],
    };
    // Flows are sorted by start: each start schedules the next, so the heap holds one.
    if let Some(f) = cfg.flows.first() {
        lab.ev.push(f.start_ns, Kind::FlowStart { flow: 0 });
    }
    // Programs with timers tick from the start; agents wake when they first have something.
    for (s, sn) in lab.switches.iter().enumerate() {
        if sn.sw.tick_interval().is_some() {
            lab.ev.push(0, Kind::SwitchTick { sw: s as u32 });
        }
    }
    for (h, host) in lab.hosts.iter_mut().enumerate() {
        if let Some(t) = host.agent.poll_timeout() {
            host.wake(&mut lab.ev, h, t);
        }
    }
    lab.ev.push(0, Kind::Sample);
    for &(s, at) in &cfg.failures {
        lab.ev.push(at, Kind::SwitchFail { sw: s as u32 });
    }
    let mut next_progress = 0;
    // With run_to_completion_us, on past the duration until every flow is acknowledged.
    let end = cfg.duration_ns.saturating_add(cfg.completion_ns);
    while let Some((t, kind)) = lab.ev.pop() {
        if t > end {
            lab.release(kind);
            break;
        }
        // A stop asked for (SIGINT/SIGTERM), looked at every few thousand events.
        if lab.result.events.is_multiple_of(4096) && INTERRUPT.load(std::sync::atomic::Ordering::Relaxed) {
            lab.result.interrupted = true;
            lab.release(kind);
            break;
        }
        lab.now = t;
        lab.result.events += 1;
        if t >= next_progress {
            progress(t);
            next_progress = t + cfg.duration_ns / 100 + 1;
        }
        lab.handle(kind);
        if !cfg.flows.is_empty() && lab.ev.sample_next() && lab.all_done() && lab.fabric_idle() {
            break;
        }
    }
    while let Some((_, kind)) = lab.ev.pop() {
        lab.release(kind);
    }
    progress(cfg.duration_ns);
    Ok(lab.finish())
}

impl Lab<'_> {
    fn release(&mut self, k: Kind) {
        if let Kind::Arrive { slot, .. } = k
            && let Some(f) = self.ev.unpark(slot)
        {
            self.pool.free(f);
        }
    }

    /// Every flow's sender has the acknowledgement of its last byte (a receiver with every
    /// byte is not enough: its last acknowledgements are still on their way, and the run would
    /// end with them in flight).
    fn all_done(&mut self) -> bool {
        let flows = self.cfg.flows.iter().enumerate();
        let hosts = &mut self.hosts;
        flows.into_iter().all(|(i, f)| hosts[f.src].agent.rc().and_then(|r| r.acked_at(i as u64)).is_some())
    }

    fn fabric_idle(&self) -> bool {
        self.switches.iter().all(SwitchNode::idle)
    }

    fn handle(&mut self, k: Kind) {
        let now = self.now;
        match k {
            Kind::Arrive { node: Dest::Switch(s), port, slot } => {
                let Some(frame) = self.ev.unpark(slot) else { return };
                let s = s as usize;
                self.switches[s].receive(&mut self.ev, s, port, frame, now, &mut self.pool);
            }
            Kind::Arrive { node: Dest::Host(h), slot, .. } => {
                let Some(frame) = self.ev.unpark(slot) else { return };
                let h = h as usize;
                self.hosts[h].arrive(&mut self.ev, h, &frame, now);
                self.pool.free(frame);
            }
            Kind::SwitchPoll { sw, port } => {
                let s = sw as usize;
                let Self { switches, ev, pool, out, result, .. } = self;
                switches[s].poll(ev, s, port, now, pool, out, &mut result.pfc);
            }
            Kind::SwitchTick { sw } => {
                let s = sw as usize;
                if self.cfg.hawkeye_full_polling {
                    self.full_poll(s);
                }
                self.switches[s].tick(&mut self.ev, s, now, &mut self.pool);
                let mut recs = Vec::new();
                self.switches[s].sw.take_records(&mut recs);
                self.result.records.extend(recs.into_iter().map(|r| (now, s, r)));
            }
            Kind::HostWake { host } => {
                let h = host as usize;
                self.hosts[h].on_wake(&mut self.ev, h, now, &mut self.pool);
            }
            Kind::FlowStart { flow } => {
                let fi = flow as usize;
                let h = self.cfg.flows[fi].src;
                let send = self.workload.sender(self.cfg, fi, self.hosts[h].rate_bps);
                if self.cfg.cc == super::config::Cc::Ufab
                    && let Some(u) = self.hosts[h].agent.ufab()
                {
                    u.start_send(now, send, self.workload.ufab_flow(self.cfg, fi));
                } else if let Some(rc) = self.hosts[h].agent.rc() {
                    rc.start_send(now, send);
                }
                self.hosts[h].settle(&mut self.ev, h, now);
                if let Some(next) = self.cfg.flows.get(fi + 1) {
                    self.ev.push(next.start_ns, Kind::FlowStart { flow: flow + 1 });
                }
            }
            Kind::Sample => self.sample(),
            Kind::SwitchFail { sw } => self.fail_switch(sw as usize),
        }
    }

    /// `[[failure]]`: switch `s` fails now — what it holds is lost and it takes nothing more;
    /// each neighbour's port towards it goes down (`port down PORT`: `l2l3`'s ECMP leaves it
    /// out, as link-down detection would) and, for `ufab`, fails (`ufab fail PORT`: probes come
    /// back as failure notifications).
    fn fail_switch(&mut self, s: usize) {
        self.switches[s].fail(&mut self.pool);
        let now = self.now;
        let peers: Vec<(usize, u16)> = self.switches[s]
            .ports
            .iter()
            .filter_map(|p| match p.peer {
                crate::lab::topology::Node::Switch(o) => Some((o, p.peer_port)),
                _ => None,
            })
            .collect();
        for (o, port) in peers {
            // The lab names switch ports p0, p1, … (fabric::build).
            let names: Vec<String> = (0..self.switches[o].ports.len()).map(|p| format!("p{p}")).collect();
            // Every l2l3 program leaves it out of ECMP; ufab also turns probes back.
            for line in [format!("port down p{port}"), format!("ufab fail p{port}")] {
                let _ = self.switches[o].sw.command(&line, &names, now);
            }
        }
    }

    /// Full polling: the agents' polls so far, and for each one switch `s` has not yet seen, a
    /// snapshot of every port (`hawkeye snapshot EVENT`) before its control side runs.
    fn full_poll(&mut self, s: usize) {
        for (h, host) in self.hosts.iter_mut().enumerate() {
            if let Some(rc) = host.agent.rc() {
                self.result.polls.extend(rc.take_poll_events().into_iter().map(|e| (h, e)));
            }
        }
        let now = self.now;
        for i in self.full_polled[s]..self.result.polls.len() {
            let line = format!("hawkeye snapshot {}", self.result.polls[i].1.event_id);
            // Switches running another program refuse it: they have no telemetry.
            let _ = self.switches[s].sw.command(&line, &[], now);
        }
        self.full_polled[s] = self.result.polls.len();
    }

    /// Queue depths and bytes sent of every switch port, and bytes delivered of every flow
    /// running now or finished since the last sample.
    fn sample(&mut self) {
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
        let flows = &self.cfg.flows;
        while self.next_live < flows.len() && flows[self.next_live].start_ns <= now {
            self.live.push(self.next_live);
            self.next_live += 1;
        }
        let (hosts, result, last) = (&mut self.hosts, &mut self.result, self.last_sample);
        self.live.retain(|&i| {
            let Some(rc) = hosts[flows[i].dst].agent.rc() else { return false };
            let done = rc.completed_at(i as u64);
            if done.is_some_and(|d| d <= last) {
                return false;
            }
            let rx_bytes = rc.received(i as u64).unwrap_or(0);
            result.rates.push(RateSample { time_ns: now, flow: i, rx_bytes });
            true
        });
        self.last_sample = now;
        self.ev.push(now + self.cfg.sample_ns, Kind::Sample);
    }

    fn finish(mut self) -> LabResult {
        let cfg = self.cfg;
        // The reference's standalone FCT: the pair's base RTT plus the flow's bytes with their
        // headers (without INT, so both CCs are held to the same yardstick) at the sender's rate.
        let hdr = BASE_HEADERS as u64;
        for (i, f) in cfg.flows.iter().enumerate() {
            let rate = self.hosts[f.src].rate_bps;
            let packets = f.size.div_ceil(cfg.mtu as u64);
            // In 128 bits: a flow of up to 2^50 bytes (MAX_FLOW_BYTES) in ns overflows 64.
            let wire_ns = (u128::from(f.size + packets * hdr) * 8_000_000_000 / u128::from(rate.max(1)))
                .min(u128::from(u64::MAX / 2)) as u64;
            let standalone = self.workload.pair_rtt_ns[i] + wire_ns;
            // Complete when the sender has the acknowledgement of its last byte, as the
            // reference's fct.txt (the standalone FCT includes the whole round trip).
            let done = self.hosts[f.src].agent.rc().and_then(|r| r.acked_at(i as u64));
            self.result.flows.push(FlowResult {
                id: i,
                src: f.src,
                dst: f.dst,
                size: f.size,
                start_ns: f.start_ns,
                fct_ns: done.map(|d| d - f.start_ns),
                standalone_ns: standalone,
                acked_bytes: self.hosts[f.src].agent.rc().and_then(|r| r.acked(i as u64)).unwrap_or(0),
            });
        }
        for (s, sn) in self.switches.iter().enumerate() {
            for (p, ps) in sn.ports.iter().enumerate() {
                self.result.links.push((s, p as u16, ps.tx_bytes, ps.rate_bps));
                if !ps.queue_hist.is_empty() {
                    self.result.queue_hist.push((s, p as u16, ps.queue_hist.clone()));
                }
            }
            // PFC frames end at the switch that obeys them (reason mac_control): not losses.
            let names = sn.sw.drop_reasons().names();
            let c = sn.sw.counters();
            self.result.switch_drops +=
                c.drops.iter().zip(names).filter(|(_, n)| **n != "mac_control").map(|(c, _)| c).sum::<u64>();
            let mut counters: Vec<(String, u64)> = c
                .drops
                .iter()
                .zip(names)
                .filter(|(c, _)| **c > 0)
                .map(|(c, n)| (format!("drop_{n}"), *c))
                .collect();
            counters.extend([
                ("consumed".to_string(), c.consumed),
                ("to_cpu".to_string(), c.to_cpu),
                ("recirculated".to_string(), c.recirculated),
            ]);
            if sn.failed {
                // What the failure took: queued when it failed and arriving after.
                counters.push(("drop_switch_failed".to_string(), sn.failed_drops));
                self.result.switch_drops += sn.failed_drops;
            }
            self.result.switches.push(SwitchSummary { switch: s, program: sn.program, counters });
        }
        for (h, host) in self.hosts.iter_mut().enumerate() {
            if let Some(u) = host.agent.ufab() {
                let pairs: Vec<(u64, nic_agent::ufab::pair::VmPair)> =
                    u.pairs().map(|(f, p)| (f, p.clone())).collect();
                for (flow, p) in &pairs {
                    let (flow, p) = (*flow, p);
                    self.result.ufab_pairs.push(results::UfabPairRow {
                        host: h,
                        flow,
                        path: p.current_path(),
                        route: u.route(flow).map(<[u16]>::to_vec).unwrap_or_default(),
                        phi: p.phi(),
                        phi_d: p.phi_d(),
                        window: p.window_bytes(),
                        share_bps: p.share_bps(),
                        stats: p.stats(),
                    });
                    for &(t, path, why) in p.moves() {
                        self.result.ufab_moves.push((t, flow, path, why.name()));
                    }
                }
            }
            if let Some(rc) = host.agent.rc() {
                if let Some(h) = rc.rtt_histogram() {
                    let all = &mut self.result.rtt_hist;
                    all.resize(all.len().max(h.len()), 0);
                    for (a, b) in all.iter_mut().zip(h) {
                        *a += b;
                    }
                }
                self.result.retransmits += rc.stats().retransmit_rounds;
                self.result.polls.extend(rc.take_poll_events().into_iter().map(|e| (h, e)));
            }
            self.result.agents.push(AgentSummary {
                host: h,
                agent: host.agent.name(),
                counters: host.agent.summary(),
            });
        }
        self.result.simulated_ns = self.now;
        self.result.frame_buffers = (self.pool.peak(), self.pool.dataroom() + ports::buf::HEADROOM);
        for sn in &mut self.switches {
            sn.sw.drain_all(&mut self.pool);
        }
        self.result
    }
}
