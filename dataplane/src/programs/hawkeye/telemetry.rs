//! Hawkeye's epoch telemetry (seed `001` §3.3; reference part A.4): per epoch, a flow table, a
//! port table and a port-pair byte meter, updated per packet at egress, read by the polling
//! rules and snapshotted by the control side.
//!
//! Epochs: `epoch_id = now >> log2(epoch_ns)` (the lap) and `index = epoch_id mod epochs` (the
//! bank). Every cell keeps the `epoch_id` it was written in: a cell found holding an older lap is
//! reset on its first touch in the new one (the public prototype never resets its flow entries,
//! so stale counts from four epochs ago read as current), and a read of a cell from another lap
//! reads zero.
//!
//! Flow slots: `CRC-32(5-tuple) mod flow_slots` (RoCEv2's UDP ports: the 5-tuple is the IPv4
//! header's and the L4 header's, whatever the protocol, not TCP's fields read as UDP's). The
//! tuple is kept and compared (§3.3's XOR check): a packet of another flow in a slot already
//! used this epoch evicts the older entry to the control side, as the paper does ("the existing
//! entry will be evicted and stored at the controller"), and takes the slot. The control side
//! keeps at most [`EVICTED_CAP`] evicted entries of the kept epochs; one more is counted in
//! [`Telemetry::evicted_lost`]. Snapshots carry the evicted entries with the live ones, a flow
//! evicted and back in its slot again merged into one entry.
//!
//! Queue depth (§3.3, §3.5.1): the port cell sums every packet's depth at enqueue (the paper's
//! `qdepth[P_j]`, a mean over the port's N packets: a port paused downstream still shows its
//! queue); the flow cell sums unpaused packets' only (the port → flow edges exclude paused
//! packets, §3.5.1, as the reference analyzer's `enqQdepth / (packetNum − paused)` does).
//!
//! Lookback: a snapshot carries every kept epoch (`epochs` laps, the current one included), so a
//! deadlock polled several epochs after it froze still shows the contention that started it; the
//! tracing rules read the current and previous epochs' pause counts and every kept epoch's meter
//! ([`Telemetry::paused_recently`], [`Telemetry::meter_recent`]): a port paused since before the
//! epoch began sends nothing, so counts nothing in it.

use wire::hawkeye::FiveTuple;
use wire::hawkeye::report::Entry;

use crate::model::{HashAlgo, HashUnit, Param, RegisterArray, Resources, param};

/// A flow's cell in one epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowCell {
    /// The lap it was written in.
    pub epoch_id: u32,
    /// Source address.
    pub src: u32,
    /// Destination address.
    pub dst: u32,
    /// Source port << 16 | destination port.
    pub ports: u32,
    /// IP protocol.
    pub proto: u8,
    /// The egress port it left by last.
    pub port: u16,
    /// Packets.
    pub pkts: u32,
    /// Paused packets.
    pub paused: u32,
    /// Queue depth at enqueue over unpaused packets, bytes.
    pub qdepth_sum: u64,
}

/// The most evicted flow entries the control side keeps (those of the kept epochs).
pub const EVICTED_CAP: usize = 4096;

/// A port's cell in one epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCell {
    /// The lap it was written in.
    pub epoch_id: u32,
    /// Packets.
    pub pkts: u32,
    /// Paused packets.
    pub paused: u32,
    /// Queue depth at enqueue over every packet, bytes.
    pub qdepth_sum: u64,
}

/// A port pair's byte count in one epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MeterCell {
    /// The lap it was written in.
    pub epoch_id: u32,
    /// Bytes from the in-port to the out-port.
    pub bytes: u64,
}

/// The flow cell's declared layout.
pub const FLOW_CELL: [Param; 9] = [
    param("epoch_id", 32),
    param("src_addr", 32),
    param("dst_addr", 32),
    param("ports", 32),
    param("protocol", 8),
    param("egress_port", 16),
    param("pkts", 32),
    param("paused", 32),
    param("qdepth_sum", 64),
];
/// The port cell's declared layout.
pub const PORT_CELL: [Param; 4] =
    [param("epoch_id", 32), param("pkts", 32), param("paused", 32), param("qdepth_sum", 64)];
/// The meter cell's declared layout.
pub const METER_CELL: [Param; 2] = [param("epoch_id", 32), param("bytes", 64)];

/// Where each byte of the flow key ([`key`]: addresses, protocol, ports) lies in an untagged
/// IPv4 frame without options.
const KEY_AT: [usize; 13] = [26, 27, 28, 29, 30, 31, 32, 33, 23, 34, 35, 36, 37];

/// A flow's identity as its cell keeps it.
#[derive(Debug, Clone, Copy)]
struct FlowWords {
    src: u32,
    dst: u32,
    ports: u32,
    proto: u8,
}

/// One packet as the telemetry sees it at egress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The flow (`None`: not IPv4, counted per port and pair only).
    pub flow: Option<FiveTuple>,
    /// The port it came in by.
    pub in_port: u16,
    /// The port it leaves by.
    pub out_port: u16,
    /// Its length, bytes.
    pub bytes: u32,
    /// Its queue's depth when it arrived, bytes.
    pub enq_qdepth: u64,
    /// It waited on PFC, or its port is paused on its priority now.
    pub paused: bool,
}

/// The telemetry tables of one switch.
#[derive(Debug)]
pub struct Telemetry {
    epochs: usize,
    shift: u32,
    slots: usize,
    ports: usize,
    /// Cells per epoch bank of the port table (and per in-port row of the meter): `ports`
    /// rounded up to a power of two, so a switch pipeline indexes them with shifts.
    stride: usize,
    flows: RegisterArray<FlowCell>,
    port_cells: RegisterArray<PortCell>,
    meter: RegisterArray<MeterCell>,
    hash: HashUnit,
    /// The declared hash, tabulated per key byte (CRC is affine: the XOR of one entry per byte
    /// is the CRC of the 13 bytes), so a slot is 13 independent loads, not 13 dependent steps.
    byte_tables: Box<[[u32; 256]; 13]>,
    /// Flow entries evicted by another flow taking their slot in the same epoch (each kept
    /// by the control side, or counted in `evicted_lost`).
    pub collisions: u64,
    /// Evicted entries the control side had no room for ([`EVICTED_CAP`]): their counts are
    /// missing from snapshots.
    pub evicted_lost: u64,
    /// The evicted entries of the kept epochs (preallocated: the hot path never allocates).
    evicted: Vec<FlowCell>,
}

impl Telemetry {
    /// Declare and build the tables: `epochs` banks (a power of two) of epochs of
    /// `2^epoch_shift` ns, `slots` flow slots (a power of two), `ports` ports.
    pub fn new(res: &mut Resources, epochs: usize, epoch_shift: u32, slots: usize, ports: usize) -> Self {
        let flows = RegisterArray::with_epochs(res, "hawkeye_flows", epochs, slots, &FLOW_CELL);
        let stride = ports.next_power_of_two();
        let port_cells = RegisterArray::with_epochs(res, "hawkeye_ports", epochs, stride, &PORT_CELL);
        let meter =
            RegisterArray::with_epochs(res, "hawkeye_port_meter", epochs, stride * stride, &METER_CELL);
        let hash =
            HashUnit::new(res, "hawkeye_flow_hash", HashAlgo::Crc32IsoHdlc, 32, &super::decl::FLOW_INPUTS);
        let mut byte_tables = Box::new([[0u32; 256]; 13]);
        let zero = hash.hash(&[0u8; 13]);
        for (i, t) in byte_tables.iter_mut().enumerate() {
            for (b, cell) in t.iter_mut().enumerate() {
                let mut k = [0u8; 13];
                k[i] = b as u8;
                // Table 0 carries the CRC of the all-zero key (init and xor-out); the others
                // only each byte's linear part.
                *cell = hash.hash(&k) ^ if i == 0 { 0 } else { zero };
            }
        }
        Self {
            epochs,
            shift: epoch_shift,
            slots,
            ports,
            stride,
            flows,
            port_cells,
            meter,
            hash,
            byte_tables,
            collisions: 0,
            evicted_lost: 0,
            evicted: Vec::with_capacity(EVICTED_CAP),
        }
    }

    /// The declared hash of a flow's 13-byte key, by the byte tables.
    #[inline]
    pub fn flow_hash(&self, k: &[u8; 13]) -> u32 {
        let t = &self.byte_tables;
        let mut h = 0;
        for i in 0..13 {
            h ^= t[i][usize::from(k[i])];
        }
        h
    }

    /// Epoch banks.
    pub fn epochs(&self) -> usize {
        self.epochs
    }

    /// Ports the tables cover.
    pub fn ports(&self) -> usize {
        self.ports
    }

    /// log2 of the epoch length, ns.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// Flow slots per epoch.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Port cells per epoch bank (a power of two).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The lap of time `now`.
    #[inline]
    pub fn epoch_id(&self, now: u64) -> u32 {
        (now >> self.shift) as u32
    }

    /// The bank of lap `id`.
    #[inline]
    pub fn bank(&self, id: u32) -> usize {
        id as usize & (self.epochs - 1)
    }

    /// The flow slot of `f`: CRC-32 of its 13 bytes, as the declared hash unit computes it.
    #[inline]
    pub fn slot(&self, f: &FiveTuple) -> usize {
        self.flow_hash(&key(f)) as usize & (self.slots - 1)
    }

    /// The declared hash unit, computed directly (tests compare it with the byte tables).
    pub fn declared_hash(&self, k: &[u8; 13]) -> u32 {
        self.hash.hash(k)
    }

    /// Count one packet at time `now`.
    #[inline]
    pub fn record(&mut self, now: u64, s: &Sample) {
        let k = s.flow.map(|f| key(&f));
        self.record_key(now, s, k.as_ref());
    }

    /// [`record`](Self::record) with the flow given by its 13-byte key; `s.flow` is not read.
    #[inline]
    pub fn record_key(&mut self, now: u64, s: &Sample, k: Option<&[u8; 13]>) {
        let id = self.epoch_id(now);
        let bank = self.bank(id);
        self.count_port(id, bank, s.in_port, s.out_port, s.bytes, s.paused, s.enq_qdepth);
        let q = if s.paused { 0 } else { s.enq_qdepth };
        let Some(k) = k else { return };
        let word = |at: usize| u32::from_be_bytes([k[at], k[at + 1], k[at + 2], k[at + 3]]);
        let f = FlowWords { src: word(0), dst: word(4), ports: word(9), proto: k[8] };
        self.count_flow(id, bank, self.flow_hash(k), f, s.out_port, s.paused, q);
    }

    /// Count one frame leaving by `out_port` at time `now` (its enqueue time), read straight
    /// from its headers at fixed offsets, if it is the common frame: untagged IPv4 without
    /// options, first fragment, whole. `false` (nothing counted) for any other frame, which
    /// the caller counts through the parsers and [`record_key`](Self::record_key).
    ///
    /// The same counts as [`record`](Self::record) (a test compares them), in fewer steps: no
    /// key is built, the hash's byte tables are indexed by the frame's own bytes.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn record_ipv4(
        &mut self,
        now: u64,
        in_port: u16,
        out_port: u16,
        paused: bool,
        enq_qdepth: u64,
        data: &[u8],
    ) -> bool {
        let Some(h) = data.first_chunk::<38>() else { return false };
        // The IPv4 total length must hold the ports and fit the frame, as the parser checks.
        let total = usize::from(u16::from_be_bytes([h[16], h[17]]));
        // The first fragment: bytes 20..22, the offset's 13 bits.
        let frag = u16::from_be_bytes([h[20], h[21]]) & 0x1fff;
        if !wire::ethernet::untagged_ipv4_without_options(h)
            || frag != 0
            || total < 24
            || 14 + total > data.len()
        {
            return false;
        }
        let proto = h[23];
        let l4 = matches!(proto, wire::ipv4::protocol::UDP | wire::ipv4::protocol::TCP);
        let x = self.tuple_hash_by_tables(h, l4);
        let ports = if l4 { u32::from_be_bytes([h[34], h[35], h[36], h[37]]) } else { 0 };
        let f = FlowWords {
            src: u32::from_be_bytes([h[26], h[27], h[28], h[29]]),
            dst: u32::from_be_bytes([h[30], h[31], h[32], h[33]]),
            ports,
            proto,
        };
        let id = self.epoch_id(now);
        let bank = self.bank(id);
        self.count_port(id, bank, in_port, out_port, data.len() as u32, paused, enq_qdepth);
        let q = if paused { 0 } else { enq_qdepth };
        self.count_flow(id, bank, x, f, out_port, paused, q);
        true
    }

    /// The declared hash of the key in the frame's headers `h`, by the byte tables: key byte
    /// `i` is frame byte [`KEY_AT`]`[i]`; the ports (key bytes 9..13) are zero for other
    /// protocols, and those tables' zero entries are 0.
    #[inline(always)]
    fn tuple_hash_by_tables(&self, h: &[u8; 38], l4: bool) -> u32 {
        let t = &self.byte_tables;
        let v = |i: usize| t[i][usize::from(h[KEY_AT[i]])];
        // A tree of XORs, not a chain: the lookups are independent and the sum is reached in
        // four steps, not thirteen.
        let addrs = ((v(0) ^ v(1)) ^ (v(2) ^ v(3))) ^ ((v(4) ^ v(5)) ^ (v(6) ^ v(7)));
        let ports = if l4 { (v(9) ^ v(10)) ^ (v(11) ^ v(12)) } else { 0 };
        (addrs ^ v(8)) ^ ports
    }

    /// The port's cell and the port pair's meter cell. Counters wrap as the P4 registers
    /// do; none can in one epoch (`epoch_ns` is at most 2^32 ns: 2^32 packets would take more
    /// than 1 packet per ns).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn count_port(&mut self, id: u32, bank: usize, inp: u16, out: u16, bytes: u32, paused: bool, q: u64) {
        let (out, inp) = (usize::from(out), usize::from(inp));
        if out >= self.ports {
            return;
        }
        let stride = self.stride;
        if let Some(c) = self.port_cells.get_mut(RegisterArray::<PortCell>::epoch_index(bank, stride, out)) {
            if c.epoch_id != id {
                *c = PortCell { epoch_id: id, ..PortCell::default() };
            }
            c.pkts = c.pkts.wrapping_add(1);
            c.paused = c.paused.wrapping_add(u32::from(paused));
            c.qdepth_sum = c.qdepth_sum.wrapping_add(q);
        }
        if inp < self.ports
            && let Some(c) = self.meter.get_mut(RegisterArray::<MeterCell>::epoch_index(
                bank,
                stride * stride,
                inp * stride + out,
            ))
        {
            if c.epoch_id != id {
                *c = MeterCell { epoch_id: id, bytes: 0 };
            }
            c.bytes = c.bytes.wrapping_add(u64::from(bytes));
        }
    }

    /// The flow's cell in slot `hash mod slots`: taken if fresh, counted if the flow holds
    /// it, else the older entry is evicted to the control side and the flow takes the slot.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn count_flow(&mut self, id: u32, bank: usize, hash: u32, f: FlowWords, out: u16, paused: bool, q: u64) {
        let i = RegisterArray::<FlowCell>::epoch_index(bank, self.slots, hash as usize & (self.slots - 1));
        let Some(c) = self.flows.get_mut(i) else { return };
        let fresh = c.epoch_id != id || c.pkts == 0;
        let other =
            (c.src ^ f.src) | (c.dst ^ f.dst) | (c.ports ^ f.ports) | u32::from(c.proto ^ f.proto) != 0;
        if !fresh && other {
            self.collisions += 1;
            if self.evicted.len() < EVICTED_CAP {
                self.evicted.push(*c);
            } else {
                self.evicted_lost += 1;
            }
        }
        if fresh || other {
            *c = FlowCell {
                epoch_id: id,
                src: f.src,
                dst: f.dst,
                ports: f.ports,
                proto: f.proto,
                ..FlowCell::default()
            };
        }
        c.port = out;
        c.pkts = c.pkts.wrapping_add(1);
        c.paused = c.paused.wrapping_add(u32::from(paused));
        c.qdepth_sum = c.qdepth_sum.wrapping_add(q);
    }

    /// The port's cell in the current epoch (zero if not touched in it).
    pub fn port(&self, now: u64, port: u16) -> PortCell {
        let id = self.epoch_id(now);
        let c = self.port_cells.read(RegisterArray::<PortCell>::epoch_index(
            self.bank(id),
            self.stride,
            usize::from(port),
        ));
        if c.epoch_id == id && usize::from(port) < self.ports { c } else { PortCell::default() }
    }

    /// Bytes from `inp` to `out` in the current epoch.
    pub fn meter(&self, now: u64, inp: u16, out: u16) -> u64 {
        let id = self.epoch_id(now);
        let (inp, out) = (usize::from(inp), usize::from(out));
        if inp >= self.ports || out >= self.ports {
            return 0;
        }
        let c = self.meter.read(RegisterArray::<MeterCell>::epoch_index(
            self.bank(id),
            self.stride * self.stride,
            inp * self.stride + out,
        ));
        if c.epoch_id == id { c.bytes } else { 0 }
    }

    /// The flow cell of `f` in the current epoch, if `f` holds its slot.
    pub fn flow(&self, now: u64, f: &FiveTuple) -> Option<FlowCell> {
        let id = self.epoch_id(now);
        let c =
            self.flows.read(RegisterArray::<FlowCell>::epoch_index(self.bank(id), self.slots, self.slot(f)));
        let ports = (u32::from(f.src_port) << 16) | u32::from(f.dst_port);
        (c.epoch_id == id
            && c.pkts > 0
            && (c.src, c.dst, c.ports, c.proto)
                == (f.src_ip.to_bits(), f.dst_ip.to_bits(), ports, f.protocol))
            .then_some(c)
    }

    /// The laps a snapshot or a lookback of `back` epochs at `now` covers, oldest first: the
    /// current lap and up to `back - 1` before it (none before lap 0).
    fn laps(&self, now: u64, back: usize) -> impl Iterator<Item = u32> {
        let cur = self.epoch_id(now);
        let n = (back as u32).min(cur.saturating_add(1));
        (0..n).rev().map(move |b| cur - b)
    }

    /// Whether `port` counted paused packets in the current or the previous epoch (a pause
    /// that began before the epoch and holds the port now counts nothing in it: the caller
    /// asks the traffic manager for that).
    pub fn paused_recently(&self, now: u64, port: u16) -> bool {
        let o = usize::from(port);
        o < self.ports
            && self.laps(now, 2).any(|id| {
                let p = self.port_cells.read(RegisterArray::<PortCell>::epoch_index(
                    self.bank(id),
                    self.stride,
                    o,
                ));
                p.epoch_id == id && p.paused > 0
            })
    }

    /// Bytes from `inp` to `out` over every kept epoch.
    pub fn meter_recent(&self, now: u64, inp: u16, out: u16) -> u64 {
        let (inp, out) = (usize::from(inp), usize::from(out));
        if inp >= self.ports || out >= self.ports {
            return 0;
        }
        self.laps(now, self.epochs)
            .map(|id| {
                let m = self.meter.read(RegisterArray::<MeterCell>::epoch_index(
                    self.bank(id),
                    self.stride * self.stride,
                    inp * self.stride + out,
                ));
                if m.epoch_id == id { m.bytes } else { 0 }
            })
            .fold(0, u64::wrapping_add)
    }

    /// Whether flow `f` was paused in the current or the previous epoch: `Some` if it has an
    /// entry there (in its slot or evicted), `None` if the tables hold none.
    pub fn flow_paused_recently(&self, now: u64, f: &FiveTuple) -> Option<bool> {
        let ports = (u32::from(f.src_port) << 16) | u32::from(f.dst_port);
        let is_f = |c: &FlowCell| {
            c.pkts > 0
                && (c.src, c.dst, c.ports, c.proto)
                    == (f.src_ip.to_bits(), f.dst_ip.to_bits(), ports, f.protocol)
        };
        let mut found = None;
        for id in self.laps(now, 2) {
            let c = self.flows.read(RegisterArray::<FlowCell>::epoch_index(
                self.bank(id),
                self.slots,
                self.slot(f),
            ));
            for c in std::iter::once(&c).chain(self.evicted.iter()) {
                if c.epoch_id == id && is_f(c) {
                    found = Some(found.unwrap_or(false) || c.paused > 0);
                }
            }
        }
        found
    }

    /// The control side forgets evicted entries older than the kept epochs.
    pub fn prune_evicted(&mut self, now: u64) {
        let oldest = self.laps(now, self.epochs).next().unwrap_or(0);
        self.evicted.retain(|c| c.epoch_id >= oldest);
    }

    /// Evicted entries the control side holds.
    pub fn evicted(&self) -> &[FlowCell] {
        &self.evicted
    }

    /// What concerns a polling copy leaving by `out`, in every kept epoch (oldest first), as
    /// report entries, zero entries dropped: the port's cell, the meter from every port to it,
    /// and every flow that left by it, evicted entries merged with their flow's live one. The
    /// control side's work (it scans the flow banks).
    pub fn snapshot(&self, now: u64, out: u16, entries: &mut Vec<Entry>) {
        let o = usize::from(out);
        if o >= self.ports {
            return;
        }
        let flow_entry = |id: u32, c: &FlowCell| Entry::Flow {
            port: out,
            epoch_id: id,
            flow: FiveTuple {
                src_ip: c.src.into(),
                dst_ip: c.dst.into(),
                protocol: c.proto,
                src_port: (c.ports >> 16) as u16,
                dst_port: c.ports as u16,
            },
            pkts: c.pkts,
            paused: c.paused,
            qdepth_sum: c.qdepth_sum,
        };
        let same =
            |a: &FlowCell, b: &FlowCell| (a.src, a.dst, a.ports, a.proto) == (b.src, b.dst, b.ports, b.proto);
        let add = |a: &mut FlowCell, b: &FlowCell| {
            a.pkts = a.pkts.wrapping_add(b.pkts);
            a.paused = a.paused.wrapping_add(b.paused);
            a.qdepth_sum = a.qdepth_sum.wrapping_add(b.qdepth_sum);
        };
        for id in self.laps(now, self.epochs) {
            let bank = self.bank(id);
            let p = self.port_cells.read(RegisterArray::<PortCell>::epoch_index(bank, self.stride, o));
            if p.epoch_id == id && p.pkts > 0 {
                entries.push(Entry::Port {
                    port: out,
                    epoch_id: id,
                    pkts: p.pkts,
                    paused: p.paused,
                    qdepth_sum: p.qdepth_sum,
                });
            }
            for inp in 0..self.ports {
                let m = self.meter.read(RegisterArray::<MeterCell>::epoch_index(
                    bank,
                    self.stride * self.stride,
                    inp * self.stride + o,
                ));
                if m.epoch_id == id && m.bytes > 0 {
                    entries.push(Entry::Meter {
                        out_port: out,
                        epoch_id: id,
                        in_port: inp as u16,
                        bytes: m.bytes,
                    });
                }
            }
            // This lap's evicted entries by this port, merged per flow (usually none).
            let mut gone: Vec<(FlowCell, bool)> = Vec::new();
            for c in self.evicted.iter().filter(|c| c.epoch_id == id && c.port == out && c.pkts > 0) {
                match gone.iter_mut().find(|g| same(&g.0, c)) {
                    Some(g) => add(&mut g.0, c),
                    None => gone.push((*c, false)),
                }
            }
            for s in 0..self.slots {
                let mut c = self.flows.read(RegisterArray::<FlowCell>::epoch_index(bank, self.slots, s));
                if c.epoch_id == id && c.pkts > 0 && c.port == out {
                    if let Some(g) = gone.iter_mut().find(|g| same(&g.0, &c)) {
                        add(&mut c, &g.0);
                        g.1 = true;
                    }
                    entries.push(flow_entry(id, &c));
                }
            }
            entries.extend(gone.iter().filter(|g| !g.1).map(|g| flow_entry(id, &g.0)));
        }
    }
}

/// The 13 bytes a flow hashes over: addresses, protocol, ports (`l2l3`'s ECMP key).
pub fn key(f: &FiveTuple) -> [u8; 13] {
    let mut k = [0u8; 13];
    k[0..4].copy_from_slice(&f.src_ip.octets());
    k[4..8].copy_from_slice(&f.dst_ip.octets());
    k[8] = f.protocol;
    k[9..11].copy_from_slice(&f.src_port.to_be_bytes());
    k[11..13].copy_from_slice(&f.dst_port.to_be_bytes());
    k
}
