//! Workloads: flow-size distributions (CDFs) and Poisson flow arrivals over them, as the
//! HPCC simulator's `traffic_gen` draws them (reference part B.4): per host, exponential
//! inter-arrival times of mean `mean_size·8 / (rate·load)`, a size drawn from the CDF with
//! linear interpolation, and a destination drawn uniformly among the other hosts.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use super::config::FlowSpec;

/// A flow-size distribution: `(size bytes, cumulative percent)` points, sizes and percents
/// non-decreasing, the last at 100 %.
#[derive(Debug, Clone, PartialEq)]
pub struct Cdf {
    points: Vec<(f64, f64)>,
}

/// Why a CDF is not one: the line (1-based) of the text and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct CdfError {
    /// Line of the CDF text (0: the whole text).
    pub line: usize,
    /// Why.
    pub reason: String,
}

/// Web search (DCTCP paper), the distribution the HPCC paper used: `WebSearch_distribution.txt`.
pub const WEBSEARCH: &str = "0 0\n10000 15\n20000 20\n30000 30\n50000 40\n80000 53\n200000 60\n\
1000000 70\n2000000 80\n5000000 90\n10000000 97\n30000000 100\n";

/// Facebook Hadoop, the HPCC paper's other distribution: `FbHdp_distribution.txt`.
pub const FB_HADOOP: &str = "0 0\n100 1\n200 2\n300 5\n350 15\n400 20\n500 30\n600 40\n700 50\n\
1000 60\n2000 67\n7000 70\n30000 72\n50000 82\n80000 87\n120000 90\n300000 95\n1000000 97.5\n\
2000000 99\n10000000 100\n";

impl Cdf {
    /// Parse `size percentile` lines (whitespace or a comma between; `#` comments and blank
    /// lines skipped), the format of the reference's `traffic_gen` files.
    pub fn parse(text: &str) -> Result<Self, CdfError> {
        let mut points: Vec<(f64, f64)> = Vec::new();
        for (i, l) in text.lines().enumerate() {
            let line = i + 1;
            let l = l.split('#').next().unwrap_or("").trim();
            if l.is_empty() {
                continue;
            }
            let mut it = l.split(|c: char| c.is_whitespace() || c == ',').filter(|s| !s.is_empty());
            let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
                return Err(CdfError { line, reason: format!("{l:?}: expected \"size percentile\"") });
            };
            let (Ok(size), Ok(pct)) = (a.parse::<f64>(), b.parse::<f64>()) else {
                return Err(CdfError { line, reason: format!("{l:?}: not two numbers") });
            };
            if !(size.is_finite()
                && (0.0..=super::config::MAX_FLOW_BYTES as f64).contains(&size)
                && (0.0..=100.0).contains(&pct))
            {
                return Err(CdfError {
                    line,
                    reason: format!(
                        "{l:?}: a size from 0 to {} bytes and a percentile in [0, 100]",
                        super::config::MAX_FLOW_BYTES
                    ),
                });
            }
            if let Some(&(ps, pp)) = points.last()
                && (size < ps || pct < pp)
            {
                return Err(CdfError {
                    line,
                    reason: format!("not monotone: ({size}, {pct}) after ({ps}, {pp})"),
                });
            }
            points.push((size, pct));
        }
        match points.last() {
            None => Err(CdfError { line: 0, reason: "no points".into() }),
            Some(&(_, p)) if p != 100.0 => {
                Err(CdfError { line: text.lines().count(), reason: format!("ends at {p} %, not 100 %") })
            }
            Some(&(s, _)) if s < 1.0 => {
                Err(CdfError { line: 0, reason: "every size is below 1 byte".into() })
            }
            _ => Ok(Self { points }),
        }
    }

    /// The mean flow size, bytes (each segment uniform between its ends; below the first
    /// point, uniform from 0, as [`Cdf::size_at`] draws).
    pub fn mean(&self) -> f64 {
        let first = self.points[0];
        let mut m = first.0 / 2.0 * first.1 / 100.0;
        for w in self.points.windows(2) {
            let ((s0, p0), (s1, p1)) = (w[0], w[1]);
            m += (s0 + s1) / 2.0 * (p1 - p0) / 100.0;
        }
        m
    }

    /// The size at cumulative fraction `u` ∈ [0, 1), linearly interpolated, at least 1 byte.
    pub fn size_at(&self, u: f64) -> u64 {
        let pct = u * 100.0;
        let mut prev = (0.0, 0.0);
        for &(s, p) in &self.points {
            if pct < p {
                let (s0, p0) = prev;
                let size = s0 + (s - s0) * (pct - p0) / (p - p0);
                return (size.round() as u64).max(1);
            }
            prev = (s, p);
        }
        (prev.0.round() as u64).max(1)
    }
}

/// Poisson arrivals at `load` of each host's link rate, from `hosts`, to uniformly drawn other
/// hosts of `dsts`, sizes from `cdf`, starting in `[start_ns, stop_ns)`. Deterministic for
/// `seed`.
#[allow(clippy::too_many_arguments)] // Each is one knob of the reference's generator.
pub fn poisson(
    cdf: &Cdf,
    load: f64,
    hosts: &[usize],
    dsts: &[usize],
    rate_bps: impl Fn(usize) -> u64,
    start_ns: u64,
    stop_ns: u64,
    seed: u64,
) -> Vec<FlowSpec> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // 53 random bits as a fraction in [0, 1).
    let mut unit = move || (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    let mean = cdf.mean();
    let mut flows = Vec::new();
    for &src in hosts {
        let others: Vec<usize> = dsts.iter().copied().filter(|&d| d != src).collect();
        if others.is_empty() {
            continue;
        }
        let mean_gap_ns = mean * 8.0 / (rate_bps(src) as f64 * load) * 1e9;
        let mut t = start_ns as f64;
        loop {
            t += -(1.0 - unit()).ln() * mean_gap_ns;
            if t >= stop_ns as f64 {
                break;
            }
            let size = cdf.size_at(unit());
            let dst = others[((unit() * others.len() as f64) as usize).min(others.len() - 1)];
            flows.push(FlowSpec {
                src,
                dst,
                size,
                start_ns: t as u64,
                guarantee_bps: None,
                class: 0,
                vm_pair: None,
            });
        }
    }
    flows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_cdfs_parse_and_have_the_known_means() {
        let ws = Cdf::parse(WEBSEARCH).unwrap();
        // Σ midpoint × mass, by hand: 1 711 250 bytes.
        assert!((ws.mean() - 1_711_250.0).abs() < 1.0, "{}", ws.mean());
        assert_eq!(ws.size_at(0.0), 1);
        assert_eq!(ws.size_at(0.15), 10_000);
        assert_eq!(ws.size_at(0.175), 15_000);
        assert_eq!(ws.size_at(0.999_999), 29_999_333);
        let fb = Cdf::parse(FB_HADOOP).unwrap();
        assert!(fb.mean() > 100_000.0 && fb.mean() < 300_000.0, "{}", fb.mean());
        // Below the first point sizes are uniform from 0: the mean agrees with the draws.
        let c = Cdf::parse("100 50\n300 100\n").unwrap();
        assert_eq!(c.mean(), 25.0 + 100.0);
        let draws: f64 = (0..10_000).map(|i| c.size_at(i as f64 / 10_000.0) as f64).sum::<f64>() / 10_000.0;
        assert!((draws - c.mean()).abs() < 1.0, "{draws}");
    }

    #[test]
    fn a_cdf_that_is_not_monotone_is_named_by_line() {
        let e = Cdf::parse("0 0\n100 50\n# dip\n50 60\n200 100\n").unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.reason.contains("not monotone"), "{e}");
        assert_eq!(Cdf::parse("0 0\n100 40\n200 30\n").unwrap_err().line, 3);
        assert!(Cdf::parse("0 0\n100 90\n").unwrap_err().reason.contains("not 100"));
        assert_eq!(Cdf::parse("0 0\n100\n").unwrap_err().line, 2);
        assert!(Cdf::parse("").is_err());
    }

    #[test]
    fn poisson_arrivals_offer_the_asked_load_and_are_deterministic() {
        let ws = Cdf::parse(WEBSEARCH).unwrap();
        let hosts: Vec<usize> = (0..16).collect();
        let draw = |seed| poisson(&ws, 0.5, &hosts, &hosts, |_| 100_000_000_000, 0, 200_000_000, seed);
        let f = draw(7);
        assert_eq!(f, draw(7));
        assert_ne!(f, draw(8));
        assert!(f.iter().all(|f| f.src != f.dst && f.start_ns < 200_000_000 && f.size >= 1));
        // Offered bytes over 0.2 s at 16 × 100G × 0.5: 200 MB; heavy tail, so within 20 %.
        let offered: u64 = f.iter().map(|f| f.size).sum();
        let want = 16.0 * 100e9 * 0.5 / 8.0 * 0.2;
        assert!((offered as f64 / want - 1.0).abs() < 0.2, "{offered} vs {want}");
    }
}
