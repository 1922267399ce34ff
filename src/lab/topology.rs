//! Topologies: the hosts, switches and links of a lab — generated (star, dumbbell, leaf-spine,
//! fat-tree k) or listed link by link — their checks, their wiring into numbered ports, and
//! shortest-path distances for routing.

use std::collections::VecDeque;
use std::fmt;

/// A host or a switch, by number (`h3`, `s1` in lab files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Node {
    /// A host: one NIC port.
    Host(usize),
    /// A switch.
    Switch(usize),
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Host(h) => write!(f, "h{h}"),
            Node::Switch(s) => write!(f, "s{s}"),
        }
    }
}

impl Node {
    /// `h3` or `s1`.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let n = |rest: &str| rest.parse::<usize>().ok();
        match s.as_bytes().first()? {
            b'h' => n(&s[1..]).map(Node::Host),
            b's' => n(&s[1..]).map(Node::Switch),
            _ => None,
        }
    }
}

/// A full-duplex link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// One end.
    pub a: Node,
    /// The other end.
    pub b: Node,
    /// Rate each way, bits per second.
    pub rate_bps: u64,
    /// Propagation delay, ns.
    pub delay_ns: u64,
}

/// Hosts, switches and the links between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Hosts `h0..`.
    pub hosts: usize,
    /// Switches `s0..`.
    pub switches: usize,
    /// Links; each node numbers its ports in the order its links appear here.
    pub links: Vec<Link>,
}

/// Why a topology cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// A link names a node that does not exist.
    #[error("link {link}: {node} does not exist ({hosts} hosts, {switches} switches)")]
    NoSuchNode {
        /// The link.
        link: usize,
        /// The node.
        node: Node,
        /// Hosts.
        hosts: usize,
        /// Switches.
        switches: usize,
    },
    /// A link from a node to itself, or between two hosts.
    #[error("link {link}: {a}–{b}: a link joins a host to a switch or two different switches")]
    BadEnds {
        /// The link.
        link: usize,
        /// One end.
        a: Node,
        /// The other.
        b: Node,
    },
    /// A link of zero rate.
    #[error("link {link}: a link of zero rate carries nothing")]
    ZeroRate {
        /// The link.
        link: usize,
    },
    /// A host without exactly one link.
    #[error("host {host} has {links} links; a host has exactly one (its NIC port)")]
    HostLinks {
        /// The host.
        host: usize,
        /// Its links.
        links: usize,
    },
    /// A host no path reaches.
    #[error("host {host} is disconnected: no path joins it to host 0")]
    Disconnected {
        /// The host.
        host: usize,
    },
}

impl TopologyError {
    /// The link at fault, if one is.
    pub fn link(&self) -> Option<usize> {
        match *self {
            Self::NoSuchNode { link, .. } | Self::BadEnds { link, .. } | Self::ZeroRate { link } => {
                Some(link)
            }
            Self::HostLinks { .. } | Self::Disconnected { .. } => None,
        }
    }
}

/// One end of a link, seen from a port: the link and who is across it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortEnd {
    /// Index into [`Topology::links`].
    pub link: usize,
    /// The node across the link.
    pub peer: Node,
    /// Its port number.
    pub peer_port: u16,
}

/// Every node's ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wiring {
    /// Per switch, its ports in order.
    pub switch_ports: Vec<Vec<PortEnd>>,
    /// Per host, its one port (a switch port across it).
    pub host_port: Vec<PortEnd>,
}

impl Topology {
    /// One switch, `hosts` hosts.
    pub fn star(hosts: usize, rate_bps: u64, delay_ns: u64) -> Self {
        let links =
            (0..hosts).map(|h| Link { a: Node::Host(h), b: Node::Switch(0), rate_bps, delay_ns }).collect();
        Self { hosts, switches: 1, links }
    }

    /// Two switches joined by one link of `fabric_bps`; hosts alternate between them (even ones
    /// on `s0`).
    pub fn dumbbell(hosts: usize, rate_bps: u64, fabric_bps: u64, delay_ns: u64) -> Self {
        let mut links: Vec<Link> = (0..hosts)
            .map(|h| Link { a: Node::Host(h), b: Node::Switch(h % 2), rate_bps, delay_ns })
            .collect();
        links.push(Link { a: Node::Switch(0), b: Node::Switch(1), rate_bps: fabric_bps, delay_ns });
        Self { hosts, switches: 2, links }
    }

    /// `leaves` leaf switches (`s0..`) with `hosts_per_leaf` hosts each, every leaf joined to
    /// every one of `spines` spine switches (numbered after the leaves).
    pub fn leaf_spine(
        leaves: usize,
        spines: usize,
        hosts_per_leaf: usize,
        rate_bps: u64,
        fabric_bps: u64,
        delay_ns: u64,
    ) -> Self {
        let hosts = leaves * hosts_per_leaf;
        let mut links: Vec<Link> = (0..hosts)
            .map(|h| Link { a: Node::Host(h), b: Node::Switch(h / hosts_per_leaf), rate_bps, delay_ns })
            .collect();
        for l in 0..leaves {
            for s in 0..spines {
                links.push(Link {
                    a: Node::Switch(l),
                    b: Node::Switch(leaves + s),
                    rate_bps: fabric_bps,
                    delay_ns,
                });
            }
        }
        Self { hosts, switches: leaves + spines, links }
    }

    /// The k-ary fat-tree (Al-Fares et al.): k pods of k/2 edge and k/2 aggregation switches,
    /// (k/2)² core switches, k³/4 hosts (k/2 per edge switch). Edge switches are `s0..k²/2`
    /// (pod by pod), aggregation `k²/2..k²`, core after; aggregation switch `a` of every pod
    /// joins core switches `a·k/2 ..`.
    pub fn fat_tree(k: usize, rate_bps: u64, fabric_bps: u64, delay_ns: u64) -> Self {
        let half = k / 2;
        let (edges, aggs, cores) = (k * half, k * half, half * half);
        let hosts = edges * half;
        let mut links: Vec<Link> = (0..hosts)
            .map(|h| Link { a: Node::Host(h), b: Node::Switch(h / half), rate_bps, delay_ns })
            .collect();
        let link = |a: usize, b: usize| Link {
            a: Node::Switch(a),
            b: Node::Switch(b),
            rate_bps: fabric_bps,
            delay_ns,
        };
        for pod in 0..k {
            for e in 0..half {
                for a in 0..half {
                    links.push(link(pod * half + e, edges + pod * half + a));
                }
            }
        }
        for pod in 0..k {
            for a in 0..half {
                for c in 0..half {
                    links.push(link(edges + pod * half + a, edges + aggs + a * half + c));
                }
            }
        }
        Self { hosts, switches: edges + aggs + cores, links }
    }

    /// A multi-pod Clos fabric as the HPCC simulator's `mix/fat.txt` is: `pods` pods of
    /// `tors` ToRs and `aggs` aggregation switches, every ToR joined to every aggregation
    /// switch of its pod at `fabric_bps`; `cores` core switches, aggregation switch `j` of every
    /// pod joined to cores `j·cores/aggs ..` at `core_bps`; `hosts_per_tor` hosts on each ToR at
    /// `rate_bps`. ToRs are `s0..` (pod by pod), aggregation switches next, cores last.
    /// `cores` is a multiple of `aggs`.
    #[allow(clippy::too_many_arguments)]
    pub fn pods(
        pods: usize,
        tors: usize,
        aggs: usize,
        cores: usize,
        hosts_per_tor: usize,
        (rate_bps, fabric_bps, core_bps): (u64, u64, u64),
        delay_ns: u64,
    ) -> Self {
        let (n_tor, n_agg) = (pods * tors, pods * aggs);
        let hosts = n_tor * hosts_per_tor;
        let mut links: Vec<Link> = (0..hosts)
            .map(|h| Link { a: Node::Host(h), b: Node::Switch(h / hosts_per_tor), rate_bps, delay_ns })
            .collect();
        let link = |a: usize, b: usize, rate_bps: u64| Link {
            a: Node::Switch(a),
            b: Node::Switch(b),
            rate_bps,
            delay_ns,
        };
        for pod in 0..pods {
            for t in 0..tors {
                for a in 0..aggs {
                    links.push(link(pod * tors + t, n_tor + pod * aggs + a, fabric_bps));
                }
            }
        }
        let per_agg = cores / aggs.max(1);
        for pod in 0..pods {
            for a in 0..aggs {
                for c in 0..per_agg {
                    links.push(link(n_tor + pod * aggs + a, n_tor + n_agg + a * per_agg + c, core_bps));
                }
            }
        }
        Self { hosts, switches: n_tor + n_agg + cores, links }
    }

    /// Check the topology: every link joins existing nodes (a host to a switch, or two
    /// different switches) at a non-zero rate, every host has exactly one link, and every host
    /// can reach every other.
    pub fn check(&self) -> Result<(), TopologyError> {
        let mut host_links = vec![0usize; self.hosts];
        for (i, l) in self.links.iter().enumerate() {
            for n in [l.a, l.b] {
                let ok = match n {
                    Node::Host(h) => h < self.hosts,
                    Node::Switch(s) => s < self.switches,
                };
                if !ok {
                    return Err(TopologyError::NoSuchNode {
                        link: i,
                        node: n,
                        hosts: self.hosts,
                        switches: self.switches,
                    });
                }
            }
            if l.a == l.b || matches!((l.a, l.b), (Node::Host(_), Node::Host(_))) {
                return Err(TopologyError::BadEnds { link: i, a: l.a, b: l.b });
            }
            if l.rate_bps == 0 {
                return Err(TopologyError::ZeroRate { link: i });
            }
            for n in [l.a, l.b] {
                if let Node::Host(h) = n {
                    host_links[h] += 1;
                }
            }
        }
        if let Some((host, &links)) = host_links.iter().enumerate().find(|(_, n)| **n != 1) {
            return Err(TopologyError::HostLinks { host, links });
        }
        let w = self.wiring();
        if self.hosts > 0 {
            let dist = self.switch_distances(&w, w.attach(0).0);
            if let Some(host) = (0..self.hosts).find(|&h| dist[w.attach(h).0] == u32::MAX) {
                return Err(TopologyError::Disconnected { host });
            }
        }
        Ok(())
    }

    /// Number every node's ports (in link order) and say what each port faces. Call on a
    /// checked topology.
    pub fn wiring(&self) -> Wiring {
        let mut switch_ports: Vec<Vec<PortEnd>> = vec![Vec::new(); self.switches];
        let mut host_port =
            vec![PortEnd { link: usize::MAX, peer: Node::Switch(0), peer_port: 0 }; self.hosts];
        let next_port = |n: Node, sp: &Vec<Vec<PortEnd>>| match n {
            Node::Host(_) => 0u16,
            Node::Switch(s) => sp[s].len() as u16,
        };
        for (i, l) in self.links.iter().enumerate() {
            let (pa, pb) = (next_port(l.a, &switch_ports), next_port(l.b, &switch_ports));
            for (me, peer, peer_port) in [(l.a, l.b, pb), (l.b, l.a, pa)] {
                let end = PortEnd { link: i, peer, peer_port };
                match me {
                    Node::Host(h) => host_port[h] = end,
                    Node::Switch(s) => switch_ports[s].push(end),
                }
            }
        }
        Wiring { switch_ports, host_port }
    }

    /// Hops from switch `from` to every switch over switch–switch links (`u32::MAX`:
    /// unreachable).
    pub fn switch_distances(&self, w: &Wiring, from: usize) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.switches];
        dist[from] = 0;
        let mut q = VecDeque::from([from]);
        while let Some(s) = q.pop_front() {
            for p in &w.switch_ports[s] {
                if let Node::Switch(o) = p.peer
                    && dist[o] == u32::MAX
                {
                    dist[o] = dist[s] + 1;
                    q.push_back(o);
                }
            }
        }
        dist
    }
}

impl Wiring {
    /// Host `h`'s switch and the switch port it hangs off (of a checked topology, where every
    /// host's one link goes to a switch).
    pub fn attach(&self, h: usize) -> (usize, u16) {
        let end = self.host_port[h];
        match end.peer {
            Node::Switch(s) => (s, end.peer_port),
            Node::Host(_) => unreachable!("a checked topology joins hosts to switches only"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G100: u64 = 100_000_000_000;

    #[test]
    fn a_k4_fat_tree_has_16_hosts_20_switches_and_every_host_reaches_every_other_in_at_most_4_switch_hops() {
        let t = Topology::fat_tree(4, G100, G100, 1000);
        assert_eq!((t.hosts, t.switches, t.links.len()), (16, 20, 16 + 16 + 16));
        t.check().unwrap();
        let w = t.wiring();
        assert!(w.switch_ports.iter().all(|p| p.len() == 4), "every switch has k ports");
        for h in 0..16 {
            let d = t.switch_distances(&w, w.attach(h).0);
            let far = (0..16).map(|o| d[w.attach(o).0]).max().unwrap();
            assert_eq!(far, 4, "edge–agg–core–agg–edge to another pod");
        }
        // Ports face each other.
        for (s, ports) in w.switch_ports.iter().enumerate() {
            for (p, end) in ports.iter().enumerate() {
                let back = match end.peer {
                    Node::Switch(o) => w.switch_ports[o][usize::from(end.peer_port)],
                    Node::Host(h) => w.host_port[h],
                };
                assert_eq!((back.peer, usize::from(back.peer_port)), (Node::Switch(s), p));
            }
        }
    }

    #[test]
    fn leaf_spine_and_dumbbell_are_connected() {
        let t = Topology::leaf_spine(4, 2, 8, G100, 4 * G100, 500);
        assert_eq!((t.hosts, t.switches), (32, 6));
        t.check().unwrap();
        Topology::dumbbell(5, G100, G100, 1000).check().unwrap();
    }

    #[test]
    fn bad_topologies_are_named() {
        let link = |a, b| Link { a, b, rate_bps: G100, delay_ns: 1 };
        let (h, s) = (Node::Host, Node::Switch);
        let t = |links: Vec<Link>| Topology { hosts: 3, switches: 2, links }.check();
        assert_eq!(
            t(vec![link(h(0), s(0)), link(h(1), s(0)), link(h(2), s(1))]),
            Err(TopologyError::Disconnected { host: 2 })
        );
        assert_eq!(
            t(vec![link(h(0), s(0)), link(h(1), s(0))]),
            Err(TopologyError::HostLinks { host: 2, links: 0 })
        );
        assert_eq!(t(vec![link(h(0), h(1))]), Err(TopologyError::BadEnds { link: 0, a: h(0), b: h(1) }));
        assert!(matches!(t(vec![link(h(0), s(7))]), Err(TopologyError::NoSuchNode { link: 0, .. })));
        let mut zero = link(h(0), s(0));
        zero.rate_bps = 0;
        assert_eq!(t(vec![zero]), Err(TopologyError::ZeroRate { link: 0 }));
        assert_eq!(Node::parse("h12"), Some(h(12)));
        assert_eq!(Node::parse("s0"), Some(s(0)));
        assert_eq!(Node::parse("x1"), None);
    }
}
