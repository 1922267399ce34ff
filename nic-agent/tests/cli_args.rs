//! `nic-agent`'s arguments: every bad value exits 2 with a message naming it, at once — before
//! the interface is opened or ARP is sent (no root needed to see it).

use std::process::Command;
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> (i32, String, Duration) {
    let t0 = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_nic-agent")).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).to_string(), t0.elapsed())
}

#[test]
fn bad_arguments_exit_2_before_any_io() {
    let common =
        ["--iface", "nonexistent0", "--ip", "10.0.0.1", "--gateway", "10.0.0.2", "--peer", "10.0.0.3"];
    let file = std::env::temp_dir().join(format!("softfabric-cli-args-{}", std::process::id()));
    std::fs::write(&file, b"some bytes to send").unwrap();
    let file = file.to_str().unwrap().to_string();
    let send = |extra: &[&str]| {
        let mut v = vec!["send"];
        v.extend_from_slice(&common);
        v.extend_from_slice(&["--file", &file]);
        v.extend_from_slice(extra);
        run(&v)
    };
    for (extra, name) in [
        (&["--deadline-s", "-1"][..], "--deadline-s"),
        (&["--deadline-s", "nan"], "--deadline-s"),
        (&["--deadline-s", "1e30"], "--deadline-s"),
        (&["--mtu", "0"], "--mtu"),
        (&["--mtu", "100000"], "--mtu"),
        (&["--sender-qp", "99999999"], "--sender-qp"),
        (&["--timeout-ms", "0"], "--timeout-ms"),
        (&["--base-rtt-us", "0"], "--base-rtt-us"),
        (&["--rate-gbps", "inf"], "--rate-gbps"),
        (&["--cc", "ufab", "--guarantee-gbps", "1", "--route", "1", "--paths", "9"], "--paths"),
        (&["--paths", "2"], "--paths"),
    ] {
        let (code, err, took) = send(extra);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(name), "{extra:?}: {err}");
        assert!(took < Duration::from_secs(2), "{extra:?} took {took:?}");
    }
    // recv: a size that is not a number, and one larger than the machine's memory.
    let mut v = vec!["recv"];
    v.extend_from_slice(&common);
    v.extend_from_slice(&["--out", "/dev/null", "--size"]);
    for size in ["1e14", "100000000000000000"] {
        let mut a = v.clone();
        a.push(size);
        let (code, err, took) = run(&a);
        assert_eq!(code, 2, "--size {size}: {err}");
        assert!(err.contains("--size"), "{err}");
        assert!(took < Duration::from_secs(2));
    }
    // recv: one VM-pair's paths are one set of flows, not more flows besides.
    let mut a = v.clone();
    a.extend_from_slice(&["100", "--paths", "2", "--flows", "2"]);
    let (code, err, _) = run(&a);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--paths") || err.contains("--flows"), "{err}");
    // A good command line on an interface that does not exist fails at run time: exit 1.
    let (code, err, _) = send(&["--deadline-s", "1"]);
    assert_eq!(code, 1, "{err}");
    // A file with nothing to send, and one that never ends, are bad input: exit 2, at once.
    for f in ["/dev/null", "/dev/zero"] {
        let mut v = vec!["send"];
        v.extend_from_slice(&common);
        v.extend_from_slice(&["--file", f]);
        let (code, err, took) = run(&v);
        assert_eq!(code, 2, "{f}: {err}");
        assert!(err.contains("--file") && took < Duration::from_secs(2), "{f}: {err} in {took:?}");
    }
    std::fs::remove_file(&file).ok();
}
