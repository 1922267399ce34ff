#!/usr/bin/python3
"""Write the daiet P4 check's inputs: frames from two mappers, 1 ms apart — m0 (10.0.0.2, port 0,
in_p0.pcap) and m1 (10.0.1.2, port 1, in_p1.pcap) — for tree 1 (sum, reducer 10.0.2.2 behind r0)
and tree 3 (min, reducer 10.0.3.2 behind r1), UDP port 10000, keys padded to 16 bytes:

  1. m0, tree 1: (apple, 1), (pear, 2), (fig, 3)
  2. m1, tree 1: (pear, 10), (kiwi, 20)  — pear aggregates to 12
  3. m0, tree 3: (plum, 9), (lime, 4)
  4. m1, tree 3: (plum, 5)               — the minimum, 5, replaces 9
  5. m0, a data packet of 11 pairs (more than max_entries = 10): dropped (malformed)
  6. m0, a data packet to tree 7 (no such tree): dropped
  7. m0, END of tree 1; 8. m1, END of tree 1 — both children done: tree 1 is flushed to r0
  9. m0, END of tree 3; 10. m1, END of tree 3 — tree 3 flushed to r1
  11. m0, an ordinary UDP frame to 10.0.2.2 (not DAIET): routed out of r0
Frames shorter than 60 bytes (the ENDs, frame 11) are padded to 60, as on the wire.
The expected outputs (expected_p0..3.pcap) are what the softfabric switch writes when it replays
these (`dataplane run --config replay.toml`)."""
import struct
import sys
from scapy.all import Ether, IP, UDP, Padding, Raw, wrpcap

out = sys.argv[1] if len(sys.argv) > 1 else "."
sw = ["02:da:00:00:00:00", "02:da:00:00:00:01"]
host = ["02:00:00:00:00:02", "02:00:00:00:01:02"]
ip = ["10.0.0.2", "10.0.1.2"]
reducer = {1: "10.0.2.2", 3: "10.0.3.2", 7: "10.0.2.2"}


def data(tree, pairs):
    b = struct.pack("!BII", 0, len(pairs), tree)
    for k, v in pairs:
        b += k.encode().ljust(16, b"\0") + struct.pack("!I", v)
    return b


def end(tree):
    return struct.pack("!BI", 1, tree)


def frame(m, tree, payload, dport=10000):
    return (Ether(src=host[m], dst=sw[m]) / IP(src=ip[m], dst=reducer[tree])
            / UDP(sport=20000 + m, dport=dport, chksum=0) / Raw(payload))


seq = [
    (0, frame(0, 1, data(1, [("apple", 1), ("pear", 2), ("fig", 3)]))),
    (1, frame(1, 1, data(1, [("pear", 10), ("kiwi", 20)]))),
    (0, frame(0, 3, data(3, [("plum", 9), ("lime", 4)]))),
    (1, frame(1, 3, data(3, [("plum", 5)]))),
    (0, frame(0, 1, data(1, [("k%d" % i, i) for i in range(11)]))),
    (0, frame(0, 7, data(7, [("apple", 1)]))),
    (0, frame(0, 1, end(1))),
    (1, frame(1, 1, end(1))),
    (0, frame(0, 3, end(3))),
    (1, frame(1, 3, end(3))),
    (0, frame(0, 1, b"not daiet", dport=9)),
]
ports = [[], []]
for i, (m, f) in enumerate(seq):
    # As on the wire: at least 60 bytes (an END is 47 before its padding).
    if len(f) < 60:
        f = f / Padding(b"\0" * (60 - len(f)))
        seq[i] = (m, f)
    f.time = 1.0 + i * 0.001
    ports[m].append(f)
for m in (0, 1):
    wrpcap(f"{out}/in_p{m}.pcap", ports[m])
