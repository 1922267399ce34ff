//! HPCC++ (seed `004`, §4.2 and §6.2): window-based congestion control from in-band telemetry.
//!
//! [`Hpcc`] is the sender (`NewAck`, lines 21–27 of the draft's pseudo-code), [`RxHpcc`] the
//! receiver-based variant (`NewINT`, lines 28–34). Both share [`HpccCore`]: `MeasureInflight`
//! (lines 1–10) and `ComputeWind` (lines 11–20). All state machines here are sans-IO: the caller
//! passes the telemetry and, for Rx-HPCC, the time.
//!
//! Per link `j` of the path (Eqn. 2): `u_j = min(qlen, qlen_prev)/(B_j·T) + txRate_j/B_j` with
//! `txRate_j = Δ txBytes / Δ ts`; the most loaded link sets `u`, smoothed by an EWMA over its
//! sampling interval `τ ≤ T`: `U = (1 − τ/T)·U + (τ/T)·u` (line 9). Then (Eqn. 4) the window is
//! cut or grown multiplicatively, `W = Wc/(U/η) + W_ai`, when `U ≥ η` or after `maxStage` additive
//! steps; otherwise `W = Wc + W_ai`. The reference window `Wc` is committed once per RTT: on the
//! first ACK past `lastUpdateSeq` (the sender) or after `T` (the receiver). The pacing rate is
//! `R = W/T` (line 27).

use wire::hpcc_int::{IntHopRepr, IntRepr, MAX_HOPS};

/// HPCC++'s parameters (draft Figure 3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HpccConfig {
    /// `T`: the known base RTT, ns.
    pub base_rtt_ns: u64,
    /// `η`: target link utilisation (0.95 in the draft).
    pub eta: f64,
    /// `maxStage`: additive-increase steps before a multiplicative step (draft 5; the HPCC
    /// authors' simulations used 0).
    pub max_stage: u32,
    /// `W_ai`: additive increase, bytes.
    pub w_ai_bytes: f64,
    /// The sender's line rate, bits per second: the initial rate, and the largest.
    pub line_rate_bps: u64,
    /// Smallest rate, bits per second.
    pub min_rate_bps: u64,
}

impl HpccConfig {
    /// The draft's defaults for a host at `line_rate_bps` over a fabric of base RTT `T`, with
    /// the rule of thumb `W_ai = W_init·(1 − η)/N` for `n_flows` concurrent flows.
    pub fn new(line_rate_bps: u64, base_rtt_ns: u64, n_flows: u32) -> Self {
        let mut c = Self {
            base_rtt_ns,
            eta: 0.95,
            max_stage: 5,
            w_ai_bytes: 0.0,
            line_rate_bps,
            min_rate_bps: crate::dcqcn::MIN_RATE_BPS.min(line_rate_bps),
        };
        c.w_ai_bytes = c.w_ai_rule(n_flows);
        c
    }

    /// The draft's rule of thumb for `W_ai` with this `η`: `W_init·(1 − η)/N` for `n_flows`
    /// concurrent flows on a link, bytes.
    pub fn w_ai_rule(&self, n_flows: u32) -> f64 {
        self.w_init() * (1.0 - self.eta) / f64::from(n_flows.max(1))
    }

    /// `W_init`: the window of line rate over one base RTT (the bandwidth-delay product), bytes.
    pub fn w_init(&self) -> f64 {
        self.window_of(self.line_rate_bps as f64)
    }

    /// The window of `rate_bps` over `T`, bytes.
    pub fn window_of(&self, rate_bps: f64) -> f64 {
        rate_bps / 8.0 * self.base_rtt_ns as f64 * 1e-9
    }
}

/// What the window is now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// `W`, bytes in flight allowed.
    pub bytes: f64,
    /// `R = W/T`, the pacing rate, bits per second.
    pub rate_bps: f64,
}

/// `MeasureInflight` and `ComputeWind`, with the state they keep: `U`, `Wc`, `incStage` and the
/// last telemetry `L`.
#[derive(Debug, Clone)]
pub struct HpccCore {
    cfg: HpccConfig,
    /// `U`, the normalised inflight bytes (EWMA).
    u: f64,
    /// `Wc`, the reference window, bytes.
    wc: f64,
    /// `W`, the current window, bytes.
    w: f64,
    inc_stage: u32,
    /// `L`: the hops of the last telemetry, or none yet.
    last: [IntHopRepr; MAX_HOPS],
    last_n: usize,
}

impl HpccCore {
    /// A flow starting at line rate: `W = Wc = W_init`, `U = 1`.
    pub fn new(cfg: HpccConfig) -> Self {
        let w = cfg.w_init();
        Self { cfg, u: 1.0, wc: w, w, inc_stage: 0, last: [IntHopRepr::default(); MAX_HOPS], last_n: 0 }
    }

    /// The parameters.
    pub fn config(&self) -> &HpccConfig {
        &self.cfg
    }

    /// `U`.
    pub fn utilisation(&self) -> f64 {
        self.u
    }

    /// `Wc`, bytes.
    pub fn reference_window(&self) -> f64 {
        self.wc
    }

    /// `W` and `R`.
    pub fn window(&self) -> Window {
        Window { bytes: self.w, rate_bps: self.w * 8.0 / (self.cfg.base_rtt_ns as f64 * 1e-9) }
    }

    /// Feed one telemetry record; `update_wc` commits the reference window. Returns the new
    /// window, or `None` when the telemetry cannot be used (no previous record of the same
    /// path to difference against, an overflowed header): it is then only remembered.
    pub fn handle_telemetry(&mut self, int: &IntRepr, update_wc: bool) -> Option<Window> {
        if int.overflow || int.n_hop == 0 {
            return None;
        }
        let hops = int.recorded();
        let same_path = hops.len() == self.last_n
            && hops.iter().zip(&self.last).all(|(a, b)| a.switch_id == b.switch_id && a.port_id == b.port_id);
        let u = if same_path { self.measure_inflight(hops) } else { None };
        self.last[..hops.len()].copy_from_slice(hops);
        self.last_n = hops.len();
        let u = u?;
        Some(self.compute_wind(u, update_wc))
    }

    /// `MeasureInflight` (lines 1–10): `None` if no hop moved forward in time.
    fn measure_inflight(&mut self, hops: &[IntHopRepr]) -> Option<f64> {
        let t = self.cfg.base_rtt_ns as f64;
        let mut best: Option<(f64, f64)> = None;
        for (now, prev) in hops.iter().zip(&self.last) {
            let tau = f64::from(now.ts_delta(prev));
            let b = now.rate_bps() as f64;
            if tau <= 0.0 || b <= 0.0 {
                continue;
            }
            // Bytes per ns → bits per second.
            let tx_rate = f64::from(now.tx_bytes_delta(prev)) * 8.0 / tau * 1e9;
            let qlen = now.qlen_bytes().min(prev.qlen_bytes()) as f64;
            let u = qlen * 8.0 / (b * t * 1e-9) + tx_rate / b;
            if best.is_none_or(|(bu, _)| u > bu) {
                best = Some((u, tau));
            }
        }
        let (u, tau) = best?;
        let tau = tau.min(t);
        self.u = (1.0 - tau / t) * self.u + tau / t * u;
        Some(self.u)
    }

    /// `ComputeWind` (lines 11–20), with `W` kept between the smallest and the line rate's.
    fn compute_wind(&mut self, u: f64, update_wc: bool) -> Window {
        let c = &self.cfg;
        let w = if u >= c.eta || self.inc_stage >= c.max_stage {
            if update_wc {
                self.inc_stage = 0;
            }
            self.wc / (u / c.eta) + c.w_ai_bytes
        } else {
            if update_wc {
                self.inc_stage += 1;
            }
            self.wc + c.w_ai_bytes
        };
        let w = w.clamp(c.window_of(c.min_rate_bps as f64), c.w_init());
        if update_wc {
            self.wc = w;
        }
        self.w = w;
        self.window()
    }
}

/// The HPCC++ sender of one flow: `NewAck`.
#[derive(Debug, Clone)]
pub struct Hpcc {
    core: HpccCore,
    /// `lastUpdateSeq`: the first byte sent with the current `Wc`.
    last_update_seq: u64,
}

impl Hpcc {
    /// A flow starting at line rate.
    pub fn new(cfg: HpccConfig) -> Self {
        Self { core: HpccCore::new(cfg), last_update_seq: 0 }
    }

    /// `W` and `R`.
    pub fn window(&self) -> Window {
        self.core.window()
    }

    /// The shared state (for plots and tests).
    pub fn core(&self) -> &HpccCore {
        &self.core
    }

    /// `NewAck`: an ACK acknowledging bytes up to `ack_seq` carried `int`; `snd_nxt` is the next
    /// byte the sender will send. Returns the new window, or `None` if the telemetry was only
    /// remembered.
    pub fn handle_ack(&mut self, ack_seq: u64, snd_nxt: u64, int: &IntRepr) -> Option<Window> {
        let first = self.core.last_n == 0;
        let update = ack_seq > self.last_update_seq;
        let w = self.core.handle_telemetry(int, update && !first);
        if first || (update && w.is_some()) {
            self.last_update_seq = snd_nxt;
        }
        w
    }
}

/// The receiver-based HPCC++ of one flow (§6.2): `NewINT`.
#[derive(Debug, Clone)]
pub struct RxHpcc {
    core: HpccCore,
    last_update_ns: Option<u64>,
}

impl RxHpcc {
    /// A flow starting at line rate.
    pub fn new(cfg: HpccConfig) -> Self {
        Self { core: HpccCore::new(cfg), last_update_ns: None }
    }

    /// `W` and `R`.
    pub fn window(&self) -> Window {
        self.core.window()
    }

    /// `NewINT`: a data packet carrying `int` arrived at `now`. Returns the window to feed back
    /// in an ACK — once per base RTT, when `Wc` is committed — or `None` (the window was only
    /// updated locally).
    pub fn handle_int(&mut self, now: u64, int: &IntRepr) -> Option<Window> {
        let due = self.last_update_ns.is_none_or(|t| now > t + self.core.cfg.base_rtt_ns);
        let w = self.core.handle_telemetry(int, due);
        if due && w.is_some() {
            self.last_update_ns = Some(now);
            return w;
        }
        if self.last_update_ns.is_none() {
            // The first record only starts the clock.
            self.last_update_ns = Some(now);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G100: u64 = 100_000_000_000;

    fn cfg() -> HpccConfig {
        HpccConfig { max_stage: 0, ..HpccConfig::new(G100, 10_000, 2) }
    }

    /// One hop at `rate`, sampled at `ts` with `tx` bytes sent and `qlen` queued.
    fn int(ts: u64, tx: u64, qlen: u64) -> IntRepr {
        let mut r = IntRepr::empty(2);
        r.hops[0] = IntHopRepr::from_snapshot(1, 3, G100, qlen, ts, tx);
        r.n_hop = 1;
        r
    }

    #[test]
    fn starts_at_line_rate_with_a_bdp_window() {
        let h = Hpcc::new(cfg());
        let w = h.window();
        assert!((w.bytes - 125_000.0).abs() < 1e-6, "{w:?}");
        assert!((w.rate_bps - G100 as f64).abs() < 1.0);
    }

    /// A link sending at line rate with a standing queue of one BDP gives u = 2 (Eqn. 2); fed
    /// for a whole RTT, U reaches it and the window is cut to Wc·η/U.
    #[test]
    fn a_full_link_with_a_queue_cuts_the_window_multiplicatively() {
        let mut h = Hpcc::new(cfg());
        let bdp = 125_000;
        assert_eq!(h.handle_ack(1000, 10_000, &int(0, 0, bdp)), None, "the first ACK only remembers L");
        // τ = T: the EWMA takes u whole. 125 000 B in 10 µs is line rate.
        let w = h.handle_ack(20_000, 30_000, &int(10_000, 125_000, bdp)).unwrap();
        assert!((h.core().utilisation() - 2.0).abs() < 0.01, "U = {}", h.core().utilisation());
        let expect = 125_000.0 * 0.95 / 2.0 + cfg().w_ai_bytes;
        assert!((w.bytes - expect).abs() < 100.0, "{w:?} vs {expect}");
        assert!((h.core().reference_window() - w.bytes).abs() < 1e-9, "Wc committed");
    }

    /// ACKs for data sent before the last commit do not commit Wc again (once per RTT), but W
    /// still follows them.
    #[test]
    fn the_reference_window_is_committed_once_per_rtt() {
        let mut h = Hpcc::new(cfg());
        h.handle_ack(1000, 10_000, &int(0, 0, 125_000));
        let first = h.handle_ack(20_000, 50_000, &int(10_000, 125_000, 125_000)).unwrap();
        let wc = h.core().reference_window();
        // Acknowledges up to 40 000 < lastUpdateSeq = 50 000: no commit.
        let second = h.handle_ack(40_000, 60_000, &int(12_000, 150_000, 125_000)).unwrap();
        assert_eq!(h.core().reference_window(), wc);
        assert!(second.bytes <= first.bytes + 1.0);
        // Past 50 000: committed.
        h.handle_ack(50_001, 70_000, &int(14_000, 175_000, 0));
        assert_ne!(h.core().reference_window(), wc);
    }

    /// An idle link (u < η) grows the window additively (with maxStage > 0) up to W_init.
    #[test]
    fn an_underused_link_grows_the_window_up_to_line_rate() {
        let mut h = Hpcc::new(HpccConfig { max_stage: 5, ..cfg() });
        let mut seq = 0;
        let mut t = 0;
        let mut tx = 0;
        h.handle_ack(1, 1, &int(t, tx, 0));
        // Half the line rate: u = 0.5, U falls toward it; first a cut while U ≥ η, then growth.
        let mut windows = Vec::new();
        for _ in 0..200 {
            t += 10_000;
            tx += 62_500;
            seq += 100_000;
            if let Some(w) = h.handle_ack(seq, seq + 1, &int(t, tx, 0)) {
                windows.push(w.bytes);
            }
        }
        let last = *windows.last().unwrap();
        assert!((last - 125_000.0).abs() < 1e-6, "back at W_init: {last}");
    }

    /// Telemetry of another path (hops with other IDs) is remembered, never differenced.
    #[test]
    fn a_path_change_restarts_the_measurement() {
        let mut h = Hpcc::new(cfg());
        h.handle_ack(1, 1, &int(0, 0, 0));
        let mut other = int(10_000, 125_000, 0);
        other.hops[0].switch_id = 9;
        assert_eq!(h.handle_ack(2, 2, &other), None);
        let mut over = int(20_000, 250_000, 0);
        over.overflow = true;
        assert_eq!(h.handle_ack(3, 3, &over), None);
    }

    /// Rx-HPCC feeds a window back at most once per T.
    #[test]
    fn rx_hpcc_feeds_back_once_per_base_rtt() {
        let mut r = RxHpcc::new(cfg());
        assert_eq!(r.handle_int(0, &int(0, 0, 0)), None);
        let mut fed = 0;
        for i in 1..=100u64 {
            let now = i * 1_000; // a packet per µs over 100 µs = 10 RTTs
            if r.handle_int(now, &int(now, i * 12_500, 0)).is_some() {
                fed += 1;
            }
        }
        assert!((9..=10).contains(&fed), "{fed} feedbacks in 10 RTTs");
    }
}
