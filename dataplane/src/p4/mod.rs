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
//! Not a P4 compiler: the output is compiled by the real one, p4c 1.2.5.16 (`p4c-bm2-ss` for
//! v1model, `p4test` with the TNA includes for TNA; `dataplane/tests/p4_compile.rs`), and the
//! v1model programs run on BMv2 beside our switch (`dataplane/tests/p4_bmv2.rs`). The Tofino
//! back end's resource fit is not checked. Deterministic: the same configuration gives
//! byte-identical files.
//!
//! Files: [`names`] (reserved words), [`decls`] (header types and structs), [`parser`] (parser
//! and deparser), [`control`] (tables, hash units, registers, counters, meters), [`prelude`]
//! (the target macros), [`entries`] (control-plane state); this file assembles them.

mod control;
mod decls;
pub mod entries;
mod names;
mod parser;
mod prelude;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use wire::spec::Header;

use crate::model::decl::{DeclKind, MatchKind};
use crate::model::{Param, Resources};

use control::*;
pub use control::{TabulatedFn, tna_register_action};
use decls::*;
pub use decls::{field_expr, header_decl, header_type, header_types, invalidate_parsed_except};
pub use entries::{Arg, Entry, KeyVal};
pub use names::{RESERVED, ident};
use parser::*;
use prelude::*;

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
    /// Declared resources the P4 does not emit as such, and why; `"register.field"` leaves out one
    /// field of a register's cell.
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
    /// v1model: P4 statements run on a packet the parser refused, before ingress drops it (the
    /// program counting it under its own reason).
    pub on_parser_error: String,
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

const IPV4_CSUM_FIELDS: &str =
    "{ hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.reserved_flag, hdr.ipv4.dont_frag, hdr.ipv4.more_frags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr }";

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
    let emits = deparser_emits(res, p, &mut limits);
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
                indent(&format!("{}{}", v1model_parser_error_drop(&p.on_parser_error), p.ingress_apply), 8)
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
                // A clone goes its own way only where the program parses clones apart.
                if p.tna_clone_parser.is_some() {
                    let _ = writeln!(
                        t,
                        "        transition select(hdr.bridge.kind) {{\n            1: parse_clone;\n            default: parse_start;\n        }}"
                    );
                } else {
                    t.push_str("        transition parse_start;\n");
                }
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
    for (name, why) in p.not_emitted.iter().filter(|(n, _)| n.contains('.')) {
        let _ = writeln!(s, "| {name} | register field | — | | | | not emitted: {why} | |");
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
