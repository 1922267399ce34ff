//! The passive side of the CM ([`CmServer`]): REQs offered to the caller, one REP per REQ, the
//! connection limits, half-open expiry and DREQ; see the parent module.

use core::net::Ipv4Addr;

use wire::ibcm::{
    CmMadRepr, CmMessage, CmaAddrs, CmaHeaderRepr, DrepRepr, RejRepr, RepRepr, private_len, rdma_cm_port,
    transport,
};
use wire::roce::PSN_MASK;

use super::{CmConfig, CmOut, Connection};
use crate::requester::Transport;

/// The passive side's answer to a REQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    /// Accept with this QPN and starting PSN.
    Yes {
        /// Our QPN.
        qpn: u32,
        /// Our starting PSN.
        psn: u32,
    },
    /// Reject with this IBTA reason (28: consumer reject; 8: invalid service ID).
    No(u16),
}

/// Events of the passive side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerEvent {
    /// The RTU arrived: the connection is up.
    Established(Connection),
    /// The peer disconnected.
    Disconnected(Connection),
    /// A REP went unanswered after every try; the connection was dropped.
    TimedOut(Connection),
}

#[derive(Debug, Clone)]
struct ServerConn {
    conn: Connection,
    peer: Ipv4Addr,
    rep: CmMadRepr,
    /// When its REP was last sent (for a REQ or a duplicate of it).
    sent: u64,
    established: bool,
}

/// The passive side: every connection this listener accepted (librdmacm's `rdma_listen`).
#[derive(Debug, Clone, Default)]
pub struct CmServer {
    cfg: CmConfig,
    ca_guid: u64,
    conns: Vec<ServerConn>,
    /// Connections made, mixed with `seed` into unpredictable communication IDs.
    made: u32,
    seed: u32,
    limits: CmLimits,
    stats: CmServerStats,
}

/// How many connections a server takes (established or waiting for their RTU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmLimits {
    /// From one source address.
    pub per_source: usize,
    /// In all.
    pub total: usize,
}

impl Default for CmLimits {
    fn default() -> Self {
        Self { per_source: 64, total: 1024 }
    }
}

/// What a server refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CmServerStats {
    /// REQs rejected for a connection limit (REJ, no resources).
    pub over_limit: u64,
    /// DREQs that named no connection of their sender (wrong IDs, QPN or source): ignored.
    pub bad_dreqs: u64,
    /// Connections dropped because their REP went unanswered (half-open).
    pub half_open_expired: u64,
    /// Half-open connections dropped to make room at a limit for a newer REQ.
    pub half_open_evicted: u64,
    /// Half-open connections replaced by a newer REQ for the same peer and QPN.
    pub half_open_replaced: u64,
}

/// The REQ fields a server decides on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The librdmacm port asked for.
    pub port: u16,
    /// The initiator's address (from the CMA header, or the packet's source).
    pub peer: Ipv4Addr,
    /// The initiator's QPN.
    pub remote_qpn: u32,
    /// The initiator's starting PSN.
    pub remote_psn: u32,
    /// RC or UC.
    pub transport: Transport,
}

impl CmServer {
    /// A server with these timers; `ca_guid` goes into its REPs.
    pub fn new(cfg: CmConfig, ca_guid: u64) -> Self {
        Self::with_seed(cfg, ca_guid, 0x5f00_0000)
    }

    /// [`new`](Self::new), its communication IDs drawn from `seed` (a start's own: IDs another
    /// host cannot guess from the last one it saw). IB CM has no authentication: whoever sees
    /// the IDs on the wire can still forge a DREQ, but must also send it from the peer's
    /// address and name its QPN.
    pub fn with_seed(cfg: CmConfig, ca_guid: u64, seed: u32) -> Self {
        Self {
            cfg,
            ca_guid,
            conns: Vec::new(),
            made: 0,
            seed,
            limits: CmLimits::default(),
            stats: CmServerStats::default(),
        }
    }

    /// Set the connection limits.
    pub fn set_limits(&mut self, limits: CmLimits) {
        self.limits = limits;
    }

    /// What it refused.
    pub fn stats(&self) -> CmServerStats {
        self.stats
    }

    /// The next local communication ID: a counter through a 32-bit mixer keyed by the seed
    /// (murmur3's finaliser), never 0.
    pub(super) fn next_comm_id(&mut self) -> u32 {
        self.made = self.made.wrapping_add(1);
        let mut x = self.made.wrapping_mul(0x9e37_79b9) ^ self.seed;
        x ^= x >> 16;
        x = x.wrapping_mul(0x85eb_ca6b);
        x ^= x >> 13;
        x = x.wrapping_mul(0xc2b2_ae35);
        x ^= x >> 16;
        x.max(1)
    }

    /// Connections (established or waiting for their RTU).
    pub fn connections(&self) -> impl Iterator<Item = (Connection, bool)> + '_ {
        self.conns.iter().map(|c| (c.conn, c.established))
    }

    /// Handle a MAD from `src` (the packet's IP source). `accept` decides on a new REQ.
    pub fn handle_packet(
        &mut self,
        now: u64,
        src: Ipv4Addr,
        mad: &CmMadRepr,
        accept: &mut dyn FnMut(&Request) -> Accept,
    ) -> CmOut<ServerEvent> {
        match &mad.message {
            CmMessage::Req(req) => {
                // A duplicate REQ (our REP was lost): the same REP again.
                if let Some(c) = self
                    .conns
                    .iter_mut()
                    .find(|c| c.conn.remote_comm_id == req.local_comm_id && c.peer == src)
                {
                    if !c.established {
                        c.sent = now;
                    }
                    return CmOut { send: Some(c.rep), event: None };
                }
                let peer = match CmaHeaderRepr::parse(&req.private_data) {
                    Ok(CmaHeaderRepr { addrs: CmaAddrs::V4 { src, .. }, .. }) => src,
                    _ => src,
                };
                let r = Request {
                    port: rdma_cm_port(req.service_id),
                    peer,
                    remote_qpn: req.local_qpn,
                    remote_psn: req.starting_psn,
                    transport: if req.transport_type == transport::UC {
                        Transport::Uc
                    } else {
                        Transport::Rc
                    },
                };
                let comm_id = self.next_comm_id();
                // A newer REQ for the same peer and QPN supersedes a half-open one (whatever its
                // communication ID); an established one stays until the new one is established,
                // which replaces it, and is counted once with it.
                let before = self.conns.len();
                self.conns.retain(|c| c.established || !(c.peer == src && c.conn.remote_qpn == r.remote_qpn));
                self.stats.half_open_replaced += (before - self.conns.len()) as u64;
                let verdict = if self.make_room(src, r.remote_qpn) {
                    accept(&r)
                } else {
                    self.stats.over_limit += 1;
                    // IBTA REJ reason 3: no resources available.
                    Accept::No(3)
                };
                match verdict {
                    Accept::No(reason) => CmOut {
                        send: Some(CmMadRepr::send(
                            mad.tid,
                            CmMessage::Rej(RejRepr {
                                local_comm_id: comm_id,
                                remote_comm_id: req.local_comm_id,
                                message_rejected: 0,
                                reject_info_len: 0,
                                reason,
                                ari: [0; wire::ibcm::REJ_ARI_LEN],
                                private_data: [0; private_len::REJ],
                            }),
                        )),
                        event: None,
                    },
                    Accept::Yes { qpn, psn } => {
                        let conn = Connection {
                            local_comm_id: comm_id,
                            remote_comm_id: req.local_comm_id,
                            local_qpn: qpn & PSN_MASK,
                            remote_qpn: req.local_qpn,
                            local_psn: psn & PSN_MASK,
                            remote_psn: req.starting_psn,
                            port: r.port,
                        };
                        let rep = CmMadRepr::send(
                            mad.tid,
                            CmMessage::Rep(RepRepr {
                                local_comm_id: comm_id,
                                remote_comm_id: req.local_comm_id,
                                local_qkey: 0,
                                local_qpn: conn.local_qpn,
                                local_eecn: 0,
                                starting_psn: conn.local_psn,
                                responder_resources: req.initiator_depth,
                                initiator_depth: req.responder_resources,
                                target_ack_delay: 15,
                                failover_accepted: 0,
                                e2e_flow_control: false,
                                rnr_retry_count: 7,
                                srq: false,
                                local_ca_guid: self.ca_guid,
                                private_data: [0; private_len::REP],
                            }),
                        );
                        self.conns.push(ServerConn { conn, peer: src, rep, sent: now, established: false });
                        CmOut { send: Some(rep), event: None }
                    }
                }
            }
            CmMessage::Rtu(rtu) => {
                match self
                    .conns
                    .iter_mut()
                    .find(|c| c.conn.local_comm_id == rtu.remote_comm_id && !c.established)
                {
                    Some(c) => {
                        c.established = true;
                        CmOut { send: None, event: Some(ServerEvent::Established(c.conn)) }
                    }
                    None => CmOut::default(),
                }
            }
            CmMessage::Dreq(d) => {
                // Only the peer, naming both IDs and our QPN, disconnects.
                let Some(i) = self.conns.iter().position(|c| {
                    c.conn.local_comm_id == d.remote_comm_id
                        && c.conn.remote_comm_id == d.local_comm_id
                        && c.conn.local_qpn == d.remote_qpn
                        && c.peer == src
                }) else {
                    self.stats.bad_dreqs += 1;
                    return CmOut::default();
                };
                let c = self.conns.swap_remove(i);
                let drep = CmMadRepr::send(
                    mad.tid,
                    CmMessage::Drep(DrepRepr {
                        local_comm_id: c.conn.local_comm_id,
                        remote_comm_id: c.conn.remote_comm_id,
                        private_data: [0; private_len::DREP],
                    }),
                );
                CmOut { send: Some(drep), event: Some(ServerEvent::Disconnected(c.conn)) }
            }
            _ => CmOut::default(),
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has something to do: a half-open
    /// connection to expire.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.conns.iter().filter(|c| !c.established).map(|c| self.expiry(c)).min()
    }

    /// When a half-open connection expires: `max_req_tries` response timeouts after its REP
    /// (as long as a client retries its REQ, each retry answered with the same REP).
    fn expiry(&self, c: &ServerConn) -> u64 {
        c.sent.saturating_add(
            self.cfg.response_timeout_ns.saturating_mul(u64::from(self.cfg.max_req_tries.max(1))),
        )
    }

    /// Drop connections whose RTU never came (half-open, counted in `half_open_expired`). No
    /// REP is resent here: a client that lost one retries its REQ and gets it again. Call until
    /// it returns nothing.
    pub fn handle_timeout(&mut self, now: u64) -> CmOut<ServerEvent> {
        if let Some(i) = self.conns.iter().position(|c| !c.established && now >= self.expiry(c)) {
            let c = self.conns.swap_remove(i);
            self.stats.half_open_expired += 1;
            return CmOut { send: None, event: Some(ServerEvent::TimedOut(c.conn)) };
        }
        CmOut::default()
    }

    /// Whether a new connection from `src` for its QP `remote_qpn` fits the limits, evicting
    /// half-open connections to make room: for the per-source limit, `src`'s oldest; for the
    /// total, the oldest of the source holding the most half-open ones. Established
    /// connections are never evicted; one of `src` for the same QP is counted once with the new.
    fn make_room(&mut self, src: Ipv4Addr, remote_qpn: u32) -> bool {
        let counted = |c: &ServerConn| !(c.peer == src && c.conn.remote_qpn == remote_qpn);
        loop {
            let from_src = self.conns.iter().filter(|c| c.peer == src && counted(c)).count();
            let total = self.conns.iter().filter(|c| counted(c)).count();
            let victim = if from_src >= self.limits.per_source {
                self.oldest_half_open(|c| c.peer == src)
            } else if total >= self.limits.total {
                let half_open_of =
                    |p: Ipv4Addr| self.conns.iter().filter(|c| !c.established && c.peer == p).count();
                let worst = self.conns.iter().filter(|c| !c.established).max_by_key(|c| half_open_of(c.peer));
                match worst.map(|c| c.peer) {
                    Some(p) => self.oldest_half_open(|c| c.peer == p),
                    None => None,
                }
            } else {
                return true;
            };
            let Some(i) = victim else { return false };
            self.conns.swap_remove(i);
            self.stats.half_open_evicted += 1;
        }
    }

    /// The index of the half-open connection that `pick` takes and was made first.
    fn oldest_half_open(&self, pick: impl Fn(&ServerConn) -> bool) -> Option<usize> {
        self.conns
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.established && pick(c))
            .min_by_key(|(_, c)| c.sent)
            .map(|(i, _)| i)
    }

    /// A packet from `src` arrived on our QP `local_qpn` whose connection is half-open: the
    /// peer had our REP (so it sent), its RTU was lost. Establish it, as a NIC raises IBTA's
    /// communication-established event; the connection, or `None` if no half-open one matches.
    pub fn establish_by_data(&mut self, src: Ipv4Addr, local_qpn: u32) -> Option<Connection> {
        let c = self
            .conns
            .iter_mut()
            .find(|c| !c.established && c.peer == src && c.conn.local_qpn == local_qpn)?;
        c.established = true;
        Some(c.conn)
    }

    /// Forget a connection (the QP was destroyed).
    pub fn remove(&mut self, local_qpn: u32) {
        self.conns.retain(|c| c.conn.local_qpn != local_qpn);
    }
}
