//! `ufab`: µFAB's informative core (µFAB-C, seed `003` §3.6, §4.2, Appendix G) on top of `l2l3`
//! forwarding: a softfabric switch that tells µFAB-E at the edge what a Tofino running the
//! paper's P4 program would.
//!
//! * **Source routing** ([`wire::mpls`]): a frame with EtherType 0x8847 carries one label per
//!   switch of the path its sender chose, the label the egress port. The switch pops the top
//!   label and sends the frame out of that port (queue: the label's TC), rewriting the source MAC
//!   (the destination MAC means nothing between two `ufab` switches: the label decides). Under
//!   the bottom label the frame is IPv4 again, and the last switch routes it by `l2l3` (LPM,
//!   neighbour MAC, TTL): the receiver's ToR has one way to the host. A label past the ports is
//!   dropped (`ufab_bad_route`), a label TTL of 1 or 0 too (`ufab_ttl_expired`).
//! * **Probes** (UDP port 40050, [`wire::ufab`], with or without a source route) at egress: the
//!   switch reads the pair's φ and its window w^l on this link from slot `n_hop`, updates Φ_l and
//!   W_l ([`core`]: the Bloom filter, the pair's last (φ, w), cleaning), writes W_l, Φ_l, tx_l, q_l
//!   and C_l's speed class into that slot, increments `n_hop` and zeroes the UDP checksum. A
//!   finish probe removes the pair and writes its slot likewise: a switch's slot filled is its
//!   acknowledgement, so a sender whose response shows every slot filled knows every switch
//!   removed it. A look (type 5, [`UfabKind::Look`]: not in the paper) is stamped with Φ_l and
//!   W_l less the pair's own record and changes nothing. Responses and failure notifications
//!   are forwarded untouched. A probe with no free slot (`ufab_no_slot`), one too short for its
//!   header or `n_hop` slots (`ufab_malformed`), or of an unknown type (`ufab_unknown_type`)
//!   is dropped.
//! * **Link failure**: a port set failed (`[ufab] failed_ports`, or `ufab fail PORT` at run
//!   time) drops source-routed data to it (`ufab_link_failed`) and turns a probe, finish or
//!   look bound for it into a failure notification (type 4): the labels left are stripped, the
//!   addresses swapped, and `l2l3` routes it back to the sender, whose `n_hop` then names the
//!   hop whose link failed. `l2l3`'s ECMP leaves the port out too (`port down`), so routed
//!   traffic — acknowledgements, responses — goes around it.
//! * **Data packets** take `l2l3`'s path (or the source route) and skip egress (Tofino's
//!   `bypass_egress`): tx_l is the egress port's transmitted bytes — the TM counts them for
//!   every packet — differenced at the probes over windows of at least `tx_window_ns`, so
//!   data costs nothing more than in `l2l3`. (A probe finds the rate over the time since the
//!   window it closed last: with probes every RTT on a busy link, the last 32 µs or so.)
//!
//! Units on the wire are [`wire::ufab`]'s; C_l is sent as the speed class of what the port can
//! send — its speed, or its TM shaper's rate if lower — and the edge applies η (the paper's 0.95
//! headroom).
//!
//! Choices the paper leaves open are in [`core`]'s docs (where a pair's last (φ, w) lives, how
//! cleaning unsets a Bloom filter). The VM-pair a probe stands for is its source and destination
//! address and its UDP source port (the sender's pair ID).

mod config;
pub mod core;
pub mod decl;
mod p4;

use wire::mpls::{self, MplsRepr};
use wire::ufab::{UfabHopRepr, UfabKind, UfabPacket, speed_class_of};

pub use self::config::UfabSection;
use self::core::{Core, CoreStats, Outcome, pair_key};
use super::l2l3::{L2l3, udp_at};
use super::{BuildCtx, FromConfig};
use crate::buf::Frame;
use crate::config::{Config, ConfigError};
use crate::model::{DropReason, Resources};
use crate::switch::{Dest, EgressMd, Emitter, IngressMd, Program};

/// Default Bloom filter size (both banks), bytes: the paper's 20 KB.
pub const DEFAULT_BLOOM_BYTES: usize = 20 * 1024;
/// Default pair records.
pub const DEFAULT_RECORDS: usize = 32 * 1024;
/// Default cleaning period: the paper's 10 s.
pub const DEFAULT_CLEAN_PERIOD_NS: u64 = 10_000_000_000;
/// Default tx_l window: the testbed's 32 µs token period.
pub const DEFAULT_TX_WINDOW_NS: u64 = 32_000;

/// The control commands: `show ufab` (or `ufab`), `ufab links`, `ufab fail PORT`,
/// `ufab restore PORT`, else an `l2l3` command.
#[derive(Debug, Clone)]
pub enum Command {
    /// Counters.
    Show,
    /// Per link: Φ_l, W_l, tx_l, failed.
    Links,
    /// The pair records of a port: state, φ, w, last period.
    Pairs(u16),
    /// Set a port's link failed.
    Fail(u16),
    /// Set a port's link up again.
    Restore(u16),
    /// A command of the forwarding underneath.
    L2l3(super::l2l3::Command),
}

impl Command {
    /// Parse one control line.
    pub fn parse(line: &str, ports: &[String]) -> Result<Self, String> {
        let w: Vec<&str> = line.split_whitespace().collect();
        let port = |s: &str| {
            ports.iter().position(|p| p == s).map(|i| i as u16).ok_or(format!("no port named {s:?}"))
        };
        match w.as_slice() {
            ["show", "ufab"] | ["ufab"] => Ok(Self::Show),
            ["ufab", "links"] => Ok(Self::Links),
            ["ufab", "pairs", p] => Ok(Self::Pairs(port(p)?)),
            ["ufab", "fail", p] => Ok(Self::Fail(port(p)?)),
            ["ufab", "restore", p] => Ok(Self::Restore(port(p)?)),
            ["ufab", ..] => Err(format!(
                "{line:?}: expected `ufab links`, `ufab pairs PORT`, `ufab fail PORT` or `ufab restore PORT`"
            )),
            _ => L2l3::parse_command(line, ports).map(Self::L2l3),
        }
    }
}

/// Counters of the program (drops are the switch's, by reason; the core's are [`CoreStats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UfabStats {
    /// Probes stamped.
    pub probes: u64,
    /// Finish probes stamped.
    pub finishes: u64,
    /// Looks stamped (read-only probes, [`UfabKind::Look`]).
    pub looks: u64,
    /// Responses and failure notifications forwarded.
    pub responses: u64,
    /// Source-routed frames forwarded by their label.
    pub sr_forwarded: u64,
    /// Source-routed frames whose bottom label was popped here (routed on by `l2l3`).
    pub sr_delivered: u64,
    /// Probes turned into failure notifications.
    pub failure_notifications: u64,
}

#[derive(Debug, Clone, Copy)]
struct Drops {
    malformed: DropReason,
    unknown_type: DropReason,
    no_slot: DropReason,
    bad_route: DropReason,
    link_failed: DropReason,
    ttl_expired: DropReason,
}

/// The `ufab` program.
#[derive(Debug)]
pub struct Ufab {
    l2l3: L2l3,
    core: Core,
    /// Per port, what it can send: its speed, or its shaper's rate if lower (C_l's line rate).
    capacity_bps: Vec<u64>,
    failed: Vec<bool>,
    drops: Drops,
    stats: UfabStats,
    resources: Resources,
}

impl FromConfig for Ufab {
    const NAME: &'static str = "ufab";
    const ABOUT: &'static str =
        "l2l3 forwarding with µFAB's informative core: source routing, Φ_l/W_l/tx_l/q_l/C_l in probes";
    const SECTIONS: &'static [&'static str] = &["l2l3", "ufab"];
    const SINGLE_PIPELINE: Option<&'static str> = Some("Φ_l and W_l are one switch's sums");

    fn resolved(cfg: &Config) -> Result<String, ConfigError> {
        Ok(L2l3::section(cfg)?.resolved())
    }

    fn p4(&self, cfg: &Config) -> Result<crate::p4::ProgramP4, crate::p4::ExportError> {
        self.rendering(cfg)
    }

    fn from_config(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        Self::build(cfg, ctx)
    }
}

impl Ufab {
    /// Build from the configuration: `[l2l3]`, then `[ufab]`.
    pub fn build(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        let c = cfg.ctx();
        let l2l3 = L2l3::build(cfg, ctx)?;
        let u = cfg.section::<UfabSection>("ufab")?.unwrap_or_default();
        let bloom = u.bloom_bytes.unwrap_or(DEFAULT_BLOOM_BYTES);
        if !(64..=1 << 24).contains(&bloom) {
            return Err(c.err("ufab.bloom_bytes", format!("{bloom}: expected 64 to 16 777 216 bytes")));
        }
        let records = u.records.unwrap_or(DEFAULT_RECORDS);
        if records == 0 || records % core::WAYS != 0 || records > 1 << 22 {
            return Err(
                c.err("ufab.records", format!("{records}: expected a multiple of 4 from 4 to 4 194 304"))
            );
        }
        let period = u.clean_period_ns.unwrap_or(DEFAULT_CLEAN_PERIOD_NS);
        if !(1_000_000..=3_600_000_000_000).contains(&period) {
            return Err(c.err("ufab.clean_period_ns", format!("{period}: expected 1 ms to 1 h")));
        }
        let window = u.tx_window_ns.unwrap_or(DEFAULT_TX_WINDOW_NS);
        if !(1_000..=1_000_000_000).contains(&window) {
            return Err(c.err("ufab.tx_window_ns", format!("{window}: expected 1 µs to 1 s")));
        }
        let mut failed = vec![false; cfg.ports.len()];
        for name in u.failed_ports.iter().flatten() {
            let Some(i) = cfg.ports.iter().position(|p| &p.name == name) else {
                return Err(c.err("ufab.failed_ports", format!("{name:?}: expected the name of a [[port]]")));
            };
            failed[i] = true;
        }
        let mut l2l3 = l2l3;
        for (i, &f) in failed.iter().enumerate() {
            if f {
                let _ = l2l3.control(super::l2l3::Command::PortDown(i as u16), 0);
            }
        }
        let core = Core::new(&mut ctx.resources, cfg.ports.len(), bloom, records, period, window);
        decl::declare(&mut ctx.resources);
        let drops = Drops {
            malformed: ctx.drops.declare("ufab_malformed"),
            unknown_type: ctx.drops.declare("ufab_unknown_type"),
            no_slot: ctx.drops.declare("ufab_no_slot"),
            bad_route: ctx.drops.declare("ufab_bad_route"),
            link_failed: ctx.drops.declare("ufab_link_failed"),
            ttl_expired: ctx.drops.declare("ufab_ttl_expired"),
        };
        let resources = ctx.resources_after_l2l3(&l2l3);
        let capacity_bps = cfg
            .ports
            .iter()
            .map(|p| if p.tm.shape_bps > 0 { p.tm.shape_bps.min(p.tm.speed_bps) } else { p.tm.speed_bps })
            .collect();
        Ok(Self { l2l3, core, capacity_bps, failed, drops, stats: UfabStats::default(), resources })
    }

    /// Counters.
    pub fn stats(&self) -> UfabStats {
        self.stats
    }

    /// The informative core's state.
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// The core's counters.
    pub fn core_stats(&self) -> CoreStats {
        self.core.stats
    }

    /// Whether `port`'s link is set failed.
    pub fn is_failed(&self, port: u16) -> bool {
        self.failed.get(usize::from(port)).copied().unwrap_or(false)
    }

    /// A source-routed frame at ingress: pop the top label and forward, or deliver the inner
    /// IPv4 packet to `l2l3`; a failed link turns a probe back.
    fn sr_ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        let l2 = wire::ethernet::HEADER_LEN;
        let Ok(top) = MplsRepr::parse(pkt.data().get(l2..).unwrap_or(&[])) else {
            md.dest = Dest::Drop(self.drops.malformed);
            return;
        };
        let port = top.label;
        if port >= self.failed.len() as u32 {
            md.dest = Dest::Drop(self.drops.bad_route);
            return;
        }
        let port = port as u16;
        if self.failed[usize::from(port)] {
            self.fail_back(pkt, md, out);
            return;
        }
        if top.ttl <= 1 {
            md.dest = Dest::Drop(self.drops.ttl_expired);
            return;
        }
        // Pop: the MACs move over the top label.
        pkt.data_mut().copy_within(0..12, mpls::LEN);
        pkt.adj(mpls::LEN);
        let data = pkt.data_mut();
        if top.bottom {
            data[12..14].copy_from_slice(&wire::EtherType::IPV4.0.to_be_bytes());
            // Addressed to this switch, so that `l2l3` routes it.
            if let Some(mac) = self.l2l3.port_mac(md.ingress_port) {
                data[0..6].copy_from_slice(&mac.0);
            }
            self.stats.sr_delivered += 1;
            self.l2l3.ingress(pkt, md, out);
            return;
        }
        // The next label must be there; its TTL is the popped one's, less this hop.
        if data.len() < l2 + mpls::LEN {
            md.dest = Dest::Drop(self.drops.malformed);
            return;
        }
        data[12..14].copy_from_slice(&wire::EtherType::MPLS.0.to_be_bytes());
        data[l2 + 3] = top.ttl - 1;
        if let Some(mac) = self.l2l3.port_mac(port) {
            data[6..12].copy_from_slice(&mac.0);
        }
        md.qid = top.tc;
        md.dest = Dest::Port(port);
        self.stats.sr_forwarded += 1;
    }

    /// A source-routed frame whose next link failed: a probe or finish goes back to its sender
    /// as a failure notification; anything else is dropped.
    fn fail_back<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        let l2 = wire::ethernet::HEADER_LEN;
        let Ok(depth) = mpls::stack_depth(&pkt.data()[l2..]) else {
            md.dest = Dest::Drop(self.drops.malformed);
            return;
        };
        let labels = depth * mpls::LEN;
        let is_probe = locate_ufab(pkt.data(), l2 + labels).is_some_and(|(_, u, end)| {
            UfabPacket::new_checked(&pkt.data()[u..end]).is_ok_and(|p| {
                matches!(
                    UfabKind::from_u8(p.kind_bits()),
                    Ok(UfabKind::Probe | UfabKind::Finish | UfabKind::Look)
                )
            })
        });
        if !is_probe {
            md.dest = Dest::Drop(self.drops.link_failed);
            return;
        }
        pkt.data_mut().copy_within(0..12, labels);
        pkt.adj(labels);
        let Some((l4, u, _)) = locate_ufab(pkt.data(), l2) else {
            md.dest = Dest::Drop(self.drops.malformed);
            return;
        };
        let data = pkt.data_mut();
        data[12..14].copy_from_slice(&wire::EtherType::IPV4.0.to_be_bytes());
        // Swap the addresses (the header checksum is a sum: unchanged).
        let (src, dst) = (l2 + 12, l2 + 16);
        for i in 0..4 {
            data.swap(src + i, dst + i);
        }
        data[l4 + 6..l4 + 8].fill(0);
        data[u] = (data[u] & 0x0f) | ((UfabKind::FailureResponse as u8) << 4);
        if let Some(mac) = self.l2l3.port_mac(md.ingress_port) {
            data[0..6].copy_from_slice(&mac.0);
        }
        self.stats.failure_notifications += 1;
        self.l2l3.ingress(pkt, md, out);
    }

    /// A probe, finish or response at egress (its IPv4 header at `l3`, UDP at `l4`, its µFAB
    /// header at `u`, the UDP payload ending at `end`).
    fn probe_egress<F: Frame>(&mut self, pkt: &mut F, md: &mut EgressMd, at: (usize, usize, usize, usize)) {
        let (l3, l4, u, end) = at;
        let port = md.egress_port;
        let data = pkt.data_mut();
        let mut src = [0u8; 4];
        let mut dst = [0u8; 4];
        src.copy_from_slice(&data[l3 + 12..l3 + 16]);
        dst.copy_from_slice(&data[l3 + 16..l3 + 20]);
        let sport = u16::from_be_bytes([data[l4], data[l4 + 1]]);
        let Ok(mut p) = UfabPacket::new_checked(&mut data[u..end]) else {
            md.drop = Some(self.drops.malformed);
            return;
        };
        let kind = match UfabKind::from_u8(p.kind_bits()) {
            Err(_) => {
                md.drop = Some(self.drops.unknown_type);
                return;
            }
            Ok(UfabKind::Response | UfabKind::FailureResponse) => {
                self.stats.responses += 1;
                return;
            }
            Ok(k) => k,
        };
        let n = usize::from(p.n_hop());
        if n >= p.slots() {
            md.drop = Some(self.drops.no_slot);
            return;
        }
        let hop = p.hop(n);
        let w = hop.window_bytes().min(u64::from(u32::MAX)) as u32;
        self.core.update_tx(port, md.deq_ts, md.tx_bytes);
        let key = pair_key(src, dst, sport, port);
        // A look reads the link without the pair; a probe or finish updates it and reads it.
        let (phi_l, w_l) = if kind == UfabKind::Look {
            self.core.look(&key, port).unwrap_or((0, 0))
        } else {
            let finish = kind == UfabKind::Finish;
            let _: Outcome = self.core.probe(md.deq_ts, &key, port, p.phi_pair(), w, finish);
            let link = self.core.link(port);
            (link.phi_l, link.w_l)
        };
        let tx_bps = self.core.link(port).tx_bps;
        p.set_hop(
            n,
            &UfabHopRepr {
                window: UfabHopRepr::encode_window(w_l),
                phi_l: phi_l.min(u64::from(u16::MAX)) as u16,
                tx_l: UfabHopRepr::encode_tx(tx_bps),
                q_l: UfabHopRepr::encode_q(md.port_qdepth),
                c_l: speed_class_of(
                    self.capacity_bps.get(usize::from(port)).copied().unwrap_or(md.speed_bps),
                ),
            },
        );
        p.set_n_hop(n as u8 + 1);
        data[l4 + 6..l4 + 8].fill(0);
        match kind {
            UfabKind::Finish => self.stats.finishes += 1,
            UfabKind::Look => self.stats.looks += 1,
            _ => self.stats.probes += 1,
        }
    }
}

/// Where a µFAB packet's headers are in `data` whose IPv4 header starts at `l3`: the UDP
/// header, the µFAB header and the end of the UDP payload (its length field, not the frame's
/// padding); `None` for anything else (not IPv4, not a first fragment, not UDP to 40050).
#[inline]
fn locate_ufab(data: &[u8], l3: usize) -> Option<(usize, usize, usize)> {
    let (l4, dport) = udp_at(data, l3)?;
    if dport != wire::udp::port::UFAB {
        return None;
    }
    let udp = &data[l4..l4 + wire::udp::HEADER_LEN];
    let end = (l4 + usize::from(u16::from_be_bytes([udp[4], udp[5]]))).min(data.len());
    let u = l4 + wire::udp::HEADER_LEN;
    (end >= u).then_some((l4, u, end))
}

/// Whether a frame has work at egress: a µFAB packet (UDP to 40050) or HPCC++ INT (40051) —
/// the packets `locate_ufab` and `stamp_int` take, and no other.
#[inline]
fn needs_egress(data: &[u8]) -> bool {
    // The common frame, untagged IPv4 without options and long enough for a UDP header, read
    // at fixed offsets: the same answer as the general path below (a test compares them).
    if let Some(h) = data.first_chunk::<42>()
        && wire::ethernet::untagged_ipv4_without_options(h)
    {
        let first_fragment = (h[20] & 0x3f) == 0 && h[21] == 0;
        let dport = u16::from_be_bytes([h[36], h[37]]);
        return h[23] == wire::ipv4::protocol::UDP
            && first_fragment
            && matches!(dport, wire::udp::port::UFAB | wire::udp::port::HPCC_INT);
    }
    needs_egress_parsed(data)
}

/// [`needs_egress`] through [`l3_offset`] and [`udp_at`], for any frame.
fn needs_egress_parsed(data: &[u8]) -> bool {
    l3_offset(data)
        .and_then(|l3| udp_at(data, l3))
        .is_some_and(|(_, dport)| matches!(dport, wire::udp::port::UFAB | wire::udp::port::HPCC_INT))
}

/// The IPv4 header's offset in a frame at egress: after Ethernet, one VLAN tag or a label
/// stack; `None` for other EtherTypes.
#[inline]
fn l3_offset(data: &[u8]) -> Option<usize> {
    let et = u16::from_be_bytes([*data.get(12)?, *data.get(13)?]);
    match wire::EtherType(et) {
        wire::EtherType::IPV4 => Some(wire::ethernet::HEADER_LEN),
        wire::EtherType::VLAN => {
            let inner = u16::from_be_bytes([*data.get(16)?, *data.get(17)?]);
            (inner == wire::EtherType::IPV4.0)
                .then_some(wire::ethernet::HEADER_LEN + wire::ethernet::VLAN_TAG_LEN)
        }
        wire::EtherType::MPLS => {
            let d = mpls::stack_depth(&data[wire::ethernet::HEADER_LEN..]).ok()?;
            Some(wire::ethernet::HEADER_LEN + d * mpls::LEN)
        }
        _ => None,
    }
}

impl Program for Ufab {
    type Command = Command;

    #[inline]
    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        if pkt.data().get(12..14) == Some(&wire::EtherType::MPLS.0.to_be_bytes()[..]) {
            self.sr_ingress(pkt, md, out);
        } else {
            self.l2l3.ingress(pkt, md, out);
        }
        // Only µFAB packets (and INT, which `l2l3` stamps at egress) have anything to do at
        // egress: data skips it (Tofino's bypass_egress), as fast as `l2l3`.
        md.bypass_egress = !needs_egress(pkt.data());
    }

    #[inline]
    fn egress<F: Frame>(&mut self, pkt: &mut F, md: &mut EgressMd) {
        if let Some(l3) = l3_offset(pkt.data())
            && let Some((l4, u, end)) = locate_ufab(pkt.data(), l3)
        {
            self.probe_egress(pkt, md, (l3, l4, u, end));
            if md.drop.is_some() {
                return;
            }
        }
        self.l2l3.egress(pkt, md);
    }

    #[inline(always)]
    fn has_egress(&self) -> bool {
        true
    }

    fn tick_interval(&self) -> Option<u64> {
        Some(100_000_000)
    }

    fn tick<F: Frame>(&mut self, now: u64, out: &mut Emitter<'_, F>) {
        self.core.clean(now);
        self.l2l3.tick(now, out);
    }

    fn control(&mut self, cmd: Command, now: u64) -> Result<String, String> {
        match cmd {
            Command::Show => {
                let (s, c) = (self.stats, self.core.stats);
                Ok(format!(
                    "ufab: probes {} finishes {} looks {} responses {} sr_forwarded {} sr_delivered {} failure_notifications {}\n\
                     pairs: live {} added {} updated {} removed {} finish_untracked {} cleaned {} omitted_false_positive {} \
                     omitted_no_record {} cleanings {}\n",
                    s.probes,
                    s.finishes,
                    s.looks,
                    s.responses,
                    s.sr_forwarded,
                    s.sr_delivered,
                    s.failure_notifications,
                    self.core.live_pairs(),
                    c.added,
                    c.updated,
                    c.removed,
                    c.finish_untracked,
                    c.cleaned,
                    c.omitted,
                    c.untracked,
                    c.cleanings
                ))
            }
            Command::Links => {
                let mut s = String::from("port phi_l w_l_bytes tx_l_bps failed\n");
                for (i, l) in self.core.links().iter().enumerate() {
                    s.push_str(&format!("{i} {} {} {} {}\n", l.phi_l, l.w_l, l.tx_bps, self.failed[i]));
                }
                Ok(s)
            }
            Command::Pairs(p) => {
                let mut s = String::from("h0 state phi w period\n");
                for r in self.core.records_on(p) {
                    let state = if r.state == 1 { "live" } else { "finished" };
                    s.push_str(&format!("{:08x} {state} {} {} {}\n", r.h0, r.phi, r.w, r.period));
                }
                Ok(s)
            }
            Command::Fail(p) => {
                self.failed[usize::from(p)] = true;
                // Routed traffic (acknowledgements, anything not source-routed) leaves it too.
                self.l2l3.control(super::l2l3::Command::PortDown(p), now)?;
                Ok(format!("ufab: port {p} failed\n"))
            }
            Command::Restore(p) => {
                self.failed[usize::from(p)] = false;
                self.l2l3.control(super::l2l3::Command::PortUp(p), now)?;
                Ok(format!("ufab: port {p} up\n"))
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
