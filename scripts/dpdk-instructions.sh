#!/usr/bin/env bash
# Instructions per packet on the real DPDK port path, counted (not timed): each contender runs
# under valgrind's callgrind on the vdevs of scripts/bench-dpdk.sh's mode, with the same EAL
# arguments; after a warm-up the counts are zeroed, then dumped after a measuring interval.
# Per packet, of the forwarding lcore's thread:
#
#   total    every instruction the thread ran
#   drivers  those in DPDK's libraries and the loader's TLS lookup (librte_*, ld-linux): the
#            vdevs' copy receive, mbuf alloc and free, rte_eth_{rx,tx}_burst
#   own      the rest: the forwarding program itself
#
#   null     two net_null vdevs (copy=1), 64-byte zero frames (l2l3 floods them). Packets are
#            counted as calls of net_null's per-packet function (the librte_net_null function
#            called most; 32 per receive burst, which net_null always fills).
#   routed   net_pcap replaying scripts/flows-pcap.py's 1 024 flows for ever (infinite_rx=1)
#            into port 0, port 1 a net_null that receives nothing: l2l3 routes every frame
#            (LPM, TTL, checksum, MAC rewrite). Packets are 32 per call of net_pcap's receive
#            burst (its most-called function; an infinite replay fills every burst).
#
# Counts do not drift with the
# VM's speed, which moves timed runs by ±30 % on this machine: this is how to A/B a change to
# the per-packet path, and how far our own work is from testpmd's.
#
#   scripts/dpdk-instructions.sh [null|routed] [--measure S] [--warmup S] [CONTENDER...]
#       CONTENDER: testpmd-macswap, testpmd-mac, macswap, l2l3 (default: null: testpmd-macswap,
#       macswap, l2l3; routed: testpmd-macswap, testpmd-mac, l2l3). With BASELINE=PATH (the
#       `dataplane` of another build), baseline-l2l3 runs too (and in null mode
#       baseline-macswap).
#
# Needs DPDK (scripts/setup-dpdk.sh), valgrind, root or permission for the EAL. About a minute
# per contender.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/two-ports.sh

warmup=20
measure=15
mode=null
contenders=()
while [ $# -gt 0 ]; do
    case "$1" in
        null|routed) mode="$1"; shift ;;
        --warmup) warmup="${2:?}"; shift 2 ;;
        --measure) measure="${2:?}"; shift 2 ;;
        -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
        -*) echo "dpdk-instructions: unknown argument $1 (see --help)" >&2; exit 2 ;;
        *) contenders+=("$1"); shift ;;
    esac
done
if [ ${#contenders[@]} -eq 0 ]; then
    if [ "$mode" = routed ]; then contenders=(testpmd-macswap testpmd-mac l2l3); else contenders=(testpmd-macswap macswap l2l3); fi
fi
if [ -n "${BASELINE:-}" ]; then
    [ -x "$BASELINE" ] || { echo "dpdk-instructions: BASELINE=$BASELINE is not an executable" >&2; exit 2; }
    [ "$mode" = routed ] || contenders+=(baseline-macswap)
    contenders+=(baseline-l2l3)
fi
for t in valgrind callgrind_control callgrind_annotate; do
    command -v "$t" >/dev/null || { echo "dpdk-instructions: $t not found (apt-get install valgrind)" >&2; exit 2; }
done

echo "==> building dataplane (release)"
cargo build --release -q -p dataplane
bin="$PWD/target/release/dataplane"
work=$(mktemp -d /tmp/softfabric-instr.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
extra=""
if [ "$mode" = routed ]; then
    python3 scripts/flows-pcap.py "$work/flows.pcap"
    vdevs=(--vdev=net_pcap0,rx_pcap="$work/flows.pcap",infinite_rx=1 --vdev=net_null1,no-rx=1)
    # The neighbour behind p1: every frame routed to 10.0.2.2 (as scripts/bench-dpdk.sh routed).
    extra='[l2l3]
neighbor = [{ ip = "10.0.2.2", mac = "02:00:00:00:02:02", port = "p1" }]'
    count_in=net_pcap
else
    vdevs=(--vdev=net_null0,copy=1 --vdev=net_null1,copy=1)
    count_in=net_null
fi

config() { # program, file prefix
    local more="" eal
    [ "$1" != l2l3 ] || more=$extra
    eal=$(printf '"%s", ' -l 0,1 --no-huge -m 1024 --no-pci "--file-prefix=$2" "${vdevs[@]}")
    two_port_config "$1" "${eal%, }" "${vdevs[0]}" "${vdevs[1]}" "$more"
}

# Run a command under callgrind (threads apart), zero after the warm-up, dump after the
# measure, kill; leaves the dumps in $work/$name/. With stdin "open" the command's stdin is a
# pipe that stays open (testpmd without -i forwards until a line arrives on it), else /dev/null.
count() { # name, stdin (open | null), command...
    local name=$1 stdin=$2; shift 2
    local out="$work/$name/cg"
    mkdir -p "$work/$name"
    if [ "$stdin" = open ]; then
        (cd "$work/$name" && sleep 100000 2>/dev/null | exec valgrind --tool=callgrind \
            --separate-threads=yes --dump-instr=no --callgrind-out-file="$out.%p" "$@" >log 2>&1) 2>/dev/null &
    else
        (cd "$work/$name" && exec valgrind --tool=callgrind --separate-threads=yes --dump-instr=no \
            --callgrind-out-file="$out.%p" "$@" </dev/null >log 2>&1) 2>/dev/null &
    fi
    local job=$!
    sleep "$warmup"
    local pid
    pid=$(pgrep -f -- "--callgrind-out-file=$out" | head -1)
    callgrind_control -z "$pid" >/dev/null 2>&1
    sleep "$measure"
    callgrind_control -d "$pid" >/dev/null 2>&1
    sleep 2
    kill -9 "$pid" 2>/dev/null || true
    pkill -9 -P "$job" 2>/dev/null || true
    { wait "$job"; } 2>/dev/null || true
}

analyse() { # name -> "total drivers own packets"
    python3 - "$work/$1" "$count_in" <<'EOF'
import glob, re, sys
# The forwarding lcore's thread: the dump with the most instructions.
best = None
for f in glob.glob(sys.argv[1] + "/cg.*"):
    text = open(f, errors="replace").read()
    m = re.search(r"^summary: (\d+)", text, re.M)
    if m and (best is None or int(m.group(1)) > best[0]):
        best = (int(m.group(1)), text)
if best is None or best[0] == 0:
    print("FAILED"); sys.exit()
total, text = best
objs = {}
ob = cob = None
after_calls = False
self_by_ob, calls = {}, {}
lines = text.split("\n")
for i, line in enumerate(lines):
    m = re.match(r"(c?)ob=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(3): objs[m.group(2)] = m.group(3)
        if m.group(1): cob = objs.get(m.group(2))
        else: ob = objs.get(m.group(2))
        continue
    m = re.match(r"cfn=\((\d+)\)", line)
    if m:
        if i + 1 < len(lines) and lines[i + 1].startswith("calls="):
            key = (cob or ob, m.group(1))
            calls[key] = calls.get(key, 0) + int(lines[i + 1].split()[0][6:])
        continue
    if line.startswith("calls="):
        after_calls = True  # the next cost line is the call's inclusive cost
        cob = None
        continue
    m = re.match(r"^(?:[+-]?\d+|\*)\s+(\d+)$", line)
    if m:
        if after_calls: after_calls = False
        else: self_by_ob[ob] = self_by_ob.get(ob, 0) + int(m.group(1))
# Packets: null: calls of librte_net_null's most-called function, its per-packet one; routed:
# 32 per call of librte_net_pcap's most-called function, its receive burst.
lib = sys.argv[2]
pkts = max((n for (o, _), n in calls.items() if o and lib in o), default=0)
if lib == "net_pcap":
    pkts *= 32
drivers = sum(v for o, v in self_by_ob.items() if o and ("librte_" in o or "ld-linux" in o))
if pkts == 0:
    print("FAILED"); sys.exit()
print(f"{total / pkts:.1f} {drivers / pkts:.1f} {(total - drivers) / pkts:.1f} {pkts}")
EOF
}

printf '%-18s %10s %10s %10s %12s\n' contender total drivers own packets
for c in "${contenders[@]}"; do
    case "$c" in
        testpmd-macswap|testpmd-mac)
            count "$c" open dpdk-testpmd -l 0,1 --no-huge -m 1024 --no-pci --file-prefix=sfinstr-testpmd \
                "${vdevs[@]}" -- --forward-mode="${c#testpmd-}" --no-mlockall --total-num-mbufs=16384
            rm -rf /var/run/dpdk/sfinstr-testpmd
            ;;
        macswap|l2l3|baseline-macswap|baseline-l2l3)
            prog=${c#baseline-}
            exe=$bin
            [ "$prog" = "$c" ] || exe=$BASELINE
            config "$prog" "sfinstr-$c" >"$work/$c.toml"
            count "$c" null "$exe" run --config "$work/$c.toml"
            rm -rf "/var/run/dpdk/sfinstr-$c"
            ;;
        *) echo "dpdk-instructions: unknown contender $c" >&2; exit 2 ;;
    esac
    read -r total drivers own pkts <<<"$(analyse "$c")"
    printf '%-18s %10s %10s %10s %12s\n' "$c" "$total" "${drivers:-}" "${own:-}" "${pkts:-}"
done
