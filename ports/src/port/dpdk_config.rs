//! The `[dpdk]` section every softfabric program with DPDK ports reads (the switch, the
//! collector's soft-RNIC): EAL arguments, mempool and ring sizes. Compiled with or without
//! DPDK, so configurations parse and are checked the same everywhere.

use serde::Deserialize;

/// The `[dpdk]` section as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDpdkConfig {
    /// Arguments for `rte_eal_init`.
    pub eal_args: Vec<String>,
    /// Mbufs in each socket's mempool.
    pub mbufs: Option<u32>,
    /// Per-lcore mempool cache.
    pub mbuf_cache: Option<u32>,
    /// Receive descriptors per queue.
    pub rx_ring: Option<u16>,
    /// Transmit descriptors per queue.
    pub tx_ring: Option<u16>,
    /// Promiscuous mode.
    pub promiscuous: Option<bool>,
    /// RSS over the queues.
    pub rss: Option<bool>,
}

/// DPDK settings, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpdkConfig {
    /// Arguments for `rte_eal_init`, as on a DPDK application's command line before `--`.
    pub eal_args: Vec<String>,
    /// Mbufs in each socket's mempool.
    pub mbufs: u32,
    /// Per-lcore mempool cache.
    pub mbuf_cache: u32,
    /// Receive descriptors per queue.
    pub rx_ring: u16,
    /// Transmit descriptors per queue.
    pub tx_ring: u16,
    /// Put every DPDK port in promiscuous mode.
    pub promiscuous: bool,
    /// Spread received flows over the pipelines with RSS (one rx queue per pipeline).
    pub rss: bool,
}

/// A value of the `[dpdk]` section that cannot be used: the key under `dpdk.` and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dpdk.{key}: {reason}")]
pub struct DpdkConfigError {
    /// The key, relative to the section (`mbufs`, `eal_args[2]`).
    pub key: String,
    /// What is wrong and what is expected.
    pub reason: String,
}

impl DpdkConfig {
    /// Check `raw` and fill in the defaults (16383 mbufs, cache 256, rings of 1024,
    /// promiscuous, RSS).
    pub fn from_raw(raw: RawDpdkConfig) -> Result<Self, DpdkConfigError> {
        let err = |key: String, reason: String| DpdkConfigError { key, reason };
        if let Some((i, a)) = raw.eal_args.iter().enumerate().find(|(_, a)| a.is_empty() || a.contains('\0'))
        {
            return Err(err(format!("eal_args[{i}]"), format!("{a:?} is not an argument")));
        }
        if raw.eal_args.len() > 256 {
            return Err(err("eal_args".into(), format!("{} arguments: at most 256", raw.eal_args.len())));
        }
        if let Some((i, a)) = raw.eal_args.iter().enumerate().find(|(_, a)| a.len() > 4096) {
            return Err(err(
                format!("eal_args[{i}]"),
                format!("{} bytes: an argument of at most 4096", a.len()),
            ));
        }
        let mbufs = raw.mbufs.unwrap_or(16383);
        if mbufs < 1024 {
            return Err(err("mbufs".into(), format!("{mbufs}: at least 1024 are needed to fill the rings")));
        }
        // Each mbuf is about 2.3 KB (its 2 KiB of data room, headroom and header), allocated at
        // start, per socket.
        if let Err(why) = crate::input::fits_in_memory(u128::from(mbufs) * 2304) {
            return Err(err("mbufs".into(), format!("{mbufs} mbufs: {why}")));
        }
        let mbuf_cache = raw.mbuf_cache.unwrap_or(256);
        if mbuf_cache > 512 {
            return Err(err("mbuf_cache".into(), format!("{mbuf_cache} above DPDK's limit of 512")));
        }
        let ring = |key: &str, v: Option<u16>| -> Result<u16, DpdkConfigError> {
            let v = v.unwrap_or(1024);
            if !v.is_power_of_two() || !(64..=16384).contains(&v) {
                return Err(err(key.into(), format!("{v}: a power of two in 64..=16384")));
            }
            Ok(v)
        };
        Ok(Self {
            rx_ring: ring("rx_ring", raw.rx_ring)?,
            tx_ring: ring("tx_ring", raw.tx_ring)?,
            eal_args: raw.eal_args,
            mbufs,
            mbuf_cache,
            promiscuous: raw.promiscuous.unwrap_or(true),
            rss: raw.rss.unwrap_or(true),
        })
    }
}

impl std::fmt::Display for DpdkConfig {
    /// The section as TOML, every value explicit.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "[dpdk]")?;
        writeln!(f, "eal_args = {:?}", self.eal_args)?;
        writeln!(f, "mbufs = {}\nmbuf_cache = {}", self.mbufs, self.mbuf_cache)?;
        writeln!(f, "rx_ring = {}\ntx_ring = {}", self.rx_ring, self.tx_ring)?;
        writeln!(f, "promiscuous = {}\nrss = {}", self.promiscuous, self.rss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> RawDpdkConfig {
        toml::from_str(s).unwrap()
    }

    #[test]
    fn defaults_and_round_trip_through_display() {
        let c = DpdkConfig::from_raw(raw("eal_args = [\"-l\", \"0-1\"]")).unwrap();
        assert_eq!(
            (c.mbufs, c.mbuf_cache, c.rx_ring, c.tx_ring, c.promiscuous, c.rss),
            (16383, 256, 1024, 1024, true, true)
        );
        let text = c.to_string();
        let body = text.strip_prefix("[dpdk]\n").unwrap();
        assert_eq!(DpdkConfig::from_raw(raw(body)).unwrap(), c);
    }

    #[test]
    fn bad_values_name_their_key() {
        let e = |s: &str| DpdkConfig::from_raw(raw(s)).unwrap_err();
        assert_eq!(e("eal_args = [\"-l\", \"\"]").key, "eal_args[1]");
        assert_eq!(e("eal_args = []\nmbufs = 10").key, "mbufs");
        assert_eq!(e("eal_args = []\nmbuf_cache = 513").key, "mbuf_cache");
        assert_eq!(e("eal_args = []\nrx_ring = 1000").key, "rx_ring");
        assert_eq!(
            e("eal_args = []\ntx_ring = 32").to_string(),
            "dpdk.tx_ring: 32: a power of two in 64..=16384"
        );
    }
}
