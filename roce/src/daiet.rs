//! DAIET's host side (seed `002` §4–§5): the mapper that partitions key/value pairs among the
//! reducers and packs them into DAIET packets, the reducer that merges what arrives and knows
//! when a round is complete, the aggregation functions the switch and the reducer share, and
//! WordCount's pieces (keys from words, the corpus generator, a plain count to check against).
//!
//! Sans-IO as the rest of the crate: the mapper returns packets to send (UDP payloads), the
//! reducer takes received payloads; the host runtime (sockets, a lab host) moves them.
//!
//! Choices the paper leaves open:
//! * **Partitioning**: a pair goes to reducer `fnv1a(key) mod R`. The switch indexes its
//!   registers by CRC-32 of the key; partitioning by the same CRC would leave each tree a
//!   fixed residue of the CRC and so only part of its cells (with two reducers, half).
//! * **Overflow**: values saturate at `u32::MAX` ([`AggFn::apply`] says when), in the switch
//!   and in the reducer alike, so the result of a sum is the true count or `u32::MAX`, never a
//!   wrapped count; both sides count saturations.
//! * **Keys**: 16 bytes, a word's UTF-8 bytes padded with zeros (the prototype's fixed-size
//!   strings); a longer word cannot be sent and is counted ([`MapperStats::too_long`]).

use std::collections::HashMap;

use wire::daiet::{DaietEntry, DaietRepr, END_LEN, ENTRY_LEN, Entries, KEY_LEN, PREAMBLE_LEN};

/// A tree's aggregation function: commutative and associative, so the switch and the reducer
/// can apply it in any order and any grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AggFn {
    /// Saturating sum.
    #[default]
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

impl AggFn {
    /// From its configuration name (`sum`, `min`, `max`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "sum" => Some(Self::Sum),
            "min" => Some(Self::Min),
            "max" => Some(Self::Max),
            _ => None,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sum => "sum",
            Self::Min => "min",
            Self::Max => "max",
        }
    }

    /// `a ⊕ b`, and whether it saturated (a sum past `u32::MAX`). To add a function: a variant
    /// here (commutative and associative), its name in [`Self::parse`], and its P4 in the
    /// `daiet` program's rendering.
    #[inline]
    pub fn apply(self, a: u32, b: u32) -> (u32, bool) {
        match self {
            Self::Sum => match a.checked_add(b) {
                Some(v) => (v, false),
                None => (u32::MAX, true),
            },
            Self::Min => (a.min(b), false),
            Self::Max => (a.max(b), false),
        }
    }
}

/// A word as a DAIET key: its bytes padded with zeros; `None` past 16 bytes or empty.
pub fn key_of(word: &str) -> Option<[u8; KEY_LEN]> {
    let b = word.as_bytes();
    if b.is_empty() || b.len() > KEY_LEN {
        return None;
    }
    let mut k = [0u8; KEY_LEN];
    k[..b.len()].copy_from_slice(b);
    Some(k)
}

/// The word of a key (the bytes before the padding).
pub fn word_of(key: &[u8; KEY_LEN]) -> String {
    let n = key.iter().position(|&b| b == 0).unwrap_or(KEY_LEN);
    String::from_utf8_lossy(&key[..n]).into_owned()
}

/// FNV-1a, 32 bits: the mapper's partition hash (independent of the switch's CRC-32 index;
/// no crate needed for five lines).
pub fn fnv1a(data: &[u8]) -> u32 {
    let mut h = 0x811c_9dc5u32;
    for &b in data {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The reducer (0-based) a key goes to among `reducers`.
pub fn partition(key: &[u8; KEY_LEN], reducers: usize) -> usize {
    (fnv1a(key) as usize) % reducers.max(1)
}

/// Bytes of a data packet of `n` pairs (the UDP payload).
pub const fn data_len(n: usize) -> usize {
    PREAMBLE_LEN + n * ENTRY_LEN
}

/// Write a data packet of `pairs` for `tree` into `buf`; its length.
pub fn write_data(tree: u32, pairs: &[DaietEntry], buf: &mut [u8]) -> Option<usize> {
    let len = data_len(pairs.len());
    let b = buf.get_mut(..len)?;
    for (i, p) in pairs.iter().enumerate() {
        p.write(&mut b[PREAMBLE_LEN + i * ENTRY_LEN..]);
    }
    let entries = Entries::new(&[]).ok()?;
    // The preamble: written by the repr with no pairs, then the count set.
    DaietRepr::Data { tree_id: tree, entries }.emit(&mut b[..PREAMBLE_LEN]).ok()?;
    wire::daiet::field::preamble::NUMBER_OF_ENTRIES.set_u32(b, pairs.len() as u32);
    Some(len)
}

/// Write an END packet for `tree`; its length.
pub fn write_end(tree: u32, buf: &mut [u8]) -> Option<usize> {
    DaietRepr::End { tree_id: tree }.emit(buf.get_mut(..END_LEN)?).ok()?;
    Some(END_LEN)
}

/// The mapper's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MapperStats {
    /// Pairs put in packets.
    pub pairs: u64,
    /// Data packets made.
    pub packets: u64,
    /// END packets made.
    pub ends: u64,
    /// Payload bytes made (data and END).
    pub bytes: u64,
    /// Words longer than a key (not sent).
    pub too_long: u64,
}

/// One mapper: pairs in, DAIET packets out, partitioned among the reducers (one tree each).
#[derive(Debug)]
pub struct Mapper {
    trees: Vec<u32>,
    max_entries: usize,
    pending: Vec<Vec<DaietEntry>>,
    ready: std::collections::VecDeque<(usize, Vec<DaietEntry>)>,
    ended: bool,
    ends_left: usize,
    /// Counters.
    pub stats: MapperStats,
}

impl Mapper {
    /// A mapper sending to one reducer per entry of `trees` (the reducer's tree ID), at most
    /// `max_entries` pairs a packet (the paper's 10).
    pub fn new(trees: Vec<u32>, max_entries: usize) -> Self {
        let n = trees.len();
        Self {
            trees,
            max_entries: max_entries.max(1),
            pending: vec![Vec::new(); n],
            ready: std::collections::VecDeque::new(),
            ended: false,
            ends_left: 0,
            stats: MapperStats::default(),
        }
    }

    /// One pair.
    pub fn push(&mut self, key: [u8; KEY_LEN], value: u32) {
        let r = partition(&key, self.trees.len());
        self.pending[r].push(DaietEntry { key, value });
        if self.pending[r].len() == self.max_entries {
            let full = std::mem::take(&mut self.pending[r]);
            self.ready.push_back((r, full));
        }
    }

    /// One word with a count.
    pub fn push_word(&mut self, word: &str, count: u32) {
        match key_of(word) {
            Some(k) => self.push(k, count),
            None => self.stats.too_long += 1,
        }
    }

    /// The partition is over: what is pending goes, then one END per reducer.
    pub fn finish(&mut self) {
        for r in 0..self.trees.len() {
            let rest = std::mem::take(&mut self.pending[r]);
            if !rest.is_empty() {
                self.ready.push_back((r, rest));
            }
        }
        self.ended = true;
        self.ends_left = self.trees.len();
    }

    /// The next packet to send: the reducer's index and the payload's length in `buf` (at least
    /// [`data_len`] of the most pairs); `None` when nothing is ready.
    pub fn poll_transmit(&mut self, buf: &mut [u8]) -> Option<(usize, usize)> {
        if let Some((r, pairs)) = self.ready.pop_front() {
            let len = write_data(self.trees[r], &pairs, buf)?;
            self.stats.pairs += pairs.len() as u64;
            self.stats.packets += 1;
            self.stats.bytes += len as u64;
            return Some((r, len));
        }
        if self.ended && self.ends_left > 0 {
            let r = self.trees.len() - self.ends_left;
            self.ends_left -= 1;
            let len = write_end(self.trees[r], buf)?;
            self.stats.ends += 1;
            self.stats.bytes += len as u64;
            return Some((r, len));
        }
        None
    }

    /// Whether everything, ENDs included, has been sent.
    pub fn is_done(&self) -> bool {
        self.ended && self.ends_left == 0 && self.ready.is_empty()
    }
}

/// Why a reducer refused a payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReduceError {
    /// Not a DAIET packet.
    #[error("malformed DAIET packet: {0}")]
    Malformed(wire::Error),
    /// For another tree.
    #[error("tree {got}, this reducer's is {want}")]
    OtherTree {
        /// The packet's.
        got: u32,
        /// Ours.
        want: u32,
    },
}

/// The reducer's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReducerStats {
    /// Data packets received.
    pub packets: u64,
    /// END packets received.
    pub ends: u64,
    /// Payload bytes received (data and END).
    pub bytes: u64,
    /// Pairs received.
    pub pairs: u64,
    /// Sums that saturated.
    pub saturated: u64,
    /// Payloads refused.
    pub refused: u64,
}

/// One reducer: the root of its tree.
#[derive(Debug)]
pub struct Reducer {
    tree: u32,
    func: AggFn,
    ends_expected: u64,
    table: HashMap<[u8; KEY_LEN], u32>,
    /// Counters.
    pub stats: ReducerStats,
}

impl Reducer {
    /// A reducer of `tree` merging with `func`, complete after `ends_expected` END packets (the
    /// children of the root: the mappers without in-network aggregation, the last switch's one
    /// END with it).
    pub fn new(tree: u32, func: AggFn, ends_expected: u64) -> Self {
        Self { tree, func, ends_expected, table: HashMap::new(), stats: ReducerStats::default() }
    }

    /// One received UDP payload.
    pub fn handle(&mut self, payload: &[u8]) -> Result<(), ReduceError> {
        let r = DaietRepr::parse(payload).map_err(|e| {
            self.stats.refused += 1;
            ReduceError::Malformed(e)
        })?;
        match r {
            DaietRepr::Data { tree_id, entries } => {
                if tree_id != self.tree {
                    self.stats.refused += 1;
                    return Err(ReduceError::OtherTree { got: tree_id, want: self.tree });
                }
                self.stats.packets += 1;
                self.stats.bytes += r.buffer_len() as u64;
                for e in entries.iter() {
                    self.merge(e.key, e.value);
                }
            }
            DaietRepr::End { tree_id } => {
                if tree_id != self.tree {
                    self.stats.refused += 1;
                    return Err(ReduceError::OtherTree { got: tree_id, want: self.tree });
                }
                self.stats.ends += 1;
                self.stats.bytes += END_LEN as u64;
            }
        }
        Ok(())
    }

    /// Merge one pair (also what the TCP baseline's reducer calls per pair).
    pub fn merge(&mut self, key: [u8; KEY_LEN], value: u32) {
        self.stats.pairs += 1;
        let func = self.func;
        let mut sat = false;
        self.table
            .entry(key)
            .and_modify(|v| {
                let (n, s) = func.apply(*v, value);
                *v = n;
                sat = s;
            })
            .or_insert(value);
        self.stats.saturated += u64::from(sat);
    }

    /// Whether every expected END arrived.
    pub fn is_done(&self) -> bool {
        self.stats.ends >= self.ends_expected
    }

    /// Distinct keys so far.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether nothing arrived.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The result, sorted by key (the sort DAIET moves from the mappers to the reducer).
    pub fn sorted(&self) -> Vec<([u8; KEY_LEN], u32)> {
        let mut v: Vec<_> = self.table.iter().map(|(k, v)| (*k, *v)).collect();
        v.sort_unstable();
        v
    }
}

/// WordCount's map over a text: every whitespace-separated word with 1, or (`combine`) each
/// distinct word once with its count (the mapper-side combiner).
pub fn map_words(text: &str, combine: bool, m: &mut Mapper) {
    if combine {
        let mut local: HashMap<&str, u32> = HashMap::new();
        for w in text.split_ascii_whitespace() {
            *local.entry(w).or_default() += 1;
        }
        let mut words: Vec<_> = local.into_iter().collect();
        words.sort_unstable();
        for (w, c) in words {
            m.push_word(w, c);
        }
    } else {
        for w in text.split_ascii_whitespace() {
            m.push_word(w, 1);
        }
    }
    m.finish();
}

/// A plain word count (what the reducers' output must equal).
pub fn word_count(text: &str) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for w in text.split_ascii_whitespace() {
        *m.entry(w.to_string()).or_insert(0) += 1;
    }
    m
}

/// The `i`-th of `n` splits of `text`, cut at whitespace (every word in exactly one split).
pub fn split(text: &str, i: usize, n: usize) -> &str {
    let n = n.max(1);
    let cut = |k: usize| -> usize {
        if k == 0 {
            return 0;
        }
        if k >= n {
            return text.len();
        }
        let mut at = text.len() * k / n;
        while at < text.len() && !text.as_bytes()[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    };
    &text[cut(i)..cut(i + 1)]
}

/// How a corpus's words are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorpusSpec {
    /// Bytes of text (at least; the last word completes).
    pub bytes: usize,
    /// Distinct words.
    pub vocabulary: usize,
    /// Zipf exponent of the word frequencies (0: uniform).
    pub zipf_s: f64,
    /// Seed.
    pub seed: u64,
    /// If set, only words whose index (the caller's function, modulo this) is distinct, as the
    /// paper's corpus ("random words that are not causing hash collisions"): the index a word
    /// takes in its tree's registers.
    pub collision_free_cells: Option<usize>,
}

/// The largest corpus [`corpus`] makes (1 GiB): it is built in memory.
pub const MAX_CORPUS_BYTES: usize = 1 << 30;
/// The most distinct words a corpus draws from.
pub const MAX_VOCABULARY: usize = 1_000_000;
/// The largest register a collision-free corpus is drawn for (cells per tree).
pub const MAX_CELLS: usize = 1 << 24;
/// The largest Zipf exponent (beyond it every draw is the first word).
pub const MAX_ZIPF: f64 = 10.0;

impl CorpusSpec {
    /// `Ok` if a corpus can be made of this, in bounded time and memory; otherwise the field
    /// at fault (`bytes`, `vocabulary`, `zipf_s`, `collision_free_cells`) and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(1..=MAX_CORPUS_BYTES).contains(&self.bytes) {
            return Err((
                "bytes",
                format!("{}: expected 1 to {MAX_CORPUS_BYTES} (it is made in memory)", self.bytes),
            ));
        }
        if !(1..=MAX_VOCABULARY).contains(&self.vocabulary) {
            return Err((
                "vocabulary",
                format!("{}: expected 1 to {MAX_VOCABULARY} distinct words", self.vocabulary),
            ));
        }
        if !(self.zipf_s.is_finite() && (0.0..=MAX_ZIPF).contains(&self.zipf_s)) {
            return Err(("zipf_s", format!("{}: expected an exponent from 0 to {MAX_ZIPF}", self.zipf_s)));
        }
        if let Some(c) = self.collision_free_cells
            && !(self.vocabulary..=MAX_CELLS).contains(&c)
        {
            return Err((
                "collision_free_cells",
                format!("{c}: expected {} (the vocabulary: a cell per word) to {MAX_CELLS}", self.vocabulary),
            ));
        }
        Ok(())
    }
}

/// splitmix64: the generator's randomness (seeded, no crate needed for a corpus).
pub fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform draw in [0, 1) from [`splitmix`].
pub fn uniform(s: &mut u64) -> f64 {
    (splitmix(s) >> 11) as f64 / (1u64 << 53) as f64
}

/// The words of a corpus: lowercase ASCII, 3 to 16 letters, distinct; with
/// `collision_free_cells`, distinct register indices too (`index(key)` the switch's).
pub fn vocabulary(spec: &CorpusSpec, index: impl Fn(&[u8; KEY_LEN]) -> usize) -> Vec<String> {
    let mut s = spec.seed ^ 0x5eed;
    let mut seen = std::collections::HashSet::new();
    let mut used = std::collections::HashSet::new();
    let mut words = Vec::with_capacity(spec.vocabulary);
    let mut tries = 0u64;
    while words.len() < spec.vocabulary && tries < 1_000 * spec.vocabulary as u64 + 1_000 {
        tries += 1;
        let len = 3 + (splitmix(&mut s) % 14) as usize;
        let w: String = (0..len).map(|_| (b'a' + (splitmix(&mut s) % 26) as u8) as char).collect();
        if seen.contains(&w) {
            continue;
        }
        if let Some(cells) = spec.collision_free_cells {
            let Some(k) = key_of(&w) else { continue };
            let i = index(&k) % cells.max(1);
            if !used.insert(i) {
                continue;
            }
        }
        seen.insert(w.clone());
        words.push(w);
    }
    words
}

/// A corpus: words of [`vocabulary`] drawn with Zipf(`zipf_s`) frequencies (rank 1 the most
/// frequent), space-separated, a newline every 16 words, until `bytes`.
pub fn corpus(spec: &CorpusSpec, index: impl Fn(&[u8; KEY_LEN]) -> usize) -> String {
    let words = vocabulary(spec, index);
    if words.is_empty() {
        return String::new();
    }
    // The cumulative distribution of ranks, for inverse sampling.
    let mut cdf = Vec::with_capacity(words.len());
    let mut total = 0.0;
    for r in 1..=words.len() {
        total += 1.0 / (r as f64).powf(spec.zipf_s);
        cdf.push(total);
    }
    let mut s = spec.seed;
    let mut out = String::with_capacity(spec.bytes + 32);
    let mut n = 0usize;
    while out.len() < spec.bytes {
        let u = uniform(&mut s) * total;
        let i = cdf.partition_point(|&c| c < u).min(words.len() - 1);
        out.push_str(&words[i]);
        n += 1;
        out.push(if n.is_multiple_of(16) { '\n' } else { ' ' });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crc_index(k: &[u8; KEY_LEN]) -> usize {
        // Any index function will do for these tests.
        fnv1a(&k[..]).rotate_left(7) as usize
    }

    fn run(text: &str, reducers: usize, mappers: usize, combine: bool) -> Vec<Reducer> {
        let trees: Vec<u32> = (0..reducers as u32).map(|t| t + 1).collect();
        let mut red: Vec<Reducer> =
            trees.iter().map(|&t| Reducer::new(t, AggFn::Sum, mappers as u64)).collect();
        let mut buf = [0u8; 512];
        for i in 0..mappers {
            let mut m = Mapper::new(trees.clone(), 10);
            map_words(split(text, i, mappers), combine, &mut m);
            while let Some((r, len)) = m.poll_transmit(&mut buf) {
                red[r].handle(&buf[..len]).unwrap();
            }
            assert!(m.is_done());
        }
        red
    }

    #[test]
    fn reducers_without_a_switch_give_the_plain_count() {
        let spec =
            CorpusSpec { bytes: 20_000, vocabulary: 300, zipf_s: 1.1, seed: 3, collision_free_cells: None };
        let text = corpus(&spec, crc_index);
        let want = word_count(&text);
        for combine in [false, true] {
            let red = run(&text, 3, 4, combine);
            let mut got = std::collections::BTreeMap::new();
            for r in &red {
                assert!(r.is_done());
                for (k, v) in r.sorted() {
                    assert!(got.insert(word_of(&k), u64::from(v)).is_none(), "a key in two partitions");
                }
            }
            assert_eq!(got, want, "combine {combine}");
        }
    }

    #[test]
    fn splits_cover_every_word_once() {
        let text = "a bb ccc dddd eeeee ffffff g h i j k";
        let joined: Vec<&str> = (0..4).flat_map(|i| split(text, i, 4).split_ascii_whitespace()).collect();
        assert_eq!(joined, text.split_ascii_whitespace().collect::<Vec<_>>());
    }

    #[test]
    fn sums_saturate_and_are_counted() {
        assert_eq!(AggFn::Sum.apply(u32::MAX - 1, 5), (u32::MAX, true));
        assert_eq!(AggFn::Min.apply(3, 5), (3, false));
        assert_eq!(AggFn::Max.apply(3, 5), (5, false));
        let mut r = Reducer::new(1, AggFn::Sum, 1);
        let k = key_of("w").unwrap();
        r.merge(k, u32::MAX);
        r.merge(k, 1);
        assert_eq!(r.sorted(), vec![(k, u32::MAX)]);
        assert_eq!(r.stats.saturated, 1);
    }

    #[test]
    fn collision_free_vocabulary_has_distinct_indices_and_zipf_skews() {
        let spec = CorpusSpec {
            bytes: 50_000,
            vocabulary: 500,
            zipf_s: 1.0,
            seed: 9,
            collision_free_cells: Some(4096),
        };
        let v = vocabulary(&spec, crc_index);
        assert_eq!(v.len(), 500);
        let idx: std::collections::HashSet<usize> =
            v.iter().map(|w| crc_index(&key_of(w).unwrap()) % 4096).collect();
        assert_eq!(idx.len(), 500);
        let text = corpus(&spec, crc_index);
        let c = word_count(&text);
        // Rank 1 about twice rank 2 under Zipf(1).
        let (a, b) = (c[&v[0]] as f64, c[&v[1]] as f64);
        assert!(a / b > 1.5 && a / b < 2.7, "{a} {b}");
    }

    #[test]
    fn long_words_are_counted_not_sent_and_bad_payloads_refused() {
        let mut m = Mapper::new(vec![1], 10);
        m.push_word("abcdefghijklmnopq", 1);
        m.finish();
        assert_eq!(m.stats.too_long, 1);
        let mut r = Reducer::new(1, AggFn::Sum, 1);
        assert!(matches!(r.handle(&[0, 0, 0, 0, 9]), Err(ReduceError::Malformed(_))));
        let mut buf = [0u8; 16];
        let n = write_end(2, &mut buf).unwrap();
        assert!(matches!(r.handle(&buf[..n]), Err(ReduceError::OtherTree { got: 2, want: 1 })));
        assert_eq!(r.stats.refused, 2);
    }
}
