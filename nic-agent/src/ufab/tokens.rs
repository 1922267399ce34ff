//! Bandwidth tokens (seed `003` Appendix E, Algorithm 1; Appendix F, Algorithm 2): a VF's hose
//! guarantee φ^α split into VM-pair tokens φ_{a→b} — the sender apportions its tokens over its
//! active pairs, the receiver arbitrates the demands it gets with max-min fair sharing — and a
//! pair's tokens split over its paths.
//!
//! Tokens are `f64` here (the probe carries them rounded to whole tokens of B_u).
//!
//! The OCR of Algorithm 1 leaves line 6 ambiguous ("p.φ_S = p.tx/B_u; ▷ Bounded by demand but
//! sender still admits φ̄"); the text settles it: "we assign at least the fair-sharing token to
//! each VM-pair even if its demand is insufficient (Line 7 in Algorithm 1)", and Algorithm 2's
//! line 7 does the same (`l.φ = φ̄`, "boost demand growth"). So a demand-bounded pair keeps the
//! initial fair share φ̄ while its spare (φ̄ − tx/B_u) goes to the others: the tokens handed out
//! can exceed φ^α by the spare, at most twice a pair's share in one round (Appendix E: "in the
//! worst case, we only assign double the VM-pair's token").

/// Tokens no receiver bound applies to (the receiver admitted the whole demand).
pub const UNBOUND: f64 = f64::INFINITY;

/// One VM-pair as the sender's Algorithm 1 sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SenderPair {
    /// Its measured TX rate, b/s.
    pub tx_bps: f64,
    /// The receiver's admitted tokens from the last response ([`UNBOUND`] if none bound it).
    pub phi_d: f64,
    /// The tokens this round assigns (output).
    pub phi_s: f64,
}

impl SenderPair {
    /// A pair with a measured rate and the receiver's last admission.
    pub fn new(tx_bps: f64, phi_d: f64) -> Self {
        Self { tx_bps, phi_d, phi_s: 0.0 }
    }
}

/// Algorithm 1, `TokenAssignment` (sender): split `phi_alpha` tokens of B_u = `b_u_bps` each
/// over `pairs`. A pair whose demand (tx / B_u) is below the fair share keeps the fair share and
/// gives its spare to the others; a pair the receiver bounds below the (grown) share gets the
/// receiver's tokens and its spare is redistributed; every other pair gets the final share.
pub fn assign(phi_alpha: f64, b_u_bps: f64, pairs: &mut [SenderPair]) {
    let n_s = pairs.len();
    if n_s == 0 {
        return;
    }
    let mut y = 0.0;
    let mut n_b = 0usize;
    for p in pairs.iter_mut() {
        p.phi_s = 0.0;
    }
    let fair = phi_alpha / n_s as f64;
    let mut share = fair;
    for p in pairs.iter_mut() {
        let demand = p.tx_bps / b_u_bps;
        if fair > demand {
            y += fair - demand;
            p.phi_s = fair;
            n_b += 1;
        }
    }
    if n_b < n_s {
        share += y / (n_s - n_b) as f64;
    }
    // Ascending on the receiver's admission: the tightest receiver bound first.
    let mut order: Vec<usize> = (0..n_s).collect();
    order.sort_by(|&a, &b| pairs[a].phi_d.total_cmp(&pairs[b].phi_d));
    for i in order {
        let p = &mut pairs[i];
        if p.phi_d < share && p.phi_s == 0.0 {
            n_b += 1;
            if n_b < n_s {
                share += (share - p.phi_d) / (n_s - n_b) as f64;
            }
            p.phi_s = p.phi_d;
        }
    }
    for p in pairs.iter_mut() {
        if p.phi_s == 0.0 {
            p.phi_s = share;
        }
    }
}

/// Algorithm 1, `TokenAdmission` (receiver): admit the demands `phi_s` (one per incoming pair)
/// against the receiver's `phi_alpha` with max-min fair sharing (water-filling). Returns φ_D per
/// pair: [`UNBOUND`] for a demand under the share (admitted whole, its unused share
/// redistributed), the share for the others.
pub fn admit(phi_alpha: f64, phi_s: &[f64]) -> Vec<f64> {
    let n = phi_s.len();
    let mut out = vec![UNBOUND; n];
    if n == 0 {
        return out;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| phi_s[a].total_cmp(&phi_s[b]));
    let mut share = phi_alpha / n as f64;
    for (k, &i) in order.iter().enumerate() {
        if phi_s[i] < share {
            out[i] = UNBOUND;
            let left = n - k - 1;
            if left > 0 {
                share += (share - phi_s[i]) / left as f64;
            }
        } else {
            out[i] = share;
        }
    }
    out
}

/// Algorithm 2, `MultiPathAssignment`: split a pair's `phi_s` over paths whose measured TX
/// rates are `tx_bps`: each path gets the fair share at least, and the spare of the paths whose
/// demand is under it goes to the others.
pub fn assign_paths(phi_s: f64, b_u_bps: f64, tx_bps: &[f64]) -> Vec<f64> {
    let n = tx_bps.len();
    let mut out = vec![0.0; n];
    if n == 0 {
        return out;
    }
    let fair = phi_s / n as f64;
    let (mut y, mut n_b) = (0.0, 0usize);
    for (o, &tx) in out.iter_mut().zip(tx_bps) {
        if fair > tx / b_u_bps {
            y += fair - tx / b_u_bps;
            *o = fair;
            n_b += 1;
        }
    }
    for o in out.iter_mut() {
        if *o == 0.0 {
            *o = fair + y / (n - n_b) as f64;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BU: f64 = 1e9;

    /// Figure 21a: a1 has three pairs, a2 one, all with enough demand; a6 receives a1's φ/3 and
    /// a2's φ: it admits a1's whole and bounds a2 at 2φ/3, which a2 then assigns.
    #[test]
    fn figure_21a() {
        let phi = 6.0;
        let mut a1 = [SenderPair::new(1e12, UNBOUND); 3];
        assign(phi, BU, &mut a1);
        assert!(a1.iter().all(|p| (p.phi_s - 2.0).abs() < 1e-12));
        let mut a2 = [SenderPair::new(1e12, UNBOUND)];
        assign(phi, BU, &mut a2);
        assert_eq!(a2[0].phi_s, 6.0);
        let d = admit(phi, &[a1[2].phi_s, a2[0].phi_s]);
        assert_eq!(d[0], UNBOUND);
        assert!((d[1] - 4.0).abs() < 1e-12);
        let mut a2 = [SenderPair::new(1e12, d[1])];
        assign(phi, BU, &mut a2);
        assert!((a2[0].phi_s - 4.0).abs() < 1e-12);
    }

    /// Figure 21b: a1 → a4 needs only ε; a1 keeps it the fair share (line 7) and gives the spare
    /// to a1 → a5 and a1 → a6: (φ + ε') / 2 each, where ε' = φ/3 − ε is the spare.
    #[test]
    fn figure_21b() {
        let phi = 6.0;
        let eps = 0.5;
        let mut a1 = [
            SenderPair::new(eps * BU, UNBOUND),
            SenderPair::new(1e12, UNBOUND),
            SenderPair::new(1e12, UNBOUND),
        ];
        assign(phi, BU, &mut a1);
        assert_eq!(a1[0].phi_s, 2.0);
        let spare = 2.0 - eps;
        assert!((a1[1].phi_s - (2.0 + spare / 2.0)).abs() < 1e-12);
        assert!((a1[2].phi_s - (2.0 + spare / 2.0)).abs() < 1e-12);
    }

    #[test]
    fn multipath_spare_goes_to_the_busy_paths() {
        let t = assign_paths(6.0, BU, &[0.0, 1e12, 1e12]);
        assert_eq!(t[0], 2.0);
        assert_eq!(t[1], 3.0);
        assert_eq!(t[2], 3.0);
        assert_eq!(assign_paths(6.0, BU, &[1e12, 1e12]), vec![3.0, 3.0]);
        assert!(assign_paths(6.0, BU, &[]).is_empty());
    }

    proptest! {
        /// Receiver admission is max-min fair: what each pair gets, min(demand, φ_D), sums to
        /// min(φ^α, Σ demand); no pair bounded below another's allocation unless its own demand
        /// is smaller; every bounded pair gets the same share.
        #[test]
        fn admission_is_max_min(phi_alpha in 1.0f64..100.0, demands in proptest::collection::vec(0.0f64..50.0, 1..12)) {
            let d = admit(phi_alpha, &demands);
            let got: Vec<f64> = demands.iter().zip(&d).map(|(s, d)| s.min(*d)).collect();
            let total: f64 = got.iter().sum();
            let want = phi_alpha.min(demands.iter().sum());
            prop_assert!((total - want).abs() < 1e-9 * want.max(1.0), "{} vs {}", total, want);
            let bounded: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
            if let Some(&s) = bounded.first() {
                prop_assert!(bounded.iter().all(|b| (b - s).abs() < 1e-9));
                // Unbounded pairs asked for less than the share.
                for (dem, x) in demands.iter().zip(&d) {
                    if !x.is_finite() {
                        prop_assert!(*dem <= s + 1e-9);
                    }
                }
            }
        }

        /// Sender assignment conserves the VF's tokens: what the pairs can use — demand for a
        /// demand-bounded pair, the receiver's bound for a receiver-bounded one, the assignment
        /// for the rest — sums to φ^α when at least one pair is unbounded; and no pair gets less
        /// than the fair share unless its receiver bounds it lower.
        #[test]
        fn assignment_conserves_tokens(phi_alpha in 1.0f64..100.0, ps in proptest::collection::vec((0.0f64..40.0, proptest::option::of(0.0f64..40.0)), 1..10)) {
            let mut pairs: Vec<SenderPair> = ps.iter().map(|(d, r)| SenderPair::new(d * BU, r.unwrap_or(UNBOUND))).collect();
            assign(phi_alpha, BU, &mut pairs);
            let fair = phi_alpha / pairs.len() as f64;
            let mut usable = 0.0;
            let mut free = 0;
            for p in &pairs {
                let demand = p.tx_bps / BU;
                prop_assert!(p.phi_s >= fair.min(p.phi_d) - 1e-9, "{:?} fair {}", p, fair);
                if fair > demand {
                    usable += demand;
                } else if p.phi_s == p.phi_d && p.phi_d.is_finite() {
                    usable += p.phi_d;
                } else {
                    usable += p.phi_s;
                    free += 1;
                }
            }
            if free > 0 {
                prop_assert!((usable - phi_alpha).abs() < 1e-6 * phi_alpha, "usable {} of {}", usable, phi_alpha);
            } else {
                prop_assert!(usable <= phi_alpha + 1e-6);
            }
        }

        /// Multipath: every path gets at least the fair share, and the busy paths share the
        /// spare equally.
        #[test]
        fn multipath_conserves(phi in 1.0f64..100.0, tx in proptest::collection::vec(0.0f64..60.0, 1..8)) {
            let txb: Vec<f64> = tx.iter().map(|t| t * BU).collect();
            let out = assign_paths(phi, BU, &txb);
            let fair = phi / tx.len() as f64;
            let idle: f64 = tx.iter().filter(|&&t| t < fair).map(|t| t.max(0.0)).sum();
            let busy: f64 = out.iter().zip(&tx).filter(|(_, t)| **t >= fair).map(|(o, _)| o).sum();
            prop_assert!(out.iter().all(|&o| o >= fair - 1e-9));
            if tx.iter().any(|&t| t >= fair) {
                prop_assert!((idle + busy - phi).abs() < 1e-6 * phi);
            }
        }
    }
}
