//! The traffic manager's configuration: queues and their scheduling, per-port shaping, PFC
//! thresholds, RED/ECN marking, the shared buffer.

use super::*;

/// Queues (and priorities) per port.
pub const QUEUES: usize = 8;
/// DWRR quantum per unit of weight, bytes.
pub const DWRR_QUANTUM: u32 = 2048;

/// How a queue is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueSched {
    /// Strict priority at this level: higher levels first, before any DWRR queue.
    Strict(u8),
    /// Deficit weighted round robin with this weight among the DWRR queues.
    Dwrr(u32),
}

/// The default schedule: queue 7 strict (control traffic: PFC-free ACKs, CNPs, probes), queues
/// 0–6 DWRR with equal weights.
pub const DEFAULT_SCHED: [QueueSched; QUEUES] = [
    QueueSched::Dwrr(1),
    QueueSched::Dwrr(1),
    QueueSched::Dwrr(1),
    QueueSched::Dwrr(1),
    QueueSched::Dwrr(1),
    QueueSched::Dwrr(1),
    QueueSched::Dwrr(1),
    QueueSched::Strict(0),
];

/// One egress port's TM configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PortTmConfig {
    /// Link speed, bits per second: the unit of PFC pause quanta.
    pub speed_bps: u64,
    /// Shaping rate, bits per second; 0 leaves the port unshaped.
    pub shape_bps: u64,
    /// Bytes the shaper adds to every packet (24 = preamble, IFG and FCS, for line-rate accuracy).
    pub overhead_bytes: u32,
    /// Bytes the shaper may send back to back after an idle period.
    pub burst_bytes: u32,
    /// Per-queue schedule.
    pub sched: [QueueSched; QUEUES],
    /// Source address of PAUSE frames this port sends.
    pub mac: EthernetAddress,
    /// RED/ECN marking of this port's queues (`[[port]] ecn`), in place of the TM's (`None`):
    /// thresholds follow a port's rate, as the reference sets them per port.
    pub ecn: Option<[Option<Red>; QUEUES]>,
}

impl PortTmConfig {
    /// An unshaped port of `speed_bps` with the default schedule.
    pub fn new(speed_bps: u64, mac: EthernetAddress) -> Self {
        Self {
            speed_bps,
            shape_bps: 0,
            overhead_bytes: 0,
            burst_bytes: 4096,
            sched: DEFAULT_SCHED,
            mac,
            ecn: None,
        }
    }
}

/// When a lossless priority group asserts and releases PFC.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PfcThreshold {
    /// XOFF when the group's shared bytes reach `xoff`, XON when they fall to `xon`.
    Static {
        /// XOFF threshold, bytes.
        xoff: u64,
        /// XON threshold, bytes.
        xon: u64,
    },
    /// XOFF when the group's shared bytes reach α × (free shared buffer); XON when they fall
    /// `resume_offset` below that.
    Dynamic {
        /// α.
        alpha: f64,
        /// Hysteresis, bytes.
        resume_offset: u64,
    },
}

/// RED-style ECN marking of one queue at dequeue: never below `kmin` bytes, always above
/// `kmax`, with probability rising linearly to `pmax` in between.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Red {
    /// Lower threshold, bytes.
    pub kmin: u64,
    /// Upper threshold, bytes.
    pub kmax: u64,
    /// Marking probability at `kmax`.
    pub pmax: f64,
}

/// The switch-wide TM configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct TmConfig {
    /// Total packet buffer, bytes.
    pub buffer_bytes: u64,
    /// Guaranteed bytes per (ingress port, priority).
    pub reserve_bytes: u64,
    /// Headroom per (ingress port, lossless priority): absorbs what is in flight after PAUSE.
    pub headroom_bytes: u64,
    /// Priorities with PFC (bit i = priority i).
    pub lossless: u8,
    /// XOFF/XON thresholds.
    pub pfc: PfcThreshold,
    /// Quanta in the PAUSE frames sent.
    pub pause_quanta: u16,
    /// α of the lossy egress queues' dynamic threshold.
    pub egress_alpha: f64,
    /// ECN marking per queue.
    pub ecn: [Option<Red>; QUEUES],
    /// Most packets held at once (the size of the queue-entry table).
    pub max_packets: usize,
    /// Allocate every queue entry up front (the default: the data path never allocates). When
    /// false the table grows as packets are held, up to `max_packets`, so memory follows the
    /// peak occupancy — for the virtual-time lab, where a fabric has hundreds of switches and
    /// an allocation now and then costs nothing real.
    pub preallocate: bool,
    /// Seed of the ECN marking draws (reproducible runs).
    pub seed: u64,
}

impl Default for TmConfig {
    fn default() -> Self {
        Self {
            buffer_bytes: 16 << 20,
            reserve_bytes: 4096,
            headroom_bytes: 64 << 10,
            lossless: 0,
            pfc: PfcThreshold::Dynamic { alpha: 1.0 / 8.0, resume_offset: 3072 },
            pause_quanta: 0xffff,
            egress_alpha: 1.0,
            ecn: [None; QUEUES],
            max_packets: 65536,
            preallocate: true,
            seed: 1,
        }
    }
}

impl TmConfig {
    /// Bytes left for the shared pool once every reserve and headroom of `ports` ports is set
    /// aside, or why the split cannot hold.
    pub fn shared_bytes(&self, ports: usize) -> Result<u64, String> {
        let reserves = self.reserve_bytes.saturating_mul((ports * QUEUES) as u64);
        let headroom =
            self.headroom_bytes.saturating_mul((ports as u64) * u64::from(self.lossless.count_ones()));
        let set_aside = reserves.saturating_add(headroom);
        if set_aside >= self.buffer_bytes {
            return Err(format!(
                "{} ports × 8 priorities × reserve_bytes {} + {} lossless × headroom_bytes {} = {} B, not less than buffer_bytes {}",
                ports,
                self.reserve_bytes,
                ports * self.lossless.count_ones() as usize,
                self.headroom_bytes,
                set_aside,
                self.buffer_bytes
            ));
        }
        if let PfcThreshold::Static { xoff, xon } = self.pfc
            && xon > xoff
        {
            return Err(format!("XON threshold {xon} B above XOFF threshold {xoff} B"));
        }
        if self.max_packets == 0 || self.max_packets >= NIL as usize {
            return Err(format!("max_packets {} out of range", self.max_packets));
        }
        Ok(self.buffer_bytes - set_aside)
    }
}
