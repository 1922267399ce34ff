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

pub mod report;

use crate::error::{Result, space};
use crate::field::{set_u16, set_u32};
use crate::spec::Header;

/// The fields of the polling header.
pub mod field {
    use crate::spec::Field;

    /// What to trace.
    pub const FLAG: Field = Field::new("flag", 0, 2);
    /// Padding.
    pub const PAD0: Field = Field::new("pad0", 2, 6);
    /// Ingress port.
    pub const INGRESS_PORT: Field = Field::new("ingress_port", 8, 9);
    /// Padding.
    pub const PAD1: Field = Field::new("pad1", 17, 7);
    /// Egress port (511: none).
    pub const EGRESS_PORT: Field = Field::new("egress_port", 24, 9);
    /// Padding.
    pub const PAD2: Field = Field::new("pad2", 33, 7);
    /// Event ID.
    pub const EVENT_ID: Field = Field::bytes("event_id", 5, 1);
    /// Victim's source address.
    pub const SRC_IP: Field = Field::bytes("src_ip", 6, 4);
    /// Victim's destination address.
    pub const DST_IP: Field = Field::bytes("dst_ip", 10, 4);
    /// Victim's IP protocol.
    pub const PROTOCOL: Field = Field::bytes("protocol", 14, 1);
    /// Victim's source port.
    pub const SRC_PORT: Field = Field::bytes("src_port", 15, 2);
    /// Victim's destination port.
    pub const DST_PORT: Field = Field::bytes("dst_port", 17, 2);
}

/// The polling header (after the Ethernet header, EtherType `0x6888`).
pub const HEADER: Header = Header {
    name: "hawkeye_polling",
    fields: &[
        field::FLAG,
        field::PAD0,
        field::INGRESS_PORT,
        field::PAD1,
        field::EGRESS_PORT,
        field::PAD2,
        field::EVENT_ID,
        field::SRC_IP,
        field::DST_IP,
        field::PROTOCOL,
        field::SRC_PORT,
        field::DST_PORT,
    ],
    len: HEADER_LEN,
};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
        PollingFlag::from_bits(field::FLAG.get_u8(self.buffer.as_ref()))
    }
    /// Port the packet entered the last switch on (9 bits).
    pub fn ingress_port(&self) -> u16 {
        field::INGRESS_PORT.get_u16(self.buffer.as_ref())
    }
    /// Victim's next-hop port at this switch (9 bits; 511 = none).
    pub fn egress_port(&self) -> u16 {
        field::EGRESS_PORT.get_u16(self.buffer.as_ref())
    }
    /// Event ID (the agent uses milliseconds mod 256).
    pub fn event_id(&self) -> u8 {
        field::EVENT_ID.get_u8(self.buffer.as_ref())
    }
    /// The victim flow.
    pub fn victim(&self) -> FiveTuple {
        let b = self.buffer.as_ref();
        FiveTuple {
            src_ip: Ipv4Addr::from_bits(field::SRC_IP.get_u32(b)),
            dst_ip: Ipv4Addr::from_bits(field::DST_IP.get_u32(b)),
            protocol: field::PROTOCOL.get_u8(b),
            src_port: field::SRC_PORT.get_u16(b),
            dst_port: field::DST_PORT.get_u16(b),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PollingPacket<T> {
    /// Set the trace flag, keeping the padding bits zero.
    pub fn set_flag(&mut self, f: PollingFlag) {
        self.buffer.as_mut()[field::FLAG.byte()] = field::FLAG.place_u8(f as u8);
    }
    /// Set the ingress port (9 bits).
    pub fn set_ingress_port(&mut self, p: u16) {
        set_u16(self.buffer.as_mut(), field::INGRESS_PORT.byte(), field::INGRESS_PORT.place_u16(p));
    }
    /// Set the egress port (9 bits).
    pub fn set_egress_port(&mut self, p: u16) {
        set_u16(self.buffer.as_mut(), field::EGRESS_PORT.byte(), field::EGRESS_PORT.place_u16(p));
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
        use field::*;
        buf[FLAG.byte()] = FLAG.place_u8(self.flag as u8);
        set_u16(buf, INGRESS_PORT.byte(), INGRESS_PORT.place_u16(self.ingress_port));
        set_u16(buf, EGRESS_PORT.byte(), EGRESS_PORT.place_u16(self.egress_port));
        buf[EVENT_ID.byte()] = self.event_id;
        set_u32(buf, SRC_IP.byte(), self.victim.src_ip.to_bits());
        set_u32(buf, DST_IP.byte(), self.victim.dst_ip.to_bits());
        buf[PROTOCOL.byte()] = self.victim.protocol;
        set_u16(buf, SRC_PORT.byte(), self.victim.src_port);
        set_u16(buf, DST_PORT.byte(), self.victim.dst_port);
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
