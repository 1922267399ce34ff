//! The resolved configuration, every default filled in, as `dataplane check` prints it (the
//! program's own sections follow, printed by the program).

use std::fmt;

use super::{Backend, ClockSource, Config, rate_str};
use crate::tm::{PfcThreshold, QUEUES, QueueSched};

impl fmt::Display for Config {
    /// The resolved configuration, every default filled in.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "# resolved from {}", self.file.display())?;
        writeln!(f, "program = {:?}", self.program)?;
        let r = &self.runtime;
        writeln!(f, "\n[runtime]")?;
        writeln!(f, "lcores = {:?}", r.lcores)?;
        writeln!(f, "burst = {}\npool_buffers = {}\ndataroom = {}", r.burst, r.pool_buffers, r.dataroom)?;
        writeln!(f, "stats_interval_s = {}", r.stats_interval_s)?;
        if let Some(s) = &r.control_socket {
            writeln!(f, "control_socket = {:?}", s.display().to_string())?;
        }
        writeln!(
            f,
            "clock = {:?}",
            match r.clock {
                ClockSource::Realtime => "realtime",
                ClockSource::Pcap => "pcap",
            }
        )?;
        writeln!(f, "max_recirc = {}\npfc_to_program = {}", r.max_recirc, r.pfc_to_program)?;
        writeln!(f, "idle_sleep_max_us = {}", r.idle_sleep_max_us)?;
        let t = &self.tm;
        writeln!(f, "\n[tm]")?;
        writeln!(
            f,
            "buffer_bytes = {}\nreserve_bytes = {}\nheadroom_bytes = {}",
            t.buffer_bytes, t.reserve_bytes, t.headroom_bytes
        )?;
        let lossless: Vec<usize> = (0..QUEUES).filter(|q| t.lossless & (1 << q) != 0).collect();
        writeln!(f, "lossless = {lossless:?}")?;
        match t.pfc {
            PfcThreshold::Static { xoff, xon } => {
                writeln!(f, "pfc = {{ mode = \"static\", xoff = {xoff}, xon = {xon} }}")?
            }
            PfcThreshold::Dynamic { alpha, resume_offset } => writeln!(
                f,
                "pfc = {{ mode = \"dynamic\", alpha = {alpha}, resume_offset = {resume_offset} }}"
            )?,
        }
        writeln!(
            f,
            "pause_quanta = {}\negress_alpha = {}\nmax_packets = {}\nseed = {}",
            t.pause_quanta, t.egress_alpha, t.max_packets, t.seed
        )?;
        writeln!(f, "shared_bytes = {} # derived", t.shared_bytes(self.ports.len()).unwrap_or(0))?;
        for (q, e) in t.ecn.iter().enumerate() {
            if let Some(e) = e {
                writeln!(
                    f,
                    "ecn = [{{ queue = {q}, kmin = {}, kmax = {}, pmax = {} }}]",
                    e.kmin, e.kmax, e.pmax
                )?;
            }
        }
        if let Some(d) = &self.dpdk {
            write!(f, "\n{d}")?;
        }
        for (i, p) in self.ports.iter().enumerate() {
            writeln!(f, "\n[[port]] # id {i}")?;
            writeln!(f, "name = {:?}", p.name)?;
            match &p.backend {
                Backend::AfPacket { iface } => writeln!(f, "backend = \"af_packet\"\niface = {iface:?}")?,
                Backend::Pcap { rx, tx } => {
                    writeln!(f, "backend = \"pcap\"")?;
                    if let Some(rx) = rx {
                        writeln!(f, "rx = {:?}", rx.display().to_string())?;
                    }
                    if let Some(tx) = tx {
                        writeln!(f, "tx = {:?}", tx.display().to_string())?;
                    }
                }
                Backend::Ring => writeln!(f, "backend = \"ring\"")?,
                Backend::Udp { bind, listen } => {
                    writeln!(f, "backend = \"udp\"\nbind = \"{bind}\"\nudp_ports = {listen:?}")?
                }
                Backend::Dpdk { device } => writeln!(f, "backend = \"dpdk\"\ndevice = {device:?}")?,
            }
            writeln!(f, "mac = \"{}\"", p.mac)?;
            writeln!(
                f,
                "speed = \"{}\"\nshape = \"{}\"",
                rate_str(p.tm.speed_bps),
                rate_str(p.tm.shape_bps)
            )?;
            writeln!(f, "overhead_bytes = {}\nburst_bytes = {}", p.tm.overhead_bytes, p.tm.burst_bytes)?;
            let sched: Vec<String> =
                p.tm.sched
                    .iter()
                    .map(|s| match s {
                        QueueSched::Strict(l) => format!("strict:{l}"),
                        QueueSched::Dwrr(w) => format!("dwrr:{w}"),
                    })
                    .collect();
            writeln!(f, "sched = {sched:?}")?;
            let ips: Vec<String> = p.ipv4.iter().map(|(a, l)| format!("{a}/{l}")).collect();
            writeln!(f, "ipv4 = {ips:?}")?;
        }
        Ok(())
    }
}
