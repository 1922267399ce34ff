//! A reporter's response to slow-down messages (our NACK extension; seed §3.2 leaves flow
//! control to the translator's rate limit): multiplicative decrease on a slow-down, at most once
//! per window of reports, and multiplicative increase bounded both in reports sent and in time —
//! DCQCN's shape (cut, fast recovery to the rate that met congestion, then probing beyond it),
//! with every step a proportion of the rate so that it behaves the same at 5 k reports/s and at
//! line rate (`--rate 0`).
//!
//! Why both bounds on the increase: the translator paces its slow-downs in time (one per
//! `nack_interval_us` per reporter), so at line rate thousands of reports go between two of
//! them and recovery counted in reports would undo each cut at once; a reporter cut far down
//! sends seldom, so recovery counted in time alone would outrun the cuts (at most one per
//! [`SLOW_DOWN_EVERY`] reports) and hold it at 32 reports per doubling time, whatever the
//! collector takes. Recovery takes the lesser of the two.

/// A slow-down message halves the reporter's rate at most once per this many reports sent:
/// the translator paces its messages per reporter (`nack_interval_us`), and a congested
/// collector QP keeps asking for as long as it recovers — halving at every message took a
/// 100 k reports/s reporter to 1/1024 of its rate in a millisecond and left it there for tens
/// of seconds. One halving per [`SLOW_DOWN_EVERY`] reports is DCQCN's "once per window" rule
/// in report numbers.
pub const SLOW_DOWN_EVERY: u32 = 32;

/// Fast recovery (back up to the rate a slow-down found congestion at) doubles the rate per
/// this many reports sent, or per [`RATE_DOUBLING_NS`], whichever is longer: at most 1.41 times
/// per [`SLOW_DOWN_EVERY`] reports, so slow-downs that keep coming always win.
pub const RATE_DOUBLING_REPORTS: u32 = 64;

/// Fast recovery's time bound: a doubling per 1 ms at most.
pub const RATE_DOUBLING_NS: u64 = 1_000_000;

/// Beyond the rate it last met congestion at, a reporter probes 16 times slower (per 1,024
/// reports or 16 ms): from a collector's 50 k reports/s to 100 M/s is 11 doublings, 176 ms,
/// so a rate far past what the collector takes is never reached faster than the translator's
/// slow-downs can bring it back.
pub const PROBE_DOUBLING_REPORTS: u32 = 1024;

/// Probing's time bound: a doubling per 16 ms at most.
pub const PROBE_DOUBLING_NS: u64 = 16_000_000;

/// However few reports go, the rate doubles at least once per this long (in fast recovery; 16
/// times slower probing): a reporter cut to a trickle comes back within about a second once
/// the slow-downs stop. Under slow-downs that keep coming, this is what a reporter cannot be
/// held below: 32 reports per 250 ms, 128 reports/s.
pub const SLOWEST_DOUBLING_NS: u64 = 250_000_000;

/// The lowest share of its nominal rate slow-downs take a reporter to: 2^-20, about 100
/// reports/s of 100 M/s (a reporter at line rate on 100 GbE).
pub const MIN_RATE_SCALE: f64 = 1.0 / 1_048_576.0;

/// The share of its nominal rate a reporter may use, driven by slow-downs and reports sent.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// The share now (as of `at`).
    scale: f64,
    /// The share the last slow-down found congestion at: fast recovery goes up to it.
    target: f64,
    /// When `scale` was brought up to date, ns.
    at: u64,
    /// Reports sent since `at`.
    sent: u32,
    /// Reports sent since the last cut.
    since_cut: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { scale: 1.0, target: 1.0, at: 0, sent: 0, since_cut: SLOW_DOWN_EVERY }
    }
}

impl Backoff {
    /// A report was sent (any report, tracked or not).
    pub fn on_report(&mut self) {
        self.sent = self.sent.saturating_add(1);
        self.since_cut = self.since_cut.saturating_add(1);
    }

    /// A slow-down message at `now` (ns): where the rate stands is where congestion was found
    /// (fast recovery stops there); once per [`SLOW_DOWN_EVERY`] reports it is also halved.
    /// Returns whether it was.
    pub fn on_slow_down(&mut self, now: u64) -> bool {
        self.target = self.scale(now);
        if self.since_cut < SLOW_DOWN_EVERY {
            return false;
        }
        self.since_cut = 0;
        self.scale = (self.target / 2.0).max(MIN_RATE_SCALE);
        true
    }

    /// Whether slow-downs hold the rate below nominal (as last brought up to date).
    pub fn slowed(&self) -> bool {
        self.scale < 1.0
    }

    /// The share (0, 1] of its nominal rate the reporter should use at `now` (ns): what the
    /// slow-downs left, recovered since by the reports sent and the time gone.
    pub fn scale(&mut self, now: u64) -> f64 {
        let dt = now.saturating_sub(self.at) as f64;
        let n = f64::from(self.sent);
        self.at = now;
        self.sent = 0;
        if self.scale >= 1.0 {
            return 1.0;
        }
        let doublings = |reports: u32, ns: u64, slowest: u64| {
            (n / f64::from(reports)).min(dt / ns as f64).max(dt / slowest as f64)
        };
        if self.scale < self.target {
            let up =
                self.scale * doublings(RATE_DOUBLING_REPORTS, RATE_DOUBLING_NS, SLOWEST_DOUBLING_NS).exp2();
            self.scale = up.min(self.target);
        } else {
            let up = self.target
                * doublings(PROBE_DOUBLING_REPORTS, PROBE_DOUBLING_NS, 16 * SLOWEST_DOUBLING_NS).exp2();
            self.target = up.min(1.0);
            self.scale = self.target;
        }
        self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `reports` reports over `ns` ns, in steps of one report.
    fn send(b: &mut Backoff, t: &mut u64, reports: u32, ns: u64) {
        for _ in 0..reports {
            b.on_report();
            *t += ns / u64::from(reports.max(1));
            b.scale(*t);
        }
    }

    #[test]
    fn a_slow_down_halves_once_per_window_and_recovery_is_bounded_by_reports_and_time() {
        let mut b = Backoff::default();
        let mut t = 0;
        assert!(b.on_slow_down(t));
        assert_eq!(b.scale(t), 0.5);
        // Fast: 64 reports in 64 ns — bounded by time, hardly any recovery.
        send(&mut b, &mut t, 64, 64);
        assert!(b.scale(t) < 0.51);
        // Slow: 8 reports in 10 ms — bounded by reports, an eighth of a doubling.
        send(&mut b, &mut t, 8, 10_000_000);
        let s = b.scale(t);
        assert!((0.54..0.55).contains(&s), "{s}");
        // A cut, then a second message in the same window: no cut, but fast recovery stops
        // where it found the rate (probing beyond it is 16 times slower).
        assert!(b.on_slow_down(t));
        assert!(!b.on_slow_down(t));
        let pinned = b.scale(t);
        assert!((0.27..0.28).contains(&pinned), "{pinned}");
        send(&mut b, &mut t, 64, 10_000_000);
        let s = b.scale(t);
        assert!(s > pinned && s < pinned * 1.1, "{s}");
        // Nothing sent for a second: the time floor still doubles it four times (250 ms each,
        // probing: 16 times that).
        t += 1_000_000_000;
        assert!(b.scale(t) > s * 1.1);
    }

    #[test]
    fn slow_downs_that_keep_coming_win_at_any_rate() {
        // One slow-down per 32 reports, at 1 k, 100 k and 100 M reports/s: the rate falls.
        for per_report_ns in [1_000_000, 10_000, 10] {
            let mut b = Backoff::default();
            let mut t = 0;
            for _ in 0..20 {
                send(&mut b, &mut t, SLOW_DOWN_EVERY, per_report_ns * u64::from(SLOW_DOWN_EVERY));
                b.on_slow_down(t);
            }
            assert!(b.scale(t) < 1e-3, "{per_report_ns} ns per report: {}", b.scale(t));
        }
    }

    #[test]
    fn without_slow_downs_the_rate_comes_back() {
        let mut b = Backoff::default();
        let mut t = 0;
        for _ in 0..10 {
            send(&mut b, &mut t, SLOW_DOWN_EVERY, 1);
            b.on_slow_down(t);
        }
        assert!(b.scale(t) < 1e-2);
        // 20 k reports over a second: all the way back.
        send(&mut b, &mut t, 20_000, 1_000_000_000);
        assert_eq!(b.scale(t), 1.0);
        assert!(!b.slowed());
    }
}
