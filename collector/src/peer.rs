//! A blocking RoCEv2 peer on a UDP socket: a translator's side of one connection to a
//! collector, one packet at a time, for tests, benchmarks and tools that must speak to a
//! (soft or real) RNIC without the whole translator. Not a requester: it keeps no window and
//! retransmits nothing — the caller decides what to send and reads what comes back. It does
//! answer the collector's own retransmissions as an RC responder and a CM client must: a
//! repeated REP gets the RTU again, a repeated metadata SEND its ACK again, and neither is
//! returned to the caller.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use ports::buf::{Frame, HeapPool, PktBuf, Pool};
use ports::port::{AfPacketPort, PortIo, fill};
use roce::cm::{ClientEvent, CmClient, CmConfig, ConnectParams, Connection, Metadata};
use roce::frames;
use roce::requester::Transport;
use roce::responder::Reply;
use wire::ethernet::{EthernetAddress, EthernetFrame};
use wire::ibcm::{CmMadRepr, CmMessage, MAD_LEN};
use wire::ipv4::{Ipv4Packet, protocol};
use wire::roce::{Opcode, RoceRepr, Syndrome};
use wire::stack::{RoceStack, UdpFlow};
use wire::udp::UdpPacket;
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

/// RoCEv2 (UDP port 4791) between `me` and `collector`: through the host's UDP socket, or as
/// whole frames on an interface (AF_PACKET) — then the IPv4 header the ICRC covers is exactly
/// the one built here (a kernel socket picks the identification itself: recent kernels set a
/// non-zero one even with DF, which only a receiver that sees the header can check).
#[derive(Debug)]
pub struct UdpPeer {
    sock: UdpSocket,
    me: SocketAddrV4,
    collector: SocketAddrV4,
    frames: Option<Frames>,
    timeout: Duration,
    answered: std::sync::Mutex<Answered>,
}

/// What the peer answered during [`UdpPeer::connect`], to answer the collector's copies alike.
#[derive(Debug, Default, Clone, Copy)]
struct Answered {
    /// The RTU sent for the REP.
    rtu: Option<[u8; MAD_LEN]>,
    /// The collector's QPN and its metadata SEND's PSN, ACKed.
    metadata: Option<(u32, u32)>,
}

/// The frame path: the port, its buffers, and the MACs.
#[derive(Debug)]
struct Frames {
    port: std::sync::Mutex<(AfPacketPort, HeapPool)>,
    mac: EthernetAddress,
    collector_mac: EthernetAddress,
}

impl UdpPeer {
    /// Bind `me`:4791; receives wait up to `timeout`.
    pub fn bind(me: Ipv4Addr, collector: Ipv4Addr, timeout: Duration) -> io::Result<Self> {
        let me = SocketAddrV4::new(me, ROCE_V2);
        let sock = UdpSocket::bind(me)?;
        sock.set_read_timeout(Some(timeout))?;
        Ok(Self {
            sock,
            me,
            collector: SocketAddrV4::new(collector, ROCE_V2),
            frames: None,
            timeout,
            answered: Default::default(),
        })
    }

    /// Send and receive whole frames on `iface` (AF_PACKET, root) from `me` with MAC `mac` to
    /// the collector at `collector_mac`. A UDP socket is still bound on `me`:4791, so the
    /// kernel answers nothing itself to the collector's replies.
    pub fn af_packet(
        iface: &str,
        me: Ipv4Addr,
        mac: EthernetAddress,
        collector: Ipv4Addr,
        collector_mac: EthernetAddress,
        timeout: Duration,
    ) -> io::Result<Self> {
        let mut p = Self::bind(me, collector, timeout)?;
        let port = AfPacketPort::open(iface)?;
        let pool = HeapPool::new(64, ports::buf::DEFAULT_DATAROOM);
        p.frames = Some(Frames { port: std::sync::Mutex::new((port, pool)), mac, collector_mac });
        Ok(p)
    }

    /// The socket (for sending and receiving in bulk).
    pub fn socket(&self) -> &UdpSocket {
        &self.sock
    }

    /// The IPv4/UDP header the kernel puts on what this peer sends (the ICRC covers it), in
    /// front of an Ethernet header no one sees.
    pub fn flow(&self) -> UdpFlow {
        // Over a UDP socket the Ethernet header is never sent: any MAC will do.
        let any = EthernetAddress([2, 0, 0, 0, 0, 1]);
        let (mac, dst) = self.frames.as_ref().map_or((any, any), |f| (f.mac, f.collector_mac));
        UdpFlow::host_udp(mac, dst, self.me, self.collector)
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
        let Some(f) = &self.frames else {
            return self.sock.send_to(&b[flow.headers_len()..n], self.collector).map(|_| ());
        };
        let mut g = f.port.lock().unwrap_or_else(|e| e.into_inner());
        let (port, pool) = &mut *g;
        let frame =
            fill(pool as &mut dyn Pool<PktBuf>, &b[..n]).ok_or_else(|| io::Error::other("no buffer"))?;
        let mut out = vec![frame];
        if port.tx_burst(&mut out, pool) == 1 { Ok(()) } else { Err(io::Error::other("not sent")) }
    }

    /// The next packet, if one comes before the timeout. Datagrams that are not RoCEv2 are
    /// skipped, and so are copies of the REP and the metadata SEND (answered again).
    pub fn recv(&self) -> Option<Received> {
        loop {
            let r = self.recv_any()?;
            let answered = *self.answered.lock().unwrap_or_else(|e| e.into_inner());
            match (r.opcode, answered) {
                (Opcode::UD_SEND_ONLY, Answered { rtu: Some(rtu), .. }) if is_rep(&r.payload) => {
                    self.send_rtu(&rtu).ok()?;
                }
                (Opcode::RC_SEND_ONLY, Answered { metadata: Some((qpn, psn)), .. }) if r.psn == psn => {
                    self.ack_metadata(qpn, psn).ok()?;
                }
                _ => return Some(r),
            }
        }
    }

    /// Send the RTU (first time and for every copy of the REP alike).
    fn send_rtu(&self, rtu: &[u8; MAD_LEN]) -> io::Result<()> {
        self.send(frames::cm_mad(1, rtu), false)
    }

    /// ACK the collector's metadata SEND (first time and for every copy alike).
    fn ack_metadata(&self, qpn: u32, psn: u32) -> Result<(), ConnectFailed> {
        let ack = frames::reply(qpn, &Reply::Ack { psn, msn: 1 }).ok_or(ConnectFailed::Missing("ACK"))?;
        Ok(self.send(ack, false)?)
    }

    fn recv_any(&self) -> Option<Received> {
        if let Some(f) = &self.frames {
            return self.recv_frame(f);
        }
        let mut b = [0u8; 4200];
        loop {
            let n = self.sock.recv(&mut b).ok()?;
            if let Ok(r) = RoceRepr::parse(&b[..n]) {
                return Some(received(&r));
            }
        }
    }

    fn recv_frame(&self, f: &Frames) -> Option<Received> {
        let until = std::time::Instant::now() + self.timeout;
        let mut g = f.port.lock().unwrap_or_else(|e| e.into_inner());
        let (port, pool) = &mut *g;
        let mut got = Vec::new();
        while std::time::Instant::now() < until {
            port.rx_burst(pool, &mut got, 1);
            let Some(fr) = got.pop() else {
                std::thread::sleep(Duration::from_micros(200));
                continue;
            };
            let r = roce_to(fr.data(), *self.me.ip());
            pool.free(fr);
            if r.is_some() {
                return r;
            }
        }
        None
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
        self.send(frames::cm_mad(0, &mad(&cm.connect(0))?), false)?;
        let rep =
            self.recv().filter(|r| r.opcode == Opcode::UD_SEND_ONLY).ok_or(ConnectFailed::Missing("REP"))?;
        let rep = CmMadRepr::parse(&rep.payload).map_err(|e| ConnectFailed::Refused(e.to_string()))?;
        let out = cm.handle_packet(1, &rep);
        let Some(ClientEvent::Established(conn)) = out.event else {
            return Err(ConnectFailed::Refused(format!("{:?}", out.event)));
        };
        let rtu = mad(&out.send.ok_or(ConnectFailed::Missing("RTU to send"))?)?;
        self.send_rtu(&rtu)?;
        *self.answered.lock().unwrap_or_else(|e| e.into_inner()) =
            Answered { rtu: Some(rtu), metadata: None };
        // The collector resends no REP: a lost RTU is ours to send again (up to three more
        // times, one receive timeout apart) until its metadata SEND shows it has the connection.
        let mut meta = self.recv().filter(|r| r.opcode == Opcode::RC_SEND_ONLY);
        for _ in 0..3 {
            if meta.is_some() {
                break;
            }
            self.send_rtu(&rtu)?;
            meta = self.recv().filter(|r| r.opcode == Opcode::RC_SEND_ONLY);
        }
        let meta = meta.ok_or(ConnectFailed::Missing("metadata SEND"))?;
        self.ack_metadata(conn.remote_qpn, meta.psn)?;
        self.answered.lock().unwrap_or_else(|e| e.into_inner()).metadata = Some((conn.remote_qpn, meta.psn));
        let meta = Metadata::decode(&meta.payload).ok_or(ConnectFailed::Missing("16-byte metadata"))?;
        Ok((conn, meta))
    }
}

/// Whether a CM MAD is a REP (only a REP's copy is answered with the RTU again; any other MAD,
/// a DREQ say, goes to the caller).
fn is_rep(mad: &[u8]) -> bool {
    CmMadRepr::parse(mad).is_ok_and(|m| matches!(m.message, CmMessage::Rep(_)))
}

/// What a RoCEv2 packet in an Ethernet/IPv4/UDP frame addressed to `me` says, if it is one.
fn roce_to(frame: &[u8], me: Ipv4Addr) -> Option<Received> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.dst_addr() != me || ip.protocol() != protocol::UDP {
        return None;
    }
    let udp = UdpPacket::new_checked(ip.payload()).ok()?;
    if udp.dst_port() != ROCE_V2 {
        return None;
    }
    RoceRepr::parse(udp.payload()).ok().map(|r| received(&r))
}

fn received(r: &RoceRepr<'_>) -> Received {
    Received {
        opcode: r.bth.opcode,
        psn: r.bth.psn,
        syndrome: r.ext.aeth.map(|a| a.syndrome),
        payload: r.payload.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce::endpoint::{Endpoint, Listen};
    use roce::requester::Op;
    use roce::responder::NoMemory;
    use std::sync::mpsc;

    /// A lost RTU is sent again by the peer (the collector resends no REP); the collector's
    /// copy of the metadata SEND (its ACK lost) is answered again and never handed to the
    /// caller as the answer to its next request.
    #[test]
    fn a_lost_rtu_is_sent_again_and_metadata_copies_are_answered_not_returned() {
        let (me, coll) = (Ipv4Addr::new(127, 0, 0, 91), Ipv4Addr::new(127, 0, 0, 92));
        let sock = UdpSocket::bind(SocketAddrV4::new(coll, ROCE_V2)).unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let meta = Metadata { va: 0x1000, len: 64, rkey: 0x42 };
        let listens = vec![Listen { port: 1337, metadata: Some(meta) }];
        let mut ep = Endpoint::new(CmConfig::default(), 2, listens, NoMemory, 3);
        // The collector, on a virtual clock: loses the first RTU (the peer sends it again when
        // no metadata comes); loses the metadata SEND's ACK and, on request, runs its timers a
        // second later (past the ACK timeout), which resends the SEND.
        let (expire, expired) = mpsc::channel::<()>();
        let coll_thread = std::thread::spawn(move || {
            let peer = SocketAddrV4::new(me, ROCE_V2);
            let mut b = [0u8; 4200];
            let (mut now, mut mads_seen, mut acks_seen) = (0u64, 0, 0);
            let mut out = |_: Ipv4Addr, r: RoceRepr<'_>| {
                let mut f = [0u8; 4200];
                let n = r.emit(&mut f).unwrap();
                sock.send_to(&f[..n], peer).unwrap();
            };
            let until = std::time::Instant::now() + Duration::from_secs(5);
            while acks_seen < 2 && std::time::Instant::now() < until {
                if expired.try_recv().is_ok() {
                    now += 1_000_000_000;
                    ep.handle_timeout(now, &mut out);
                }
                if let Ok(n) = sock.recv(&mut b)
                    && let Ok(r) = RoceRepr::parse(&b[..n])
                {
                    match r.bth.opcode {
                        Opcode::UD_SEND_ONLY => {
                            mads_seen += 1;
                            if mads_seen == 2 {
                                // The RTU, lost.
                                continue;
                            }
                        }
                        Opcode::RC_ACKNOWLEDGE => {
                            acks_seen += 1;
                            if acks_seen == 1 {
                                continue; // lost
                            }
                        }
                        _ => {}
                    }
                    ep.handle_packet(now, me, &r, &mut out);
                }
            }
            (mads_seen, acks_seen)
        });
        let peer = UdpPeer::bind(me, coll, Duration::from_secs(2)).unwrap();
        let (conn, got) = peer.connect(1337, 0x31, 7).unwrap();
        assert_eq!(got, meta);
        expire.send(()).unwrap();
        // The next request's answer (a NAK: no memory here) is what recv returns, not the copy.
        std::thread::sleep(Duration::from_millis(100));
        let op = Op::Write { va: 0x1000, rkey: 0x42, imm: None };
        peer.send(frames::request(Transport::Rc, conn.remote_qpn, 7, true, &op, &[1; 8]), false).unwrap();
        let r = peer.recv().unwrap();
        assert_eq!((r.opcode, r.psn), (Opcode::RC_ACKNOWLEDGE, 7));
        assert!(matches!(r.syndrome, Some(Syndrome::Nak(_))), "{r:?}");
        // REQ, the lost RTU and its copy; the first ACK, then the one for the SEND's copy.
        assert_eq!(coll_thread.join().unwrap(), (3, 2));
    }
}
