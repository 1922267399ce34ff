//! The translator's words to reporters: NACKs (a gap, a slow-down, a sketch column out of
//! order) built in place of the report or as a packet of their own, holes NACKed again in turn,
//! and the per-reporter pacing of notifications.

use super::translate::reporter_key;
use super::*;

impl DtaTranslator {
    /// The Ethernet/IPv4/UDP addressing of a DTA NACK answering the report `report` (a frame):
    /// its addresses swapped, to the reporter's NACK port; and the reporter's key.
    pub(super) fn nack_flow(report: &[u8]) -> Option<(UdpFlow, u64)> {
        let eth = EthernetFrame::new_checked(report).ok()?;
        let ip = Ipv4Packet::new_checked(&report[eth.header_len()..]).ok()?;
        let udp = UdpPacket::new_checked(ip.payload()).ok()?;
        let key = reporter_key(ip.src_addr(), udp.src_port());
        let flow = UdpFlow {
            vlan: eth.vlan(),
            dscp: ip.dscp(),
            ..UdpFlow::host_udp(
                eth.dst_addr(),
                eth.src_addr(),
                SocketAddrV4::new(ip.dst_addr(), udp.dst_port()),
                SocketAddrV4::new(ip.src_addr(), NACK_PORT),
            )
        };
        Some((flow, key))
    }

    /// Write NACK `r` over `flow` into `f`.
    pub(super) fn write_nack<F: Frame>(f: &mut F, flow: &UdpFlow, r: &NackRepr) -> bool {
        f.reset();
        let n = r.buffer_len();
        f.append(wire::ethernet::MIN_FRAME_LEN.max(flow.headers_len() + n)).is_some_and(|b| {
            b.fill(0);
            flow.emit_with(n, false, b, |p| r.emit(p)).is_ok()
        })
    }

    pub(super) fn count_nack(&mut self, r: &NackRepr) {
        if r.nack {
            self.stats.nacks += 1;
        }
        if r.slow_down {
            self.stats.slow_downs += 1;
        }
    }

    /// Turn `pkt` (a report) into the DTA NACK `r` back to its reporter.
    pub(super) fn make_nack<F: Frame>(&mut self, pkt: &mut F, md: &mut IngressMd, r: NackRepr) {
        let Some((flow, _)) = Self::nack_flow(pkt.data()) else {
            return md.dest = Dest::Drop(builtin::MALFORMED);
        };
        if !Self::write_nack(pkt, &flow, &r) {
            return md.dest = Dest::Drop(builtin::MALFORMED);
        }
        self.count_nack(&r);
        md.dest = Dest::Port(md.ingress_port);
        md.qid = 7;
    }

    /// Send the DTA NACK `r` answering the report `report` (a frame) in a packet of its own,
    /// out of the port the report came in on.
    #[cold]
    pub(super) fn send_nack<F: Frame>(
        &mut self,
        report: &[u8],
        port: PortId,
        r: NackRepr,
        out: &mut Emitter<'_, F>,
    ) {
        let Some((flow, key)) = Self::nack_flow(report) else { return };
        if out.emit(Dest::Port(port), 7, |f| Self::write_nack(f, &flow, &r)) {
            self.count_nack(&r);
        }
        // A gap: the reporter's way back, for the timer to ask again (bounded by the table).
        if matches!(r.ext, Some(NackExt::Reports { .. }))
            && self.holes.len() < self.reporters.capacity()
            && !self.holes.iter().any(|h| h.0 == key)
        {
            self.holes.push((key, port, flow));
        }
    }

    /// The timer's turn: for each reporter with numbers missing, NACK the next run again
    /// (paced as on arrivals), or, if it has been silent for `HOLE_GIVE_UP_NS`, count them
    /// lost. Reporters with none left are forgotten.
    pub(super) fn renack_holes<F: Frame>(&mut self, now: u64, out: &mut Emitter<'_, F>) {
        let interval = self.s.nack_interval_ns;
        let mut i = 0;
        while i < self.holes.len() {
            let (key, port, flow) = self.holes[i];
            let Some(t) = self.reporters.lookup_mut(&key) else {
                self.holes.swap_remove(i);
                continue;
            };
            if t.missing() == 0 {
                self.holes.swap_remove(i);
                continue;
            }
            if now.saturating_sub(t.last_heard) >= HOLE_GIVE_UP_NS {
                self.stats.unrecoverable(t.columns, t.give_up());
                self.holes.swap_remove(i);
                continue;
            }
            if let Some((first, count)) = t.renack(now, interval) {
                let r = NackRepr {
                    seqnum: first.wrapping_sub(1),
                    nack: true,
                    slow_down: false,
                    ext: Some(NackExt::Reports { count, epoch: t.epoch }),
                };
                if out.emit(Dest::Port(port), 7, |f| Self::write_nack(f, &flow, &r)) {
                    self.count_nack(&r);
                }
            }
            i += 1;
        }
    }

    /// Whether a message to reporter `src`:`src_port` may go now (paced per reporter).
    pub(super) fn notify_ok(&mut self, src: Ipv4Addr, src_port: u16, now: u64) -> bool {
        self.pace(src, src_port, now, ReporterSeq::may_notify)
    }

    /// Whether a slow-down message for a refused report may go to `src`:`src_port` now
    /// ([`ReporterSeq::may_slow_down`]).
    pub(super) fn slow_down_ok(&mut self, src: Ipv4Addr, src_port: u16, now: u64) -> bool {
        self.pace(src, src_port, now, ReporterSeq::may_slow_down)
    }

    fn pace(
        &mut self,
        src: Ipv4Addr,
        src_port: u16,
        now: u64,
        may: fn(&mut ReporterSeq, u64, u64) -> bool,
    ) -> bool {
        let key = reporter_key(src, src_port);
        let interval = self.s.nack_interval_ns;
        match self.reporters.lookup_mut(&key) {
            Some(t) => may(t, now, interval),
            None => {
                let mut t = self.new_reporter(now);
                let ok = may(&mut t, now, interval);
                let _ = self.reporters.insert(key, t);
                ok
            }
        }
    }
}
