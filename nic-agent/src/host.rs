//! [`RcHost`]: a host's RoCEv2 NIC as a frame-level [`Agent`] — its RC flows, senders and
//! receivers, behind one link. The lab's hosts and the `nic-agent` binary on a real port run it
//! unchanged; only the runtime around it differs (the lab's virtual link, or a port, a clock and
//! ARP from `ports::host`).
//!
//! Frames are built and read with [`crate::rc`]: data as RC SEND-Only (INT in front of the BTH
//! when the CC is HPCC++), an ACK or NAK per AckReq and a CNP per CE mark as the receivers'
//! notification point allows. What the NIC sends next: acknowledgements and CNPs first (unless
//! their priority is paused: they ride their own, or the data's), then data, round robin over
//! the flows whose pacer lets a packet go. The link's PFC is the runtime's: it says which priorities are paused.

use std::cell::Cell;
use std::collections::VecDeque;

use hashbrown::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;

use roce::agent::Agent;
use wire::ethernet::EthernetAddress;
use wire::hpcc_int::IntRepr;
use wire::roce::{BthRepr, Opcode};
use wire::stack::UdpFlow;

use crate::rc::{
    Ack, FlowCc, RcPacket, RcReceiver, RcSender, SenderConfig, Transmit, ack_bth, check_icrc, cnp_bth,
    data_bth, emit_rc, parse_rc, rc_frame_len, seal, udp_src_port,
};

/// A host's NIC settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostConfig {
    /// Its address.
    pub ip: Ipv4Addr,
    /// Its MAC.
    pub mac: EthernetAddress,
    /// The next hop's MAC (its gateway, or the peer on one subnet).
    pub gateway_mac: EthernetAddress,
    /// DSCP of data.
    pub data_dscp: u8,
    /// DSCP of ACKs, NAKs and CNPs.
    pub ctrl_dscp: u8,
    /// ECN codepoint of data (ECT(0) where switches mark for DCQCN).
    pub data_ecn: u8,
    /// The PFC priority of data.
    pub data_priority: u8,
    /// The PFC priority of acknowledgements and CNPs: one PFC never pauses (the reference's
    /// `ACK_HIGH_PRIO 1`), or the data's (`ACK_HIGH_PRIO 0`), when a pause holds them too.
    pub ctrl_priority: u8,
    /// INT slots data carries, for HPCC++ (`None`: plain RoCEv2 on UDP 4791).
    pub int_hops: Option<u8>,
    /// The INT slots are compact (8 bytes, `wire::hpcc_int`), not full (16).
    pub int_compact: bool,
    /// Compute the ICRC of every frame sent and check it on every frame received (a real NIC
    /// does; the lab's hosts, which check nothing, leave it zero).
    pub icrc: bool,
    /// Write each data frame's payload: the flow's data, else zeros. Off, a flow with no data
    /// leaves the payload bytes as the buffer held them — for the lab, where nothing reads
    /// them and the ICRC is off: frames keep their exact length and headers, and not writing a
    /// kilobyte per packet keeps the switches' state in the cache (18 % of a k = 8 run).
    pub write_payload: bool,
    /// Least time between two CNPs of one receiver, ns.
    pub cnp_interval_ns: u64,
}

/// A flow to send.
#[derive(Debug, Clone)]
pub struct SendFlow {
    /// The caller's name for it.
    pub id: u64,
    /// The receiver's address.
    pub peer: Ipv4Addr,
    /// Our QP number (its UDP source port comes from it).
    pub local_qp: u32,
    /// The sender's settings (the peer's QP is `dest_qp`).
    pub cfg: SenderConfig,
    /// Its congestion control.
    pub cc: FlowCc,
    /// The message, if its bytes matter (zeros otherwise, as in the lab).
    pub payload: Option<Arc<[u8]>>,
}

/// A flow to receive.
#[derive(Debug, Clone, Copy)]
pub struct RecvFlow {
    /// The caller's name for it.
    pub id: u64,
    /// The sender's address.
    pub peer: Ipv4Addr,
    /// Our QP number.
    pub local_qp: u32,
    /// The sender's QP number.
    pub peer_qp: u32,
    /// Bytes expected.
    pub size: u64,
    /// The first PSN.
    pub start_psn: u32,
    /// Keep the bytes delivered ([`RcHost::take_delivered`]).
    pub keep: bool,
}

/// What the host counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostStats {
    /// ACKs and NAKs received.
    pub acks_rx: u64,
    /// ACKs received carrying INT with at least one hop.
    pub int_acks_rx: u64,
    /// CNPs received.
    pub cnps_rx: u64,
    /// Data packets received carrying INT with at least one hop.
    pub int_data_rx: u64,
    /// ACKs sent.
    pub acks_tx: u64,
    /// NAKs sent.
    pub naks_tx: u64,
    /// CNPs sent.
    pub cnps_tx: u64,
    /// Frames dropped for a bad ICRC.
    pub bad_icrc: u64,
    /// RoCEv2 frames for a QP of ours that made no sense there (an ACK to a receiver).
    pub malformed: u64,
    /// Frames that were not ours (another address or QP, ARP, the kernel's own traffic).
    pub not_ours: u64,
    /// Go-back-N rounds of finished senders (NAK rounds and timeouts).
    pub retransmit_rounds: u64,
}

struct Sending {
    flow: SendFlow,
    tx: RcSender,
    udp: UdpFlow,
    first_send: Option<u64>,
    /// When the acknowledgement of its last byte arrived.
    acked_at: Option<u64>,
}

struct Receiving {
    flow: RecvFlow,
    rx: RcReceiver,
    udp: UdpFlow,
    delivered: Vec<u8>,
    first_at: Option<u64>,
    done_at: Option<u64>,
}

/// An acknowledgement or CNP waiting to be sent.
#[derive(Debug, Clone, Copy)]
enum Ctrl {
    Ack { recv: usize, ack: Ack, int: Option<IntRepr> },
    Cnp { recv: usize },
}

/// A host's NIC running RC flows: see the module.
pub struct RcHost {
    cfg: HostConfig,
    sending: Vec<Sending>,
    /// Senders still running, in start order (round robin).
    active: Vec<usize>,
    /// Each sender's `poll_timeout` as last seen (refreshed whenever the sender is touched), so
    /// the host's own `poll_timeout` need not ask every running sender after every packet.
    deadline: Vec<Option<u64>>,
    /// The earliest of `deadline` over the running senders, unless `next_dirty`.
    next: Cell<Option<u64>>,
    /// `next` must be recomputed: the sender that held it moved later.
    next_dirty: Cell<bool>,
    rr: usize,
    receiving: Vec<Receiving>,
    /// By our QP number and the peer's address: the flow sending from it and the flow
    /// receiving on it.
    by_qp: HashMap<(u32, Ipv4Addr), (Option<usize>, Option<usize>)>,
    /// By the caller's flow ID: the flow sending and the flow receiving.
    by_id: HashMap<u64, (Option<usize>, Option<usize>)>,
    /// Flows received here that are complete.
    completed: usize,
    ctrl: VecDeque<Ctrl>,
    /// The earliest time a paced packet may go, from the last `poll_transmit`.
    until: Option<u64>,
    stats: HostStats,
    scratch: Vec<u8>,
    /// Hawkeye's detection agent, when enabled.
    detector: Option<crate::hawkeye::Detector>,
    /// Per-ACK RTT samples of every sender, in 1 µs buckets, when enabled.
    rtt_log: Option<Vec<u64>>,
}

/// Buckets of the RTT histogram ([`RcHost::enable_rtt_log`]): 1 µs each, the last one holding
/// every sample at or above 65.535 ms.
pub const RTT_BUCKETS: usize = 65536;

impl std::fmt::Debug for RcHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RcHost").field("cfg", &self.cfg).field("stats", &self.stats).finish()
    }
}

impl RcHost {
    /// A host with no flows yet.
    pub fn new(cfg: HostConfig) -> Self {
        Self {
            cfg,
            sending: Vec::new(),
            active: Vec::new(),
            deadline: Vec::new(),
            next: Cell::new(None),
            next_dirty: Cell::new(false),
            rr: 0,
            receiving: Vec::new(),
            by_qp: HashMap::new(),
            by_id: HashMap::new(),
            completed: 0,
            ctrl: VecDeque::new(),
            until: None,
            stats: HostStats::default(),
            scratch: Vec::new(),
            detector: None,
            rtt_log: None,
        }
    }

    /// The settings.
    pub fn config(&self) -> &HostConfig {
        &self.cfg
    }

    /// The counters.
    pub fn stats(&self) -> HostStats {
        self.stats
    }

    fn udp(&self, peer: Ipv4Addr, qp: u32, dscp: u8, ecn: u8) -> UdpFlow {
        UdpFlow {
            dscp,
            ecn,
            ..UdpFlow::host_udp(
                self.cfg.mac,
                self.cfg.gateway_mac,
                SocketAddrV4::new(self.cfg.ip, udp_src_port(qp)),
                SocketAddrV4::new(peer, wire::udp::port::ROCE_V2),
            )
        }
    }

    /// Start sending `flow` at `now`.
    pub fn start_send(&mut self, now: u64, flow: SendFlow) {
        let _ = now;
        let udp = self.udp(flow.peer, flow.local_qp, self.cfg.data_dscp, self.cfg.data_ecn);
        let mut tx = RcSender::new(flow.cfg, flow.cc.clone());
        tx.set_rtt_sampling(self.detector.is_some() || self.rtt_log.is_some());
        let i = self.sending.len();
        self.by_qp.entry((flow.local_qp, flow.peer)).or_default().0 = Some(i);
        self.by_id.entry(flow.id).or_default().0 = Some(i);
        self.active.push(i);
        self.sending.push(Sending { flow, tx, udp, first_send: None, acked_at: None });
        self.deadline.push(None);
        self.refresh(i);
    }

    /// Sender `si` was touched: take its deadline again and keep `next` the earliest of all.
    fn refresh(&mut self, si: usize) {
        let new = self.sending[si].tx.poll_timeout();
        let old = std::mem::replace(&mut self.deadline[si], new);
        if new == old || self.next_dirty.get() {
            return;
        }
        let cur = self.next.get();
        if let Some(n) = new
            && cur.is_none_or(|c| n <= c)
        {
            self.next.set(Some(n));
        } else if old.is_some() && old == cur {
            self.next_dirty.set(true);
        }
    }

    /// Expect `flow`'s data.
    pub fn expect(&mut self, flow: RecvFlow) {
        let udp = self.udp(flow.peer, flow.local_qp, self.cfg.ctrl_dscp, 0);
        let rx = RcReceiver::new(flow.size, flow.start_psn, self.cfg.cnp_interval_ns);
        let i = self.receiving.len();
        self.by_qp.entry((flow.local_qp, flow.peer)).or_default().1 = Some(i);
        self.by_id.entry(flow.id).or_default().1 = Some(i);
        self.receiving.push(Receiving {
            flow,
            rx,
            udp,
            delivered: Vec::new(),
            first_at: None,
            done_at: None,
        });
    }

    fn recv_of(&self, id: u64) -> Option<&Receiving> {
        self.by_id.get(&id).and_then(|&(_, r)| r).map(|r| &self.receiving[r])
    }

    fn send_of(&self, id: u64) -> Option<&Sending> {
        self.by_id.get(&id).and_then(|&(s, _)| s).map(|s| &self.sending[s])
    }

    /// Bytes flow `id` (received here) has delivered in order.
    pub fn received(&self, id: u64) -> Option<u64> {
        self.recv_of(id).map(|r| r.rx.bytes())
    }

    /// When flow `id` (received here) had every byte.
    pub fn completed_at(&self, id: u64) -> Option<u64> {
        self.recv_of(id).and_then(|r| r.done_at)
    }

    /// Bytes flow `id` (sent from here) has had acknowledged.
    pub fn acked(&self, id: u64) -> Option<u64> {
        self.send_of(id).map(|s| s.tx.acked())
    }

    /// When flow `id` (sent from here) had the acknowledgement of its last byte: its
    /// completion as the sender sees it (the HPCC simulator's FCT).
    pub fn acked_at(&self, id: u64) -> Option<u64> {
        self.send_of(id).and_then(|s| s.acked_at)
    }

    /// When flow `id` (received here) had its first data packet.
    pub fn first_data_at(&self, id: u64) -> Option<u64> {
        self.recv_of(id).and_then(|r| r.first_at)
    }

    /// How many flows received here are complete.
    pub fn completed(&self) -> usize {
        self.completed
    }

    /// The bytes flow `id` delivered (kept when it asked), taken out.
    pub fn take_delivered(&mut self, id: u64) -> Vec<u8> {
        match self.by_id.get(&id).and_then(|&(_, r)| r) {
            Some(r) => std::mem::take(&mut self.receiving[r].delivered),
            None => Vec::new(),
        }
    }

    /// The sender of flow `id` (sent from here), while it runs or after.
    pub fn sender(&self, id: u64) -> Option<&RcSender> {
        self.send_of(id).map(|s| &s.tx)
    }

    /// When flow `id` (sent from here) sent its first packet.
    pub fn first_send(&self, id: u64) -> Option<u64> {
        self.send_of(id).and_then(|s| s.first_send)
    }

    /// Whether every flow sent from here is acknowledged (or failed).
    pub fn senders_done(&self) -> bool {
        self.active.is_empty()
    }

    fn on_data(&mut self, now: u64, ri: usize, p: &RcPacket, frame: &[u8]) {
        self.stats.int_data_rx += u64::from(p.int.is_some_and(|i| i.n_hop > 0));
        let r = &mut self.receiving[ri];
        r.first_at.get_or_insert(now);
        let got = r.rx.handle_data(now, &p.bth, &frame[p.payload.clone()], p.ecn == wire::ipv4::ecn::CE);
        if r.flow.keep {
            r.delivered.extend_from_slice(got.delivered);
        }
        if got.completed && r.done_at.is_none() {
            r.done_at = Some(now);
            self.completed += 1;
        }
        let (ack, cnp) = (got.ack, got.cnp);
        if let Some(ack) = ack {
            let int = p.int.map(|i| IntRepr { reflected: true, ..i });
            self.ctrl.push_back(Ctrl::Ack { recv: ri, ack, int });
        }
        if cnp {
            self.ctrl.push_back(Ctrl::Cnp { recv: ri });
        }
    }

    fn on_feedback(&mut self, now: u64, si: usize, p: &RcPacket) {
        let s = &mut self.sending[si];
        if let Some(aeth) = &p.aeth {
            self.stats.acks_rx += 1;
            self.stats.int_acks_rx += u64::from(p.int.is_some_and(|i| i.n_hop > 0));
            s.tx.handle_ack(now, &p.bth, aeth, p.int.as_ref());
            let sample = s.tx.take_rtt_sample();
            if let (Some(log), Some(rtt)) = (&mut self.rtt_log, sample) {
                log[((rtt / 1000) as usize).min(RTT_BUCKETS - 1)] += 1;
            }
            if let Some(d) = &mut self.detector
                && let Some(rtt) = sample
            {
                let victim = wire::hawkeye::FiveTuple {
                    src_ip: self.cfg.ip,
                    dst_ip: s.flow.peer,
                    protocol: 17,
                    src_port: s.udp.src_port,
                    dst_port: s.udp.dst_port,
                };
                d.on_rtt(now, s.flow.id, victim, rtt);
            }
            if s.tx.is_done() && s.acked_at.is_none() {
                s.acked_at = Some(now);
                let st = s.tx.stats();
                self.stats.retransmit_rounds += st.nak_rounds + st.timeouts;
                self.active.retain(|&x| x != si);
                s.tx.release();
            }
        } else if p.bth.opcode == Opcode::CNP {
            self.stats.cnps_rx += 1;
            s.tx.handle_cnp(now);
        }
        self.refresh(si);
    }

    /// Run Hawkeye's detection agent on this host's senders: RTT samples from their ACKs;
    /// polling packets for victims go on the control priority.
    pub fn enable_detection(&mut self, cfg: crate::hawkeye::DetectorConfig) {
        self.detector = Some(crate::hawkeye::Detector::new(cfg));
        for s in &mut self.sending {
            s.tx.set_rtt_sampling(true);
        }
    }

    /// Keep every sender's per-ACK RTT samples in a histogram ([`rtt_histogram`](Self::rtt_histogram)).
    pub fn enable_rtt_log(&mut self) {
        self.rtt_log.get_or_insert_with(|| vec![0; RTT_BUCKETS]);
        for s in &mut self.sending {
            s.tx.set_rtt_sampling(true);
        }
    }

    /// The RTT samples so far: samples per 1 µs bucket, if enabled.
    pub fn rtt_histogram(&self) -> Option<&[u64]> {
        self.rtt_log.as_deref()
    }

    /// The detection agent, if enabled.
    pub fn detector(&self) -> Option<&crate::hawkeye::Detector> {
        self.detector.as_ref()
    }

    /// The detection agent's events since the last call (none when it is off).
    pub fn take_poll_events(&mut self) -> Vec<crate::hawkeye::PollEvent> {
        self.detector.as_mut().map(|d| d.take_events()).unwrap_or_default()
    }

    /// Write control frame `c` into `buf`.
    fn ctrl_frame(&mut self, c: Ctrl, buf: &mut [u8]) -> Option<usize> {
        let (udp, peer_qp) = match c {
            Ctrl::Ack { recv, .. } | Ctrl::Cnp { recv } => {
                (self.receiving[recv].udp, self.receiving[recv].flow.peer_qp)
            }
        };
        let n = match c {
            Ctrl::Ack { ack, int, .. } => {
                match ack.aeth.syndrome {
                    wire::roce::Syndrome::Ack { .. } => self.stats.acks_tx += 1,
                    _ => self.stats.naks_tx += 1,
                }
                let bth = ack_bth(peer_qp, &ack);
                frame(buf, &udp, int.as_ref(), &bth, Some(&ack.aeth), 4, |_| {})?
            }
            Ctrl::Cnp { .. } => {
                self.stats.cnps_tx += 1;
                frame(buf, &udp, None, &cnp_bth(peer_qp), None, wire::roce::CNP_BODY_LEN + 4, |t| t.fill(0))?
            }
        };
        self.seal(buf, n)
    }

    fn seal(&self, buf: &mut [u8], n: usize) -> Option<usize> {
        if self.cfg.icrc {
            seal(buf, n, wire::ethernet::HEADER_LEN).ok()?;
        }
        Some(n)
    }

    /// The next data frame, round robin over the running senders; `until` learns when a paced
    /// one may go.
    fn data_frame(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        let n = self.active.len();
        let mut earliest: Option<u64> = None;
        for k in 0..n {
            let idx = (self.rr + k) % n;
            let si = self.active[idx];
            match self.sending[si].tx.poll_transmit(now) {
                Transmit::Send(seg) => {
                    self.rr = (idx + 1) % n;
                    return self.segment_frame(now, si, seg, buf);
                }
                Transmit::Until(t) => earliest = Some(earliest.map_or(t, |e| e.min(t))),
                Transmit::Done | Transmit::Failed(_) => self.refresh(si),
                Transmit::Blocked => {}
            }
        }
        self.until = earliest;
        None
    }

    /// The frame of sender `si`'s segment `seg`.
    fn segment_frame(
        &mut self,
        now: u64,
        si: usize,
        seg: crate::rc::Segment,
        buf: &mut [u8],
    ) -> Option<usize> {
        let s = &mut self.sending[si];
        s.first_send.get_or_insert(now);
        let bth = data_bth(s.flow.cfg.dest_qp, &seg);
        let compact = self.cfg.int_compact;
        let int = self.cfg.int_hops.map(|n| IntRepr { compact, ..IntRepr::empty(n) });
        let tail = seg.len + usize::from(bth.pad_count) + 4;
        let payload = s.flow.payload.clone();
        let udp = s.udp;
        let write = self.cfg.write_payload;
        let len = frame(buf, &udp, int.as_ref(), &bth, None, tail, |t| match &payload {
            Some(p) => {
                let at = seg.offset as usize;
                t[..seg.len].copy_from_slice(&p[at..at + seg.len]);
                t[seg.len..].fill(0);
            }
            // The pad and the ICRC's place are zeroed all the same.
            None if !write => t[seg.len..].fill(0),
            None => t.fill(0),
        })?;
        // A packet out may start the transport's timeout.
        self.refresh(si);
        self.seal(buf, len)
    }

    /// Set flow `id`'s pacing rate and window from outside its CC (µFAB-E); `false` if no such
    /// flow is sending from here. The window is in bytes on the wire, as the fabric counts
    /// them (µFAB's W_l): the sender's pacer counts payload, so it gets the payload those
    /// frames carry — else every flow would put its headers' worth more on the wire than its
    /// window says, and links would run above their target.
    pub fn set_pacing(&mut self, id: u64, rate_bps: f64, window: Option<u64>) -> bool {
        let Some(si) = self.by_id.get(&id).and_then(|&(s, _)| s) else { return false };
        let c = self.sending[si].tx.config();
        let (mtu, overhead) = (c.mtu as u64, c.overhead as u64);
        let window = window.map(|w| w * mtu / (mtu + overhead).max(1));
        self.sending[si].tx.set_pacing(rate_bps, window);
        true
    }

    /// Flow `id` (sent from here) lost what it has outstanding: resend it now
    /// ([`RcSender::resend_outstanding`]).
    pub fn resend_outstanding(&mut self, id: u64, now: u64) {
        if let Some(si) = self.by_id.get(&id).and_then(|&(s, _)| s) {
            self.sending[si].tx.resend_outstanding(now);
            self.refresh(si);
        }
    }

    /// Whether flow `id` (sent from here) would send a packet at `now`: see
    /// [`RcSender::ready`].
    pub fn ready(&self, id: u64, now: u64) -> Result<usize, Option<u64>> {
        match self.by_id.get(&id).and_then(|&(s, _)| s) {
            Some(si) => self.sending[si].tx.ready(now),
            None => Err(None),
        }
    }

    /// The UDP source port flow `id`'s data carries.
    pub fn data_src_port(&self, id: u64) -> Option<u16> {
        self.send_of(id).map(|s| s.udp.src_port)
    }

    /// The next acknowledgement or CNP to send, if its priority is not paused: what
    /// [`Agent::poll_transmit`] sends before data.
    pub fn poll_control(&mut self, paused: u8, buf: &mut [u8]) -> Option<usize> {
        if paused & (1 << self.cfg.ctrl_priority) != 0 {
            return None;
        }
        let c = self.ctrl.pop_front()?;
        self.ctrl_frame(c, buf)
    }

    /// A data frame of flow `id` at `now`, if it may send one (a caller scheduling the flows
    /// itself, after [`ready`](Self::ready)).
    pub fn poll_data_of(&mut self, now: u64, id: u64, buf: &mut [u8]) -> Option<usize> {
        let si = self.by_id.get(&id).and_then(|&(s, _)| s)?;
        match self.sending[si].tx.poll_transmit(now) {
            Transmit::Send(seg) => self.segment_frame(now, si, seg, buf),
            _ => {
                self.refresh(si);
                None
            }
        }
    }
}

/// An RC frame into `buf` (padded to the Ethernet minimum): see [`emit_rc`].
fn frame(
    buf: &mut [u8],
    udp: &UdpFlow,
    int: Option<&IntRepr>,
    bth: &BthRepr,
    aeth: Option<&wire::roce::AethRepr>,
    tail: usize,
    fill: impl FnOnce(&mut [u8]),
) -> Option<usize> {
    let n = rc_frame_len(udp, int, aeth.is_some(), tail).max(wire::ethernet::MIN_FRAME_LEN);
    emit_rc(buf.get_mut(..n)?, udp, int, bth, aeth, tail, fill).ok()
}

impl Agent for RcHost {
    fn handle_packet(&mut self, now: u64, frame: &[u8]) {
        let Ok(p) = parse_rc(frame) else {
            self.stats.not_ours += 1;
            return;
        };
        let (send, recv) = self.by_qp.get(&(p.bth.dest_qp, p.src)).copied().unwrap_or_default();
        if send.is_none() && recv.is_none() {
            self.stats.not_ours += 1;
            return;
        }
        if self.cfg.icrc && check_icrc(frame, &p, &mut self.scratch).is_err() {
            self.stats.bad_icrc += 1;
            return;
        }
        match (p.bth.opcode, send, recv) {
            (Opcode::RC_SEND_ONLY, _, Some(ri)) if p.aeth.is_none() => self.on_data(now, ri, &p, frame),
            (Opcode::RC_ACKNOWLEDGE | Opcode::CNP, Some(si), _) => self.on_feedback(now, si, &p),
            _ => self.stats.malformed += 1,
        }
    }

    fn handle_timeout(&mut self, now: u64) {
        for k in 0..self.active.len() {
            let si = self.active[k];
            if self.deadline[si].is_some_and(|t| t <= now) {
                self.sending[si].tx.handle_timeout(now);
                self.refresh(si);
            }
        }
        // The detection agent: a timed packet unacknowledged past the threshold, or, with none
        // timed, a flow stalled that long.
        if let Some(d) = &mut self.detector {
            for &si in &self.active {
                let s = &self.sending[si];
                if let Some(sent) = s.tx.probe_sent().or_else(|| s.tx.stalled_since())
                    && d.next_check(s.flow.id, sent).is_some_and(|t| t <= now)
                {
                    let victim = wire::hawkeye::FiveTuple {
                        src_ip: self.cfg.ip,
                        dst_ip: s.flow.peer,
                        protocol: 17,
                        src_port: s.udp.src_port,
                        dst_port: s.udp.dst_port,
                    };
                    d.on_overdue(now, s.flow.id, victim, now - sent);
                }
            }
        }
    }

    fn poll_transmit(&mut self, now: u64, paused: u8, buf: &mut [u8]) -> Option<usize> {
        if paused & (1 << self.cfg.ctrl_priority) == 0 {
            if let Some(d) = &mut self.detector
                && d.has_transmit()
                && let Some(n) = d.poll_transmit(self.cfg.mac, self.cfg.gateway_mac, buf)
            {
                return Some(n);
            }
            if let Some(c) = self.ctrl.pop_front() {
                return self.ctrl_frame(c, buf);
            }
        }
        self.until = None;
        if paused & (1 << self.cfg.data_priority) != 0 {
            return None;
        }
        self.data_frame(now, buf)
    }

    fn poll_timeout(&self) -> Option<u64> {
        if self.next_dirty.get() {
            self.next.set(self.active.iter().filter_map(|&si| self.deadline[si]).min());
            self.next_dirty.set(false);
        }
        // The detection agent looks at each timed packet when it passes the threshold.
        let detect = self.detector.as_ref().and_then(|d| {
            self.active
                .iter()
                .filter_map(|&si| {
                    let s = &self.sending[si];
                    d.next_check(s.flow.id, s.tx.probe_sent().or_else(|| s.tx.stalled_since())?)
                })
                .min()
        });
        self.next.get().into_iter().chain(self.until).chain(detect).min()
    }
}
