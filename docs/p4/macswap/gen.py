#!/usr/bin/python3
"""Write the macswap P4 check's inputs: frames arriving on p0 (in_p0.pcap) and p1 (in_p1.pcap).

The expected outputs (expected_p0.pcap, expected_p1.pcap) are what the softfabric switch writes
when it replays these (`dataplane run --config replay.toml`, see ../macswap.md); a P4 target
given the same frames on the same ports must write the same frames."""
import sys
from scapy.all import Ether, IP, UDP, ARP, Raw, wrpcap

out = sys.argv[1] if len(sys.argv) > 1 else "."
a, b = "02:00:00:00:00:0a", "02:00:00:00:00:0b"
p0 = [
    Ether(src=a, dst=b) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1000, dport=2000) / Raw(b"x" * 18),
    Ether(src=a, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc="10.0.0.1", pdst="10.0.0.2"),
    Ether(src=a, dst=b, type=0x88B5) / Raw(b"local experimental ethertype"),
]
p1 = [
    Ether(src=b, dst=a) / IP(src="10.0.0.2", dst="10.0.0.1") / UDP(sport=2000, dport=1000) / Raw(b"y" * 100),
]
for i, f in enumerate(p0 + p1):
    f.time = 1.0 + i * 0.001
wrpcap(f"{out}/in_p0.pcap", p0)
wrpcap(f"{out}/in_p1.pcap", p1)
