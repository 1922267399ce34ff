//! Hawkeye's in-network PFC causality tracing (seed `001` §3.4; reference part A.5): what a
//! polling packet does at ingress, and which of its copies survive at egress.

use wire::hawkeye::PollingFlag;

/// Where a polling packet goes at ingress, by its flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fanout {
    /// `01`: to the victim flow's egress port only.
    Victim,
    /// `11`: to every other port, the victim's port marked (its copy traces the victim path).
    AllWithVictim,
    /// `10`: to every other port, no victim port (egress port 511).
    AllNoVictim,
    /// `00`: nothing to trace; dropped.
    Drop,
}

/// The ingress rule of a flag.
pub const fn fanout(flag: PollingFlag) -> Fanout {
    match flag {
        PollingFlag::VictimPath => Fanout::Victim,
        PollingFlag::Both => Fanout::AllWithVictim,
        PollingFlag::PfcCausality => Fanout::AllNoVictim,
        PollingFlag::Drop => Fanout::Drop,
    }
}

/// What a copy leaving by one port knows at egress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyView {
    /// The copy's flag, as ingress left it.
    pub flag: PollingFlag,
    /// The copy leaves by the victim flow's egress port.
    pub on_victim_port: bool,
    /// The port is paused (paused packets this epoch, or PFC-paused now).
    pub port_paused: bool,
    /// The port-pair meter shows bytes from the polling packet's in-port to this port this
    /// epoch.
    pub traffic_from_in_port: bool,
}

/// The egress rule (reference part A.5, `te_match_polling_TP_port`): the flag the surviving copy
/// carries on, or `None` to drop it.
///
/// | flag | port | paused | traffic from in-port | result |
/// |---|---|---|---|---|
/// | 01 | victim | yes | — | 11 |
/// | 01 | victim | no | — | 01 |
/// | 11 | victim | yes | — | 11 |
/// | 11 | victim | no | — | 01 |
/// | 10, 11 | other | yes | yes | 10 |
/// | anything else | | | | drop |
pub const fn survive(c: CopyView) -> Option<PollingFlag> {
    use PollingFlag::*;
    match (c.flag, c.on_victim_port) {
        (VictimPath | Both, true) => Some(if c.port_paused { Both } else { VictimPath }),
        (PfcCausality | Both, false) if c.port_paused && c.traffic_from_in_port => Some(PfcCausality),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::hawkeye::PollingFlag::*;

    /// Every row of part A.5's egress rules, and every other combination dropped.
    #[test]
    fn the_egress_rules_table() {
        let rows: &[(PollingFlag, bool, bool, bool, Option<PollingFlag>)] = &[
            (VictimPath, true, true, false, Some(Both)),
            (VictimPath, true, true, true, Some(Both)),
            (VictimPath, true, false, false, Some(VictimPath)),
            (VictimPath, true, false, true, Some(VictimPath)),
            (Both, true, true, false, Some(Both)),
            (Both, true, true, true, Some(Both)),
            (Both, true, false, true, Some(VictimPath)),
            (Both, true, false, false, Some(VictimPath)),
            (PfcCausality, false, true, true, Some(PfcCausality)),
            (Both, false, true, true, Some(PfcCausality)),
            // A paused port with no traffic from the in-port did not cause the pause upstream.
            (PfcCausality, false, true, false, None),
            (Both, false, true, false, None),
            // Traffic from the in-port on a port that is not paused: local contention, the end.
            (PfcCausality, false, false, true, None),
            (Both, false, false, true, None),
            (PfcCausality, false, false, false, None),
            // 01 has no copies on other ports; 10 has no victim port; 00 never passes.
            (VictimPath, false, true, true, None),
            (PfcCausality, true, true, true, None),
            (Drop, true, true, true, None),
            (Drop, false, true, true, None),
        ];
        for &(flag, on_victim_port, port_paused, traffic_from_in_port, want) in rows {
            let c = CopyView { flag, on_victim_port, port_paused, traffic_from_in_port };
            assert_eq!(survive(c), want, "{c:?}");
        }
        // The table covers all 32 combinations once each: the rest are drops.
        let mut n = 0;
        for flag in [Drop, VictimPath, PfcCausality, Both] {
            for bits in 0..8u8 {
                let c = CopyView {
                    flag,
                    on_victim_port: bits & 1 != 0,
                    port_paused: bits & 2 != 0,
                    traffic_from_in_port: bits & 4 != 0,
                };
                let listed = rows.iter().find(|r| {
                    (r.0, r.1, r.2, r.3) == (flag, c.on_victim_port, c.port_paused, c.traffic_from_in_port)
                });
                match listed {
                    Some(r) => assert_eq!(survive(c), r.4),
                    None => assert_eq!(survive(c), None, "{c:?} is not in the table"),
                }
                n += 1;
            }
        }
        assert_eq!(n, 32);
        assert_eq!(fanout(VictimPath), Fanout::Victim);
        assert_eq!(fanout(Both), Fanout::AllWithVictim);
        assert_eq!(fanout(PfcCausality), Fanout::AllNoVictim);
        assert_eq!(fanout(Drop), Fanout::Drop);
    }
}
