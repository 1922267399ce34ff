//! `macswap`: what `dpdk-testpmd --forward-mode=macswap` does, as a switch program.
//!
//! Ingress swaps the source and destination MAC addresses and sends the frame out of the paired
//! port, as testpmd's default "paired" port topology does: 0↔1, 2↔3, …; with an odd number of
//! ports the last one sends back out of itself. It exists to measure what the switch itself
//! costs over a bare DPDK forwarding loop (`scripts/bench-dpdk.sh` runs both on the same lcore
//! and vdevs), and as the smallest complete program to read.

mod p4;

use crate::buf::Frame;
use crate::config::{Config, ConfigError};
use crate::model::{Next, ParserDecl, Resources, StateDecl, builtin, inst};
use crate::programs::{BuildCtx, FromConfig};
use crate::switch::{Dest, Emitter, IngressMd, PortId, Program};

/// The `macswap` program.
#[derive(Debug)]
pub struct MacSwap {
    ports: PortId,
    resources: Resources,
}

impl MacSwap {
    /// For a switch with `ports` front-panel ports.
    pub fn new(ports: PortId) -> Self {
        let mut resources = Resources::new();
        resources.set_parser(Self::parser());
        Self { ports, resources }
    }

    /// Its parser: the Ethernet header, whose addresses it swaps; nothing else is read.
    pub fn parser() -> ParserDecl {
        ParserDecl {
            states: vec![StateDecl::new(
                "start",
                &[inst("ethernet", &wire::ethernet::HEADER)],
                &[],
                &[],
                Next::Accept,
            )],
        }
    }

    /// The port a frame received on `port` leaves by.
    #[inline]
    pub fn peer(&self, port: PortId) -> PortId {
        let p = port ^ 1;
        if p < self.ports { p } else { port }
    }
}

impl FromConfig for MacSwap {
    const NAME: &'static str = "macswap";
    const ABOUT: &'static str = "testpmd's macswap: swap MACs, send out of the paired port";
    const SECTIONS: &'static [&'static str] = &[];

    fn from_config(cfg: &Config, _ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        Ok(Self::new(cfg.ports.len() as PortId))
    }

    fn p4(&self, _cfg: &Config) -> Result<crate::p4::ProgramP4, crate::p4::ExportError> {
        Ok(p4::rendering(self.ports))
    }
}

/// `macswap` has no tables; the only control command is `show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Show;

impl Program for MacSwap {
    type Command = Show;

    #[inline(always)]
    fn ingress<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, _out: &mut Emitter<'_, F>) {
        if md.ingress_port >= self.ports {
            // Nothing the CPU sends is forwarded.
            md.dest = Dest::Drop(builtin::PROGRAM);
            return;
        }
        // The two addresses, where wire's Ethernet specification puts them: dst then src.
        const _: () = assert!(
            wire::ethernet::field::DST_ADDR.byte() == 0 && wire::ethernet::field::SRC_ADDR.byte() == 6
        );
        let Some(h) = pkt.data_mut().first_chunk_mut::<12>() else {
            md.dest = Dest::Drop(builtin::MALFORMED);
            return;
        };
        let (dst, src) = h.split_at_mut(6);
        dst.swap_with_slice(src);
        md.dest = Dest::Port(self.peer(md.ingress_port));
    }

    /// No egress control.
    #[inline(always)]
    fn has_egress(&self) -> bool {
        false
    }

    /// No timers.
    fn tick_interval(&self) -> Option<u64> {
        None
    }

    fn control(&mut self, _cmd: Show, _now: u64) -> Result<String, String> {
        let pairs: Vec<String> = (0..self.ports).map(|p| format!("{p}->{}", self.peer(p))).collect();
        Ok(format!("macswap, ports {}", pairs.join(" ")))
    }

    fn parse_command(line: &str, _ports: &[String]) -> Result<Show, String> {
        match line.trim() {
            "show" => Ok(Show),
            other => Err(format!("unknown command {other:?}; macswap has no tables, only: show")),
        }
    }

    fn resources(&self) -> &Resources {
        &self.resources
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::{HeapPool, PktBuf};
    use crate::switch::{McastGroups, Switch, SwitchOptions};
    use crate::tm::{PortTmConfig, TmConfig, TrafficManager};
    use wire::EthernetAddress;

    #[test]
    fn swaps_and_pairs() {
        let tm = TrafficManager::new(
            TmConfig::default(),
            vec![PortTmConfig::new(10_000_000_000, EthernetAddress([2, 0, 0, 0, 0, 1])); 3],
        )
        .unwrap();
        let mut sw: Switch<MacSwap, PktBuf> = Switch::new(
            MacSwap::new(3),
            crate::model::DropReasons::new(),
            McastGroups::default(),
            tm,
            SwitchOptions::default(),
        );
        let mut pool = HeapPool::new(16, 256);
        let mut frame = [0u8; 60];
        frame[..6].copy_from_slice(&[1; 6]);
        frame[6..12].copy_from_slice(&[2; 6]);
        frame[12] = 0x08;
        for (inp, outp) in [(0u16, 1u16), (1, 0), (2, 2)] {
            sw.receive(0, inp, PktBuf::from_bytes(&frame), &mut pool);
            let mut out = Vec::new();
            assert_eq!(sw.transmit(0, outp, &mut out, 32, &mut pool), 1, "{inp} -> {outp}");
            assert_eq!(&out[0].data()[..6], &[2; 6]);
            assert_eq!(&out[0].data()[6..12], &[1; 6]);
            assert_eq!(&out[0].data()[12..], &frame[12..]);
        }
        // What it swapped is what its declared parser calls the addresses.
        let p = sw.program().resources().parser().clone();
        let (dst, src) = (
            crate::model::FieldRef::hdr("ethernet", &wire::ethernet::field::DST_ADDR),
            crate::model::FieldRef::hdr("ethernet", &wire::ethernet::field::SRC_ADDR),
        );
        sw.receive(0, 0, PktBuf::from_bytes(&frame), &mut pool);
        let mut out = Vec::new();
        sw.transmit(0, 1, &mut out, 32, &mut pool);
        let (a, b) = (p.run(&frame).unwrap(), p.run(out[0].data()).unwrap());
        assert_eq!(b.get(out[0].data(), &dst), a.get(&frame, &src));
        assert_eq!(b.get(out[0].data(), &src), a.get(&frame, &dst));
        // A runt is dropped as malformed.
        sw.receive(0, 0, PktBuf::from_bytes(&frame[..11]), &mut pool);
        assert_eq!(sw.counters().drops[usize::from(builtin::MALFORMED.0)], 1);
        assert!(MacSwap::parse_command("route add", &[]).is_err());
    }
}
