//! [`UfabHost`]: a host's NIC running µFAB-E over RC flows, as a frame-level [`Agent`] — the
//! lab's `ufab` hosts and the `nic-agent` binary on a real port run it unchanged.
//!
//! Each RC flow sent from here is one underlay path of a VM-pair of a VF ([`VmPair`] is that
//! path's state machine): it joins a path by looking at its candidates, its data goes out behind
//! the path's MPLS labels (`wire::mpls`), and its window and pacing rate come from its probes'
//! responses, not from its ACKs (the flow's own CC is a fixed rate, its pacer set from outside).
//! A VM-pair is one flow (one path, as in most of the paper) or several flows with the same
//! [`UfabFlow::vm_pair`] (Appendix F: "multiple underlay paths for each VM-pair", the tenant
//! spreading its traffic over them — here, its connections). Every `token_period_ns` the host
//! runs Algorithm 1 per VF over its active VM-pairs (their measured rates, summed over their
//! paths, and their receivers' last admissions), then Algorithm 2 per VM-pair over its paths
//! (each path's measured rate); as a receiver it answers each probe with a response carrying the
//! telemetry back and its own admission φ_D (Algorithm 1's receiver half over the VM-pairs of
//! the same VF that probed it lately, a VM-pair's demand the sum of its paths' φ). A pair whose
//! migration finds no qualified path may trade paths with another of the host's pairs to the
//! same peer (`try_swap`, not in the paper).
//!
//! What the NIC sends next: responses (the control priority, as ACKs), the RC receivers' ACKs,
//! then — the data priority not paused — probes, then data, chosen by the weighted VF scheduler
//! ([`Scheduler`]) among the pairs whose window and pacer let a packet go.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};

use hashbrown::HashMap;
use roce::agent::Agent;
use wire::stack::UdpFlow;
use wire::ufab::{UfabKind, UfabRepr};

use super::pair::{MigrationGate, MoveReason, PairConfig, Phase, VmPair};
use super::rate::{self, LinkInfo};
use super::sched::{CLASSES, Scheduler};
use super::tokens::{self, SenderPair, UNBOUND};
use crate::host::{RcHost, SendFlow};

/// A VF as one host sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VfSpec {
    /// φ^α: its hose guarantee in tokens (guarantee / B_u).
    pub tokens: f64,
    /// Its weighted queue (0..8).
    pub class: usize,
}

/// The host's µFAB-E settings.
#[derive(Debug, Clone, PartialEq)]
pub struct UfabHostConfig {
    /// Every pair's settings (its `pair_id` is the flow's).
    pub pair: PairConfig,
    /// N of the freeze window [1, N] RTTs.
    pub freeze_rtts: u32,
    /// The 8 queues' weights.
    pub weights: [u64; CLASSES],
    /// How often Algorithm 1 runs, ns.
    pub token_period_ns: u64,
    /// MPLS traffic class of data and probes (the data's priority).
    pub tc: u8,
    /// The host's line rate, b/s (the pacing rate of a flow with no path yet is irrelevant: its
    /// window is 0).
    pub line_rate_bps: f64,
    /// Seed of the pairs' and the gate's draws.
    pub seed: u64,
}

/// A flow's µFAB side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UfabFlow {
    /// Its VF (index into the host's VFs).
    pub vf: usize,
    /// The pair ID its probes carry (unique per sending host).
    pub pair_id: u16,
    /// Its candidate paths: each the egress ports of the switches on it, first hop first.
    pub paths: Vec<Vec<u16>>,
    /// Its base RTT T, ns (0: the host's `pair.base_rtt_ns`).
    pub base_rtt_ns: u64,
    /// The VM-pair it is a path of: flows of one VF to one peer with the same `vm_pair` are one
    /// VM-pair's paths (Appendix F; Algorithm 2 splits its tokens). A flow of its own, one path,
    /// takes its `pair_id`.
    pub vm_pair: u32,
}

/// What the host counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UfabHostStats {
    /// Probes sent (looks, probes, finishes).
    pub probes_tx: u64,
    /// Responses sent (as a receiver).
    pub responses_tx: u64,
    /// Responses received (as a sender).
    pub responses_rx: u64,
    /// Failure notifications received.
    pub failures_rx: u64,
    /// Responses for no pair of ours.
    pub unknown_responses: u64,
    /// Data frames sent behind labels.
    pub data_tx: u64,
    /// Their bytes on the wire.
    pub data_bytes_tx: u64,
    /// Probe bytes on the wire (looks, probes, finishes).
    pub probe_bytes_tx: u64,
    /// Response bytes on the wire (as a receiver).
    pub response_bytes_tx: u64,
    /// µFAB packets that did not parse.
    pub malformed: u64,
    /// Responses not queued: the queue was full.
    pub responses_dropped: u64,
    /// Swaps: a pair stuck on a violated path traded paths with another of ours (two moves).
    pub swaps: u64,
}

struct Pair {
    flow_id: u64,
    peer: Ipv4Addr,
    vf: usize,
    /// The VM-pair this path belongs to ([`UfabFlow::vm_pair`]).
    vm_pair: u32,
    /// Its other paths (indices into the host's pairs).
    siblings: Vec<usize>,
    paths: Vec<Vec<u16>>,
    pair: VmPair,
    done: bool,
    /// Bytes sent this token period, and the rate measured over the last.
    period_bytes: u64,
    tx_bps: f64,
}

struct Incoming {
    vf: Option<usize>,
    /// The VM-pair the probing path belongs to (its admission is the VM-pair's).
    vm_pair: u32,
    phi_s: f64,
    phi_d: f64,
    seen: u64,
}

/// The bytes of path `k` of a VM-pair of `paths` paths whose tenant spreads `size` bytes over
/// one connection per path evenly, the first paths taking the remainder (Appendix F; the lab's
/// `[[flow]] paths` and `nic-agent send --paths`): the path's offset and length.
pub fn path_share(size: u64, paths: u32, k: u32) -> (u64, u64) {
    let (n, k) = (u64::from(paths.max(1)), u64::from(k));
    let len = size / n + u64::from(k < size % n);
    (k * (size / n) + k.min(size % n), len)
}

/// Responses kept waiting at most.
const RESPONSES_MAX: usize = 1024;
/// Largest µFAB frame: Ethernet, IPv4, UDP, header and 15 slots.
const MAX_UFAB_FRAME: usize = 14 + 20 + 8 + 4 + 15 * 8;

/// A host's NIC running µFAB-E: see the module.
pub struct UfabHost {
    rc: RcHost,
    cfg: UfabHostConfig,
    vfs: Vec<VfSpec>,
    sched: Scheduler,
    sched_vf: Vec<usize>,
    pairs: Vec<Pair>,
    by_pair_id: HashMap<u16, usize>,
    gate: MigrationGate,
    incoming: HashMap<(Ipv4Addr, u16), Incoming>,
    expected: HashMap<(Ipv4Addr, u16), (usize, u32)>,
    responses: VecDeque<([u8; MAX_UFAB_FRAME], usize)>,
    next_tokens: u64,
    last_now: u64,
    until: Option<u64>,
    stats: UfabHostStats,
}

impl std::fmt::Debug for UfabHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UfabHost").field("cfg", &self.cfg).field("stats", &self.stats).finish()
    }
}

impl UfabHost {
    /// µFAB-E over `rc` (its receivers already expected) with these VFs.
    pub fn new(rc: RcHost, cfg: UfabHostConfig, vfs: Vec<VfSpec>) -> Self {
        let mut sched = Scheduler::new(cfg.weights, 9000);
        let sched_vf = vfs.iter().map(|v| sched.add_vf(v.class)).collect();
        let gate = MigrationGate::new(cfg.freeze_rtts, cfg.seed ^ 0x5bd1_e995);
        Self {
            rc,
            cfg,
            vfs,
            sched,
            sched_vf,
            pairs: Vec::new(),
            by_pair_id: HashMap::new(),
            gate,
            incoming: HashMap::new(),
            expected: HashMap::new(),
            responses: VecDeque::new(),
            next_tokens: 0,
            last_now: 0,
            until: None,
            stats: UfabHostStats::default(),
        }
    }

    /// The RC NIC underneath.
    pub fn rc(&mut self) -> &mut RcHost {
        &mut self.rc
    }

    /// The RC NIC underneath, read-only.
    pub fn rc_ref(&self) -> &RcHost {
        &self.rc
    }

    /// Counters.
    pub fn stats(&self) -> UfabHostStats {
        self.stats
    }

    /// The pair of flow `id` (sent from here).
    pub fn pair(&self, id: u64) -> Option<&VmPair> {
        self.pairs.iter().find(|p| p.flow_id == id).map(|p| &p.pair)
    }

    /// The source route flow `id` (sent from here) takes now: the egress port at each switch.
    pub fn route(&self, id: u64) -> Option<&[u16]> {
        let p = self.pairs.iter().find(|p| p.flow_id == id)?;
        p.paths.get(p.pair.current_path()?).map(Vec::as_slice)
    }

    /// Every pair: its flow ID and state.
    pub fn pairs(&self) -> impl Iterator<Item = (u64, &VmPair)> {
        self.pairs.iter().map(|p| (p.flow_id, &p.pair))
    }

    /// As a receiver: pair `pair_id` from `src` is a path of VM-pair `vm_pair` of VF `vf`
    /// ([`UfabFlow::vm_pair`]; a one-path pair's is its `pair_id`): admission is among that
    /// VF's VM-pairs, a VM-pair's demand its paths' φ summed. An unknown pair is admitted
    /// unbound.
    pub fn expect_path(&mut self, src: Ipv4Addr, pair_id: u16, vf: usize, vm_pair: u32) {
        self.expected.insert((src, pair_id), (vf, vm_pair));
    }

    /// Start sending `flow` at `now` as a VM-pair of `u`: the RC flow is held (window 0) until
    /// the pair has a path.
    pub fn start_send(&mut self, now: u64, flow: SendFlow, u: UfabFlow) {
        let id = flow.id;
        let peer = flow.peer;
        self.rc.start_send(now, flow);
        self.rc.set_pacing(id, self.cfg.line_rate_bps, Some(0));
        let vf = u.vf.min(self.vfs.len().saturating_sub(1));
        let tokens = self.vfs.get(vf).map_or(1.0, |v| v.tokens);
        let hops: Vec<u8> = u.paths.iter().map(|p| p.len().min(wire::ufab::MAX_HOPS) as u8).collect();
        let base_rtt_ns = if u.base_rtt_ns > 0 { u.base_rtt_ns } else { self.cfg.pair.base_rtt_ns };
        let cfg = PairConfig { pair_id: u.pair_id, base_rtt_ns, ..self.cfg.pair.clone() };
        let seed = self.cfg.seed ^ (u64::from(u.pair_id) << 32) ^ id;
        let pair = VmPair::new(cfg, &hops, tokens, now, seed);
        let i = self.pairs.len();
        self.by_pair_id.insert(u.pair_id, i);
        let siblings: Vec<usize> =
            (0..i).filter(|&j| self.pairs[j].peer == peer && self.pairs[j].vm_pair == u.vm_pair).collect();
        for &j in &siblings {
            self.pairs[j].siblings.push(i);
        }
        if let Some(&svf) = self.sched_vf.get(vf) {
            self.sched.add_pair(svf, i as u32);
        }
        self.pairs.push(Pair {
            flow_id: id,
            peer,
            vf,
            vm_pair: u.vm_pair,
            siblings,
            paths: u.paths,
            pair,
            done: false,
            period_bytes: 0,
            tx_bps: 0.0,
        });
        self.sync_l_w(i);
        // Tokens split among the VF's pairs from the start.
        self.assign_tokens(now);
    }

    /// Algorithm 1 per VF over its running VM-pairs, then Algorithm 2 per VM-pair over its
    /// paths.
    fn assign_tokens(&mut self, now: u64) {
        let period = self.cfg.token_period_ns.max(1) as f64 * 1e-9;
        // A path not on a route yet has no rate: its demand is unknown, so it counts as
        // unbounded (it joins to send).
        let tx = |p: &Pair| if p.pair.phase() == Phase::Active { p.tx_bps } else { f64::INFINITY };
        for (v, spec) in self.vfs.iter().enumerate() {
            // The VF's VM-pairs, each the indices of its running paths.
            let mut groups: Vec<(Ipv4Addr, u32, Vec<usize>)> = Vec::new();
            let mut index: HashMap<(Ipv4Addr, u32), usize> = HashMap::new();
            for (i, p) in self.pairs.iter().enumerate() {
                if p.vf != v || p.done {
                    continue;
                }
                let g = *index.entry((p.peer, p.vm_pair)).or_insert_with(|| {
                    groups.push((p.peer, p.vm_pair, Vec::new()));
                    groups.len() - 1
                });
                groups[g].2.push(i);
            }
            if groups.is_empty() {
                continue;
            }
            let mut sp: Vec<SenderPair> = groups
                .iter()
                .map(|(_, _, m)| {
                    // The receiver answers every path with the VM-pair's admission: the
                    // tightest any path last heard.
                    let phi_d = m.iter().map(|&i| self.pairs[i].pair.phi_d()).fold(UNBOUND, f64::min);
                    SenderPair::new(m.iter().map(|&i| tx(&self.pairs[i])).sum(), phi_d)
                })
                .collect();
            tokens::assign(spec.tokens, self.cfg.pair.b_u_bps, &mut sp);
            for (g, s) in groups.iter().zip(&sp) {
                let rates: Vec<f64> = g.2.iter().map(|&i| tx(&self.pairs[i])).collect();
                let per_path = tokens::assign_paths(s.phi_s, self.cfg.pair.b_u_bps, &rates);
                for (&i, phi) in g.2.iter().zip(per_path) {
                    self.pairs[i].pair.set_phi(phi);
                }
            }
        }
        for p in &mut self.pairs {
            p.tx_bps = p.period_bytes as f64 * 8.0 / period;
            p.period_bytes = 0;
        }
        // The NIC link: Φ_0, W_0 and tx_0 over the pairs on a path.
        let on = |p: &&Pair| !p.done && p.pair.phase() == Phase::Active;
        let nic = LinkInfo {
            w_l: self.pairs.iter().filter(on).map(|p| p.pair.nic_window()).sum(),
            phi_l: self.pairs.iter().filter(on).map(|p| p.pair.phi()).sum(),
            tx_bps: self.pairs.iter().filter(on).map(|p| p.tx_bps).sum(),
            q_bytes: 0.0,
            c_bps: self.cfg.pair.eta * self.cfg.line_rate_bps,
        };
        for p in &mut self.pairs {
            p.pair.set_nic(Some(nic));
        }
        self.next_tokens = now + self.cfg.token_period_ns.max(1);
    }

    /// Pair `i`'s flow is done: it finishes its path, and its VM-pair has a path fewer.
    fn finish_path(&mut self, i: usize) {
        self.pairs[i].done = true;
        self.pairs[i].pair.finish();
        self.sync_l_w(i);
    }

    /// §4.1's L_w is the VM-pair's: each of the running paths of pair `i`'s VM-pair probes per
    /// K·L_w of its own bytes, K those paths.
    fn sync_l_w(&mut self, i: usize) {
        let p = &self.pairs[i];
        let live: Vec<usize> =
            std::iter::once(i).chain(p.siblings.iter().copied()).filter(|&j| !self.pairs[j].done).collect();
        let l_w = self.cfg.pair.probe_every_bytes * live.len() as u64;
        for j in live {
            self.pairs[j].pair.set_probe_every_bytes(l_w);
        }
    }

    /// Before pair `i` decides anything: the candidates its VM-pair's other paths are on, for
    /// it to avoid.
    fn sync_avoid(&mut self, i: usize) {
        let p = &self.pairs[i];
        if p.siblings.is_empty() {
            return;
        }
        let mask = (0..p.paths.len().min(64))
            .filter(|&k| self.on_route(&p.siblings, &p.paths[k]))
            .fold(0u64, |m, k| m | 1 << k);
        self.pairs[i].pair.set_avoid(mask);
    }

    /// Whether one of `pairs` (running) is on `route`.
    fn on_route(&self, pairs: &[usize], route: &[u16]) -> bool {
        pairs.iter().any(|&j| {
            let q = &self.pairs[j];
            !q.done && q.pair.current_path().is_some_and(|c| q.paths[c] == route)
        })
    }

    /// The pacer of pair `i`'s flow, from its window (0 while it may not send).
    fn sync_pacing(&mut self, i: usize, now: u64) {
        let p = &self.pairs[i];
        if p.pair.may_send(now) {
            let w = p.pair.window_bytes().max(1.0) as u64;
            let rate = p.pair.rate_bps().min(self.cfg.line_rate_bps);
            self.rc.set_pacing(p.flow_id, rate, Some(w));
        } else {
            self.rc.set_pacing(p.flow_id, self.cfg.line_rate_bps, Some(0));
        }
    }

    /// After pair `i` handled something at `now` (it had made `moves` moves before): its pacer,
    /// and if it just moved off a failed path, what its flow had in flight there is lost: resend
    /// it now rather than after the transport's timeout.
    fn after_event(&mut self, i: usize, moves: usize, now: u64) {
        let p = &self.pairs[i];
        if p.pair.moves()[moves.min(p.pair.moves().len())..].iter().any(|m| m.2 == MoveReason::Failed) {
            self.rc.resend_outstanding(p.flow_id, now);
        }
        self.sync_pacing(i, now);
    }

    /// If pair `i` just gave up a migration (its path violated, no other candidate qualified),
    /// trade paths with another of this host's pairs to the same peer when that leaves both
    /// paths qualified — not in the paper, see the module docs. Pair `i` is P on path X, the
    /// partner Q on path Y; P's looks of the candidates have just come back.
    ///
    /// The test is [`rate::swap_subscription`] on P's last probe of X, P's look of Y and Q's
    /// last probe of Y; of the partners that pass, the one leaving the least subscription. P's
    /// freeze window (§3.5) was used by the migration that got stuck: the swap is that one
    /// migration.
    fn try_swap(&mut self, now: u64, i: usize) {
        if !self.pairs[i].pair.take_stuck() {
            return;
        }
        let p = &self.pairs[i];
        let Some(x) = p.pair.current_path() else { return };
        let Some((links_x, false)) = p.pair.reported(x) else { return };
        let phi_p = p.pair.phi().round();
        let b_u = self.cfg.pair.b_u_bps;
        let mut best: Option<(f64, usize, usize, usize)> = None;
        for (qi, q) in self.pairs.iter().enumerate() {
            if qi == i || q.done || q.peer != p.peer || !q.pair.settled() {
                continue;
            }
            let Some(y_q) = q.pair.current_path() else { continue };
            let route_y = &q.paths[y_q];
            // Never onto a route another path of the same VM-pair is on (Appendix F: distinct
            // underlay paths), nor between two paths of one VM-pair.
            if p.siblings.contains(&qi)
                || self.on_route(&p.siblings, route_y)
                || self.on_route(&q.siblings, &p.paths[x])
            {
                continue;
            }
            // Y among P's candidates, X among Q's, both as long as each other.
            let Some(y) = p.paths.iter().position(|r| r == route_y) else { continue };
            let Some(x_q) = q.paths.iter().position(|r| *r == p.paths[x]) else { continue };
            if y == x || route_y.len() != p.paths[x].len() {
                continue;
            }
            let (Some((look_y, true)), Some((probe_y, false))) = (p.pair.reported(y), q.pair.reported(y_q))
            else {
                continue;
            };
            let Some(worst) =
                rate::swap_subscription(phi_p, q.pair.phi().round(), b_u, &links_x, &look_y, &probe_y)
            else {
                continue;
            };
            if best.is_none_or(|b| worst < b.0) {
                best = Some((worst, qi, y, x_q));
            }
        }
        let Some((_, qi, y, x_q)) = best else { return };
        self.pairs[i].pair.swap_to(now, y);
        self.pairs[qi].pair.swap_to(now, x_q);
        self.stats.swaps += 1;
        self.sync_pacing(i, now);
        self.sync_pacing(qi, now);
    }

    /// A µFAB packet (UDP to port 40050) at `now`, its IPv4 header at `l3`.
    fn on_ufab(&mut self, now: u64, frame: &[u8], l3: usize) {
        let Ok(ip) = wire::Ipv4Packet::new_checked(&frame[l3..]) else {
            self.stats.malformed += 1;
            return;
        };
        let (src, ident) = (ip.src_addr(), ip.ident());
        let Ok(udp) = wire::UdpPacket::new_checked(ip.payload()) else {
            self.stats.malformed += 1;
            return;
        };
        let sport = udp.src_port();
        let Ok(r) = UfabRepr::parse(udp.payload()) else {
            self.stats.malformed += 1;
            return;
        };
        match r.kind {
            UfabKind::Probe | UfabKind::Finish | UfabKind::Look => self.respond(now, src, sport, ident, r),
            UfabKind::Response | UfabKind::FailureResponse => {
                self.stats.responses_rx += 1;
                self.stats.failures_rx += u64::from(r.kind == UfabKind::FailureResponse);
                let Some(&i) = self.by_pair_id.get(&sport) else {
                    self.stats.unknown_responses += 1;
                    return;
                };
                if self.pairs[i].peer != src {
                    self.stats.unknown_responses += 1;
                    return;
                }
                let moves = self.pairs[i].pair.moves().len();
                self.sync_avoid(i);
                self.pairs[i].pair.handle_response(now, &r, ident, &mut self.gate);
                self.after_event(i, moves, now);
                self.try_swap(now, i);
            }
        }
    }

    /// Answer a probe, finish or look from `src` (pair `sport`): the telemetry back, our
    /// admission (counted from probes only).
    fn respond(&mut self, now: u64, src: Ipv4Addr, sport: u16, ident: u16, mut r: UfabRepr) {
        let key = (src, sport);
        let mut phi_d = UNBOUND;
        // A look carries no φ: admission counts the pair's probes only.
        if r.kind == UfabKind::Probe {
            let (vf, vm_pair) = match self.expected.get(&key) {
                Some(&(vf, g)) => (Some(vf), g),
                None => (None, u32::from(sport)),
            };
            let e = self.incoming.entry(key).or_insert(Incoming {
                vf,
                vm_pair,
                phi_s: 0.0,
                phi_d: UNBOUND,
                seen: now,
            });
            e.phi_s = f64::from(r.phi_pair);
            e.seen = now;
            if let Some(vf) = vf
                && let Some(spec) = self.vfs.get(vf)
            {
                // Receiver admission among the VF's VM-pairs that probed within 10 token
                // periods, a VM-pair's demand the sum over its paths.
                let horizon = 10 * self.cfg.token_period_ns.max(1);
                let mut demands: Vec<f64> = Vec::new();
                let mut index: HashMap<(Ipv4Addr, u32), usize> = HashMap::new();
                for (k, x) in &self.incoming {
                    if x.vf != Some(vf) || now.saturating_sub(x.seen) > horizon {
                        continue;
                    }
                    let g = *index.entry((k.0, x.vm_pair)).or_insert_with(|| {
                        demands.push(0.0);
                        demands.len() - 1
                    });
                    demands[g] += x.phi_s;
                }
                let admitted = tokens::admit(spec.tokens, &demands);
                for (k, x) in self.incoming.iter_mut() {
                    if let Some(&g) = index.get(&(k.0, x.vm_pair))
                        && x.vf == Some(vf)
                        && now.saturating_sub(x.seen) <= horizon
                    {
                        x.phi_d = admitted[g];
                    }
                }
                phi_d = self.incoming[&key].phi_d;
            }
        } else if r.kind == UfabKind::Finish {
            self.incoming.remove(&key);
        }
        r.kind = UfabKind::Response;
        r.phi_pair = if phi_d.is_finite() { (phi_d.round() as u32).min(0xff_fffe) } else { 0xff_ffff };
        if self.responses.len() >= RESPONSES_MAX {
            self.stats.responses_dropped += 1;
            return;
        }
        let c = *self.rc.config();
        let flow = UdpFlow {
            ident,
            dscp: c.ctrl_dscp,
            ..UdpFlow::host_udp(
                c.mac,
                c.gateway_mac,
                SocketAddrV4::new(c.ip, sport),
                SocketAddrV4::new(src, wire::udp::port::UFAB),
            )
        };
        let mut b = [0u8; MAX_UFAB_FRAME];
        let Ok(n) = flow.emit_with(r.buffer_len(), false, &mut b, |p| r.emit(p)) else {
            self.stats.malformed += 1;
            return;
        };
        self.responses.push_back((b, n.max(wire::ethernet::MIN_FRAME_LEN)));
    }

    /// Pair `i`'s next probe into `buf`, behind its path's labels.
    fn probe_frame(&mut self, now: u64, i: usize, buf: &mut [u8]) -> Option<usize> {
        let t = self.pairs[i].pair.poll_transmit(now)?;
        let c = *self.rc.config();
        let p = &self.pairs[i];
        let flow = UdpFlow {
            ident: t.ident,
            dscp: c.data_dscp,
            ..UdpFlow::host_udp(
                c.mac,
                c.gateway_mac,
                SocketAddrV4::new(c.ip, t.pair_id),
                SocketAddrV4::new(p.peer, wire::udp::port::UFAB),
            )
        };
        let r = t.ufab_repr();
        let n = flow.emit_with(r.buffer_len(), false, buf, |b| r.emit(b)).ok()?;
        let n = wire::mpls::push_route(buf, n, p.paths.get(t.path)?, self.cfg.tc, 64).ok()?;
        let n = n.max(wire::ethernet::MIN_FRAME_LEN);
        self.stats.probes_tx += 1;
        self.stats.probe_bytes_tx += n as u64;
        Some(n)
    }
}

impl Agent for UfabHost {
    fn handle_packet(&mut self, now: u64, frame: &[u8]) {
        self.last_now = now;
        // IPv4 (untagged) UDP to 40050: ours; anything else is the RC NIC's.
        if frame.get(12..14) == Some(&[0x08, 0x00][..])
            && frame.len() >= 14 + 20 + 8
            && frame[23] == wire::ipv4::protocol::UDP
        {
            let l4 = 14 + usize::from(frame[14] & 0x0f) * 4;
            if frame.get(l4 + 2..l4 + 4) == Some(&wire::udp::port::UFAB.to_be_bytes()[..]) {
                self.on_ufab(now, frame, 14);
                return;
            }
        }
        self.rc.handle_packet(now, frame);
    }

    fn handle_timeout(&mut self, now: u64) {
        self.last_now = now;
        self.rc.handle_timeout(now);
        for i in 0..self.pairs.len() {
            if !self.pairs[i].done && self.rc.acked_at(self.pairs[i].flow_id).is_some() {
                self.finish_path(i);
            }
            // A flow with bytes left is never idle, however long its window holds it.
            if !self.pairs[i].done {
                self.pairs[i].pair.keep_alive(now);
                // Its data moves unless bytes are outstanding with no acknowledgement: a pair
                // waiting its turn at the NIC is not stalled, one whose path died is.
                let progress =
                    self.rc.sender(self.pairs[i].flow_id).and_then(|s| s.stalled_since()).unwrap_or(now);
                self.pairs[i].pair.on_progress(progress);
            }
            if self.pairs[i].pair.poll_timeout().is_some_and(|t| t <= now) {
                let moves = self.pairs[i].pair.moves().len();
                self.sync_avoid(i);
                self.pairs[i].pair.handle_timeout(now, &mut self.gate);
                self.after_event(i, moves, now);
                self.try_swap(now, i);
            } else {
                self.sync_pacing(i, now);
            }
        }
        if now >= self.next_tokens {
            self.assign_tokens(now);
        }
    }

    fn poll_transmit(&mut self, now: u64, paused: u8, buf: &mut [u8]) -> Option<usize> {
        self.last_now = now;
        let c = *self.rc.config();
        if paused & (1 << c.ctrl_priority) == 0
            && let Some((b, n)) = self.responses.pop_front()
        {
            buf.get_mut(..n)?.copy_from_slice(&b[..n]);
            self.stats.responses_tx += 1;
            self.stats.response_bytes_tx += n as u64;
            return Some(n);
        }
        if let Some(n) = self.rc.poll_control(paused, buf) {
            return Some(n);
        }
        self.until = None;
        if paused & (1 << c.data_priority) != 0 {
            return None;
        }
        for i in 0..self.pairs.len() {
            if let Some(n) = self.probe_frame(now, i, buf) {
                return Some(n);
            }
        }
        for i in 0..self.pairs.len() {
            self.sync_pacing(i, now);
        }
        let mut earliest: Option<u64> = None;
        let (rc, pairs) = (&self.rc, &self.pairs);
        let pick = self.sched.next(|i| {
            let p = &pairs[i as usize];
            if p.done || !p.pair.may_send(now) {
                return None;
            }
            match rc.ready(p.flow_id, now) {
                Ok(len) => Some(len as u64),
                Err(Some(t)) => {
                    earliest = Some(earliest.map_or(t, |e: u64| e.min(t)));
                    None
                }
                Err(None) => None,
            }
        });
        let Some(i) = pick else {
            self.until = earliest;
            return None;
        };
        let i = i as usize;
        let id = self.pairs[i].flow_id;
        let n = self.rc.poll_data_of(now, id, buf)?;
        let cur = self.pairs[i].pair.current_path()?;
        let n = wire::mpls::push_route(buf, n, &self.pairs[i].paths[cur], self.cfg.tc, 64).ok()?;
        self.pairs[i].pair.on_sent(now, n as u64);
        self.pairs[i].period_bytes += n as u64;
        self.stats.data_tx += 1;
        self.stats.data_bytes_tx += n as u64;
        self.sync_pacing(i, now);
        Some(n)
    }

    fn poll_timeout(&self) -> Option<u64> {
        let now = self.last_now;
        let pairs = self.pairs.iter().filter_map(|p| {
            let t = p.pair.poll_timeout();
            let hold = (p.pair.hold_until() > now).then_some(p.pair.hold_until());
            t.into_iter().chain(hold).min()
        });
        let tokens = (!self.pairs.iter().all(|p| p.done)).then_some(self.next_tokens);
        self.rc.poll_timeout().into_iter().chain(pairs).chain(tokens).chain(self.until).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostConfig;
    use crate::rc::{FlowCc, SenderConfig};
    use wire::EthernetAddress;

    const B_U: f64 = 100e6;
    const SENDER: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
    const RECEIVER: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);

    fn host(ip: Ipv4Addr, vfs: Vec<VfSpec>) -> UfabHost {
        let rc = RcHost::new(HostConfig {
            ip,
            mac: EthernetAddress([2, 0, 0, 0, 0, ip.octets()[2]]),
            gateway_mac: EthernetAddress([2, 0, 0, 0, 1, 1]),
            data_dscp: 0,
            ctrl_dscp: 0,
            data_ecn: 0,
            data_priority: 0,
            ctrl_priority: 0,
            int_hops: None,
            int_compact: false,
            icrc: false,
            write_payload: false,
            cnp_interval_ns: 0,
        });
        let cfg = UfabHostConfig {
            pair: PairConfig::new(0, B_U, 20_000),
            freeze_rtts: 10,
            weights: [1, 2, 5, 10, 20, 50, 100, 200],
            token_period_ns: 32_000,
            tc: 0,
            line_rate_bps: 10e9,
            seed: 1,
        };
        UfabHost::new(rc, cfg, vfs)
    }

    fn flow(id: u64) -> SendFlow {
        SendFlow {
            id,
            peer: RECEIVER,
            local_qp: id as u32 + 1,
            cfg: SenderConfig {
                size: 1 << 20,
                mtu: 1000,
                dest_qp: id as u32 + 1,
                start_psn: 0,
                overhead: 78,
                window_packets: 1024,
                ack_every: 1,
                timeout_ns: 1 << 24,
                retry_limit: 7,
            },
            cc: FlowCc::Fixed(10e9),
            payload: None,
        }
    }

    /// Appendix F at the sender: Algorithm 1 splits the VF's tokens over its VM-pairs (one of
    /// two paths, one of one), then Algorithm 2 splits the two-path VM-pair's share over its
    /// paths; each of its paths probes per 2·L_w, so the VM-pair probes once per L_w.
    #[test]
    fn a_vm_pairs_tokens_split_over_its_paths() {
        let mut h = host(SENDER, vec![VfSpec { tokens: 60.0, class: 0 }]);
        let paths = vec![vec![1, 0], vec![2, 0]];
        for (id, vm_pair) in [(0, 1), (1, 1), (2, 3)] {
            let pair_id = id as u16 + 1;
            h.start_send(
                0,
                flow(id),
                UfabFlow { vf: 0, pair_id, paths: paths.clone(), base_rtt_ns: 0, vm_pair },
            );
        }
        // Nothing measured yet (no path): every VM-pair unbounded, the fair share each.
        let phi = |h: &UfabHost, id| h.pair(id).unwrap().phi();
        assert_eq!((phi(&h, 0), phi(&h, 1), phi(&h, 2)), (15.0, 15.0, 30.0));
        let l_w = |h: &UfabHost, id| h.pair(id).unwrap().probe_every_bytes();
        assert_eq!((l_w(&h, 0), l_w(&h, 1), l_w(&h, 2)), (8192, 8192, 4096));
        // One path finished: the other probes per L_w again, and takes the VM-pair's share.
        h.finish_path(1);
        assert_eq!(l_w(&h, 0), 4096);
        h.assign_tokens(1);
        assert_eq!((phi(&h, 0), phi(&h, 2)), (30.0, 30.0));
    }

    /// Appendix F at the receiver: admission (Algorithm 1's receiver half) is per VM-pair, its
    /// demand the sum of its paths' φ, and every path's response carries the VM-pair's φ_D.
    /// Per path, the demands 15, 15 and 10 of 40 tokens would be admitted at 15 each; per
    /// VM-pair (30 and 10) the two-path one is admitted 30.
    #[test]
    fn admission_is_per_vm_pair() {
        let mut h = host(RECEIVER, vec![VfSpec { tokens: 40.0, class: 0 }]);
        h.expect_path(SENDER, 1, 0, 1);
        h.expect_path(SENDER, 2, 0, 1);
        h.expect_path(SENDER, 3, 0, 3);
        let mut phi_d = Vec::new();
        for (pair_id, phi) in [(3u16, 10u32), (1, 15), (2, 15)] {
            let r = UfabRepr {
                kind: UfabKind::Probe,
                n_hop: 0,
                phi_pair: phi,
                slots: 2,
                hops: [wire::ufab::UfabHopRepr::default(); wire::ufab::MAX_HOPS],
            };
            let f = UdpFlow::host_udp(
                EthernetAddress([2, 0, 0, 0, 0, 1]),
                EthernetAddress([2, 0, 0, 0, 0, 2]),
                SocketAddrV4::new(SENDER, pair_id),
                SocketAddrV4::new(RECEIVER, wire::udp::port::UFAB),
            );
            let mut b = [0u8; 256];
            let n = f.emit_with(r.buffer_len(), false, &mut b, |p| r.emit(p)).unwrap();
            h.handle_packet(10, &b[..n]);
            let mut out = [0u8; 256];
            let n = h.poll_transmit(10, 0, &mut out).expect("a response");
            let resp = UfabRepr::parse(&out[14 + 20 + 8..n]).unwrap();
            assert_eq!(resp.kind, UfabKind::Response);
            phi_d.push(resp.phi_pair);
        }
        // The last probe (path 2) saw both VM-pairs' demands: 30 for VM-pair 1.
        assert_eq!(phi_d[2], 30, "{phi_d:?}");
        assert_eq!(h.incoming[&(SENDER, 1)].phi_d, 30.0);
        // VM-pair 3's 10 is under the share: unbound.
        assert_eq!(h.incoming[&(SENDER, 3)].phi_d, UNBOUND);
    }
}
