#!/usr/bin/env python3
"""Independent check of what the DTA translator sends towards collectors, with Debian's scapy.

  dta_translator_check.py PCAP

For every frame in PCAP (Ethernet), scapy dissects Ethernet / IPv4 / UDP / BTH and this script
checks, without any of softfabric's code:

  * IPv4: version 4, no options, header checksum (scapy recomputes it), total length equal to
    the bytes present (Ethernet padding only up to the 60-byte minimum);
  * UDP: destination port 4791, length = IP total length - 20, checksum 0 (RoCEv2 allows it);
  * BTH: transport version 0, default P_Key 0xffff, FECN/BECN and reserved bits clear, pad count
    consistent with the payload, and the ICRC equal to scapy's BTH.compute_icrc;
  * the extension headers by opcode (scapy has no RETH/AtomicETH/DETH layers, so they are read
    from the bytes after the BTH as IBTA Vol. 1 §9.3 lays them out):
      RC RDMA WRITE Only (0x0a)           RETH; DMA length = payload length
      RC RDMA WRITE Only with Imm (0x0b)  RETH, ImmDt; DMA length = payload length
      RC FETCH_ADD (0x14)                 AtomicETH (VA 8-byte aligned, compare 0), no payload
      RC ACKNOWLEDGE (0x11)               AETH, nothing else (ACK of the collector's SEND)
      UD SEND Only (0x64)                 DETH to QP1 with the GSI Q_Key, a 256-byte CM MAD
    anything else is an error.

Prints one line per frame, "frame I ok op=.. dqpn=.. psn=.. ackreq=.. [va=.. rkey=.. len=..
imm=.. add=.. cmp=.. attr=..] payload=HEX" or "frame I bad REASON", then "checked N bad B".
"""
import struct
import sys

from scapy.all import IP, UDP, Ether, raw, rdpcap
from scapy.contrib.roce import BTH

GSI_QKEY = 0x80010000


def check(i, frame):
    eth = Ether(frame)
    if IP not in eth:
        return "no IPv4"
    ip = eth[IP]
    if ip.version != 4 or ip.ihl != 5:
        return f"IPv4 version {ip.version} ihl {ip.ihl}"
    ip_bytes = frame[14:]
    if ip.len > len(ip_bytes):
        return f"IP total length {ip.len} beyond the {len(ip_bytes)} bytes present"
    if len(ip_bytes) != ip.len and len(frame) != 60:
        return f"{len(ip_bytes) - ip.len} bytes after the IP packet in a {len(frame)}-byte frame"
    fixed = IP(ip_bytes[: ip.len])
    stored_sum = fixed.chksum
    del fixed.chksum
    if IP(raw(fixed)).chksum != stored_sum:
        return f"IP checksum {stored_sum:#06x}"
    if UDP not in ip:
        return "no UDP"
    udp = ip[UDP]
    if udp.dport != 4791:
        return f"UDP destination port {udp.dport}"
    if udp.len != ip.len - 20:
        return f"UDP length {udp.len} with IP total length {ip.len}"
    if udp.chksum != 0:
        return f"UDP checksum {udp.chksum:#06x}"
    if BTH not in udp:
        return "no BTH"
    bth = udp[BTH]
    if bth.version != 0 or bth.pkey != 0xFFFF or bth.fecn or bth.becn or bth.resv6 or bth.resv7:
        return f"BTH version {bth.version} pkey {bth.pkey:#x} fecn {bth.fecn} becn {bth.becn} reserved {bth.resv6}/{bth.resv7}"
    # The ICRC, recomputed by scapy over this very packet.
    stored = bth.icrc
    pkt = Ether(frame[: 14 + ip.len])
    pkt[BTH].icrc = None
    rebuilt = raw(pkt)
    if rebuilt[:-4] != frame[: 14 + ip.len - 4]:
        return "scapy's rebuild changes bytes other than the ICRC"
    scapy_icrc = int.from_bytes(rebuilt[-4:], "big")
    if scapy_icrc != stored:
        return f"ICRC {stored:#010x}, scapy computes {scapy_icrc:#010x}"
    # Bytes after the 12-byte BTH, before the ICRC.
    start = 14 + 20 + 8 + 12
    rest = frame[start : 14 + ip.len - 4]
    op = bth.opcode
    fields = [f"op={op:#04x}", f"dqpn={bth.dqpn}", f"psn={bth.psn}", f"ackreq={bth.ackreq}"]
    pad = bth.padcount
    if op in (0x0A, 0x0B):
        ext = 16 + (4 if op == 0x0B else 0)
        if len(rest) < ext:
            return f"{len(rest)} bytes after the BTH, RETH needs {ext}"
        va, rkey, dma_len = struct.unpack(">QII", rest[:16])
        payload_len = len(rest) - ext - pad
        if payload_len < 0 or dma_len != payload_len or (dma_len + pad) % 4 or pad != (-dma_len) % 4:
            return f"RETH DMA length {dma_len}, payload {payload_len}, pad {pad}"
        if any(rest[len(rest) - pad :]):
            return "pad bytes not zero"
        fields += [f"va={va}", f"rkey={rkey}", f"len={dma_len}"]
        if op == 0x0B:
            fields.append(f"imm={struct.unpack('>I', rest[16:20])[0]}")
        payload = rest[ext : ext + dma_len]
    elif op == 0x14:
        if len(rest) != 28 or pad:
            return f"FETCH_ADD with {len(rest)} bytes after the BTH (AtomicETH is 28), pad {pad}"
        va, rkey, add, cmp = struct.unpack(">QIQQ", rest)
        if va % 8:
            return f"FETCH_ADD VA {va:#x} not 8-byte aligned"
        if cmp != 0:
            return f"FETCH_ADD compare {cmp}"
        fields += [f"va={va}", f"rkey={rkey}", f"add={add}", f"cmp={cmp}"]
        payload = b""
    elif op == 0x11:
        if len(rest) != 4 or pad:
            return f"ACK with {len(rest)} bytes after the BTH"
        syndrome = rest[0]
        if syndrome >> 5 != 0:
            return f"ACK syndrome {syndrome:#04x} is not an ACK"
        payload = b""
    elif op == 0x64:
        if bth.dqpn != 1 or len(rest) != 8 + 256 or pad:
            return f"UD SEND to QP {bth.dqpn} with {len(rest)} bytes (DETH + MAD = 264)"
        qkey, src_qp = struct.unpack(">II", rest[:8])
        if qkey != GSI_QKEY or src_qp & 0xFFFFFF != 1:
            return f"DETH Q_Key {qkey:#x} source QP {src_qp & 0xFFFFFF}"
        mad = rest[8:]
        base, mgmt_class, class_version = mad[0], mad[1], mad[2]
        if (base, mgmt_class, class_version) != (1, 0x07, 2):
            return f"MAD base {base} class {mgmt_class:#x} version {class_version} (CM is 1/0x07/2)"
        fields.append(f"attr={struct.unpack('>H', mad[16:18])[0]:#06x}")
        payload = mad
    else:
        return f"opcode {op:#04x} is not one the translator sends"
    fields.append(f"payload={payload.hex()}")
    return " ".join(fields)


def main():
    frames = rdpcap(sys.argv[1])
    bad = 0
    for i, p in enumerate(frames):
        r = check(i, bytes(p))
        if r.startswith("op="):
            print(f"frame {i} ok {r}")
        else:
            bad += 1
            print(f"frame {i} bad {r}")
    print(f"checked {len(frames)} bad {bad}")


if __name__ == "__main__":
    main()
