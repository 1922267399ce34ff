//! Control declarations: hash units, registers, counters, meters, action selectors and tables.

use std::fmt::Write as _;

use super::decls::{bit_type, field_expr};
use super::{ExportError, Pipe, ProgramP4, Target, entries};
use crate::model::decl::{DeclKind, MatchKind, MeterUnit};
use crate::model::{HashAlgo, Resources, TableDecl};

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

pub(super) fn algo_v1model(a: HashAlgo) -> &'static str {
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

pub(super) fn hash_tna(name: &str, algo: HashAlgo, width: u16) -> String {
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
pub(super) fn control_decls(
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
                    // One cell field left out (`"register.field"` in `not_emitted`).
                    if p.not_emitted.iter().any(|(n, _)| n.split_once('.') == Some((d.name, f.name))) {
                        continue;
                    }
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
            DeclKind::Table(t) => s.push_str(&table(res, p, target, t, limits)?),
            DeclKind::Multicast | DeclKind::Digest { .. } => {}
        }
    }
    Ok(s)
}

/// Whether hash unit `name` is an action selector's (emitted with its table).
pub(super) fn selector_hash(res: &Resources, name: &str) -> bool {
    res.list()
        .iter()
        .any(|d| matches!(&d.kind, DeclKind::Table(t) if t.selector.is_some_and(|(h, _)| h == name)))
}

pub(super) fn action_body<'a>(p: &'a ProgramP4, table: &str, action: &str) -> Result<&'a str, ExportError> {
    p.actions
        .iter()
        .find(|(t, a, _)| *t == table && *a == action)
        .map(|(_, _, b)| b.as_str())
        .ok_or_else(|| ExportError::MissingAction { table: table.into(), action: action.into() })
}

pub(super) fn indent(body: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    body.lines()
        .map(|l| if l.is_empty() { String::new() } else { format!("{pad}{l}") })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn table(
    res: &Resources,
    p: &ProgramP4,
    target: Target,
    t: &TableDecl,
    limits: &mut Vec<String>,
) -> Result<String, ExportError> {
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
    // BMv2 runs no default action on a table with an action selector (p4c-bm2-ss warns that
    // it ignores it): on v1model the program's own steps run it on a miss, which the export
    // checks, and the warning is explained in the summary.
    if t.selector.is_some() && target == Target::V1model {
        let apply = if p.egress_tables.contains(&t.name) { &p.egress_apply } else { &p.ingress_apply };
        let on_miss = format!("if (!{}.apply().hit) {{ {default}();", t.name);
        let squeeze = |x: &str| x.split_whitespace().collect::<String>();
        if !squeeze(apply).contains(&squeeze(&on_miss)) {
            return Err(ExportError::Unsupported(format!(
                "table {}: BMv2 runs no default action on a table with an action selector; the program's steps \
                 must apply it as `{on_miss} }}`",
                t.name
            )));
        }
        limits.push(format!(
            "p4c-bm2-ss warns `Target does not support default_action for {}.{} (due to action profiles)`: \
             BMv2 runs no default action on a table with an action selector, so the program's steps run \
             `{default}()` on a miss themselves (`if (!{}.apply().hit)`); the declared default is Tofino's.",
            if p.egress_tables.contains(&t.name) { "SfEgress" } else { "SfIngress" },
            t.name,
            t.name
        ));
    }
    let default_line = format!("        default_action = {default}();\n");
    let _ = writeln!(
        s,
        "    table {} {{\n        key = {{\n{}\n        }}\n        actions = {{\n{}\n        }}\n{default_line}{implementation}        size = {};\n    }}\n",
        t.name,
        keys.iter().map(|k| format!("            {k};")).collect::<Vec<_>>().join("\n"),
        acts.join("\n"),
        t.size
    );
    Ok(s)
}

/// A function tabulated in an exact table (a CRC of a key byte, say): one action setting
/// metadata from its parameters, one entry per key value. The entries never change but are
/// installed by the control plane at start (`entries.txt`, `bfrt_setup.py`), not written as
/// `const entries`: p4c's front end takes time quadratic in a table's constant entries (the
/// DTA translator's 5,120 took it 230 of 267 s; `dataplane/tests/p4_compile.rs`).
pub struct TabulatedFn {
    /// Table name; its action is `<name>_set`.
    pub name: &'static str,
    /// Keys: P4 expression, `@name` (also the key's name in the entries), width.
    pub keys: Vec<(String, &'static str, u16)>,
    /// Action parameters: name, width.
    pub params: Vec<(&'static str, u16)>,
    /// The action's body.
    pub body: String,
    /// Entries: key values, parameter values.
    pub rows: Vec<(Vec<u128>, Vec<u128>)>,
}

impl TabulatedFn {
    /// The P4 declarations (indented for a control in `pipe`); the entries go to `entries`.
    pub fn render(&self, pipe: Pipe, entries: &mut Vec<super::Entry>) -> String {
        let n = self.name;
        let params: Vec<String> = self.params.iter().map(|(p, w)| format!("bit<{w}> {p}")).collect();
        let zeros: Vec<&str> = self.params.iter().map(|_| "0").collect();
        let mut s = format!("    action {n}_set({}) {{\n", params.join(", "));
        for l in self.body.lines() {
            let _ = writeln!(s, "        {l}");
        }
        s.push_str("    }\n");
        let _ = write!(s, "    table {n} {{\n        key = {{\n");
        for (e, k, _) in &self.keys {
            let _ = writeln!(s, "            {e}: exact @name(\"{k}\");");
        }
        let _ = writeln!(
            s,
            "        }}\n        actions = {{\n            {n}_set;\n        }}\n        const default_action = {n}_set({});\n        size = {};\n    }}",
            zeros.join(", "),
            self.rows.len().max(1)
        );
        for (k, a) in &self.rows {
            entries.push(super::Entry::Table {
                pipe,
                table: n,
                keys: k
                    .iter()
                    .zip(&self.keys)
                    .map(|(v, (_, name, _))| (name.to_string(), super::KeyVal::Exact(*v)))
                    .collect(),
                action: "set",
                args: a
                    .iter()
                    .zip(&self.params)
                    .map(|(v, (name, _))| super::Arg { name, value: *v })
                    .collect(),
            });
        }
        s
    }
}
