//! `config/collector.toml`: where the soft-RNIC listens and the data structures it exposes.
//!
//! ```toml
//! [collector]
//! ip = "127.0.0.51"        # RoCEv2 arrives on this address, UDP 4791
//! icrc = true              # check the ICRC (false: like a NIC whose ICRC check is disabled)
//! memory = "auto"          # "hugepages", "pages" or "auto" (hugepages if the system has them)
//! backend = "soft-rnic"    # or "verbs": a real RoCEv2 NIC through rdma-core (feature `verbs`)
//! interface = "veth-c"     # soft-RNIC only: take frames from this interface (AF_PACKET, root)
//!                          # instead of the host's UDP socket
//! # device = "0000:3b:00.0" # soft-RNIC only, or: a DPDK ethdev (PCI address, vdev, port number)
//! #                        # with a [dpdk] section (eal_args, mbufs, rings) as the switch has
//!
//! [keywrite]               # one store per primitive; each is a librdmacm port
//! port = 1337
//! slots = 1048576          # a power of two
//! data = 4                 # bytes of data per slot: 4, 12 or 28
//! redundancy = 2           # N: copies a query checks
//! hash = "independent"     # how copies choose slots: "independent" (each copy its own CRC
//!                          # polynomial) or "reference" (the reference's CRC(key ‖ n)); the
//!                          # translator's [dta] key_hash must say the same
//!
//! [[append]]
//! list = 0
//! port = 1340
//! entries = 65536
//! ```
//!
//! Every error names the file, the key and what was expected.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use wire::dta::{KeyHashMode, layout};

/// A configuration error: file, key, reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {key}: {reason}")]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The key (`keywrite.slots`, `append[1].entries`).
    pub key: String,
    /// What was wrong and what was expected.
    pub reason: String,
}

/// Where registered memory comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    /// Hugepages when the system has them reserved, regular pages (with a warning) otherwise.
    Auto,
    /// Hugepages or fail.
    Hugepages,
    /// Regular pages.
    Pages,
}

/// What serves the stores' memory to the translator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// The soft-RNIC: RoCEv2 over a UDP socket, for hosts without an RDMA NIC.
    #[default]
    SoftRnic,
    /// A RoCEv2 NIC through rdma-core (librdmacm, libibverbs): needs the `verbs` feature.
    Verbs,
}

/// What a store holds, with its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Key-Write: `slots` slots of checksum + `data_len` bytes; queries check `redundancy`
    /// copies.
    KeyWrite {
        /// Slots (a power of two).
        slots: u64,
        /// Data bytes per slot.
        data_len: usize,
        /// N.
        redundancy: u8,
        /// How copies choose their slots.
        hash: KeyHashMode,
    },
    /// Key-Increment: `slots` 64-bit counters; a query takes the minimum of `redundancy`.
    KeyIncrement {
        /// Slots (a power of two).
        slots: u64,
        /// N.
        redundancy: u8,
        /// How copies choose their slots.
        hash: KeyHashMode,
    },
    /// Postcarder: `slots` 32-byte paths.
    Postcarder {
        /// Slots (a power of two).
        slots: u64,
    },
    /// One Append list: a ring of `entries` 4-byte entries.
    Append {
        /// List ID.
        list: u32,
        /// Ring entries.
        entries: u64,
    },
    /// One sketch: `columns` × `rows` 32-bit counters.
    Sketch {
        /// Sketch ID.
        id: u16,
        /// Rows (counters per column).
        rows: u16,
        /// Columns.
        columns: u32,
    },
}

impl StoreKind {
    /// Bytes of its region.
    pub fn bytes(&self) -> u64 {
        match *self {
            // Saturating: a size past u64 is refused by the store-size check, never wrapped to a
            // small one (`slots = 2^61` once passed as 0 bytes).
            Self::KeyWrite { slots, data_len, .. } => {
                slots.saturating_mul(layout::keywrite_slot_len(data_len) as u64)
            }
            Self::KeyIncrement { slots, .. } => slots.saturating_mul(layout::KEYINCREMENT_SLOT_LEN as u64),
            Self::Postcarder { slots } => slots.saturating_mul(layout::POSTCARDER_SLOT_LEN as u64),
            Self::Append { entries, .. } => entries.saturating_mul(layout::APPEND_ENTRY_LEN as u64),
            Self::Sketch { rows, columns, .. } => u64::from(columns) * u64::from(rows) * 4,
        }
    }

    /// Its name in logs and queries: `keywrite`, `append[3]`, `sketch[9]`.
    pub fn name(&self) -> String {
        match self {
            Self::KeyWrite { .. } => "keywrite".into(),
            Self::KeyIncrement { .. } => "keyincrement".into(),
            Self::Postcarder { .. } => "postcarder".into(),
            Self::Append { list, .. } => format!("append[{list}]"),
            Self::Sketch { id, .. } => format!("sketch[{id}]"),
        }
    }
}

/// One exposed data structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreConfig {
    /// What it holds.
    pub kind: StoreKind,
    /// The librdmacm port a translator connects to for it.
    pub port: u16,
    /// The VA it is exposed at (default: where it is mapped).
    pub va: Option<u64>,
}

/// Where the soft-RNIC receives RoCEv2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attach {
    /// The host's UDP socket on `ip:udp_port` (batched receive): no root, no setup.
    Udp,
    /// Whole frames from an interface through AF_PACKET (`collector.interface`; root).
    AfPacket {
        /// The interface.
        interface: String,
    },
    /// Whole frames from a DPDK ethdev (`collector.device` and `[dpdk]`; feature `dpdk`).
    Dpdk {
        /// The device: a PCI address, a vdev from `dpdk.eal_args`, or a port number.
        device: String,
        /// The EAL arguments, mempool and rings.
        dpdk: ports::port::DpdkConfig,
    },
}

/// The whole collector configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectorConfig {
    /// The address RoCEv2 arrives on.
    pub ip: Ipv4Addr,
    /// The UDP port (4791).
    pub udp_port: u16,
    /// Check the ICRC.
    pub icrc: bool,
    /// Memory kind.
    pub memory: MemoryKind,
    /// What serves the memory.
    pub backend: Backend,
    /// Where the soft-RNIC takes its packets from.
    pub attach: Attach,
    /// Seed for QPNs, PSNs and R_Keys (vary it between restarts; default from the clock).
    pub seed: Option<u32>,
    /// The stores.
    pub stores: Vec<StoreConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    collector: RawCollector,
    dpdk: Option<ports::port::RawDpdkConfig>,
    keywrite: Option<RawKeyed>,
    keyincrement: Option<RawKeyed>,
    postcarder: Option<RawKeyed>,
    #[serde(default)]
    append: Vec<RawAppend>,
    #[serde(default)]
    sketch: Vec<RawSketch>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCollector {
    ip: String,
    udp_port: Option<u16>,
    icrc: Option<bool>,
    memory: Option<String>,
    backend: Option<String>,
    interface: Option<String>,
    device: Option<String>,
    seed: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKeyed {
    port: u16,
    slots: Option<u64>,
    data: Option<usize>,
    redundancy: Option<u8>,
    hash: Option<String>,
    va: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAppend {
    list: u32,
    port: u16,
    entries: Option<u64>,
    va: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSketch {
    id: u16,
    port: u16,
    rows: u16,
    columns: u32,
    va: Option<u64>,
}

/// Largest store: the metadata SEND carries a 32-bit length.
const MAX_STORE_BYTES: u64 = u32::MAX as u64;

impl CollectorConfig {
    /// Read and check `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = ports::input::read_text(path, ports::input::MAX_TEXT_BYTES).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            key: "-".into(),
            reason: e.to_string(),
        })?;
        Self::parse(path, &text)
    }

    /// Check `text`, read from `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let err =
            |key: &str, reason: String| ConfigError { file: path.to_path_buf(), key: key.into(), reason };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let (line, key) = ports::input::toml_location(text, e.span());
            let key = if key.is_empty() { "-".to_string() } else { key };
            let at = if line == 0 { String::new() } else { format!(" (line {line})") };
            err(&key, format!("{}{at}", e.message().trim_end()))
        })?;
        let c = &raw.collector;
        let ip: Ipv4Addr =
            c.ip.parse()
                .ok()
                .filter(|a: &Ipv4Addr| !a.is_unspecified() && !a.is_broadcast() && !a.is_multicast())
                .ok_or_else(|| {
                    err("collector.ip", format!("{:?} is not a unicast IPv4 address of this host", c.ip))
                })?;
        let memory = match c.memory.as_deref().unwrap_or("auto") {
            "auto" => MemoryKind::Auto,
            "hugepages" => MemoryKind::Hugepages,
            "pages" => MemoryKind::Pages,
            other => {
                return Err(err(
                    "collector.memory",
                    format!("{other:?}: expected \"auto\", \"hugepages\" or \"pages\""),
                ));
            }
        };
        let backend = match c.backend.as_deref().unwrap_or("soft-rnic") {
            "soft-rnic" => Backend::SoftRnic,
            "verbs" => Backend::Verbs,
            other => {
                return Err(err(
                    "collector.backend",
                    format!("{other:?}: expected \"soft-rnic\" or \"verbs\""),
                ));
            }
        };
        let attach = match (&c.interface, &c.device) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "collector.device",
                    "give the soft-RNIC one of `interface` (AF_PACKET) and `device` (DPDK), not both".into(),
                ));
            }
            (Some(i), None) => {
                if i.is_empty() || i.len() > 15 || i.contains(['/', ' ']) {
                    return Err(err("collector.interface", format!("{i:?} is not an interface name")));
                }
                Attach::AfPacket { interface: i.clone() }
            }
            (None, Some(d)) => {
                if d.is_empty() || d.contains('\0') {
                    return Err(err("collector.device", format!("{d:?} is not a DPDK device name")));
                }
                let raw = raw.dpdk.clone().ok_or_else(|| {
                    err("collector.device", "a DPDK device needs a [dpdk] section with eal_args".into())
                })?;
                let dpdk = ports::port::DpdkConfig::from_raw(raw)
                    .map_err(|e| err(&format!("dpdk.{}", e.key), e.reason))?;
                Attach::Dpdk { device: d.clone(), dpdk }
            }
            (None, None) => Attach::Udp,
        };
        if raw.dpdk.is_some() && !matches!(attach, Attach::Dpdk { .. }) {
            return Err(err("dpdk", "only for a soft-RNIC on a DPDK device (collector.device)".into()));
        }
        if backend == Backend::Verbs && attach != Attach::Udp {
            let key = if c.interface.is_some() { "collector.interface" } else { "collector.device" };
            return Err(err(
                key,
                "the verbs backend receives through its NIC: `interface` and `device` are for the soft-RNIC"
                    .into(),
            ));
        }
        let mut stores = Vec::new();
        let pow2 = |key: &str, v: Option<u64>| -> Result<u64, ConfigError> {
            let v = v.ok_or_else(|| err(key, "missing: the number of slots, a power of two".into()))?;
            if v == 0 || !v.is_power_of_two() {
                return Err(err(key, format!("{v} is not a power of two (the slot hash is masked)")));
            }
            Ok(v)
        };
        let redundancy = |key: &str, v: Option<u8>| -> Result<u8, ConfigError> {
            match v.unwrap_or(2) {
                n @ 1..=8 => Ok(n),
                n => Err(err(key, format!("{n}: expected 1 to 8 copies"))),
            }
        };
        let hash = |key: &str, v: &Option<String>| -> Result<KeyHashMode, ConfigError> {
            match v.as_deref() {
                None => Ok(KeyHashMode::default()),
                Some(s) => KeyHashMode::parse(s)
                    .ok_or_else(|| err(key, format!("{s:?}: expected \"independent\" or \"reference\""))),
            }
        };
        if let Some(k) = &raw.keywrite {
            let data_len = k.data.unwrap_or(4);
            if ![4, 12, 28].contains(&data_len) {
                return Err(err("keywrite.data", format!("{data_len}: expected 4, 12 or 28 bytes")));
            }
            let kind = StoreKind::KeyWrite {
                slots: pow2("keywrite.slots", k.slots)?,
                data_len,
                redundancy: redundancy("keywrite.redundancy", k.redundancy)?,
                hash: hash("keywrite.hash", &k.hash)?,
            };
            stores.push(("keywrite".to_string(), StoreConfig { kind, port: k.port, va: k.va }));
        }
        if let Some(k) = &raw.keyincrement {
            if k.data.is_some() {
                return Err(err("keyincrement.data", "counters are 8 bytes; no data size here".into()));
            }
            let kind = StoreKind::KeyIncrement {
                slots: pow2("keyincrement.slots", k.slots)?,
                redundancy: redundancy("keyincrement.redundancy", k.redundancy)?,
                hash: hash("keyincrement.hash", &k.hash)?,
            };
            stores.push(("keyincrement".to_string(), StoreConfig { kind, port: k.port, va: k.va }));
        }
        if let Some(k) = &raw.postcarder {
            if k.data.is_some() || k.redundancy.is_some() || k.hash.is_some() {
                return Err(err("postcarder", "only port, slots and va apply".into()));
            }
            let kind = StoreKind::Postcarder { slots: pow2("postcarder.slots", k.slots)? };
            stores.push(("postcarder".to_string(), StoreConfig { kind, port: k.port, va: k.va }));
        }
        let mut lists = HashMap::new();
        for (i, a) in raw.append.iter().enumerate() {
            let key = format!("append[{i}]");
            if let Some(j) = lists.insert(a.list, i) {
                return Err(err(&format!("{key}.list"), format!("list {} is also append[{j}]", a.list)));
            }
            let entries = a.entries.ok_or_else(|| {
                err(&format!("{key}.entries"), "missing: the list's size in 4-byte entries".into())
            })?;
            if entries == 0 {
                return Err(err(&format!("{key}.entries"), "0: a list needs at least one entry".into()));
            }
            stores.push((
                key,
                StoreConfig { kind: StoreKind::Append { list: a.list, entries }, port: a.port, va: a.va },
            ));
        }
        let mut ids = HashMap::new();
        for (i, s) in raw.sketch.iter().enumerate() {
            let key = format!("sketch[{i}]");
            if let Some(j) = ids.insert(s.id, i) {
                return Err(err(&format!("{key}.id"), format!("sketch {} is also sketch[{j}]", s.id)));
            }
            if s.rows == 0 || s.columns == 0 {
                return Err(err(&key, "rows and columns must be at least 1".into()));
            }
            let kind = StoreKind::Sketch { id: s.id, rows: s.rows, columns: s.columns };
            stores.push((key, StoreConfig { kind, port: s.port, va: s.va }));
        }
        if stores.is_empty() {
            return Err(err(
                "-",
                "no store: configure keywrite, keyincrement, postcarder, append or sketch".into(),
            ));
        }
        let mut ports = HashMap::new();
        for (key, s) in &stores {
            if s.port == 0 {
                return Err(err(&format!("{key}.port"), "0: expected a librdmacm port".into()));
            }
            if let Some(other) = ports.insert(s.port, key.clone()) {
                return Err(err(&format!("{key}.port"), format!("port {} is also {other}'s", s.port)));
            }
            if s.kind.bytes() > MAX_STORE_BYTES {
                // The size comes from these keys: name them.
                let of = match s.kind {
                    StoreKind::Sketch { .. } => "rows × columns",
                    StoreKind::Append { .. } => "entries",
                    _ => "slots",
                };
                return Err(err(
                    &format!("{key}.{}", of.split(' ').next().unwrap_or(of)),
                    format!(
                        "{of} make {} bytes: more than the 4 GiB - 1 a 32-bit metadata length can announce",
                        s.kind.bytes()
                    ),
                ));
            }
            if let Some(va) = s.va
                && (va % 8 != 0 || va.checked_add(s.kind.bytes()).is_none())
            {
                return Err(err(
                    &format!("{key}.va"),
                    format!("{va:#x}: expected an 8-byte aligned address"),
                ));
            }
        }
        // Explicit VAs must not overlap.
        for (i, (ka, a)) in stores.iter().enumerate() {
            for (kb, b) in &stores[i + 1..] {
                if let (Some(va), Some(vb)) = (a.va, b.va)
                    && va < vb + b.kind.bytes()
                    && vb < va + a.kind.bytes()
                {
                    return Err(err(
                        &format!("{kb}.va"),
                        format!(
                            "region {vb:#x}..{:#x} overlaps {ka}'s {va:#x}..{:#x}",
                            vb + b.kind.bytes(),
                            va + a.kind.bytes()
                        ),
                    ));
                }
            }
        }
        // The stores are registered memory, allocated at start: together they must fit in the
        // memory there is (`check` refuses what `serve` could not allocate).
        let total: u128 = stores.iter().map(|(_, s)| u128::from(s.kind.bytes())).sum();
        if let Err(why) = ports::input::fits_in_memory(total)
            && let Some((key, _)) = stores.iter().max_by_key(|(_, s)| s.kind.bytes())
        {
            return Err(err(key, format!("the {} stores together: {why}", stores.len())));
        }
        Ok(Self {
            ip,
            udp_port: match c.udp_port.unwrap_or(wire::udp::port::ROCE_V2) {
                0 => {
                    return Err(err(
                        "collector.udp_port",
                        "0: expected the UDP port RoCEv2 arrives on (4791)".into(),
                    ));
                }
                p => p,
            },
            icrc: c.icrc.unwrap_or(true),
            memory,
            backend,
            attach,
            seed: c.seed,
            stores: stores.into_iter().map(|(_, s)| s).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[collector]\nip = \"127.0.0.51\"\n";

    fn parse(extra: &str) -> Result<CollectorConfig, ConfigError> {
        CollectorConfig::parse(Path::new("c.toml"), &format!("{BASE}{extra}"))
    }

    #[test]
    fn a_full_config_parses_with_defaults() {
        let c = parse(
            "[keywrite]\nport = 1337\nslots = 1024\n[keyincrement]\nport = 1339\nslots = 64\nredundancy = 3\n\
             [postcarder]\nport = 1336\nslots = 16\n[[append]]\nlist = 0\nport = 1340\nentries = 100\n\
             [[sketch]]\nid = 9\nport = 1350\nrows = 2\ncolumns = 8\n",
        )
        .unwrap();
        assert_eq!(
            (c.udp_port, c.icrc, c.memory, c.backend),
            (4791, true, MemoryKind::Auto, Backend::SoftRnic)
        );
        assert_eq!(c.stores.len(), 5);
        assert_eq!(
            c.stores[0].kind,
            StoreKind::KeyWrite { slots: 1024, data_len: 4, redundancy: 2, hash: KeyHashMode::Independent }
        );
        assert_eq!(c.stores[0].kind.bytes(), 8192);
        assert_eq!(
            c.stores[1].kind,
            StoreKind::KeyIncrement { slots: 64, redundancy: 3, hash: KeyHashMode::Independent }
        );
        assert_eq!(c.stores[3].kind.bytes(), 400);
        assert_eq!(c.stores[4].kind.bytes(), 64);
    }

    #[test]
    fn the_example_config_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/collector.toml");
        let c = CollectorConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.ip, Ipv4Addr::new(127, 0, 0, 51));
        assert_eq!(c.stores.len(), 6);
    }

    /// The soft-RNIC's attachment: UDP by default, AF_PACKET with `interface`, DPDK with
    /// `device` and `[dpdk]`; every inconsistent combination names its key.
    #[test]
    fn where_the_soft_rnic_attaches() {
        let with = |collector: &str, rest: &str| {
            CollectorConfig::parse(
                Path::new("c.toml"),
                &format!(
                    "[collector]\nip = \"10.0.0.1\"\n{collector}\n{rest}\n[keywrite]\nport = 1\nslots = 2\n"
                ),
            )
        };
        assert_eq!(with("", "").unwrap().attach, Attach::Udp);
        assert_eq!(
            with("interface = \"veth0\"", "").unwrap().attach,
            Attach::AfPacket { interface: "veth0".into() }
        );
        let dpdk = "[dpdk]\neal_args = [\"-l\", \"0-1\"]\nrx_ring = 512";
        let Attach::Dpdk { device, dpdk: d } = with("device = \"0000:3b:00.0\"", dpdk).unwrap().attach else {
            panic!("not DPDK")
        };
        assert_eq!((device.as_str(), d.rx_ring, d.tx_ring, d.mbufs), ("0000:3b:00.0", 512, 1024, 16383));
        let key = |c: &str, r: &str| with(c, r).unwrap_err().key;
        assert_eq!(key("device = \"net_null0\"", ""), "collector.device");
        assert_eq!(key("device = \"net_null0\"\ninterface = \"veth0\"", dpdk), "collector.device");
        assert_eq!(key("", dpdk), "dpdk");
        assert_eq!(key("interface = \"veth0\"", dpdk), "dpdk");
        assert_eq!(key("device = \"net_null0\"", "[dpdk]\neal_args = []\nmbufs = 12"), "dpdk.mbufs");
        assert_eq!(key("device = \"net_null0\"", "[dpdk]\neal_args = []\nqueues = 2"), "dpdk.queues");
        assert_eq!(key("backend = \"verbs\"\ndevice = \"net_null0\"", dpdk), "collector.device");
        assert_eq!(key("backend = \"verbs\"\ninterface = \"veth0\"", ""), "collector.interface");
    }

    #[test]
    fn errors_name_file_key_and_reason() {
        // A duplicate key names its key and line.
        let e = parse("[keywrite]\nport = 1337\nport = 1338\nslots = 64\n").unwrap_err();
        assert_eq!(e.key, "keywrite.port");
        assert!(e.reason.contains("duplicate") && e.reason.contains("line"), "{e}");
        // Sizes past u64 are refused, not wrapped to nothing.
        let e = parse("[keywrite]\nport = 1337\nslots = 2305843009213693952\n").unwrap_err();
        assert_eq!(e.key, "keywrite.slots");
        let e = parse("[[append]]\nlist = 0\nport = 1340\nentries = 4611686018427387904\n").unwrap_err();
        assert_eq!(e.key, "append[0].entries");
        let e = parse("[keywrite]\nport = 1337\nslots = 1000\n").unwrap_err();
        assert_eq!((e.file.to_str().unwrap(), e.key.as_str()), ("c.toml", "keywrite.slots"));
        assert!(e.reason.contains("not a power of two"), "{e}");
        let e = parse("[[append]]\nlist = 0\nport = 1340\n").unwrap_err();
        assert_eq!(e.key, "append[0].entries");
        assert!(e.reason.contains("size"), "{e}");
        let e = parse(
            "[keywrite]\nport = 1337\nslots = 1024\nva = 0x10000\n[[append]]\nlist = 0\nport = 1340\nentries = 16\nva = 0x11000\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "append[0].va");
        assert!(e.reason.contains("overlaps keywrite"), "{e}");
        let e =
            parse("[keywrite]\nport = 1337\nslots = 1024\n[[append]]\nlist = 0\nport = 1337\nentries = 4\n")
                .unwrap_err();
        assert_eq!(e.key, "append[0].port");
        let e = parse("[keywrite]\nport = 1337\nslots = 1024\ndata = 5\n").unwrap_err();
        assert_eq!(e.key, "keywrite.data");
        let e = parse("[keywrite]\nport = 1337\nslotz = 4\n").unwrap_err();
        assert_eq!(e.key, "keywrite.slotz", "{e}");
        let e = CollectorConfig::parse(
            Path::new("c.toml"),
            "[collector]\nip = \"0.0.0.0\"\n[keywrite]\nport = 1\nslots = 2\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "collector.ip");
        let e = CollectorConfig::parse(
            Path::new("c.toml"),
            "[collector]\nip = \"10.0.0.1\"\nbackend = \"mlx5\"\n[keywrite]\nport = 1\nslots = 2\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "collector.backend");
        assert!(e.reason.contains("\"soft-rnic\" or \"verbs\""), "{e}");
        let e = parse("").unwrap_err();
        assert!(e.reason.contains("no store"), "{e}");
    }
}
