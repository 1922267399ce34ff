//! The translator's side of RDMA: the collectors' responses and CM MADs, the queue pairs' connection, metadata, reset and retransmission.

use super::*;

impl DtaTranslator {
    /// A RoCEv2 packet for the translator (from a collector); `l3` is the IPv4 header's offset.
    pub(super) fn on_roce<F: Frame>(
        &mut self,
        pkt: &mut F,
        md: &mut IngressMd,
        out: &mut Emitter<'_, F>,
        src: Ipv4Addr,
        l3: usize,
        l4: usize,
    ) {
        let now = md.ingress_ts;
        let data = pkt.data();
        let ip_len = Ipv4Packet::new_unchecked(&data[l3..]).total_len() as usize;
        let ip = &data[l3..(l3 + ip_len).min(data.len())];
        if icrc::verify(ip).is_err() {
            return md.dest = Dest::Drop(self.drops.roce_bad_icrc);
        }
        let Ok(r) = RoceRepr::parse(&data[l4.min(l3 + ip.len())..l3 + ip.len()]) else {
            return md.dest = Dest::Drop(self.drops.roce_malformed);
        };
        md.dest = Dest::Consume;
        if frames::is_cm_mad(&r) {
            let Ok(mad) = CmMadRepr::parse(r.payload) else {
                return md.dest = Dest::Drop(self.drops.roce_malformed);
            };
            self.on_mad(now, src, &mad, out);
            return;
        }
        let qpn = r.bth.dest_qp;
        let Some(qi) = qpn.checked_sub(QPN_BASE).map(|i| i as usize).filter(|&i| i < self.qps.len()) else {
            return md.dest = Dest::Drop(self.drops.unknown_qp);
        };
        if self.qps[qi].peer != src || self.qps[qi].phase == Phase::Connecting {
            return md.dest = Dest::Drop(self.drops.unknown_qp);
        }
        match r.bth.opcode {
            Opcode::RC_ACKNOWLEDGE | Opcode::RC_ATOMIC_ACKNOWLEDGE => {
                let Some(aeth) = r.ext.aeth else { return md.dest = Dest::Drop(self.drops.roce_malformed) };
                self.stats.acks += 1;
                match self.qps[qi].req.handle_packet(now, &r.bth, &aeth) {
                    Response::Fatal(e) => {
                        self.qps[qi].poisoned = true;
                        self.reset(qi, now, ConnectError::Disconnected, &format!("{e}"), out)
                    }
                    Response::Retransmit { .. } | Response::RnrWait { .. } => {
                        self.back_off(self.qps[qi].collector, now);
                        self.resend(qi, now, out)
                    }
                    Response::Acked { .. } | Response::Ignored => {}
                }
            }
            Opcode::RC_SEND_ONLY | Opcode::RC_SEND_ONLY_WITH_IMMEDIATE => {
                let q = &mut self.qps[qi];
                let o = q.resp.handle_packet(
                    r.bth.opcode,
                    r.bth.psn,
                    r.bth.ack_req,
                    &r.ext,
                    r.payload,
                    &mut NoMemory,
                );
                if let Some(ack) = frames::reply(q.req.dest_qp(), &o.reply) {
                    let q = &self.qps[qi];
                    if let Some(h) = q.hop {
                        out.emit(Dest::Port(h.port), 7, |f| q.build_repr(f, ack));
                    }
                }
                if let Delivery::Send { data, .. } = o.delivery {
                    self.on_metadata(qi, now, data);
                }
            }
            _ => md.dest = Dest::Drop(self.drops.roce_malformed),
        }
    }

    /// The collector's metadata SEND on QP `qi`.
    ///
    /// The same region as before (a reconnection to a collector that kept its memory): the
    /// Append head stays where it was (a first connection — this translator restarted — takes
    /// the collector's head from a 24-byte metadata), and the requests the lost connection left unacknowledged
    /// are posted again (WRITEs; atomics have an unknown outcome). Another region (a restarted
    /// collector): lists start at 0 in it, and those requests are counted lost.
    pub(super) fn on_metadata(&mut self, qi: usize, now: u64, data: &[u8]) {
        let q = &mut self.qps[qi];
        let Some((meta, head)) = Metadata::decode_with_head(data) else {
            tracing::warn!(qp = %q.name, len = data.len(), "a SEND that is not the 16- or 24-byte metadata");
            return;
        };
        // The collector sent on the QP: it has the connection, no more RTU copies.
        q.cm.confirm();
        if q.phase == Phase::Ready && meta == q.meta {
            return;
        }
        let same_region = meta == q.meta;
        if !same_region {
            // A new region: what was written to the old one is gone with it (the collector
            // restarted), the unacknowledged requests included.
            if q.region_entries > 0 {
                tracing::warn!(qp = %q.name, entries = q.region_entries, "the collector offers a new region: the old one's data is counted lost");
            }
            self.stats.region_lost_entries += q.region_entries;
            q.region_entries = 0;
        }
        q.meta = meta;
        q.slots = q.slots_for(meta.len);
        let slots = q.slots;
        if let Store::Append { batcher, marks, .. } = &mut q.store {
            let word = head.unwrap_or(0);
            *marks = word & dta::layout::RING_MARKS != 0;
            if !same_region {
                batcher.set_region(slots, word & !dta::layout::RING_MARKS);
            }
        }
        if slots == 0 {
            tracing::warn!(qp = %q.name, len = meta.len, "the collector's region holds no slot");
            return;
        }
        q.phase = Phase::Ready;
        q.since = now;
        q.build_templates();
        tracing::info!(qp = %q.name, va = meta.va, len = meta.len, rkey = meta.rkey, slots, same_region, "collector region ready");
        self.adopt_orphans(qi, now);
    }

    /// Replay or count what QP `qi`'s previous connection left unacknowledged.
    fn adopt_orphans(&mut self, qi: usize, now: u64) {
        let q = &mut self.qps[qi];
        let Some((old, region)) = q.orphans.take() else { return };
        let replay = region == q.meta && !q.poisoned;
        q.poisoned = false;
        let (mut replayed, mut lost, mut entries) = (0u64, 0u64, 0u64);
        let (mut unknown, mut unknown_entries) = (0u64, 0u64);
        // What the replays carry is as old as the oldest of them (for the streams' progress).
        let born = old.oldest_born().unwrap_or(now);
        for (op, payload) in old.outstanding_requests() {
            if replay && !op.is_atomic() && q.req.post(now, op, payload, false).is_ok() {
                q.req.backdate_last(born);
                replayed += 1;
            } else if replay && op.is_atomic() {
                // Applied with only its ACK lost, or never: nobody can tell, and it is not
                // sent twice.
                unknown += 1;
                unknown_entries += q.entries_in(&op, payload);
            } else {
                lost += 1;
                // In another region, counted with that region's data already.
                if replay {
                    entries += q.entries_in(&op, payload);
                }
            }
        }
        q.req.rewind(now);
        if lost > 0 {
            tracing::warn!(qp = %q.name, lost, entries, "requests of the lost connection given up (counted lost)");
        }
        if unknown > 0 {
            tracing::warn!(qp = %q.name, unknown, "atomics of the lost connection unacknowledged: outcome unknown");
        }
        self.stats.replayed += replayed;
        self.stats.lost_requests += lost;
        self.stats.lost_entries += entries;
        self.stats.unknown_requests += unknown;
        self.stats.unknown_entries += unknown_entries;
    }

    /// Count QP `qi`'s unacknowledged requests lost and forget them, with what it holds
    /// unwritten: a partial Append batch that found no room, postcards of partial paths (the
    /// translator stops).
    fn abandon(&mut self, qi: usize) {
        let q = &mut self.qps[qi];
        let (mut lost, mut entries) = (0u64, q.store.held());
        let (mut unknown, mut unknown_entries) = (0u64, 0u64);
        let olds = q.orphans.take().map(|(r, _)| r);
        for r in [Some(&q.req), olds.as_ref()].into_iter().flatten() {
            for (op, payload) in r.outstanding_requests() {
                if op.is_atomic() {
                    unknown += 1;
                    unknown_entries += q.entries_in(&op, payload);
                } else {
                    lost += 1;
                    entries += q.entries_in(&op, payload);
                }
            }
        }
        self.stats.lost_requests += lost;
        self.stats.lost_entries += entries;
        self.stats.unknown_requests += unknown;
        self.stats.unknown_entries += unknown_entries;
    }

    /// A NAK or timeout from collector `c`: halve its rate (at most once per millisecond, down
    /// to 1/16 of the configured), so the translator stops feeding the loss it caused; it is
    /// restored 1/16 per millisecond without another (`restore_rate`). Unmetered collectors
    /// have no rate to cut.
    fn back_off(&mut self, c: usize, now: u64) {
        let col = &mut self.collectors[c];
        if !col.metered || col.share <= 1 || now.saturating_sub(col.last_cut) < 1_000_000 {
            return;
        }
        col.share = (col.share / 2).max(1);
        col.last_cut = now;
        col.last_step = now;
        self.stats.rate_cuts += 1;
        let r = scaled(col.rate, col.share);
        self.meters.set_rates(c, r, now);
    }

    /// Give collector `c` back 1/16 of its rate per millisecond since the last cut or step.
    fn restore_rate(&mut self, c: usize, now: u64) {
        let col = &mut self.collectors[c];
        if !col.metered || col.share >= 16 || now.saturating_sub(col.last_step) < 1_000_000 {
            return;
        }
        col.share += 1;
        col.last_step = now;
        let r = scaled(col.rate, col.share);
        self.meters.set_rates(c, r, now);
    }

    /// A CM MAD from `src`.
    pub(super) fn on_mad<F: Frame>(
        &mut self,
        now: u64,
        src: Ipv4Addr,
        mad: &CmMadRepr,
        out: &mut Emitter<'_, F>,
    ) {
        for qi in 0..self.qps.len() {
            if self.qps[qi].peer != src {
                continue;
            }
            let o = self.qps[qi].cm.handle_packet(now, mad);
            if o.send.is_none() && o.event.is_none() {
                continue;
            }
            if let Some(m) = o.send {
                self.send_mad(qi, &m, out);
            }
            match o.event {
                Some(ClientEvent::Established(conn)) => {
                    let q = &mut self.qps[qi];
                    let old = std::mem::replace(
                        &mut q.req,
                        Requester::new(
                            q.store.requester_config(self.s.requester),
                            conn.remote_qpn,
                            conn.local_psn,
                        ),
                    );
                    // What the lost connection left unacknowledged waits for the region.
                    if old.outstanding() > 0 {
                        let older = q.orphans.replace((old, q.meta));
                        debug_assert!(older.is_none(), "nothing is posted between a reset and the region");
                    }
                    q.resp = Responder::new(Transport::Rc, conn.remote_psn);
                    q.phase = Phase::Metadata;
                    q.since = now;
                    self.stats.connects += 1;
                    tracing::info!(qp = %q.name, collector = %q.peer, remote_qpn = conn.remote_qpn, "connected; waiting for the region");
                }
                Some(ClientEvent::Failed(why)) => {
                    let q = &mut self.qps[qi];
                    if q.phase != Phase::Connecting {
                        self.stats.resets += 1;
                    }
                    q.phase = Phase::Connecting;
                    q.tmpl = None;
                    tracing::warn!(qp = %q.name, collector = %q.peer, "connection: {why}; retrying with backoff");
                }
                None => {}
            }
            return;
        }
    }

    pub(super) fn send_mad<F: Frame>(&mut self, qi: usize, mad: &CmMadRepr, out: &mut Emitter<'_, F>) {
        let q = &mut self.qps[qi];
        let Some(h) = q.hop else { return };
        let mut b = [0u8; wire::ibcm::MAD_LEN];
        if mad.emit(&mut b).is_err() {
            return;
        }
        let psn = q.ud_psn;
        q.ud_psn = wire::roce::psn_add(psn, 1);
        let q = &self.qps[qi];
        out.emit(Dest::Port(h.port), 7, |f| q.build_repr(f, frames::cm_mad(psn, &b)));
    }

    /// The QP failed: drop the connection (DREQ) and connect again after the backoff.
    pub(super) fn reset<F: Frame>(
        &mut self,
        qi: usize,
        now: u64,
        why: ConnectError,
        detail: &str,
        out: &mut Emitter<'_, F>,
    ) {
        let q = &mut self.qps[qi];
        tracing::warn!(qp = %q.name, collector = %q.peer, "queue pair failed ({detail}); reconnecting");
        let dreq = q.cm.reset(now, why);
        q.phase = Phase::Connecting;
        q.since = now;
        q.tmpl = None;
        self.stats.resets += 1;
        if let Some(m) = dreq {
            self.send_mad(qi, &m, out);
        }
    }

    /// Send what QP `qi`'s retransmission cursor has due.
    pub(super) fn resend<F: Frame>(&mut self, qi: usize, now: u64, out: &mut Emitter<'_, F>) {
        let Some(h) = self.qps[qi].hop else { return };
        // Bounded work per call; the rest goes on the next tick.
        for _ in 0..256 {
            let q = &mut self.qps[qi];
            let Some(x) = q.req.poll_transmit(now) else { return };
            let (psn, op, ack_req) = (x.psn, x.op, x.ack_req);
            let mut payload = [0u8; roce::requester::MAX_INLINE];
            let len = x.payload.len();
            payload[..len].copy_from_slice(x.payload);
            self.stats.retransmitted += 1;
            let q = &self.qps[qi];
            out.emit(Dest::Port(h.port), self.s.queue, |f| q.build(f, psn, ack_req, &op, &payload[..len]));
        }
    }

    /// Timers of QP `qi`: path, CM, requester timeouts and resends, ack probes, Append flushes.
    pub(super) fn tick_qp<F: Frame>(&mut self, qi: usize, now: u64, out: &mut Emitter<'_, F>) {
        // The path to the collector, looked up again every 100 ms (a new ARP entry, a route).
        if self.qps[qi].hop.is_none() || now.saturating_sub(self.qps[qi].resolved_at) >= 100_000_000 {
            self.qps[qi].resolved_at = now;
            let peer = self.qps[qi].peer;
            let key = {
                let mut k = [0u8; 13];
                k[..4].copy_from_slice(&peer.octets());
                k[8] = protocol::UDP;
                k[9..11].copy_from_slice(&(self.qps[qi].local_qpn as u16).to_be_bytes());
                k
            };
            match self.l2l3.next_hop(peer, || key, now, out) {
                Ok(h) => {
                    let src = self
                        .s
                        .source_ip
                        .or_else(|| self.l2l3.port_address(h.port))
                        .unwrap_or(Ipv4Addr::UNSPECIFIED);
                    let q = &mut self.qps[qi];
                    if q.hop != Some(h) || q.flow.ip_src != src {
                        q.set_path(h, src, self.s.dscp, self.s.ecn);
                        q.cm.params_mut().local_ip = src;
                    }
                }
                Err(NoNextHop::Unresolved) => {}
                Err(e) => {
                    if self.qps[qi].hop.is_none() && now.saturating_sub(self.last_tick) > 0 {
                        tracing::debug!(qp = %self.qps[qi].name, "no path to the collector: {e:?}");
                    }
                }
            }
        }
        if self.qps[qi].hop.is_none() {
            return;
        }
        // The CM.
        if self.qps[qi].cm.state() == roce::cm::ClientState::Idle {
            let psn = self.qps[qi].next_start_psn(self.s.seed);
            self.qps[qi].cm.params_mut().start_psn = psn;
            let req = self.qps[qi].cm.connect(now);
            self.send_mad(qi, &req, out);
            return;
        }
        if matches!(self.qps[qi].cm.state(), roce::cm::ClientState::Backoff { until, .. } if now >= until) {
            let psn = self.qps[qi].next_start_psn(self.s.seed);
            self.qps[qi].cm.params_mut().start_psn = psn;
        }
        let o = self.qps[qi].cm.handle_timeout(now);
        if let Some(m) = o.send {
            self.send_mad(qi, &m, out);
        }
        if let Some(ClientEvent::Failed(why)) = o.event {
            let q = &mut self.qps[qi];
            q.phase = Phase::Connecting;
            q.tmpl = None;
            tracing::warn!(qp = %q.name, collector = %q.peer, "connection: {why}; retrying with backoff");
        }
        // The region is waited for a bounded time, then the connection is made again.
        if self.qps[qi].phase == Phase::Metadata
            && now.saturating_sub(self.qps[qi].since) >= self.s.region_timeout_ns
        {
            return self.reset(qi, now, ConnectError::Timeout, "no region from the collector", out);
        }
        if self.qps[qi].phase != Phase::Ready {
            return;
        }
        // Timeouts and resends.
        match self.qps[qi].req.handle_timeout(now) {
            Err(e) => return self.reset(qi, now, ConnectError::Timeout, &format!("{e}"), out),
            Ok(true) => self.back_off(self.qps[qi].collector, now),
            Ok(false) => self.restore_rate(self.qps[qi].collector, now),
        }
        self.resend(qi, now, out);
        // A partial Append batch waits at most append_flush.
        if let Store::Append { batcher, .. } = &self.qps[qi].store
            && batcher.due(now, self.s.append_flush_ns)
        {
            let _ = self.flush_append(qi, now, &mut First::None, out);
        }
        // An unacknowledged tail gets a zero-length WRITE asking for an ACK: an RDMA packet
        // like any other, metered (a red one waits for the next tick) and counted.
        if self.qps[qi].req.ack_probe_due(now, self.s.ack_probe_ns) {
            let c = self.qps[qi].collector;
            if self.collectors[c].metered && self.meters.execute(c, now, UNITS) == Color::Red {
                return;
            }
            let q = &mut self.qps[qi];
            let op = Op::Write { va: q.meta.va, rkey: q.meta.rkey, imm: None };
            if let Ok(p) = q.req.post(now, op, &[], true)
                && p.send_now
                && let Some(h) = q.hop
            {
                self.stats.rdma_packets += 1;
                self.stats.ack_probes += 1;
                let q = &self.qps[qi];
                out.emit(Dest::Port(h.port), self.s.queue, |f| q.build(f, p.psn, p.ack_req, &op, &[]));
            }
        }
    }

    /// Stopping: write out partial Append batches, wait for every outstanding request's ACK,
    /// then disconnect each QP (DREQ) so the collector frees it at once. With `force`, what is
    /// still unacknowledged is counted lost. Whether it is done.
    pub(super) fn stop_qps<F: Frame>(&mut self, now: u64, force: bool, out: &mut Emitter<'_, F>) -> bool {
        for qi in 0..self.qps.len() {
            if self.qps[qi].phase == Phase::Ready
                && let Store::Append { batcher, .. } = &self.qps[qi].store
                && batcher.due(now, 0)
            {
                let _ = self.flush_append(qi, now, &mut First::None, out);
            }
        }
        let busy = self.qps.iter().any(|q| q.phase == Phase::Ready && q.req.outstanding() > 0);
        if busy && !force {
            return false;
        }
        // Reports still missing will never be recovered by this translator: given up (so
        // neither missing nor held is left to count twice in the final counters).
        let stats = &mut self.stats;
        self.reporters.retain(|_, t| {
            stats.unrecoverable(t.columns, t.give_up());
            true
        });
        // Reports still waiting (parked) will not be translated either.
        for _ in self.parked.drain(..) {
            out.count_drop(self.drops.stopped);
        }
        for qi in 0..self.qps.len() {
            self.abandon(qi);
            self.qps[qi].store.discard_held();
            if let Some(dreq) = self.qps[qi].cm.reset(now, ConnectError::Disconnected) {
                self.send_mad(qi, &dreq, out);
            }
            self.qps[qi].phase = Phase::Connecting;
            self.qps[qi].tmpl = None;
        }
        // Everything taken is settled now (written, or counted above): each stream's last word.
        // Reports still coming are left to their reporters, which count them after it.
        self.send_progress(now, true, out);
        self.stopped = true;
        true
    }
}

/// `rate` at `share` sixteenths (bursts unchanged).
fn scaled(rate: MeterConfig, share: u32) -> MeterConfig {
    let f = |v: u64| (v * u64::from(share) / 16).max(1);
    MeterConfig { cir: f(rate.cir), pir: f(rate.pir), ..rate }
}
