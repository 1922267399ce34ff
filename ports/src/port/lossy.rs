//! Fault injection: [`Lossy`] wraps any port and loses a share of the frames it receives and of
//! those it is given to send, at random (a seeded xorshift), counting them in
//! [`PortStats::injected`]. What `tc netem loss` does on a kernel without `netem`, for tests and
//! soak runs on our own ports (`[[port]] inject_loss`).

use super::{PortIo, PortStats};
use crate::buf::{Frame, Pool};

/// A coin that comes up "lose" with probability `p`.
#[derive(Debug, Clone, Copy)]
struct Coin {
    state: u64,
    /// `p` scaled to 2^64.
    threshold: u64,
}

impl Coin {
    fn new(p: f64, seed: u64) -> Self {
        let threshold = (p.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
        Self { state: seed | 1, threshold }
    }

    /// xorshift64* (Vigna): small, fast and good enough for loss patterns.
    fn lose(&mut self) -> bool {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) < self.threshold
    }
}

/// A port that loses `p` of its frames each way.
pub struct Lossy<P> {
    inner: P,
    rx: Coin,
    tx: Coin,
    injected: u64,
}

impl<P> Lossy<P> {
    /// `inner`, losing each frame received or sent with probability `p` (0..=1), the draws
    /// seeded by `seed`.
    pub fn new(inner: P, p: f64, seed: u64) -> Self {
        Self {
            inner,
            rx: Coin::new(p, seed),
            tx: Coin::new(p, seed.rotate_left(32) ^ 0x9e37_79b9),
            injected: 0,
        }
    }
}

impl<F: Frame, P: PortIo<F>> PortIo<F> for Lossy<P> {
    fn rx_burst(&mut self, pool: &mut dyn Pool<F>, out: &mut Vec<F>, max: usize) -> usize {
        let start = out.len();
        self.inner.rx_burst(pool, out, max);
        // In order: a lossy link loses frames, it does not reorder them.
        let mut i = start;
        while i < out.len() {
            if self.rx.lose() {
                pool.free(out.remove(i));
                self.injected += 1;
            } else {
                i += 1;
            }
        }
        out.len() - start
    }

    fn tx_burst(&mut self, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>) -> usize {
        // The lost frames are "sent" (taken from the caller); the rest go to the port in order.
        let mut lost = 0;
        let mut i = 0;
        while i < pkts.len() {
            if self.tx.lose() {
                pool.free(pkts.remove(i));
                lost += 1;
            } else {
                i += 1;
            }
        }
        self.injected += lost as u64;
        lost + self.inner.tx_burst(pkts, pool)
    }

    fn stats(&self) -> PortStats {
        PortStats { injected: self.injected, ..self.inner.stats() }
    }

    fn next_rx_time(&self) -> Option<u64> {
        self.inner.next_rx_time()
    }

    fn rx_done(&self) -> bool {
        self.inner.rx_done()
    }

    fn set_time(&mut self, now: u64) {
        self.inner.set_time(now)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }

    fn rx_fd(&self) -> Option<std::os::fd::RawFd> {
        self.inner.rx_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::{HeapPool, PktBuf};
    use crate::port::MemPort;

    #[test]
    fn loses_about_p_each_way_and_counts_it() {
        let n = 20_000usize;
        let mut lossy = Lossy::new(MemPort::<PktBuf>::new(n), 0.05, 7);
        let mut pool = HeapPool::new(1 << 15, 64);
        // Out: 5 % never reach the medium, and are counted.
        let mut sent = 0;
        for _ in 0..n / 32 {
            let mut v: Vec<PktBuf> = (0..32).map(|_| PktBuf::from_bytes(&[1; 60])).collect();
            sent += PortIo::<PktBuf>::tx_burst(&mut lossy, &mut v, &mut pool);
            assert!(v.is_empty());
        }
        let mut out = Vec::new();
        let on_wire = lossy.inner.take_tx(&mut out) as u64;
        let lost = PortIo::<PktBuf>::stats(&lossy).injected;
        assert_eq!(on_wire + lost, sent as u64);
        assert!((800..1200).contains(&lost), "{lost} of {sent}");
        // In: the same.
        for _ in 0..n {
            lossy.inner.push_rx(PktBuf::from_bytes(&[2; 60]));
        }
        let mut got: Vec<PktBuf> = Vec::new();
        while PortIo::<PktBuf>::rx_burst(&mut lossy, &mut pool, &mut got, 64) > 0 || lossy.inner.rx_len() > 0
        {
        }
        let lost_in = PortIo::<PktBuf>::stats(&lossy).injected - lost;
        assert_eq!(got.len() as u64 + lost_in, n as u64);
        assert!((800..1200).contains(&lost_in), "{lost_in}");
    }
}
