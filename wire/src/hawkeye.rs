//! Hawkeye polling packets (seed `001`; reference switch code `switch/headers.p4` `polling_h`):
//! EtherType `0x6888`, then 19 bytes, most significant bit first:
//!
//! ```text
//! flag 2 | pad 6 | ingress_port 9 | pad 7 | egress_port 9 | pad 7 | event_id 8 |
//! victim src_ip 32 | dst_ip 32 | protocol 8 | src_port 16 | dst_port 16
//! ```
//!
//! The flag says what to trace: `01` the victim flow's path, `10` PFC causality, `11` both,
//! `00` nothing (switches drop it). Egress port 511 means "none".

use core::net::Ipv4Addr;

use crate::error::{Result, space};
use crate::field::{set_u16, set_u32, u16_at, u32_at};

/// Length of the polling header.
pub const HEADER_LEN: usize = 19;
/// The "no port" value of the 9-bit port fields.
pub const PORT_NONE: u16 = 0x1ff;

/// What a polling packet asks switches to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PollingFlag {
    /// `00`: nothing; switches drop it.
    Drop = 0,
    /// `01`: the victim flow's path.
    VictimPath = 1,
    /// `10`: PFC causality (upstream of paused ports).
    PfcCausality = 2,
    /// `11`: both.
    Both = 3,
}

impl PollingFlag {
    /// Decode two bits.
    pub const fn from_bits(v: u8) -> Self {
        match v & 3 {
            0 => Self::Drop,
            1 => Self::VictimPath,
            2 => Self::PfcCausality,
            _ => Self::Both,
        }
    }
}

/// The victim flow's 5-tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FiveTuple {
    /// Source address.
    pub src_ip: Ipv4Addr,
    /// Destination address.
    pub dst_ip: Ipv4Addr,
    /// IP protocol (17 for RoCEv2).
    pub protocol: u8,
    /// Source port (the QP's UDP source port for RoCEv2).
    pub src_port: u16,
    /// Destination port (4791 for RoCEv2).
    pub dst_port: u16,
}

fixed_view!(
    /// A read/write view of a polling header (after the Ethernet header).
    PollingPacket, HEADER_LEN, "hawkeye"
);

impl<T: AsRef<[u8]>> PollingPacket<T> {
    /// Trace flag.
    pub fn flag(&self) -> PollingFlag {
        PollingFlag::from_bits(self.buffer.as_ref()[0] >> 6)
    }
    /// Port the packet entered the last switch on (9 bits).
    pub fn ingress_port(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 1) >> 7
    }
    /// Victim's next-hop port at this switch (9 bits; 511 = none).
    pub fn egress_port(&self) -> u16 {
        u16_at(self.buffer.as_ref(), 3) >> 7
    }
    /// Event ID (the agent uses milliseconds mod 256).
    pub fn event_id(&self) -> u8 {
        self.buffer.as_ref()[5]
    }
    /// The victim flow.
    pub fn victim(&self) -> FiveTuple {
        let b = self.buffer.as_ref();
        FiveTuple {
            src_ip: Ipv4Addr::from_bits(u32_at(b, 6)),
            dst_ip: Ipv4Addr::from_bits(u32_at(b, 10)),
            protocol: b[14],
            src_port: u16_at(b, 15),
            dst_port: u16_at(b, 17),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PollingPacket<T> {
    /// Set the trace flag, keeping the padding bits zero.
    pub fn set_flag(&mut self, f: PollingFlag) {
        self.buffer.as_mut()[0] = (f as u8) << 6;
    }
    /// Set the ingress port (9 bits).
    pub fn set_ingress_port(&mut self, p: u16) {
        set_u16(self.buffer.as_mut(), 1, (p & 0x1ff) << 7);
    }
    /// Set the egress port (9 bits).
    pub fn set_egress_port(&mut self, p: u16) {
        set_u16(self.buffer.as_mut(), 3, (p & 0x1ff) << 7);
    }
}

/// A parsed polling header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PollingRepr {
    /// Trace flag.
    pub flag: PollingFlag,
    /// Ingress port, 9 bits.
    pub ingress_port: u16,
    /// Egress port, 9 bits (511 = none).
    pub egress_port: u16,
    /// Event ID.
    pub event_id: u8,
    /// The victim flow.
    pub victim: FiveTuple,
}

impl PollingRepr {
    /// Parse a polling header. Padding bits are ignored.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let p = PollingPacket::new_checked(buf)?;
        Ok(Self {
            flag: p.flag(),
            ingress_port: p.ingress_port(),
            egress_port: p.egress_port(),
            event_id: p.event_id(),
            victim: p.victim(),
        })
    }

    /// Length: 19.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the header; padding is zero and ports are masked to 9 bits.
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        space("hawkeye", HEADER_LEN, buf.len())?;
        buf[0] = (self.flag as u8) << 6;
        set_u16(buf, 1, (self.ingress_port & 0x1ff) << 7);
        set_u16(buf, 3, (self.egress_port & 0x1ff) << 7);
        buf[5] = self.event_id;
        set_u32(buf, 6, self.victim.src_ip.to_bits());
        set_u32(buf, 10, self.victim.dst_ip.to_bits());
        buf[14] = self.victim.protocol;
        set_u16(buf, 15, self.victim.src_port);
        set_u16(buf, 17, self.victim.dst_port);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_packet_layout() {
        // As the reference detection agent sends it: flag 01, both ports 0x1ff.
        let r = PollingRepr {
            flag: PollingFlag::VictimPath,
            ingress_port: PORT_NONE,
            egress_port: PORT_NONE,
            event_id: 0x2a,
            victim: FiveTuple {
                src_ip: Ipv4Addr::new(10, 0, 0, 1),
                dst_ip: Ipv4Addr::new(10, 0, 0, 2),
                protocol: 17,
                src_port: 0xc000,
                dst_port: 4791,
            },
        };
        let mut b = [0u8; HEADER_LEN];
        r.emit(&mut b).unwrap();
        assert_eq!(
            b,
            [0x40, 0xff, 0x80, 0xff, 0x80, 0x2a, 10, 0, 0, 1, 10, 0, 0, 2, 17, 0xc0, 0x00, 0x12, 0xb7]
        );
        assert_eq!(PollingRepr::parse(&b).unwrap(), r);
        assert_eq!(PollingRepr::parse(&b[..18]).unwrap_err().field(), "hawkeye");
    }
}
