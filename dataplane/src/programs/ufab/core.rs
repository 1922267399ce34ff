//! µFAB-C's state (seed `003` §3.6, §4.2): per egress link Φ_l, W_l and tx_l, the Bloom filter
//! that recognises active VM-pairs, the pairs' last (φ, w), and the periodic cleaning of silent
//! quits. Sans-IO: driven by `(now, probe)` and `(now, tx bytes)`, no clock read.
//!
//! **Bloom filter** (§4.2: "two memory banks running in parallel … a 2-way hashing Bloom filter
//! of 20 KB … 20K distinct VM-pairs with less than 5 % false positives"): two banks of
//! about `bloom_bytes × 4` bits each, a key sets one bit per bank (bank 0 by CRC-32 of the key
//! modulo the bank size, bank 1 by CRC-32 of the key's fields in another order, [`pair_key_1`]:
//! a different linear map of its bits, and the one CRC both P4 targets compute natively), and a
//! key is *seen* when both its bits are set.
//! The bank size is odd (81 919 bits for 20 KB): CRCs are linear, so keys that differ in a few
//! bits — addresses of one subnet, consecutive pair IDs — land in a power-of-two bank in a
//! pattern rather than at random (20 K consecutive keys: 3.6 % false positives in 2^16-bit banks
//! where the formula says 6.9 %, and other key sets can do worse); an odd modulus breaks the
//! pattern and the filter behaves as the formula says (4.64 % measured, 4.54 % formula at the pairs held). With `n` keys in banks of `m`
//! bits, the false-positive rate is `(1 − e^{−n/m})²` ([`Core::false_positive_rate`]): 4.7 % at
//! 20 K pairs in 20 KB, the paper's "< 5 %". The key is the (VM-pair, link): source address,
//! destination address, the probe's UDP source port (the sender's pair ID) and the egress port.
//!
//! **Pair records** (the paper leaves open where a pair's last (φ, w) lives; a changed window
//! must move W_l by the difference, and a finish or a cleaning must subtract what the pair
//! added): a 4-way set-associative register array (`records`, default 32 768 cells; four
//! register arrays indexed by one hash on a Tofino) holding each tracked pair's two hashes, link,
//! φ, w and the cleaning period it was last probed in. A finished pair keeps a tombstone until the
//! next cleaning, so a pair that finishes and comes back (a path migration back) is recognised as
//! its own and re-added, not mistaken for a false positive.
//!
//! Decisions on a probe, as §3.6 has them:
//! * the pair's own record is live → update Φ_l and W_l by the differences;
//! * its tombstone is there → re-add it;
//! * no record, bits not both set → a new pair: set its bits, add φ and w, keep a record;
//! * no record, bits both set → a **false positive**: the pair is omitted (Φ_l and W_l
//!   smaller than the truth, §3.6), counted in [`CoreStats::omitted`];
//! * a new pair whose four record ways are all live with other pairs cannot be tracked (it could
//!   never be subtracted again): omitted as well, counted in [`CoreStats::untracked`].
//!
//! A **look** ([`Core::look`], not in the paper: see [`wire::ufab::UfabKind::Look`]) reads
//! the link without the pair — Φ_l and W_l less its live record's φ and w — and writes nothing.
//!
//! **Cleaning** (§4.2, default every 10 s): at each period boundary, a live record not probed in
//! the period that just ended is removed and its φ and w subtracted ([`CoreStats::cleaned`]);
//! tombstones are freed; the filter's banks are rebuilt from the live records (a Bloom filter
//! cannot unset one key's bits: they may be another's), which is what a Tofino's control plane
//! does between two periods.
//!
//! **tx_l**: the egress port's bytes sent (the TM's counter), differenced over windows of at
//! least `tx_window_ns` closed by the probes; the rate of the last complete window is what
//! probes carry.

use crate::model::{HashAlgo, HashUnit, RegisterArray, Resources, param};
use crate::programs::ufab::decl::{PAIR_KEY, PAIR_KEY_1};

/// Ways of the pair-record sets.
pub const WAYS: usize = 4;
/// Bytes of a (VM-pair, link) key: source address, destination address, pair ID, egress port.
pub const KEY_LEN: usize = 12;

/// A (VM-pair, link) key.
pub fn pair_key(src: [u8; 4], dst: [u8; 4], pair_id: u16, port: u16) -> [u8; KEY_LEN] {
    let mut k = [0u8; KEY_LEN];
    k[0..4].copy_from_slice(&src);
    k[4..8].copy_from_slice(&dst);
    k[8..10].copy_from_slice(&pair_id.to_be_bytes());
    k[10..12].copy_from_slice(&port.to_be_bytes());
    k
}

/// Bank 1's key: [`pair_key`]'s fields in [`PAIR_KEY_1`]'s order (destination, source, port,
/// pair ID).
pub fn pair_key_1(key: &[u8; KEY_LEN]) -> [u8; KEY_LEN] {
    let mut k = [0u8; KEY_LEN];
    k[0..4].copy_from_slice(&key[4..8]);
    k[4..8].copy_from_slice(&key[0..4]);
    k[8..10].copy_from_slice(&key[10..12]);
    k[10..12].copy_from_slice(&key[8..10]);
    k
}

/// One link's state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Link {
    /// Φ_l: the tokens of the active pairs on the link.
    pub phi_l: u64,
    /// W_l: their windows on the link, bytes.
    pub w_l: u64,
    /// tx_l of the last complete window, bits per second.
    pub tx_bps: u64,
    /// When the current tx window started, ns.
    win_start: u64,
    /// The port's bytes sent when it started.
    win_bytes: u64,
}

/// A pair record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    /// 0 empty, 1 live, 2 finished (a tombstone until the next cleaning).
    pub state: u8,
    /// The key's CRC-32 (bank 0's hash).
    pub h0: u32,
    /// The CRC-32 of the key's fields in bank 1's order.
    pub h1: u32,
    /// The link.
    pub port: u16,
    /// φ the pair added.
    pub phi: u32,
    /// w the pair added, bytes.
    pub w: u32,
    /// The cleaning period it was last probed in.
    pub period: u32,
}

const EMPTY: u8 = 0;
const LIVE: u8 = 1;
const FINISHED: u8 = 2;

/// What a probe did to the core's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A new pair: added to Φ_l and W_l.
    Added,
    /// A known pair: Φ_l and W_l moved by its differences.
    Updated,
    /// A finish: the pair's φ and w subtracted.
    Removed,
    /// A finish for a pair not tracked here (already removed, cleaned, or never added).
    NotTracked,
    /// A Bloom-filter false positive: the pair is omitted.
    FalsePositive,
    /// No record way free: the pair is omitted.
    Untracked,
}

/// The core's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// Pairs added.
    pub added: u64,
    /// Probes of known pairs.
    pub updated: u64,
    /// Pairs removed by a finish probe.
    pub removed: u64,
    /// Finish probes of pairs not tracked.
    pub finish_untracked: u64,
    /// Pairs removed by cleaning (no probe in a whole period: silent quits).
    pub cleaned: u64,
    /// New pairs omitted as Bloom-filter false positives.
    pub omitted: u64,
    /// New pairs omitted for want of a free record way.
    pub untracked: u64,
    /// Cleaning passes.
    pub cleanings: u64,
    /// Looks answered (nothing written).
    pub looks: u64,
    /// Looks of a pair with a live record on the link (answered without it).
    pub looks_own: u64,
}

/// µFAB-C's state for one switch.
#[derive(Debug)]
pub struct Core {
    links: RegisterArray<Link>,
    ports: usize,
    bank_bits: u32,
    bank0: Vec<u64>,
    bank1: Vec<u64>,
    records: RegisterArray<Record>,
    sets: u32,
    h0: HashUnit,
    h1: HashUnit,
    period_ns: u64,
    period: u32,
    tx_window_ns: u64,
    /// Counters.
    pub stats: CoreStats,
}

impl Core {
    /// Declare and build: `ports` links, a filter of `bloom_bytes` (two banks), `records` pair
    /// records (a multiple of [`WAYS`]), cleaning every `period_ns`, tx windows of `tx_window_ns`.
    pub fn new(
        res: &mut Resources,
        ports: usize,
        bloom_bytes: usize,
        records: usize,
        period_ns: u64,
        tx_window_ns: u64,
    ) -> Self {
        // An odd bank size (see the module docs): 81 919 bits for the default 20 KB.
        let bank_bits = ((bloom_bytes * 8 / 2).max(65) as u32 - 1) | 1;
        let words = (bank_bits as usize).div_ceil(64);
        for name in ["ufab_bloom0", "ufab_bloom1"] {
            res.declare(crate::model::Decl {
                name,
                size: bank_bits as usize,
                kind: crate::model::DeclKind::Register { cell: vec![param("bit", 1)], index: None },
                bytes: words * 8,
                detail: String::new(),
            });
        }
        let h0 = HashUnit::new(res, "ufab_pair_hash0", HashAlgo::Crc32IsoHdlc, 32, &PAIR_KEY);
        let h1 = HashUnit::new(res, "ufab_pair_hash1", HashAlgo::Crc32IsoHdlc, 32, &PAIR_KEY_1);
        let recs = RegisterArray::new(
            res,
            "ufab_pair_records",
            records,
            &[
                param("state", 2),
                param("h0", 32),
                param("h1", 32),
                param("port", 16),
                param("phi", 32),
                param("w", 32),
                param("period", 32),
            ],
            None,
        );
        let links = RegisterArray::<Link>::new(
            res,
            "ufab_links",
            ports,
            &[
                param("phi_l", 64),
                param("w_l", 64),
                param("tx_bps", 64),
                param("win_start", 64),
                param("win_bytes", 64),
            ],
            Some(crate::programs::l2l3::decl::EGRESS_PORT),
        );
        Self {
            links,
            ports,
            bank_bits,
            bank0: vec![0; words],
            bank1: vec![0; words],
            records: recs,
            sets: (records / WAYS).max(1) as u32,
            h0,
            h1,
            period_ns: period_ns.max(1),
            period: 0,
            tx_window_ns: tx_window_ns.max(1),
            stats: CoreStats::default(),
        }
    }

    /// Pair record cells.
    pub fn records_len(&self) -> usize {
        self.records.len()
    }

    /// The cleaning period, ns.
    pub fn period_ns(&self) -> u64 {
        self.period_ns
    }

    /// The tx_l window, ns.
    pub fn tx_window_ns(&self) -> u64 {
        self.tx_window_ns
    }

    /// Bits per bank.
    pub fn bank_bits(&self) -> u32 {
        self.bank_bits
    }

    /// The false-positive rate of a filter of these banks holding `n` keys: `(1 − e^{−n/m})²`.
    pub fn false_positive_rate(&self, n: usize) -> f64 {
        let m = f64::from(self.bank_bits);
        (1.0 - (-(n as f64) / m).exp()).powi(2)
    }

    /// Link `port`'s state.
    pub fn link(&self, port: u16) -> Link {
        self.links.read(usize::from(port))
    }

    /// Links.
    pub fn links(&self) -> &[Link] {
        self.links.as_slice()
    }

    /// Whether the filter has seen `key` (both bits set).
    pub fn bloom_contains(&self, key: &[u8; KEY_LEN]) -> bool {
        let (a, b) = self.bits(self.h0.hash(key), self.h1.hash(&pair_key_1(key)));
        test(&self.bank0, a) && test(&self.bank1, b)
    }

    fn bits(&self, h0: u32, h1: u32) -> (u32, u32) {
        (h0 % self.bank_bits, h1 % self.bank_bits)
    }

    fn set_of(&self, h0: u32) -> usize {
        (h0.rotate_left(16) % self.sets) as usize * WAYS
    }

    /// The egress port sent `tx_bytes` in all by `now`: close the tx window if it is over.
    #[inline]
    pub fn update_tx(&mut self, port: u16, now: u64, tx_bytes: u64) {
        let tx_window_ns = self.tx_window_ns;
        self.links.update(usize::from(port), |l| {
            let dt = now.saturating_sub(l.win_start);
            if dt >= tx_window_ns {
                if l.win_start != 0 || l.win_bytes != 0 {
                    l.tx_bps = (u128::from(tx_bytes.saturating_sub(l.win_bytes)) * 8_000_000_000
                        / u128::from(dt))
                    .min(u128::from(u64::MAX)) as u64;
                }
                l.win_start = now;
                l.win_bytes = tx_bytes;
            }
        });
    }

    /// A probe (or, with `finish`, a finish probe) of the pair `key` on link `port`, carrying
    /// its tokens `phi` and its window on the link `w` (bytes), at `now`.
    pub fn probe(
        &mut self,
        now: u64,
        key: &[u8; KEY_LEN],
        port: u16,
        phi: u32,
        w: u32,
        finish: bool,
    ) -> Outcome {
        if usize::from(port) >= self.ports {
            return Outcome::Untracked;
        }
        let (h0, h1, own) = self.own_record(key, port);
        let period = (now / self.period_ns) as u32;
        let mut link = self.links.read(usize::from(port));
        let out = self.apply(&mut link, own, h0, h1, port, phi, w, period, finish);
        self.links.write(usize::from(port), link);
        out
    }

    /// The key's two hashes and its own record on link `port` (live or a tombstone), if any.
    fn own_record(&self, key: &[u8; KEY_LEN], port: u16) -> (u32, u32, Option<usize>) {
        let (h0, h1) = (self.h0.hash(key), self.h1.hash(&pair_key_1(key)));
        let set = self.set_of(h0);
        let own = (set..set + WAYS).find(|&i| {
            let r = self.records.read(i);
            r.state != EMPTY && r.h0 == h0 && r.h1 == h1 && r.port == port
        });
        (h0, h1, own)
    }

    /// A look ([`wire::ufab::UfabKind::Look`]) of the pair `key` at link `port`: Φ_l and W_l
    /// without the pair (less its live record's φ and w, if it has one here), and nothing
    /// written — no bit set, no record touched, the sums unchanged. `None` past the ports.
    pub fn look(&mut self, key: &[u8; KEY_LEN], port: u16) -> Option<(u64, u64)> {
        if usize::from(port) >= self.ports {
            return None;
        }
        let (_, _, own) = self.own_record(key, port);
        let own = own.map(|i| self.records.read(i)).filter(|r| r.state == LIVE);
        let link = self.links.read(usize::from(port));
        self.stats.looks += 1;
        Some(match own {
            Some(r) => {
                self.stats.looks_own += 1;
                (link.phi_l.saturating_sub(u64::from(r.phi)), link.w_l.saturating_sub(u64::from(r.w)))
            }
            None => (link.phi_l, link.w_l),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        link: &mut Link,
        own: Option<usize>,
        h0: u32,
        h1: u32,
        port: u16,
        phi: u32,
        w: u32,
        period: u32,
        finish: bool,
    ) -> Outcome {
        let set = self.set_of(h0);
        if finish {
            return match own {
                Some(i) if self.records.read(i).state == LIVE => {
                    let r = self.records.read(i);
                    link.phi_l = link.phi_l.saturating_sub(u64::from(r.phi));
                    link.w_l = link.w_l.saturating_sub(u64::from(r.w));
                    self.records.write(i, Record { state: FINISHED, phi: 0, w: 0, period, ..r });
                    self.stats.removed += 1;
                    Outcome::Removed
                }
                _ => {
                    self.stats.finish_untracked += 1;
                    Outcome::NotTracked
                }
            };
        }
        if let Some(i) = own {
            let r = self.records.read(i);
            let out = if r.state == LIVE {
                link.phi_l = (link.phi_l + u64::from(phi)).saturating_sub(u64::from(r.phi));
                link.w_l = (link.w_l + u64::from(w)).saturating_sub(u64::from(r.w));
                self.stats.updated += 1;
                Outcome::Updated
            } else {
                link.phi_l += u64::from(phi);
                link.w_l += u64::from(w);
                self.stats.added += 1;
                Outcome::Added
            };
            self.records.write(i, Record { state: LIVE, phi, w, period, ..r });
            return out;
        }
        let (a, b) = self.bits(h0, h1);
        if test(&self.bank0, a) && test(&self.bank1, b) {
            self.stats.omitted += 1;
            return Outcome::FalsePositive;
        }
        let Some(i) = (set..set + WAYS).find(|&i| self.records.read(i).state != LIVE) else {
            self.stats.untracked += 1;
            return Outcome::Untracked;
        };
        set_bit(&mut self.bank0, a);
        set_bit(&mut self.bank1, b);
        link.phi_l += u64::from(phi);
        link.w_l += u64::from(w);
        self.records.write(i, Record { state: LIVE, h0, h1, port, phi, w, period });
        self.stats.added += 1;
        Outcome::Added
    }

    /// The cleaning due at `now`, if a period boundary passed since the last: remove the live
    /// pairs not probed in the period that just ended, free tombstones, rebuild the filter.
    /// Returns whether it ran.
    pub fn clean(&mut self, now: u64) -> bool {
        let period = (now / self.period_ns) as u32;
        if period <= self.period {
            return false;
        }
        self.period = period;
        self.stats.cleanings += 1;
        self.bank0.fill(0);
        self.bank1.fill(0);
        for i in 0..self.records.len() {
            let r = self.records.read(i);
            match r.state {
                LIVE if r.period + 1 < period => {
                    self.links.update(usize::from(r.port), |l| {
                        l.phi_l = l.phi_l.saturating_sub(u64::from(r.phi));
                        l.w_l = l.w_l.saturating_sub(u64::from(r.w));
                    });
                    self.records.write(i, Record::default());
                    self.stats.cleaned += 1;
                }
                LIVE => {
                    let (a, b) = self.bits(r.h0, r.h1);
                    set_bit(&mut self.bank0, a);
                    set_bit(&mut self.bank1, b);
                }
                FINISHED => self.records.write(i, Record::default()),
                _ => {}
            }
        }
        true
    }

    /// The records on link `port` (live and finished).
    pub fn records_on(&self, port: u16) -> impl Iterator<Item = &Record> {
        self.records.as_slice().iter().filter(move |r| r.state != EMPTY && r.port == port)
    }

    /// Live pair records.
    pub fn live_pairs(&self) -> usize {
        self.records.as_slice().iter().filter(|r| r.state == LIVE).count()
    }
}

#[inline]
fn test(bank: &[u64], bit: u32) -> bool {
    bank[(bit / 64) as usize] & (1 << (bit % 64)) != 0
}

#[inline]
fn set_bit(bank: &mut [u64], bit: u32) {
    bank[(bit / 64) as usize] |= 1 << (bit % 64);
}
