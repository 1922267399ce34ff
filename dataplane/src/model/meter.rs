//! Two-rate three-colour markers (RFC 2698).

use super::{Decl, DeclKind, MeterUnit, Resources};

/// A packet's colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Color {
    /// Within the committed rate.
    Green,
    /// Above the committed rate, within the peak rate.
    Yellow,
    /// Above the peak rate.
    Red,
}

/// The four parameters of RFC 2698: committed and peak information rates (bytes per second)
/// and burst sizes (bytes). PIR must be at least CIR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MeterConfig {
    /// Committed information rate, bytes per second.
    pub cir: u64,
    /// Committed burst size, bytes.
    pub cbs: u64,
    /// Peak information rate, bytes per second.
    pub pir: u64,
    /// Peak burst size, bytes.
    pub pbs: u64,
}

impl MeterConfig {
    /// Rates given in bits per second.
    pub const fn from_bps(cir_bps: u64, cbs: u64, pir_bps: u64, pbs: u64) -> Self {
        Self { cir: cir_bps / 8, cbs, pir: pir_bps / 8, pbs }
    }
}

/// Token counts are kept in byte·nanoseconds-per-second units (bytes × 10^9), so refilling
/// `elapsed_ns × rate` needs no division.
const SCALE: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    cfg: MeterConfig,
    tc: u64,
    tp: u64,
    last_ns: u64,
}

/// `size` independent trTCMs.
#[derive(Debug, Clone)]
pub struct MeterArray {
    meters: Vec<Bucket>,
}

impl MeterArray {
    /// Declare `size` meters counting in `unit`, each unconfigured (everything red) until
    /// [`configure`](Self::configure)d.
    pub fn new(res: &mut Resources, name: &'static str, size: usize, unit: MeterUnit) -> Self {
        res.declare(Decl {
            name,
            size,
            kind: DeclKind::Meter(unit),
            bytes: size * std::mem::size_of::<Bucket>(),
            detail: "RFC 2698".into(),
        });
        Self { meters: vec![Bucket::default(); size] }
    }

    /// Set meter `i`'s parameters; both buckets start full (RFC 2698 §3). `false` if out of
    /// range.
    pub fn configure(&mut self, i: usize, cfg: MeterConfig, now: u64) -> bool {
        match self.meters.get_mut(i) {
            Some(m) => {
                *m = Bucket {
                    cfg,
                    tc: cfg.cbs.saturating_mul(SCALE),
                    tp: cfg.pbs.saturating_mul(SCALE),
                    last_ns: now,
                };
                true
            }
            None => false,
        }
    }

    /// Change meter `i`'s parameters at `now` keeping its tokens (refilled to `now` at the old
    /// rates, then capped by the new bursts): a rate change, where
    /// [`configure`](Self::configure) starts over. `false` if out of range.
    pub fn set_rates(&mut self, i: usize, cfg: MeterConfig, now: u64) -> bool {
        let Some(m) = self.meters.get_mut(i) else { return false };
        let elapsed = now.saturating_sub(m.last_ns);
        m.last_ns = m.last_ns.max(now);
        m.tc = m.tc.saturating_add(elapsed.saturating_mul(m.cfg.cir)).min(cfg.cbs.saturating_mul(SCALE));
        m.tp = m.tp.saturating_add(elapsed.saturating_mul(m.cfg.pir)).min(cfg.pbs.saturating_mul(SCALE));
        m.cfg = cfg;
        true
    }

    /// Meter `i`'s parameters (out of range: all zero).
    pub fn config(&self, i: usize) -> MeterConfig {
        self.meters.get(i).map(|m| m.cfg).unwrap_or_default()
    }

    /// Meter a packet of `bytes` at `now` in colour-blind mode.
    #[inline]
    pub fn execute(&mut self, i: usize, now: u64, bytes: u32) -> Color {
        self.execute_aware(i, now, bytes, Color::Green)
    }

    /// Meter a packet pre-coloured `color` (colour-aware mode; green is colour-blind). An index
    /// out of range is red.
    #[inline]
    pub fn execute_aware(&mut self, i: usize, now: u64, bytes: u32, color: Color) -> Color {
        let Some(m) = self.meters.get_mut(i) else { return Color::Red };
        let elapsed = now.saturating_sub(m.last_ns);
        m.last_ns = m.last_ns.max(now);
        m.tc = m.tc.saturating_add(elapsed.saturating_mul(m.cfg.cir)).min(m.cfg.cbs.saturating_mul(SCALE));
        m.tp = m.tp.saturating_add(elapsed.saturating_mul(m.cfg.pir)).min(m.cfg.pbs.saturating_mul(SCALE));
        let b = u64::from(bytes) * SCALE;
        if color == Color::Red || m.tp < b {
            Color::Red
        } else if color == Color::Yellow || m.tc < b {
            m.tp -= b;
            Color::Yellow
        } else {
            m.tp -= b;
            m.tc -= b;
            Color::Green
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_change_keeps_the_tokens_and_applies_from_then_on() {
        let mut res = Resources::default();
        let mut m = MeterArray::new(&mut res, "m", 1, MeterUnit::Bytes);
        let full = MeterConfig { cir: 1000, cbs: 100, pir: 2000, pbs: 100 };
        m.configure(0, full, 0);
        // Empty both buckets, then halve the rates: 50 ms refills 25 bytes at the new CIR.
        assert_eq!(m.execute(0, 0, 100), Color::Green);
        assert!(m.set_rates(0, MeterConfig { cir: 500, pir: 1000, ..full }, 0));
        assert_eq!(m.config(0).cir, 500);
        assert_eq!(m.execute(0, 50_000_000, 25), Color::Green);
        assert_eq!(m.execute(0, 50_000_000, 1), Color::Yellow);
        assert!(!m.set_rates(1, full, 0));
    }

    /// RFC 2698 §3 written out with real numbers, token buckets refilled continuously.
    struct Reference {
        cfg: MeterConfig,
        tc: f64,
        tp: f64,
        last: u64,
    }

    impl Reference {
        fn execute(&mut self, now: u64, b: u32, color: Color) -> Color {
            let dt = (now - self.last) as f64 / 1e9;
            self.last = now;
            self.tc = (self.tc + dt * self.cfg.cir as f64).min(self.cfg.cbs as f64);
            self.tp = (self.tp + dt * self.cfg.pir as f64).min(self.cfg.pbs as f64);
            let b = f64::from(b);
            if color == Color::Red || self.tp - b < 0.0 {
                Color::Red
            } else if color == Color::Yellow || self.tc - b < 0.0 {
                self.tp -= b;
                Color::Yellow
            } else {
                self.tp -= b;
                self.tc -= b;
                Color::Green
            }
        }
    }

    #[test]
    fn colours_follow_rfc_2698() {
        let cfg = MeterConfig { cir: 1_000_000, cbs: 3000, pir: 2_000_000, pbs: 6000 };
        let mut r = Resources::new();
        let mut m = MeterArray::new(&mut r, "m", 1, MeterUnit::Bytes);
        m.configure(0, cfg, 0);
        let mut reference = Reference { cfg, tc: 3000.0, tp: 6000.0, last: 0 };
        let mut x = 12345u64;
        let mut now = 0u64;
        let mut seen = [0usize; 3];
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Offered load around 1.5 MB/s: between CIR and PIR on average, with bursts.
            now += x % 1_300_000;
            let len = 64 + (x >> 20) as u32 % 1437;
            let pre =
                [Color::Green, Color::Green, Color::Green, Color::Yellow, Color::Red][(x >> 40) as usize % 5];
            let got = m.execute_aware(0, now, len, pre);
            assert_eq!(got, reference.execute(now, len, pre));
            seen[got as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 1000), "all three colours occur: {seen:?}");
    }

    #[test]
    fn steady_rates() {
        // 1500-byte packets every 1 ms (1.5 MB/s) against CIR 1 MB/s (CBS two packets), PIR 2 MB/s:
        // two thirds green, one third yellow, no red.
        let mut r = Resources::new();
        let mut m = MeterArray::new(&mut r, "m", 2, MeterUnit::Bytes);
        m.configure(0, MeterConfig { cir: 1_000_000, cbs: 3000, pir: 2_000_000, pbs: 3000 }, 0);
        let mut counts = [0usize; 3];
        for k in 1..=30_000u64 {
            counts[m.execute(0, k * 1_000_000, 1500) as usize] += 1;
        }
        assert_eq!(counts[2], 0);
        let green = counts[0] as f64 / 30_000.0;
        assert!((green - 2.0 / 3.0).abs() < 0.01, "green share {green}");
        assert_eq!(m.execute(5, 0, 64), Color::Red);
        // An unconfigured meter passes nothing.
        assert_eq!(m.execute(1, 1_000_000_000, 64), Color::Red);
    }
}
