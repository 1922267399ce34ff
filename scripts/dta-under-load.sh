#!/usr/bin/env bash
# The DTA demo and tests/dta_e2e.rs on a loaded machine: N rounds, each with `stress-ng --cpu 4`
# (twice as many busy workers as this 2-core VM has cores) running for the whole round, as the
# issue of the default collector's lost ACKs and the resent Key-Write asked (the README's test
# command once failed under load: "key … answered a value that is not its latest").
#
#   scripts/dta-under-load.sh [--runs N] [--cpu W]        (defaults 5 and 4)
#
# The binaries are built first, without the load. Each round runs the README's main job
# (`cargo run --release`: the demo, which checks its own answers and exits non-zero when one is
# wrong) and then the debug-profile `dta_e2e` test binary as `cargo test` runs it. Prints each
# round's outcome and time, then how many rounds of each passed; exits non-zero if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
cpu=4
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="${2:?}"; shift 2 ;;
        --cpu) cpu="${2:?}"; shift 2 ;;
        *) echo "dta-under-load: unknown argument $1" >&2; exit 2 ;;
    esac
done
command -v stress-ng >/dev/null || { echo "dta-under-load: needs stress-ng (apt-get install stress-ng)" >&2; exit 2; }

cargo build --release -q
cargo test -q --test dta_e2e --no-run
log=$(mktemp -d)
stress=""
trap '[ -n "$stress" ] && kill "$stress" 2>/dev/null; rm -rf "$log"' EXIT
demo_ok=0
e2e_ok=0
for i in $(seq 1 "$runs"); do
    stress-ng --cpu "$cpu" --timeout 0 --quiet &
    stress=$!
    sleep 1
    t0=$(date +%s.%N)
    if cargo run --release -q >"$log/demo-$i" 2>&1; then d=ok; demo_ok=$((demo_ok + 1)); else d=FAILED; fi
    t1=$(date +%s.%N)
    if cargo test -q --test dta_e2e >"$log/e2e-$i" 2>&1; then e=ok; e2e_ok=$((e2e_ok + 1)); else e=FAILED; fi
    t2=$(date +%s.%N)
    kill "$stress"; wait "$stress" 2>/dev/null || true
    stress=""
    printf 'round %d under stress-ng --cpu %d: demo %s (%.1f s), dta_e2e %s (%.1f s)\n' \
        "$i" "$cpu" "$d" "$(awk "BEGIN{print $t1 - $t0}")" "$e" "$(awk "BEGIN{print $t2 - $t1}")"
    [ "$d" = ok ] || tail -20 "$log/demo-$i"
    [ "$e" = ok ] || grep -E "panicked|FAILED|assert" "$log/e2e-$i" | head -20
done
echo "dta-under-load: demo passed $demo_ok/$runs, dta_e2e passed $e2e_ok/$runs, each under stress-ng --cpu $cpu"
[ "$demo_ok" = "$runs" ] && [ "$e2e_ok" = "$runs" ]
