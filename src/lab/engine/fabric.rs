//! The fabric built from a lab: addresses and MACs, the switches (their configuration written
//! as the TOML a user would, run through `dataplane`'s own parser and registry), and path
//! lengths.

use std::net::Ipv4Addr;

use dataplane::buf::PktBuf;
use dataplane::config::{Config, rate_str};
use dataplane::programs;
use wire::ethernet::EthernetAddress;

use super::DATA_QUEUE;
use super::switch_node::{PortState, SwitchNode};
use crate::lab::config::{Cc, LabConfig};
use crate::lab::topology::{Node, PortEnd, Wiring};

/// Address `last` in host `h`'s subnet `10.h/256.h%256.0/24`: 0 the subnet, 1 its gateway (the
/// switch port), 2 the host.
pub(crate) fn host_addr(h: usize, last: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, (h >> 8) as u8, h as u8, last)
}

/// Host `h`'s address.
pub(crate) fn host_ip(h: usize) -> Ipv4Addr {
    host_addr(h, 2)
}

/// The host whose address is `ip` (the inverse of [`host_ip`]).
#[cfg(test)]
pub(crate) fn host_of(ip: Ipv4Addr) -> Option<usize> {
    let [a, b, c, d] = ip.octets();
    (a == 10 && d == 2).then_some(usize::from(b) << 8 | usize::from(c))
}

/// Host `h`'s MAC.
pub(crate) fn host_mac(h: usize) -> EthernetAddress {
    EthernetAddress([2, 0, (h >> 8) as u8, h as u8, 0, 2])
}

/// The MAC of port `p` of switch `s`.
pub(crate) fn switch_mac(s: usize, p: usize) -> EthernetAddress {
    EthernetAddress([2, 0x5f, (s >> 8) as u8, s as u8, p as u8, 1])
}

/// The wire time of `bytes` (at least a minimum frame) at `rate_bps`, ns, rounded up.
pub(crate) fn ser_ns(bytes: usize, rate_bps: u64) -> u64 {
    (bytes.max(64) as u64 * 8 * 1_000_000_000).div_ceil(rate_bps)
}

/// A link rate that gives [`ser_ns`] exactly, by a multiplication with the rate's reciprocal
/// and a correction of at most two steps instead of a 64-bit division per frame (the
/// division was a few per cent of the engine's time at k = 8).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SerRate {
    rate_bps: u64,
    /// ⌊(2^64 − 1) / rate⌋: the quotient it gives is at most 2 short.
    inv: u64,
}

impl SerRate {
    pub(crate) fn new(rate_bps: u64) -> Self {
        let rate_bps = rate_bps.max(1);
        Self { rate_bps, inv: u64::MAX / rate_bps }
    }

    /// [`ser_ns`]`(bytes, rate)`, exactly.
    #[inline(always)]
    pub(crate) fn ns(self, bytes: usize) -> u64 {
        let n = bytes.max(64) as u64 * 8 * 1_000_000_000;
        let mut q = ((u128::from(n) * u128::from(self.inv)) >> 64) as u64;
        let mut r = n - q * self.rate_bps;
        while r >= self.rate_bps {
            q += 1;
            r -= self.rate_bps;
        }
        q + u64::from(r > 0)
    }
}

/// The fabric's switches, hosts' attachment and path lengths.
pub(super) struct Fabric {
    pub(super) switches: Vec<SwitchNode>,
    pub(super) wiring: Wiring,
    /// Per host: its switch and the port it hangs off.
    pub(super) attach: Vec<(usize, u16)>,
    /// Per switch with hosts: switch hops from every switch to it (`None`: no hosts there).
    pub(super) dist_to: Vec<Option<Vec<u32>>>,
}

impl Fabric {
    /// Round trip of one data packet and its ACK between hosts `a` and `b` on an idle fabric,
    /// along the first of the shortest paths: per link, twice the propagation delay plus both
    /// frames' serialisation.
    pub(super) fn pair_rtt(&self, cfg: &LabConfig, a: usize, b: usize, data: usize, ack: usize) -> u64 {
        let cost = |link: usize| {
            let l = &cfg.topology.links[link];
            2 * l.delay_ns + ser_ns(data, l.rate_bps) + ser_ns(ack, l.rate_bps)
        };
        let (ha, hb) = (self.wiring.host_port[a], self.wiring.host_port[b]);
        let mut rtt = cost(ha.link) + cost(hb.link);
        let (Node::Switch(mut s), Node::Switch(t)) = (ha.peer, hb.peer) else { return rtt };
        let Some(dist) = &self.dist_to[t] else { return rtt };
        while s != t {
            let Some(next) = self.wiring.switch_ports[s]
                .iter()
                .find(|e| matches!(e.peer, Node::Switch(o) if dist[o].wrapping_add(1) == dist[s]))
            else {
                break;
            };
            rtt += cost(next.link);
            let Node::Switch(o) = next.peer else { break };
            s = o;
        }
        rtt
    }

    /// Every shortest path from host `a` to host `b` as µFAB source routes: per switch on the
    /// path, the port it sends by (the last one the port to `b`), in port order.
    pub(super) fn source_routes(&self, a: usize, b: usize) -> Vec<Vec<u16>> {
        let (ha, hb) = (self.wiring.host_port[a], self.wiring.host_port[b]);
        let (Node::Switch(s), Node::Switch(t)) = (ha.peer, hb.peer) else { return Vec::new() };
        let Some(dist) = &self.dist_to[t] else { return Vec::new() };
        let last = self.attach[b].1;
        let mut out = Vec::new();
        let mut stack: Vec<(usize, Vec<u16>)> = vec![(s, Vec::new())];
        while let Some((x, route)) = stack.pop() {
            if x == t {
                let mut r = route;
                r.push(last);
                out.push(r);
                continue;
            }
            // Reversed, so the stack pops them in port order.
            for (p, e) in self.wiring.switch_ports[x].iter().enumerate().rev() {
                if let Node::Switch(o) = e.peer
                    && dist[o].wrapping_add(1) == dist[x]
                {
                    let mut r = route.clone();
                    r.push(p as u16);
                    stack.push((o, r));
                }
            }
        }
        out
    }

    /// Switches on the longest shortest path between two hosts.
    pub(super) fn longest_path(&self) -> usize {
        (self.dist_to.iter().flatten())
            .flat_map(|d| d.iter().filter(|&&x| x != u32::MAX).copied())
            .max()
            .unwrap_or(0) as usize
            + 1
    }
}

/// Build the switches from the topology: ports, addresses (hosts `10.x.y.0/24`, switch–switch
/// links `/31`s in 172.16/12), the TM, and for programs built on `l2l3` its routes (every
/// shortest path, ECMP over them) and neighbors, as the `dataplane` configuration text a user
/// would write, then the lab file's own sections for the switch's program.
pub(super) fn build(cfg: &LabConfig) -> Result<Fabric, String> {
    build_some(cfg, |_| true)
}

/// Build, at load, the first switch of each distinct program and sections a lab file gives
/// (the configuration the lab writes for it, with the file's sections appended, parsed and
/// built by `dataplane` as at run time): a section that does not fit — a key the lab writes
/// already, a value out of range — is refused before anything runs. The error names the switch
/// and the generated file's line.
pub(crate) fn check_programs(cfg: &LabConfig) -> Result<(), String> {
    let mut first: Vec<(usize, &crate::lab::SwitchProgram)> = Vec::new();
    for s in 0..cfg.topology.switches {
        let p = cfg.switch_program(s);
        if !first.iter().any(|(_, q)| q.program == p.program && q.sections == p.sections) {
            first.push((s, p));
        }
    }
    build_some(cfg, |s| first.iter().any(|(f, _)| *f == s)).map(|_| ())
}

/// The PFC headroom a switch's configuration gets, per lossless port, as the reference MMU:
/// 3 × the largest bandwidth-delay product of its links, at least 3 frames.
pub(crate) fn headroom<'a>(mtu: usize, links: impl Iterator<Item = &'a crate::lab::Link>) -> u64 {
    let mut h = 3 * (mtu as u64 + 200);
    for l in links {
        let bdp = u128::from(l.rate_bps) / 8 * u128::from(l.delay_ns) / 1_000_000_000;
        h = h.max(u64::try_from(3 * bdp).unwrap_or(u64::MAX));
    }
    h
}

/// [`build`], of the switches `which` picks (the others are left out of the fabric).
fn build_some(cfg: &LabConfig, which: impl Fn(usize) -> bool) -> Result<Fabric, String> {
    let topo = &cfg.topology;
    let w = topo.wiring();
    // A switch port's address: towards a host the host's gateway, towards a switch its end of
    // the link's /31 (the `a` end even).
    let port_ip = |s: usize, end: &PortEnd| -> (Ipv4Addr, u8) {
        match end.peer {
            Node::Host(h) => (host_addr(h, 1), 24),
            Node::Switch(_) => {
                let a_end = topo.links[end.link].a == Node::Switch(s);
                (Ipv4Addr::from(0xac10_0000u32 + 2 * end.link as u32 + u32::from(!a_end)), 31)
            }
        }
    };
    let attach: Vec<(usize, u16)> = (0..topo.hosts).map(|h| w.attach(h)).collect();
    let mut dist_to: Vec<Option<Vec<u32>>> = vec![None; topo.switches];
    for &(s, _) in &attach {
        if dist_to[s].is_none() {
            dist_to[s] = Some(topo.switch_distances(&w, s));
        }
    }
    // The reference's run.py for DCQCN, per port from the port's rate (bw Gb/s): kmin
    // 100·bw/25 KB, kmax 400·bw/25 KB, pmax 0.2.
    let ecn = |rate_bps: u64| match cfg.cc {
        Cc::Dcqcn => {
            let gbps = (rate_bps / 1_000_000_000).max(1);
            format!(
                "ecn = [{{ queue = {DATA_QUEUE}, kmin = {}, kmax = {}, pmax = 0.2 }}]\n",
                100 * gbps / 25 * 1000,
                400 * gbps / 25 * 1000
            )
        }
        Cc::Hpcc | Cc::Ufab => String::new(),
    };
    let mut switches = Vec::with_capacity(topo.switches);
    for (s, ports) in w.switch_ports.iter().enumerate() {
        if !which(s) {
            continue;
        }
        let spec = cfg.switch_program(s);
        let info = programs::find(&spec.program)
            .ok_or_else(|| format!("switch {s}: unknown program {:?}", spec.program))?;
        let mut text = format!("program = {:?}\n", spec.program);
        let headroom = headroom(cfg.mtu, ports.iter().map(|end| &topo.links[end.link]));
        for (p, end) in ports.iter().enumerate() {
            let l = &topo.links[end.link];
            let (ip, len) = port_ip(s, end);
            text.push_str(&format!(
                "[[port]]\nname = \"p{p}\"\nbackend = \"ring\"\nmac = \"{}\"\nspeed = \"{}\"\nipv4 = [\"{ip}/{len}\"]\n{}",
                switch_mac(s, p),
                rate_str(l.rate_bps),
                ecn(l.rate_bps)
            ));
        }
        text.push_str(&format!(
            "[tm]\nbuffer_bytes = {}\nheadroom_bytes = {headroom}\nlossless = [{DATA_QUEUE}]\nmax_packets = 262144\npreallocate = false\nseed = {}\n",
            cfg.buffer_bytes,
            cfg.seed.wrapping_add(s as u64)
        ));
        if info.sections.contains(&"l2l3") {
            text.push_str(&l2l3_section(s, ports, &w, &attach, &dist_to, &port_ip, &spec.routes)?);
        }
        text.push_str(&spec.sections);
        let file = cfg.file.with_extension(format!("switch{s}.toml"));
        let c = Config::parse(&file, &text).map_err(|e| format!("switch {s}: {e}"))?;
        let mut sw = programs::build::<PktBuf>(&c).map_err(|e| format!("switch {s}: {e}"))?;
        sw.set_cut_through(false);
        let ports = ports
            .iter()
            .map(|end| {
                let l = &topo.links[end.link];
                PortState::new(end.peer, end.peer_port, l.rate_bps, l.delay_ns)
            })
            .collect();
        switches.push(SwitchNode {
            sw,
            program: info.name,
            ports,
            touched: Vec::new(),
            failed: false,
            failed_drops: 0,
        });
    }
    Ok(Fabric { switches, wiring: w, attach, dist_to })
}

/// The `[l2l3]` section of switch `s`: INT stamping with its ID, every neighbor it faces, and a
/// route to every other switch's hosts over every shortest path.
fn l2l3_section(
    s: usize,
    ports: &[PortEnd],
    w: &Wiring,
    attach: &[(usize, u16)],
    dist_to: &[Option<Vec<u32>>],
    port_ip: &dyn Fn(usize, &PortEnd) -> (Ipv4Addr, u8),
    overrides: &[(usize, usize)],
) -> Result<String, String> {
    let mut text = format!("[l2l3]\nint_switch_id = {}\n", s + 1);
    let mut neighbors = Vec::new();
    for (p, end) in ports.iter().enumerate() {
        let (ip, mac) = match end.peer {
            Node::Host(h) => (host_ip(h), host_mac(h)),
            Node::Switch(o) => {
                let back = &w.switch_ports[o][usize::from(end.peer_port)];
                (port_ip(o, back).0, switch_mac(o, usize::from(end.peer_port)))
            }
        };
        neighbors.push(format!("{{ ip = \"{ip}\", mac = \"{mac}\", port = \"p{p}\" }}"));
    }
    text.push_str(&format!("neighbor = [{}]\n", neighbors.join(", ")));
    let mut routes = Vec::new();
    for (h, &(t, _)) in attach.iter().enumerate() {
        let Some(dist) = dist_to[t].as_ref().filter(|_| t != s) else { continue };
        // A static override: only via that neighbour, shortest or not.
        let forced = overrides.iter().find(|(host, _)| *host == h).map(|&(_, o)| o);
        if let Some(o) = forced
            && !ports.iter().any(|end| end.peer == Node::Switch(o))
        {
            return Err(format!(
                "switch {s}: route override for host {h} via switch {o}, which is not a neighbour"
            ));
        }
        let via: Vec<String> = ports
            .iter()
            .filter_map(|end| match end.peer {
                Node::Switch(o) if forced.map_or(dist[o].wrapping_add(1) == dist[s], |f| f == o) => {
                    let back = &w.switch_ports[o][usize::from(end.peer_port)];
                    Some(format!("\"{}\"", port_ip(o, back).0))
                }
                _ => None,
            })
            .collect();
        routes.push(format!("{{ prefix = \"{}/24\", via = [{}] }}", host_addr(h, 0), via.join(", ")));
    }
    if !routes.is_empty() {
        text.push_str(&format!("route = [{}]\n", routes.join(", ")));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reciprocal gives the division's result for every frame size at the rates labs use
    /// and at odd ones.
    #[test]
    fn ser_rate_is_the_division() {
        for rate in [
            1,
            7,
            1_000_000_007,
            10_000_000_000,
            25_000_000_000,
            100_000_000_000,
            400_000_000_000,
            999_999_999_999,
        ] {
            let r = SerRate::new(rate);
            for bytes in (0..20_000).chain([65_535, 1 << 20, 1 << 30]) {
                assert_eq!(r.ns(bytes), ser_ns(bytes, rate), "rate {rate}, {bytes} B");
            }
        }
    }

    #[test]
    fn a_host_is_found_from_its_address() {
        for h in [0, 1, 255, 256, 4095] {
            assert_eq!(host_of(host_ip(h)), Some(h));
        }
        assert_eq!(host_of(Ipv4Addr::new(10, 0, 1, 1)), None, "a switch port");
    }
}
