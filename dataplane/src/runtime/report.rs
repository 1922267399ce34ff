//! `dataplane report`: a DTA load generator. The sans-IO [`LoadGen`] makes the reports
//! (sequence numbers, the last K kept, resends from NACKs); this wraps it with a clock, a
//! pacer and either a UDP socket (reports to each collector's address on the DTA port, as a
//! reporter behind the translator sends them; NACKs read on port 40044) or a pcap file of
//! Ethernet frames for replay through a pcap or DPDK port.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use pcap_file::DataLink;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use wire::dta::NackRepr;
use wire::ethernet::EthernetAddress;
use wire::stack::UdpFlow;

use roce::dta::{LoadGen, LoadSpec, MAX_REPORT, report_frame_len, write_report_frame};
use wire::udp::port::DTA_NACK as NACK_PORT;

/// Where reports go.
#[derive(Debug, Clone)]
pub enum Sink {
    /// A UDP socket bound to `bind` (NACKs are read on `bind`'s address, port 40044).
    Udp {
        /// Local address and source port.
        bind: SocketAddrV4,
    },
    /// Ethernet frames into a pcap file.
    Pcap {
        /// File.
        path: PathBuf,
        /// Source MAC.
        src_mac: EthernetAddress,
        /// Destination MAC (the translator's).
        dst_mac: EthernetAddress,
        /// Source address.
        src_ip: Ipv4Addr,
    },
}

/// A load generator run.
#[derive(Debug, Clone)]
pub struct ReportRun {
    /// What to send.
    pub spec: LoadSpec,
    /// Collectors, by the reporters' mapping.
    pub collectors: Vec<Ipv4Addr>,
    /// DTA UDP port.
    pub port: u16,
    /// Reports per second; 0: as fast as the sink takes them.
    pub rate: u64,
    /// Reports to send.
    pub count: u64,
    /// Retransmittable reports kept for NACKs.
    pub keep: usize,
    /// Where.
    pub sink: Sink,
    /// After the last report, keep answering NACKs this long.
    pub linger: Duration,
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReportSummary {
    /// Reports sent (first transmissions).
    pub sent: u64,
    /// Seconds from the first report to the last.
    pub seconds: f64,
    /// NACK and slow-down messages received.
    pub nacks: u64,
    /// Reports resent.
    pub resent: u64,
    /// NACKed reports no longer kept.
    pub unrecoverable: u64,
    /// Slow-down messages.
    pub slow_downs: u64,
    /// Send errors (e.g. no buffer space).
    pub send_errors: u64,
}

impl std::fmt::Display for ReportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = if self.seconds > 0.0 { self.sent as f64 / self.seconds } else { 0.0 };
        writeln!(f, "sent          {} reports in {:.3} s ({:.0} reports/s)", self.sent, self.seconds, rate)?;
        writeln!(f, "nacks         {} ({} slow-down)", self.nacks, self.slow_downs)?;
        writeln!(f, "resent        {}", self.resent)?;
        writeln!(f, "unrecoverable {}", self.unrecoverable)?;
        writeln!(f, "send errors   {}", self.send_errors)
    }
}

/// Reports sent back to back between two pacing waits: about 50 µs worth at `rate`, at most
/// 32 (a burst), at least 1 (slow rates stay smooth).
fn pace_burst(rate: u64) -> u64 {
    (rate / 20_000).clamp(1, 32)
}

/// Sends one report's bytes to a collector; `false` if it could not.
type SendFn = dyn FnMut(Ipv4Addr, &[u8]) -> bool;

/// Run the load generator.
pub fn run(r: &ReportRun) -> anyhow::Result<ReportSummary> {
    if r.collectors.is_empty() {
        bail!("no collector address given");
    }
    let mut gen_ = LoadGen::new(r.spec, r.keep);
    let mut out: Box<SendFn> = match &r.sink {
        Sink::Udp { bind } => {
            let sock =
                UdpSocket::bind(bind).with_context(|| format!("binding the report socket to {bind}"))?;
            let port = r.port;
            Box::new(move |dst, b| sock.send_to(b, SocketAddrV4::new(dst, port)).is_ok())
        }
        Sink::Pcap { path, src_mac, dst_mac, src_ip } => {
            let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
            let header = PcapHeader { datalink: DataLink::ETHERNET, ..PcapHeader::default() };
            let mut w = PcapWriter::with_header(std::io::BufWriter::new(f), header)
                .with_context(|| format!("writing {}", path.display()))?;
            let (src_mac, dst_mac, src_ip, port) = (*src_mac, *dst_mac, *src_ip, r.port);
            let start = Instant::now();
            let mut frame = vec![0u8; 64 + MAX_REPORT];
            Box::new(move |dst, b| {
                let flow = UdpFlow::host_udp(
                    src_mac,
                    dst_mac,
                    SocketAddrV4::new(src_ip, 40041),
                    SocketAddrV4::new(dst, port),
                );
                let n = report_frame_len(&flow, b.len());
                let f = &mut frame[..n];
                write_report_frame(&flow, b, f)
                    && w.write_packet(&PcapPacket::new(start.elapsed(), n as u32, f)).is_ok()
            })
        }
    };
    let nack_sock = match &r.sink {
        Sink::Udp { bind } => {
            let s = UdpSocket::bind(SocketAddrV4::new(*bind.ip(), NACK_PORT))
                .with_context(|| format!("binding the NACK socket to {}:{NACK_PORT}", bind.ip()))?;
            s.set_nonblocking(true)?;
            Some(s)
        }
        Sink::Pcap { .. } => None,
    };
    let mut s = ReportSummary::default();
    let mut buf = [0u8; MAX_REPORT];
    let start = Instant::now();
    let collectors = r.collectors.clone();
    let poll_nacks = |g: &mut LoadGen, s: &mut ReportSummary, out: &mut SendFn| {
        let Some(sock) = &nack_sock else { return };
        let mut m = [0u8; 64];
        while let Ok(n) = sock.recv(&mut m) {
            let Ok(nack) = NackRepr::parse(&m[..n]) else { continue };
            s.nacks += 1;
            let mut resend: Vec<Vec<u8>> = Vec::new();
            g.sender.on_nack(&nack, |b| resend.push(b.to_vec()));
            for b in resend {
                let Ok(rep) = wire::dta::DtaRepr::parse(&b, wire::dta::Format::default()) else { continue };
                if let Some(dst) = roce::dta::destination(&rep, &collectors)
                    && !out(dst, &b)
                {
                    s.send_errors += 1;
                }
            }
        }
    };
    let mut due = Duration::ZERO;
    let burst = pace_burst(r.rate);
    while gen_.produced < r.count {
        // Pace in bursts of about 50 µs: each burst is due burst / (rate × the share
        // slow-down messages allow) after the last; the wait until then is slept, not spun,
        // when it is long enough, so a paced generator leaves the CPU to the translator and
        // the collector.
        if r.rate > 0 && gen_.produced.is_multiple_of(burst) {
            loop {
                // NACKs first, so one that came during the wait is answered before the next
                // report goes out.
                poll_nacks(&mut gen_, &mut s, &mut *out);
                let now = start.elapsed();
                if now >= due {
                    break;
                }
                let left = due - now;
                if left > Duration::from_micros(100) {
                    std::thread::sleep(left - Duration::from_micros(50));
                } else {
                    std::hint::spin_loop();
                }
            }
            due += Duration::from_secs_f64(burst as f64 / (r.rate as f64 * gen_.sender.rate_scale()));
        }
        let Some((n, c)) = gen_.next_report(&mut buf, collectors.len()) else {
            bail!("a report does not fit {MAX_REPORT} bytes")
        };
        if !out(collectors[c], &buf[..n]) {
            s.send_errors += 1;
        }
        if gen_.produced.is_multiple_of(64) {
            poll_nacks(&mut gen_, &mut s, &mut *out);
        }
    }
    s.seconds = start.elapsed().as_secs_f64();
    let end = Instant::now();
    while end.elapsed() < r.linger && nack_sock.is_some() {
        poll_nacks(&mut gen_, &mut s, &mut *out);
        std::thread::sleep(Duration::from_millis(1));
    }
    s.sent = gen_.produced;
    s.resent = gen_.sender.resent;
    s.unrecoverable = gen_.sender.unrecoverable;
    s.slow_downs = gen_.sender.slow_downs;
    Ok(s)
}
