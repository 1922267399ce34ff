//! Ethdev ports: finding, configuring and starting them, their link and extended statistics,
//! and [`DpdkPort`], one queue's receive and transmit bursts.

use super::mbuf::prefetch;
use super::*;

impl Eal {
    /// The DPDK port id of `device`: a device name (PCI address, vdev) or a port number.
    pub fn find_port(&self, port: &str, device: &str) -> Result<u16, DpdkError> {
        let mut id = 0u16;
        let cname = CString::new(device).unwrap_or_default();
        // SAFETY: the name is a valid C string and id a valid out-pointer.
        let found = unsafe { sys::rte_eth_dev_get_port_by_name(cname.as_ptr(), &mut id) } == 0;
        if found {
            return Ok(id);
        }
        if let Ok(n) = device.parse::<u16>() {
            // SAFETY: a lookup in the ethdev table.
            if unsafe { sys::rte_eth_dev_is_valid_port(n) } == 1 {
                return Ok(n);
            }
        }
        let eal = if self.complaints.is_empty() {
            String::new()
        } else {
            format!("; while probing, the EAL said:\n    {}", self.complaints.join("\n    "))
        };
        Err(DpdkError::NoDevice {
            port: port.to_string(),
            device: device.to_string(),
            available: Self::devices(),
            eal,
        })
    }

    /// The probed devices, as `id:name` pairs.
    pub(super) fn devices() -> String {
        let mut s = String::new();
        for id in 0..sys::RTE_MAX_ETHPORTS as u16 {
            // SAFETY: a lookup in the ethdev table.
            if unsafe { sys::rte_eth_dev_is_valid_port(id) } != 1 {
                continue;
            }
            let mut buf = [0 as c_char; 64];
            // SAFETY: buf is a writable buffer of RTE_ETH_NAME_MAX_LEN (64) bytes.
            if unsafe { sys::rte_eth_dev_get_name_by_port(id, buf.as_mut_ptr()) } == 0 {
                // SAFETY: DPDK wrote a NUL-terminated name.
                let name = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
                let _ = write!(s, "{}{id}:{name}", if s.is_empty() { "" } else { ", " });
            }
        }
        if s.is_empty() { "none".into() } else { s }
    }

    /// Configure `port_id` with one rx and one tx queue per entry of `pools` (rx queue i draws
    /// from `pools[i]`), RSS over them if `rss`, and start it.
    #[allow(clippy::too_many_arguments)]
    pub fn start_port(
        &mut self,
        name: &str,
        device: &str,
        port_id: u16,
        pools: &[MbufPool],
        rx_ring: u16,
        tx_ring: u16,
        promiscuous: bool,
        rss: bool,
    ) -> Result<EthPort, DpdkError> {
        let err = |step: &'static str, reason: String| DpdkError::Port {
            port: name.to_string(),
            device: device.to_string(),
            step,
            reason,
        };
        let nq = pools.len() as u16;
        let mut info = sys::rte_eth_dev_info::default();
        // SAFETY: port_id is valid (find_port) and info a valid out-pointer.
        let r = unsafe { sys::rte_eth_dev_info_get(port_id, &mut info) };
        if r != 0 {
            return Err(err("rte_eth_dev_info_get", strerror(-r)));
        }
        if info.max_rx_queues < nq || info.max_tx_queues < nq {
            return Err(err(
                "queues",
                format!(
                    "{nq} pipelines need {nq} rx and tx queues; the device has {} rx and {} tx",
                    info.max_rx_queues, info.max_tx_queues
                ),
            ));
        }
        let mut conf = sys::rte_eth_conf::default();
        if rss && nq > 1 {
            conf.rxmode.mq_mode = sys::RTE_ETH_MQ_RX_RSS;
            // SAFETY: a constant getter.
            let want = unsafe { sys::sf_rss_hf_ip_udp_tcp() };
            conf.rx_adv_conf.rss_conf.rss_hf = want & info.flow_type_rss_offloads;
            if conf.rx_adv_conf.rss_conf.rss_hf == 0 {
                tracing::warn!(
                    port = name,
                    "the device offers no IP/UDP/TCP RSS: pipelines 1.. receive nothing from it"
                );
                conf.rxmode.mq_mode = 0;
            }
        }
        // SAFETY: port_id valid, conf initialised.
        let r = unsafe { sys::rte_eth_dev_configure(port_id, nq, nq, &conf) };
        if r != 0 {
            return Err(err("rte_eth_dev_configure", strerror(-r)));
        }
        // SAFETY: port_id valid.
        let socket = unsafe { sys::rte_eth_dev_socket_id(port_id) };
        let socket = if socket < 0 { 0 } else { socket as u32 };
        for (q, pool) in pools.iter().enumerate() {
            // SAFETY: port configured with nq queues; q < nq; pool is a live mempool; a null
            // rxconf/txconf means the driver's defaults.
            let r = unsafe {
                sys::rte_eth_rx_queue_setup(
                    port_id,
                    q as u16,
                    rx_ring,
                    socket,
                    std::ptr::null(),
                    pool.mp.as_ptr(),
                )
            };
            if r != 0 {
                return Err(err("rte_eth_rx_queue_setup", strerror(-r)));
            }
            // SAFETY: as above.
            let r =
                unsafe { sys::rte_eth_tx_queue_setup(port_id, q as u16, tx_ring, socket, std::ptr::null()) };
            if r != 0 {
                return Err(err("rte_eth_tx_queue_setup", strerror(-r)));
            }
        }
        // SAFETY: port configured with its queues.
        let r = unsafe { sys::rte_eth_dev_start(port_id) };
        if r != 0 {
            return Err(err("rte_eth_dev_start", strerror(-r)));
        }
        let port = EthPort { name: name.to_string(), device: device.to_string(), port_id, queues: nq };
        self.ports.push(port.clone());
        if promiscuous {
            // SAFETY: port started.
            let r = unsafe { sys::rte_eth_promiscuous_enable(port_id) };
            if r != 0 {
                tracing::warn!(port = name, "cannot enable promiscuous mode: {}", strerror(-r));
            }
        }
        Ok(port)
    }

    /// The MAC address of `port_id`.
    pub fn mac(&self, port_id: u16) -> Option<wire::ethernet::EthernetAddress> {
        let mut a = sys::rte_ether_addr::default();
        // SAFETY: a valid out-pointer; DPDK checks the port id.
        (unsafe { sys::rte_eth_macaddr_get(port_id, &mut a) } == 0)
            .then_some(wire::ethernet::EthernetAddress(a.addr_bytes))
    }

    /// The ports started.
    pub fn ports(&self) -> &[EthPort] {
        &self.ports
    }

    /// Link state, without waiting.
    pub fn link(&self, port_id: u16) -> Option<Link> {
        let mut l = sys::rte_eth_link::default();
        // SAFETY: valid out-pointer; the port exists.
        if unsafe { sys::rte_eth_link_get_nowait(port_id, &mut l) } != 0 {
            return None;
        }
        Some(Link { up: l.link_status() != 0, speed_mbps: l.link_speed, full_duplex: l.link_duplex() != 0 })
    }

    /// Every extended statistic of a port, by name.
    pub fn xstats(&self, port_id: u16) -> Vec<(String, u64)> {
        // SAFETY: a null buffer asks for the count.
        let n = unsafe { sys::rte_eth_xstats_get_names(port_id, std::ptr::null_mut(), 0) };
        if n <= 0 {
            return Vec::new();
        }
        let mut names = vec![sys::rte_eth_xstat_name::default(); n as usize];
        let mut vals = vec![sys::rte_eth_xstat::default(); n as usize];
        // SAFETY: both buffers hold n entries.
        let (a, b) = unsafe {
            (
                sys::rte_eth_xstats_get_names(port_id, names.as_mut_ptr(), n as u32),
                sys::rte_eth_xstats_get(port_id, vals.as_mut_ptr(), n as u32),
            )
        };
        if a != n || b != n {
            return Vec::new();
        }
        vals.iter()
            .filter_map(|v| {
                let name = names.get(v.id as usize)?;
                // SAFETY: DPDK NUL-terminates names within RTE_ETH_XSTATS_NAME_SIZE.
                let s = unsafe { CStr::from_ptr(name.name.as_ptr()) }.to_string_lossy().into_owned();
                Some((s, v.value))
            })
            .collect()
    }
}

/// One queue of a DPDK port: what one pipeline receives from and sends to.
#[derive(Debug)]
pub struct DpdkPort {
    port_id: u16,
    queue: u16,
    stats: PortStats,
}

impl DpdkPort {
    /// Queue `queue` of started port `port_id`.
    pub fn new(port_id: u16, queue: u16) -> Self {
        Self { port_id, queue, stats: PortStats::default() }
    }
}

impl PortIo<Mbuf> for DpdkPort {
    #[inline]
    fn rx_burst(&mut self, _pool: &mut dyn Pool<Mbuf>, out: &mut Vec<Mbuf>, max: usize) -> usize {
        let max = max.min(MAX_BURST);
        out.reserve(max);
        let len = out.len();
        // SAFETY: `out` has room for `max` more elements after `len`; Mbuf is a transparent
        // non-null pointer, so the driver writes valid Mbufs (non-null, owned by us) into it.
        let n = usize::from(unsafe {
            sys::sf_rx_burst(
                self.port_id,
                self.queue,
                out.as_mut_ptr().add(len).cast::<*mut sys::rte_mbuf>(),
                max as u16,
            )
        });
        // SAFETY: the driver initialised n elements.
        unsafe { out.set_len(len + n) };
        // Chained (multi-segment) mbufs are not supported: drop them as errors. The others'
        // first data line is prefetched, so ingress does not wait for it (as testpmd's forwarding
        // engines do).
        let mut i = len;
        while i < out.len() {
            let m = out[i].m();
            if m.nb_segs != 1 {
                drop(out.remove(i));
                self.stats.rx_errors += 1;
            } else {
                prefetch(out[i].base().wrapping_add(usize::from(m.data_off)));
                i += 1;
            }
        }
        let got = out.len() - len;
        self.stats.rx += got as u64;
        got
    }

    #[inline]
    fn tx_burst(&mut self, pkts: &mut Vec<Mbuf>, _pool: &mut dyn Pool<Mbuf>) -> usize {
        let len = pkts.len().min(MAX_BURST);
        if len == 0 {
            return 0;
        }
        // SAFETY: the first `len` elements are owned Mbufs; tx_burst takes ownership of the
        // first `n` it returns.
        let n = usize::from(unsafe {
            sys::sf_tx_burst(
                self.port_id,
                self.queue,
                pkts.as_mut_ptr().cast::<*mut sys::rte_mbuf>(),
                len as u16,
            )
        });
        // The first n now belong to the driver: move the rest down over them without dropping.
        let rest = pkts.len() - n;
        // SAFETY: elements [n, len) are moved to [0, rest); set_len forgets the stale copies.
        unsafe {
            std::ptr::copy(pkts.as_ptr().add(n), pkts.as_mut_ptr(), rest);
            pkts.set_len(rest);
        }
        self.stats.tx += n as u64;
        n
    }

    /// Counters; `rx_missed` is the device's `imissed` (frames its receive rings had no room
    /// for). That count is per port, not per queue, so only queue 0 reports it: the runtime sums
    /// its pipelines' counters.
    fn stats(&self) -> PortStats {
        let mut s = self.stats;
        if self.queue == 0 {
            let mut e = sys::rte_eth_stats::default();
            // SAFETY: a valid out-pointer; an unknown port makes the call fail, not write.
            if unsafe { sys::rte_eth_stats_get(self.port_id, &mut e) } == 0 {
                s.rx_missed = e.imissed;
            }
        }
        s
    }
}
