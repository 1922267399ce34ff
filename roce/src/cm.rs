//! The InfiniBand communication manager over RoCEv2 (IBTA Vol. 1 ch. 12), as librdmacm speaks
//! it for `RDMA_PS_TCP`: both sides, and the DTA collector's metadata message.
//!
//! * [`CmClient`] — the active side. `connect` sends a REQ (service ID `0x0106_0000_0000_0000 |
//!   port`, the CMA private-data header with both IPv4 addresses, our QPN and starting PSN);
//!   a REP establishes the connection and is answered with an RTU, sent again every response
//!   timeout (up to `max_req_tries` in all) until [`CmClient::confirm`] (the peer's first packet
//!   on the QP), as the server resends no REP; a REJ, or no answer after
//!   `max_req_tries` REQs, is reported and retried after an exponential backoff; a DREQ from the
//!   peer is answered with a DREP and reported.
//! * [`CmServer`] — the passive side: a REQ for a service it listens on is offered to the
//!   caller, which accepts (a QPN and starting PSN) or rejects it. At most one REP answers each
//!   REQ received (a duplicate REQ gets the same REP again; no timer resends it, so a REQ never
//!   buys more than one reply); the RTU, or failing it the first packet on the new QP
//!   ([`CmServer::establish_by_data`], IBTA's communication-established event), establishes it;
//!   a connection still half-open after `max_req_tries` response timeouts expires. DREQ is
//!   answered with DREP. Limits ([`CmLimits`]) count every half-open and established
//!   connection, whatever QPN a REQ names; at a limit the oldest half-open connection of the
//!   source holding the most goes first, so a flood of REQs never locks out a legitimate
//!   reconnect.
//! * [`Metadata`] — the 16-byte SEND a DTA collector posts after accepting: VA low, VA high,
//!   length, key, each a little-endian `u32`, as the reference collector sends them.
//!
//! MADs are [`CmMadRepr`]s; [`crate::frames::cm_mad`] puts one into a UD SEND to QP 1.

use core::net::Ipv4Addr;

use wire::ibcm::{
    CmMadRepr, CmMessage, CmaAddrs, CmaHeaderRepr, DrepRepr, DreqRepr, PathRepr, RejRepr, RepRepr, ReqRepr,
    RtuRepr, ipv4_mapped_gid, port_space, private_len, rdma_cm_port, rdma_cm_service_id, transport,
};
use wire::roce::{DEFAULT_PKEY, PSN_MASK};

use crate::requester::Transport;

/// Timers and retries of the CM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmConfig {
    /// How long to wait for an answer (REP to a REQ, RTU to a REP) before sending again.
    pub response_timeout_ns: u64,
    /// REQs (or REPs) sent before the attempt counts as timed out.
    pub max_req_tries: u32,
    /// First backoff after a failed attempt; doubled each time.
    pub backoff_initial_ns: u64,
    /// Longest backoff.
    pub backoff_max_ns: u64,
}

impl Default for CmConfig {
    fn default() -> Self {
        Self {
            response_timeout_ns: 200_000_000,
            max_req_tries: 4,
            backoff_initial_ns: 100_000_000,
            backoff_max_ns: 10_000_000_000,
        }
    }
}

/// One side's view of an established connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    /// Our communication ID.
    pub local_comm_id: u32,
    /// The peer's communication ID.
    pub remote_comm_id: u32,
    /// Our QPN.
    pub local_qpn: u32,
    /// The peer's QPN: the destination of what we send.
    pub remote_qpn: u32,
    /// The PSN our first request carries.
    pub local_psn: u32,
    /// The PSN the peer's first request carries: what our responder expects.
    pub remote_psn: u32,
    /// The librdmacm port (from the service ID).
    pub port: u16,
}

/// What the active side asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectParams {
    /// Our address.
    pub local_ip: Ipv4Addr,
    /// The listener's address.
    pub remote_ip: Ipv4Addr,
    /// The listener's librdmacm port (its service ID is derived for `RDMA_PS_TCP`).
    pub port: u16,
    /// Our QPN.
    pub local_qpn: u32,
    /// Our starting PSN.
    pub start_psn: u32,
    /// Our CA GUID.
    pub ca_guid: u64,
    /// Path MTU code (3: 1024 bytes, 5: 4096 bytes).
    pub path_mtu: u8,
    /// RC or UC.
    pub transport: Transport,
    /// The source port in librdmacm's private-data header.
    pub src_port: u16,
}

/// Why a connection attempt failed or ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The peer rejected the REQ (IBTA reason code, e.g. 28 = consumer reject).
    #[error("rejected (reason {0})")]
    Rejected(u16),
    /// No REP after every REQ.
    #[error("no answer")]
    Timeout,
    /// The peer disconnected (DREQ).
    #[error("disconnected by the peer")]
    Disconnected,
}

/// The active side's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    /// Nothing sent yet.
    Idle,
    /// A REQ is out.
    Connecting {
        /// When the last REQ went.
        sent: u64,
        /// REQs sent in this attempt.
        tries: u32,
    },
    /// Connected.
    Established(Connection),
    /// Waiting before the next attempt.
    Backoff {
        /// When to try again.
        until: u64,
        /// Why the last attempt failed.
        why: ConnectError,
    },
}

/// What a CM call produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmOut<E> {
    /// A MAD to send.
    pub send: Option<CmMadRepr>,
    /// Something that happened.
    pub event: Option<E>,
}

impl<E> Default for CmOut<E> {
    fn default() -> Self {
        Self { send: None, event: None }
    }
}

/// Events of the active side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientEvent {
    /// The connection is up (the RTU is in `send`).
    Established(Connection),
    /// The attempt failed, or the connection ended; a new attempt follows the backoff.
    Failed(ConnectError),
}

/// The active side of one connection (librdmacm's `rdma_connect`).
#[derive(Debug, Clone)]
pub struct CmClient {
    cfg: CmConfig,
    params: ConnectParams,
    state: ClientState,
    comm_id: u32,
    tid: u64,
    failures: u32,
    /// RTU copies still to send while the peer has not confirmed the connection (the server
    /// answers each REQ with one REP and never resends it, so a lost RTU is the client's to
    /// repeat), and when the last one went.
    rtu_left: u32,
    rtu_sent: u64,
}

impl CmClient {
    /// A client for `params`; `comm_id` seeds its communication IDs (one per attempt).
    pub fn new(cfg: CmConfig, params: ConnectParams, comm_id: u32) -> Self {
        Self {
            cfg,
            params,
            state: ClientState::Idle,
            comm_id,
            tid: u64::from(comm_id) << 16,
            failures: 0,
            rtu_left: 0,
            rtu_sent: 0,
        }
    }

    /// The state.
    pub fn state(&self) -> ClientState {
        self.state
    }

    /// The parameters (the starting PSN may be changed between attempts).
    pub fn params_mut(&mut self) -> &mut ConnectParams {
        &mut self.params
    }

    /// The parameters.
    pub fn params(&self) -> &ConnectParams {
        &self.params
    }

    /// The connection, if established.
    pub fn connection(&self) -> Option<Connection> {
        match self.state {
            ClientState::Established(c) => Some(c),
            _ => None,
        }
    }

    /// Begin a new attempt now: returns the REQ.
    pub fn connect(&mut self, now: u64) -> CmMadRepr {
        self.comm_id = self.comm_id.wrapping_add(1).max(1);
        self.tid = self.tid.wrapping_add(1);
        self.state = ClientState::Connecting { sent: now, tries: 1 };
        self.req()
    }

    fn req(&self) -> CmMadRepr {
        let p = &self.params;
        let mut private_data = [0u8; private_len::REQ];
        let cma = CmaHeaderRepr {
            version: 0,
            port: p.src_port,
            addrs: CmaAddrs::V4 { src: p.local_ip, dst: p.remote_ip },
        };
        // The buffer is larger than the header: emit cannot fail.
        let _ = cma.emit(&mut private_data);
        let path = PathRepr {
            local_lid: 0xffff,
            remote_lid: 0xffff,
            local_gid: ipv4_mapped_gid(p.local_ip),
            remote_gid: ipv4_mapped_gid(p.remote_ip),
            flow_label: 0,
            packet_rate: 0x02,
            traffic_class: 0,
            hop_limit: 64,
            sl: 0,
            subnet_local: true,
            local_ack_timeout: 18,
        };
        CmMadRepr::send(
            self.tid,
            CmMessage::Req(ReqRepr {
                local_comm_id: self.comm_id,
                vendor_id: 0,
                service_id: rdma_cm_service_id(port_space::TCP, p.port),
                local_ca_guid: p.ca_guid,
                local_qkey: 0,
                local_qpn: p.local_qpn & PSN_MASK,
                responder_resources: 1,
                local_eecn: 0,
                initiator_depth: 1,
                remote_eecn: 0,
                remote_cm_response_timeout: 20,
                transport_type: match p.transport {
                    Transport::Rc => transport::RC,
                    Transport::Uc => transport::UC,
                },
                e2e_flow_control: false,
                starting_psn: p.start_psn & PSN_MASK,
                local_cm_response_timeout: 20,
                retry_count: 7,
                pkey: DEFAULT_PKEY,
                path_mtu: p.path_mtu,
                rdc_exists: false,
                rnr_retry_count: 7,
                max_cm_retries: 15,
                srq: false,
                extended_transport_type: 0,
                primary_path: path,
                alternate_path: PathRepr::default(),
                private_data,
            }),
        )
    }

    /// The peer confirmed the connection (its first packet on the QP, e.g. the collector's
    /// metadata SEND): no more RTU copies.
    pub fn confirm(&mut self) {
        self.rtu_left = 0;
    }

    fn backoff(&mut self, now: u64, why: ConnectError) -> CmOut<ClientEvent> {
        self.rtu_left = 0;
        let shift = self.failures.min(20);
        self.failures += 1;
        let wait = self.cfg.backoff_initial_ns.saturating_mul(1 << shift).min(self.cfg.backoff_max_ns);
        self.state = ClientState::Backoff { until: now + wait, why };
        CmOut { send: None, event: Some(ClientEvent::Failed(why)) }
    }

    /// Handle a MAD addressed to us.
    pub fn handle_packet(&mut self, now: u64, mad: &CmMadRepr) -> CmOut<ClientEvent> {
        match (&mad.message, self.state) {
            (CmMessage::Rep(rep), ClientState::Connecting { .. }) if rep.remote_comm_id == self.comm_id => {
                let conn = Connection {
                    local_comm_id: self.comm_id,
                    remote_comm_id: rep.local_comm_id,
                    local_qpn: self.params.local_qpn & PSN_MASK,
                    remote_qpn: rep.local_qpn,
                    local_psn: self.params.start_psn & PSN_MASK,
                    remote_psn: rep.starting_psn,
                    port: self.params.port,
                };
                self.state = ClientState::Established(conn);
                self.failures = 0;
                self.rtu_left = self.cfg.max_req_tries.saturating_sub(1);
                self.rtu_sent = now;
                CmOut { send: Some(self.rtu(rep.local_comm_id)), event: Some(ClientEvent::Established(conn)) }
            }
            // A REP again (our RTU was lost): send the RTU again.
            (CmMessage::Rep(rep), ClientState::Established(c)) if rep.remote_comm_id == c.local_comm_id => {
                CmOut { send: Some(self.rtu(rep.local_comm_id)), event: None }
            }
            (CmMessage::Rej(rej), ClientState::Connecting { .. })
                if rej.remote_comm_id == self.comm_id && rej.message_rejected == 0 =>
            {
                self.backoff(now, ConnectError::Rejected(rej.reason))
            }
            // A DREQ for this connection: both communication IDs and our QPN must match (the
            // caller has checked the packet came from the peer); a guessed one is ignored.
            (CmMessage::Dreq(d), ClientState::Established(c))
                if d.remote_comm_id == c.local_comm_id
                    && d.local_comm_id == c.remote_comm_id
                    && d.remote_qpn == c.local_qpn =>
            {
                let drep = CmMadRepr::send(
                    mad.tid,
                    CmMessage::Drep(DrepRepr {
                        local_comm_id: c.local_comm_id,
                        remote_comm_id: c.remote_comm_id,
                        private_data: [0; private_len::DREP],
                    }),
                );
                let mut out = self.backoff(now, ConnectError::Disconnected);
                // Reconnect soon, not after a long backoff: the peer went away deliberately.
                self.state = ClientState::Backoff {
                    until: now + self.cfg.backoff_initial_ns,
                    why: ConnectError::Disconnected,
                };
                out.send = Some(drep);
                out
            }
            _ => CmOut::default(),
        }
    }

    fn rtu(&self, remote_comm_id: u32) -> CmMadRepr {
        CmMadRepr::send(
            self.tid,
            CmMessage::Rtu(RtuRepr {
                local_comm_id: self.comm_id,
                remote_comm_id,
                private_data: [0; private_len::RTU],
            }),
        )
    }

    /// Drive the timers: resend the REQ, give up on an attempt, start the next one.
    pub fn handle_timeout(&mut self, now: u64) -> CmOut<ClientEvent> {
        match self.state {
            ClientState::Connecting { sent, tries }
                if now.saturating_sub(sent) >= self.cfg.response_timeout_ns =>
            {
                if tries >= self.cfg.max_req_tries {
                    return self.backoff(now, ConnectError::Timeout);
                }
                self.state = ClientState::Connecting { sent: now, tries: tries + 1 };
                CmOut { send: Some(self.req()), event: None }
            }
            ClientState::Backoff { until, .. } if now >= until => {
                CmOut { send: Some(self.connect(now)), event: None }
            }
            // Not confirmed yet: the RTU may have been lost; send it again.
            ClientState::Established(c)
                if self.rtu_left > 0 && now.saturating_sub(self.rtu_sent) >= self.cfg.response_timeout_ns =>
            {
                self.rtu_left -= 1;
                self.rtu_sent = now;
                CmOut { send: Some(self.rtu(c.remote_comm_id)), event: None }
            }
            _ => CmOut::default(),
        }
    }

    /// The connection is no longer usable (its QP failed): forget it and connect again after
    /// the backoff. Returns a DREQ for the peer if one was established.
    pub fn reset(&mut self, now: u64, why: ConnectError) -> Option<CmMadRepr> {
        let dreq = self.connection().map(|c| {
            CmMadRepr::send(
                self.tid,
                CmMessage::Dreq(DreqRepr {
                    local_comm_id: c.local_comm_id,
                    remote_comm_id: c.remote_comm_id,
                    remote_qpn: c.remote_qpn,
                    private_data: [0; private_len::DREQ],
                }),
            )
        });
        self.backoff(now, why);
        dreq
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has something to do.
    pub fn poll_timeout(&self) -> Option<u64> {
        match self.state {
            ClientState::Connecting { sent, .. } => Some(sent + self.cfg.response_timeout_ns),
            ClientState::Backoff { until, .. } => Some(until),
            ClientState::Established(_) if self.rtu_left > 0 => {
                Some(self.rtu_sent + self.cfg.response_timeout_ns)
            }
            _ => None,
        }
    }
}

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
    fn next_comm_id(&mut self) -> u32 {
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

/// Length of the metadata message.
pub const METADATA_LEN: usize = 16;

/// Length of the metadata message with a ring head (our extension).
pub const METADATA_HEAD_LEN: usize = 24;

/// What a DTA collector tells the translator about a registered region, in a 16-byte SEND:
/// four little-endian `u32`s — VA low, VA high, length, key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata {
    /// Virtual address of the region.
    pub va: u64,
    /// Its length.
    pub len: u32,
    /// Its remote key.
    pub rkey: u32,
}

impl Metadata {
    /// The 16 bytes.
    pub fn encode(&self) -> [u8; METADATA_LEN] {
        let mut b = [0u8; METADATA_LEN];
        b[0..4].copy_from_slice(&(self.va as u32).to_le_bytes());
        b[4..8].copy_from_slice(&((self.va >> 32) as u32).to_le_bytes());
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[12..16].copy_from_slice(&self.rkey.to_le_bytes());
        b
    }

    /// The 24 bytes of our extension: the 16, then the region's Append ring head (entries
    /// written since the collector started, a little-endian `u64`), so a translator that
    /// (re)connects to a collector that kept its memory continues the list where it stands.
    /// The reference collector sends 16 bytes; a translator then starts its lists at 0.
    pub fn encode_with_head(&self, head: u64) -> [u8; METADATA_HEAD_LEN] {
        let mut b = [0u8; METADATA_HEAD_LEN];
        b[..METADATA_LEN].copy_from_slice(&self.encode());
        b[METADATA_LEN..].copy_from_slice(&head.to_le_bytes());
        b
    }

    /// Read a SEND's payload of 16 bytes, or 24 with a ring head; anything else is refused.
    pub fn decode_with_head(b: &[u8]) -> Option<(Self, Option<u64>)> {
        match b.len() {
            METADATA_LEN => Some((Self::decode(b)?, None)),
            METADATA_HEAD_LEN => {
                let head = u64::from_le_bytes(b[METADATA_LEN..].try_into().ok()?);
                Some((Self::decode(&b[..METADATA_LEN])?, Some(head)))
            }
            _ => None,
        }
    }

    /// Read a SEND's payload; anything but 16 bytes is refused.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b: &[u8; METADATA_LEN] = b.try_into().ok()?;
        let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Some(Self { va: u64::from(w(0)) | (u64::from(w(4)) << 32), len: w(8), rkey: w(12) })
    }
}

#[cfg(test)]
mod tests;
