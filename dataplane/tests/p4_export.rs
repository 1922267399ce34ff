//! `dataplane p4 export`: every rendered program, both targets, against the golden files in
//! `tests/p4/<program>/<target>/` (regenerate with `SOFTFABRIC_BLESS=1 cargo test -p dataplane
//! --test p4_export`), deterministic, with the generated headers' field offsets equal to
//! `wire`'s, every declared table and action present, and every entry naming a table and
//! action the program declares.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dataplane::buf::PktBuf;
use dataplane::config::Config;
use dataplane::p4::{Export, Target};
use dataplane::programs;

/// The programs that have a P4 rendering, by their golden configuration.
const RENDERED: &[&str] = &["macswap", "l2l3", "dta_reporter", "dta_translator", "hawkeye", "ufab", "daiet"];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/p4")
}

fn config(program: &str) -> Config {
    Config::load(&dir().join(format!("{program}.toml"))).unwrap()
}

fn export(program: &str, target: Target) -> Export {
    programs::p4_export(&config(program), target)
        .unwrap_or_else(|e| panic!("{program} {}: {e}", target.name()))
}

#[test]
fn exports_match_the_golden_files_and_are_deterministic() {
    let bless = std::env::var("SOFTFABRIC_BLESS").as_deref() == Ok("1");
    for program in RENDERED {
        for target in [Target::Tna, Target::V1model] {
            let a = export(program, target);
            let b = export(program, target);
            assert_eq!(a, b, "{program} {}: two exports differ", target.name());
            let golden = dir().join(program).join(target.name());
            if bless {
                let _ = std::fs::remove_dir_all(&golden);
                std::fs::create_dir_all(&golden).unwrap();
                for (name, text) in &a.files {
                    std::fs::write(golden.join(name), text).unwrap();
                }
                continue;
            }
            let mut on_disk = BTreeMap::new();
            for f in std::fs::read_dir(&golden).unwrap_or_else(|e| panic!("{}: {e}", golden.display())) {
                let f = f.unwrap().path();
                on_disk.insert(
                    f.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read_to_string(&f).unwrap(),
                );
            }
            assert_eq!(
                a.files.keys().collect::<Vec<_>>(),
                on_disk.keys().collect::<Vec<_>>(),
                "{program} {}: files",
                target.name()
            );
            for (name, text) in &a.files {
                assert!(
                    on_disk[name] == *text,
                    "{program} {}: {name} differs from the golden file (SOFTFABRIC_BLESS=1 to regenerate after a deliberate change)",
                    target.name()
                );
            }
        }
    }
}

/// Call `f` with every rendered program's declarations, each target and its export.
fn each_export(mut f: impl FnMut(&str, Target, &dataplane::model::Resources, &Export)) {
    for program in RENDERED {
        let sw = programs::build::<PktBuf>(&config(program)).unwrap();
        for target in [Target::Tna, Target::V1model] {
            f(program, target, sw.resources(), &export(program, target));
        }
    }
}

/// `header X_h { bit<W> f; … }` blocks of a P4 text: name → fields (name, width) in order.
fn p4_headers(p4: &str) -> BTreeMap<String, Vec<(String, u16)>> {
    let mut out = BTreeMap::new();
    let mut cur: Option<(String, Vec<(String, u16)>)> = None;
    for line in p4.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("header ") {
            cur = Some((rest.trim_end_matches(" {").to_string(), Vec::new()));
        } else if l == "}" {
            if let Some((n, f)) = cur.take() {
                out.insert(n, f);
            }
        } else if let Some((_, fields)) = cur.as_mut() {
            let l = l.trim_end_matches(';');
            let (ty, name) = l.split_once(' ').unwrap();
            let w: u16 = ty.trim_start_matches("bit<").trim_end_matches('>').parse().unwrap();
            fields.push((name.trim_end_matches('_').to_string(), w));
        }
    }
    out
}

/// Headers the DTA programs build (not parse), by their `wire` specification.
const BUILT: [&wire::spec::Header; 6] = [
    &wire::dta::BASE_LONG,
    &wire::dta::KEYWRITE,
    &wire::dta::KEYINCREMENT,
    &wire::dta::APPEND,
    &wire::roce::RETH,
    &wire::roce::ATOMIC_ETH,
];

/// Every header the program's parser extracts, and every header it builds from a `wire`
/// specification, is declared in the P4 with `wire`'s fields at `wire`'s offsets (a field added
/// or moved in `wire` changes the P4, or this fails).
#[test]
fn generated_headers_have_wires_field_offsets() {
    each_export(|program, target, res, e| {
        let p4 = &e.files[&format!("{program}.p4")];
        let headers = p4_headers(p4);
        let built = BUILT.iter().copied().filter(|h| headers.contains_key(&format!("{}_h", h.name)));
        for h in res.parser().instances().iter().map(|i| i.header).chain(built) {
            let got = headers
                .get(&format!("{}_h", h.name))
                .unwrap_or_else(|| panic!("{program} {}: no header type for {}", target.name(), h.name));
            assert_eq!(got.len(), h.fields.len(), "{}: field count", h.name);
            let mut offset = 0u16;
            for ((name, width), f) in got.iter().zip(h.fields) {
                assert_eq!(
                    (name.as_str(), offset, *width),
                    (f.name, f.offset, f.width),
                    "{}.{}",
                    h.name,
                    f.name
                );
                offset += width;
            }
            assert_eq!(usize::from(offset), h.len * 8, "{}: length", h.name);
        }
    });
}

/// Every declared table (not listed as not emitted) is a P4 table with each declared action;
/// every entry names a table and an action of the program; braces balance.
#[test]
fn declared_tables_and_entries_are_in_the_p4() {
    each_export(|program, target, res, e| {
        let p4 = &e.files[&format!("{program}.p4")];
        assert_eq!(p4.matches('{').count(), p4.matches('}').count(), "{program} {}: braces", target.name());
        let summary = &e.files["SUMMARY.md"];
        for d in res.list() {
            let dataplane::model::decl::DeclKind::Table(t) = &d.kind else { continue };
            if summary.contains(&format!("| {} | {} | — |", d.name, d.kind.name())) {
                continue; // not emitted, with its reason in the summary
            }
            assert!(p4.contains(&format!("    table {} {{", t.name)), "{program}: table {}", t.name);
            for a in &t.actions {
                assert!(
                    p4.contains(&format!("action {}_{}(", t.name, a.name)),
                    "{program}: {}.{}",
                    t.name,
                    a.name
                );
            }
        }
        let entries = match target {
            Target::V1model => &e.files["entries.txt"],
            Target::Tna => &e.files["bfrt_setup.py"],
        };
        for line in entries.lines().filter(|l| l.starts_with("table_add ")) {
            let w: Vec<&str> = line.split_whitespace().collect();
            let table = w[1].rsplit('.').next().unwrap();
            let action = w[2].rsplit('.').next().unwrap();
            assert!(p4.contains(&format!("    table {table} {{")), "{line}");
            assert!(p4.contains(&format!("action {action}(")), "{line}");
        }
    });
}

/// A configuration the targets cannot run is refused with the reason: Key-Increment sampled one
/// in 3 scales byte counts by 3, which a switch ALU cannot (a shift can).
#[test]
fn a_configuration_the_targets_cannot_run_is_refused_with_the_reason() {
    let text = std::fs::read_to_string(dir().join("dta_reporter.toml"))
        .unwrap()
        .replace("primitive = \"keywrite\"", "primitive = \"keyincrement\"")
        .replace("trigger = \"change\"", "trigger = \"sample\"\nsample = 3");
    let path = std::env::temp_dir().join(format!("softfabric-p4-refuse-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let cfg = Config::load(&path).unwrap();
    std::fs::remove_file(&path).ok();
    for target in [Target::Tna, Target::V1model] {
        let err = programs::p4_export(&cfg, target).unwrap_err().to_string();
        assert!(err.contains("one in 3") && err.contains("power of two"), "{err}");
    }
}

/// µFAB's pair records are indexed by hash bits on a target: 12 records (three 4-way sets in
/// Rust) is refused, with the reason.
#[test]
fn ufab_records_not_a_power_of_two_are_refused() {
    let text =
        std::fs::read_to_string(dir().join("ufab.toml")).unwrap().replace("records = 32768", "records = 12");
    let path = std::env::temp_dir().join(format!("softfabric-p4-refuse-ufab-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let cfg = Config::load(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert!(programs::build::<PktBuf>(&cfg).is_ok(), "the Rust switch runs it");
    for target in [Target::Tna, Target::V1model] {
        let err = programs::p4_export(&cfg, target).unwrap_err().to_string();
        assert!(err.contains("ufab.records = 12") && err.contains("power of two"), "{err}");
    }
}

/// Replay `docs/p4/<program>/`'s inputs through this switch and compare its output on each of
/// `ports` ports with the `expected_p<i>.pcap` the docs give a P4 target to reproduce (so they
/// cannot drift from the Rust program).
fn check_captures(program: &str, inputs: &[&str], ports: usize) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/p4").join(program);
    let dir = std::env::temp_dir().join(format!("softfabric-p4-{program}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in inputs.iter().chain(&["replay.toml"]) {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dataplane"))
        .args(["run", "--config", "replay.toml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for p in 0..ports {
        let got = std::fs::read(dir.join(format!("out_p{p}.pcap"))).unwrap();
        let want = std::fs::read(src.join(format!("expected_p{p}.pcap"))).unwrap();
        assert!(got == want, "p{p}: the switch's output differs from docs/p4/{program}/expected_p{p}.pcap");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_macswap_check_captures_are_the_switchs_output() {
    check_captures("macswap", &["in_p0.pcap", "in_p1.pcap"], 2);
}

#[test]
fn the_dta_reporter_check_captures_are_the_switchs_output() {
    check_captures("dta_reporter", &["in_p0.pcap"], 2);
}

#[test]
fn the_hawkeye_check_captures_are_the_switchs_output() {
    check_captures("hawkeye", &["in_p0.pcap"], 3);
}

#[test]
fn the_ufab_check_captures_are_the_switchs_output() {
    check_captures("ufab", &["in_p0.pcap"], 3);
}

#[test]
fn the_daiet_check_captures_are_the_switchs_output() {
    check_captures("daiet", &["in_p0.pcap", "in_p1.pcap"], 4);
}

/// The command: a bad target is refused with exit code 2 and the expected values; a good one
/// writes the program, its entries and the summary, the same files the library exports.
#[test]
fn the_export_command_writes_the_files_and_refuses_a_bad_target() {
    let bin = env!("CARGO_BIN_EXE_dataplane");
    let cfg = dir().join("l2l3.toml");
    let out = std::env::temp_dir().join(format!("softfabric-p4-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let export_to = |target: &str| {
        std::process::Command::new(bin)
            .args(["p4", "export", "--config"])
            .arg(&cfg)
            .args(["--target", target, "--out"])
            .arg(&out)
            .output()
            .unwrap()
    };
    let bad = export_to("psa");
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("\"psa\"") && err.contains("tna") && err.contains("v1model"), "{err}");
    let ok = export_to("v1model");
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    for (name, text) in &export("l2l3", Target::V1model).files {
        assert_eq!(&std::fs::read_to_string(out.join(name)).unwrap(), text, "{name}");
    }
    std::fs::remove_dir_all(&out).ok();
}

/// Each identifier of `s` that follows `prefix` (e.g. every `x` of `meta.x`), with what comes
/// after it: a rough reader of the generated text, enough to check references without a compiler.
fn refs<'a>(s: &'a str, prefix: &str) -> Vec<(&'a str, &'a str)> {
    let is_id = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = s[at..].find(prefix) {
        let start = at + i;
        let before = s[..start].chars().next_back();
        at = start + prefix.len();
        if before.is_some_and(is_id) {
            continue; // part of a longer name
        }
        let end = s[at..].find(|c: char| !is_id(c)).map_or(s.len(), |e| at + e);
        out.push((&s[at..end], &s[end..]));
        at = end;
    }
    out
}

/// What no compiler checks here, checked on the text as the preprocessor leaves it for the target
/// (`#ifdef`s taken, used macros expanded): every `meta.x` is a metadata field, every `hdr.x` a
/// header instance and `hdr.x.f` / `hdr.x[k].f` one of its header's fields, every `SF_…` macro
/// used is defined, every `t.apply()` names a table, and every action a table lists is defined.
#[test]
fn the_generated_programs_refer_only_to_what_they_declare() {
    each_export(|program, target, res, e| {
        let full = &e.files[&format!("{program}.p4")];
        let what = format!("{program} {}", target.name());
        // The text outside `#define`s, plus the body of each macro it uses: a macro no one
        // expands (the prelude's for every program) refers to nothing.
        let defines: Vec<&str> = full.lines().filter(|l| l.trim_start().starts_with("#define ")).collect();
        let defined =
            |m: &str| defines.iter().any(|d| d.trim_start()[8..].split_whitespace().next() == Some(m));
        // `#ifdef` / `#else` / `#endif` as the preprocessor takes them.
        let mut active = vec![true];
        let mut body = Vec::new();
        for l in full.lines() {
            let t = l.trim_start();
            if let Some(m) = t.strip_prefix("#ifdef ") {
                let on = *active.last().unwrap() && defined(m.trim());
                active.push(on);
            } else if t.starts_with("#else") {
                let on = !active.pop().unwrap() && *active.last().unwrap();
                active.push(on);
            } else if t.starts_with("#endif") {
                active.pop();
            } else if !t.starts_with('#') && *active.last().unwrap() {
                body.push(l);
            }
        }
        assert_eq!(active.len(), 1, "{what}: unbalanced #ifdef");
        let mut text = body.join("\n");
        for (name, _) in refs(&text.clone(), "SF_") {
            let d = defines
                .iter()
                .find(|d| d.trim_start()[8..].starts_with(&format!("SF_{name}")))
                .unwrap_or_else(|| panic!("{what}: SF_{name} is not defined"));
            text.push('\n');
            text.push_str(d);
        }
        let p4 = &text;
        let meta_block = &p4[p4.find("struct metadata_t {").unwrap()..];
        let meta_block = &meta_block[..meta_block.find('}').unwrap()];
        let meta: Vec<&str> = meta_block
            .lines()
            .skip(1)
            .filter_map(|l| l.trim().trim_end_matches(';').split_whitespace().last())
            .collect();
        for (name, _) in refs(p4, "meta.") {
            assert!(meta.contains(&name), "{what}: meta.{name} is not a metadata field");
        }
        // Header instances as `headers_t` declares them (parsed, built, bridged), each with its
        // type's fields as the text declares them; the parsed ones must be the parser's.
        let types = p4_headers(full);
        let hblock = &p4[p4.find("struct headers_t {").unwrap()..];
        let hblock = &hblock[..hblock.find('}').unwrap()];
        let instances: BTreeMap<&str, &str> = hblock
            .lines()
            .skip(1)
            .filter_map(|l| {
                let mut w = l.trim().trim_end_matches(';').split_whitespace();
                let ty = w.next()?;
                Some((w.next()?, ty.split('[').next().unwrap()))
            })
            .collect();
        for i in res.parser().instances() {
            assert!(instances.contains_key(i.name), "{what}: parsed instance {} not in headers_t", i.name);
        }
        for (name, rest) in refs(p4, "hdr.") {
            let ty =
                instances.get(name).unwrap_or_else(|| panic!("{what}: hdr.{name} is not a header instance"));
            let fields = types.get(*ty).unwrap_or_else(|| panic!("{what}: no header type {ty}"));
            // The field after `.` or `[k].`, if any.
            let rest = if rest.starts_with('[') { &rest[rest.find(']').unwrap() + 1..] } else { rest };
            if let Some(f) = rest.strip_prefix('.') {
                let field: String =
                    f.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if ["isValid", "setValid", "setInvalid"].contains(&field.as_str()) {
                    continue;
                }
                assert!(
                    fields.iter().any(|(x, _)| dataplane::p4::ident(x) == field || *x == field),
                    "{what}: hdr.{name}.{field} is not a field of {ty}"
                );
            }
        }
        for (i, _) in p4.match_indices(".apply()") {
            let t: String =
                p4[..i].chars().rev().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let t: String = t.chars().rev().collect();
            assert!(p4.contains(&format!("table {t} {{")), "{what}: {t}.apply() but no table {t}");
        }
        let mut lists = p4.split("actions = {").skip(1);
        for list in lists.by_ref() {
            for a in list[..list.find('}').unwrap()].split(';').map(str::trim).filter(|a| !a.is_empty()) {
                assert!(p4.contains(&format!("action {a}(")), "{what}: action {a} is listed but not defined");
            }
        }
    });
}

/// The translator's ICRC field lists, read from the exported v1model P4 and evaluated over the
/// requests the Rust translator sent in `docs/p4/dta_translator/expected_p1.pcap` (each field
/// taken from the frame at `wire`'s offset, each constant as written), give the ICRC those frames
/// carry: the P4's masking and order are the RoCEv2 ICRC's, with no compiler to run.
#[test]
fn the_translator_icrc_field_lists_reproduce_the_rust_icrc() {
    use pcap_file::pcap::PcapReader;
    let cfg = Config::load(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/p4/dta_translator/translator.toml").as_path(),
    )
    .unwrap();
    let p4 = programs::p4_export(&cfg, Target::V1model).unwrap().files["dta_translator.p4"].clone();
    // Each list: the text between `hash(meta.dta_icrc, HashAlgorithm.crc32, 32w0, {` and `}`.
    let lists: Vec<Vec<String>> = p4
        .split("hash(meta.dta_icrc, HashAlgorithm.crc32, 32w0, {")
        .skip(1)
        .map(|t| t[..t.find('}').unwrap()].split(',').map(|x| x.trim().to_string()).collect())
        .collect();
    assert_eq!(lists.len(), 3, "one ICRC per frame shape");
    // Where each header instance starts in a request frame, and its fields.
    let layout = |inst: &str| -> (usize, Vec<(&'static str, u16, u16)>) {
        let spec =
            |h: &'static wire::spec::Header| h.fields.iter().map(|f| (f.name, f.offset, f.width)).collect();
        match inst {
            "ipv4" => (14, spec(&wire::ipv4::HEADER)),
            "udp" => (34, spec(&wire::udp::HEADER)),
            "roce_bth" => (42, spec(&wire::roce::BTH)),
            "roce_reth" => (54, spec(&wire::roce::RETH)),
            "roce_atomic_eth" => (54, spec(&wire::roce::ATOMIC_ETH)),
            "rdma_payload" => (70, vec![("checksum_le", 0, 32), ("data", 32, 32)]),
            "rdma_append" => (70, vec![("data_le", 0, 32)]),
            o => panic!("unexpected {o} in an ICRC list"),
        }
    };
    let bit = |f: &[u8], i: usize| (f[i / 8] >> (7 - i % 8)) & 1;
    let mut r = PcapReader::new(
        std::fs::File::open(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/p4/dta_translator/expected_p1.pcap"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut checked = 0;
    while let Some(pkt) = r.next_packet() {
        let f = pkt.unwrap().data.into_owned();
        let ip_len = usize::from(u16::from_be_bytes([f[16], f[17]]));
        let stored = u32::from_le_bytes(f[14 + ip_len - 4..14 + ip_len].try_into().unwrap());
        let shape = match f[42] {
            0x14 => "roce_atomic_eth",
            _ if ip_len == 20 + 8 + 12 + 16 + 4 + 4 => "rdma_append",
            _ => "rdma_payload",
        };
        let list = lists.iter().find(|l| l.iter().any(|x| x.contains(shape))).unwrap();
        let mut bits: Vec<u8> = Vec::new();
        for item in list {
            if let Some((w, v)) = item.split_once("w0x") {
                let w: usize = w.parse().unwrap();
                let v = u128::from_str_radix(v, 16).unwrap();
                bits.extend((0..w).rev().map(|i| ((v >> i) & 1) as u8));
            } else {
                let path: Vec<&str> = item.trim_start_matches("hdr.").split('.').collect();
                let (at, fields) = layout(path[0]);
                let &(_, off, w) = fields
                    .iter()
                    .find(|(n, ..)| dataplane::p4::ident(n) == path[1])
                    .unwrap_or_else(|| panic!("{item}"));
                let start = at * 8 + usize::from(off);
                bits.extend((start..start + usize::from(w)).map(|i| bit(&f, i)));
            }
        }
        assert_eq!(bits.len() % 8, 0);
        let bytes: Vec<u8> = bits.chunks(8).map(|c| c.iter().fold(0u8, |a, &b| a << 1 | b)).collect();
        let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&bytes);
        assert_eq!(
            crc, stored,
            "opcode {:#x}: the P4's ICRC list gives {crc:#x}, the frame has {stored:#x}",
            f[42]
        );
        checked += 1;
    }
    assert_eq!(checked, 6);
}

/// On TNA, egress sees no ingress metadata but what is bridged: every `meta.x` the egress control
/// reads is bridged, set by the egress parser, or written in egress first. The one exception is
/// `l2l3`'s flood check, which reads 0 on TNA by design (the PRE prunes the ingress port there).
#[test]
fn tna_egress_reads_only_bridged_or_egress_metadata() {
    each_export(|program, target, _, e| {
        if target != Target::Tna {
            return;
        }
        let p4 = &e.files[&format!("{program}.p4")];
        let section = |start: &str, end: &str| {
            let a = p4.find(start).unwrap();
            let b = a + p4[a..].find(end).unwrap();
            p4[a..b].to_string()
        };
        let parser = section("parser SfEgressParser", "control SfEgress(");
        let control = section("control SfEgress(", "control SfEgressDeparser");
        let bridged: Vec<String> = {
            let b =
                p4.find("header bridge_h {").map(|a| &p4[a..a + p4[a..].find('}').unwrap()]).unwrap_or("");
            b.lines()
                .skip(1)
                .filter_map(|l| l.trim().trim_end_matches(';').split_whitespace().nth(1))
                .map(String::from)
                .collect()
        };
        let set_in = |text: &str, name: &str| {
            text.contains(&format!("meta.{name} = "))
                || text.contains(&format!("(meta.{name},"))
                || text.contains(&format!("read(meta.{name}"))
        };
        for (name, _) in refs(&control, "meta.") {
            if ["flood", "ingress_port"].contains(&name) && program_is_l2l3_based(program) {
                continue;
            }
            assert!(
                // (The parser's `meta.x = 0;` initialisations do not count: only what it reads
                // from a header.)
                bridged.iter().any(|b| b == name)
                    || parser.contains(&format!("meta.{name} = hdr."))
                    || set_in(&control, name),
                "{program} tna: egress reads meta.{name}, which is neither bridged nor set in egress"
            );
        }
    });
}

fn program_is_l2l3_based(program: &str) -> bool {
    program != "macswap"
}
