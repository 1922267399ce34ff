//! A pacer that enforces both a rate and a window, as HPCC++ asks (`R = W/T` paces, `W` bounds
//! the bytes in flight) and DCQCN uses for its rate alone. Sans-IO: the caller asks when the
//! next packet may go and tells what it sent and what was acknowledged.

/// Why a packet cannot go now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The rate allows it at this time, ns.
    Until(u64),
    /// The window is full: wait for an acknowledgement.
    Window,
}

/// Rate and window for one flow.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    /// Picoseconds per byte at the current rate.
    ps_per_byte: f64,
    /// Bytes allowed in flight; `None` for rate only.
    window: Option<u64>,
    /// Earliest start of the next packet, ps.
    next_ps: u64,
    /// Bytes sent and not acknowledged.
    inflight: u64,
    /// Wire bytes of the last packet sent (a rate change re-times the gap after it).
    last_len: u64,
    /// A packet goes only if at least half of it fits the window ([`Pacer::set_whole_packets`]).
    whole: bool,
    /// A packet sent late keeps the schedule, up to one gap ([`Pacer::set_catch_up`]).
    catch_up: bool,
}

impl Pacer {
    /// A pacer at `rate_bps` with `window` bytes (or none).
    pub fn new(rate_bps: f64, window: Option<u64>) -> Self {
        let mut p = Self {
            ps_per_byte: 0.0,
            window,
            next_ps: 0,
            inflight: 0,
            last_len: 0,
            whole: false,
            catch_up: false,
        };
        p.set_rate(rate_bps);
        p
    }

    /// Change the rate; the next packet's time moves with it: the gap after the last packet
    /// becomes that packet's time at the new rate (the reference's `ChangeRate`).
    pub fn set_rate(&mut self, rate_bps: f64) {
        let ps_per_byte = 8e12 / rate_bps.max(1.0);
        if self.ps_per_byte > 0.0 && self.last_len > 0 {
            let old = (self.last_len as f64 * self.ps_per_byte) as i64;
            let new = (self.last_len as f64 * ps_per_byte) as i64;
            self.next_ps = self.next_ps.saturating_add_signed(new - old);
        }
        self.ps_per_byte = ps_per_byte;
    }

    /// Change the window (`None`: rate only).
    pub fn set_window(&mut self, window: Option<u64>) {
        self.window = window;
    }

    /// With `true`, the window is rounded to the nearest whole packet: a packet may go only if
    /// at least half of it fits (or nothing is in flight, so a window below one packet still
    /// lets one go). µFAB-E's sending window (§4.1: a VM-pair is scheduled when its window
    /// permits) is a share of a link's BDP; rounded up, as HPCC's `IsWinBound` (the default
    /// here: the last packet may cross the window by up to its length), pairs of small windows
    /// take more than their share; rounded down (the packet whole inside), less.
    pub fn set_whole_packets(&mut self, whole: bool) {
        self.whole = whole;
    }

    /// With `true`, a packet that goes later than the rate allowed (the link was busy with
    /// another flow's) does not push the schedule back: the next is due one gap after the time
    /// this one was due, with at most one gap of credit (a token bucket one packet deep). The
    /// default times the next from when this one went, as the HPCC reference does, so every
    /// wait for a shared NIC is lost — a larger share of a fast flow's gap than of a slow
    /// one's.
    pub fn set_catch_up(&mut self, catch_up: bool) {
        self.catch_up = catch_up;
    }

    /// The rate, bits per second.
    pub fn rate_bps(&self) -> f64 {
        8e12 / self.ps_per_byte
    }

    /// The window, if one is enforced.
    pub fn window(&self) -> Option<u64> {
        self.window
    }

    /// Bytes in flight.
    pub fn inflight(&self) -> u64 {
        self.inflight
    }

    /// Whether the next packet may start at `now` (ns): the rate spaces
    /// packets by the wire bytes of those sent before it; the window counts data, and a packet
    /// may go while fewer than the window's bytes are in flight (the reference's `IsWinBound`:
    /// the last one may cross it), so a window smaller than one packet still lets one go.
    pub fn check(&self, now: u64) -> Result<(), Hold> {
        if let Some(w) = self.window
            && self.inflight > 0
            && self.inflight >= w
        {
            return Err(Hold::Window);
        }
        let t = self.next_ps.div_ceil(1000);
        if t > now {
            return Err(Hold::Until(t));
        }
        Ok(())
    }

    /// [`check`](Self::check) for a packet carrying `bytes` of data: with whole packets
    /// ([`set_whole_packets`](Self::set_whole_packets)) at least half of it must also fit the
    /// window.
    pub fn check_packet(&self, now: u64, bytes: u64) -> Result<(), Hold> {
        if self.whole
            && let Some(w) = self.window
            && self.inflight > 0
            && self.inflight + bytes / 2 > w
        {
            return Err(Hold::Window);
        }
        self.check(now)
    }

    /// A packet of `len` wire bytes carrying `bytes` of data started at `now`.
    pub fn on_sent(&mut self, now: u64, len: u64, bytes: u64) {
        let now_ps = now.saturating_mul(1000);
        let gap = (len as f64 * self.ps_per_byte) as u64;
        let start = if self.catch_up && now_ps > self.next_ps {
            // Late (the NIC was sending another flow's packet): the next keeps the schedule,
            // as a token bucket one packet deep would, not the delay.
            self.next_ps.max(now_ps.saturating_sub(gap))
        } else {
            now_ps.max(self.next_ps)
        };
        self.next_ps = start.saturating_add(gap);
        self.last_len = len;
        self.inflight += bytes;
    }

    /// `bytes` more were acknowledged.
    pub fn on_acked(&mut self, bytes: u64) {
        self.inflight = self.inflight.saturating_sub(bytes);
    }

    /// Data bytes in flight now (after a go-back-N rewind, `snd_nxt − snd_una`).
    pub fn set_inflight(&mut self, bytes: u64) {
        self.inflight = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_spaces_packets() {
        let mut p = Pacer::new(8e9, None); // 1 byte per ns
        assert_eq!(p.check(0), Ok(()));
        p.on_sent(0, 1000, 900);
        assert_eq!(p.check(10), Err(Hold::Until(1000)));
        assert_eq!(p.check(1000), Ok(()));
        p.set_rate(16e9);
        p.on_sent(1000, 1000, 900);
        assert_eq!(p.check(1000), Err(Hold::Until(1500)));
        // A rate change re-times the gap after the last packet: at 4 bytes per ns its
        // 1000 bytes take 250 ns, so the next may go at 1250.
        p.set_rate(32e9);
        assert_eq!(p.check(1000), Err(Hold::Until(1250)));
        p.set_rate(8e9);
        assert_eq!(p.check(1000), Err(Hold::Until(2000)));
    }

    #[test]
    fn the_window_bounds_bytes_in_flight() {
        // The window counts data bytes, not headers.
        let mut p = Pacer::new(1e12, Some(2500));
        p.on_sent(0, 1100, 1000);
        p.on_sent(1, 1100, 1000);
        assert_eq!(p.inflight(), 2000);
        // 2000 of 2500 in flight: one more may go (and cross the window), then none.
        assert_eq!(p.check(100), Ok(()));
        p.on_sent(100, 1100, 1000);
        assert_eq!(p.check(200), Err(Hold::Window));
        p.on_acked(1000);
        assert_eq!(p.check(200), Ok(()));
        p.set_inflight(0);
        assert_eq!(p.inflight(), 0);
        // A window below one packet still lets one go.
        let mut tiny = Pacer::new(1e12, Some(10));
        assert_eq!(tiny.check(0), Ok(()));
        tiny.on_sent(0, 1100, 1000);
        assert_eq!(tiny.check(100), Err(Hold::Window));
    }

    /// Catching up (µFAB-E): a packet sent 300 ns late keeps the schedule (the next is due a
    /// gap after this one was due, not after it went); one sent after a long idle gets one
    /// gap of credit, no more. The default loses every delay.
    #[test]
    fn catching_up_keeps_the_schedule_one_gap_deep() {
        // 1 byte per ns: a 1000-byte packet's gap is 1000 ns.
        let mut p = Pacer::new(8e9, None);
        p.set_catch_up(true);
        p.on_sent(0, 1000, 1000);
        assert_eq!(p.check(1000), Ok(()));
        p.on_sent(1300, 1000, 1000);
        assert_eq!(p.check(1999), Err(Hold::Until(2000)), "due at 2000, not 2300");
        // Idle for 10 µs: one gap of credit, so one more may follow at once (a burst of two),
        // then the rate again.
        p.on_sent(12_000, 1000, 1000);
        assert_eq!(p.check(12_000), Ok(()));
        p.on_sent(12_000, 1000, 1000);
        assert_eq!(p.check(12_999), Err(Hold::Until(13_000)));
        // Late by more than the time since 0: the credit stops at 0.
        let mut e = Pacer::new(8e9, None);
        e.set_catch_up(true);
        e.on_sent(500, 1000, 1000);
        assert_eq!(e.check(999), Err(Hold::Until(1000)));
        let mut d = Pacer::new(8e9, None);
        d.on_sent(0, 1000, 1000);
        d.on_sent(1300, 1000, 1000);
        assert_eq!(d.check(2000), Err(Hold::Until(2300)), "the default loses the 300 ns");
    }

    /// Whole packets (µFAB-E): the window rounded to the nearest packet. 2000 of 2400 in
    /// flight, a 1000-byte packet would be 600 over (more than half): it waits where the
    /// default lets it cross; with a window of 2500 it is exactly half over and goes; with
    /// nothing in flight a window below one packet still lets one go.
    #[test]
    fn whole_packets_round_the_window_to_the_nearest_packet() {
        let mut p = Pacer::new(1e12, Some(2400));
        p.set_whole_packets(true);
        p.on_sent(0, 1100, 1000);
        p.on_sent(1, 1100, 1000);
        assert_eq!(p.check(100), Ok(()), "the default's check is unchanged");
        assert_eq!(p.check_packet(100, 1000), Err(Hold::Window));
        assert_eq!(p.check_packet(100, 800), Ok(()));
        p.set_window(Some(2500));
        assert_eq!(p.check_packet(100, 1000), Ok(()));
        p.set_window(Some(2400));
        p.on_acked(1000);
        assert_eq!(p.check_packet(200, 1000), Ok(()));
        let mut tiny = Pacer::new(1e12, Some(10));
        tiny.set_whole_packets(true);
        assert_eq!(tiny.check_packet(0, 1000), Ok(()));
        tiny.on_sent(0, 1100, 1000);
        assert_eq!(tiny.check_packet(100, 1000), Err(Hold::Window));
        // Not whole: as `check`.
        let mut d = Pacer::new(1e12, Some(2500));
        d.on_sent(0, 1100, 2000);
        assert_eq!(d.check_packet(100, 1000), Ok(()));
    }
}
