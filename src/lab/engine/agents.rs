//! The host agents a lab runs, as [`LabAgent`]s: RC flows ([`RcHost`]), DTA reporters
//! ([`ReporterAgent`]) and DTA collectors (the soft-RNIC's [`RnicAgent`] over its stores).

use collector::rnic_port::RnicAgent;
use collector::{CollectorConfig, RnicConfig, Stores};
use nic_agent::host::RcHost;
use roce::agent::Agent;
use roce::dta::{ReporterAgent, ReporterConfig};

use super::fabric::{host_ip, host_mac, switch_mac};
use super::host_node::LabAgent;
use crate::lab::config::{LabConfig, PfcStormSpec, ReporterSpec};

/// A counter of a summary, its name owned.
fn named((name, value): (&str, u64)) -> (String, u64) {
    (name.to_string(), value)
}

impl LabAgent for RcHost {
    fn name(&self) -> &'static str {
        "rc"
    }

    fn summary(&self) -> Vec<(String, u64)> {
        let s = self.stats();
        let mut v: Vec<(String, u64)> = [
            ("acks_rx", s.acks_rx),
            ("cnps_rx", s.cnps_rx),
            ("acks_tx", s.acks_tx),
            ("naks_tx", s.naks_tx),
            ("cnps_tx", s.cnps_tx),
            ("flows_completed", self.completed() as u64),
            ("retransmit_rounds", s.retransmit_rounds),
            ("malformed", s.malformed),
            ("not_ours", s.not_ours),
        ]
        .map(named)
        .into();
        if let Some(d) = self.detector() {
            let d = d.stats();
            v.extend(
                [
                    ("hawkeye_rtt_samples", d.samples),
                    ("hawkeye_over_threshold", d.over),
                    ("hawkeye_polls", d.polls),
                    ("hawkeye_polls_sent", d.sent),
                    ("hawkeye_polls_suppressed", d.suppressed),
                ]
                .map(named),
            );
        }
        v
    }

    fn rc(&mut self) -> Option<&mut RcHost> {
        Some(self)
    }
}

impl LabAgent for nic_agent::ufab::host::UfabHost {
    fn name(&self) -> &'static str {
        "ufab"
    }

    /// The RC NIC's counters, then µFAB-E's, then its pairs' summed.
    fn summary(&self) -> Vec<(String, u64)> {
        let mut rc = LabAgent::summary(self.rc_ref());
        let s = self.stats();
        rc.extend(
            [
                ("ufab_probes_tx", s.probes_tx),
                ("ufab_responses_tx", s.responses_tx),
                ("ufab_responses_rx", s.responses_rx),
                ("ufab_failures_rx", s.failures_rx),
                ("ufab_unknown_responses", s.unknown_responses),
                ("ufab_data_tx", s.data_tx),
                ("ufab_data_bytes_tx", s.data_bytes_tx),
                ("ufab_probe_bytes_tx", s.probe_bytes_tx),
                ("ufab_response_bytes_tx", s.response_bytes_tx),
                ("ufab_malformed", s.malformed),
                ("ufab_responses_dropped", s.responses_dropped),
                ("ufab_swaps", s.swaps),
            ]
            .map(named),
        );
        let mut sum = nic_agent::ufab::pair::PairStats::default();
        for (_, p) in self.pairs() {
            let x = p.stats();
            sum.probes_lost += x.probes_lost;
            sum.moves += x.moves;
            sum.frozen += x.frozen;
            sum.finishes_acked += x.finishes_acked;
            sum.finishes_abandoned += x.finishes_abandoned;
            sum.stale_responses += x.stale_responses;
        }
        rc.extend(
            [
                ("ufab_probes_lost", sum.probes_lost),
                ("ufab_moves", sum.moves),
                ("ufab_moves_frozen", sum.frozen),
                ("ufab_finishes_acked", sum.finishes_acked),
                ("ufab_finishes_abandoned", sum.finishes_abandoned),
                ("ufab_stale_responses", sum.stale_responses),
            ]
            .map(named),
        );
        rc
    }

    fn rc(&mut self) -> Option<&mut RcHost> {
        Some(nic_agent::ufab::host::UfabHost::rc(self))
    }

    fn ufab(&mut self) -> Option<&mut nic_agent::ufab::host::UfabHost> {
        Some(self)
    }
}

impl LabAgent for ReporterAgent {
    fn name(&self) -> &'static str {
        "dta_reporter"
    }

    fn summary(&self) -> Vec<(String, u64)> {
        let s = self.stats();
        [
            ("sent", s.sent),
            ("nacks", s.nacks),
            ("resent", s.resent),
            ("unrecoverable", s.unrecoverable),
            ("slow_downs", s.slow_downs),
            ("too_long", s.too_long),
            // When its first and last first-transmissions went, ns (0: none).
            ("first_ns", s.first_ns.unwrap_or(0)),
            ("last_ns", s.last_ns),
        ]
        .map(named)
        .into()
    }
}

/// A DTA reporter host `h` of `cfg` sending `r`.
pub(super) fn reporter(h: usize, gateway: (usize, u16), r: &ReporterSpec) -> ReporterAgent {
    ReporterAgent::new(ReporterConfig {
        mac: host_mac(h),
        ip: host_ip(h),
        gateway_mac: switch_mac(gateway.0, usize::from(gateway.1)),
        src_port: 40041,
        dst_port: wire::udp::port::DTA,
        collectors: r.to.clone(),
        spec: r.spec,
        count: r.count,
        rate: r.rate,
        start_ns: r.start_ns,
        // As many retransmittable reports kept as a reporter may.
        keep: roce::dta::MAX_KEEP,
        // Deterministic: one epoch per host.
        tail_probes: roce::dta::TAIL_PROBES,
        epoch: roce::dta::epoch_of(h as u8),
        // Deterministic runs: no hello (each host starts once).
        hello_nonce: None,
    })
}

/// A DTA collector host: the soft-RNIC over its stores, which the results query.
pub(super) struct CollectorHost {
    agent: RnicAgent,
    stores: Stores,
}

impl CollectorHost {
    /// Collector host `h` with `config` (its `[collector] ip` replaced by the host's address).
    pub(super) fn new(cfg: &LabConfig, h: usize, config: &str) -> Result<Self, String> {
        let file = cfg.file.with_extension(format!("collector{h}.toml"));
        let mut c = CollectorConfig::parse(&file, config).map_err(|e| format!("host {h}: {e}"))?;
        c.ip = host_ip(h);
        let seed = cfg.seed as u32 ^ h as u32;
        let (stores, _) = Stores::new(&c, seed).map_err(|e| format!("host {h}: {e}"))?;
        let agent = RnicAgent::new(RnicConfig::from_config(&c, seed), host_mac(h), &stores);
        Ok(Self { agent, stores })
    }
}

impl Agent for CollectorHost {
    fn handle_packet(&mut self, now: u64, frame: &[u8]) {
        self.agent.handle_packet(now, frame)
    }

    fn handle_timeout(&mut self, now: u64) {
        self.agent.handle_timeout(now)
    }

    fn poll_transmit(&mut self, now: u64, paused: u8, buf: &mut [u8]) -> Option<usize> {
        self.agent.poll_transmit(now, paused, buf)
    }

    fn poll_timeout(&self) -> Option<u64> {
        self.agent.poll_timeout()
    }
}

impl LabAgent for CollectorHost {
    fn name(&self) -> &'static str {
        "dta_collector"
    }

    /// The soft-RNIC's counters, then what each store holds: occupied Key-Write slots, the
    /// entries appended to each list.
    fn summary(&self) -> Vec<(String, u64)> {
        let s = self.agent.stats().snapshot();
        let mut out: Vec<(String, u64)> = [
            ("writes", s.writes),
            ("atomics", s.atomics),
            ("connections", s.connections),
            ("bad_icrc", s.bad_icrc),
            ("malformed", s.malformed),
            ("unknown_qp", s.unknown_qp),
            ("access_errors", s.access_errors),
            ("out_of_sequence", s.out_of_sequence),
            ("duplicates", s.duplicates),
            ("unroutable", s.unroutable),
        ]
        .map(named)
        .into();
        out.extend(self.stores.occupancy());
        out
    }
}

/// A host injecting PFC PAUSE frames (a PFC storm): a frame pausing `priority` for `quanta`
/// every `interval_ns` from `start_ns` until `stop_ns`, whatever its switch says to it — while
/// its NIC otherwise runs the lab's RC flows as any host (a broken NIC is still a destination).
pub(super) struct PfcStorm {
    rc: RcHost,
    mac: wire::EthernetAddress,
    spec: PfcStormSpec,
    next: u64,
    sent: u64,
}

impl PfcStorm {
    /// The storm host `h`, its NIC `rc`.
    pub(super) fn new(h: usize, spec: PfcStormSpec, rc: RcHost) -> Self {
        Self { rc, mac: host_mac(h), spec, next: spec.start_ns, sent: 0 }
    }
}

impl Agent for PfcStorm {
    fn handle_packet(&mut self, now: u64, frame: &[u8]) {
        self.rc.handle_packet(now, frame)
    }

    fn handle_timeout(&mut self, now: u64) {
        self.rc.handle_timeout(now)
    }

    fn poll_transmit(&mut self, now: u64, paused: u8, buf: &mut [u8]) -> Option<usize> {
        if now >= self.next && self.next < self.spec.stop_ns {
            let f = buf.get_mut(..wire::ethernet::MIN_FRAME_LEN)?;
            let pause = wire::pfc::PfcRepr::pause(1 << self.spec.priority, self.spec.quanta);
            wire::pfc::emit_frame(self.mac, &wire::pfc::MacControlRepr::Pfc(pause), f).ok()?;
            self.sent += 1;
            self.next = self.next.saturating_add(self.spec.interval_ns);
            return Some(wire::ethernet::MIN_FRAME_LEN);
        }
        self.rc.poll_transmit(now, paused, buf)
    }

    fn poll_timeout(&self) -> Option<u64> {
        let storm = (self.next < self.spec.stop_ns).then_some(self.next);
        match (storm, self.rc.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl LabAgent for PfcStorm {
    fn name(&self) -> &'static str {
        "pfc_storm"
    }

    fn summary(&self) -> Vec<(String, u64)> {
        let mut v = self.rc.summary();
        v.push(("pause_frames_sent".to_string(), self.sent));
        v
    }

    fn rc(&mut self) -> Option<&mut RcHost> {
        Some(&mut self.rc)
    }
}
