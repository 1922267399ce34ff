#!/usr/bin/env python3
"""Generate the pcap replay test's input and the outputs the l2l3 program must produce.

  gen.py OUTDIR    writes in.pcap (frames arriving on port p0) and expected_p0.pcap,
                   expected_p1.pcap, expected_p2.pcap (what each port must send),
                   for the switch configured in replay.toml.

The expected frames are built here with scapy, independently of the switch: routed packets get
their MACs rewritten, TTL - 1 and a checksum scapy recomputes from scratch; the ECMP member is
chosen with CRC-16/ARC of the 5-tuple (src, dst, protocol, src port, dst port) as the program
documents. Every input frame has its own timestamp, whole seconds apart; unshaped ports send at
the instant a frame arrives, so expected timestamps equal input ones.
"""
import sys
from scapy.all import Ether, Dot1Q, IP, UDP, TCP, ICMP, ARP, Raw, wrpcap

A = "02:00:00:00:01:02"          # host on p0, 10.0.1.2
P0, P1, P2 = "02:5f:00:00:00:01", "02:5f:00:00:00:02", "02:5f:00:00:00:03"
NB1, NB2 = "02:00:00:00:02:02", "02:00:00:00:03:02"   # static neighbors 10.0.2.2 (p1), 10.0.3.2 (p2)


def crc16_arc(data):
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def routed(pkt, src_mac, dst_mac):
    out = pkt.copy()
    out[Ether].src, out[Ether].dst = src_mac, dst_mac
    out[IP].ttl -= 1
    del out[IP].chksum
    return Ether(bytes(out))


def ecmp(pkt, members):
    ip = pkt[IP]
    key = bytes(map(int, ip.src.split("."))) + bytes(map(int, ip.dst.split("."))) + bytes([ip.proto])
    l4 = pkt[UDP] if UDP in pkt else pkt[TCP] if TCP in pkt else None
    key += (l4.sport.to_bytes(2, "big") + l4.dport.to_bytes(2, "big")) if l4 else bytes(4)
    return members[crc16_arc(key) % len(members)]


def main(outdir):
    inp, exp = [], {0: [], 1: [], 2: []}
    t = 1000

    def arrive(pkt, outs=()):
        nonlocal t
        pkt.time = t
        inp.append(pkt)
        for port, o in outs:
            o.time = t
            exp[port].append(o)
        t += 1

    def udp(dst, ttl=64, sport=5000, tos=0):
        return Ether(src=A, dst=P0) / IP(src="10.0.1.2", dst=dst, ttl=ttl, tos=tos, id=1) / UDP(sport=sport, dport=9) / Raw(b"softfabric" * 3)

    # 1. ARP for the switch's p0 address: answered in place on p0.
    req = Ether(src=A, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=A, psrc="10.0.1.2", pdst="10.0.1.1") / Raw(bytes(18))
    rep = Ether(src=P0, dst=A) / ARP(op=2, hwsrc=P0, psrc="10.0.1.1", hwdst=A, pdst="10.0.1.2") / Raw(bytes(18))
    arrive(req, [(0, rep)])
    # 2. UDP to a static neighbor on p1: routed.
    p = udp("10.0.2.2", tos=0xb8)
    arrive(p, [(1, routed(p, P1, NB1))])
    # 3. ICMP echo to it.
    p = Ether(src=A, dst=P0) / IP(src="10.0.1.2", dst="10.0.2.2", id=2) / ICMP(id=7, seq=1) / Raw(b"ping")
    arrive(p, [(1, routed(p, P1, NB1))])
    # 4-11. Flows over the ECMP route 192.168.0.0/16 via 10.0.2.2 (p1) and 10.0.3.2 (p2).
    for sport in range(40000, 40008):
        p = Ether(src=A, dst=P0) / IP(src="10.0.1.2", dst="192.168.5.5", id=3) / TCP(sport=sport, dport=80, flags="S", seq=1)
        port, mac, nb = ecmp(p, [(1, P1, NB1), (2, P2, NB2)])
        arrive(p, [(port, routed(p, mac, nb))])
    # TTL 1: dropped (ttl_expired).
    arrive(udp("10.0.2.2", ttl=1))
    # Bad header checksum: dropped (bad_checksum).
    p = udp("10.0.2.2")
    p[IP].chksum = 0x1234
    arrive(p)
    # No route: dropped.
    arrive(udp("8.8.8.8"))
    # Connected on p2 but no neighbor: dropped, and the switch asks for it on p2.
    arrive(udp("10.0.3.9"), [(2, Ether(src=P2, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=P2, psrc="10.0.3.1", hwdst="00:00:00:00:00:00", pdst="10.0.3.9") / Raw(bytes(18)))])
    # A broadcast that is not IP: flooded to p1 and p2.
    p = Ether(src=A, dst="ff:ff:ff:ff:ff:ff", type=0x88B5) / Raw(b"hello, everyone" + bytes(31))
    arrive(p, [(1, p.copy()), (2, p.copy())])
    # Unicast to an unknown MAC, VLAN-tagged: flooded.
    p = Ether(src=A, dst="02:00:00:00:09:09") / Dot1Q(vlan=20, prio=5) / IP(src="10.0.1.2", dst="10.9.9.9") / UDP(sport=1, dport=2) / Raw(bytes(20))
    arrive(p, [(1, p.copy()), (2, p.copy())])
    # A runt: dropped (malformed).
    arrive(Raw(bytes(range(10))))

    wrpcap(f"{outdir}/in.pcap", inp, linktype=1)
    for port in range(3):
        wrpcap(f"{outdir}/expected_p{port}.pcap", exp[port], linktype=1)


if __name__ == "__main__":
    main(sys.argv[1])
