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
    CmMadRepr, CmMessage, CmaAddrs, CmaHeaderRepr, DrepRepr, DreqRepr, PathRepr, ReqRepr, RtuRepr,
    ipv4_mapped_gid, port_space, private_len, rdma_cm_service_id, transport,
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

mod server;
pub use server::{Accept, CmLimits, CmServer, CmServerStats, Request, ServerEvent};

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
