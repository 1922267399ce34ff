//! IEEE 802.3 MAC Control frames: PAUSE (802.3x, opcode `0x0001`) and Priority-based Flow
//! Control (IEEE 802.1Qbb, opcode `0x0101`).
//!
//! A MAC Control frame goes to `01:80:c2:00:00:01` with EtherType `0x8808`. The views here start
//! after the Ethernet header. A PFC payload is the opcode, a 16-bit class-enable vector (bit *i*
//! enables priority *i*; bits 8–15 are reserved) and eight 16-bit pause times in quanta. One
//! quantum is 512 bit times at the port's speed; a time of 0 for an enabled class is XON (resume).
//! [`emit_frame`] writes a whole frame padded to the 60-byte minimum (64 on the wire with FCS).

use crate::error::{Error, Result, need, space};
use crate::ethernet::{self, EtherType, EthernetAddress, EthernetRepr};
use crate::field::set_u16;
use crate::spec::Header;

/// The fields of the PFC and PAUSE payloads (after the Ethernet header).
pub mod field {
    use crate::spec::Field;

    /// MAC Control opcode.
    pub const OPCODE: Field = Field::bytes("opcode", 0, 2);
    /// PFC: reserved high byte of the class-enable vector.
    pub const CLASS_ENABLE_RESERVED: Field = Field::bytes("class_enable_reserved", 2, 1);
    /// PFC: class-enable vector, bit `i` for priority `i`.
    pub const CLASS_ENABLE: Field = Field::bytes("class_enable", 3, 1);
    /// PFC: pause time of each priority, in quanta.
    pub const QUANTA: [Field; 8] = [
        Field::bytes("quanta0", 4, 2),
        Field::bytes("quanta1", 6, 2),
        Field::bytes("quanta2", 8, 2),
        Field::bytes("quanta3", 10, 2),
        Field::bytes("quanta4", 12, 2),
        Field::bytes("quanta5", 14, 2),
        Field::bytes("quanta6", 16, 2),
        Field::bytes("quanta7", 18, 2),
    ];
    /// PAUSE: pause time, in quanta.
    pub const PAUSE_QUANTA: Field = Field::bytes("quanta", 2, 2);
}

/// The PFC payload.
pub const PFC: Header = Header {
    name: "pfc",
    fields: &[
        field::OPCODE,
        field::CLASS_ENABLE_RESERVED,
        field::CLASS_ENABLE,
        field::QUANTA[0],
        field::QUANTA[1],
        field::QUANTA[2],
        field::QUANTA[3],
        field::QUANTA[4],
        field::QUANTA[5],
        field::QUANTA[6],
        field::QUANTA[7],
    ],
    len: PFC_LEN,
};

/// The PAUSE payload.
pub const PAUSE: Header =
    Header { name: "pause", fields: &[field::OPCODE, field::PAUSE_QUANTA], len: PAUSE_LEN };

/// Opcode of an 802.3x PAUSE frame.
pub const OPCODE_PAUSE: u16 = 0x0001;
/// Opcode of an 802.1Qbb PFC frame.
pub const OPCODE_PFC: u16 = 0x0101;
/// Payload length of a PAUSE frame before padding (opcode + time).
pub const PAUSE_LEN: usize = 4;
/// Payload length of a PFC frame before padding (opcode + vector + 8 times).
pub const PFC_LEN: usize = 20;
/// Bit times per pause quantum.
pub const BITS_PER_QUANTUM: u64 = 512;

/// How long `quanta` pause quanta last at `link_bps`, in nanoseconds, rounded up.
pub fn pause_duration_ns(quanta: u16, link_bps: u64) -> u64 {
    if link_bps == 0 {
        return u64::MAX;
    }
    let bits = u128::from(quanta) * u128::from(BITS_PER_QUANTUM) * 1_000_000_000;
    bits.div_ceil(u128::from(link_bps)) as u64
}

/// The opcode of a MAC Control payload (after the Ethernet header).
pub fn opcode(buf: &[u8]) -> Result<u16> {
    need("mac_control", 2, buf.len())?;
    Ok(field::OPCODE.get_u16(buf))
}

fn expect_opcode(buf: &[u8], want: u16) -> Result<()> {
    match opcode(buf)? {
        op if op == want => Ok(()),
        op => Err(Error::Unsupported { field: "mac_control.opcode", value: u64::from(op) }),
    }
}

view!(
    /// A read/write view of a PFC payload (after the Ethernet header).
    PfcPacket
);

impl<T: AsRef<[u8]>> PfcPacket<T> {
    /// Check the opcode is PFC and the buffer holds the whole payload.
    pub fn check_len(&self) -> Result<()> {
        expect_opcode(self.buffer.as_ref(), OPCODE_PFC)?;
        need("pfc", PFC_LEN, self.buffer.as_ref().len())
    }

    /// The class-enable vector (low 8 bits; the reserved high bits are ignored).
    pub fn class_enable(&self) -> u8 {
        field::CLASS_ENABLE.get_u8(self.buffer.as_ref())
    }

    /// The pause time of `priority` (taken modulo 8) in quanta.
    pub fn quanta(&self, priority: usize) -> u16 {
        field::QUANTA[priority & 7].get_u16(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PfcPacket<T> {
    /// Set the class-enable vector.
    pub fn set_class_enable(&mut self, v: u8) {
        let b = self.buffer.as_mut();
        field::CLASS_ENABLE_RESERVED.set_u8(b, 0);
        field::CLASS_ENABLE.set_u8(b, v);
    }

    /// Set the pause time of `priority` (taken modulo 8).
    pub fn set_quanta(&mut self, priority: usize, q: u16) {
        field::QUANTA[priority & 7].set_u16(self.buffer.as_mut(), q);
    }
}

view!(
    /// A read/write view of an 802.3x PAUSE payload (after the Ethernet header).
    PausePacket
);

impl<T: AsRef<[u8]>> PausePacket<T> {
    /// Check the opcode is PAUSE and the buffer holds the whole payload.
    pub fn check_len(&self) -> Result<()> {
        expect_opcode(self.buffer.as_ref(), OPCODE_PAUSE)?;
        need("pause", PAUSE_LEN, self.buffer.as_ref().len())
    }

    /// The pause time in quanta (0 = resume).
    pub fn quanta(&self) -> u16 {
        field::PAUSE_QUANTA.get_u16(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PausePacket<T> {
    /// Set the pause time.
    pub fn set_quanta(&mut self, q: u16) {
        field::PAUSE_QUANTA.set_u16(self.buffer.as_mut(), q);
    }
}

/// A PFC payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PfcRepr {
    /// Class-enable vector: bit *i* means the time for priority *i* is valid.
    pub class_enable: u8,
    /// Pause time per priority, in quanta. 0 on an enabled class means resume (XON).
    pub quanta: [u16; 8],
}

impl PfcRepr {
    /// Pause (XOFF) the priorities in `mask` for `quanta`.
    pub fn pause(mask: u8, quanta: u16) -> Self {
        let mut q = [0u16; 8];
        for (i, t) in q.iter_mut().enumerate() {
            if mask & (1 << i) != 0 {
                *t = quanta;
            }
        }
        Self { class_enable: mask, quanta: q }
    }

    /// Resume (XON) the priorities in `mask`.
    pub fn resume(mask: u8) -> Self {
        Self { class_enable: mask, quanta: [0; 8] }
    }

    /// Whether `priority` is enabled in this frame.
    pub fn is_enabled(&self, priority: usize) -> bool {
        priority < 8 && self.class_enable & (1 << priority) != 0
    }
}

/// A parsed MAC Control payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MacControlRepr {
    /// 802.3x PAUSE: stop all traffic for this many quanta (0 = resume).
    Pause {
        /// Pause time in quanta.
        quanta: u16,
    },
    /// 802.1Qbb PFC.
    Pfc(PfcRepr),
}

impl MacControlRepr {
    /// Parse a MAC Control payload (after the Ethernet header). Padding after it is ignored.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        if opcode(buf)? == OPCODE_PAUSE {
            return Ok(Self::Pause { quanta: PausePacket::new_checked(buf)?.quanta() });
        }
        let p = PfcPacket::new_checked(buf)?;
        let mut quanta = [0u16; 8];
        for (i, q) in quanta.iter_mut().enumerate() {
            *q = p.quanta(i);
        }
        Ok(Self::Pfc(PfcRepr { class_enable: p.class_enable(), quanta }))
    }

    /// Payload length before padding.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Self::Pause { .. } => PAUSE_LEN,
            Self::Pfc(_) => PFC_LEN,
        }
    }

    /// Write the payload (without padding).
    pub fn emit(&self, buf: &mut [u8]) -> Result<()> {
        space("mac_control", self.buffer_len(), buf.len())?;
        match self {
            Self::Pause { quanta } => {
                set_u16(buf, field::OPCODE.byte(), OPCODE_PAUSE);
                set_u16(buf, field::PAUSE_QUANTA.byte(), *quanta);
            }
            Self::Pfc(pfc) => {
                set_u16(buf, field::OPCODE.byte(), OPCODE_PFC);
                set_u16(buf, field::CLASS_ENABLE_RESERVED.byte(), u16::from(pfc.class_enable));
                for (i, q) in pfc.quanta.iter().enumerate() {
                    set_u16(buf, field::QUANTA[i].byte(), *q);
                }
            }
        }
        Ok(())
    }
}

/// Write a whole MAC Control frame from `src` to `01:80:c2:00:00:01`, zero-padded to the
/// 60-byte minimum. Returns the frame length (60).
pub fn emit_frame(src: EthernetAddress, repr: &MacControlRepr, buf: &mut [u8]) -> Result<usize> {
    space("pfc.frame", ethernet::MIN_FRAME_LEN, buf.len())?;
    let eth = EthernetRepr {
        src_addr: src,
        dst_addr: EthernetAddress::MAC_CONTROL,
        vlan: None,
        ethertype: EtherType::MAC_CONTROL,
    };
    eth.emit(buf)?;
    let body = &mut buf[ethernet::HEADER_LEN..ethernet::MIN_FRAME_LEN];
    body.fill(0);
    repr.emit(body)?;
    Ok(ethernet::MIN_FRAME_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pfc_frame_known_answer() {
        // XOFF for priority 3 with 0xffff quanta, from 02:00:00:00:00:01. scapy 2.5 builds the
        // same 60 bytes from `Ether(src=..., dst="01:80:c2:00:00:01")/
        // MACControlClassBasedFlowControl(c3_enabled=1, c3_pause_time=0xffff)`.
        let mut buf = [0xaau8; 64];
        let repr = MacControlRepr::Pfc(PfcRepr::pause(1 << 3, 0xffff));
        let n = emit_frame(EthernetAddress([2, 0, 0, 0, 0, 1]), &repr, &mut buf).unwrap();
        assert_eq!(n, 60);
        #[rustfmt::skip]
        let expect: [u8; 60] = [
            0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, // dst: MAC Control multicast
            0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
            0x88, 0x08,                         // EtherType MAC Control
            0x01, 0x01,                         // opcode PFC
            0x00, 0x08,                         // class-enable vector: priority 3
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // times for priorities 0..2
            0xff, 0xff,                         // time for priority 3
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // priorities 4..7
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // pad
        ];
        assert_eq!(&buf[..60], &expect[..]);
        assert_eq!(MacControlRepr::parse(&buf[14..60]).unwrap(), repr);
    }

    #[test]
    fn legacy_pause_known_answer() {
        let mut buf = [0u8; 60];
        emit_frame(EthernetAddress([2, 0, 0, 0, 0, 2]), &MacControlRepr::Pause { quanta: 0x1234 }, &mut buf)
            .unwrap();
        assert_eq!(&buf[12..18], &[0x88, 0x08, 0x00, 0x01, 0x12, 0x34]);
        assert!(buf[18..].iter().all(|&b| b == 0));
    }

    #[test]
    fn quanta_duration() {
        // 65535 quanta at 100 Gb/s: 65535 * 512 bits / 1e11 b/s = 335.5392 us.
        assert_eq!(pause_duration_ns(0xffff, 100_000_000_000), 335_540);
        // One quantum at 10 Gb/s is 51.2 ns, rounded up.
        assert_eq!(pause_duration_ns(1, 10_000_000_000), 52);
        assert_eq!(pause_duration_ns(0, 10_000_000_000), 0);
    }

    #[test]
    fn unknown_opcode() {
        let e = MacControlRepr::parse(&[0x00, 0x02, 0, 0]).unwrap_err();
        assert_eq!(e, Error::Unsupported { field: "mac_control.opcode", value: 2 });
    }
}
