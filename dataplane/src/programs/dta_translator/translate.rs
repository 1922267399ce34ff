//! Reports to RDMA: admission by the collector's meter, the five primitives' translation,
//! Append and Sketch-Merge batching, sequence tracking of each report, hellos and parked
//! reports (the NACKs themselves are built in `nack.rs`).

use super::*;

/// A reporter's key in `dta_reporter_seq`: its address and UDP source port, as declared.
#[inline(always)]
pub(super) fn reporter_key(src: Ipv4Addr, src_port: u16) -> u64 {
    (u64::from(src.to_bits()) << 16) | u64::from(src_port)
}

/// The UDP source port of the datagram in `frame` whose payload starts at `l4` (0 if absent).
fn reporter_port(frame: &[u8], l4: usize) -> u16 {
    l4.checked_sub(wire::udp::HEADER_LEN)
        .and_then(|u| frame.get(u..u + 2))
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
}

impl DtaTranslator {
    /// Charge `units` to collector `c`'s meter for a report of `prio`.
    #[inline(always)]
    pub(super) fn admit(&mut self, c: usize, units: u32, prio: Priority, now: u64) -> Result<(), Reject> {
        if !self.collectors[c].metered {
            return Ok(());
        }
        match (self.meters.execute(c, now, units), prio) {
            (Color::Green, _) | (Color::Yellow, Priority::Medium | Priority::High) => Ok(()),
            (Color::Yellow | Color::Red, Priority::Low | Priority::Medium) => {
                Err(Reject::Rate { park: false })
            }
            (_, Priority::High) => Err(Reject::Rate { park: true }),
        }
    }

    /// Post one request on QP `qi` and send it: into `first` if given (it is then used up),
    /// otherwise through the emitter. Returns the port when `first` was used.
    #[inline(always)]
    pub(super) fn send<F: Frame>(
        &mut self,
        qi: usize,
        now: u64,
        op: Op,
        payload: &[u8],
        first: &mut First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Result<Option<PortId>, Reject> {
        let floor = self.born_floor;
        let q = &mut self.qps[qi];
        let post = match q.req.post(now, op, payload, false) {
            Ok(p) => p,
            Err(PostError::WindowFull) => return Err(Reject::Drop(self.drops.window_full)),
            Err(_) => return Err(Reject::Drop(self.drops.store_down)),
        };
        if floor < now {
            // What it carries was held since then (a batch, a path, a parked report).
            q.req.backdate_last(floor);
        }
        self.stats.rdma_packets += 1;
        // The data items written to this region (a collector restart loses them all).
        q.region_entries += q.entries_in(&op, payload);
        if !post.send_now {
            // A resend is under way; the cursor sends it in order.
            return Ok(None);
        }
        let Some(hop) = q.hop else { return Ok(None) };
        let q = &self.qps[qi];
        match std::mem::replace(first, First::None) {
            First::InPlace(f) => {
                if q.build(f, post.psn, post.ack_req, &op, payload) {
                    return Ok(Some(hop.port));
                }
                Ok(None)
            }
            First::None => {
                out.emit(Dest::Port(hop.port), self.s.queue, |f| {
                    q.build(f, post.psn, post.ack_req, &op, payload)
                });
                Ok(None)
            }
        }
    }

    /// The collector for a Key-Write or Key-Increment report to `dst`.
    #[inline(always)]
    pub(super) fn key_collector(&self, dst: Ipv4Addr, key: u32, increment: bool) -> Option<usize> {
        let list = if increment { &self.ki_collectors } else { &self.kw_collectors };
        let has =
            |c: &CollectorState| if increment { c.keyincrement.is_some() } else { c.keywrite.is_some() };
        if let Some(i) = self.collectors.iter().position(|c| c.ip == dst && has(c)) {
            return Some(i);
        }
        (!list.is_empty()).then(|| list[dta::keywrite_collector(key, list.len())])
    }

    /// A QP ready to write, or why not.
    #[inline(always)]
    pub(super) fn ready_qp(&self, qi: Option<usize>, missing: DropReason) -> Result<usize, Reject> {
        let qi = qi.ok_or(Reject::Drop(missing))?;
        if self.qps[qi].phase != Phase::Ready || self.qps[qi].hop.is_none() {
            return Err(Reject::Down);
        }
        Ok(qi)
    }

    /// Translate one parsed report. `first`, if given, is the report's own buffer, reused for
    /// the first RDMA packet.
    pub(super) fn translate<F: Frame>(
        &mut self,
        now: u64,
        dst: Ipv4Addr,
        r: &DtaRepr<'_>,
        mut first: First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Translated {
        match self.translate_inner(now, dst, r, &mut first, out) {
            Ok(Some(port)) => Translated::Sent(port),
            Ok(None) => Translated::Absorbed,
            Err(e) => Translated::Rejected(e),
        }
    }

    pub(super) fn translate_inner<F: Frame>(
        &mut self,
        now: u64,
        dst: Ipv4Addr,
        r: &DtaRepr<'_>,
        first: &mut First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Result<Option<PortId>, Reject> {
        let prio = r.seq.map_or(self.s.default_priority, |s| s.priority);
        let imm = r.immediate;
        {
            match r.primitive {
                Primitive::KeyWrite { redundancy, key, data } => {
                    if redundancy == 0 || redundancy > self.s.max_redundancy {
                        return Err(Reject::Drop(self.drops.bad_redundancy));
                    }
                    let c = self.key_collector(dst, key, false).ok_or(Reject::Drop(self.drops.no_store))?;
                    let qi = self.ready_qp(self.collectors[c].keywrite, self.drops.no_store)?;
                    if self.qps[qi].req.room() < u32::from(redundancy) {
                        return Err(Reject::Full);
                    }
                    self.admit(c, UNITS * u32::from(redundancy), prio, now)?;
                    let Store::KeyWrite { slot_len } = self.qps[qi].store else { unreachable!() };
                    let hash = dta::KeyHash::with_mode(key, self.s.key_hash);
                    let mut slot = [0u8; 32];
                    dta::layout::keywrite_slot(&hash, data, &mut slot[..slot_len]);
                    let (meta, slots) = (self.qps[qi].meta, self.qps[qi].slots);
                    let mut port = None;
                    for n in 0..redundancy {
                        let s = dta::layout::key_slot_index(&hash, n, slots);
                        let op = Op::Write {
                            va: meta.va + s * slot_len as u64,
                            rkey: meta.rkey,
                            imm: (imm && n == 0).then_some(key),
                        };
                        port = port.or(self.send(qi, now, op, &slot[..slot_len], first, out)?);
                    }
                    self.stats.reports[0] += 1;
                    Ok(port)
                }
                Primitive::KeyIncrement { redundancy, key, counter } => {
                    if redundancy == 0 || redundancy > self.s.max_redundancy {
                        return Err(Reject::Drop(self.drops.bad_redundancy));
                    }
                    let c = self.key_collector(dst, key, true).ok_or(Reject::Drop(self.drops.no_store))?;
                    if self.collectors[c].keyincrement_redundancy.is_some_and(|n| n != redundancy) {
                        return Err(Reject::Drop(self.drops.redundancy_mismatch));
                    }
                    let qi = self.ready_qp(self.collectors[c].keyincrement, self.drops.no_store)?;
                    let ops = u32::from(redundancy) + u32::from(imm);
                    if self.qps[qi].req.room() < ops {
                        return Err(Reject::Full);
                    }
                    self.admit(c, UNITS * ops, prio, now)?;
                    let (meta, slots) = (self.qps[qi].meta, self.qps[qi].slots);
                    let hash = dta::KeyHash::with_mode(key, self.s.key_hash);
                    let mut port = None;
                    for n in 0..redundancy {
                        let s = dta::layout::key_slot_index(&hash, n, slots);
                        let op = Op::FetchAdd { va: meta.va + s * 8, rkey: meta.rkey, add: counter };
                        port = port.or(self.send(qi, now, op, &[], first, out)?);
                    }
                    if imm {
                        let op = Op::Write { va: meta.va, rkey: meta.rkey, imm: Some(key) };
                        port = port.or(self.send(qi, now, op, &[], first, out)?);
                    }
                    self.stats.reports[2] += 1;
                    Ok(port)
                }
                Primitive::Append { list_id, data } => {
                    let qi = match self.list_direct.get(list_id as usize) {
                        Some(&i) => (i != u16::MAX).then_some(usize::from(i)),
                        None => self.lists.lookup(&list_id).copied(),
                    };
                    let qi = self.ready_qp(qi, self.drops.no_list)?;
                    let q = &mut self.qps[qi];
                    if q.req.room() < 2 {
                        return Err(Reject::Full);
                    }
                    let c = q.collector;
                    let Store::Append { batcher, .. } = &mut q.store else { unreachable!() };
                    let cost = UNITS / batcher.batch() as u32;
                    if self.collectors[c].metered {
                        self.admit(c, cost, prio, now)?;
                    }
                    let Store::Append { batcher, .. } = &mut self.qps[qi].store else { unreachable!() };
                    let ready = batcher.push(now.min(self.born_floor), data, imm);
                    self.stats.reports[1] += 1;
                    if ready { self.flush_append(qi, now, first, out) } else { Ok(None) }
                }
                Primitive::Postcarder { key, hop, data } => {
                    let c_ip = self.collectors.iter().position(|c| c.ip == dst && c.postcarder.is_some());
                    let c = c_ip
                        .or_else(|| self.collectors.iter().position(|c| c.postcarder.is_some()))
                        .ok_or(Reject::Drop(self.drops.no_store))?;
                    let qi = self.ready_qp(self.collectors[c].postcarder, self.drops.no_store)?;
                    // A path costs one packet whenever it is written: the postcard that makes
                    // one to write is admitted first, and a refused one leaves the cache as it
                    // was (a parked one comes back to the same partial path).
                    let Store::Postcarder(cache) = &self.qps[qi].store else { unreachable!() };
                    if cache.would_write(key, hop) {
                        if self.qps[qi].req.room() == 0 {
                            return Err(Reject::Full);
                        }
                        self.admit(c, UNITS, prio, now)?;
                    }
                    let Store::Postcarder(cache) = &mut self.qps[qi].store else { unreachable!() };
                    let path = match cache.add(now.min(self.born_floor), key, hop, data, imm) {
                        PostcardOutcome::BadHop => return Err(Reject::Drop(self.drops.bad_hop)),
                        PostcardOutcome::Cached => None,
                        PostcardOutcome::Complete(p) | PostcardOutcome::Evicted(p) => Some(p),
                    };
                    self.stats.reports[3] += 1;
                    let Some(p) = path else { return Ok(None) };
                    let (meta, slots) = (self.qps[qi].meta, self.qps[qi].slots);
                    let mut buf = [0u8; dta::layout::POSTCARDER_WRITE_LEN];
                    dta::layout::postcarder_slot(p.key, &p.hops, &mut buf);
                    let s = dta::layout::postcarder_slot_index(p.key, slots);
                    let op = Op::Write {
                        va: meta.va + s * dta::layout::POSTCARDER_SLOT_LEN as u64,
                        rkey: meta.rkey,
                        imm: p.imm.then_some(p.key),
                    };
                    let floor = self.born_floor;
                    self.born_floor = floor.min(p.since);
                    let r = self.send(qi, now, op, &buf, first, out);
                    self.born_floor = floor;
                    r
                }
                Primitive::SketchMerge { sketch_id, reporter_id, column, op, counters } => {
                    let qi =
                        self.ready_qp(self.sketches.lookup(&sketch_id).copied(), self.drops.no_sketch)?;
                    let Store::Sketch { merger, .. } = &mut self.qps[qi].store else { unreachable!() };
                    match merger.merge(now, now.min(self.born_floor), reporter_id, column, op, counters) {
                        SketchOutcome::Merged => {}
                        SketchOutcome::OutOfOrder { last } | SketchOutcome::TooEarly { last } => {
                            return Err(Reject::SketchNack { sketch_id, reporter_id, last });
                        }
                        SketchOutcome::UnknownReporter | SketchOutcome::BadShape => {
                            return Err(Reject::Drop(self.drops.sketch_shape));
                        }
                    }
                    self.stats.reports[4] += 1;
                    self.flush_sketch(qi, now, imm, first, out)
                }
            }
        }
    }

    /// Write a list's waiting batch.
    pub(super) fn flush_append<F: Frame>(
        &mut self,
        qi: usize,
        now: u64,
        first: &mut First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Result<Option<PortId>, Reject> {
        let (meta, _) = (self.qps[qi].meta, self.qps[qi].slots);
        // A batch is at most two WRITEs (a ring wrap): with less room it waits (the head moves
        // only when it is taken), rather than being taken and refused.
        if self.qps[qi].req.room() < 2 {
            return Err(Reject::Full);
        }
        let Store::Append { list, batcher, marks } = &mut self.qps[qi].store else { return Ok(None) };
        let since = batcher.oldest().unwrap_or(now);
        let (list, marks, after) = (*list, *marks, batcher.written() + batcher.pending() as u64);
        let (writes, imm) = batcher.take();
        // The last WRITE's immediate: the reference's list ID when a report asked for it, or,
        // for a collector that asked for marks, always the mark.
        let last_imm = if marks { Some(dta::layout::append_mark(after, imm)) } else { imm.then_some(list) };
        // Copy out: `send` needs the QP mutably.
        let mut runs: [(u64, usize, [u8; 64]); 2] = [(0, 0, [0; 64]); 2];
        let mut n = 0;
        for w in writes.into_iter().flatten() {
            let (slot, entries) = (w.slot, w.entries);
            runs[n].0 = slot;
            runs[n].1 = entries.len() * 4;
            for (j, e) in entries.iter().enumerate() {
                runs[n].2[4 * j..4 * j + 4].copy_from_slice(&e.to_le_bytes());
            }
            n += 1;
        }
        let mut port = Ok(None);
        let floor = self.born_floor;
        self.born_floor = floor.min(since);
        for (k, (slot, len, bytes)) in runs[..n].iter().enumerate() {
            let op = Op::Write {
                va: meta.va + slot * dta::layout::APPEND_ENTRY_LEN as u64,
                rkey: meta.rkey,
                imm: if k + 1 == n { last_imm } else { None },
            };
            match self.send(qi, now, op, &bytes[..*len], first, out) {
                Ok(p) => port = port.map(|q: Option<PortId>| q.or(p)),
                Err(e) => {
                    port = Err(e);
                    break;
                }
            }
        }
        self.born_floor = floor;
        port
    }

    /// Write every complete batch of a sketch.
    pub(super) fn flush_sketch<F: Frame>(
        &mut self,
        qi: usize,
        now: u64,
        imm: bool,
        first: &mut First<'_, F>,
        out: &mut Emitter<'_, F>,
    ) -> Result<Option<PortId>, Reject> {
        let mut port = None;
        loop {
            if !self.qps[qi].req.can_post() {
                // No room for the write: the complete batches stay merged (held) and go at the
                // next flush (every tick, or the next column).
                return Ok(port);
            }
            let meta = self.qps[qi].meta;
            let mut buf = std::mem::take(&mut self.sketch_buf);
            let Store::Sketch { id, merger } = &mut self.qps[qi].store else { return Ok(None) };
            let (id, rows) = (*id, merger.rows() as u16);
            let Some((start, bytes, contributions)) = merger.take_batch(&mut buf) else {
                self.sketch_buf = buf;
                return Ok(port);
            };
            let since = merger.last_since();
            let c = self.qps[qi].collector;
            // Batches are written whatever the rate: their columns are merged already.
            if self.collectors[c].metered {
                let _ = self.meters.execute(c, now, UNITS);
            }
            let op = Op::Write {
                va: meta.va + dta::layout::sketch_column_offset(start, rows),
                rkey: meta.rkey,
                imm: imm.then_some((u32::from(id) << 16) | (start & 0xffff)),
            };
            let len = bytes.len();
            let floor = self.born_floor;
            self.born_floor = floor.min(since);
            let r = self.send(qi, now, op, &buf[..len], first, out);
            self.born_floor = floor;
            self.sketch_buf = buf;
            match r {
                Ok(p) => port = port.or(p),
                Err(Reject::Drop(reason)) => {
                    // The batch's merged reports are lost (not only the one that completed it,
                    // which is merged and so not dropped itself): counted, and the rest of the
                    // complete batches wait for the next flush.
                    out.count_drops(reason, contributions);
                    return Ok(port);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Give up the sketch columns wanted again from reporters silent for `quiet` (counted lost
    /// under `dta_sketch_gave_up`), and write the complete batches waiting — those the
    /// given-up columns held back, and any a full window left.
    pub(super) fn give_up_sketches<F: Frame>(&mut self, now: u64, quiet: u64, out: &mut Emitter<'_, F>) {
        for qi in 0..self.qps.len() {
            let Store::Sketch { merger, .. } = &mut self.qps[qi].store else { continue };
            let n = merger.give_up(now, quiet);
            out.count_drops(self.drops.sketch_gave_up, n);
            if self.qps[qi].phase == Phase::Ready && self.qps[qi].hop.is_some() {
                let _ = self.flush_sketch(qi, now, false, &mut First::None, out);
            }
        }
    }

    /// A DTA report arrived in `pkt`; `l4` is the offset of its UDP payload.
    pub(super) fn on_report<F: Frame>(
        &mut self,
        pkt: &mut F,
        md: &mut IngressMd,
        out: &mut Emitter<'_, F>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        l4: usize,
    ) {
        let format = self.s.format;
        // What the report carries is taken out of its buffer (which becomes the first RDMA
        // packet): plain fields by value, Key-Write data into `kw`; sketch counters into the
        // scratch buffer (kept, no allocation) on the sketch's own path.
        if self.stopped {
            return md.dest = Dest::Drop(self.drops.after_stop);
        }
        if pkt.data().get(l4) == Some(&dta::HELLO_OPCODE) {
            return self.on_hello(pkt, md, out, src, l4);
        }
        let mut kw = [0u8; 28];
        let r = match DtaRepr::parse(&pkt.data()[l4..], format) {
            Ok(r) => r,
            Err(wire::Error::Unsupported { field: "dta.opcode", .. }) => {
                return md.dest = Dest::Drop(self.drops.unknown_opcode);
            }
            Err(_) => return md.dest = Dest::Drop(self.drops.malformed),
        };
        // Only a sketch's counters need the scratch buffer; other reports get an empty Vec
        // (no allocation).
        let sketch = matches!(r.primitive, Primitive::SketchMerge { .. });
        let mut buf = if sketch { std::mem::take(&mut self.scratch) } else { Vec::new() };
        let r = detach(r, &mut kw, &mut buf);
        self.on_parsed(pkt, md, out, src, l4, dst, &r);
        if sketch {
            self.scratch = buf;
        }
    }

    /// Sequence tracking of a retransmittable report of `seq` from `src`:`src_port`: the
    /// report is a duplicate or stale (`Err`, the drop reason), or is translated, with the NACK to send first if a gap
    /// opened or missing reports are due to be asked for again. Out of line: the fast path of
    /// untracked reports stays small.
    #[inline(never)]
    fn track(
        &mut self,
        src: Ipv4Addr,
        src_port: u16,
        seq: Sequence,
        columns: bool,
        now: u64,
        back: (&[u8], PortId),
    ) -> Result<Option<NackRepr>, DropReason> {
        let key = reporter_key(src, src_port);
        let interval = self.s.nack_interval_ns;
        let (o, columns) = match self.reporters.lookup_mut(&key) {
            Some(t) => {
                if t.progress.back.is_none() {
                    t.progress.back = Self::nack_flow(back.0).map(|(f, _)| (back.1, f));
                }
                t.columns |= columns;
                (t.check(seq.seqnum, seq.epoch, now, interval), t.columns)
            }
            None => {
                let mut t = self.new_reporter(now);
                t.columns = columns;
                t.progress.back = Self::nack_flow(back.0).map(|(f, _)| (back.1, f));
                let o = t.check(seq.seqnum, seq.epoch, now, interval);
                // A full table tracks no new reporters: their reports pass unchecked.
                if self.reporters.insert(key, t).is_err() {
                    self.stats.untracked += 1;
                }
                (o, columns)
            }
        };
        if o.joined {
            // Its progress goes at the next tick (the reporter maps the first number then).
            self.progress_due = true;
        }
        self.stats.seq_gaps += u64::from(o.gap);
        self.stats.unrecoverable(columns, o.lost);
        self.stats.seq_recovered += u64::from(o.recovered);
        self.stats.reporter_restarts += u64::from(o.restarted);
        if !o.translate {
            return Err(if o.stale { self.drops.seq_stale } else { self.drops.seq_duplicate });
        }
        Ok(o.nack.map(|(first, count)| NackRepr {
            seqnum: first.wrapping_sub(1),
            nack: true,
            slow_down: false,
            ext: Some(NackExt::Reports { count, epoch: seq.epoch }),
        }))
    }

    /// `r`, parsed from `pkt` (its UDP payload at `l4`), from `src` to `dst`: sequence
    /// tracking, translation, and what a rejection sends back.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_parsed<F: Frame>(
        &mut self,
        pkt: &mut F,
        md: &mut IngressMd,
        out: &mut Emitter<'_, F>,
        src: Ipv4Addr,
        l4: usize,
        dst: Ipv4Addr,
        r: &DtaRepr<'_>,
    ) {
        let now = md.ingress_ts;
        // The reporter's UDP source port: read only where it is needed (tracking, NACKs), from
        // the report, which a rejected translation leaves as it came.
        let src_port = |pkt: &F| reporter_port(pkt.data(), l4);
        let tracked = r.seq.is_some_and(|s| s.retransmittable);
        let mut sport = 0;
        if let Some(seq) = r.seq.filter(|s| s.retransmittable) {
            sport = src_port(pkt);
            let columns = matches!(r.primitive, Primitive::SketchMerge { .. });
            match self.track(src, sport, seq, columns, now, (pkt.data(), md.ingress_port)) {
                Err(reason) => return md.dest = Dest::Drop(reason),
                // The report goes on to be translated; the NACK is a packet of its own.
                Ok(Some(n)) => self.send_nack(pkt.data(), md.ingress_port, n, out),
                Ok(None) => {}
            }
        }
        // High-priority reports wait in arrival order: while some are parked, a new one joins
        // them (an Append list stays in report order across a congested spell).
        let high = r.seq.map_or(self.s.default_priority, |s| s.priority) == Priority::High;
        let result = if high && !self.parked.is_empty() {
            Translated::Rejected(Reject::Full)
        } else {
            self.translate(now, dst, r, First::InPlace(pkt), out)
        };
        // A tracked report dropped here is lost to its stream (told in the stream's progress).
        let mut lost = false;
        match result {
            Translated::Sent(port) => {
                md.dest = Dest::Port(port);
                md.qid = self.s.queue;
            }
            Translated::Absorbed => md.dest = Dest::Consume,
            Translated::Rejected(Reject::Drop(reason)) => {
                lost = self.drops.is_loss(reason);
                md.dest = Dest::Drop(reason);
            }
            Translated::Rejected(Reject::SketchNack { sketch_id, reporter_id, last }) => {
                lost = true;
                if self.notify_ok(src, src_port(pkt), now) {
                    out.count_drop(self.drops.sketch_order);
                    let ext = NackExt::Sketch { sketch_id, reporter_id, column: last };
                    let n = NackRepr { seqnum: last as u8, nack: true, slow_down: false, ext: Some(ext) };
                    self.make_nack(pkt, md, n);
                } else {
                    md.dest = Dest::Drop(self.drops.sketch_order);
                }
            }
            Translated::Rejected(reject @ (Reject::Rate { .. } | Reject::Down | Reject::Full)) => {
                // Over the rate, the collector's store not connected (a restart, a reset), or
                // its QP's window full (a loss being recovered): high priority waits, the rest
                // is dropped; either way the reporter slows down.
                let (park, dropped) = match reject {
                    Reject::Rate { park } => (park, self.drops.rate_low),
                    Reject::Full => (high, self.drops.window_full),
                    _ => (high, self.drops.store_down),
                };
                let parked = park && self.park(r, dst, now);
                lost = !parked;
                if parked {
                    md.dest = Dest::Consume;
                } else if tracked && self.defer_sketch_column(r, now) {
                    // Asked for again from its reporter: counted where its fate is known.
                    lost = false;
                    md.dest = Dest::Drop(self.drops.sketch_deferred);
                } else if park {
                    md.dest = Dest::Drop(self.drops.park_full);
                } else {
                    md.dest = Dest::Drop(dropped);
                }
                // A parked report slows its reporter down as the held queue grows (RED); a
                // dropped one always does.
                if (!parked || self.mark_parked()) && self.slow_down_ok(src, src_port(pkt), now) {
                    let seqnum = r.seq.map_or(0, |s| s.seqnum);
                    // The report's buffer (copied already if parked) tells the reporter; a
                    // dropped report is still counted under its reason.
                    if let Dest::Drop(reason) = md.dest {
                        out.count_drop(reason);
                    }
                    self.make_nack(pkt, md, NackRepr::plain(seqnum, false, true));
                }
            }
        }
        if lost && tracked {
            self.stream_lost(src, sport);
        }
    }

    /// A tracked report refused before translation: if it is a sketch column, its merger wants
    /// it again ([`SketchMerger::defer`]) and this says so. Out of line: a drop.
    #[cold]
    fn defer_sketch_column(&mut self, r: &DtaRepr<'_>, now: u64) -> bool {
        let Primitive::SketchMerge { sketch_id, reporter_id, column, .. } = r.primitive else { return false };
        let Some(&qi) = self.sketches.lookup(&sketch_id) else { return false };
        let Store::Sketch { merger, .. } = &mut self.qps[qi].store else { return false };
        merger.defer(reporter_id, column, now);
        true
    }

    /// A report of `src`:`src_port`'s tracked stream was dropped here, counted under a reason
    /// that is a loss: its stream's progress says so. Out of line: a drop.
    #[cold]
    fn stream_lost(&mut self, src: Ipv4Addr, src_port: u16) {
        if let Some(t) = self.reporters.get_mut(&reporter_key(src, src_port)) {
            t.lost = t.lost.wrapping_add(1);
        }
    }

    /// A reporter's hello: its stream from this source starts afresh (what the old one still
    /// missed is counted lost, `reporter_restarts`), and the answer echoes the nonce. Out of
    /// line: once per reporter start.
    #[inline(never)]
    fn on_hello<F: Frame>(
        &mut self,
        pkt: &mut F,
        md: &mut IngressMd,
        out: &mut Emitter<'_, F>,
        src: Ipv4Addr,
        l4: usize,
    ) {
        let Ok(h) = dta::HelloRepr::parse(&pkt.data()[l4..]) else {
            return md.dest = Dest::Drop(self.drops.malformed);
        };
        let key = reporter_key(src, reporter_port(pkt.data(), l4));
        match self.reporters.lookup_mut(&key) {
            Some(t) => {
                if let Some(lost) = t.restart() {
                    self.stats.unrecoverable(t.columns, lost);
                    self.stats.reporter_restarts += 1;
                }
            }
            None => {
                // A start announced: no mid-stream join for it, whatever the uptime.
                if self.reporters.insert(key, ReporterSeq::untracked()).is_err() {
                    self.stats.untracked += 1;
                }
            }
        }
        self.stats.hellos += 1;
        let ack = NackRepr {
            seqnum: 0,
            nack: false,
            slow_down: false,
            ext: Some(NackExt::Hello { epoch: h.epoch, nonce: h.nonce }),
        };
        self.send_nack(pkt.data(), md.ingress_port, ack, out);
        md.dest = Dest::Drop(self.drops.hello);
    }

    /// The tracking of a reporter not heard from before. Within `[dta] join_ms` of its start the
    /// translator may be joining reporters that were sending before it (it restarted): they
    /// are tracked from their first number heard, the ones before unknown (taken once if they
    /// come, never NACKed nor counted lost); later, an epoch reporter is new, numbering from 0.
    pub(super) fn new_reporter(&self, now: u64) -> ReporterSeq {
        if now.saturating_sub(self.started_at.unwrap_or(now)) < self.s.join_ns {
            ReporterSeq::joining()
        } else {
            ReporterSeq::untracked()
        }
    }

    /// Keep a high-priority report for later; `false` if the queue is full.
    pub(super) fn park(&mut self, r: &DtaRepr<'_>, dst: Ipv4Addr, now: u64) -> bool {
        if self.parked.len() >= self.park_cap {
            return false;
        }
        let mut p = Parked { bytes: [0; MAX_REPORT], len: r.buffer_len() as u16, dst, at: now };
        if r.emit(&mut p.bytes).is_err() {
            return false;
        }
        self.parked.push_back(p);
        self.stats.parked += 1;
        true
    }

    /// Whether a report just parked should slow its reporter down: when the held queue holds
    /// more than a sixteenth of its room and did not shrink since the report parked before
    /// this one (reports came at least as fast as the collector took them). Slowing down at
    /// every parked report instead held the rate where the queue stood, whatever its length:
    /// a reporter at line rate settled with the queue full, each of its bursts dropping what
    /// the queue had no room for (`dta_park_full`, 2,000 a second in the lab). By length
    /// alone, it went on while a long queue drained after the reporter had already slowed
    /// below what the collector takes, and cut it to a trickle; by growth over a tick, a
    /// reporter slower than one report a tick was never slowed and the queue filled. A full
    /// queue's drops always slow the reporter down.
    fn mark_parked(&mut self) -> bool {
        let len = self.parked.len();
        let not_shrunk = len > self.park_len;
        self.park_len = len;
        len > self.park_cap / 16 && not_shrunk
    }

    /// Translate parked reports while the rate allows.
    pub(super) fn unpark<F: Frame>(&mut self, now: u64, out: &mut Emitter<'_, F>) {
        while let Some(p) = self.parked.front().copied() {
            let Ok(r) = DtaRepr::parse(&p.bytes[..usize::from(p.len)], self.s.format) else {
                self.parked.pop_front();
                continue;
            };
            // What it writes was held since it was parked.
            self.born_floor = p.at;
            let t = self.translate(now, p.dst, &r, First::None, out);
            self.born_floor = u64::MAX;
            match t {
                Translated::Rejected(Reject::Rate { .. } | Reject::Down | Reject::Full) => return,
                Translated::Rejected(Reject::Drop(reason)) => {
                    // Refused now for good (its store gone, say): counted under the reason.
                    self.parked.pop_front();
                    out.count_drop(reason);
                }
                Translated::Rejected(Reject::SketchNack { .. }) => {
                    self.parked.pop_front();
                    out.count_drop(self.drops.sketch_order);
                }
                Translated::Sent(_) | Translated::Absorbed => {
                    self.parked.pop_front();
                    self.stats.unparked += 1;
                }
            }
        }
    }
}
