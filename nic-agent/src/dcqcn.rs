//! DCQCN, the baseline HPCC++ is compared against: the reaction point (sender rate control) and
//! the notification point (CNP generation at the receiver), as the HPCC simulator's Mellanox
//! model implements them (`rdma-hw.cc`, `*Mlx`; `../shared/reference/hawkeye_hpcc.md` B.4; Zhu et
//! al., SIGCOMM 2015). ECN marking is the congestion point's job: the traffic manager's RED
//! marking in `dataplane`.
//!
//! Reaction point, all sans-IO: [`DcqcnRp::handle_cnp`] records a CNP; [`DcqcnRp::handle_timeout`] runs
//! whatever of the three timers is due and [`DcqcnRp::poll_timeout`] says when to call it next.
//!
//! * the first CNP of a flow sets `α = 1`, leaves the rate as it is (`rateOnFirstCNP` 1.0), does
//!   not count towards the next α update, and starts the α timer and the decrease check (1 ns
//!   after a multiple of the α period, so α is updated first);
//! * every `t_alpha`: `α = (1 − g)·α + g·[a CNP arrived since the last update]`;
//! * every `t_dec`, if a CNP arrived since the last check: the target is clamped to the current
//!   rate (`Rt = R`) only if an increase event ran since the last cut (the reference's
//!   `CLAMP_TARGET_RATE 0`; [`DcqcnConfig::clamp_target_rate`] clamps at every cut), then
//!   `R = max(R_min, R·(1 − α/2))`, the increase stage restarts and the RP timer is started
//!   again from now;
//! * every `t_inc` (the RP timer, running from the first cut) without a cut: stage `< F` fast
//!   recovery, `== F` additive (`Rt += R_AI`), `> F` hyper (`Rt += R_HAI`), `Rt` at most the
//!   line rate; then `R = (R + Rt)/2`; then the stage advances.
//!
//! No byte counter (the reference has none).

/// DCQCN parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DcqcnConfig {
    /// Line rate, bits per second: the start and the largest rate.
    pub line_rate_bps: u64,
    /// Smallest rate, bits per second.
    pub min_rate_bps: u64,
    /// `g`, the α gain.
    pub g: f64,
    /// α update period, ns.
    pub t_alpha_ns: u64,
    /// Rate decrease check period, ns.
    pub t_dec_ns: u64,
    /// Rate increase (RP timer) period, ns.
    pub t_inc_ns: u64,
    /// `F`: fast-recovery stages.
    pub fast_recovery_stages: u32,
    /// Additive increase, bits per second.
    pub ai_bps: u64,
    /// Hyper increase, bits per second.
    pub hai_bps: u64,
    /// Clamp the target rate at every cut (`true`), or only when an increase event ran since
    /// the last one (`false`, the reference's `CLAMP_TARGET_RATE 0`).
    pub clamp_target_rate: bool,
}

impl DcqcnConfig {
    /// The reference simulator's Mellanox (CX4+) settings at `line_rate_bps`, as its `run.py`
    /// writes them for `dcqcn`: t_alpha 1 µs, t_dec 4 µs, RP timer 300 µs, g = 1/256, one
    /// fast-recovery stage, R_AI = 5·bw/25 Mb/s, R_HAI = 50·bw/25 Mb/s, R_min 1000 Mb/s, the
    /// target clamped only after an increase (`CLAMP_TARGET_RATE 0`).
    pub fn mellanox(line_rate_bps: u64) -> Self {
        let bw_g = line_rate_bps / 1_000_000_000;
        Self {
            line_rate_bps,
            min_rate_bps: MIN_RATE_BPS.min(line_rate_bps),
            g: 1.0 / 256.0,
            t_alpha_ns: 1_000,
            t_dec_ns: 4_000,
            t_inc_ns: 300_000,
            fast_recovery_stages: 1,
            ai_bps: 5 * bw_g * 1_000_000 / 25,
            hai_bps: 50 * bw_g * 1_000_000 / 25,
            clamp_target_rate: false,
        }
    }
}

/// The smallest rate the reference's `run.py` gives every congestion control (`MIN_RATE`
/// 1000 Mb/s; its example `config.txt` has 100 Mb/s).
pub const MIN_RATE_BPS: u64 = 1_000_000_000;

/// The reaction point of one flow.
#[derive(Debug, Clone)]
pub struct DcqcnRp {
    cfg: DcqcnConfig,
    /// `R`, the current rate.
    rate: f64,
    /// `Rt`, the target rate.
    target: f64,
    alpha: f64,
    stage: u32,
    /// A CNP arrived since the last α update / since the last decrease check.
    cnp_alpha: bool,
    cnp_dec: bool,
    /// Timers: `None` until the first CNP.
    next_alpha: Option<u64>,
    next_dec: Option<u64>,
    next_inc: Option<u64>,
}

impl DcqcnRp {
    /// A flow at line rate, α = 1.
    pub fn new(cfg: DcqcnConfig) -> Self {
        let r = cfg.line_rate_bps as f64;
        Self {
            cfg,
            rate: r,
            target: r,
            alpha: 1.0,
            stage: 0,
            cnp_alpha: false,
            cnp_dec: false,
            next_alpha: None,
            next_dec: None,
            next_inc: None,
        }
    }

    /// `R`, bits per second.
    pub fn rate_bps(&self) -> f64 {
        self.rate
    }

    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// A CNP for this flow arrived at `now`.
    pub fn handle_cnp(&mut self, now: u64) {
        self.cnp_alpha = true;
        self.cnp_dec = true;
        if self.next_dec.is_none() {
            // The first CNP: α = 1 and this CNP does not count towards its next update; the
            // rate stays (and is the target); the α timer and, 1 ns later, the decrease check
            // start. The RP timer starts at the first cut.
            self.alpha = 1.0;
            self.cnp_alpha = false;
            self.target = self.rate;
            self.next_alpha = Some(now + self.cfg.t_alpha_ns);
            self.next_dec = Some(now + self.cfg.t_dec_ns + 1);
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) must run next, if at all.
    pub fn poll_timeout(&self) -> Option<u64> {
        [self.next_alpha, self.next_dec, self.next_inc].into_iter().flatten().min()
    }

    /// Run every timer due at `now` (each as many periods as have passed).
    pub fn handle_timeout(&mut self, now: u64) {
        let c = self.cfg;
        while let Some(t) = self.next_alpha.filter(|&t| t <= now) {
            let hit = if std::mem::take(&mut self.cnp_alpha) { 1.0 } else { 0.0 };
            self.alpha = (1.0 - c.g) * self.alpha + c.g * hit;
            self.next_alpha = Some(t + c.t_alpha_ns);
        }
        while let Some(t) = self.next_dec.filter(|&t| t <= now) {
            if std::mem::take(&mut self.cnp_dec) {
                if c.clamp_target_rate || self.stage != 0 {
                    self.target = self.rate;
                }
                self.rate = (self.rate * (1.0 - self.alpha / 2.0)).max(c.min_rate_bps as f64);
                self.stage = 0;
                // A cut restarts the increase period.
                self.next_inc = Some(t + c.t_inc_ns);
            }
            self.next_dec = Some(t + c.t_dec_ns);
        }
        while let Some(t) = self.next_inc.filter(|&t| t <= now) {
            let f = c.fast_recovery_stages;
            if self.stage == f {
                self.target += c.ai_bps as f64;
            } else if self.stage > f {
                self.target += c.hai_bps as f64;
            }
            self.target = self.target.min(c.line_rate_bps as f64);
            self.rate = ((self.rate + self.target) / 2.0).min(c.line_rate_bps as f64);
            self.stage = self.stage.saturating_add(1);
            self.next_inc = Some(t + c.t_inc_ns);
        }
    }
}

/// The notification point: at most one CNP per flow per interval when CE-marked packets
/// arrive (the RoCEv2 CNP, `wire::roce` opcode 0x81).
#[derive(Debug, Clone, Copy)]
pub struct CnpGenerator {
    interval_ns: u64,
    last: Option<u64>,
}

impl CnpGenerator {
    /// One CNP per `interval_ns` at most (50 µs on Mellanox NICs; the simulator sends one per
    /// marked ACK, i.e. interval 0).
    pub fn new(interval_ns: u64) -> Self {
        Self { interval_ns, last: None }
    }

    /// A CE-marked packet of this flow arrived at `now`: whether to send a CNP.
    pub fn handle_ce(&mut self, now: u64) -> bool {
        if self.last.is_some_and(|t| now < t + self.interval_ns) {
            return false;
        }
        self.last = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G100: u64 = 100_000_000_000;

    #[test]
    fn the_first_cnp_keeps_the_rate_and_the_next_check_cuts_it() {
        let mut rp = DcqcnRp::new(DcqcnConfig::mellanox(G100));
        rp.handle_cnp(0);
        assert_eq!(rp.rate_bps(), G100 as f64);
        assert_eq!(rp.poll_timeout(), Some(1_000));
        rp.handle_timeout(4_001);
        // α decayed over 4 α periods from 1 (the first CNP does not count): cut by α/2 ≈ 0.5.
        let a = rp.alpha();
        assert!(a > 0.98 && a <= 1.0, "{a}");
        assert!((rp.rate_bps() - G100 as f64 * (1.0 - a / 2.0)).abs() < 1.0);
    }

    #[test]
    fn without_cnps_alpha_decays_and_the_rate_recovers_to_line_rate() {
        let c = DcqcnConfig::mellanox(G100);
        let mut rp = DcqcnRp::new(c);
        rp.handle_cnp(0);
        rp.handle_timeout(4_001);
        let cut = rp.rate_bps();
        assert!(cut < 0.6 * G100 as f64);
        // Fast recovery halves the gap to Rt every 300 µs; AI and HAI raise Rt.
        rp.handle_timeout(3_000_000);
        assert!(rp.alpha() < 0.01, "{}", rp.alpha());
        assert!(rp.rate_bps() > 0.99 * G100 as f64, "{}", rp.rate_bps());
        assert!(rp.rate_bps() <= G100 as f64);
    }

    #[test]
    fn repeated_cnps_drive_the_rate_down_to_the_floor() {
        let c = DcqcnConfig::mellanox(G100);
        let mut rp = DcqcnRp::new(c);
        for t in (0..2_000_000).step_by(2_000) {
            rp.handle_cnp(t);
            rp.handle_timeout(t + 1_999);
        }
        assert_eq!(rp.rate_bps(), c.min_rate_bps as f64);
    }

    #[test]
    fn consecutive_cuts_keep_the_target_unless_an_increase_ran_between_them() {
        let c = DcqcnConfig::mellanox(G100);
        let mut rp = DcqcnRp::new(c);
        // CNPs in every decrease period for 40 µs: ten cuts, no increase event between them.
        for t in (0..40_000).step_by(4_000) {
            rp.handle_cnp(t);
            rp.handle_timeout(t + 3_999);
        }
        rp.handle_timeout(40_001);
        assert!(rp.rate_bps() < 0.02 * G100 as f64, "{}", rp.rate_bps());
        // The target stayed where the first cut found the rate (the line rate): recovery
        // halves the gap to it at each RP timer.
        assert_eq!(rp.target, G100 as f64);
        let before = rp.rate_bps();
        rp.handle_timeout(40_001 + c.t_inc_ns);
        assert!((rp.rate_bps() - (before + G100 as f64) / 2.0).abs() < 1.0);
        // After an increase event, the next cut clamps the target to the rate.
        rp.handle_cnp(340_002);
        rp.handle_timeout(344_002);
        assert!(rp.target < G100 as f64);
        // Clamping at every cut (the old behaviour) drags the target down with the rate.
        let mut every = DcqcnRp::new(DcqcnConfig { clamp_target_rate: true, ..c });
        for t in (0..40_000).step_by(4_000) {
            every.handle_cnp(t);
            every.handle_timeout(t + 3_999);
        }
        assert!(every.target < 0.02 * G100 as f64, "{}", every.target);
    }

    #[test]
    fn the_first_cnp_sets_alpha_to_one_and_does_not_count_in_its_update() {
        let c = DcqcnConfig::mellanox(G100);
        let mut rp = DcqcnRp::new(c);
        rp.handle_cnp(0);
        rp.handle_timeout(1_000);
        assert!((rp.alpha() - (1.0 - c.g)).abs() < 1e-12, "{}", rp.alpha());
        // The decrease check runs 1 ns after the α update at 4 µs.
        assert_eq!(rp.poll_timeout(), Some(2_000));
        rp.handle_timeout(4_000);
        assert_eq!(rp.rate_bps(), G100 as f64, "not yet");
        rp.handle_timeout(4_001);
        assert!(rp.rate_bps() < 0.51 * G100 as f64);
    }

    #[test]
    fn the_notification_point_paces_cnps() {
        let mut np = CnpGenerator::new(50_000);
        assert!(np.handle_ce(0));
        assert!(!np.handle_ce(49_999));
        assert!(np.handle_ce(50_000));
        let mut every = CnpGenerator::new(0);
        assert!(every.handle_ce(7) && every.handle_ce(7));
    }
}
