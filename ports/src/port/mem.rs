//! In-memory ports.

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded};

use super::{PortIo, PortStats, fill};
use crate::buf::{Frame, Pool};

/// A single-threaded port over two queues of buffers: whoever owns it pushes frames to receive
/// and takes the frames sent. No copy, no allocation: benchmarks and the virtual-time lab use it.
#[derive(Debug)]
pub struct MemPort<F> {
    // Plain vectors rather than deques: bursts move in and out whole, as `append`s (one
    // memcpy of the handles); only a partial receive burst shifts what is left.
    rx: Vec<F>,
    tx: Vec<F>,
    tx_capacity: usize,
    stats: PortStats,
}

impl<F> MemPort<F> {
    /// A port whose transmit side holds at most `tx_capacity` frames.
    pub fn new(tx_capacity: usize) -> Self {
        Self {
            rx: Vec::with_capacity(tx_capacity),
            tx: Vec::with_capacity(tx_capacity),
            tx_capacity,
            stats: PortStats::default(),
        }
    }

    /// Queue a frame for the switch to receive.
    pub fn push_rx(&mut self, f: F) {
        self.rx.push(f);
    }

    /// Queue a burst of frames for the switch to receive, in order; `frames` is left empty.
    pub fn push_rx_burst(&mut self, frames: &mut Vec<F>) {
        self.rx.append(frames);
    }

    /// Move every frame the switch sent, oldest first, to the end of `out`; returns how many.
    pub fn take_tx(&mut self, out: &mut Vec<F>) -> usize {
        let n = self.tx.len();
        out.append(&mut self.tx);
        n
    }

    /// Frames waiting to be received.
    pub fn rx_len(&self) -> usize {
        self.rx.len()
    }

    /// Frames sent and not yet taken.
    pub fn tx_len(&self) -> usize {
        self.tx.len()
    }
}

impl<F: Frame + Send> PortIo<F> for MemPort<F> {
    #[inline]
    fn rx_burst(&mut self, _pool: &mut dyn Pool<F>, out: &mut Vec<F>, max: usize) -> usize {
        let n = max.min(self.rx.len());
        if n == self.rx.len() {
            out.append(&mut self.rx);
        } else {
            out.extend(self.rx.drain(..n));
        }
        self.stats.rx += n as u64;
        n
    }

    #[inline]
    fn tx_burst(&mut self, pkts: &mut Vec<F>, _pool: &mut dyn Pool<F>) -> usize {
        let n = pkts.len().min(self.tx_capacity.saturating_sub(self.tx.len()));
        if n == pkts.len() {
            self.tx.append(pkts);
        } else {
            self.tx.extend(pkts.drain(..n));
        }
        self.stats.tx += n as u64;
        n
    }

    fn stats(&self) -> PortStats {
        self.stats
    }
}

/// A port whose other end, a [`RingPeer`], lives in another thread: frames cross as copies over
/// bounded channels. For driving a running switch from a test.
#[derive(Debug)]
pub struct RingPort {
    rx: Receiver<Vec<u8>>,
    tx: Sender<Vec<u8>>,
    stats: PortStats,
}

/// The far end of a [`RingPort`].
#[derive(Debug, Clone)]
pub struct RingPeer {
    /// Frames for the switch to receive.
    pub to_switch: Sender<Vec<u8>>,
    /// Frames the switch sent.
    pub from_switch: Receiver<Vec<u8>>,
}

impl RingPort {
    /// A port and its peer, each direction holding up to `capacity` frames.
    pub fn pair(capacity: usize) -> (Self, RingPeer) {
        let (to_switch, rx) = bounded(capacity);
        let (tx, from_switch) = bounded(capacity);
        (Self { rx, tx, stats: PortStats::default() }, RingPeer { to_switch, from_switch })
    }
}

impl<F: Frame> PortIo<F> for RingPort {
    fn rx_burst(&mut self, pool: &mut dyn Pool<F>, out: &mut Vec<F>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Ok(data) = self.rx.try_recv() else { break };
            match fill(pool, &data) {
                Some(b) => {
                    out.push(b);
                    n += 1;
                    self.stats.rx += 1;
                }
                None => self.stats.rx_errors += 1,
            }
        }
        n
    }

    fn tx_burst(&mut self, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>) -> usize {
        let mut sent = 0;
        for p in pkts.iter() {
            match self.tx.try_send(p.data().to_vec()) {
                Ok(()) => sent += 1,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => break,
            }
        }
        for p in pkts.drain(..sent) {
            pool.free(p);
        }
        self.stats.tx += sent as u64;
        self.stats.tx_errors += u64::from(!pkts.is_empty());
        sent
    }

    fn stats(&self) -> PortStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::{HeapPool, PktBuf};

    #[test]
    fn mem_port_keeps_order_and_bounds_its_transmit_side() {
        let mut port = MemPort::new(3);
        let mut pool = HeapPool::new(8, 256);
        for i in 0..5 {
            port.push_rx(PktBuf::from_bytes(&[i]));
        }
        let mut got: Vec<PktBuf> = Vec::new();
        assert_eq!(port.rx_burst(&mut pool, &mut got, 2), 2);
        assert_eq!(port.rx_burst(&mut pool, &mut got, 32), 3);
        assert_eq!(got.iter().map(|f| f.data()[0]).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(port.tx_burst(&mut got, &mut pool), 3);
        assert_eq!(got.len(), 2, "the rest stays with the caller");
        let mut sent = Vec::new();
        assert_eq!(port.take_tx(&mut sent), 3);
        assert_eq!(sent.iter().map(|f| f.data()[0]).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(port.stats().tx, 3);
        assert_eq!(port.stats().rx, 5);
    }

    #[test]
    fn ring_copies_both_ways() {
        let (mut port, peer) = RingPort::pair(4);
        let mut pool = HeapPool::new(8, 256);
        peer.to_switch.send(vec![1, 2, 3]).unwrap();
        let mut got: Vec<PktBuf> = Vec::new();
        assert_eq!(port.rx_burst(&mut pool, &mut got, 32), 1);
        assert_eq!(got[0].data(), &[1, 2, 3]);
        let mut out: Vec<PktBuf> = (0..6).map(|i| PktBuf::from_bytes(&[i])).collect();
        assert_eq!(PortIo::<PktBuf>::tx_burst(&mut port, &mut out, &mut pool), 4);
        assert_eq!(out.len(), 2, "the rest stays with the caller");
        assert_eq!(peer.from_switch.try_recv().unwrap(), vec![0]);
    }
}
