#!/usr/bin/env bash
# Same-core A/B of the switch's criterion benches between two checkouts, interleaved.
#
#   scripts/ab-bench.sh BEFORE_DIR [--rounds N] [--cpu C]
#       BEFORE_DIR is another checkout of softfabric (e.g. `git worktree add ../before <rev>`).
#       Builds `cargo bench --no-run -p dataplane --bench l2l3 --bench dta` in both, then runs,
#       N times (default 4) and in turn — before, after, before, after — the l2l3 route and
#       bridge benches and the DTA translator's three benches pinned to cpu C (default 1), and
#       prints each bench's median throughput before and after, the spread, and the ratio of
#       the medians. This VM's speed drifts by several percent over minutes: only interleaved
#       runs on the same core compare.
set -euo pipefail
cd "$(dirname "$0")/.."

before="${1:?usage: scripts/ab-bench.sh BEFORE_DIR [--rounds N] [--cpu C]}"
shift
rounds=4
cpu=1
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="${2:?}"; shift 2 ;;
        --cpu) cpu="${2:?}"; shift 2 ;;
        *) echo "ab-bench: unknown argument $1" >&2; exit 2 ;;
    esac
done

# The bench executables of the checkout in $1, one per line: "l2l3 PATH" and "dta PATH".
benches() {
    (cd "$1" && cargo bench --no-run -p dataplane --bench l2l3 --bench dta 2>&1) |
        sed -n 's/.*Executable benches\/\([a-z0-9]*\)\.rs (\(.*\))/\1 \2/p'
}
echo "==> building the benches in $before and here" >&2
declare -A bin
while read -r name path; do bin["before_$name"]="$before/$path"; done < <(benches "$before")
while read -r name path; do bin["after_$name"]="$PWD/$path"; done < <(benches "$PWD")

out=$(mktemp /tmp/ab-bench.XXXXXX)
trap 'rm -f "$out"' EXIT
run() { # side dir bench filter
    (cd "$2" && taskset -c "$cpu" "${bin[${1}_$3]}" --bench --noplot --warm-up-time 2 --measurement-time 5 "$4" 2>&1) |
        awk -v side="$1" '/^[a-z0-9_]+\/[a-zA-Z0-9_]+/ { name = $1 }
                          /thrpt:/ && name != "" { print side, name, $(NF - 3); name = "" }' >>"$out"
}
for r in $(seq "$rounds"); do
    echo "==> round $r of $rounds" >&2
    for side in before after; do
        dir=$([ "$side" = before ] && echo "$before" || echo "$PWD")
        run "$side" "$dir" l2l3 'l2l3/(route|bridge)'
        run "$side" "$dir" dta 'dta/'
    done
done

echo
echo "median throughput (M elements/s) of $rounds interleaved rounds on cpu $cpu, min-max in brackets"
sort -k2,2 -k1,1 "$out" | awk '
    function median(a, n,    i, j, t) {
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { key = $2; side = $1; v = $3 + 0
      if (side == "before") { nb[key]++; b[key, nb[key]] = v } else { na[key]++; a[key, na[key]] = v }
      keys[key] = 1 }
    END {
        printf "%-30s %22s %22s %8s\n", "bench", "before", "after", "ratio"
        for (k in keys) {
            delete x; delete y
            for (i = 1; i <= nb[k]; i++) x[i] = b[k, i]
            for (i = 1; i <= na[k]; i++) y[i] = a[k, i]
            mb = median(x, nb[k]); ma = median(y, na[k])
            printf "%-30s %7.2f [%5.2f-%5.2f] %7.2f [%5.2f-%5.2f] %8.3f\n", k, mb, x[1], x[nb[k]], ma, y[1], y[na[k]], ma / mb
        }
    }'
