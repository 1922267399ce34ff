//! The collector on a real RoCEv2 NIC (cargo feature `verbs`): rdma-core's librdmacm and
//! libibverbs, as the reference DTA collector uses them. The NIC applies the translator's
//! WRITEs and atomics to registered memory by DMA; no CPU touches a report.
//!
//! Per data structure: an `rdma_cm` listener on the collector's address and the store's port;
//! a protection domain of its own, so a connection to one store cannot write another's region
//! (the NIC refuses an R_Key of another PD); the store's region registered once in it with
//! `ibv_reg_mr_iova` (local write, remote write, remote atomic) at the VA the soft-RNIC would
//! expose, so translators see one layout whatever the
//! backend; on each connection an RC QP with receive WRs posted (a WRITE with Immediate
//! consumes one; its immediate becomes a [`Notification`]) and, once established, the 16-byte
//! metadata SEND (VA low, VA high, length, R_Key) carrying the NIC's real R_Key. An Append
//! list's metadata is 24 bytes: its head, with `RING_MARKS` asking the translator to end every
//! batch with a WRITE with Immediate whose data is the list's count after it — the NIC writes
//! entries unseen, so the marks are how the list's head, and queries, follow
//! (`Stores::on_marked_immediate`).
//!
//! Needs an RDMA device serving the configured address: on a host without one, starting fails
//! with [`VerbsError::NoDevice`] naming the address. What this module does not do: anything
//! per packet (the NIC does), UC QPs, or reconnecting a translator (translators reconnect).

#![allow(unsafe_code)]

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rdma_sys as rd;
use roce::cm::{METADATA_HEAD_LEN, METADATA_LEN, Metadata};

use crate::memory::RegionInfo;
use crate::rnic::{Notification, Notifier, RnicStats, bump};
use crate::store::Stores;

/// What the translator may do to a registered region: RDMA WRITE and atomics (which need local
/// write too). No remote read: DTA never reads collector memory.
pub const REGION_ACCESS: u32 = rd::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0
    | rd::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0
    | rd::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0;

/// Receive WRs kept posted per connection: WRITEs with Immediate in flight before the CPU
/// reposts (more are RNR-NAKed and retried by the translator's NIC).
const RECV_DEPTH: u32 = 128;
/// Completion queue entries per connection.
const CQ_DEPTH: i32 = 256;
/// RDMA READ / atomic requests a translator may have outstanding at our responder.
const RESPONDER_RESOURCES: u8 = 16;

/// Why the verbs backend could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum VerbsError {
    /// No RDMA device serves the address (or none is present at all).
    #[error(
        "no RDMA device serves {addr}; the verbs backend needs a RoCEv2 NIC with this address — use \
         backend = \"soft-rnic\" without one"
    )]
    NoDevice {
        /// The listener's address.
        addr: SocketAddrV4,
        /// What rdma-core said.
        source: io::Error,
    },
    /// An rdma-core call failed.
    #[error("{call} failed for {addr}")]
    Call {
        /// The call.
        call: &'static str,
        /// The listener or connection it was for.
        addr: SocketAddrV4,
        /// errno.
        source: io::Error,
    },
}

/// One region to register: where it is in our mapping, how long, and the VA (iova) the
/// translator addresses it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    /// Byte offset of the region in the host mapping.
    pub offset: u64,
    /// Its length.
    pub len: u64,
    /// The VA the NIC exposes it at.
    pub iova: u64,
    /// The librdmacm port of its store.
    pub port: u16,
}

/// The registrations for `stores`: one per store, at the soft-RNIC's VAs.
pub fn registrations(stores: &Stores) -> Vec<Registration> {
    stores
        .stores()
        .iter()
        .map(|st| {
            let r: RegionInfo = stores.memory().regions()[st.region];
            Registration { offset: r.offset, len: r.len, iova: r.va, port: st.port }
        })
        .collect()
}

/// The metadata SEND for a region registered at `reg` with the NIC's `rkey`.
pub fn metadata(reg: &Registration, rkey: u32) -> Metadata {
    Metadata { va: reg.iova, len: reg.len as u32, rkey }
}

fn errno() -> io::Error {
    io::Error::last_os_error()
}

/// One accepted connection.
struct Conn {
    id: *mut rd::rdma_cm_id,
    cq: *mut rd::ibv_cq,
    port: u16,
    /// The metadata SEND's payload (sent inline; kept for the QP's life all the same): 16
    /// bytes, or 24 for an Append list (its head, and the request for marks).
    meta: Box<[u8; METADATA_HEAD_LEN]>,
    meta_len: u32,
}

/// The rdma_cm listeners, registered memory and connections. Lives on the thread that
/// serves it (it holds rdma-core handles).
pub struct VerbsCollector {
    ip: Ipv4Addr,
    ch: *mut rd::rdma_event_channel,
    /// Listener id and index into `regs`.
    listeners: Vec<(*mut rd::rdma_cm_id, usize)>,
    /// One protection domain per store (by registration index): a connection to one store's
    /// port has its QP in that store's PD, and the NIC refuses it any other store's R_Key.
    pds: Vec<*mut rd::ibv_pd>,
    regs: Vec<Registration>,
    mrs: Vec<*mut rd::ibv_mr>,
    conns: Vec<Conn>,
    stats: Arc<RnicStats>,
    notifier: Notifier,
    /// The stores: keeps the registered memory mapped while the NIC may write it, and follows
    /// the Append lists' heads from the batches' marks.
    stores: Stores,
}

impl std::fmt::Debug for VerbsCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerbsCollector").field("ip", &self.ip).field("regs", &self.regs).finish()
    }
}

impl VerbsCollector {
    /// Listen on `ip` for every store of `stores`, register their memory, and return the
    /// collector with the NIC's R_Key for each store (in `stores.stores()` order).
    pub fn start(
        ip: Ipv4Addr,
        stores: &Stores,
        stats: Arc<RnicStats>,
        notifier: Notifier,
    ) -> Result<(Self, Vec<u32>), VerbsError> {
        let regs = registrations(stores);
        let first = SocketAddrV4::new(ip, regs.first().map_or(0, |r| r.port));
        // SAFETY: no arguments; a null return is an error with errno set.
        let ch = unsafe { rd::rdma_create_event_channel() };
        if ch.is_null() {
            return Err(VerbsError::NoDevice { addr: first, source: errno() });
        }
        let mut me = Self {
            ip,
            ch,
            listeners: Vec::new(),
            pds: Vec::new(),
            regs,
            mrs: Vec::new(),
            conns: Vec::new(),
            stats,
            notifier,
            stores: stores.clone(),
        };
        for i in 0..me.regs.len() {
            me.listen(i)?;
        }
        // SAFETY: `ch` is a valid event channel; its fd is ours to make nonblocking.
        unsafe {
            let fd = (*me.ch).fd;
            libc::fcntl(fd, libc::F_SETFL, libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK);
        }
        let Some(&(id0, _)) = me.listeners.first() else { return Ok((me, Vec::new())) };
        let base = stores.memory().host().words().as_ptr() as *mut u8;
        for reg in me.regs.clone() {
            let addr = SocketAddrV4::new(ip, reg.port);
            // SAFETY: `id0` is a bound listener; bound to a device's address, its `verbs` is
            // that device's context (null otherwise, which `listen` already refused).
            let pd = unsafe { rd::ibv_alloc_pd((*id0).verbs) };
            if pd.is_null() {
                return Err(VerbsError::Call { call: "ibv_alloc_pd", addr, source: errno() });
            }
            me.pds.push(pd);
            // SAFETY: the region lies inside the mapping (offset + len ≤ mapping length, as
            // `Registered` laid it out), which `me.stores` keeps alive until after the MR is
            // deregistered in `drop`. The NIC becomes a writer of that memory, as the
            // soft-RNIC thread is otherwise: readers only ever load it as atomic words.
            let mr = unsafe {
                rd::ibv_reg_mr_iova(
                    pd,
                    base.add(reg.offset as usize).cast(),
                    reg.len as usize,
                    reg.iova,
                    REGION_ACCESS as i32,
                )
            };
            if mr.is_null() {
                return Err(VerbsError::Call { call: "ibv_reg_mr_iova", addr, source: errno() });
            }
            me.mrs.push(mr);
        }
        // SAFETY: every pointer in `mrs` is a registered MR.
        let rkeys = me.mrs.iter().map(|&mr| unsafe { (*mr).rkey }).collect();
        Ok((me, rkeys))
    }

    fn listen(&mut self, i: usize) -> Result<(), VerbsError> {
        let addr = SocketAddrV4::new(self.ip, self.regs[i].port);
        let call = |call, source| VerbsError::Call { call, addr, source };
        let mut id = ptr::null_mut();
        // SAFETY: `ch` is valid; `id` receives the new id.
        if unsafe { rd::rdma_create_id(self.ch, &mut id, ptr::null_mut(), rd::rdma_port_space::RDMA_PS_TCP) }
            != 0
        {
            return Err(call("rdma_create_id", errno()));
        }
        self.listeners.push((id, i));
        let mut sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: addr.port().to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(*addr.ip()).to_be() },
            sin_zero: [0; 8],
        };
        // SAFETY: `id` is valid; `sin` is a sockaddr_in that outlives the call.
        if unsafe { rd::rdma_bind_addr(id, (&mut sin as *mut libc::sockaddr_in).cast()) } != 0 {
            return Err(VerbsError::NoDevice { addr, source: errno() });
        }
        // SAFETY: `id` is valid and bound.
        if unsafe { (*id).verbs.is_null() } {
            return Err(VerbsError::NoDevice {
                addr,
                source: io::Error::new(io::ErrorKind::AddrNotAvailable, "the address is on no RDMA device"),
            });
        }
        // SAFETY: `id` is valid and bound.
        if unsafe { rd::rdma_listen(id, 16) } != 0 {
            return Err(call("rdma_listen", errno()));
        }
        Ok(())
    }

    /// Serve until `stop` is set: CM events, then completions (immediates, metadata SENDs).
    pub fn run(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            self.wait_cm(Duration::from_millis(1));
            while self.cm_event() {}
            self.poll_cqs();
        }
    }

    fn wait_cm(&self, timeout: Duration) {
        // SAFETY: `ch` is valid for our lifetime.
        let mut p = libc::pollfd { fd: unsafe { (*self.ch).fd }, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, count 1.
        unsafe { libc::poll(&mut p, 1, timeout.as_millis() as i32) };
    }

    /// Handle one CM event, if one is waiting.
    fn cm_event(&mut self) -> bool {
        let mut ev = ptr::null_mut();
        // SAFETY: `ch` is valid and nonblocking; `ev` receives an event we must ack.
        if unsafe { rd::rdma_get_cm_event(self.ch, &mut ev) } != 0 {
            return false;
        }
        // SAFETY: `ev` is a valid event until acked; we copy what we need first.
        let (kind, id, listen_id, initiator_depth) =
            unsafe { ((*ev).event, (*ev).id, (*ev).listen_id, (*ev).param.conn.initiator_depth) };
        let mut gone = None;
        match kind {
            rd::rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_REQUEST => {
                let store = self.listeners.iter().find(|(l, _)| *l == listen_id).map(|&(_, i)| i);
                match store.map(|i| self.accept(id, i, initiator_depth)) {
                    Some(Ok(())) => {}
                    Some(Err(e)) => {
                        tracing::warn!("refusing a connection: {e}");
                        // SAFETY: `id` is the request's id, not yet accepted.
                        unsafe { rd::rdma_reject(id, ptr::null(), 0) };
                    }
                    None => tracing::warn!("a connection request for no listener of ours"),
                }
            }
            rd::rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED => self.established(id),
            rd::rdma_cm_event_type::RDMA_CM_EVENT_DISCONNECTED => gone = Some(id),
            _ => {}
        }
        // SAFETY: `ev` came from rdma_get_cm_event and is acked once.
        unsafe { rd::rdma_ack_cm_event(ev) };
        if let Some(id) = gone
            && let Some(i) = self.conns.iter().position(|c| c.id == id)
        {
            let c = self.conns.swap_remove(i);
            tracing::info!(port = c.port, "disconnected");
            // SAFETY: the event is acked; the QP, CQ and id are ours and used nowhere else.
            unsafe { destroy(&c) };
        }
        true
    }

    fn accept(
        &mut self,
        id: *mut rd::rdma_cm_id,
        store: usize,
        initiator_depth: u8,
    ) -> Result<(), VerbsError> {
        let reg = self.regs[store];
        let addr = SocketAddrV4::new(self.ip, reg.port);
        let call = |call| VerbsError::Call { call, addr, source: errno() };
        // SAFETY: `id` is a connection request's id on our device.
        let cq = unsafe { rd::ibv_create_cq((*id).verbs, CQ_DEPTH, ptr::null_mut(), ptr::null_mut(), 0) };
        if cq.is_null() {
            return Err(call("ibv_create_cq"));
        }
        let m = metadata(&reg, self.mr_rkey(store));
        let mut meta = Box::new([0u8; METADATA_HEAD_LEN]);
        // An Append list's head is learned from the batches' marks (the NIC writes the entries
        // by DMA, unseen): ask the translator for them, and say where the list stands.
        let meta_len = match self.stores.marked_ring_word(reg.port) {
            Some(word) => {
                *meta = m.encode_with_head(word);
                METADATA_HEAD_LEN
            }
            None => {
                meta[..METADATA_LEN].copy_from_slice(&m.encode());
                METADATA_LEN
            }
        } as u32;
        let conn = Conn { id, cq, port: reg.port, meta, meta_len };
        // SAFETY: all-zero is a valid ibv_qp_init_attr (null pointers, zero counts).
        let mut attr: rd::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        attr.send_cq = cq;
        attr.recv_cq = cq;
        attr.cap = rd::ibv_qp_cap {
            max_send_wr: 4,
            max_recv_wr: RECV_DEPTH,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: METADATA_HEAD_LEN as u32,
        };
        attr.qp_type = rd::ibv_qp_type::IBV_QPT_RC;
        // SAFETY: `id`, the store's PD and `attr` are valid; on success `id.qp` is the new QP.
        if unsafe { rd::rdma_create_qp(id, self.pds[store], &mut attr) } != 0 {
            let e = call("rdma_create_qp");
            // SAFETY: the CQ was created above and nothing uses it.
            unsafe { rd::ibv_destroy_cq(cq) };
            return Err(e);
        }
        for _ in 0..RECV_DEPTH {
            if !post_recv(&conn) {
                let e = call("ibv_post_recv");
                // SAFETY: not yet accepted; the QP, CQ and id are ours.
                unsafe { destroy(&conn) };
                return Err(e);
            }
        }
        // SAFETY: all-zero is a valid rdma_conn_param (no private data).
        let mut param: rd::rdma_conn_param = unsafe { std::mem::zeroed() };
        param.responder_resources = initiator_depth.clamp(1, RESPONDER_RESOURCES);
        param.initiator_depth = 0;
        param.rnr_retry_count = 7;
        // SAFETY: `id` has its QP; `param` outlives the call.
        if unsafe { rd::rdma_accept(id, &mut param) } != 0 {
            let e = call("rdma_accept");
            // SAFETY: not accepted; the QP, CQ and id are ours.
            unsafe { destroy(&conn) };
            return Err(e);
        }
        self.conns.push(conn);
        Ok(())
    }

    fn mr_rkey(&self, store: usize) -> u32 {
        // SAFETY: `mrs[store]` is a registered MR.
        unsafe { (*self.mrs[store]).rkey }
    }

    /// The connection is up: send the metadata, as the reference collector does.
    fn established(&mut self, id: *mut rd::rdma_cm_id) {
        let Some(c) = self.conns.iter_mut().find(|c| c.id == id) else { return };
        let mut sge = rd::ibv_sge { addr: c.meta.as_ptr() as u64, length: c.meta_len, lkey: 0 };
        // SAFETY: all-zero is a valid ibv_send_wr (no chain, no remote fields).
        let mut wr: rd::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        wr.opcode = rd::ibv_wr_opcode::IBV_WR_SEND;
        wr.send_flags = (rd::ibv_send_flags::IBV_SEND_SIGNALED | rd::ibv_send_flags::IBV_SEND_INLINE).0;
        let mut bad = ptr::null_mut();
        // SAFETY: the QP is connected; with IBV_SEND_INLINE the 16 or 24 bytes are copied during
        // the call, and `wr`/`sge` outlive it.
        if unsafe { rd::ibv_post_send((*c.id).qp, &mut wr, &mut bad) } != 0 {
            tracing::warn!(port = c.port, "cannot post the metadata SEND: {}", errno());
            return;
        }
        bump(&self.stats.connections);
        tracing::info!(port = c.port, "connected; metadata sent");
    }

    fn poll_cqs(&mut self) {
        // SAFETY: all-zero is a valid ibv_wc.
        let mut wcs: [rd::ibv_wc; 16] = unsafe { std::mem::zeroed() };
        for c in &self.conns {
            loop {
                // SAFETY: `cq` is valid and `wcs` has room for 16 completions.
                let n = unsafe { rd::ibv_poll_cq(c.cq, 16, wcs.as_mut_ptr()) };
                if n <= 0 {
                    break;
                }
                for wc in &wcs[..n as usize] {
                    if wc.status != rd::ibv_wc_status::IBV_WC_SUCCESS {
                        continue;
                    }
                    if wc.opcode == rd::ibv_wc_opcode::IBV_WC_RECV_RDMA_WITH_IMM {
                        // SAFETY: a WRITE with Immediate's completion carries imm_data.
                        let imm = u32::from_be(unsafe { wc.imm_data_invalidated_rkey_union.imm_data });
                        bump(&self.stats.immediates);
                        // An Append batch's mark moves its list's head (and may notify).
                        if let Some(imm) = self.stores.on_marked_immediate(c.port, imm) {
                            self.notifier.publish(Notification { port: c.port, imm }, &self.stats);
                        }
                        post_recv(c);
                    }
                }
            }
        }
    }
}

/// Post one zero-length receive WR (a WRITE with Immediate needs one and writes nothing to it).
fn post_recv(c: &Conn) -> bool {
    // SAFETY: all-zero is a valid ibv_recv_wr: no scatter list, no chain.
    let mut wr: rd::ibv_recv_wr = unsafe { std::mem::zeroed() };
    let mut bad = ptr::null_mut();
    // SAFETY: the id has a QP; `wr` outlives the call.
    unsafe { rd::ibv_post_recv((*c.id).qp, &mut wr, &mut bad) == 0 }
}

/// Tear down a connection's QP, CQ and id.
///
/// # Safety
/// The handles are valid, nothing else uses them, and no event of the id is unacked.
unsafe fn destroy(c: &Conn) {
    // SAFETY: per the function's contract.
    unsafe {
        rd::rdma_destroy_qp(c.id);
        rd::ibv_destroy_cq(c.cq);
        rd::rdma_destroy_id(c.id);
    }
}

impl Drop for VerbsCollector {
    fn drop(&mut self) {
        // SAFETY: every handle below was created by us, is destroyed once, connections before
        // the PD and MRs they use, the channel last.
        unsafe {
            for c in std::mem::take(&mut self.conns) {
                rd::rdma_disconnect(c.id);
                destroy(&c);
            }
            for mr in self.mrs.drain(..) {
                rd::ibv_dereg_mr(mr);
            }
            for pd in self.pds.drain(..) {
                rd::ibv_dealloc_pd(pd);
            }
            for (id, _) in self.listeners.drain(..) {
                rd::rdma_destroy_id(id);
            }
            rd::rdma_destroy_event_channel(self.ch);
        }
        // `stores` (the mapping the MRs covered) is dropped after this, with the other fields.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CollectorConfig;
    use std::path::Path;

    fn stores() -> Stores {
        let cfg = CollectorConfig::parse(
            Path::new("t.toml"),
            "[collector]\nip = \"127.0.0.1\"\nmemory = \"pages\"\nbackend = \"verbs\"\n\
             [keywrite]\nport = 1337\nslots = 1024\n[[append]]\nlist = 3\nport = 1340\nentries = 64\nva = 0x7000_0000\n",
        )
        .unwrap();
        Stores::new(&cfg, 9).unwrap().0
    }

    #[test]
    fn regions_are_registered_at_the_soft_rnics_vas_with_write_and_atomic_access() {
        let s = stores();
        let regs = registrations(&s);
        let regions = s.memory().regions();
        assert_eq!(regs.len(), 2);
        for (reg, r) in regs.iter().zip(regions) {
            assert_eq!((reg.offset, reg.len, reg.iova), (r.offset, r.len, r.va));
            assert!(reg.offset + reg.len <= s.memory().host().len() as u64);
        }
        assert_eq!((regs[0].port, regs[1].port, regs[1].iova), (1337, 1340, 0x7000_0000));
        let m = metadata(&regs[1], 0xabcd);
        assert_eq!(Metadata::decode(&m.encode()), Some(Metadata { va: 0x7000_0000, len: 256, rkey: 0xabcd }));
        assert_eq!(REGION_ACCESS, 1 | 2 | 8, "local write, remote write, remote atomic; no remote read");
    }

    /// On a host whose address has no RDMA device (CI, this lab's VMs), starting fails with an
    /// error that names the address and says what is needed — it does not panic or hang.
    #[test]
    fn without_an_rdma_device_start_names_the_address() {
        let s = stores();
        match VerbsCollector::start(Ipv4Addr::new(127, 0, 0, 1), &s, Arc::default(), Notifier::default()) {
            Err(e @ VerbsError::NoDevice { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("127.0.0.1:1337") && msg.contains("RoCEv2 NIC"), "{msg}");
            }
            Err(e) => panic!("expected NoDevice, got {e}"),
            Ok(_) => eprintln!("this host has an RDMA device on 127.0.0.1: nothing to check"),
        }
    }
}
