//! The soft-RNIC: a userspace RoCEv2 responder on a UDP socket (port 4791), for labs without
//! an RDMA NIC. It does what the NIC of a DTA collector does — and nothing a CPU would do per
//! report: checks the ICRC (unless told not to, like a NIC whose ICRC check is disabled), the
//! QPN, the PSN order (a duplicate is ACKed again, a gap gets one PSN-sequence NAK), the R_Key
//! and the bounds; applies RDMA WRITE, WRITE with Immediate and FETCH_ADD to registered memory;
//! ACKs when AckReq is set; runs the IB CM server; and after each connection SENDs the 16-byte
//! metadata (VA low, VA high, length, R_Key) as the reference collector does.
//!
//! The protocol work is [`roce::endpoint::Endpoint`] (sans-IO); this module is its runtime:
//! batched receive (`recvmmsg` and UDP GRO, by `quinn-udp`), the IPv4/UDP header the ICRC covers
//! rebuilt in front of each datagram in place (the socket does not hand it over: the
//! identification is taken as 0 and DF as set, what our translator and its `udp` port send;
//! [`crate::rnic_port`] checks the header exactly as it arrived), and the replies gathered and
//! sent with GSO, each segment's ICRC computed for the identification the kernel gives it.

use std::collections::HashMap;
use std::io::{self, IoSliceMut};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use quinn_udp::{RecvMeta, Transmit, UdpSocketState};
use roce::cm::{CmConfig, Metadata};
use roce::endpoint::{Endpoint, Event, Listen};
use serde::Serialize;
use wire::ethernet::EthernetAddress;
use wire::roce::{RoceRepr, icrc};
use wire::stack::{RoceStack, UdpFlow};

use crate::config::CollectorConfig;
use crate::memory::Registered;
use crate::store::Stores;

/// How often the endpoint's timers run.
const TIMER_PERIOD_NS: u64 = 100_000;
/// Datagrams per receive batch.
const BATCH: usize = 32;
/// Largest datagram taken.
const MAX_DATAGRAM: usize = 4096;
/// Room before each datagram for the Ethernet, IPv4 and UDP headers rebuilt for the ICRC.
const HEADERS: usize = 14 + 20 + 8;
/// Datagrams one receive buffer holds (UDP GRO), after its `HEADERS` of headroom.
const GRO: usize = 16;
/// The Ethernet header rebuilt for the ICRC is never sent nor covered: any MAC will do.
const NO_MAC: EthernetAddress = EthernetAddress([0; 6]);

/// Counters, shared with whoever reports them.
#[derive(Debug, Default)]
pub struct RnicStats {
    /// Datagrams received.
    pub rx_packets: AtomicU64,
    /// Bytes received.
    pub rx_bytes: AtomicU64,
    /// RDMA WRITEs (with or without Immediate) applied.
    pub writes: AtomicU64,
    /// Atomics applied.
    pub atomics: AtomicU64,
    /// WRITEs with Immediate delivered as notifications.
    pub immediates: AtomicU64,
    /// Notifications dropped: a subscriber's queue was full.
    pub notifications_dropped: AtomicU64,
    /// Dropped: wrong ICRC.
    pub bad_icrc: AtomicU64,
    /// Dropped: not RoCEv2 we can parse (truncated, bad opcode, inconsistent lengths).
    pub malformed: AtomicU64,
    /// Dropped silently: unknown destination QP.
    pub unknown_qp: AtomicU64,
    /// NAKed remote-access error: wrong R_Key, outside the region, no permission.
    pub access_errors: AtomicU64,
    /// NAKed or ignored: ahead of the expected PSN.
    pub out_of_sequence: AtomicU64,
    /// ACKed again: already executed.
    pub duplicates: AtomicU64,
    /// NAKed invalid request.
    pub invalid: AtomicU64,
    /// CM MADs that could not be parsed.
    pub bad_mads: AtomicU64,
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Replies sent (ACKs, NAKs, CM, metadata).
    pub tx_packets: AtomicU64,
    /// Replies not sent: no frame of the peer's was ever seen to learn its MAC from, or the
    /// reply did not fit (frame ports only).
    pub unroutable: AtomicU64,
    /// CM: REQs refused (REJ, no resources) with every slot held by an established connection.
    pub cm_over_limit: AtomicU64,
    /// CM: half-open connections dropped for a newer REQ at a limit.
    pub cm_half_open_evicted: AtomicU64,
    /// CM: half-open connections replaced by a newer REQ for the same peer QP.
    pub cm_half_open_replaced: AtomicU64,
    /// CM: half-open connections whose RTU never came.
    pub cm_half_open_expired: AtomicU64,
    /// CM: DREQs that named no connection of their sender (ignored).
    pub cm_bad_dreqs: AtomicU64,
}

/// A snapshot of [`RnicStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[allow(missing_docs)]
pub struct StatsSnapshot {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub writes: u64,
    pub atomics: u64,
    pub immediates: u64,
    pub notifications_dropped: u64,
    pub bad_icrc: u64,
    pub malformed: u64,
    pub unknown_qp: u64,
    pub access_errors: u64,
    pub out_of_sequence: u64,
    pub duplicates: u64,
    pub invalid: u64,
    pub bad_mads: u64,
    pub connections: u64,
    pub tx_packets: u64,
    pub unroutable: u64,
    pub cm_over_limit: u64,
    pub cm_half_open_evicted: u64,
    pub cm_half_open_replaced: u64,
    pub cm_half_open_expired: u64,
    pub cm_bad_dreqs: u64,
}

impl RnicStats {
    /// Read every counter.
    pub fn snapshot(&self) -> StatsSnapshot {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsSnapshot {
            rx_packets: g(&self.rx_packets),
            rx_bytes: g(&self.rx_bytes),
            writes: g(&self.writes),
            atomics: g(&self.atomics),
            immediates: g(&self.immediates),
            notifications_dropped: g(&self.notifications_dropped),
            bad_icrc: g(&self.bad_icrc),
            malformed: g(&self.malformed),
            unknown_qp: g(&self.unknown_qp),
            access_errors: g(&self.access_errors),
            out_of_sequence: g(&self.out_of_sequence),
            duplicates: g(&self.duplicates),
            invalid: g(&self.invalid),
            bad_mads: g(&self.bad_mads),
            connections: g(&self.connections),
            tx_packets: g(&self.tx_packets),
            unroutable: g(&self.unroutable),
            cm_over_limit: g(&self.cm_over_limit),
            cm_half_open_evicted: g(&self.cm_half_open_evicted),
            cm_half_open_replaced: g(&self.cm_half_open_replaced),
            cm_half_open_expired: g(&self.cm_half_open_expired),
            cm_bad_dreqs: g(&self.cm_bad_dreqs),
        }
    }
}

pub(crate) fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// A WRITE with Immediate's notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Notification {
    /// The librdmacm port (the store) it was written to.
    pub port: u16,
    /// The immediate data (the report's key for Key-Write and Key-Increment).
    pub imm: u32,
}

/// Subscribers to immediate notifications. The lock is taken only when an immediate arrives
/// (a datum its reporter flagged for the CPU) or a subscriber joins, never per plain write.
#[derive(Debug, Clone, Default)]
pub struct Notifier {
    subs: Arc<Mutex<Vec<Sender<Notification>>>>,
}

impl Notifier {
    /// A new subscriber's queue, holding up to `capacity` notifications (more are dropped and
    /// counted).
    pub fn subscribe(&self, capacity: usize) -> Receiver<Notification> {
        let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
        self.subs.lock().unwrap_or_else(|e| e.into_inner()).push(tx);
        rx
    }

    pub(crate) fn publish(&self, n: Notification, stats: &RnicStats) {
        let mut subs = self.subs.lock().unwrap_or_else(|e| e.into_inner());
        subs.retain(|s| match s.try_send(n) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                bump(&stats.notifications_dropped);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
    }
}

/// What the soft-RNIC was started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RnicConfig {
    /// Address to receive on.
    pub ip: Ipv4Addr,
    /// UDP port (4791).
    pub udp_port: u16,
    /// Check the ICRC.
    pub icrc: bool,
    /// Seed of QPNs and PSNs.
    pub seed: u32,
}

impl RnicConfig {
    /// From the collector's configuration.
    pub fn from_config(c: &CollectorConfig, seed: u32) -> Self {
        Self { ip: c.ip, udp_port: c.udp_port, icrc: c.icrc, seed }
    }
}

/// What every soft-RNIC runtime shares, whatever carries its packets: the RoCEv2 endpoint over
/// registered memory (sans-IO), the counters, the notification subscribers.
pub(crate) struct RnicCore {
    ep: Endpoint<Registered>,
    pub(crate) stats: Arc<RnicStats>,
    pub(crate) notifier: Notifier,
    qpn_port: HashMap<u32, u16>,
}

impl RnicCore {
    /// An endpoint listening for every store of `stores`.
    pub(crate) fn new(cfg: &RnicConfig, stores: &Stores) -> Self {
        let mem = stores.memory().clone();
        let listens = stores
            .stores()
            .iter()
            .map(|st| {
                let r = mem.regions()[st.region];
                Listen {
                    port: st.port,
                    metadata: Some(Metadata { va: r.va, len: r.len as u32, rkey: r.rkey }),
                }
            })
            .collect();
        let cm = CmConfig {
            response_timeout_ns: 50_000_000,
            max_req_tries: 4,
            backoff_initial_ns: 50_000_000,
            backoff_max_ns: 1_000_000_000,
        };
        let guid = 0x02_5f_00_00_00_00_00_00 | u64::from(u32::from(cfg.ip));
        Self {
            ep: Endpoint::new(cm, guid, listens, mem, cfg.seed),
            stats: Arc::default(),
            notifier: Notifier::default(),
            qpn_port: HashMap::new(),
        }
    }

    /// Handle the IPv4 packet `ip` (header, UDP, RoCEv2, ICRC) from `src`: check the ICRC (if
    /// `icrc`), parse, and hand it to the endpoint; replies go to `out`.
    pub(crate) fn on_ip(
        &mut self,
        now: u64,
        src: Ipv4Addr,
        ip: &[u8],
        icrc: bool,
        out: &mut dyn FnMut(Ipv4Addr, RoceRepr<'_>),
    ) {
        let s = &self.stats;
        if icrc && icrc::verify(ip).is_err() {
            // Too short to hold an ICRC counts as malformed, a mismatch as a bad ICRC.
            bump(if ip.len() < 20 + 8 + 12 + 4 { &s.malformed } else { &s.bad_icrc });
            return;
        }
        let Ok(r) = RoceRepr::parse(ip.get(28..).unwrap_or_default()) else {
            bump(&s.malformed);
            return;
        };
        let ev = self.ep.handle_packet(now, src, &r, out);
        self.on_event(ev);
    }

    /// Connections: (our QPN, port, peer).
    pub(crate) fn connections(&self) -> Vec<(u32, u16, Ipv4Addr)> {
        self.ep.connections().collect()
    }

    /// When the CM and requester timers next have something to do.
    pub(crate) fn poll_timeout(&self) -> Option<u64> {
        self.ep.poll_timeout()
    }

    /// Run the CM and requester timers.
    pub(crate) fn timers(&mut self, now: u64, out: &mut dyn FnMut(Ipv4Addr, RoceRepr<'_>)) {
        let ev = self.ep.handle_timeout(now, out);
        self.on_event(ev);
        // The CM's counters, copied on the timer's beat (not per packet).
        let c = self.ep.cm_stats();
        let s = &self.stats;
        s.cm_over_limit.store(c.over_limit, Ordering::Relaxed);
        s.cm_half_open_evicted.store(c.half_open_evicted, Ordering::Relaxed);
        s.cm_half_open_replaced.store(c.half_open_replaced, Ordering::Relaxed);
        s.cm_half_open_expired.store(c.half_open_expired, Ordering::Relaxed);
        s.cm_bad_dreqs.store(c.bad_dreqs, Ordering::Relaxed);
    }

    fn on_event(&mut self, ev: Option<Event>) {
        let s = &self.stats;
        match ev {
            None => {}
            Some(Event::Applied { qpn, imm, atomic }) => {
                bump(if atomic { &s.atomics } else { &s.writes });
                if let Some(imm) = imm {
                    bump(&s.immediates);
                    // A QP established by its first packet (lost RTU) is not in the map yet.
                    let port = match self.qpn_port.get(&qpn) {
                        Some(&p) => p,
                        None => self.ep.connections().find(|c| c.0 == qpn).map_or(0, |c| c.1),
                    };
                    self.notifier.publish(Notification { port, imm }, s);
                }
            }
            Some(Event::Connected { qpn, port, peer }) => {
                bump(&s.connections);
                self.qpn_port.insert(qpn, port);
                tracing::info!(%peer, port, qpn, "connected");
            }
            Some(Event::Disconnected { qpn }) => {
                self.qpn_port.remove(&qpn);
                tracing::info!(qpn, "disconnected");
            }
            Some(Event::Duplicate) => bump(&s.duplicates),
            Some(Event::OutOfSequence) => bump(&s.out_of_sequence),
            Some(Event::AccessError) => bump(&s.access_errors),
            Some(Event::Invalid) => bump(&s.invalid),
            Some(Event::UnknownQp) => bump(&s.unknown_qp),
            Some(Event::BadMad) => bump(&s.bad_mads),
        }
    }
}

/// The soft-RNIC.
pub struct SoftRnic {
    cfg: RnicConfig,
    sock: UdpSocket,
    state: UdpSocketState,
    core: RnicCore,
    rx: Vec<u8>,
    /// Replies of this batch: (peer, offset, length) into `tx`.
    replies: Vec<(Ipv4Addr, usize, usize)>,
    tx: Vec<u8>,
    epoch: Instant,
    /// When the endpoint's timers run next.
    next_timers: u64,
}

impl std::fmt::Debug for SoftRnic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SoftRnic").field("cfg", &self.cfg).finish()
    }
}

impl SoftRnic {
    /// Bind the socket and listen for connections to every store of `stores`.
    pub fn bind(cfg: RnicConfig, stores: &Stores) -> io::Result<Self> {
        let addr = SocketAddrV4::new(cfg.ip, cfg.udp_port);
        let (sock, state) = ports::port::bind_batched(addr, false, 16 << 20, 4 << 20)?;
        Ok(Self {
            cfg,
            sock,
            state,
            core: RnicCore::new(&cfg, stores),
            rx: vec![0; BATCH * (HEADERS + GRO * MAX_DATAGRAM)],
            replies: Vec::with_capacity(BATCH),
            tx: Vec::with_capacity(BATCH * 128),
            epoch: Instant::now(),
            next_timers: 0,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// The counters.
    pub fn stats(&self) -> Arc<RnicStats> {
        self.core.stats.clone()
    }

    /// The notification subscribers.
    pub fn notifier(&self) -> Notifier {
        self.core.notifier.clone()
    }

    /// Connections: (our QPN, port, peer).
    pub fn connections(&self) -> Vec<(u32, u16, Ipv4Addr)> {
        self.core.connections()
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Receive one batch into `rx`: the datagrams' metadata filled in `meta`, returns how many
    /// buffers were filled (each may hold several datagrams, by GRO).
    fn receive(&mut self, meta: &mut [RecvMeta; BATCH]) -> usize {
        let per = HEADERS + GRO * MAX_DATAGRAM;
        let mut bufs: [IoSliceMut<'_>; BATCH] = {
            let mut it = self.rx.chunks_mut(per);
            std::array::from_fn(|_| {
                let c = it.next().unwrap_or(&mut []);
                let c = if c.len() > HEADERS { &mut c[HEADERS..] } else { c };
                IoSliceMut::new(c)
            })
        };
        self.state.recv((&self.sock).into(), &mut bufs, meta).unwrap_or(0)
    }

    /// Receive one batch and discard it unread; returns the datagrams received. What the
    /// socket alone delivers per call: the ceiling [`poll`](Self::poll) is measured against
    /// (`collector/benches/soft_rnic.rs`).
    pub fn drain(&mut self) -> usize {
        let mut meta = [RecvMeta::default(); BATCH];
        let got = self.receive(&mut meta);
        meta[..got].iter().map(|m| m.len.div_ceil(m.stride.max(1))).sum()
    }

    /// Receive one batch (if any), handle it, send the replies, run the timers. Returns the
    /// datagrams handled.
    pub fn poll(&mut self) -> usize {
        let now = self.now();
        let per = HEADERS + GRO * MAX_DATAGRAM;
        let mut meta = [RecvMeta::default(); BATCH];
        let got = self.receive(&mut meta);
        let mut n = 0;
        for (i, m) in meta.iter().enumerate().take(got) {
            let SocketAddr::V4(src) = m.addr else { continue };
            let stride = m.stride.max(1);
            let mut at = i * per + HEADERS;
            let end = at + m.len;
            // Every datagram is handled (and so counted), an empty one too.
            let mut seg = 0u16;
            loop {
                let len = stride.min(end - at);
                self.on_datagram(now, src, at, len, seg);
                seg = seg.wrapping_add(1);
                at += len;
                n += 1;
                if at >= end {
                    break;
                }
            }
        }
        // The CM and requester timers are milliseconds long: run them every 100 µs, not per
        // batch.
        if now >= self.next_timers {
            self.next_timers = now + TIMER_PERIOD_NS;
            self.ep_timers(now);
        }
        self.send_replies();
        n
    }

    /// Handle the datagram of `len` bytes at `at` in the receive buffer (with `HEADERS` bytes
    /// before it free to overwrite), segment `seg` of its GRO buffer.
    ///
    /// The header is rebuilt with identification 0 (what a sender writing its own frames, our
    /// translator on AF_PACKET or DPDK, puts there) — or, for segment `seg` > 0 of a buffer that
    /// came as one GSO send, `seg`: the kernel numbers a GSO send's segments 0, 1, 2, …, and
    /// GRO hands the same run back in order. The ICRC decides which it was.
    fn on_datagram(&mut self, now: u64, src: SocketAddrV4, at: usize, len: usize, seg: u16) {
        let stats = &self.core.stats;
        bump(&stats.rx_packets);
        stats.rx_bytes.fetch_add(len as u64, Ordering::Relaxed);
        let to = SocketAddrV4::new(self.cfg.ip, self.cfg.udp_port);
        let flow = UdpFlow::host_udp(NO_MAC, NO_MAC, src, to);
        let buf = &mut self.rx[at - HEADERS..at + len];
        if flow.emit_headers(len, buf).is_err() {
            bump(&stats.malformed);
            return;
        }
        if self.cfg.icrc {
            ports::port::identify_gro_segment(&mut buf[14..], seg);
        }
        let Self { core, tx, replies, cfg, .. } = self;
        core.on_ip(now, *src.ip(), &buf[14..], cfg.icrc, &mut |peer, roce| {
            push_reply(cfg, tx, replies, peer, roce)
        });
    }

    fn ep_timers(&mut self, now: u64) {
        let Self { core, tx, replies, cfg, .. } = self;
        core.timers(now, &mut |peer, roce| push_reply(cfg, tx, replies, peer, roce));
    }

    /// Send the gathered replies: runs of equal length to one peer as one GSO send, each
    /// segment's ICRC computed for the identification the kernel gives it (0, 1, 2, … in the
    /// send; the ICRC covers it).
    fn send_replies(&mut self) {
        let mut i = 0;
        while i < self.replies.len() {
            let (peer, off, len) = self.replies[i];
            let mut j = i + 1;
            while j < self.replies.len()
                && j - i < self.state.max_gso_segments().min(64)
                && self.replies[j].0 == peer
                && self.replies[j].2 == len
                && self.replies[j].1 == off + (j - i) * len
            {
                j += 1;
            }
            for k in 1..j - i {
                self.stamp_segment(peer, off + k * len, len, k as u16);
            }
            let t = Transmit {
                destination: SocketAddr::V4(SocketAddrV4::new(peer, wire::udp::port::ROCE_V2)),
                ecn: None,
                contents: &self.tx[off..off + (j - i) * len],
                segment_size: (j - i > 1).then_some(len),
                src_ip: None,
            };
            if self.state.try_send((&self.sock).into(), &t).is_ok() {
                self.core.stats.tx_packets.fetch_add((j - i) as u64, Ordering::Relaxed);
            }
            i = j;
        }
        self.replies.clear();
        self.tx.clear();
    }

    /// Recompute the ICRC of the reply at `tx[at..at + len]` to `peer` as segment `k` of a
    /// GSO send (its IPv4 header rebuilt as the kernel writes it, identification `k`).
    fn stamp_segment(&mut self, peer: Ipv4Addr, at: usize, len: usize, k: u16) {
        let from = SocketAddrV4::new(self.cfg.ip, self.cfg.udp_port);
        let flow = UdpFlow::host_udp(NO_MAC, NO_MAC, from, SocketAddrV4::new(peer, wire::udp::port::ROCE_V2));
        let mut b = [0u8; HEADERS + 512];
        let Some(ip) = b.get_mut(..HEADERS + len) else { return };
        if flow.emit_headers(len, ip).is_err() {
            return;
        }
        ip[HEADERS..].copy_from_slice(&self.tx[at..at + len]);
        if ports::port::stamp_icrc_for_segment(&mut ip[14..], k) {
            self.tx[at + len - 4..at + len].copy_from_slice(&ip[HEADERS + len - 4..]);
        }
    }

    /// Serve until `stop` is set: poll, and when idle wait up to 1 ms for the socket.
    pub fn run(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            if self.poll() == 0 {
                wait_readable(&self.sock, Duration::from_millis(1));
            }
        }
    }
}

/// Write a reply's UDP payload (RoCEv2 with its ICRC, computed over the IPv4/UDP header the
/// kernel will send: our address and port 4791 to the peer's 4791) to `tx`.
fn push_reply(
    cfg: &RnicConfig,
    tx: &mut Vec<u8>,
    replies: &mut Vec<(Ipv4Addr, usize, usize)>,
    peer: Ipv4Addr,
    roce: RoceRepr<'_>,
) {
    let from = SocketAddrV4::new(cfg.ip, cfg.udp_port);
    let flow = UdpFlow::host_udp(NO_MAC, NO_MAC, from, SocketAddrV4::new(peer, wire::udp::port::ROCE_V2));
    let s = RoceStack { flow, roce };
    let mut b = [0u8; 512];
    if let Ok(n) = s.emit(&mut b) {
        let off = tx.len();
        tx.extend_from_slice(&b[HEADERS..n]);
        replies.push((peer, off, n - HEADERS));
    }
}

/// Block until `sock` is readable or `timeout` passes.
#[allow(unsafe_code)]
fn wait_readable(sock: &UdpSocket, timeout: Duration) {
    let mut p = libc::pollfd { fd: sock.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: `p` is one valid pollfd for an open descriptor, and the count passed is 1.
    unsafe {
        libc::poll(&mut p, 1, timeout.as_millis().min(i32::MAX as u128) as i32);
    }
}
