//! Boundary values for every key of a TOML file, by the key's type (and, for strings, by what
//! the string looks like: an address, a MAC, a prefix, a rate, a path).
//!
//! A mutation is one change to one place of the document: a value replaced, a key removed, an
//! array emptied or its first element duplicated, a table emptied, an unknown key added, a
//! string given another key's value of the same name (two ports in one subnet, `tx` = `rx`).

use toml::{Table, Value};

/// One step of a path into a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A table's key.
    Key(String),
    /// An array's index.
    Index(usize),
}

/// A path with its indices left out (`port[*].ipv4[*]`): the group a sample takes one case of
/// before it takes a second.
pub fn group(path: &[Seg]) -> String {
    let p: Vec<Seg> =
        path.iter().map(|s| if let Seg::Index(_) = s { Seg::Key("*".into()) } else { s.clone() }).collect();
    show(&p).replace(".*", "[*]")
}

/// A path shown as the loaders name keys: `port[1].ipv4[0]`.
pub fn show(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// What a mutation does at its path.
#[derive(Debug, Clone)]
pub enum Op {
    /// Replace the value.
    Set(Value),
    /// Replace the value by this literal TOML text (numbers TOML cannot hold, to see the
    /// parser's error name the key).
    Raw(String),
    /// Remove the key (or array element).
    Remove,
    /// Append a copy of the array's first element.
    DuplicateFirst,
    /// Add `key = 1` to the table.
    AddKey(String),
    /// Replace the value by a string of this many 'a's (made when applied, not held).
    Long(usize),
    /// Replace the array by this many copies of its first element (made when applied).
    Repeat(usize),
}

/// One mutation.
#[derive(Debug, Clone)]
pub struct Mutation {
    /// Where.
    pub path: Vec<Seg>,
    /// What, for the report.
    pub what: String,
    /// How.
    pub op: Op,
}

impl Mutation {
    /// The key an error about this mutation must name: the last key of its path (the added
    /// one for [`Op::AddKey`]).
    pub fn key(&self) -> String {
        if let Op::AddKey(k) = &self.op {
            return k.clone();
        }
        self.path
            .iter()
            .rev()
            .find_map(|s| match s {
                Seg::Key(k) => Some(k.clone()),
                Seg::Index(_) => None,
            })
            .unwrap_or_default()
    }

    /// The mutation shown for a report.
    pub fn describe(&self) -> String {
        format!("{} := {}", show(&self.path), self.what)
    }
}

const RAW_MARK: &str = "@@softfabric-raw-literal@@";

/// `doc` with `m` applied, as TOML text; `None` if the path does not lead anywhere.
pub fn apply(doc: &Table, m: &Mutation) -> Option<String> {
    let mut root = Value::Table(doc.clone());
    let mut raw = None;
    if let Op::Remove = m.op {
        let (last, parent) = m.path.split_last()?;
        match (last, at(&mut root, parent)?) {
            (Seg::Key(k), Value::Table(t)) => {
                t.remove(k)?;
            }
            (Seg::Index(i), Value::Array(a)) if *i < a.len() => {
                a.remove(*i);
            }
            _ => return None,
        }
    } else {
        let target = at(&mut root, &m.path)?;
        match (&m.op, target) {
            (Op::Set(v), t) => *t = v.clone(),
            (Op::Raw(text), t) => {
                *t = Value::String(RAW_MARK.into());
                raw = Some(text);
            }
            (Op::DuplicateFirst, Value::Array(a)) => {
                let first = a.first()?.clone();
                a.push(first);
            }
            (Op::AddKey(name), Value::Table(t)) => {
                t.insert(name.clone(), Value::Integer(1));
            }
            (Op::Long(n), t) => *t = Value::String("a".repeat(*n)),
            (Op::Repeat(n), Value::Array(a)) => {
                let first = a.first()?.clone();
                *a = vec![first; *n];
            }
            _ => return None,
        }
    }
    let Value::Table(t) = root else { return None };
    let text = toml::to_string(&t).ok()?;
    Some(match raw {
        Some(r) => text.replacen(&format!("\"{RAW_MARK}\""), r, 1),
        None => text,
    })
}

/// The value at `path` under `v`.
fn at<'a>(mut v: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    for seg in path {
        v = match (seg, v) {
            (Seg::Key(k), Value::Table(t)) => t.get_mut(k)?,
            (Seg::Index(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

/// Every mutation of `doc`, in document order. `scratch` names paths that exist (a directory
/// and a regular file) for path-like strings.
pub fn mutations(doc: &Table, scratch: &Paths) -> Vec<Mutation> {
    let mut out = Vec::new();
    let mut strings = Vec::new();
    collect_strings(&Value::Table(doc.clone()), &mut Vec::new(), &mut strings);
    walk(&Value::Table(doc.clone()), &mut Vec::new(), &strings, scratch, &mut out);
    out
}

/// Every key name of `doc` (tables' and values'), each once.
pub fn key_names(doc: &Table) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Table(t) => {
                for (k, v) in t {
                    if !out.contains(k) {
                        out.push(k.clone());
                    }
                    walk(v, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&Value::Table(doc.clone()), &mut out);
    out
}

/// Paths a path-like string may be set to.
#[derive(Debug, Clone)]
pub struct Paths {
    /// A directory that exists.
    pub dir: String,
    /// A regular file that exists (and must not be destroyed).
    pub file: String,
    /// A path under a directory that does not exist.
    pub missing: String,
}

fn collect_strings(v: &Value, path: &mut Vec<Seg>, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => {
            if let Some(k) = last_key(path) {
                out.push((k, s.clone()));
            }
        }
        Value::Table(t) => {
            for (k, v) in t {
                path.push(Seg::Key(k.clone()));
                collect_strings(v, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                path.push(Seg::Index(i));
                collect_strings(v, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn last_key(path: &[Seg]) -> Option<String> {
    path.iter().rev().find_map(|s| match s {
        Seg::Key(k) => Some(k.clone()),
        Seg::Index(_) => None,
    })
}

fn push(out: &mut Vec<Mutation>, path: &[Seg], what: impl Into<String>, op: Op) {
    out.push(Mutation { path: path.to_vec(), what: what.into(), op });
}

fn walk(v: &Value, path: &mut Vec<Seg>, strings: &[(String, String)], p: &Paths, out: &mut Vec<Mutation>) {
    let in_table = matches!(path.last(), Some(Seg::Key(_)));
    if !path.is_empty() {
        if in_table {
            push(out, path, "(removed)", Op::Remove);
        }
        leaf_values(v, path, strings, p, out);
    }
    match v {
        Value::Table(t) => {
            push(out, path, "an unknown key inside", Op::AddKey("softfabric_no_such_key".into()));
            for (k, v) in t {
                path.push(Seg::Key(k.clone()));
                walk(v, path, strings, p, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            if in_table && !a.is_empty() {
                push(out, path, "[] (emptied)", Op::Set(Value::Array(vec![])));
                push(out, path, "(first element twice)", Op::DuplicateFirst);
                let n = if matches!(a[0], Value::Table(_)) { 2_000 } else { 100_000 };
                push(out, path, format!("{n} copies of the first element"), Op::Repeat(n));
            }
            for (i, v) in a.iter().enumerate() {
                if i > 0 && !matches!(v, Value::Table(_)) || i > 1 {
                    // Elements of one array share their type: the first stands for the rest
                    // (of tables, the first two: a change may clash with its neighbour).
                    continue;
                }
                path.push(Seg::Index(i));
                walk(v, path, strings, p, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Integers TOML holds at the edges of the integer types the loaders use.
const INTS: [(i64, &str); 14] = [
    (0, "0"),
    (-1, "-1"),
    (1, "1"),
    (255, "255"),
    (256, "256"),
    (65_535, "65535"),
    (65_536, "65536"),
    (1_000_000, "10^6"),
    (1_000_000_000, "10^9"),
    (1 << 31, "2^31"),
    (1 << 32, "2^32"),
    (1 << 53, "2^53"),
    (i64::MAX, "i64::MAX"),
    (i64::MIN, "i64::MIN"),
];

const FLOATS: [(f64, &str); 9] = [
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (-1.0, "-1.0"),
    (f64::NAN, "nan"),
    (f64::INFINITY, "inf"),
    (f64::NEG_INFINITY, "-inf"),
    (1e308, "1e308"),
    (5e-324, "5e-324"),
    (1.8446744073709552e19, "2^64 as a float"),
];

fn leaf_values(v: &Value, path: &[Seg], strings: &[(String, String)], p: &Paths, out: &mut Vec<Mutation>) {
    let key = last_key(path).unwrap_or_default();
    match v {
        Value::Integer(i) => {
            for (n, what) in INTS {
                if n != *i {
                    push(out, path, what, Op::Set(Value::Integer(n)));
                }
            }
            push(out, path, "i64::MAX + 1 (literal)", Op::Raw("9223372036854775808".into()));
            push(out, path, "u64::MAX (literal)", Op::Raw("18446744073709551615".into()));
            push(out, path, "1.5 (a float)", Op::Set(Value::Float(1.5)));
            push(out, path, "\"7\" (a string)", Op::Set(Value::String("7".into())));
        }
        Value::Float(x) => {
            for (f, what) in FLOATS {
                if f.to_bits() != x.to_bits() {
                    push(out, path, what, Op::Set(Value::Float(f)));
                }
            }
            push(out, path, "1e400 (literal)", Op::Raw("1e400".into()));
            push(out, path, "\"0.5\" (a string)", Op::Set(Value::String("0.5".into())));
        }
        Value::Boolean(_) => {
            push(out, path, "1 (an integer)", Op::Set(Value::Integer(1)));
            push(out, path, "\"true\" (a string)", Op::Set(Value::String("true".into())));
        }
        Value::String(s) => {
            push(out, path, "1 MiB of 'a'", Op::Long(1 << 20));
            for (val, what) in string_values(&key, s, p) {
                push(out, path, what, Op::Set(Value::String(val)));
            }
            // Another key of the same name's value (two ports in one subnet, tx = rx …).
            let mut seen = vec![s.clone()];
            for (k, other) in strings {
                if *k == key && !seen.contains(other) {
                    seen.push(other.clone());
                    push(
                        out,
                        path,
                        format!("{other:?} (another {key}'s value)"),
                        Op::Set(Value::String(other.clone())),
                    );
                }
            }
            // `tx` given its own `rx` and the like: every path-like string of the file.
            if looks_like_path(&key, s) {
                for (k, other) in strings {
                    if *k != key && looks_like_path(k, other) && !seen.contains(other) {
                        seen.push(other.clone());
                        push(
                            out,
                            path,
                            format!("{other:?} ({k}'s value)"),
                            Op::Set(Value::String(other.clone())),
                        );
                    }
                }
            }
            push(out, path, "1 (an integer)", Op::Set(Value::Integer(1)));
        }
        Value::Array(_) => {
            push(out, path, "1 (not an array)", Op::Set(Value::Integer(1)));
        }
        Value::Table(_) => {
            push(out, path, "\"x\" (not a table)", Op::Set(Value::String("x".into())));
        }
        Value::Datetime(_) => {}
    }
}

fn looks_like_path(key: &str, s: &str) -> bool {
    s.contains('/') && !s.contains(' ') && s.parse::<std::net::Ipv4Addr>().is_err() && !is_cidr(s)
        || ["rx", "tx", "file", "path", "socket", "control_socket", "cdf", "base", "config", "out"]
            .contains(&key)
        || s.ends_with(".toml")
        || s.ends_with(".pcap")
        || s.ends_with(".sock")
        || s.ends_with(".txt")
}

fn is_cidr(s: &str) -> bool {
    s.split_once('/').is_some_and(|(a, l)| a.parse::<std::net::Ipv4Addr>().is_ok() && l.parse::<u8>().is_ok())
}

fn is_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 6 && parts.iter().all(|p| p.len() == 2 && u8::from_str_radix(p, 16).is_ok())
}

fn is_rate(s: &str) -> bool {
    let t = s.trim_end_matches(['G', 'g', 'M', 'm', 'K', 'k']);
    t != s && t.parse::<f64>().is_ok()
}

/// The strings worth trying in place of `s` at `key`.
fn string_values(key: &str, s: &str, p: &Paths) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = vec![
        (String::new(), "\"\" (empty)".into()),
        (" ".into(), "\" \"".into()),
        ("0".into(), "\"0\"".into()),
        ("-1".into(), "\"-1\"".into()),
        ("\u{1F600}é".into(), "non-ASCII".into()),
    ];
    let ip = |a: &str, what: &str| (a.to_string(), what.to_string());
    if s.parse::<std::net::Ipv4Addr>().is_ok() {
        v.extend([
            ip("0.0.0.0", "0.0.0.0"),
            ip("255.255.255.255", "the broadcast address"),
            ip("224.0.0.1", "a multicast address"),
            ip("127.0.0.1", "loopback"),
            ip("10.0.0.0", "a network address"),
            ip("256.1.1.1", "not an address"),
            ip("1.2.3", "three octets"),
        ]);
    } else if is_cidr(s) {
        let (a, _) = s.split_once('/').unwrap_or_default();
        v.extend([
            ip("0.0.0.0/0", "0.0.0.0/0"),
            (format!("{a}/32"), "a /32".into()),
            (format!("{a}/33"), "a /33".into()),
            (format!("{a}/0"), "a /0".into()),
            (format!("{a}/8"), "a /8 with host bits set".into()),
            ip("255.255.255.255/24", "a broadcast address"),
            ip("224.0.0.1/4", "multicast"),
            ip("127.0.0.1/8", "loopback"),
            (a.to_string(), "no prefix length".into()),
        ]);
    } else if is_mac(s) {
        v.extend([
            ip("ff:ff:ff:ff:ff:ff", "the broadcast MAC"),
            ip("01:00:5e:00:00:01", "a multicast MAC"),
            ip("00:00:00:00:00:00", "the zero MAC"),
            ip("02:00:00:00:00", "five octets"),
            ip("02:00:00:00:00:0g", "not hex"),
        ]);
    } else if is_rate(s) {
        v.extend([
            ip("0G", "0G"),
            ip("-1G", "-1G"),
            ip("1e30G", "1e30G"),
            ip("nanG", "nanG"),
            ip("infG", "infG"),
            ip("1", "1 b/s"),
            ip("1T", "an unknown unit"),
        ]);
    } else if looks_like_path(key, s) {
        v.extend([
            (p.dir.clone(), "a directory".into()),
            (p.file.clone(), "an existing regular file".into()),
            (p.missing.clone(), "under a missing directory".into()),
            ("/".into(), "/".into()),
        ]);
    } else {
        v.push(("softfabric-no-such-name".into(), "an unknown name".into()));
    }
    v
}
