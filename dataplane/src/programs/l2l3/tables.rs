//! The control plane of `l2l3`: its tables built from the configuration, and every change to
//! them afterwards — the configuration's entries and the control socket's commands take the
//! same path ([`L2l3::apply`]), so the same rules refuse a contradiction in both, naming it,
//! with the tables unchanged.

use super::*;

impl L2l3 {
    /// Build from a configuration: ports, addresses, the `[l2l3]` section.
    pub fn build(cfg: &Config, ctx: &mut BuildCtx) -> Result<Self, ConfigError> {
        let c = cfg.ctx();
        let s = &Self::section(cfg)?;
        // Table sizes are allocated up front: 1 to 2^24 entries (a huge one was a capacity
        // overflow, or an allocation abort).
        let size = |key: &str, v: Option<usize>, default: usize| -> Result<usize, ConfigError> {
            match v.unwrap_or(default) {
                n @ 1..=MAX_TABLE => Ok(n),
                n => Err(c.err(key, format!("{n} out of range 1..={MAX_TABLE}"))),
            }
        };
        let mac_size = size("l2l3.mac_table_size", s.mac_table_size, DEFAULT_MAC_TABLE)?;
        let route_size = size("l2l3.route_table_size", s.route_table_size, DEFAULT_ROUTES)?;
        let neighbor_size = size("l2l3.neighbor_table_size", s.neighbor_table_size, DEFAULT_NEIGHBORS)?;
        if let Some(a) = s.mac_aging_s.filter(|&a| a > 365 * 86_400) {
            return Err(c.err("l2l3.mac_aging_s", format!("{a} out of range 0..=31536000 (a year)")));
        }
        let res = &mut ctx.resources;
        let nports = cfg.ports.len();
        let macs = ExactTable::new(res, decl::dmac(mac_size));
        let routes = LpmTable::new(res, decl::ipv4_lpm(route_size));
        decl::declare(res, nports, MAX_GROUPS);
        let neighbors = ExactTable::new(res, decl::neighbor(neighbor_size));
        let arp_pending = ExactTable::new(res, decl::arp_pending(256));
        let ecmp = HashUnit::new(res, "ecmp_hash", HashAlgo::Crc16Arc, 16, &decl::ECMP_INPUTS);
        let d = &mut ctx.drops;
        let drops = Drops {
            bad_checksum: d.declare("bad_checksum"),
            ttl_expired: d.declare("ttl_expired"),
            no_route: d.declare("no_route"),
            no_neighbor: d.declare("no_neighbor"),
            same_port: d.declare("same_port"),
            to_switch: d.declare("to_switch"),
            arp_to_switch: d.declare("arp_to_switch"),
        };
        ctx.mcast.set(FLOOD_GROUP, (0..nports as PortId).map(|p| (p, 0)).collect());
        let qos_pcp = match s.qos.as_deref().unwrap_or("dscp") {
            "dscp" => false,
            "pcp" => true,
            other => return Err(c.err("l2l3.qos", format!("{other:?}; expected \"dscp\" or \"pcp\""))),
        };
        let mut p = Self {
            ports: cfg.ports.iter().map(|p| PortL3 { mac: p.mac, addrs: p.ipv4.clone() }).collect(),
            port_names: cfg.ports.iter().map(|p| p.name.clone()).collect(),
            resources: Resources::new(),
            macs,
            routes,
            groups: Vec::new(),
            adj: Vec::new(),
            host_adj: vec![None; HOST_ADJ],
            live: Vec::new(),
            down: vec![false; nports],
            neighbors,
            arp_pending,
            ecmp,
            aging_ns: s.mac_aging_s.unwrap_or(DEFAULT_MAC_AGING_S).saturating_mul(1_000_000_000),
            qos_pcp,
            int_switch_id: s.int_switch_id,
            drops,
            last_aging: 0,
            learn_cache: vec![(u64::MAX, 0); nports],
            #[cfg(test)]
            fast_taken: 0,
            #[cfg(test)]
            fast_off: false,
        };
        let port = |key: String, name: &str| {
            cfg.port_id(name).ok_or_else(|| c.err(key, format!("no port named {name:?}")))
        };
        for (i, pc) in cfg.ports.iter().enumerate() {
            for &(a, len) in &pc.ipv4 {
                let taken = p.routes.rule(a, 32).is_some();
                if taken {
                    return Err(c.err(format!("port[{i}].ipv4"), format!("{a} is already a switch address")));
                }
                p.routes
                    .insert(a, 32, Route::Local)
                    .map_err(|e| c.err(format!("port[{i}].ipv4"), e.to_string()))?;
                p.routes
                    .insert(prefix_of(a, len), len, Route::Connected(i as PortId))
                    .map_err(|e| c.err(format!("port[{i}].ipv4"), e.to_string()))?;
            }
        }
        let mut seen_macs: Vec<EthernetAddress> = Vec::new();
        for (i, m) in s.static_mac.iter().enumerate() {
            let key = format!("l2l3.static_mac[{i}]");
            let mac = EthernetAddress::parse(&m.mac)
                .ok_or_else(|| c.err(format!("{key}.mac"), format!("{:?} is not a MAC address", m.mac)))?;
            if let Some(j) = seen_macs.iter().position(|&x| x == mac) {
                return Err(c.err(format!("{key}.mac"), format!("{mac} is also l2l3.static_mac[{j}]")));
            }
            seen_macs.push(mac);
            let pid = port(format!("{key}.port"), &m.port)?;
            p.apply_entry(Command::MacAdd(mac, pid), &c, &key)?;
        }
        let mut seen_ips: Vec<Ipv4Addr> = Vec::new();
        for (i, n) in s.neighbor.iter().enumerate() {
            let key = format!("l2l3.neighbor[{i}]");
            let ip: Ipv4Addr =
                n.ip.parse()
                    .map_err(|_| c.err(format!("{key}.ip"), format!("{:?} is not an IPv4 address", n.ip)))?;
            // A file is a set of entries: the same IP twice (with one MAC or two) is a mistake,
            // where the control socket's `neighbor add` replaces.
            if let Some(j) = seen_ips.iter().position(|&x| x == ip) {
                return Err(c.err(format!("{key}.ip"), format!("{ip} is also l2l3.neighbor[{j}]")));
            }
            seen_ips.push(ip);
            let mac = EthernetAddress::parse(&n.mac)
                .ok_or_else(|| c.err(format!("{key}.mac"), format!("{:?} is not a MAC address", n.mac)))?;
            let pid = port(format!("{key}.port"), &n.port)?;
            p.apply_entry(Command::NeighborAdd(ip, mac, pid), &c, &key)?;
        }
        let mut seen_prefixes: Vec<(Ipv4Addr, u8)> = Vec::new();
        for (i, r) in s.route.iter().enumerate() {
            let key = format!("l2l3.route[{i}]");
            let (a, len) = parse_cidr(&r.prefix).map_err(|why| {
                c.err(format!("{key}.prefix"), format!("{:?} is not an IPv4 CIDR: {why}", r.prefix))
            })?;
            if let Some(j) = seen_prefixes.iter().position(|&x| x == (a, len)) {
                return Err(c.err(format!("{key}.prefix"), format!("{a}/{len} is also l2l3.route[{j}]")));
            }
            seen_prefixes.push((a, len));
            let cmd = match (&r.port, r.via.is_empty()) {
                (Some(name), true) => Command::RouteConnected(a, len, port(format!("{key}.port"), name)?),
                (None, false) => {
                    let mut via = Vec::new();
                    for (j, v) in r.via.iter().enumerate() {
                        via.push(v.parse().map_err(|_| {
                            c.err(format!("{key}.via[{j}]"), format!("{v:?} is not an IPv4 address"))
                        })?);
                    }
                    Command::RouteVia(a, len, via)
                }
                _ => {
                    return Err(c.err(
                        key,
                        "give either `via` (next hops) or `port` (connected), not both or neither",
                    ));
                }
            };
            p.apply_entry(cmd, &c, &key)?;
        }
        p.resources = std::mem::take(&mut ctx.resources);
        Ok(p)
    }

    /// The `[l2l3]` section of `cfg` (empty when absent: every default).
    pub fn section(cfg: &Config) -> Result<L2l3Section, ConfigError> {
        Ok(cfg.section::<L2l3Section>("l2l3")?.unwrap_or_default())
    }

    /// Apply a command (the control plane's and the configuration's path into the tables).
    pub(super) fn apply(&mut self, cmd: Command, now: u64) -> Result<String, String> {
        self.validate(&cmd).map_err(|(_, why)| why)?;
        let resolve =
            matches!(cmd, Command::RouteVia(..) | Command::NeighborAdd(..) | Command::NeighborDel(_));
        let r = self.apply_to_tables(cmd, now);
        // Every command may change what a connected host resolves to.
        self.host_adj.fill(None);
        if resolve && r.is_ok() {
            self.resolve_groups();
        }
        r
    }

    /// Rebuild [`Self::adj`] and [`Self::live`] from the groups, the neighbours and the ports.
    pub(super) fn resolve_groups(&mut self) {
        self.host_adj.fill(None);
        self.adj.clear();
        self.adj.resize(self.groups.len() * MAX_PATHS, None);
        self.live.clear();
        for (g, members) in self.groups.iter().enumerate() {
            let mut live = (0u8, [0u8; MAX_PATHS]);
            for (i, ip) in members.iter().enumerate() {
                let nb = self.neighbors.get(&ip.to_bits());
                self.adj[g * MAX_PATHS + i] = nb.map(|nb| NextHop {
                    port: nb.port,
                    dst_mac: nb.mac,
                    src_mac: self.ports[usize::from(nb.port)].mac,
                });
                if !nb.is_some_and(|nb| self.down.get(usize::from(nb.port)).copied().unwrap_or(false)) {
                    live.1[usize::from(live.0)] = i as u8;
                    live.0 += 1;
                }
            }
            self.live.push(live);
        }
    }

    fn apply_to_tables(&mut self, cmd: Command, now: u64) -> Result<String, String> {
        if matches!(cmd, Command::MacAdd(..) | Command::MacDel(_)) {
            self.learn_cache.fill((u64::MAX, 0));
        }
        let port_ok =
            |p: PortId| if usize::from(p) < self.ports.len() { Ok(()) } else { Err(format!("no port {p}")) };
        if let Command::RouteVia(a, 32, _) | Command::RouteConnected(a, 32, _) | Command::RouteDel(a, 32) =
            cmd
            && self.routes.rule(a, 32) == Some(&Route::Local)
        {
            return Err(format!("{a}/32 is a switch address; its route cannot change"));
        }
        match cmd {
            Command::RouteVia(a, len, via) => {
                if via.is_empty() || via.len() > MAX_PATHS {
                    return Err(format!("{} next hops; 1 to {MAX_PATHS} are supported", via.len()));
                }
                let g = match self.groups.iter().position(|g| *g == via) {
                    Some(g) => g,
                    None if self.groups.len() < MAX_GROUPS => {
                        self.groups.push(via);
                        self.groups.len() - 1
                    }
                    None => return Err(format!("ECMP groups full ({MAX_GROUPS})")),
                };
                self.routes.insert(a, len, Route::Group(g as u16)).map_err(|e| e.to_string())?;
                Ok(format!("route {}/{len} via group {g}", prefix_of(a, len)))
            }
            Command::RouteConnected(a, len, p) => {
                port_ok(p)?;
                self.routes.insert(a, len, Route::Connected(p)).map_err(|e| e.to_string())?;
                Ok(format!(
                    "route {}/{len} connected on {}",
                    prefix_of(a, len),
                    self.port_names[usize::from(p)]
                ))
            }
            Command::RouteDel(a, len) => match self.routes.remove(a, len) {
                Some(_) => Ok(format!("route {}/{len} removed", prefix_of(a, len))),
                None => Err(format!("no route {}/{len}", prefix_of(a, len))),
            },
            Command::NeighborAdd(ip, mac, port) => {
                port_ok(port)?;
                self.neighbors
                    .insert(ip.to_bits(), Neighbor { mac, port, is_static: true })
                    .map_err(|e| e.to_string())?;
                Ok(format!("neighbor {ip} is {mac} on {}", self.port_names[usize::from(port)]))
            }
            Command::NeighborDel(ip) => self
                .neighbors
                .remove(&ip.to_bits())
                .map(|_| format!("neighbor {ip} removed"))
                .ok_or(format!("no neighbor {ip}")),
            Command::MacAdd(mac, port) => {
                port_ok(port)?;
                self.macs
                    .insert(mac_key(mac), MacEntry { port, last_seen: now, is_static: true })
                    .map_err(|e| e.to_string())?;
                Ok(format!("mac {mac} on {}", self.port_names[usize::from(port)]))
            }
            Command::MacDel(mac) => self
                .macs
                .remove(&mac_key(mac))
                .map(|_| format!("mac {mac} removed"))
                .ok_or(format!("no mac {mac}")),
            Command::Show => Ok(self.show()),
            Command::PortDown(p) | Command::PortUp(p) => {
                port_ok(p)?;
                let down = matches!(cmd, Command::PortDown(_));
                self.down[usize::from(p)] = down;
                self.resolve_groups();
                Ok(format!("port {} {}", self.port_names[usize::from(p)], if down { "down" } else { "up" }))
            }
        }
    }

    fn show(&self) -> String {
        let mut s = String::new();
        let name = |p: PortId| self.port_names.get(usize::from(p)).cloned().unwrap_or_else(|| format!("{p}"));
        let mut macs: Vec<_> = self.macs.iter().collect();
        macs.sort_by_key(|(k, _)| **k);
        for (k, e) in macs {
            let b = k.to_be_bytes();
            let m = EthernetAddress([b[2], b[3], b[4], b[5], b[6], b[7]]);
            s += &format!(
                "mac {m} port {} {}\n",
                name(e.port),
                if e.is_static { "static" } else { "learned" }
            );
        }
        let mut nbs: Vec<_> = self.neighbors.iter().collect();
        nbs.sort_by_key(|(k, _)| **k);
        for (k, n) in nbs {
            s += &format!(
                "neighbor {} {} port {} {}\n",
                Ipv4Addr::from_bits(*k),
                n.mac,
                name(n.port),
                if n.is_static { "static" } else { "learned" }
            );
        }
        for (g, m) in self.groups.iter().enumerate() {
            s += &format!("ecmp group {g}: {m:?}\n");
        }
        s += &format!("{} routes\n", self.routes.len());
        s
    }

    /// A configuration entry at `key` into the tables: its errors name the entry's field.
    fn apply_entry(
        &mut self,
        cmd: Command,
        c: &crate::config::Ctx<'_>,
        key: &str,
    ) -> Result<(), ConfigError> {
        self.validate(&cmd).map_err(|(field, why)| c.err(format!("{key}.{field}"), why))?;
        self.apply(cmd, 0).map(drop).map_err(|e| c.err(key, e))
    }

    /// Whether `cmd` makes sense against the tables as they are, before anything changes:
    /// prefixes without host bits, next hops that are neighbours on a connected subnet (not
    /// the switch, not a subnet's network or broadcast address, each once in its group),
    /// neighbours on the port whose subnet holds them, station MACs that are unicast. The
    /// field at fault (`prefix`, `via`, `ip`, `mac`) and why.
    fn validate(&self, cmd: &Command) -> Result<(), (&'static str, String)> {
        let prefix = |a: Ipv4Addr, len: u8| {
            if prefix_of(a, len) != a {
                Err((
                    "prefix",
                    format!("{a}/{len} has host bits set (the prefix is {}/{len})", prefix_of(a, len)),
                ))
            } else {
                Ok(())
            }
        };
        let unicast_mac = |m: EthernetAddress| {
            if m.0[0] & 1 != 0 || m.0 == [0; 6] {
                Err(("mac", format!("{m} is not a station's MAC (multicast, broadcast or zero)")))
            } else {
                Ok(())
            }
        };
        match cmd {
            Command::RouteVia(a, len, via) => {
                prefix(*a, *len)?;
                for (i, h) in via.iter().enumerate() {
                    if via[..i].contains(h) {
                        return Err(("via", format!("next hop {h} is listed twice in one ECMP group")));
                    }
                    self.next_hop_ok(*h).map_err(|why| ("via", why))?;
                }
                Ok(())
            }
            Command::RouteConnected(a, len, _) => prefix(*a, *len),
            Command::NeighborAdd(ip, mac, port) => {
                unicast_mac(*mac)?;
                self.host_address_ok(*ip).map_err(|why| ("ip", why))?;
                if !self.on_connected_subnet(*port, *ip) {
                    let on = (0..self.ports.len() as PortId).find(|&p| self.on_connected_subnet(p, *ip));
                    let name = |p: PortId| self.port_names.get(usize::from(p)).map_or("?", String::as_str);
                    return Err((
                        "port",
                        match on {
                            Some(p) => format!(
                                "the neighbour's ip {ip} is on {}'s subnet (its ipv4), not {}'s",
                                name(p),
                                name(*port)
                            ),
                            None => format!(
                                "the neighbour's ip {ip} is on no subnet of port {} (its ipv4)",
                                name(*port)
                            ),
                        },
                    ));
                }
                Ok(())
            }
            Command::MacAdd(mac, _) => unicast_mac(*mac),
            _ => Ok(()),
        }
    }

    /// `ip` can be a host: unicast, not the switch's own, not a connected subnet's network or
    /// broadcast address.
    fn host_address_ok(&self, ip: Ipv4Addr) -> Result<(), String> {
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return Err(format!("{ip} is not a unicast address"));
        }
        if self.routes.rule(ip, 32) == Some(&Route::Local) {
            return Err(format!("{ip} is the switch's own address"));
        }
        for p in &self.ports {
            for &(a, l) in &p.addrs {
                let net = prefix_of(a, l);
                if l <= 30 && prefix_of(ip, l) == net {
                    let bcast = Ipv4Addr::from_bits(net.to_bits() | (u32::MAX >> l));
                    if ip == net || ip == bcast {
                        return Err(format!("{ip} is the network or broadcast address of {net}/{l}"));
                    }
                }
            }
        }
        Ok(())
    }

    /// `h` can be a next hop: a host on a connected subnet.
    fn next_hop_ok(&self, h: Ipv4Addr) -> Result<(), String> {
        self.host_address_ok(h)?;
        match self.routes.peek(h) {
            Some(Route::Connected(_)) => Ok(()),
            _ => Err(format!(
                "next hop {h} is on no connected subnet: no port's ipv4 holds it (a next hop must be a neighbour)"
            )),
        }
    }
}
