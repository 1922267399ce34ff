#!/usr/bin/env bash
# µFAB's probe overhead against the number of VM-pairs (seed 003 §5.4, Figure 15b): one host
# (one VF) keeps its 10G link saturated with N pairs, each to another host of a star, for 5 ms
# of virtual time (DURATION_US); L_w = 4 KB (the default). Prints, per N, the probe bytes as a share of what
# the host sent, and the scheme's bound L_p / (L_p + L_w) for this probe (one hop: 60 B).
#
# Also prints the bound with L_w counted in whole data frames, as the agent counts it: the probe
# goes after the first frame that brings the count to L_w, ceil(L_w / F) frames of F bytes.
#
#   scripts/ufab-probe-sweep.sh [N ...]        (default: 1 2 4 8 16 32 64)
#   MTU=1400 scripts/ufab-probe-sweep.sh       (the data frames' payload; default 1000, the lab's)
#   DURATION_US=20000 scripts/ufab-probe-sweep.sh   (virtual time; default 5000)
set -euo pipefail
cd "$(dirname "$0")/.."
ns=("$@")
mtu=${MTU:-1000}
duration_us=${DURATION_US:-5000}
[ ${#ns[@]} -gt 0 ] || ns=(1 2 4 8 16 32 64)
cargo build --release -q -p softfabric
work=$(mktemp -d /tmp/softfabric-ufab-sweep.XXXXXX)
trap 'rm -rf "$work"' EXIT
# A data frame: the payload and the headers the lab's hosts put on it (Ethernet, IPv4, UDP,
# BTH and ICRC: 62 bytes in all).
frame=$((mtu + 62))
whole=$(awk -v f="$frame" 'BEGIN { n = int((4096 + f - 1) / f); print 100 * 60 / (60 + n * f) }')
printf 'data frames of %d B; bound in whole frames %.2f %%\n' "$frame" "$whole"
printf '%6s %12s %10s\n' pairs "probes (%)" "bound (%)"
for n in "${ns[@]}"; do
    f="$work/n$n.toml"
    {
        printf '[lab]\nseed = 1\nduration_us = %d\ncc = "ufab"\nmtu = %d\nsample_ns = 10000\n\n' "$duration_us" "$mtu"
        printf '[ufab]\nb_u = "100M"\n\n'
        printf '[topology]\nkind = "star"\nhosts = %d\nrate = "10G"\ndelay_ns = 1000\n' "$((n + 1))"
        for i in $(seq 1 "$n"); do
            printf '\n[[flow]]\nsrc = 0\ndst = %d\nsize = 10000000000\nstart_ns = 0\nguarantee = "100M"\nclass = 0\n' "$i"
        done
    } >"$f"
    p=$(target/release/softfabric lab run "$f" --out "$work/out$n" 2>&1 | grep -o 'probes [0-9.]* %' | awk '{ print $2 }' || true)
    [ -n "$p" ] || p="failed"
    printf '%6d %12s %10.2f\n' "$n" "$p" "$(awk 'BEGIN { print 100 * 60 / (60 + 4096) }')"
done
