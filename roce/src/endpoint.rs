//! A passive RoCEv2 endpoint: what an RDMA NIC plus librdmacm's `rdma_listen`/`rdma_accept`
//! do for a server that registered memory and waits for writers — the core of the DTA
//! soft-RNIC collector, sans-IO.
//!
//! [`Endpoint`] listens on librdmacm ports, each with the region it exposes and, optionally,
//! the [`Metadata`] it SENDs to every new peer once connected (as the DTA collector does). It
//! runs the CM server, one RC queue pair per accepted connection — a [`Responder`] applying
//! WRITEs and atomics to its [`Memory`] and a [`Requester`] for its own SENDs — and answers with
//! ACKs, NAKs and atomic ACKs. Packets come in as parsed [`RoceRepr`]s (the caller has checked
//! the ICRC, or deliberately not, like a NIC with ICRC checking disabled); replies go out
//! through a callback as reprs addressed to a peer.

use core::net::Ipv4Addr;

use wire::ibcm::{CmMadRepr, MAD_LEN};
use wire::roce::{Opcode, PSN_MASK, RoceRepr};

use crate::cm::{Accept, CmConfig, CmServer, Connection, Metadata, ServerEvent};
use crate::frames;
use crate::requester::{Op, Requester, RequesterConfig, Response, Transport};
use crate::responder::{Delivery, Memory, Responder, Verdict};

/// The endpoint's local ACK timeout for its own SENDs, IBTA-encoded (4.096 µs × 2^14 ≈ 67 ms,
/// perftest's and many RNIC drivers' default). A millisecond, as before, resent the metadata
/// SEND whenever the peer's process was descheduled for longer — a peer then read the copy as
/// the answer to its next request.
pub const LOCAL_ACK_TIMEOUT: u8 = 14;

/// The transport timer an IBTA timeout exponent stands for: 4.096 µs × 2^`exp` (IBTA 9.7.6.1.3),
/// in nanoseconds; 0 means no timer (`u64::MAX`), exponents above 31 are clamped to 31.
pub const fn ack_timeout_ns(exp: u8) -> u64 {
    match exp {
        0 => u64::MAX,
        1..=31 => 4096 << exp,
        _ => 4096 << 31,
    }
}

/// One listening port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listen {
    /// librdmacm port.
    pub port: u16,
    /// SENT to every peer once connected.
    pub metadata: Option<Metadata>,
}

/// What happened, for the owner's counters and notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A peer connected.
    Connected {
        /// Our QPN.
        qpn: u32,
        /// The librdmacm port.
        port: u16,
        /// The peer.
        peer: Ipv4Addr,
    },
    /// A peer disconnected (or its connection timed out).
    Disconnected {
        /// Our QPN.
        qpn: u32,
    },
    /// A request was executed.
    Applied {
        /// Our QPN.
        qpn: u32,
        /// A WRITE with Immediate's data (a notification for the host).
        imm: Option<u32>,
        /// Whether it was an atomic.
        atomic: bool,
    },
    /// A duplicate request, acknowledged again.
    Duplicate,
    /// A request ahead of the expected PSN (a sequence-error NAK may have gone out).
    OutOfSequence,
    /// A request refused by memory (remote-access-error NAK): nothing written.
    AccessError,
    /// An invalid request (invalid-request NAK).
    Invalid,
    /// A packet for a QP this endpoint does not have: dropped silently, as a NIC does.
    UnknownQp,
    /// A CM MAD that could not be parsed.
    BadMad,
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Requests applied.
    pub applied: u64,
    /// Duplicates acknowledged.
    pub duplicates: u64,
    /// Out-of-sequence requests.
    pub out_of_sequence: u64,
    /// Requests refused for access.
    pub access_errors: u64,
    /// Invalid requests.
    pub invalid: u64,
    /// Packets for unknown QPs.
    pub unknown_qp: u64,
    /// Connections accepted.
    pub connections: u64,
}

struct Qp {
    conn: Connection,
    peer: Ipv4Addr,
    resp: Responder,
    req: Requester,
    /// Its protection domain: the one R_Key its store's region has (from the port's metadata);
    /// any other is refused as a NIC refuses a key of another PD. `None`: a port without
    /// metadata, every region.
    pd: Option<u32>,
}

/// The memory a QP may touch: `mem`, through the one R_Key of its protection domain.
struct Scoped<'a, M> {
    mem: &'a mut M,
    rkey: Option<u32>,
}

impl<M: Memory> Scoped<'_, M> {
    fn check(&self, rkey: u32) -> Result<(), crate::responder::AccessError> {
        match self.rkey {
            Some(k) if k != rkey => Err(crate::responder::AccessError::BadKey),
            _ => Ok(()),
        }
    }
}

impl<M: Memory> Memory for Scoped<'_, M> {
    fn write(&mut self, rkey: u32, va: u64, data: &[u8]) -> Result<(), crate::responder::AccessError> {
        self.check(rkey)?;
        self.mem.write(rkey, va, data)
    }
    fn check_write(&self, rkey: u32, va: u64, len: u64) -> Result<(), crate::responder::AccessError> {
        self.check(rkey)?;
        self.mem.check_write(rkey, va, len)
    }
    fn fetch_add(&mut self, rkey: u32, va: u64, add: u64) -> Result<u64, crate::responder::AccessError> {
        self.check(rkey)?;
        self.mem.fetch_add(rkey, va, add)
    }
    fn cmp_swap(
        &mut self,
        rkey: u32,
        va: u64,
        c: u64,
        sw: u64,
    ) -> Result<u64, crate::responder::AccessError> {
        self.check(rkey)?;
        self.mem.cmp_swap(rkey, va, c, sw)
    }
    fn ring_head(&self, rkey: u32) -> Option<u64> {
        self.mem.ring_head(rkey)
    }
}

/// A passive RoCEv2 endpoint over memory `M`.
pub struct Endpoint<M> {
    listens: Vec<Listen>,
    cm: CmServer,
    qps: Vec<Qp>,
    mem: M,
    next_qpn: u32,
    ud_psn: u32,
    seed: u32,
    stats: EndpointStats,
}

impl<M: Memory> Endpoint<M> {
    /// An endpoint over `mem` listening on `listens`; `seed` varies its QPNs and PSNs between
    /// runs (a restarted collector must not reuse its old QPNs).
    pub fn new(cm: CmConfig, ca_guid: u64, listens: Vec<Listen>, mem: M, seed: u32) -> Self {
        Self {
            listens,
            cm: CmServer::with_seed(cm, ca_guid, seed),
            qps: Vec::new(),
            mem,
            next_qpn: 0x1000 | ((seed & 0xff) << 12),
            ud_psn: 0,
            seed,
            stats: EndpointStats::default(),
        }
    }

    /// The memory.
    pub fn memory(&self) -> &M {
        &self.mem
    }

    /// The memory, writable (the owner's own updates, e.g. clearing a region).
    pub fn memory_mut(&mut self) -> &mut M {
        &mut self.mem
    }

    /// Counters.
    pub fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// What the CM server refused (connection limits, bad DREQs, expired half-open).
    pub fn cm_stats(&self) -> crate::cm::CmServerStats {
        self.cm.stats()
    }

    /// Set the CM server's connection limits.
    pub fn set_cm_limits(&mut self, limits: crate::cm::CmLimits) {
        self.cm.set_limits(limits);
    }

    /// Connections: (our QPN, port, peer).
    pub fn connections(&self) -> impl Iterator<Item = (u32, u16, Ipv4Addr)> + '_ {
        self.qps.iter().map(|q| (q.conn.local_qpn, q.conn.port, q.peer))
    }

    fn send_mad(&mut self, peer: Ipv4Addr, mad: &CmMadRepr, out: &mut dyn FnMut(Ipv4Addr, RoceRepr<'_>)) {
        let mut b = [0u8; MAD_LEN];
        if mad.emit(&mut b).is_ok() {
            let psn = self.ud_psn;
            self.ud_psn = (psn + 1) & PSN_MASK;
            out(peer, frames::cm_mad(psn, &b));
        }
    }

    /// Handle one packet from `src`. Replies go to `out`; the returned event says what it was.
    pub fn handle_packet(
        &mut self,
        now: u64,
        src: Ipv4Addr,
        r: &RoceRepr<'_>,
        out: &mut dyn FnMut(Ipv4Addr, RoceRepr<'_>),
    ) -> Option<Event> {
        if frames::is_cm_mad(r) {
            let Ok(mad) = CmMadRepr::parse(r.payload) else { return Some(Event::BadMad) };
            return self.handle_mad(now, src, &mad, out);
        }
        let i = match self.qps.iter().position(|q| q.conn.local_qpn == r.bth.dest_qp && q.peer == src) {
            Some(i) => i,
            // The RTU was lost but the peer had our REP and sends: its first packet
            // establishes the connection (IBTA's communication-established event).
            None => match self.cm.establish_by_data(src, r.bth.dest_qp) {
                Some(conn) => {
                    self.establish(now, src, conn, out);
                    self.qps.len() - 1
                }
                None => {
                    self.stats.unknown_qp += 1;
                    return Some(Event::UnknownQp);
                }
            },
        };
        let q = &mut self.qps[i];
        let qpn = q.conn.local_qpn;
        match r.bth.opcode {
            Opcode::RC_ACKNOWLEDGE | Opcode::RC_ATOMIC_ACKNOWLEDGE => {
                if let Some(aeth) = r.ext.aeth
                    && matches!(
                        q.req.handle_packet(now, &r.bth, &aeth),
                        Response::Retransmit { .. } | Response::RnrWait { .. }
                    )
                {
                    self.resend(i, now, out);
                }
                None
            }
            op => {
                let mut mem = Scoped { mem: &mut self.mem, rkey: q.pd };
                let o = q.resp.handle_packet(op, r.bth.psn, r.bth.ack_req, &r.ext, r.payload, &mut mem);
                if let Some(ack) = frames::reply(q.conn.remote_qpn, &o.reply) {
                    out(src, ack);
                }
                Some(match o.verdict {
                    Verdict::Executed => {
                        self.stats.applied += 1;
                        let (imm, atomic) = match o.delivery {
                            Delivery::Write { imm, .. } | Delivery::Send { imm, .. } => (imm, false),
                            Delivery::Atomic { .. } => (None, true),
                            Delivery::None => (None, false),
                        };
                        Event::Applied { qpn, imm, atomic }
                    }
                    Verdict::Duplicate => {
                        self.stats.duplicates += 1;
                        Event::Duplicate
                    }
                    Verdict::OutOfSequence => {
                        self.stats.out_of_sequence += 1;
                        Event::OutOfSequence
                    }
                    Verdict::AccessError(_) => {
                        self.stats.access_errors += 1;
                        Event::AccessError
                    }
                    Verdict::Invalid => {
                        self.stats.invalid += 1;
                        Event::Invalid
                    }
                })
            }
        }
    }

    fn handle_mad(
        &mut self,
        now: u64,
        src: Ipv4Addr,
        mad: &CmMadRepr,
        out: &mut dyn FnMut(Ipv4Addr, RoceRepr<'_>),
    ) -> Option<Event> {
        let listens = &self.listens;
        let next = &mut self.next_qpn;
        let seed = self.seed;
        let o = self.cm.handle_packet(now, src, mad, &mut |req| {
            if !listens.iter().any(|l| l.port == req.port) || req.transport != Transport::Rc {
                // IBTA REJ reason 8: invalid service ID.
                return Accept::No(8);
            }
            let qpn = *next & PSN_MASK;
            *next = next.wrapping_add(1);
            let psn = (qpn.wrapping_mul(0x9e37_79b1) ^ seed) & PSN_MASK;
            Accept::Yes { qpn, psn }
        });
        if let Some(m) = o.send {
            self.send_mad(src, &m, out);
        }
        match o.event? {
            ServerEvent::Established(conn) => {
                self.establish(now, src, conn, out);
                Some(Event::Connected { qpn: conn.local_qpn, port: conn.port, peer: src })
            }
            ServerEvent::Disconnected(conn) | ServerEvent::TimedOut(conn) => {
                self.qps.retain(|q| q.conn.local_qpn != conn.local_qpn);
                Some(Event::Disconnected { qpn: conn.local_qpn })
            }
        }
    }

    /// Set up the QP of a connection the CM established (by RTU or by its first packet): our
    /// metadata SEND goes out on it, and it replaces any older QP of the same peer QP.
    fn establish(
        &mut self,
        now: u64,
        src: Ipv4Addr,
        conn: Connection,
        out: &mut dyn FnMut(Ipv4Addr, RoceRepr<'_>),
    ) {
        let cfg = RequesterConfig {
            window: 16,
            ack_req_every: 1,
            timeout_ns: ack_timeout_ns(LOCAL_ACK_TIMEOUT),
            ..RequesterConfig::default()
        };
        let pd = self.listens.iter().find(|l| l.port == conn.port).and_then(|l| l.metadata).map(|m| m.rkey);
        let mut q = Qp {
            conn,
            peer: src,
            resp: Responder::new(Transport::Rc, conn.remote_psn),
            req: Requester::new(cfg, conn.remote_qpn, conn.local_psn),
            pd,
        };
        self.stats.connections += 1;
        if let Some(meta) = self.listens.iter().find(|l| l.port == conn.port).and_then(|l| l.metadata) {
            // With the ring head when the memory keeps one (24 bytes), else the 16.
            let with_head;
            let plain;
            let b: &[u8] = match self.mem.ring_head(meta.rkey) {
                Some(h) => {
                    with_head = meta.encode_with_head(h);
                    &with_head
                }
                None => {
                    plain = meta.encode();
                    &plain
                }
            };
            let op = Op::Send { imm: None };
            if let Ok(p) = q.req.post(now, op, b, true) {
                out(src, frames::request(Transport::Rc, conn.remote_qpn, p.psn, p.ack_req, &op, b));
            }
        }
        // A peer that connects its QP again (it restarted, or reset the connection)
        // replaces the old one, in the CM too.
        while let Some(i) =
            self.qps.iter().position(|x| x.peer == src && x.conn.remote_qpn == conn.remote_qpn)
        {
            let old = self.qps.swap_remove(i);
            self.cm.remove(old.conn.local_qpn);
        }
        self.qps.push(q);
    }

    fn resend(&mut self, i: usize, now: u64, out: &mut dyn FnMut(Ipv4Addr, RoceRepr<'_>)) {
        let q = &mut self.qps[i];
        while let Some(x) = q.req.poll_transmit(now) {
            out(
                q.peer,
                frames::request(Transport::Rc, q.conn.remote_qpn, x.psn, x.ack_req, &x.op, x.payload),
            );
        }
    }

    /// Drive the timers: half-open connections to expire, our SENDs without ACK.
    pub fn handle_timeout(&mut self, now: u64, out: &mut dyn FnMut(Ipv4Addr, RoceRepr<'_>)) -> Option<Event> {
        let mut event = None;
        loop {
            let o = self.cm.handle_timeout(now);
            if let Some(ServerEvent::TimedOut(c)) = o.event {
                self.qps.retain(|q| q.conn.local_qpn != c.local_qpn);
                event = Some(Event::Disconnected { qpn: c.local_qpn });
            }
            if o.event.is_none() {
                break;
            }
        }
        for i in 0..self.qps.len() {
            if self.qps[i].req.handle_timeout(now).is_ok() {
                self.resend(i, now, out);
            }
        }
        event
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has something to do: the CM's
    /// half-open connections, the queue pairs' retransmissions.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.qps.iter().filter_map(|q| q.req.poll_timeout()).chain(self.cm.poll_timeout()).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cm::{ClientEvent, CmClient, ConnectParams};
    use crate::responder::{NoMemory, Reply};
    use wire::roce::{Opcode, RoceRepr};

    const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const META: Metadata = Metadata { va: 0x1000, len: 64, rkey: 0x42 };

    /// A packet the endpoint sent: (opcode, PSN, payload).
    type Sent = Vec<(Opcode, u32, Vec<u8>)>;

    fn sink(sent: &mut Sent) -> impl FnMut(Ipv4Addr, RoceRepr<'_>) + '_ {
        |to, r| {
            assert_eq!(to, PEER);
            sent.push((r.bth.opcode, r.bth.psn, r.payload.to_vec()));
        }
    }

    fn mad_packet(m: &CmMadRepr) -> Vec<u8> {
        let mut b = [0u8; MAD_LEN];
        m.emit(&mut b).unwrap();
        b.to_vec()
    }

    /// Connect a CM client at `t0`: the endpoint's QP and the metadata SEND (its PSN).
    fn connected<M: Memory>(ep: &mut Endpoint<M>, t0: u64) -> (Connection, u32) {
        let params = ConnectParams {
            local_ip: PEER,
            remote_ip: Ipv4Addr::new(10, 0, 0, 2),
            port: 1337,
            local_qpn: 0x31,
            start_psn: 7,
            ca_guid: 1,
            path_mtu: 3,
            transport: Transport::Rc,
            src_port: 50_000,
        };
        let mut cm = CmClient::new(CmConfig::default(), params, 9);
        let mut sent = Sent::new();
        let req = mad_packet(&cm.connect(t0));
        ep.handle_packet(t0, PEER, &frames::cm_mad(0, &req), &mut sink(&mut sent));
        let rep = CmMadRepr::parse(&sent.pop().unwrap().2).unwrap();
        let o = cm.handle_packet(t0, &rep);
        let Some(ClientEvent::Established(conn)) = o.event else { panic!("{:?}", o.event) };
        let rtu = mad_packet(&o.send.unwrap());
        let ev = ep.handle_packet(t0, PEER, &frames::cm_mad(1, &rtu), &mut sink(&mut sent));
        assert!(matches!(ev, Some(Event::Connected { port: 1337, .. })), "{ev:?}");
        let [(Opcode::RC_SEND_ONLY, psn, payload)] = &sent[..] else { panic!("{sent:?}") };
        assert_eq!(Metadata::decode(payload), Some(META));
        (conn, *psn)
    }

    #[test]
    fn ack_timeout_encoding_follows_ibta() {
        assert_eq!(ack_timeout_ns(0), u64::MAX);
        assert_eq!(ack_timeout_ns(1), 8_192);
        assert_eq!(ack_timeout_ns(LOCAL_ACK_TIMEOUT), 67_108_864);
        assert_eq!(ack_timeout_ns(200), ack_timeout_ns(31));
    }

    /// The metadata SEND is resent only after the local ACK timeout, and not once ACKed: a peer
    /// that answers within tens of milliseconds never sees a copy.
    #[test]
    fn the_metadata_send_waits_the_ack_timeout_before_a_resend() {
        let listens = vec![Listen { port: 1337, metadata: Some(META) }];
        let mut ep = Endpoint::new(CmConfig::default(), 2, listens, NoMemory, 3);
        let (conn, psn) = connected(&mut ep, 0);
        let mut sent = Sent::new();
        let timeout = ack_timeout_ns(LOCAL_ACK_TIMEOUT);
        ep.handle_timeout(50_000_000, &mut sink(&mut sent));
        assert!(sent.is_empty(), "resent after 50 ms: {sent:?}");
        ep.handle_timeout(timeout + 1, &mut sink(&mut sent));
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!((sent[0].0, sent[0].1), (Opcode::RC_SEND_ONLY, psn));
        assert_eq!(Metadata::decode(&sent[0].2), Some(META));

        // Once ACKed, nothing more.
        sent.clear();
        let ack = frames::reply(conn.remote_qpn, &Reply::Ack { psn, msn: 1 }).unwrap();
        ep.handle_packet(timeout + 2, PEER, &ack, &mut sink(&mut sent));
        ep.handle_timeout(10 * timeout, &mut sink(&mut sent));
        assert!(sent.is_empty(), "{sent:?}");
    }

    /// The attack: a connection to one store's port writing with another store's R_Key. Each
    /// QP is in its store's protection domain: refused (remote access NAK), memory unchanged.
    #[test]
    fn a_connection_writes_only_its_own_stores_region() {
        use crate::requester::Op;
        use crate::responder::{Region, Regions};
        let mut mem = Regions::new();
        mem.add(Region { rkey: 0x42, va: 0x1000, write: true, atomic: true, buf: vec![0u8; 64], ring: None });
        mem.add(Region { rkey: 0x43, va: 0x9000, write: true, atomic: true, buf: vec![0u8; 64], ring: None });
        let listens = vec![
            Listen { port: 1337, metadata: Some(META) },
            Listen { port: 1338, metadata: Some(Metadata { va: 0x9000, len: 64, rkey: 0x43 }) },
        ];
        let mut ep = Endpoint::new(CmConfig::default(), 2, listens, mem, 3);
        let (conn, _) = connected(&mut ep, 0);
        let mut sent = Sent::new();
        let other = Op::Write { va: 0x9000, rkey: 0x43, imm: None };
        let r = frames::request(Transport::Rc, conn.remote_qpn, conn.local_psn, true, &other, &[9; 8]);
        let ev = ep.handle_packet(1, PEER, &r, &mut sink(&mut sent));
        assert_eq!(ev, Some(Event::AccessError));
        assert!(matches!(sent.last(), Some((Opcode::RC_ACKNOWLEDGE, _, _))), "a NAK: {sent:?}");
        assert_eq!(ep.memory().get(0x43).unwrap().buf, vec![0u8; 64], "the other store's memory unchanged");
        // Its own store's key works (the QP went to error after the NAK: a new connection).
        let mut ep2 = Endpoint::new(
            CmConfig::default(),
            2,
            vec![Listen { port: 1337, metadata: Some(META) }],
            {
                let mut m = Regions::new();
                m.add(Region {
                    rkey: 0x42,
                    va: 0x1000,
                    write: true,
                    atomic: true,
                    buf: vec![0u8; 64],
                    ring: None,
                });
                m
            },
            3,
        );
        let (conn, _) = connected(&mut ep2, 0);
        let own = Op::Write { va: 0x1000, rkey: 0x42, imm: None };
        let r = frames::request(Transport::Rc, conn.remote_qpn, conn.local_psn, true, &own, &[9; 8]);
        let ev = ep2.handle_packet(1, PEER, &r, &mut sink(&mut sent));
        assert!(matches!(ev, Some(Event::Applied { .. })), "{ev:?}");
        assert_eq!(&ep2.memory().get(0x42).unwrap().buf[..8], &[9; 8]);
    }
}
