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
//! tuple is kept and compared: a packet of another flow in a slot already used this epoch is
//! counted in [`Telemetry::collisions`] and not merged.

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

/// A port's cell in one epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCell {
    /// The lap it was written in.
    pub epoch_id: u32,
    /// Packets.
    pub pkts: u32,
    /// Paused packets.
    pub paused: u32,
    /// Queue depth at enqueue over unpaused packets, bytes.
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
    /// Packets of a flow whose slot another flow held in the same epoch (not merged).
    pub collisions: u64,
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

    /// [`record`](Self::record) with the flow given by its 13-byte key (what the data path
    /// copies straight from the frame's headers); `s.flow` is not read.
    #[inline]
    pub fn record_key(&mut self, now: u64, s: &Sample, k: Option<&[u8; 13]>) {
        let id = self.epoch_id(now);
        let bank = self.bank(id);
        let (out, inp) = (usize::from(s.out_port), usize::from(s.in_port));
        let q = if s.paused { 0 } else { s.enq_qdepth };
        if out < self.ports {
            let i = RegisterArray::<PortCell>::epoch_index(bank, self.stride, out);
            self.port_cells.update(i, |c| {
                if c.epoch_id != id {
                    *c = PortCell { epoch_id: id, ..PortCell::default() };
                }
                c.pkts = c.pkts.saturating_add(1);
                c.paused = c.paused.saturating_add(u32::from(s.paused));
                c.qdepth_sum = c.qdepth_sum.saturating_add(q);
            });
            if inp < self.ports {
                let i = RegisterArray::<MeterCell>::epoch_index(
                    bank,
                    self.stride * self.stride,
                    inp * self.stride + out,
                );
                self.meter.update(i, |c| {
                    if c.epoch_id != id {
                        *c = MeterCell { epoch_id: id, bytes: 0 };
                    }
                    c.bytes = c.bytes.saturating_add(u64::from(s.bytes));
                });
            }
        }
        let Some(k) = k else { return };
        let i = RegisterArray::<FlowCell>::epoch_index(
            bank,
            self.slots,
            self.flow_hash(k) as usize & (self.slots - 1),
        );
        let word = |at: usize| u32::from_be_bytes([k[at], k[at + 1], k[at + 2], k[at + 3]]);
        let (src, dst, proto, ports) = (word(0), word(4), k[8], word(9));
        let collided = self
            .flows
            .update(i, |c| {
                let fresh = c.epoch_id != id || c.pkts == 0;
                if fresh {
                    *c = FlowCell { epoch_id: id, src, dst, ports, proto, ..FlowCell::default() };
                } else if (c.src, c.dst, c.ports, c.proto) != (src, dst, ports, proto) {
                    return true;
                }
                c.port = s.out_port;
                c.pkts = c.pkts.saturating_add(1);
                c.paused = c.paused.saturating_add(u32::from(s.paused));
                c.qdepth_sum = c.qdepth_sum.saturating_add(q);
                false
            })
            .unwrap_or(false);
        self.collisions += u64::from(collided);
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

    /// What concerns a polling copy leaving by `out`, in the current and previous epochs, as
    /// report entries, zero entries dropped: the port's cell, the meter from every port to it,
    /// and every flow that left by it. The control side's work (it scans the flow banks).
    pub fn snapshot(&self, now: u64, out: u16, entries: &mut Vec<Entry>) {
        let cur = self.epoch_id(now);
        let laps = [cur.wrapping_sub(1), cur];
        let o = usize::from(out);
        if o >= self.ports {
            return;
        }
        for id in laps.into_iter().filter(|&id| id <= cur) {
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
            for s in 0..self.slots {
                let c = self.flows.read(RegisterArray::<FlowCell>::epoch_index(bank, self.slots, s));
                if c.epoch_id == id && c.pkts > 0 && c.port == out {
                    entries.push(Entry::Flow {
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
                    });
                }
            }
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
