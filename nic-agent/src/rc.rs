//! RoCEv2 RC flows between two agents: a sender that moves a message of `size` bytes as RC
//! SEND-Only packets of at most `mtu` bytes, paced by its congestion control, and the receiver
//! that acknowledges them. Both are sans-IO: the lab and the `nic-agent` binary on AF_PACKET
//! drive the same state machines with `(now, event)` and build the frames with [`emit_rc`].
//!
//! The transport is `roce`'s: the sender's PSNs, AckReq, ACK / NAK handling, go-back-N and
//! timeout are a [`roce::Requester`] (with no payload kept: as an RNIC re-reads a resent
//! packet from host memory, the sender names the bytes by offset and the caller supplies them),
//! the receiver's PSN checks, duplicate ACKs and one NAK per gap a [`roce::responder::Responder`].
//! On top of it: the [`Pacer`] enforcing rate and window, and the CC — HPCC++ fed with the INT
//! an ACK reflects, or DCQCN's reaction point fed with CNPs from the receiver's notification
//! point.

use roce::responder::{Delivery, NoMemory, Reply, Responder};
use roce::{Op, QpError, Requester, RequesterConfig, Response, Transport};
use wire::hpcc_int::{IntRepr, NEXT_BTH};
use wire::roce::{AethRepr, BthRepr, NakCode, Opcode, PSN_MASK, RoceExt, Syndrome, psn_diff};
use wire::stack::UdpFlow;

use crate::dcqcn::{CnpGenerator, DcqcnRp};
use crate::hpcc::Hpcc;
use crate::pacer::{Hold, Pacer};

/// The congestion control of one flow.
#[derive(Debug, Clone)]
pub enum FlowCc {
    /// HPCC++: rate and window from the INT reflected in ACKs.
    Hpcc(Box<Hpcc>),
    /// DCQCN's reaction point: rate from CNPs and timers, no window.
    Dcqcn(DcqcnRp),
    /// A fixed rate (bits per second), no window.
    Fixed(f64),
}

/// A sender's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderConfig {
    /// Bytes to send.
    pub size: u64,
    /// Payload bytes per packet.
    pub mtu: usize,
    /// The receiver's QP number.
    pub dest_qp: u32,
    /// The first PSN.
    pub start_psn: u32,
    /// Bytes each packet takes on the wire beyond its payload (headers, INT, ICRC), which the
    /// pacer counts.
    pub overhead: usize,
    /// Most packets outstanding (rounded up to a power of two).
    pub window_packets: u32,
    /// Ask for an ACK every this many packets (1: every packet, as HPCC++ wants).
    pub ack_every: u32,
    /// Resend from the oldest unacknowledged packet after this long without progress.
    pub timeout_ns: u64,
    /// Timeouts or NAK rounds without progress before the flow fails.
    pub retry_limit: u8,
}

/// One packet to send, as [`RcSender::poll_transmit`] decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Its PSN.
    pub psn: u32,
    /// The message offset of its first payload byte.
    pub offset: u64,
    /// Payload bytes.
    pub len: usize,
    /// AckReq.
    pub ack_req: bool,
    /// A go-back-N resend.
    pub resend: bool,
}

/// What the sender can do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transmit {
    /// Send this packet now (the sender counted it as sent).
    Send(Segment),
    /// The pacer's rate holds the next packet until then.
    Until(u64),
    /// Waiting for acknowledgements (window full, or everything sent).
    Blocked,
    /// Every byte is acknowledged.
    Done,
    /// The queue pair failed.
    Failed(QpError),
}

/// Counters of a sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Go-back-N rounds started by a NAK.
    pub nak_rounds: u64,
    /// Go-back-N rounds started by a timeout.
    pub timeouts: u64,
    /// Packets resent.
    pub resent: u64,
}

/// The sending side of one RC flow.
#[derive(Debug, Clone)]
pub struct RcSender {
    cfg: SenderConfig,
    req: Requester,
    pacer: Pacer,
    cc: FlowCc,
    /// Bytes acknowledged.
    una: u64,
    /// The byte after the last one sent (first sends and resends alike): `snd_nxt` in HPCC++.
    sent_to: u64,
    stats: SenderStats,
    /// Send times of the packets posted, by index among those posted (a ring of at most
    /// [`RTT_RING`] slots, each holding its index: a slot overwritten gives no sample), so every
    /// acknowledgement that moves the oldest outstanding packet is an RTT sample of the newest
    /// packet it covers — a NIC's per-ACK RTT — not one timed packet per round trip, which a
    /// short burst sent in less than a round trip would never give.
    sent_times: Box<[(u64, u64)]>,
    /// Packets posted before this index may have been resent: their acknowledgements are
    /// ambiguous and give no sample (Karn's rule).
    timed_from: u64,
    /// When the flow last made progress: its oldest outstanding byte acknowledged, or a packet
    /// sent with nothing outstanding.
    progress_at: u64,
    /// The last RTT sample not yet taken, ns.
    rtt_sample: Option<u64>,
    /// Whether RTT samples are taken at all (someone reads them: Hawkeye's detection agent).
    rtt_sampling: bool,
}

/// Most send times an RTT-sampling sender keeps (its window, if smaller).
pub const RTT_RING: usize = 4096;

impl RcSender {
    /// A sender starting at the CC's initial rate and window.
    pub fn new(cfg: SenderConfig, cc: FlowCc) -> Self {
        let rc = RequesterConfig {
            transport: Transport::Rc,
            window: cfg.window_packets,
            ack_req_every: cfg.ack_every,
            ack_req_after_ns: 0,
            timeout_ns: cfg.timeout_ns,
            max_timeout_ns: 0,
            retry_limit: cfg.retry_limit,
            rnr_retry_limit: 7,
            // The window is a bound (a whole message, in the lab) the CC's own window or rate
            // keeps far from: the ring grows to what is in flight.
            initial_ring: 256,
            min_window: 0,
            max_payload: 0,
        };
        let pacer = match &cc {
            FlowCc::Hpcc(h) => {
                let w = h.window();
                Pacer::new(w.rate_bps, Some(w.bytes as u64))
            }
            FlowCc::Dcqcn(rp) => Pacer::new(rp.rate_bps(), None),
            FlowCc::Fixed(r) => Pacer::new(*r, None),
        };
        let req = Requester::new(rc, cfg.dest_qp, cfg.start_psn);
        Self {
            cfg,
            req,
            pacer,
            cc,
            una: 0,
            sent_to: 0,
            stats: SenderStats::default(),
            sent_times: Box::new([]),
            timed_from: 0,
            progress_at: 0,
            rtt_sample: None,
            rtt_sampling: false,
        }
    }

    /// The settings.
    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }

    /// The congestion control.
    pub fn cc(&self) -> &FlowCc {
        &self.cc
    }

    /// The pacer (rate, window, bytes in flight).
    pub fn pacer(&self) -> &Pacer {
        &self.pacer
    }

    /// Bytes acknowledged.
    pub fn acked(&self) -> u64 {
        self.una
    }

    /// Whether every byte is acknowledged.
    pub fn is_done(&self) -> bool {
        self.una >= self.cfg.size
    }

    /// Once done, give back the retransmit ring (up to a slot per packet of the message): a
    /// host keeps its finished flows for their counters, and a workload has thousands.
    pub fn release(&mut self) {
        if self.is_done() {
            self.req.shrink();
        }
    }

    /// Why the queue pair failed, if it did.
    pub fn error(&self) -> Option<QpError> {
        self.req.error()
    }

    /// Counters.
    pub fn stats(&self) -> SenderStats {
        SenderStats { resent: self.req.stats().retransmitted, ..self.stats }
    }

    /// The message index of the packet with PSN `psn` (within the outstanding window).
    fn index_of(&self, psn: u32) -> u64 {
        let next = self.req.stats().posted;
        next.saturating_sub(psn_diff(self.req.next_psn(), psn).max(0) as u64)
    }

    fn segment_of(&self, psn: u32) -> (u64, usize) {
        let offset = self.index_of(psn) * self.cfg.mtu as u64;
        (offset, (self.cfg.size.saturating_sub(offset)).min(self.cfg.mtu as u64) as usize)
    }

    /// Whether [`poll_transmit`](Self::poll_transmit) would send a packet at `now`, without
    /// sending it: its payload length, or when the pacer lets the next one go (`Some`), or
    /// nothing before an acknowledgement (`None`: window full, done, failed). A scheduler
    /// choosing among flows asks this first (µFAB-E's weighted VF queues).
    pub fn ready(&self, now: u64) -> Result<usize, Option<u64>> {
        if self.req.error().is_some() || self.is_done() {
            return Err(None);
        }
        let psn = match self.req.peek_transmit(now) {
            Some(p) => p,
            None if self.req.retransmitting() => return Err(self.req.poll_timeout()),
            None if self.req.stats().posted * (self.cfg.mtu as u64) < self.cfg.size
                && self.req.can_post() =>
            {
                self.req.next_psn()
            }
            None => return Err(None),
        };
        let len = self.segment_of(psn).1;
        match self.pacer.check_packet(now, len as u64) {
            Ok(()) => Ok(len),
            Err(Hold::Until(t)) => Err(Some(t)),
            Err(Hold::Window) => Err(None),
        }
    }

    /// Set the pacer's rate and window from outside the flow's own CC (µFAB-E, whose window
    /// comes from probes, not from this flow's ACKs): for a flow whose CC is
    /// [`FlowCc::Fixed`].
    ///
    /// The window is rounded to the nearest whole packet ([`Pacer::set_whole_packets`]): a
    /// packet that may cross it by its length gives pairs of small windows more than their
    /// share of a link (a 5 KB window is 20 % more with a 1 KB packet over it, a 13.5 KB one
    /// 7 %). The rate keeps its schedule when a packet goes late ([`Pacer::set_catch_up`]): a
    /// wait for a NIC shared with other pairs is not lost.
    pub fn set_pacing(&mut self, rate_bps: f64, window: Option<u64>) {
        self.pacer.set_whole_packets(true);
        self.pacer.set_catch_up(true);
        self.pacer.set_rate(rate_bps);
        self.pacer.set_window(window);
    }

    /// The next packet to send at `now`, if the transport, the window and the pacer allow one;
    /// a packet returned is counted as sent (build it with [`emit_rc`] and send it).
    pub fn poll_transmit(&mut self, now: u64) -> Transmit {
        if let Some(e) = self.req.error() {
            return Transmit::Failed(e);
        }
        if self.is_done() {
            return Transmit::Done;
        }
        let resend = self.req.peek_transmit(now);
        let psn = match resend {
            Some(p) => p,
            None if self.req.retransmitting() => {
                // A resend waits (RNR): it is due at the requester's deadline.
                return self.req.poll_timeout().map_or(Transmit::Blocked, Transmit::Until);
            }
            None if self.req.stats().posted * (self.cfg.mtu as u64) < self.cfg.size
                && self.req.can_post() =>
            {
                self.req.next_psn()
            }
            None => return Transmit::Blocked,
        };
        let (offset, len) = self.segment_of(psn);
        match self.pacer.check_packet(now, len as u64) {
            Ok(()) => {}
            Err(Hold::Until(t)) => return Transmit::Until(t),
            Err(Hold::Window) => return Transmit::Blocked,
        }
        if self.req.outstanding() == 0 {
            self.progress_at = now;
        }
        let ack_req = if resend.is_some() {
            match self.req.poll_transmit(now) {
                Some(r) => r.ack_req,
                None => return Transmit::Blocked,
            }
        } else {
            let last = offset + len as u64 >= self.cfg.size;
            if self.rtt_sampling && !self.sent_times.is_empty() {
                let i = self.req.stats().posted;
                let n = self.sent_times.len() as u64;
                self.sent_times[(i % n) as usize] = (i, now);
            }
            match self.req.post(now, Op::Send { imm: None }, &[], last) {
                Ok(p) => p.ack_req,
                Err(_) => return Transmit::Blocked,
            }
        };
        self.pacer.on_sent(now, (len + self.cfg.overhead) as u64, len as u64);
        self.sent_to = offset + len as u64;
        Transmit::Send(Segment { psn, offset, len, ack_req, resend: resend.is_some() })
    }

    /// Bytes acknowledged now, from the requester's oldest outstanding packet.
    fn sync_acked(&mut self, now: u64) {
        let una_idx = self.req.stats().posted - u64::from(self.req.outstanding());
        let acked = (una_idx * self.cfg.mtu as u64).min(self.cfg.size);
        if acked > self.una {
            self.pacer.on_acked(acked - self.una);
            self.una = acked;
            self.progress_at = now;
        }
    }

    /// Take RTT samples (per acknowledgement), or not: off by default, as nothing reads them but
    /// Hawkeye's detection agent. Turning it on makes the ring of send times (the control path,
    /// once per flow).
    pub fn set_rtt_sampling(&mut self, on: bool) {
        self.rtt_sampling = on;
        if on && self.sent_times.is_empty() {
            let n = (self.cfg.window_packets as usize).clamp(1, RTT_RING);
            self.sent_times = vec![(u64::MAX, 0); n].into_boxed_slice();
            self.timed_from = self.req.stats().posted;
        }
        if !on {
            self.sent_times = Box::new([]);
        }
    }

    /// The send time of posted packet `i`, if it is still in the ring and was never resent.
    fn sent_at(&self, i: u64) -> Option<u64> {
        if self.sent_times.is_empty() || i < self.timed_from {
            return None;
        }
        let (idx, at) = self.sent_times[(i % self.sent_times.len() as u64) as usize];
        (idx == i).then_some(at)
    }

    /// When the oldest outstanding packet was sent, if it is timed (an RTT sample waits on it).
    pub fn probe_sent(&self) -> Option<u64> {
        if self.req.outstanding() == 0 {
            return None;
        }
        self.sent_at(self.req.stats().posted - u64::from(self.req.outstanding()))
    }

    /// Since when the flow has had bytes outstanding without any acknowledged (`None` with
    /// nothing outstanding): a flow whose path is paused or deadlocked stalls with no packet
    /// timed for an RTT sample (a window-limited sender sends none, and resends are never
    /// timed), and this is how long it has waited.
    pub fn stalled_since(&self) -> Option<u64> {
        (self.req.outstanding() > 0 || self.req.retransmitting()).then_some(self.progress_at)
    }

    /// The last RTT sample (from a packet's send to the acknowledgement covering it), once.
    pub fn take_rtt_sample(&mut self) -> Option<u64> {
        self.rtt_sample.take()
    }

    /// Everything outstanding is known lost (its path failed): resend it from the oldest now,
    /// without waiting for a timeout (µFAB-E moving off a failed link).
    pub fn resend_outstanding(&mut self, now: u64) {
        if !self.is_done() && self.req.outstanding() > 0 {
            self.req.rewind(now);
            self.stats.timeouts += 1;
            self.went_back();
        }
    }

    /// Go back to the oldest unacknowledged byte, with nothing in flight.
    fn went_back(&mut self) {
        // A resend makes the acknowledgements of everything posted so far ambiguous (Karn's
        // rule).
        self.timed_from = self.req.stats().posted;
        self.sent_to = self.una;
        self.pacer.set_inflight(0);
    }

    /// An ACK or NAK for this flow arrived at `now`, with the INT it reflected (HPCC++).
    pub fn handle_ack(
        &mut self,
        now: u64,
        bth: &BthRepr,
        aeth: &AethRepr,
        int: Option<&IntRepr>,
    ) -> Response {
        let r = self.req.handle_packet(now, bth, aeth);
        match r {
            Response::Acked { .. } => {
                let before = self.una;
                self.sync_acked(now);
                let acked = self.req.stats().posted - u64::from(self.req.outstanding());
                if self.una > before
                    && acked > 0
                    && let Some(sent) = self.sent_at(acked - 1)
                {
                    self.rtt_sample = Some(now.saturating_sub(sent));
                }
                if let (FlowCc::Hpcc(hp), Some(i)) = (&mut self.cc, int)
                    && let Some(w) = hp.handle_ack(self.una, self.sent_to, i)
                {
                    self.pacer.set_rate(w.rate_bps);
                    self.pacer.set_window(Some(w.bytes as u64));
                }
            }
            Response::Retransmit { .. } => {
                // Everything before the NAKed PSN is acknowledged; sending resumes from it.
                self.sync_acked(now);
                self.stats.nak_rounds += u64::from(self.req.retransmitting());
                self.went_back();
            }
            Response::RnrWait { .. } => {
                self.sync_acked(now);
                self.went_back();
            }
            Response::Fatal(_) | Response::Ignored => {}
        }
        r
    }

    /// A CNP for this flow arrived at `now` (DCQCN).
    pub fn handle_cnp(&mut self, now: u64) {
        if let FlowCc::Dcqcn(rp) = &mut self.cc {
            rp.handle_cnp(now);
            self.pacer.set_rate(rp.rate_bps());
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has something to do: a DCQCN timer, or the
    /// transport's timeout.
    pub fn poll_timeout(&self) -> Option<u64> {
        let cc = match &self.cc {
            FlowCc::Dcqcn(rp) if !self.is_done() => rp.poll_timeout(),
            _ => None,
        };
        let rto = (!self.req.retransmitting() && !self.is_done()).then(|| self.req.poll_timeout()).flatten();
        match (cc, rto) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Run what is due at `now`: DCQCN's timers, and the timeout (which starts go-back-N from
    /// the oldest unacknowledged packet, or fails the flow after `retry_limit`).
    pub fn handle_timeout(&mut self, now: u64) {
        if let FlowCc::Dcqcn(rp) = &mut self.cc {
            rp.handle_timeout(now);
            self.pacer.set_rate(rp.rate_bps());
        }
        if !self.is_done() && self.req.handle_timeout(now) == Ok(true) {
            self.stats.timeouts += 1;
            self.went_back();
        }
    }
}

/// The acknowledgement to send back: an ACKNOWLEDGE packet's BTH PSN and AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    /// BTH PSN.
    pub psn: u32,
    /// AETH.
    pub aeth: AethRepr,
}

/// What one data packet made the receiver do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received<'a> {
    /// The ACK or NAK to send, if any.
    pub ack: Option<Ack>,
    /// Send a CNP (it was CE-marked and the notification point's interval allows one).
    pub cnp: bool,
    /// Payload delivered in order (empty for a duplicate or a packet after a gap).
    pub delivered: &'a [u8],
    /// This packet completed the message.
    pub completed: bool,
}

/// The receiving side of one RC flow.
#[derive(Debug, Clone)]
pub struct RcReceiver {
    resp: Responder,
    cnp: CnpGenerator,
    size: u64,
    bytes: u64,
}

impl RcReceiver {
    /// A receiver of `size` bytes whose first PSN is `start_psn`, sending at most one CNP per
    /// `cnp_interval_ns`.
    pub fn new(size: u64, start_psn: u32, cnp_interval_ns: u64) -> Self {
        Self {
            resp: Responder::new(Transport::Rc, start_psn),
            cnp: CnpGenerator::new(cnp_interval_ns),
            size,
            bytes: 0,
        }
    }

    /// Bytes delivered in order.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether the whole message arrived.
    pub fn is_complete(&self) -> bool {
        self.bytes >= self.size
    }

    /// The PSN expected next.
    pub fn expected_psn(&self) -> u32 {
        self.resp.expected_psn()
    }

    /// A data packet (its BTH and payload, without pad and ICRC) arrived at `now`; `ce` if it
    /// was CE-marked. Packets that are not SENDs are refused by the responder (NAKed).
    pub fn handle_data<'a>(&mut self, now: u64, bth: &BthRepr, payload: &'a [u8], ce: bool) -> Received<'a> {
        let was_complete = self.is_complete();
        let o = self.resp.handle_packet(
            bth.opcode,
            bth.psn,
            bth.ack_req,
            &RoceExt::default(),
            payload,
            &mut NoMemory,
        );
        let delivered = match o.delivery {
            Delivery::Send { data, .. } => data,
            _ => &[],
        };
        self.bytes += delivered.len() as u64;
        let ack = match o.reply {
            Reply::Ack { psn, msn } => {
                Some(Ack { psn, aeth: AethRepr { syndrome: Syndrome::Ack { credits: 31 }, msn } })
            }
            Reply::Nak { psn, msn, code } => {
                Some(Ack { psn, aeth: AethRepr { syndrome: Syndrome::Nak(code), msn } })
            }
            Reply::AtomicAck { psn, msn, .. } => {
                Some(Ack { psn, aeth: AethRepr { syndrome: Syndrome::Nak(NakCode::InvalidRequest), msn } })
            }
            Reply::None => None,
        };
        let cnp = ce && self.cnp.handle_ce(now);
        Received { ack, cnp, delivered, completed: !was_complete && self.is_complete() }
    }
}

/// Length of an RC frame: `flow`'s headers, the INT header if any, BTH, AETH if any, `tail`
/// bytes (payload and ICRC, or a CNP's body and ICRC).
pub fn rc_frame_len(flow: &UdpFlow, int: Option<&IntRepr>, aeth: bool, tail: usize) -> usize {
    flow.headers_len() + int.map_or(0, IntRepr::buffer_len) + BthRepr::LEN + if aeth { 4 } else { 0 } + tail
}

/// Write an RC frame into `buf`: `flow`'s Ethernet/IPv4/UDP headers (UDP destination 40051
/// with `int`, 4791 without), the INT header (`next` = BTH), `bth`, `aeth`, then `tail` bytes
/// that `fill` writes (payload then the 4-byte ICRC, left zero: [`seal`] computes it). Frames
/// shorter than 60 bytes are padded with zeros. Returns the frame length.
pub fn emit_rc(
    buf: &mut [u8],
    flow: &UdpFlow,
    int: Option<&IntRepr>,
    bth: &BthRepr,
    aeth: Option<&AethRepr>,
    tail: usize,
    fill: impl FnOnce(&mut [u8]),
) -> wire::Result<usize> {
    let il = int.map_or(0, IntRepr::buffer_len);
    let al = if aeth.is_some() { 4 } else { 0 };
    let udp_payload = il + BthRepr::LEN + al + tail;
    let port = if int.is_some() { wire::udp::port::HPCC_INT } else { wire::udp::port::ROCE_V2 };
    let flow = UdpFlow { dst_port: port, ..*flow };
    let total = flow.headers_len() + udp_payload;
    let n = total.max(60);
    let Some(b) = buf.get_mut(..n) else {
        return Err(wire::Error::NoSpace { field: "rc_frame", need: n, have: buf.len() });
    };
    let mut at = flow.emit_headers(udp_payload, b)?;
    if let Some(i) = int {
        IntRepr { next: NEXT_BTH, ..*i }.emit(&mut b[at..])?;
        at += il;
    }
    bth.emit(&mut b[at..])?;
    at += BthRepr::LEN;
    if let Some(a) = aeth {
        a.emit(&mut b[at..])?;
        at += al;
    }
    fill(&mut b[at..at + tail]);
    b[total..].fill(0);
    Ok(n)
}

/// Compute and store the ICRC of an RC frame [`emit_rc`] wrote (`l3`: where its IPv4 header
/// starts), over the RoCEv2 packet as it is without INT (`wire::hpcc_int`): the receiver checks
/// it after taking the INT out.
pub fn seal(frame: &mut [u8], len: usize, l3: usize) -> wire::Result<()> {
    let ip = wire::Ipv4Packet::new_checked(frame.get(l3..len).unwrap_or_default())?;
    let udp = wire::UdpPacket::new_checked(ip.payload())?;
    if udp.dst_port() == wire::udp::port::HPCC_INT {
        let (int, n) = wire::hpcc_int::unwrap(&mut frame[..len], l3)?;
        wire::roce::icrc::fill(&mut frame[l3..n])?;
        wire::hpcc_int::wrap(frame, n, l3, &int)?;
    } else {
        wire::roce::icrc::fill(&mut frame[l3..len])?;
    }
    Ok(())
}

/// The UDP source port of QP `qpn`'s packets: the flow's ECMP entropy, as RoCEv2 NICs derive
/// it from the QP (49152 + the QPN's low 14 bits).
pub const fn udp_src_port(qpn: u32) -> u16 {
    49152 | (qpn as u16 & 0x3fff)
}

/// The BTH of a data packet of QP `dest_qp`.
pub fn data_bth(dest_qp: u32, seg: &Segment) -> BthRepr {
    BthRepr {
        opcode: Opcode::RC_SEND_ONLY,
        pkey: 0xffff,
        dest_qp,
        ack_req: seg.ack_req,
        psn: seg.psn & PSN_MASK,
        pad_count: wire::roce::pad_len(seg.len) as u8,
        ..BthRepr::default()
    }
}

/// The BTH of an ACKNOWLEDGE to QP `dest_qp`.
pub fn ack_bth(dest_qp: u32, ack: &Ack) -> BthRepr {
    BthRepr { opcode: Opcode::RC_ACKNOWLEDGE, pkey: 0xffff, dest_qp, psn: ack.psn, ..BthRepr::default() }
}

/// The BTH of a CNP to QP `dest_qp`.
pub fn cnp_bth(dest_qp: u32) -> BthRepr {
    BthRepr { opcode: Opcode::CNP, pkey: 0xffff, dest_qp, becn: true, ..BthRepr::default() }
}

/// An RC frame as [`parse_rc`] read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RcPacket {
    /// IPv4 source.
    pub src: std::net::Ipv4Addr,
    /// ECN codepoint.
    pub ecn: u8,
    /// Where the IPv4 header starts.
    pub l3: usize,
    /// The INT header in front of the BTH (UDP port 40051).
    pub int: Option<IntRepr>,
    /// BTH.
    pub bth: BthRepr,
    /// AETH, on an ACKNOWLEDGE.
    pub aeth: Option<AethRepr>,
    /// Where the payload lies in the frame (pad and ICRC excluded).
    pub payload: std::ops::Range<usize>,
}

/// Read an Ethernet/IPv4/UDP frame carrying RoCEv2 (port 4791) or INT then RoCEv2 (port
/// 40051). Typed errors for anything else, truncated or inconsistent; the ICRC is not checked
/// here ([`check_icrc`]).
pub fn parse_rc(frame: &[u8]) -> wire::Result<RcPacket> {
    let eth = wire::EthernetFrame::new_checked(frame)?;
    if eth.ethertype() != wire::EtherType::IPV4 {
        return Err(wire::Error::Unsupported {
            field: "ethernet.ethertype",
            value: u64::from(eth.ethertype().0),
        });
    }
    let l3 = frame.len() - eth.payload().len();
    let ip = wire::Ipv4Packet::new_checked(&frame[l3..])?;
    if ip.protocol() != wire::ipv4::protocol::UDP {
        return Err(wire::Error::Unsupported { field: "ipv4.protocol", value: u64::from(ip.protocol()) });
    }
    let l4 = l3 + ip.header_len();
    let udp = wire::UdpPacket::new_checked(ip.payload())?;
    let mut at = l4 + wire::udp::HEADER_LEN;
    let end = l4 + usize::from(udp.len());
    let int = match udp.dst_port() {
        wire::udp::port::HPCC_INT => {
            let i = IntRepr::parse(&frame[at..end])?;
            if i.next != NEXT_BTH {
                return Err(wire::Error::Unsupported { field: "int.next", value: u64::from(i.next) });
            }
            at += i.buffer_len();
            Some(i)
        }
        wire::udp::port::ROCE_V2 => None,
        p => return Err(wire::Error::Unsupported { field: "udp.dst_port", value: u64::from(p) }),
    };
    let bth = BthRepr::parse(&frame[at..end])?;
    at += BthRepr::LEN;
    let aeth = if bth.opcode == Opcode::RC_ACKNOWLEDGE {
        let a = AethRepr::parse(&frame[at..end])?;
        at += 4;
        Some(a)
    } else {
        None
    };
    let tail = usize::from(bth.pad_count) + wire::roce::ICRC_LEN;
    if end < at + tail {
        return Err(wire::Error::Truncated { field: "roce.payload", need: at + tail, have: end });
    }
    Ok(RcPacket { src: ip.src_addr(), ecn: ip.ecn(), l3, int, bth, aeth, payload: at..end - tail })
}

/// Check the ICRC of an RC frame over the RoCEv2 packet without its INT header (as the sender
/// sealed it), using `scratch` for the copy an INT frame needs.
pub fn check_icrc(frame: &[u8], p: &RcPacket, scratch: &mut Vec<u8>) -> wire::Result<()> {
    if p.int.is_none() {
        return wire::roce::icrc::verify(&frame[p.l3..]);
    }
    scratch.clear();
    scratch.extend_from_slice(frame);
    let (_, n) = wire::hpcc_int::unwrap(scratch, p.l3)?;
    wire::roce::icrc::verify(&scratch[p.l3..n])
}

#[cfg(test)]
mod tests;
