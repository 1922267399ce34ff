//! Typed declarations: what a program declares, the way a P4 program (or DPDK SWX's pipeline
//! spec) does — its parser over `wire`'s header specifications, its metadata, and each table
//! with its key fields, match kinds and actions, each register array with its cell layout, each
//! counter, meter, hash unit, multicast group set and digest.
//!
//! The machine model's constructors ([`ExactTable::new`](super::ExactTable::new), …) take these,
//! so a resource cannot exist undeclared; [`Resources`](super::Resources) keeps them, `dataplane
//! resources` prints them, the P4 exporter walks them, and each program's tests check its fast
//! path against them ([`ParserDecl::run`] parses a frame as declared; tables record the keys they
//! were looked up with in test builds).

use std::fmt::{self, Write as _};

use wire::spec::{Field, Header};

use super::HashAlgo;

/// Where a key, a hash input or an index comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRef {
    /// A field of a header instance the parser extracts (`ipv4.dst_addr`).
    Hdr {
        /// The instance, as the parser names it.
        instance: &'static str,
        /// The field, from `wire`'s specification.
        field: &'static Field,
    },
    /// Metadata: intrinsic (`ingress_port`) or the program's own (`nexthop`).
    Meta {
        /// Its name.
        name: &'static str,
        /// Width in bits.
        width: u16,
    },
}

impl FieldRef {
    /// `instance.field`.
    pub const fn hdr(instance: &'static str, field: &'static Field) -> Self {
        Self::Hdr { instance, field }
    }

    /// Metadata `name` of `width` bits.
    pub const fn meta(name: &'static str, width: u16) -> Self {
        Self::Meta { name, width }
    }

    /// Width in bits.
    pub const fn width(&self) -> u16 {
        match self {
            Self::Hdr { field, .. } => field.width,
            Self::Meta { width, .. } => *width,
        }
    }
}

impl fmt::Display for FieldRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hdr { instance, field } => write!(f, "{instance}.{}", field.name),
            Self::Meta { name, .. } => write!(f, "meta.{name}"),
        }
    }
}

/// How a key field matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// Exact.
    Exact,
    /// Longest prefix.
    Lpm,
    /// Value and mask, with priorities.
    Ternary,
    /// The group ID of an action selector; the member is chosen by its hash unit.
    Selector,
}

impl MatchKind {
    /// P4's name for it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Lpm => "lpm",
            Self::Ternary => "ternary",
            Self::Selector => "selector",
        }
    }
}

/// One key field of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDecl {
    /// What is matched.
    pub field: FieldRef,
    /// How.
    pub kind: MatchKind,
}

impl KeyDecl {
    /// An exact key on `field`.
    pub const fn exact(field: FieldRef) -> Self {
        Self { field, kind: MatchKind::Exact }
    }

    /// A longest-prefix key on `field`.
    pub const fn lpm(field: FieldRef) -> Self {
        Self { field, kind: MatchKind::Lpm }
    }

    /// A ternary key on `field`.
    pub const fn ternary(field: FieldRef) -> Self {
        Self { field, kind: MatchKind::Ternary }
    }
}

/// A named field of a given width: an action parameter, a register cell's part, a metadata field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Name.
    pub name: &'static str,
    /// Width in bits.
    pub width: u16,
}

/// `name: width`.
pub const fn param(name: &'static str, width: u16) -> Param {
    Param { name, width }
}

/// An action a table may call, and its parameters (the entry's action data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionDecl {
    /// Name.
    pub name: &'static str,
    /// Parameters, in order.
    pub params: Vec<Param>,
}

/// An action `name(params…)`.
pub fn action(name: &'static str, params: &[Param]) -> ActionDecl {
    ActionDecl { name, params: params.to_vec() }
}

/// A match-action table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDecl {
    /// Name, unique in the program.
    pub name: &'static str,
    /// Most entries.
    pub size: usize,
    /// Key fields, in order.
    pub keys: Vec<KeyDecl>,
    /// The actions its entries may call.
    pub actions: Vec<ActionDecl>,
    /// The action of a miss.
    pub default_action: &'static str,
    /// For an action selector: the hash unit choosing the member, and the most members per group.
    pub selector: Option<(&'static str, usize)>,
}

impl TableDecl {
    /// A table of `size` entries keyed on `keys`, calling `actions`, `default_action` on a miss.
    pub fn new(
        name: &'static str,
        size: usize,
        keys: &[KeyDecl],
        actions: Vec<ActionDecl>,
        default_action: &'static str,
    ) -> Self {
        Self { name, size, keys: keys.to_vec(), actions, default_action, selector: None }
    }

    /// Key width: the sum of the key fields'.
    pub fn key_bits(&self) -> u32 {
        self.keys.iter().map(|k| u32::from(k.field.width())).sum()
    }

    /// Action data width: the widest action's parameters.
    pub fn action_bits(&self) -> u32 {
        self.actions.iter().map(|a| a.params.iter().map(|p| u32::from(p.width)).sum()).max().unwrap_or(0)
    }

    /// The action called `name`.
    pub fn action(&self, name: &str) -> Option<&ActionDecl> {
        self.actions.iter().find(|a| a.name == name)
    }
}

/// The unit a meter counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeterUnit {
    /// Packets (a share of a packet in the program's own units, as the DTA translator charges).
    Packets,
    /// Bytes.
    Bytes,
}

/// A header instance a parser state extracts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instance {
    /// The instance's name (`ipv4`, `dta_base`), which keys and hash inputs refer to.
    pub name: &'static str,
    /// Its layout.
    pub header: &'static Header,
    /// A header stack: as many copies as this field says (at most `max`), one after the other.
    pub stack: Option<(FieldRef, usize)>,
}

/// The instance `name` of `header`.
pub const fn inst(name: &'static str, header: &'static Header) -> Instance {
    Instance { name, header, stack: None }
}

/// A stack `name` of `header`: `count` copies (a field extracted before), at most `max`.
pub const fn stack(name: &'static str, header: &'static Header, count: FieldRef, max: usize) -> Instance {
    Instance { name, header, stack: Some((count, max)) }
}

/// Where a parser state goes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Another state.
    State(&'static str),
    /// Stop; the packet goes to the controls.
    Accept,
    /// Stop; the packet is dropped (counted as malformed).
    Reject,
}

/// One arm of a state's `select`: the selected fields, concatenated, masked, equal to `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// Value.
    pub value: u64,
    /// Mask (all ones: exact).
    pub mask: u64,
    /// Where to go.
    pub next: Next,
}

/// `value => next`, exact.
pub const fn on(value: u64, next: Next) -> Transition {
    Transition { value, mask: u64::MAX, next }
}

/// A parser state: extract headers, skip what follows, then select the next state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDecl {
    /// Name.
    pub name: &'static str,
    /// Headers extracted, in order.
    pub extract: Vec<Instance>,
    /// Bytes skipped after them: `field × scale − minus` (IPv4 options: `ihl × 4 − 20`), P4's
    /// `advance`.
    pub advance: Option<(FieldRef, u32, u32)>,
    /// Metadata set from extracted fields (`meta.l4_src_port = udp.src_port`).
    pub set: Vec<(Param, FieldRef)>,
    /// Fields the transition selects on, concatenated (empty: always `default`).
    pub select: Vec<FieldRef>,
    /// Arms, first match wins.
    pub transitions: Vec<Transition>,
    /// Where to go when no arm matches.
    pub default: Next,
}

impl StateDecl {
    /// A state extracting `extract` and going to `default` unless an arm on `select` matches.
    pub fn new(
        name: &'static str,
        extract: &[Instance],
        select: &[FieldRef],
        transitions: &[Transition],
        default: Next,
    ) -> Self {
        Self {
            name,
            extract: extract.to_vec(),
            advance: None,
            set: Vec::new(),
            select: select.to_vec(),
            transitions: transitions.to_vec(),
            default,
        }
    }

    /// The same state, also setting metadata `m` to `from`.
    pub fn set(mut self, m: Param, from: FieldRef) -> Self {
        self.set.push((m, from));
        self
    }

    /// The same state, skipping `field × scale − minus` bytes after its headers.
    pub fn advance(mut self, field: FieldRef, scale: u32, minus: u32) -> Self {
        self.advance = Some((field, scale, minus));
        self
    }
}

/// A parser: states, the first the start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParserDecl {
    /// States; the first is the start state.
    pub states: Vec<StateDecl>,
}

/// Why [`ParserDecl::run`] stopped without accepting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseReject {
    /// A header did not fit in the frame.
    #[error("header {0} does not fit")]
    Truncated(&'static str),
    /// A state chose reject.
    #[error("rejected in state {0}")]
    Rejected(&'static str),
    /// A transition names a state that does not exist (a declaration error).
    #[error("no state {0}")]
    NoState(&'static str),
    /// More states visited than the parser has (a loop).
    #[error("the parser loops")]
    Loop,
}

/// What [`ParserDecl::run`] extracted: each header instance and where it starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    /// (instance, byte offset in the frame), in extraction order; a stack's copies each once.
    pub headers: Vec<(Instance, usize)>,
    /// Metadata the parser set, with its value.
    pub meta: Vec<(&'static str, u64)>,
    /// Where the payload starts: one past the last header (and advance).
    pub payload: usize,
}

impl Parsed {
    /// The offset of instance `name` (of a stack: its first copy), if it was extracted.
    pub fn offset(&self, name: &str) -> Option<usize> {
        self.headers.iter().find(|(i, _)| i.name == name).map(|(_, at)| *at)
    }

    /// Whether instance `name` was extracted.
    pub fn is_valid(&self, name: &str) -> bool {
        self.offset(name).is_some()
    }

    /// The value of a field in `frame`: a header field (the first copy of a stack) or metadata
    /// the parser set; `None` otherwise, or when wider than 64 bits.
    pub fn get(&self, frame: &[u8], f: &FieldRef) -> Option<u64> {
        match f {
            FieldRef::Hdr { instance, field } => field.read(frame.get(self.offset(instance)?..)?),
            FieldRef::Meta { name, .. } => self.meta.iter().find(|(n, _)| n == name).map(|(_, v)| *v),
        }
    }
}

impl ParserDecl {
    /// The state called `name`.
    pub fn state(&self, name: &str) -> Option<&StateDecl> {
        self.states.iter().find(|s| s.name == name)
    }

    /// Every header instance any state extracts, in first-extraction order.
    pub fn instances(&self) -> Vec<Instance> {
        let mut out: Vec<Instance> = Vec::new();
        for s in &self.states {
            for i in &s.extract {
                if !out.iter().any(|o| o.name == i.name) {
                    out.push(*i);
                }
            }
        }
        out
    }

    /// Parse `frame` as declared: what a P4 parser would extract, for tests that hold the fast
    /// path to the declaration and for the exporter's checks.
    pub fn run(&self, frame: &[u8]) -> Result<Parsed, ParseReject> {
        let mut parsed = Parsed::default();
        let mut at = 0usize;
        let Some(mut state) = self.states.first() else { return Ok(parsed) };
        for _ in 0..=self.states.len() {
            for i in &state.extract {
                let copies = match &i.stack {
                    None => 1,
                    Some((count, max)) => {
                        let n = parsed.get(frame, count).ok_or(ParseReject::Truncated(i.name))? as usize;
                        if n > *max {
                            return Err(ParseReject::Rejected(state.name));
                        }
                        n
                    }
                };
                for _ in 0..copies {
                    if frame.len() < at + i.header.len {
                        return Err(ParseReject::Truncated(i.name));
                    }
                    parsed.headers.push((*i, at));
                    at += i.header.len;
                }
            }
            for (m, from) in &state.set {
                let v = parsed.get(frame, from).ok_or(ParseReject::Truncated(state.name))?;
                parsed.meta.push((m.name, v));
            }
            if let Some((f, scale, minus)) = &state.advance {
                let v = parsed.get(frame, f).ok_or(ParseReject::Truncated(state.name))?;
                at += (v as usize * *scale as usize).saturating_sub(*minus as usize);
                if at > frame.len() {
                    return Err(ParseReject::Truncated(state.name));
                }
            }
            parsed.payload = at;
            let mut key = 0u64;
            for f in &state.select {
                let v = parsed.get(frame, f).ok_or(ParseReject::Truncated(state.name))?;
                key = (key << f.width()) | v;
            }
            let next = if state.select.is_empty() {
                state.default
            } else {
                state
                    .transitions
                    .iter()
                    .find(|t| key & t.mask == t.value & t.mask)
                    .map_or(state.default, |t| t.next)
            };
            state = match next {
                Next::Accept => return Ok(parsed),
                Next::Reject => return Err(ParseReject::Rejected(state.name)),
                Next::State(n) => self.state(n).ok_or(ParseReject::NoState(n))?,
            };
        }
        Err(ParseReject::Loop)
    }
}

impl fmt::Display for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::State(s) => f.write_str(s),
            Self::Accept => f.write_str("accept"),
            Self::Reject => f.write_str("reject"),
        }
    }
}

/// What a declared resource is, with what its kind declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclKind {
    /// A match-action table.
    Table(TableDecl),
    /// A register array: cells of this layout, indexed by `index` (when the index is a field).
    Register {
        /// A cell's fields.
        cell: Vec<Param>,
        /// What indexes it, when it is a field (otherwise computed, e.g. a hash).
        index: Option<FieldRef>,
    },
    /// Packet and byte counters.
    Counter,
    /// Two-rate three-colour meters.
    Meter(MeterUnit),
    /// A CRC hash unit over these inputs.
    Hash {
        /// Algorithm.
        algo: HashAlgo,
        /// Output width.
        width: u16,
        /// Inputs, concatenated.
        inputs: Vec<FieldRef>,
    },
    /// Multicast replication groups.
    Multicast,
    /// A digest to the control plane (MAC learning on Tofino): these fields, into this table.
    Digest {
        /// Fields sent.
        fields: Vec<FieldRef>,
        /// The table the control plane fills from it.
        table: &'static str,
    },
}

impl DeclKind {
    /// A short name for reports.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Table(t) => match t.keys.first() {
                _ if t.selector.is_some() => "selector",
                Some(k) if matches!(k.kind, MatchKind::Lpm) => "lpm",
                Some(k) if matches!(k.kind, MatchKind::Ternary) => "ternary",
                _ => "exact",
            },
            Self::Register { .. } => "register",
            Self::Counter => "counter",
            Self::Meter(_) => "meter",
            Self::Hash { .. } => "hash",
            Self::Multicast => "multicast",
            Self::Digest { .. } => "digest",
        }
    }
}

/// One declared resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decl {
    /// Name, unique per program.
    pub name: &'static str,
    /// Entries (table size, array length, groups).
    pub size: usize,
    /// What it is.
    pub kind: DeclKind,
    /// Memory reserved for it here, in bytes (0 for what shares another's memory).
    pub bytes: usize,
    /// Anything else worth saying (structure, what is not P4).
    pub detail: String,
}

impl Decl {
    /// Key (or index) width in bits.
    pub fn key_bits(&self) -> u32 {
        match &self.kind {
            DeclKind::Table(t) => t.key_bits(),
            DeclKind::Hash { inputs, .. } => inputs.iter().map(|f| u32::from(f.width())).sum(),
            _ => usize::BITS - self.size.saturating_sub(1).leading_zeros(),
        }
    }

    /// Value width in bits: action data, a register cell, a counter pair, a hash output.
    pub fn value_bits(&self) -> u32 {
        match &self.kind {
            DeclKind::Table(t) => t.action_bits(),
            DeclKind::Register { cell, .. } => cell.iter().map(|p| u32::from(p.width)).sum(),
            DeclKind::Counter => 128,
            DeclKind::Meter(_) => 0,
            DeclKind::Hash { width, .. } => u32::from(*width),
            DeclKind::Multicast => 0,
            DeclKind::Digest { fields, .. } => fields.iter().map(|f| u32::from(f.width())).sum(),
        }
    }

    /// Everything it declares, on one line (the long form of `dataplane resources`).
    pub fn describe(&self) -> String {
        let list = |v: &[FieldRef]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let params =
            |p: &[Param]| p.iter().map(|p| format!("{} {}", p.name, p.width)).collect::<Vec<_>>().join(", ");
        let mut s = String::new();
        match &self.kind {
            DeclKind::Table(t) => {
                let keys: Vec<String> = t
                    .keys
                    .iter()
                    .map(|k| format!("{} {} {}", k.field, k.field.width(), k.kind.name()))
                    .collect();
                let _ = write!(s, "key ({})", keys.join(", "));
                let acts: Vec<String> =
                    t.actions.iter().map(|a| format!("{}({})", a.name, params(&a.params))).collect();
                let _ = write!(s, "; actions {}; default {}", acts.join(", "), t.default_action);
                if let Some((hash, members)) = t.selector {
                    let _ = write!(s, "; selector {hash}, up to {members} members");
                }
            }
            DeclKind::Register { cell, index } => {
                let _ = write!(s, "cell ({})", params(cell));
                if let Some(i) = index {
                    let _ = write!(s, "; index {i}");
                }
            }
            DeclKind::Counter => s.push_str("packets 64, bytes 64"),
            DeclKind::Meter(unit) => {
                let _ = write!(s, "trTCM, {}", if *unit == MeterUnit::Bytes { "bytes" } else { "packets" });
            }
            DeclKind::Hash { algo, width, inputs } => {
                let _ = write!(s, "{algo:?} ({}), {width} bits of ({})", algo.polynomial(), list(inputs));
            }
            DeclKind::Multicast => s.push_str("replication groups, a replication ID per copy"),
            DeclKind::Digest { fields, table } => {
                let _ = write!(s, "({}) to the control plane, into {table}", list(fields));
            }
        }
        if !self.detail.is_empty() {
            let _ = write!(s, "; {}", self.detail);
        }
        s
    }
}

/// Ingress intrinsic metadata every program can read ([`crate::switch::IngressMd`]).
pub const INGRESS_INTRINSIC: &[Param] =
    &[param("ingress_port", 16), param("ingress_ts", 64), param("recirc_pass", 8), param("from_cpu", 1)];

/// Egress intrinsic metadata every program can read ([`crate::switch::EgressMd`]).
pub const EGRESS_INTRINSIC: &[Param] = &[
    param("egress_port", 16),
    param("qid", 8),
    param("rid", 16),
    param("enq_qdepth", 32),
    param("deq_ts", 64),
    param("port_qdepth", 32),
    param("tx_bytes", 64),
    param("speed_bps", 64),
    param("paused", 1),
];

/// The parser printed one state a line.
impl fmt::Display for ParserDecl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.states {
            write!(f, "  state {}:", s.name)?;
            for i in &s.extract {
                write!(f, " extract {}", i.name)?;
                if i.name != i.header.name {
                    write!(f, " ({})", i.header.name)?;
                }
                if let Some((count, max)) = &i.stack {
                    write!(f, " x {count} (at most {max})")?;
                }
                write!(f, ";")?;
            }
            for (m, from) in &s.set {
                write!(f, " meta.{} = {from};", m.name)?;
            }
            if let Some((field, scale, minus)) = &s.advance {
                write!(f, " advance {field} * {scale} - {minus} bytes;")?;
            }
            if s.select.is_empty() {
                writeln!(f, " -> {}", s.default)?;
                continue;
            }
            let sel: Vec<String> = s.select.iter().map(ToString::to_string).collect();
            write!(f, " select ({}) {{", sel.join(", "))?;
            for t in &s.transitions {
                if t.mask == u64::MAX {
                    write!(f, " {:#x}: {},", t.value, t.next)?;
                } else {
                    write!(f, " {:#x} &&& {:#x}: {},", t.value, t.mask, t.next)?;
                }
            }
            writeln!(f, " default: {} }}", s.default)?;
        }
        Ok(())
    }
}
