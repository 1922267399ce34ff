#!/usr/bin/env python3
"""Print DTA report frames as the reference implementation's scapy/TRex generators build them
(github.com/jonlanglet/DTA, Generator/dta_*_basic.py and Translator/inject_dta.py: Ether / IP /
UDP(sport=40041, dport=40040) / 3-byte dta_base / sub-header, scapy defaults elsewhere), and a
Key-Write as the reference reporter P4 emits it (2-byte base, UDP sport 0xc0de, checksum 0,
DF set). The layer definitions restate the reference's field lists; Postcarder has no reference
generator, so its layer restates the translator P4's dta_postcarder_h.

Output: one "name hex" line per frame. softfabric's wire tests compare its builder against it.
"""
from scapy.all import Ether, IP, UDP, Packet, raw
from scapy.fields import BitField, ByteField, IntField, LongField, XByteField


class DtaBase(Packet):
    name = "dtaBase"
    fields_desc = [XByteField("opcode", 1), XByteField("seqnum", 0), BitField("immediate", 0, 1),
                   BitField("retransmitable", 0, 1), BitField("reserved", 0, 6)]


class DtaBaseShort(Packet):
    name = "dtaBaseShort"
    fields_desc = [XByteField("opcode", 1), BitField("immediate", 0, 1), BitField("reserved", 0, 7)]


class KeyWrite(Packet):
    name = "dtaKeyWrite"
    fields_desc = [ByteField("redundancy", 0), IntField("key", 0), IntField("data", 0)]


class KeyIncrement(Packet):
    name = "dtaKeyIncrement"
    fields_desc = [ByteField("redundancy", 0), IntField("key", 0), LongField("counter", 0)]


class Append(Packet):
    name = "dtaAppend"
    fields_desc = [IntField("listID", 0), IntField("data", 0)]


class Postcarder(Packet):
    name = "dtaPostcarder"
    fields_desc = [IntField("key", 0), ByteField("hopNum", 0), IntField("data", 0)]


def gen(layers):
    return (Ether(dst="b8:ce:f6:d2:12:c7", src="0c:42:a1:00:00:01")
            / IP(src="10.0.0.200", dst="10.0.0.51")
            / UDP(sport=40041, dport=40040) / layers)


frames = {
    "keywrite_long": gen(DtaBase(opcode=1, seqnum=7) / KeyWrite(redundancy=4, key=1, data=1)),
    "append_long": gen(DtaBase(opcode=2, seqnum=8) / Append(listID=3, data=1)),
    "keyincrement_long": gen(DtaBase(opcode=3, seqnum=9) / KeyIncrement(redundancy=2, key=123456, counter=1)),
    "postcarder_long": gen(DtaBase(opcode=4, seqnum=10) / Postcarder(key=0xDEADBEEF, hopNum=3, data=42)),
    "keywrite_short_reporter": (
        Ether(dst="b8:ce:f6:d2:12:c7", src="0c:42:a1:00:00:02")
        / IP(src="10.0.0.1", dst="10.0.0.51", flags="DF", ttl=63, id=0x1234)
        / UDP(sport=0xC0DE, dport=40040, chksum=0)
        / DtaBaseShort(opcode=1) / KeyWrite(redundancy=2, key=0x0A000001, data=0x1234)),
}

for name, pkt in frames.items():
    print(name, raw(pkt).hex())
