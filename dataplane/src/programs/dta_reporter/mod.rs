//! `dta_reporter`: a switch that forwards like `l2l3` and reports on the flows it forwards as
//! a DTA reporter (seed `000` §4.1), so a softfabric switch can feed a DTA translator too.
//!
//! For every IPv4 packet l2l3 sends out of a port, the flow key is [`flow_key`] of the CRC-32
//! of its 5-tuple (addresses, protocol, ports: the 13 bytes ECMP hashes). What is reported, configured in
//! `[dta_reporter]`:
//!
//! * `primitive = "keywrite"`: flow key → `switch_id << 16 | egress port` (where this switch
//!   sent the flow), N copies;
//! * `primitive = "keyincrement"`: flow key += bytes (scaled by the sampling rate);
//! * `primitive = "append"`: the flow key, to list `list`;
//!
//! and when: `trigger = "change"` — a flow's first packet and every change of its egress port
//! (a register per flow slot holds the last key and value reported), or `trigger = "sample"` —
//! one packet in `sample`, chosen by a xorshift generator.
//!
//! Reports go to the collector [`collector_for`] picks, through l2l3's routes and neighbors,
//! from UDP port `src_port` to `udp_port`. Retransmittable reports carry sequence numbers and
//! the last `keep` are kept ([`ReportSender`]); a DTA NACK to the switch (UDP port 40044)
//! resends what followed the NACKed number, each to its own collector; a slow-down message
//! thins low- and medium-priority reports until the rate recovers.
//!
//! Not here: what to monitor beyond forwarding decisions (queue depths, losses), or a CPU-side
//! store for reports larger than the kept-report buffer.

use std::net::{Ipv4Addr, SocketAddrV4};

use wire::dta::{DtaRepr, NackRepr, Primitive, Priority};
use wire::ethernet::{EtherType, EthernetFrame};
use wire::ipv4::{Ipv4Packet, protocol};
use wire::stack::UdpFlow;
use wire::udp::UdpPacket;

pub use super::dta_translator::Command;
use super::l2l3::L2l3;
use roce::dta::{MAX_KEEP, ReportSender, collector_for, destination, report_frame_len, write_report_frame};
use roce::dta::{MAX_REPORT, parse_priority};
use wire::udp::port::DTA_NACK as NACK_PORT;
mod config;
pub mod decl;
pub(crate) mod p4;

pub use self::config::DtaReporterSection;
use super::{BuildCtx, FromConfig};
use crate::buf::Frame;
use crate::config::{Config, ConfigError};
use crate::model::{DropReason, HashAlgo, HashUnit, RegisterArray, Resources};
use crate::switch::{Dest, Emitter, IngressMd, PortId, Program};

/// A flow's DTA key from the CRC-32 of its 5-tuple: [`wire::dta::flow_key`] (tabulation: a CRC
/// of a CRC is affine and would make neighbouring flows collide in whole groups; tables, because
/// the P4 export computes the same key on Tofino, which cannot multiply), never 0, which marks
/// an empty flow register.
pub fn flow_key(crc: u32) -> u32 {
    wire::dta::flow_key(crc).max(1)
}

/// What a report says about a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportKind {
    /// Flow key → switch ID and egress port.
    KeyWrite {
        /// Copies.
        redundancy: u8,
    },
    /// Flow key += bytes.
    KeyIncrement {
        /// Copies.
        redundancy: u8,
    },
    /// Flow key appended to a list.
    Append {
        /// List ID.
        list: u32,
    },
}

/// When a report is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A flow's first packet and every change of its egress port.
    Change,
    /// One packet in this many.
    Sample(u32),
}

/// Counters of the reporter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReporterStats {
    /// Forwarded IPv4 packets observed.
    pub observed: u64,
    /// Reports sent (first transmissions).
    pub reports: u64,
    /// Reports resent after NACKs.
    pub resent: u64,
    /// NACKed reports no longer kept.
    pub unrecoverable: u64,
    /// NACK and slow-down messages received.
    pub nacks: u64,
    /// Reports not sent for want of a route, a neighbor or a buffer.
    pub unroutable: u64,
    /// Reports held back after a slow-down message.
    pub thinned: u64,
}

/// The most collectors a reporter spreads its reports over.
pub const MAX_COLLECTORS: usize = 256;

/// The `dta_reporter` program.
#[derive(Debug)]
pub struct DtaReporter {
    l2l3: L2l3,
    collectors: Vec<Ipv4Addr>,
    kind: ReportKind,
    trigger: Trigger,
    priority: Priority,
    retransmittable: bool,
    switch_id: u16,
    source_ip: Option<Ipv4Addr>,
    port_ips: Vec<Option<Ipv4Addr>>,
    udp_port: u16,
    src_port: u16,
    queue: u8,
    sender: ReportSender,
    /// The configured epoch (`None`: a fresh one each start).
    epoch_cfg: Option<u8>,
    /// Per flow slot: (flow key, last value reported); key 0 marks an empty slot.
    flows: RegisterArray<(u32, u32)>,
    flow_mask: usize,
    flow_hash: HashUnit,
    rng: u64,
    nack_drop: DropReason,
    stats: ReporterStats,
    resources: Resources,
}

impl FromConfig for DtaReporter {
    const NAME: &'static str = "dta_reporter";
    const ABOUT: &'static str = "l2l3 forwarding that reports on the flows it forwards as a DTA reporter";
    const SECTIONS: &'static [&'static str] = &["l2l3", "dta_reporter"];
    const SINGLE_PIPELINE: Option<&'static str> =
        Some("the DTA reporter numbers its reports in one sequence");

    fn resolved(cfg: &Config) -> Result<String, ConfigError> {
        Ok(L2l3::section(cfg)?.resolved())
    }

    fn from_config(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        Self::build(cfg, ctx)
    }

    fn p4(&self, cfg: &Config) -> Result<crate::p4::ProgramP4, crate::p4::ExportError> {
        self.rendering(cfg)
    }
}

impl DtaReporter {
    /// Build from the configuration: `[l2l3]`, then `[dta_reporter]`.
    pub fn build(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        let c = cfg.ctx();
        let l2l3 = L2l3::build(cfg, ctx)?;
        let d = &cfg.section::<DtaReporterSection>("dta_reporter")?.ok_or_else(|| {
            c.err(
                "dta_reporter",
                format!("program {:?} needs a [dta_reporter] section with its collectors", Self::NAME),
            )
        })?;
        if d.collectors.is_empty() || d.collectors.len() > MAX_COLLECTORS {
            return Err(c.err(
                "dta_reporter.collectors",
                format!("{} collector addresses: 1 to {MAX_COLLECTORS}", d.collectors.len()),
            ));
        }
        let mut collectors = Vec::new();
        for (i, s) in d.collectors.iter().enumerate() {
            let ip = s
                .parse::<Ipv4Addr>()
                .ok()
                .filter(|a| !(a.is_unspecified() || a.is_broadcast() || a.is_multicast()))
                .ok_or_else(|| {
                    c.err(
                        format!("dta_reporter.collectors[{i}]"),
                        format!("{s:?} is not a unicast IPv4 address"),
                    )
                })?;
            if let Some(j) = collectors.iter().position(|&x| x == ip) {
                return Err(
                    c.err(format!("dta_reporter.collectors[{i}]"), format!("{ip} is also collectors[{j}]"))
                );
            }
            collectors.push(ip);
        }
        let redundancy = d.redundancy.unwrap_or(2);
        if !(1..=8).contains(&redundancy) {
            return Err(c.err("dta_reporter.redundancy", format!("{redundancy}: expected 1..=8")));
        }
        let kind = match d.primitive.as_deref().unwrap_or("keywrite") {
            "keywrite" => ReportKind::KeyWrite { redundancy },
            "keyincrement" => ReportKind::KeyIncrement { redundancy },
            "append" => ReportKind::Append { list: d.list.unwrap_or(0) },
            o => {
                return Err(c.err(
                    "dta_reporter.primitive",
                    format!("{o:?}; expected \"keywrite\", \"keyincrement\" or \"append\""),
                ));
            }
        };
        let trigger = match d.trigger.as_deref().unwrap_or("change") {
            "change" => Trigger::Change,
            "sample" => {
                let n = d.sample.unwrap_or(1024);
                if n == 0 {
                    return Err(c.err("dta_reporter.sample", "0: expected one packet in N >= 1"));
                }
                Trigger::Sample(n)
            }
            o => {
                return Err(
                    c.err("dta_reporter.trigger", format!("{o:?}; expected \"change\" or \"sample\""))
                );
            }
        };
        let priority = match d.priority.as_deref() {
            None => Priority::High,
            Some(p) => parse_priority(p).ok_or_else(|| {
                c.err("dta_reporter.priority", format!("{p:?}; expected \"low\", \"medium\" or \"high\""))
            })?,
        };
        let flows = d.flows.unwrap_or(65536);
        if !flows.is_power_of_two() || flows > 1 << 24 {
            return Err(c.err("dta_reporter.flows", format!("{flows}: expected a power of two up to 2^24")));
        }
        let epoch = match d.epoch {
            None => crate::runtime::report::fresh_epoch(),
            Some(e @ 1..=15) => e,
            Some(e) => return Err(c.err("dta_reporter.epoch", format!("{e}: expected 1..=15"))),
        };
        let keep = d.keep.unwrap_or(128);
        if keep == 0 || keep > MAX_KEEP {
            return Err(c.err(
                "dta_reporter.keep",
                format!("{keep}: expected 1..={MAX_KEEP} (half the 8-bit sequence space)"),
            ));
        }
        let source_ip = match &d.source_ip {
            None => None,
            Some(s) => Some(
                s.parse::<Ipv4Addr>()
                    .map_err(|_| c.err("dta_reporter.source_ip", format!("{s:?} is not an IPv4 address")))?,
            ),
        };
        let queue = d.queue.unwrap_or(6);
        if queue > 7 {
            return Err(c.err("dta_reporter.queue", format!("{queue}: expected 0..=7")));
        }
        let res = &mut ctx.resources;
        let flow_regs = RegisterArray::new(res, "dta_reporter_flows", flows, &decl::FLOW_CELL, None);
        let flow_hash =
            HashUnit::new(res, "dta_reporter_flow_key", HashAlgo::Crc32IsoHdlc, 32, &decl::FLOW_INPUTS);
        decl::declare(res, keep);
        let nack_drop = ctx.drops.declare("dta_reporter_bad_nack");
        let resources = ctx.resources_after_l2l3(&l2l3);
        Ok(Self {
            l2l3,
            collectors,
            kind,
            trigger,
            priority,
            retransmittable: d.retransmittable.unwrap_or(true),
            switch_id: d.switch_id.unwrap_or(1),
            source_ip,
            port_ips: cfg.ports.iter().map(|p| p.ipv4.first().map(|a| a.0)).collect(),
            udp_port: crate::config::program_udp_port(
                &c,
                "dta_reporter.udp_port",
                d.udp_port,
                wire::udp::port::DTA,
                &[(NACK_PORT, "the NACK port")],
            )?,
            src_port: d.src_port.unwrap_or(0xc0de),
            queue,
            sender: ReportSender::new(keep, epoch),
            epoch_cfg: d.epoch,
            flows: flow_regs,
            flow_mask: flows - 1,
            flow_hash,
            rng: 0x9e37_79b9_7f4a_7c15,
            nack_drop,
            stats: ReporterStats::default(),
            resources,
        })
    }

    /// Counters.
    pub fn stats(&self) -> ReporterStats {
        ReporterStats { resent: self.sender.resent, unrecoverable: self.sender.unrecoverable, ..self.stats }
    }

    /// The forwarding half.
    pub fn l2l3(&self) -> &L2l3 {
        &self.l2l3
    }

    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Observe a packet l2l3 is sending out of `egress`: report on its flow if the trigger says so.
    fn observe<F: Frame>(&mut self, pkt: &F, egress: PortId, now: u64, out: &mut Emitter<'_, F>) {
        let data = pkt.data();
        let Ok(eth) = EthernetFrame::new_checked(data) else { return };
        if eth.ethertype() != EtherType::IPV4 {
            return;
        }
        let Ok(ip) = Ipv4Packet::new_checked(&data[eth.header_len()..]) else { return };
        // Reports and NACKs passing through are not flows to report on.
        let mut k = [0u8; 13];
        k[0..4].copy_from_slice(&ip.src_addr().octets());
        k[4..8].copy_from_slice(&ip.dst_addr().octets());
        k[8] = ip.protocol();
        if matches!(ip.protocol(), protocol::UDP | protocol::TCP) && ip.frag_offset() == 0 {
            let l4 = ip.payload();
            if l4.len() >= 4 {
                k[9..13].copy_from_slice(&l4[..4]);
            }
            if ip.protocol() == protocol::UDP
                && let Ok(u) = UdpPacket::new_checked(l4)
                && (u.dst_port() == self.udp_port || u.dst_port() == NACK_PORT)
            {
                return;
            }
        }
        self.stats.observed += 1;
        let key = flow_key(self.flow_hash.hash(&k));
        let bytes = u64::from(ip.total_len());
        let value = (u32::from(self.switch_id) << 16) | u32::from(egress);
        let scale = match self.trigger {
            Trigger::Change => {
                let slot = key as usize & self.flow_mask;
                if self.flows.read(slot) == (key, value) {
                    return;
                }
                self.flows.write(slot, (key, value));
                1
            }
            Trigger::Sample(n) => {
                if !self.next_random().is_multiple_of(u64::from(n)) {
                    return;
                }
                u64::from(n)
            }
        };
        // After a slow-down, all but high priority is thinned to the rate the sender allows.
        let share = self.sender.rate_scale(now);
        if self.priority != Priority::High && share < 1.0 {
            let r = (self.next_random() >> 11) as f64 / (1u64 << 53) as f64;
            if r >= share {
                self.stats.thinned += 1;
                return;
            }
        }
        let data = value.to_be_bytes();
        let primitive = match self.kind {
            ReportKind::KeyWrite { redundancy } => Primitive::KeyWrite { redundancy, key, data: &data },
            ReportKind::KeyIncrement { redundancy } => {
                Primitive::KeyIncrement { redundancy, key, counter: bytes * scale }
            }
            ReportKind::Append { list } => Primitive::Append { list_id: list, data: key },
        };
        let seq = self.sender.sequence(self.retransmittable, self.priority);
        let r = DtaRepr { immediate: false, seq: Some(seq), primitive };
        let mut buf = [0u8; MAX_REPORT];
        let Some(n) = self.sender.emit(&r, &mut buf) else { return };
        let dst = self.collectors[collector_for(&primitive, self.collectors.len())];
        if self.send(&buf[..n], dst, now, out) {
            self.stats.reports += 1;
        }
    }

    /// Send report bytes to `dst` through l2l3.
    fn send<F: Frame>(&mut self, report: &[u8], dst: Ipv4Addr, now: u64, out: &mut Emitter<'_, F>) -> bool {
        let key = || {
            let mut k = [0u8; 13];
            k[4..8].copy_from_slice(&dst.octets());
            k
        };
        let Ok(nh) = self.l2l3.next_hop(dst, key, now, out) else {
            self.stats.unroutable += 1;
            return false;
        };
        let Some(src) = self.source_ip.or_else(|| self.port_ips.get(usize::from(nh.port)).copied().flatten())
        else {
            self.stats.unroutable += 1;
            return false;
        };
        let flow = UdpFlow::host_udp(
            nh.src_mac,
            nh.dst_mac,
            SocketAddrV4::new(src, self.src_port),
            SocketAddrV4::new(dst, self.udp_port),
        );
        let sent = out.emit(Dest::Port(nh.port), self.queue, |f| {
            f.reset();
            f.append(report_frame_len(&flow, report.len()))
                .is_some_and(|b| write_report_frame(&flow, report, b))
        });
        if !sent {
            self.stats.unroutable += 1;
        }
        sent
    }

    /// A NACK or slow-down message for this switch: resend what followed, each report to its
    /// own collector.
    fn on_nack<F: Frame>(&mut self, n: &NackRepr, now: u64, out: &mut Emitter<'_, F>) {
        self.stats.nacks += 1;
        let mut resend: Vec<([u8; MAX_REPORT], usize)> = Vec::new();
        self.sender.on_nack(n, now, |b| {
            let mut c = [0u8; MAX_REPORT];
            c[..b.len()].copy_from_slice(b);
            resend.push((c, b.len()));
        });
        for (b, len) in resend {
            let Ok(r) = DtaRepr::parse(&b[..len], wire::dta::Format::default()) else { continue };
            if let Some(dst) = destination(&r, &self.collectors) {
                self.send(&b[..len], dst, now, out);
            }
        }
    }
}

impl Program for DtaReporter {
    type Command = Command;

    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        // A NACK to this switch?
        let data = pkt.data();
        if let Ok(eth) = EthernetFrame::new_checked(data)
            && eth.ethertype() == EtherType::IPV4
            && let Ok(ip) = Ipv4Packet::new_checked(&data[eth.header_len()..])
            && ip.protocol() == protocol::UDP
            && let Ok(udp) = UdpPacket::new_checked(ip.payload())
            && udp.dst_port() == NACK_PORT
            && self.l2l3.is_local(ip.dst_addr())
        {
            if let Ok(n) = NackRepr::parse(udp.payload()) {
                self.on_nack(&n, md.ingress_ts, out);
                md.dest = Dest::Consume;
            } else {
                md.dest = Dest::Drop(self.nack_drop);
            }
            return;
        }
        self.l2l3.ingress(pkt, md, out);
        if let Dest::Port(p) = md.dest
            && !md.from_cpu
        {
            self.observe(pkt, p, md.ingress_ts, out);
        }
    }

    fn egress<F: Frame>(&mut self, pkt: &mut F, md: &mut crate::switch::EgressMd) {
        self.l2l3.egress(pkt, md);
    }

    #[inline(always)]
    fn has_egress(&self) -> bool {
        self.l2l3.has_egress()
    }

    fn tick<F: Frame>(&mut self, now: u64, out: &mut Emitter<'_, F>) {
        self.l2l3.tick(now, out);
    }

    fn control(&mut self, cmd: Command, now: u64) -> Result<String, String> {
        match cmd {
            Command::Show | Command::Stats => {
                let s = self.stats();
                Ok(format!(
                    "dta_reporter: {:?} {:?} to {:?}\nobserved {} reports {} resent {} unrecoverable {} \
                     nacks {} unroutable {} thinned {}\n",
                    self.kind,
                    self.trigger,
                    self.collectors,
                    s.observed,
                    s.reports,
                    s.resent,
                    s.unrecoverable,
                    s.nacks,
                    s.unroutable,
                    s.thinned
                ))
            }
            Command::L2l3(c) => self.l2l3.control(c, now),
        }
    }

    fn parse_command(line: &str, ports: &[String]) -> Result<Command, String> {
        Command::parse(line, ports)
    }

    fn resources(&self) -> &Resources {
        &self.resources
    }
}

#[cfg(test)]
mod tests;
