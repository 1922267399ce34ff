#!/usr/bin/env python3
"""FCT slowdown by flow size, as the HPCC simulator's analysis/fct_analysis.py reports it.

    scripts/fct-bins.py [--bins N] NAME=DIR [NAME=DIR ...]

Each DIR is a `softfabric lab run` output (its flows.csv). Finished flows are sorted by size
and cut into N count-quantile bins (default 20, 5 % each, as fct_analysis.py does); each row
gives the bin's largest size and the median, 95th and 99th percentile slowdown (FCT over the
standalone FCT, floored at 1) of every run side by side, then the same for flows under 100 KB
and for all. Unfinished flows are counted, not binned."""
import csv
import sys


def load(d):
    with open(f"{d}/flows.csv") as f:
        rows = list(csv.DictReader(f))
    done = [r for r in rows if r["fct_ns"]]
    flows = sorted((int(r["size"]), max(1.0, float(r["slowdown"]))) for r in done)
    return flows, len(rows) - len(done)


def pct(v, q):
    """Nearest-rank percentile of sorted v (as output::percentile)."""
    if not v:
        return float("nan")
    i = max(0, min(len(v) - 1, int(-(-q * len(v) // 1)) - 1))
    return v[i]


def stats(sd):
    s = sorted(sd)
    return pct(s, 0.5), pct(s, 0.95), pct(s, 0.99)


def main(argv):
    bins = 20
    if argv[:1] == ["--bins"]:
        bins, argv = int(argv[1]), argv[2:]
    if not argv:
        sys.exit(__doc__)
    runs = []
    for a in argv:
        name, _, d = a.partition("=")
        runs.append((name, *load(d)))
    head = "size ≤".rjust(10) + "".join(f" | {n:>8} p50   p95    p99" for n, _, _ in runs)
    print(head)
    n = min(len(f) for _, f, _ in runs)
    for b in range(bins):
        lo, hi = b * n // bins, (b + 1) * n // bins
        if hi <= lo:
            continue
        size = runs[0][1][hi - 1][0]
        row = f"{size:>10}"
        for _, f, _ in runs:
            # Each run's own quantile bin (the same workload gives the same sizes).
            m = len(f)
            part = [s for _, s in f[b * m // bins:(b + 1) * m // bins]]
            row += " | {:>12.2f} {:>5.2f} {:>6.2f}".format(*stats(part))
        print(row)
    for what, below in (("< 100 KB", 100_000), ("all", float("inf"))):
        row = f"{what:>10}"
        for _, f, _ in runs:
            row += " | {:>12.2f} {:>5.2f} {:>6.2f}".format(*stats([s for z, s in f if z < below]))
        print(row)
    print("unfinished".rjust(10) + "".join(f" | {u:>24}" for _, _, u in runs))


if __name__ == "__main__":
    main(sys.argv[1:])
