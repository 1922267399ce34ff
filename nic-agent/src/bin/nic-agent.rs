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
//! CNPs; `fixed` at the line rate; `ufab` as a µFAB-E VM-pair (`--guarantee-gbps`, one
//! `--route` per candidate path through `ufab` switches: its window from probe responses; the
//! receiver answers probes with `recv --ufab`, and takes several flows with `--flows`; a
//! VM-pair over several paths, Appendix F, is `send --paths K` and `recv --paths K`). There
//! is no CM exchange: both sides are given the QP
//! numbers and the first PSN (defaults match), as two RNICs a test has connected by hand. The
//! next hop's MAC is found by ARP. Each side prints one summary line and exits 0 when the
//! transfer completed (the receiver: every byte, in order, every ICRC good), 1 otherwise.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use nic_agent::dcqcn::{DcqcnConfig, DcqcnRp};
use nic_agent::hawkeye::DetectorConfig;
use nic_agent::host::{HostConfig, RcHost, RecvFlow, SendFlow};
use nic_agent::hpcc::{Hpcc, HpccConfig};
use nic_agent::rc::{FlowCc, SenderConfig, rc_frame_len, udp_src_port};
use nic_agent::ufab::host::{UfabFlow, UfabHost, UfabHostConfig, VfSpec, path_share};
use nic_agent::ufab::pair::PairConfig;
use ports::buf::{HeapPool, PktBuf};
use ports::host::{BURST, HostPort, Idle};
use ports::input::ranged;
use ports::port::{AfPacketPort, interface_mac};
use wire::ethernet::EthernetAddress;
use wire::hpcc_int::IntRepr;
use wire::stack::UdpFlow;

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
    /// Payload bytes per packet (64..=9000).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u16).range(64..=9000))]
    mtu: u16,
    /// The sender's QP number (24 bits).
    #[arg(long, default_value_t = 0x11, value_parser = clap::value_parser!(u32).range(1..=0xff_ffff))]
    sender_qp: u32,
    /// The receiver's QP number (24 bits).
    #[arg(long, default_value_t = 0x22, value_parser = clap::value_parser!(u32).range(1..=0xff_ffff))]
    receiver_qp: u32,
    /// The first PSN (24 bits).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=0xff_ffff))]
    start_psn: u32,
    /// Give up after this many seconds (more than 0, at most a day).
    #[arg(long, default_value_t = 60.0, value_parser = seconds, allow_negative_numbers = true)]
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
    /// µFAB-E: a VM-pair with a guarantee, on a source route through `ufab` switches, its
    /// window from the switches' telemetry in probe responses (`--guarantee-gbps`, `--route`).
    Ufab,
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
        /// Line rate, Gb/s: the pacer's first and largest rate (more than 0, at most 1600).
        #[arg(long, default_value_t = 1.0, value_parser = gbps, allow_negative_numbers = true)]
        rate_gbps: f64,
        /// HPCC++'s base RTT `T`, microseconds (at least 1, at most a second).
        #[arg(long, default_value_t = 200.0, value_parser = rtt_us, allow_negative_numbers = true)]
        base_rtt_us: f64,
        /// INT hop slots to allocate (switches on the path, 1..=8).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=8))]
        int_hops: u8,
        /// Retransmission timeout, milliseconds (at least 0.01, at most a minute).
        #[arg(long, default_value_t = 20.0, value_parser = timeout_ms, allow_negative_numbers = true)]
        timeout_ms: f64,
        /// Run Hawkeye's detection agent: a polling packet (EtherType 0x6888) for this flow
        /// when its RTT exceeds this many times its base RTT (more than 1, at most 1000).
        #[arg(long, value_parser = rtt_factor, allow_negative_numbers = true)]
        hawkeye_rtt_factor: Option<f64>,
        /// The detection agent's base RTT, microseconds (default: the flow's smallest).
        #[arg(long, value_parser = rtt_us, allow_negative_numbers = true, requires = "hawkeye_rtt_factor")]
        hawkeye_base_rtt_us: Option<f64>,
        /// At most one polling packet per this many milliseconds (at least 0.01, at most a minute).
        #[arg(long, default_value_t = 3.0, value_parser = timeout_ms, allow_negative_numbers = true)]
        hawkeye_interval_ms: f64,
        /// µFAB: the pair's guarantee, Gb/s (more than 0, at most 1600).
        #[arg(long, value_parser = gbps, allow_negative_numbers = true, required_if_eq("cc", "ufab"))]
        guarantee_gbps: Option<f64>,
        /// µFAB: a candidate source route, the egress port at each `ufab` switch, first hop first
        /// ("2,3,1"); repeat for more candidates.
        #[arg(long, value_parser = route, required_if_eq("cc", "ufab"))]
        route: Vec<Vec<u16>>,
        /// µFAB: B_u, the bandwidth of one token, Mb/s (more than 0).
        #[arg(long, default_value_t = 100.0, value_parser = mbps, allow_negative_numbers = true)]
        b_u_mbps: f64,
        /// µFAB: the pair ID its probes carry (their UDP source port), 1..=32767.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=32767))]
        pair_id: u16,
        /// µFAB: the VM-pair's underlay paths (Appendix F): the file goes as this many
        /// connections, its bytes split evenly (path k: QPs `--sender-qp` plus k to
        /// `--receiver-qp` plus k, pair ID `--pair-id` plus k), each choosing among the
        /// `--route`s; Algorithm 2 splits the guarantee's tokens over them. The receiver takes
        /// them with `recv --paths`.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8))]
        paths: u32,
        /// Print `progress UNIX_US ACKED_BYTES ACKED_FRAME_BYTES` this often, milliseconds, and
        /// once at the end: wall-clock time (so that the progress of senders in different
        /// processes lines up), the data acknowledged, and the bytes of the frames that carried
        /// it (headers and ICRC included: what a link carried).
        #[arg(long, value_parser = timeout_ms, allow_negative_numbers = true)]
        progress_ms: Option<f64>,
    },
    /// Receive a file.
    Recv {
        #[command(flatten)]
        c: Common,
        /// Bytes to expect (at least 1; they are held in memory, so at most what is available).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        size: u64,
        /// Where to write them.
        #[arg(long)]
        out: PathBuf,
        /// Answer µFAB probes (the receiver's µFAB-E), for a sender with `--cc ufab`.
        #[arg(long)]
        ufab: bool,
        /// Flows to receive, each of `--size` bytes: flow k from QP `--sender-qp` + k to
        /// `--receiver-qp` + k, written to `--out` (k = 0) or `--out`.k (1..=64).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
        flows: u32,
        /// One µFAB VM-pair over this many paths (`send --paths`): `--size` bytes split over as
        /// many flows as the sender splits them, written to `--out` in order (1..=8).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=8), conflicts_with = "flows")]
        paths: u32,
    },
}

fn seconds(s: &str) -> Result<f64, String> {
    ranged(s, 0.0, 86_400.0, true, "s")
}

fn gbps(s: &str) -> Result<f64, String> {
    ranged(s, 0.0, 1600.0, true, "Gb/s")
}

fn rtt_us(s: &str) -> Result<f64, String> {
    ranged(s, 1.0, 1e6, false, "µs")
}

fn timeout_ms(s: &str) -> Result<f64, String> {
    ranged(s, 0.01, 60_000.0, false, "ms")
}

fn mbps(s: &str) -> Result<f64, String> {
    ranged(s, 0.0, 1_600_000.0, true, "Mb/s")
}

/// A source route: egress ports, comma-separated, 1 to 15 of them.
fn route(s: &str) -> Result<Vec<u16>, String> {
    let ports: Vec<u16> = s
        .split(',')
        .map(|p| p.trim().parse::<u16>().map_err(|_| format!("{p:?} is not a port number")))
        .collect::<Result<_, _>>()?;
    if ports.is_empty() || ports.len() > wire::ufab::MAX_HOPS {
        return Err(format!("{s:?}: 1 to {} ports", wire::ufab::MAX_HOPS));
    }
    Ok(ports)
}

/// µFAB's options of a sender.
struct UfabOpts {
    guarantee_gbps: Option<f64>,
    routes: Vec<Vec<u16>>,
    b_u_mbps: f64,
    pair_id: u16,
    paths: u32,
}

fn rtt_factor(s: &str) -> Result<f64, String> {
    ranged(s, 1.0, 1000.0, true, "× the base RTT")
}

/// The detection agent's options.
struct HawkeyeOpts {
    rtt_factor: Option<f64>,
    base_rtt_us: Option<f64>,
    interval_ms: f64,
}

type Host = HostPort<PktBuf, AfPacketPort, HeapPool>;

/// The interface as a host: its port, buffers, MAC and address, and the next hop's MAC (asked
/// for at most 10 s, within the deadline, until a stop).
fn open(c: &Common, stop: &AtomicBool) -> anyhow::Result<(Host, EthernetAddress)> {
    let port = AfPacketPort::open(&c.iface).with_context(|| format!("opening {} (AF_PACKET)", c.iface))?;
    let mac = interface_mac(&c.iface).with_context(|| format!("reading the MAC of {}", c.iface))?;
    let mut host = HostPort::new(port, HeapPool::new(4 * BURST + 256, 2048), mac, c.ip, Idle::Sleep);
    let wait = Duration::from_secs_f64(c.deadline_s.min(10.0));
    let next_hop = host.resolve_until(c.gateway, wait, || stop.load(Ordering::Relaxed))?;
    Ok((host, next_hop))
}

/// The NIC's settings for flows with `cc` (ICRC computed and checked, as a NIC does).
fn host_config(host: &Host, next_hop: EthernetAddress, cc: Option<(CcName, u8)>) -> HostConfig {
    HostConfig {
        ip: host.ip,
        mac: host.mac,
        gateway_mac: next_hop,
        data_dscp: 0,
        ctrl_dscp: 0,
        data_ecn: if matches!(cc, Some((CcName::Dcqcn, _))) { wire::ipv4::ecn::ECT0 } else { 0 },
        data_priority: 0,
        ctrl_priority: 0,
        int_hops: match cc {
            Some((CcName::Hpcc, hops)) => Some(hops),
            _ => None,
        },
        int_compact: false,
        icrc: true,
        write_payload: true,
        cnp_interval_ns: 50_000,
    }
}

/// The sender's rate, CC and transport settings.
#[derive(Clone, Copy)]
struct Tuning {
    rate_gbps: f64,
    base_rtt_us: f64,
    int_hops: u8,
    timeout_ms: f64,
    progress_ms: Option<f64>,
}

/// `--progress-ms`: the bytes acknowledged so far, with the wall-clock time, at most once per
/// `every_ns` of the host's clock (nothing when `every_ns` is 0).
struct Progress {
    every_ns: u64,
    next: u64,
    /// Payload bytes per full frame, and the frame's bytes beyond its payload.
    mtu: u64,
    overhead: u64,
}

impl Progress {
    fn new(progress_ms: Option<f64>, mtu: u64, overhead: u64) -> Self {
        Self { every_ns: progress_ms.map_or(0, |ms| (ms * 1e6) as u64), next: 0, mtu: mtu.max(1), overhead }
    }

    /// A line at `now` if one is due (or `force`d).
    fn tick(&mut self, now: u64, acked: u64, force: bool) {
        if self.every_ns == 0 || (now < self.next && !force) {
            return;
        }
        self.next = now + self.every_ns;
        let us = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros());
        let frames = acked + acked.div_ceil(self.mtu) * self.overhead;
        println!("progress {us} {acked} {frames}");
    }
}

/// A command's failure: its input (exit 2, before any I/O) or its run (exit 1).
enum Fail {
    Input(String),
    Run(anyhow::Error),
}

impl From<anyhow::Error> for Fail {
    fn from(e: anyhow::Error) -> Self {
        Fail::Run(e)
    }
}

fn input(msg: String) -> Fail {
    Fail::Input(msg)
}

/// The file a sender moves: read whole, so at most what memory holds (a device that never
/// ends is refused once past that, not read until the allocation fails).
fn read_file(file: &std::path::Path) -> Result<Vec<u8>, Fail> {
    use std::io::Read;
    let bad = |e: String| input(format!("--file {}: {e}", file.display()));
    let f = std::fs::File::open(file).map_err(|e| bad(e.to_string()))?;
    let meta = f.metadata().map_err(|e| bad(e.to_string()))?;
    if meta.is_dir() {
        return Err(bad("a directory, not a file".into()));
    }
    // A regular file's length is known; a pipe or a device is read at most 64 MiB.
    let max = if meta.is_file() { meta.len() } else { 64 << 20 };
    ports::input::fits_in_memory(u128::from(max)).map_err(bad)?;
    let mut data = Vec::new();
    f.take(max.saturating_add(1)).read_to_end(&mut data).map_err(|e| bad(e.to_string()))?;
    if data.len() as u64 > max {
        return Err(bad(format!(
            "longer than {} MiB (a file that is not a regular one is read whole, up to that)",
            max >> 20
        )));
    }
    if data.is_empty() {
        return Err(bad("empty: nothing to send".into()));
    }
    Ok(data)
}

fn send(
    c: &Common,
    file: &std::path::Path,
    cc: CcName,
    t: &Tuning,
    hawkeye: &HawkeyeOpts,
    ufab: &UfabOpts,
    stop: &AtomicBool,
) -> Result<bool, Fail> {
    let Tuning { rate_gbps, base_rtt_us, int_hops, timeout_ms, progress_ms } = *t;
    if !(0.001..=400.0).contains(&rate_gbps) {
        return Err(input(format!("--rate-gbps {rate_gbps}: expected a rate from 0.001 to 400 Gb/s")));
    }
    if !(1..=wire::hpcc_int::MAX_HOPS as u8).contains(&int_hops) {
        return Err(input(format!("--int-hops {int_hops}: expected 1 to {}", wire::hpcc_int::MAX_HOPS)));
    }
    let paths = if cc == CcName::Ufab { ufab.paths.max(1) } else { 1 };
    if u32::from(ufab.pair_id) + paths - 1 > 32767
        || c.sender_qp + paths - 1 > 0xff_ffff
        || c.receiver_qp + paths - 1 > 0xff_ffff
    {
        return Err(input(format!(
            "--paths {paths}: --pair-id, --sender-qp and --receiver-qp + {} must stay in range",
            paths - 1
        )));
    }
    if cc == CcName::Ufab && (ufab.guarantee_gbps.is_none() || ufab.routes.is_empty()) {
        return Err(input("--cc ufab needs --guarantee-gbps and at least one --route".into()));
    }
    if let Some(g) = ufab.guarantee_gbps
        && g > rate_gbps
    {
        return Err(input(format!("--guarantee-gbps {g}: above the line rate --rate-gbps {rate_gbps}")));
    }
    let data = read_file(file)?;
    let size = data.len() as u64;
    if size < u64::from(paths) {
        return Err(input(format!("--paths {paths}: the file has {size} bytes, fewer than one per path")));
    }
    let (mut host, next_hop) = open(c, stop)?;
    let line = (rate_gbps * 1e9) as u64;
    let flow_cc = match cc {
        CcName::Hpcc => {
            FlowCc::Hpcc(Box::new(Hpcc::new(HpccConfig::new(line, (base_rtt_us * 1e3) as u64, 1))))
        }
        CcName::Dcqcn => FlowCc::Dcqcn(DcqcnRp::new(DcqcnConfig::mellanox(line))),
        // µFAB-E sets the pacer from its probes.
        CcName::Fixed | CcName::Ufab => FlowCc::Fixed(line as f64),
    };
    let hc = host_config(&host, next_hop, Some((cc, int_hops)));
    let int = hc.int_hops.map(IntRepr::empty);
    let udp = UdpFlow::host_udp(
        hc.mac,
        next_hop,
        SocketAddrV4::new(hc.ip, udp_src_port(c.sender_qp)),
        SocketAddrV4::new(c.peer, wire::udp::port::ROCE_V2),
    );
    // Frame bytes beyond the payload: headers, INT, BTH and ICRC.
    let overhead = rc_frame_len(&udp, int.as_ref(), false, 4);
    let mut progress = Progress::new(progress_ms, u64::from(c.mtu), overhead as u64);
    let mut agent = RcHost::new(hc);
    if let Some(k) = hawkeye.rtt_factor {
        agent.enable_detection(DetectorConfig {
            rtt_factor: k,
            base_rtt_ns: hawkeye.base_rtt_us.map(|us| (us * 1e3) as u64),
            min_interval_ns: (hawkeye.interval_ms * 1e6) as u64,
        });
    }
    // One connection per path, the file split evenly (path k from QP sender_qp + k).
    let flows: Vec<SendFlow> = (0..paths)
        .map(|k| {
            let (at, len) = path_share(size, paths, k);
            SendFlow {
                id: u64::from(k),
                peer: c.peer,
                local_qp: c.sender_qp + k,
                cfg: SenderConfig {
                    size: len,
                    mtu: usize::from(c.mtu),
                    dest_qp: c.receiver_qp + k,
                    start_psn: c.start_psn,
                    overhead,
                    window_packets: 4096,
                    ack_every: 1,
                    timeout_ns: (timeout_ms * 1e6) as u64,
                    retry_limit: 7,
                },
                cc: flow_cc.clone(),
                payload: Some(data[at as usize..(at + len) as usize].into()),
            }
        })
        .collect();
    let deadline = (c.deadline_s * 1e9) as u64;
    let mut wrapped;
    let agent: &RcHost = if cc == CcName::Ufab {
        let Some(g) = ufab.guarantee_gbps else {
            return Err(input("--cc ufab needs --guarantee-gbps".into()));
        };
        let b_u = ufab.b_u_mbps * 1e6;
        let t = (base_rtt_us * 1e3) as u64;
        let mut pair = PairConfig::new(ufab.pair_id, b_u, t);
        pair.min_window = f64::from(c.mtu);
        let cfg = UfabHostConfig {
            pair,
            freeze_rtts: 10,
            weights: [1, 2, 5, 10, 20, 50, 100, 200],
            token_period_ns: 100_000,
            tc: 0,
            line_rate_bps: line as f64,
            seed: u64::from(ufab.pair_id),
        };
        wrapped = UfabHost::new(agent, cfg, vec![VfSpec { tokens: g * 1e9 / b_u, class: 0 }]);
        for (k, flow) in (0u16..).zip(flows) {
            let uf = UfabFlow {
                vf: 0,
                pair_id: ufab.pair_id + k,
                paths: ufab.routes.clone(),
                base_rtt_ns: t,
                vm_pair: u32::from(ufab.pair_id),
            };
            wrapped.start_send(host.now(), flow, uf);
        }
        host.run(&mut wrapped, |a, now| {
            let done = a.rc_ref().senders_done() || now > deadline || stop.load(Ordering::Relaxed);
            let acked = (0..u64::from(paths)).filter_map(|k| a.rc_ref().sender(k)).map(|s| s.acked()).sum();
            progress.tick(now, acked, done);
            done
        });
        let s = wrapped.stats();
        for k in 0..u64::from(paths) {
            let p = wrapped.pair(k).expect("the pair started");
            println!(
                "ufab: path {:?}, phi {:.1}, window {:.0} B, share {:.3} Gb/s, moves {}, probes {}, responses {}, failures {}",
                p.current_path(),
                p.phi(),
                p.window_bytes(),
                p.share_bps() / 1e9,
                p.stats().moves,
                s.probes_tx,
                s.responses_rx,
                s.failures_rx
            );
        }
        wrapped.rc_ref()
    } else {
        let Some(flow) = flows.into_iter().next() else { return Err(input("no flow to send".into())) };
        agent.start_send(host.now(), flow);
        host.run(&mut agent, |a, now| {
            let done = a.senders_done() || now > deadline || stop.load(Ordering::Relaxed);
            progress.tick(now, a.sender(0).map_or(0, |s| s.acked()), done);
            done
        });
        &agent
    };
    // One line per connection (one unless a µFAB VM-pair has several paths).
    let mut outcome = Ok(());
    let hs = agent.stats();
    for k in 0..u64::from(paths) {
        let tx = agent.sender(k).expect("the flow started");
        let this = match (tx.is_done(), tx.error()) {
            (true, _) => Ok(()),
            (false, Some(e)) => Err(format!("queue pair failed: {e}")),
            (false, None) if stop.load(Ordering::Relaxed) => Err("stopped by a signal".to_string()),
            (false, None) => Err(format!("deadline of {:?} passed", Duration::from_secs_f64(c.deadline_s))),
        };
        outcome = outcome.and(this);
        let secs = agent.first_send(k).map_or(0.0, |t| (host.now() - t) as f64 / 1e9);
        let st = tx.stats();
        let (rate, window) = (tx.pacer().rate_bps(), tx.pacer().window());
        println!(
            "sent {} bytes in {secs:.3} s ({:.3} Gb/s); acks {}, acks with INT {}, cnps {}, bad icrc {}; \
             nak rounds {}, timeouts {}, resent {}; final rate {:.3} Gb/s, window {}",
            tx.acked(),
            tx.acked() as f64 * 8.0 / secs.max(1e-9) / 1e9,
            hs.acks_rx,
            hs.int_acks_rx,
            hs.cnps_rx,
            hs.bad_icrc,
            st.nak_rounds,
            st.timeouts,
            st.resent,
            rate / 1e9,
            window.map_or("none".to_string(), |w| w.to_string()),
        );
    }
    if let Some(d) = agent.detector() {
        let ds = d.stats();
        println!(
            "hawkeye: rtt samples {}, over the threshold {}, polling packets {} (sent {}), suppressed {}",
            ds.samples, ds.over, ds.polls, ds.sent, ds.suppressed
        );
    }
    match outcome {
        Ok(()) => Ok(true),
        Err(e) => {
            eprintln!("nic-agent send: {e}");
            Ok(false)
        }
    }
}

/// What `recv` takes: `flows` flows of `size` bytes each, or (`paths` > 1) one VM-pair's `size`
/// bytes split over `paths` flows, written to `out` in order.
struct RecvOpts<'a> {
    size: u64,
    out: &'a std::path::Path,
    ufab: bool,
    flows: u32,
    paths: u32,
}

fn recv(c: &Common, o: &RecvOpts<'_>, stop: &AtomicBool) -> Result<bool, Fail> {
    let RecvOpts { size, out, ufab, paths, .. } = *o;
    let flows = if paths > 1 { paths } else { o.flows };
    if paths > 1 && size < u64::from(paths) {
        return Err(input(format!("--paths {paths}: --size {size} has fewer bytes than paths")));
    }
    if c.receiver_qp + flows - 1 > 0xff_ffff || c.sender_qp + flows - 1 > 0xff_ffff {
        return Err(input(format!(
            "--flows {flows}: --sender-qp and --receiver-qp + {} must stay in range",
            flows - 1
        )));
    }
    // (A VM-pair's paths are joined into one more copy of its --size bytes.)
    let held = u128::from(size) * if paths > 1 { 2 } else { u128::from(flows) };
    ports::input::fits_in_memory(held)
        .map_err(|e| input(format!("--size {size} × --flows {flows} (--paths {paths}): {e}")))?;
    ports::input::writable_file("--out", out).map_err(input)?;
    let flow_size = |k: u32| if paths > 1 { path_share(size, paths, k).1 } else { size };
    let (mut host, next_hop) = open(c, stop)?;
    let mut agent = RcHost::new(host_config(&host, next_hop, None));
    for k in 0..flows {
        agent.expect(RecvFlow {
            id: u64::from(k),
            peer: c.peer,
            local_qp: c.receiver_qp + k,
            peer_qp: c.sender_qp + k,
            size: flow_size(k),
            start_psn: c.start_psn,
            keep: true,
        });
    }
    let deadline = (c.deadline_s * 1e9) as u64;
    // Once complete, stay a moment to acknowledge resends of a lost last ACK.
    let linger = 200_000_000;
    let done = |a: &RcHost, now: u64| {
        now > deadline
            || stop.load(Ordering::Relaxed)
            || (0..u64::from(flows)).all(|k| a.completed_at(k).is_some_and(|t| now > t + linger))
    };
    let mut wrapped;
    let agent: &mut RcHost = if ufab {
        // The receiver's µFAB-E: it answers probes (no VF of its own: every pair unbound).
        let cfg = UfabHostConfig {
            pair: PairConfig::new(0, 100e6, 200_000),
            freeze_rtts: 10,
            weights: [1; 8],
            token_period_ns: 100_000,
            tc: 0,
            line_rate_bps: 1e9,
            seed: 1,
        };
        wrapped = UfabHost::new(agent, cfg, Vec::new());
        host.run(&mut wrapped, |a, now| done(a.rc_ref(), now));
        println!("ufab: responses sent {}", wrapped.stats().responses_tx);
        wrapped.rc()
    } else {
        host.run(&mut agent, |a, now| done(a, now));
        &mut agent
    };
    let hs = agent.stats();
    let mut all = true;
    let mut joined = Vec::new();
    for k in 0..flows {
        // Flow k's bytes to `out` (k = 0) or `out.k`; a VM-pair's paths, in order, to `out`.
        let id = u64::from(k);
        let data = agent.take_delivered(id);
        let secs = match (agent.first_data_at(id), agent.completed_at(id)) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => 0.0,
        };
        let (got, want) = (agent.received(id).unwrap_or(0), flow_size(k));
        println!(
            "received {got} of {want} bytes in {secs:.3} s; data packets with INT {}; acks {}, naks {}, \
             cnps {}; bad icrc {}, malformed {}",
            hs.int_data_rx, hs.acks_tx, hs.naks_tx, hs.cnps_tx, hs.bad_icrc, hs.malformed
        );
        all &= got == want;
        if paths > 1 {
            joined.extend_from_slice(&data);
            continue;
        }
        let path = if k == 0 { out.to_path_buf() } else { PathBuf::from(format!("{}.{k}", out.display())) };
        std::fs::write(&path, &data).with_context(|| format!("writing {}", path.display()))?;
    }
    if paths > 1 {
        std::fs::write(out, &joined).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(all && hs.bad_icrc == 0)
}

fn main() -> ExitCode {
    ports::host::init_tracing("warn");
    let cli: Cli = ports::input::parse_args();
    // Bad input exits 2 (as clap's own errors do) before any I/O; runtime failures exit 1.
    if let Cmd::Send { paths, cc, .. } = &cli.cmd
        && *paths > 1
        && *cc != CcName::Ufab
    {
        eprintln!("error: --paths {paths}: only a µFAB VM-pair (--cc ufab) has several paths");
        return ExitCode::from(2);
    }
    let stop = match ports::input::stop_on_signals() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: installing a signal handler: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = match &cli.cmd {
        Cmd::Send {
            c,
            file,
            cc,
            rate_gbps,
            base_rtt_us,
            int_hops,
            timeout_ms,
            hawkeye_rtt_factor,
            hawkeye_base_rtt_us,
            hawkeye_interval_ms,
            guarantee_gbps,
            route,
            b_u_mbps,
            pair_id,
            paths,
            progress_ms,
        } => {
            let hawkeye = HawkeyeOpts {
                rtt_factor: *hawkeye_rtt_factor,
                base_rtt_us: *hawkeye_base_rtt_us,
                interval_ms: *hawkeye_interval_ms,
            };
            let t = Tuning {
                rate_gbps: *rate_gbps,
                base_rtt_us: *base_rtt_us,
                int_hops: *int_hops,
                timeout_ms: *timeout_ms,
                progress_ms: *progress_ms,
            };
            let ufab = UfabOpts {
                guarantee_gbps: *guarantee_gbps,
                routes: route.clone(),
                b_u_mbps: *b_u_mbps,
                pair_id: *pair_id,
                paths: *paths,
            };
            send(c, file, *cc, &t, &hawkeye, &ufab, &stop)
        }
        Cmd::Recv { c, size, out, ufab, flows, paths } => {
            recv(c, &RecvOpts { size: *size, out, ufab: *ufab, flows: *flows, paths: *paths }, &stop)
        }
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(Fail::Input(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(Fail::Run(e)) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
