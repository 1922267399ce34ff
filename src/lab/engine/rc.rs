//! The RC flow workload: hosts running [`RcHost`], each flow's sender started at its start
//! time with the lab's CC (HPCC++ or DCQCN), its receiver waiting from the start.

use nic_agent::dcqcn::DcqcnRp;
use nic_agent::host::{HostConfig, RcHost, RecvFlow, SendFlow};
use nic_agent::hpcc::{Hpcc, HpccConfig};
use nic_agent::rc::{FlowCc, SenderConfig};
use nic_agent::ufab::host::{UfabFlow, UfabHost, UfabHostConfig, VfSpec};
use nic_agent::ufab::pair::PairConfig;
use wire::hpcc_int::{IntRepr, MAX_HOPS};

use super::fabric::{Fabric, host_ip, host_mac, switch_mac};
use super::{DATA_QUEUE, DSCP_CTRL, DSCP_DATA, ECT0};
use crate::lab::config::{Cc, LabConfig};

/// Bytes of a data frame around its payload: Ethernet, IPv4, UDP, BTH, ICRC, plus INT.
pub(super) const BASE_HEADERS: usize = 14 + 20 + 8 + 12 + 4;
/// The senders' retransmission timeout: IB's local ACK timeout 12 (4.096 µs · 2^12), far above
/// any queueing delay the lab's buffers allow, so it fires only for a lost tail.
const TIMEOUT_NS: u64 = 4096 << 12;

/// The INT header length of a data packet with `hops` slots (HPCC++ runs), compact or not.
fn int_len(cc: Cc, hops: u8, compact: bool) -> usize {
    match cc {
        Cc::Hpcc => IntRepr { compact, ..IntRepr::empty(hops) }.buffer_len(),
        Cc::Dcqcn | Cc::Ufab => 0,
    }
}

/// Slots of a compact header: the reference's five, or the longest path if longer.
const COMPACT_HOPS: usize = 5;

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

/// What every flow of a run shares.
pub(super) struct Workload {
    /// INT slots in a data packet.
    int_hops: u8,
    /// A data frame's length.
    data_frame_len: usize,
    /// W_ai's N: the most fixed or incast flows sharing one destination.
    n_flows: u32,
    /// HPCC++'s `T`: the largest base RTT between two hosts.
    pub(super) base_rtt_ns: u64,
    /// Per flow, the base RTT between its hosts (for the standalone FCT).
    pub(super) pair_rtt_ns: Vec<u64>,
    /// µFAB runs: per flow, its candidate source routes, its pair ID and its base RTT (with the
    /// frames as µFAB sends them, as `base_rtt_ns`, the reference RTT, is).
    ufab_routes: Vec<(Vec<Vec<u16>>, u16, u64)>,
    /// µFAB runs: per flow, the first flow of its VM-pair (itself unless `[[flow]] paths` split
    /// one VM-pair into several flows, one per underlay path): a VM-pair is one VF.
    ufab_leader: Vec<usize>,
}

impl Workload {
    /// The workload of `cfg` on `fabric`: frame sizes, base RTTs, W_ai's N.
    pub(super) fn new(cfg: &LabConfig, fabric: &Fabric) -> Result<Self, String> {
        let n = cfg.hosts();
        let longest = fabric.longest_path();
        if cfg.cc == Cc::Hpcc && longest > MAX_HOPS && !cfg.flows.is_empty() {
            return Err(format!(
                "HPCC++ needs INT from every switch on a path; the longest path has {longest} switches and INT carries {MAX_HOPS}"
            ));
        }
        let compact = cfg.hpcc.int_compact;
        let int_hops = if compact { longest.max(COMPACT_HOPS) } else { longest }.min(MAX_HOPS) as u8;
        // µFAB's data carry a label per switch on the path.
        let labels = if cfg.cc == Cc::Ufab { 4 * longest } else { 0 };
        let data_frame_len = BASE_HEADERS + int_len(cfg.cc, int_hops, compact) + cfg.mtu + labels;
        let ack_len = (BASE_HEADERS + 4 + int_len(cfg.cc, int_hops, compact)).max(64);
        // HPCC++'s T: the largest base RTT between two hosts (the reference's GLOBAL_T,
        // maxRtt). One host per switch with hosts stands for them all.
        let mut first_on: Vec<Option<usize>> = vec![None; fabric.switches.len()];
        for (h, &(s, _)) in fabric.attach.iter().enumerate() {
            first_on[s].get_or_insert(h);
        }
        let mut base_rtt_ns = 0;
        for &ha in first_on.iter().flatten() {
            for &hb in first_on.iter().flatten() {
                let (ha, hb) =
                    if ha == hb { (ha, (0..n).find(|&h| h != ha).unwrap_or(ha)) } else { (ha, hb) };
                base_rtt_ns = base_rtt_ns.max(fabric.pair_rtt(cfg, ha, hb, data_frame_len, ack_len));
            }
        }
        let mut per_dst = vec![0u32; n];
        for f in &cfg.flows {
            per_dst[f.dst] += 1;
        }
        let n_flows = per_dst.iter().copied().max().unwrap_or(1).max(1);
        // Without INT, so both CCs have the same standalone FCT.
        let pair_rtt_ns = cfg
            .flows
            .iter()
            .map(|f| fabric.pair_rtt(cfg, f.src, f.dst, BASE_HEADERS + cfg.mtu, BASE_HEADERS + 4))
            .collect();
        let mut ufab_routes = Vec::new();
        if cfg.cc == Cc::Ufab {
            let mut memo: std::collections::HashMap<(usize, usize), Vec<Vec<u16>>> = Default::default();
            let mut per_src = vec![0u32; n];
            for f in &cfg.flows {
                let routes = memo.entry((f.src, f.dst)).or_insert_with(|| {
                    let all = fabric.source_routes(f.src, f.dst);
                    // The paper draws "a few" candidates at random: a seeded draw of `candidates`.
                    pick(all, cfg.ufab.candidates, cfg.seed ^ ((f.src as u64) << 20) ^ f.dst as u64)
                });
                if routes.is_empty() || routes.iter().any(|r| r.len() > wire::ufab::MAX_HOPS) {
                    return Err(format!(
                        "µFAB: no source route of at most {} switches from host {} to host {}",
                        wire::ufab::MAX_HOPS,
                        f.src,
                        f.dst
                    ));
                }
                // Pair IDs per sending host, 1..=32767 (probes' UDP source port, bit 15 free).
                let id = (per_src[f.src] % 32767) as u16 + 1;
                per_src[f.src] += 1;
                let rtt = fabric.pair_rtt(cfg, f.src, f.dst, data_frame_len, ack_len);
                ufab_routes.push((routes.clone(), id, rtt));
            }
        }
        let ufab_leader = cfg.vm_pair_leaders();
        Ok(Self { int_hops, data_frame_len, n_flows, base_rtt_ns, pair_rtt_ns, ufab_routes, ufab_leader })
    }

    /// The largest frame a host sends.
    pub(super) fn max_frame(&self) -> usize {
        self.data_frame_len
    }

    /// The NIC of RC host `h`, attached to port `p` of switch `s`, expecting every flow to it.
    pub(super) fn host(&self, cfg: &LabConfig, h: usize, (s, p): (usize, u16)) -> RcHost {
        let mut host = RcHost::new(HostConfig {
            ip: host_ip(h),
            mac: host_mac(h),
            gateway_mac: switch_mac(s, usize::from(p)),
            data_dscp: DSCP_DATA,
            ctrl_dscp: if cfg.ack_high_priority() { DSCP_CTRL } else { DSCP_DATA },
            data_ecn: match cfg.cc {
                Cc::Hpcc | Cc::Ufab => 0,
                Cc::Dcqcn => ECT0,
            },
            data_priority: DATA_QUEUE,
            ctrl_priority: if cfg.ack_high_priority() { DSCP_CTRL >> 3 } else { DATA_QUEUE },
            int_hops: (cfg.cc == Cc::Hpcc).then_some(self.int_hops),
            int_compact: cfg.hpcc.int_compact,
            icrc: false,
            // Nothing reads a lab frame's payload (see HostConfig::write_payload).
            write_payload: false,
            cnp_interval_ns: 0,
        });
        if let Some(d) = cfg.hawkeye {
            host.enable_detection(d);
        }
        if cfg.rtt_samples {
            host.enable_rtt_log();
        }
        for (i, f) in cfg.flows.iter().enumerate().filter(|(_, f)| f.dst == h) {
            // QP numbers are flow numbers + 1 at both ends, across the lab.
            let qp = i as u32 + 1;
            host.expect(RecvFlow {
                id: i as u64,
                peer: host_ip(f.src),
                local_qp: qp,
                peer_qp: qp,
                size: f.size,
                start_psn: 0,
                keep: false,
            });
        }
        host
    }

    /// Flow `fi`'s sender, at its host's line rate `rate` with the lab's CC.
    pub(super) fn sender(&self, cfg: &LabConfig, fi: usize, rate: u64) -> SendFlow {
        let f = &cfg.flows[fi];
        let cc = match cfg.cc {
            _ if cfg.no_cc_hosts.contains(&f.src) => FlowCc::Fixed(rate as f64),
            Cc::Hpcc => {
                FlowCc::Hpcc(Box::new(Hpcc::new(hpcc_config(cfg, rate, self.base_rtt_ns, self.n_flows))))
            }
            Cc::Dcqcn => FlowCc::Dcqcn(DcqcnRp::new(cfg.dcqcn.config(rate))),
            // µFAB-E sets the pacer from its probes (UfabHost).
            Cc::Ufab => FlowCc::Fixed(rate as f64),
        };
        let packets = f.size.div_ceil(cfg.mtu as u64).max(1);
        let qp = fi as u32 + 1;
        SendFlow {
            id: fi as u64,
            peer: host_ip(f.dst),
            local_qp: qp,
            cfg: SenderConfig {
                size: f.size,
                mtu: cfg.mtu,
                dest_qp: qp,
                start_psn: 0,
                overhead: self.data_frame_len - cfg.mtu,
                // Enough never to bind before the CC does (the ring is one small slot per
                // packet).
                window_packets: packets.min(1 << 15) as u32,
                ack_every: 1,
                timeout_ns: TIMEOUT_NS,
                retry_limit: 7,
            },
            cc,
            payload: None,
        }
    }
}

/// `k` of `all`, drawn with `seed` (all of them, in order, if there are no more).
fn pick(mut all: Vec<Vec<u16>>, k: usize, seed: u64) -> Vec<Vec<u16>> {
    if all.len() <= k {
        return all;
    }
    let mut x = seed | 1;
    for i in (1..all.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        all.swap(i, (x % (i as u64 + 1)) as usize);
    }
    all.truncate(k);
    all
}

impl Workload {
    /// The µFAB NIC of host `h` (a [`UfabHost`] over its RC NIC): one VF per flow it sends or
    /// receives (the paper's VFs of one VM-pair each), with the flow's guarantee.
    pub(super) fn ufab_host(&self, cfg: &LabConfig, h: usize, attach: (usize, u16), rate: u64) -> UfabHost {
        let rc = self.host(cfg, h, attach);
        let u = &cfg.ufab;
        let mut pair = PairConfig::new(0, u.b_u_bps, self.base_rtt_ns);
        pair.probe_every_bytes = u.l_w;
        pair.no_reordering = u.no_reordering;
        pair.look_every_ns = u.look_every_ns;
        pair.better_for_ns = u.better_for_ns;
        pair.idle_finish_ns = u.idle_finish_ns;
        pair.min_window = cfg.mtu as f64;
        let host_cfg = UfabHostConfig {
            pair,
            freeze_rtts: u.freeze_rtts,
            weights: u.weights,
            token_period_ns: u.token_period_ns,
            tc: DATA_QUEUE,
            line_rate_bps: rate as f64,
            seed: cfg.seed ^ (h as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        };
        // One VF per VM-pair it sends or receives (its first flow's guarantee and class); the
        // VM-pair's other flows are more paths of it.
        let mut vfs = Vec::new();
        let mut vf_of = vec![usize::MAX; cfg.flows.len()];
        let mut expect = Vec::new();
        for (fi, f) in cfg.flows.iter().enumerate() {
            if f.src != h && f.dst != h {
                continue;
            }
            let lead = self.ufab_leader[fi];
            if lead == fi {
                let g = f.guarantee_bps.unwrap_or(u.guarantee_bps) as f64;
                vfs.push(VfSpec { tokens: g / u.b_u_bps, class: usize::from(f.class) });
                vf_of[fi] = vfs.len() - 1;
            }
            if f.dst == h {
                let vm_pair = u32::from(self.ufab_routes[lead].1);
                expect.push((host_ip(f.src), self.ufab_routes[fi].1, vf_of[lead], vm_pair));
            }
        }
        let mut host = UfabHost::new(rc, host_cfg, vfs);
        for (src, id, vf, vm_pair) in expect {
            host.expect_path(src, id, vf, vm_pair);
        }
        host
    }

    /// Flow `fi`'s µFAB side at its sending host.
    pub(super) fn ufab_flow(&self, cfg: &LabConfig, fi: usize) -> UfabFlow {
        let f = &cfg.flows[fi];
        // The VF index at the sender: the VM-pairs it sends or receives, in flow order (as
        // `ufab_host` numbers them).
        let lead = self.ufab_leader[fi];
        let vf = (0..lead)
            .filter(|&j| self.ufab_leader[j] == j && (cfg.flows[j].src == f.src || cfg.flows[j].dst == f.src))
            .count();
        let (paths, pair_id, base_rtt_ns) = self.ufab_routes[fi].clone();
        UfabFlow { vf, pair_id, paths, base_rtt_ns, vm_pair: u32::from(self.ufab_routes[lead].1) }
    }
}
