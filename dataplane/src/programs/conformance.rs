//! Test support: a program's fast path held to its declarations.
//!
//! Each program's tests run frames through the switch, take the keys its tables were looked up
//! with (recorded in test builds), and check them here against what the declarations say: the
//! declared parser ([`ParserDecl::run`]) extracts the key fields from the same frame, at the
//! offsets the `wire` specifications give, and each lookup's key must be exactly their value.
//! A key the fast path read at another offset, or a lookup on a field the table does not
//! declare, fails.

use crate::model::decl::{FieldRef, Parsed};
use crate::model::{DeclKind, Resources, TableDecl};

/// The key `t` declares for a frame: its key fields' values, concatenated most significant
/// first; `None` when a field is metadata neither the parser set nor `meta` gives.
pub(crate) fn declared_key(
    t: &TableDecl,
    parsed: &Parsed,
    frame: &[u8],
    meta: &[(&str, u64)],
) -> Option<u128> {
    let mut key = 0u128;
    for k in &t.keys {
        let v = match &k.field {
            FieldRef::Meta { name, .. } if !parsed.meta.iter().any(|(n, _)| n == name) => {
                meta.iter().find(|(n, _)| n == name)?.1
            }
            f => parsed.get(frame, f)?,
        };
        key = (key << k.field.width()) | u128::from(v);
    }
    Some(key)
}

/// What [`check`] found.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// Lookups whose key was computed from the declaration and matched.
    pub exact: usize,
    /// Lookups on keys the test cannot compute (metadata set by earlier actions), held to their
    /// declared width only.
    pub width_only: usize,
    /// Tables that were looked up at least once, by name.
    pub tables: Vec<&'static str>,
}

/// Check the lookups of one frame: `lookups` gives each table's recorded keys by table name.
/// Every table looked up must be declared; every key must be the declared key of `frame` as the
/// declared parser reads it (or, where that needs metadata the test does not know, fit the
/// declared width).
pub(crate) fn check(
    res: &Resources,
    frame: &[u8],
    meta: &[(&str, u64)],
    lookups: &[(&'static str, Vec<u128>)],
    out: &mut Checked,
) -> Result<(), String> {
    check_frames(res, &[frame], meta, lookups, out)
}

/// [`check`] for a frame and the packets the program made from it (a report, a NACK), which
/// go through the same tables as new packets: each key must be the declared key of one of
/// `frames`.
pub(crate) fn check_frames(
    res: &Resources,
    frames: &[&[u8]],
    meta: &[(&str, u64)],
    lookups: &[(&'static str, Vec<u128>)],
    out: &mut Checked,
) -> Result<(), String> {
    let mut parsed = Vec::new();
    for f in frames {
        parsed.push(
            res.parser().run(f).map_err(|e| format!("the declared parser does not take the frame: {e}"))?,
        );
    }
    for (name, keys) in lookups {
        if keys.is_empty() {
            continue;
        }
        let Some(d) = res.get(name) else {
            return Err(format!("table {name} is looked up but not declared"));
        };
        let DeclKind::Table(t) = &d.kind else {
            return Err(format!("{name} is looked up but declared as {}", d.kind.name()));
        };
        if !out.tables.contains(name) {
            out.tables.push(name);
        }
        let wants: Vec<u128> =
            parsed.iter().zip(frames).filter_map(|(p, f)| declared_key(t, p, f, meta)).collect();
        match wants.is_empty() {
            false => {
                for &k in keys {
                    if !wants.contains(&k) {
                        return Err(format!(
                            "table {name}: looked up with {k:#x}, the declaration gives {wants:x?}"
                        ));
                    }
                    out.exact += 1;
                }
            }
            true => {
                let bits = t.key_bits();
                for &k in keys {
                    if bits < 128 && k >> bits != 0 {
                        return Err(format!("table {name}: key {k:#x} wider than its declared {bits} bits"));
                    }
                    out.width_only += 1;
                }
            }
        }
    }
    Ok(())
}
