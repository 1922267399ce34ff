//! Switch configuration: one TOML file describes the ports, the traffic manager, the runtime
//! and the program's tables.
//!
//! The generic part — ports, traffic manager, runtime, DPDK — is validated here; every other
//! top-level section belongs to the program (`[l2l3]`, `[dta]`, …): the registry
//! ([`crate::programs::PROGRAMS`]) says which sections each program owns, a section no program of
//! this file owns is refused, and the program deserializes its own with [`Config::section`].
//!
//! Loading is strict: an unknown key, a malformed address or CIDR, a duplicate port, a buffer
//! split that cannot hold — each is a [`ConfigError`] naming the file, the key and what was
//! expected, found before anything starts.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use wire::EthernetAddress;

use crate::programs::{self, ProgramInfo};
use crate::tm::{PortTmConfig, TmConfig};

mod raw;
mod show;

use raw::{RawConfig, dpdk, port, runtime, tm};
pub use raw::{parse_cidr, parse_rate, rate_str};

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
    /// Fault injection: the share of frames the port loses each way, at random (0: none).
    pub inject_loss: f64,
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
    /// A pipeline whose loop found nothing to receive or send sleeps, at most this long (µs),
    /// until a frame arrives on one of its socket ports, its next tick or its next shaped
    /// transmission (OVS's `pmd-sleep-max`): for a switch sharing its cores with hosts. 0 (the
    /// default) busy-polls. Only where every port has a descriptor to wait on (AF_PACKET), 16
    /// ports at most.
    pub idle_sleep_max_us: u64,
}

/// A whole, validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where it was read from.
    pub file: PathBuf,
    /// The program's name, one the registry knows ([`crate::programs::PROGRAMS`]).
    pub program: String,
    /// Runtime.
    pub runtime: RuntimeConfig,
    /// Traffic manager.
    pub tm: TmConfig,
    /// Ports, in order: port IDs are their indices.
    pub ports: Vec<PortConfig>,
    /// The `[dpdk]` section, present when a port uses backend `"dpdk"`.
    pub dpdk: Option<DpdkConfig>,
    /// The file's text: the program deserializes its own sections from it ([`Config::section`]).
    text: String,
}

impl Config {
    /// Read and validate a file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let ctx = Ctx { file: path };
        let text = ports::input::read_text(path, ports::input::MAX_TEXT_BYTES)
            .map_err(|e| ctx.err("", e.to_string()))?;
        Self::parse(path, &text)
    }

    /// Validate the text of a file named `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let ctx = Ctx { file: path };
        let raw: RawConfig = toml::from_str(text).map_err(|e| toml_err(&ctx, text, "", &e))?;
        let program = programs::find(&raw.program).ok_or_else(|| {
            let names: Vec<String> = programs::PROGRAMS.iter().map(|p| format!("{:?}", p.name)).collect();
            ctx.err(
                "program",
                format!("unknown program {:?}; expected one of {}", raw.program, names.join(", ")),
            )
        })?;
        check_sections(&ctx, program, &raw.sections)?;
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
        check_capture_files(&ctx, &ports)?;
        check_subnets(&ctx, &ports)?;
        let tm = tm(&ctx, raw.tm)?;
        tm.shared_bytes(ports.len()).map_err(|e| ctx.err("tm", format!("buffer split cannot hold: {e}")))?;
        // What every pipeline allocates up front — its buffer pool and the TM's descriptors —
        // times the pipelines, against the memory there is.
        let pipelines = runtime.lcores.len().max(1) as u128;
        let pool = runtime.pool_buffers as u128 * (runtime.dataroom as u128 + 256);
        let descriptors = if tm.preallocate { tm.max_packets as u128 * 64 } else { 0 };
        if let Err(why) = ports::input::fits_in_memory(pipelines * (pool + descriptors)) {
            let key = if pool >= descriptors { "runtime.pool_buffers" } else { "tm.max_packets" };
            return Err(ctx.err(
                key,
                format!(
                    "{} pipeline(s) of {} buffers of {} bytes and {} queue descriptors: {why}",
                    pipelines, runtime.pool_buffers, runtime.dataroom, tm.max_packets
                ),
            ));
        }
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
        if let Some(why) = program.single_pipeline
            && runtime.lcores.len() > 1
        {
            return Err(ctx.err("runtime.lcores", format!("{why} and runs one pipeline; give one lcore")));
        }
        Ok(Self {
            file: path.to_path_buf(),
            program: program.name.to_string(),
            runtime,
            tm,
            ports,
            dpdk,
            text: text.to_string(),
        })
    }

    /// The program's section `name` (`[l2l3]`, `[dta]`, …), deserialized from the file as
    /// written, so an error names the line and the key; `None` when the file has none.
    pub fn section<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, ConfigError> {
        let ctx = self.ctx();
        let de = toml::Deserializer::parse(&self.text).map_err(|e| toml_err(&ctx, &self.text, "", &e))?;
        serde::Deserializer::deserialize_map(de, raw::Pick::<T>::new(name))
            .map_err(|e| toml_err(&ctx, &self.text, name, &e))
    }

    /// What the registry knows of this file's program.
    pub fn program_info(&self) -> &'static ProgramInfo {
        programs::find(&self.program).expect("Config::parse accepted only a registered program")
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

/// A TOML error as a [`ConfigError`]: the key it is about (found from its position in `text`;
/// `section` when nothing more precise is known), its message, and its line and column.
fn toml_err(ctx: &Ctx<'_>, text: &str, section: &str, e: &toml::de::Error) -> ConfigError {
    let (line, key) = ports::input::toml_location(text, e.span());
    let key = if key.is_empty() { section.to_string() } else { key };
    let at = match e.span() {
        Some(s) => {
            let col = s.start.min(text.len())
                - text[..s.start.min(text.len())].rfind('\n').map_or(0, |i| i + 1)
                + 1;
            format!(" (line {line}, column {col})")
        }
        None => String::new(),
    };
    ctx.err(key, format!("{}{at}", e.message().trim_end()))
}

/// A program's own UDP port (`udp_port` of `[dta]`, `[dta_reporter]`, `[daiet]`), checked for
/// the ports it cannot be: 0 (no port), RoCEv2's 4791 (the switch's RDMA traffic), and the
/// `also` a program reserves besides (DTA's NACK port).
pub fn program_udp_port(
    ctx: &Ctx<'_>,
    key: &str,
    port: Option<u16>,
    default: u16,
    also: &[(u16, &str)],
) -> Result<u16, ConfigError> {
    let p = port.unwrap_or(default);
    let reserved = [(0, "no port"), (wire::udp::port::ROCE_V2, "RoCEv2's")];
    match reserved.iter().chain(also).find(|(r, _)| *r == p) {
        Some((_, what)) => Err(ctx.err(key, format!("{p}: reserved ({what})"))),
        None => Ok(p),
    }
}

/// Whether `path` starts with a pcap file's magic number (either byte order, µs or ns).
fn is_capture(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
        && [0xa1b2_c3d4u32, 0xa1b2_3c4d].iter().any(|m| magic == m.to_le_bytes() || magic == m.to_be_bytes())
}

/// No two port addresses in one subnet: a subnet is reached through one port, and two ports
/// claiming it leave the switch to guess (the same address twice is the same mistake).
fn check_subnets(ctx: &Ctx<'_>, ports: &[PortConfig]) -> Result<(), ConfigError> {
    let mask = |l: u8| if l == 0 { 0 } else { u32::MAX << (32 - u32::from(l)) };
    let mut seen: Vec<(usize, usize, Ipv4Addr, u8)> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        for (j, &(a, l)) in p.ipv4.iter().enumerate() {
            if let Some(&(pi, pj, b, m)) = seen.iter().find(|&&(_, _, b, m)| {
                let k = mask(l.min(m));
                a.to_bits() & k == b.to_bits() & k
            }) {
                return Err(ctx.err(
                    format!("port[{i}].ipv4[{j}]"),
                    format!("{a}/{l} overlaps port[{pi}].ipv4[{pj}] ({b}/{m}): one subnet, one port"),
                ));
            }
            seen.push((i, j, a, l));
        }
    }
    Ok(())
}

/// The pcap ports' files: every `rx` a capture that can be read, every `tx` somewhere a capture
/// can be written, and no file both read and written, or written by two ports (the input would
/// be destroyed as the replay starts, or two outputs interleaved).
fn check_capture_files(ctx: &Ctx<'_>, ports: &[PortConfig]) -> Result<(), ConfigError> {
    // Two names of one file are one file: compare what they resolve to where they exist.
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    let mut seen: Vec<(usize, &str, &Path)> = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let Backend::Pcap { rx, tx } = &p.backend else { continue };
        for (what, p) in [("rx", rx), ("tx", tx)] {
            if let Some(p) = p {
                ports::input::path_fits(p).map_err(|why| ctx.err(format!("port[{i}].{what}"), why))?;
            }
        }
        if let Some(rx) = rx {
            match std::fs::metadata(rx) {
                Ok(m) if m.is_file() && is_capture(rx) => {}
                Ok(m) if m.is_file() => {
                    return Err(ctx.err(
                        format!("port[{i}].rx"),
                        format!(
                            "{}: not a pcap capture (its first bytes are no pcap magic number)",
                            rx.display()
                        ),
                    ));
                }
                Ok(_) => {
                    return Err(
                        ctx.err(format!("port[{i}].rx"), format!("{}: not a regular file", rx.display()))
                    );
                }
                Err(e) => {
                    return Err(
                        ctx.err(format!("port[{i}].rx"), format!("{}: cannot read: {e}", rx.display()))
                    );
                }
            }
            if let Some((j, _, _)) = seen.iter().find(|(_, w, q)| *w == "tx" && same(q, rx)) {
                return Err(ctx.err(
                    format!("port[{i}].rx"),
                    format!(
                        "{} is also port[{j}].tx: a capture cannot be both read and written",
                        rx.display()
                    ),
                ));
            }
            seen.push((i, "rx", rx));
        }
        if let Some(tx) = tx {
            if tx.as_os_str().is_empty() {
                return Err(ctx.err(format!("port[{i}].tx"), "empty: a file to write the capture to"));
            }
            if tx.is_dir() {
                return Err(
                    ctx.err(format!("port[{i}].tx"), format!("{}: a directory, not a file", tx.display()))
                );
            }
            let dir = tx.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !dir.is_dir() {
                return Err(ctx.err(
                    format!("port[{i}].tx"),
                    format!("{}: its directory does not exist", tx.display()),
                ));
            }
            if let Some((j, what, _)) = seen.iter().find(|(_, _, q)| same(q, tx)) {
                return Err(ctx.err(
                    format!("port[{i}].tx"),
                    format!("{} is also port[{j}].{what}: a capture cannot be both read and written, or written twice", tx.display()),
                ));
            }
            seen.push((i, "tx", tx));
        }
    }
    Ok(())
}

/// Every top-level section that is not the generic part must be one `program` owns.
fn check_sections(
    ctx: &Ctx<'_>,
    program: &ProgramInfo,
    sections: &std::collections::BTreeMap<String, raw::Shape>,
) -> Result<(), ConfigError> {
    for (name, value) in sections {
        if program.sections.contains(&name.as_str()) {
            continue;
        }
        let owner = programs::PROGRAMS.iter().find(|p| p.sections.contains(&name.as_str()));
        return Err(match (owner, value.is_table) {
            (Some(_), true) => {
                ctx.err(name.as_str(), format!("a [{name}] section, but the program is {:?}", program.name))
            }
            _ => ctx.err(
                name.as_str(),
                format!(
                    "unknown key; expected program, runtime, tm, port, dpdk{}",
                    program.sections.iter().map(|s| format!(", {s}")).collect::<String>()
                ),
            ),
        });
    }
    Ok(())
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
            (
                GOOD.replace(
                    "program = \"l2l3\"",
                    "program = \"l2l3\"\n[runtime]\nidle_sleep_max_us = 20000",
                ),
                "switch.toml: runtime.idle_sleep_max_us: 20000 out of range 0..=10000 (µs; 0 busy-polls)",
            ),
            // Addresses no port can have, and two ports in one subnet.
            (
                GOOD.replace("02:00:00:00:00:01", "01:00:5e:00:00:01"),
                "port[0].mac: 01:00:5e:00:00:01 cannot be a port's MAC",
            ),
            (
                GOOD.replace("10.0.1.1/24", "0.0.0.0/0"),
                "port[0].ipv4[0]: \"0.0.0.0/0\" cannot be a port's address",
            ),
            (GOOD.replace("10.0.1.1/24", "10.0.1.0/24"), "the network or broadcast address"),
            (GOOD.replace("10.0.1.1/24", "224.0.0.1/24"), "not a unicast address"),
            (
                GOOD.replace("speed = \"25G\"", "speed = \"25G\"\nipv4 = [\"10.0.1.9/16\"]"),
                "port[1].ipv4[0]: 10.0.1.9/16 overlaps port[0].ipv4[0]",
            ),
            // Pipelines on one core twice, and a control socket run could not open.
            (
                GOOD.replace("program = \"l2l3\"", "program = \"l2l3\"\n[runtime]\nlcores = [0, 0]"),
                "runtime.lcores[1]: core 0 is listed twice",
            ),
            (
                GOOD.replace("program = \"l2l3\"", "program = \"l2l3\"\n[runtime]\ncontrol_socket = \"/\""),
                "runtime.control_socket: control socket /: the path exists and is not a socket",
            ),
        ];
        for (text, want) in cases {
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} does not contain {want:?}");
            assert!(e.starts_with("switch.toml"), "{e}");
        }
    }

    #[test]
    fn sections_belong_to_the_program() {
        // Another program's section, an unknown key at the top, a wrong key inside a section.
        let e = parse(&format!("{GOOD}[dta]\nudp_port = 1\n")).unwrap_err().to_string();
        assert_eq!(e, "switch.toml: dta: a [dta] section, but the program is \"l2l3\"");
        let e = parse(&format!("colour = 1\n{GOOD}")).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "switch.toml: colour: unknown key; expected program, runtime, tm, port, dpdk, l2l3"
            ),
            "{e}"
        );
        let c = parse(&format!("{GOOD}[l2l3]\nmac_table_size = 64\nroutes = []\n")).unwrap();
        let e = c.section::<toml::Table>("l2l3").map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(e, Ok(()), "any table deserializes");
        let e = crate::programs::build::<crate::buf::PktBuf>(&c).err().unwrap().to_string();
        assert!(
            e.contains("switch.toml: l2l3.routes:")
                && e.contains("unknown field `routes`")
                && e.contains("line 17"),
            "{e}"
        );
        // A number past i64 in a program's section names its key (it was "line 1, column 1").
        let c = parse(&format!("{GOOD}[l2l3]\nmac_table_size = 18446744073709551615\n")).unwrap();
        let e = crate::programs::build::<crate::buf::PktBuf>(&c).err().unwrap().to_string();
        assert!(e.starts_with("switch.toml: l2l3.mac_table_size: 18446744073709551615 out of range"), "{e}");
        // The program's own section, resolved by the program.
        let c = parse(&format!("{GOOD}[l2l3]\nmac_table_size = 64\n")).unwrap();
        let shown = crate::programs::resolved(&c).unwrap();
        assert!(shown.contains("[l2l3]\nmac_table_size = 64\nmac_aging_s = 300"), "{shown}");
        assert_eq!(c.program_info().sections, ["l2l3"]);
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
