//! `collector serve --http ADDR`: the queries and counters as JSON over HTTP/1.1 (GET only).
//!
//! | path | answer |
//! |---|---|
//! | `/stats` | the soft-RNIC's counters |
//! | `/regions` | each store: name, port, VA, length, R_Key |
//! | `/keywrite/KEY[?consensus=C]` | a Key-Write lookup |
//! | `/keywrite?keys=K1,K2,…[&threads=T]` | a batch of lookups on T threads |
//! | `/keyincrement/KEY` | the Count-Min value |
//! | `/append/LIST[?consumer=NAME&max=N]` | the entries after NAME's tail (moved) |
//! | `/postcarder/KEY` | the key's path, or null |
//! | `/sketch/ID` | the counters, `[column][row]` |
//! | `/sketch/ID/estimate/KEY` | the Count-Min point estimate |
//! | `/notifications[?max=N&wait_ms=W]` | immediate notifications since the last call (waits up to W ms for one) |
//!
//! Errors are JSON `{"error": …}` with status 400 (bad request) or 404 (no such store).
//!
//! Requests are served by [`WORKERS`] threads at once; at most `WORKERS - 1` of them wait in a
//! `/notifications?wait_ms=` long poll (more answer at once, without waiting), so a query is
//! never stuck behind a long poll.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crossbeam_channel::Receiver;
use serde_json::{Value, json};

use crate::rnic::Notification;
use crate::service::Collector;
use crate::store::QueryError;

/// Threads answering requests at once.
pub const WORKERS: usize = 4;

/// A request's answer: status and JSON body.
pub type Answer = (u16, Value);

fn bad(msg: impl Into<String>) -> Answer {
    (400, json!({ "error": msg.into() }))
}

fn query_error(e: QueryError) -> Answer {
    (404, json!({ "error": e.to_string() }))
}

/// A decimal or `0x` hexadecimal number that fits `T`.
fn num<T: TryFrom<u64>>(s: &str, what: &str) -> Result<T, Answer> {
    let s = s.trim();
    let parsed = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    };
    parsed
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| bad(format!("{what}: {s:?} is not a number in range")))
}

/// Answer one GET of `url` (path and query string).
pub fn answer(c: &Collector, notes: &Receiver<Notification>, url: &str) -> Answer {
    answer_waiting(c, notes, url, &AtomicUsize::new(0), usize::MAX)
}

/// [`answer`], a long poll waiting only while fewer than `max_waiting` others (counted in
/// `waiting`) do.
fn answer_waiting(
    c: &Collector,
    notes: &Receiver<Notification>,
    url: &str,
    waiting: &AtomicUsize,
    max_waiting: usize,
) -> Answer {
    match route(c, notes, url, waiting, max_waiting) {
        Ok(a) | Err(a) => a,
    }
}

fn route(
    c: &Collector,
    notes: &Receiver<Notification>,
    url: &str,
    waiting: &AtomicUsize,
    max_waiting: usize,
) -> Result<Answer, Answer> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let q: HashMap<&str, &str> = query.split('&').filter_map(|kv| kv.split_once('=')).collect();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let s = c.stores();
    Ok(match parts.as_slice() {
        ["stats"] => (200, serde_json::to_value(c.stats().snapshot()).unwrap_or(Value::Null)),
        ["regions"] => {
            let list: Vec<Value> = c
                .regions()
                .into_iter()
                .map(|(st, r)| {
                    json!({ "store": st.kind.name(), "port": st.port, "va": r.va, "len": r.len, "rkey": r.rkey })
                })
                .collect();
            (200, Value::Array(list))
        }
        ["keywrite"] => {
            let keys = q.get("keys").ok_or_else(|| bad("keys: expected ?keys=K1,K2,..."))?;
            let keys = keys.split(',').map(|k| num::<u32>(k, "key")).collect::<Result<Vec<_>, _>>()?;
            let threads = q.get("threads").map(|t| num::<usize>(t, "threads")).transpose()?.unwrap_or(4);
            let consensus = q.get("consensus").map(|t| num::<u8>(t, "consensus")).transpose()?;
            let a = s.keywrite_batch(&keys, consensus, threads).map_err(query_error)?;
            (200, serde_json::to_value(a).unwrap_or(Value::Null))
        }
        ["keywrite", key] => {
            let consensus = q.get("consensus").map(|t| num::<u8>(t, "consensus")).transpose()?;
            let a = s.keywrite(num(key, "key")?, consensus).map_err(query_error)?;
            (200, serde_json::to_value(a).unwrap_or(Value::Null))
        }
        ["keyincrement", key] => {
            let key: u32 = num(key, "key")?;
            (200, json!({ "key": key, "value": s.keyincrement(key).map_err(query_error)? }))
        }
        ["append", list] => {
            let consumer = q.get("consumer").copied().unwrap_or("default");
            let max = q.get("max").map(|m| num::<usize>(m, "max")).transpose()?.unwrap_or(1 << 16);
            let p = s.append_poll(num(list, "list")?, consumer, max).map_err(query_error)?;
            (200, serde_json::to_value(p).unwrap_or(Value::Null))
        }
        ["postcarder", key] => {
            let key: u32 = num(key, "key")?;
            (200, json!({ "key": key, "path": s.postcarder(key).map_err(query_error)? }))
        }
        ["sketch", id] => {
            let id: u16 = num(id, "sketch")?;
            (200, json!({ "sketch": id, "columns": s.sketch_read(id).map_err(query_error)? }))
        }
        ["sketch", id, "estimate", key] => {
            let (id, key): (u16, u32) = (num(id, "sketch")?, num(key, "key")?);
            (
                200,
                json!({ "sketch": id, "key": key, "estimate": s.sketch_estimate(id, key).map_err(query_error)? }),
            )
        }
        ["notifications"] => {
            let max = q.get("max").map(|m| num::<usize>(m, "max")).transpose()?.unwrap_or(1024);
            let wait =
                q.get("wait_ms").map(|m| num::<u64>(m, "wait_ms")).transpose()?.unwrap_or(0).min(10_000);
            let mut out: Vec<Notification> = notes.try_iter().take(max).collect();
            if out.is_empty() && wait > 0 {
                // Wait only while enough workers are left for other queries.
                if waiting.fetch_add(1, Ordering::AcqRel) < max_waiting
                    && let Ok(n) = notes.recv_timeout(Duration::from_millis(wait))
                {
                    out.push(n);
                    out.extend(notes.try_iter().take(max.saturating_sub(1)));
                }
                waiting.fetch_sub(1, Ordering::AcqRel);
            }
            (200, serde_json::to_value(out).unwrap_or(Value::Null))
        }
        _ => return Err(bad(format!("no such query {path:?}; see `collector query --help`"))),
    })
}

/// Serve `c` on `addr` until `stop` is set. Returns the bound address through `bound` as soon
/// as it listens.
pub fn serve(
    c: &Collector,
    addr: SocketAddr,
    stop: &AtomicBool,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), HttpError> {
    let server =
        tiny_http::Server::http(addr).map_err(|e| HttpError::Listen { addr, reason: e.to_string() })?;
    let local = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| HttpError::Listen { addr, reason: "not an IP listener".into() })?;
    bound(local);
    let notes = c.subscribe(1 << 16);
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
        .map_err(|()| HttpError::Listen { addr, reason: "the Content-Type header".into() })?;
    let waiting = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        for _ in 0..WORKERS {
            sc.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let Ok(Some(req)) = server.recv_timeout(Duration::from_millis(100)) else { continue };
                    let (status, body) = if *req.method() == tiny_http::Method::Get {
                        answer_waiting(c, &notes, req.url(), &waiting, WORKERS - 1)
                    } else {
                        bad("only GET")
                    };
                    let resp = tiny_http::Response::from_string(body.to_string())
                        .with_status_code(status)
                        .with_header(header.clone());
                    let _ = req.respond(resp);
                }
            });
        }
    });
    Ok(())
}

/// A GET of `path` on a `collector serve --http` at `addr`: status and JSON. HTTP/1.0 over one
/// connection by hand — a loopback GET needs no client library.
pub fn get(addr: SocketAddr, path: &str, timeout: Duration) -> Result<(u16, Value), HttpError> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|error| HttpError::Connect { addr, error })?;
    let io = |error| HttpError::Io { addr, error };
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").map_err(io)?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).map_err(io)?;
    let text = String::from_utf8_lossy(&resp);
    let (head, body) = text.split_once("\r\n\r\n").ok_or(HttpError::Malformed { addr })?;
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok((status, serde_json::from_str(body).map_err(|error| HttpError::Json { addr, error })?))
}

/// Why the HTTP server or a query to it failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The server cannot listen on its address.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// The collector cannot be reached.
    #[error("cannot reach the collector at {addr}: {error}")]
    Connect {
        /// The collector's address.
        addr: SocketAddr,
        /// Why.
        error: std::io::Error,
    },
    /// The connection failed midway.
    #[error("talking to the collector at {addr}: {error}")]
    Io {
        /// The collector's address.
        addr: SocketAddr,
        /// Why.
        error: std::io::Error,
    },
    /// The answer is not HTTP.
    #[error("malformed HTTP answer from {addr}")]
    Malformed {
        /// The collector's address.
        addr: SocketAddr,
    },
    /// The answer's body is not JSON.
    #[error("the collector at {addr} answered with malformed JSON: {error}")]
    Json {
        /// The collector's address.
        addr: SocketAddr,
        /// Why.
        error: serde_json::Error,
    },
}
