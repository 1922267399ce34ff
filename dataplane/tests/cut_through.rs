//! Cut-through: a packet for an idle egress port leaves at once instead of waiting in the TM
//! for the next transmit step. What users rely on:
//!
//! * the same packets leave, in the same order per queue, with the same TM counters, whether
//!   cut-through is on or off;
//! * a packet that cut through saw an empty queue (`enq_qdepth` 0), as on an idle port;
//! * a shaped port still sends at its rate, and a paused priority never cuts through.

#[macro_use]
#[path = "support/program.rs"]
mod program;

use dataplane::buf::{Frame, HeapPool, PktBuf, Pool};
use dataplane::model::{DropReasons, Resources};
use dataplane::switch::{Dest, EgressMd, Emitter, IngressMd, McastGroups, Program, Switch, SwitchOptions};
use dataplane::tm::{PortTmConfig, TmConfig, TrafficManager};
use wire::ethernet::EthernetAddress;
use wire::pfc::{MacControlRepr, PfcRepr};

/// Byte 0 of the payload names the egress port, byte 1 the queue; egress writes the TM's
/// enqueue depth into bytes 2..10 and the port's tx byte count into bytes 10..18.
struct Stamp {
    resources: Resources,
    /// What `has_egress` answers (its egress stamps either way, so a skipped egress shows).
    egress: bool,
}

impl Program for Stamp {
    type Command = ();

    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, _out: &mut Emitter<'_, F>) {
        let d = pkt.data();
        md.dest = Dest::Port(u16::from(d[14]));
        md.qid = d[15];
    }

    fn egress<F: Frame>(&mut self, pkt: &mut F, md: &mut EgressMd) {
        let d = pkt.data_mut();
        d[16..24].copy_from_slice(&md.deq.enq_qdepth.to_be_bytes());
        d[24..32].copy_from_slice(&md.tx_bytes.to_be_bytes());
    }

    fn has_egress(&self) -> bool {
        self.egress
    }

    no_commands!();
}

fn switch(cut_through: bool, shape_bps: u64) -> (Switch<Stamp, PktBuf>, HeapPool) {
    switch_with(cut_through, shape_bps, true)
}

fn switch_with(cut_through: bool, shape_bps: u64, egress: bool) -> (Switch<Stamp, PktBuf>, HeapPool) {
    let mut ports = Vec::new();
    for i in 0..3u8 {
        let mut p = PortTmConfig::new(10_000_000_000, EthernetAddress([2, 0, 0, 0, 0, i]));
        p.shape_bps = shape_bps;
        ports.push(p);
    }
    let tm = TrafficManager::new(TmConfig { buffer_bytes: 64 << 20, ..TmConfig::default() }, ports).unwrap();
    let opts = SwitchOptions { cut_through, ..SwitchOptions::default() };
    let sw = Switch::new(
        Stamp { resources: Resources::new(), egress },
        DropReasons::new(),
        McastGroups::default(),
        tm,
        opts,
    );
    (sw, HeapPool::new(8192, 2048))
}

fn frame(pool: &mut HeapPool, port: u8, qid: u8, len: usize, seq: u32) -> PktBuf {
    let mut b = pool.alloc().unwrap();
    let d = b.append(len).unwrap();
    d.fill(0);
    d[14] = port;
    d[15] = qid;
    d[32..36].copy_from_slice(&seq.to_be_bytes());
    b
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Per egress port, the frames sent: (sequence number, enqueue depth, tx bytes).
type Sent = Vec<Vec<(u32, u64, u64)>>;

/// Random bursts from port 0 to ports 1 and 2, one queue each; transmit after every burst.
/// Returns, per egress port, the frames sent (sequence number, enq depth, tx bytes).
fn run(cut_through: bool) -> (Sent, [(u64, u64); 3]) {
    run_with(cut_through, true)
}

fn run_with(cut_through: bool, egress: bool) -> (Sent, [(u64, u64); 3]) {
    let (mut sw, mut pool) = switch_with(cut_through, 0, egress);
    let mut rng = Rng(42);
    let mut out = vec![Vec::new(); 3];
    let mut seq = 0;
    let mut now = 0;
    for _ in 0..2000 {
        for _ in 0..rng.next() % 40 {
            let port = 1 + (rng.next() % 2) as u8;
            let f = frame(&mut pool, port, port, 64 + (rng.next() % 1400) as usize, seq);
            seq += 1;
            sw.receive(now, 0, f, &mut pool);
        }
        for port in 1..3u16 {
            let mut v = Vec::new();
            // A transmit burst smaller than some arrival bursts: queues build in the TM.
            while sw.transmit(now, port, &mut v, 16, &mut pool) > 0 {
                for f in v.drain(..) {
                    let d = f.data();
                    let get = |r: std::ops::Range<usize>| u64::from_be_bytes(d[r].try_into().unwrap());
                    out[usize::from(port)].push((
                        u32::from_be_bytes(d[32..36].try_into().unwrap()),
                        get(16..24),
                        get(24..32),
                    ));
                    pool.free(f);
                }
                if rng.next().is_multiple_of(3) {
                    break;
                }
            }
        }
        now += 1000;
    }
    let tx = [0, 1, 2].map(|p| sw.tm().tx_counters(p));
    (out, tx)
}

#[test]
fn same_packets_same_order_same_counters() {
    let (on, tx_on) = run(true);
    let (off, tx_off) = run(false);
    for port in 1..3 {
        let seq_on: Vec<u32> = on[port].iter().map(|x| x.0).collect();
        let seq_off: Vec<u32> = off[port].iter().map(|x| x.0).collect();
        assert!(seq_on.len() > 1000, "port {port} sent {}", seq_on.len());
        assert_eq!(seq_on, seq_off, "port {port}: order");
        // The tx byte count a packet sees is the same: it is the bytes sent before it, plus it.
        let txb_on: Vec<u64> = on[port].iter().map(|x| x.2).collect();
        let txb_off: Vec<u64> = off[port].iter().map(|x| x.2).collect();
        assert_eq!(txb_on, txb_off, "port {port}: tx bytes");
    }
    assert_eq!(tx_on, tx_off);
    // With cut-through, some packets found their port idle and saw an empty queue; the others
    // queued behind packets still in the TM, as without it.
    let idle = on[1].iter().filter(|x| x.1 == 0).count();
    let idle_off = off[1].iter().filter(|x| x.1 == 0).count();
    assert!(idle > idle_off, "cut-through: {idle} saw an empty queue; queued: {idle_off}");
}

#[test]
fn a_program_without_egress_skips_it_and_the_tm_counts_the_same() {
    let (with, tx_with) = run(true);
    for cut_through in [true, false] {
        let (without, tx_without) = run_with(cut_through, false);
        for port in 1..3 {
            let seq_with: Vec<u32> = with[port].iter().map(|x| x.0).collect();
            let seq_without: Vec<u32> = without[port].iter().map(|x| x.0).collect();
            assert_eq!(seq_with, seq_without, "port {port}: order");
            // Neither a packet that cut through nor one the TM queued ran egress.
            assert!(without[port].iter().all(|x| x.1 == 0 && x.2 == 0), "port {port}: stamped");
        }
        assert_eq!(tx_with, tx_without, "cut-through {cut_through}");
    }
}

#[test]
fn shaped_port_keeps_its_rate() {
    let rate = 2_000_000_000u64;
    let (mut sw, mut pool) = switch(true, rate);
    let (mut now, mut bits, mut seq) = (0u64, 0u64, 0u32);
    let mut rng = Rng(7);
    let mut v = Vec::new();
    while now < 5_000_000 {
        // Keep about 30 packets in flight towards port 1.
        while sw.tm().queue_packets(1, 1) < 30 {
            let f = frame(&mut pool, 1, 1, 64 + (rng.next() % 1400) as usize, seq);
            seq += 1;
            sw.receive(now, 0, f, &mut pool);
        }
        sw.transmit(now, 1, &mut v, 32, &mut pool);
        for f in v.drain(..) {
            bits += f.len() as u64 * 8;
            pool.free(f);
        }
        now += 500;
    }
    let measured = bits as f64 / (now as f64 / 1e9);
    assert!((measured / rate as f64 - 1.0).abs() < 0.01, "measured {measured:.0} b/s for {rate}");
}

#[test]
fn paused_priority_never_cuts_through() {
    let (mut sw, mut pool) = switch(true, 0);
    let mut pause = pool.alloc().unwrap();
    let b = pause.append(60).unwrap();
    wire::pfc::emit_frame(
        EthernetAddress([2, 0, 0, 0, 0, 9]),
        &MacControlRepr::Pfc(PfcRepr::pause(1 << 2, 100)),
        b,
    )
    .unwrap();
    sw.receive(0, 2, pause, &mut pool);
    let f = frame(&mut pool, 2, 2, 100, 1);
    sw.receive(10, 0, f, &mut pool);
    let f = frame(&mut pool, 2, 5, 100, 2);
    sw.receive(10, 0, f, &mut pool);
    let mut v = Vec::new();
    // Only the queue-5 packet leaves while priority 2 is paused (100 quanta at 10 Gb/s: 5.12 µs).
    assert_eq!(sw.transmit(20, 2, &mut v, 32, &mut pool), 1);
    assert_eq!(v[0].data()[15], 5);
    v.clear();
    assert_eq!(sw.transmit(5_119, 2, &mut v, 32, &mut pool), 0);
    assert_eq!(sw.transmit(5_120, 2, &mut v, 32, &mut pool), 1);
    assert_eq!(v[0].data()[15], 2);
}
