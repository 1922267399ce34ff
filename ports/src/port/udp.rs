//! UDP ports: the switch attached to the host's own IP stack through UDP sockets, with no
//! root, no AF_PACKET and no NIC of its own — how a DTA translator runs as a plain service on
//! a server (reports in on UDP 40040, RoCEv2 out to a collector on UDP 4791), and how the demo
//! and the end-to-end tests connect a translator to a soft-RNIC collector on loopback.
//!
//! The port stands for a host network seen through its sockets:
//!
//! * **Receive**: datagrams arriving on the listening sockets (one per configured UDP port, all
//!   bound to the port's address) become Ethernet/IPv4/UDP frames addressed to the port's MAC,
//!   from a synthetic MAC made of the sender's address (`02:00:` + its four IPv4 bytes), with
//!   TTL 64, DF set, identification 0 and UDP checksum 0 — the kernel does not hand over the
//!   real IPv4 header. A RoCEv2 datagram that is segment k > 0 of a GRO buffer gets
//!   identification k instead when its ICRC says so (it was segment k of a GSO send).
//! * **Transmit**: an IPv4/UDP frame is sent as its UDP payload from a socket bound to the
//!   frame's source address and source port (opened on first use, so a RoCEv2 queue pair keeps
//!   the UDP source port its ICRC covers) to the frame's destination address and port. Runs of
//!   equal-sized datagrams to one destination go out as one GSO send. An ARP request is
//!   answered by the port itself with the synthetic MAC of the address asked for (the host's
//!   stack does the real resolution). Anything else is counted as a transmit error.
//!
//! For RoCEv2 the kernel writes the IPv4 header, and the ICRC covers the addresses, the
//! identification and the flags. Every socket sends with DF (`IP_PMTUDISC_DO`) and unconnected,
//! where Linux writes identification 0; the segments of a GSO send get 0, 1, 2, …, so a RoCEv2
//! datagram that is segment k of a run leaves with its ICRC computed for identification k
//! ([`stamp_icrc_for_segment`]). `tests/dta_netns.rs` captures the veths and checks every
//! RoCEv2 frame's ICRC with scapy.
//! Datagrams and frames are copied between socket and buffer (as AF_PACKET does); the syscalls
//! are batched (`recvmmsg`, GRO, GSO) by `quinn-udp`.

use std::collections::VecDeque;
use std::io::{self, IoSliceMut};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};

use quinn_udp::{RecvMeta, Transmit, UdpSocketState};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::ipv4::{Ipv4Packet, protocol};
use wire::stack::UdpFlow;
use wire::udp::UdpPacket;

use super::{PortIo, PortStats};
use crate::buf::{Frame, Pool};

/// Datagrams taken per `recvmmsg`.
const RX_BATCH: usize = 32;
/// Largest datagram a port passes (what fits a default packet buffer with its headers).
const MAX_DATAGRAM: usize = 1500;
/// Sending sockets a port opens at most (one per UDP source port in use).
const MAX_TX_SOCKETS: usize = 256;

/// The synthetic MAC a UDP port gives the host at `ip`.
pub fn peer_mac(ip: Ipv4Addr) -> EthernetAddress {
    let o = ip.octets();
    EthernetAddress([0x02, 0x00, o[0], o[1], o[2], o[3]])
}

/// A nonblocking UDP socket bound to `addr` for batched IO (`quinn-udp`'s state: recvmmsg, GRO,
/// GSO), asking for `rx_buf` and `tx_buf` bytes of socket buffer (the kernel may cap them);
/// `reuse_address` lets several sockets share the address. Errors name the address.
pub fn bind_batched(
    addr: SocketAddrV4,
    reuse_address: bool,
    rx_buf: usize,
    tx_buf: usize,
) -> io::Result<(UdpSocket, UdpSocketState)> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("cannot bind {addr}: {e}"));
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
    if reuse_address {
        s.set_reuse_address(true)?;
    }
    s.bind(&SocketAddr::V4(addr).into()).map_err(named)?;
    if !force_recv_buffer(&s, rx_buf) {
        let _ = s.set_recv_buffer_size(rx_buf);
    }
    let _ = s.set_send_buffer_size(tx_buf);
    s.set_nonblocking(true)?;
    set_dont_fragment(&s)?;
    let sock: UdpSocket = s.into();
    let state = UdpSocketState::new((&sock).into())?;
    Ok((sock, state))
}

/// Send with DF set whatever `net.ipv4.ip_no_pmtu_disc` says (`IP_PMTUDISC_DO`): on an
/// unconnected socket the kernel then writes identification 0, the header a RoCEv2 ICRC is
/// computed over (without DF it draws an identification per datagram).
fn set_dont_fragment(s: &socket2::Socket) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let v: libc::c_int = libc::IP_PMTUDISC_DO;
    // SAFETY: a valid socket descriptor, and a pointer to a c_int with its exact length, as
    // setsockopt(IPPROTO_IP, IP_MTU_DISCOVER) expects; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            (&raw const v).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The identification of the RoCEv2 packet `ip`, segment `seg` of the GRO buffer it came in,
/// rebuilt with identification 0 (what a sender writing its own frames puts there, AF_PACKET
/// or DPDK): for `seg` > 0 it may have been segment `seg` of a GSO send (identification `seg`,
/// see [`stamp_icrc_for_segment`]); the ICRC, which covers it, decides, and `ip` keeps the one
/// that verifies (0 if neither does).
pub fn identify_gro_segment(ip: &mut [u8], seg: u16) {
    if seg == 0 || ip.len() < 20 {
        return;
    }
    ip[4..6].copy_from_slice(&seg.to_be_bytes());
    if wire::roce::icrc::verify(ip).is_err() {
        ip[4..6].fill(0);
    }
}

/// Rewrite the ICRC of the RoCEv2 packet `ip` (IPv4 header on, ICRC last) for the header it
/// has on the wire as segment `k` of a GSO send: the kernel gives the segments of one send the
/// identifications 0, 1, 2, … (0 for an unconnected socket with DF, see [`bind_batched`]), and
/// the ICRC covers the identification. `ip`'s own identification is set to `k` on the way (the
/// kernel writes its own header; this copy only feeds the CRC). `false` if `ip` is not RoCEv2.
pub fn stamp_icrc_for_segment(ip: &mut [u8], k: u16) -> bool {
    if ip.len() < 20 {
        return false;
    }
    ip[4..6].copy_from_slice(&k.to_be_bytes());
    let Ok(icrc) = wire::roce::icrc::compute(ip) else { return false };
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    match ip.get_mut(total.saturating_sub(4)..total) {
        Some(t) if total >= 4 => {
            t.copy_from_slice(&icrc.to_le_bytes());
            true
        }
        _ => false,
    }
}

/// Ask for `bytes` of receive buffer beyond `net.core.rmem_max` (`SO_RCVBUFFORCE`, allowed with
/// CAP_NET_ADMIN): a translator starved of CPU for a moment loses reports only once its socket
/// buffer is full, and the default cap (often 208 KB to 4 MB) is milliseconds of reports.
/// Whether the kernel took it.
fn force_recv_buffer(s: &socket2::Socket, bytes: usize) -> bool {
    use std::os::fd::AsRawFd;
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: a valid socket descriptor, and a pointer to a c_int with its exact length, as
    // setsockopt(SOL_SOCKET, SO_RCVBUFFORCE) expects; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&raw const v).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// Datagrams the kernel dropped on `s` because its receive buffer was full (`SO_MEMINFO`'s
/// drop count, which unlike `SO_RXQ_OVFL` needs no control message on every receive); 0 where
/// the kernel does not say.
fn socket_drops(s: &UdpSocket) -> u64 {
    use std::os::fd::AsRawFd;
    // SK_MEMINFO_VARS (9, not in `libc`): rmem_alloc … backlog, then drops.
    let mut info = [0u32; 9];
    let mut len = size_of_val(&info) as libc::socklen_t;
    // SAFETY: a valid socket descriptor, and `info`'s address with its length in bytes; the
    // kernel writes at most `len` bytes and stores the length it wrote back into `len`.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &raw mut len,
        )
    };
    let drops = libc::SK_MEMINFO_DROPS as usize;
    if r == 0 && len as usize >= (drops + 1) * size_of::<u32>() { u64::from(info[drops]) } else { 0 }
}

struct Sock {
    sock: UdpSocket,
    state: UdpSocketState,
    port: u16,
}

impl Sock {
    fn bind(ip: Ipv4Addr, port: u16) -> io::Result<Self> {
        // Listening and sending sockets of one port share the address.
        let (sock, state) = bind_batched(SocketAddrV4::new(ip, port), true, 8 << 20, 8 << 20)?;
        let port = sock.local_addr()?.port();
        Ok(Self { sock, state, port })
    }
}

/// A port on the host's UDP stack.
pub struct UdpPort {
    ip: Ipv4Addr,
    mac: EthernetAddress,
    listen: Vec<Sock>,
    tx: Vec<Sock>,
    rx_buf: Vec<u8>,
    gro: usize,
    /// ARP replies the port made, waiting to be received.
    arp: VecDeque<[u8; 60]>,
    /// Datagrams received and not yet handed over.
    pending: VecDeque<Pending>,
    /// The listening socket served first next time.
    next_sock: usize,
    /// Payloads of the GSO run being gathered.
    run: Vec<u8>,
    /// A RoCEv2 packet's copy, its ICRC recomputed as a GSO segment's.
    icrc_scratch: Vec<u8>,
    stats: PortStats,
}

impl std::fmt::Debug for UdpPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UdpPort").field("ip", &self.ip).field("stats", &self.stats).finish()
    }
}

impl UdpPort {
    /// A port with address `ip` and MAC `mac`, receiving on UDP ports `listen` (0: an
    /// ephemeral one).
    pub fn open(ip: Ipv4Addr, mac: EthernetAddress, listen: &[u16]) -> io::Result<Self> {
        let listen = listen.iter().map(|&p| Sock::bind(ip, p)).collect::<io::Result<Vec<_>>>()?;
        let gro = listen.iter().map(|s| s.state.gro_segments()).max().unwrap_or(1).max(1);
        Ok(Self {
            ip,
            mac,
            listen,
            tx: Vec::new(),
            rx_buf: vec![0; RX_BATCH * MAX_DATAGRAM * gro.min(8)],
            gro: gro.min(8),
            arp: VecDeque::new(),
            pending: VecDeque::with_capacity(RX_BATCH * 8),
            next_sock: 0,
            run: Vec::with_capacity(64 * MAX_DATAGRAM),
            icrc_scratch: Vec::with_capacity(MAX_DATAGRAM + 64),
            stats: PortStats::default(),
        })
    }

    /// The UDP ports it listens on (ephemeral ones resolved).
    pub fn listen_ports(&self) -> Vec<u16> {
        self.listen.iter().map(|s| s.port).collect()
    }

    /// The socket sending from `port`: a listening one, or one opened now.
    fn tx_socket(&mut self, port: u16) -> Option<usize> {
        if let Some(i) = self.listen.iter().position(|s| s.port == port) {
            return Some(i);
        }
        if let Some(i) = self.tx.iter().position(|s| s.port == port) {
            return Some(self.listen.len() + i);
        }
        if self.tx.len() >= MAX_TX_SOCKETS {
            return None;
        }
        let s = Sock::bind(self.ip, port).ok()?;
        self.tx.push(s);
        Some(self.listen.len() + self.tx.len() - 1)
    }

    fn sock(&self, i: usize) -> &Sock {
        if i < self.listen.len() { &self.listen[i] } else { &self.tx[i - self.listen.len()] }
    }

    /// Send the gathered run of `seg`-byte datagrams from socket `si` to `dst`.
    fn flush_run(&mut self, si: usize, dst: SocketAddr, seg: usize) -> bool {
        if self.run.is_empty() {
            return true;
        }
        let s = self.sock(si);
        let t = Transmit {
            destination: dst,
            ecn: None,
            contents: &self.run,
            segment_size: (self.run.len() > seg).then_some(seg),
            src_ip: None,
        };
        let ok = match s.state.try_send((&s.sock).into(), &t) {
            Ok(()) => true,
            // A full socket buffer: the frames are lost, as on a congested link.
            Err(_) => false,
        };
        self.run.clear();
        ok
    }

    /// Answer an ARP request for any address but ours with its synthetic MAC.
    fn arp_reply(&mut self, data: &[u8]) -> bool {
        if self.arp.len() >= 64 {
            return false;
        }
        let ip = self.ip;
        match crate::host::arp::answer(data, |target| (target != ip).then(|| peer_mac(target))) {
            Some(reply) => {
                self.arp.push_back(reply);
                true
            }
            None => false,
        }
    }
}

/// The UDP datagram in an Ethernet/IPv4 frame: (source, destination, payload).
/// The IPv4 packet of a frame `datagram` accepted (header to total length).
fn ip_of(data: &[u8]) -> &[u8] {
    let l2 = EthernetFrame::new_checked(data).map_or(0, |e| data.len() - e.payload().len());
    let total = data.get(l2 + 2..l2 + 4).map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
    data.get(l2..l2 + total).unwrap_or_default()
}

fn datagram(data: &[u8]) -> Option<(SocketAddrV4, SocketAddrV4, &[u8])> {
    let eth = EthernetFrame::new_checked(data).ok()?;
    if eth.ethertype() != EtherType::IPV4 {
        return None;
    }
    let l2 = data.len() - eth.payload().len();
    let ip = Ipv4Packet::new_checked(&data[l2..]).ok()?;
    if ip.protocol() != protocol::UDP || ip.more_frags() || ip.frag_offset() != 0 {
        return None;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let l4 = l2 + ip.header_len();
    let end = l2 + usize::from(ip.total_len());
    let udp = UdpPacket::new_checked(data.get(l4..end)?).ok()?;
    let (sport, dport, len) = (udp.src_port(), udp.dst_port(), usize::from(udp.len()));
    let payload = data.get(l4 + wire::udp::HEADER_LEN..l4 + len)?;
    Some((SocketAddrV4::new(src, sport), SocketAddrV4::new(dst, dport), payload))
}

impl<F: Frame> PortIo<F> for UdpPort {
    fn rx_burst(&mut self, pool: &mut dyn Pool<F>, out: &mut Vec<F>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some(a) = self.arp.front() else { break };
            let Some(mut b) = pool.alloc() else { break };
            if b.set(a) {
                out.push(b);
                n += 1;
            } else {
                pool.free(b);
            }
            self.arp.pop_front();
        }
        // Datagrams left from the last receive (a GRO buffer held more than the burst took).
        n += self.take_pending(pool, out, max - n);
        if !self.pending.is_empty() || self.listen.is_empty() {
            return n;
        }
        // Every socket gets a share of the burst, starting with a different one each time, so
        // a busy socket (reports) never starves another (the collector's ACKs).
        let k = self.listen.len();
        self.next_sock = (self.next_sock + 1) % k;
        let seg_cap = MAX_DATAGRAM * self.gro;
        let mut base = 0;
        for j in 0..k {
            if n >= max {
                break;
            }
            let si = (self.next_sock + j) % k;
            let share = ((max - n) / (k - j)).max(1);
            let want = share.min(RX_BATCH).min((self.rx_buf.len() - base) / seg_cap);
            if want == 0 {
                break;
            }
            let mut meta = [RecvMeta::default(); RX_BATCH];
            let got = {
                let s = &self.listen[si];
                let mut bufs: [IoSliceMut<'_>; RX_BATCH] = {
                    let mut it = self.rx_buf[base..].chunks_mut(seg_cap);
                    std::array::from_fn(|_| IoSliceMut::new(it.next().unwrap_or(&mut [])))
                };
                s.state.recv((&s.sock).into(), &mut bufs[..want], &mut meta[..want]).unwrap_or(0)
            };
            let port = self.listen[si].port;
            for (i, m) in meta.iter().enumerate().take(got) {
                let SocketAddr::V4(from) = m.addr else {
                    self.stats.rx_errors += 1;
                    continue;
                };
                let at = base + i * seg_cap;
                let stride = m.stride.max(1);
                // Every datagram becomes a frame, an empty one too (the program drops it,
                // counted; skipped here it was lost uncounted).
                let mut o = 0;
                loop {
                    let len = stride.min(m.len - o);
                    let seg = (o / stride) as u16;
                    self.pending.push_back(Pending { from, port, at: at + o, len, seg });
                    o += len;
                    if o >= m.len {
                        break;
                    }
                }
            }
            base += got * seg_cap;
            n += self.take_pending(pool, out, share.min(max - n));
        }
        n + self.take_pending(pool, out, max - n)
    }

    fn tx_burst(&mut self, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>) -> usize {
        let n = pkts.len();
        // The run being gathered: (socket, destination, segment size, datagrams).
        let mut run: Option<(usize, SocketAddr, usize, usize)> = None;
        let mut max_seg = 64;
        for f in pkts.drain(..) {
            let data = f.data();
            match datagram(data) {
                Some((src, dst, payload)) if *src.ip() == self.ip => {
                    let len = payload.len();
                    let dst = SocketAddr::V4(dst);
                    let Some(si) = self.tx_socket(src.port()) else {
                        self.stats.tx_errors += 1;
                        pool.free(f);
                        continue;
                    };
                    let joins =
                        run.is_some_and(|(s, d, seg, k)| s == si && d == dst && seg == len && k < max_seg);
                    if !joins {
                        if let Some((s, d, seg, k)) = run.take() {
                            self.count_tx(s, d, seg, k);
                        }
                        max_seg = self.sock(si).state.max_gso_segments().clamp(1, 64);
                        run = Some((si, dst, len, 0));
                    }
                    let k = run.map_or(0, |r| r.3);
                    if dst.port() == wire::udp::port::ROCE_V2 && k > 0 {
                        // Segment k of the GSO send: its ICRC for identification k.
                        self.icrc_scratch.clear();
                        self.icrc_scratch.extend_from_slice(ip_of(data));
                        if !stamp_icrc_for_segment(&mut self.icrc_scratch, k as u16) {
                            self.stats.tx_errors += 1;
                            pool.free(f);
                            continue;
                        }
                        let from = self.icrc_scratch.len() - payload.len();
                        self.run.extend_from_slice(&self.icrc_scratch[from..]);
                    } else {
                        self.run.extend_from_slice(payload);
                    }
                    if let Some(r) = run.as_mut() {
                        r.3 += 1;
                    }
                }
                Some(_) => self.stats.tx_errors += 1,
                None => {
                    if !self.arp_reply(data) {
                        self.stats.tx_errors += 1;
                    }
                }
            }
            pool.free(f);
        }
        if let Some((s, d, seg, k)) = run.take() {
            self.count_tx(s, d, seg, k);
        }
        n
    }

    /// Counters; `rx_missed` is what the kernel dropped on the listening sockets (one
    /// `getsockopt` each: read it per millisecond, not per burst).
    fn stats(&self) -> PortStats {
        let rx_missed = self.listen.iter().map(|s| socket_drops(&s.sock)).sum();
        PortStats { rx_missed, ..self.stats }
    }
}

/// A received datagram waiting in the receive buffer.
#[derive(Debug, Clone, Copy)]
struct Pending {
    from: SocketAddrV4,
    port: u16,
    at: usize,
    len: usize,
    /// Its index in the GRO buffer it came in.
    seg: u16,
}

impl UdpPort {
    /// Turn up to `max` waiting datagrams into frames.
    fn take_pending<F: Frame>(&mut self, pool: &mut dyn Pool<F>, out: &mut Vec<F>, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some(p) = self.pending.pop_front() else { break };
            let d = &self.rx_buf[p.at..p.at + p.len];
            let to = SocketAddrV4::new(self.ip, p.port);
            let flow = UdpFlow::host_udp(peer_mac(*p.from.ip()), self.mac, p.from, to);
            let Some(mut b) = pool.alloc() else {
                self.stats.rx_errors += 1;
                continue;
            };
            b.reset();
            let h = flow.headers_len();
            let ok = match b.append(h + d.len()) {
                Some(f) => {
                    flow.emit_headers(d.len(), f).is_ok() && {
                        f[h..].copy_from_slice(d);
                        // RoCEv2, segment k > 0 of a GRO buffer: a GSO send's segment k left
                        // with identification k (see `stamp_icrc_for_segment`); the ICRC, which
                        // covers it, says whether this one did.
                        if p.port == wire::udp::port::ROCE_V2 {
                            let ip = &mut f[h - wire::udp::HEADER_LEN - wire::ipv4::HEADER_LEN..];
                            identify_gro_segment(ip, p.seg);
                        }
                        true
                    }
                }
                None => false,
            };
            if ok {
                out.push(b);
                n += 1;
                self.stats.rx += 1;
            } else {
                pool.free(b);
                self.stats.rx_errors += 1;
            }
        }
        n
    }

    fn count_tx(&mut self, si: usize, dst: SocketAddr, seg: usize, k: usize) {
        if self.flush_run(si, dst, seg) {
            self.stats.tx += k as u64;
        } else {
            self.stats.tx_errors += k as u64;
        }
    }
}

/// A table of the calling thread's network namespace (`/proc/thread-self/net`: `/proc/net` is
/// the main thread's, which a thread that entered another namespace does not share).
fn proc_net(table: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/thread-self/net/{table}"))
        .or_else(|_| std::fs::read_to_string(format!("/proc/net/{table}")))
        .ok()
}

/// The next hop the host's stack takes toward `dst` (`/proc/net/route`, longest prefix, then
/// lowest metric; the calling thread's namespace): its gateway, or `dst` itself on a link; `None` for an address with no route
/// there (a local or loopback one, which needs no resolution) or where the file is missing.
pub fn next_hop(dst: Ipv4Addr) -> Option<Ipv4Addr> {
    next_hop_in(&proc_net("route")?, dst)
}

/// [`next_hop`] in `table`, a `/proc/net/route`.
fn next_hop_in(table: &str, dst: Ipv4Addr) -> Option<Ipv4Addr> {
    // The kernel prints each address as the number its network-order bytes make natively.
    let addr = |h: &str| u32::from_str_radix(h, 16).ok().map(|x| Ipv4Addr::from(x.to_ne_bytes()));
    let mut best: Option<(u32, u32, Ipv4Addr)> = None;
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(net), Some(gw), Some(mask)) =
            (f.get(1).and_then(|h| addr(h)), f.get(2).and_then(|h| addr(h)), f.get(7).and_then(|h| addr(h)))
        else {
            continue;
        };
        let metric: u32 = f.get(6).and_then(|m| m.parse().ok()).unwrap_or(u32::MAX);
        let (m, n) = (u32::from(mask), u32::from(net));
        if u32::from(dst) & m != n & m {
            continue;
        }
        let len = m.count_ones();
        if best.is_none_or(|(l, mt, _)| len > l || (len == l && metric < mt)) {
            best = Some((len, metric, if gw.is_unspecified() { dst } else { gw }));
        }
    }
    best.map(|b| b.2)
}

/// Whether the host's neighbour table has a complete entry for `ip` (`/proc/net/arp`).
fn neighbour_known(ip: Ipv4Addr) -> bool {
    proc_net("arp").is_some_and(|t| neighbour_in(&t, ip))
}

/// [`neighbour_known`] in `t`, a `/proc/net/arp`.
fn neighbour_in(t: &str, ip: Ipv4Addr) -> bool {
    t.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.first().and_then(|a| a.parse::<Ipv4Addr>().ok()) == Some(ip)
            && f.get(2)
                .and_then(|x| u32::from_str_radix(x.trim_start_matches("0x"), 16).ok())
                .is_some_and(|flags| flags & 0x2 != 0)
    })
}

/// Have the host's stack resolve its next hop toward `dst` before a stream starts, waiting up
/// to `timeout`; `true` once it is known (or none is needed). Linux queues what is sent to an
/// unresolved neighbour and, once the answer comes, sends the queue from the CPU that took the
/// answer while later sends go straight out from the sender's: the first milliseconds of a
/// fast stream then arrive reordered by hundreds of packets. One empty datagram to the discard
/// port (9) asks for the resolution.
pub fn resolve_next_hop(dst: Ipv4Addr, timeout: std::time::Duration) -> bool {
    let Some(hop) = next_hop(dst) else { return true };
    if neighbour_known(hop) {
        return true;
    }
    if let Ok(s) = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)) {
        let _ = s.send_to(&[], SocketAddrV4::new(dst, 9));
    }
    let t0 = std::time::Instant::now();
    while t0.elapsed() < timeout {
        if neighbour_known(hop) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    false
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_next_hop_is_the_longest_prefix_gateway_and_a_neighbour_complete_when_flagged() {
        // A default route via 10.0.1.1 and the link 10.0.1.0/24, as the kernel prints them
        // (addresses as native numbers of their network-order bytes).
        let hex = |a: [u8; 4]| format!("{:08X}", u32::from_ne_bytes(a));
        let route = format!(
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
             eth0\t{}\t{}\t0003\t0\t0\t0\t{}\t0\t0\t0\n\
             eth0\t{}\t{}\t0001\t0\t0\t0\t{}\t0\t0\t0\n",
            hex([0, 0, 0, 0]),
            hex([10, 0, 1, 1]),
            hex([0, 0, 0, 0]),
            hex([10, 0, 1, 0]),
            hex([0, 0, 0, 0]),
            hex([255, 255, 255, 0]),
        );
        assert_eq!(next_hop_in(&route, Ipv4Addr::new(10, 0, 2, 2)), Some(Ipv4Addr::new(10, 0, 1, 1)));
        assert_eq!(next_hop_in(&route, Ipv4Addr::new(10, 0, 1, 7)), Some(Ipv4Addr::new(10, 0, 1, 7)));
        assert_eq!(next_hop_in("Iface\n", Ipv4Addr::new(10, 0, 1, 7)), None);
        let arp = "IP address       HW type     Flags       HW address            Mask     Device\n\
                   10.0.1.1         0x1         0x2         02:5f:00:00:00:01     *        eth0\n\
                   10.0.1.9         0x1         0x0         00:00:00:00:00:00     *        eth0\n";
        assert!(neighbour_in(arp, Ipv4Addr::new(10, 0, 1, 1)));
        assert!(!neighbour_in(arp, Ipv4Addr::new(10, 0, 1, 9)), "incomplete");
        assert!(!neighbour_in(arp, Ipv4Addr::new(10, 0, 1, 2)));
    }

    use super::*;
    use crate::buf::{HeapPool, PktBuf};

    const MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 9]);

    fn frame(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> PktBuf {
        let flow = UdpFlow::host_udp(MAC, peer_mac(*dst.ip()), src, dst);
        let mut b = vec![0u8; 2048];
        let n = flow
            .emit_with(payload.len(), false, &mut b, |p| {
                p.copy_from_slice(payload);
                Ok(())
            })
            .unwrap();
        let mut f = PktBuf::new(2048);
        assert!(f.set(&b[..n]));
        f
    }

    #[test]
    fn datagrams_in_and_out_keep_addresses_and_ports() {
        let ip = Ipv4Addr::new(127, 0, 0, 201);
        let mut port = UdpPort::open(ip, MAC, &[0]).unwrap();
        let listen = port.listen_ports()[0];
        let peer = UdpSocket::bind("127.0.0.202:0").unwrap();
        peer.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let peer_addr = match peer.local_addr().unwrap() {
            SocketAddr::V4(a) => a,
            _ => unreachable!(),
        };
        let mut pool = HeapPool::new(64, 2048);
        // In: a datagram becomes a frame to our MAC with both addresses and ports.
        peer.send_to(b"hello", SocketAddrV4::new(ip, listen)).unwrap();
        let mut got: Vec<PktBuf> = Vec::new();
        for _ in 0..1000 {
            if PortIo::rx_burst(&mut port, &mut pool, &mut got, 32) > 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(got.len(), 1);
        let (src, dst, payload) = datagram(got[0].data()).unwrap();
        assert_eq!((src, dst, payload), (peer_addr, SocketAddrV4::new(ip, listen), &b"hello"[..]));
        assert_eq!(EthernetFrame::new_checked(got[0].data()).unwrap().dst_addr(), MAC);
        // Out: three equal frames from source port 50123 (a socket opened for it, sent as one
        // GSO run) arrive as three datagrams from that port.
        let mut out: Vec<PktBuf> =
            (0..3u8).map(|i| frame(SocketAddrV4::new(ip, 50123), peer_addr, &[i; 100])).collect();
        assert_eq!(PortIo::tx_burst(&mut port, &mut out, &mut pool), 3);
        let mut b = [0u8; 2048];
        for i in 0..3u8 {
            let (n, from) = peer.recv_from(&mut b).unwrap();
            assert_eq!((n, from), (100, SocketAddr::V4(SocketAddrV4::new(ip, 50123))));
            assert!(b[..n].iter().all(|&x| x == i));
        }
        // A frame from an address that is not the port's is refused and counted.
        let mut out = vec![frame(SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 9), 1), peer_addr, b"x")];
        PortIo::tx_burst(&mut port, &mut out, &mut pool);
        assert_eq!(PortIo::<PktBuf>::stats(&port).tx_errors, 1);
        assert_eq!(PortIo::<PktBuf>::stats(&port).tx, 3);
    }

    #[test]
    fn arp_requests_are_answered_with_the_synthetic_mac() {
        let ip = Ipv4Addr::new(127, 0, 0, 203);
        let mut port = UdpPort::open(ip, MAC, &[]).unwrap();
        let target = Ipv4Addr::new(127, 0, 0, 51);
        let mut b = [0u8; 60];
        wire::arp::emit_request(&mut b, MAC, ip, target).unwrap();
        let mut pool = HeapPool::new(8, 2048);
        let mut f = PktBuf::new(2048);
        assert!(f.set(&b));
        let mut out = vec![f];
        PortIo::tx_burst(&mut port, &mut out, &mut pool);
        let mut got: Vec<PktBuf> = Vec::new();
        assert_eq!(PortIo::rx_burst(&mut port, &mut pool, &mut got, 32), 1);
        let eth = EthernetFrame::new_checked(got[0].data()).unwrap();
        let reply = wire::arp::ArpRepr::parse(eth.payload()).unwrap();
        assert_eq!((reply.op, reply.sender_ip, reply.sender_mac), (2, target, peer_mac(target)));
        assert_eq!(reply.target_mac, MAC);
    }

    #[test]
    fn datagrams_the_kernel_drops_are_counted_as_missed() {
        // Sent on loopback to a port that does not receive, until its socket buffer (however
        // large the kernel let it be) overflows: every datagram is either received later or
        // counted as missed.
        let ip = Ipv4Addr::new(127, 0, 0, 203);
        let mut port = UdpPort::open(ip, MAC, &[0]).unwrap();
        let to = SocketAddrV4::new(ip, port.listen_ports()[0]);
        let peer = UdpSocket::bind("127.0.0.204:0").unwrap();
        let mut sent = 0u64;
        while PortIo::<PktBuf>::stats(&port).rx_missed == 0 && sent < 2_000_000 {
            for _ in 0..1000 {
                sent += u64::from(peer.send_to(&[7u8; 64], to).is_ok());
            }
        }
        let missed = PortIo::<PktBuf>::stats(&port).rx_missed;
        assert!(missed > 0, "no drop counted after {sent} datagrams");
        let mut pool = HeapPool::new(64, 2048);
        let mut got: Vec<PktBuf> = Vec::new();
        let mut received = 0u64;
        while PortIo::rx_burst(&mut port, &mut pool, &mut got, 32) > 0 {
            received += got.len() as u64;
            got.drain(..).for_each(|f| pool.free(f));
        }
        assert_eq!(received + missed, sent);
        assert_eq!(PortIo::<PktBuf>::stats(&port).rx, received);
    }
}
