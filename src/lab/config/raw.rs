//! The lab file as TOML says it, before any check: every table and key, each time bounded as it
//! is read ([`time`]).

use serde::Deserialize;

/// Deserializers that bound a time as it is read: the error carries the value's position, so
/// it names the key.
pub(super) mod time {
    use serde::{Deserialize, Deserializer, de::Error};

    fn upto<'de, D: Deserializer<'de>>(d: D, max: u64, unit: &str) -> Result<u64, D::Error> {
        let v = u64::deserialize(d)?;
        if v > max { Err(D::Error::custom(format!("{v} {unit}: at most {max} {unit}"))) } else { Ok(v) }
    }

    pub fn ns<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        upto(d, super::super::MAX_TIME_NS, "ns")
    }

    pub fn us<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        upto(d, super::super::MAX_TIME_NS / 1000, "µs")
    }

    pub fn delay<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        upto(d, super::super::MAX_DELAY_NS, "ns")
    }

    pub fn opt_ns<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        ns(d).map(Some)
    }

    pub fn opt_us<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        us(d).map(Some)
    }

    pub fn opt_delay<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        delay(d).map(Some)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Raw {
    pub(super) lab: RawLab,
    pub(super) topology: RawTopology,
    pub(super) hpcc: Option<RawHpcc>,
    pub(super) dcqcn: Option<RawDcqcn>,
    pub(super) switches: Option<RawSwitchProgram>,
    #[serde(default)]
    pub(super) switch: Vec<RawSwitch>,
    #[serde(default)]
    pub(super) host: Vec<RawHost>,
    #[serde(default)]
    pub(super) link: Vec<RawLink>,
    #[serde(default)]
    pub(super) incast: Vec<RawIncast>,
    #[serde(default)]
    pub(super) flow: Vec<RawFlow>,
    #[serde(default)]
    pub(super) poisson: Vec<RawPoisson>,
    pub(super) hawkeye: Option<RawHawkeye>,
    pub(super) ufab: Option<RawUfab>,
    #[serde(default)]
    pub(super) failure: Vec<RawFailure>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawUfab {
    pub(super) b_u: Option<String>,
    pub(super) guarantee: Option<String>,
    pub(super) candidates: Option<usize>,
    pub(super) l_w: Option<u64>,
    pub(super) no_reordering: Option<bool>,
    pub(super) freeze_rtts: Option<u32>,
    #[serde(default, deserialize_with = "time::opt_us")]
    pub(super) look_every_us: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    pub(super) better_for_us: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    pub(super) token_period_ns: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    pub(super) idle_finish_us: Option<u64>,
    pub(super) weights: Option<Vec<u64>>,
    pub(super) paths: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFailure {
    pub(super) switch: usize,
    #[serde(deserialize_with = "time::ns")]
    pub(super) at_ns: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHawkeye {
    pub(super) detect: Option<bool>,
    pub(super) rtt_factor: Option<f64>,
    #[serde(default, deserialize_with = "time::opt_delay")]
    pub(super) base_rtt_ns: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    pub(super) min_interval_us: Option<u64>,
    pub(super) full_polling: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSwitchProgram {
    pub(super) program: Option<String>,
    pub(super) sections: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSwitch {
    pub(super) id: usize,
    pub(super) program: Option<String>,
    pub(super) sections: Option<String>,
    #[serde(default)]
    pub(super) route: Vec<RawRouteOverride>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRouteOverride {
    pub(super) host: usize,
    pub(super) via: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHost {
    pub(super) ids: Vec<usize>,
    pub(super) agent: String,
    pub(super) to: Option<Vec<String>>,
    pub(super) primitive: Option<String>,
    pub(super) count: Option<u64>,
    pub(super) rate: Option<u64>,
    pub(super) keys: Option<u32>,
    pub(super) redundancy: Option<u8>,
    pub(super) lists: Option<u32>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    pub(super) start_ns: Option<u64>,
    pub(super) config: Option<String>,
    pub(super) priority: Option<u8>,
    pub(super) quanta: Option<u16>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    pub(super) stop_ns: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    pub(super) interval_ns: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLab {
    pub(super) seed: Option<u64>,
    #[serde(deserialize_with = "time::us")]
    pub(super) duration_us: u64,
    pub(super) cc: String,
    pub(super) mtu: Option<usize>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    pub(super) sample_ns: Option<u64>,
    pub(super) ack_high_priority: Option<bool>,
    #[serde(default, deserialize_with = "time::opt_us")]
    pub(super) run_to_completion_us: Option<u64>,
    pub(super) no_cc_hosts: Option<Vec<usize>>,
    pub(super) rtt_samples: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTopology {
    pub(super) kind: String,
    pub(super) hosts: Option<usize>,
    pub(super) switches: Option<usize>,
    pub(super) leaves: Option<usize>,
    pub(super) spines: Option<usize>,
    pub(super) hosts_per_leaf: Option<usize>,
    pub(super) k: Option<usize>,
    pub(super) pods: Option<usize>,
    pub(super) tors_per_pod: Option<usize>,
    pub(super) aggs_per_pod: Option<usize>,
    pub(super) cores: Option<usize>,
    pub(super) hosts_per_tor: Option<usize>,
    pub(super) rate: String,
    pub(super) fabric_rate: Option<String>,
    pub(super) core_rate: Option<String>,
    #[serde(deserialize_with = "time::delay")]
    pub(super) delay_ns: u64,
    pub(super) buffer_bytes: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLink {
    pub(super) a: String,
    pub(super) b: String,
    pub(super) rate: Option<String>,
    #[serde(default, deserialize_with = "time::opt_delay")]
    pub(super) delay_ns: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHpcc {
    pub(super) eta: Option<f64>,
    pub(super) max_stage: Option<u32>,
    pub(super) w_ai_bytes: Option<f64>,
    pub(super) ai_rate: Option<String>,
    pub(super) int: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDcqcn {
    pub(super) clamp_target_rate: Option<bool>,
    pub(super) min_rate: Option<String>,
    pub(super) ai_rate: Option<String>,
    pub(super) hai_rate: Option<String>,
    pub(super) g: Option<f64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    pub(super) t_alpha_us: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    pub(super) t_dec_us: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_us")]
    pub(super) t_inc_us: Option<u64>,
    pub(super) fast_recovery_stages: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIncast {
    pub(super) senders: Vec<usize>,
    pub(super) dst: usize,
    pub(super) size: u64,
    #[serde(deserialize_with = "time::ns")]
    pub(super) start_ns: u64,
    pub(super) repeat: Option<u32>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    pub(super) period_ns: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFlow {
    pub(super) src: usize,
    pub(super) dst: usize,
    pub(super) size: u64,
    #[serde(deserialize_with = "time::ns")]
    pub(super) start_ns: u64,
    pub(super) guarantee: Option<String>,
    pub(super) class: Option<u8>,
    pub(super) paths: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPoisson {
    pub(super) cdf: String,
    pub(super) load: f64,
    pub(super) hosts: Option<Vec<usize>>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    pub(super) start_ns: Option<u64>,
    #[serde(default, deserialize_with = "time::opt_ns")]
    pub(super) stop_ns: Option<u64>,
}
