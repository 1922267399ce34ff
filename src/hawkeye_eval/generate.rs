//! The scenario generator: scenarios drawn per class over topology families, sizes, buffers,
//! loads and epoch lengths, so an evaluation runs on cases nobody tuned on.
//!
//! `softfabric hawkeye generate --seed S --count N --out DIR` writes N scenarios, scenario `i`
//! drawn from seed `S + i` alone (the same seed gives the same files on every machine), each a
//! scenario file and its own base lab (`_NAME.base.toml`). The class is `CLASSES[(S + i) mod 7]`,
//! so any 7 consecutive seeds cover every class once. What is drawn:
//!
//! * the topology: a k = 4 fat tree (16 hosts, 20 switches) or a leaf-spine of 3–4 leaves,
//!   2–3 spines and 2–4 hosts per leaf; 100 Gb/s links of 1 or 2 µs; buffers of 2, 4 or 8 MB
//!   (2 or 4 MB for an incast, which must pause before DCQCN slows it; 32 MB for flow
//!   contention: bursts queue without reaching PFC; 4 MB for a deadlock, where its construction
//!   freezes the loop by its trigger and not before); epochs of 2^17 to 2^20 ns (1 ms for a
//!   deadlock, whose history from before the freeze must stay kept);
//! * the background: three websearch loads, each within a class's range (`no_anomaly`: one of
//!   0.3, 0.6 and 0.8 per scenario, in turn over consecutive seeds of the class);
//! * the anomaly: incast senders (5–8 for an incast, as many as the fabric has off the
//!   receiver's switch; 3–8 for contention) and sizes, pinned or drawn per trace; storm
//!   windows and PAUSE intervals; deadlocks as a cyclic buffer dependency over two lower and two
//!   upper switches (a fat tree's pod, turned per trace; a leaf-spine's drawn leaves and
//!   spines), with the class's initiator: contention in the loop (line-rate flows without
//!   congestion control), a burst leaving the loop, or a host injecting PAUSE beside it.
//!
//! Seeds below 10^6 are for development; the README's table is one run from 10^9 up.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use super::scenario::NO_ANOMALY;

/// The classes, in the order seeds take them.
pub const CLASSES: [&str; 7] = [
    "microburst_incast",
    "flow_contention",
    "pfc_storm",
    "in_loop_deadlock",
    "out_of_loop_deadlock_contention",
    "out_of_loop_deadlock_injection",
    NO_ANOMALY,
];

/// The most scenarios one call writes.
pub const MAX_COUNT: u64 = 10_000;

struct Draw(ChaCha8Rng);

impl Draw {
    /// Uniform in `lo..=hi`.
    fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.0.next_u64() % (hi - lo + 1)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.int(0, xs.len() as u64 - 1) as usize]
    }
    fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The fabric a scenario runs on.
#[derive(Debug, Clone, Copy)]
enum Family {
    FatTree4,
    LeafSpine { leaves: usize, spines: usize, per_leaf: usize },
}

impl Family {
    fn hosts(self) -> usize {
        match self {
            Family::FatTree4 => 16,
            Family::LeafSpine { leaves, per_leaf, .. } => leaves * per_leaf,
        }
    }
    /// `rate`: the hosts' links (`"100G"`, or `"25G"` with 100 Gb/s fabric links).
    fn topology(self, rate: &str, delay_ns: u64, buffer: u64) -> String {
        let links = if rate == "100G" {
            format!("rate = \"100G\"\ndelay_ns = {delay_ns}\nbuffer_bytes = {buffer}\n")
        } else {
            format!(
                "rate = \"{rate}\"\nfabric_rate = \"100G\"\ndelay_ns = {delay_ns}\nbuffer_bytes = {buffer}\n"
            )
        };
        match self {
            Family::FatTree4 => format!("kind = \"fat_tree\"\nk = 4\n{links}"),
            Family::LeafSpine { leaves, spines, per_leaf } => format!(
                "kind = \"leaf_spine\"\nleaves = {leaves}\nspines = {spines}\nhosts_per_leaf = {per_leaf}\n{links}"
            ),
        }
    }
    fn name(self) -> String {
        match self {
            Family::FatTree4 => "fattree4".into(),
            Family::LeafSpine { leaves, spines, per_leaf } => format!("ls{leaves}x{spines}x{per_leaf}"),
        }
    }
}

/// A deadlock's cyclic buffer dependency: route overrides and loop flows, and hosts usable
/// outside it.
struct Loop {
    routes: Vec<(usize, usize, usize)>,
    flows: Vec<(usize, usize)>,
    /// Hosts off the loop that may burst into it, and the switch each attaches to.
    senders: Vec<(usize, usize)>,
    /// The upper switch `u1`, which a burst into the loop's first receiver is routed through.
    u1: usize,
    /// The fat tree's pod rotation applies.
    rotate: bool,
}

/// The loop over lower switches `l0`, `l1` and upper `u0`, `u1` (the bundled pod-0 loop of a fat
/// tree, or drawn leaves and spines): `l0` sends `l1`'s hosts up `u0`; `u0` sends host `h1` (on
/// `l0`) down to `l1`; `l1` sends `h1` up `u1`; `u1` sends `h3` (on `l1`) down to `l0`, which
/// sends it up `u0`. Flows `h0 → h2` (l0 → u0 → l1), `x → h1` entering at `u0` and `y → h3`
/// entering at `u1` close the cycle l0→u0→l1→u1→l0.
fn deadlock_loop(f: Family, d: &mut Draw) -> Loop {
    match f {
        Family::FatTree4 => Loop {
            // The bundled scenarios' pod-0 loop (switches 0, 1 edges; 8, 9 aggregation; hosts
            // 0–3), entered from pods 1 and 2; bursts from pod 3 (edges 6, 7) through the
            // pod's aggregation switch 15 and a core to 9; turned per trace by `rotate_pods`.
            routes: vec![(0, 2, 8), (0, 3, 8), (1, 1, 9), (8, 1, 1), (9, 3, 0), (2, 1, 10), (4, 3, 13)],
            flows: vec![(0, 2), (4, 1), (8, 3)],
            senders: (12..16).map(|h| (h, 6 + (h - 12) / 2)).collect(),
            u1: 15,
            rotate: true,
        },
        Family::LeafSpine { leaves, spines, per_leaf } => {
            let mut ls: Vec<usize> = (0..leaves).collect();
            let take =
                |v: &mut Vec<usize>, d: &mut Draw| v.swap_remove(d.int(0, v.len() as u64 - 1) as usize);
            let (l0, l1, l2) = (take(&mut ls, d), take(&mut ls, d), take(&mut ls, d));
            let mut ss: Vec<usize> = (0..spines).collect();
            let (u0, u1) = (leaves + take(&mut ss, d), leaves + take(&mut ss, d));
            let host = |l: usize, i: usize| l * per_leaf + i;
            let (h0, h1, h2, h3) = (host(l0, 0), host(l0, 1), host(l1, 0), host(l1, 1));
            let (x, y) = if per_leaf >= 2 { (host(l2, 0), host(l2, 1)) } else { (host(l2, 0), host(l2, 0)) };
            let mut routes = vec![(l0, h2, u0), (l0, h3, u0), (l1, h1, u1), (u0, h1, l1), (u1, h3, l0)];
            routes.push((l2, h1, u0));
            routes.push((l2, h3, u1));
            let used = [h0, h1, h2, h3, x, y];
            let senders = (0..leaves * per_leaf)
                .filter(|h| ![l0, l1].contains(&(h / per_leaf)) && !used.contains(h))
                .map(|h| (h, h / per_leaf))
                .collect();
            Loop { routes, flows: vec![(h0, h2), (x, h1), (y, h3)], senders, u1, rotate: false }
        }
    }
}

/// Scenario `seed`: its file name and the two files' texts (scenario, base).
pub fn scenario(seed: u64) -> (String, String, String) {
    let class = CLASSES[(seed % CLASSES.len() as u64) as usize];
    let mut d = Draw(ChaCha8Rng::seed_from_u64(seed ^ 0x4861_776b_6579_6521));
    let deadlock = class.contains("deadlock");
    // Deadlocks need two lower switches with two hosts each and a third lower switch.
    let family = if d.int(0, 1) == 0 {
        Family::FatTree4
    } else {
        let leaves = d.int(3, 4) as usize;
        let spines = d.int(2, 3) as usize;
        let per_leaf = d.int(if deadlock { 3 } else { 2 }, 4) as usize;
        Family::LeafSpine { leaves, spines, per_leaf }
    };
    let hosts = family.hosts();
    let buffer = match class {
        "flow_contention" => 32 << 20,
        // An incast reaches PFC before DCQCN slows it only when it fills the queue fast: many
        // senders into a buffer that is not too deep (3 senders into 8 MB queued without a
        // pause on the development seeds).
        "microburst_incast" => d.pick(&[2u64 << 20, 4 << 20]),
        // The loop construction realizes its class at the bundled 4 MB: with 2 MB the loop
        // flows froze it by themselves before any trigger, with 8 MB a storm of 300 µs did not
        // freeze it (development seeds 12 and 19).
        c if c.contains("deadlock") => 4 << 20,
        _ => d.pick(&[2u64 << 20, 4 << 20, 8 << 20]),
    };
    let epoch_ns = 1u64 << d.int(17, 20);
    let delay_ns = d.pick(&[1000u64, 2000]);
    let loads: Vec<f64> = match class {
        // One load per scenario, so the table states each load's false positives apart:
        // consecutive no_anomaly seeds take 0.3, 0.6 and 0.8 in turn.
        NO_ANOMALY => vec![[0.3, 0.6, 0.8][((seed / CLASSES.len() as u64) % 3) as usize]],
        c if c.contains("deadlock") => (0..3).map(|_| 0.05 + 0.1 * d.unit()).collect(),
        _ => (0..3).map(|_| 0.1 + 0.3 * d.unit()).collect(),
    };
    let name = format!("g{seed}-{}-{}", class.replace('_', "-"), family.name());
    let mut s = format!(
        "# Generated by `softfabric hawkeye generate` from seed {seed}: class {class} on {} (buffers {} MB, \
         epochs {} ns, links of {delay_ns} ns).\n[scenario]\nclass = \"{class}\"\nbase = \"_{name}.base.toml\"\n\
         loads = [{}]\nseed = {}\n",
        family.name(),
        buffer >> 20,
        if deadlock { 1 << 20 } else { epoch_ns },
        loads.iter().map(|l| format!("{l:.3}")).collect::<Vec<_>>().join(", "),
        seed.wrapping_mul(1000) % (1 << 40) + 1,
    );
    let mut duration_us = 1500;
    match class {
        "microburst_incast" | "flow_contention" => {
            // At most the hosts off the receiver's switch (the trace draws them there; a
            // scenario may name no more senders than its base has hosts but one).
            let senders = match class {
                "microburst_incast" => d.int(5, 8),
                _ => d.int(3, (hosts as u64 / 2).clamp(3, 8)),
            }
            .min(hosts as u64 - 1);
            // An incast that causes PFC backpressure sends at least 1.5 × the buffer in all
            // (the switch pauses well before its buffer is full); plain contention at most
            // 4 MB into 32 MB buffers, which queue it without reaching PFC.
            let size = match class {
                "microburst_incast" => d.int(2, 20) * 100_000,
                _ => d.int(2, 13) * 100_000,
            };
            let size = match class {
                "microburst_incast" => size.max((3 * buffer / 2).div_ceil(senders)),
                _ => size.min((4 << 20) / senders),
            };
            let start = d.int(300, 500);
            let _ = write!(
                s,
                "window_us = 1000\n\n[anomaly]\nkind = \"incast\"\nsenders = {senders}\nsize = {size}\nstart_us = {start}\n"
            );
            if d.int(0, 3) == 0 {
                let _ = writeln!(s, "receiver = {}", d.int(0, hosts as u64 - 1));
            }
        }
        "pfc_storm" => {
            let start = d.int(200, 500);
            let stop = start + d.int(200, 700);
            duration_us = (stop + 600).max(1500);
            let _ = write!(
                s,
                "window_us = 1000\nduration_us = {duration_us}\n\n[anomaly]\nkind = \"pfc_storm\"\nsenders = {}\nsize = {}\n\
                 start_us = {start}\nstop_us = {stop}\ninterval_us = {}\n",
                d.int(2, 6).min(hosts as u64 - 1),
                d.int(2, 10) * 100_000,
                d.pick(&[5u64, 10, 20]),
            );
            if d.int(0, 3) == 0 {
                let _ = writeln!(s, "storm_host = {}", d.int(0, hosts as u64 - 1));
            }
        }
        NO_ANOMALY => {
            duration_us = 2000;
            let _ = writeln!(s, "duration_us = {duration_us}");
        }
        _ => {
            let mut lp = deadlock_loop(family, &mut d);
            duration_us = 3000;
            let _ = write!(s, "window_us = 1500\nduration_us = {duration_us}\n");
            let start;
            let mut first_start = 0;
            let mut extra = String::new();
            match class {
                "in_loop_deadlock" => {
                    start = 0;
                    let no_cc: Vec<String> = lp.flows.iter().map(|f| f.0.to_string()).collect();
                    let _ = writeln!(extra, "no_cc_hosts = [{}]", no_cc.join(", "));
                }
                "out_of_loop_deadlock_contention" => {
                    // The bundled construction: a line-rate burst (25 Gb/s hosts, no congestion
                    // control) into the first loop flow's receiver, entering through `u1`,
                    // contends with that flow (started with it) at the receiver's port.
                    s.push_str("before = \"microburst_incast\"\n");
                    start = d.int(100, 300);
                    let dst = lp.flows[0].1;
                    let n = d.int(2, 4).min(lp.senders.len() as u64) as usize;
                    let mut pool = lp.senders.clone();
                    let mut senders = Vec::new();
                    for _ in 0..n {
                        senders.push(pool.swap_remove(d.int(0, pool.len() as u64 - 1) as usize));
                    }
                    senders.sort_unstable();
                    let mut lowers: Vec<usize> = senders.iter().map(|x| x.1).collect();
                    lowers.dedup();
                    lp.routes.extend(lowers.into_iter().map(|l| (l, dst, lp.u1)));
                    let mut no_cc: Vec<usize> =
                        lp.flows.iter().map(|f| f.0).chain(senders.iter().map(|x| x.0)).collect();
                    no_cc.sort_unstable();
                    no_cc.dedup();
                    let list = |v: &mut dyn Iterator<Item = usize>| {
                        v.map(|h| h.to_string()).collect::<Vec<_>>().join(", ")
                    };
                    let _ = writeln!(
                        extra,
                        "burst_dst = {dst}\nburst_senders = [{}]\nsize = {}\nno_cc_hosts = [{}]",
                        list(&mut senders.iter().map(|x| x.0)),
                        d.int(5, 20) * 100_000,
                        list(&mut no_cc.into_iter())
                    );
                    first_start = start;
                }
                _ => {
                    // A host injecting PAUSE at the first loop flow's receiver (the bundled
                    // placement).
                    s.push_str("before = \"pfc_storm\"\n");
                    start = d.int(100, 300);
                    let host = lp.flows[0].1;
                    let _ = writeln!(
                        extra,
                        "storm_host = {host}\nstop_us = {}\ninterval_us = {}",
                        start + d.int(300, 600),
                        d.pick(&[5u64, 10, 20])
                    );
                }
            }
            let _ = write!(s, "epoch_ns = 1048576\n\n[anomaly]\nkind = \"deadlock\"\nstart_us = {start}\n");
            if lp.rotate {
                s.push_str("rotate_pods = true\n");
            }
            s.push_str(&extra);
            let routes: Vec<String> = lp
                .routes
                .iter()
                .map(|(sw, h, via)| format!("{{ switch = {sw}, host = {h}, via = {via} }}"))
                .collect();
            let _ = writeln!(s, "routes = [{}]", routes.join(", "));
            let flows: Vec<String> = lp
                .flows
                .iter()
                .enumerate()
                .map(|(i, (a, b))| {
                    let at = if i == 0 { first_start } else { 0 };
                    format!("{{ src = {a}, dst = {b}, size = 20000000, start_us = {at} }}")
                })
                .collect();
            let _ = writeln!(s, "flows = [{}]", flows.join(", "));
        }
    }
    // Deadlocks keep a 1 ms epoch (history from before the freeze: a frozen loop counts nothing
    // new); the others take the drawn one.
    let epoch = if deadlock { 1 << 20 } else { epoch_ns };
    let base = format!(
        "# Generated base for {name}.toml.\n[lab]\nseed = 1\nduration_us = {duration_us}\ncc = \"dcqcn\"\nmtu = 1000\n\
         sample_ns = 10000\nack_high_priority = true\n\n[topology]\n{}\n[switches]\nprogram = \"hawkeye\"\n\
         sections = \"\"\"\n[hawkeye]\nepochs = 4\nepoch_ns = {epoch}\nflow_slots = 4096\ndedup_ns = 250000\n\"\"\"\n\n\
         [hawkeye]\ndetect = true\nrtt_factor = 3.0\nmin_interval_us = 300\nbase_rtt_ns = 25000\n",
        family.topology(
            if class == "out_of_loop_deadlock_contention" { "25G" } else { "100G" },
            delay_ns,
            buffer
        ),
    );
    (name, s, base)
}

/// Write scenarios `seed..seed + count` into `out` (created if needed); their paths.
pub fn generate(out: &Path, seed: u64, count: u64) -> Result<Vec<PathBuf>, String> {
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(format!("--count {count}: expected 1 to {MAX_COUNT}"));
    }
    if seed.checked_add(count).is_none_or(|e| e > 1 << 62) {
        return Err(format!("--seed {seed}: seed + count must stay below 2^62"));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut paths = Vec::new();
    for s in seed..seed + count {
        let (name, scenario, base) = scenario(s);
        let bp = out.join(format!("_{name}.base.toml"));
        std::fs::write(&bp, base).map_err(|e| format!("{}: {e}", bp.display()))?;
        let sp = out.join(format!("{name}.toml"));
        std::fs::write(&sp, scenario).map_err(|e| format!("{}: {e}", sp.display()))?;
        paths.push(sp);
    }
    Ok(paths)
}
