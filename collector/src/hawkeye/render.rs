//! A diagnosis as JSON and as a plain-language summary; the provenance graph as DOT and SVG.
//!
//! JSON, one object per incident:
//!
//! ```text
//! {"event": 7, "t_ns": 2003100, "switches": [1, 2, 3],
//!  "victim": {"src": "10.0.1.2", "dst": "10.0.4.2", "protocol": 17, "sport": 1000, "dport": 4791} | null,
//!  "anomaly": "microburst_incast" | "in_loop_deadlock" | "out_of_loop_deadlock_contention" |
//!             "out_of_loop_deadlock_injection" | "pfc_storm" | "flow_contention" | null,
//!  "root_cause": {"kind": "flows", "port": "S3.P2", "flows": [{"src", "dst", "protocol", "sport", "dport", "weight"}]}
//!              | {"kind": "host", "port": "S3.P4", "host": 5 | null, "ip": "10.0.5.2" | null} | null,
//!  "pfc_path": ["S1.P1", "S2.P3", "S3.P2"], "loop": [...],
//!  "undiagnosed": null | "why",
//!  "no_anomaly": null | "what was seen (congestion that is no anomaly)",
//!  "summary": "…",
//!  "graph": {"ports": [{"id": "S1.P1", "pkts", "paused", "qdepth"}], "flows": ["10.0.1.2:1000->10.0.4.2:4791/17"],
//!            "port_port": [["S1.P1", "S2.P3", w]], "flow_port": [[flow, "S1.P1", paused]], "port_flow": [["S3.P2", flow, w]]}}
//! ```
//!
//! SVG is drawn by the `layout-rs` crate (a Rust implementation of Graphviz's layered layout)
//! from the same DOT text, so no Graphviz install is needed; `dot -Tsvg` on the DOT gives the
//! Graphviz rendering where it is installed.

use serde_json::{Value, json};
use wire::hawkeye::FiveTuple;

use super::Incident;
use super::diagnose::{Diagnosis, RootCause};
use super::graph::Graph;

fn flow_json(f: &FiveTuple) -> Value {
    json!({"src": f.src_ip.to_string(), "dst": f.dst_ip.to_string(), "protocol": f.protocol,
           "sport": f.src_port, "dport": f.dst_port})
}

/// A flow's label: `src:sport->dst:dport/proto`.
pub fn flow_label(f: &FiveTuple) -> String {
    format!("{}:{}->{}:{}/{}", f.src_ip, f.src_port, f.dst_ip, f.dst_port, f.protocol)
}

/// Weights printed with 3 decimals: the same input gives the same bytes.
fn w3(w: f64) -> Value {
    json!((w * 1000.0).round() / 1000.0)
}

/// The incident's JSON object.
pub fn json(inc: &Incident, g: &Graph, d: &Diagnosis) -> Value {
    let root = match &d.root_cause {
        None => Value::Null,
        Some(RootCause::Flows { port, flows }) => json!({
            "kind": "flows", "port": port.to_string(),
            "flows": flows.iter().map(|(f, w)| {
                let mut o = flow_json(f);
                o["weight"] = w3(*w);
                o
            }).collect::<Vec<_>>()
        }),
        Some(RootCause::Host { port, host }) => json!({
            "kind": "host", "port": port.to_string(),
            "host": host.map(|h| h.0), "ip": host.map(|h| h.1.to_string())
        }),
    };
    let pid = |i: usize| g.ports[i].0.to_string();
    json!({
        "event": inc.event,
        "t_ns": inc.t_ns,
        "switches": g.switches.iter().collect::<Vec<_>>(),
        "victim": d.victim.as_ref().map(flow_json),
        "anomaly": d.anomaly.map(|a| a.name()),
        "root_cause": root,
        "pfc_path": d.pfc_path.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "loop": d.deadlock_loop.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "undiagnosed": d.undiagnosed,
        "no_anomaly": d.no_anomaly,
        "summary": summary(d),
        "graph": {
            "ports": g.ports.iter().map(|(p, s)| json!({"id": p.to_string(), "pkts": s.pkts, "paused": s.paused,
                "qdepth": (s.qdepth() * 10.0).round() / 10.0})).collect::<Vec<_>>(),
            "flows": g.flows.iter().map(flow_label).collect::<Vec<_>>(),
            "port_port": g.port_port.iter().map(|&(a, b, w)| json!([pid(a), pid(b), w3(w)])).collect::<Vec<_>>(),
            "flow_port": g.flow_port.iter().map(|&(f, p, n)| json!([flow_label(&g.flows[f]), pid(p), n])).collect::<Vec<_>>(),
            "port_flow": g.port_flow.iter().map(|&(p, f, w)| json!([pid(p), flow_label(&g.flows[f]), w3(w)])).collect::<Vec<_>>(),
        }
    })
}

/// One paragraph an operator reads first.
pub fn summary(d: &Diagnosis) -> String {
    let victim =
        d.victim.as_ref().map_or("the victim flow".to_string(), |v| format!("flow {}", flow_label(v)));
    if let Some(what) = &d.no_anomaly {
        return format!("No anomaly for {victim}: {what}.");
    }
    let Some(a) = d.anomaly else {
        return format!(
            "Undiagnosed for {victim}: {}.",
            d.undiagnosed.as_deref().unwrap_or("no signature matched")
        );
    };
    let path = if d.pfc_path.is_empty() {
        String::new()
    } else {
        format!(
            " PFC spread along {}.",
            d.pfc_path.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(" -> ")
        )
    };
    let lp = if d.deadlock_loop.is_empty() {
        String::new()
    } else {
        format!(
            " The ports {} wait for each other in a loop.",
            d.deadlock_loop.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(" -> ")
        )
    };
    let root = match &d.root_cause {
        Some(RootCause::Flows { port, flows }) => format!(
            " The root cause is contention at {port} by {} flow{}: {}.",
            flows.len(),
            if flows.len() == 1 { "" } else { "s" },
            flows
                .iter()
                .take(6)
                .map(|(f, w)| format!("{} ({w:.2})", flow_label(f)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(RootCause::Host { port, host: Some((h, ip)) }) => {
            format!(" The root cause is host {h} ({ip}) injecting PFC into {port}.")
        }
        Some(RootCause::Host { port, host: None }) => {
            format!(" The root cause is the device across {port} injecting PFC (no flow contends there).")
        }
        None => String::new(),
    };
    format!("{victim} was slowed by {}.{path}{lp}{root}", a.describe())
}

/// The graph in DOT: ports as boxes (red when paused), flows as ellipses; port → port edges
/// bold, flow → port dashed, port → flow solid (red when the flow contributes).
pub fn dot(g: &Graph, d: &Diagnosis) -> String {
    let mut s = String::from("digraph hawkeye {\n  rankdir=LR;\n");
    for (i, (p, st)) in g.ports.iter().enumerate() {
        let color = if st.paused > 0 { "red" } else { "black" };
        let on = if d.pfc_path.contains(p) || d.deadlock_loop.contains(p) { ", penwidth=3" } else { "" };
        s += &format!("  p{i} [shape=box, label=\"{p}\\npaused {}\", color={color}{on}];\n", st.paused);
    }
    for (i, f) in g.flows.iter().enumerate() {
        let victim = if d.victim.as_ref() == Some(f) { ", style=filled, fillcolor=lightblue" } else { "" };
        s += &format!("  f{i} [shape=ellipse, label=\"{}\"{victim}];\n", flow_label(f));
    }
    for &(a, b, w) in &g.port_port {
        s += &format!("  p{a} -> p{b} [penwidth=2, label=\"{w:.0}\"];\n");
    }
    for &(f, p, n) in &g.flow_port {
        s += &format!("  f{f} -> p{p} [style=dashed, label=\"{n}\"];\n");
    }
    for &(p, f, w) in &g.port_flow {
        if w.abs() < 0.05 {
            continue;
        }
        let color = if w > 0.0 { "red" } else { "gray" };
        s += &format!("  p{p} -> f{f} [color={color}, label=\"{w:.2}\"];\n");
    }
    s.push_str("}\n");
    s
}

/// The DOT text drawn as SVG by `layout-rs`; an error if it does not parse.
pub fn svg(dot_text: &str) -> Result<String, String> {
    use layout::backends::svg::SVGWriter;
    use layout::gv::{DotParser, GraphBuilder};
    let mut parser = DotParser::new(dot_text);
    let tree = parser.process().map_err(|e| format!("DOT: {e:?}"))?;
    let mut gb = GraphBuilder::new();
    gb.visit_graph(&tree);
    let mut vg = gb.get();
    let mut w = SVGWriter::new();
    vg.do_it(false, false, false, &mut w);
    Ok(w.finalize())
}
