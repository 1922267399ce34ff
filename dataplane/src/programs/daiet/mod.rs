//! `daiet`: DAIET's in-network aggregation (seed `002` §4, Algorithm 1) on top of `l2l3`
//! forwarding. A switch is a node of one or more aggregation trees; the pairs of a tree's
//! DAIET packets (UDP port 10000, [`wire::daiet`]) are aggregated in its registers and leave
//! towards the tree's reducer only when every child has ended. Everything else is `l2l3`'s.
//!
//! Per tree (`[[daiet.tree]]`: ID, reducer, children, cells, function) the switch keeps a key
//! register array and a value register array (buckets of one, `cells` of them), a valid bit per
//! cell, an index stack of the cells in use, a spillover bucket of one packet's worth of pairs
//! and a children counter: the reference prototype's layout (one array of all trees' cells,
//! each tree at an offset), with the collision handling it lacks.
//!
//! Per pair (Algorithm 1): index = CRC-32 of the key masked to the tree's cells; an empty cell
//! stores the pair and pushes the index; the same key applies the tree's function
//! ([`roce::daiet::AggFn`]: saturating sum, min, max — a saturation is counted); a different key
//! spills: the pair joins the spillover bucket, and a full bucket leaves at once as a packet
//! towards the reducer. The data packet itself is consumed.
//!
//! END (Algorithm 1, lines 16–19): the children counter drops by one; at zero the tree
//! flushes: its stored pairs in packets of at most `max_entries` (popped from the index stack),
//! then the spillover bucket, then one END, all towards the reducer; then the counter is reset
//! for the next round. The flush goes out a burst at a time — [`FLUSH_BURST`] packets when the
//! END arrives, as many again each tick — so a 16 K-cell tree does not ask the buffer pool and
//! the egress queue for 1 639 packets at once; a pair is popped only when the packet carrying it
//! got a buffer. While a tree flushes, its data packets are forwarded to the reducer as they are
//! (counted as passed through: the reducer merges them) and an END is dropped
//! (`daiet_end_no_children`).
//!
//! What the switch sends goes from `source_ip` (default its address on the port towards the
//! reducer), UDP port 10000 to 10000, routed by `l2l3` (so a tree spanning several switches is
//! the routing's path to the reducer: the next DAIET switch on it aggregates again). A packet
//! that cannot go yet — no buffer, or the reducer's MAC still being resolved by ARP — waits
//! (the flush resumes at the next tick, a full spillover bucket at the next collision); pairs
//! that cannot go at all — no route, or a collision while the bucket is still full — are
//! counted as lost (`lost_no_next_hop`).
//!
//! Bad input, dropped by name: a packet too short for its preamble or its claimed pairs, or of
//! an unknown frame type (`daiet_malformed`), more pairs than `max_entries`
//! (`daiet_too_many_entries`), an unknown tree (`daiet_unknown_tree`), an END for a tree with no
//! children left (`daiet_end_no_children`).

mod config;
pub mod decl;
mod p4;

use std::net::{Ipv4Addr, SocketAddrV4};

use roce::daiet::AggFn;
use wire::daiet::{DaietEntry, DaietPacket, ENTRY_LEN, FRAME_DATA, FRAME_END, KEY_LEN, PREAMBLE_LEN};
use wire::stack::UdpFlow;

pub use self::config::{DaietSection, TreeSection};
use super::l2l3::{L2l3, NoNextHop, udp_at};
use super::{BuildCtx, FromConfig};
use crate::buf::Frame;
use crate::config::{Config, ConfigError};
use crate::model::{
    Decl, DeclKind, DropReason, ExactTable, FieldRef, HashAlgo, HashUnit, RegisterArray, Resources, param,
};
use crate::switch::{Dest, EgressMd, Emitter, IngressMd, Program};

/// Default register cells per tree: the paper's 16 K.
pub const DEFAULT_CELLS: usize = 16 * 1024;
/// Flushed packets sent per END or tick, per tree.
pub const FLUSH_BURST: usize = 32;
/// Most pairs a packet may be configured to carry.
pub const MAX_ENTRIES: usize = 64;

/// The control commands: `show daiet` (or `daiet`), `daiet trees`, else an `l2l3` command.
#[derive(Debug, Clone)]
pub enum Command {
    /// Counters.
    Show,
    /// Per tree: children left, cells in use, spillover, flushing.
    Trees,
    /// A command of the forwarding underneath.
    L2l3(super::l2l3::Command),
}

impl Command {
    /// Parse one control line.
    pub fn parse(line: &str, ports: &[String]) -> Result<Self, String> {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["show", "daiet"] | ["daiet"] => Ok(Self::Show),
            ["daiet", "trees"] => Ok(Self::Trees),
            ["daiet", ..] => Err(format!("{line:?}: expected `daiet` or `daiet trees`")),
            _ => L2l3::parse_command(line, ports).map(Self::L2l3),
        }
    }
}

/// Counters of the program (drops are the switch's, by reason).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DaietStats {
    /// Data packets aggregated.
    pub data_packets: u64,
    /// END packets counted.
    pub end_packets: u64,
    /// Pairs received.
    pub pairs: u64,
    /// Pairs stored in an empty cell.
    pub stored: u64,
    /// Pairs aggregated into a cell holding their key.
    pub aggregated: u64,
    /// Pairs spilled (their cell held another key).
    pub spilled: u64,
    /// Sums that saturated at `u32::MAX`.
    pub saturated: u64,
    /// Spillover packets sent when the bucket filled.
    pub spill_packets: u64,
    /// Flushes completed (a tree's every child ended and everything went).
    pub flushes: u64,
    /// Data packets sent by flushes (stored pairs and the spillover).
    pub flush_packets: u64,
    /// Pairs sent by flushes and spillover packets.
    pub pairs_sent: u64,
    /// END packets sent.
    pub ends_sent: u64,
    /// Data packets forwarded unaggregated while their tree was flushing.
    pub passed_through: u64,
    /// Pairs lost: no route to the reducer, or a collision finding the spillover bucket still
    /// full (its packet waiting for the reducer's MAC or a buffer).
    pub lost_no_next_hop: u64,
    /// Flush bursts cut short for want of a buffer or the reducer's MAC (the rest went at a
    /// later tick).
    pub flush_deferred: u64,
    /// Full spillover buckets kept for a later try, for the same reasons.
    pub spill_deferred: u64,
}

#[derive(Debug, Clone, Copy)]
struct Drops {
    malformed: DropReason,
    too_many: DropReason,
    unknown_tree: DropReason,
    end_no_children: DropReason,
}

/// Whether a packet went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Yes,
    /// Not now: no buffer, or the next hop's MAC is being resolved.
    Later,
    /// No route, or no source address.
    Never,
}

/// A tree's entry in `daiet_trees`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TreeSlot(u8);

/// A tree's configuration and its scalar state (the `daiet_tree_state` registers).
#[derive(Debug, Clone, Copy)]
struct Tree {
    id: u32,
    reducer: Ipv4Addr,
    children: u32,
    func: AggFn,
    offset: usize,
    mask: u32,
    /// Children left this round.
    remaining: u32,
    /// Cells in use (the index stack's depth).
    top: usize,
    /// Pairs in the spillover bucket.
    spill: usize,
    /// Flushing: the index stack, then the spillover, then the END.
    flushing: bool,
}

/// The `daiet` program.
#[derive(Debug)]
pub struct Daiet {
    l2l3: L2l3,
    udp_port: u16,
    max_entries: usize,
    source_ip: Option<Ipv4Addr>,
    table: ExactTable<u32, TreeSlot>,
    trees: Vec<Tree>,
    index: HashUnit,
    keys: RegisterArray<[u8; KEY_LEN]>,
    values: RegisterArray<u32>,
    valid: RegisterArray<u8>,
    stack: RegisterArray<u32>,
    spill: RegisterArray<DaietEntry>,
    /// A packet's pairs being assembled.
    scratch: Vec<u8>,
    drops: Drops,
    stats: DaietStats,
    resources: Resources,
}

impl FromConfig for Daiet {
    const NAME: &'static str = "daiet";
    const ABOUT: &'static str = "l2l3 forwarding with DAIET's in-network key/value aggregation along trees";
    const SECTIONS: &'static [&'static str] = &["l2l3", "daiet"];
    const SINGLE_PIPELINE: Option<&'static str> = Some("a tree's registers are one switch's");

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

impl Daiet {
    /// Build from the configuration: `[l2l3]`, then `[daiet]`.
    pub fn build(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        let c = cfg.ctx();
        let l2l3 = L2l3::build(cfg, ctx)?;
        let d = cfg.section::<DaietSection>("daiet")?.unwrap_or_default();
        let max_entries = d.max_entries.unwrap_or(wire::daiet::DEFAULT_MAX_ENTRIES);
        if !(1..=MAX_ENTRIES).contains(&max_entries) {
            return Err(c.err("daiet.max_entries", format!("{max_entries}: expected 1 to {MAX_ENTRIES}")));
        }
        let source_ip = match &d.source_ip {
            None => None,
            Some(s) => Some(
                s.parse::<Ipv4Addr>()
                    .map_err(|_| c.err("daiet.source_ip", format!("{s:?}: expected an IPv4 address")))?,
            ),
        };
        let mut trees = Vec::new();
        let mut offset = 0usize;
        for (i, t) in d.tree.iter().enumerate() {
            let key = |k: &str| format!("daiet.tree[{i}].{k}");
            if trees.iter().any(|x: &Tree| x.id == t.id) {
                return Err(c.err(key("id"), format!("{}: expected a tree ID not used above", t.id)));
            }
            let reducer = t.reducer.parse::<Ipv4Addr>().map_err(|_| {
                c.err(key("reducer"), format!("{:?}: expected the reducer's IPv4 address", t.reducer))
            })?;
            if t.children == 0 {
                return Err(c.err(key("children"), "0: expected at least one child".to_string()));
            }
            let cells = t.cells.unwrap_or(DEFAULT_CELLS);
            if !cells.is_power_of_two() || cells > 1 << 20 {
                return Err(c.err(key("cells"), format!("{cells}: expected a power of two up to 1 048 576")));
            }
            let name = t.function.as_deref().unwrap_or("sum");
            let func = AggFn::parse(name)
                .ok_or_else(|| c.err(key("function"), format!("{name:?}: expected sum, min or max")))?;
            trees.push(Tree {
                id: t.id,
                reducer,
                children: t.children,
                func,
                offset,
                mask: cells as u32 - 1,
                remaining: t.children,
                top: 0,
                spill: 0,
                flushing: false,
            });
            offset += cells;
        }
        if trees.len() > 255 {
            return Err(c.err("daiet.tree", format!("{} trees: expected at most 255", trees.len())));
        }
        let res = &mut ctx.resources;
        let mut table = ExactTable::new(res, decl::trees(trees.len().max(1)));
        for (i, t) in trees.iter().enumerate() {
            let _ = table.insert(t.id, TreeSlot(i as u8));
        }
        let index = HashUnit::new(
            res,
            "daiet_key_hash",
            HashAlgo::Crc32IsoHdlc,
            32,
            &[FieldRef::hdr("daiet_entry", &wire::daiet::field::entry::KEY)],
        );
        let cells = offset.max(1);
        let detail = trees
            .iter()
            .map(|t| {
                let n = t.mask as usize + 1;
                // Key, value, index-stack entry and valid bit per cell.
                let bytes = n * (KEY_LEN + 4 + 4) + n.div_ceil(8);
                format!("tree {} ({} cells from {}): {:.1} KiB", t.id, n, t.offset, bytes as f64 / 1024.0)
            })
            .collect::<Vec<_>>()
            .join(", ");
        let detail = format!("per tree: {detail}");
        let keys = RegisterArray::new(res, "daiet_keys", cells, &[param("key", 128)], None);
        let values = RegisterArray::new(res, "daiet_values", cells, &[param("value", 32)], None);
        let valid = RegisterArray::new(res, "daiet_valid", cells, &[param("bit", 1)], None);
        let stack = RegisterArray::new(res, "daiet_index_stack", cells, &[param("index", 32)], None);
        let spill = RegisterArray::new(
            res,
            "daiet_spillover",
            trees.len().max(1) * max_entries,
            &[param("key", 128), param("value", 32)],
            None,
        );
        res.declare(Decl {
            name: "daiet_tree_state",
            size: trees.len().max(1),
            kind: DeclKind::Register {
                cell: vec![param("remaining", 32), param("top", 32), param("spill", 8)],
                index: None,
            },
            bytes: trees.len() * std::mem::size_of::<Tree>(),
            detail,
        });
        decl::declare(res, max_entries);
        let drops = Drops {
            malformed: ctx.drops.declare("daiet_malformed"),
            too_many: ctx.drops.declare("daiet_too_many_entries"),
            unknown_tree: ctx.drops.declare("daiet_unknown_tree"),
            end_no_children: ctx.drops.declare("daiet_end_no_children"),
        };
        let resources = ctx.resources_after_l2l3(&l2l3);
        Ok(Self {
            l2l3,
            udp_port: crate::config::program_udp_port(
                &c,
                "daiet.udp_port",
                d.udp_port,
                wire::udp::port::DAIET,
                &[],
            )?,
            max_entries,
            source_ip,
            table,
            trees,
            index,
            keys,
            values,
            valid,
            stack,
            spill,
            scratch: vec![0; PREAMBLE_LEN + MAX_ENTRIES * ENTRY_LEN],
            drops,
            stats: DaietStats::default(),
            resources,
        })
    }

    /// Counters.
    pub fn stats(&self) -> DaietStats {
        self.stats
    }

    /// Whether a tree is flushing.
    pub fn is_flushing(&self) -> bool {
        self.trees.iter().any(|t| t.flushing)
    }

    /// Pairs held for tree `id`: stored cells and the spillover bucket.
    pub fn held(&self, id: u32) -> Option<(usize, usize)> {
        self.trees.iter().find(|t| t.id == id).map(|t| (t.top, t.spill))
    }

    /// A DAIET packet (UDP payload at `u`, `len` bytes) at ingress.
    fn daiet_ingress<F: Frame>(
        &mut self,
        pkt: &mut F,
        md: &mut IngressMd,
        out: &mut Emitter<'_, F>,
        u: usize,
        len: usize,
    ) {
        let data = &pkt.data()[u..u + len];
        let p = match DaietPacket::new_checked(data) {
            Ok(p) => p,
            Err(_) => {
                md.dest = Dest::Drop(self.drops.malformed);
                return;
            }
        };
        let frame = p.frame_type();
        let tree_id = p.tree_id();
        let Some(&TreeSlot(slot)) = self.table.lookup(&tree_id) else {
            md.dest = Dest::Drop(self.drops.unknown_tree);
            return;
        };
        let slot = usize::from(slot);
        if frame == FRAME_END {
            let t = &mut self.trees[slot];
            if t.remaining == 0 {
                md.dest = Dest::Drop(self.drops.end_no_children);
                return;
            }
            t.remaining -= 1;
            self.stats.end_packets += 1;
            md.dest = Dest::Consume;
            if t.remaining == 0 {
                t.flushing = true;
                self.flush_some(slot, md.ingress_ts, out);
            }
            return;
        }
        debug_assert_eq!(frame, FRAME_DATA);
        let n = p.number_of_entries() as usize;
        if n > self.max_entries {
            md.dest = Dest::Drop(self.drops.too_many);
            return;
        }
        if self.trees[slot].flushing {
            // The tree is flushing: the reducer merges these as they are.
            self.stats.passed_through += 1;
            self.l2l3.ingress(pkt, md, out);
            return;
        }
        self.stats.data_packets += 1;
        for i in 0..n {
            let e = DaietEntry::read(&pkt.data()[u + PREAMBLE_LEN + i * ENTRY_LEN..]);
            self.pair(slot, e, md.ingress_ts, out);
        }
        md.dest = Dest::Consume;
    }

    /// Algorithm 1, lines 5–15, for one pair of tree `slot`.
    #[inline]
    fn pair<F: Frame>(&mut self, slot: usize, e: DaietEntry, now: u64, out: &mut Emitter<'_, F>) {
        self.stats.pairs += 1;
        let t = &mut self.trees[slot];
        let idx = t.offset + (self.index.hash(&e.key) & t.mask) as usize;
        if self.valid.read(idx) == 0 {
            self.valid.write(idx, 1);
            self.keys.write(idx, e.key);
            self.values.write(idx, e.value);
            self.stack.write(t.offset + t.top, idx as u32);
            t.top += 1;
            self.stats.stored += 1;
        } else if self.keys.read(idx) == e.key {
            let (v, sat) = t.func.apply(self.values.read(idx), e.value);
            self.values.write(idx, v);
            self.stats.aggregated += 1;
            self.stats.saturated += u64::from(sat);
        } else {
            self.stats.spilled += 1;
            if t.spill == self.max_entries {
                // Still full (its packet could not go yet): try again to make room.
                self.send_spill(slot, now, out);
            }
            let t = &mut self.trees[slot];
            if t.spill == self.max_entries {
                self.stats.lost_no_next_hop += 1;
                return;
            }
            self.spill.write(slot * self.max_entries + t.spill, e);
            t.spill += 1;
            if t.spill == self.max_entries {
                self.send_spill(slot, now, out);
            }
        }
    }

    /// The flow towards tree `slot`'s reducer, and its egress port.
    fn flow_to<F: Frame>(
        &mut self,
        slot: usize,
        now: u64,
        out: &mut Emitter<'_, F>,
    ) -> Result<(u16, UdpFlow), NoNextHop> {
        let dst = SocketAddrV4::new(self.trees[slot].reducer, self.udp_port);
        self.l2l3.udp_flow_to(self.source_ip, self.udp_port, dst, now, out)
    }

    /// Send `self.scratch[..len]` towards tree `slot`'s reducer.
    fn send<F: Frame>(&mut self, slot: usize, len: usize, now: u64, out: &mut Emitter<'_, F>) -> Sent {
        let (port, flow) = match self.flow_to(slot, now, out) {
            Ok(x) => x,
            // An ARP request went out: the next tick finds the MAC.
            Err(NoNextHop::Unresolved) => return Sent::Later,
            Err(_) => return Sent::Never,
        };
        let payload = &self.scratch[..len];
        let ok = out.emit(Dest::Port(port), 0, |f| {
            f.reset();
            f.append(roce::dta::report_frame_len(&flow, payload.len()))
                .is_some_and(|b| roce::dta::write_report_frame(&flow, payload, b))
        });
        if ok { Sent::Yes } else { Sent::Later }
    }

    /// Write a data packet of tree `slot` with `n` pairs already in `scratch`; its length.
    fn seal(&mut self, slot: usize, n: usize) -> usize {
        let b = &mut self.scratch;
        wire::daiet::field::preamble::FRAME_TYPE.set_u8(b, FRAME_DATA);
        wire::daiet::field::preamble::NUMBER_OF_ENTRIES.set_u32(b, n as u32);
        wire::daiet::field::preamble::TREE_ID.set_u32(b, self.trees[slot].id);
        PREAMBLE_LEN + n * ENTRY_LEN
    }

    /// The full spillover bucket of tree `slot` leaves as one packet; if it cannot yet (no
    /// buffer, the reducer's MAC being resolved) it stays full and the next collision tries
    /// again; with no route at all its pairs are lost, counted.
    fn send_spill<F: Frame>(&mut self, slot: usize, now: u64, out: &mut Emitter<'_, F>) {
        let n = self.trees[slot].spill;
        self.fill_spill(slot, n);
        let len = self.seal(slot, n);
        match self.send(slot, len, now, out) {
            Sent::Yes => {
                self.stats.spill_packets += 1;
                self.stats.pairs_sent += n as u64;
                self.trees[slot].spill = 0;
            }
            Sent::Later => self.stats.spill_deferred += 1,
            Sent::Never => {
                self.stats.lost_no_next_hop += n as u64;
                self.trees[slot].spill = 0;
            }
        }
    }

    fn fill_spill(&mut self, slot: usize, n: usize) {
        for i in 0..n {
            let e = self.spill.read(slot * self.max_entries + i);
            e.write(&mut self.scratch[PREAMBLE_LEN + i * ENTRY_LEN..]);
        }
    }

    /// Up to [`FLUSH_BURST`] packets of tree `slot`'s flush: stored pairs, then the spillover,
    /// then the END; the tree is reset when the END went.
    fn flush_some<F: Frame>(&mut self, slot: usize, now: u64, out: &mut Emitter<'_, F>) {
        for _ in 0..FLUSH_BURST {
            let t = self.trees[slot];
            if !t.flushing {
                return;
            }
            let (len, pairs, from_stack) = if t.top > 0 {
                // The last `n` cells of the index stack, cleared only once the packet is out.
                let n = t.top.min(self.max_entries);
                for i in 0..n {
                    let idx = self.stack.read(t.offset + t.top - 1 - i) as usize;
                    let e = DaietEntry { key: self.keys.read(idx), value: self.values.read(idx) };
                    e.write(&mut self.scratch[PREAMBLE_LEN + i * ENTRY_LEN..]);
                }
                (self.seal(slot, n), n, true)
            } else if t.spill > 0 {
                self.fill_spill(slot, t.spill);
                (self.seal(slot, t.spill), t.spill, false)
            } else {
                let b = &mut self.scratch;
                wire::daiet::field::end::FRAME_TYPE.set_u8(b, FRAME_END);
                wire::daiet::field::end::TREE_ID.set_u32(b, t.id);
                (wire::daiet::END_LEN, 0, false)
            };
            let sent = match self.send(slot, len, now, out) {
                Sent::Yes => true,
                Sent::Later => {
                    // No buffer, or the reducer's MAC is being resolved: the rest at the next
                    // tick, nothing popped.
                    self.stats.flush_deferred += 1;
                    return;
                }
                Sent::Never => {
                    self.stats.lost_no_next_hop += pairs as u64;
                    false
                }
            };
            let t = &mut self.trees[slot];
            if from_stack {
                for i in 0..pairs {
                    let idx = self.stack.read(t.offset + t.top - 1 - i) as usize;
                    self.valid.write(idx, 0);
                }
                t.top -= pairs;
            } else if pairs > 0 {
                t.spill = 0;
            } else {
                t.flushing = false;
                t.remaining = t.children;
                self.stats.flushes += 1;
                if sent {
                    self.stats.ends_sent += 1;
                }
                return;
            }
            if sent {
                self.stats.flush_packets += 1;
                self.stats.pairs_sent += pairs as u64;
            }
        }
    }
}

impl Program for Daiet {
    type Command = Command;

    #[inline]
    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        let data = pkt.data();
        if data.get(12..14) == Some(&wire::EtherType::IPV4.0.to_be_bytes()[..])
            && let Some((l4, dport)) = udp_at(data, wire::ethernet::HEADER_LEN)
            && dport == self.udp_port
        {
            let udp_len = usize::from(u16::from_be_bytes([data[l4 + 4], data[l4 + 5]]));
            let u = l4 + wire::udp::HEADER_LEN;
            let end = (l4 + udp_len).min(data.len());
            if end < u {
                md.dest = Dest::Drop(self.drops.malformed);
                return;
            }
            self.daiet_ingress(pkt, md, out, u, end - u);
            return;
        }
        self.l2l3.ingress(pkt, md, out);
    }

    #[inline]
    fn egress<F: Frame>(&mut self, pkt: &mut F, md: &mut EgressMd) {
        self.l2l3.egress(pkt, md);
    }

    #[inline(always)]
    fn has_egress(&self) -> bool {
        self.l2l3.has_egress()
    }

    fn tick_interval(&self) -> Option<u64> {
        Some(20_000)
    }

    fn tick<F: Frame>(&mut self, now: u64, out: &mut Emitter<'_, F>) {
        for slot in 0..self.trees.len() {
            if self.trees[slot].flushing {
                self.flush_some(slot, now, out);
            }
        }
        self.l2l3.tick(now, out);
    }

    fn control(&mut self, cmd: Command, now: u64) -> Result<String, String> {
        match cmd {
            Command::Show => {
                let s = self.stats;
                Ok(format!(
                    "daiet: data_packets {} end_packets {} pairs {} stored {} aggregated {} spilled {} saturated {}\n\
                     sent: spill_packets {} flush_packets {} pairs {} ends {} flushes {} passed_through {} \
                     lost_no_next_hop {} flush_deferred {} spill_deferred {}\n",
                    s.data_packets,
                    s.end_packets,
                    s.pairs,
                    s.stored,
                    s.aggregated,
                    s.spilled,
                    s.saturated,
                    s.spill_packets,
                    s.flush_packets,
                    s.pairs_sent,
                    s.ends_sent,
                    s.flushes,
                    s.passed_through,
                    s.lost_no_next_hop,
                    s.flush_deferred,
                    s.spill_deferred
                ))
            }
            Command::Trees => {
                let mut s =
                    String::from("tree reducer function cells children_left stored spillover flushing\n");
                for t in &self.trees {
                    s.push_str(&format!(
                        "{} {} {} {} {} {} {} {}\n",
                        t.id,
                        t.reducer,
                        t.func.name(),
                        t.mask as usize + 1,
                        t.remaining,
                        t.top,
                        t.spill,
                        t.flushing
                    ));
                }
                Ok(s)
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
