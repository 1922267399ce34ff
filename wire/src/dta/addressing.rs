//! Collector addressing: the Key-Write checksum and slot hashes (two modes), key scrambling, flow keys, the collector a
//! key goes to, and the memory layouts both the translator and the collector compute.

/// The Key-Write checksum stored with each slot: CRC-32/ISO-HDLC over the key's four
/// little-endian bytes (the reference byte-swaps the key before hashing).
#[inline]
pub fn keywrite_checksum(key: u32) -> u32 {
    KeyHash::new(key).checksum()
}

/// The slot hash of copy `n` of `key` in `mode`. Mask it with the (power-of-two) slot count to
/// get the slot index.
#[inline]
pub fn keywrite_slot_hash(key: u32, n: u8, mode: KeyHashMode) -> u32 {
    KeyHash::with_mode(key, mode).slot(n)
}

/// How the N copies of a Key-Write or Key-Increment key choose their slots. Translator and
/// collector must agree (both take it from their configuration; the default is
/// [`Independent`](Self::Independent) on both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeyHashMode {
    /// Copy `n` hashes the key's little-endian bytes with its own CRC-32 polynomial
    /// ([`COPY_POLYNOMIALS`]`[n]`, reflected, init and xor-out all ones), as a Tofino switch
    /// would give each copy its own CRC hash unit. Different polynomials are different linear
    /// maps, so a key that collides with another in one copy does not collide with it in the
    /// others: the copies are as independent as the paper's collision analysis (§3.1, Fig. 11–12)
    /// assumes. None of the polynomials is the checksum's (CRC-32/ISO-HDLC) or the collector
    /// mapping's (CRC-32C), so a slot says nothing about the checksum it holds and every
    /// collector's keys still spread over all its slots.
    #[default]
    Independent,
    /// The reference implementation's: CRC-32/ISO-HDLC over the key's little-endian bytes and
    /// the byte `n`. CRC is linear, so copy `n`'s slot is copy 0's XOR a constant and keys
    /// collide in every copy at once (measured at 2^20 slots and 400 k keys: N = 2 finds fewer
    /// keys than N = 1). Kept to share a collector with a reference translator or collector.
    Reference,
}

impl KeyHashMode {
    /// The configuration name: `"independent"` or `"reference"`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Independent => "independent",
            Self::Reference => "reference",
        }
    }

    /// Parse a configuration name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "independent" => Some(Self::Independent),
            "reference" => Some(Self::Reference),
            _ => None,
        }
    }
}

/// The CRC-32 polynomials (normal form) of copies 0..8 in [`KeyHashMode::Independent`]: CRC-32K
/// (Koopman), CRC-32Q, CRC-32D, CRC-32/AUTOSAR, CRC-32K2 (Koopman), CRC-32/CD-ROM-EDC and two
/// of the reference translator's own Postcarder polynomials (odd, so each is a bijection of
/// the key). Copy `n >= 8` uses polynomial `n % 8` and continues with the byte `n`.
pub const COPY_POLYNOMIALS: [u32; 8] =
    [0x741b_8cd7, 0x8141_41ab, 0xa833_982b, 0xf4ac_fb13, 0x3258_3499, 0x8001_801b, 0x65b9_6595, 0x49cf_878b];

/// Slice-by-4 tables of [`COPY_POLYNOMIALS`], built at compile time (32 KiB; a report of
/// redundancy N touches N of them).
static COPY_TABLES: [[[u32; 256]; 4]; 8] = {
    let mut t = [[[0u32; 256]; 4]; 8];
    let mut i = 0;
    while i < 8 {
        t[i] = crate::crc32::slices::<4>(COPY_POLYNOMIALS[i]);
        i += 1;
    }
    t
};

/// A key's Key-Write hashes: the checksum (the CRC-32/ISO-HDLC of the key, shared by both
/// modes) and each copy's slot hash in the chosen [`KeyHashMode`].
///
/// Hand-written rather than `crc32fast::hash`: these inputs are 4 and 5 bytes, where one
/// slice-by-4 step (four independent table lookups) and one byte step cost a handful of
/// instructions and crc32fast's per-call setup dominates (the translator hashes every report).
/// crc32fast also offers only the zlib polynomial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHash {
    key: u32,
    state: u32,
    mode: KeyHashMode,
}

impl KeyHash {
    /// A key's hashes in the default mode ([`KeyHashMode::Independent`]).
    #[inline]
    pub fn new(key: u32) -> Self {
        Self::with_mode(key, KeyHashMode::Independent)
    }

    /// A key's hashes in `mode`.
    #[inline]
    pub fn with_mode(key: u32, mode: KeyHashMode) -> Self {
        Self { key, state: crate::crc32::step4(!0, key), mode }
    }

    /// The key's checksum.
    #[inline]
    pub const fn checksum(&self) -> u32 {
        !self.state
    }

    /// The slot hash of copy `n`.
    #[inline]
    pub fn slot(&self, n: u8) -> u32 {
        match self.mode {
            KeyHashMode::Reference => !crate::crc32::step(self.state, n),
            KeyHashMode::Independent => {
                let i = usize::from(n) % COPY_POLYNOMIALS.len();
                let t = &COPY_TABLES[i];
                let s = crate::crc32::step4_with(t, !0, self.key);
                !(if usize::from(n) < COPY_POLYNOMIALS.len() { s } else { crate::crc32::step_with(t, s, n) })
            }
        }
    }
}

/// Spread keys that differ in a few bits over the slot hash's range: murmur3's 32-bit
/// finaliser, a bijection on `u32`.
///
/// Why a reporter needs it: the slot hash is a CRC of the key, affine over GF(2), so keys that
/// differ in a few bits (consecutive numbers, a CRC of neighbouring 5-tuples) land in a small
/// affine subspace of slots and collide in whole groups — and since `CRC(k ‖ n) = CRC(k ‖ 0) ⊕
/// c_n`, in every copy at once. The multiply-xorshift finaliser is not affine, so scrambled keys
/// spread over the slots as random keys do.
#[inline]
pub const fn scramble_key(x: u32) -> u32 {
    let mut h = x;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// Which of `n` collectors holds `key` (Key-Write and Key-Increment spread keys over collectors
/// by hash): CRC-32C of the key's little-endian bytes, scaled to `0..n` as `c · n >> 32`. A
/// different CRC than the slot hash, so a collector's keys still spread over all its slots.
///
/// Why a scale and not `c mod n`: a switch pipeline has no divider. Collector `i` holds the
/// hashes in `[⌈i·2³²/n⌉, ⌈(i+1)·2³²/n⌉)` ([`keywrite_collector_range`]), a range table's match
/// on Tofino and BMv2, the same choice as here.
#[inline]
pub fn keywrite_collector(key: u32, n: usize) -> usize {
    let c = crc32c(&key.to_le_bytes());
    ((u64::from(c) * n.max(1) as u64) >> 32) as usize
}

/// The CRC-32C of `key` that [`keywrite_collector`] scales: what a switch hashes.
#[inline]
pub fn keywrite_collector_hash(key: u32) -> u32 {
    crc32c(&key.to_le_bytes())
}

/// The hashes collector `i` of `n` holds under [`keywrite_collector`]: `(first, last)`,
/// inclusive. `None` when `i >= n` (or the range is empty, which no `n ≤ 2³²` gives).
pub fn keywrite_collector_range(i: usize, n: usize) -> Option<(u32, u32)> {
    let (i, n) = (i as u64, n as u64);
    if i >= n {
        return None;
    }
    let lo = (i << 32).div_ceil(n);
    let hi = ((i + 1) << 32).div_ceil(n) - 1;
    (lo <= hi).then_some((lo as u32, hi.min(u64::from(u32::MAX)) as u32))
}

/// The DTA key of a flow, from the CRC-32 of its 5-tuple: simple tabulation hashing, one fixed
/// random table per byte of the CRC, XORed ([`FLOW_KEY_TABLES`]).
///
/// Why not the CRC itself: the slot hash is a CRC of the key, affine over GF(2), so keys that
/// are CRCs of neighbouring 5-tuples (affine too) land in a small affine subspace of slots and
/// collide in whole groups, in every copy at once. Random tables are not affine, so these keys
/// spread over the slots as random keys do. Why tables and not [`scramble_key`]'s multiplies: a
/// Tofino ALU cannot multiply, and four 256-entry exact tables are what every P4 target has —
/// the reporter's key is the same on our switch, BMv2 and Tofino.
#[inline]
pub const fn flow_key(crc: u32) -> u32 {
    let b = crc.to_le_bytes();
    FLOW_KEY_TABLES[0][b[0] as usize]
        ^ FLOW_KEY_TABLES[1][b[1] as usize]
        ^ FLOW_KEY_TABLES[2][b[2] as usize]
        ^ FLOW_KEY_TABLES[3][b[3] as usize]
}

/// [`flow_key`]'s tables: table `i` maps byte `i` (least significant first) of the CRC. Filled
/// by SplitMix64 from a fixed seed, so every build and every target has the same ones.
pub static FLOW_KEY_TABLES: [[u32; 256]; 4] = flow_key_tables();

const fn flow_key_tables() -> [[u32; 256]; 4] {
    let mut t = [[0u32; 256]; 4];
    let mut s: u64 = 0x0d7a_f10e_5eed_0001;
    let mut i = 0;
    while i < 4 {
        let mut j = 0;
        while j < 256 {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            t[i][j] = (z >> 32) as u32;
            j += 1;
        }
        i += 1;
    }
    t
}

/// CRC-32C (Castagnoli), bitwise: only a few bytes per report go through it.
pub(super) const fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    let mut i = 0;
    while i < data.len() {
        crc ^= data[i] as u32;
        let mut b = 0;
        while b < 8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82f6_3b78 } else { crc >> 1 };
            b += 1;
        }
        i += 1;
    }
    !crc
}

/// The collector memory layouts both the translator and the collector's queries depend on
/// (design `DTA.md`, "Memory layouts"). The defaults are the reference implementation's.
pub mod layout {
    use super::KeyHash;

    /// Bytes of a Key-Write slot holding `data_len` bytes of data: the 4-byte checksum and the
    /// data, rounded up to a power of two (8 for the default 4 bytes of data).
    pub const fn keywrite_slot_len(data_len: usize) -> usize {
        (4 + data_len).next_power_of_two()
    }

    /// Write a Key-Write slot for the key `hash` was made from: the checksum as a
    /// little-endian `u32` (as the reference stores it), then the data as reported (network
    /// order), then zeros.
    #[inline]
    pub fn keywrite_slot(hash: &KeyHash, data: &[u8], slot: &mut [u8]) {
        slot[..4].copy_from_slice(&hash.checksum().to_le_bytes());
        let n = data.len().min(slot.len().saturating_sub(4));
        crate::field::copy_short(&mut slot[4..], &data[..n]);
        crate::field::zero_short(&mut slot[4 + n..]);
    }

    /// A Key-Increment slot: one 64-bit counter, little-endian (the responder's byte order).
    pub const KEYINCREMENT_SLOT_LEN: usize = 8;

    /// An Append entry: a 32-bit datum, little-endian (the reference byte-swaps Append data).
    pub const APPEND_ENTRY_LEN: usize = 4;

    /// The head of an Append ring of `entries` entries (entries written since it was empty)
    /// after a write of `len` entries at entry `start`, `head` before it. A writer fills the
    /// ring in order, so a write that starts at the head extends it. One that starts up to half
    /// a ring behind it rewrites entries already counted — a request replayed on a new
    /// connection, applied before its acknowledgement was lost — and leaves it. Any other
    /// moves the head to the write's end: a writer that started over elsewhere (a translator
    /// without the head, which starts at 0).
    pub const fn append_head_after(head: u64, entries: u64, start: u64, len: u64) -> u64 {
        if entries == 0 {
            return head;
        }
        let pos = head % entries;
        let start = start % entries;
        if start == pos {
            return head + len;
        }
        let behind = (pos + entries - start) % entries;
        if behind <= entries / 2 {
            return head;
        }
        head + (start + entries - pos) % entries + len
    }

    /// In the word our 24-byte metadata adds (the Append ring's head), this bit asks the
    /// translator to mark every batch ([`append_mark`]): the collector cannot see writes (a NIC
    /// applies them by DMA) and learns its rings' heads from the marks.
    pub const RING_MARKS: u64 = 1 << 63;

    /// The immediate data of an Append batch's last WRITE (a WRITE with Immediate) when the
    /// collector asked for marks: the entries written to the list after this batch, modulo
    /// 2^31, with bit 31 set when a report of the batch asked for a notification (the
    /// reference's immediate carries the list ID instead; with marks the collector knows the
    /// list from the connection).
    pub const fn append_mark(written: u64, notify: bool) -> u32 {
        (written as u32 & 0x7fff_ffff) | ((notify as u32) << 31)
    }

    /// Whether a mark asks for a notification.
    pub const fn append_mark_notifies(mark: u32) -> bool {
        mark & 0x8000_0000 != 0
    }

    /// The head after `mark`, `head` before it: the head moves forward to the mark's count
    /// (less than 2^30 entries between marks); an older mark (a batch replayed on a new
    /// connection) leaves it.
    pub const fn append_head_from_mark(head: u64, mark: u32) -> u64 {
        let delta = (mark & 0x7fff_ffff).wrapping_sub(head as u32) & 0x7fff_ffff;
        if delta < 1 << 30 { head + delta as u64 } else { head }
    }

    /// A Postcarder slot: 32 bytes, of which 5 hop values (4 bytes each, network order) and,
    /// our extension in the reference's padding, the key's Key-Write checksum (little-endian)
    /// at offset 20, so a query can tell whose path a slot holds.
    pub const POSTCARDER_SLOT_LEN: usize = 32;
    /// Hops a Postcarder slot holds.
    pub const POSTCARDER_HOPS: usize = 5;
    /// Bytes of a Postcarder slot actually written: values and checksum.
    pub const POSTCARDER_WRITE_LEN: usize = 24;

    /// The slot of `key`'s path in a Postcarder store of `slots` (a power of two) slots: its
    /// Key-Write checksum, masked (the reference's `CRC32(key) & mask`).
    pub fn postcarder_slot_index(key: u32, slots: u64) -> u64 {
        u64::from(KeyHash::new(key).checksum()) & slots.saturating_sub(1)
    }

    /// Write the 24 meaningful bytes of a Postcarder slot.
    pub fn postcarder_slot(key: u32, hops: &[u32; POSTCARDER_HOPS], slot: &mut [u8]) {
        for (i, h) in hops.iter().enumerate() {
            slot[4 * i..4 * i + 4].copy_from_slice(&h.to_be_bytes());
        }
        slot[20..24].copy_from_slice(&KeyHash::new(key).checksum().to_le_bytes());
    }

    /// Byte offset of sketch column `column` (each column `rows` counters of 4 bytes,
    /// little-endian, columns contiguous).
    pub const fn sketch_column_offset(column: u32, rows: u16) -> u64 {
        column as u64 * rows as u64 * 4
    }

    /// The slot of copy `n` of a key in a Key-Write or Key-Increment store of `slots` slots (a
    /// power of two): the copy's slot hash, masked.
    #[inline]
    pub fn key_slot_index(hash: &KeyHash, n: u8, slots: u64) -> u64 {
        hash.slot(n) as u64 & (slots - 1)
    }

    /// The column a key counts in, in row `row` of a Count-Min sketch of `columns` columns:
    /// the slot hash of copy `row`, modulo `columns` (reporters building sketches and the
    /// collector's point estimate agree on it).
    #[inline]
    pub fn sketch_column_for(key: u32, row: u16, columns: u32) -> u32 {
        KeyHash::new(key).slot(row as u8) % columns
    }
}
