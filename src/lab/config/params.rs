//! The CC and telemetry parameters of a lab file: `[hpcc]`, `[hawkeye]`, `[dcqcn]` and `[ufab]`,
//! each defaulted to the reference's value and bounded.

use super::parse::Ctx;
use super::raw::Raw;
use super::{DcqcnParams, HpccParams, LabError, UfabParams, check_pair_paths};

/// `[hpcc]`; `rate_bps` is the hosts' link rate, which the Poisson default `ai_rate` scales with.
pub(super) fn hpcc(cx: &Ctx, raw: &Raw, rate_bps: u64) -> Result<HpccParams, LabError> {
    let h = raw.hpcc.as_ref();
    let hpcc = HpccParams {
        eta: h.and_then(|h| h.eta).unwrap_or(0.95),
        max_stage: h.and_then(|h| h.max_stage).unwrap_or(0),
        w_ai_bytes: h.and_then(|h| h.w_ai_bytes),
        ai_rate_bps: match h.and_then(|h| h.ai_rate.as_deref()) {
            Some(r) => Some(cx.rate("hpcc", None, "ai_rate", r)? as f64),
            None if !raw.poisson.is_empty() => Some(10.0 * (rate_bps / 1_000_000_000) as f64 / 25.0 * 1e6),
            None => None,
        },
        int_compact: match h.and_then(|h| h.int.as_deref()) {
            None | Some("full") => false,
            Some("compact") => true,
            Some(o) => return Err(cx.err("hpcc", None, "int", format!("{o:?}: \"full\" or \"compact\""))),
        },
    };
    if !(hpcc.eta > 0.0 && hpcc.eta <= 1.0) {
        return Err(cx.err("hpcc", None, "eta", format!("{}: in (0, 1]", hpcc.eta)));
    }
    if hpcc.max_stage > 1000 {
        return Err(cx.err("hpcc", None, "max_stage", format!("{}: at most 1000", hpcc.max_stage)));
    }
    if let Some(w) = hpcc.w_ai_bytes.filter(|w| !(w.is_finite() && *w > 0.0 && *w <= 1e9)) {
        return Err(cx.err("hpcc", None, "w_ai_bytes", format!("{w}: above 0, at most 10^9 bytes")));
    }
    Ok(hpcc)
}

/// `[hawkeye]`: the hosts' detector, if on.
pub(super) fn hawkeye(cx: &Ctx, raw: &Raw) -> Result<Option<nic_agent::hawkeye::DetectorConfig>, LabError> {
    let hawkeye = match raw.hawkeye.as_ref() {
        None => None,
        Some(h) if h.detect == Some(false) => None,
        Some(h) => {
            let d = nic_agent::hawkeye::DetectorConfig::default();
            let rtt_factor = h.rtt_factor.unwrap_or(d.rtt_factor);
            if !(rtt_factor > 1.0 && rtt_factor <= 1000.0) {
                return Err(cx.err(
                    "hawkeye",
                    None,
                    "rtt_factor",
                    format!("{rtt_factor}: above 1, at most 1000"),
                ));
            }
            if h.base_rtt_ns.is_some_and(|b| b == 0 || b > 1_000_000_000) {
                return Err(cx.err("hawkeye", None, "base_rtt_ns", "1 ns to 1 s".into()));
            }
            let min_interval_ns = match h.min_interval_us {
                None => d.min_interval_ns,
                Some(us @ 1..=60_000_000) => us * 1000,
                Some(us) => {
                    return Err(cx.err("hawkeye", None, "min_interval_us", format!("{us}: 1 µs to 60 s")));
                }
            };
            Some(nic_agent::hawkeye::DetectorConfig {
                rtt_factor,
                base_rtt_ns: h.base_rtt_ns,
                min_interval_ns,
            })
        }
    };
    Ok(hawkeye)
}

/// `[dcqcn]`.
pub(super) fn dcqcn(cx: &Ctx, raw: &Raw) -> Result<DcqcnParams, LabError> {
    let dcqcn = match raw.dcqcn.as_ref() {
        None => DcqcnParams::default(),
        Some(d) => {
            let r = |key: &str, v: &Option<String>| {
                v.as_deref().map(|x| cx.rate("dcqcn", None, key, x)).transpose()
            };
            let us = |key: &str, v: Option<u64>| match v {
                Some(0) | Some(1_000_001..) => {
                    Err(cx.err("dcqcn", None, key, format!("{}: 1 µs to 1 s", v.unwrap_or(0))))
                }
                v => Ok(v.map(|x| x * 1000)),
            };
            if let Some(g) = d.g
                && !(g > 0.0 && g <= 1.0)
            {
                return Err(cx.err("dcqcn", None, "g", format!("{g}: in (0, 1]")));
            }
            if d.fast_recovery_stages.is_some_and(|f| f > 1000) {
                return Err(cx.err("dcqcn", None, "fast_recovery_stages", "at most 1000".into()));
            }
            DcqcnParams {
                clamp_target_rate: d.clamp_target_rate,
                min_rate_bps: r("min_rate", &d.min_rate)?,
                ai_rate_bps: r("ai_rate", &d.ai_rate)?,
                hai_rate_bps: r("hai_rate", &d.hai_rate)?,
                g: d.g,
                t_alpha_ns: us("t_alpha_us", d.t_alpha_us)?,
                t_dec_ns: us("t_dec_us", d.t_dec_us)?,
                t_inc_ns: us("t_inc_us", d.t_inc_us)?,
                fast_recovery_stages: d.fast_recovery_stages,
            }
        }
    };
    Ok(dcqcn)
}

/// `[ufab]`.
pub(super) fn ufab(cx: &Ctx, raw: &Raw) -> Result<UfabParams, LabError> {
    let d = UfabParams::default();
    let ufab = match raw.ufab.as_ref() {
        None => d,
        Some(u) => {
            let us = |key: &str, v: Option<u64>, def: u64, max_us: u64| match v {
                None => Ok(def),
                Some(x) if x <= max_us => Ok(x * 1000),
                Some(x) => Err(cx.err("ufab", None, key, format!("{x}: at most {max_us} µs"))),
            };
            if let Some(paths) = u.paths {
                check_pair_paths(paths)
                    .map_err(|why| cx.err("ufab", None, "paths", format!("{paths}: {why}")))?;
            }
            let candidates = u.candidates.unwrap_or(d.candidates);
            if !(1..=16).contains(&candidates) {
                return Err(cx.err("ufab", None, "candidates", format!("{candidates}: 1 to 16 paths")));
            }
            let l_w = u.l_w.unwrap_or(d.l_w);
            if !(64..=1 << 30).contains(&l_w) {
                return Err(cx.err("ufab", None, "l_w", format!("{l_w}: 64 B to 1 GiB")));
            }
            let freeze_rtts = u.freeze_rtts.unwrap_or(d.freeze_rtts);
            if !(1..=1_000_000).contains(&freeze_rtts) {
                return Err(cx.err("ufab", None, "freeze_rtts", format!("{freeze_rtts}: 1 to 1 000 000")));
            }
            let token_period_ns = u.token_period_ns.unwrap_or(d.token_period_ns);
            if !(1_000..=1_000_000_000).contains(&token_period_ns) {
                return Err(cx.err(
                    "ufab",
                    None,
                    "token_period_ns",
                    format!("{token_period_ns}: 1 µs to 1 s"),
                ));
            }
            let weights = match &u.weights {
                None => d.weights,
                Some(w) if w.len() == 8 && w.iter().all(|&x| (1..=1_000_000).contains(&x)) => {
                    std::array::from_fn(|i| w[i])
                }
                Some(w) => {
                    return Err(cx.err(
                        "ufab",
                        None,
                        "weights",
                        format!("{w:?}: 8 weights of 1 to 1 000 000"),
                    ));
                }
            };
            UfabParams {
                weights,
                b_u_bps: u
                    .b_u
                    .as_deref()
                    .map(|b| cx.rate("ufab", None, "b_u", b))
                    .transpose()?
                    .map_or(d.b_u_bps, |b| b as f64),
                guarantee_bps: u
                    .guarantee
                    .as_deref()
                    .map(|g| cx.rate("ufab", None, "guarantee", g))
                    .transpose()?
                    .unwrap_or(d.guarantee_bps),
                candidates,
                l_w,
                no_reordering: u.no_reordering.unwrap_or(d.no_reordering),
                freeze_rtts,
                look_every_ns: us("look_every_us", u.look_every_us, d.look_every_ns, 3_600_000_000)?,
                better_for_ns: us("better_for_us", u.better_for_us, d.better_for_ns, 3_600_000_000)?,
                token_period_ns,
                idle_finish_ns: us("idle_finish_us", u.idle_finish_us, d.idle_finish_ns, 3_600_000_000)?,
            }
        }
    };
    Ok(ufab)
}
