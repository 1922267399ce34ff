//! A second `run` with the same control socket is refused, naming it; the first keeps it.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use dataplane::config::Config;
use dataplane::runtime::Runtime;

#[test]
fn a_control_socket_in_use_is_not_taken_over() {
    let dir = std::env::temp_dir().join(format!("softfabric-ctl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("ctl.sock");
    let text = format!(
        "program = \"l2l3\"\n[runtime]\ncontrol_socket = \"{}\"\n[[port]]\nname = \"r\"\nbackend = \"ring\"\n\
         mac = \"02:00:00:00:00:01\"\nspeed = \"10G\"\n",
        sock.display()
    );
    let cfg = Config::parse(Path::new("ctl.toml"), &text).unwrap();
    let first = Runtime::start(&cfg).unwrap();
    let stop = first.stop_flag();
    let serving = std::thread::spawn(move || {
        first.serve().unwrap();
        first.stop();
    });
    // Wait for the first to listen.
    for _ in 0..200 {
        if std::os::unix::net::UnixStream::connect(&sock).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = Runtime::start(&cfg).unwrap();
    let e = second.serve().expect_err("the socket is in use").to_string();
    assert!(e.contains("control socket") && e.contains("another running dataplane"), "{e}");
    drop(second);
    // The first still answers on it.
    assert!(std::os::unix::net::UnixStream::connect(&sock).is_ok());
    stop.store(true, Ordering::Relaxed);
    serving.join().unwrap();
    std::fs::remove_dir_all(&dir).ok();
}
