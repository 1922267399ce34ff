//! `nic-agent`: the NIC agent's RoCEv2 RC flow on a real interface (AF_PACKET), the same
//! sans-IO sender and receiver (`nic_agent::rc`) the lab runs on its virtual clock.
//!
//! ```text
//! nic-agent recv --iface eth0 --ip 10.0.2.2 --gateway 10.0.2.1 --peer 10.0.1.2 --size N --out FILE
//! nic-agent send --iface eth0 --ip 10.0.1.2 --gateway 10.0.1.1 --peer 10.0.2.2 --file FILE --cc hpcc
//! ```
//!
//! The sender moves one file as RC SEND-Only packets to the receiver, through a router
//! (`dataplane run` with `int_switch_id` stamps INT when the sender puts an INT header in front
//! of the BTH). HPCC++ paces it from the INT the receiver reflects in its ACKs; DCQCN from
//! CNPs; `fixed` at the line rate. There is no CM exchange: both sides are given the QP
//! numbers and the first PSN (defaults match), as two RNICs a test has connected by hand. The
//! next hop's MAC is found by ARP. Each side prints one summary line and exits 0 when the
//! transfer completed (the receiver: every byte, in order, every ICRC good), 1 otherwise.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use nic_agent::dcqcn::{DcqcnConfig, DcqcnRp};
use nic_agent::hpcc::{Hpcc, HpccConfig};
use nic_agent::rc::{
    FlowCc, RcReceiver, RcSender, SenderConfig, Transmit, ack_bth, check_icrc, cnp_bth, data_bth, emit_rc,
    parse_rc, rc_frame_len, seal, udp_src_port,
};
use ports::buf::{Frame, HeapPool, PktBuf, Pool};
use ports::port::{AfPacketPort, PortIo, interface_mac};
use wire::arp::ArpRepr;
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame};
use wire::hpcc_int::IntRepr;
use wire::stack::UdpFlow;

/// Frames per receive and transmit burst.
const BURST: usize = 32;

#[derive(Parser)]
#[command(name = "nic-agent", version, about = "RoCEv2 RC flow paced by HPCC++ or DCQCN on AF_PACKET")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args, Clone)]
struct Common {
    /// Interface to send and receive on (AF_PACKET, needs root).
    #[arg(long)]
    iface: String,
    /// This host's IPv4 address.
    #[arg(long)]
    ip: Ipv4Addr,
    /// The next hop (router) to resolve by ARP; the peer itself when on one subnet.
    #[arg(long)]
    gateway: Ipv4Addr,
    /// The other agent's IPv4 address.
    #[arg(long)]
    peer: Ipv4Addr,
    /// Payload bytes per packet.
    #[arg(long, default_value_t = 1024)]
    mtu: usize,
    /// The sender's QP number.
    #[arg(long, default_value_t = 0x11)]
    sender_qp: u32,
    /// The receiver's QP number.
    #[arg(long, default_value_t = 0x22)]
    receiver_qp: u32,
    /// The first PSN.
    #[arg(long, default_value_t = 0)]
    start_psn: u32,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    deadline_s: f64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CcName {
    /// HPCC++ from INT (the data carries an INT header for the switches to stamp).
    Hpcc,
    /// DCQCN from CNPs (data ECN-capable).
    Dcqcn,
    /// The line rate, no window.
    Fixed,
}

#[derive(Subcommand)]
enum Cmd {
    /// Send a file.
    Send {
        #[command(flatten)]
        c: Common,
        /// The file to send.
        #[arg(long)]
        file: PathBuf,
        /// Congestion control.
        #[arg(long, value_enum, default_value = "hpcc")]
        cc: CcName,
        /// Line rate, Gb/s: the pacer's first and largest rate.
        #[arg(long, default_value_t = 1.0)]
        rate_gbps: f64,
        /// HPCC++'s base RTT `T`, microseconds.
        #[arg(long, default_value_t = 200.0)]
        base_rtt_us: f64,
        /// INT hop slots to allocate (switches on the path).
        #[arg(long, default_value_t = 1)]
        int_hops: u8,
        /// Retransmission timeout, milliseconds.
        #[arg(long, default_value_t = 20.0)]
        timeout_ms: f64,
    },
    /// Receive a file.
    Recv {
        #[command(flatten)]
        c: Common,
        /// Bytes to expect.
        #[arg(long)]
        size: u64,
        /// Where to write them.
        #[arg(long)]
        out: PathBuf,
    },
}

/// The interface, its buffers and the clock.
struct Nic {
    port: AfPacketPort,
    pool: HeapPool,
    mac: EthernetAddress,
    ip: Ipv4Addr,
    t0: Instant,
    rx: Vec<PktBuf>,
    tx: Vec<PktBuf>,
}

impl Nic {
    fn open(c: &Common) -> anyhow::Result<Self> {
        let port =
            AfPacketPort::open(&c.iface).with_context(|| format!("opening {} (AF_PACKET)", c.iface))?;
        let mac = interface_mac(&c.iface).with_context(|| format!("reading the MAC of {}", c.iface))?;
        Ok(Self {
            port,
            pool: HeapPool::new(4 * BURST + 256, 2048),
            mac,
            ip: c.ip,
            t0: Instant::now(),
            rx: Vec::with_capacity(BURST),
            tx: Vec::with_capacity(BURST),
        })
    }

    fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    /// A buffer holding `n` bytes written by `f` (which returns the length it wrote), queued for
    /// the next flush.
    fn queue(&mut self, n: usize, f: impl FnOnce(&mut [u8]) -> Option<usize>) -> bool {
        let Some(mut b) = self.pool.alloc() else { return false };
        let Some(buf) = b.append(n) else {
            self.pool.free(b);
            return false;
        };
        match f(buf) {
            Some(len) if len <= n => {
                b.trim(n - len);
                self.tx.push(b);
                true
            }
            _ => {
                self.pool.free(b);
                false
            }
        }
    }

    fn flush(&mut self) {
        while !self.tx.is_empty() {
            if self.port.tx_burst(&mut self.tx, &mut self.pool) == 0 {
                std::hint::spin_loop();
            }
        }
    }

    fn receive(&mut self) -> usize {
        self.port.rx_burst(&mut self.pool, &mut self.rx, BURST)
    }

    /// The MAC of `ip`, by ARP (a request every 200 ms, for up to 10 s).
    fn resolve(&mut self, ip: Ipv4Addr) -> anyhow::Result<EthernetAddress> {
        let start = Instant::now();
        let mut last = None::<Instant>;
        while start.elapsed() < Duration::from_secs(10) {
            if last.is_none_or(|l| l.elapsed() > Duration::from_millis(200)) {
                last = Some(Instant::now());
                let (mac, me) = (self.mac, self.ip);
                self.queue(wire::ethernet::MIN_FRAME_LEN, |b| wire::arp::emit_request(b, mac, me, ip).ok());
                self.flush();
            }
            self.receive();
            let mut found = None;
            for f in self.rx.drain(..) {
                if let Ok(eth) = EthernetFrame::new_checked(f.data())
                    && eth.ethertype() == EtherType::ARP
                    && let Ok(a) = ArpRepr::parse(eth.payload())
                    && a.op == 2
                    && a.sender_ip == ip
                {
                    found = Some(a.sender_mac);
                }
                self.pool.free(f);
            }
            if let Some(m) = found {
                return Ok(m);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        bail!("no ARP answer from {ip} on {}", self.port.iface())
    }

    /// Wait a little when there was nothing to do: sleep when `until` is far, else spin.
    fn idle(&self, until: Option<u64>) {
        let now = self.now();
        match until {
            Some(t) if t > now + 60_000 => {
                std::thread::sleep(Duration::from_nanos((t - now - 50_000).min(1_000_000)))
            }
            Some(_) => std::hint::spin_loop(),
            None => std::thread::sleep(Duration::from_micros(20)),
        }
    }
}

fn flow(nic: &Nic, next_hop: EthernetAddress, peer: Ipv4Addr, qpn: u32) -> UdpFlow {
    UdpFlow::host_udp(
        nic.mac,
        next_hop,
        SocketAddrV4::new(nic.ip, udp_src_port(qpn)),
        SocketAddrV4::new(peer, wire::udp::port::ROCE_V2),
    )
}

fn send(
    c: &Common,
    file: &PathBuf,
    cc: CcName,
    rate_gbps: f64,
    base_rtt_us: f64,
    int_hops: u8,
    timeout_ms: f64,
) -> anyhow::Result<bool> {
    let data = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    if !(0.001..=400.0).contains(&rate_gbps) {
        bail!("--rate-gbps {rate_gbps}: expected a rate from 0.001 to 400 Gb/s");
    }
    if !(1..=wire::hpcc_int::MAX_HOPS as u8).contains(&int_hops) {
        bail!("--int-hops {int_hops}: expected 1 to {}", wire::hpcc_int::MAX_HOPS);
    }
    let mut nic = Nic::open(c)?;
    let next_hop = nic.resolve(c.gateway)?;
    let line = (rate_gbps * 1e9) as u64;
    let (cc_state, ecn) = match cc {
        CcName::Hpcc => {
            let cfg = HpccConfig::new(line, (base_rtt_us * 1e3) as u64, 1);
            (FlowCc::Hpcc(Box::new(Hpcc::new(cfg))), 0)
        }
        CcName::Dcqcn => (FlowCc::Dcqcn(DcqcnRp::new(DcqcnConfig::mellanox(line))), wire::ipv4::ecn::ECT0),
        CcName::Fixed => (FlowCc::Fixed(line as f64), 0),
    };
    let f = UdpFlow { ecn, ..flow(&nic, next_hop, c.peer, c.sender_qp) };
    let int = (cc == CcName::Hpcc).then(|| IntRepr::empty(int_hops));
    // Frame bytes beyond the payload: headers, INT, BTH and ICRC.
    let overhead = rc_frame_len(&f, int.as_ref(), false, 4);
    let mut tx = RcSender::new(
        SenderConfig {
            size: data.len() as u64,
            mtu: c.mtu,
            dest_qp: c.receiver_qp,
            start_psn: c.start_psn,
            overhead,
            window_packets: 4096,
            ack_every: 1,
            timeout_ns: (timeout_ms * 1e6) as u64,
            retry_limit: 7,
        },
        cc_state,
    );
    let deadline = Duration::from_secs_f64(c.deadline_s);
    let (mut acks, mut int_acks, mut cnps, mut bad) = (0u64, 0u64, 0u64, 0u64);
    let mut scratch = Vec::new();
    let mut first_send = None;
    let outcome = 'run: loop {
        if nic.t0.elapsed() > deadline {
            break Err(format!("deadline of {deadline:?} passed"));
        }
        // Acknowledgements and CNPs.
        nic.receive();
        let now = nic.now();
        let mut rx = std::mem::take(&mut nic.rx);
        for fr in rx.drain(..) {
            if let Ok(p) = parse_rc(fr.data())
                && p.src == c.peer
                && p.bth.dest_qp == c.sender_qp
            {
                if check_icrc(fr.data(), &p, &mut scratch).is_err() {
                    bad += 1;
                } else if let Some(aeth) = &p.aeth {
                    acks += 1;
                    int_acks += u64::from(p.int.is_some_and(|i| i.n_hop > 0));
                    tx.handle_ack(now, &p.bth, aeth, p.int.as_ref());
                } else if p.bth.opcode == wire::roce::Opcode::CNP {
                    cnps += 1;
                    tx.handle_cnp(now);
                }
            }
            nic.pool.free(fr);
        }
        nic.rx = rx;
        if tx.poll_timeout().is_some_and(|t| t <= now) {
            tx.handle_timeout(now);
        }
        // Data, a burst at most.
        let mut wait = None;
        while nic.tx.len() < BURST {
            match tx.poll_transmit(nic.now()) {
                Transmit::Send(seg) => {
                    first_send.get_or_insert(nic.now());
                    let bth = data_bth(c.receiver_qp, &seg);
                    let tail = seg.len + usize::from(bth.pad_count) + 4;
                    let n = rc_frame_len(&f, int.as_ref(), false, tail).max(60);
                    let payload = &data[seg.offset as usize..seg.offset as usize + seg.len];
                    let ok = nic.queue(n, |b| {
                        let n = emit_rc(b, &f, int.as_ref(), &bth, None, tail, |p| {
                            p[..seg.len].copy_from_slice(payload)
                        })
                        .ok()?;
                        seal(b, n, 14).ok()?;
                        Some(n)
                    });
                    if !ok {
                        break 'run Err("no buffer for a data frame".to_string());
                    }
                }
                Transmit::Until(t) => {
                    wait = Some(t);
                    break;
                }
                Transmit::Blocked | Transmit::Done => break,
                Transmit::Failed(e) => break 'run Err(format!("queue pair failed: {e}")),
            }
        }
        let sent_any = !nic.tx.is_empty();
        nic.flush();
        if tx.is_done() {
            break Ok(());
        }
        if !sent_any {
            nic.idle(wait.or(tx.poll_timeout()));
        }
    };
    let secs = first_send.map_or(0.0, |t| (nic.now() - t) as f64 / 1e9);
    let st = tx.stats();
    let (rate, window) = (tx.pacer().rate_bps(), tx.pacer().window());
    println!(
        "sent {} bytes in {secs:.3} s ({:.3} Gb/s); acks {acks}, acks with INT {int_acks}, cnps {cnps}, bad icrc {bad}; \
         nak rounds {}, timeouts {}, resent {}; final rate {:.3} Gb/s, window {}",
        tx.acked(),
        tx.acked() as f64 * 8.0 / secs.max(1e-9) / 1e9,
        st.nak_rounds,
        st.timeouts,
        st.resent,
        rate / 1e9,
        window.map_or("none".to_string(), |w| w.to_string()),
    );
    match outcome {
        Ok(()) => Ok(true),
        Err(e) => {
            eprintln!("nic-agent send: {e}");
            Ok(false)
        }
    }
}

fn recv(c: &Common, size: u64, out: &PathBuf) -> anyhow::Result<bool> {
    let mut nic = Nic::open(c)?;
    let next_hop = nic.resolve(c.gateway)?;
    let fb = flow(&nic, next_hop, c.peer, c.receiver_qp);
    let mut rx = RcReceiver::new(size, c.start_psn, 50_000);
    let mut data = Vec::with_capacity(size as usize);
    let (mut bad_icrc, mut malformed, mut acks, mut naks, mut cnps) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut int_seen = 0u64;
    let mut scratch = Vec::new();
    let deadline = Duration::from_secs_f64(c.deadline_s);
    let mut first = None;
    let mut linger_until = None::<Instant>;
    loop {
        if nic.t0.elapsed() > deadline {
            break;
        }
        if linger_until.is_some_and(|t| Instant::now() > t) {
            break;
        }
        if nic.receive() == 0 {
            nic.idle(None);
            continue;
        }
        let now = nic.now();
        let mut frames = std::mem::take(&mut nic.rx);
        for fr in frames.drain(..) {
            let p = match parse_rc(fr.data()) {
                Ok(p) if p.src == c.peer && p.bth.dest_qp == c.receiver_qp => p,
                // Another QP's, ARP, the kernel's own traffic: not ours.
                _ => {
                    nic.pool.free(fr);
                    continue;
                }
            };
            if check_icrc(fr.data(), &p, &mut scratch).is_err() {
                bad_icrc += 1;
                nic.pool.free(fr);
                continue;
            }
            if p.aeth.is_some() {
                malformed += 1;
                nic.pool.free(fr);
                continue;
            }
            first.get_or_insert(now);
            int_seen += u64::from(p.int.is_some_and(|i| i.n_hop > 0));
            let ce = p.ecn == wire::ipv4::ecn::CE;
            let r = rx.handle_data(now, &p.bth, &fr.data()[p.payload.clone()], ce);
            data.extend_from_slice(r.delivered);
            let (ack, cnp, completed) = (r.ack, r.cnp, r.completed);
            if let Some(ack) = ack {
                let int = p.int.map(|i| IntRepr { reflected: true, ..i });
                let bth = ack_bth(c.sender_qp, &ack);
                let n = rc_frame_len(&fb, int.as_ref(), true, 4).max(60);
                nic.queue(n, |b| {
                    let n = emit_rc(b, &fb, int.as_ref(), &bth, Some(&ack.aeth), 4, |_| {}).ok()?;
                    seal(b, n, 14).ok()?;
                    Some(n)
                });
                match ack.aeth.syndrome {
                    wire::roce::Syndrome::Ack { .. } => acks += 1,
                    _ => naks += 1,
                }
            }
            if cnp {
                cnps += 1;
                let bth = cnp_bth(c.sender_qp);
                let tail = wire::roce::CNP_BODY_LEN + 4;
                let n = rc_frame_len(&fb, None, false, tail).max(60);
                nic.queue(n, |b| {
                    let n = emit_rc(b, &fb, None, &bth, None, tail, |t| t.fill(0)).ok()?;
                    seal(b, n, 14).ok()?;
                    Some(n)
                });
            }
            nic.pool.free(fr);
            if completed {
                // Stay a moment to acknowledge resends of a lost last ACK.
                linger_until = Some(Instant::now() + Duration::from_millis(200));
            }
        }
        nic.rx = frames;
        nic.flush();
    }
    let secs = first.map_or(0.0, |t| (nic.now() - t) as f64 / 1e9);
    std::fs::write(out, &data).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "received {} of {size} bytes in {secs:.3} s; data packets with INT {int_seen}; acks {acks}, naks {naks}, \
         cnps {cnps}; bad icrc {bad_icrc}, malformed {malformed}",
        rx.bytes()
    );
    Ok(rx.is_complete() && bad_icrc == 0)
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let ok = match &cli.cmd {
        Cmd::Send { c, file, cc, rate_gbps, base_rtt_us, int_hops, timeout_ms } => {
            send(c, file, *cc, *rate_gbps, *base_rtt_us, *int_hops, *timeout_ms)?
        }
        Cmd::Recv { c, size, out } => recv(c, *size, out)?,
    };
    std::process::exit(if ok { 0 } else { 1 })
}
