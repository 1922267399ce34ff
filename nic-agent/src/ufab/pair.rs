//! One VM-pair's µFAB-E (seed `003` §3.3–§3.5, §4.1): its candidate paths, probes, window and
//! path migration, sans-IO — `handle_response(now, …)` / `handle_timeout(now, …)` /
//! `on_sent(now, bytes)` in, `poll_transmit(now)` / `poll_timeout()` out, the data's window,
//! pacing rate and source route read by the runtime.
//!
//! Choices the paper leaves open, each a field of [`PairConfig`] or written here:
//!
//! * **Windows at a reference RTT**: Eqn (3) splits W_l, a sum of windows, by φ — but a rate is
//!   a window over its RTT, so on a link shared by pairs of different base RTTs (a neighbour one
//!   switch away and a peer five switches away: 3.5 µs and 17.5 µs here) proportional windows
//!   give the short pair several times its share. Pairs therefore carry, and compute Eqn (3)
//!   over, windows at one reference RTT T_ref (`ref_rtt_ns`, the fabric's largest base RTT:
//!   W_l is then R_l·T_ref, Eqn (2)'s R_l) and use w·T/T_ref themselves. With one base RTT for
//!   all, this is Eqn (3) as written.
//! * **Keepalive**: a pair on a path probes at least every 4 base RTTs while it is not idle —
//!   a pair whose data stalls (a failed link dropping it, a full window) sends no L_w bytes and
//!   would otherwise never learn why.
//! * **Probes** carry, per hop, the pair's window on that link w^l (Eqn 3, last computed; the
//!   bootstrap window before any), and φ; one probe is outstanding per path at a time, and the
//!   next goes after L_w bytes of data (§4.1, default 4 KB) counted from the response's arrival
//!   ("after receiving the previous response … only after transmitting L_w"): a pair sending
//!   r per RTT probes once per L_w + r·RTT bytes, at most L_p / (L_p + L_w) of them. (Counted
//!   from the probe's departure instead, as this code did until 2026-11-27, a pair sending more
//!   than L_w per RTT probed every RTT: §5.2's probes were 1.1–1.2 % of the bytes, 0.8 % now.)
//!   A probe with no response after 8 base RTTs (§4.1) is lost and sent again;
//!   `losses_to_migrate` (default 3) losses in a row count as a failed path.
//! * **Look probes**: joining and migrating probe the candidates "in parallel" and test
//!   C_l ≥ (Φ_l + φ)·B_u (§3.5) — a test on Φ_l *without* the pair. They are looks
//!   ([`UfabKind::Look`], a probe type the paper does not have): each switch answers with Φ_l
//!   and W_l less the pair's own record on that link, if it has one (the last hop to the
//!   receiver is always shared with the current path; two paths can also meet again further
//!   on, which the sender's port lists cannot tell but the switch can), and writes nothing.
//!   Before, looks were probes of φ = 0 under the pair's own ID: they zeroed the pair's
//!   records on every shared link until its next probe, and a pair that looked saw room there,
//!   while others looking at the same moment saw the room the looker's own φ left and moved in
//!   (§5.2 seed 3: two 5 Gb/s pairs on one 9.5 Gb/s link for the rest of the run).
//!   **Exploring** (trigger ii, while the pair stays where it is) uses looks too.
//! * **Which qualified path**: "randomly with a preference to the path with minimum bandwidth
//!   subscription" — uniformly among the qualified paths whose subscription is within
//!   `prefer_within` (default 0.1) of the smallest. Migrating for trigger (i), the pair keeps
//!   its path while it looks and moves only to a qualified one: with none it stays (§3.3: "it
//!   will not continue this migration"; counted in `migrations_aborted`). Joining, or leaving a
//!   failed path, with none qualified it takes the least subscribed. Measured on §5.2 and not
//!   kept (BENCHMARKS.md): ties broken by the links' sum, a draw weighted by 1 − subscription,
//!   and the most subscribed when none qualifies; each left more runs with a placement no
//!   single qualified move undoes.
//! * **Trigger (i)**: a response per RTT at most is judged; the path is violating when it is not
//!   qualified (C_l < Φ_l·B_u on a link, Φ_l counting the pair); `violate_rtts` (5) in a row
//!   trigger a migration. **Backoff** (not in the paper): each migration given up in a row (no
//!   other path qualified) doubles the violating RTTs the next one waits for, up to
//!   2^[`ABORT_BACKOFF_MAX`] (16 × 5 RTTs); a move resets it. A pair that fits nowhere (a 5 Gb/s
//!   pair on a fabric whose links all carry 9 Gb/s of guarantees) otherwise looked every few
//!   RTTs for good: each look used its host's freeze window, so the host's pair that could make
//!   room waited (and, while looks were probes of φ = 0, each zeroed the pair's own records for
//!   a moment).
//!   **Swaps** (not in the paper): a migration given up tells the host
//!   ([`VmPair::take_stuck`]), which trades the pair's path with one of its pairs to the same
//!   peer if both paths are then qualified (`UfabHost::try_swap`,
//!   [`rate::swap_subscription`]; both move at once, [`MoveReason::Swap`], the freeze window
//!   the stuck migration used being that one migration). §3.5 moves pairs one by one, each only
//!   to a path qualified for it: in §5.2 a quarter of the seeds ended with two 5 Gb/s pairs on
//!   one 9.5 Gb/s link and the room they need split among other paths, which only a move onto
//!   a path over-subscribed *until the other pair leaves it* can undo. A swap needs nothing
//!   from the switches a look does not give: P's look of Q's path, Q's probe of it (their
//!   difference is P's record, which marks the links the two paths share) and P's probe of
//!   its own. Swaps between hosts would need coordination µFAB-E does not have.
//!   **Trigger (ii)**: every `look_every_ns` the pair looks at one other candidate; one
//!   qualified with a larger rate (Eqn 3's window over T, by `better_margin`, 10 %) for
//!   `better_for_ns` (30 s) in a row triggers a migration to it.
//! * **Freeze** (§3.5): migrations for triggers (i) and (ii) pass the host's [`MigrationGate`]:
//!   one per freeze window drawn in [1, N] RTTs, the first one too (a request waits for the
//!   end of the window it draws). A failure notification or a lost path migrates at
//!   once (the guarantee is already broken).
//! * **Two-stage admission** (§3.4): a pair new on a path starts from w' = φ·B_u·T and adds
//!   r·T (Eqn 1's share, r = min φ/Φ_l·C_l) once per RTT until w' reaches Eqn (3)'s w; a pair
//!   that resumes after being idle with w above r·T restarts from w' = r·T (Scenario 2). The
//!   window is never below one MTU. Pacing rate: window / T. **What a ramping pair reports**
//!   as w^l (the paper does not say): w', the window it sends with, not Eqn (3)'s target — W_l
//!   is the links' total window in use, and targets the ramp has not reached, summed at the
//!   switches, grew every pair's Eqn (3) window with no traffic behind them (tx_l stays low)
//!   until the ramps caught up together: a 14 → 1 incast peaked at 3.56 C·T, 1.56 with w'.
//!   Past the ramp each link's own w^l is reported, as §3.3 has it.
//! * **Pacing that keeps its schedule**: a pair is paced at w/T by a token bucket one packet
//!   deep ([`crate::pacer::Pacer::set_catch_up`]): a packet that waited for the NIC (busy with
//!   another pair's) does not push the next one back. Timed from when each packet went, as
//!   HPCC's pacer is, every wait was lost, and a wait is a larger share of a fast pair's gap
//!   than of a slow one's: in §5.2 a 5 Gb/s pair paced at 6.3–7.0 Gb/s, its window not full,
//!   sent 4.3–4.9 on a NIC 87 % busy.
//! * **The window in whole packets**: the runtime's pacer rounds the window to the nearest
//!   packet (a packet goes if at least half of it fits;
//!   [`crate::pacer::Pacer::set_whole_packets`]), not up as HPCC's `IsWinBound` does: rounded
//!   up, a 2 Gb/s pair's 5 KB window carried 20 % more and a 5 Gb/s pair's 13.5 KB one 7 %, so
//!   on a shared link the small pairs took part of the large ones' share (§5.2: 5 Gb/s pairs
//!   held under their guarantee).
//! * **Finish** (§3.6): leaving a path, or idle for `idle_finish_ns` (no data to send: the
//!   runtime says so with [`VmPair::keep_alive`] while it has some), the pair sends finish
//!   probes on it until a response shows every slot filled (every switch removed it), at most
//!   `finish_tries` (5) times; then it gives up (counted; the switches' cleaning removes it).
//! * **Several underlay paths per VM-pair** (Appendix F): a `VmPair` is one path's state; a
//!   VM-pair of K paths is K of them, one connection each (the tenant spreads its traffic), its
//!   tokens split by Algorithm 2 (the host's `assign_tokens`). What the paper leaves open:
//!   **L_w is the VM-pair's** — each path probes per K·L_w of its own bytes, so the VM-pair
//!   sends one probe per L_w as a one-path pair does (per path, §5.2 with two paths probed
//!   1.7–1.9 % of the bytes instead of 1.2 %); **distinct routes** — a path chooses among the
//!   qualified candidates its siblings are not on while there is one ([`VmPair::set_avoid`]),
//!   and one that had to share leaves at its first look that finds a free qualified route
//!   ([`MoveReason::Apart`], through the freeze window); a swap never lands a path on a
//!   sibling's route.
//! * **Reordering** (§3.5): with `no_reordering`, the first RTT on a new path carries probes only.
//! * **Which response is which**: the runtime puts [`ProbeTx::ident`] (path index << 12 |
//!   sequence) in the probe's IPv4 identification and the receiver echoes it.

use wire::ufab::{MAX_HOPS, UfabHopRepr, UfabKind, UfabRepr};

use super::rate::{self, LinkInfo};

/// A pair on a path that sent no probe for this many base RTTs, and whose data made no
/// progress for [`STALL_RTTS`] (it stalled: no L_w bytes can go out), probes anyway. A pair
/// whose data moves, however slowly, probes per L_w bytes only (§4.1's scalable probing): a
/// keepalive on time alone probed a slow pair every 4 RTTs, past the L_p / (L_p + L_w) bound.
pub const KEEPALIVE_RTTS: u64 = 4;

/// Base RTTs without progress after which a pair's data counts as stalled: the probe-loss
/// timeout's scale (§4.1: 8 base RTTs). Progress is a packet sent or acknowledged, or nothing
/// outstanding ([`VmPair::on_progress`]): a pair whose packets wait their turn at a NIC shared
/// by 64 pairs sends one every 9 RTTs and is not stalled; one whose path died is.
pub const STALL_RTTS: u64 = 8;

/// Backoff of trigger (i) after migrations given up in a row: the next waits for
/// `violate_rtts` × 2^min(aborted, this) violating RTTs (see the module docs).
pub const ABORT_BACKOFF_MAX: u32 = 4;

/// A pair's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PairConfig {
    /// The pair ID (its probes' UDP source port).
    pub pair_id: u16,
    /// B_u: bandwidth per token, b/s.
    pub b_u_bps: f64,
    /// T: the pair's base RTT, ns.
    pub base_rtt_ns: u64,
    /// The reference RTT windows are carried at (every pair of a fabric the same: its largest
    /// base RTT), ns. See the module docs.
    pub ref_rtt_ns: u64,
    /// η: C_l = η × line rate.
    pub eta: f64,
    /// L_w: data bytes between two probes.
    pub probe_every_bytes: u64,
    /// A probe is lost after this many base RTTs.
    pub probe_timeout_rtts: u32,
    /// Lost probes in a row that fail the path.
    pub losses_to_migrate: u32,
    /// Violating RTTs in a row that trigger a migration (trigger i).
    pub violate_rtts: u32,
    /// How long a better path must stay better (trigger ii), ns.
    pub better_for_ns: u64,
    /// How much larger its rate must be.
    pub better_margin: f64,
    /// How often to look at another candidate, ns (0: never; trigger ii off).
    pub look_every_ns: u64,
    /// Subscription slack within which qualified paths are drawn from.
    pub prefer_within: f64,
    /// Probe only, no data, in the first RTT on a new path.
    pub no_reordering: bool,
    /// Idle this long, the pair finishes its path, ns.
    pub idle_finish_ns: u64,
    /// Finish probes sent before giving up.
    pub finish_tries: u32,
    /// Smallest window, bytes (one MTU).
    pub min_window: f64,
}

impl PairConfig {
    /// The paper's defaults for a pair with `pair_id`, B_u and base RTT.
    pub fn new(pair_id: u16, b_u_bps: f64, base_rtt_ns: u64) -> Self {
        Self {
            pair_id,
            b_u_bps,
            base_rtt_ns: base_rtt_ns.max(1),
            ref_rtt_ns: base_rtt_ns.max(1),
            eta: rate::ETA,
            probe_every_bytes: 4096,
            probe_timeout_rtts: 8,
            losses_to_migrate: 3,
            violate_rtts: 5,
            better_for_ns: 30_000_000_000,
            better_margin: 0.1,
            look_every_ns: 1_000_000_000,
            prefer_within: 0.1,
            no_reordering: false,
            idle_finish_ns: 10_000_000,
            finish_tries: 5,
            min_window: 1024.0,
        }
    }
}

/// A probe to send: the runtime builds the frame (the path's labels, the pair's addresses,
/// [`ufab_repr`](Self::ufab_repr) after UDP, `ident` in the IPv4 identification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeTx {
    /// Candidate path index.
    pub path: usize,
    /// Probe, finish or look.
    pub kind: UfabKind,
    /// UDP source port: the pair ID.
    pub pair_id: u16,
    /// IPv4 identification: path << 12 | sequence.
    pub ident: u16,
    /// φ carried.
    pub phi: u32,
    /// Hop slots (the path's length).
    pub hops: u8,
    /// w^l per slot, wire units.
    pub windows: [u16; MAX_HOPS],
}

impl ProbeTx {
    /// The µFAB header and slots to put after UDP.
    pub fn ufab_repr(&self) -> UfabRepr {
        let mut hops = [UfabHopRepr::default(); MAX_HOPS];
        for (h, &w) in hops.iter_mut().zip(&self.windows).take(usize::from(self.hops)) {
            h.window = w;
        }
        UfabRepr { kind: self.kind, n_hop: 0, phi_pair: self.phi.min(0xff_ffff), slots: self.hops, hops }
    }
}

/// The host's migration gate (§3.5): one migration per freeze window drawn in [1, N] RTTs.
#[derive(Debug, Clone)]
pub struct MigrationGate {
    /// The end of the freeze window drawn, while one is.
    open_at: Option<u64>,
    n_rtts: u32,
    rng: u64,
}

impl MigrationGate {
    /// A gate drawing windows in [1, `n_rtts`] RTTs (the paper picks N = 10), seeded.
    pub fn new(n_rtts: u32, seed: u64) -> Self {
        Self { open_at: None, n_rtts: n_rtts.max(1), rng: splitmix(seed) | 1 }
    }

    /// Whether a migration may happen at `now`. A request with no window drawn draws one, in
    /// [1, N] base RTTs, and waits for its end; the first request at or after the end passes
    /// and the next one draws anew — one migration per window, and hosts that all see the same
    /// violation at once do not all move at once (the oscillation §3.5 avoids).
    pub fn try_pass(&mut self, now: u64, base_rtt_ns: u64) -> bool {
        match self.open_at {
            None => {
                let k = 1 + self.next_u64() % u64::from(self.n_rtts);
                self.open_at = Some(now + k * base_rtt_ns);
                false
            }
            Some(t) if now >= t => {
                self.open_at = None;
                true
            }
            Some(_) => false,
        }
    }

    /// When the window drawn ends (0: none drawn).
    pub fn next_allowed(&self) -> u64 {
        self.open_at.unwrap_or(0)
    }

    fn next_u64(&mut self) -> u64 {
        // xorshift64*: the sans-IO core draws from its own seeded generator.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A seed spread over all 64 bits (SplitMix64's finaliser), so that nearby seeds draw apart.
fn splitmix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Why the pair moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveReason {
    /// Joining: the first path.
    Join,
    /// Trigger (i): the guarantee violated for `violate_rtts`.
    Violated,
    /// Trigger (ii): a better qualified path for `better_for_ns`.
    Better,
    /// A failure notification or lost probes.
    Failed,
    /// One side of a swap between two pairs of a host (see the host's `try_swap`): a pair
    /// stuck on a violated path and one of its host's pairs to the same peer trade paths.
    Swap,
    /// A path of a multi-path VM-pair on a route another of its paths is on, to a qualified
    /// route none is on (Appendix F; [`VmPair::set_avoid`]).
    Apart,
}

impl MoveReason {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Join => "join",
            Self::Violated => "violated",
            Self::Better => "better",
            Self::Failed => "failed",
            Self::Swap => "swap",
            Self::Apart => "apart",
        }
    }
}

/// Counters of a pair.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairStats {
    /// Probes sent (all kinds).
    pub probes: u64,
    /// Responses taken.
    pub responses: u64,
    /// Probes lost (timed out).
    pub probes_lost: u64,
    /// Failure notifications.
    pub failures: u64,
    /// Migrations, joins included.
    pub moves: u64,
    /// Migrations a freeze window held back.
    pub frozen: u64,
    /// Finishes acknowledged by every switch.
    pub finishes_acked: u64,
    /// Finishes given up after `finish_tries`.
    pub finishes_abandoned: u64,
    /// Responses that matched no outstanding probe (late, duplicated).
    pub stale_responses: u64,
    /// Migrations (trigger i) given up: no other candidate was qualified, so the pair stayed.
    pub migrations_aborted: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Nothing,
    Probe,
    /// Joining or migrating: φ = 0 under the pair's ID.
    Look,
    /// Trigger (ii): φ = 0 under the look ID.
    Explore,
    Finish,
}

#[derive(Debug, Clone)]
struct PathState {
    hops: u8,
    /// The outstanding probe: its kind, when sent, its sequence.
    outstanding: Option<(Want, u64, u16)>,
    /// What to send next on this path.
    want: Want,
    /// Last telemetry (Φ_l counting the pair for probes, without for looks).
    links: [Option<LinkInfo>; MAX_HOPS],
    /// When that telemetry came back.
    seen_at: Option<u64>,
    /// From a look probe (Φ_l without the pair).
    looked: bool,
    losses: u32,
    finish_tries: u32,
    failed: bool,
    /// w^l last computed per hop, bytes.
    w_l: [f64; MAX_HOPS],
}

/// The pair's phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    /// No path yet: looking at the candidates.
    Joining,
    /// On a path.
    Active,
    /// No traffic, its path finished.
    Idle,
}

/// One VM-pair's µFAB-E.
#[derive(Debug, Clone)]
pub struct VmPair {
    cfg: PairConfig,
    paths: Vec<PathState>,
    phase: Phase,
    current: Option<usize>,
    /// φ_{a→b}, tokens (from the host's Algorithm 1).
    phi: f64,
    /// The receiver's admission from the last response.
    phi_d: f64,
    /// Eqn (3)'s window on the current path, bytes.
    w_eq3: f64,
    /// Two-stage admission: w' while ramping.
    ramp: Option<f64>,
    last_ramp_step: u64,
    window: f64,
    /// r: Eqn (1)'s share on the current path, b/s.
    share: f64,
    violated: u32,
    /// Trigger-(i) migrations given up in a row (no qualified candidate): each doubles the
    /// violating RTTs the next one waits for, up to 2^[`ABORT_BACKOFF_MAX`].
    aborted_in_row: u32,
    last_judged: u64,
    better: Option<(usize, u64)>,
    next_look: u64,
    look_rr: usize,
    joined_at: u64,
    /// Data held back until then (no-reordering).
    hold_until: u64,
    bytes_since_probe: u64,
    /// When the last probe of the current path went out.
    last_probe_at: u64,
    /// When its data last made progress ([`VmPair::on_sent`], [`VmPair::on_progress`]).
    last_progress_at: u64,
    last_sent_at: u64,
    seq: u16,
    rng: u64,
    moves: Vec<(u64, usize, MoveReason)>,
    /// Why the pair is looking (joining or migrating).
    pending_reason: Option<MoveReason>,
    /// Looking for a better path while on one (trigger i), and why.
    migrating: Option<MoveReason>,
    /// A trigger-(i) migration was just given up (no other candidate qualified): the host may
    /// try a swap ([`take_stuck`](Self::take_stuck)).
    stuck: bool,
    /// Candidates the VM-pair's other paths are on (bit i: path i), avoided while another is
    /// qualified.
    avoid: u64,
    /// The sender's own NIC link, as its host reports it ([`set_nic`](Self::set_nic)).
    nic: Option<LinkInfo>,
    /// The pair's w^l on it.
    nic_w: f64,
    stats: PairStats,
}

impl VmPair {
    /// A pair over candidate paths of `path_hops` hops each, with `phi` tokens, joining at `now`
    /// (it looks at every candidate first).
    pub fn new(cfg: PairConfig, path_hops: &[u8], phi: f64, now: u64, seed: u64) -> Self {
        let paths = path_hops
            .iter()
            .map(|&h| PathState {
                hops: h.min(MAX_HOPS as u8),
                outstanding: None,
                want: Want::Look,
                links: [None; MAX_HOPS],
                seen_at: None,
                looked: false,
                losses: 0,
                finish_tries: 0,
                failed: false,
                w_l: [0.0; MAX_HOPS],
            })
            .collect();
        let min_window = cfg.min_window;
        Self {
            cfg,
            paths,
            phase: Phase::Joining,
            current: None,
            phi,
            phi_d: f64::INFINITY,
            w_eq3: 0.0,
            ramp: None,
            last_ramp_step: now,
            window: min_window,
            share: 0.0,
            violated: 0,
            aborted_in_row: 0,
            last_judged: 0,
            better: None,
            next_look: now,
            look_rr: 0,
            joined_at: now,
            hold_until: 0,
            bytes_since_probe: 0,
            last_probe_at: now,
            last_progress_at: now,
            last_sent_at: now,
            seq: 0,
            rng: splitmix(seed) | 1,
            moves: Vec::new(),
            pending_reason: None,
            migrating: None,
            stuck: false,
            avoid: 0,
            nic: None,
            nic_w: 0.0,
            stats: PairStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> PairStats {
        self.stats
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The current path's index.
    pub fn current_path(&self) -> Option<usize> {
        self.current
    }

    /// Every move: when, to which path, why.
    pub fn moves(&self) -> &[(u64, usize, MoveReason)] {
        &self.moves
    }

    /// φ.
    pub fn phi(&self) -> f64 {
        self.phi
    }

    /// The receiver's last admission (φ_D; infinite: unbound).
    pub fn phi_d(&self) -> f64 {
        self.phi_d
    }

    /// Set φ (the host's Algorithm 1 ran).
    pub fn set_phi(&mut self, phi: f64) {
        self.phi = phi.max(0.0);
    }

    /// The window: bytes the pair may have in flight.
    pub fn window_bytes(&self) -> f64 {
        self.window
    }

    /// r: Eqn (1)'s share of the current path, b/s (its guarantee-bearing lower bound).
    pub fn share_bps(&self) -> f64 {
        self.share
    }

    /// The pacing rate: window / T.
    pub fn rate_bps(&self) -> f64 {
        self.window * 8.0 / (self.cfg.base_rtt_ns as f64 * 1e-9)
    }

    /// Whether data may go now (a path, and not held for reordering).
    pub fn may_send(&self, now: u64) -> bool {
        self.phase == Phase::Active && self.current.is_some() && now >= self.hold_until
    }

    /// The sender's NIC link as one more hop of every path: the host's pairs' tokens Φ_0 and
    /// windows W_0 on it, its TX rate, C_0 = η × line rate (no queue: the NIC sends what its
    /// scheduler picks). No switch reports this link — the host link is the sender's own — but
    /// its pairs share it as they share any link: Eqn (3) over it splits the NIC by φ and lets
    /// a pair with the demand take what another leaves (the paper leaves this link to the WFQ
    /// engine; with per-pair pacing, a WFQ alone hands a paced pair's turns to the others).
    pub fn set_nic(&mut self, nic: Option<LinkInfo>) {
        self.nic = nic;
    }

    /// The pair's window on its NIC link (Eqn 3), bytes.
    pub fn nic_window(&self) -> f64 {
        self.nic_w
    }

    /// The guarantee, B = φ × B_u, b/s.
    pub fn guarantee_bps(&self) -> f64 {
        self.phi * self.cfg.b_u_bps
    }

    /// Whether the pair is in the first stage of admission (w' below Eqn 3).
    pub fn ramping(&self) -> bool {
        self.ramp.is_some()
    }

    /// L_w of this path: data bytes between two probes. A VM-pair of K underlay paths probes
    /// each per K·L_w of its bytes, so the VM-pair as a whole sends one probe per L_w (§4.1).
    pub fn set_probe_every_bytes(&mut self, bytes: u64) {
        self.cfg.probe_every_bytes = bytes.max(1);
    }

    /// L_w of this path ([`Self::set_probe_every_bytes`]).
    pub fn probe_every_bytes(&self) -> u64 {
        self.cfg.probe_every_bytes
    }

    /// The candidates (bit i: path i) the VM-pair's other underlay paths are on (Appendix F):
    /// this path chooses among the qualified candidates not in `mask` while there is one, so a
    /// VM-pair's paths are distinct underlay paths where the fabric has room for that; one that
    /// had to share a route leaves it for the first qualified free one its periodic looks find
    /// ([`MoveReason::Apart`]).
    pub fn set_avoid(&mut self, mask: u64) {
        self.avoid = mask;
    }

    /// Whether a trigger-(i) migration was given up since the last call (every other candidate
    /// looked at, none qualified): the host's cue to look for a swap.
    pub fn take_stuck(&mut self) -> bool {
        std::mem::take(&mut self.stuck)
    }

    /// On a path and not looking for another: a pair a swap may move.
    pub fn settled(&self) -> bool {
        self.phase == Phase::Active && self.current.is_some() && self.migrating.is_none()
    }

    /// Candidate `i`'s links as last reported, every hop, and whether by a look (Φ_l and W_l
    /// without the pair's own record) rather than a probe (with it).
    pub fn reported(&self, i: usize) -> Option<(Vec<LinkInfo>, bool)> {
        let p = self.paths.get(i)?;
        Some((self.path_links(i)?, p.looked)).filter(|_| !p.failed)
    }

    /// Move to candidate `i` now as one side of a swap the host decided (its freeze window
    /// already used by the migration that got stuck).
    pub fn swap_to(&mut self, now: u64, i: usize) {
        if i < self.paths.len() && Some(i) != self.current {
            self.migrating = None;
            self.leave_current();
            self.move_to_inner(now, i, MoveReason::Swap);
        }
    }

    fn rtt(&self) -> u64 {
        self.cfg.base_rtt_ns
    }

    /// When the current path's keepalive probe is due: [`KEEPALIVE_RTTS`] after the last probe,
    /// and [`STALL_RTTS`] after the data's last progress.
    fn keepalive_at(&self) -> u64 {
        (self.last_probe_at + KEEPALIVE_RTTS * self.rtt())
            .max(self.last_progress_at + STALL_RTTS * self.rtt())
    }

    /// The pair's data made progress at `at` (the runtime's transport says so: the last
    /// acknowledgement while bytes are outstanding, or now when none are).
    pub fn on_progress(&mut self, at: u64) {
        self.last_progress_at = self.last_progress_at.max(at);
    }

    fn draw(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Data of `bytes` went out at `now` on the current path.
    pub fn on_sent(&mut self, now: u64, bytes: u64) {
        if self.phase == Phase::Idle {
            return;
        }
        self.bytes_since_probe += bytes;
        self.last_sent_at = now;
        self.last_progress_at = now;
        if let Some(c) = self.current
            && self.bytes_since_probe >= self.cfg.probe_every_bytes
            && self.paths[c].want == Want::Nothing
        {
            self.paths[c].want = Want::Probe;
        }
    }

    /// The pair still has data to send at `now` (its window may be holding it back): it is not
    /// idle, whatever it last sent.
    pub fn keep_alive(&mut self, now: u64) {
        if self.phase == Phase::Active {
            self.last_sent_at = self.last_sent_at.max(now);
        }
    }

    /// The pair has data again after being idle (Scenario 2 of §3.4, or a new join).
    pub fn on_backlog(&mut self, now: u64) {
        match self.phase {
            Phase::Idle => {
                self.phase = Phase::Joining;
                self.joined_at = now;
                for p in &mut self.paths {
                    if p.want == Want::Nothing {
                        p.want = Want::Look;
                    }
                }
            }
            Phase::Active => {
                let floor = self.share * self.rtt() as f64 * 1e-9 / 8.0;
                if self.ramp.is_none()
                    && self.window > floor
                    && now.saturating_sub(self.last_sent_at) > self.rtt()
                {
                    self.ramp = Some(floor.max(self.cfg.min_window));
                    self.last_ramp_step = now;
                    self.window = floor.max(self.cfg.min_window);
                }
            }
            Phase::Joining => {}
        }
        self.last_sent_at = now;
    }

    /// The next probe to send at `now`, if any.
    pub fn poll_transmit(&mut self, now: u64) -> Option<ProbeTx> {
        for i in 0..self.paths.len() {
            let p = &self.paths[i];
            if p.outstanding.is_some() || p.want == Want::Nothing {
                continue;
            }
            let want = p.want;
            let hops = p.hops;
            let (kind, pair_id, phi) = match want {
                Want::Look | Want::Explore => (UfabKind::Look, self.cfg.pair_id, 0),
                Want::Probe => (UfabKind::Probe, self.cfg.pair_id, self.phi.round() as u32),
                Want::Finish => (UfabKind::Finish, self.cfg.pair_id, self.phi.round() as u32),
                Want::Nothing => unreachable!(),
            };
            let mut windows = [0u16; MAX_HOPS];
            if !matches!(want, Want::Look | Want::Explore) {
                for (w, &b) in windows.iter_mut().zip(&self.paths[i].w_l).take(usize::from(hops)) {
                    let b = if b > 0.0 { b } else { self.window };
                    *w = UfabHopRepr::encode_window(b as u64);
                }
            }
            self.seq = (self.seq + 1) & 0x0fff;
            let ident = ((i as u16 & 0xf) << 12) | self.seq;
            let p = &mut self.paths[i];
            p.outstanding = Some((want, now, self.seq));
            p.want = Want::Nothing;
            if want == Want::Probe {
                self.bytes_since_probe = 0;
                self.last_probe_at = now;
            }
            if want == Want::Finish {
                p.finish_tries += 1;
            }
            self.stats.probes += 1;
            return Some(ProbeTx { path: i, kind, pair_id, ident, phi, hops, windows });
        }
        None
    }

    /// When [`handle_timeout`](Self::handle_timeout) is next due.
    pub fn poll_timeout(&self) -> Option<u64> {
        let lost = self.cfg.probe_timeout_rtts as u64 * self.rtt();
        let mut t = self.paths.iter().filter_map(|p| p.outstanding.map(|(_, at, _)| at + lost)).min();
        if self.phase == Phase::Active {
            let idle = self.last_sent_at + self.cfg.idle_finish_ns;
            t = Some(t.map_or(idle, |x| x.min(idle)));
            if let Some(c) = self.current
                && self.paths[c].want == Want::Nothing
                && self.paths[c].outstanding.is_none()
            {
                let keep = self.keepalive_at();
                t = Some(t.map_or(keep, |x: u64| x.min(keep)));
            }
            if self.cfg.look_every_ns > 0 && self.paths.len() > 1 {
                t = Some(t.map_or(self.next_look, |x: u64| x.min(self.next_look)));
            }
        }
        t
    }

    /// Timers at `now`: lost probes, idleness, looking at another candidate.
    pub fn handle_timeout(&mut self, now: u64, gate: &mut MigrationGate) {
        let lost = self.cfg.probe_timeout_rtts as u64 * self.rtt();
        for i in 0..self.paths.len() {
            let Some((want, at, _)) = self.paths[i].outstanding else { continue };
            if now < at + lost {
                continue;
            }
            self.stats.probes_lost += 1;
            let p = &mut self.paths[i];
            p.outstanding = None;
            match want {
                Want::Finish => {
                    if p.finish_tries >= self.cfg.finish_tries {
                        self.stats.finishes_abandoned += 1;
                        p.finish_tries = 0;
                    } else {
                        p.want = Want::Finish;
                    }
                }
                Want::Look | Want::Explore => {
                    p.losses += 1;
                    p.failed = p.losses >= self.cfg.losses_to_migrate;
                    p.seen_at = Some(now);
                    p.looked = true;
                    p.links = [None; MAX_HOPS];
                    if self.phase == Phase::Joining && want == Want::Look {
                        self.try_join(now);
                    } else if want == Want::Look {
                        self.try_migrate(now);
                    }
                }
                Want::Probe => {
                    p.losses += 1;
                    if p.losses >= self.cfg.losses_to_migrate && self.current == Some(i) {
                        p.failed = true;
                        self.start_move(now, MoveReason::Failed, gate);
                    } else {
                        p.want = Want::Probe;
                    }
                }
                Want::Nothing => {}
            }
        }
        if self.phase == Phase::Active {
            if now >= self.last_sent_at + self.cfg.idle_finish_ns {
                self.go_idle();
                return;
            }
            // A pair whose data stalls (its window full, its packets lost on a failed link)
            // sends no L_w bytes, so no probe would find out: it probes anyway.
            if let Some(c) = self.current
                && self.paths[c].want == Want::Nothing
                && self.paths[c].outstanding.is_none()
                && now >= self.keepalive_at()
            {
                self.paths[c].want = Want::Probe;
            }
            if self.cfg.look_every_ns > 0 && self.paths.len() > 1 && now >= self.next_look {
                self.next_look = now + self.cfg.look_every_ns;
                let n = self.paths.len();
                for _ in 0..n {
                    self.look_rr = (self.look_rr + 1) % n;
                    if Some(self.look_rr) != self.current && self.paths[self.look_rr].want == Want::Nothing {
                        self.paths[self.look_rr].want = Want::Explore;
                        break;
                    }
                }
            }
        }
    }

    /// The pair's data is done: finish its path now (not after `idle_finish_ns`).
    pub fn finish(&mut self) {
        if self.phase != Phase::Idle {
            self.go_idle();
        }
    }

    /// Data is held until then (no-reordering, the first RTT on a new path).
    pub fn hold_until(&self) -> u64 {
        self.hold_until
    }

    fn go_idle(&mut self) {
        if let Some(c) = self.current.take() {
            self.paths[c].want = Want::Finish;
            self.paths[c].finish_tries = 0;
        }
        self.phase = Phase::Idle;
        self.ramp = None;
        self.better = None;
    }

    /// A response, or a failure notification, that came back for this pair (`resp` parsed from
    /// after UDP, `ident` its IPv4 identification, which names the path and the probe).
    pub fn handle_response(&mut self, now: u64, resp: &UfabRepr, ident: u16, gate: &mut MigrationGate) {
        let i = usize::from(ident >> 12);
        let seq = ident & 0x0fff;
        let Some(p) = self.paths.get_mut(i) else {
            self.stats.stale_responses += 1;
            return;
        };
        let Some((want, _, s)) = p.outstanding else {
            self.stats.stale_responses += 1;
            return;
        };
        if s != seq {
            self.stats.stale_responses += 1;
            return;
        }
        p.outstanding = None;
        self.stats.responses += 1;
        if resp.kind == UfabKind::FailureResponse {
            self.stats.failures += 1;
            p.failed = true;
            p.seen_at = Some(now);
            p.links = [None; MAX_HOPS];
            match want {
                Want::Finish => {
                    // The switches before the failure removed the pair; those after cannot be
                    // reached: their cleaning will.
                    self.stats.finishes_abandoned += 1;
                }
                Want::Probe if self.current == Some(i) => self.start_move(now, MoveReason::Failed, gate),
                _ => {
                    if self.phase == Phase::Joining {
                        self.try_join(now);
                    }
                }
            }
            return;
        }
        p.losses = 0;
        p.failed = false;
        if want == Want::Finish {
            if resp.n_hop >= p.hops {
                self.stats.finishes_acked += 1;
                p.finish_tries = 0;
            } else if p.finish_tries < self.cfg.finish_tries {
                p.want = Want::Finish;
            } else {
                self.stats.finishes_abandoned += 1;
                p.finish_tries = 0;
            }
            return;
        }
        let mut links = [None; MAX_HOPS];
        for (k, slot) in links.iter_mut().enumerate().take(usize::from(resp.n_hop.min(p.hops))) {
            *slot = LinkInfo::from_hop(&resp.hops[k], self.cfg.eta);
        }
        p.links = links;
        p.seen_at = Some(now);
        p.looked = matches!(want, Want::Look | Want::Explore);
        match want {
            Want::Look if self.phase == Phase::Joining => return self.try_join(now),
            Want::Look if self.migrating.is_some() => return self.try_migrate(now),
            Want::Explore if self.phase == Phase::Active => return self.judge_better(now, i, gate),
            Want::Look | Want::Explore => return,
            _ => {}
        }
        // A probe of the current path.
        self.phi_d = if resp.phi_pair >= 0xff_ffff { f64::INFINITY } else { f64::from(resp.phi_pair) };
        if self.current == Some(i) {
            // §4.1: "after receiving the previous response, the VM-pair sends the next probe
            // only after transmitting L_w": what went out while this probe was outstanding
            // does not count towards the next one.
            self.bytes_since_probe = 0;
            if self.paths[i].want == Want::Probe {
                self.paths[i].want = Want::Nothing;
            }
            self.update_window(now, i, gate);
        }
    }

    /// The links of path `i` as last reported (every hop reported).
    fn path_links(&self, i: usize) -> Option<Vec<LinkInfo>> {
        let p = &self.paths[i];
        p.links.iter().take(usize::from(p.hops)).copied().collect()
    }

    fn update_window(&mut self, now: u64, i: usize, gate: &mut MigrationGate) {
        let Some(links) = self.path_links(i) else { return };
        let t = self.rtt();
        let phi = self.phi.max(1e-9);
        // Windows on the links are at the reference RTT (what the probes carry); the pair's own
        // is that over its RTT.
        let t_ref = self.cfg.ref_rtt_ns.max(1);
        let to_own = t as f64 / t_ref as f64;
        let own_ref = self.window / to_own;
        let mut w_ref = f64::INFINITY;
        for (k, l) in links.iter().enumerate() {
            let own = self.paths[i].w_l[k].max(own_ref);
            let w = rate::window_bytes(phi, own, t_ref, l);
            self.paths[i].w_l[k] = w.max(self.cfg.min_window);
            w_ref = w_ref.min(w);
        }
        let mut share = rate::path_share_bps(phi, &links);
        if let Some(l) = self.nic {
            let w = rate::window_bytes(phi, self.nic_w.max(own_ref), t_ref, &l);
            self.nic_w = w.max(self.cfg.min_window);
            w_ref = w_ref.min(w);
            share = share.min(rate::share_bps(phi, &l));
        }
        self.w_eq3 = (w_ref * to_own).max(self.cfg.min_window);
        self.share = share;
        if let Some(w) = self.ramp {
            let mut w = w;
            if now >= self.last_ramp_step + t {
                w += self.share * t as f64 * 1e-9 / 8.0;
                self.last_ramp_step = now;
            }
            if w >= self.w_eq3 {
                self.ramp = None;
                self.window = self.w_eq3;
            } else {
                self.ramp = Some(w);
                self.window = w.max(self.cfg.min_window);
            }
        } else {
            self.window = self.w_eq3;
        }
        // What the probes report as w^l (and the floor of W_l above) is the window the pair
        // sends with, not a target the ramp has not reached: W_l is the links' total window in
        // use. Reporting Eqn (3)'s target during the ramp wound W_l up with no traffic behind it
        // (tx_l stays low, so Eqn (3) grew every pair's target again), and when the ramps
        // caught up the windows jumped together (a 14 → 1 incast peaked at 3.56 C·T).
        if self.ramp.is_some() {
            let in_use_ref = (self.window / to_own).max(self.cfg.min_window);
            for w in self.paths[i].w_l.iter_mut().take(links.len()) {
                *w = w.min(in_use_ref);
            }
        }
        // Trigger (i), judged once per RTT.
        if now >= self.last_judged + t {
            self.last_judged = now;
            if rate::qualified(phi, self.cfg.b_u_bps, &links, false) {
                self.violated = 0;
            } else {
                self.violated += 1;
                if self.violated >= self.cfg.violate_rtts << self.aborted_in_row.min(ABORT_BACKOFF_MAX) {
                    self.start_move(now, MoveReason::Violated, gate);
                }
            }
        }
    }

    /// A look at candidate `i` while on a path: trigger (ii); and for a path of a multi-path
    /// VM-pair that shares its route with another of its paths, a qualified route none of them
    /// is on ([`MoveReason::Apart`], through the host's freeze window).
    fn judge_better(&mut self, now: u64, i: usize, gate: &mut MigrationGate) {
        let (Some(c), Some(links)) = (self.current, self.path_links(i)) else { return };
        let phi = self.phi.max(1e-9);
        if !rate::qualified(phi, self.cfg.b_u_bps, &links, true) {
            self.better = None;
            return;
        }
        let avoided = |k: usize| k < 64 && self.avoid & (1 << k) != 0;
        if avoided(c) && !avoided(i) && self.move_to(now, i, MoveReason::Apart, gate) {
            self.better = None;
            return;
        }
        let there = rate::path_window_bytes(phi, 0.0, self.rtt(), &with_pair(&links, phi, self.window));
        if there > self.w_eq3 * (1.0 + self.cfg.better_margin) && self.paths[c].links[0].is_some() {
            match self.better {
                Some((j, since)) if j == i => {
                    // Frozen, it stays the better path and asks again at its next look.
                    if now >= since + self.cfg.better_for_ns && self.move_to(now, i, MoveReason::Better, gate)
                    {
                        self.better = None;
                    }
                }
                _ => self.better = Some((i, now)),
            }
        } else if self.better.is_some_and(|(j, _)| j == i) {
            self.better = None;
        }
    }

    /// Start looking for another path: every other candidate gets a look probe.
    fn start_move(&mut self, now: u64, why: MoveReason, gate: &mut MigrationGate) {
        if why != MoveReason::Failed && !gate.try_pass(now, self.rtt()) {
            self.stats.frozen += 1;
            self.violated = 0;
            return;
        }
        self.violated = 0;
        if why != MoveReason::Failed && self.current.is_some() {
            // Trigger (i): keep sending on the current path while looking at the others; move
            // only to a qualified one (§3.3: "it will not continue this migration" otherwise).
            self.migrating = Some(why);
            let c = self.current;
            for (i, p) in self.paths.iter_mut().enumerate() {
                if Some(i) != c && !p.failed && p.want == Want::Nothing && p.outstanding.is_none() {
                    p.want = Want::Look;
                }
            }
            return;
        }
        self.leave_current();
        self.phase = Phase::Joining;
        self.joined_at = now;
        self.pending_reason = Some(why);
        for p in &mut self.paths {
            if p.want == Want::Nothing && p.outstanding.is_none() {
                p.want = Want::Look;
            }
        }
    }

    /// Migrating while on a path: once every other candidate answered, move to a qualified one,
    /// or stay.
    fn try_migrate(&mut self, now: u64) {
        let Some(why) = self.migrating else { return };
        if self.looking() {
            return;
        }
        self.migrating = None;
        let cands = self.candidates(self.current);
        let Some(i) = self.pick_qualified(&cands) else {
            self.stats.migrations_aborted += 1;
            self.aborted_in_row += 1;
            self.stuck = true;
            return;
        };
        self.leave_current();
        self.move_to_inner(now, i, why);
    }

    /// Whether a look is still wanted or unanswered.
    fn looking(&self) -> bool {
        self.paths.iter().any(|p| matches!(p.outstanding, Some((Want::Look, _, _))) || p.want == Want::Look)
    }

    /// The looked-at candidates but `skip`, not failed, with every hop reported: (path, its
    /// subscription with the pair added, whether it is qualified).
    fn candidates(&self, skip: Option<usize>) -> Vec<(usize, f64, bool)> {
        let phi = self.phi.max(1e-9);
        let mut cands = Vec::new();
        for i in 0..self.paths.len() {
            if Some(i) == skip || self.paths[i].failed || !self.paths[i].looked {
                continue;
            }
            let Some(links) = self.path_links(i) else { continue };
            let q = rate::qualified(phi, self.cfg.b_u_bps, &links, true);
            cands.push((i, rate::subscription(phi, self.cfg.b_u_bps, &links, true), q));
        }
        cands
    }

    /// A qualified candidate, drawn among those within `prefer_within` of the least subscribed;
    /// of those the VM-pair's other paths are not on ([`Self::set_avoid`]) if any is qualified.
    fn pick_qualified(&mut self, cands: &[(usize, f64, bool)]) -> Option<usize> {
        let avoided = |i: usize| i < 64 && self.avoid & (1 << i) != 0;
        let free = cands.iter().any(|c| c.2 && !avoided(c.0));
        let ok = |c: &&(usize, f64, bool)| c.2 && !(free && avoided(c.0));
        let min = cands.iter().filter(ok).map(|c| c.1).reduce(f64::min)?;
        let near: Vec<usize> =
            cands.iter().filter(ok).filter(|c| c.1 <= min + self.cfg.prefer_within).map(|c| c.0).collect();
        Some(near[(self.draw() % near.len() as u64) as usize])
    }

    /// Leave the current path: finish it (until every switch acknowledges).
    fn leave_current(&mut self) {
        if let Some(c) = self.current.take() {
            self.paths[c].want = Want::Finish;
            self.paths[c].finish_tries = 0;
            self.paths[c].outstanding = None;
        }
    }

    /// Joining: once every candidate answered (or was given up), choose.
    fn try_join(&mut self, now: u64) {
        if self.looking() {
            return;
        }
        let cands = self.candidates(None);
        let why = self.pending_reason.take().unwrap_or(MoveReason::Join);
        // None qualified: the least subscribed (the guarantee cannot be met anywhere).
        let pick = self
            .pick_qualified(&cands)
            .or_else(|| cands.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|c| c.0));
        match pick {
            Some(i) => self.move_to_inner(now, i, why),
            None => {
                // Every candidate failed or silent: look again.
                for p in &mut self.paths {
                    p.failed = false;
                    p.losses = 0;
                    p.want = Want::Look;
                }
            }
        }
    }

    /// Move to path `i` if the gate lets it; whether it did.
    fn move_to(&mut self, now: u64, i: usize, why: MoveReason, gate: &mut MigrationGate) -> bool {
        if !gate.try_pass(now, self.rtt()) {
            self.stats.frozen += 1;
            return false;
        }
        self.leave_current();
        self.move_to_inner(now, i, why);
        true
    }

    fn move_to_inner(&mut self, now: u64, i: usize, why: MoveReason) {
        self.aborted_in_row = 0;
        self.current = Some(i);
        self.phase = Phase::Active;
        self.stats.moves += 1;
        self.moves.push((now, i, why));
        // Scenario 1: the bootstrap window φ·B_u·T, then additive increase per RTT.
        let t = self.rtt() as f64 * 1e-9;
        let boot = (self.phi * self.cfg.b_u_bps * t / 8.0).max(self.cfg.min_window);
        self.ramp = Some(boot);
        self.window = boot;
        self.last_ramp_step = now;
        self.last_judged = now;
        self.violated = 0;
        self.better = None;
        self.last_sent_at = now;
        self.next_look = now + self.cfg.look_every_ns;
        self.paths[i].w_l = [boot; MAX_HOPS];
        self.paths[i].want = Want::Probe;
        self.paths[i].outstanding = None;
        self.hold_until =
            if self.cfg.no_reordering && why != MoveReason::Join { now + self.rtt() } else { now };
    }
}

/// `links` as they would be with the pair added (φ, its window): a look's Φ_l and W_l do not
/// count it.
fn with_pair(links: &[LinkInfo], phi: f64, w: f64) -> Vec<LinkInfo> {
    links.iter().map(|l| LinkInfo { phi_l: l.phi_l + phi, w_l: l.w_l + w, ..*l }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::ufab::speed_class_of;

    const T: u64 = 24_000;
    const BU: f64 = 1e9;

    /// A link as a 10G switch port reports it: Φ_l, W_l bytes, tx_l Gb/s, q_l bytes.
    #[derive(Clone, Copy)]
    struct L(u16, u64, f64, u64);

    fn respond(p: &mut VmPair, now: u64, tx: &ProbeTx, links: &[L], gate: &mut MigrationGate) {
        let mut r = tx.ufab_repr();
        r.kind = UfabKind::Response;
        r.n_hop = tx.hops;
        for (h, l) in r.hops.iter_mut().zip(links) {
            *h = UfabHopRepr {
                window: UfabHopRepr::encode_window(l.1),
                phi_l: l.0,
                tx_l: UfabHopRepr::encode_tx((l.2 * 1e9) as u64),
                q_l: UfabHopRepr::encode_q(l.3),
                c_l: speed_class_of(10_000_000_000),
            };
        }
        r.phi_pair = 0xff_ffff;
        p.handle_response(now, &r, tx.ident, gate);
    }

    /// A look (joining, migrating or exploring).
    fn is_look(t: &ProbeTx) -> bool {
        t.kind == UfabKind::Look
    }

    fn all(p: &mut VmPair, now: u64) -> Vec<ProbeTx> {
        std::iter::from_fn(|| p.poll_transmit(now)).collect()
    }

    fn pair(paths: usize) -> (VmPair, MigrationGate) {
        let mut cfg = PairConfig::new(7, BU, T);
        cfg.look_every_ns = 0;
        (VmPair::new(cfg, &vec![2; paths], 2.0, 0, 42), MigrationGate::new(10, 9))
    }

    /// Joining looks at every candidate with φ = 0 under the look ID, and takes the qualified
    /// path least subscribed: path 0 has Φ_l = 8 of 9.5 tokens' room (8 + 2 > 9.5: not
    /// qualified), path 1 has 2. It starts from the bootstrap window φ·B_u·T = 6 000 B.
    #[test]
    fn join_takes_the_least_subscribed_qualified_path() {
        let (mut p, mut g) = pair(2);
        let looks = all(&mut p, 0);
        assert_eq!(looks.len(), 2);
        assert!(looks.iter().all(|t| t.phi == 0 && t.pair_id == 7 && t.windows == [0; MAX_HOPS]));
        assert!(!p.may_send(0));
        respond(&mut p, 10_000, &looks[0], &[L(8, 0, 1.0, 0), L(0, 0, 0.0, 0)], &mut g);
        assert_eq!(p.phase(), Phase::Joining, "waits for every candidate");
        respond(&mut p, 12_000, &looks[1], &[L(2, 0, 1.0, 0), L(2, 0, 0.0, 0)], &mut g);
        assert_eq!(p.current_path(), Some(1));
        assert_eq!(p.moves(), &[(12_000, 1, MoveReason::Join)]);
        assert!(p.may_send(12_000));
        assert!((p.window_bytes() - 6000.0).abs() < 1e-6);
        // The first real probe goes on path 1, with φ and the bootstrap window in each slot.
        let pr = all(&mut p, 12_000);
        assert_eq!(pr.len(), 1);
        assert_eq!((pr[0].path, pr[0].pair_id, pr[0].phi, pr[0].kind), (1, 7, 2, UfabKind::Probe));
        assert_eq!(pr[0].windows[0], UfabHopRepr::encode_window(6000));
    }

    /// A path of a multi-path VM-pair (Appendix F) avoids the candidates its siblings are on
    /// while another is qualified: path 0 (Φ_l 2) is the least subscribed but a sibling's, so
    /// it takes path 1 (Φ_l 4); with path 1 not qualified either (Φ_l 8), it shares path 0.
    #[test]
    fn a_path_avoids_its_siblings_candidates_while_another_qualifies() {
        for (phi_1, want) in [(4, 1), (8, 0)] {
            let (mut p, mut g) = pair(2);
            p.set_avoid(0b01);
            let looks = all(&mut p, 0);
            respond(&mut p, 1000, &looks[0], &[L(2, 0, 0.0, 0); 2], &mut g);
            respond(&mut p, 1000, &looks[1], &[L(phi_1, 0, 0.0, 0); 2], &mut g);
            assert_eq!(p.current_path(), Some(want), "path 1 at Φ_l {phi_1}");
        }
    }

    fn joined() -> (VmPair, MigrationGate, u64) {
        let (mut p, mut g) = pair(2);
        let looks = all(&mut p, 0);
        respond(&mut p, 1000, &looks[0], &[L(2, 0, 0.0, 0); 2], &mut g);
        respond(&mut p, 1000, &looks[1], &[L(6, 0, 0.0, 0); 2], &mut g);
        assert_eq!(p.current_path(), Some(0));
        (p, g, 1000)
    }

    /// Two-stage admission: from the bootstrap window the pair adds r·T per RTT (r = φ/Φ_l·C_l
    /// = 2/4 × 9.5 Gb/s: 14 250 B per 24 µs) until it reaches Eqn (3)'s window, then follows it.
    #[test]
    fn the_window_ramps_by_r_t_per_rtt_to_eqn_3() {
        let (mut p, mut g, mut now) = joined();
        // Eqn (3) here: φ/Φ_l = 1/2, W_l = 40 000, the link half used, no queue → capped at C·T
        // = 28 500 B.
        let links = [L(4, 40_000, 4.75, 0), L(4, 40_000, 4.75, 0)];
        let mut seen = Vec::new();
        for _ in 0..4 {
            let pr = all(&mut p, now);
            assert_eq!(pr.len(), 1);
            now += T;
            respond(&mut p, now, &pr[0], &links, &mut g);
            seen.push(p.window_bytes());
            p.on_sent(now, 4096);
        }
        assert!((seen[0] - (6000.0 + 14_250.0)).abs() < 1.0, "{seen:?}");
        assert!((seen[1] - 28_500.0).abs() < 1.0, "{seen:?}");
        assert!(!p.ramping());
        assert!((p.share_bps() - 4.75e9).abs() < 1.0);
        // A queue builds: the window falls with it (Eqn 3), right away.
        let pr = all(&mut p, now);
        now += T;
        respond(&mut p, now, &pr[0], &[L(4, 40_960, 9.5, 28_672), L(4, 40_960, 4.75, 0)], &mut g);
        // Eqn (3) in the wire's units (W_l of 256 B, q_l of 1 KiB): 0.5 × 40 960 × 28 500 /
        // (28 500 + 28 672).
        let want = 0.5 * 40_960.0 * 28_500.0 / (28_500.0 + 28_672.0);
        assert!((p.window_bytes() - want).abs() < 1.0, "{} vs {want}", p.window_bytes());
    }

    /// While it ramps, a pair reports w' — the window it sends with — in every slot, not Eqn
    /// (3)'s target: the switches sum what it reports into W_l, and a target with no traffic
    /// behind it would grow every pair's Eqn (3) window in turn.
    #[test]
    fn a_ramping_pair_reports_the_window_it_sends_with() {
        let (mut p, mut g, mut now) = joined();
        let links = [L(4, 40_000, 4.75, 0), L(4, 40_000, 4.75, 0)];
        let pr = all(&mut p, now);
        now += T;
        respond(&mut p, now, &pr[0], &links, &mut g);
        assert!(p.ramping());
        let w = p.window_bytes();
        assert!((w - (6000.0 + 14_250.0)).abs() < 1.0, "{w}");
        p.on_sent(now, 4096);
        let pr = all(&mut p, now);
        assert_eq!(pr.len(), 1);
        for k in 0..2 {
            assert_eq!(pr[0].windows[k], UfabHopRepr::encode_window(w as u64), "slot {k}");
        }
        // Past the ramp, each link's own w^l (here the cap C·T on both).
        now += T;
        respond(&mut p, now, &pr[0], &links, &mut g);
        assert!(!p.ramping());
        p.on_sent(now, 4096);
        let pr = all(&mut p, now);
        assert_eq!(pr[0].windows[0], UfabHopRepr::encode_window(28_500));
    }

    /// Scalable probing (§4.1): a pair that keeps sending, however slowly, probes once per L_w
    /// bytes (4 KB) and never on time alone; a pair whose data stopped probes once STALL_RTTS
    /// pass without data (and KEEPALIVE_RTTS without a probe).
    #[test]
    fn a_slow_pair_probes_per_l_w_and_a_stalled_one_keeps_alive() {
        let (mut p, mut g, mut now) = joined();
        let links = [L(4, 40_000, 4.75, 0), L(4, 40_000, 4.75, 0)];
        let pr = all(&mut p, now);
        now += T / 2;
        respond(&mut p, now, &pr[0], &links, &mut g);
        // 500 B per RTT for 7 RTTs: 3 500 B < L_w, no probe, though 4 RTTs passed.
        for _ in 0..7 {
            now += T;
            p.on_sent(now, 500);
            p.handle_timeout(now, &mut g);
            assert!(p.poll_transmit(now).is_none(), "at {now}");
        }
        // The next 600 B pass L_w: a probe.
        now += T;
        p.on_sent(now, 600);
        let pr = all(&mut p, now);
        assert_eq!(pr.len(), 1);
        now += T / 2;
        respond(&mut p, now, &pr[0], &links, &mut g);
        // Data stops (nothing sent, nothing acknowledged): the keepalive comes due STALL_RTTS
        // after the last progress, and it fires.
        let last_data = now - T / 2;
        let due = p.poll_timeout().expect("a timer");
        assert_eq!(due, last_data + STALL_RTTS * T);
        p.handle_timeout(due - 1, &mut g);
        assert!(p.poll_transmit(due - 1).is_none());
        p.handle_timeout(due, &mut g);
        assert_eq!(all(&mut p, due).len(), 1);
    }

    /// §4.1: L_w is counted from the response, so bytes sent while a probe is out do not bring
    /// the next one forward: a pair sending 3 000 B per RTT probes once per 4 096 B after each
    /// response, not once per RTT.
    #[test]
    fn l_w_is_counted_from_the_response() {
        let (mut p, mut g, mut now) = joined();
        let links = [L(4, 40_000, 4.75, 0), L(4, 40_000, 4.75, 0)];
        let pr = all(&mut p, now);
        now += T / 2;
        respond(&mut p, now, &pr[0], &links, &mut g);
        // 5 000 B go out; a probe.
        now += T / 2;
        p.on_sent(now, 5_000);
        let pr = all(&mut p, now);
        assert_eq!(pr.len(), 1);
        // 3 000 B more while it is out: over L_w since the probe left, not since it came back.
        now += T / 2;
        p.on_sent(now, 3_000);
        now += T / 2;
        respond(&mut p, now, &pr[0], &links, &mut g);
        assert!(all(&mut p, now).is_empty(), "nothing counted since the response");
        now += T / 2;
        p.on_sent(now, 3_000);
        assert!(all(&mut p, now).is_empty(), "3 000 B < L_w");
        now += T / 2;
        p.on_sent(now, 1_100);
        assert_eq!(all(&mut p, now).len(), 1, "4 100 B since the response");
    }

    /// RTTs of a violated path 0 (path 1 idle) until the joined pair sends a look probe: the
    /// probe and the round it came in (at most `max` rounds). The pair keeps its path while it
    /// decides, and looks at the other path only.
    fn violate_until_look(p: &mut VmPair, g: &mut MigrationGate, now: &mut u64, max: u32) -> (ProbeTx, u32) {
        let bad = [L(12, 40_000, 9.0, 0), L(2, 0, 1.0, 0)];
        for round in 0..max {
            let out = all(p, *now);
            *now += T;
            if let Some(pr) = out.iter().find(|t| t.kind == UfabKind::Probe && t.path == 0 && !is_look(t)) {
                respond(p, *now, pr, &bad, g);
            }
            p.on_sent(*now, 4096);
            assert!(p.may_send(*now), "it keeps its path while it decides");
            if let Some(look) = out.iter().find(|t| is_look(t)) {
                assert_eq!(look.path, 1, "it looks at the other path only");
                return (*look, round);
            }
        }
        panic!("no look in {max} rounds");
    }

    /// Trigger (i): five RTTs on a path that cannot carry every guarantee (Φ_l = 12 tokens of
    /// 1 Gb/s on 9.5 Gb/s) ask the host's gate, which holds the request for a window of 1 to 10
    /// RTTs; five more after it, the pair looks at its other candidate while it keeps sending.
    /// An unqualified candidate: it stays (aborted). A qualified one: it moves, finishing the
    /// old path until every switch acknowledges.
    #[test]
    fn five_violating_rtts_migrate_once_per_freeze_window() {
        let (mut p, mut g, mut now) = joined();
        let (look, rounds) = violate_until_look(&mut p, &mut g, &mut now, 40);
        assert!((10..=20).contains(&rounds), "{rounds} rounds: 5, a window of 1 to 10, 5 more");
        assert_eq!(p.stats().frozen, 1);
        // Path 1 is no better: stay.
        respond(&mut p, now + 1000, &look, &[L(9, 0, 8.0, 0); 2], &mut g);
        assert_eq!(p.current_path(), Some(0));
        assert_eq!(p.stats().migrations_aborted, 1);
        // Again, and now path 1 qualifies: move.
        let (look, _) = violate_until_look(&mut p, &mut g, &mut now, 40);
        respond(&mut p, now + 1000, &look, &[L(2, 0, 1.0, 0); 2], &mut g);
        assert_eq!(p.current_path(), Some(1));
        assert_eq!(p.moves().last().unwrap().2, MoveReason::Violated);
        let out = all(&mut p, now + 1000);
        let fin: Vec<_> = out.iter().filter(|t| t.kind == UfabKind::Finish).collect();
        assert_eq!((fin.len(), fin[0].path), (1, 0));
        // The finish comes back with one slot of two filled: sent again; then both: acknowledged.
        let mut r = fin[0].ufab_repr();
        r.kind = UfabKind::Response;
        r.n_hop = 1;
        p.handle_response(now + 2000, &r, fin[0].ident, &mut g);
        let again: Vec<_> =
            all(&mut p, now + 2000).into_iter().filter(|t| t.kind == UfabKind::Finish).collect();
        assert_eq!(again.len(), 1);
        r.n_hop = 2;
        p.handle_response(now + 3000, &r, again[0].ident, &mut g);
        assert_eq!(p.stats().finishes_acked, 1);
        // Violations again while the host's freeze window is closed: held back, counted.
        let mut shut = MigrationGate::new(u32::MAX, 5);
        assert!(!shut.try_pass(now, T), "draws a window");
        let before = p.stats().frozen;
        now += 3000;
        let mut first: Vec<ProbeTx> =
            out.iter().filter(|t| t.path == 1 && t.kind == UfabKind::Probe).copied().collect();
        for _ in 0..5 {
            let mut pr: Vec<_> =
                all(&mut p, now).into_iter().filter(|t| t.path == 1 && !is_look(t)).collect();
            pr.append(&mut first);
            now += T;
            respond(&mut p, now, &pr[0], &[L(12, 40_000, 9.0, 0); 2], &mut shut);
            p.on_sent(now, 4096);
        }
        assert_eq!(p.stats().frozen, before + 1);
        assert_eq!(p.current_path(), Some(1));
    }

    /// A migration given up (no other path qualified) doubles the violating RTTs the next one
    /// waits for, up to 2^ABORT_BACKOFF_MAX; a move resets it. Each wait is the violations
    /// asked for twice over: the first request draws the host's freeze window (at most 10
    /// RTTs here), and the count starts again.
    #[test]
    fn aborted_migrations_back_off() {
        let (mut p, mut g, mut now) = joined();
        for aborted in 0..=ABORT_BACKOFF_MAX + 1 {
            let need = 5 << aborted.min(ABORT_BACKOFF_MAX);
            let (look, rounds) = violate_until_look(&mut p, &mut g, &mut now, 400);
            assert!(
                (2 * need - 2..=2 * need + 10).contains(&rounds),
                "after {aborted} aborted: {rounds} rounds"
            );
            respond(&mut p, now + 1000, &look, &[L(9, 0, 8.0, 0); 2], &mut g);
            assert_eq!(p.stats().migrations_aborted, u64::from(aborted) + 1);
            assert_eq!(p.current_path(), Some(0));
        }
        // Path 1 qualifies at the next look: the pair moves, and its next wait is 5 again.
        let (look, _) = violate_until_look(&mut p, &mut g, &mut now, 400);
        respond(&mut p, now + 1000, &look, &[L(2, 0, 1.0, 0); 2], &mut g);
        assert_eq!(p.current_path(), Some(1));
        assert_eq!(p.aborted_in_row, 0);
    }

    /// The gate: one pass, then closed for 1..=N RTTs.
    #[test]
    fn the_gate_opens_once_per_freeze_window() {
        let mut g = MigrationGate::new(10, 77);
        let mut waits = std::collections::HashSet::new();
        for round in 0..50u64 {
            let t0 = round * 1_000_000;
            assert!(!g.try_pass(t0, T), "a request draws a window");
            let wait = g.next_allowed() - t0;
            assert!((T..=10 * T).contains(&wait), "{wait}");
            assert!(!g.try_pass(t0 + wait - 1, T));
            assert!(g.try_pass(t0 + wait, T));
            waits.insert(wait / T);
        }
        assert!(waits.len() >= 8, "windows drawn over 1..=10 RTTs: {waits:?}");
    }

    /// A failure notification on the current path moves the pair at once (no freeze); lost
    /// probes do too after three in a row.
    #[test]
    fn failures_and_lost_probes_move_the_pair_at_once() {
        let (mut p, mut g, now) = joined();
        let pr = all(&mut p, now);
        let mut r = pr[0].ufab_repr();
        r.kind = UfabKind::FailureResponse;
        p.handle_response(now + 5000, &r, pr[0].ident, &mut g);
        assert_eq!(p.phase(), Phase::Joining);
        let looks: Vec<_> = all(&mut p, now + 5000).into_iter().filter(is_look).collect();
        assert_eq!(looks.len(), 1, "the failed path is not a candidate");
        respond(&mut p, now + 6000, &looks[0], &[L(2, 0, 0.0, 0); 2], &mut g);
        assert_eq!(p.current_path(), Some(1));
        assert_eq!(p.moves().last().unwrap().2, MoveReason::Failed);

        let (mut p, mut g, mut now) = joined();
        for _ in 0..3 {
            let pr: Vec<_> = all(&mut p, now).into_iter().filter(|t| t.path == 0).collect();
            assert_eq!(pr.len(), 1);
            let sent = now;
            now = p.poll_timeout().unwrap();
            assert_eq!(now, sent + 8 * T, "8 base RTTs");
            p.handle_timeout(now, &mut g);
        }
        assert_eq!(p.stats().probes_lost, 3);
        assert_eq!(p.phase(), Phase::Joining);
    }

    /// Idle for `idle_finish_ns`: the pair finishes its path; new data rejoins (looks first).
    #[test]
    fn an_idle_pair_finishes_and_rejoins() {
        let (mut p, mut g, now) = joined();
        let t = now + p.cfg.idle_finish_ns;
        let _ = all(&mut p, now);
        p.handle_timeout(t, &mut g);
        assert_eq!(p.phase(), Phase::Idle);
        assert!(!p.may_send(t));
        p.on_backlog(t + 1);
        assert_eq!(p.phase(), Phase::Joining);
        assert!(all(&mut p, t + 1).iter().any(is_look));
    }

    /// A pair on path 0 of two (joined at Φ_l 2 against 6), looking at the other every 100 µs,
    /// with trigger (ii) after `better_for_ns`.
    fn exploring(better_for_ns: u64) -> (VmPair, MigrationGate) {
        let mut cfg = PairConfig::new(7, BU, T);
        cfg.look_every_ns = 100_000;
        cfg.better_for_ns = better_for_ns;
        let mut p = VmPair::new(cfg, &[2, 2], 2.0, 0, 1);
        let mut g = MigrationGate::new(1, 3);
        let looks = all(&mut p, 0);
        respond(&mut p, 1000, &looks[0], &[L(2, 0, 0.0, 0); 2], &mut g);
        respond(&mut p, 1000, &looks[1], &[L(6, 0, 0.0, 0); 2], &mut g);
        assert_eq!(p.current_path(), Some(0));
        (p, g)
    }

    /// Send and answer every probe and look with `links(now, path)` every 50 µs until the pair
    /// leaves path 0 (or 2 ms pass); when it did.
    fn until_it_moves(p: &mut VmPair, g: &mut MigrationGate, links: impl Fn(u64, usize) -> [L; 2]) -> u64 {
        let mut now = 1000;
        while now < 2_000_000 && p.current_path() == Some(0) {
            for t in all(p, now) {
                respond(p, now + T, &t, &links(now, t.path), g);
            }
            p.on_sent(now, 4096);
            now += 50_000;
            p.handle_timeout(now, g);
        }
        now
    }

    /// Trigger (ii): a qualified candidate whose Eqn (3) window beats the current one by more
    /// than 10 % for `better_for_ns` draws the pair over.
    #[test]
    fn a_persistently_better_path_draws_the_pair() {
        let (mut p, mut g) = exploring(1_000_000);
        // Path 0 gets busy (a queue), path 1 stays idle.
        let busy = [L(8, 60_000, 9.5, 20_000); 2];
        let idle = [L(1, 1000, 0.5, 0); 2];
        let now = until_it_moves(&mut p, &mut g, |_, path| if path == 0 { busy } else { idle });
        assert_eq!(p.current_path(), Some(1), "moved at {now}");
        assert_eq!(p.moves().last().unwrap().2, MoveReason::Better);
        assert!(now >= 1_000_000, "not before better_for_ns: {now}");
    }

    /// A path of a multi-path VM-pair that had to share its route with another of its paths
    /// leaves it at its first look that finds a qualified route none of them is on, at once
    /// (not after `better_for_ns`), and only then: no better Eqn (3) window is needed.
    #[test]
    fn a_path_sharing_its_siblings_route_moves_apart_when_it_can() {
        let (mut p, mut g) = exploring(30_000_000_000);
        // A sibling is on path 0 too; path 1 is not qualified (Φ_l 8 + 2 > 9.5), then it is.
        p.set_avoid(0b01);
        let now = until_it_moves(&mut p, &mut g, |now, path| {
            let phi_l = if path == 0 || now >= 500_000 { 4 } else { 8 };
            [L(phi_l, 8000, 4.0, 0); 2]
        });
        assert_eq!(p.current_path(), Some(1), "moved at {now}");
        assert_eq!(p.moves().last().unwrap().2, MoveReason::Apart);
        assert!((500_000..=700_000).contains(&now), "at the first look after path 1 qualified: {now}");
    }
}
