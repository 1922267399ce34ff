#!/usr/bin/env bash
# µFAB's bar on real ports, measured: N runs of nic-agent/tests/ufab_netns.rs on optimised
# binaries (as root: network namespaces, veths, `dataplane run` with program `ufab`).
#
#   scripts/ufab-netns-bar.sh [--runs N]        (default 5)
#
# Each run starts the two tests of that file one after the other: two VM-pairs with guarantees
# of 60 and 120 Mb/s sharing a port shaped to 200 Mb/s, and one 120 Mb/s VM-pair over two
# paths. Prints every run's figures, then each figure's median with its range and how many runs
# met the bar: each pair at least its guarantee and the link at least 90 % used while both send;
# the two-path VM-pair's goodput at least its 120 Mb/s guarantee. The test itself asserts only
# the functional checks (files intact, probes answered, the split of tokens): on this 2-core VM
# the switch, two senders and a receiver share the cores, and the bar measures the machine too.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="${2:?}"; shift 2 ;;
        *) echo "ufab-netns-bar: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" -eq 0 ] || { echo "ufab-netns-bar: needs root (network namespaces)" >&2; exit 2; }

cargo build --release -q -p dataplane --bins
cargo test --release -q -p nic-agent --test ufab_netns --no-run
lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
for i in $(seq 1 "$runs"); do
    SOFTFABRIC_REQUIRE_NETNS=1 cargo test --release -q -p nic-agent --test ufab_netns -- \
        --nocapture --test-threads 1 2>&1 | grep '^ufab-bar ' | tee -a "$lines" | sed "s/^/run $i: /"
done
python3 - "$lines" <<'PY'
import statistics, sys
shared, paths = [], []
for line in open(sys.argv[1]):
    w = line.split()
    if w[1] == "shared":
        shared.append(tuple(float(x) for x in w[2:5]))
    elif w[1] == "two-paths":
        paths.append(float(w[2]))
def fig(name, xs, unit):
    print(f"  {name}: median {statistics.median(xs):.1f} {unit}, range {min(xs):.1f}-{max(xs):.1f}")
if shared:
    print(f"two pairs on the 200 Mb/s link, {len(shared)} runs (while both send):")
    fig("pair 0 (guarantee 60)", [s[0] for s in shared], "Mb/s")
    fig("pair 1 (guarantee 120)", [s[1] for s in shared], "Mb/s")
    fig("link used", [s[2] for s in shared], "%")
    met = sum(1 for s in shared if s[0] >= 60 and s[1] >= 120 and s[2] >= 90)
    print(f"  the bar (each pair at its guarantee, the link >= 90 % used): {met} of {len(shared)} runs")
if paths:
    print(f"one VM-pair over two paths, {len(paths)} runs:")
    fig("goodput (guarantee 120)", paths, "Mb/s")
    print(f"  at its guarantee: {sum(1 for g in paths if g >= 120)} of {len(paths)} runs")
PY
