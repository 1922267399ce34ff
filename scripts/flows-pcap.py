#!/usr/bin/env python3
"""The routed-mode traffic of scripts/bench-dpdk.sh and scripts/dpdk-instructions.sh: a pcap of
1 024 flows of 64-byte IPv4/UDP frames (UDP source ports 1024..2047) from 10.0.1.2 to 10.0.2.2,
to the switch's p0 MAC (02:00:00:00:00:01), header checksums valid, TTL 64.

    scripts/flows-pcap.py OUT.pcap
"""
import struct, sys
def csum(b):
    s = sum(struct.unpack("!10H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF
out = open(sys.argv[1], "wb")
out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
for i in range(1024):
    eth = bytes.fromhex("020000000001") + bytes.fromhex("020000000102") + b"\x08\x00"
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 46, 0, 0x4000, 64, 17, 0,
                               bytes([10, 0, 1, 2]), bytes([10, 0, 2, 2])))
    ip[10:12] = struct.pack("!H", csum(bytes(ip)))
    udp = struct.pack("!HHHH", 1024 + i, 4791, 26, 0) + bytes(18)
    f = eth + bytes(ip) + udp
    out.write(struct.pack("<IIII", 0, i, len(f), len(f)) + f)
out.close()
