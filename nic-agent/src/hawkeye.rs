//! Hawkeye's detection agent (seed `001` §3.1; reference part A.5, "Real agent" and the NS-3
//! agent): per RC flow, RTT from its acknowledgements; when a flow's RTT exceeds `rtt_factor` ×
//! its base RTT, a polling packet for that flow (flag 01, the victim 5-tuple, an event ID) goes
//! out on a priority PFC never pauses — at most once per flow per `min_interval_ns`.
//!
//! Sans-IO: [`Detector::on_rtt`] takes samples, [`Detector::poll_transmit`] writes the polling
//! frames; [`crate::host::RcHost`] feeds it from its senders and sends what it writes.
//!
//! Choices the paper and prototype leave open, made here: the base RTT is each flow's own, the
//! smallest RTT it has shown (§3.1's trigger compares a flow's RTT with its normal RTT: a fixed
//! fabric-wide base missed every burst that finished within 3 × 25 µs on shorter paths); a
//! configured base stands in before the flow's first sample (a flow paused from its first packet
//! has none) and caps it after (a flow whose first samples were already queued would set its
//! base too high); the DOCA agent's template has a fixed 13 µs. The event
//! ID is the time in milliseconds mod 256, as the reference agent sets it; a flow's RTT is one
//! sample per round trip (one PSN timed at a time, Karn's rule: never a resent one), and a timed
//! packet still unacknowledged past the threshold counts as an RTT of at least its age (the
//! NS-3 agent's check of unacknowledged packets: a flow whose path is paused sends no ACKs).

use std::collections::{HashMap, VecDeque};

use wire::EthernetAddress;
use wire::hawkeye::{FiveTuple, HEADER_LEN, PORT_NONE, PollingFlag, PollingRepr};

/// The polling packets' EtherType.
pub const ETHERTYPE_POLLING: u16 = 0x6888;

/// The detector's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetectorConfig {
    /// A flow is a victim when its RTT exceeds this many times its base RTT (default 3).
    pub rtt_factor: f64,
    /// The base RTT before a flow's first sample, and the most its base may be after, ns
    /// (`None`: each flow's smallest sample alone).
    pub base_rtt_ns: Option<u64>,
    /// At most one polling packet per flow in this long, ns (default 3 ms).
    pub min_interval_ns: u64,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        Self { rtt_factor: 3.0, base_rtt_ns: None, min_interval_ns: 3_000_000 }
    }
}

/// What the detector counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DetectorStats {
    /// RTT samples taken.
    pub samples: u64,
    /// Samples over the threshold.
    pub over: u64,
    /// Polling packets queued.
    pub polls: u64,
    /// Polling packets not sent: the flow polled less than `min_interval_ns` ago.
    pub suppressed: u64,
    /// Polling packets written out.
    pub sent: u64,
}

/// A polling event: what the detector decided, for logs and the lab's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollEvent {
    /// When.
    pub at: u64,
    /// The caller's flow ID.
    pub flow: u64,
    /// The victim flow.
    pub victim: FiveTuple,
    /// The RTT that triggered it, ns.
    pub rtt_ns: u64,
    /// The threshold it exceeded, ns.
    pub threshold_ns: u64,
    /// The event ID sent.
    pub event_id: u8,
}

#[derive(Debug, Clone, Copy, Default)]
struct FlowState {
    min_rtt: Option<u64>,
    last_poll: Option<u64>,
}

/// The detection agent of one host.
#[derive(Debug, Clone, Default)]
pub struct Detector {
    cfg: DetectorConfig,
    flows: HashMap<u64, FlowState>,
    queue: VecDeque<PollingRepr>,
    events: Vec<PollEvent>,
    stats: DetectorStats,
}

impl Detector {
    /// A detector with no flows yet.
    pub fn new(cfg: DetectorConfig) -> Self {
        Self { cfg, ..Self::default() }
    }

    /// Counters.
    pub fn stats(&self) -> DetectorStats {
        self.stats
    }

    /// The events decided since the last call.
    pub fn take_events(&mut self) -> Vec<PollEvent> {
        std::mem::take(&mut self.events)
    }

    /// An RTT sample of flow `flow` (the caller's ID) at `now`.
    pub fn on_rtt(&mut self, now: u64, flow: u64, victim: FiveTuple, rtt_ns: u64) {
        self.stats.samples += 1;
        let st = self.flows.entry(flow).or_default();
        st.min_rtt = Some(st.min_rtt.map_or(rtt_ns, |m| m.min(rtt_ns)));
        self.check(now, flow, victim, rtt_ns);
    }

    /// A packet of flow `flow` sent `age_ns` ago is still unacknowledged at `now`: its RTT is
    /// at least that (the simulator's agent checks unacknowledged packets so; a flow whose
    /// ACKs have stopped — its path paused — gives no samples at all).
    pub fn on_overdue(&mut self, now: u64, flow: u64, victim: FiveTuple, age_ns: u64) {
        self.check(now, flow, victim, age_ns);
    }

    /// The threshold of `flow`, ns: `rtt_factor` × its base RTT (its smallest sample, at most
    /// the configured base; the configured base before its first sample), once known.
    pub fn threshold(&self, flow: u64) -> Option<u64> {
        let measured = self.flows.get(&flow).and_then(|s| s.min_rtt);
        let base = match (measured, self.cfg.base_rtt_ns) {
            (Some(m), Some(c)) => m.min(c),
            (m, c) => m.or(c)?,
        };
        Some((base as f64 * self.cfg.rtt_factor) as u64)
    }

    /// When a packet of `flow` sent at `sent` and still unacknowledged should next be looked at:
    /// when it passes the threshold, and not before the flow may poll again.
    pub fn next_check(&self, flow: u64, sent: u64) -> Option<u64> {
        let t = sent.saturating_add(self.threshold(flow)?).saturating_add(1);
        let again =
            self.flows.get(&flow).and_then(|s| s.last_poll).map_or(0, |p| p + self.cfg.min_interval_ns);
        Some(t.max(again))
    }

    fn check(&mut self, now: u64, flow: u64, victim: FiveTuple, rtt_ns: u64) {
        let Some(threshold) = self.threshold(flow) else { return };
        let st = self.flows.entry(flow).or_default();
        if rtt_ns <= threshold {
            return;
        }
        self.stats.over += 1;
        if st.last_poll.is_some_and(|t| now.saturating_sub(t) < self.cfg.min_interval_ns) {
            self.stats.suppressed += 1;
            return;
        }
        st.last_poll = Some(now);
        let event_id = (now / 1_000_000) as u8;
        self.stats.polls += 1;
        self.queue.push_back(PollingRepr {
            flag: PollingFlag::VictimPath,
            ingress_port: PORT_NONE,
            egress_port: PORT_NONE,
            event_id,
            victim,
        });
        self.events.push(PollEvent { at: now, flow, victim, rtt_ns, threshold_ns: threshold, event_id });
    }

    /// Whether a polling packet waits.
    pub fn has_transmit(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Write the next polling frame into `buf` — Ethernet from `src` to `dst` (the next hop),
    /// EtherType 0x6888, the polling header, padded to the Ethernet minimum — and return its
    /// length; `None` if nothing waits or `buf` is too small (the packet stays queued).
    pub fn poll_transmit(
        &mut self,
        src: EthernetAddress,
        dst: EthernetAddress,
        buf: &mut [u8],
    ) -> Option<usize> {
        let r = *self.queue.front()?;
        let n = wire::ethernet::MIN_FRAME_LEN;
        let b = buf.get_mut(..n)?;
        b.fill(0);
        b[0..6].copy_from_slice(&dst.0);
        b[6..12].copy_from_slice(&src.0);
        b[12..14].copy_from_slice(&ETHERTYPE_POLLING.to_be_bytes());
        r.emit(&mut b[14..14 + HEADER_LEN]).ok()?;
        self.queue.pop_front();
        self.stats.sent += 1;
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn victim() -> FiveTuple {
        FiveTuple {
            src_ip: [10, 0, 0, 2].into(),
            dst_ip: [10, 0, 1, 2].into(),
            protocol: 17,
            src_port: 0xc001,
            dst_port: 4791,
        }
    }

    /// Over 3 × the flow's smallest RTT it polls, once per 3 ms at most, with the victim's
    /// 5-tuple, flag 01 and the millisecond event ID; the frame is what switches parse.
    #[test]
    fn polls_a_slow_flow_once_per_interval() {
        let mut d = Detector::new(DetectorConfig::default());
        let v = victim();
        d.on_rtt(1_000_000, 7, v, 10_000);
        d.on_rtt(2_000_000, 7, v, 30_000); // exactly 3×: not over
        assert!(!d.has_transmit());
        d.on_rtt(5_500_000, 7, v, 30_001);
        assert!(d.has_transmit());
        d.on_rtt(7_000_000, 7, v, 90_000); // 1.5 ms later: suppressed
        d.on_rtt(8_600_000, 7, v, 90_000); // 3.1 ms later: polls again
        assert_eq!(d.stats(), DetectorStats { samples: 5, over: 3, polls: 2, suppressed: 1, sent: 0 });
        let (a, b) = (EthernetAddress([2, 0, 0, 0, 0, 2]), EthernetAddress([2, 0x4b, 0, 0, 0, 0]));
        let mut buf = [0u8; 128];
        let n = d.poll_transmit(a, b, &mut buf).unwrap();
        assert_eq!(n, 60);
        assert_eq!(&buf[12..14], &[0x68, 0x88]);
        let r = PollingRepr::parse(&buf[14..n]).unwrap();
        assert_eq!(
            (r.flag, r.ingress_port, r.egress_port, r.event_id, r.victim),
            (PollingFlag::VictimPath, 511, 511, 5, v)
        );
        assert!(d.poll_transmit(a, b, &mut buf[..40]).is_none(), "too small: stays queued");
        assert_eq!(PollingRepr::parse(&buf[14..]).unwrap().event_id, 5);
        let n = d.poll_transmit(a, b, &mut buf).unwrap();
        assert_eq!(PollingRepr::parse(&buf[14..n]).unwrap().event_id, 8);
        assert!(d.poll_transmit(a, b, &mut buf).is_none());
        let ev = d.take_events();
        assert_eq!(ev.len(), 2);
        assert_eq!((ev[0].flow, ev[0].rtt_ns, ev[0].threshold_ns), (7, 30_001, 30_000));
        // A timed packet overdue past the threshold polls, at most once per interval; the
        // next look is when the packet passes the threshold and the flow may poll again.
        let mut d = Detector::new(DetectorConfig::default());
        assert_eq!(d.next_check(3, 0), None, "no base RTT yet");
        d.on_rtt(0, 3, v, 10_000);
        assert_eq!(d.threshold(3), Some(30_000));
        assert_eq!(d.next_check(3, 100_000), Some(130_001));
        d.on_overdue(120_000, 3, v, 20_000);
        assert_eq!(d.stats().polls, 0);
        d.on_overdue(130_001, 3, v, 30_001);
        assert_eq!(d.stats().polls, 1);
        assert_eq!(d.next_check(3, 100_000), Some(130_001 + 3_000_000));
        assert_eq!(d.stats().samples, 1, "an overdue packet is not an RTT sample");
        // A configured base RTT stands in before the flow's first sample and caps its base
        // after: a first sample already queued does not raise it.
        let mut d = Detector::new(DetectorConfig { base_rtt_ns: Some(1_000), ..DetectorConfig::default() });
        assert_eq!(d.threshold(1), Some(3_000));
        d.on_rtt(0, 1, v, 3_500);
        assert_eq!(d.stats().polls, 1);
        assert_eq!(d.threshold(1), Some(3_000));
    }

    /// Each flow's base is its own smallest RTT under the configured one: a flow on a short
    /// path (8 µs) polls at 3 × 8 µs, where a fabric-wide 25 µs base waited for 75 µs — a
    /// burst over within that is never polled; a flow on a long path keeps the configured cap.
    #[test]
    fn the_base_rtt_is_the_flows_own() {
        let v = victim();
        let mut d = Detector::new(DetectorConfig { base_rtt_ns: Some(25_000), ..DetectorConfig::default() });
        d.on_rtt(0, 1, v, 8_000);
        d.on_rtt(0, 2, v, 40_000);
        assert_eq!(d.threshold(1), Some(24_000));
        assert_eq!(d.threshold(2), Some(75_000));
        d.on_rtt(10_000, 1, v, 30_000);
        assert_eq!(d.stats().polls, 1, "30 µs is over 3 × 8 µs");
        d.on_rtt(10_000, 2, v, 70_000);
        assert_eq!(d.stats().polls, 1, "70 µs is under 3 × 25 µs");
    }
}

#[cfg(test)]
mod host_tests {
    use std::collections::VecDeque;
    use std::net::Ipv4Addr;

    use roce::agent::Agent;

    use super::*;
    use crate::host::{HostConfig, RcHost, RecvFlow, SendFlow};
    use crate::rc::{FlowCc, SenderConfig, udp_src_port};

    fn host(ip: [u8; 4], mac: u8, peer_mac: u8) -> RcHost {
        RcHost::new(HostConfig {
            ip: Ipv4Addr::from(ip),
            mac: EthernetAddress([2, 0, 0, 0, 0, mac]),
            gateway_mac: EthernetAddress([2, 0, 0, 0, 0, peer_mac]),
            data_dscp: 26,
            ctrl_dscp: 48,
            data_ecn: 0,
            data_priority: 3,
            ctrl_priority: 7,
            int_hops: None,
            int_compact: false,
            icrc: false,
            write_payload: false,
            cnp_interval_ns: 50_000,
        })
    }

    /// A host sending through a link whose one-way delay grows from 5 to 40 µs: its RTT goes
    /// from 10 to 80 µs, past 3 × its smallest, and it sends a polling packet for the flow on
    /// its control priority, then the flow completes.
    #[test]
    fn a_host_polls_for_its_flow_when_the_rtt_grows() {
        let (a_ip, b_ip) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let mut a = host(a_ip, 1, 2);
        let mut b = host(b_ip, 2, 1);
        a.enable_detection(DetectorConfig::default());
        let size = 4 * 1024 * 1024; // 3.4 ms at 10 Gb/s: the delay grows at 1 ms
        a.start_send(
            0,
            SendFlow {
                id: 9,
                peer: b_ip.into(),
                local_qp: 0x11,
                cfg: SenderConfig {
                    size,
                    mtu: 1024,
                    dest_qp: 0x22,
                    start_psn: 0,
                    overhead: 100,
                    window_packets: 64,
                    ack_every: 1,
                    timeout_ns: 10_000_000,
                    retry_limit: 7,
                },
                cc: FlowCc::Fixed(10e9),
                payload: None,
            },
        );
        b.expect(RecvFlow {
            id: 9,
            peer: a_ip.into(),
            local_qp: 0x22,
            peer_qp: 0x11,
            size,
            start_psn: 0,
            keep: false,
        });
        type Wire = VecDeque<(u64, Vec<u8>)>;
        let (mut to_b, mut to_a) = (Wire::new(), Wire::new());
        let mut polls = Vec::new();
        let mut buf = vec![0u8; 2048];
        let mut now = 0u64;
        while now < 20_000_000 && b.received(9) != Some(size) {
            let delay = if now < 1_000_000 { 5_000 } else { 40_000 };
            while let Some(n) = a.poll_transmit(now, 0, &mut buf) {
                if buf[12..14] == [0x68, 0x88] {
                    polls.push(PollingRepr::parse(&buf[14..n]).unwrap());
                } else {
                    to_b.push_back((now + delay, buf[..n].to_vec()));
                }
            }
            while let Some(n) = b.poll_transmit(now, 0, &mut buf) {
                to_a.push_back((now + delay, buf[..n].to_vec()));
            }
            while to_b.front().is_some_and(|(t, _)| *t <= now) {
                b.handle_packet(now, &to_b.pop_front().unwrap().1);
            }
            while to_a.front().is_some_and(|(t, _)| *t <= now) {
                a.handle_packet(now, &to_a.pop_front().unwrap().1);
            }
            a.handle_timeout(now);
            now += 1_000;
        }
        assert_eq!(b.received(9), Some(size));
        let st = a.detector().unwrap().stats();
        assert!(st.samples > 10, "{st:?}");
        assert!(!polls.is_empty(), "{st:?}");
        let want = FiveTuple {
            src_ip: a_ip.into(),
            dst_ip: b_ip.into(),
            protocol: 17,
            src_port: udp_src_port(0x11),
            dst_port: 4791,
        };
        assert_eq!((polls[0].flag, polls[0].victim), (PollingFlag::VictimPath, want));
        let ev = a.take_poll_events();
        assert_eq!(ev.len(), polls.len());
        assert!(ev[0].rtt_ns > 3 * 10_000 && ev[0].at >= 1_000_000, "{:?}", ev[0]);
    }
}
