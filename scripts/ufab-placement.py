#!/usr/bin/env python3
"""Where a µFAB run's placement ends, and whether any one host could undo it.

    scripts/ufab-placement.py LAB.toml OUT/ufab_pairs.csv

Reads the lab file's explicit topology (ports numbered in the order of its [[link]]s, as the
lab numbers them) and the pairs' final source routes, sums every directed link's Φ_l (tokens),
and prints the links over η·C/B_u. Then, for each sending host, it tries every re-placement of
that host's pairs over the routes of the same length to the same peer (every combination, the
other hosts' pairs left where they are) and prints the best largest-Φ_l it can reach: a host
whose best stays over capacity cannot fix the placement by any set of its own moves (swaps
included), only pairs of other hosts moving can.
"""

import csv
import itertools
import sys
import tomllib


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], "rb") as f:
        lab = tomllib.load(f)
    topo = lab["topology"]
    if topo.get("kind") != "explicit":
        sys.exit(f"{sys.argv[1]}: [topology] kind: expected \"explicit\"")
    ports = {}
    for link in lab.get("link", []):
        a, b = link["a"], link["b"]
        ports.setdefault(a, []).append(b)
        ports.setdefault(b, []).append(a)
    rate = parse_rate(topo.get("rate", "10G"))
    b_u = parse_rate(lab.get("ufab", {}).get("b_u", "100M"))
    cap = 0.95 * rate / b_u

    def links_of(host, route):
        node = ports[f"h{host}"][0]
        out = []
        for p in route:
            if p >= len(ports.get(node, [])):
                return None
            nxt = ports[node][p]
            out.append((node, nxt))
            node = nxt
        return out

    with open(sys.argv[2]) as f:
        pairs = [
            (int(r["host"]), int(r["flow"]), tuple(int(x) for x in r["route"].split(".")), float(r["phi"]))
            for r in csv.DictReader(f)
        ]

    def load(placement):
        total = {}
        for host, _, route, phi in placement:
            for l in links_of(host, route) or []:
                total[l] = total.get(l, 0.0) + phi
        return total

    now = load(pairs)
    over = {l: v for l, v in now.items() if v > cap}
    print(f"capacity {cap:.0f} tokens per link; over it: " + (", ".join(f"{a}->{b} {v:.0f}" for (a, b), v in sorted(over.items())) or "none"))
    for host in sorted({p[0] for p in pairs}):
        mine = [p for p in pairs if p[0] == host]
        others = [p for p in pairs if p[0] != host]
        length = len(mine[0][2])
        ends = {links_of(host, p[2])[-1][1] for p in mine}
        if len(ends) != 1:
            print(f"host {host}: pairs to several peers, skipped")
            continue
        routes = [
            r
            for r in itertools.product(range(max(len(v) for v in ports.values())), repeat=length)
            if (ls := links_of(host, r)) and ls[-1][1] in ends and len({n for n, _ in ls}) == length
        ]
        best = None
        for combo in itertools.product(routes, repeat=len(mine)):
            placement = others + [(host, f, combo[i], phi) for i, (_, f, _, phi) in enumerate(mine)]
            worst = max(load(placement).values())
            if best is None or worst < best[0]:
                best = (worst, combo)
        verdict = "fits" if best[0] <= cap else "cannot fit"
        print(f"host {host}: {len(mine)} pairs over {len(routes)} routes; best largest Φ_l {best[0]:.0f} ({verdict})")


def parse_rate(s):
    s = str(s)
    mult = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    return float(s[:-1]) * mult[s[-1]] if s[-1] in mult else float(s)


if __name__ == "__main__":
    main()
