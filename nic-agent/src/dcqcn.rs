//! DCQCN, the baseline HPCC++ is compared against: the reaction point (sender rate control) and
//! the notification point (CNP generation at the receiver), as the HPCC simulator's Mellanox
//! model implements them (`../shared/reference/hawkeye_hpcc.md` B.4; Zhu et al., SIGCOMM 2015).
//! ECN marking is the congestion point's job: the traffic manager's RED marking in `dataplane`.
//!
//! Reaction point, all sans-IO: [`DcqcnRp::handle_cnp`] records a CNP; [`DcqcnRp::handle_timeout`] runs
//! whatever of the three timers is due and [`DcqcnRp::poll_timeout`] says when to call it next.
//!
//! * every `t_alpha`: `α = (1 − g)·α + g·[a CNP arrived since the last update]`;
//! * every `t_dec`, if a CNP arrived since the last check: `Rt = R`, `R = max(R_min, R·(1 − α/2))`,
//!   and the increase stage restarts;
//! * every `t_inc` (the RP timer) without a cut: stage `< F` fast recovery, `== F` additive
//!   (`Rt += R_AI`), `> F` hyper (`Rt += R_HAI`); then `R = (R + Rt)/2`.
//!
//! The first CNP of a flow leaves its rate as it is (× 1.0) and starts the timers.

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
}

impl DcqcnConfig {
    /// The reference simulator's Mellanox (CX4+) settings at `line_rate_bps`: t_alpha 1 µs,
    /// t_dec 4 µs, RP timer 300 µs, g = 1/256, one fast-recovery stage, R_AI = 5·bw/25 Mb/s,
    /// R_HAI = 50·bw/25 Mb/s, R_min 100 Mb/s.
    pub fn mellanox(line_rate_bps: u64) -> Self {
        let bw_g = line_rate_bps / 1_000_000_000;
        Self {
            line_rate_bps,
            min_rate_bps: 100_000_000,
            g: 1.0 / 256.0,
            t_alpha_ns: 1_000,
            t_dec_ns: 4_000,
            t_inc_ns: 300_000,
            fast_recovery_stages: 1,
            ai_bps: 5 * bw_g * 1_000_000 / 25,
            hai_bps: 50 * bw_g * 1_000_000 / 25,
        }
    }
}

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
            // The first CNP: rate unchanged, timers start.
            self.next_alpha = Some(now + self.cfg.t_alpha_ns);
            self.next_dec = Some(now + self.cfg.t_dec_ns);
            self.next_inc = Some(now + self.cfg.t_inc_ns);
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
                self.target = self.rate;
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
        rp.handle_timeout(4_000);
        // α decayed over 4 α periods, one of them with a CNP: cut by α/2 ≈ 0.5.
        let a = rp.alpha();
        assert!(a > 0.98 && a <= 1.0, "{a}");
        assert!((rp.rate_bps() - G100 as f64 * (1.0 - a / 2.0)).abs() < 1.0);
    }

    #[test]
    fn without_cnps_alpha_decays_and_the_rate_recovers_to_line_rate() {
        let c = DcqcnConfig::mellanox(G100);
        let mut rp = DcqcnRp::new(c);
        rp.handle_cnp(0);
        rp.handle_timeout(4_000);
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
    fn the_notification_point_paces_cnps() {
        let mut np = CnpGenerator::new(50_000);
        assert!(np.handle_ce(0));
        assert!(!np.handle_ce(49_999));
        assert!(np.handle_ce(50_000));
        let mut every = CnpGenerator::new(0);
        assert!(every.handle_ce(7) && every.handle_ce(7));
    }
}
