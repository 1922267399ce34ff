#!/usr/bin/python3
"""Write the ufab P4 check's input: frames arriving on p0 ("h0", in_p0.pcap), 1 ms apart.

Host 10.0.0.2 on h0 runs one VM-pair (pair ID 7) to 10.0.1.2 (routed out of h1):
  1. a probe (φ = 5, w = 1 KiB on the link, 2 slots) — the switch adds the pair: slot 0 gets
     W_l = 1 KiB (4 units), Φ_l = 5, tx_l = 0, q_l = 0, C_l = 2 (10G);
  2. a data frame of the pair;
  3. a probe with w = 2 KiB — the pair is known: W_l moves by the difference (8 units), Φ_l stays 5;
  4. a finish probe — the pair is removed: its slot carries Φ_l = 0, W_l = 0;
  5. a probe source-routed by one label (the bottom one) — popped, then routed by IP (the pair
     is added again);
  6. a data frame under two labels [1, 9] — the top popped, out of port 1 by it, the next
     label's TTL one less;
  7. a probe under two labels [2, 9]: port 2's link is failed, so it comes back out of h0 as a
     failure notification (type 4, addresses swapped, n_hop 0);
  8. a data frame under the label 2 (failed link: dropped), 9. one under label 9 (no such port:
     dropped);
  10. a probe of unknown type 7 (dropped at egress), 11. a probe with no free slot (dropped);
  12. a response (type 2) to 10.0.1.2, forwarded untouched;
  13. a look (type 5) of the pair — it is live on the link (frame 5 added it): its slot carries
     the link without it, Φ_l = 0, W_l = 0, and nothing changes;
  14. a look of another pair (ID 8) — the link whole: Φ_l = 5, W_l = 1 KiB (4 units);
  15. a probe of the pair — W_l and Φ_l as before the looks (Φ_l = 5, W_l = 4 units).
tx_l reads 0 throughout: the frames are 1 ms apart, far apart for a 32 µs window on both the
Rust switch and the P4 (whose windows differ in shape, docs/p4/ufab.md). The expected outputs
(expected_p0.pcap, expected_p1.pcap) are what the softfabric switch writes when it replays this
(`dataplane run --config replay.toml`)."""
import struct
import sys
from scapy.all import Ether, IP, UDP, Raw, wrpcap
from scapy.contrib.mpls import MPLS

out = sys.argv[1] if len(sys.argv) > 1 else "."
host, sw = "02:00:00:00:00:02", "02:55:00:00:00:00"


def ufab(kind, n_hop, phi, windows, filled=0):
    b = bytes([(kind << 4) | n_hop]) + phi.to_bytes(3, "big")
    for i, w in enumerate(windows):
        b += struct.pack("!HHHH", w, 0, 0, 0x0002 if i < filled else 0)
    return b


def ip_udp(payload, dport=40050, src="10.0.0.2", dst="10.0.1.2", sport=7):
    return IP(src=src, dst=dst) / UDP(sport=sport, dport=dport, chksum=0) / Raw(payload)


def plain(inner):
    return Ether(src=host, dst=sw) / inner


def routed(labels, inner):
    f = Ether(src=host, dst=sw, type=0x8847)
    for i, l in enumerate(labels):
        f = f / MPLS(label=l, cos=0, s=1 if i == len(labels) - 1 else 0, ttl=16)
    return f / inner


frames = [
    plain(ip_udp(ufab(1, 0, 5, [4, 4]))),
    plain(ip_udp(b"d" * 64, dport=4791)),
    plain(ip_udp(ufab(1, 0, 5, [8, 8]))),
    plain(ip_udp(ufab(3, 0, 5, [8, 8]))),
    routed([1], ip_udp(ufab(1, 0, 5, [4, 4]))),
    routed([1, 9], ip_udp(b"s" * 64, dport=4791)),
    routed([2, 9], ip_udp(ufab(1, 0, 5, [4, 4]))),
    routed([2], ip_udp(b"f" * 64, dport=4791)),
    routed([9], ip_udp(b"b" * 64, dport=4791)),
    plain(ip_udp(ufab(7, 0, 5, [4, 4]))),
    plain(ip_udp(ufab(1, 2, 5, [4, 4], filled=2))),
    plain(ip_udp(ufab(2, 2, 5, [4, 4], filled=2))),
    plain(ip_udp(ufab(5, 0, 0, [0, 0]))),
    plain(ip_udp(ufab(5, 0, 0, [0, 0]), sport=8)),
    plain(ip_udp(ufab(1, 0, 5, [4, 4]))),
]
for i, f in enumerate(frames):
    f.time = 1.0 + i * 0.001
wrpcap(f"{out}/in_p0.pcap", frames)
