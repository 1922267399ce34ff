//! Declarations: header types, the headers and metadata structs, bridged fields and digests.

use std::fmt::Write as _;

use wire::spec::Header;

use super::names::ident;
use super::{ProgramP4, Target};
use crate::model::decl::FieldRef;
use crate::model::{Param, Resources};

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
pub(super) fn extra_types(res: &Resources, p: &ProgramP4) -> String {
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
pub(super) fn bridge_decl(p: &ProgramP4) -> String {
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
pub(super) fn bridge_list(p: &ProgramP4, kind: u8) -> String {
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

pub(super) fn headers_struct(res: &Resources, p: &ProgramP4, target: Target) -> String {
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
pub(super) fn meta_fields<'a>(res: &'a Resources, p: &'a ProgramP4) -> Vec<&'a Param> {
    let mut out: Vec<&Param> = Vec::new();
    for m in res.metadata().iter().chain(&p.meta).chain(&p.bridge) {
        if !out.iter().any(|o| o.name == m.name) {
            out.push(m);
        }
    }
    out
}

pub(super) fn meta_struct(res: &Resources, p: &ProgramP4, target: Target) -> String {
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

pub(super) fn bit_type(width: u32) -> String {
    format!("bit<{width}>")
}

pub(super) fn digest_structs(p: &ProgramP4) -> String {
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
