#!/usr/bin/python3
"""Write the dta_reporter P4 check's input: frames arriving on p0 ("h0", in_p0.pcap).

A host 10.0.2.10 on h0 sends to 10.0.0.0/24, routed out of "up" via 10.0.1.1: flow A (UDP) three
times, flow B (TCP) once, flow A again, and one frame to a host on h0's own subnet (bridged back
out of no port: its MAC is unknown, so it floods to "up" only). The expected outputs
(expected_p0.pcap, expected_p1.pcap) are what the softfabric switch writes when it replays this
(`dataplane run --config replay.toml`, see ../dta_reporter.md): the forwarded frames and a
Key-Write report to the collector 10.0.0.51 for each flow's first packet and each change of its
egress port."""
import sys
from scapy.all import Ether, IP, UDP, TCP, Raw, wrpcap

out = sys.argv[1] if len(sys.argv) > 1 else "."
host, sw = "02:00:00:00:02:0a", "02:7e:00:00:00:01"
a = Ether(src=host, dst=sw) / IP(src="10.0.2.10", dst="10.0.0.7", ttl=64) / UDP(sport=1000, dport=5000) / Raw(b"a" * 22)
b = Ether(src=host, dst=sw) / IP(src="10.0.2.10", dst="10.0.0.8", ttl=64) / TCP(sport=2000, dport=80, flags="S") / Raw(b"b" * 6)
local = Ether(src=host, dst="02:00:00:00:02:0b") / IP(src="10.0.2.10", dst="10.0.2.11") / UDP(sport=7, dport=7) / Raw(b"c" * 18)
p0 = [a.copy(), a.copy(), a.copy(), b, a.copy(), local]
for i, f in enumerate(p0):
    f.time = 1.0 + i * 0.001
wrpcap(f"{out}/in_p0.pcap", p0)
