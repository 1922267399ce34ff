//! `collector serve --http ADDR`: the queries and counters as JSON over HTTP/1.1 (GET only).
//!
//! | path | answer |
//! |---|---|
//! | `/stats` | the soft-RNIC's counters, and `consumers_forgotten` |
//! | `/regions` | each store: name, port, VA, length, R_Key |
//! | `/keywrite/KEY[?consensus=C]` | a Key-Write lookup |
//! | `/keywrite?keys=K1,K2,…[&threads=T]` | a batch of lookups on T threads (1 to 64) |
//! | `/keyincrement/KEY` | the Count-Min value |
//! | `/append/LIST[?consumer=NAME&max=N]` | the entries after NAME's tail (moved; N ≤ 2^20) |
//! | `/postcarder/KEY` | the key's path, or null |
//! | `/sketch/ID` | the counters, `[column][row]` |
//! | `/sketch/ID/estimate/KEY` | the Count-Min point estimate |
//! | `/notifications[?max=N&wait_ms=W]` | immediate notifications since the last call (waits up to W ms for one) |
//!
//! Errors are JSON `{"error": …}` with status 400 (bad request), 404 (no such store), 405 (not a
//! GET), 413 (a GET with a body), 431 (a head past its limit) or 503 (too many connections).
//!
//! The server is hyper's HTTP/1 on a tokio runtime of its own, with limits no client can get
//! past ([`Limits`]): the request line and headers at most 16 KiB and 64 headers, read within
//! 5 s; no request body; one request per connection, which must be read, answered and written
//! within 30 s; at most 64 connections at once, 16 of them from one address (more are answered
//! 503 and closed). Queries run on [`WORKERS`] threads; at most `WORKERS - 1` of them wait in a
//! `/notifications?wait_ms=` long poll (more answer at once, without waiting), so a query is
//! never stuck behind a long poll, and a client that never reads its answer holds only its own
//! connection. The per-consumer state of `/append` is bounded too ([`crate::store::MAX_CONSUMERS`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::Receiver;
use serde_json::{Value, json};

use crate::rnic::Notification;
use crate::service::Collector;
use crate::store::QueryError;

/// Threads answering requests at once.
pub const WORKERS: usize = 4;

/// The most entries (Append entries, notifications) one answer carries.
pub const MAX_ENTRIES: usize = 1 << 20;

/// What no client can get past (module documentation).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Request line and headers, bytes.
    pub max_head: usize,
    /// Headers.
    pub max_headers: usize,
    /// Time to send the request line and headers.
    pub head_time: Duration,
    /// Time for a whole request: read, answered, written.
    pub request_time: Duration,
    /// Connections at once.
    pub max_connections: usize,
    /// Connections at once from one address.
    pub max_per_client: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_head: 16 << 10,
            max_headers: 64,
            head_time: Duration::from_secs(5),
            request_time: Duration::from_secs(30),
            max_connections: 64,
            max_per_client: 16,
        }
    }
}

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
        ["stats"] => {
            let mut v = serde_json::to_value(c.stats().snapshot()).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut v {
                m.insert("consumers_forgotten".into(), json!(s.consumers_forgotten()));
            }
            (200, v)
        }
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
            if !(1..=64).contains(&threads) {
                return Err(bad(format!("threads: {threads} out of range 1..=64")));
            }
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
            if !(1..=MAX_ENTRIES).contains(&max) {
                return Err(bad(format!("max: {max} out of range 1..={MAX_ENTRIES}")));
            }
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
            let max =
                q.get("max").map(|m| num::<usize>(m, "max")).transpose()?.unwrap_or(1024).min(MAX_ENTRIES);
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

/// Serve `c` on `addr` until `stop` is set, with the default [`Limits`]. Returns the bound
/// address through `bound` as soon as it listens.
pub fn serve(
    c: &Arc<Collector>,
    addr: SocketAddr,
    stop: &AtomicBool,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), HttpError> {
    serve_with(c, addr, stop, Limits::default(), bound)
}

/// The state every connection shares.
struct Shared {
    collector: Arc<Collector>,
    notes: Receiver<Notification>,
    waiting: AtomicUsize,
    workers: tokio::sync::Semaphore,
    connections: Mutex<HashMap<IpAddr, usize>>,
    total: AtomicUsize,
    limits: Limits,
}

/// A connection's slot, given back when it ends.
struct Slot {
    shared: Arc<Shared>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.shared.total.fetch_sub(1, Ordering::AcqRel);
        let mut m = self.shared.connections.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = m.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}

impl Shared {
    /// A slot for a connection from `ip`, if it is within the limits.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Slot> {
        let mut m = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        let from_ip = m.get(&ip).copied().unwrap_or(0);
        if self.total.load(Ordering::Acquire) >= self.limits.max_connections
            || from_ip >= self.limits.max_per_client
        {
            return None;
        }
        self.total.fetch_add(1, Ordering::AcqRel);
        *m.entry(ip).or_insert(0) += 1;
        Some(Slot { shared: self.clone(), ip })
    }
}

type Body = http_body_util::Full<hyper::body::Bytes>;

fn response(status: u16, body: &Value) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(Body::from(body.to_string()));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    r
}

/// One request: a GET without a body, answered on a worker thread.
async fn handle(
    shared: Arc<Shared>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Body>, std::convert::Infallible> {
    use hyper::body::Body as _;
    if req.method() != hyper::Method::GET {
        return Ok(response(405, &json!({ "error": "only GET" })));
    }
    // A GET carries no body; one that says it does is refused unread.
    if req.body().size_hint().upper() != Some(0) {
        return Ok(response(413, &json!({ "error": "a GET request carries no body" })));
    }
    let url =
        req.uri().path_and_query().map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let Ok(_permit) = shared.workers.acquire().await else {
        return Ok(response(503, &json!({ "error": "shutting down" })));
    };
    let s = shared.clone();
    let answer = tokio::task::spawn_blocking(move || {
        answer_waiting(&s.collector, &s.notes, &url, &s.waiting, WORKERS - 1)
    })
    .await
    .unwrap_or_else(|_| (500, json!({ "error": "the query failed" })));
    Ok(response(answer.0, &answer.1))
}

/// [`serve`] with explicit limits.
pub fn serve_with(
    c: &Arc<Collector>,
    addr: SocketAddr,
    stop: &AtomicBool,
    limits: Limits,
    bound: impl FnOnce(SocketAddr),
) -> Result<(), HttpError> {
    let listen = |reason: String| HttpError::Listen { addr, reason };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(WORKERS)
        .thread_name("collector-http")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| listen(format!("the HTTP runtime: {e}")))?;
    let std_listener = std::net::TcpListener::bind(addr).map_err(|e| listen(e.to_string()))?;
    std_listener.set_nonblocking(true).map_err(|e| listen(e.to_string()))?;
    let local = std_listener.local_addr().map_err(|e| listen(e.to_string()))?;
    let shared = Arc::new(Shared {
        collector: c.clone(),
        notes: c.subscribe(1 << 16),
        waiting: AtomicUsize::new(0),
        workers: tokio::sync::Semaphore::new(WORKERS),
        connections: Mutex::new(HashMap::new()),
        total: AtomicUsize::new(0),
        limits,
    });
    bound(local);
    rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(std_listener).map_err(|e| listen(e.to_string()))?;
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        while !stop.load(Ordering::Relaxed) {
            let (stream, peer) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!("http: accept: {e}");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                },
                _ = tick.tick() => continue,
            };
            let Some(slot) = shared.admit(peer.ip()) else {
                // Over the limits: a short answer, written within a second, then closed.
                tokio::spawn(async move {
                    use tokio::io::AsyncWriteExt;
                    let mut stream = stream;
                    let body = r#"{"error":"too many connections"}"#;
                    let msg = format!(
                        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(msg.as_bytes())).await;
                });
                continue;
            };
            let shared = shared.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let limits = shared.limits;
                let mut http = hyper::server::conn::http1::Builder::new();
                http.timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(limits.head_time)
                    .max_buf_size(limits.max_head.max(8192))
                    .max_header_size(limits.max_head)
                    .max_headers(limits.max_headers)
                    .keep_alive(false);
                let svc = hyper::service::service_fn(move |req| handle(shared.clone(), req));
                let conn = http.serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
                // The whole request — read, answered, written — within its time, or dropped.
                let _ = tokio::time::timeout(limits.request_time, conn).await;
            });
        }
        Ok::<(), HttpError>(())
    })?;
    // Connections still open are dropped with the runtime, not waited for.
    rt.shutdown_timeout(Duration::from_millis(100));
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
    // An answer is at most MAX_ENTRIES entries of JSON: read no more than 1 GiB of anything.
    let mut resp = Vec::new();
    (&mut s).take(1 << 30).read_to_end(&mut resp).map_err(io)?;
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
