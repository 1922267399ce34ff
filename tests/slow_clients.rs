//! The collector's HTTP API and the switch's control socket against clients that are slow,
//! oversized, half-sent or never read (issue 53): other clients are still served, in time, and
//! SIGTERM still stops each server at once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A binary of this build (`cargo test --workspace` builds them all).
fn bin(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_BIN_EXE_softfabric")).with_file_name(name);
    assert!(p.exists(), "{} not built: run `cargo test --workspace`", p.display());
    p
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("softfabric-slow-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A server the test started, killed if the test fails before it stops it.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// SIGTERM to `child`; how long it took to exit, and its exit code.
fn terminate(child: &mut Child) -> (Duration, Option<i32>) {
    let t0 = Instant::now();
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return (t0.elapsed(), s.code());
        }
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            return (t0.elapsed(), None);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A connection to `addr` from loopback address `from` (the server limits connections per
/// address: a hostile client is one address, a good one another).
fn connect_from(from: [u8; 4], addr: SocketAddr) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.bind(&SocketAddr::from((from, 0)).into())?;
    s.connect_timeout(&addr.into(), Duration::from_secs(5))?;
    Ok(s.into())
}

/// One GET on a fresh connection: its status and how long the answer took.
fn get(addr: SocketAddr, path: &str) -> (u16, Duration) {
    let t0 = Instant::now();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp);
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, t0.elapsed())
}

/// Send `bytes` and read what comes back (within 10 s): the status, 0 if none.
fn raw(addr: SocketAddr, bytes: &[u8]) -> u16 {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let mut resp = vec![0u8; 256];
    let n = s.read(&mut resp).unwrap_or(0);
    String::from_utf8_lossy(&resp[..n]).split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

#[test]
fn the_collector_serves_other_clients_while_hostile_ones_hold_connections() {
    let d = scratch("http");
    // A sketch of 2^18 columns: its answer (about 2 MB of JSON) is more than a socket holds.
    let cfg = d.join("collector.toml");
    std::fs::write(
        &cfg,
        "[collector]\nip = \"127.0.0.77\"\nmemory = \"pages\"\n[keywrite]\nport = 1337\nslots = 1024\n\
         [[sketch]]\nid = 0\nport = 1341\nrows = 4\ncolumns = 262144\n",
    )
    .unwrap();
    let mut server = Server(
        Command::new(bin("collector"))
            .args(["serve", "--config"])
            .arg(&cfg)
            .args(["--http", "127.0.0.1:0", "--duration", "120", "--stats-interval", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut out = BufReader::new(server.0.stdout.take().unwrap());
    let addr: SocketAddr = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "the collector ended before it served");
        if let Some(rest) = line.strip_prefix("queries: http://") {
            break rest.split('/').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let mut held = Vec::new();
    // From one hostile address: as many slow heads as an address may hold (16), each the
    // request line and never the rest (held by the server for 5 s) …
    let hostile = [127, 0, 0, 2];
    for _ in 0..16 {
        let mut s = connect_from(hostile, addr).unwrap();
        let _ = s.write_all(b"GET /stats HTTP/1.1\r\nHost: x\r\n");
        held.push(s);
    }
    // … so one more from it is answered 503 at once.
    std::thread::sleep(Duration::from_millis(200));
    let mut over = connect_from(hostile, addr).unwrap();
    over.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut b = vec![0u8; 64];
    let n = over.read(&mut b).unwrap_or(0);
    assert!(
        String::from_utf8_lossy(&b[..n]).starts_with("HTTP/1.1 503"),
        "{:?}",
        String::from_utf8_lossy(&b[..n])
    );
    // From another: clients that never read a 2 MB answer (each holds its connection until
    // the answer is taken or its 30 s are up).
    for _ in 0..5 {
        let mut s = connect_from([127, 0, 0, 3], addr).unwrap();
        let _ = s.write_all(b"GET /sketch/0 HTTP/1.1\r\nHost: x\r\n\r\n");
        held.push(s);
    }
    // Oversized, bodied and half-sent requests: refused, and the server lives.
    assert_eq!(
        raw(addr, format!("GET /stats HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(1 << 20)).as_bytes()),
        431
    );
    assert_eq!(
        raw(addr, b"GET /stats HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999\r\n\r\nabc"),
        413,
        "a GET with a body (the Content-Length that aborted the old server)"
    );
    assert_eq!(raw(addr, b"POST /stats HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"), 405);
    let mut half = TcpStream::connect(addr).unwrap();
    let _ = half.write_all(b"GET /sta");
    drop(half);
    // Meanwhile a well-behaved client is answered at once, every time.
    let mut worst = Duration::ZERO;
    for _ in 0..20 {
        let (status, took) = get(addr, "/stats");
        assert_eq!(status, 200);
        worst = worst.max(took);
    }
    assert!(worst < Duration::from_secs(1), "a query took {worst:?} beside hostile clients");
    // A flood of idle connections from many addresses, past the server's limit: the excess is
    // answered 503, not queued.
    let flood: Vec<TcpStream> =
        (0..80).filter_map(|i| connect_from([127, 0, 1, 1 + i / 10], addr).ok()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let (status, took) = get(addr, "/stats");
    assert!(status == 200 || status == 503, "status {status}");
    assert!(took < Duration::from_secs(2), "answered in {took:?}");
    drop(flood);
    // The slow heads time out (5 s); then all is served again.
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(get(addr, "/stats").0, 200);
    // SIGTERM with connections held: out in well under a second.
    let (took, code) = terminate(&mut server.0);
    drop(held);
    assert_eq!(code, Some(0), "exit status");
    assert!(took < Duration::from_secs(1), "SIGTERM took {took:?}");
    std::fs::remove_dir_all(&d).ok();
}

/// A control command and its answer line, within `limit`.
fn command(sock: &Path, line: &str, limit: Duration) -> Result<String, String> {
    let mut s = UnixStream::connect(sock).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(limit)).unwrap();
    s.write_all(format!("{line}\n").as_bytes()).map_err(|e| e.to_string())?;
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).map_err(|e| e.to_string())?;
    Ok(answer)
}

#[test]
fn the_control_socket_serves_other_clients_and_sigterm_stops_the_switch() {
    let d = scratch("ctl");
    let sock = d.join("ctl.sock");
    let cfg = d.join("switch.toml");
    std::fs::write(
        &cfg,
        format!(
            "program = \"l2l3\"\n[runtime]\ncontrol_socket = \"{}\"\n[[port]]\nname = \"p0\"\nbackend = \"ring\"\n\
             mac = \"02:00:00:00:00:01\"\nspeed = \"10G\"\nipv4 = [\"10.0.1.1/24\"]\n",
            sock.display()
        ),
    )
    .unwrap();
    let mut server = Server(
        Command::new(bin("dataplane"))
            .args(["run", "--config"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    while UnixStream::connect(&sock).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(20), "the switch did not open its control socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut held = Vec::new();
    // Silent clients, and one that sent half a line.
    for _ in 0..4 {
        held.push(UnixStream::connect(&sock).unwrap());
    }
    let mut half = UnixStream::connect(&sock).unwrap();
    half.write_all(b"sho").unwrap();
    held.push(half);
    // One that never reads its answers: commands until its answers fill the socket.
    let mut deaf = UnixStream::connect(&sock).unwrap();
    deaf.set_write_timeout(Some(Duration::from_secs(1))).unwrap();
    let _ = deaf.write_all("show\n".repeat(200_000).as_bytes());
    held.push(deaf);
    // A 16 MB line: refused after 64 KiB, the connection closed, nothing held.
    let mut long = UnixStream::connect(&sock).unwrap();
    long.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let sent = long.write(&vec![b'a'; 16 << 20]).unwrap_or(0);
    let mut answer = String::new();
    long.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = BufReader::new(&long).read_line(&mut answer);
    assert!(answer.starts_with("error line longer than"), "{sent} bytes sent: {answer:?}");
    // A well-behaved client is answered at once beside them.
    let t = Instant::now();
    let a = command(&sock, "show", Duration::from_secs(2)).expect("answered");
    assert!(a.starts_with("ok"), "{a}");
    assert!(t.elapsed() < Duration::from_secs(1), "answered in {:?}", t.elapsed());
    // Past the client limit: told so at once, not left waiting.
    let extra: Vec<UnixStream> = (0..8).filter_map(|_| UnixStream::connect(&sock).ok()).collect();
    let t = Instant::now();
    let a = command(&sock, "show", Duration::from_secs(2)).unwrap_or_default();
    assert!(a.starts_with("error busy") || a.starts_with("ok"), "{a:?}");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // Silent clients are closed after 2 s: then the socket serves again.
    std::thread::sleep(Duration::from_millis(2500));
    let a = command(&sock, "show", Duration::from_secs(2)).expect("answered");
    assert!(a.starts_with("ok"), "{a}");
    // SIGTERM with clients connected, one blocked writing: the switch stops within a second.
    let (took, code) = terminate(&mut server.0);
    drop((held, extra));
    assert_eq!(code, Some(0), "exit status");
    assert!(took < Duration::from_secs(1), "SIGTERM took {took:?}");
    assert!(!sock.exists(), "the socket is removed");
    std::fs::remove_dir_all(&d).ok();
}
