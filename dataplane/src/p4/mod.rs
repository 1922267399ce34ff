//! P4-16 export: the configured program as a TNA (Tofino 1) or v1model program, with the
//! control-plane state its configuration implies.
//!
//! What is generated and what is written by hand:
//! - **generated from the declarations** ([`crate::model::Resources`]): header types from
//!   `wire`'s field specifications (the same [`wire::spec::Header`] constants the Rust views
//!   read through), the parser from the program's [`ParserDecl`](crate::model::ParserDecl),
//!   the metadata struct, every declared table (keys, match kinds, actions, default action,
//!   size), action selectors with their hash units, registers, counters, meters and digests,
//!   the IPv4 checksum, the deparser, the table entries and multicast groups, and the resource
//!   summary;
//! - **written by hand, beside each program** (`programs/<name>/p4.rs`): the bodies of the
//!   declared actions and the `apply` blocks — the P4 rendering of the Rust program's steps,
//!   written once against a few target macros (`SF_DROP()`, `SF_SET_EGRESS(p)`, …) that the
//!   prelude defines for each target.
//!
//! Not a P4 compiler and not checked by one here (none is installable on this machine): the
//! output is meant to compile with p4c (v1model) and the Tofino compiler (TNA), and is checked
//! by an independent run on BMv2 against the pcaps in `docs/p4/`. Deterministic: the same
//! configuration gives byte-identical files.

pub mod entries;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wire::spec::Header;

use crate::model::decl::{DeclKind, FieldRef, Instance, MatchKind, MeterUnit, Next, StateDecl};
use crate::model::{HashAlgo, Param, Resources, TableDecl};

pub use entries::{Arg, Entry, KeyVal};

/// A P4 target architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Tofino Native Architecture (`tna.p4`, Tofino 1).
    Tna,
    /// p4c's `v1model.p4` (BMv2 `simple_switch`).
    V1model,
}

impl Target {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tna => "tna",
            Self::V1model => "v1model",
        }
    }

    /// From its name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "tna" => Some(Self::Tna),
            "v1model" => Some(Self::V1model),
            _ => None,
        }
    }
}

/// Where a generated table or extern lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pipe {
    /// The ingress control.
    Ingress,
    /// The egress control.
    Egress,
}

/// A digest to the control plane.
#[derive(Debug, Clone)]
pub struct DigestP4 {
    /// The declared name.
    pub name: &'static str,
    /// Its number (TNA `digest_type`, v1model receiver).
    pub id: u8,
    /// Fields sent: name in the digest struct, width, P4 expression.
    pub fields: Vec<(&'static str, u16, &'static str)>,
}

/// What a program gives the exporter beyond its declarations: the hand-written P4 steps.
#[derive(Debug, Clone, Default)]
pub struct ProgramP4 {
    /// Bodies of the declared tables' actions, and of their default actions when those are
    /// not among them: `(table, action, body)`, the body written against the target macros.
    pub actions: Vec<(&'static str, &'static str, String)>,
    /// P4 text in the ingress control after the generated declarations (its own actions,
    /// P4-only tables).
    pub ingress_decls: String,
    /// The ingress `apply` body.
    pub ingress_apply: String,
    /// P4 text in the egress control after the generated declarations.
    pub egress_decls: String,
    /// The egress `apply` body.
    pub egress_apply: String,
    /// Metadata the rendering needs beyond the declared (copies of intrinsic fields, flags).
    pub meta: Vec<Param>,
    /// Declared tables that live in egress (the rest are in ingress).
    pub egress_tables: Vec<&'static str>,
    /// Declared resources the P4 does not emit as such, and why.
    pub not_emitted: Vec<(&'static str, String)>,
    /// P4-only resources the rendering adds, and why.
    pub added: Vec<(&'static str, String)>,
    /// Digests the control plane receives.
    pub digests: Vec<DigestP4>,
    /// The control-plane state the configuration implies.
    pub entries: Vec<Entry>,
    /// Tables in dependency order, one group per stage they need at least (a match depending
    /// on another's result goes to a later stage).
    pub chain: Vec<Vec<&'static str>>,
    /// Where the Rust program loops and how the P4 handles it (recirculation or none).
    pub recirculation: String,
    /// What the targets cannot do as the Rust program does, and how the export handles it.
    pub limitations: Vec<String>,
    /// Metadata carried from ingress to egress and with an ingress clone: on v1model the
    /// fields of `@field_list(1)` (what `SF_CLONE_I2E` preserves); on TNA a bridged header
    /// (`hdr.bridge`, kind 0) before the packet and the mirror header (kind 1) of a clone.
    pub bridge: Vec<Param>,
    /// TNA only: the egress parser's state `parse_clone` for an ingress clone (after the mirror
    /// header), written by the program; `None` parses a clone as any packet.
    pub tna_clone_parser: Option<String>,
    /// Header instances the P4 adds beyond the parser's (headers the program builds), emitted
    /// after the parsed ones in this order.
    pub extra_headers: Vec<ExtraHeader>,
    /// Egress clones (`SF_CLONE_E2E`): TNA's egress deparser gets a mirror (with `bridge`).
    pub egress_mirror: bool,
}

/// A header instance the P4 builds and the parser never extracts.
#[derive(Debug, Clone)]
pub struct ExtraHeader {
    /// Instance name (`hdr.<instance>`).
    pub instance: &'static str,
    /// Its type's name.
    pub type_name: String,
    /// Its type's declaration, unless a parsed instance already declares the type.
    pub decl: Option<String>,
}

impl ExtraHeader {
    /// An instance of a header `wire` specifies (the type generated from the specification).
    pub fn wire(instance: &'static str, h: &'static Header) -> Self {
        Self { instance, type_name: header_type(h), decl: Some(header_decl(h)) }
    }

    /// `bytes` bytes of zeros (padding to the Ethernet minimum).
    pub fn zeros(instance: &'static str, bytes: usize) -> Self {
        let t = format!("{instance}_h");
        let decl = format!(
            "// {bytes} bytes of padding, all zero.\nheader {t} {{\n    bit<{}> zeros;\n}}\n\n",
            bytes * 8
        );
        Self { instance, type_name: t, decl: Some(decl) }
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The program has no P4 rendering.
    #[error("program {0:?} has no P4 rendering")]
    NoRendering(String),
    /// The configuration asks for what the target cannot do.
    #[error("{0}")]
    Unsupported(String),
    /// A declared action has no body in the program's rendering.
    #[error("table {table}: action {action} has no P4 body in the program's rendering")]
    MissingAction {
        /// Table.
        table: String,
        /// Action.
        action: String,
    },
}

/// The words P4-16 reserves as names, renamed with a trailing `_` where a header, field or
/// table would take one: p4c 1.2.5.16's lexer refuses each of these as a header field name,
/// and accepts every other word — the contextual keywords (`key`, `priority`, `type`, `apply`,
/// `actions`, `entries`, `state`, `list`) and the header-stack properties (`next`, `last`,
/// `size`, `lastIndex`) included, so those are left as written. Checked against the real
/// compiler by `dataplane/tests/p4_compile.rs`.
pub const RESERVED: &[&str] = &[
    "abstract",
    "action",
    "bit",
    "bool",
    "break",
    "const",
    "continue",
    "control",
    "default",
    "else",
    "enum",
    "error",
    "exit",
    "extern",
    "false",
    "for",
    "header",
    "header_union",
    "if",
    "in",
    "inout",
    "int",
    "match_kind",
    "out",
    "package",
    "parser",
    "return",
    "select",
    "string",
    "struct",
    "switch",
    "table",
    "this",
    "transition",
    "true",
    "tuple",
    "typedef",
    "value_set",
    "varbit",
    "void",
];

/// A TNA `RegisterAction` named `name` on register `reg` of `width`-bit cells: `body` (P4, the
/// cell `v`) runs in its stateful ALU and returns `rv` of `out` bits (`out` 0: returns nothing).
/// For the TNA declarations programs write by hand beside the generated registers.
pub fn tna_register_action(name: &str, reg: &str, width: u32, out: u32, body: &str) -> String {
    let sig = if out == 0 {
        format!("inout bit<{width}> v")
    } else {
        format!("inout bit<{width}> v, out bit<{out}> rv")
    };
    let out_t = if out == 0 { width } else { out };
    let body: Vec<String> = body.lines().map(|l| format!("            {l}")).collect();
    format!(
        "    RegisterAction<bit<{width}>, bit<32>, bit<{out_t}>>({reg}) {name} = {{\n        void apply({sig}) {{\n{}\n        }}\n    }};\n",
        body.join("\n")
    )
}

/// A field or header name as a P4 identifier.
pub fn ident(name: &str) -> String {
    if RESERVED.contains(&name) { format!("{name}_") } else { name.to_string() }
}

/// The P4 type name of a header.
pub fn header_type(h: &Header) -> String {
    format!("{}_h", h.name)
}

/// The P4 expression of a field reference (`hdr.ipv4.dst_addr`, the first copy of a stack,
/// `meta.nexthop`).
pub fn field_expr(f: &FieldRef, res: &Resources) -> String {
    match f {
        FieldRef::Hdr { instance, field } => {
            let stack = res.parser().instances().iter().any(|i| i.name == *instance && i.stack.is_some());
            if stack {
                format!("hdr.{instance}[0].{}", ident(field.name))
            } else {
                format!("hdr.{instance}.{}", ident(field.name))
            }
        }
        FieldRef::Meta { name, .. } => format!("meta.{name}"),
    }
}

/// `setInvalid()` of every parsed header instance but `keep` (every copy of a stack), one
/// statement a line indented for a control's `apply`: what a program that turns a packet into
/// another (a report, an RDMA request) writes before validating the headers it builds.
pub fn invalidate_parsed_except(res: &Resources, keep: &[&str]) -> String {
    let mut s = String::new();
    for i in res.parser().instances() {
        if keep.contains(&i.name) {
            continue;
        }
        match i.stack {
            None => {
                let _ = writeln!(s, "    hdr.{}.setInvalid();", i.name);
            }
            Some((_, max)) => {
                for k in 0..max {
                    let _ = writeln!(s, "    hdr.{}[{k}].setInvalid();", i.name);
                }
            }
        }
    }
    s
}

/// The header type declarations, one per distinct header the parser extracts.
pub fn header_types(res: &Resources) -> String {
    let mut s = String::new();
    let mut seen: Vec<&str> = Vec::new();
    for i in res.parser().instances() {
        if seen.contains(&i.header.name) {
            continue;
        }
        seen.push(i.header.name);
        s.push_str(&header_decl(i.header));
    }
    s
}

/// One header type's declaration, from its `wire` specification.
pub fn header_decl(h: &Header) -> String {
    let mut s = format!("// {} ({} B), from wire's `{}` specification.\n", h.name, h.len, h.name);
    let _ = writeln!(s, "header {} {{", header_type(h));
    for f in h.fields {
        let _ = writeln!(s, "    bit<{}> {};", f.width, ident(f.name));
    }
    let _ = writeln!(s, "}}\n");
    s
}

/// The extra headers' types not declared already.
fn extra_types(res: &Resources, p: &ProgramP4) -> String {
    let mut s = String::new();
    let mut seen: Vec<String> = res.parser().instances().iter().map(|i| header_type(i.header)).collect();
    for e in &p.extra_headers {
        if let Some(d) = &e.decl
            && !seen.contains(&e.type_name)
        {
            seen.push(e.type_name.clone());
            s.push_str(d);
        }
    }
    s
}

/// The bridged header (TNA): a kind byte, the bridged fields, padding to whole bytes.
fn bridge_decl(p: &ProgramP4) -> String {
    let mut s = String::from(
        "// Ingress to egress (kind 0) and an ingress clone's mirror header (kind 1).\nheader bridge_h {\n    bit<8> kind;\n",
    );
    let mut bits = 0u32;
    for f in &p.bridge {
        let _ = writeln!(s, "    bit<{}> {};", f.width, f.name);
        bits += u32::from(f.width);
    }
    if !bits.is_multiple_of(8) {
        let _ = writeln!(s, "    bit<{}> pad;", 8 - bits % 8);
    }
    s.push_str("}\n\n");
    s
}

/// The bridged header's fields as a list from `meta`, `kind` first (a mirror emit's argument).
fn bridge_list(p: &ProgramP4, kind: u8) -> String {
    let mut f = vec![format!("8w{kind}")];
    let mut bits = 0u32;
    for b in &p.bridge {
        f.push(format!("meta.{}", b.name));
        bits += u32::from(b.width);
    }
    if !bits.is_multiple_of(8) {
        f.push(format!("{}w0", 8 - bits % 8));
    }
    format!("{{ {} }}", f.join(", "))
}

fn headers_struct(res: &Resources, p: &ProgramP4, target: Target) -> String {
    let mut s = String::from("struct headers_t {\n");
    if target == Target::Tna && !p.bridge.is_empty() {
        s.push_str("    bridge_h bridge;\n");
    }
    for i in res.parser().instances() {
        match i.stack {
            None => {
                let _ = writeln!(s, "    {} {};", header_type(i.header), i.name);
            }
            Some((_, max)) => {
                let _ = writeln!(s, "    {}[{max}] {};", header_type(i.header), i.name);
            }
        }
    }
    for e in &p.extra_headers {
        let _ = writeln!(s, "    {} {};", e.type_name, e.instance);
    }
    s.push_str("}\n");
    s
}

/// The metadata fields: the program's declared ones, then the rendering's, each name once.
fn meta_fields<'a>(res: &'a Resources, p: &'a ProgramP4) -> Vec<&'a Param> {
    let mut out: Vec<&Param> = Vec::new();
    for m in res.metadata().iter().chain(&p.meta).chain(&p.bridge) {
        if !out.iter().any(|o| o.name == m.name) {
            out.push(m);
        }
    }
    out
}

fn meta_struct(res: &Resources, p: &ProgramP4, target: Target) -> String {
    let mut s = String::from("struct metadata_t {\n");
    for m in meta_fields(res, p) {
        let keep = target == Target::V1model && p.bridge.iter().any(|b| b.name == m.name);
        let _ = writeln!(s, "    {}bit<{}> {};", if keep { "@field_list(1) " } else { "" }, m.width, m.name);
    }
    if target == Target::Tna && res.parser().instances().iter().any(|i| i.name == "ipv4") {
        s.push_str("    bool checksum_err;\n");
    }
    if target == Target::Tna && !p.bridge.is_empty() {
        s.push_str("    bit<8> bridge_kind;\n    bit<10> mirror_session;\n");
    }
    s.push_str("}\n");
    s
}

/// Split a transition's concatenated value and mask over the selected fields.
fn select_case(select: &[FieldRef], value: u64, mask: u64) -> String {
    let mut parts = Vec::new();
    let mut shift: u32 = select.iter().map(|f| u32::from(f.width())).sum();
    for f in select {
        let w = u32::from(f.width());
        shift -= w;
        let m = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
        let v = (value >> shift) & m;
        let k = (mask >> shift) & m;
        parts.push(if k == m { format!("{v:#x}") } else { format!("{v:#x} &&& {k:#x}") });
    }
    if parts.len() == 1 { parts.remove(0) } else { format!("({})", parts.join(", ")) }
}

fn next_name(n: &Next) -> String {
    match n {
        Next::State(s) => format!("parse_{s}"),
        Next::Accept => "accept".into(),
        Next::Reject => "reject".into(),
    }
}

/// The parser states, rendered: `parse_<name>` per declared state. A header stack is unrolled
/// into one state per copy (no parser loop, no counter: both targets take it as is); a state's
/// `advance` (IPv4 options) is rendered as "deeper parsing only when it skips nothing".
fn parser_states(res: &Resources, target: Target, limits: &mut Vec<String>) -> String {
    let mut s = String::new();
    for st in &res.parser().states {
        render_state(&mut s, st, res, target, limits);
    }
    s
}

fn render_state(s: &mut String, st: &StateDecl, res: &Resources, target: Target, limits: &mut Vec<String>) {
    let name = format!("parse_{}", st.name);
    let mut body = String::new();
    let mut stack: Option<(&Instance, FieldRef, usize)> = None;
    for i in &st.extract {
        match i.stack {
            None => {
                let _ = writeln!(body, "        pkt.extract(hdr.{});", i.name);
                if i.name == "ipv4" && target == Target::Tna {
                    let _ = writeln!(body, "        ipv4_csum.add(hdr.ipv4);");
                    let _ = writeln!(body, "        meta.checksum_err = ipv4_csum.verify();");
                }
            }
            Some((count, max)) => stack = Some((i, count, max)),
        }
    }
    // What follows the headers: metadata, then the select.
    let mut tail = String::new();
    for (m, from) in &st.set {
        let _ = writeln!(tail, "        meta.{} = {};", m.name, field_expr(from, res));
    }
    let select = render_select(st, res);
    let select = match &st.advance {
        None => select,
        Some((field, scale, minus)) => {
            let zero = u64::from(*minus / (*scale).max(1));
            limits.push(format!(
                "parser state {}: the Rust parser skips {} × {scale} − {minus} bytes ({} options); the P4 parses \
                 deeper only when that is 0 ({} = {zero}) and accepts the packet there otherwise (no varbit \
                 extract, which Tofino parsers limit)",
                st.name, field, st.name, field
            ));
            let _ = writeln!(s, "    state {name}_body {{\n{select}    }}\n");
            format!(
                "        transition select({}) {{\n            {zero:#x}: {name}_body;\n            default: accept;\n        }}\n",
                field_expr(field, res)
            )
        }
    };
    match stack {
        None => {
            let _ = writeln!(s, "    state {name} {{\n{body}{tail}{select}    }}\n");
        }
        Some((inst, count, max)) => {
            // parse_X: how many copies; parse_X_<k>: copy k; parse_X_end: the state's tail.
            let c = field_expr(&count, res);
            let _ = writeln!(s, "    state {name} {{\n{body}        transition select({c}) {{");
            let _ = writeln!(s, "            0: {name}_end;");
            for n in 1..=max {
                let _ = writeln!(s, "            {n}: {name}_0;");
            }
            let _ = writeln!(s, "            default: reject;\n        }}\n    }}\n");
            for k in 0..max {
                let _ = writeln!(s, "    state {name}_{k} {{\n        pkt.extract(hdr.{}[{k}]);", inst.name);
                if k + 1 < max {
                    let _ = writeln!(
                        s,
                        "        transition select({c}) {{\n            {}: {name}_end;\n            default: {name}_{};\n        }}\n    }}\n",
                        k + 1,
                        k + 1
                    );
                } else {
                    let _ = writeln!(s, "        transition {name}_end;\n    }}\n");
                }
            }
            let _ = writeln!(s, "    state {name}_end {{\n{tail}{select}    }}\n");
        }
    }
}

fn render_select(st: &StateDecl, res: &Resources) -> String {
    if st.select.is_empty() {
        return format!("        transition {};\n", next_name(&st.default));
    }
    let fields: Vec<String> = st.select.iter().map(|f| field_expr(f, res)).collect();
    let mut s = format!("        transition select({}) {{\n", fields.join(", "));
    for t in &st.transitions {
        let _ =
            writeln!(s, "            {}: {};", select_case(&st.select, t.value, t.mask), next_name(&t.next));
    }
    let _ = writeln!(s, "            default: {};\n        }}", next_name(&st.default));
    s
}

fn deparser_emits(res: &Resources, p: &ProgramP4) -> String {
    let mut s = String::new();
    for i in res.parser().instances() {
        let _ = writeln!(s, "        pkt.emit(hdr.{});", i.name);
    }
    for e in &p.extra_headers {
        let _ = writeln!(s, "        pkt.emit(hdr.{});", e.instance);
    }
    s
}

const IPV4_CSUM_FIELDS: &str =
    "{ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.reserved_flag, hdr.ipv4.dont_frag, hdr.ipv4.more_frags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr }";

fn bit_type(width: u32) -> String {
    format!("bit<{width}>")
}

fn algo_v1model(a: HashAlgo) -> &'static str {
    match a {
        HashAlgo::Crc32IsoHdlc => "HashAlgorithm.crc32",
        HashAlgo::Crc16Arc => "HashAlgorithm.crc16",
        HashAlgo::Identity => "HashAlgorithm.identity",
        // BMv2 takes other CRCs as crc32_custom / crc16_custom, their parameters set from
        // the CLI (set_crc32_parameters / set_crc16_parameters).
        HashAlgo::Crc32c | HashAlgo::Crc32Poly(_) => "HashAlgorithm.crc32_custom",
        HashAlgo::Crc16Xmodem | HashAlgo::Crc16Ccitt => "HashAlgorithm.crc16_custom",
    }
}

fn hash_tna(name: &str, algo: HashAlgo, width: u16) -> String {
    let w = width;
    let custom = |poly: u64, reversed: bool, init: u64, xor: u64| {
        format!(
            "    CRCPolynomial<bit<{w}>>({w}w{poly:#x}, {reversed}, false, false, {w}w{init:#x}, {w}w{xor:#x}) {name}_poly;\n    Hash<bit<{w}>>(HashAlgorithm_t.CUSTOM, {name}_poly) {name};\n"
        )
    };
    match algo {
        HashAlgo::Crc32IsoHdlc => format!("    Hash<bit<{w}>>(HashAlgorithm_t.CRC32) {name};\n"),
        HashAlgo::Crc16Arc => format!("    Hash<bit<{w}>>(HashAlgorithm_t.CRC16) {name};\n"),
        HashAlgo::Identity => format!("    Hash<bit<{w}>>(HashAlgorithm_t.IDENTITY) {name};\n"),
        HashAlgo::Crc32c => custom(0x1edc6f41, true, 0xffff_ffff, 0xffff_ffff),
        HashAlgo::Crc32Poly(p) => custom(u64::from(p), true, 0xffff_ffff, 0xffff_ffff),
        HashAlgo::Crc16Xmodem => custom(0x1021, false, 0, 0),
        HashAlgo::Crc16Ccitt => custom(0x1021, false, 0xffff, 0),
    }
}

/// The generated declarations of one control: hash units, registers, counters, meters,
/// selectors, actions and tables.
fn control_decls(
    res: &Resources,
    p: &ProgramP4,
    target: Target,
    pipe: Pipe,
    limits: &mut Vec<String>,
) -> Result<String, ExportError> {
    let mut s = String::new();
    let in_pipe = |name: &str| (pipe == Pipe::Egress) == p.egress_tables.contains(&name);
    let skipped = |name: &str| p.not_emitted.iter().any(|(n, _)| *n == name);
    for d in res.list() {
        if skipped(d.name) || !in_pipe(d.name) {
            continue;
        }
        match &d.kind {
            DeclKind::Hash { .. } if selector_hash(res, d.name) => {}
            DeclKind::Hash { algo, width, inputs } => {
                let ins: Vec<String> = inputs.iter().map(|f| field_expr(f, res)).collect();
                let _ = writeln!(
                    s,
                    "    // hash {}: {algo:?} ({}) of ({})",
                    d.name,
                    algo.polynomial(),
                    ins.join(", ")
                );
                if target == Target::Tna {
                    s.push_str(&hash_tna(d.name, *algo, *width));
                }
            }
            DeclKind::Register { cell, .. } => {
                for f in cell {
                    let w = u32::from(f.width);
                    match target {
                        Target::V1model => {
                            let _ = writeln!(s, "    register<{}>({}) {}_{};", bit_type(w), d.size, d.name, f.name);
                        }
                        Target::Tna if w <= 32 => {
                            let tw = [1, 8, 16, 32].into_iter().find(|&t| t >= w && (t == 1) == (w == 1)).unwrap_or(32);
                            let _ = writeln!(
                                s,
                                "    Register<bit<{tw}>, bit<32>>({}, 0) {}_{};",
                                d.size, d.name, f.name
                            );
                        }
                        Target::Tna => limits.push(format!(
                            "register {}.{} ({w} bits a cell) is wider than a Tofino stateful ALU's 32 (64 as a pair): not emitted for TNA",
                            d.name, f.name
                        )),
                    }
                }
            }
            DeclKind::Counter => {
                let _ = match target {
                    Target::V1model => {
                        writeln!(s, "    counter({}, CounterType.packets_and_bytes) {};", d.size, d.name)
                    }
                    Target::Tna => writeln!(
                        s,
                        "    Counter<bit<32>, bit<32>>({}, CounterType_t.PACKETS_AND_BYTES) {};",
                        d.size, d.name
                    ),
                };
            }
            DeclKind::Meter(unit) => {
                let (v, t) = match unit {
                    MeterUnit::Packets => ("MeterType.packets", "MeterType_t.PACKETS"),
                    MeterUnit::Bytes => ("MeterType.bytes", "MeterType_t.BYTES"),
                };
                let _ = match target {
                    Target::V1model => writeln!(s, "    meter({}, {v}) {};", d.size, d.name),
                    Target::Tna => writeln!(s, "    Meter<bit<32>>({}, {t}) {};", d.size, d.name),
                };
            }
            DeclKind::Table(t) => s.push_str(&table(res, p, target, t)?),
            DeclKind::Multicast | DeclKind::Digest { .. } => {}
        }
    }
    Ok(s)
}

/// Whether hash unit `name` is an action selector's (emitted with its table).
fn selector_hash(res: &Resources, name: &str) -> bool {
    res.list()
        .iter()
        .any(|d| matches!(&d.kind, DeclKind::Table(t) if t.selector.is_some_and(|(h, _)| h == name)))
}

fn action_body<'a>(p: &'a ProgramP4, table: &str, action: &str) -> Result<&'a str, ExportError> {
    p.actions
        .iter()
        .find(|(t, a, _)| *t == table && *a == action)
        .map(|(_, _, b)| b.as_str())
        .ok_or_else(|| ExportError::MissingAction { table: table.into(), action: action.into() })
}

fn indent(body: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    body.lines()
        .map(|l| if l.is_empty() { String::new() } else { format!("{pad}{l}") })
        .collect::<Vec<_>>()
        .join("\n")
}

fn table(res: &Resources, p: &ProgramP4, target: Target, t: &TableDecl) -> Result<String, ExportError> {
    let mut s = String::new();
    let mut names = Vec::new();
    for a in &t.actions {
        let params: Vec<String> = a.params.iter().map(|q| format!("bit<{}> {}", q.width, q.name)).collect();
        let body = action_body(p, t.name, a.name)?;
        let n = entries::action_name(t.name, a.name);
        let _ = writeln!(s, "    action {n}({}) {{\n{}\n    }}", params.join(", "), indent(body, 8));
        names.push(n);
    }
    let default = entries::action_name(t.name, t.default_action);
    if t.action(t.default_action).is_none() {
        let body = action_body(p, t.name, t.default_action)?;
        let _ = writeln!(s, "    action {default}() {{\n{}\n    }}", indent(body, 8));
        names.push(default.clone());
    }
    let mut keys: Vec<String> = Vec::new();
    for k in &t.keys {
        let e = field_expr(&k.field, res);
        let kind = if k.kind == MatchKind::Selector { "exact" } else { k.kind.name() };
        keys.push(format!("{e}: {kind} @name(\"{}\")", entries::key_name(&e)));
    }
    let mut implementation = String::new();
    if let Some((hash, members)) = t.selector {
        let (algo, width, inputs) = match res.get(hash).map(|d| &d.kind) {
            Some(DeclKind::Hash { algo, width, inputs }) => (*algo, *width, inputs.clone()),
            _ => (HashAlgo::Crc16Arc, 16, Vec::new()),
        };
        for f in &inputs {
            let e = field_expr(f, res);
            keys.push(format!("{e}: selector @name(\"{}\")", entries::key_name(&e)));
        }
        let groups = t.size;
        match target {
            Target::V1model => {
                let _ = writeln!(
                    s,
                    "    action_selector({}, 32w{}, 32w{width}) {}_selector;",
                    algo_v1model(algo),
                    groups * members,
                    t.name
                );
            }
            Target::Tna => {
                let _ = writeln!(s, "    ActionProfile({}) {}_profile;", groups * members, t.name);
                s.push_str(&hash_tna(hash, algo, width));
                let _ = writeln!(
                    s,
                    "    ActionSelector({0}_profile, {hash}, SelectorMode_t.FAIR, {members}, {groups}) {0}_selector;",
                    t.name
                );
            }
        }
        implementation = format!("        implementation = {}_selector;\n", t.name);
    }
    let acts: Vec<String> = names.iter().map(|n| format!("            {n};")).collect();
    let _ = writeln!(
        s,
        "    table {} {{\n        key = {{\n{}\n        }}\n        actions = {{\n{}\n        }}\n        default_action = {default}();\n{implementation}        size = {};\n    }}\n",
        t.name,
        keys.iter().map(|k| format!("            {k};")).collect::<Vec<_>>().join("\n"),
        acts.join("\n"),
        t.size
    );
    Ok(s)
}

const V1MODEL_PRELUDE: &str =
    "// Target macros: the hand-written steps use these, so one rendering serves both targets.
#define SF_V1MODEL 1
#define SF_INGRESS_PORT ((bit<16>)std.ingress_port)
#define SF_SET_EGRESS(p) std.egress_spec = (bit<9>)(p)
#define SF_DROP() mark_to_drop(std)
// Multicast to group g (1-based here), the copy to port `excl` pruned in egress.
#define SF_MCAST(g, excl) std.mcast_grp = (bit<16>)(g)
#define SF_CHECKSUM_ERR (std.checksum_error == 1)
// The egress queue (BMv2 runs priority queues with --priority-queues).
#define SF_SET_QUEUE(q) std.priority = (bit<3>)(q)
#define SF_EGRESS_PORT ((bit<16>)std.egress_port)
#define SF_EGRESS_DROP() mark_to_drop(std)
// BMv2 keeps time in microseconds.
#define SF_EGRESS_TS_NS (((bit<32>)std.egress_global_timestamp) * 32w1000)
// BMv2 counts queue depth in packets: bytes are estimated at the packet's own length each.
#define SF_DEQ_QDEPTH_BYTES (((bit<32>)std.deq_qdepth) * ((bit<32>)std.packet_length))
#define SF_PKT_LEN ((bit<32>)std.packet_length)
";

/// v1model macros of a program that clones (it bridges metadata).
const V1MODEL_CLONE: &str =
    "// An ingress-to-egress clone through session s, the @field_list(1) metadata preserved; in
// egress the clone is instance type 1 (PKT_INSTANCE_TYPE_INGRESS_CLONE), cut to n bytes.
#define SF_CLONE_I2E(s) clone_preserving_field_list(CloneType.I2E, (bit<32>)(s), 1)
#define SF_EGRESS_IS_CLONE (std.instance_type == 1)
#define SF_TRUNCATE(n) truncate((bit<32>)(n))
// The replication ID of a multicast copy.
#define SF_EGRESS_RID (std.egress_rid)
";

/// v1model macro of a program that clones in egress.
const V1MODEL_E2E: &str = "// An egress-to-egress clone through session s (instance type 2 in egress).
#define SF_CLONE_E2E(s) clone(CloneType.E2E, (bit<32>)(s))
";

const TNA_PRELUDE: &str = "// Target macros: the hand-written steps use these, so one rendering serves both targets.
#define SF_TNA 1
#define SF_INGRESS_PORT ((bit<16>)ig_intr_md.ingress_port)
#define SF_SET_EGRESS(p) ig_tm_md.ucast_egress_port = (PortId_t)(p)
#define SF_DROP() ig_dprsr_md.drop_ctl = 1
// Multicast to group g (1-based here), the copy to port `excl` pruned by the PRE (L2 XID).
#define SF_MCAST(g, excl) ig_tm_md.mcast_grp_a = (MulticastGroupId_t)(g); ig_tm_md.level2_exclusion_id = (L2ExclusionId_t)(excl)
#define SF_CHECKSUM_ERR (meta.checksum_err)
#define SF_SET_QUEUE(q) ig_tm_md.qid = (QueueId_t)(q)
#define SF_EGRESS_PORT ((bit<16>)eg_intr_md.egress_port)
#define SF_EGRESS_DROP() eg_dprsr_md.drop_ctl = 1
#define SF_EGRESS_TS_NS (eg_prsr_md.global_tstamp[31:0])
// Tofino counts queue depth in 80-byte cells.
#define SF_DEQ_QDEPTH_BYTES (((bit<32>)eg_intr_md.deq_qdepth) * 32w80)
#define SF_PKT_LEN ((bit<32>)eg_intr_md.pkt_length)
";

/// TNA macros of a program that mirrors (it bridges metadata).
const TNA_CLONE: &str =
    "// An ingress mirror through session s with the bridged fields as its mirror header (kind 1); in
// egress the clone is kind 1, already cut by the session's max_pkt_len.
#define SF_CLONE_I2E(s) ig_dprsr_md.mirror_type = 1; meta.mirror_session = (bit<10>)(s)
#define SF_EGRESS_IS_CLONE (meta.bridge_kind == 1)
#define SF_TRUNCATE(n)
// The replication ID of a multicast copy.
#define SF_EGRESS_RID (eg_intr_md.egress_rid)
";

/// TNA macro of a program that mirrors in egress.
const TNA_E2E: &str =
    "// An egress mirror through session s, the bridged fields as its mirror header (kind 1).
#define SF_CLONE_E2E(s) eg_dprsr_md.mirror_type = 1; meta.mirror_session = (bit<10>)(s)
";

fn digest_structs(p: &ProgramP4) -> String {
    let mut s = String::new();
    for d in &p.digests {
        let _ = writeln!(s, "struct {}_digest_t {{", d.name);
        for (n, w, _) in &d.fields {
            let _ = writeln!(s, "    bit<{w}> {n};");
        }
        let _ = writeln!(s, "}}\n");
    }
    s
}

/// A generated P4 program and its companions: file name → contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The files, by name.
    pub files: BTreeMap<String, String>,
}

/// Export `program` (declared by `res`, rendered by `p`) for `target`. `source` names the
/// configuration in the files' headers.
pub fn export(
    program: &str,
    source: &str,
    res: &Resources,
    p: &ProgramP4,
    target: Target,
) -> Result<Export, ExportError> {
    let mut limits = p.limitations.clone();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// {program}: P4-16 for {}, generated by `dataplane p4 export` from {source}. Do not edit: change\n// the Rust program's declarations or its P4 rendering (dataplane/src/programs/{program}/p4.rs) and export again.\n",
        match target {
            Target::Tna => "TNA (Tofino 1)",
            Target::V1model => "v1model (BMv2 simple_switch)",
        }
    );
    out.push_str("#include <core.p4>\n");
    out.push_str(match target {
        Target::Tna => "#include <tna.p4>\n\n",
        Target::V1model => "#include <v1model.p4>\n\n",
    });
    out.push_str(match target {
        Target::Tna => TNA_PRELUDE,
        Target::V1model => V1MODEL_PRELUDE,
    });
    if !p.bridge.is_empty() {
        out.push_str(match target {
            Target::Tna => TNA_CLONE,
            Target::V1model => V1MODEL_CLONE,
        });
        if p.egress_mirror {
            out.push_str(match target {
                Target::Tna => TNA_E2E,
                Target::V1model => V1MODEL_E2E,
            });
        }
    }
    out.push('\n');
    out.push_str(&header_types(res));
    out.push_str(&extra_types(res, p));
    if target == Target::Tna && !p.bridge.is_empty() {
        out.push_str(&bridge_decl(p));
    }
    out.push_str(&headers_struct(res, p, target));
    out.push('\n');
    out.push_str(&meta_struct(res, p, target));
    out.push('\n');
    out.push_str(&digest_structs(p));
    let has_ipv4 = res.parser().instances().iter().any(|i| i.name == "ipv4");
    let states = parser_states(res, target, &mut limits);
    let ing = control_decls(res, p, target, Pipe::Ingress, &mut limits)?;
    let eg = control_decls(res, p, target, Pipe::Egress, &mut limits)?;
    let emits = deparser_emits(res, p);
    match target {
        Target::V1model => {
            let _ = writeln!(
                out,
                "parser SfParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {{\n    state start {{\n        transition parse_start;\n    }}\n\n{states}}}\n"
            );
            let verify = if has_ipv4 {
                format!(
                    "        verify_checksum(hdr.ipv4.isValid(), {IPV4_CSUM_FIELDS}, hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);\n"
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "control SfVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {{\n    apply {{\n{verify}    }}\n}}\n"
            );
            let digests: String = p
                .digests
                .iter()
                .map(|d| {
                    let f: Vec<&str> = d.fields.iter().map(|(_, _, e)| *e).collect();
                    format!(
                        "    action {0}_send() {{\n        digest<{0}_digest_t>({1}, {{ {2} }});\n    }}\n",
                        d.name,
                        d.id,
                        f.join(", ")
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "control SfIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {{\n{digests}{ing}{}\n    apply {{\n{}\n    }}\n}}\n",
                p.ingress_decls,
                indent(&p.ingress_apply, 8)
            );
            let _ = writeln!(
                out,
                "control SfEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std) {{\n{eg}{}\n    apply {{\n{}\n    }}\n}}\n",
                p.egress_decls,
                indent(&p.egress_apply, 8)
            );
            let update = if has_ipv4 {
                format!(
                    "        update_checksum(hdr.ipv4.isValid(), {IPV4_CSUM_FIELDS}, hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);\n"
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "control SfComputeChecksum(inout headers_t hdr, inout metadata_t meta) {{\n    apply {{\n{update}    }}\n}}\n"
            );
            let _ = writeln!(
                out,
                "control SfDeparser(packet_out pkt, in headers_t hdr) {{\n    apply {{\n{emits}    }}\n}}\n"
            );
            out.push_str(
                "V1Switch(SfParser(), SfVerifyChecksum(), SfIngress(), SfEgress(), SfComputeChecksum(), SfDeparser()) main;\n",
            );
        }
        Target::Tna => {
            let csum = if has_ipv4 { "    Checksum() ipv4_csum;\n\n" } else { "" };
            // Tofino does not zero metadata: every field starts at 0 here, as on BMv2.
            let mut meta_init = String::new();
            for m in meta_fields(res, p) {
                let _ = writeln!(meta_init, "        meta.{} = 0;", m.name);
            }
            if has_ipv4 {
                meta_init.push_str("        meta.checksum_err = false;\n");
            }
            let bridged = !p.bridge.is_empty();
            if bridged {
                meta_init.push_str("        meta.bridge_kind = 0;\n        meta.mirror_session = 0;\n");
            }
            // The bridged header: valid from the start of ingress, its fields from meta at the end.
            let (bridge_set, bridge_fill) = if bridged {
                let mut fill = String::from("\n// Bridged to egress.\n");
                for b in &p.bridge {
                    let _ = writeln!(fill, "hdr.bridge.{0} = meta.{0};", b.name);
                }
                ("hdr.bridge.setValid();\nhdr.bridge.kind = 0;\n".to_string(), fill)
            } else {
                (String::new(), String::new())
            };
            let ingress_apply = format!("{bridge_set}{}{bridge_fill}", p.ingress_apply);
            let _ = writeln!(
                out,
                "parser SfIngressParser(packet_in pkt, out headers_t hdr, out metadata_t meta, out ingress_intrinsic_metadata_t ig_intr_md) {{\n{csum}    state start {{\n        pkt.extract(ig_intr_md);\n        pkt.advance(PORT_METADATA_SIZE);\n{meta_init}        transition parse_start;\n    }}\n\n{states}}}\n"
            );
            let digest_set: String = p
                .digests
                .iter()
                .map(|d| {
                    format!(
                        "    action {}_send() {{\n        ig_dprsr_md.digest_type = {};\n    }}\n",
                        d.name, d.id
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "control SfIngress(inout headers_t hdr, inout metadata_t meta,\n        in ingress_intrinsic_metadata_t ig_intr_md,\n        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,\n        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,\n        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {{\n{digest_set}{ing}{}\n    apply {{\n{}\n    }}\n}}\n",
                p.ingress_decls,
                indent(&ingress_apply, 8)
            );
            let packs: String = p
                .digests
                .iter()
                .map(|d| {
                    let f: Vec<&str> = d.fields.iter().map(|(_, _, e)| *e).collect();
                    format!(
                        "        if (ig_dprsr_md.digest_type == {}) {{\n            {}_digest.pack({{ {} }});\n        }}\n",
                        d.id,
                        d.name,
                        f.join(", ")
                    )
                })
                .collect();
            let digest_decls: String = p
                .digests
                .iter()
                .map(|d| format!("    Digest<{0}_digest_t>({1}) {0}_digest;\n", d.name, d.id))
                .collect();
            let update = if has_ipv4 {
                format!(
                    "        if (hdr.ipv4.isValid()) {{\n            hdr.ipv4.hdr_checksum = ipv4_csum.update({IPV4_CSUM_FIELDS});\n        }}\n"
                )
            } else {
                String::new()
            };
            let (mirror_decl, mirror_emit, bridge_emit) = if bridged {
                (
                    "    Mirror() sf_mirror;\n".to_string(),
                    format!(
                        "        if (ig_dprsr_md.mirror_type == 1) {{\n            sf_mirror.emit<bridge_h>((MirrorId_t)meta.mirror_session, {});\n        }}\n",
                        bridge_list(p, 1)
                    ),
                    "        pkt.emit(hdr.bridge);\n",
                )
            } else {
                (String::new(), String::new(), "")
            };
            let _ = writeln!(
                out,
                "control SfIngressDeparser(packet_out pkt, inout headers_t hdr, in metadata_t meta,\n        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {{\n{csum}{digest_decls}{mirror_decl}    apply {{\n{mirror_emit}{packs}{update}{bridge_emit}{emits}    }}\n}}\n"
            );
            let egress_start = if bridged {
                let mut t = String::from(
                    "        pkt.extract(hdr.bridge);\n        meta.bridge_kind = hdr.bridge.kind;\n",
                );
                for b in &p.bridge {
                    let _ = writeln!(t, "        meta.{0} = hdr.bridge.{0};", b.name);
                }
                let clone = if p.tna_clone_parser.is_some() { "parse_clone" } else { "parse_start" };
                let _ = writeln!(
                    t,
                    "        transition select(hdr.bridge.kind) {{\n            1: {clone};\n            default: parse_start;\n        }}"
                );
                t
            } else {
                "        transition parse_start;\n".to_string()
            };
            let clone_state = match &p.tna_clone_parser {
                Some(body) if bridged => format!("    state parse_clone {{\n{}\n    }}\n\n", indent(body, 8)),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "parser SfEgressParser(packet_in pkt, out headers_t hdr, out metadata_t meta, out egress_intrinsic_metadata_t eg_intr_md) {{\n{csum}    state start {{\n        pkt.extract(eg_intr_md);\n{meta_init}{egress_start}    }}\n\n{clone_state}{states}}}\n"
            );
            let _ = writeln!(
                out,
                "control SfEgress(inout headers_t hdr, inout metadata_t meta,\n        in egress_intrinsic_metadata_t eg_intr_md,\n        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,\n        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,\n        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {{\n{eg}{}\n    apply {{\n{}\n    }}\n}}\n",
                p.egress_decls,
                indent(&p.egress_apply, 8)
            );
            let (emirror_decl, emirror_emit) = if bridged && p.egress_mirror {
                (
                    "    Mirror() sf_emirror;\n".to_string(),
                    format!(
                        "        if (eg_dprsr_md.mirror_type == 1) {{\n            sf_emirror.emit<bridge_h>((MirrorId_t)meta.mirror_session, {});\n        }}\n",
                        bridge_list(p, 1)
                    ),
                )
            } else {
                (String::new(), String::new())
            };
            let _ = writeln!(
                out,
                "control SfEgressDeparser(packet_out pkt, inout headers_t hdr, in metadata_t meta,\n        in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {{\n{csum}{emirror_decl}    apply {{\n{emirror_emit}{update}{emits}    }}\n}}\n"
            );
            out.push_str(
                "Pipeline(SfIngressParser(), SfIngress(), SfIngressDeparser(),\n         SfEgressParser(), SfEgress(), SfEgressDeparser()) pipe;\n\nSwitch(pipe) main;\n",
            );
        }
    }
    let mut files = BTreeMap::new();
    files.insert(format!("{program}.p4"), out);
    match target {
        Target::V1model => files.insert("entries.txt".into(), entries::v1model_cli(&p.entries)),
        Target::Tna => files.insert("bfrt_setup.py".into(), entries::tna_bfrt(program, &p.entries)),
    };
    files.insert("SUMMARY.md".into(), summary(program, res, p, target, &limits));
    Ok(Export { files })
}

/// The resource summary, in the style of a compiler's, and the limitations.
fn summary(program: &str, res: &Resources, p: &ProgramP4, target: Target, limits: &[String]) -> String {
    let mut s = format!("# {program} for {}: resources and limitations\n\n", target.name());
    s.push_str("Estimates, not a compiler's allocation: exact tables in SRAM at (key + action data + 8 bits of\noverhead) per entry and an 80 % fill; LPM and ternary tables in TCAM at key (and mask) bits per\nentry; registers in SRAM at their cell width; selectors at 1 bit per member.\n\n");
    s.push_str("| resource | kind | pipe | entries | key b | value b | SRAM bits | TCAM bits |\n|---|---|---|---|---|---|---|---|\n");
    let (mut sram, mut tcam) = (0u64, 0u64);
    for d in res.list() {
        let pipe = if p.egress_tables.contains(&d.name) { "egress" } else { "ingress" };
        if let Some((_, why)) = p.not_emitted.iter().find(|(n, _)| *n == d.name) {
            let _ =
                writeln!(s, "| {} | {} | — | {} | | | not emitted: {why} | |", d.name, d.kind.name(), d.size);
            continue;
        }
        let (k, v, n) = (u64::from(d.key_bits()), u64::from(d.value_bits()), d.size as u64);
        let (sr, tc) = match &d.kind {
            DeclKind::Table(t) => match t.keys.first().map(|k| k.kind) {
                _ if t.selector.is_some() => (n * (k + v + 8) * 5 / 4 + n * 16, 0),
                Some(MatchKind::Lpm) | Some(MatchKind::Ternary) => (n * (v + 8), n * k * 2),
                _ => (n * (k + v + 8) * 5 / 4, 0),
            },
            DeclKind::Register { .. } => (n * v, 0),
            DeclKind::Counter => (n * 128, 0),
            DeclKind::Meter(_) => (n * 128, 0),
            _ => (0, 0),
        };
        sram += sr;
        tcam += tc;
        let _ = writeln!(s, "| {} | {} | {pipe} | {n} | {k} | {v} | {sr} | {tc} |", d.name, d.kind.name());
    }
    for (name, why) in &p.added {
        let _ = writeln!(s, "| {name} | P4 only | | | | | {why} | |");
    }
    let _ = writeln!(
        s,
        "\nIn all: {sram} SRAM bits ({:.1} KiB), {tcam} TCAM bits ({:.1} KiB).\n",
        sram as f64 / 8192.0,
        tcam as f64 / 8192.0
    );
    let _ = writeln!(
        s,
        "Stages by dependency chain: at least {}{}",
        p.chain.len(),
        if p.chain.is_empty() { " (no tables)." } else { ":" }
    );
    for (i, g) in p.chain.iter().enumerate() {
        let _ = writeln!(s, "{}. {}", i + 1, g.join(", "));
    }
    let _ = writeln!(s, "\nLoops and recirculation: {}\n", p.recirculation);
    s.push_str("## What the target cannot do as the Rust program does, and how the export handles it\n\n");
    for l in limits {
        let _ = writeln!(s, "- {l}");
    }
    s
}
