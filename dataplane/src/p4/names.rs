//! P4-16 reserved words and the identifiers the export writes for header, field and table names.

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

/// A field or header name as a P4 identifier.
pub fn ident(name: &str) -> String {
    if RESERVED.contains(&name) { format!("{name}_") } else { name.to_string() }
}
