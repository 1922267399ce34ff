#!/usr/bin/env python3
"""Capture an interface and check the ICRC of every RoCEv2 frame on it, with Debian's scapy.

  roce_wire_check.py IFACE SECONDS READY_FILE

Sniffs IFACE (both directions, AF_PACKET) for SECONDS, touching READY_FILE once the capture is
open. For every IPv4/UDP frame to or from port 4791 it recomputes the ICRC with scapy's
BTH.compute_icrc over the header exactly as captured (identification, flags and all) and
compares it with the frame's. Prints one line per bad frame ("bad DIR id=.. op=.. psn=..
stored=.. scapy=..") and then "DIR ok N bad B" for each direction, DIR being "to4791" (frames
whose destination port is 4791 and source port is not) or "from4791" (source port 4791: the
replies of a responder on a UDP socket), "both" when both ports are 4791.
None of softfabric's code is used.
"""
import sys

from scapy.all import IP, UDP, Ether, conf, raw
from scapy.contrib.roce import BTH

iface, seconds, ready = sys.argv[1], float(sys.argv[2]), sys.argv[3]
sock = conf.L2listen(iface=iface)
open(ready, "w").close()

counts = {}
bad_lines = []


def direction(udp):
    if udp.sport == 4791 and udp.dport == 4791:
        return "both"
    return "from4791" if udp.sport == 4791 else "to4791"


import time

end = time.time() + seconds
while time.time() < end:
    pkts = sock.sniff(timeout=min(0.5, max(0.01, end - time.time())), count=0)
    for p in pkts:
        frame = raw(p)
        eth = Ether(frame)
        if IP not in eth or UDP not in eth[IP]:
            continue
        ip, udp = eth[IP], eth[UDP]
        if 4791 not in (udp.sport, udp.dport) or ip.ihl != 5 or ip.len > len(frame) - 14:
            continue
        d = direction(udp)
        ok, bad = counts.get(d, (0, 0))
        pkt = Ether(frame[: 14 + ip.len])
        if BTH not in pkt:
            counts[d] = (ok, bad + 1)
            bad_lines.append(f"bad {d} id={ip.id} no BTH")
            continue
        stored = pkt[BTH].icrc
        pkt[BTH].icrc = None
        scapy_icrc = int.from_bytes(raw(pkt)[-4:], "big")
        if scapy_icrc == stored:
            counts[d] = (ok + 1, bad)
        else:
            counts[d] = (ok, bad + 1)
            bth = eth[BTH]
            bad_lines.append(
                f"bad {d} id={ip.id} op={bth.opcode:#04x} psn={bth.psn} stored={stored:#010x} scapy={scapy_icrc:#010x}"
            )
sock.close()
for line in bad_lines[:50]:
    print(line)
for d in ("to4791", "from4791", "both"):
    ok, bad = counts.get(d, (0, 0))
    print(f"{d} ok {ok} bad {bad}")
