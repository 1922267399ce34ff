//! The soft-RNIC's rate on one core over UDP, next to its ceiling: the plain batched-receive
//! rate of the same socket.
//!
//! A sender on another core connects an RC QP to a Key-Write store (CM and metadata over the
//! wire, as a translator does) and sends 8-byte RDMA WRITEs (82-byte frames, ICRC computed
//! per packet, 64 per GSO send, AckReq on the last of each send). Two phases of `--seconds`
//! each, on the same socket, the receiver pinned to `--rx-core`:
//!
//! 1. ceiling — `SoftRnic::drain`: receive batches (recvmmsg + GRO) and count the datagrams,
//!    nothing else; the sender resends one prebuilt batch without waiting for ACKs.
//! 2. soft-RNIC — `SoftRnic::poll`: the ICRC rebuilt and checked, BTH/RETH parsed, PSN, QPN,
//!    R_Key and bounds checked, memory written, ACKs sent; the sender keeps at most `--window`
//!    PSNs unacknowledged and goes back to the NAKed PSN on a sequence error (go-back-N).
//!
//! It prints both rates and their ratio. Run:
//! `cargo bench -p collector --bench soft_rnic -- --seconds 3` (on a 2-core machine the two
//! default cores, 0 for the sender and 1 for the receiver, are all there is). Figures are kept
//! in BENCHMARKS.md.

use std::io::IoSliceMut;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use collector::peer::UdpPeer;
use collector::{CollectorConfig, RnicConfig, SoftRnic, Stores};
use quinn_udp::{RecvMeta, Transmit, UdpSocketState};
use roce::frames::bth;
use wire::roce::{Opcode, RoceRepr, Syndrome};
use wire::stack::{RemoteAddr, RoceTemplate};

const COLLECTOR: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 81);
const SENDER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 82);
const SLOTS: u64 = 1 << 20;
const PSN_MASK: u32 = 0x00ff_ffff;
/// Datagrams per GSO send.
const GSO: usize = 64;

struct Args {
    seconds: f64,
    rx_core: usize,
    tx_core: usize,
    window: u32,
    icrc: bool,
}

fn args() -> Args {
    let mut a = Args { seconds: 3.0, rx_core: 1, tx_core: 0, window: 8192, icrc: true };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--seconds" => a.seconds = v().parse().expect("--seconds: a number"),
            "--rx-core" => a.rx_core = v().parse().expect("--rx-core: a core id"),
            "--tx-core" => a.tx_core = v().parse().expect("--tx-core: a core id"),
            "--window" => a.window = v().parse().expect("--window: PSNs"),
            "--no-icrc" => a.icrc = false,
            // What `cargo bench` passes to every bench target.
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn pin(core: usize) {
    if !core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
        eprintln!("warning: could not pin to core {core}");
    }
}

/// Sender state shared with the main thread.
#[derive(Default)]
struct Sent {
    packets: AtomicU64,
    stop: AtomicBool,
}

/// Send WRITEs until told to stop. With `window`, keep at most that many PSNs unacknowledged
/// (reading ACKs and NAKs between sends); without, send blindly.
fn sender(peer: &UdpPeer, qpn: u32, first_psn: u32, at: RemoteAddr, window: Option<u32>, sent: &Sent) {
    let sock = peer.socket();
    sock.set_nonblocking(true).expect("nonblocking");
    let state = UdpSocketState::new(sock.into()).expect("quinn-udp state");
    let flow = peer.flow();
    let hdr = flow.headers_len();
    let t = RoceTemplate::new(&flow, &bth(Opcode::RC_RDMA_WRITE_ONLY, qpn, 0, false), 8).expect("template");
    let seg = t.frame_len() - hdr;
    let mut frame = [0u8; 128];
    let mut batch = vec![0u8; GSO * seg];
    let mut rx = vec![0u8; 1 << 16];
    let (mut next, mut acked) = (first_psn, first_psn);
    let mut slot = 0u64;
    let mut last_progress = Instant::now();
    let dest = SocketAddr::V4(SocketAddrV4::new(COLLECTOR, wire::udp::port::ROCE_V2));
    while !sent.stop.load(Ordering::Relaxed) {
        if let Some(w) = window {
            // quinn-udp turned GRO on: one receive may hold several ACKs, `stride` apart.
            let mut meta = [RecvMeta::default(); 1];
            while let Ok(1) = state.recv(sock.into(), &mut [IoSliceMut::new(&mut rx)], &mut meta) {
                let m = meta[0];
                for ack in rx[..m.len].chunks(m.stride.max(1)) {
                    let Ok(r) = RoceRepr::parse(ack) else { continue };
                    match r.ext.aeth.map(|a| a.syndrome) {
                        Some(Syndrome::Ack { .. }) => acked = r.bth.psn.wrapping_add(1) & PSN_MASK,
                        Some(Syndrome::Nak(_)) => (acked, next) = (r.bth.psn, r.bth.psn),
                        _ => continue,
                    }
                    last_progress = Instant::now();
                }
            }
            if next.wrapping_sub(acked) & PSN_MASK >= w {
                if last_progress.elapsed() > Duration::from_millis(20) {
                    // An AckReq was lost: go back to the oldest unacknowledged PSN.
                    (next, last_progress) = (acked, Instant::now());
                }
                continue;
            }
        }
        // Blind sending (the ceiling) resends one batch built once: the receiver only counts.
        for i in (0..GSO).take(if window.is_none() && slot > 0 { 0 } else { GSO }) {
            let va = at.va + (slot % SLOTS) * 8;
            slot += 1;
            let ack_req = i == GSO - 1;
            let at = RemoteAddr { va, rkey: at.rkey };
            let n =
                t.write_rdma_write(&mut frame, next, ack_req, at, None, &slot.to_le_bytes()).expect("write");
            t.seal(&mut frame[..n]);
            batch[i * seg..(i + 1) * seg].copy_from_slice(&frame[hdr..n]);
            next = next.wrapping_add(1) & PSN_MASK;
        }
        let tx = Transmit {
            destination: dest,
            ecn: None,
            contents: &batch,
            segment_size: Some(seg),
            src_ip: None,
        };
        if state.try_send(sock.into(), &tx).is_ok() {
            sent.packets.fetch_add(GSO as u64, Ordering::Relaxed);
        } else {
            // Not sent (socket buffer full): those PSNs go out again.
            next = next.wrapping_sub(GSO as u32) & PSN_MASK;
        }
    }
}

/// Run `f` on the receiver for `seconds`, with a sender started by `send`; returns the
/// receiver's count per second, the sender's packets per second, and the share of the time
/// the receiver spent in calls that found work (well below 1: the sender was the limit, and
/// count / busy is what the receiver would do alone).
fn phase(
    rnic: &mut SoftRnic,
    seconds: f64,
    send: impl FnOnce(&Sent) + Send,
    mut f: impl FnMut(&mut SoftRnic) -> u64,
) -> (f64, f64, f64) {
    let sent = Sent::default();
    thread::scope(|s| {
        s.spawn(|| send(&sent));
        // Let the sender reach its pace, then count.
        let warm = Instant::now();
        while warm.elapsed() < Duration::from_millis(200) {
            f(rnic);
        }
        let (start, sent0) = (Instant::now(), sent.packets.load(Ordering::Relaxed));
        let (mut count, mut busy) = (0, Duration::ZERO);
        let mut t = Instant::now();
        while t.duration_since(start).as_secs_f64() < seconds {
            let n = f(rnic);
            let t1 = Instant::now();
            if n > 0 {
                count += n;
                busy += t1 - t;
            }
            t = t1;
        }
        let secs = start.elapsed().as_secs_f64();
        let offered = (sent.packets.load(Ordering::Relaxed) - sent0) as f64 / secs;
        sent.stop.store(true, Ordering::Relaxed);
        // Drain what is still queued so the next phase starts empty.
        let idle = Instant::now();
        while idle.elapsed() < Duration::from_millis(100) {
            f(rnic);
        }
        (count as f64 / secs, offered, busy.as_secs_f64() / secs)
    })
}

fn main() {
    let a = args();
    let cfg = CollectorConfig::parse(
        Path::new("bench.toml"),
        &format!(
            "[collector]\nip = \"{COLLECTOR}\"\nmemory = \"pages\"\nicrc = {}\n[keywrite]\nport = 1337\nslots = {SLOTS}\n",
            a.icrc
        ),
    )
    .expect("bench config");
    let (stores, _) = Stores::new(&cfg, 7).expect("memory");
    let mut rnic = SoftRnic::bind(RnicConfig::from_config(&cfg, 7), &stores).expect("bind 127.0.0.81:4791");
    let peer =
        Arc::new(UdpPeer::bind(SENDER, COLLECTOR, Duration::from_secs(1)).expect("bind 127.0.0.82:4791"));

    // Connect while the soft-RNIC serves on this thread.
    let stop = AtomicBool::new(false);
    let (conn, meta) = thread::scope(|s| {
        let p = s.spawn(|| {
            let r = peer.connect(1337, 0x99, 100);
            stop.store(true, Ordering::Relaxed);
            r
        });
        rnic.run(&stop);
        p.join().expect("connect thread")
    })
    .expect("CM connection to the soft-RNIC");
    let at = RemoteAddr { va: meta.va, rkey: meta.rkey };
    pin(a.rx_core);
    let tx_core = a.tx_core;

    let (ceiling, offered_a, busy_a) = phase(
        &mut rnic,
        a.seconds,
        |sent| {
            pin(tx_core);
            // PSNs far from the QP's: never applied even if they were processed.
            sender(&peer, conn.remote_qpn, conn.local_psn ^ 0x80_0000, at, None, sent)
        },
        |r| r.drain() as u64,
    );
    let stats = rnic.stats();
    let (applied, offered_b, busy_b) = phase(
        &mut rnic,
        a.seconds,
        |sent| {
            pin(tx_core);
            sender(&peer, conn.remote_qpn, conn.local_psn, at, Some(a.window), sent)
        },
        |r| {
            let before = stats.writes.load(Ordering::Relaxed);
            r.poll();
            stats.writes.load(Ordering::Relaxed) - before
        },
    );
    let s = stats.snapshot();
    println!(
        "soft-RNIC over UDP (receiver on core {}, sender on core {}, ICRC check {}):",
        a.rx_core,
        a.tx_core,
        if a.icrc { "on" } else { "off" }
    );
    let line = |what: &str, rate: f64, offered: f64, busy: f64| {
        println!(
            "  {what:<44} {:>6.2} M/s  (sender offered {:>5.2} M/s; receiver busy {:>3.0} % of the time: {:>6.2} M/s when busy)",
            rate / 1e6,
            offered / 1e6,
            busy * 100.0,
            rate / busy.max(1e-9) / 1e6
        )
    };
    line("ceiling: datagrams received (drain)", ceiling, offered_a, busy_a);
    line("soft-RNIC: WRITEs applied (poll)", applied, offered_b, busy_b);
    println!(
        "  ratio soft-RNIC / ceiling: {:.2} as measured, {:.2} busy rate to busy rate",
        applied / ceiling,
        (applied / busy_b.max(1e-9)) / (ceiling / busy_a.max(1e-9))
    );
    println!(
        "  counters: writes {}, out of sequence {}, duplicates {}, bad ICRC {}, malformed {}",
        s.writes, s.out_of_sequence, s.duplicates, s.bad_icrc, s.malformed
    );
}
