//! Write a pcap of DTA reports, as a reporter sends them to a translator: what
//! `scripts/bench-dta-dpdk.sh` replays into a translator on DPDK vdevs (`net_pcap`,
//! `infinite_rx=1`), the same reports `benches/dta.rs` sends in memory.
//!
//!     cargo run --release -p dataplane --example dta_reports_pcap -- \
//!         PRIMITIVE COUNT OUT.pcap [TRANSLATOR_MAC] [REPORTER_IP] [COLLECTOR_IP]
//!
//! PRIMITIVE: `keywrite` (N = 2, 4 data bytes), `append` (list 0) or `keyincrement` (N = 2).
//! Frames go from 02:00:00:00:01:02, REPORTER_IP (default 10.0.1.2) UDP 40041, to
//! TRANSLATOR_MAC (default 02:5f:00:00:00:01), COLLECTOR_IP (default 10.0.0.51) UDP 40040, with
//! the long base header (sequence number `i mod 256`, not retransmittable: untracked, so a
//! replayed capture never reads as a gap).

use std::fs::File;
use std::io::BufWriter;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

use anyhow::{Context, bail};
use pcap_file::pcap::{PcapPacket, PcapWriter};
use wire::dta::{DtaRepr, Primitive, Priority, Sequence};
use wire::ethernet::EthernetAddress;
use wire::stack::UdpFlow;

const USAGE: &str = "usage: dta_reports_pcap keywrite|append|keyincrement COUNT OUT.pcap [TRANSLATOR_MAC] [REPORTER_IP] [COLLECTOR_IP]";

/// The reports' primitive, as the in-memory bench sends it.
#[derive(Clone, Copy)]
enum Kind {
    /// Key-Write, N = 2, 4 data bytes.
    KeyWrite,
    /// Append to list 0.
    Append,
    /// Key-Increment, N = 2.
    KeyIncrement,
}

/// What to write, from the command line.
struct Args {
    kind: Kind,
    name: String,
    count: u32,
    out: String,
    flow: UdpFlow,
}

fn main() -> anyhow::Result<()> {
    // A bad argument is a usage error: exit code 2, as the binaries' `check` gives.
    let args = match parse(std::env::args().skip(1).collect()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    };
    write(&args)
}

fn parse(args: Vec<String>) -> anyhow::Result<Args> {
    if args.len() < 3 || args.len() > 6 {
        bail!("{USAGE}");
    }
    let kind = match args[0].as_str() {
        "keywrite" => Kind::KeyWrite,
        "append" => Kind::Append,
        "keyincrement" => Kind::KeyIncrement,
        other => bail!("PRIMITIVE {other:?}: expected keywrite, append or keyincrement\n{USAGE}"),
    };
    let count: u32 = args[1].parse().with_context(|| format!("COUNT {:?}: expected a number", args[1]))?;
    let mac = match args.get(3) {
        Some(s) => {
            EthernetAddress::parse(s).with_context(|| format!("TRANSLATOR_MAC {s:?}: expected a MAC"))?
        }
        None => EthernetAddress([2, 0x5f, 0, 0, 0, 1]),
    };
    let ip = |i: usize, default: Ipv4Addr, what: &str| -> anyhow::Result<Ipv4Addr> {
        args.get(i).map_or(Ok(default), |s| {
            s.parse().with_context(|| format!("{what} {s:?}: expected an IPv4 address"))
        })
    };
    let reporter = ip(4, Ipv4Addr::new(10, 0, 1, 2), "REPORTER_IP")?;
    let collector = ip(5, Ipv4Addr::new(10, 0, 0, 51), "COLLECTOR_IP")?;
    let flow = UdpFlow {
        ident: 1,
        ..UdpFlow::host_udp(
            EthernetAddress([2, 0, 0, 0, 1, 2]),
            mac,
            SocketAddrV4::new(reporter, 40041),
            SocketAddrV4::new(collector, 40040),
        )
    };
    Ok(Args { kind, name: args[0].clone(), count, out: args[2].clone(), flow })
}

fn write(a: &Args) -> anyhow::Result<()> {
    let (out, flow, count) = (&a.out, &a.flow, a.count);
    let file = File::create(out).with_context(|| format!("creating {out}"))?;
    let mut pcap = PcapWriter::new(BufWriter::new(file)).context("writing the pcap header")?;
    let data = [1u8, 2, 3, 4];
    for i in 0..count {
        let seq =
            Some(Sequence { seqnum: i as u8, retransmittable: false, priority: Priority::Low, epoch: 0 });
        let primitive = match a.kind {
            Kind::KeyWrite => Primitive::KeyWrite { redundancy: 2, key: i.wrapping_mul(7919), data: &data },
            Kind::Append => Primitive::Append { list_id: 0, data: i },
            Kind::KeyIncrement => {
                Primitive::KeyIncrement { redundancy: 2, key: i.wrapping_mul(104_729), counter: 1 }
            }
        };
        let r = DtaRepr { immediate: false, seq, primitive };
        let mut report = [0u8; 64];
        let n = r.buffer_len();
        r.emit(&mut report[..n]).map_err(|e| anyhow::anyhow!("report {i}: {e}"))?;
        let mut frame = vec![0u8; roce::dta::report_frame_len(flow, n)];
        if !roce::dta::write_report_frame(flow, &report[..n], &mut frame) {
            bail!("report {i}: the frame does not fit");
        }
        let pkt = PcapPacket::new(Duration::from_micros(u64::from(i)), frame.len() as u32, &frame);
        pcap.write_packet(&pkt).with_context(|| format!("writing {out}"))?;
    }
    println!("{count} {} reports in {out}", a.name);
    Ok(())
}
