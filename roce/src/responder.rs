//! The responder side of an RC or UC queue pair (IBTA Vol. 1 §9.7.5.1, §9.7.4.1.x).
//!
//! [`Responder::handle_packet`] takes one request packet's BTH, extension headers and payload and
//! decides, by PSN:
//!
//! * **the expected PSN**: validate and execute it against a [`Memory`] (WRITE — Only, or
//!   First/Middle/Last —, WRITE with Immediate, SEND, FETCH_ADD, CMP_SWAP), advance, and answer
//!   with an ACK if AckReq is set (an atomic is always answered, with an atomic ACK). A WRITE
//!   outside a registered region, with a wrong R_Key or past its end never touches memory and is
//!   answered with a remote-access-error NAK; so is a misaligned atomic;
//! * **an earlier PSN** (a duplicate, from a go-back-N retransmission): not executed again; it
//!   is acknowledged with the latest PSN, and a duplicate atomic gets its original result back
//!   from a small replay cache, as IB requires;
//! * **a later PSN** (a gap): dropped, and one PSN-sequence-error NAK naming the expected PSN
//!   goes back — one per gap, not one per packet.
//!
//! UC has no responses: a gap drops the message in progress, and the next First or Only packet
//! resynchronises.

use wire::roce::{NakCode, Opcode, PSN_MASK, RoceExt, psn_add, psn_diff};

use crate::requester::Transport;

/// Why memory refused an access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// No region has this R_Key.
    #[error("unknown R_Key")]
    BadKey,
    /// The access falls (partly) outside the region.
    #[error("outside the region")]
    OutOfBounds,
    /// The region does not allow this access.
    #[error("access not permitted")]
    NoPermission,
    /// An atomic's address is not 8-byte aligned.
    #[error("misaligned atomic")]
    Misaligned,
}

/// Registered memory as a responder sees it: regions named by R_Key, addressed by VA.
pub trait Memory {
    /// Copy `data` to `va` in the region of `rkey`, or refuse without writing anything.
    fn write(&mut self, rkey: u32, va: u64, data: &[u8]) -> Result<(), AccessError>;
    /// Add `add` to the 64-bit word at `va` (in the responder's byte order, little-endian here),
    /// returning its previous value.
    fn fetch_add(&mut self, rkey: u32, va: u64, add: u64) -> Result<u64, AccessError>;
    /// Replace the 64-bit word at `va` by `swap` if it equals `compare`; returns its previous
    /// value.
    fn cmp_swap(&mut self, rkey: u32, va: u64, compare: u64, swap: u64) -> Result<u64, AccessError>;
    /// Whether a WRITE of `len` bytes at `va` with `rkey` would be allowed, touching nothing:
    /// a multi-packet WRITE's whole message is checked at its First packet.
    fn check_write(&self, rkey: u32, va: u64, len: u64) -> Result<(), AccessError>;
    /// If the region of `rkey` is an Append ring whose head this memory keeps: the word our
    /// 24-byte metadata adds — the entries written to it so far, and maybe
    /// `wire::dta::layout::RING_MARKS` (sent to a (re)connecting writer).
    fn ring_head(&self, _rkey: u32) -> Option<u64> {
        None
    }
}

/// A responder with no registered memory (a DTA translator, an agent that only takes SENDs):
/// every RDMA access is refused, as for an unknown R_Key.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMemory;

impl Memory for NoMemory {
    fn write(&mut self, _rkey: u32, _va: u64, _data: &[u8]) -> Result<(), AccessError> {
        Err(AccessError::BadKey)
    }
    fn fetch_add(&mut self, _rkey: u32, _va: u64, _add: u64) -> Result<u64, AccessError> {
        Err(AccessError::BadKey)
    }
    fn cmp_swap(&mut self, _rkey: u32, _va: u64, _c: u64, _s: u64) -> Result<u64, AccessError> {
        Err(AccessError::BadKey)
    }
    fn check_write(&self, _rkey: u32, _va: u64, _len: u64) -> Result<(), AccessError> {
        Err(AccessError::BadKey)
    }
}

/// What to send back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Nothing.
    None,
    /// ACK (opcode ACKNOWLEDGE, syndrome ACK) for `psn`.
    Ack {
        /// The PSN acknowledged (everything up to it).
        psn: u32,
        /// Messages completed.
        msn: u32,
    },
    /// NAK (opcode ACKNOWLEDGE, syndrome NAK with `code`) at `psn`.
    Nak {
        /// For a sequence error the expected PSN; otherwise the PSN of the failed request.
        psn: u32,
        /// Messages completed.
        msn: u32,
        /// Why.
        code: NakCode,
    },
    /// Atomic ACK (opcode ATOMIC ACKNOWLEDGE) with the value found before the operation.
    AtomicAck {
        /// The atomic's PSN.
        psn: u32,
        /// Messages completed.
        msn: u32,
        /// The original value.
        original: u64,
    },
}

/// What the request delivered to the responder's host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery<'a> {
    /// Nothing (duplicate, error, or a WRITE without immediate).
    None,
    /// A WRITE completed; with immediate data if it had one.
    Write {
        /// R_Key.
        rkey: u32,
        /// Where its last packet wrote.
        va: u64,
        /// Bytes its last packet wrote.
        len: usize,
        /// Immediate data, on a WRITE with Immediate.
        imm: Option<u32>,
    },
    /// A SEND's payload (one packet), with its immediate data if any.
    Send {
        /// Payload.
        data: &'a [u8],
        /// Immediate data.
        imm: Option<u32>,
    },
    /// An atomic executed.
    Atomic {
        /// R_Key.
        rkey: u32,
        /// Address.
        va: u64,
        /// Previous value.
        original: u64,
    },
}

/// How the request was treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Executed in order.
    Executed,
    /// A duplicate: acknowledged, not executed again.
    Duplicate,
    /// Ahead of the expected PSN: dropped.
    OutOfSequence,
    /// Refused by memory: nothing written.
    AccessError(AccessError),
    /// Not a request this QP accepts (an opcode out of place, a middle without a first, a payload
    /// longer than its DMA length): dropped, and on RC NAKed as an invalid request.
    Invalid,
}

/// The result of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome<'a> {
    /// What to send back.
    pub reply: Reply,
    /// What reached the host.
    pub delivery: Delivery<'a>,
    /// How it was treated.
    pub verdict: Verdict,
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponderStats {
    /// Requests executed.
    pub executed: u64,
    /// Duplicates acknowledged.
    pub duplicates: u64,
    /// Packets ahead of the expected PSN, dropped.
    pub out_of_sequence: u64,
    /// Sequence-error NAKs sent.
    pub seq_naks: u64,
    /// Requests refused with a remote-access-error NAK.
    pub access_errors: u64,
    /// Requests dropped as invalid.
    pub invalid: u64,
}

const REPLAY: usize = 16;

/// The responder side of one queue pair.
#[derive(Debug, Clone)]
pub struct Responder {
    transport: Transport,
    epsn: u32,
    msn: u32,
    /// A sequence-error NAK went out for the current gap.
    nak_sent: bool,
    /// The multi-packet WRITE in progress: R_Key, next VA, bytes left.
    write: Option<(u32, u64, u64)>,
    /// Results of recent atomics, by PSN, for duplicates.
    replay: [(u32, u64, u32); REPLAY],
    replay_next: usize,
    stats: ResponderStats,
}

/// The syndrome-free opcode number within a transport (bits 4..0).
fn op_code(opcode: Opcode) -> u8 {
    opcode.0 & 0x1f
}

impl Responder {
    /// A responder that expects `start_psn` first (the requester's CM starting PSN).
    pub fn new(transport: Transport, start_psn: u32) -> Self {
        Self {
            transport,
            epsn: start_psn & PSN_MASK,
            msn: 0,
            nak_sent: false,
            write: None,
            replay: [(u32::MAX, 0, 0); REPLAY],
            replay_next: 0,
            stats: ResponderStats::default(),
        }
    }

    /// The PSN expected next.
    pub fn expected_psn(&self) -> u32 {
        self.epsn
    }

    /// Messages completed (the MSN of the next ACK).
    pub fn msn(&self) -> u32 {
        self.msn
    }

    /// Counters.
    pub fn stats(&self) -> ResponderStats {
        self.stats
    }

    fn outcome(reply: Reply, delivery: Delivery<'_>, verdict: Verdict) -> Outcome<'_> {
        Outcome { reply, delivery, verdict }
    }

    /// Handle one request packet (BTH opcode, PSN and AckReq; its extension headers; its
    /// payload without pad and ICRC).
    pub fn handle_packet<'a>(
        &mut self,
        opcode: Opcode,
        psn: u32,
        ack_req: bool,
        ext: &RoceExt,
        payload: &'a [u8],
        mem: &mut dyn Memory,
    ) -> Outcome<'a> {
        let psn = psn & PSN_MASK;
        let d = psn_diff(psn, self.epsn);
        let code = op_code(opcode);
        let is_atomic = matches!(code, 0x13 | 0x14) && self.transport == Transport::Rc;
        if self.transport == Transport::Uc {
            if d != 0 {
                // A gap: the message in progress is lost; a First or Only starts afresh.
                self.write = None;
                if !matches!(code, 0x00 | 0x04 | 0x05 | 0x06 | 0x0a | 0x0b) {
                    self.stats.out_of_sequence += 1;
                    return Self::outcome(Reply::None, Delivery::None, Verdict::OutOfSequence);
                }
                self.epsn = psn;
            }
            let mut o = self.execute(opcode, psn, false, ext, payload, mem);
            o.reply = Reply::None;
            return o;
        }
        if d > 0 {
            self.stats.out_of_sequence += 1;
            let reply = if self.nak_sent {
                Reply::None
            } else {
                self.nak_sent = true;
                self.stats.seq_naks += 1;
                Reply::Nak { psn: self.epsn, msn: self.msn, code: NakCode::PsnSequenceError }
            };
            return Self::outcome(reply, Delivery::None, Verdict::OutOfSequence);
        }
        if d < 0 {
            self.stats.duplicates += 1;
            if is_atomic {
                // Replay the original result; never execute an atomic twice.
                return match self.replay.iter().find(|r| r.0 == psn) {
                    Some(&(_, original, msn)) => Self::outcome(
                        Reply::AtomicAck { psn, msn, original },
                        Delivery::None,
                        Verdict::Duplicate,
                    ),
                    None => Self::outcome(Reply::None, Delivery::None, Verdict::Duplicate),
                };
            }
            let last = psn_add(self.epsn, PSN_MASK);
            return Self::outcome(
                Reply::Ack { psn: last, msn: self.msn },
                Delivery::None,
                Verdict::Duplicate,
            );
        }
        self.nak_sent = false;
        self.execute(opcode, psn, ack_req, ext, payload, mem)
    }

    fn execute<'a>(
        &mut self,
        opcode: Opcode,
        psn: u32,
        ack_req: bool,
        ext: &RoceExt,
        payload: &'a [u8],
        mem: &mut dyn Memory,
    ) -> Outcome<'a> {
        let code = op_code(opcode);
        let imm = ext.immdt.map(|i| i.imm);
        let access_nak = |s: &mut Self, e: AccessError| {
            s.stats.access_errors += 1;
            s.write = None;
            Self::outcome(
                Reply::Nak { psn, msn: s.msn, code: NakCode::RemoteAccessError },
                Delivery::None,
                Verdict::AccessError(e),
            )
        };
        let (delivery, completes) = match code {
            // WRITE First / Only (with or without immediate): the RETH names the whole message.
            0x06 | 0x0a | 0x0b => {
                let Some(reth) = ext.reth else { return self.invalid(psn) };
                if payload.len() as u64 > u64::from(reth.dma_len) {
                    return self.invalid(psn);
                }
                // A First names the whole message: all of it must be allowed before any of it
                // is written (a Last past the region's end must not leave the First behind).
                if code == 0x06
                    && let Err(e) = mem.check_write(reth.rkey, reth.va, u64::from(reth.dma_len))
                {
                    return access_nak(self, e);
                }
                // A zero-length WRITE touches no memory and is not checked (IBTA C9-88).
                if !payload.is_empty()
                    && let Err(e) = mem.write(reth.rkey, reth.va, payload)
                {
                    return access_nak(self, e);
                }
                if code == 0x06 {
                    let left = u64::from(reth.dma_len) - payload.len() as u64;
                    self.write = Some((reth.rkey, reth.va + payload.len() as u64, left));
                    (Delivery::None, false)
                } else {
                    self.write = None;
                    (Delivery::Write { rkey: reth.rkey, va: reth.va, len: payload.len(), imm }, true)
                }
            }
            // WRITE Middle / Last (with immediate).
            0x07..=0x09 => {
                let Some((rkey, va, left)) = self.write else { return self.invalid(psn) };
                if payload.len() as u64 > left {
                    return self.invalid(psn);
                }
                if !payload.is_empty()
                    && let Err(e) = mem.write(rkey, va, payload)
                {
                    return access_nak(self, e);
                }
                if code == 0x07 {
                    self.write = Some((rkey, va + payload.len() as u64, left - payload.len() as u64));
                    (Delivery::None, false)
                } else {
                    self.write = None;
                    (Delivery::Write { rkey, va, len: payload.len(), imm }, true)
                }
            }
            // SEND Only (with immediate).
            0x04 | 0x05 => (Delivery::Send { data: payload, imm }, true),
            // Atomics.
            0x13 | 0x14 if self.transport == Transport::Rc => {
                let Some(a) = ext.atomic_eth else { return self.invalid(psn) };
                if a.va % 8 != 0 {
                    return access_nak(self, AccessError::Misaligned);
                }
                let r = if code == 0x14 {
                    mem.fetch_add(a.rkey, a.va, a.swap_add)
                } else {
                    mem.cmp_swap(a.rkey, a.va, a.compare, a.swap_add)
                };
                let original = match r {
                    Ok(v) => v,
                    Err(e) => return access_nak(self, e),
                };
                self.epsn = psn_add(psn, 1);
                self.msn = (self.msn + 1) & PSN_MASK;
                self.replay[self.replay_next] = (psn, original, self.msn);
                self.replay_next = (self.replay_next + 1) % REPLAY;
                self.stats.executed += 1;
                return Self::outcome(
                    Reply::AtomicAck { psn, msn: self.msn, original },
                    Delivery::Atomic { rkey: a.rkey, va: a.va, original },
                    Verdict::Executed,
                );
            }
            _ => return self.invalid(psn),
        };
        self.epsn = psn_add(psn, 1);
        if completes {
            self.msn = (self.msn + 1) & PSN_MASK;
        }
        self.stats.executed += 1;
        let reply = if ack_req { Reply::Ack { psn, msn: self.msn } } else { Reply::None };
        Self::outcome(reply, delivery, Verdict::Executed)
    }

    /// An invalid request: dropped, and on RC answered with an invalid-request NAK.
    fn invalid<'a>(&mut self, psn: u32) -> Outcome<'a> {
        self.stats.invalid += 1;
        self.write = None;
        let reply = match self.transport {
            Transport::Rc => Reply::Nak { psn, msn: self.msn, code: NakCode::InvalidRequest },
            Transport::Uc => Reply::None,
        };
        Self::outcome(reply, Delivery::None, Verdict::Invalid)
    }
}

/// One registered region: `len` bytes at `va`, named by `rkey`, backed by `buf`.
#[derive(Debug, Clone)]
pub struct Region<B> {
    /// Remote key.
    pub rkey: u32,
    /// Virtual address of its first byte.
    pub va: u64,
    /// Whether remote writes are allowed.
    pub write: bool,
    /// Whether remote atomics are allowed.
    pub atomic: bool,
    /// The bytes.
    pub buf: B,
    /// An Append ring of entries this long: the memory keeps its head
    /// ([`Memory::ring_head`], `wire::dta::layout::append_head_after`).
    pub ring: Option<RingHead>,
}

/// The head of an Append ring kept by [`Regions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RingHead {
    /// Entry length, bytes.
    pub entry: u32,
    /// Entries written so far.
    pub head: u64,
    /// Ask the writer to mark its batches (`wire::dta::layout::RING_MARKS` in the word
    /// [`Memory::ring_head`] gives), as a collector whose NIC writes by DMA does.
    pub marks: bool,
}

/// A [`Memory`] over a set of regions, each backed by any byte buffer (a `Vec`, a slice of a
/// hugepage mapping). Lookups are by R_Key, then bounds-checked by VA; nothing is written unless
/// the whole access is inside the region.
#[derive(Debug, Clone, Default)]
pub struct Regions<B> {
    regions: Vec<Region<B>>,
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> Regions<B> {
    /// No regions.
    pub fn new() -> Self {
        Self { regions: Vec::new() }
    }

    /// Register a region.
    pub fn add(&mut self, r: Region<B>) {
        self.regions.push(r);
    }

    /// The region with `rkey`.
    pub fn get(&self, rkey: u32) -> Option<&Region<B>> {
        self.regions.iter().find(|r| r.rkey == rkey)
    }

    /// The region with `rkey`, to change.
    pub fn get_mut(&mut self, rkey: u32) -> Option<&mut Region<B>> {
        self.regions.iter_mut().find(|r| r.rkey == rkey)
    }

    /// All regions.
    pub fn regions(&self) -> &[Region<B>] {
        &self.regions
    }

    /// The bytes of `len` at `va` in region `rkey`, checked: `Ok(offset)`.
    fn locate(&self, rkey: u32, va: u64, len: usize, atomic: bool) -> Result<(usize, usize), AccessError> {
        let i = self.regions.iter().position(|r| r.rkey == rkey).ok_or(AccessError::BadKey)?;
        let r = &self.regions[i];
        if !(if atomic { r.atomic } else { r.write }) {
            return Err(AccessError::NoPermission);
        }
        let size = r.buf.as_ref().len() as u64;
        let off = va.checked_sub(r.va).ok_or(AccessError::OutOfBounds)?;
        if off.checked_add(len as u64).is_none_or(|end| end > size) {
            return Err(AccessError::OutOfBounds);
        }
        Ok((i, off as usize))
    }

    fn word(&mut self, rkey: u32, va: u64, f: impl FnOnce(u64) -> u64) -> Result<u64, AccessError> {
        let (i, off) = self.locate(rkey, va, 8, true)?;
        let b = &mut self.regions[i].buf.as_mut()[off..off + 8];
        let old = u64::from_le_bytes(b.try_into().map_err(|_| AccessError::OutOfBounds)?);
        b.copy_from_slice(&f(old).to_le_bytes());
        Ok(old)
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> Memory for Regions<B> {
    fn write(&mut self, rkey: u32, va: u64, data: &[u8]) -> Result<(), AccessError> {
        let (i, off) = self.locate(rkey, va, data.len(), false)?;
        let r = &mut self.regions[i];
        r.buf.as_mut()[off..off + data.len()].copy_from_slice(data);
        if let Some(ring) = &mut r.ring {
            let e = u64::from(ring.entry.max(1));
            let entries = r.buf.as_ref().len() as u64 / e;
            ring.head = wire::dta::layout::append_head_after(
                ring.head,
                entries,
                off as u64 / e,
                (data.len() as u64).div_ceil(e),
            );
        }
        Ok(())
    }

    fn check_write(&self, rkey: u32, va: u64, len: u64) -> Result<(), AccessError> {
        let len = usize::try_from(len).map_err(|_| AccessError::OutOfBounds)?;
        self.locate(rkey, va, len, false).map(|_| ())
    }

    fn ring_head(&self, rkey: u32) -> Option<u64> {
        self.get(rkey)?.ring.map(|r| if r.marks { r.head | wire::dta::layout::RING_MARKS } else { r.head })
    }

    fn fetch_add(&mut self, rkey: u32, va: u64, add: u64) -> Result<u64, AccessError> {
        self.word(rkey, va, |v| v.wrapping_add(add))
    }

    fn cmp_swap(&mut self, rkey: u32, va: u64, compare: u64, swap: u64) -> Result<u64, AccessError> {
        self.word(rkey, va, |v| if v == compare { swap } else { v })
    }
}

#[cfg(test)]
mod tests;
