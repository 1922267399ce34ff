//! The collector's data structures in registered memory and the queries over them (design
//! `DTA.md`, "Memory layouts" and "Collector behaviour"). Queries read memory only: no report,
//! no packet, no soft-RNIC state is involved, exactly as with a hardware RNIC.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use wire::dta::{KeyHash, KeyHashMode, layout};

use crate::config::{CollectorConfig, StoreKind};
use crate::memory::{MemoryError, RegionSpec, RegionView, Registered};

/// One exposed data structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Store {
    /// What it holds.
    pub kind: StoreKind,
    /// Its librdmacm port.
    pub port: u16,
    /// Its region's index in [`Registered::regions`].
    pub region: usize,
}

/// Why a query has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The collector has no store of this kind.
    #[error("no {0} store is configured")]
    NoStore(&'static str),
    /// No such Append list.
    #[error("no Append list {0}")]
    NoList(u32),
    /// No such sketch.
    #[error("no sketch {0}")]
    NoSketch(u16),
    /// A consumer name that is empty, too long or not `[A-Za-z0-9_.-]`.
    #[error("consumer {0:?}: expected 1 to 64 characters of A-Z, a-z, 0-9, '_', '.' and '-'")]
    BadConsumer(String),
}

/// A Key-Write lookup's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyWriteAnswer {
    /// The key.
    pub key: u32,
    /// The value (the reported data bytes), if found.
    pub value: Option<Vec<u8>>,
    /// Copies holding this key's checksum.
    pub matching: u8,
    /// Copies holding this key's checksum and the value returned.
    pub agreeing: u8,
    /// Copies checked (N).
    pub copies: u8,
}

/// Keys a batched Key-Write lookup prefetches together. Measured on a 1 GiB store (benches/
/// keywrite.rs, one core of this project's CI-class VM): 8 keys 15.7 M lookups/s, 16 keys
/// 22.2 M, 32 keys 26.0 M — more misses in flight hide more of the memory and page-walk
/// latency, and 32 × N lines still fit the L1 until they are read.
pub const LOOKUP_BATCH: usize = 32;

/// A Key-Write lookup's answer as batch lookups give it: no allocation, the value inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyWriteHit {
    data: [u8; 28],
    len: u8,
    /// Copies holding the key's checksum.
    pub matching: u8,
    /// Copies holding the key's checksum and the value returned (0 when none is returned).
    pub agreeing: u8,
}

impl KeyWriteHit {
    /// The value, if the key was found (and enough copies agreed).
    pub fn value(&self) -> Option<&[u8]> {
        (self.len > 0).then(|| &self.data[..usize::from(self.len)])
    }
}

/// The Key-Write store's region and shape, looked up once per query or batch.
#[derive(Debug, Clone, Copy)]
struct KeyWriteStore<'a> {
    view: RegionView<'a>,
    slots: u64,
    data_len: usize,
    redundancy: u8,
    slot_len: u64,
    hash: KeyHashMode,
}

impl KeyWriteStore<'_> {
    /// Byte offset of copy `n`'s slot.
    #[inline]
    fn offset(&self, hash: &KeyHash, n: u8) -> u64 {
        layout::key_slot_index(hash, n, self.slots) * self.slot_len
    }

    /// Read the key's N slots and decide.
    #[inline]
    fn resolve(&self, hash: &KeyHash, consensus: Option<u8>) -> KeyWriteHit {
        // Distinct values found among the copies and how many copies hold each.
        let mut found: [(u8, [u8; 28]); 8] = [(0, [0; 28]); 8];
        let mut kinds = 0;
        let mut matching = 0;
        let len = self.slot_len as usize;
        for n in 0..self.redundancy {
            let mut slot = [0u8; 32];
            self.view.read(self.offset(hash, n), &mut slot[..len]);
            let checksum = u32::from_le_bytes([slot[0], slot[1], slot[2], slot[3]]);
            if checksum != hash.checksum() || slot[..len].iter().all(|&b| b == 0) {
                continue;
            }
            matching += 1;
            let mut v = [0u8; 28];
            v[..self.data_len].copy_from_slice(&slot[4..4 + self.data_len]);
            match found[..kinds].iter_mut().find(|(_, x)| *x == v) {
                Some(f) => f.0 += 1,
                None => {
                    found[kinds] = (1, v);
                    kinds += 1;
                }
            }
        }
        // Most copies first; among equals, the lowest copy index (first found).
        let best =
            found[..kinds].iter().enumerate().max_by_key(|(i, (c, _))| (*c, usize::MAX - i)).map(|(_, f)| *f);
        match best {
            Some((c, data)) if consensus.is_none_or(|need| c >= need) => {
                KeyWriteHit { data, len: self.data_len as u8, matching, agreeing: c }
            }
            Some((c, _)) => KeyWriteHit { matching, agreeing: c, ..KeyWriteHit::default() },
            None => KeyWriteHit::default(),
        }
    }
}

/// The share of `keys` distinct keys, written once each in turn with `copies` copies into
/// `slots` slots, that a query still finds at the end, if every copy's slot were an independent
/// uniform choice (the model behind the seed's Fig. 11–12): a key `v` of the way from the end
/// survives in one copy with probability `e^(-x v)`, `x = copies · keys / slots`, and is found if
/// any copy survives; averaged over `v`,
/// `Σ_{j=1..N} (-1)^(j+1) C(N, j) (1 - e^(-j x)) / (j x)`.
pub fn independent_copies_model(keys: u64, slots: u64, copies: u8) -> f64 {
    let n = i32::from(copies.max(1));
    let x = f64::from(n) * keys as f64 / slots.max(1) as f64;
    if x == 0.0 {
        return 1.0;
    }
    let mut binom = 1.0;
    let mut p = 0.0;
    for j in 1..=n {
        binom = binom * f64::from(n - j + 1) / f64::from(j);
        let jx = f64::from(j) * x;
        let sign = if j % 2 == 1 { 1.0 } else { -1.0 };
        p += sign * binom * (1.0 - (-jx).exp()) / jx;
    }
    p
}

/// An Append poll's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppendPoll {
    /// The list.
    pub list: u32,
    /// The entries, oldest first.
    pub entries: Vec<u32>,
    /// Index (since start) of the first entry returned.
    pub from: u64,
    /// Index of the next entry to read.
    pub next: u64,
    /// Entries overwritten before they were read (the consumer was more than a lap behind).
    pub lost: u64,
    /// The consumer had no tail pointer (a new name, or one forgotten as the least recently
    /// used of more than [`MAX_CONSUMERS`]): read from the oldest entry kept.
    pub new_consumer: bool,
}

/// The most consumers whose tail pointers are kept: past it, the least recently used is
/// forgotten (counted in [`Stores::consumers_forgotten`]) — a client naming consumers at will
/// cannot grow the collector's memory.
pub const MAX_CONSUMERS: usize = 1024;

/// The longest consumer name.
pub const MAX_CONSUMER_NAME: usize = 64;

/// Consumers' tail pointers: per (list, name), the tail and when it was last used.
#[derive(Debug, Default)]
struct Tails {
    map: HashMap<(u32, String), (u64, u64)>,
    clock: u64,
    forgotten: u64,
}

/// The stores over registered memory, and the consumers' tail pointers. Cheap to clone and
/// shareable between threads: every clone reads the same memory.
#[derive(Debug, Clone)]
pub struct Stores {
    stores: Arc<[Store]>,
    mem: Registered,
    tails: Arc<Mutex<Tails>>,
}

impl Stores {
    /// Register memory for every store of `cfg` (R_Keys from `seed`). Returns the stores and
    /// the memory warning, if any.
    pub fn new(cfg: &CollectorConfig, seed: u32) -> Result<(Self, Option<String>), MemoryError> {
        let specs: Vec<RegionSpec> = cfg
            .stores
            .iter()
            .map(|s| RegionSpec {
                len: s.kind.bytes(),
                va: s.va,
                ring_entry: matches!(s.kind, StoreKind::Append { .. })
                    .then_some(layout::APPEND_ENTRY_LEN as u32),
            })
            .collect();
        let (mem, warning) = Registered::new(&specs, cfg.memory, seed)?;
        let stores = cfg
            .stores
            .iter()
            .enumerate()
            .map(|(i, s)| Store { kind: s.kind, port: s.port, region: i })
            .collect();
        Ok((Self { stores, mem, tails: Arc::default() }, warning))
    }

    /// The stores.
    pub fn stores(&self) -> &[Store] {
        &self.stores
    }

    /// The registered memory (what the soft-RNIC writes).
    pub fn memory(&self) -> &Registered {
        &self.mem
    }

    fn find(&self, f: impl Fn(&StoreKind) -> bool) -> Option<&Store> {
        self.stores.iter().find(|s| f(&s.kind))
    }

    fn keywrite_store(&self) -> Result<KeyWriteStore<'_>, QueryError> {
        let s =
            self.find(|k| matches!(k, StoreKind::KeyWrite { .. })).ok_or(QueryError::NoStore("keywrite"))?;
        let StoreKind::KeyWrite { slots, data_len, redundancy, hash } = s.kind else { unreachable!() };
        Ok(KeyWriteStore {
            view: self.mem.view(s.region),
            slots,
            data_len,
            redundancy,
            slot_len: layout::keywrite_slot_len(data_len) as u64,
            hash,
        })
    }

    /// Key-Write lookup: check the key's N slots, keep those holding its checksum, and return
    /// the value most of them hold. With `consensus = Some(c)`, answer only if at least `c`
    /// copies agree. A slot that is all zero is empty (never written), so a key is never
    /// answered from untouched memory.
    pub fn keywrite(&self, key: u32, consensus: Option<u8>) -> Result<KeyWriteAnswer, QueryError> {
        let kw = self.keywrite_store()?;
        let hit = kw.resolve(&KeyHash::with_mode(key, kw.hash), consensus);
        Ok(KeyWriteAnswer {
            key,
            value: hit.value().map(<[u8]>::to_vec),
            matching: hit.matching,
            agreeing: hit.agreeing,
            copies: kw.redundancy,
        })
    }

    /// Key-Write lookups of `keys` on this thread, answers appended to `out` in order, without
    /// allocating per key. Keys go in groups of [`LOOKUP_BATCH`]: every slot of the group is
    /// prefetched before the first is read, so the group's cache misses overlap instead of
    /// being waited for one by one (the store is far larger than the caches).
    pub fn keywrite_lookup(
        &self,
        keys: &[u32],
        consensus: Option<u8>,
        out: &mut Vec<KeyWriteHit>,
    ) -> Result<(), QueryError> {
        let kw = self.keywrite_store()?;
        out.reserve(keys.len());
        let mut hashes = [KeyHash::with_mode(0, kw.hash); LOOKUP_BATCH];
        for group in keys.chunks(LOOKUP_BATCH) {
            for (h, &k) in hashes.iter_mut().zip(group) {
                *h = KeyHash::with_mode(k, kw.hash);
                for n in 0..kw.redundancy {
                    kw.view.prefetch(kw.offset(h, n));
                }
            }
            out.extend(hashes[..group.len()].iter().map(|h| kw.resolve(h, consensus)));
        }
        Ok(())
    }

    /// Key-Write lookups of many keys on `threads` threads (the batch query API), each thread
    /// running [`Stores::keywrite_lookup`] over its share of `keys`.
    pub fn keywrite_batch(
        &self,
        keys: &[u32],
        consensus: Option<u8>,
        threads: usize,
    ) -> Result<Vec<KeyWriteAnswer>, QueryError> {
        let copies = self.keywrite_store()?.redundancy;
        let threads = threads.clamp(1, 64);
        let chunk = keys.len().div_ceil(threads).max(1);
        std::thread::scope(|sc| {
            let handles: Vec<_> = keys
                .chunks(chunk)
                .map(|part| {
                    sc.spawn(move || {
                        let mut hits = Vec::new();
                        self.keywrite_lookup(part, consensus, &mut hits).map(|()| hits)
                    })
                })
                .collect();
            let mut out = Vec::with_capacity(keys.len());
            for (h, part) in handles.into_iter().zip(keys.chunks(chunk)) {
                let hits = h.join().expect("a query thread panicked")?;
                out.extend(part.iter().zip(hits).map(|(&key, hit)| KeyWriteAnswer {
                    key,
                    value: hit.value().map(<[u8]>::to_vec),
                    matching: hit.matching,
                    agreeing: hit.agreeing,
                    copies,
                }));
            }
            Ok(out)
        })
    }

    /// Key-Increment lookup: the minimum of the key's N counters (Count-Min).
    pub fn keyincrement(&self, key: u32) -> Result<u64, QueryError> {
        let s = self
            .find(|k| matches!(k, StoreKind::KeyIncrement { .. }))
            .ok_or(QueryError::NoStore("keyincrement"))?;
        let StoreKind::KeyIncrement { slots, redundancy, hash } = s.kind else { unreachable!() };
        let view = self.mem.view(s.region);
        let hash = KeyHash::with_mode(key, hash);
        Ok((0..redundancy)
            .map(|n| {
                view.word(layout::key_slot_index(&hash, n, slots) * layout::KEYINCREMENT_SLOT_LEN as u64)
            })
            .min()
            .unwrap_or(0))
    }

    /// Postcarder lookup: the key's path (its hop values), if its slot holds it.
    pub fn postcarder(&self, key: u32) -> Result<Option<[u32; layout::POSTCARDER_HOPS]>, QueryError> {
        let s = self
            .find(|k| matches!(k, StoreKind::Postcarder { .. }))
            .ok_or(QueryError::NoStore("postcarder"))?;
        let StoreKind::Postcarder { slots } = s.kind else { unreachable!() };
        let mut b = [0u8; layout::POSTCARDER_WRITE_LEN];
        let off = layout::postcarder_slot_index(key, slots) * layout::POSTCARDER_SLOT_LEN as u64;
        self.mem.view(s.region).read(off, &mut b);
        if u32::from_le_bytes([b[20], b[21], b[22], b[23]]) != KeyHash::new(key).checksum()
            || b.iter().all(|&x| x == 0)
        {
            return Ok(None);
        }
        Ok(Some(std::array::from_fn(|i| {
            u32::from_be_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
        })))
    }

    /// A WRITE with Immediate's data arrived on a connection to `port`, through a NIC that wrote
    /// the data by DMA (the verbs backend): on an Append store it is the batch's mark, which
    /// moves the ring's head (`wire::dta::layout::append_mark`); the immediate to notify the
    /// host of, if any — the list ID for a mark that asks, the data itself on other stores.
    pub fn on_marked_immediate(&self, port: u16, imm: u32) -> Option<u32> {
        match self.stores.iter().find(|s| s.port == port) {
            Some(Store { kind: StoreKind::Append { list, .. }, region, .. }) => {
                self.mem.mark_ring(*region, imm);
                layout::append_mark_notifies(imm).then_some(*list)
            }
            _ => Some(imm),
        }
    }

    /// The word our 24-byte metadata adds for the store on `port`, for a collector whose NIC
    /// writes by DMA: an Append ring's head with `RING_MARKS` (batches must be marked for this
    /// collector to see them); `None` for other stores (the 16-byte metadata).
    pub fn marked_ring_word(&self, port: u16) -> Option<u64> {
        let s = self.stores.iter().find(|s| s.port == port)?;
        matches!(s.kind, StoreKind::Append { .. }).then(|| self.mem.ring_head(s.region) | layout::RING_MARKS)
    }

    fn list(&self, list: u32) -> Result<(&Store, u64), QueryError> {
        let s = self
            .find(|k| matches!(k, StoreKind::Append { list: l, .. } if *l == list))
            .ok_or(QueryError::NoList(list))?;
        let StoreKind::Append { entries, .. } = s.kind else { unreachable!() };
        Ok((s, entries))
    }

    /// What each store holds, for a summary: occupied slots of the Key-Write, Key-Increment and
    /// Postcarder stores (a slot not all zero), entries appended to each list since start.
    pub fn occupancy(&self) -> Vec<(String, u64)> {
        self.stores
            .iter()
            .map(|s| {
                let view = self.mem.view(s.region);
                let used = |slot_len: u64, slots: u64| {
                    let mut b = vec![0u8; slot_len as usize];
                    (0..slots)
                        .filter(|i| {
                            view.read(i * slot_len, &mut b);
                            b.iter().any(|&x| x != 0)
                        })
                        .count() as u64
                };
                match s.kind {
                    StoreKind::KeyWrite { slots, data_len, .. } => (
                        "keywrite_slots_used".to_string(),
                        used(layout::keywrite_slot_len(data_len) as u64, slots),
                    ),
                    StoreKind::KeyIncrement { slots, .. } => (
                        "keyincrement_slots_used".to_string(),
                        used(layout::KEYINCREMENT_SLOT_LEN as u64, slots),
                    ),
                    StoreKind::Postcarder { slots } => {
                        ("postcarder_slots_used".to_string(), used(layout::POSTCARDER_SLOT_LEN as u64, slots))
                    }
                    StoreKind::Append { list, .. } => {
                        (format!("append{list}_entries"), self.mem.ring_head(s.region))
                    }
                    StoreKind::Sketch { id, rows, columns } => {
                        (format!("sketch{id}_columns_used"), used(u64::from(rows) * 4, u64::from(columns)))
                    }
                }
            })
            .collect()
    }

    /// Entries written to `list` since start.
    pub fn append_head(&self, list: u32) -> Result<u64, QueryError> {
        let (s, _) = self.list(list)?;
        Ok(self.mem.ring_head(s.region))
    }

    /// Read up to `max` entries of `list` from index `from` (entries since start). Entries
    /// already overwritten by a later lap are skipped and counted as lost.
    pub fn append_read(&self, list: u32, from: u64, max: usize) -> Result<AppendPoll, QueryError> {
        let (s, entries) = self.list(list)?;
        let view = self.mem.view(s.region);
        let head = self.mem.ring_head(s.region);
        let oldest = head.saturating_sub(entries);
        let mut lost = oldest.saturating_sub(from);
        let start = from.max(oldest).min(head);
        let n = (head - start).min(max as u64);
        let entry = layout::APPEND_ENTRY_LEN as u64;
        let mut out: Vec<u32> = (start..start + n).map(|i| view.u32_le((i % entries) * entry)).collect();
        // Entries the writer lapped while they were read are not returned.
        let lapped = self.mem.ring_head(s.region).saturating_sub(entries).saturating_sub(start).min(n);
        out.drain(..lapped as usize);
        lost += lapped;
        Ok(AppendPoll {
            list,
            entries: out,
            from: start + lapped,
            next: start + n,
            lost,
            new_consumer: false,
        })
    }

    /// Poll `list` for `consumer`: the entries after its tail pointer (up to `max`), moving it.
    pub fn append_poll(&self, list: u32, consumer: &str, max: usize) -> Result<AppendPoll, QueryError> {
        self.list(list)?;
        if consumer.is_empty()
            || consumer.len() > MAX_CONSUMER_NAME
            || !consumer.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        {
            return Err(QueryError::BadConsumer(consumer.chars().take(MAX_CONSUMER_NAME).collect()));
        }
        let mut t = self.tails.lock().unwrap_or_else(|e| e.into_inner());
        let key = (list, consumer.to_string());
        let new_consumer = !t.map.contains_key(&key);
        if new_consumer
            && t.map.len() >= MAX_CONSUMERS
            && let Some(lru) = t.map.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone())
        {
            t.map.remove(&lru);
            t.forgotten += 1;
        }
        t.clock += 1;
        let now = t.clock;
        let tail = t.map.get(&key).map_or(0, |&(tail, _)| tail);
        let mut p = self.append_read(list, tail, max)?;
        p.new_consumer = new_consumer;
        t.map.insert(key, (p.next, now));
        Ok(p)
    }

    /// Consumers whose tail pointers were forgotten to keep at most [`MAX_CONSUMERS`].
    pub fn consumers_forgotten(&self) -> u64 {
        self.tails.lock().unwrap_or_else(|e| e.into_inner()).forgotten
    }

    fn sketch(&self, id: u16) -> Result<(&Store, u16, u32), QueryError> {
        let s = self
            .find(|k| matches!(k, StoreKind::Sketch { id: i, .. } if *i == id))
            .ok_or(QueryError::NoSketch(id))?;
        let StoreKind::Sketch { rows, columns, .. } = s.kind else { unreachable!() };
        Ok((s, rows, columns))
    }

    /// A sketch's counters, column by column (`[column][row]`).
    pub fn sketch_read(&self, id: u16) -> Result<Vec<Vec<u32>>, QueryError> {
        let (s, rows, columns) = self.sketch(id)?;
        let view = self.mem.view(s.region);
        Ok((0..columns)
            .map(|c| {
                let at = layout::sketch_column_offset(c, rows);
                (0..u64::from(rows)).map(|r| view.u32_le(at + 4 * r)).collect()
            })
            .collect())
    }

    /// Count-Min point estimate of `key` in sketch `id`: the minimum over rows of the counter
    /// in the key's column of that row ([`layout::sketch_column_for`]).
    pub fn sketch_estimate(&self, id: u16, key: u32) -> Result<u32, QueryError> {
        let (s, rows, columns) = self.sketch(id)?;
        let view = self.mem.view(s.region);
        Ok((0..rows)
            .map(|r| {
                let c = layout::sketch_column_for(key, r, columns);
                view.u32_le(layout::sketch_column_offset(c, rows) + 4 * u64::from(r))
            })
            .min()
            .unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce::responder::Memory;
    use std::path::Path;

    fn stores() -> Stores {
        let cfg = CollectorConfig::parse(
            Path::new("t.toml"),
            "[collector]\nip = \"127.0.0.1\"\nmemory = \"pages\"\n[keywrite]\nport = 1\nslots = 64\n\
             [keyincrement]\nport = 2\nslots = 64\n[postcarder]\nport = 3\nslots = 16\n\
             [[append]]\nlist = 5\nport = 4\nentries = 8\n[[sketch]]\nid = 9\nport = 5\nrows = 2\ncolumns = 4\n",
        )
        .unwrap();
        Stores::new(&cfg, 3).unwrap().0
    }

    /// Write as the translator does: through the RDMA memory interface.
    fn write(s: &Stores, store: usize, off: u64, data: &[u8]) {
        let r = s.memory().regions()[store];
        let mut m = s.memory().clone();
        m.write(r.rkey, r.va + off, data).unwrap();
    }

    /// The verbs backend's Append: the NIC writes entries by DMA (no head moves), the batches'
    /// marks (WRITE with Immediate) move the head, and queries read what was written.
    #[test]
    fn append_heads_learned_from_marks_serve_queries_whatever_wrote_the_memory() {
        let s = stores();
        let region = 3;
        assert_eq!(s.marked_ring_word(4), Some(layout::RING_MARKS));
        assert_eq!(s.marked_ring_word(1), None);
        // Three batches of 3 into a ring of 8: the third wraps.
        let mut written = 0u64;
        for (b, notify) in [(0u32, false), (1, true), (2, false)] {
            for k in 0..3u32 {
                let v = 10 * b + k + 1;
                let slot = written % 8;
                assert!(s.memory().dma_write(region, slot * 4, &v.to_le_bytes()));
                written += 1;
            }
            assert_eq!(s.append_head(5).unwrap(), written - 3, "DMA alone moves nothing");
            let n = s.on_marked_immediate(4, layout::append_mark(written, notify));
            assert_eq!(n, notify.then_some(5), "a mark that asks notifies with the list ID");
            assert_eq!(s.append_head(5).unwrap(), written);
        }
        // A replayed batch's (older) mark leaves the head.
        assert_eq!(s.on_marked_immediate(4, layout::append_mark(6, false)), None);
        assert_eq!(s.append_head(5).unwrap(), 9);
        assert_eq!(s.marked_ring_word(4), Some(9 | layout::RING_MARKS));
        // Entries 1..=8 of the 9 are in the ring; the first was overwritten by the wrap.
        let p = s.append_read(5, 0, 100).unwrap();
        assert_eq!(p.entries, [2, 3, 11, 12, 13, 21, 22, 23]);
        assert_eq!(p.lost, 1);
        // Other stores' immediates pass through as notifications.
        assert_eq!(s.on_marked_immediate(1, 77), Some(77));
    }

    #[test]
    fn keywrite_finds_the_value_by_checksum_and_never_a_neighbours() {
        let s = stores();
        let h = KeyHash::new(77);
        let mut slot = [0u8; 8];
        layout::keywrite_slot(&h, &[1, 2, 3, 4], &mut slot);
        write(&s, 0, layout::key_slot_index(&h, 1, 64) * 8, &slot);
        let a = s.keywrite(77, None).unwrap();
        assert_eq!((a.value.as_deref(), a.matching, a.copies), (Some(&[1, 2, 3, 4][..]), 1, 2));
        // Consensus of 2 is not met by one copy.
        assert_eq!(s.keywrite(77, Some(2)).unwrap().value, None);
        write(&s, 0, layout::key_slot_index(&h, 0, 64) * 8, &slot);
        assert_eq!(s.keywrite(77, Some(2)).unwrap().value.as_deref(), Some(&[1, 2, 3, 4][..]));
        // Another key whose slots these are: not found, not 77's value.
        let other = (0..u32::MAX)
            .find(|&k| {
                k != 77
                    && layout::key_slot_index(&KeyHash::new(k), 0, 64) == layout::key_slot_index(&h, 0, 64)
            })
            .unwrap();
        assert_eq!(s.keywrite(other, None).unwrap().value, None);
        // Never written: not found.
        assert_eq!(s.keywrite(123_456, None).unwrap().value, None);
        let batch = s.keywrite_batch(&[77, other, 123_456], None, 2).unwrap();
        assert_eq!(batch.iter().map(|a| a.value.is_some()).collect::<Vec<_>>(), [true, false, false]);
    }

    /// Keys found at the end when `keys` random keys are written in turn, `copies` copies each, into
    /// `slots` slots in `mode`: a key is found if one of its copies' slots still holds its checksum.
    fn simulate_found(keys: u32, slots: u64, copies: u8, mode: KeyHashMode) -> f64 {
        let mut owner = vec![u32::MAX; slots as usize];
        let key_of = |i: u32| wire::dta::scramble_key(i.wrapping_mul(2).wrapping_add(1));
        for i in 0..keys {
            let h = KeyHash::with_mode(key_of(i), mode);
            for n in 0..copies {
                owner[layout::key_slot_index(&h, n, slots) as usize] = i;
            }
        }
        let found = (0..keys)
            .filter(|&i| {
                let h = KeyHash::with_mode(key_of(i), mode);
                (0..copies).any(|n| owner[layout::key_slot_index(&h, n, slots) as usize] == i)
            })
            .count();
        found as f64 / f64::from(keys)
    }

    #[test]
    fn independent_copies_match_the_independent_model() {
        // The measurement: 2^20 slots, 400 k keys; and a lighter load. Independent copies
        // are within a point of the model for N = 1, 2, 4, and two copies find more than one.
        let slots = 1u64 << 20;
        for keys in [400_000, 100_000] {
            let mut found = [0.0; 5];
            for n in [1u8, 2, 4] {
                let got = simulate_found(keys, slots, n, KeyHashMode::Independent);
                let model = independent_copies_model(u64::from(keys), slots, n);
                assert!((got - model).abs() < 0.01, "{keys} keys, N={n}: found {got:.4}, model {model:.4}");
                found[usize::from(n)] = got;
            }
            assert!(found[2] > found[1], "{keys} keys: N=2 {:.4} not above N=1 {:.4}", found[2], found[1]);
        }
        // The model at the load: N = 2 finds 88.62 % (at 400 k keys N = 4 over-fills the
        // store and finds fewer than N = 2; at 100 k it finds the most).
        assert!((independent_copies_model(400_000, 1 << 20, 2) - 0.8862).abs() < 5e-4);
        let keys = 400_000;
        // The reference hash: copies collide together, N = 2 worse than N = 1 (69.97 % measured).
        let r1 = simulate_found(keys, slots, 1, KeyHashMode::Reference);
        let r2 = simulate_found(keys, slots, 2, KeyHashMode::Reference);
        assert!(r2 < r1 && (r2 - 0.6997).abs() < 0.01, "reference N=1 {r1:.4}, N=2 {r2:.4}");
    }

    #[test]
    fn batched_lookups_answer_as_single_lookups_do_in_order() {
        let s = stores();
        // 30 keys in 64 slots with N = 2: plenty of collisions, found and lost keys both.
        for k in 0..30u32 {
            let h = KeyHash::new(k);
            let mut slot = [0u8; 8];
            layout::keywrite_slot(&h, &(k * 1000 + 1).to_be_bytes(), &mut slot);
            for n in 0..2 {
                write(&s, 0, layout::key_slot_index(&h, n, 64) * 8, &slot);
            }
        }
        // Enough keys to span several prefetch groups and end in a partial one.
        let keys: Vec<u32> = (0..LOOKUP_BATCH as u32 * 5 + 3).collect();
        for consensus in [None, Some(2)] {
            let mut hits = Vec::new();
            s.keywrite_lookup(&keys, consensus, &mut hits).unwrap();
            let batch = s.keywrite_batch(&keys, consensus, 3).unwrap();
            assert_eq!((hits.len(), batch.len()), (keys.len(), keys.len()));
            let mut found = 0;
            for ((&k, hit), b) in keys.iter().zip(&hits).zip(&batch) {
                let one = s.keywrite(k, consensus).unwrap();
                assert_eq!(hit.value(), one.value.as_deref(), "key {k}");
                assert_eq!((hit.matching, hit.agreeing), (one.matching, one.agreeing), "key {k}");
                assert_eq!(b, &one, "key {k}");
                if let Some(v) = hit.value() {
                    assert_eq!(v, (k * 1000 + 1).to_be_bytes(), "key {k} answered a wrong value");
                    found += 1;
                }
            }
            assert!(found > 10 && found < 30, "{found} of 30 keys found");
        }
    }

    #[test]
    fn keyincrement_is_the_minimum_of_the_copies() {
        let s = stores();
        let h = KeyHash::new(5);
        let r = s.memory().regions()[1];
        let mut m = s.memory().clone();
        for (n, add) in [(0, 10), (1, 7)] {
            m.fetch_add(r.rkey, r.va + layout::key_slot_index(&h, n, 64) * 8, add).unwrap();
        }
        assert_eq!(s.keyincrement(5).unwrap(), 7);
    }

    #[test]
    fn postcarder_path_is_checked_by_key() {
        let s = stores();
        let mut b = [0u8; layout::POSTCARDER_WRITE_LEN];
        layout::postcarder_slot(42, &[1, 2, 3, 4, 5], &mut b);
        write(&s, 2, layout::postcarder_slot_index(42, 16) * 32, &b);
        assert_eq!(s.postcarder(42).unwrap(), Some([1, 2, 3, 4, 5]));
        assert_eq!(s.postcarder(43).unwrap(), None);
    }

    #[test]
    fn append_consumers_read_in_order_and_count_what_they_missed() {
        let s = stores();
        let batch = |vals: &[u32]| vals.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        write(&s, 3, 0, &batch(&[1, 2, 3, 4]));
        assert_eq!(s.append_poll(5, "a", 100).unwrap().entries, [1, 2, 3, 4]);
        write(&s, 3, 16, &batch(&[5, 6, 7, 8]));
        let p = s.append_poll(5, "a", 2).unwrap();
        assert_eq!((p.entries, p.from, p.next), (vec![5, 6], 4, 6));
        // A second consumer has its own tail.
        assert_eq!(s.append_poll(5, "b", 100).unwrap().entries, [1, 2, 3, 4, 5, 6, 7, 8]);
        // Two more laps' worth: consumer a, 2 entries behind, lost the ones overwritten.
        write(&s, 3, 0, &batch(&[9, 10, 11, 12]));
        write(&s, 3, 16, &batch(&[13, 14, 15, 16]));
        write(&s, 3, 0, &batch(&[17, 18, 19, 20]));
        let p = s.append_poll(5, "a", 100).unwrap();
        assert_eq!((p.lost, p.entries), (6, vec![13, 14, 15, 16, 17, 18, 19, 20]));
        assert_eq!(s.append_poll(7, "a", 1).unwrap_err(), QueryError::NoList(7));
    }

    #[test]
    fn sketch_estimate_is_the_row_minimum_in_the_keys_columns() {
        let s = stores();
        // Rows 2, columns 4: column c is 2 counters at c * 8.
        let mut m = s.memory().clone();
        let r = s.memory().regions()[4];
        let cols: Vec<u8> = (0..8u32).flat_map(|i| (10 * (i + 1)).to_le_bytes()).collect();
        m.write(r.rkey, r.va, &cols).unwrap();
        let read = s.sketch_read(9).unwrap();
        assert_eq!(read, vec![vec![10, 20], vec![30, 40], vec![50, 60], vec![70, 80]]);
        let key = 1234;
        let expect =
            (0..2u16).map(|row| read[layout::sketch_column_for(key, row, 4) as usize][row as usize]).min();
        assert_eq!(Some(s.sketch_estimate(9, key).unwrap()), expect);
    }
}
