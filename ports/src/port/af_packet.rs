//! AF_PACKET ports: any Linux interface (a veth in a namespace, a NIC) through a raw socket.
//!
//! One `recvmmsg` / `sendmmsg` per burst (no per-packet system call; DPDK is the path without
//! any). The socket asks for a `virtio_net_hdr` in front of every frame (`PACKET_VNET_HDR`), so
//! that frames the local stack sent with a checksum left to offload (`CHECKSUM_PARTIAL`, as on a
//! veth) are completed here before they are forwarded; frames still segmented for offload (GSO,
//! large TCP sends) cannot be forwarded whole and are counted as receive errors — turn TSO/GSO off
//! on interfaces feeding the switch (`ethtool -K <if> tso off gso off`). The interface is put in
//! promiscuous mode, and the switch's own transmissions are not read back
//! (`PACKET_IGNORE_OUTGOING`, or by packet type on older kernels). Frames the kernel drops
//! because the socket's buffer is full are counted in `rx_missed` (`PACKET_STATISTICS`).

use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::{PortIo, PortStats};
use crate::buf::{Frame, Pool};

const SOL_PACKET: libc::c_int = 263;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_FANOUT: libc::c_int = 18;
const PACKET_STATISTICS: libc::c_int = 6;

/// `struct tpacket_stats` (linux/if_packet.h): what PACKET_STATISTICS returns, and resets.
#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    tp_packets: u32,
    tp_drops: u32,
}
const PACKET_FANOUT_HASH: u32 = 0;
const PACKET_OUTGOING: u8 = 4;
const VNET_HDR_LEN: usize = 10;
const VIRTIO_NET_HDR_F_NEEDS_CSUM: u8 = 1;
const MAX_BURST: usize = 64;

#[repr(C)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: libc::c_ushort,
    mr_alen: libc::c_ushort,
    mr_address: [u8; 8],
}

/// A port on a Linux interface.
#[derive(Debug)]
pub struct AfPacketPort {
    fd: OwnedFd,
    iface: String,
    stats: PortStats,
    /// Frames the kernel dropped at this socket (its buffer full), summed over the
    /// PACKET_STATISTICS reads, each of which resets the kernel's counter.
    missed: Cell<u64>,
}

fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live `T` of `size_of::<T>()` bytes for the duration of the
    // call, and `fd` is an open socket.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast::<libc::c_void>(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// The MAC address of interface `iface` (from sysfs).
pub fn interface_mac(iface: &str) -> io::Result<wire::ethernet::EthernetAddress> {
    let text = std::fs::read_to_string(format!("/sys/class/net/{iface}/address"))?;
    wire::ethernet::EthernetAddress::parse(text.trim())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("{iface}: bad MAC {text:?}")))
}

impl AfPacketPort {
    /// Open `iface`: needs CAP_NET_RAW (root).
    pub fn open(iface: &str) -> io::Result<Self> {
        Self::open_fanout(iface, None)
    }

    /// Open `iface` as a member of fan-out group `group`: the kernel spreads received flows
    /// across the group's sockets by hash (one per pipeline), and each can send.
    pub fn open_fanout(iface: &str, group: Option<u16>) -> io::Result<Self> {
        let name = CString::new(iface)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL"))?;
        // SAFETY: `name` is a valid NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("no interface {iface:?}")));
        }
        // Protocol 0 until bound, so nothing from other interfaces is queued in between.
        // SAFETY: plain system call; the result is checked.
        let raw = unsafe {
            libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a freshly opened descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        setsockopt(&fd, SOL_PACKET, PACKET_VNET_HDR, &1i32)?;
        // Best effort: older kernels lack it, and outgoing frames are then skipped by type.
        let _ = setsockopt(&fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &1i32);
        // A 4 MiB receive buffer (a few thousand frames: tens of milliseconds of a busy port
        // while the thread is not scheduled). SO_RCVBUF alone is capped by net.core.rmem_max
        // (208 KiB by default, a few hundred frames); SO_RCVBUFFORCE (CAP_NET_ADMIN, which
        // a raw socket needs anyway) is not.
        if setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &(4i32 << 20)).is_err() {
            let _ = setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &(4i32 << 20));
        }
        if setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &(4i32 << 20)).is_err() {
            let _ = setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &(4i32 << 20));
        }
        // SAFETY: an all-zero sockaddr_ll is valid; the fields that matter are set below.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll and the length matches it.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast::<libc::sockaddr>(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        let mreq = PacketMreq {
            mr_ifindex: ifindex as i32,
            mr_type: PACKET_MR_PROMISC,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        setsockopt(&fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq)?;
        if let Some(g) = group {
            setsockopt(&fd, SOL_PACKET, PACKET_FANOUT, &(u32::from(g) | (PACKET_FANOUT_HASH << 16)))?;
        }
        Ok(Self { fd, iface: iface.to_string(), stats: PortStats::default(), missed: Cell::new(0) })
    }

    /// The interface name.
    pub fn iface(&self) -> &str {
        &self.iface
    }
}

/// Finish a checksum the sender left for offload: the field at `start + offset` holds the
/// pseudo-header sum; the checksum covers everything from `start`.
fn complete_checksum(data: &mut [u8], start: usize, offset: usize) -> bool {
    let at = start + offset;
    if at + 2 > data.len() {
        return false;
    }
    let mut c = wire::checksum::checksum(&data[start..]);
    // A UDP checksum computed as 0 is sent as all-ones; harmless for TCP and ICMP, which
    // never leave the field partial with a zero result.
    if c == 0 {
        c = 0xffff;
    }
    data[at..at + 2].copy_from_slice(&c.to_be_bytes());
    true
}

impl AfPacketPort {
    /// The frames the kernel dropped at this socket since the last read (PACKET_STATISTICS;
    /// the read resets the kernel's counters). 0 if the kernel will not say.
    fn kernel_drops(&self) -> u64 {
        let mut st = TpacketStats::default();
        let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
        // SAFETY: `st` is a live `struct tpacket_stats` of `len` bytes that the kernel fills,
        // `len` says its size, and `fd` is an open AF_PACKET socket.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_STATISTICS,
                (&mut st as *mut TpacketStats).cast::<libc::c_void>(),
                &mut len,
            )
        };
        if r == 0 { u64::from(st.tp_drops) } else { 0 }
    }
}

impl<F: Frame> PortIo<F> for AfPacketPort {
    fn rx_burst(&mut self, pool: &mut dyn Pool<F>, out: &mut Vec<F>, max: usize) -> usize {
        let n = max.min(MAX_BURST);
        let mut slots: [Option<F>; MAX_BURST] = std::array::from_fn(|_| None);
        let mut hdrs = [[0u8; VNET_HDR_LEN]; MAX_BURST];
        // SAFETY: all-zero iovec, mmsghdr and sockaddr_ll values are valid (null pointers, zero
        // lengths); every one used is filled in below.
        let mut iov: [[libc::iovec; 2]; MAX_BURST] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; MAX_BURST] = unsafe { std::mem::zeroed() };
        let mut addrs: [libc::sockaddr_ll; MAX_BURST] = unsafe { std::mem::zeroed() };
        let mut posted = 0;
        let mut rooms = [0usize; MAX_BURST];
        while posted < n {
            let Some(mut b) = pool.alloc() else { break };
            let room = b.tailroom();
            let Some(data) = b.append(room) else {
                pool.free(b);
                break;
            };
            iov[posted][0] =
                libc::iovec { iov_base: hdrs[posted].as_mut_ptr().cast(), iov_len: VNET_HDR_LEN };
            iov[posted][1] = libc::iovec { iov_base: data.as_mut_ptr().cast(), iov_len: room };
            rooms[posted] = room;
            slots[posted] = Some(b);
            posted += 1;
        }
        for i in 0..posted {
            msgs[i].msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_ll).cast();
            msgs[i].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            msgs[i].msg_hdr.msg_iov = iov[i].as_mut_ptr();
            msgs[i].msg_hdr.msg_iovlen = 2;
        }
        let got = if posted == 0 {
            0
        } else {
            // SAFETY: `msgs[..posted]` point to live iovecs and addresses; each iovec covers the
            // header array or a buffer's tailroom we hold (moving a `Frame` does not move its
            // data); the call only writes within those lengths. Non-blocking.
            let r = unsafe {
                libc::recvmmsg(
                    self.fd.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    posted as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::WouldBlock {
                    self.stats.rx_errors += 1;
                }
                0
            } else {
                r as usize
            }
        };
        let start = out.len();
        for i in 0..posted {
            let Some(mut b) = slots[i].take() else { continue };
            if i >= got {
                pool.free(b);
                continue;
            }
            let len = msgs[i].msg_len as usize;
            let h = hdrs[i];
            let truncated = msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            let gso = h[1] != 0;
            if len < VNET_HDR_LEN || truncated || gso || addrs[i].sll_pkttype == PACKET_OUTGOING {
                if addrs[i].sll_pkttype != PACKET_OUTGOING {
                    self.stats.rx_errors += 1;
                }
                pool.free(b);
                continue;
            }
            let data_len = len - VNET_HDR_LEN;
            b.trim(rooms[i] - data_len);
            if h[0] & VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 {
                let cs = usize::from(u16::from_le_bytes([h[6], h[7]]));
                let co = usize::from(u16::from_le_bytes([h[8], h[9]]));
                if !complete_checksum(b.data_mut(), cs, co) {
                    self.stats.rx_errors += 1;
                    pool.free(b);
                    continue;
                }
            }
            out.push(b);
        }
        self.stats.rx += (out.len() - start) as u64;
        out.len() - start
    }

    fn tx_burst(&mut self, pkts: &mut Vec<F>, pool: &mut dyn Pool<F>) -> usize {
        let mut sent_total = 0;
        let hdr = [0u8; VNET_HDR_LEN];
        while sent_total < pkts.len() {
            let batch = (pkts.len() - sent_total).min(MAX_BURST);
            // SAFETY: all-zero iovec and mmsghdr values are valid; the ones used are set below.
            let mut iov: [[libc::iovec; 2]; MAX_BURST] = unsafe { std::mem::zeroed() };
            let mut msgs: [libc::mmsghdr; MAX_BURST] = unsafe { std::mem::zeroed() };
            for i in 0..batch {
                let d = pkts[sent_total + i].data();
                iov[i][0] =
                    libc::iovec { iov_base: hdr.as_ptr() as *mut libc::c_void, iov_len: VNET_HDR_LEN };
                iov[i][1] = libc::iovec { iov_base: d.as_ptr() as *mut libc::c_void, iov_len: d.len() };
                msgs[i].msg_hdr.msg_iov = iov[i].as_mut_ptr();
                msgs[i].msg_hdr.msg_iovlen = 2;
            }
            // SAFETY: each message points to live iovecs over the header and frames we hold and
            // does not change during the call, which only reads them. Non-blocking.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    batch as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r <= 0 {
                let e = io::Error::last_os_error();
                if r < 0 && e.kind() != io::ErrorKind::WouldBlock {
                    self.stats.tx_errors += 1;
                }
                break;
            }
            sent_total += r as usize;
            if (r as usize) < batch {
                break;
            }
        }
        for p in pkts.drain(..sent_total) {
            pool.free(p);
        }
        self.stats.tx += sent_total as u64;
        sent_total
    }

    /// Counters; `rx_missed` is what the kernel dropped at this socket because its buffer was
    /// full (PACKET_STATISTICS), read now.
    fn stats(&self) -> PortStats {
        self.missed.set(self.missed.get() + self.kernel_drops());
        PortStats { rx_missed: self.missed.get(), ..self.stats }
    }

    /// The socket: readable when a frame waits.
    fn rx_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.fd.as_raw_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_a_partial_udp_checksum() {
        // A UDP datagram in an IPv4 packet with the checksum field holding only the folded
        // pseudo-header sum, as a veth hands it over with CHECKSUM_PARTIAL.
        let src = std::net::Ipv4Addr::new(10, 0, 0, 1);
        let dst = std::net::Ipv4Addr::new(10, 0, 0, 2);
        let mut udp = vec![0u8; 8 + 5];
        wire::UdpRepr { src_port: 5000, dst_port: 6000, payload_len: 5 }.emit(&mut udp).unwrap();
        udp[8..].copy_from_slice(b"hello");
        let pseudo = wire::checksum::fold(wire::checksum::ipv4_pseudo_header(src, dst, 17, 13));
        udp[6..8].copy_from_slice(&pseudo.to_be_bytes());
        let mut frame = vec![0u8; 34];
        frame.extend_from_slice(&udp);
        assert!(complete_checksum(&mut frame, 34, 6));
        assert!(wire::UdpPacket::new_checked(&frame[34..]).unwrap().verify_checksum(src, dst));
        assert!(!complete_checksum(&mut frame, 40, 10));
    }

    #[test]
    fn missing_interface_is_named() {
        let e = AfPacketPort::open("no-such-if0").unwrap_err();
        assert!(e.to_string().contains("no-such-if0") || e.kind() == io::ErrorKind::PermissionDenied, "{e}");
    }
}
