//! The one vocabulary every sans-IO core here speaks, after quinn-proto's `Connection`, and the
//! frame-level [`Agent`] trait that host runtimes drive.
//!
//! | verb | what it means | here |
//! |---|---|---|
//! | `handle_packet(now, …)` / `handle_*(now, …)` | something arrived | [`Agent::handle_packet`] (a frame); a queue pair's response ([`crate::Requester::handle_packet`]), a request ([`crate::responder::Responder::handle_packet`]), a CM MAD ([`crate::cm::CmClient::handle_packet`]) |
//! | `handle_timeout(now)` | time passed: run what is due | every core with timers |
//! | `poll_transmit(now, …)` | what to send now, if anything | [`Agent::poll_transmit`]; a queue pair's resends ([`crate::Requester::poll_transmit`]) |
//! | `poll_timeout()` | when `handle_timeout` next has work | every core with timers |
//!
//! Calls the application makes are named for what they do (`post`, `connect`, `start_flow`).
//! A runtime — the poll-mode loop on a real port, the lab's virtual-time fabric — drives an
//! [`Agent`] without knowing what it is: it hands in the frames that arrive, calls
//! `handle_timeout` when `poll_timeout` says, and sends what `poll_transmit` gives while its
//! link allows.

/// A host's sans-IO protocol agent at the level of whole Ethernet frames: what the host
/// runtime on a real port and the lab's host nodes run. RoCEv2 flows (`nic_agent`), the DTA
/// soft-RNIC (`collector`) and the DTA reporter ([`crate::dta::ReporterAgent`]) are agents.
pub trait Agent {
    /// A frame arrived at `now` (from its destination MAC; FCS excluded). What is not the
    /// agent's business is ignored, and counted where the agent keeps counters.
    fn handle_packet(&mut self, now: u64, frame: &[u8]);

    /// Run what is due at `now` (retransmission timers, congestion-control timers, flow starts,
    /// report pacing).
    fn handle_timeout(&mut self, now: u64);

    /// The next frame to send at `now`, written into the front of `buf`; its length. `paused`
    /// is the bit mask of priorities the link's PFC holds: a frame of a paused priority is not
    /// returned (it stays queued in the agent). `None`: nothing to send now; ask again after
    /// [`poll_timeout`](Self::poll_timeout) or the next packet. `buf` is at least as long as
    /// the agent's largest frame.
    fn poll_transmit(&mut self, now: u64, paused: u8, buf: &mut [u8]) -> Option<usize>;

    /// When [`handle_timeout`](Self::handle_timeout) next has something to do, or a frame held
    /// back by pacing may go.
    fn poll_timeout(&self) -> Option<u64>;
}
