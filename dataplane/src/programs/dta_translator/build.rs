//! Building the translator from its configuration: the `l2l3` part, then `[dta]`'s collectors, stores, lists, sketches and meters.

use super::*;

impl DtaTranslator {
    /// Build from the configuration: the `[l2l3]` part, then `[dta]`.
    pub fn build(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        let c = cfg.ctx();
        let l2l3 = L2l3::build(cfg, ctx)?;
        let d: &DtaSection = &cfg.section::<DtaSection>("dta")?.ok_or_else(|| {
            c.err("dta", format!("program {:?} needs a [dta] section with its collectors", Self::NAME))
        })?;
        let base = match d.base.as_deref().unwrap_or("long") {
            "long" => BaseForm::Long,
            "short" => BaseForm::Short,
            o => return Err(c.err("dta.base", format!("{o:?}; expected \"long\" or \"short\""))),
        };
        let kw_len = d.keywrite_data_len.unwrap_or(4);
        if ![4, 12, 28].contains(&kw_len) {
            return Err(c.err("dta.keywrite_data_len", format!("{kw_len}; expected 4, 12 or 28")));
        }
        let max_redundancy = d.max_redundancy.unwrap_or(4);
        if !(1..=8).contains(&max_redundancy) {
            return Err(c.err("dta.max_redundancy", format!("{max_redundancy} out of range 1..=8")));
        }
        let key_hash = match &d.key_hash {
            None => dta::KeyHashMode::default(),
            Some(h) => dta::KeyHashMode::parse(h).ok_or_else(|| {
                c.err("dta.key_hash", format!("{h:?}; expected \"independent\" or \"reference\""))
            })?,
        };
        let default_priority = match &d.default_priority {
            None => Priority::Low,
            Some(p) => parse_priority(p).ok_or_else(|| {
                c.err("dta.default_priority", format!("{p:?}; expected low, medium or high"))
            })?,
        };
        let source_ip = match &d.source_ip {
            None => None,
            Some(s) => Some(
                s.parse::<Ipv4Addr>()
                    .ok()
                    .filter(|a| !(a.is_unspecified() || a.is_broadcast() || a.is_multicast()))
                    .ok_or_else(|| c.err("dta.source_ip", format!("{s:?} is not a unicast IPv4 address")))?,
            ),
        };
        let dscp = d.dscp.unwrap_or(26);
        if dscp > 63 {
            return Err(c.err("dta.dscp", format!("{dscp} out of range 0..=63 (6 bits)")));
        }
        let queue = d.queue.unwrap_or(3);
        if queue > 7 {
            return Err(c.err("dta.queue", format!("{queue} out of range 0..=7")));
        }
        let ecn = d.ecn.unwrap_or(0);
        if ecn > 2 {
            return Err(c.err("dta.ecn", format!("{ecn}: 0 (Not-ECT), 1 or 2 (ECT)")));
        }
        let window = d.window.unwrap_or(4096);
        if !(16..=1 << 22).contains(&window) {
            return Err(c.err("dta.window", format!("{window} out of range 16..=4194304")));
        }
        let min_window = d.min_window.unwrap_or(16);
        if !(1..=window).contains(&min_window) {
            return Err(c.err("dta.min_window", format!("{min_window} out of range 1..=window ({window})")));
        }
        let ack_every = d.ack_every.unwrap_or(32);
        if !(1..=window).contains(&ack_every) {
            return Err(c.err("dta.ack_every", format!("{ack_every} out of range 1..=window ({window})")));
        }
        // Zero is no time at all for these: a typo, not a setting.
        for (k, v) in [
            ("dta.timeout_us", d.timeout_us),
            ("dta.region_timeout_ms", d.region_timeout_ms),
            ("dta.cm_timeout_ms", d.cm_timeout_ms),
            ("dta.cm_backoff_ms", d.cm_backoff_ms),
        ] {
            if v == Some(0) {
                return Err(c.err(k, "0: expected a time above 0"));
            }
        }
        let us = |v: Option<u64>, default: u64| v.unwrap_or(default).saturating_mul(1000);
        // Times: microseconds up to a minute, milliseconds up to an hour (beyond, a typo).
        for (k, v, max) in [
            ("dta.timeout_us", d.timeout_us, 60_000_000),
            ("dta.max_timeout_us", d.max_timeout_us, 60_000_000),
            ("dta.ack_probe_us", d.ack_probe_us, 60_000_000),
            ("dta.append_flush_us", d.append_flush_us, 60_000_000),
            ("dta.nack_interval_us", d.nack_interval_us, 60_000_000),
            ("dta.cm_timeout_ms", d.cm_timeout_ms, 3_600_000),
            ("dta.cm_backoff_ms", d.cm_backoff_ms, 3_600_000),
            ("dta.region_timeout_ms", d.region_timeout_ms, 3_600_000),
            ("dta.join_ms", d.join_ms, 3_600_000),
        ] {
            if let Some(v) = v.filter(|&v| v > max) {
                let unit = if k.ends_with("_us") { "µs" } else { "ms" };
                return Err(c.err(k, format!("{v} out of range 0..={max} ({unit})")));
            }
        }
        let s = Settings {
            format: Format { base, keywrite_data_len: kw_len },
            max_redundancy,
            key_hash,
            default_priority,
            udp_port: crate::config::program_udp_port(
                &c,
                "dta.udp_port",
                d.udp_port,
                wire::udp::port::DTA,
                &[(super::NACK_PORT, "the reporters' NACK port")],
            )?,
            source_ip,
            queue,
            dscp,
            ecn,
            requester: RequesterConfig {
                transport: Transport::Rc,
                window,
                ack_req_every: ack_every,
                // A write after a spell as long as the probe delay asks for its ACK itself.
                ack_req_after_ns: us(d.ack_probe_us, 50),
                timeout_ns: us(d.timeout_us, 1000).max(1000),
                max_timeout_ns: us(d.max_timeout_us, 134_218).max(us(d.timeout_us, 1000).max(1000)),
                retry_limit: d.retry_limit.unwrap_or(7),
                rnr_retry_limit: 7,
                initial_ring: 0,
                min_window,
                max_payload: roce::requester::MAX_INLINE,
            },
            ack_probe_ns: us(d.ack_probe_us, 50),
            append_flush_ns: us(d.append_flush_us, 100),
            nack_interval_ns: us(d.nack_interval_us, 20),
            region_timeout_ns: d.region_timeout_ms.unwrap_or(2000) * 1_000_000,
            join_ns: d.join_ms.unwrap_or(100).saturating_mul(1_000_000),
            seed: d.seed.unwrap_or_else(fresh_seed),
            incarnation: fresh_seed() | 1,
            cm: CmConfig {
                response_timeout_ns: d.cm_timeout_ms.unwrap_or(200) * 1_000_000,
                max_req_tries: 4,
                backoff_initial_ns: d.cm_backoff_ms.unwrap_or(100) * 1_000_000,
                backoff_max_ns: 10_000_000_000,
            },
        };
        if d.collector.is_empty() {
            return Err(c.err("dta.collector", "at least one [[dta.collector]] is needed"));
        }
        let res = &mut ctx.resources;
        let mut meters = MeterArray::new(res, "dta_collector_meters", d.collector.len(), MeterUnit::Packets);
        let mut collectors = Vec::new();
        let mut qps: Vec<Qp> = Vec::new();
        let mut lists = ExactTable::new(res, decl::lists());
        let mut sketches = ExactTable::new(res, decl::sketches());
        let ca_guid = cfg.ports.first().map_or(0, |p| {
            let m = p.mac.0;
            u64::from_be_bytes([m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]])
        });
        let new_qp =
            |qps: &Vec<Qp>, name: String, collector: usize, peer: Ipv4Addr, port: u16, store: Store| {
                let local_qpn = QPN_BASE + qps.len() as u32;
                let params = ConnectParams {
                    local_ip: source_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
                    remote_ip: peer,
                    port,
                    local_qpn,
                    start_psn: 0,
                    ca_guid,
                    path_mtu: 3,
                    transport: Transport::Rc,
                    src_port: 0xd000 | (local_qpn as u16 & 0x0fff),
                };
                let req = Requester::new(store.requester_config(s.requester), 0, 0);
                let entry_len = store.entry_len();
                Qp {
                    name,
                    collector,
                    peer,
                    store,
                    local_qpn,
                    cm: CmClient::new(s.cm, params, comm_id_base(s.seed, local_qpn)),
                    phase: Phase::Connecting,
                    req,
                    resp: Responder::new(Transport::Rc, 0),
                    meta: Metadata { va: 0, len: 0, rkey: 0 },
                    slots: 0,
                    hop: None,
                    resolved_at: 0,
                    // Until the path is resolved (set_path).
                    flow: UdpFlow::host_udp(
                        EthernetAddress([0; 6]),
                        EthernetAddress([0; 6]),
                        SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0),
                        SocketAddrV4::new(peer, wire::udp::port::ROCE_V2),
                    ),
                    tmpl: None,
                    ud_psn: 0,
                    attempts: 0,
                    since: 0,
                    region_entries: 0,
                    entry_len,
                    orphans: None,
                    poisoned: false,
                }
            };
        for (i, col) in d.collector.iter().enumerate() {
            let key = format!("dta.collector[{i}]");
            let ip: Ipv4Addr = col
                .ip
                .parse()
                .ok()
                .filter(|a: &Ipv4Addr| !(a.is_unspecified() || a.is_broadcast() || a.is_multicast()))
                .ok_or_else(|| {
                    c.err(format!("{key}.ip"), format!("{:?} is not a unicast IPv4 address", col.ip))
                })?;
            if collectors.iter().any(|x: &CollectorState| x.ip == ip) {
                return Err(c.err(format!("{key}.ip"), format!("{ip} is listed twice")));
            }
            if cfg.ports.iter().any(|p| p.ipv4.iter().any(|&(a, _)| a == ip)) {
                return Err(c.err(format!("{key}.ip"), format!("{ip} is one of the switch's own addresses")));
            }
            let name = if col.name.is_empty() { format!("c{i}") } else { col.name.clone() };
            if name.len() > 64 || name.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
                return Err(c.err(
                    format!("{key}.name"),
                    format!("{name:?}: expected at most 64 characters, no spaces"),
                ));
            }
            if collectors.iter().any(|x: &CollectorState| x.name == name) {
                return Err(
                    c.err(format!("{key}.name"), format!("{name:?} is the name of another collector"))
                );
            }
            let mut configured = MeterConfig::default();
            let metered = match col.rate {
                None | Some(0) => false,
                Some(rate) => {
                    let peak = col.peak.unwrap_or(rate);
                    if peak < rate {
                        return Err(c.err(format!("{key}.peak"), format!("{peak} below the rate {rate}")));
                    }
                    let burst = col.burst.unwrap_or(256);
                    if burst == 0 {
                        return Err(c.err(format!("{key}.burst"), "0: a meter needs a burst of at least 1"));
                    }
                    // Rates and bursts in reports; the meter counts in 1/UNITS of one.
                    let u = u64::from(UNITS);
                    let max = u64::MAX / u;
                    for (k, v) in [("rate", rate), ("peak", peak), ("burst", burst)] {
                        if v > max {
                            return Err(c.err(format!("{key}.{k}"), format!("{v} out of range 1..={max}")));
                        }
                    }
                    let cfg = MeterConfig { cir: rate * u, cbs: burst * u, pir: peak * u, pbs: burst * u };
                    meters.configure(i, cfg, 0);
                    configured = cfg;
                    true
                }
            };
            if let Some(n) = col.keyincrement_redundancy
                && !(1..=max_redundancy).contains(&n)
            {
                return Err(c.err(
                    format!("{key}.keyincrement_redundancy"),
                    format!("{n} out of range 1..={max_redundancy} (dta.max_redundancy)"),
                ));
            }
            if col.keyincrement_redundancy.is_some() && col.keyincrement.is_none() {
                return Err(c.err(
                    format!("{key}.keyincrement_redundancy"),
                    "set, but the collector has no keyincrement store",
                ));
            }
            let mut st = CollectorState {
                name: name.clone(),
                ip,
                keywrite: None,
                keyincrement: None,
                keyincrement_redundancy: col.keyincrement_redundancy,
                postcarder: None,
                metered,
                rate: configured,
                share: 16,
                last_cut: 0,
                last_step: 0,
            };
            if let Some(port) = col.keywrite {
                st.keywrite = Some(qps.len());
                let store = Store::KeyWrite { slot_len: dta::layout::keywrite_slot_len(kw_len) };
                qps.push(new_qp(&qps, format!("{name}/keywrite"), i, ip, port, store));
            }
            if let Some(port) = col.keyincrement {
                st.keyincrement = Some(qps.len());
                qps.push(new_qp(&qps, format!("{name}/keyincrement"), i, ip, port, Store::KeyIncrement));
            }
            if let Some(pc) = &col.postcarder {
                let hops = pc.hops.unwrap_or(5);
                if !(1..=5).contains(&hops) {
                    return Err(c.err(format!("{key}.postcarder.hops"), format!("{hops} out of range 1..=5")));
                }
                let size = pc.cache.unwrap_or(32768);
                if !size.is_power_of_two() || size > 1 << 24 {
                    return Err(c.err(
                        format!("{key}.postcarder.cache"),
                        format!("{size}: a power of two up to 2^24"),
                    ));
                }
                st.postcarder = Some(qps.len());
                let cache = PostcarderCache::new(size, hops);
                qps.push(new_qp(
                    &qps,
                    format!("{name}/postcarder"),
                    i,
                    ip,
                    pc.port,
                    Store::Postcarder(cache),
                ));
            }
            for (j, l) in col.append.iter().enumerate() {
                let lkey = format!("{key}.append[{j}]");
                let batch = l.batch.unwrap_or(4);
                if ![1, 2, 4, 8, 16].contains(&batch) {
                    return Err(c.err(format!("{lkey}.batch"), format!("{batch}; expected 1, 2, 4, 8 or 16")));
                }
                if lists.get(&l.list).is_some() {
                    return Err(c.err(format!("{lkey}.list"), format!("list {} is configured twice", l.list)));
                }
                lists.insert(l.list, qps.len()).map_err(|e| c.err(lkey.clone(), e.to_string()))?;
                let store = Store::Append {
                    list: l.list,
                    batcher: AppendBatcher::new(batch as usize, 1),
                    marks: false,
                };
                qps.push(new_qp(&qps, format!("{name}/append[{}]", l.list), i, ip, l.port, store));
            }
            for (j, sk) in col.sketch.iter().enumerate() {
                let skey = format!("{key}.sketch[{j}]");
                let batch = sk.batch.unwrap_or(4);
                let bytes = batch as usize * usize::from(sk.rows) * 4;
                if sk.rows == 0 || sk.columns == 0 || sk.reporters.is_empty() || batch == 0 {
                    return Err(c.err(skey, "rows, columns, batch and reporters must not be zero or empty"));
                }
                // The merger holds a round of counters: columns x rows, up to 2^26 (256 MiB).
                if u64::from(sk.columns) * u64::from(sk.rows) > 1 << 26 {
                    return Err(c.err(
                        format!("{skey}.columns"),
                        format!(
                            "{} columns x {} rows: more than 2^26 counters to merge",
                            sk.columns, sk.rows
                        ),
                    ));
                }
                if bytes > roce::requester::MAX_INLINE {
                    return Err(c.err(
                        format!("{skey}.batch"),
                        format!(
                            "{batch} columns x {} rows x 4 B = {bytes} B, above {} B per write",
                            sk.rows,
                            roce::requester::MAX_INLINE
                        ),
                    ));
                }
                if sketches.get(&sk.id).is_some() {
                    return Err(c.err(format!("{skey}.id"), format!("sketch {} is configured twice", sk.id)));
                }
                sketches.insert(sk.id, qps.len()).map_err(|e| c.err(skey.clone(), e.to_string()))?;
                let merger = SketchMerger::new(sk.rows, sk.columns, &sk.reporters, batch);
                let store = Store::Sketch { id: sk.id, merger };
                qps.push(new_qp(&qps, format!("{name}/sketch[{}]", sk.id), i, ip, sk.port, store));
            }
            // Each store its own port: two on one would share a connection's region (the
            // collector answers a port with one region), and one's writes land in the other's.
            let mut ports: Vec<(u16, String)> = Vec::new();
            ports.extend(col.keywrite.map(|p| (p, format!("{key}.keywrite"))));
            ports.extend(col.keyincrement.map(|p| (p, format!("{key}.keyincrement"))));
            ports.extend(col.postcarder.as_ref().map(|pc| (pc.port, format!("{key}.postcarder.port"))));
            ports.extend(
                col.append.iter().enumerate().map(|(j, l)| (l.port, format!("{key}.append[{j}].port"))),
            );
            ports.extend(
                col.sketch.iter().enumerate().map(|(j, k)| (k.port, format!("{key}.sketch[{j}].port"))),
            );
            for (j, (port, k)) in ports.iter().enumerate() {
                if let Some((_, first)) = ports[..j].iter().find(|(p, _)| p == port) {
                    return Err(c.err(
                        k.clone(),
                        format!("port {port} is already {first}'s: each store needs its own"),
                    ));
                }
            }
            collectors.push(st);
        }
        if qps.is_empty() {
            return Err(c.err("dta.collector", "no collector has a data structure (keywrite, append, …)"));
        }
        let kw_collectors =
            collectors.iter().enumerate().filter(|(_, c)| c.keywrite.is_some()).map(|(i, _)| i).collect();
        let ki_collectors =
            collectors.iter().enumerate().filter(|(_, c)| c.keyincrement.is_some()).map(|(i, _)| i).collect();
        let n_reporters = d.reporters.unwrap_or(65536);
        if !(1..=1 << 22).contains(&n_reporters) {
            return Err(c.err("dta.reporters", format!("{n_reporters} out of range 1..=4194304")));
        }
        let reporters = ExactTable::new(res, decl::reporter_seq(n_reporters));
        let park_cap = d.park.unwrap_or(4096);
        if park_cap > 1 << 20 {
            return Err(c.err("dta.park", format!("{park_cap} out of range 0..=1048576")));
        }
        let state_bytes: usize = qps
            .iter()
            .map(|q| match &q.store {
                Store::Postcarder(c) => c.bytes(),
                Store::Sketch { merger, .. } => merger.bytes(),
                _ => 0,
            })
            .sum();
        let qp_bytes = qps
            .iter()
            .map(|q| (s.requester.window as usize) * (q.store.requester_config(s.requester).max_payload + 40))
            .sum::<usize>()
            + state_bytes;
        decl::declare(res, &s, collectors.len(), qps.len(), qp_bytes, park_cap);
        let dr = &mut ctx.drops;
        let drops = Drops {
            malformed: dr.declare("dta_malformed"),
            unknown_opcode: dr.declare("dta_unknown_opcode"),
            hello: dr.declare("dta_hello"),
            bad_redundancy: dr.declare("dta_bad_redundancy"),
            redundancy_mismatch: dr.declare("dta_redundancy_mismatch"),
            no_list: dr.declare("dta_no_list"),
            no_sketch: dr.declare("dta_no_sketch"),
            no_store: dr.declare("dta_no_store"),
            store_down: dr.declare("dta_store_down"),
            window_full: dr.declare("dta_window_full"),
            rate_low: dr.declare("dta_rate_limited"),
            park_full: dr.declare("dta_park_full"),
            stopped: dr.declare("dta_stopped"),
            after_stop: dr.declare("dta_after_stop"),
            seq_duplicate: dr.declare("dta_seq_duplicate"),
            seq_stale: dr.declare("dta_seq_stale"),
            bad_hop: dr.declare("dta_bad_hop"),
            sketch_order: dr.declare("dta_sketch_out_of_order"),
            sketch_shape: dr.declare("dta_sketch_shape"),
            sketch_gave_up: dr.declare("dta_sketch_gave_up"),
            sketch_deferred: dr.declare("dta_sketch_deferred"),
            roce_bad_icrc: dr.declare("roce_bad_icrc"),
            roce_malformed: dr.declare("roce_malformed"),
            unknown_qp: dr.declare("roce_unknown_qp"),
            loss: Vec::new(),
        };
        let drops = Drops { loss: dr.names().iter().map(|n| drop_is_loss(n)).collect(), ..drops };
        let resources = ctx.resources_after_l2l3(&l2l3);
        let mut list_direct = vec![u16::MAX; 1024];
        for (id, qi) in lists.iter() {
            if let Some(slot) = list_direct.get_mut(*id as usize) {
                *slot = *qi as u16;
            }
        }
        Ok(Self {
            l2l3,
            list_direct,
            resources,
            s,
            collectors,
            kw_collectors,
            ki_collectors,
            qps,
            lists,
            sketches,
            reporters,
            meters,
            parked: std::collections::VecDeque::with_capacity(park_cap),
            park_cap,
            park_len: 0,
            drops,
            stats: DtaStats::default(),
            sketch_buf: Vec::with_capacity(roce::requester::MAX_INLINE),
            scratch: Vec::with_capacity(MAX_REPORT),
            last_tick: 0,
            started_at: None,
            born_floor: u64::MAX,
            progress_at: 0,
            progress_due: false,
            stopped: false,
            holes: Vec::new(),
            holes_scan: 0,
        })
    }
}

/// A seed that differs between starts: the time and the process ID (as the collector seeds its
/// QPNs and R_Keys). Not a secret — IB CM has no authentication — only different each start.
fn fresh_seed() -> u32 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    (t.as_nanos() as u32)
        ^ (t.as_secs() as u32).rotate_left(16)
        ^ std::process::id().wrapping_mul(0x9e37_79b1)
}

/// The first CM communication ID of QP `local_qpn` under `seed`: spread over the 32-bit space
/// (murmur3's finaliser), so two starts, or two QPs, do not share IDs.
fn comm_id_base(seed: u32, local_qpn: u32) -> u32 {
    let mut x = seed ^ local_qpn.wrapping_mul(0x85eb_ca6b);
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}
