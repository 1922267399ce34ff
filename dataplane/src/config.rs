//! Switch configuration: one TOML file describes the ports, the traffic manager, the runtime
//! and the program's tables.
//!
//! Loading is strict: an unknown key, a malformed address or CIDR, a duplicate port, a buffer
//! split that cannot hold — each is a [`ConfigError`] naming the file, the key and what was
//! expected, found before anything starts.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use wire::EthernetAddress;

use crate::tm::{DEFAULT_SCHED, PfcThreshold, PortTmConfig, QUEUES, QueueSched, Red, TmConfig};

/// A configuration problem: the file, the key (a dotted path such as `port[1].ipv4[0]`) and
/// what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The key, or empty when the file itself is at fault.
    pub key: String,
    /// What was expected.
    pub reason: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file.display(), self.reason)
        } else {
            write!(f, "{}: {}: {}", self.file.display(), self.key, self.reason)
        }
    }
}

/// Builds [`ConfigError`]s for one file.
#[derive(Debug, Clone)]
pub struct Ctx<'a> {
    file: &'a Path,
}

impl Ctx<'_> {
    /// An error at `key`.
    pub fn err(&self, key: impl Into<String>, reason: impl Into<String>) -> ConfigError {
        ConfigError { file: self.file.to_path_buf(), key: key.into(), reason: reason.into() }
    }
}

// ---------------------------------------------------------------------------------------------
// The file as written

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    program: String,
    #[serde(default)]
    runtime: RawRuntime,
    #[serde(default)]
    tm: RawTm,
    #[serde(rename = "port", default)]
    ports: Vec<RawPort>,
    dpdk: Option<ports::port::RawDpdkConfig>,
    l2l3: Option<L2l3Section>,
    dta: Option<DtaSection>,
    dta_reporter: Option<DtaReporterSection>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRuntime {
    lcores: Option<Vec<usize>>,
    burst: Option<usize>,
    pool_buffers: Option<usize>,
    dataroom: Option<usize>,
    stats_interval_s: Option<f64>,
    control_socket: Option<PathBuf>,
    clock: Option<String>,
    max_recirc: Option<u8>,
    pfc_to_program: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTm {
    buffer_bytes: Option<u64>,
    reserve_bytes: Option<u64>,
    headroom_bytes: Option<u64>,
    lossless: Option<Vec<u8>>,
    pfc: Option<RawPfc>,
    pause_quanta: Option<u16>,
    egress_alpha: Option<f64>,
    max_packets: Option<usize>,
    seed: Option<u64>,
    #[serde(default)]
    ecn: Vec<RawEcn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, tag = "mode", rename_all = "lowercase")]
enum RawPfc {
    Static { xoff: u64, xon: u64 },
    Dynamic { alpha: f64, resume_offset: u64 },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEcn {
    queue: u8,
    kmin: u64,
    kmax: u64,
    pmax: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    name: String,
    backend: String,
    iface: Option<String>,
    device: Option<String>,
    rx: Option<PathBuf>,
    tx: Option<PathBuf>,
    bind: Option<String>,
    udp_ports: Option<Vec<u16>>,
    mac: String,
    speed: String,
    shape: Option<String>,
    overhead_bytes: Option<u32>,
    burst_bytes: Option<u32>,
    sched: Option<Vec<String>>,
    #[serde(default)]
    ipv4: Vec<String>,
}

/// The `[l2l3]` section, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2l3Section {
    /// MAC table size.
    pub mac_table_size: Option<usize>,
    /// Seconds after which a learned MAC is forgotten.
    pub mac_aging_s: Option<u64>,
    /// LPM table size.
    pub route_table_size: Option<usize>,
    /// Neighbor table size.
    pub neighbor_table_size: Option<usize>,
    /// `"dscp"` (queue = DSCP >> 3, the default) or `"pcp"` (the 802.1Q priority).
    pub qos: Option<String>,
    /// Stamp HPCC++ INT at egress with this switch ID (`wire::hpcc_int`; off when absent).
    pub int_switch_id: Option<u16>,
    /// Static MAC entries.
    #[serde(default)]
    pub static_mac: Vec<StaticMac>,
    /// Routes.
    #[serde(default)]
    pub route: Vec<RouteEntry>,
    /// Static neighbors.
    #[serde(default)]
    pub neighbor: Vec<NeighborEntry>,
}

/// The `[dta]` section of a DTA translator, as written (the program validates it).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaSection {
    /// Reports' base-header form: `"long"` (3 bytes, with sequence numbers) or `"short"`.
    pub base: Option<String>,
    /// Key-Write data bytes: 4, 12 or 28.
    pub keywrite_data_len: Option<usize>,
    /// Largest Key-Write / Key-Increment redundancy accepted (1..=8).
    pub max_redundancy: Option<u8>,
    /// Priority of short-form reports: `"low"`, `"medium"` or `"high"`.
    pub default_priority: Option<String>,
    /// UDP port reports arrive on.
    pub udp_port: Option<u16>,
    /// The translator's source address towards collectors (default: its address on the port
    /// facing each collector).
    pub source_ip: Option<String>,
    /// TM queue of the RDMA packets.
    pub queue: Option<u8>,
    /// DSCP of the RDMA packets.
    pub dscp: Option<u8>,
    /// ECN codepoint of the RDMA packets (0 Not-ECT, 1 or 2 ECT).
    pub ecn: Option<u8>,
    /// AckReq at least every this many packets per QP.
    pub ack_every: Option<u32>,
    /// Outstanding RDMA packets per QP.
    pub window: Option<u32>,
    /// Retransmission timeout, µs.
    pub timeout_us: Option<u64>,
    /// Timeouts without progress before a QP is reset and reconnected.
    pub retry_limit: Option<u8>,
    /// An unacknowledged tail older than this (µs) gets a zero-length WRITE asking for an ACK.
    pub ack_probe_us: Option<u64>,
    /// A partial Append batch is written after this long (µs).
    pub append_flush_us: Option<u64>,
    /// Least time between two NACKs for the same gap (or two slow-down messages) to one
    /// reporter, µs (default 20). A new gap is NACKed at once. Keep it under the time a reporter
    /// takes to send 128 reports: its 8-bit sequence numbers cannot name older ones.
    pub nack_interval_us: Option<u64>,
    /// Reporters whose sequence numbers are tracked.
    pub reporters: Option<usize>,
    /// High-priority reports that can wait for the rate to allow them.
    pub park: Option<usize>,
    /// CM answer timeout, ms.
    pub cm_timeout_ms: Option<u64>,
    /// First CM retry backoff, ms (doubles up to 10 s).
    pub cm_backoff_ms: Option<u64>,
    /// The collectors.
    #[serde(default)]
    pub collector: Vec<DtaCollector>,
}

/// The `[dta_reporter]` section of program `dta_reporter`, as written (the program validates
/// it): what the switch reports about the flows it forwards, and where.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaReporterSection {
    /// Collector addresses; reports are spread over them by key hash (Key-Write,
    /// Key-Increment) or list ID (Append), as every reporter and the queries compute it.
    pub collectors: Vec<String>,
    /// `"keywrite"` (flow → switch and egress port), `"keyincrement"` (flow → bytes) or
    /// `"append"` (flow keys to a list).
    pub primitive: Option<String>,
    /// `"change"` (a flow's first packet and every change of its egress port) or `"sample"`.
    pub trigger: Option<String>,
    /// For `"sample"`: one packet in this many.
    pub sample: Option<u32>,
    /// Key-Write / Key-Increment redundancy.
    pub redundancy: Option<u8>,
    /// Append list ID.
    pub list: Option<u32>,
    /// `"low"`, `"medium"` or `"high"`.
    pub priority: Option<String>,
    /// Sequence-number reports and keep them for resending after a NACK.
    pub retransmittable: Option<bool>,
    /// Retransmittable reports kept.
    pub keep: Option<usize>,
    /// Flow registers for change detection (a power of two).
    pub flows: Option<usize>,
    /// This switch's ID, in Key-Write data.
    pub switch_id: Option<u16>,
    /// Reports' source address (default: the switch's address on the port towards the
    /// collector).
    pub source_ip: Option<String>,
    /// UDP destination port of reports.
    pub udp_port: Option<u16>,
    /// UDP source port of reports.
    pub src_port: Option<u16>,
    /// TM queue of reports.
    pub queue: Option<u8>,
}

/// One `[[dta.collector]]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaCollector {
    /// Name, for logs.
    pub name: String,
    /// Address.
    pub ip: String,
    /// RDMA packets per second the translator may send it (committed rate); none: unlimited.
    pub rate: Option<u64>,
    /// Peak rate, packets per second (default: `rate`).
    pub peak: Option<u64>,
    /// Burst, packets.
    pub burst: Option<u64>,
    /// librdmacm port of its Key-Write store.
    pub keywrite: Option<u16>,
    /// librdmacm port of its Key-Increment store.
    pub keyincrement: Option<u16>,
    /// Its Postcarder store.
    pub postcarder: Option<DtaPostcarder>,
    /// Its Append lists.
    #[serde(default)]
    pub append: Vec<DtaList>,
    /// Its sketches.
    #[serde(default)]
    pub sketch: Vec<DtaSketch>,
}

/// `postcarder = { port = 1336, hops = 5, cache = 32768 }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaPostcarder {
    /// librdmacm port.
    pub port: u16,
    /// Hops per path (1..=5).
    pub hops: Option<u8>,
    /// Paths cached while their postcards arrive (a power of two).
    pub cache: Option<usize>,
}

/// `{ list = 0, port = 1338, batch = 16 }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaList {
    /// List ID.
    pub list: u32,
    /// librdmacm port.
    pub port: u16,
    /// Entries per RDMA WRITE (1, 2, 4, 8 or 16).
    pub batch: Option<u32>,
}

/// `{ id = 0, port = 1341, rows = 4, columns = 1024, reporters = [0, 1], batch = 4 }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DtaSketch {
    /// Sketch ID.
    pub id: u16,
    /// librdmacm port.
    pub port: u16,
    /// Counters per column.
    pub rows: u16,
    /// Columns.
    pub columns: u32,
    /// Reporter IDs whose copies are merged.
    pub reporters: Vec<u16>,
    /// Columns per RDMA WRITE.
    pub batch: Option<u32>,
}

/// `{ mac = "…", port = "p1" }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticMac {
    /// The address.
    pub mac: String,
    /// The port behind it.
    pub port: String,
}

/// `{ prefix = "10.0.0.0/8", via = ["10.0.1.2", …] }` (several next hops: ECMP), or
/// `{ prefix = …, port = "p1" }` for a directly connected prefix.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteEntry {
    /// Destination prefix.
    pub prefix: String,
    /// Next hops.
    #[serde(default)]
    pub via: Vec<String>,
    /// Connected on this port.
    pub port: Option<String>,
}

/// `{ ip = "…", mac = "…", port = "p1" }`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighborEntry {
    /// Address.
    pub ip: String,
    /// Its MAC.
    pub mac: String,
    /// The port it is on.
    pub port: String,
}

// ---------------------------------------------------------------------------------------------
// Resolved

/// The program a switch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramKind {
    /// L2 bridging and IPv4 routing.
    L2l3,
    /// testpmd's `macswap` forwarding: swap MACs, send out of the paired port.
    MacSwap,
    /// The DTA translator (with L2/L3 forwarding for everything else).
    DtaTranslator,
    /// L2/L3 forwarding that reports on the flows it forwards as a DTA reporter.
    DtaReporter,
}

impl ProgramKind {
    /// The name used in configuration files.
    pub const fn name(self) -> &'static str {
        match self {
            Self::L2l3 => "l2l3",
            Self::MacSwap => "macswap",
            Self::DtaTranslator => "dta_translator",
            Self::DtaReporter => "dta_reporter",
        }
    }
}

/// How a port reaches packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A Linux interface through an AF_PACKET socket.
    AfPacket {
        /// Interface name.
        iface: String,
    },
    /// Capture files: frames read from `rx`, frames sent written to `tx`.
    Pcap {
        /// Input capture.
        rx: Option<PathBuf>,
        /// Output capture.
        tx: Option<PathBuf>,
    },
    /// An in-memory ring (tests, benchmarks, the lab).
    Ring,
    /// The host's UDP stack: datagrams to `bind` on `listen` ports in, UDP frames out as
    /// datagrams (see [`crate::port::UdpPort`]).
    Udp {
        /// The port's address (the switch's address on the host).
        bind: Ipv4Addr,
        /// UDP ports received on.
        listen: Vec<u16>,
    },
    /// A DPDK ethdev: a NIC bound to a DPDK driver, or a vdev from `dpdk.eal_args`.
    Dpdk {
        /// The device's name as DPDK knows it: a PCI address (`0000:3b:00.0`), a vdev name
        /// (`net_null0`), or a port number.
        device: String,
    },
}

/// The `[dpdk]` section: how the DPDK port backend starts (shared with the collector's soft-RNIC).
pub use ports::port::DpdkConfig;

/// One port.
#[derive(Debug, Clone, PartialEq)]
pub struct PortConfig {
    /// Name, unique.
    pub name: String,
    /// Backend.
    pub backend: Backend,
    /// The port's MAC (router MAC for routing, source of PAUSE frames and ARP replies).
    pub mac: EthernetAddress,
    /// The switch's IPv4 addresses on this port, with prefix lengths.
    pub ipv4: Vec<(Ipv4Addr, u8)>,
    /// TM settings.
    pub tm: PortTmConfig,
}

/// Where the runtime's time comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// The monotonic clock.
    Realtime,
    /// The timestamps of the frames read from pcap ports (reproducible replays).
    Pcap,
}

/// Runtime settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeConfig {
    /// Cores to pin pipelines to, one pipeline each; empty: one unpinned pipeline.
    pub lcores: Vec<usize>,
    /// Burst size.
    pub burst: usize,
    /// Packet buffers per pipeline.
    pub pool_buffers: usize,
    /// Bytes per buffer after the headroom.
    pub dataroom: usize,
    /// Seconds between stats lines.
    pub stats_interval_s: f64,
    /// Unix socket for control commands, if any.
    pub control_socket: Option<PathBuf>,
    /// Clock.
    pub clock: ClockSource,
    /// Most recirculation passes.
    pub max_recirc: u8,
    /// Pass PAUSE/PFC frames to the program.
    pub pfc_to_program: bool,
}

/// A whole, validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where it was read from.
    pub file: PathBuf,
    /// The program.
    pub program: ProgramKind,
    /// Runtime.
    pub runtime: RuntimeConfig,
    /// Traffic manager.
    pub tm: TmConfig,
    /// Ports, in order: port IDs are their indices.
    pub ports: Vec<PortConfig>,
    /// The `[dpdk]` section, present when a port uses backend `"dpdk"`.
    pub dpdk: Option<DpdkConfig>,
    /// The `[l2l3]` section.
    pub l2l3: L2l3Section,
    /// The `[dta]` section (program `dta_translator`).
    pub dta: Option<DtaSection>,
    /// The `[dta_reporter]` section (program `dta_reporter`).
    pub dta_reporter: Option<DtaReporterSection>,
}

/// The section `name` that only program `owner` has: required for it, refused for any other.
fn program_section<T>(
    ctx: &Ctx<'_>,
    program: ProgramKind,
    owner: ProgramKind,
    name: &str,
    raw: Option<T>,
) -> Result<Option<T>, ConfigError> {
    match (program == owner, raw) {
        (true, None) => Err(
            ctx.err(name, format!("program {:?} needs a [{name}] section with its collectors", owner.name()))
        ),
        (true, d) => Ok(d),
        (false, Some(_)) => {
            Err(ctx.err(name, format!("a [{name}] section, but the program is {:?}", program.name())))
        }
        (false, None) => Ok(None),
    }
}

impl Config {
    /// Read and validate a file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let ctx = Ctx { file: path };
        let text = std::fs::read_to_string(path).map_err(|e| ctx.err("", format!("cannot read: {e}")))?;
        Self::parse(path, &text)
    }

    /// Validate the text of a file named `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let ctx = Ctx { file: path };
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| ctx.err("", e.to_string().trim_end().to_string()))?;
        let program = match raw.program.as_str() {
            "l2l3" => ProgramKind::L2l3,
            "macswap" => ProgramKind::MacSwap,
            "dta_translator" => ProgramKind::DtaTranslator,
            "dta_reporter" => ProgramKind::DtaReporter,
            other => {
                return Err(ctx.err(
                    "program",
                    format!(
                        "unknown program {other:?}; expected \"l2l3\", \"macswap\", \"dta_translator\" \
                         or \"dta_reporter\""
                    ),
                ));
            }
        };
        let runtime = runtime(&ctx, raw.runtime)?;
        if raw.ports.is_empty() {
            return Err(ctx.err("port", "at least one [[port]] is needed"));
        }
        let mut ports = Vec::new();
        for (i, p) in raw.ports.into_iter().enumerate() {
            let port = port(&ctx, i, p)?;
            if let Some(j) = ports.iter().position(|q: &PortConfig| q.name == port.name) {
                return Err(ctx.err(
                    format!("port[{i}].name"),
                    format!("duplicate port name {:?} (also port[{j}])", port.name),
                ));
            }
            if let Backend::AfPacket { iface } = &port.backend
                && let Some(j) = ports
                    .iter()
                    .position(|q| matches!(&q.backend, Backend::AfPacket { iface: o } if o == iface))
            {
                return Err(ctx.err(
                    format!("port[{i}].iface"),
                    format!("interface {iface:?} already used by port[{j}]"),
                ));
            }
            if let Backend::Dpdk { device } = &port.backend
                && let Some(j) = ports
                    .iter()
                    .position(|q| matches!(&q.backend, Backend::Dpdk { device: o } if o == device))
            {
                return Err(ctx.err(
                    format!("port[{i}].device"),
                    format!("DPDK device {device:?} already used by port[{j}]"),
                ));
            }
            ports.push(port);
        }
        if ports.len() >= usize::from(u16::MAX) - 2 {
            return Err(ctx.err("port", "too many ports"));
        }
        let tm = tm(&ctx, raw.tm)?;
        tm.shared_bytes(ports.len()).map_err(|e| ctx.err("tm", format!("buffer split cannot hold: {e}")))?;
        if runtime.clock == ClockSource::Pcap
            && !ports.iter().any(|p| matches!(p.backend, Backend::Pcap { rx: Some(_), .. }))
        {
            return Err(
                ctx.err("runtime.clock", "\"pcap\" needs a port with backend \"pcap\" and an rx file")
            );
        }
        let uses_dpdk = ports.iter().position(|p| matches!(p.backend, Backend::Dpdk { .. }));
        let dpdk = match (raw.dpdk, uses_dpdk) {
            (None, Some(i)) => {
                return Err(ctx.err(
                    format!("port[{i}].backend"),
                    "backend \"dpdk\" needs a [dpdk] section with eal_args",
                ));
            }
            (Some(_), None) => return Err(ctx.err("dpdk", "no port uses backend \"dpdk\"")),
            (None, None) => None,
            (Some(d), Some(_)) => Some(dpdk(&ctx, d)?),
        };
        if dpdk.is_some() {
            if !runtime.lcores.is_empty() {
                return Err(ctx.err(
                    "runtime.lcores",
                    "with DPDK ports the pipelines run on the EAL worker lcores that dpdk.eal_args \
                     gives (-l/--lcores, one pipeline per worker); leave runtime.lcores out",
                ));
            }
            if runtime.clock == ClockSource::Pcap {
                return Err(ctx.err("runtime.clock", "\"pcap\" cannot drive DPDK ports; use \"realtime\""));
            }
        }
        let l2l3 = match (program, raw.l2l3) {
            (ProgramKind::L2l3 | ProgramKind::DtaTranslator | ProgramKind::DtaReporter, s) => {
                s.unwrap_or_default()
            }
            (_, Some(_)) => {
                return Err(
                    ctx.err("l2l3", format!("a [l2l3] section, but the program is {:?}", program.name()))
                );
            }
            (_, None) => L2l3Section::default(),
        };
        let dta = program_section(&ctx, program, ProgramKind::DtaTranslator, "dta", raw.dta)?;
        let dta_reporter =
            program_section(&ctx, program, ProgramKind::DtaReporter, "dta_reporter", raw.dta_reporter)?;
        if program == ProgramKind::DtaTranslator && runtime.lcores.len() > 1 {
            return Err(ctx.err(
                "runtime.lcores",
                "the DTA translator keeps one queue pair per collector store and runs one pipeline; give one lcore",
            ));
        }
        if program == ProgramKind::DtaReporter && runtime.lcores.len() > 1 {
            return Err(ctx.err(
                "runtime.lcores",
                "the DTA reporter numbers its reports in one sequence and runs one pipeline; give one lcore",
            ));
        }
        Ok(Self { file: path.to_path_buf(), program, runtime, tm, ports, dpdk, l2l3, dta, dta_reporter })
    }

    /// Errors for this file.
    pub fn ctx(&self) -> Ctx<'_> {
        Ctx { file: &self.file }
    }

    /// The port called `name`.
    pub fn port_id(&self, name: &str) -> Option<u16> {
        self.ports.iter().position(|p| p.name == name).map(|i| i as u16)
    }
}

fn runtime(ctx: &Ctx<'_>, r: RawRuntime) -> Result<RuntimeConfig, ConfigError> {
    let burst = r.burst.unwrap_or(32);
    if !(1..=1024).contains(&burst) {
        return Err(ctx.err("runtime.burst", format!("{burst} out of range 1..=1024")));
    }
    let pool_buffers = r.pool_buffers.unwrap_or(16384);
    if pool_buffers < 2 * burst {
        return Err(ctx.err(
            "runtime.pool_buffers",
            format!("{pool_buffers}: at least twice the burst ({burst}) is needed"),
        ));
    }
    let dataroom = r.dataroom.unwrap_or(crate::buf::DEFAULT_DATAROOM);
    if !(128..=65536).contains(&dataroom) {
        return Err(ctx.err("runtime.dataroom", format!("{dataroom} out of range 128..=65536")));
    }
    let stats_interval_s = r.stats_interval_s.unwrap_or(1.0);
    if stats_interval_s.is_nan() || stats_interval_s <= 0.0 {
        return Err(ctx.err("runtime.stats_interval_s", "must be positive"));
    }
    let clock = match r.clock.as_deref().unwrap_or("realtime") {
        "realtime" => ClockSource::Realtime,
        "pcap" => ClockSource::Pcap,
        other => {
            return Err(ctx.err("runtime.clock", format!("{other:?}; expected \"realtime\" or \"pcap\"")));
        }
    };
    let cores = core_affinity::get_core_ids().map(|c| c.len()).unwrap_or(usize::MAX);
    let lcores = r.lcores.unwrap_or_default();
    for (i, &c) in lcores.iter().enumerate() {
        if c >= cores {
            return Err(ctx.err(
                format!("runtime.lcores[{i}]"),
                format!("core {c} does not exist (this machine has {cores})"),
            ));
        }
    }
    Ok(RuntimeConfig {
        lcores,
        burst,
        pool_buffers,
        dataroom,
        stats_interval_s,
        control_socket: r.control_socket,
        clock,
        max_recirc: r.max_recirc.unwrap_or(4),
        pfc_to_program: r.pfc_to_program.unwrap_or(false),
    })
}

fn dpdk(ctx: &Ctx<'_>, d: ports::port::RawDpdkConfig) -> Result<DpdkConfig, ConfigError> {
    DpdkConfig::from_raw(d).map_err(|e| ctx.err(format!("dpdk.{}", e.key), e.reason))
}

fn tm(ctx: &Ctx<'_>, r: RawTm) -> Result<TmConfig, ConfigError> {
    let d = TmConfig::default();
    let mut lossless = 0u8;
    for (i, &p) in r.lossless.unwrap_or_default().iter().enumerate() {
        if usize::from(p) >= QUEUES {
            return Err(ctx.err(format!("tm.lossless[{i}]"), format!("priority {p} out of range 0..=7")));
        }
        lossless |= 1 << p;
    }
    let pfc = match r.pfc {
        None => d.pfc,
        Some(RawPfc::Static { xoff, xon }) => PfcThreshold::Static { xoff, xon },
        Some(RawPfc::Dynamic { alpha, resume_offset }) => {
            if !(alpha > 0.0 && alpha <= 64.0) {
                return Err(ctx.err("tm.pfc.alpha", format!("{alpha} out of range (0, 64]")));
            }
            PfcThreshold::Dynamic { alpha, resume_offset }
        }
    };
    let mut ecn = [None; QUEUES];
    for (i, e) in r.ecn.iter().enumerate() {
        let key = format!("tm.ecn[{i}]");
        if usize::from(e.queue) >= QUEUES {
            return Err(ctx.err(format!("{key}.queue"), format!("queue {} out of range 0..=7", e.queue)));
        }
        if e.kmin > e.kmax {
            return Err(ctx.err(key, format!("kmin {} above kmax {}", e.kmin, e.kmax)));
        }
        if !(0.0..=1.0).contains(&e.pmax) {
            return Err(ctx.err(format!("{key}.pmax"), format!("{} is not a probability", e.pmax)));
        }
        ecn[usize::from(e.queue)] = Some(Red { kmin: e.kmin, kmax: e.kmax, pmax: e.pmax });
    }
    let egress_alpha = r.egress_alpha.unwrap_or(d.egress_alpha);
    if !(egress_alpha > 0.0 && egress_alpha <= 64.0) {
        return Err(ctx.err("tm.egress_alpha", format!("{egress_alpha} out of range (0, 64]")));
    }
    Ok(TmConfig {
        buffer_bytes: r.buffer_bytes.unwrap_or(d.buffer_bytes),
        reserve_bytes: r.reserve_bytes.unwrap_or(d.reserve_bytes),
        headroom_bytes: r.headroom_bytes.unwrap_or(d.headroom_bytes),
        lossless,
        pfc,
        pause_quanta: r.pause_quanta.unwrap_or(d.pause_quanta),
        egress_alpha,
        ecn,
        max_packets: r.max_packets.unwrap_or(d.max_packets),
        seed: r.seed.unwrap_or(d.seed),
    })
}

fn port(ctx: &Ctx<'_>, i: usize, p: RawPort) -> Result<PortConfig, ConfigError> {
    let key = |k: &str| format!("port[{i}].{k}");
    if p.name.is_empty() {
        return Err(ctx.err(key("name"), "empty"));
    }
    let backend = match p.backend.as_str() {
        "af_packet" => Backend::AfPacket {
            iface: p
                .iface
                .clone()
                .ok_or_else(|| ctx.err(key("iface"), "backend \"af_packet\" needs an interface"))?,
        },
        "pcap" => {
            if p.rx.is_none() && p.tx.is_none() {
                return Err(ctx.err(key("rx"), "backend \"pcap\" needs an rx file, a tx file or both"));
            }
            Backend::Pcap { rx: p.rx.clone(), tx: p.tx.clone() }
        }
        "ring" => Backend::Ring,
        "udp" => {
            let bind = p
                .bind
                .as_deref()
                .ok_or_else(|| ctx.err(key("bind"), "backend \"udp\" needs a bind address"))?;
            let bind: Ipv4Addr = bind.parse().ok().filter(|a: &Ipv4Addr| !a.is_unspecified()).ok_or_else(|| {
                ctx.err(key("bind"), format!("{bind:?} is not a unicast IPv4 address of this host"))
            })?;
            let listen = p.udp_ports.clone().unwrap_or_default();
            if listen.is_empty() {
                return Err(ctx.err(key("udp_ports"), "backend \"udp\" needs the UDP ports it receives on"));
            }
            Backend::Udp { bind, listen }
        }
        "dpdk" => Backend::Dpdk {
            device: p.device.clone().filter(|d| !d.is_empty()).ok_or_else(|| {
                ctx.err(
                    key("device"),
                    "backend \"dpdk\" needs a device: a PCI address, a vdev name from dpdk.eal_args, or a port number",
                )
            })?,
        },
        other => {
            return Err(ctx.err(
                key("backend"),
                format!("unknown backend {other:?}; expected \"af_packet\", \"pcap\", \"ring\", \"udp\" or \"dpdk\""),
            ));
        }
    };
    if p.iface.is_some() && !matches!(backend, Backend::AfPacket { .. }) {
        return Err(ctx.err(key("iface"), format!("only for backend \"af_packet\", not {:?}", p.backend)));
    }
    if (p.bind.is_some() || p.udp_ports.is_some()) && !matches!(backend, Backend::Udp { .. }) {
        return Err(ctx.err(
            key("bind"),
            format!("bind and udp_ports are only for backend \"udp\", not {:?}", p.backend),
        ));
    }
    if p.device.is_some() && !matches!(backend, Backend::Dpdk { .. }) {
        return Err(ctx.err(key("device"), format!("only for backend \"dpdk\", not {:?}", p.backend)));
    }
    let mac = EthernetAddress::parse(&p.mac).ok_or_else(|| {
        ctx.err(key("mac"), format!("{:?} is not a MAC address (aa:bb:cc:dd:ee:ff)", p.mac))
    })?;
    let speed_bps = parse_rate(&p.speed).ok_or_else(|| {
        ctx.err(key("speed"), format!("{:?} is not a rate (e.g. \"10G\", \"400M\", \"100000000\")", p.speed))
    })?;
    let shape_bps = match &p.shape {
        None => 0,
        Some(s) => parse_rate(s)
            .ok_or_else(|| ctx.err(key("shape"), format!("{s:?} is not a rate (e.g. \"10G\")")))?,
    };
    let mut sched = DEFAULT_SCHED;
    if let Some(s) = &p.sched {
        if s.len() != QUEUES {
            return Err(ctx.err(key("sched"), format!("{} entries; expected one per queue (8)", s.len())));
        }
        for (q, e) in s.iter().enumerate() {
            sched[q] = parse_sched(e).ok_or_else(|| {
                ctx.err(
                    format!("port[{i}].sched[{q}]"),
                    format!("{e:?}; expected \"strict:<level>\" or \"dwrr:<weight>\""),
                )
            })?;
        }
    }
    let mut ipv4 = Vec::new();
    for (j, c) in p.ipv4.iter().enumerate() {
        let cidr = parse_cidr(c).map_err(|why| {
            ctx.err(format!("port[{i}].ipv4[{j}]"), format!("{c:?} is not an IPv4 CIDR: {why}"))
        })?;
        ipv4.push(cidr);
    }
    let mut tm = PortTmConfig::new(speed_bps, mac);
    tm.shape_bps = shape_bps;
    tm.sched = sched;
    if let Some(o) = p.overhead_bytes {
        tm.overhead_bytes = o;
    }
    if let Some(b) = p.burst_bytes {
        tm.burst_bytes = b;
    }
    Ok(PortConfig { name: p.name, backend, mac, ipv4, tm })
}

/// Parse a rate: `10G`, `25g`, `400M`, `1.5G`, `100K` or plain bits per second.
pub fn parse_rate(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'G' | 'g') => (&s[..i], 1e9),
        (i, 'M' | 'm') => (&s[..i], 1e6),
        (i, 'K' | 'k') => (&s[..i], 1e3),
        _ => (s, 1.0),
    };
    let v: f64 = num.trim().parse().ok()?;
    let bps = v * mult;
    (1.0..=1e15).contains(&bps).then_some(bps.round() as u64)
}

/// Parse `a.b.c.d/len` (host bits allowed, as for an interface address).
pub fn parse_cidr(s: &str) -> Result<(Ipv4Addr, u8), &'static str> {
    let (a, l) = s.split_once('/').ok_or("missing /prefix-length")?;
    let addr: Ipv4Addr = a.trim().parse().map_err(|_| "bad address")?;
    let len: u8 = l.trim().parse().map_err(|_| "bad prefix length")?;
    if len > 32 {
        return Err("prefix length above 32");
    }
    Ok((addr, len))
}

fn parse_sched(s: &str) -> Option<QueueSched> {
    let (kind, n) = s.split_once(':')?;
    match kind {
        "strict" => Some(QueueSched::Strict(n.parse().ok()?)),
        "dwrr" => {
            let w: u32 = n.parse().ok()?;
            (1..=1000).contains(&w).then_some(QueueSched::Dwrr(w))
        }
        _ => None,
    }
}

/// A rate as the configuration writes it: `100G`, `400M`, or bits per second (`unshaped` for 0).
pub fn rate_str(bps: u64) -> String {
    match bps {
        0 => "unshaped".into(),
        b if b % 1_000_000_000 == 0 => format!("{}G", b / 1_000_000_000),
        b if b % 1_000_000 == 0 => format!("{}M", b / 1_000_000),
        b => format!("{b}"),
    }
}

impl fmt::Display for Config {
    /// The resolved configuration, every default filled in.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# resolved from {}", self.file.display())?;
        writeln!(f, "program = {:?}", self.program.name())?;
        let r = &self.runtime;
        writeln!(f, "\n[runtime]")?;
        writeln!(f, "lcores = {:?}", r.lcores)?;
        writeln!(f, "burst = {}\npool_buffers = {}\ndataroom = {}", r.burst, r.pool_buffers, r.dataroom)?;
        writeln!(f, "stats_interval_s = {}", r.stats_interval_s)?;
        if let Some(s) = &r.control_socket {
            writeln!(f, "control_socket = {:?}", s.display().to_string())?;
        }
        writeln!(
            f,
            "clock = {:?}",
            match r.clock {
                ClockSource::Realtime => "realtime",
                ClockSource::Pcap => "pcap",
            }
        )?;
        writeln!(f, "max_recirc = {}\npfc_to_program = {}", r.max_recirc, r.pfc_to_program)?;
        let t = &self.tm;
        writeln!(f, "\n[tm]")?;
        writeln!(
            f,
            "buffer_bytes = {}\nreserve_bytes = {}\nheadroom_bytes = {}",
            t.buffer_bytes, t.reserve_bytes, t.headroom_bytes
        )?;
        let lossless: Vec<usize> = (0..QUEUES).filter(|q| t.lossless & (1 << q) != 0).collect();
        writeln!(f, "lossless = {lossless:?}")?;
        match t.pfc {
            PfcThreshold::Static { xoff, xon } => {
                writeln!(f, "pfc = {{ mode = \"static\", xoff = {xoff}, xon = {xon} }}")?
            }
            PfcThreshold::Dynamic { alpha, resume_offset } => writeln!(
                f,
                "pfc = {{ mode = \"dynamic\", alpha = {alpha}, resume_offset = {resume_offset} }}"
            )?,
        }
        writeln!(
            f,
            "pause_quanta = {}\negress_alpha = {}\nmax_packets = {}\nseed = {}",
            t.pause_quanta, t.egress_alpha, t.max_packets, t.seed
        )?;
        writeln!(f, "shared_bytes = {} # derived", t.shared_bytes(self.ports.len()).unwrap_or(0))?;
        for (q, e) in t.ecn.iter().enumerate() {
            if let Some(e) = e {
                writeln!(
                    f,
                    "ecn = [{{ queue = {q}, kmin = {}, kmax = {}, pmax = {} }}]",
                    e.kmin, e.kmax, e.pmax
                )?;
            }
        }
        if let Some(d) = &self.dpdk {
            write!(f, "\n{d}")?;
        }
        for (i, p) in self.ports.iter().enumerate() {
            writeln!(f, "\n[[port]] # id {i}")?;
            writeln!(f, "name = {:?}", p.name)?;
            match &p.backend {
                Backend::AfPacket { iface } => writeln!(f, "backend = \"af_packet\"\niface = {iface:?}")?,
                Backend::Pcap { rx, tx } => {
                    writeln!(f, "backend = \"pcap\"")?;
                    if let Some(rx) = rx {
                        writeln!(f, "rx = {:?}", rx.display().to_string())?;
                    }
                    if let Some(tx) = tx {
                        writeln!(f, "tx = {:?}", tx.display().to_string())?;
                    }
                }
                Backend::Ring => writeln!(f, "backend = \"ring\"")?,
                Backend::Udp { bind, listen } => {
                    writeln!(f, "backend = \"udp\"\nbind = \"{bind}\"\nudp_ports = {listen:?}")?
                }
                Backend::Dpdk { device } => writeln!(f, "backend = \"dpdk\"\ndevice = {device:?}")?,
            }
            writeln!(f, "mac = \"{}\"", p.mac)?;
            writeln!(
                f,
                "speed = \"{}\"\nshape = \"{}\"",
                rate_str(p.tm.speed_bps),
                rate_str(p.tm.shape_bps)
            )?;
            writeln!(f, "overhead_bytes = {}\nburst_bytes = {}", p.tm.overhead_bytes, p.tm.burst_bytes)?;
            let sched: Vec<String> =
                p.tm.sched
                    .iter()
                    .map(|s| match s {
                        QueueSched::Strict(l) => format!("strict:{l}"),
                        QueueSched::Dwrr(w) => format!("dwrr:{w}"),
                    })
                    .collect();
            writeln!(f, "sched = {sched:?}")?;
            let ips: Vec<String> = p.ipv4.iter().map(|(a, l)| format!("{a}/{l}")).collect();
            writeln!(f, "ipv4 = {ips:?}")?;
        }
        let l = &self.l2l3;
        if matches!(self.program, ProgramKind::L2l3 | ProgramKind::DtaTranslator | ProgramKind::DtaReporter) {
            writeln!(f, "\n[l2l3]")?;
            writeln!(
                f,
                "mac_table_size = {}",
                l.mac_table_size.unwrap_or(crate::programs::l2l3::DEFAULT_MAC_TABLE)
            )?;
            writeln!(
                f,
                "mac_aging_s = {}",
                l.mac_aging_s.unwrap_or(crate::programs::l2l3::DEFAULT_MAC_AGING_S)
            )?;
            writeln!(
                f,
                "route_table_size = {}",
                l.route_table_size.unwrap_or(crate::programs::l2l3::DEFAULT_ROUTES)
            )?;
            writeln!(
                f,
                "neighbor_table_size = {}",
                l.neighbor_table_size.unwrap_or(crate::programs::l2l3::DEFAULT_NEIGHBORS)
            )?;
            writeln!(f, "qos = {:?}", l.qos.as_deref().unwrap_or("dscp"))?;
            for m in &l.static_mac {
                writeln!(f, "static_mac = [{{ mac = {:?}, port = {:?} }}]", m.mac, m.port)?;
            }
            for r in &l.route {
                writeln!(
                    f,
                    "route = [{{ prefix = {:?}, via = {:?}, port = {:?} }}]",
                    r.prefix, r.via, r.port
                )?;
            }
            for n in &l.neighbor {
                writeln!(f, "neighbor = [{{ ip = {:?}, mac = {:?}, port = {:?} }}]", n.ip, n.mac, n.port)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
program = "l2l3"
[[port]]
name = "p0"
backend = "ring"
mac = "02:00:00:00:00:01"
speed = "10G"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "p1"
backend = "ring"
mac = "02:00:00:00:00:02"
speed = "25G"
shape = "1G"
"#;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("switch.toml"), text)
    }

    #[test]
    fn good_config_resolves() {
        let c = parse(GOOD).unwrap();
        assert_eq!(c.ports.len(), 2);
        assert_eq!(c.ports[1].tm.speed_bps, 25_000_000_000);
        assert_eq!(c.ports[1].tm.shape_bps, 1_000_000_000);
        assert_eq!(c.ports[0].ipv4, [(Ipv4Addr::new(10, 0, 1, 1), 24)]);
        let shown = c.to_string();
        assert!(shown.contains("shared_bytes = ") && shown.contains("speed = \"25G\""), "{shown}");
        // The resolved form is itself a configuration that resolves to the same thing.
        assert!(shown.contains("[[port]] # id 1"));
    }

    #[test]
    fn errors_name_file_key_and_reason() {
        let cases = [
            (GOOD.replace("speed = \"10G\"", "speed = \"10G\"\ncolour = 1"), "unknown field `colour`"),
            (
                GOOD.replace("10.0.1.1/24", "10.0.1.1/33"),
                "switch.toml: port[0].ipv4[0]: \"10.0.1.1/33\" is not an IPv4 CIDR: prefix length above 32",
            ),
            (
                GOOD.replace("name = \"p1\"", "name = \"p0\""),
                "switch.toml: port[1].name: duplicate port name \"p0\" (also port[0])",
            ),
            (
                GOOD.replace("02:00:00:00:00:02", "02:00:00:00:00"),
                "port[1].mac: \"02:00:00:00:00\" is not a MAC address",
            ),
            (GOOD.replace("\"25G\"", "\"fast\""), "port[1].speed"),
            (
                GOOD.replace(
                    "program = \"l2l3\"",
                    "program = \"l2l3\"\n[tm]\nbuffer_bytes = 1000\nlossless = [3]",
                ),
                "switch.toml: tm: buffer split cannot hold",
            ),
            (
                GOOD.replace("program = \"l2l3\"", "program = \"l3\""),
                "switch.toml: program: unknown program \"l3\"",
            ),
            (
                GOOD.replace(
                    "backend = \"ring\"\nmac = \"02:00:00:00:00:01\"",
                    "backend = \"af_packet\"\nmac = \"02:00:00:00:00:01\"",
                ),
                "port[0].iface: backend \"af_packet\" needs an interface",
            ),
        ];
        for (text, want) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} does not contain {want:?}");
            assert!(e.starts_with("switch.toml"), "{e}");
        }
    }

    #[test]
    fn rates_and_macs() {
        assert_eq!(parse_rate("100G"), Some(100_000_000_000));
        assert_eq!(parse_rate("1.5g"), Some(1_500_000_000));
        assert_eq!(parse_rate("400M"), Some(400_000_000));
        assert_eq!(parse_rate("12345"), Some(12345));
        assert_eq!(parse_rate("0"), None);
        assert_eq!(parse_rate("G"), None);
        assert_eq!(parse_cidr("10.0.0.0"), Err("missing /prefix-length"));
    }
}
