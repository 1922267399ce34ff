//! `dataplane report`: a DTA load generator — `roce::dta::ReporterAgent` (the reports, their
//! sequence numbers, pacing, the last K kept and resent from NACKs) on the host runtime, over
//! either a UDP port (reports to each collector's address on the DTA port, as a reporter behind
//! the translator sends them; NACKs read on port 40044) or a pcap file of Ethernet frames for
//! replay through a pcap or DPDK port.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

use roce::dta::{LoadSpec, MAX_REPORT, ReporterAgent, ReporterConfig};
use wire::ethernet::EthernetAddress;
use wire::udp::port::DTA_NACK as NACK_PORT;

use crate::buf::{HeapPool, PktBuf};
use crate::port::{PcapPort, PortIo, UdpPort, peer_mac};
use ports::host::{BURST, HostPort, Idle};

mod journal;
pub use journal::{Journal, JournalEntry, JournalError};

/// Why the load generator could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// No collector address was given.
    #[error("--to: no collector address given")]
    NoCollector,
    /// The UDP port (and its NACK socket) could not be bound.
    #[error("--bind {ip}: binding the NACK socket to {ip}:{NACK_PORT}: {error}")]
    Bind {
        /// The address.
        ip: Ipv4Addr,
        /// Why.
        error: std::io::Error,
    },
    /// The capture could not be opened.
    #[error(transparent)]
    Pcap(#[from] crate::port::PcapError),
    /// The capture could not be written.
    #[error("writing {}: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The reports asked for do not fit one frame.
    #[error("a report does not fit {MAX_REPORT} bytes")]
    TooLong,
    /// The journal could not be created.
    #[error("--journal {}: {error}", path.display())]
    Journal {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

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
    /// The reporter epoch (1..=15): a new one at each start ([`fresh_epoch`]).
    pub epoch: u8,
    /// Where.
    pub sink: Sink,
    /// After the last report, keep answering NACKs this long.
    pub linger: Duration,
    /// Set (by SIGINT/SIGTERM) to stop before `count` reports, the summary still given.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Keep the count of reports sent in this file as the run goes ([`Journal`]).
    pub journal: Option<PathBuf>,
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
    /// Of those, Key-Writes resent with a newer report's value of their key (never an older
    /// value over a newer one).
    pub resent_refreshed: u64,
    /// Sketch-Merge columns skipped, never sent: the translator had them merged this round
    /// from a previous incarnation of the reporter ID.
    pub sketch_skipped: u64,
    /// NACKed reports no longer kept.
    pub unrecoverable: u64,
    /// Slow-down messages.
    pub slow_downs: u64,
    /// Send errors (e.g. no buffer space).
    pub send_errors: u64,
    /// Tail probes: the newest report sent once more at the end (so a lost last report is
    /// found missing); duplicates, not reports.
    pub tail_probes: u64,
    /// Collector addresses whose translator answered this start's hello, and those that never
    /// did (the stream started unconfirmed there).
    pub hellos: (u64, u64),
    /// Translators heard restarting mid-run (a new incarnation).
    pub translator_restarts: u64,
    /// Reports of unknown outcome at a translator crash (after the killed translator's last
    /// settled position, before its successor's first).
    pub unknown_translator_crash: u64,
    /// Reports sent while no translator ran (after a stopped translator's final position,
    /// before its successor's first): lost.
    pub lost_translator_down: u64,
    /// Reports a killed translator had counted lost (its last progress message).
    pub lost_at_killed_translator: u64,
    /// Reports the live translator had not confirmed settled when the run ended.
    pub unconfirmed: u64,
    /// Stopped by a signal before the last report.
    pub interrupted: bool,
}

impl std::fmt::Display for ReportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = if self.seconds > 0.0 { self.sent as f64 / self.seconds } else { 0.0 };
        writeln!(f, "sent          {} reports in {:.3} s ({:.0} reports/s)", self.sent, self.seconds, rate)?;
        writeln!(f, "nacks         {} ({} slow-down)", self.nacks, self.slow_downs)?;
        writeln!(
            f,
            "resent        {} ({} Key-Writes with their key's newer value)",
            self.resent, self.resent_refreshed
        )?;
        writeln!(f, "unrecoverable {}", self.unrecoverable)?;
        if self.sketch_skipped > 0 {
            writeln!(
                f,
                "skipped       {} sketch columns (merged from a previous incarnation)",
                self.sketch_skipped
            )?;
        }
        writeln!(f, "tail probes   {}", self.tail_probes)?;
        writeln!(f, "hellos        {} answered, {} unanswered", self.hellos.0, self.hellos.1)?;
        writeln!(f, "send errors   {}", self.send_errors)?;
        writeln!(
            f,
            "translators   {} restarts: {} unknown at a crash, {} lost while none ran, {} counted lost by a \
             killed one; {} unconfirmed",
            self.translator_restarts,
            self.unknown_translator_crash,
            self.lost_translator_down,
            self.lost_at_killed_translator,
            self.unconfirmed
        )?;
        if self.interrupted {
            writeln!(f, "interrupted   by a signal before the last report")?;
        }
        Ok(())
    }
}

/// An epoch for a reporter starting now: from the wall clock and the process, so a restarted
/// reporter almost surely (14 in 15) has another epoch than the run before it.
pub fn fresh_epoch() -> u8 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let x = (t as u64) ^ (u64::from(std::process::id()) << 17);
    roce::dta::epoch_of((x ^ (x >> 8) ^ (x >> 24) ^ (x >> 40)) as u8)
}

/// A nonce for a reporter's hello: from the wall clock and the process (splitmix64).
pub fn fresh_nonce() -> u32 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mut z = (t as u64) ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

/// Run the load generator: a [`ReporterAgent`] on the host runtime, over a UDP port (reports as
/// datagrams from `bind`, NACKs on port 40044) or a pcap port (frames into a capture).
pub fn run(r: &ReportRun) -> Result<ReportSummary, ReportError> {
    if r.collectors.is_empty() {
        return Err(ReportError::NoCollector);
    }
    let (ip, src_port, mac, gateway_mac, linger) = match &r.sink {
        Sink::Udp { bind } => {
            (*bind.ip(), bind.port(), EthernetAddress([2, 0, 0, 0, 0, 1]), peer_mac(*bind.ip()), r.linger)
        }
        Sink::Pcap { src_mac, dst_mac, src_ip, .. } => (*src_ip, 40041, *src_mac, *dst_mac, Duration::ZERO),
    };
    let mut agent = ReporterAgent::new(ReporterConfig {
        mac,
        ip,
        gateway_mac,
        src_port,
        dst_port: r.port,
        collectors: r.collectors.clone(),
        spec: r.spec,
        count: r.count,
        rate: r.rate,
        start_ns: 0,
        keep: r.keep,
        epoch: r.epoch,
        tail_probes: if matches!(r.sink, Sink::Udp { .. }) { roce::dta::TAIL_PROBES } else { 0 },
        // A live network: announce this start to the translators first.
        hello_nonce: matches!(r.sink, Sink::Udp { .. }).then(fresh_nonce),
    });
    let pool = HeapPool::new(4 * BURST, 512);
    let linger_ns = linger.as_nanos() as u64;
    let stop = r.stop.clone();
    let stopped = move || stop.as_ref().is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
    let mut journal = match &r.journal {
        Some(path) => {
            Some(Journal::create(path).map_err(|error| ReportError::Journal { path: path.clone(), error })?)
        }
        None => None,
    };
    let done = |a: &ReporterAgent, now: u64| {
        if let Some(j) = journal.as_mut() {
            j.record(a.stats().sent, false);
        }
        stopped() || a.is_done() && now >= a.stats().last_ns.saturating_add(linger_ns)
    };
    let (port_errors, dropped) = match &r.sink {
        Sink::Udp { bind } => {
            // Frames leave in the order they are sent only from one CPU (a veth or loopback
            // hands them to the sending CPU's backlog); a reordering deeper than the 8-bit
            // sequence numbers reach would read as lost and duplicated reports.
            let _pin = ports::host::pin_to_current_cpu();
            // Likewise, the first reports are not sent before the way to each collector is
            // resolved (see resolve_next_hop).
            for &c in &r.collectors {
                if !crate::port::resolve_next_hop(c, Duration::from_secs(1)) {
                    tracing::warn!(collector = %c, "the next hop toward the collector did not resolve within 1 s");
                }
            }
            let port = UdpPort::open(*bind.ip(), mac, &[NACK_PORT])
                .map_err(|error| ReportError::Bind { ip: *bind.ip(), error })?;
            let mut host = HostPort::new(port, pool, mac, ip, Idle::Sleep);
            host.run(&mut agent, done);
            (<UdpPort as PortIo<PktBuf>>::stats(host.port()).tx_errors, host.tx_dropped)
        }
        Sink::Pcap { path, .. } => {
            let port = PcapPort::open(None, Some(path))?;
            let mut host = HostPort::new(port, pool, mac, ip, Idle::Sleep);
            host.run(&mut agent, done);
            let mut port = host.into_port();
            <PcapPort as PortIo<PktBuf>>::flush(&mut port)
                .map_err(|error| ReportError::Write { path: path.clone(), error })?;
            (<PcapPort as PortIo<PktBuf>>::stats(&port).tx_errors, 0)
        }
    };
    let st = agent.stats();
    if let Some(j) = journal.as_mut() {
        j.record(st.sent, true);
    }
    if st.too_long > 0 {
        return Err(ReportError::TooLong);
    }
    Ok(ReportSummary {
        sent: st.sent,
        seconds: st.first_ns.map_or(0.0, |f| (st.last_ns - f) as f64 / 1e9),
        nacks: st.nacks,
        resent: st.resent,
        resent_refreshed: st.resent_refreshed,
        unrecoverable: st.unrecoverable,
        sketch_skipped: st.sketch_skipped,
        slow_downs: st.slow_downs,
        send_errors: port_errors + dropped,
        tail_probes: st.tail_probes,
        hellos: (st.hellos_answered, st.hellos_unanswered),
        translator_restarts: st.translator_restarts,
        unknown_translator_crash: st.unknown_translator_crash,
        lost_translator_down: st.lost_translator_down,
        lost_at_killed_translator: st.lost_at_killed_translator,
        unconfirmed: st.unconfirmed,
        interrupted: stopped() && !agent.is_done(),
    })
}
