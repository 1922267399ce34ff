#!/usr/bin/python3
"""Write the hawkeye P4 check's input: frames arriving on p0 ("h0", in_p0.pcap).

Host 10.0.0.2 on h0 sends a UDP flow to 10.0.1.2 (routed out of h1), then polls for it (flag
01, event 7, the victim's 5-tuple), then sends a polling packet with flag 00 (dropped) and one
for a victim the switch has no route for (dropped). The expected outputs (expected_p0.pcap,
expected_p1.pcap, expected_p2.pcap) are what the softfabric switch writes when it replays this
(`dataplane run --config replay.toml`, see ../hawkeye.md): the routed frames and the polling
copy on the victim's port, flag 01 (nothing is paused), its ingress port 0 and egress port 1."""
import struct
import sys
from scapy.all import Ether, IP, UDP, Raw, wrpcap

out = sys.argv[1] if len(sys.argv) > 1 else "."
host, sw = "02:00:00:00:00:02", "02:4b:00:00:00:00"


def poll(flag, event, src, dst, sport, dport):
    hdr = bytes([flag << 6, 0xFF, 0x80, 0xFF, 0x80, event])
    hdr += bytes(map(int, src.split("."))) + bytes(map(int, dst.split(".")))
    hdr += bytes([17]) + struct.pack("!HH", sport, dport)
    return Ether(src=host, dst=sw, type=0x6888) / Raw(hdr)


p0 = [Ether(src=host, dst=sw) / IP(src="10.0.0.2", dst="10.0.1.2") / UDP(sport=5000, dport=4791) / Raw(b"d" * 40) for _ in range(4)]
p0 += [poll(1, 7, "10.0.0.2", "10.0.1.2", 5000, 4791), poll(0, 8, "10.0.0.2", "10.0.1.2", 5000, 4791),
       poll(1, 9, "10.0.0.2", "192.168.9.9", 5000, 4791)]
for i, f in enumerate(p0):
    f.time = 1.0 + i * 0.001
wrpcap(f"{out}/in_p0.pcap", p0)
