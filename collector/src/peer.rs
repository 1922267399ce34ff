//! A blocking RoCEv2 peer on a UDP socket: a translator's side of one connection to a
//! collector, one packet at a time, for tests, benchmarks and tools that must speak to a
//! (soft or real) RNIC without the whole translator. Not a requester: it keeps no window and
//! retransmits nothing — the caller decides what to send and reads what comes back.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use roce::cm::{ClientEvent, CmClient, CmConfig, ConnectParams, Connection, Metadata};
use roce::frames;
use roce::requester::Transport;
use roce::responder::Reply;
use wire::ethernet::EthernetAddress;
use wire::ibcm::{CmMadRepr, MAD_LEN};
use wire::roce::{Opcode, RoceRepr, Syndrome};
use wire::stack::{RoceStack, UdpFlow};
use wire::udp::port::ROCE_V2;

/// A packet the peer received, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// Its opcode.
    pub opcode: Opcode,
    /// Its PSN.
    pub psn: u32,
    /// Its AETH syndrome (ACKs and NAKs).
    pub syndrome: Option<Syndrome>,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// Why [`UdpPeer::connect`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectFailed {
    /// The socket failed.
    #[error("socket: {0}")]
    Io(#[from] io::Error),
    /// Nothing, or not what the CM exchange expects, came back in time.
    #[error("no {0} from the collector")]
    Missing(&'static str),
    /// The collector refused or the exchange broke down.
    #[error("connection failed: {0}")]
    Refused(String),
}

/// One UDP socket on port 4791 of `me`, talking to port 4791 of `collector`.
#[derive(Debug)]
pub struct UdpPeer {
    sock: UdpSocket,
    me: SocketAddrV4,
    collector: SocketAddrV4,
}

impl UdpPeer {
    /// Bind `me`:4791; receives wait up to `timeout`.
    pub fn bind(me: Ipv4Addr, collector: Ipv4Addr, timeout: Duration) -> io::Result<Self> {
        let me = SocketAddrV4::new(me, ROCE_V2);
        let sock = UdpSocket::bind(me)?;
        sock.set_read_timeout(Some(timeout))?;
        Ok(Self { sock, me, collector: SocketAddrV4::new(collector, ROCE_V2) })
    }

    /// The socket (for sending and receiving in bulk).
    pub fn socket(&self) -> &UdpSocket {
        &self.sock
    }

    /// The IPv4/UDP header the kernel puts on what this peer sends (the ICRC covers it), in
    /// front of an Ethernet header no one sees.
    pub fn flow(&self) -> UdpFlow {
        let mac = EthernetAddress([2, 0, 0, 0, 0, 1]);
        UdpFlow::host_udp(mac, mac, self.me, self.collector)
    }

    /// Send `roce` with its ICRC — or, with `spoil_icrc`, a wrong one.
    pub fn send(&self, roce: RoceRepr<'_>, spoil_icrc: bool) -> io::Result<()> {
        let mut b = [0u8; 4200];
        let flow = self.flow();
        let n = RoceStack { flow, roce }
            .emit(&mut b)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        if spoil_icrc {
            b[n - 1] ^= 0x5a;
        }
        self.sock.send_to(&b[flow.headers_len()..n], self.collector).map(|_| ())
    }

    /// The next packet, if one comes before the timeout. Datagrams that are not RoCEv2 are
    /// skipped.
    pub fn recv(&self) -> Option<Received> {
        let mut b = [0u8; 4200];
        loop {
            let n = self.sock.recv(&mut b).ok()?;
            if let Ok(r) = RoceRepr::parse(&b[..n]) {
                return Some(Received {
                    opcode: r.bth.opcode,
                    psn: r.bth.psn,
                    syndrome: r.ext.aeth.map(|a| a.syndrome),
                    payload: r.payload.to_vec(),
                });
            }
        }
    }

    /// Connect an RC QP numbered `qpn`, first PSN `psn`, to the data structure on librdmacm
    /// port `port`: REQ → REP → RTU, then receive the collector's metadata SEND and ACK it.
    pub fn connect(&self, port: u16, qpn: u32, psn: u32) -> Result<(Connection, Metadata), ConnectFailed> {
        let params = ConnectParams {
            local_ip: *self.me.ip(),
            remote_ip: *self.collector.ip(),
            port,
            local_qpn: qpn,
            start_psn: psn,
            ca_guid: 0x02_00_00_00_00_00_00_01,
            path_mtu: 3,
            transport: Transport::Rc,
            src_port: 50_000,
        };
        let mut cm = CmClient::new(CmConfig::default(), params, qpn ^ 0x5a5a);
        let mad = |m: &CmMadRepr| {
            let mut b = [0u8; MAD_LEN];
            m.emit(&mut b).map(|_| b).map_err(|e| ConnectFailed::Refused(e.to_string()))
        };
        self.send(frames::cm_mad(0, &mad(&cm.start(0))?), false)?;
        let rep =
            self.recv().filter(|r| r.opcode == Opcode::UD_SEND_ONLY).ok_or(ConnectFailed::Missing("REP"))?;
        let rep = CmMadRepr::parse(&rep.payload).map_err(|e| ConnectFailed::Refused(e.to_string()))?;
        let out = cm.on_mad(1, &rep);
        let Some(ClientEvent::Established(conn)) = out.event else {
            return Err(ConnectFailed::Refused(format!("{:?}", out.event)));
        };
        self.send(frames::cm_mad(1, &mad(&out.send.ok_or(ConnectFailed::Missing("RTU to send"))?)?), false)?;
        let meta = self
            .recv()
            .filter(|r| r.opcode == Opcode::RC_SEND_ONLY)
            .ok_or(ConnectFailed::Missing("metadata SEND"))?;
        let ack = Reply::Ack { psn: meta.psn, msn: 1 };
        self.send(frames::reply(conn.remote_qpn, &ack).ok_or(ConnectFailed::Missing("ACK"))?, false)?;
        let meta = Metadata::decode(&meta.payload).ok_or(ConnectFailed::Missing("16-byte metadata"))?;
        Ok((conn, meta))
    }
}
