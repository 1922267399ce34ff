//! The workload of a lab file: `[[incast]]`, `[[flow]]` and `[[poisson]]`, every flow between
//! hosts that exist and the lab's flows bounded ([`MAX_FLOWS`]) before any is made.

use std::path::Path;

use super::parse::{Ctx, Net};
use super::raw::Raw;
use super::{FlowSpec, LabError, MAX_FLOW_BYTES, MAX_FLOWS, MAX_PAIR_PATHS};
use crate::lab::workload::{self, Cdf, FB_HADOOP, WEBSEARCH};

/// Every flow of the file, by start time.
pub(super) fn flows(
    cx: &Ctx,
    raw: &Raw,
    net: &Net,
    seed: u64,
    duration_ns: u64,
    completion_ns: u64,
) -> Result<Vec<FlowSpec>, LabError> {
    let path = cx.path;
    let Net { topology, wiring, .. } = net;
    let hosts = topology.hosts;
    let mut flows = Vec::new();
    let host = |table: &str, i: usize, key: &str, h: usize| {
        if h < hosts {
            Ok(h)
        } else {
            Err(cx.err(table, Some(i), key, format!("host {h} does not exist (hosts 0..{hosts})")))
        }
    };
    for (i, f) in raw.incast.iter().enumerate() {
        let dst = host("incast", i, "dst", f.dst)?;
        if f.size == 0 || f.size > MAX_FLOW_BYTES {
            return Err(cx.err(
                "incast",
                Some(i),
                "size",
                format!("{} bytes: 1 to {MAX_FLOW_BYTES}", f.size),
            ));
        }
        if f.senders.is_empty() {
            return Err(cx.err("incast", Some(i), "senders", "no senders".into()));
        }
        // Synchronized burst groups: the same senders again every period.
        let repeat = f.repeat.unwrap_or(1);
        if repeat == 0 || repeat > 10_000 {
            return Err(cx.err("incast", Some(i), "repeat", format!("{repeat}: 1 to 10000 bursts")));
        }
        let period = match (repeat, f.period_ns) {
            (1, p) => p.unwrap_or(0),
            (_, Some(p)) if p > 0 => p,
            _ => {
                return Err(cx.err(
                    "incast",
                    Some(i),
                    "period_ns",
                    "repeated bursts need a period above 0".into(),
                ));
            }
        };
        for (j, &s) in f.senders.iter().enumerate() {
            host("incast", i, "senders", s)?;
            if f.senders[..j].contains(&s) {
                return Err(cx.err("incast", Some(i), "senders", format!("host {s} is listed twice")));
            }
        }
        if flows.len() + f.senders.len() * repeat as usize > MAX_FLOWS {
            return Err(cx.err(
                "incast",
                Some(i),
                "senders",
                format!(
                    "{} senders × {repeat} bursts: more than {MAX_FLOWS} flows in the lab",
                    f.senders.len()
                ),
            ));
        }
        for k in 0..u64::from(repeat) {
            let start_ns = f.start_ns.saturating_add(k.saturating_mul(period));
            for &s in &f.senders {
                let src = host("incast", i, "senders", s)?;
                if src == dst {
                    return Err(cx.err(
                        "incast",
                        Some(i),
                        "senders",
                        format!("host {s} is also the destination"),
                    ));
                }
                flows.push(FlowSpec {
                    src,
                    dst,
                    size: f.size,
                    start_ns,
                    guarantee_bps: None,
                    class: 0,
                    vm_pair: None,
                });
            }
        }
    }
    if flows.len() + raw.flow.len() > MAX_FLOWS {
        return Err(cx.err(
            "flow",
            None,
            "src",
            format!("{} [[flow]]s: more than {MAX_FLOWS} flows in the lab", raw.flow.len()),
        ));
    }
    for (i, f) in raw.flow.iter().enumerate() {
        let (src, dst) = (host("flow", i, "src", f.src)?, host("flow", i, "dst", f.dst)?);
        if src == dst {
            return Err(cx.err("flow", Some(i), "dst", "a flow to its own source".into()));
        }
        if f.size == 0 || f.size > MAX_FLOW_BYTES {
            return Err(cx.err("flow", Some(i), "size", format!("{} bytes: 1 to {MAX_FLOW_BYTES}", f.size)));
        }
        let guarantee_bps =
            f.guarantee.as_deref().map(|g| cx.rate("flow", Some(i), "guarantee", g)).transpose()?;
        let class = f.class.unwrap_or(0);
        if class >= 8 {
            return Err(cx.err(
                "flow",
                Some(i),
                "class",
                format!("{class}: one of the 8 weighted queues, 0..=7"),
            ));
        }
        let paths = f.paths.or(raw.ufab.as_ref().and_then(|u| u.paths)).unwrap_or(1);
        let spec =
            FlowSpec { src, dst, size: f.size, start_ns: f.start_ns, guarantee_bps, class, vm_pair: None };
        split_paths(spec, paths, i as u32, &mut flows)
            .map_err(|why| cx.err("flow", Some(i), "paths", format!("{paths}: {why}")))?;
    }
    for (i, w) in raw.poisson.iter().enumerate() {
        let cdf = match w.cdf.as_str() {
            "websearch" => Cdf::parse(WEBSEARCH).expect("bundled CDF"),
            "fb_hadoop" => Cdf::parse(FB_HADOOP).expect("bundled CDF"),
            file => {
                let at = path.parent().unwrap_or(Path::new(".")).join(file);
                let text = ports::input::read_text(&at, ports::input::MAX_TEXT_BYTES)
                    .map_err(|e| cx.err("poisson", Some(i), "cdf", format!("{}: {e}", at.display())))?;
                Cdf::parse(&text).map_err(|e| LabError {
                    file: at.clone(),
                    line: e.line,
                    key: format!("poisson[{i}].cdf"),
                    reason: e.reason,
                })?
            }
        };
        if !(w.load > 0.0 && w.load <= 1.0) {
            return Err(cx.err("poisson", Some(i), "load", format!("{}: in (0, 1]", w.load)));
        }
        let senders = match &w.hosts {
            Some(list) => {
                list.iter().map(|&h| host("poisson", i, "hosts", h)).collect::<Result<Vec<_>, _>>()?
            }
            None => (0..hosts).collect(),
        };
        if senders.len() < 2 {
            return Err(cx.err("poisson", Some(i), "hosts", "at least two hosts".into()));
        }
        let start = w.start_ns.unwrap_or(0);
        let stop = w.stop_ns.unwrap_or(duration_ns);
        if stop <= start {
            return Err(cx.err(
                "poisson",
                Some(i),
                "stop_ns",
                format!("{stop} is not after start_ns {start}"),
            ));
        }
        // Arrivals after the run ends would never start: none is drawn.
        let stop = stop.min(duration_ns + completion_ns);
        let link_rate = |h: usize| topology.links[wiring.host_port[h].link].rate_bps;
        // As many arrivals as the load makes over the window, expected: bounded before any
        // is drawn.
        let expected: f64 = senders
            .iter()
            .map(|&h| {
                stop.saturating_sub(start) as f64 * 1e-9 * link_rate(h) as f64 * w.load / 8.0 / cdf.mean()
            })
            .sum();
        if flows.len() as f64 + expected > MAX_FLOWS as f64 {
            return Err(cx.err(
                "poisson",
                Some(i),
                "load",
                format!(
                    "{expected:.0} arrivals expected over the run (duration_us and run_to_completion_us): more than {MAX_FLOWS} flows in the lab"
                ),
            ));
        }
        let seed = seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        flows.extend(workload::poisson(&cdf, w.load, &senders, &senders, link_rate, start, stop, seed));
    }
    flows.sort_by_key(|f| f.start_ns);
    Ok(flows)
}

/// `f` as the flows of a VM-pair of `paths` underlay paths (Appendix F), VM-pair `id`, into
/// `out`: the tenant spreads its bytes over one connection per path evenly (the first ones take
/// the remainder). One path: `f` itself.
pub(super) fn split_paths(f: FlowSpec, paths: u32, id: u32, out: &mut Vec<FlowSpec>) -> Result<(), String> {
    check_pair_paths(paths)?;
    if u64::from(paths) > f.size {
        return Err(format!("{paths} underlay paths: at most one per byte"));
    }
    for k in 0..paths {
        let size = nic_agent::ufab::host::path_share(f.size, paths, k).1;
        out.push(FlowSpec { size, vm_pair: (paths > 1).then_some(id), ..f });
    }
    Ok(())
}

/// `paths` underlay paths per VM-pair are 1 to [`MAX_PAIR_PATHS`].
pub(super) fn check_pair_paths(paths: u32) -> Result<(), String> {
    if (1..=MAX_PAIR_PATHS).contains(&paths) {
        Ok(())
    } else {
        Err(format!("1 to {MAX_PAIR_PATHS} underlay paths"))
    }
}
