//! Packets a program emits: they leave after the packet that caused them, in the order they
//! were emitted; their buffers come from the pool through the switch's small cache, which
//! never takes the buffers receiving needs and gives everything back at shutdown.

#[macro_use]
#[path = "support/program.rs"]
mod program;

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::model::{DropReasons, Resources};
use dataplane::switch::{Dest, Emitter, IngressMd, McastGroups, Program, Switch, SwitchOptions};
use dataplane::tm::{PortTmConfig, TmConfig, TrafficManager};
use wire::ethernet::EthernetAddress;

/// Forwards every frame from port 0 to port 1 and emits byte 14 of it more copies, numbered
/// in byte 15.
struct Echo {
    resources: Resources,
}

impl Program for Echo {
    type Command = ();

    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, out: &mut Emitter<'_, F>) {
        let copies = pkt.data()[14];
        for i in 1..=copies {
            let d = pkt.data();
            out.emit(Dest::Port(1), 0, |f| {
                f.set(d) && {
                    f.data_mut()[15] = i;
                    true
                }
            });
        }
        md.dest = Dest::Port(1);
    }

    no_commands!();
}

fn switch() -> Switch<Echo, PktBuf> {
    let ports =
        (0..2u8).map(|i| PortTmConfig::new(10_000_000_000, EthernetAddress([2, 0, 0, 0, 0, i]))).collect();
    let tm = TrafficManager::new(TmConfig::default(), ports).unwrap();
    Switch::new(
        Echo { resources: Resources::new() },
        DropReasons::new(),
        McastGroups::default(),
        tm,
        SwitchOptions::default(),
    )
}

fn frame(pool: &mut HeapPool, copies: u8, seq: u8) -> Option<PktBuf> {
    let mut b = pool.alloc()?;
    let d = b.append(64).unwrap();
    d.fill(0);
    d[14] = copies;
    d[16] = seq;
    Some(b)
}

#[test]
fn emitted_packets_follow_their_cause_in_order_and_every_buffer_comes_back() {
    let mut sw = switch();
    let mut pool = HeapPool::new(4096, 256);
    let mut out = Vec::new();
    let mut sent = Vec::new();
    for seq in 0..200u8 {
        let f = frame(&mut pool, seq % 5, seq).unwrap();
        sw.receive(u64::from(seq), 0, f, &mut pool);
        sw.transmit(u64::from(seq), 1, &mut out, 64, &mut pool);
        for f in out.drain(..) {
            sent.push((f.data()[16], f.data()[15]));
            pool.free(f);
        }
    }
    let expect: Vec<(u8, u8)> = (0..200u8).flat_map(|s| (0..=s % 5).map(move |i| (s, i))).collect();
    assert_eq!(sent, expect);
    sw.drain_all(&mut pool);
    assert_eq!(pool.available(), 4096);
}

#[test]
fn a_small_pool_keeps_buffers_for_receiving() {
    let mut sw = switch();
    let mut pool = HeapPool::new(8, 256);
    let mut out = Vec::new();
    // Bursts of three frames, each emitting one copy: six of the eight buffers in use at once,
    // all back in the pool after transmit.
    for seq in 0..100u8 {
        for i in 0..3 {
            let f = frame(&mut pool, 1, seq).unwrap_or_else(|| panic!("burst {seq}, frame {i}: no buffer"));
            sw.receive(u64::from(seq), 0, f, &mut pool);
        }
        assert_eq!(sw.transmit(u64::from(seq), 1, &mut out, 64, &mut pool), 6);
        for f in out.drain(..) {
            pool.free(f);
        }
    }
    assert_eq!(sw.counters().drops.iter().sum::<u64>(), 0);
    sw.drain_all(&mut pool);
    assert_eq!(pool.available(), 8);
}
