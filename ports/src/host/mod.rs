//! The host runtime: what a host's sans-IO agent ([`roce::agent::Agent`]) runs on — a frame
//! port and its buffers, a clock, ARP for the host's address, an idle policy — and the loop that
//! drives any agent. The `nic-agent` binary, the collector's soft-RNIC on AF_PACKET or DPDK, and
//! `dataplane report` run on it; the lab runs the same agents on its virtual clock instead.
//!
//! What it is not: it has no protocol logic (the agent's), and no PFC — a real NIC pauses in
//! hardware, and the runtimes here run on ports that carry none.

pub mod arp;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use roce::agent::Agent;
use wire::ethernet::EthernetAddress;

use crate::buf::{Frame, Pool};
use crate::port::{PortIo, PortStats, fill};

/// Frames per receive or transmit burst.
pub const BURST: usize = 32;

/// The monotonic clock, in nanoseconds since it was made.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    t0: Instant,
}

impl Clock {
    /// A clock starting at 0 now.
    pub fn new() -> Self {
        Self { t0: Instant::now() }
    }

    /// Nanoseconds since the start.
    pub fn now(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

/// How a poll loop waits when a round did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Busy-poll, yielding the thread between rounds: a poll-mode runtime on a core of its own.
    Spin,
    /// Sleep until shortly before the next deadline (at most 1 ms), or until a frame arrives on
    /// a port with a file descriptor ([`PortIo::rx_fd`]: AF_PACKET), and spin the last
    /// [`SPIN_NS`]: a host process that shares its cores. Without a descriptor it sleeps by
    /// the clock alone, 20 µs at a time when there is no deadline.
    Sleep,
}

/// Under [`Idle::Sleep`], a deadline nearer than this is waited for spinning (a sleep and its
/// wake-up cost about as much).
pub const SPIN_NS: u64 = 20_000;

/// The timer slack [`Idle::Sleep`] sets on its thread, ns: Linux rounds a normal thread's sleeps
/// up by 50 µs by default, which would add that to every wake-up for a deadline.
const TIMER_SLACK_NS: libc::c_ulong = 1_000;

impl Idle {
    /// Wait after an idle round at `now`, the next deadline being `until`; `fd` (a port's
    /// [`PortIo::rx_fd`]) ends a sleep as soon as a frame arrives on it.
    pub fn wait(self, now: u64, until: Option<u64>, fd: Option<std::os::fd::RawFd>) {
        match (self, until, fd) {
            (Self::Spin, _, _) => std::thread::yield_now(),
            (Self::Sleep, Some(t), _) if t <= now + SPIN_NS => std::hint::spin_loop(),
            (Self::Sleep, until, Some(fd)) => {
                let ns = until.map_or(1_000_000, |t| (t - now - SPIN_NS / 2).min(1_000_000));
                wait_readable(&[fd], ns);
            }
            (Self::Sleep, Some(t), None) => {
                set_timer_slack();
                std::thread::sleep(Duration::from_nanos((t - now - SPIN_NS / 2).min(1_000_000)))
            }
            (Self::Sleep, None, None) => {
                set_timer_slack();
                std::thread::sleep(Duration::from_micros(20))
            }
        }
    }
}

/// Lower the calling thread's timer slack to [`TIMER_SLACK_NS`], once per thread.
// Audited: one prctl on the calling thread's own timer slack; no memory is shared.
#[allow(unsafe_code)]
fn set_timer_slack() {
    thread_local!(static SET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    SET.with(|set| {
        if !set.replace(true) {
            // SAFETY: PR_SET_TIMERSLACK takes a plain integer and acts on the calling thread.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0) };
        }
    });
}

/// Descriptors [`wait_readable`] watches at most.
pub const MAX_WAIT_FDS: usize = 16;

/// Sleep until one of `fds` is readable or `ns` have passed (`ppoll`, nanosecond timeout), with
/// the thread's timer slack lowered to 1 µs so a timed wake-up is not 50 µs late: how a poll loop
/// on socket ports (AF_PACKET) idles without missing a frame. At most [`MAX_WAIT_FDS`]
/// descriptors are watched (the rest only by the timeout).
// Audited: ppoll on descriptors the caller's ports own, with pollfds and a timespec on the
// stack; no memory is shared.
#[allow(unsafe_code)]
pub fn wait_readable(fds: &[std::os::fd::RawFd], ns: u64) {
    set_timer_slack();
    let mut p = [libc::pollfd { fd: -1, events: libc::POLLIN, revents: 0 }; MAX_WAIT_FDS];
    let n = fds.len().min(p.len());
    for (x, &fd) in p.iter_mut().zip(fds) {
        x.fd = fd;
    }
    let ts =
        libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as _ };
    // SAFETY: `p[..n]` are valid pollfds, `ts` a valid timespec, the signal mask null
    // (unchanged); an error (EINTR) only ends the wait early, which a poll loop tolerates.
    unsafe { libc::ppoll(p.as_mut_ptr(), n as libc::nfds_t, &ts, std::ptr::null()) };
}

/// Why the host runtime could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// No ARP reply named the address in time.
    #[error("no ARP answer from {0} within {1:?}")]
    NoArpAnswer(Ipv4Addr, Duration),
}

/// A frame `agent` writes into a buffer from `pool`: its whole tailroom offered, trimmed to the
/// length written. `None` (the buffer back) when the agent has nothing or no buffer is free.
pub fn transmit_into<F: Frame, A: Agent + ?Sized>(
    pool: &mut dyn Pool<F>,
    agent: &mut A,
    now: u64,
    paused: u8,
) -> Option<F> {
    let mut b = pool.alloc()?;
    let room = b.tailroom();
    let n = b.append(room).and_then(|buf| agent.poll_transmit(now, paused, buf));
    match n {
        Some(n) if n <= room => {
            b.trim(room - n);
            Some(b)
        }
        _ => {
            pool.free(b);
            None
        }
    }
}

/// A host on a frame port: the port, its buffers, the host's addresses and clock.
pub struct HostPort<F, P, Q> {
    port: P,
    pool: Q,
    /// The host's MAC.
    pub mac: EthernetAddress,
    /// The host's address (ARP requests for it are answered).
    pub ip: Ipv4Addr,
    clock: Clock,
    idle: Idle,
    rx: Vec<F>,
    tx: Vec<F>,
    /// Frames the agent made that the port would not take (lost, as on a full NIC queue).
    pub tx_dropped: u64,
}

impl<F, P, Q> std::fmt::Debug for HostPort<F, P, Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostPort").field("mac", &self.mac).field("ip", &self.ip).finish()
    }
}

impl<F: Frame, P: PortIo<F>, Q: Pool<F> + 'static> HostPort<F, P, Q> {
    /// A host at `ip`/`mac` on `port`, with buffers from `pool`.
    pub fn new(port: P, pool: Q, mac: EthernetAddress, ip: Ipv4Addr, idle: Idle) -> Self {
        Self {
            port,
            pool,
            mac,
            ip,
            clock: Clock::new(),
            idle,
            rx: Vec::with_capacity(BURST),
            tx: Vec::with_capacity(BURST),
            tx_dropped: 0,
        }
    }

    /// Nanoseconds since the host started.
    pub fn now(&self) -> u64 {
        self.clock.now()
    }

    /// The port's counters.
    pub fn port_stats(&self) -> PortStats {
        self.port.stats()
    }

    /// The port.
    pub fn port(&self) -> &P {
        &self.port
    }

    /// The port, the host done with.
    pub fn into_port(self) -> P {
        self.port
    }

    /// Send what is queued; what the port will not take now is retried, then dropped.
    fn flush(&mut self) {
        for _ in 0..1000 {
            if self.tx.is_empty() {
                return;
            }
            self.port.tx_burst(&mut self.tx, &mut self.pool);
        }
        self.tx_dropped += self.tx.len() as u64;
        for f in self.tx.drain(..) {
            self.pool.free(f);
        }
    }

    /// Receive a burst; each frame goes to `f` (ARP requests for the host's address are
    /// answered first). Returns how many arrived.
    fn receive(&mut self, mut f: impl FnMut(u64, &[u8])) -> usize {
        let n = self.port.rx_burst(&mut self.pool, &mut self.rx, BURST);
        if n == 0 {
            return 0;
        }
        let now = self.now();
        let mut rx = std::mem::take(&mut self.rx);
        for b in rx.drain(..) {
            let (ip, mac) = (self.ip, self.mac);
            if let Some(reply) = arp::answer(b.data(), |t| (t == ip).then_some(mac)) {
                if let Some(r) = fill(&mut self.pool as &mut dyn Pool<F>, &reply) {
                    self.tx.push(r);
                }
            } else {
                f(now, b.data());
            }
            self.pool.free(b);
        }
        self.rx = rx;
        n
    }

    /// The MAC of `target`, by ARP: a request every 200 ms until a reply, for at most `timeout`.
    pub fn resolve(&mut self, target: Ipv4Addr, timeout: Duration) -> Result<EthernetAddress, HostError> {
        self.resolve_until(target, timeout, || false)
    }

    /// [`Self::resolve`], given up early when `give_up()` says so (a signal): a stop is never
    /// held behind an ARP timeout.
    pub fn resolve_until(
        &mut self,
        target: Ipv4Addr,
        timeout: Duration,
        give_up: impl Fn() -> bool,
    ) -> Result<EthernetAddress, HostError> {
        let mut r = arp::Resolver::new(self.mac, self.ip, target, 200_000_000);
        let deadline = self.now().saturating_add(timeout.as_nanos().min(u128::from(u64::MAX)) as u64);
        while self.now() < deadline && !give_up() {
            if let Some(req) = r.poll_transmit(self.now())
                && let Some(b) = fill(&mut self.pool as &mut dyn Pool<F>, &req)
            {
                self.tx.push(b);
            }
            self.flush();
            if self.receive(|_, frame| r.handle_packet(frame)) == 0 {
                self.idle.wait(self.now(), r.poll_timeout(), self.port.rx_fd());
            }
            if let Some(mac) = r.found() {
                return Ok(mac);
            }
        }
        Err(HostError::NoArpAnswer(target, timeout))
    }

    /// One round of `agent`: a burst received, its timers run, up to a burst of what it sends.
    /// Returns whether anything arrived or left.
    pub fn poll<A: Agent + ?Sized>(&mut self, agent: &mut A) -> bool {
        let got = self.receive(|now, frame| agent.handle_packet(now, frame));
        let now = self.now();
        if agent.poll_timeout().is_some_and(|t| t <= now) {
            agent.handle_timeout(now);
        }
        while self.tx.len() < BURST {
            match transmit_into(&mut self.pool as &mut dyn Pool<F>, agent, self.clock.now(), 0) {
                Some(b) => self.tx.push(b),
                None => break,
            }
        }
        let sent = !self.tx.is_empty();
        if sent {
            self.port.set_time(self.clock.now());
        }
        self.flush();
        got > 0 || sent
    }

    /// Run `agent` until `done` says so (asked after every round, with the time), waiting as the
    /// idle policy says after a round that did nothing.
    pub fn run<A: Agent + ?Sized>(&mut self, agent: &mut A, mut done: impl FnMut(&A, u64) -> bool) {
        loop {
            let busy = self.poll(agent);
            let now = self.now();
            if done(agent, now) {
                return;
            }
            if !busy {
                self.idle.wait(now, agent.poll_timeout(), self.port.rx_fd());
            }
        }
    }
}

/// The tracing setup every softfabric binary shares: events to stderr, filtered by `RUST_LOG`
/// when it is set and by `default_filter` (e.g. `"info"`, `"warn"`) otherwise. A second call
/// (a test harness, a binary embedding another) keeps the first setup.
pub fn init_tracing(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

pub use crate::input::mem_available;

/// The calling thread kept on the CPU it runs on until this is dropped, when its former
/// affinity comes back ([`pin_to_current_cpu`]).
pub struct CpuPin {
    old: libc::cpu_set_t,
    /// Not `Send`: the affinity belongs to the thread that set it.
    _thread: std::marker::PhantomData<*const ()>,
}

/// Keep the calling thread on the CPU it is running on, for a sender whose frames must leave in
/// the order it sends them: Linux hands a frame sent on a veth or loopback to the sending
/// CPU's backlog, so a sender the scheduler moves between CPUs under load can have a later
/// frame delivered before hundreds of earlier ones (up to `net.core.netdev_max_backlog`) — more
/// than DTA's 8-bit sequence numbers can put back in order. A real NIC's transmit queues
/// chosen per CPU (XPS) do the same. `None` if the affinity cannot be read or set (the thread
/// is then left as it was).
// Audited: system calls on the calling thread's affinity only; no memory is shared.
#[allow(unsafe_code)]
pub fn pin_to_current_cpu() -> Option<CpuPin> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    let cpu = unsafe { libc::sched_getcpu() };
    let cpu = usize::try_from(cpu).ok()?;
    // SAFETY: cpu_set_t is plain data (a bit array); all zeros is the empty set.
    let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `old` is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old) } != 0 {
        return None;
    }
    // SAFETY: as above; CPU_SET writes bit `cpu` of `one`, which sched_getcpu returned (it is
    // below CPU_SETSIZE).
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: pid 0 is the calling thread; `one` is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) } != 0 {
        return None;
    }
    Some(CpuPin { old, _thread: std::marker::PhantomData })
}

#[allow(unsafe_code)]
impl Drop for CpuPin {
    fn drop(&mut self) {
        // SAFETY: pid 0 is the calling thread (a CpuPin is not Send: it is dropped on the
        // thread that made it); `old` is the valid set read when it was made.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.old) };
    }
}
