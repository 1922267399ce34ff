#!/usr/bin/env python3
"""Independent RoCEv2 ICRC oracle for softfabric's tests, using Debian's python3-scapy.

  roce_icrc.py check FILE       FILE holds one hex frame per line (built by our Rust builder).
                                For each, scapy recomputes the ICRC with BTH.compute_icrc and
                                prints "ok" or "mismatch <line> <stored> <scapy>".
  roce_icrc.py build SEED N     Print N random RoCEv2 frames built by scapy, one hex per line:
                                WRITE Only (RETH as raw bytes: scapy has no RETH layer), WRITE
                                Only with Immediate, FETCH_ADD, ACK, SEND Only and CNP.
"""
import random
import sys

from scapy.all import Ether, IP, UDP, Raw, raw
from scapy.contrib.roce import BTH, AETH, CNPPadding


def check(path):
    bad = 0
    n = 0
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            n += 1
            pkt = Ether(bytes.fromhex(line))
            if BTH not in pkt:
                print(f"mismatch {lineno} no-bth -")
                bad += 1
                continue
            stored = pkt[BTH].icrc
            pkt[BTH].icrc = None
            rebuilt = raw(pkt)
            ours = bytes.fromhex(line)
            scapy_icrc = int.from_bytes(rebuilt[-4:], "big")
            # The rest of the frame must be unchanged by the rebuild (lengths, checksums).
            if rebuilt[:-4] != ours[:-4] or scapy_icrc != stored:
                print(f"mismatch {lineno} {stored:#010x} {scapy_icrc:#010x}")
                bad += 1
    print(f"checked {n} bad {bad}")


def build(seed, count):
    rnd = random.Random(seed)
    kinds = ["write", "write_imm", "fetch_add", "ack", "send", "cnp"]
    for i in range(count):
        kind = kinds[i % len(kinds)]
        ip = IP(
            src=f"10.{rnd.randrange(256)}.{rnd.randrange(256)}.{rnd.randrange(1, 255)}",
            dst=f"10.{rnd.randrange(256)}.{rnd.randrange(256)}.{rnd.randrange(1, 255)}",
            tos=rnd.randrange(256),
            ttl=rnd.randrange(1, 256),
            id=rnd.randrange(65536),
            flags=rnd.choice([0, 2]),
        )
        udp = UDP(sport=rnd.randrange(49152, 65536), dport=4791, chksum=0)
        payload = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 64)))
        pad = (4 - len(payload) % 4) % 4
        common = dict(dqpn=rnd.randrange(1 << 24), psn=rnd.randrange(1 << 24), pkey=0xFFFF,
                      ackreq=rnd.randrange(2), migreq=rnd.randrange(2),
                      fecn=rnd.randrange(2), becn=rnd.randrange(2))
        va = rnd.randrange(1 << 64).to_bytes(8, "big")
        rkey = rnd.randrange(1 << 32).to_bytes(4, "big")
        if kind == "write":
            reth = va + rkey + len(payload).to_bytes(4, "big")
            l4 = BTH(opcode=0x0A, padcount=pad, **common) / Raw(reth + payload + b"\0" * pad)
        elif kind == "write_imm":
            reth = va + rkey + len(payload).to_bytes(4, "big")
            imm = rnd.randrange(1 << 32).to_bytes(4, "big")
            l4 = BTH(opcode=0x0B, padcount=pad, **common) / Raw(reth + imm + payload + b"\0" * pad)
        elif kind == "fetch_add":
            atomic = va + rkey + rnd.randrange(1 << 64).to_bytes(8, "big") + bytes(8)
            l4 = BTH(opcode=0x14, **common) / Raw(atomic)
        elif kind == "ack":
            l4 = BTH(opcode=0x11, **common) / AETH(syndrome=rnd.choice([0x1F, 0x60, 0x62, 0x2E]),
                                                    msn=rnd.randrange(1 << 24))
        elif kind == "send":
            l4 = BTH(opcode=0x04, padcount=pad, **common) / Raw(payload + b"\0" * pad)
        else:
            l4 = BTH(opcode=0x81, becn=1, dqpn=common["dqpn"]) / CNPPadding()
        frame = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / ip / udp / l4
        print(raw(frame).hex())


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check(sys.argv[2])
    elif sys.argv[1] == "build":
        build(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(f"unknown mode {sys.argv[1]}")
