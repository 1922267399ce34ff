//! The parser states and the deparser, from the program's parser declaration.

use std::fmt::Write as _;

use super::decls::field_expr;
use super::{ProgramP4, Target};
use crate::model::Resources;
use crate::model::decl::{FieldRef, Instance, Next, StateDecl};

/// Split a transition's concatenated value and mask over the selected fields.
pub(super) fn select_case(select: &[FieldRef], value: u64, mask: u64) -> String {
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

/// Where a transition goes. On v1model a rejected packet goes to `sf_reject` (see
/// [`V1MODEL_REJECT`]): BMv2 supports no explicit `transition reject`.
pub(super) fn next_name(n: &Next, target: Target) -> String {
    match n {
        Next::State(s) => format!("parse_{s}"),
        Next::Accept => "accept".into(),
        Next::Reject if target == Target::V1model => "sf_reject".into(),
        Next::Reject => "reject".into(),
    }
}

/// v1model's reject: p4c-bm2-ss warns that BMv2 does not support an explicit `transition
/// reject` (the packet would go on with the headers parsed so far), so a rejected packet ends
/// parsing through `verify`, which BMv2 supports: `parser_error` is set, and the ingress drops
/// every packet with a parser error (a truncated one too) first, as the Rust switch drops what
/// its parser refuses.
pub(super) const V1MODEL_REJECT: &str = "    state sf_reject {
        // BMv2 has no explicit reject: verify sets parser_error, which ingress drops.
        verify(false, error.NoMatch);
        transition accept;
    }
";

/// The first step of v1model's ingress: drop what the parser refused (see [`V1MODEL_REJECT`]),
/// after the program's own `hook` (counting it under its reason).
pub(super) fn v1model_parser_error_drop(hook: &str) -> String {
    let hook: String = hook.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "// The parser refused the packet (no match, or truncated): dropped, as the Rust switch does.
if (std.parser_error != error.NoError) {{
{hook}    mark_to_drop(std);
    exit;
}}
"
    )
}

/// The parser states, rendered: `parse_<name>` per declared state. A header stack is unrolled
/// into one state per copy (no parser loop, no counter: both targets take it as is); a state's
/// `advance` (IPv4 options) is rendered as "deeper parsing only when it skips nothing".
pub(super) fn parser_states(res: &Resources, target: Target, limits: &mut Vec<String>) -> String {
    let mut s = String::new();
    for st in &res.parser().states {
        render_state(&mut s, st, res, target, limits);
    }
    if s.contains("sf_reject") {
        s.push_str(V1MODEL_REJECT);
        s.push('\n');
    }
    s
}

pub(super) fn render_state(
    s: &mut String,
    st: &StateDecl,
    res: &Resources,
    target: Target,
    limits: &mut Vec<String>,
) {
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
    let select = render_select(st, res, target);
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
            let _ = writeln!(
                s,
                "            default: {};\n        }}\n    }}\n",
                next_name(&Next::Reject, target)
            );
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

pub(super) fn render_select(st: &StateDecl, res: &Resources, target: Target) -> String {
    if st.select.is_empty() {
        return format!("        transition {};\n", next_name(&st.default, target));
    }
    let fields: Vec<String> = st.select.iter().map(|f| field_expr(f, res)).collect();
    let mut s = format!("        transition select({}) {{\n", fields.join(", "));
    for t in &st.transitions {
        let _ = writeln!(
            s,
            "            {}: {};",
            select_case(&st.select, t.value, t.mask),
            next_name(&t.next, target)
        );
    }
    let _ = writeln!(s, "            default: {};\n        }}", next_name(&st.default, target));
    s
}

/// The parsed instances in the order they lie on the wire, which the deparser must follow:
/// every instance after every one some parser path extracts before it (a topological order of
/// "extracted before", ties in declaration order). Declaration order is not it: a program
/// declares MPLS after IPv4 and UDP though labels come first (BMv2 put a kept label after the
/// UDP header). Where two paths disagree no order serves both: declaration order is kept for
/// those, and said in `limits`.
pub(super) fn wire_order(res: &Resources, limits: &mut Vec<String>) -> Vec<Instance> {
    let parser = res.parser();
    let decl = parser.instances();
    let n = decl.len();
    let at = |name: &str| decl.iter().position(|i| i.name == name);
    let mut before = vec![vec![false; n]; n];
    // Every path from the start state (the parser is a DAG; a bounded walk either way).
    fn walk(
        parser: &crate::model::decl::ParserDecl,
        state: &StateDecl,
        path: &mut Vec<usize>,
        before: &mut [Vec<bool>],
        at: &dyn Fn(&str) -> Option<usize>,
        budget: &mut u32,
    ) {
        if *budget == 0 || path.len() > 64 {
            return;
        }
        *budget -= 1;
        let mark = path.len();
        for i in &state.extract {
            if let Some(k) = at(i.name) {
                for &p in path.iter() {
                    before[p][k] = true;
                }
                path.push(k);
            }
        }
        let nexts = state.transitions.iter().map(|t| &t.next).chain(std::iter::once(&state.default));
        let mut seen: Vec<&str> = Vec::new();
        for next in nexts {
            if let Next::State(name) = next
                && !seen.contains(name)
            {
                seen.push(name);
                if let Some(st) = parser.state(name) {
                    walk(parser, st, path, before, at, budget);
                }
            }
        }
        path.truncate(mark);
    }
    if let Some(start) = parser.states.first() {
        let mut budget = 100_000;
        walk(parser, start, &mut Vec::new(), &mut before, &at, &mut budget);
    }
    // Kahn's algorithm, the lowest declaration index first.
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut cyclic = false;
    for _ in 0..n {
        let ready = (0..n).find(|&k| !done[k] && (0..n).all(|p| done[p] || p == k || !before[p][k]));
        let k = ready.unwrap_or_else(|| {
            cyclic = true;
            (0..n).find(|&k| !done[k]).expect("one left")
        });
        done[k] = true;
        order.push(decl[k]);
    }
    if cyclic {
        limits.push(
            "deparser: two parser paths extract some headers in opposite orders, so no one emit order \
             serves both; those are emitted in declaration order"
                .into(),
        );
    }
    order
}

pub(super) fn deparser_emits(res: &Resources, p: &ProgramP4, limits: &mut Vec<String>) -> String {
    let mut s = String::new();
    for i in wire_order(res, limits) {
        let _ = writeln!(s, "        pkt.emit(hdr.{});", i.name);
    }
    for e in &p.extra_headers {
        let _ = writeln!(s, "        pkt.emit(hdr.{});", e.instance);
    }
    s
}
