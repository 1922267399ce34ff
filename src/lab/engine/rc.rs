//! The RC flow workload: hosts running [`RcHost`], each flow's sender started at its start
//! time with the lab's CC (HPCC++ or DCQCN), its receiver waiting from the start.

use nic_agent::dcqcn::DcqcnRp;
use nic_agent::host::{HostConfig, RcHost, RecvFlow, SendFlow};
use nic_agent::hpcc::{Hpcc, HpccConfig};
use nic_agent::rc::{FlowCc, SenderConfig};
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
        Cc::Dcqcn => 0,
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
        let data_frame_len = BASE_HEADERS + int_len(cfg.cc, int_hops, compact) + cfg.mtu;
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
        Ok(Self { int_hops, data_frame_len, n_flows, base_rtt_ns, pair_rtt_ns })
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
                Cc::Hpcc => 0,
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
