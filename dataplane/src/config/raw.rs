//! The configuration file as written, and the checks that turn each generic section into its
//! resolved form.

use std::marker::PhantomData;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use wire::EthernetAddress;

use super::{Backend, ClockSource, ConfigError, Ctx, DpdkConfig, PortConfig, RuntimeConfig};
use crate::tm::{DEFAULT_SCHED, PfcThreshold, PortTmConfig, QUEUES, QueueSched, Red, TmConfig};

/// Most packets a TM may hold (`[tm] max_packets`): 2^24 descriptors are about 1 GiB.
const MAX_TM_PACKETS: usize = 1 << 24;
/// Most buffers in a pipeline's pool (`[runtime] pool_buffers`); the memory there is bounds
/// the product of pools and pipelines further ([`super::Config::parse`]).
const MAX_POOL_BUFFERS: usize = 1 << 24;

/// The generic part of a configuration file; every other top-level key lands in `sections` (the
/// program's, checked against the registry).
#[derive(Debug, Deserialize)]
pub(super) struct RawConfig {
    pub(super) program: String,
    #[serde(default)]
    pub(super) runtime: RawRuntime,
    #[serde(default)]
    pub(super) tm: RawTm,
    #[serde(rename = "port", default)]
    pub(super) ports: Vec<RawPort>,
    pub(super) dpdk: Option<ports::port::RawDpdkConfig>,
    /// The program's sections, by name and shape only: each is read, with its positions, by
    /// the program ([`super::Config::section`]). Not kept as TOML values: a number past i64 in
    /// one would fail here, where serde's buffering has lost where it was.
    #[serde(flatten)]
    pub(super) sections: std::collections::BTreeMap<String, Shape>,
}

/// Whether a value is a table, and nothing else about it (any value is accepted).
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) is_table: bool,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Shape;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Shape { is_table: true })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Shape { is_table: false })
            }
            fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
                Ok(Shape { is_table: false })
            }
            fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
                Ok(Shape { is_table: false })
            }
            fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
                Ok(Shape { is_table: false })
            }
            fn visit_i128<E>(self, _: i128) -> Result<Shape, E> {
                Ok(Shape { is_table: false })
            }
            fn visit_u128<E>(self, _: u128) -> Result<Shape, E> {
                Ok(Shape { is_table: false })
            }
            fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
                Ok(Shape { is_table: false })
            }
            fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
                Ok(Shape { is_table: false })
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRuntime {
    lcores: Option<Vec<usize>>,
    burst: Option<usize>,
    pool_buffers: Option<usize>,
    dataroom: Option<usize>,
    stats_interval_s: Option<f64>,
    control_socket: Option<PathBuf>,
    clock: Option<String>,
    max_recirc: Option<u8>,
    pfc_to_program: Option<bool>,
    idle_sleep_max_us: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTm {
    buffer_bytes: Option<u64>,
    reserve_bytes: Option<u64>,
    headroom_bytes: Option<u64>,
    lossless: Option<Vec<u8>>,
    pfc: Option<RawPfc>,
    pause_quanta: Option<u16>,
    egress_alpha: Option<f64>,
    max_packets: Option<usize>,
    preallocate: Option<bool>,
    seed: Option<u64>,
    #[serde(default)]
    ecn: Vec<RawEcn>,
}

/// `pfc = { mode = "static", xoff, xon }` or `{ mode = "dynamic", alpha, resume_offset }`: a
/// plain struct, not a tagged enum, so that an error in a field keeps its position (a tagged
/// enum is buffered first, and its errors point at the whole table).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPfc {
    mode: String,
    xoff: Option<u64>,
    xon: Option<u64>,
    alpha: Option<f64>,
    resume_offset: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEcn {
    queue: u8,
    kmin: u64,
    kmax: u64,
    pmax: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPort {
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
    inject_loss: Option<f64>,
    ecn: Option<Vec<RawEcn>>,
}

/// Deserializes one top-level section of a file and skips the rest: how a program reads its
/// own section with the file's line numbers in its errors.
pub(super) struct Pick<'a, T> {
    name: &'a str,
    _t: PhantomData<T>,
}

impl<'a, T> Pick<'a, T> {
    pub(super) fn new(name: &'a str) -> Self {
        Self { name, _t: PhantomData }
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for Pick<'_, T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a table with an optional [{}] section", self.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut out = None;
        while let Some(k) = map.next_key::<String>()? {
            if k == self.name {
                out = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(out)
    }
}

pub(super) fn runtime(ctx: &Ctx<'_>, r: RawRuntime) -> Result<RuntimeConfig, ConfigError> {
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
    if pool_buffers > MAX_POOL_BUFFERS {
        return Err(ctx.err(
            "runtime.pool_buffers",
            format!("{pool_buffers} out of range {}..={MAX_POOL_BUFFERS}", 2 * burst),
        ));
    }
    let stats_interval_s = r.stats_interval_s.unwrap_or(1.0);
    if !(0.001..=86_400.0).contains(&stats_interval_s) {
        return Err(ctx.err(
            "runtime.stats_interval_s",
            format!("{stats_interval_s} out of range 0.001..=86400 (seconds)"),
        ));
    }
    let clock = match r.clock.as_deref().unwrap_or("realtime") {
        "realtime" => ClockSource::Realtime,
        "pcap" => ClockSource::Pcap,
        other => {
            return Err(ctx.err("runtime.clock", format!("{other:?}; expected \"realtime\" or \"pcap\"")));
        }
    };
    let idle_sleep_max_us = r.idle_sleep_max_us.unwrap_or(0);
    if idle_sleep_max_us > 10_000 {
        return Err(ctx.err(
            "runtime.idle_sleep_max_us",
            format!("{idle_sleep_max_us} out of range 0..=10000 (µs; 0 busy-polls)"),
        ));
    }
    let cores = core_affinity::get_core_ids().map(|c| c.len()).unwrap_or(usize::MAX);
    let lcores = r.lcores.unwrap_or_default();
    for (i, &c) in lcores.iter().enumerate() {
        if c >= cores {
            return Err(ctx.err(
                format!("runtime.lcores[{i}]"),
                format!("core {c} does not exist (this machine has {cores})"),
            ));
        }
        if lcores[..i].contains(&c) {
            return Err(ctx.err(
                format!("runtime.lcores[{i}]"),
                format!("core {c} is listed twice (each entry is a pipeline pinned to its own core)"),
            ));
        }
    }
    if let Some(p) = &r.control_socket {
        // What the runtime would refuse: a path that cannot be a socket (a file there is never
        // removed), one whose directory is missing, one past the 107 bytes of a socket address.
        // One another dataplane answers on is for `run` to refuse, not `check`.
        let bad = if p.as_os_str().is_empty() {
            Some("empty".to_string())
        } else if let Err(why) = ports::input::path_fits(p) {
            Some(why)
        } else if p.as_os_str().len() > 107 {
            Some(format!("{} bytes; a Unix socket path has at most 107", p.as_os_str().len()))
        } else {
            match crate::runtime::control::usable(p) {
                Ok(()) | Err(crate::runtime::control::ControlError::InUse(_)) => None,
                Err(e) => Some(e.to_string()),
            }
        };
        if let Some(why) = bad {
            return Err(ctx.err("runtime.control_socket", why));
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
        idle_sleep_max_us,
        pfc_to_program: r.pfc_to_program.unwrap_or(false),
    })
}

pub(super) fn dpdk(ctx: &Ctx<'_>, d: ports::port::RawDpdkConfig) -> Result<DpdkConfig, ConfigError> {
    DpdkConfig::from_raw(d).map_err(|e| ctx.err(format!("dpdk.{}", e.key), e.reason))
}

pub(super) fn tm(ctx: &Ctx<'_>, r: RawTm) -> Result<TmConfig, ConfigError> {
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
        Some(RawPfc { mode, xoff, xon, alpha, resume_offset }) => {
            match (mode.as_str(), xoff, xon, alpha, resume_offset) {
                ("static", Some(xoff), Some(xon), None, None) => {
                    if xon > xoff {
                        return Err(ctx.err("tm.pfc.xon", format!("{xon} above xoff {xoff}")));
                    }
                    PfcThreshold::Static { xoff, xon }
                }
                ("dynamic", None, None, Some(alpha), Some(resume_offset)) => {
                    if !(alpha > 0.0 && alpha <= 64.0) {
                        return Err(ctx.err("tm.pfc.alpha", format!("{alpha} out of range (0, 64]")));
                    }
                    PfcThreshold::Dynamic { alpha, resume_offset }
                }
                ("static", ..) => {
                    return Err(
                        ctx.err("tm.pfc", "mode \"static\" takes xoff and xon (bytes), and nothing else")
                    );
                }
                ("dynamic", ..) => {
                    return Err(ctx.err(
                        "tm.pfc",
                        "mode \"dynamic\" takes alpha and resume_offset (bytes), and nothing else",
                    ));
                }
                (m, ..) => {
                    return Err(ctx.err("tm.pfc.mode", format!("{m:?}; expected \"static\" or \"dynamic\"")));
                }
            }
        }
    };
    let ecn = ecn_table(ctx, "tm.ecn", &r.ecn)?;
    let egress_alpha = r.egress_alpha.unwrap_or(d.egress_alpha);
    if !(egress_alpha > 0.0 && egress_alpha <= 64.0) {
        return Err(ctx.err("tm.egress_alpha", format!("{egress_alpha} out of range (0, 64]")));
    }
    // The TM allocates a descriptor per packet it may hold, up front unless `preallocate = false`.
    let max_packets = r.max_packets.unwrap_or(d.max_packets);
    if !(1..=MAX_TM_PACKETS).contains(&max_packets) {
        return Err(ctx.err(
            "tm.max_packets",
            format!(
                "{max_packets} out of range 1..={MAX_TM_PACKETS} (a descriptor each is allocated up front)"
            ),
        ));
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
        max_packets,
        preallocate: r.preallocate.unwrap_or(d.preallocate),
        seed: r.seed.unwrap_or(d.seed),
    })
}

/// RED/ECN marking per queue from `ecn = [{ queue, kmin, kmax, pmax }, …]` at `key`.
fn ecn_table(ctx: &Ctx<'_>, key: &str, raw: &[RawEcn]) -> Result<[Option<Red>; QUEUES], ConfigError> {
    let mut ecn = [None; QUEUES];
    for (i, e) in raw.iter().enumerate() {
        let key = format!("{key}[{i}]");
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
    Ok(ecn)
}

pub(super) fn port(ctx: &Ctx<'_>, i: usize, p: RawPort) -> Result<PortConfig, ConfigError> {
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
            if listen.contains(&0) {
                return Err(ctx.err(key("udp_ports"), "port 0: not a port one can receive on"));
            }
            if let Some(d) = listen.iter().enumerate().find_map(|(i, p)| listen[..i].contains(p).then_some(*p)) {
                return Err(ctx.err(key("udp_ports"), format!("port {d} is listed twice")));
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
    if mac.0[0] & 1 != 0 || mac.0 == [0; 6] {
        return Err(
            ctx.err(key("mac"), format!("{mac} cannot be a port's MAC (multicast, broadcast or zero)"))
        );
    }
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
        port_address(cidr).map_err(|why| ctx.err(format!("port[{i}].ipv4[{j}]"), format!("{c:?} {why}")))?;
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
    if let Some(e) = &p.ecn {
        tm.ecn = Some(ecn_table(ctx, &key("ecn"), e)?);
    }
    let inject_loss = p.inject_loss.unwrap_or(0.0);
    if !(0.0..1.0).contains(&inject_loss) {
        return Err(ctx.err(key("inject_loss"), format!("{inject_loss} out of range 0 <= p < 1")));
    }
    if inject_loss > 0.0 && matches!(backend, Backend::Dpdk { .. }) {
        return Err(ctx.err(key("inject_loss"), "fault injection is not available on backend \"dpdk\""));
    }
    Ok(PortConfig { name: p.name, backend, mac, ipv4, tm, inject_loss })
}

/// Why `(addr, len)` cannot be a port's address: a prefix of 0 (the whole Internet), an address
/// that is no host's (0.0.0.0, broadcast, multicast), or its subnet's network or broadcast
/// address.
fn port_address((a, len): (Ipv4Addr, u8)) -> Result<(), String> {
    if len == 0 {
        return Err("cannot be a port's address: a /0 subnet is every address".into());
    }
    if a.is_unspecified() || a.is_broadcast() || a.is_multicast() {
        return Err("cannot be a port's address: not a unicast address".into());
    }
    if len <= 30 {
        let host = a.to_bits() & (u32::MAX >> len);
        if host == 0 || host == u32::MAX >> len {
            return Err(format!(
                "cannot be a port's address: the network or broadcast address of its /{len}"
            ));
        }
    }
    Ok(())
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
