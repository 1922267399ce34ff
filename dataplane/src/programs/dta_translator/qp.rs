//! One collector data structure as the translator sees it: its IB CM connection, its RC queue
//! pair (requester for the RDMA operations, responder for the collector's metadata SEND), the
//! learned region (VA, length, R_Key), the path to the collector, and the per-QP packet
//! templates every hot-path packet is built from.

use std::net::{Ipv4Addr, SocketAddrV4};

use roce::cm::{CmClient, Metadata};
use roce::frames;
use roce::requester::{Op, Requester, RequesterConfig, Transport};
use roce::responder::Responder;
use wire::roce::{BthRepr, Opcode};
use wire::stack::{RemoteAddr, RoceStack, RoceTemplate, UdpFlow};

use super::sketch::SketchMerger;
use super::state::{AppendBatcher, PostcarderCache};
use crate::buf::Frame;
use crate::programs::l2l3::NextHop;

/// What a QP writes to.
#[derive(Debug, Clone)]
pub enum Store {
    /// Key-Write slots of `slot_len` bytes.
    KeyWrite {
        /// Slot length.
        slot_len: usize,
    },
    /// Key-Increment counters.
    KeyIncrement,
    /// Postcarder paths.
    Postcarder(PostcarderCache),
    /// One Append list.
    Append {
        /// List ID.
        list: u32,
        /// Its batch and ring head.
        batcher: AppendBatcher,
        /// The collector asked for every batch to be marked with its head
        /// (`wire::dta::layout::RING_MARKS`).
        marks: bool,
    },
    /// One sketch.
    Sketch {
        /// Sketch ID.
        id: u16,
        /// Its merger.
        merger: SketchMerger,
    },
}

impl Store {
    /// Bytes of one slot / entry / column batch in collector memory, for the slot count.
    pub fn unit_len(&self) -> u64 {
        use wire::dta::layout::*;
        match self {
            Self::KeyWrite { slot_len } => *slot_len as u64,
            Self::KeyIncrement => KEYINCREMENT_SLOT_LEN as u64,
            Self::Postcarder(_) => POSTCARDER_SLOT_LEN as u64,
            Self::Append { .. } => APPEND_ENTRY_LEN as u64,
            Self::Sketch { merger, .. } => merger.rows() as u64 * 4,
        }
    }

    /// Data items this store holds unwritten: a partial Append batch's entries, the postcards
    /// of partial Postcarder paths, a sketch's merged columns not yet written and columns
    /// wanted again.
    pub fn held(&self) -> u64 {
        match self {
            Self::Append { batcher, .. } => batcher.pending() as u64,
            Self::Postcarder(cache) => cache.cached_postcards(),
            Self::Sketch { merger, .. } => merger.held(),
            _ => 0,
        }
    }

    /// Forget what it holds unwritten (the translator stops, having counted it lost).
    pub fn discard_held(&mut self) {
        match self {
            Self::Append { batcher, .. } => {
                let _ = batcher.take();
            }
            Self::Postcarder(cache) => cache.clear(),
            Self::Sketch { merger, .. } => merger.discard(),
            _ => {}
        }
    }

    /// When the oldest item this store holds unwritten came, at the latest (`None`: none).
    pub fn oldest(&self) -> Option<u64> {
        match self {
            Self::Append { batcher, .. } => batcher.oldest(),
            Self::Postcarder(cache) => cache.oldest(),
            Self::Sketch { merger, .. } => merger.oldest(),
            _ => None,
        }
    }

    /// [`Qp::entry_len`] for this store.
    pub fn entry_len(&self) -> usize {
        match self {
            Self::Append { .. } => wire::dta::layout::APPEND_ENTRY_LEN,
            Self::Sketch { merger, .. } => merger.rows() * 4,
            _ => 0,
        }
    }

    /// `base` with the retransmit ring sized for this store's largest payload.
    pub fn requester_config(&self, base: RequesterConfig) -> RequesterConfig {
        let max_payload = self.template_shape().map_or(roce::requester::MAX_INLINE, |(_, n)| n);
        RequesterConfig { max_payload, ..base }
    }

    /// The operation and payload length every hot-path packet of this store has, for its
    /// template (`None`: no fixed shape).
    fn template_shape(&self) -> Option<(Opcode, usize)> {
        use wire::dta::layout::*;
        match self {
            Self::KeyWrite { slot_len } => Some((Opcode::RC_RDMA_WRITE_ONLY, *slot_len)),
            Self::KeyIncrement => Some((Opcode::RC_FETCH_ADD, 0)),
            Self::Postcarder(_) => Some((Opcode::RC_RDMA_WRITE_ONLY, POSTCARDER_WRITE_LEN)),
            Self::Append { batcher, .. } => Some((Opcode::RC_RDMA_WRITE_ONLY, batcher.batch() * 4)),
            Self::Sketch { merger, .. } => {
                Some((Opcode::RC_RDMA_WRITE_ONLY, merger.batch() as usize * merger.rows() * 4))
            }
        }
    }
}

/// Where a QP is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No path to the collector yet, or the CM is connecting.
    Connecting,
    /// Connected; waiting for the collector's metadata SEND.
    Metadata,
    /// Writing.
    Ready,
}

/// One collector data structure.
pub struct Qp {
    /// `collector/kind[id]`, for logs.
    pub name: String,
    /// Index of its collector.
    pub collector: usize,
    /// The collector's address.
    pub peer: Ipv4Addr,
    /// What it writes.
    pub store: Store,
    /// Our QPN.
    pub local_qpn: u32,
    /// The CM client.
    pub cm: CmClient,
    /// The phase.
    pub phase: Phase,
    /// Requester (valid from [`Phase::Metadata`] on).
    pub req: Requester,
    /// Responder for the collector's SENDs.
    pub resp: Responder,
    /// The region, once known.
    pub meta: Metadata,
    /// Slots (entries, columns) in the region.
    pub slots: u64,
    /// The path to the collector, once resolved.
    pub hop: Option<NextHop>,
    /// When the path was last resolved.
    pub resolved_at: u64,
    /// Addressing of every packet to the collector.
    pub flow: UdpFlow,
    /// The hot path's template, and its variant with immediate data.
    pub tmpl: Option<(RoceTemplate, Option<RoceTemplate>)>,
    /// PSN of our next CM MAD (UD).
    pub ud_psn: u32,
    /// Connections made (for the starting PSN of the next).
    pub attempts: u32,
    /// When the phase last changed (the wait for the region is bounded).
    pub since: u64,
    /// The requests a lost connection left unacknowledged, with the region they were for:
    /// posted again on the next connection if it names the same region, else counted lost.
    pub orphans: Option<(Requester, Metadata)>,
    /// Data items posted to the current region (what a collector restart takes with it).
    pub region_entries: u64,
    /// Bytes of one data item in a request's payload (Append entries, sketch columns); 0: one
    /// item per request that has a payload or is an atomic.
    pub entry_len: usize,
    /// The connection failed on a fatal NAK: its requests are not replayed (they would fail
    /// again) but counted lost.
    pub poisoned: bool,
}

impl Qp {
    /// How many data items one request of this store carries (Append entries, Key-Write and
    /// Key-Increment copies, postcards, sketch columns); 0 for a zero-length WRITE (an ack
    /// probe, a Key-Increment's immediate). A Postcarder path write carries the postcards that
    /// came: its non-zero hop values (a hop that never came is written as 0).
    #[inline]
    pub fn entries_in(&self, op: &Op, payload: &[u8]) -> u64 {
        match (self.entry_len, &self.store) {
            (0, Store::Postcarder(_)) => payload
                .chunks_exact(4)
                .take(wire::dta::layout::POSTCARDER_HOPS)
                .filter(|w| w.iter().any(|&b| b != 0))
                .count() as u64,
            (0, _) => u64::from(!payload.is_empty() || op.is_atomic()),
            (l, _) => (payload.len() / l) as u64,
        }
    }

    /// Number of the next starting PSN: spread over the PSN space per QP and attempt.
    pub fn next_start_psn(&mut self, seed: u32) -> u32 {
        self.attempts += 1;
        (self.local_qpn.wrapping_mul(0x9e37_79b1) ^ self.attempts.wrapping_mul(0x85eb_ca6b) ^ seed)
            & wire::roce::PSN_MASK
    }

    /// The region's slot count for this store: the largest power of two that fits (Key-Write,
    /// Key-Increment and Postcarder hash into a power of two; an Append ring and a sketch use
    /// every whole slot).
    pub fn slots_for(&self, len: u32) -> u64 {
        let n = u64::from(len) / self.store.unit_len();
        match self.store {
            Store::KeyWrite { .. } | Store::KeyIncrement | Store::Postcarder(_) => {
                if n == 0 {
                    0
                } else {
                    1 << (63 - n.leading_zeros())
                }
            }
            Store::Append { .. } | Store::Sketch { .. } => n,
        }
    }

    /// Set the addressing from the resolved path and source address; rebuild the templates.
    pub fn set_path(&mut self, hop: NextHop, src: Ipv4Addr, dscp: u8, ecn: u8) {
        self.hop = Some(hop);
        // Per-QP entropy for ECMP: a UDP source port in the dynamic range.
        let src_port = 0xc000 | (self.local_qpn as u16 & 0x3fff);
        self.flow = UdpFlow {
            dscp,
            ecn,
            ..UdpFlow::host_udp(
                hop.src_mac,
                hop.dst_mac,
                SocketAddrV4::new(src, src_port),
                SocketAddrV4::new(self.peer, wire::udp::port::ROCE_V2),
            )
        };
        self.build_templates();
    }

    /// Build the templates once both the path and the peer QP are known.
    pub fn build_templates(&mut self) {
        self.tmpl = None;
        if self.hop.is_none() || self.phase == Phase::Connecting {
            return;
        }
        let Some((opcode, len)) = self.store.template_shape() else { return };
        let bth = frames::bth(opcode, self.req.dest_qp(), 0, false);
        let Ok(main) = RoceTemplate::new(&self.flow, &bth, len) else { return };
        let imm = (opcode == Opcode::RC_RDMA_WRITE_ONLY)
            .then(|| {
                let b = BthRepr { opcode: Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, ..bth };
                RoceTemplate::new(&self.flow, &b, len).ok()
            })
            .flatten();
        self.tmpl = Some((main, imm));
    }

    /// Write a request packet into `f`: from the template when its shape fits (field by field,
    /// no extension-header structs, the ICRC left zero for [`seal`](Self::seal) at deparse
    /// time), otherwise with the general builder (sealed at once). Returns `false` (leaving `f`
    /// unspecified) if it does not fit.
    #[inline]
    pub fn build<F: Frame>(&self, f: &mut F, psn: u32, ack_req: bool, op: &Op, payload: &[u8]) -> bool {
        if let Some((main, imm_t)) = &self.tmpl {
            let done = match *op {
                Op::Write { va, rkey, imm } => {
                    let t = if imm.is_some() { imm_t.as_ref() } else { Some(main) };
                    t.is_some_and(|t| {
                        frame_of_len(f, t.frame_len()).is_some_and(|b| {
                            t.write_rdma_write(b, psn, ack_req, RemoteAddr { va, rkey }, imm, payload).is_ok()
                        })
                    })
                }
                Op::FetchAdd { va, rkey, add }
                    if main.opcode() == Opcode::RC_FETCH_ADD && payload.is_empty() =>
                {
                    frame_of_len(f, main.frame_len()).is_some_and(|b| {
                        main.write_atomic(b, psn, ack_req, RemoteAddr { va, rkey }, add, 0).is_ok()
                    })
                }
                _ => false,
            };
            if done {
                return true;
            }
        }
        let stack = RoceStack {
            flow: self.flow,
            roce: frames::request(Transport::Rc, self.req.dest_qp(), psn, ack_req, op, payload),
        };
        frame_of_len(f, stack.buffer_len()).is_some_and(|b| stack.emit(b).is_ok())
    }

    /// Compute the ICRC of a frame [`build`](Self::build) wrote from a template (its opcode
    /// and length pick the template); `false` if it is not one of them.
    #[inline]
    pub fn seal(&self, frame: &mut [u8], opcode: Opcode) -> bool {
        let Some((main, imm)) = &self.tmpl else { return false };
        for t in [Some(main), imm.as_ref()].into_iter().flatten() {
            if t.opcode() == opcode && t.frame_len() == frame.len() {
                t.seal(frame);
                return true;
            }
        }
        false
    }

    /// Write any RoCEv2 packet (an ACK, a CM MAD) to the collector into `f`.
    pub fn build_repr<F: Frame>(&self, f: &mut F, roce: wire::roce::RoceRepr<'_>) -> bool {
        let stack = RoceStack { flow: self.flow, roce };
        frame_of_len(f, stack.buffer_len()).is_some_and(|b| stack.emit(b).is_ok())
    }
}

/// Make `f` exactly `len` bytes long from its start of headroom and return its bytes (content
/// unspecified); `None` if it cannot hold them.
#[inline(always)]
fn frame_of_len<F: Frame>(f: &mut F, len: usize) -> Option<&mut [u8]> {
    f.reset();
    f.append(len)
}
