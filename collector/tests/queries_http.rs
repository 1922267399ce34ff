//! `collector serve --http`: the queries as JSON over a real listener, and the CLI's exit code
//! for a bad config.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use collector::{Collector, CollectorConfig, http};
use roce::responder::Memory;
use wire::dta::{KeyHash, layout};

/// `http::serve` on an ephemeral loopback port in a thread: its address, the flag that stops it,
/// and the thread.
fn serve(c: &Arc<Collector>) -> (SocketAddr, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let (c2, s2) = (c.clone(), stop.clone());
    let t = std::thread::spawn(move || {
        http::serve(&c2, "127.0.0.1:0".parse().unwrap(), &s2, |a| tx.send(a).unwrap()).unwrap()
    });
    (rx.recv_timeout(Duration::from_secs(5)).unwrap(), stop, t)
}

#[test]
fn http_answers_queries_from_memory() {
    let cfg = CollectorConfig::parse(
        Path::new("t.toml"),
        "[collector]\nip = \"127.0.0.81\"\nmemory = \"pages\"\n[keywrite]\nport = 1337\nslots = 64\n\
         [[append]]\nlist = 2\nport = 1340\nentries = 16\n",
    )
    .unwrap();
    let c = Arc::new(Collector::start(&cfg).unwrap());
    // Write as an RNIC would: a Key-Write slot for key 9 (copy 0) and three Append entries.
    let mut mem = c.stores().memory().clone();
    let (kw, ap) = (mem.regions()[0], mem.regions()[1]);
    let h = KeyHash::new(9);
    let mut slot = [0u8; 8];
    layout::keywrite_slot(&h, &[0, 0, 1, 2], &mut slot);
    mem.write(kw.rkey, kw.va + layout::key_slot_index(&h, 0, 64) * 8, &slot).unwrap();
    let entries: Vec<u8> = [5u32, 6, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
    mem.write(ap.rkey, ap.va, &entries).unwrap();

    let (addr, stop, t) = serve(&c);
    let get = |p: &str| http::get(addr, p, Duration::from_secs(5)).unwrap();

    let (st, v) = get("/keywrite/9");
    assert_eq!(st, 200);
    assert_eq!(v["value"], serde_json::json!([0, 0, 1, 2]));
    assert_eq!(v["matching"], 1);
    let (_, v) = get("/keywrite/10");
    assert!(v["value"].is_null(), "a key never written is not found: {v}");
    let (_, v) = get("/keywrite?keys=9,10,0x9&consensus=1");
    assert_eq!(v.as_array().unwrap().iter().filter(|a| !a["value"].is_null()).count(), 2);
    let (_, v) = get("/append/2?consumer=a");
    assert_eq!(v["entries"], serde_json::json!([5, 6, 7]));
    let (_, v) = get("/append/2?consumer=a");
    assert_eq!(v["entries"], serde_json::json!([]), "the consumer's tail moved");
    let (_, v) = get("/regions");
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(get("/stats").0, 200);
    assert_eq!(get("/append/3").0, 404, "no such list");
    assert_eq!(get("/keyincrement/1").0, 404, "no such store");
    assert_eq!(get("/keywrite/zz").0, 400);
    assert_eq!(get("/nothing").0, 400);
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
}

#[test]
fn a_bad_config_exits_2_naming_file_key_and_reason() {
    let dir = std::env::temp_dir().join(format!("collector-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(&f, "[collector]\nip = \"127.0.0.1\"\n[[append]]\nlist = 0\nport = 1340\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_collector"))
        .args(["serve", "--config"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("append[0].entries") && err.contains("size"), "{err}");
    // An address that is not this host's: `check` refuses it as `serve` would.
    std::fs::write(&f, "[collector]\nip = \"203.0.113.7\"\n[keywrite]\nport = 1337\nslots = 64\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_collector"))
        .args(["check", "--config"])
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("collector.ip") && err.contains("203.0.113.7"), "{err}");
    // Bad arguments exit 2 too, naming themselves, before the config is read.
    for (arg, v) in
        [("--duration", "nan"), ("--duration", "-1"), ("--duration", "0"), ("--stats-interval", "inf")]
    {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_collector"))
            .args(["serve", "--config"])
            .arg(&f)
            .args([arg, v])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{arg} {v}: {err}");
        assert!(err.contains(arg), "{arg} {v}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The attack: long polls (`/notifications?wait_ms=10000`) from every client at once. Other
/// queries are answered at once all the same: requests are served concurrently, and long polls
/// never take the last worker (beyond that they answer without waiting).
#[test]
fn long_polls_never_block_other_queries() {
    let cfg = CollectorConfig::parse(
        Path::new("t.toml"),
        "[collector]\nip = \"127.0.0.82\"\nmemory = \"pages\"\n[keywrite]\nport = 1337\nslots = 64\n",
    )
    .unwrap();
    let c = Arc::new(Collector::start(&cfg).unwrap());
    let (addr, stop, t) = serve(&c);
    let polls: Vec<_> = (0..http::WORKERS + 2)
        .map(|_| {
            std::thread::spawn(move || {
                let t0 = std::time::Instant::now();
                let (st, _) =
                    http::get(addr, "/notifications?wait_ms=3000", Duration::from_secs(10)).unwrap();
                (st, t0.elapsed())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let t0 = std::time::Instant::now();
    let (st, _) = http::get(addr, "/stats", Duration::from_secs(10)).unwrap();
    let took = t0.elapsed();
    assert_eq!(st, 200);
    assert!(took < Duration::from_secs(1), "/stats took {took:?} behind long polls");
    let done: Vec<(u16, Duration)> = polls.into_iter().map(|p| p.join().unwrap()).collect();
    assert!(done.iter().all(|(st, _)| *st == 200));
    // WORKERS - 1 waited their 3 s; the others were answered at once.
    let waited = done.iter().filter(|(_, d)| *d >= Duration::from_millis(2900)).count();
    assert!(waited < http::WORKERS, "{done:?}");
    stop.store(true, Ordering::Relaxed);
    t.join().unwrap();
}
