//! The requester side of an RC or UC queue pair (IBTA Vol. 1 §9.7.4, §9.7.5.1–2).
//!
//! [`Requester`] assigns PSNs, keeps (RC) every outstanding request in a bounded ring so it can
//! be rebuilt with its original PSN, asks for an acknowledgement every K packets, and reacts to
//! what comes back by AETH syndrome:
//!
//! | response | what happens |
//! |---|---|
//! | ACK / atomic ACK for PSN p | everything up to p is complete (ACKs coalesce) |
//! | NAK PSN sequence error for PSN p | everything before p is complete; go back N: resend from p |
//! | RNR NAK for PSN p | everything before p is complete; wait the RNR timer, then resend from p |
//! | NAK remote access / invalid request / remote operational error | fatal: the QP goes to error |
//! | nothing for the retransmission timeout while requests are outstanding | resend from the oldest (retry count) |
//!
//! The retransmission timeout is `timeout_ns`, fixed, unless `max_timeout_ns` is above it: then
//! it adapts to the measured round trip (RFC 6298's estimator over acknowledged AckReq packets,
//! Karn's rule: none from resent ones) within `[timeout_ns, max_timeout_ns]`, and doubles on
//! each consecutive timeout up to `max_timeout_ns` — where a NIC's local ACK timeout is one
//! fixed IBTA value (4.096 µs × 2^n), a software requester whose peer's latency moves with its
//! load needs the estimate, or a loaded peer turns every burst into a go-back-N storm.
//!
//! Go-back-N resends everything outstanding after a lost packet, so with `W` requests in flight
//! and a loss rate `p` one loss costs `W` packets, and at `p·W ≳ 1` the resends themselves are
//! lost and the QP spends its time resending (measured: 5 % loss at 100 k writes/s and a
//! window of 16 384 sent 1.3 M packets for 19 k writes, and starved the translator's receive
//! path). With [`RequesterConfig::min_window`] above 0 the requests in flight are bounded by a
//! congestion window as TCP Reno bounds its segments (RFC 5681): a sequence NAK halves it, a
//! timeout drops it to `min_window`, at most once per window of requests (NewReno's recovery
//! point, RFC 6582); acknowledgements grow it by one per request below the threshold and by one
//! per window above it, up to `window`. Requests posted past it are refused (`WindowFull`), as
//! past the window, and a resend run stops at its end until acknowledgements move it (the last
//! packet it allows asks for one), so after a timeout `min_window` packets go, not everything
//! outstanding.
//!
//! Resending is a cursor the caller drains with [`Requester::poll_transmit`]; requests posted
//! while it runs are not sent at once ([`Post::send_now`] is false) but by the cursor, in PSN
//! order, so the responder never sees them ahead of a gap. UC keeps nothing and gets no
//! responses: [`Requester::post`] only numbers packets.
//!
//! Everything is driven by `now` (ns) passed in; nothing here reads a clock.

use wire::roce::{AethRepr, BthRepr, NakCode, Opcode, PSN_MASK, Syndrome, psn_add, psn_diff, rnr_timer_ns};

/// Largest payload one request may carry (its bytes are kept for retransmission).
pub const MAX_INLINE: usize = 256;

/// RC (acknowledged) or UC (unacknowledged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// Reliable connection.
    #[default]
    Rc,
    /// Unreliable connection.
    Uc,
}

/// Requester settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequesterConfig {
    /// RC or UC.
    pub transport: Transport,
    /// Most requests outstanding (sent, not acknowledged); a power of two up to 2^22.
    pub window: u32,
    /// Ask for an acknowledgement at least every this many packets.
    pub ack_req_every: u32,
    /// Ask for one also when the last request that asked went this long ago (0: never): a
    /// request after a quiet spell asks itself, where it would otherwise be followed by an ack
    /// probe (a zero-length WRITE) — half the packets at rates where requests are sparse.
    pub ack_req_after_ns: u64,
    /// Resend from the oldest outstanding request after this long without progress (the
    /// smallest, and the first, timeout when it adapts).
    pub timeout_ns: u64,
    /// Largest adaptive timeout; at or below `timeout_ns` the timeout is fixed.
    pub max_timeout_ns: u64,
    /// Timeouts and sequence-error rounds without progress before the QP gives up (IB: 0..=7).
    pub retry_limit: u8,
    /// RNR NAKs without progress before the QP gives up; 7 means never (as in IB).
    pub rnr_retry_limit: u8,
    /// Retransmit-ring slots to start with (a power of two; 0: the whole window at once). A
    /// ring smaller than the window doubles when the requests outstanding fill it — an
    /// allocation now and then, for requesters whose window is a bound rarely reached (a
    /// simulated flow's whole message) and which should not hold memory for it.
    pub initial_ring: u32,
    /// Smallest congestion window after a loss (module docs); 0: no congestion window, the
    /// outstanding requests are bounded by `window` alone.
    pub min_window: u32,
    /// Largest payload a request on this QP carries (at most [`MAX_INLINE`]): the retransmit
    /// ring keeps this many bytes per request, so a QP of 8-byte writes keeps a window of
    /// thousands in a few cache-friendly kilobytes rather than megabytes.
    pub max_payload: usize,
}

impl Default for RequesterConfig {
    fn default() -> Self {
        Self {
            transport: Transport::Rc,
            window: 4096,
            ack_req_every: 32,
            ack_req_after_ns: 0,
            timeout_ns: 1_000_000,
            max_timeout_ns: 0,
            retry_limit: 7,
            rnr_retry_limit: 7,
            initial_ring: 0,
            min_window: 0,
            max_payload: MAX_INLINE,
        }
    }
}

/// The operation of one request. Every request is one packet (an *Only* opcode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// RDMA WRITE of the payload to `va`; with `imm`, WRITE with Immediate.
    Write {
        /// Remote address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data.
        imm: Option<u32>,
    },
    /// SEND of the payload; with `imm`, SEND with Immediate.
    Send {
        /// Immediate data.
        imm: Option<u32>,
    },
    /// Atomic fetch-and-add of `add` to the 64-bit word at `va`.
    FetchAdd {
        /// Remote address (8-byte aligned).
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Addend.
        add: u64,
    },
    /// Atomic compare-and-swap of the 64-bit word at `va`.
    CmpSwap {
        /// Remote address (8-byte aligned).
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Expected value.
        compare: u64,
        /// New value.
        swap: u64,
    },
}

impl Op {
    /// The BTH opcode of this operation on `transport`.
    pub const fn opcode(&self, transport: Transport) -> Opcode {
        let uc = matches!(transport, Transport::Uc);
        match (self, uc) {
            (Op::Write { imm: None, .. }, false) => Opcode::RC_RDMA_WRITE_ONLY,
            (Op::Write { imm: Some(_), .. }, false) => Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            (Op::Write { imm: None, .. }, true) => Opcode::UC_RDMA_WRITE_ONLY,
            (Op::Write { imm: Some(_), .. }, true) => Opcode::UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            (Op::Send { imm: None }, false) => Opcode::RC_SEND_ONLY,
            (Op::Send { imm: Some(_) }, false) => Opcode::RC_SEND_ONLY_WITH_IMMEDIATE,
            (Op::Send { imm: None }, true) => Opcode::UC_SEND_ONLY,
            (Op::Send { imm: Some(_) }, true) => Opcode::UC_SEND_ONLY_WITH_IMMEDIATE,
            (Op::FetchAdd { .. }, _) => Opcode::RC_FETCH_ADD,
            (Op::CmpSwap { .. }, _) => Opcode::RC_COMPARE_SWAP,
        }
    }

    /// Whether this is an atomic (RC only, answered by an atomic ACK).
    pub const fn is_atomic(&self) -> bool {
        matches!(self, Op::FetchAdd { .. } | Op::CmpSwap { .. })
    }
}

/// Why a request could not be posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// The outstanding window is full: wait for acknowledgements.
    #[error("outstanding window full")]
    WindowFull,
    /// The QP is in the error state.
    #[error("queue pair in error: {0}")]
    QpError(QpError),
    /// The payload is larger than [`RequesterConfig::max_payload`], or an atomic carries one.
    #[error("payload of {0} bytes not allowed for this operation")]
    Payload(usize),
    /// Atomics need RC.
    #[error("atomics need a reliable connection")]
    AtomicOnUc,
}

/// Why a QP went to the error state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QpError {
    /// The responder NAKed with a fatal code.
    #[error("responder NAK: {0:?}")]
    Nak(NakCode),
    /// Too many timeouts or sequence errors without progress.
    #[error("transport retry count exceeded")]
    RetryExceeded,
    /// Too many RNR NAKs without progress.
    #[error("RNR retry count exceeded")]
    RnrRetryExceeded,
}

/// What [`Requester::post`] decided for a new request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Post {
    /// Its PSN.
    pub psn: u32,
    /// Set AckReq in its BTH.
    pub ack_req: bool,
    /// Send it now; `false` while a retransmission runs — the cursor sends it in order.
    pub send_now: bool,
}

/// What a response did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response {
    /// Requests completed (possibly none, for a duplicate ACK); `atomics` of them were atomics.
    Acked {
        /// Requests completed by this response.
        completed: u32,
        /// How many of them were atomics.
        atomics: u32,
    },
    /// Requests before the NAKed PSN completed; resending from it has started.
    Retransmit {
        /// Requests completed by this response.
        completed: u32,
        /// The first PSN resent.
        from: u32,
    },
    /// RNR NAK: resending from `from` at `until`.
    RnrWait {
        /// The first PSN to resend.
        from: u32,
        /// When.
        until: u64,
    },
    /// The QP is now in error.
    Fatal(QpError),
    /// Not for any outstanding request (older than the oldest, beyond the newest, or while in
    /// error): ignored.
    Ignored,
}

/// One outstanding request, kept for retransmission; its payload is at the same index of
/// [`Requester::data`] (stride [`Requester::stride`]).
#[derive(Debug, Clone, Copy)]
struct Slot {
    op: Op,
    len: u16,
    /// When what it carries was first posted (a replay keeps the original time).
    born: u64,
}

impl Default for Slot {
    fn default() -> Self {
        Self { op: Op::Send { imm: None }, len: 0, born: 0 }
    }
}

/// A request to resend, as [`Requester::poll_transmit`] returns it.
#[derive(Debug, Clone, Copy)]
pub struct Resend<'a> {
    /// Its original PSN.
    pub psn: u32,
    /// The operation.
    pub op: Op,
    /// The payload.
    pub payload: &'a [u8],
    /// Set AckReq (on the last of a resent run).
    pub ack_req: bool,
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequesterStats {
    /// Requests posted.
    pub posted: u64,
    /// Requests completed by an acknowledgement.
    pub completed: u64,
    /// Packets resent.
    pub retransmitted: u64,
    /// PSN-sequence-error NAKs received.
    pub seq_naks: u64,
    /// RNR NAKs received.
    pub rnr_naks: u64,
    /// Timeouts.
    pub timeouts: u64,
    /// Round-trip samples taken (adaptive timeout).
    pub rtt_samples: u64,
    /// Congestion-window cuts (a sequence NAK or a timeout, once per window).
    pub window_cuts: u64,
    /// Responses ignored (stale, beyond the window, or while in error).
    pub ignored: u64,
}

/// The requester side of one RC or UC queue pair.
#[derive(Debug, Clone)]
pub struct Requester {
    cfg: RequesterConfig,
    dest_qp: u32,
    /// Next PSN to assign.
    next_psn: u32,
    /// Oldest unacknowledged PSN.
    una: u32,
    /// PSN of the last packet sent with AckReq, and when.
    last_ack_req: u32,
    last_ack_req_at: u64,
    /// The first outstanding packet sent without AckReq after the last one with it, and when.
    unrequested_since: Option<u64>,
    ring: Vec<Slot>,
    /// Payload bytes of the ring's requests, `stride` per slot.
    data: Vec<u8>,
    /// `max_payload` rounded up to 8.
    stride: usize,
    /// Retransmission cursor: the next PSN to resend, if resending.
    rtx: Option<u32>,
    /// Resending waits until this time (RNR).
    rtx_at: u64,
    last_progress: u64,
    retries: u8,
    rnr_retries: u8,
    error: Option<QpError>,
    /// An AckReq packet being timed: (PSN, sent at); cleared by a resend (Karn).
    rtt_probe: Option<(u32, u64)>,
    /// Smoothed round trip and its variation (ns), once sampled.
    srtt: Option<(u64, u64)>,
    /// The retransmission timeout in force (ns).
    rto: u64,
    /// Congestion window (requests), its slow-start threshold, the acknowledged requests
    /// towards its next additive step, and the recovery point: no second cut until `una`
    /// passes it.
    cwnd: u32,
    ssthresh: u32,
    cwnd_acc: u32,
    recover: u32,
    stats: RequesterStats,
}

impl Requester {
    /// A requester towards `dest_qp` whose first PSN is `start_psn` (the PSN it announced in its
    /// CM REQ). `cfg.window` is rounded up to a power of two.
    pub fn new(cfg: RequesterConfig, dest_qp: u32, start_psn: u32) -> Self {
        let window = cfg.window.clamp(1, 1 << 22).next_power_of_two();
        let max_payload = cfg.max_payload.min(MAX_INLINE);
        let stride = max_payload.next_multiple_of(8);
        let (ring, data) = match cfg.transport {
            Transport::Rc => {
                let n = match cfg.initial_ring {
                    0 => window,
                    r => r.clamp(1, window).next_power_of_two(),
                } as usize;
                (vec![Slot::default(); n], vec![0; n * stride])
            }
            Transport::Uc => (Vec::new(), Vec::new()),
        };
        let start = start_psn & PSN_MASK;
        let min_window = cfg.min_window.min(window);
        Self {
            cfg: RequesterConfig {
                window,
                ack_req_every: cfg.ack_req_every.max(1),
                max_payload,
                min_window,
                ..cfg
            },
            dest_qp: dest_qp & PSN_MASK,
            next_psn: start,
            una: start,
            last_ack_req: psn_add(start, PSN_MASK),
            last_ack_req_at: 0,
            unrequested_since: None,
            ring,
            data,
            stride,
            rtx: None,
            rtx_at: 0,
            last_progress: 0,
            retries: 0,
            rnr_retries: 0,
            error: None,
            rtt_probe: None,
            srtt: None,
            rto: cfg.timeout_ns,
            cwnd: window,
            ssthresh: window,
            cwnd_acc: 0,
            recover: start,
            stats: RequesterStats::default(),
        }
    }

    /// Most requests that may be outstanding now: the window, or the congestion window below it.
    #[inline(always)]
    fn limit(&self) -> u32 {
        self.cwnd.min(self.cfg.window)
    }

    /// The congestion window (requests; `window` when there is none or it is fully open).
    pub fn congestion_window(&self) -> u32 {
        self.limit()
    }

    /// A loss signal (a sequence NAK, or with `timeout` a timeout): cut the congestion window,
    /// once per window of requests.
    fn cut_window(&mut self, timeout: bool) {
        if self.cfg.min_window == 0 || psn_diff(self.una, self.recover) < 0 {
            return;
        }
        let min = self.cfg.min_window;
        self.ssthresh = (self.outstanding() / 2).max(min);
        self.cwnd = if timeout { min } else { self.ssthresh };
        self.cwnd_acc = 0;
        self.recover = self.next_psn;
        self.stats.window_cuts += 1;
    }

    /// `n` requests acknowledged: open the congestion window (slow start below the threshold,
    /// one per window above it).
    #[inline(always)]
    fn grow_window(&mut self, n: u32) {
        if self.cwnd >= self.cfg.window {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + n).min(self.ssthresh);
        } else {
            self.cwnd_acc += n;
            if self.cwnd_acc >= self.cwnd {
                self.cwnd_acc -= self.cwnd;
                self.cwnd += 1;
            }
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &RequesterConfig {
        &self.cfg
    }

    /// The destination QP number.
    pub fn dest_qp(&self) -> u32 {
        self.dest_qp
    }

    /// The PSN the next new request gets.
    pub fn next_psn(&self) -> u32 {
        self.next_psn
    }

    /// Requests sent and not yet acknowledged (always 0 on UC).
    pub fn outstanding(&self) -> u32 {
        match self.cfg.transport {
            Transport::Rc => psn_diff(self.next_psn, self.una) as u32,
            Transport::Uc => 0,
        }
    }

    /// How many more requests would be accepted now (0 in error).
    #[inline(always)]
    pub fn room(&self) -> u32 {
        if self.error.is_some() { 0 } else { self.limit().saturating_sub(self.outstanding()) }
    }

    /// Double the retransmit ring, each outstanding request moving to its slot in the new one.
    #[cold]
    fn grow_ring(&mut self) {
        let n = self.ring.len() * 2;
        let (mut ring, mut data) = (vec![Slot::default(); n], vec![0u8; n * self.stride]);
        for k in 0..self.outstanding() {
            let psn = psn_add(self.una, k) as usize;
            let (from, to) = (psn & (self.ring.len() - 1), psn & (n - 1));
            ring[to] = self.ring[from];
            data[to * self.stride..(to + 1) * self.stride]
                .copy_from_slice(&self.data[from * self.stride..(from + 1) * self.stride]);
        }
        self.ring = ring;
        self.data = data;
    }

    /// Give back the retransmit ring once nothing is outstanding (a finished flow whose state
    /// is kept for its counters): the window becomes 1, so the requester still works, slowly.
    /// Returns whether it shrank.
    pub fn shrink(&mut self) -> bool {
        if self.outstanding() > 0 || self.cfg.transport == Transport::Uc || self.cfg.window == 1 {
            return false;
        }
        self.ring = vec![Slot::default(); 1];
        self.data = vec![0; self.stride];
        self.cfg.window = 1;
        self.cfg.initial_ring = 1;
        self.cfg.min_window = self.cfg.min_window.min(1);
        self.cwnd = 1;
        self.ssthresh = 1;
        true
    }

    /// Whether a new request would be accepted now.
    pub fn can_post(&self) -> bool {
        self.error.is_none() && self.outstanding() < self.limit()
    }

    /// The error that stopped the QP, if any.
    pub fn error(&self) -> Option<QpError> {
        self.error
    }

    /// Counters.
    pub fn stats(&self) -> RequesterStats {
        self.stats
    }

    /// Whether a retransmission is under way (its cursor has packets to give).
    pub fn retransmitting(&self) -> bool {
        self.rtx.is_some()
    }

    /// Number a new request and (RC) keep it for retransmission.
    #[inline(always)]
    pub fn post(&mut self, now: u64, op: Op, payload: &[u8], force_ack_req: bool) -> Result<Post, PostError> {
        if let Some(e) = self.error {
            return Err(PostError::QpError(e));
        }
        if payload.len() > self.cfg.max_payload || (op.is_atomic() && !payload.is_empty()) {
            return Err(PostError::Payload(payload.len()));
        }
        let psn = self.next_psn;
        if self.cfg.transport == Transport::Uc {
            if op.is_atomic() {
                return Err(PostError::AtomicOnUc);
            }
            self.next_psn = psn_add(psn, 1);
            self.stats.posted += 1;
            return Ok(Post { psn, ack_req: false, send_now: true });
        }
        let outstanding = self.outstanding();
        if outstanding >= self.limit() {
            return Err(PostError::WindowFull);
        }
        if outstanding as usize >= self.ring.len() {
            self.grow_ring();
        }
        let i = psn as usize & (self.ring.len() - 1);
        self.ring[i] = Slot { op, len: payload.len() as u16, born: now };
        wire::copy_short(&mut self.data[i * self.stride..(i + 1) * self.stride], payload);
        if outstanding == 0 {
            // Nothing was outstanding: the timeout counts from now.
            self.last_progress = now;
        }
        self.next_psn = psn_add(psn, 1);
        self.stats.posted += 1;
        let send_now = self.rtx.is_none();
        // Ask for an ACK every K packets, for atomics (answered anyway), when the window is
        // nearly full, and when the caller wants one (the end of a burst).
        let ack_req = send_now
            && (force_ack_req
                || op.is_atomic()
                || psn_diff(psn, self.last_ack_req) >= self.cfg.ack_req_every as i32
                || outstanding + self.cfg.ack_req_every >= self.limit()
                || (self.cfg.ack_req_after_ns > 0
                    && now.saturating_sub(self.last_ack_req_at) >= self.cfg.ack_req_after_ns));
        if ack_req {
            self.last_ack_req = psn;
            self.last_ack_req_at = now;
            self.unrequested_since = None;
            if self.rtt_probe.is_none() && self.adaptive() {
                self.rtt_probe = Some((psn, now));
            }
        } else if send_now && self.unrequested_since.is_none() {
            self.unrequested_since = Some(now);
        }
        Ok(Post { psn, ack_req, send_now })
    }

    /// Whether packets have been outstanding without any AckReq after them for `delay` ns: the
    /// caller should then send something with AckReq (a zero-length WRITE, say) so that the
    /// tail of a burst is acknowledged.
    pub fn ack_probe_due(&self, now: u64, delay: u64) -> bool {
        self.error.is_none()
            && self.rtx.is_none()
            && self.unrequested_since.is_some_and(|t| now.saturating_sub(t) >= delay)
            && self.outstanding() > 0
    }

    /// Handle an acknowledgement (opcode ACKNOWLEDGE or ATOMIC ACKNOWLEDGE) for this QP.
    pub fn handle_packet(&mut self, now: u64, bth: &BthRepr, aeth: &AethRepr) -> Response {
        if self.error.is_some() || self.cfg.transport == Transport::Uc {
            self.stats.ignored += 1;
            return Response::Ignored;
        }
        let psn = bth.psn & PSN_MASK;
        // p must name an outstanding PSN (or, for a duplicate ACK, the one just before una).
        let ahead = psn_diff(psn, self.una);
        let outstanding = self.outstanding() as i32;
        match aeth.syndrome {
            Syndrome::Ack { .. } => {
                if !(-1..outstanding).contains(&ahead) {
                    self.stats.ignored += 1;
                    return Response::Ignored;
                }
                let (completed, atomics) = self.complete_through(now, psn_add(psn, 1));
                Response::Acked { completed, atomics }
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                if !(0..=outstanding).contains(&ahead) {
                    self.stats.ignored += 1;
                    return Response::Ignored;
                }
                self.stats.seq_naks += 1;
                let (completed, _) = self.complete_through(now, psn);
                if completed == 0 {
                    // A NAK that moved nothing forward counts as a retry.
                    if let Some(e) = self.count_retry() {
                        return Response::Fatal(e);
                    }
                }
                if self.outstanding() > 0 {
                    self.cut_window(false);
                    self.start_rtx(now, psn);
                }
                Response::Retransmit { completed, from: psn }
            }
            Syndrome::RnrNak { timer } => {
                if !(0..outstanding).contains(&ahead) {
                    self.stats.ignored += 1;
                    return Response::Ignored;
                }
                self.stats.rnr_naks += 1;
                let (completed, _) = self.complete_through(now, psn);
                if completed == 0 && self.cfg.rnr_retry_limit < 7 {
                    self.rnr_retries += 1;
                    if self.rnr_retries > self.cfg.rnr_retry_limit {
                        return Response::Fatal(self.fail(QpError::RnrRetryExceeded));
                    }
                }
                let until = now + rnr_timer_ns(timer);
                self.start_rtx(until, psn);
                Response::RnrWait { from: psn, until }
            }
            Syndrome::Nak(code) => Response::Fatal(self.fail(QpError::Nak(code))),
            Syndrome::Reserved(_) => {
                self.stats.ignored += 1;
                Response::Ignored
            }
        }
    }

    /// Complete every request before `end`; returns (completed, atomics among them).
    fn complete_through(&mut self, now: u64, end: u32) -> (u32, u32) {
        let n = psn_diff(end, self.una).max(0) as u32;
        if n == 0 {
            return (0, 0);
        }
        let mut atomics = 0;
        for i in 0..n {
            let psn = psn_add(self.una, i);
            atomics += u32::from(self.ring[psn as usize & (self.ring.len() - 1)].op.is_atomic());
        }
        if let Some((p, sent)) = self.rtt_probe
            && psn_diff(end, p) > 0
        {
            self.rtt_probe = None;
            self.sample_rtt(now.saturating_sub(sent));
        }
        self.una = end;
        if let Some(c) = self.rtx
            && psn_diff(c, end) < 0
        {
            self.rtx = Some(end);
        }
        if self.outstanding() == 0 {
            self.rtx = None;
            self.unrequested_since = None;
        }
        self.last_progress = now;
        self.retries = 0;
        self.rnr_retries = 0;
        self.rto = self.base_rto();
        self.grow_window(n);
        self.stats.completed += u64::from(n);
        (n, atomics)
    }

    fn count_retry(&mut self) -> Option<QpError> {
        self.retries += 1;
        (self.retries > self.cfg.retry_limit).then(|| self.fail(QpError::RetryExceeded))
    }

    fn fail(&mut self, e: QpError) -> QpError {
        self.error = Some(e);
        self.rtx = None;
        e
    }

    fn adaptive(&self) -> bool {
        self.cfg.max_timeout_ns > self.cfg.timeout_ns
    }

    /// RFC 6298 §2: SRTT, RTTVAR and RTO = SRTT + 4·RTTVAR, within the configured bounds.
    fn sample_rtt(&mut self, r: u64) {
        self.stats.rtt_samples += 1;
        self.srtt = Some(match self.srtt {
            None => (r, r / 2),
            Some((srtt, var)) => ((7 * srtt + r) / 8, (3 * var + srtt.abs_diff(r)) / 4),
        });
        self.rto = self.base_rto();
    }

    /// The timeout the estimate gives, before any doubling.
    fn base_rto(&self) -> u64 {
        match self.srtt {
            Some((srtt, var)) if self.adaptive() => {
                (srtt + 4 * var).clamp(self.cfg.timeout_ns, self.cfg.max_timeout_ns)
            }
            _ => self.cfg.timeout_ns,
        }
    }

    /// The retransmission timeout in force (ns).
    pub fn timeout_ns(&self) -> u64 {
        self.rto
    }

    /// The smoothed round trip (ns), once measured (adaptive timeout only).
    pub fn srtt_ns(&self) -> Option<u64> {
        self.srtt.map(|(s, _)| s)
    }

    fn start_rtx(&mut self, at: u64, from: u32) {
        self.rtt_probe = None;
        self.rtx = Some(from);
        self.rtx_at = at;
        self.last_progress = at;
    }

    /// When the oldest outstanding request was first posted (RC; `None` with nothing
    /// outstanding): nothing this requester still holds is older.
    pub fn oldest_born(&self) -> Option<u64> {
        (self.cfg.transport == Transport::Rc && self.outstanding() > 0)
            .then(|| self.ring[self.una as usize & (self.ring.len() - 1)].born)
    }

    /// Date the request just posted back to `born` (a request posted again on a new
    /// connection: what it carries is as old as the first post).
    pub fn backdate_last(&mut self, born: u64) {
        if self.cfg.transport == Transport::Rc && self.outstanding() > 0 {
            let i = psn_add(self.next_psn, wire::roce::PSN_MASK) as usize & (self.ring.len() - 1);
            self.ring[i].born = self.ring[i].born.min(born);
        }
    }

    /// The outstanding requests, oldest first (RC): what a reset would throw away, for the owner
    /// to post again on a new connection or count as lost.
    pub fn outstanding_requests(&self) -> impl Iterator<Item = (Op, &[u8])> + '_ {
        let n = match self.cfg.transport {
            Transport::Rc => self.outstanding(),
            Transport::Uc => 0,
        };
        (0..n).map(move |k| {
            let i = psn_add(self.una, k) as usize & (self.ring.len() - 1);
            let slot = self.ring[i];
            (slot.op, &self.data[i * self.stride..][..usize::from(slot.len)])
        })
    }

    /// Send every outstanding request again from the oldest, at `now`, through the cursor
    /// (requests posted to a new connection and not yet sent: a replay). Not a retry: the retry
    /// count is unchanged.
    pub fn rewind(&mut self, now: u64) {
        if self.error.is_none() && self.outstanding() > 0 {
            self.start_rtx(now, self.una);
        }
    }

    /// Check the timeout at `now`: with requests outstanding and no progress for
    /// `timeout_ns`, resending from the oldest starts (or the QP fails after `retry_limit`).
    /// Returns whether a resend started.
    pub fn handle_timeout(&mut self, now: u64) -> Result<bool, QpError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.cfg.transport == Transport::Uc
            || self.outstanding() == 0
            || (self.rtx.is_some() && !self.rtx_blocked())
        {
            return Ok(false);
        }
        if now.saturating_sub(self.last_progress) < self.rto {
            return Ok(false);
        }
        self.stats.timeouts += 1;
        if let Some(e) = self.count_retry() {
            return Err(e);
        }
        if self.adaptive() {
            // Back off: each consecutive timeout doubles the next (RFC 6298 §5.5).
            self.rto = (self.rto * 2).min(self.cfg.max_timeout_ns);
        }
        self.cut_window(true);
        self.start_rtx(now, self.una);
        Ok(true)
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has something to do, if ever (for a virtual clock).
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.error.is_some() || self.cfg.transport == Transport::Uc {
            return None;
        }
        if self.rtx.is_some() && !self.rtx_blocked() {
            return Some(self.rtx_at);
        }
        (self.outstanding() > 0).then_some(self.last_progress + self.rto)
    }

    /// Where a resend run stops for now: the newest request, or the end of the congestion
    /// window (a run that reaches it waits for acknowledgements to move it).
    #[inline(always)]
    fn rtx_end(&self) -> u32 {
        if psn_diff(self.next_psn, self.una) as u32 > self.limit() {
            psn_add(self.una, self.limit())
        } else {
            self.next_psn
        }
    }

    /// Whether the resend cursor waits for the congestion window to open.
    fn rtx_blocked(&self) -> bool {
        self.rtx.is_some_and(|c| psn_diff(self.rtx_end(), c) <= 0 && psn_diff(self.next_psn, c) > 0)
    }

    /// The PSN [`poll_transmit`](Self::poll_transmit) would resend at `now`, without
    /// moving the cursor: a paced sender asks its pacer first.
    pub fn peek_transmit(&self, now: u64) -> Option<u32> {
        let psn = self.rtx?;
        (now >= self.rtx_at && psn_diff(self.rtx_end(), psn) > 0).then_some(psn)
    }

    /// The next request to resend at `now`, if a retransmission is under way and due. The last
    /// of the run asks for an ACK.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Resend<'_>> {
        let psn = self.rtx?;
        if now < self.rtx_at {
            return None;
        }
        if psn_diff(self.next_psn, psn) <= 0 {
            self.rtx = None;
            return None;
        }
        let end = self.rtx_end();
        if psn_diff(end, psn) <= 0 {
            // The congestion window is full of resent requests: wait for their ACKs.
            return None;
        }
        let next = psn_add(psn, 1);
        let last = next == self.next_psn;
        // The last the window allows asks for an ACK too: it is what lets the run go on.
        let window_end = next == end;
        let every = psn_diff(psn, self.last_ack_req) >= self.cfg.ack_req_every as i32;
        let ack_req = last || every || window_end;
        if ack_req {
            self.last_ack_req = psn;
        }
        self.rtx = if last { None } else { Some(next) };
        if last {
            self.unrequested_since = None;
        }
        self.stats.retransmitted += 1;
        let i = psn as usize & (self.ring.len() - 1);
        let slot = self.ring[i];
        let payload = &self.data[i * self.stride..][..usize::from(slot.len)];
        Some(Resend { psn, op: slot.op, payload, ack_req })
    }
}

#[cfg(test)]
mod tests;
