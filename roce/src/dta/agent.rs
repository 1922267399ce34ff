//! [`ReporterAgent`]: a host reporting to DTA collectors, as a frame-level
//! [`Agent`](crate::agent::Agent) — the load generator's stream, framed in Ethernet/IPv4/UDP to
//! each report's collector (through the translator, the collectors' ToR), paced, and NACKs
//! answered with the reports kept. `dataplane report` runs it on the host runtime (a UDP socket
//! or a capture file); the lab's reporter hosts run it on the virtual clock.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};

use wire::dta::{DtaRepr, Format, HelloRepr, NackExt, NackRepr};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::ipv4::{Ipv4Packet, protocol};
use wire::stack::UdpFlow;
use wire::udp::UdpPacket;

use super::{LoadGen, LoadSpec, MAX_REPORT, destination, report_frame_len, write_report_frame};
use crate::agent::Agent;

/// What a reporter sends and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ReporterConfig {
    /// Its MAC.
    pub mac: EthernetAddress,
    /// Its address (NACKs come back to it).
    pub ip: Ipv4Addr,
    /// The next hop's MAC.
    pub gateway_mac: EthernetAddress,
    /// UDP source port of reports.
    pub src_port: u16,
    /// UDP destination port of reports (40040).
    pub dst_port: u16,
    /// Collectors, by the reporters' mapping.
    pub collectors: Vec<Ipv4Addr>,
    /// The stream.
    pub spec: LoadSpec,
    /// Reports to send.
    pub count: u64,
    /// Reports per second (0: as fast as the link takes them). A reporter held up (its thread
    /// not scheduled) makes up at most [`CATCH_UP_BURSTS`] bursts at once, then goes on at the
    /// rate: a backlog sent in one rush would overrun the queues on its way.
    pub rate: u64,
    /// When to start, ns.
    pub start_ns: u64,
    /// Retransmittable reports kept for NACKs.
    pub keep: usize,
    /// This run's reporter epoch (1..=15; pick a new one at each start, so the translator sees
    /// a restart).
    pub epoch: u8,
    /// Tail probes after the stream's last report (0 for a capture, where nobody answers; 3
    /// on a live network).
    pub tail_probes: u32,
    /// On a live network: say hello first, with this start's nonce, to every collector address
    /// ([`HelloRepr`]), and start the stream once each is answered (or after
    /// [`HELLO_TRIES`] rounds [`HELLO_WAIT_NS`] apart, counted `hellos_unanswered`): the
    /// translators then track the new stream from scratch, whatever epoch it drew. `None`: no
    /// hello (a capture, or the lab's deterministic reporters).
    pub hello_nonce: Option<u32>,
}

/// What a reporter knows of one translator it reports through (by the address its messages
/// come from), from its progress messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TranslatorView {
    from: Ipv4Addr,
    incarnation: u32,
    /// The reporter's position of the first number this translator tracks: the least of the
    /// estimates its messages gave (a message read late maps its newest number a lap or more
    /// too new, never too old).
    origin: u64,
    /// Reports settled from `origin` on (unwrapped from 32 bits).
    settled: u64,
    /// Of those, counted lost there.
    lost: u64,
    /// Its final word (it stopped).
    last: bool,
    /// The translator before it: the position it had settled and whether that was its final
    /// word; the gap up to `origin` is counted when the stats are read (`origin` may still
    /// move back).
    before: Option<(u64, bool)>,
}

impl TranslatorView {
    fn settled_at(&self) -> u64 {
        self.origin + self.settled
    }

    /// The gap between the translator before and this one: (lost while none ran, unknown).
    fn gap(&self) -> (u64, u64) {
        match self.before {
            Some((s, true)) => (self.origin.saturating_sub(s), 0),
            Some((s, false)) => (0, self.origin.saturating_sub(s)),
            None => (0, 0),
        }
    }
}

/// Rounds of hellos a reporter sends before it starts unconfirmed.
pub const HELLO_TRIES: u32 = 5;
/// How long a reporter waits for the answers to a round of hellos, ns.
pub const HELLO_WAIT_NS: u64 = 20_000_000;

/// A reporter's hello phase.
#[derive(Debug, Clone)]
struct Hello {
    nonce: u32,
    /// Collector addresses not answered yet.
    pending: Vec<Ipv4Addr>,
    /// The next of `pending` to send to in this round.
    next: usize,
    /// When this round began.
    sent_at: u64,
    rounds: u32,
}

/// What a reporter did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReporterStats {
    /// Reports sent (first transmissions).
    pub sent: u64,
    /// When the first and the last report went, ns.
    pub first_ns: Option<u64>,
    /// When the last report went, ns.
    pub last_ns: u64,
    /// NACK and slow-down messages received.
    pub nacks: u64,
    /// Reports resent after NACKs.
    pub resent: u64,
    /// Of those, Key-Writes resent with a newer report's value of their key.
    pub resent_refreshed: u64,
    /// Sketch-Merge columns sent again after a sketch NACK rewound the stream.
    pub sketch_rewound: u64,
    /// Sketch-Merge columns never sent: a sketch NACK moved the stream past them (a previous
    /// incarnation of this reporter ID had them merged this round).
    pub sketch_skipped: u64,
    /// NACKed reports no longer kept (lost for good).
    pub unrecoverable: u64,
    /// Slow-down messages.
    pub slow_downs: u64,
    /// Reports that did not fit a frame (none of the load generator's do).
    pub too_long: u64,
    /// Tail probes: the newest report sent again after the stream ended.
    pub tail_probes: u64,
    /// Collector addresses whose translator answered the hello.
    pub hellos_answered: u64,
    /// Collector addresses whose translator never answered the hello (the stream started
    /// unconfirmed there: a translator that does not speak hello, or none reachable).
    pub hellos_unanswered: u64,
    /// Progress messages heard (`NackExt::Progress`).
    pub progress: u64,
    /// Translators heard restarting (a new incarnation where another had spoken).
    pub translator_restarts: u64,
    /// Reports of unknown outcome at a translator crash: sent after the last position the
    /// killed translator had settled and before the first its successor took. The dead one
    /// may have written some; the rest were lost with it or on the wire while none ran.
    pub unknown_translator_crash: u64,
    /// Reports lost between translators: sent after a stopped translator's final position
    /// and before the first its successor took (no translator took them).
    pub lost_translator_down: u64,
    /// Reports a killed translator had counted lost (its last progress): its own counters
    /// went with it.
    pub lost_at_killed_translator: u64,
    /// Reports the live translator has not yet confirmed settled (sent minus its last
    /// confirmed position; `sent` when none spoke): at the end of a run with a live
    /// translator, what it still holds or is still counting.
    pub unconfirmed: u64,
}

/// Tail probes on a live network: the newest report again after 2, 6 and 14 ms (each wait twice
/// the last), so a report lost at the very end is NACKed like any other.
pub const TAIL_PROBES: u32 = 3;
/// The first tail probe's delay, ns.
const TAIL_PROBE_NS: u64 = 2_000_000;

/// When tail probe `k` (0-based) is due after the last report at `last`.
fn tail_probe_at(last: u64, k: u32) -> u64 {
    last + TAIL_PROBE_NS * ((1 << (k + 1)) - 1)
}

/// Reports sent back to back between two pacing waits: about 50 µs worth at `rate`, at most 32
/// (a burst), at least 1 (slow rates stay smooth).
/// Bursts a reporter that fell behind its pace sends back to back at most (then the rate
/// resumes from there).
pub const CATCH_UP_BURSTS: u64 = 4;

/// However far slow-downs cut a reporter's rate, it still sends a burst at least this often
/// (unless its own rate is lower): the rate recovers per burst, and a burst every few seconds
/// would leave it stalled long after the congestion cleared.
pub const MIN_BURSTS_PER_SEC: f64 = 100.0;

fn pace_burst(rate: u64) -> u64 {
    (rate / 20_000).clamp(1, 32)
}

/// A reporter host: see the module.
#[derive(Debug, Clone)]
pub struct ReporterAgent {
    cfg: ReporterConfig,
    gen_: LoadGen,
    /// Reports left in the current pacing burst.
    left: u64,
    /// When the next burst may go, ns.
    due: u64,
    /// `rate` 0 (as fast as it can): the rate it reached when first slowed down, the nominal
    /// rate the slow-downs scale from.
    reached: Option<u64>,
    /// Reports to resend (NACKed), with their collector.
    resend: VecDeque<([u8; MAX_REPORT], u16, Ipv4Addr)>,
    /// The hello phase, while it lasts.
    hello: Option<Hello>,
    /// The translators heard from.
    views: Vec<TranslatorView>,
    stats: ReporterStats,
}

impl ReporterAgent {
    /// A reporter sending `cfg`'s stream from `cfg.start_ns`.
    pub fn new(cfg: ReporterConfig) -> Self {
        let hello = cfg.hello_nonce.map(|nonce| {
            let mut pending = cfg.collectors.clone();
            pending.sort_unstable();
            pending.dedup();
            Hello { nonce, pending, next: 0, sent_at: cfg.start_ns, rounds: 0 }
        });
        let gen_ = LoadGen::new(cfg.spec, cfg.keep, cfg.epoch);
        Self {
            left: 0,
            due: cfg.start_ns,
            reached: None,
            gen_,
            cfg,
            resend: VecDeque::new(),
            hello,
            views: Vec::new(),
            stats: ReporterStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> ReporterStats {
        let s = &self.gen_.sender;
        ReporterStats {
            resent: s.resent,
            resent_refreshed: s.resent_refreshed,
            sketch_rewound: self.gen_.rewound,
            sketch_skipped: self.gen_.skipped,
            unrecoverable: s.unrecoverable,
            slow_downs: s.slow_downs,
            unconfirmed: self.gen_.produced
                - self.views.iter().map(|v| v.settled_at()).min().unwrap_or(0).min(self.gen_.produced),
            lost_translator_down: self.stats.lost_translator_down
                + self.views.iter().map(|v| v.gap().0).sum::<u64>(),
            unknown_translator_crash: self.stats.unknown_translator_crash
                + self.views.iter().map(|v| v.gap().1).sum::<u64>(),
            ..self.stats
        }
    }

    /// A translator's progress message from `from`: the stream's position there. A new
    /// incarnation where another spoke means that one is gone: what it had not settled up to
    /// the first report its successor took is counted here — unknown if it was killed (it may
    /// have written some), lost if it stopped (its final word said what it took).
    #[allow(clippy::too_many_arguments)]
    fn on_progress(
        &mut self,
        from: Ipv4Addr,
        incarnation: u32,
        (newest, span): (u8, u32),
        last: bool,
        settled: u32,
        lost: u32,
    ) {
        self.stats.progress += 1;
        let produced = self.gen_.produced;
        // The reporter's position of the first number the translator tracks: `span` before
        // the newest it has seen — the latest report sent with that number (the translator
        // speaks at its tick, a report's time after it came: far fewer than 256 reports ago).
        let last_sent = produced.saturating_sub(1);
        let newest = last_sent - (last_sent.wrapping_sub(u64::from(newest)) % 256).min(last_sent);
        let origin = (newest + 1).saturating_sub(u64::from(span));
        let (settled, lost) = (u64::from(settled), u64::from(lost));
        match self.views.iter_mut().find(|v| v.from == from) {
            Some(v) if v.incarnation == incarnation => {
                // 32 bits of position: carried over as it wraps; never backwards (reordered).
                let step = (settled as u32).wrapping_sub(v.settled as u32);
                if step < 1 << 31 {
                    v.settled += u64::from(step);
                }
                v.origin = v.origin.min(origin);
                v.lost = lost;
                v.last |= last;
            }
            Some(v) => {
                // Its successor: it answers for the stream from `origin` on (joined there, or
                // taking the stream for one that began at `origin`, its earlier numbers counted
                // missing there). The gap before it is settled now with the one before.
                let (down, unknown) = v.gap();
                self.stats.lost_translator_down += down;
                self.stats.unknown_translator_crash += unknown;
                if !v.last {
                    self.stats.lost_at_killed_translator += v.lost;
                }
                self.stats.translator_restarts += 1;
                let before = Some((v.settled_at(), v.last));
                *v = TranslatorView { from, incarnation, origin, settled, lost, last, before };
            }
            None => self.views.push(TranslatorView {
                from,
                incarnation,
                origin,
                settled,
                lost,
                last,
                before: None,
            }),
        }
    }

    /// Whether every report of the stream went out, tail probes included (NACKs may still
    /// come).
    pub fn is_done(&self) -> bool {
        self.hello.is_none()
            && self.gen_.done(self.cfg.count)
            && self.resend.is_empty()
            && !self.tail_probe_pending()
    }

    /// A tail probe is still to go: the stream kept a report to probe with and not all went.
    fn tail_probe_pending(&self) -> bool {
        self.stats.sent > 0
            && self.stats.tail_probes < u64::from(self.cfg.tail_probes)
            && self.gen_.sender.newest().is_some()
    }

    fn flow(&self, dst: Ipv4Addr) -> UdpFlow {
        UdpFlow::host_udp(
            self.cfg.mac,
            self.cfg.gateway_mac,
            SocketAddrV4::new(self.cfg.ip, self.cfg.src_port),
            SocketAddrV4::new(dst, self.cfg.dst_port),
        )
    }

    /// Frame `report` to `dst` into `buf`.
    fn frame(&mut self, dst: Ipv4Addr, report: &[u8], buf: &mut [u8]) -> Option<usize> {
        let flow = self.flow(dst);
        let n = report_frame_len(&flow, report.len());
        let ok = buf.get_mut(..n).is_some_and(|f| write_report_frame(&flow, report, f));
        if !ok {
            self.stats.too_long += 1;
        }
        ok.then_some(n)
    }

    /// The hello phase's next frame: a hello to the next collector of this round, a new round
    /// when the last one's answers are overdue, or the end of the phase (all answered, or
    /// [`HELLO_TRIES`] rounds gone unanswered).
    fn poll_hello(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        if now < self.cfg.start_ns {
            return None;
        }
        let h = self.hello.as_mut()?;
        let round_over = h.rounds == 0 || (h.next >= h.pending.len() && now >= h.sent_at + HELLO_WAIT_NS);
        if h.pending.is_empty() || (round_over && h.rounds >= HELLO_TRIES) {
            self.stats.hellos_unanswered += h.pending.len() as u64;
            self.hello = None;
            // The stream starts now.
            self.due = self.due.max(now);
            return self.poll_transmit(now, 0, buf);
        }
        if round_over {
            h.rounds += 1;
            h.next = 0;
            h.sent_at = now;
        }
        let dst = *h.pending.get(h.next)?;
        h.next += 1;
        let mut b = [0u8; wire::dta::HELLO_LEN];
        HelloRepr { epoch: self.gen_.sender.epoch(), nonce: h.nonce }.emit(&mut b).ok()?;
        self.frame(dst, &b, buf)
    }
}

impl Agent for ReporterAgent {
    fn handle_packet(&mut self, now: u64, frame: &[u8]) {
        let Ok(eth) = EthernetFrame::new_checked(frame) else { return };
        if eth.ethertype() != EtherType::IPV4 {
            return;
        }
        let Ok(ip) = Ipv4Packet::new_checked(eth.payload()) else { return };
        if ip.protocol() != protocol::UDP || ip.dst_addr() != self.cfg.ip {
            return;
        }
        let Ok(udp) = UdpPacket::new_checked(ip.payload()) else { return };
        if udp.dst_port() != wire::udp::port::DTA_NACK {
            return;
        }
        let Ok(nack) = NackRepr::parse(udp.payload()) else { return };
        if let Some(NackExt::Progress { last, settled, lost, span, incarnation, .. }) = nack.ext {
            return self.on_progress(ip.src_addr(), incarnation, (nack.seqnum, span), last, settled, lost);
        }
        if let (Some(NackExt::Hello { nonce, .. }), Some(h)) = (nack.ext, self.hello.as_mut()) {
            if nonce == h.nonce
                && let Some(i) = h.pending.iter().position(|&c| c == ip.src_addr())
            {
                h.pending.remove(i);
                h.next = h.next.min(h.pending.len());
                self.stats.hellos_answered += 1;
            }
            return;
        }
        self.stats.nacks += 1;
        if let Some(NackExt::Sketch { sketch_id, reporter_id, column }) = nack.ext {
            // The translator missed a column: send again from the one after the last merged.
            // Its sequence number field is that column's low byte, not a report's number:
            // nothing kept is resent for it (resending those old columns drew more sketch
            // NACKs, 558,030 resends in a 20,000-report run at 4 % loss).
            self.gen_.on_sketch_nack(sketch_id, reporter_id, column, now);
            return;
        }
        let Self { gen_, resend, cfg, .. } = self;
        gen_.sender.on_nack(&nack, now, |b| {
            let Ok(rep) = DtaRepr::parse(b, Format::default()) else { return };
            if let Some(dst) = destination(&rep, &cfg.collectors) {
                let mut k = [0u8; MAX_REPORT];
                k[..b.len()].copy_from_slice(b);
                resend.push_back((k, b.len() as u16, dst));
            }
        });
    }

    fn handle_timeout(&mut self, _now: u64) {}

    fn poll_transmit(&mut self, now: u64, _paused: u8, buf: &mut [u8]) -> Option<usize> {
        if let Some((b, n, dst)) = self.resend.pop_front() {
            return self.frame(dst, &b[..usize::from(n)], buf);
        }
        if self.hello.is_some() {
            return self.poll_hello(now, buf);
        }
        if self.gen_.done(self.cfg.count) {
            if self.tail_probe_pending()
                && now >= tail_probe_at(self.stats.last_ns, self.stats.tail_probes as u32)
            {
                let mut k = [0u8; MAX_REPORT];
                let b = self.gen_.sender.newest()?;
                let n = b.len();
                k[..n].copy_from_slice(b);
                let rep = DtaRepr::parse(&k[..n], Format::default()).ok()?;
                let dst = destination(&rep, &self.cfg.collectors)?;
                self.stats.tail_probes += 1;
                return self.frame(dst, &k[..n], buf);
            }
            return None;
        }
        if now < self.cfg.start_ns {
            return None;
        }
        // Paced in bursts of about 50 µs: each burst is due burst / (rate × the share
        // slow-down messages allow) after the last.
        // Unpaced (`rate` 0) until the first slow-down: from then on paced at the share
        // slow-downs allow of the rate reached so far, like any other setting (recovered to the
        // full share, it is paced at the rate it reached: unpaced again, it would find the
        // congestion again at line rate, faster than slow-downs can bring it back).
        let rate = match (self.cfg.rate, self.reached) {
            (0, None) if !self.gen_.sender.slowed() => 0,
            (0, Some(r)) => r,
            (0, None) => {
                let r = self.stats.first_ns.map_or(0, |f| {
                    let secs = now.saturating_sub(f) as f64 / 1e9;
                    if secs > 0.0 { (self.gen_.produced as f64 / secs) as u64 } else { 0 }
                });
                self.reached = (r > 0).then_some(r);
                r
            }
            (r, _) => r,
        };
        if rate > 0 && self.left == 0 {
            if now < self.due {
                return None;
            }
            // The burst follows the rate slow-downs leave (a reporter cut to 5 k/s sends one
            // at a time, not 32 back to back every 6 ms), and a burst goes at least
            // MIN_BURSTS_PER_SEC times a second (unless the rate itself is lower).
            let r = rate as f64 * self.gen_.sender.rate_scale(now);
            let burst = pace_burst(r as u64);
            let r = r.max((burst as f64 * MIN_BURSTS_PER_SEC).min(rate as f64));
            let step = (burst as f64 * 1e9 / r) as u64;
            self.due = self.due.max(now.saturating_sub(CATCH_UP_BURSTS * step)) + step;
            self.left = burst;
        }
        let mut report = [0u8; MAX_REPORT];
        let (n, c) = self.gen_.next_report(&mut report, self.cfg.collectors.len())?;
        self.left = self.left.saturating_sub(1);
        let dst = *self.cfg.collectors.get(c)?;
        self.stats.sent = self.gen_.produced - self.gen_.skipped;
        self.stats.first_ns.get_or_insert(now);
        self.stats.last_ns = now;
        self.frame(dst, &report[..n], buf)
    }

    fn poll_timeout(&self) -> Option<u64> {
        if !self.resend.is_empty() {
            return Some(0);
        }
        if let Some(h) = &self.hello {
            let mid_round = h.rounds > 0 && h.next < h.pending.len();
            return Some(if mid_round || h.rounds == 0 {
                self.cfg.start_ns.max(h.sent_at)
            } else {
                h.sent_at + HELLO_WAIT_NS
            });
        }
        if self.gen_.done(self.cfg.count) {
            return self
                .tail_probe_pending()
                .then(|| tail_probe_at(self.stats.last_ns, self.stats.tail_probes as u32));
        }
        Some(self.due.max(self.cfg.start_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dta::{LoadKind, MAX_KEEP};
    use wire::dta::Priority;

    const ME: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
    const TRANSLATOR: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);

    fn agent(rate: u64) -> ReporterAgent {
        ReporterAgent::new(ReporterConfig {
            mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
            ip: ME,
            gateway_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
            src_port: 40041,
            dst_port: 40040,
            collectors: vec![TRANSLATOR],
            spec: LoadSpec {
                kind: LoadKind::Append { lists: 1 },
                keys: 1,
                key_base: 0,
                priority: Priority::High,
                retransmittable: true,
                immediate_every: 0,
                keywrite_data_len: 4,
                scramble: false,
            },
            count: 1 << 40,
            rate,
            start_ns: 0,
            keep: MAX_KEEP,
            epoch: 3,
            tail_probes: 0,
            hello_nonce: None,
        })
    }

    /// A slow-down message from the translator, framed to the reporter's NACK port.
    fn slow_down() -> Vec<u8> {
        nack_frame(TRANSLATOR, NackRepr::plain(0, false, true))
    }

    /// NACK `n` from `from` to the reporter's NACK port, framed.
    fn nack_frame(from: Ipv4Addr, n: NackRepr) -> Vec<u8> {
        let mut p = [0u8; 16];
        n.emit(&mut p).unwrap();
        let len = n.buffer_len();
        let flow = UdpFlow::host_udp(
            EthernetAddress([2, 0, 0, 0, 0, 2]),
            EthernetAddress([2, 0, 0, 0, 0, 1]),
            SocketAddrV4::new(from, 40040),
            SocketAddrV4::new(ME, wire::udp::port::DTA_NACK),
        );
        let mut f = vec![0u8; flow.headers_len() + len];
        let h = flow.emit_headers(len, &mut f).unwrap();
        f[h..].copy_from_slice(&p[..len]);
        f
    }

    /// Reports `a` sends from `from` for `ns` nanoseconds on a link that takes one every
    /// 100 ns.
    fn sent_during(a: &mut ReporterAgent, from: u64, ns: u64) -> u64 {
        let mut buf = [0u8; 256];
        let mut n = 0;
        let mut t = from;
        while t < from + ns {
            if a.poll_transmit(t, 0, &mut buf).is_some() {
                n += 1;
            }
            t += 100;
        }
        n
    }

    /// `--rate 0` sends as fast as it is polled until a slow-down; then it is paced at half the
    /// rate it had reached, like any rate setting, and recovers additively.
    #[test]
    fn rate_zero_obeys_slow_downs() {
        let mut a = agent(0);
        // Unpaced: as fast as the link takes them.
        let before = sent_during(&mut a, 0, 1_000_000);
        assert!(before >= 10_000, "{before}");
        a.handle_packet(1_000_000, &slow_down());
        assert_eq!(a.stats().slow_downs, 1);
        // The rate reached was `before` per ms: half of it now, a little more as it recovers
        // (from half to full in 128 bursts).
        let after = sent_during(&mut a, 1_000_000, 200_000) * 5;
        assert!(after < before * 3 / 4 && after > before / 4, "before {before} per ms, after {after}");
        // A paced reporter obeys too.
        let mut p = agent(1_000_000);
        let full = sent_during(&mut p, 0, 1_000_000);
        p.handle_packet(1_000_000, &slow_down());
        let half = sent_during(&mut p, 1_000_000, 200_000) * 5;
        assert!(half < full * 3 / 4, "{full} then {half}");
    }

    /// The hello phase: a hello to each collector address, nothing else until each is answered
    /// with this start's nonce (a wrong nonce is ignored), then the stream; a collector that
    /// never answers is given HELLO_TRIES rounds and counted unanswered.
    #[test]
    fn hellos_go_first_and_the_stream_waits_for_the_answers() {
        let c2 = Ipv4Addr::new(10, 0, 3, 2);
        let mut a = agent(1000);
        a.cfg.collectors = vec![TRANSLATOR, c2];
        a.hello = Some(Hello { nonce: 42, pending: vec![TRANSLATOR, c2], next: 0, sent_at: 0, rounds: 0 });
        let mut buf = [0u8; 256];
        let hello_to = |buf: &[u8], n: usize| {
            let eth = EthernetFrame::new_checked(&buf[..n]).unwrap();
            let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
            let udp = UdpPacket::new_checked(ip.payload()).unwrap();
            let h = HelloRepr::parse(udp.payload()).unwrap();
            assert_eq!((h.nonce, h.epoch), (42, 3));
            ip.dst_addr()
        };
        let n = a.poll_transmit(0, 0, &mut buf).unwrap();
        assert_eq!(hello_to(&buf, n), TRANSLATOR);
        let n = a.poll_transmit(0, 0, &mut buf).unwrap();
        assert_eq!(hello_to(&buf, n), c2);
        assert!(a.poll_transmit(1000, 0, &mut buf).is_none(), "no report before the answers");
        let ack = |nonce| NackRepr {
            seqnum: 0,
            nack: false,
            slow_down: false,
            ext: Some(NackExt::Hello { epoch: 3, nonce }),
        };
        a.handle_packet(2000, &nack_frame(TRANSLATOR, ack(41)));
        a.handle_packet(2000, &nack_frame(TRANSLATOR, ack(42)));
        assert_eq!(a.stats().hellos_answered, 1);
        // c2 never answers: a hello again each HELLO_WAIT_NS, then the stream starts anyway.
        let mut t = 3000;
        let mut hellos_to_c2 = 1;
        let first_report = loop {
            t += 1_000_000;
            assert!(t < 1_000_000_000, "the stream never started");
            let Some(n) = a.poll_transmit(t, 0, &mut buf) else { continue };
            let eth = EthernetFrame::new_checked(&buf[..n]).unwrap();
            let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
            let udp = UdpPacket::new_checked(ip.payload()).unwrap();
            if udp.payload()[0] == wire::dta::HELLO_OPCODE {
                assert_eq!(ip.dst_addr(), c2, "only the one not answered");
                hellos_to_c2 += 1;
            } else {
                break t;
            }
        };
        assert_eq!(hellos_to_c2, HELLO_TRIES);
        assert!(first_report >= HELLO_TRIES as u64 * HELLO_WAIT_NS);
        assert_eq!((a.stats().hellos_answered, a.stats().hellos_unanswered), (1, 1));
        assert_eq!(a.stats().nacks, 0, "answers to hellos are not NACKs");
    }
}
