//! µFAB-E's rate and window from the core's telemetry (seed `003` §3.3–§3.4): Eqn (1) the
//! proportional share, Eqn (2) the work-conserving rate, Eqn (3) the window, the "qualified"
//! test of §3.3/§3.5, and the in-flight bound of §3.4.

use wire::ufab::{UfabHopRepr, speed_class_bps};

/// The paper's headroom: C_l = η · line rate (§3.3, footnote 5).
pub const ETA: f64 = 0.95;

/// One link of a path as a response reports it, in SI units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkInfo {
    /// W_l: the total window of the pairs on the link, bytes.
    pub w_l: f64,
    /// Φ_l: the total tokens of the pairs on the link.
    pub phi_l: f64,
    /// tx_l: the link's TX rate, b/s.
    pub tx_bps: f64,
    /// q_l: the link's queue, bytes.
    pub q_bytes: f64,
    /// C_l = η × line rate, b/s.
    pub c_bps: f64,
}

impl LinkInfo {
    /// Decode a hop record with headroom `eta`; `None` if its speed class is unknown.
    pub fn from_hop(h: &UfabHopRepr, eta: f64) -> Option<Self> {
        Some(Self {
            w_l: h.window_bytes() as f64,
            phi_l: f64::from(h.phi_l),
            tx_bps: h.tx_bps() as f64,
            q_bytes: h.q_bytes() as f64,
            c_bps: eta * speed_class_bps(h.c_l)? as f64,
        })
    }
}

/// Eqn (1): r^l = φ / Φ_l × C_l, the pair's proportional share of the link (Φ_l at least φ: the
/// pair itself is on the link, even if the switch's filter omitted it).
pub fn share_bps(phi: f64, l: &LinkInfo) -> f64 {
    phi / l.phi_l.max(phi).max(f64::MIN_POSITIVE) * l.c_bps
}

/// r = min over the path of Eqn (1).
pub fn path_share_bps(phi: f64, path: &[LinkInfo]) -> f64 {
    path.iter().map(|l| share_bps(phi, l)).fold(f64::INFINITY, f64::min)
}

/// Eqn (2): R^l = min{φ/Φ_l × R_l × C_l / tx_l, C_l}, given R_l (the total rate of the pairs on
/// the link). An idle link (tx_l = 0) gives C_l.
pub fn rate_bps(phi: f64, r_l: f64, l: &LinkInfo) -> f64 {
    if l.tx_bps <= 0.0 {
        return l.c_bps;
    }
    (phi / l.phi_l.max(phi).max(f64::MIN_POSITIVE) * r_l * l.c_bps / l.tx_bps).min(l.c_bps)
}

/// Eqn (3): w^l = min{φ/Φ_l × W_l × C_l·T / (tx_l·T + q_l), C_l·T}, bytes, with T the pair's
/// base RTT (ns) and `own_w` the window the pair reported on the link (W_l at least that). An
/// idle, empty link gives the cap C_l·T.
pub fn window_bytes(phi: f64, own_w: f64, base_rtt_ns: u64, l: &LinkInfo) -> f64 {
    let t = base_rtt_ns as f64 * 1e-9;
    let bdp = l.c_bps * t / 8.0;
    let load = l.tx_bps * t / 8.0 + l.q_bytes;
    if load <= 0.0 {
        return bdp;
    }
    let w_l = l.w_l.max(own_w);
    (phi / l.phi_l.max(phi).max(f64::MIN_POSITIVE) * w_l * bdp / load).min(bdp)
}

/// w = min over the path of Eqn (3).
pub fn path_window_bytes(phi: f64, own_w: f64, base_rtt_ns: u64, path: &[LinkInfo]) -> f64 {
    path.iter().map(|l| window_bytes(phi, own_w, base_rtt_ns, l)).fold(f64::INFINITY, f64::min)
}

/// "Qualified" (§3.5): every link can give every pair on it its guarantee with this pair added,
/// C_l ≥ (Φ_l + φ) × B_u. `phi_l_excludes_pair`: the reported Φ_l does not count the pair yet
/// (a look probe of φ = 0); otherwise it does and the test is C_l ≥ Φ_l × B_u.
pub fn qualified(phi: f64, b_u_bps: f64, path: &[LinkInfo], phi_l_excludes_pair: bool) -> bool {
    let add = if phi_l_excludes_pair { phi } else { 0.0 };
    path.iter().all(|l| l.c_bps >= (l.phi_l + add) * b_u_bps)
}

/// A path's subscription: the largest (Φ_l + φ) × B_u / C_l over its links (below 1: qualified).
pub fn subscription(phi: f64, b_u_bps: f64, path: &[LinkInfo], phi_l_excludes_pair: bool) -> f64 {
    let add = if phi_l_excludes_pair { phi } else { 0.0 };
    path.iter().map(|l| (l.phi_l + add) * b_u_bps / l.c_bps.max(1.0)).fold(0.0, f64::max)
}

/// The bound of §3.4 on a link's in-flight bytes: 3 C_l T_max.
pub fn inflight_bound_bytes(c_bps: f64, t_max_ns: u64) -> f64 {
    3.0 * c_bps * t_max_ns as f64 * 1e-9 / 8.0
}

/// A swap of two pairs' paths, tested before it is made: pair P (φ_P tokens) on path X,
/// pair Q (φ_Q) on path Y, both to the same peer over paths of the same length. `x` is P's
/// last probe of X (Φ_l with P), `look_y` P's look of Y (Φ_l without P), `probe_y` Q's last
/// probe of Y (Φ_l with Q, and with P where P holds the link too). The subscription the swap
/// leaves (the largest Φ_l·B_u / C_l over both paths) if every link is then qualified
/// (C_l ≥ Φ_l·B_u), else `None`.
///
/// Hop k of X and of Y are the same link when they are shared (both are shortest paths between
/// the same hosts, so a shared link is the same number of hops from the source on both): it is
/// shared when Q's probe exceeds P's look there by about φ_P (P's record on it), and keeps both
/// pairs and its Φ_l. On an unshared hop, Y's link gains φ_P − φ_Q and X's φ_Q − φ_P.
pub fn swap_subscription(
    phi_p: f64,
    phi_q: f64,
    b_u_bps: f64,
    x: &[LinkInfo],
    look_y: &[LinkInfo],
    probe_y: &[LinkInfo],
) -> Option<f64> {
    if x.len() != look_y.len() || x.len() != probe_y.len() {
        return None;
    }
    // Both paths' links as the swap leaves them, judged as one path by `qualified` and
    // `subscription` (Φ_l already final: no pair added).
    let mut after = Vec::with_capacity(2 * x.len());
    for ((lx, ly), py) in x.iter().zip(look_y).zip(probe_y) {
        let shared = py.phi_l - ly.phi_l >= phi_p / 2.0;
        let (phi_x, phi_y) =
            if shared { (lx.phi_l, py.phi_l) } else { (lx.phi_l - phi_p + phi_q, ly.phi_l + phi_p - phi_q) };
        after.push(LinkInfo { phi_l: phi_x, ..*lx });
        after.push(LinkInfo { phi_l: phi_y, ..*ly });
    }
    qualified(0.0, b_u_bps, &after, false).then(|| subscription(0.0, b_u_bps, &after, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(w_l: f64, phi_l: f64, tx_gbps: f64, q: f64) -> LinkInfo {
        LinkInfo { w_l, phi_l, tx_bps: tx_gbps * 1e9, q_bytes: q, c_bps: 9.5e9 }
    }

    /// By hand: φ = 2 of Φ_l = 8 on a 10G link (C_l = 9.5 Gb/s): r^l = 2.375 Gb/s.
    #[test]
    fn eqn1_by_hand() {
        assert!((share_bps(2.0, &link(0.0, 8.0, 0.0, 0.0)) - 2.375e9).abs() < 1.0);
        // The pair not counted (Φ_l < φ): its share is the whole link.
        assert!((share_bps(2.0, &link(0.0, 1.0, 0.0, 0.0)) - 9.5e9).abs() < 1.0);
        let p = [link(0.0, 8.0, 0.0, 0.0), link(0.0, 4.0, 0.0, 0.0)];
        assert!((path_share_bps(2.0, &p) - 2.375e9).abs() < 1.0);
    }

    /// By hand: φ/Φ_l = 1/4, R_l = 4 Gb/s, tx_l = 5 Gb/s, C_l = 9.5 Gb/s:
    /// R^l = 0.25 × 4e9 × 9.5 / 5 = 1.9 Gb/s; capped at C_l when the link is nearly idle.
    #[test]
    fn eqn2_by_hand() {
        assert!((rate_bps(2.0, 4e9, &link(0.0, 8.0, 5.0, 0.0)) - 1.9e9).abs() < 1.0);
        assert_eq!(rate_bps(2.0, 4e9, &link(0.0, 8.0, 0.001, 0.0)), 9.5e9);
        assert_eq!(rate_bps(2.0, 4e9, &link(0.0, 8.0, 0.0, 0.0)), 9.5e9);
    }

    /// By hand, T = 24 µs, C_l = 9.5 Gb/s: C_l·T = 28 500 B. φ/Φ_l = 1/2, W_l = 40 000 B,
    /// tx_l = 9.5 Gb/s (tx_l·T = 28 500 B), q_l = 11 500 B: w^l = 0.5 × 40 000 × 28 500 / 40 000
    /// = 14 250 B. With no queue and the link half used it would be 0.5 × 40 000 × 2 = 40 000,
    /// capped at 28 500.
    #[test]
    fn eqn3_by_hand() {
        let w = window_bytes(3.0, 0.0, 24_000, &link(40_000.0, 6.0, 9.5, 11_500.0));
        assert!((w - 14_250.0).abs() < 1e-6, "{w}");
        let w = window_bytes(3.0, 0.0, 24_000, &link(40_000.0, 6.0, 4.75, 0.0));
        assert!((w - 28_500.0).abs() < 1e-6, "{w}");
        // Idle link: the cap.
        assert!((window_bytes(3.0, 0.0, 24_000, &link(0.0, 6.0, 0.0, 0.0)) - 28_500.0).abs() < 1e-6);
        // The path takes the smallest.
        let p = [link(40_000.0, 6.0, 9.5, 11_500.0), link(40_000.0, 6.0, 4.75, 0.0)];
        assert!((path_window_bytes(3.0, 0.0, 24_000, &p) - 14_250.0).abs() < 1e-6);
    }

    #[test]
    fn qualified_and_subscription() {
        // 9.5 Gb/s, B_u = 1 Gb/s: up to 9 tokens fit.
        let p = [link(0.0, 7.0, 0.0, 0.0)];
        assert!(qualified(2.0, 1e9, &p, true));
        assert!(!qualified(3.0, 1e9, &p, true));
        assert!(qualified(3.0, 1e9, &[link(0.0, 9.0, 0.0, 0.0)], false));
        assert!((subscription(2.0, 1e9, &p, true) - 9.0 / 9.5).abs() < 1e-12);
        assert!((inflight_bound_bytes(9.5e9, 24_000) - 85_500.0).abs() < 1e-6);
    }

    /// §5.2 seed 3 in miniature (tokens of 100 Mb/s, links of 9.5 Gb/s = 95 tokens): two
    /// 5 Gb/s pairs on a ToR uplink (100), the host's 2 Gb/s pair on the other uplink (60);
    /// the last hop, to the peer, is shared. P (50) and Q (20) trading paths leaves 70 and 90.
    #[test]
    fn a_swap_is_tested_link_by_link() {
        let l = |phi: f64| link(0.0, phi, 0.0, 0.0);
        let bu = 1e8;
        let x = [l(100.0), l(60.0), l(80.0)];
        let look_y = [l(60.0), l(40.0), l(30.0)];
        let probe_y = [l(60.0), l(40.0), l(80.0)];
        let s = swap_subscription(50.0, 20.0, bu, &x, &look_y, &probe_y).unwrap();
        // X: 70, 30 (its middle link loses 30), 80 shared; Y: 90, 70, 80 shared.
        assert!((s - 90.0 / 95.0).abs() < 1e-12, "{s}");
        // The same with a 1 Gb/s partner: Y's uplink would carry 60 + 40 = 100.
        assert_eq!(swap_subscription(50.0, 10.0, bu, &x, &look_y, &probe_y), None);
        // A shared link over capacity stays so: no swap helps.
        let probe_y = [l(60.0), l(40.0), l(100.0)];
        let look_y2 = [l(60.0), l(40.0), l(50.0)];
        assert_eq!(
            swap_subscription(50.0, 20.0, bu, &[l(100.0), l(60.0), l(100.0)], &look_y2, &probe_y),
            None
        );
        // Paths of different lengths are not compared.
        assert_eq!(swap_subscription(50.0, 20.0, bu, &x[..2], &look_y, &probe_y), None);
    }

    #[test]
    fn decode_a_hop() {
        let h = UfabHopRepr {
            window: 4,
            phi_l: 3,
            tx_l: 100,
            q_l: 2,
            c_l: wire::ufab::speed_class_of(10_000_000_000),
        };
        let l = LinkInfo::from_hop(&h, ETA).unwrap();
        assert_eq!((l.w_l, l.phi_l, l.tx_bps, l.q_bytes), (1024.0, 3.0, 1e9, 2048.0));
        assert!((l.c_bps - 9.5e9).abs() < 1.0);
        assert!(LinkInfo::from_hop(&UfabHopRepr { c_l: 0, ..h }, ETA).is_none());
    }
}
