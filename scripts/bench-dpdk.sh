#!/usr/bin/env bash
# softfabric's switch against dpdk-testpmd, on the same lcore and the same DPDK vdevs.
#
#   scripts/bench-dpdk.sh [null] [--duration S] [--lcores MAIN,FWD]
#       Two net_null vdevs with copy=1 (a NIC that hands over 64-byte frames as fast as the core
#       takes them). Runs, one after the other and for the same time, on forwarding lcore FWD:
#         1. dpdk-testpmd --forward-mode=macswap
#         2. dataplane with the macswap program
#         3. dataplane with l2l3
#       and prints Mpps for each (both ports, forwarded) and the ratios to testpmd.
#       net_null's frames are all zero: l2l3 never learns the zero source and floods the unknown
#       destination, which between two ports is the other port (its bridging path).
#
#   scripts/bench-dpdk.sh pcap [--pcap IN --expect DIR]
#       Replays a capture through net_pcap vdevs into the l2l3 switch and checks every port's
#       output frame for frame against the expected captures (default: the pcap replay test's
#       data, dataplane/tests/data/replay).
#
# Needs DPDK (scripts/setup-dpdk.sh), root or permission for the EAL, and two cores. No
# hugepages: the EAL runs with --no-huge. The first SKIP seconds of each run are not counted.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="null"
duration=10
skip=3
lcores="0,1"
pcap_in="dataplane/tests/data/replay/in.pcap"
expect_dir="dataplane/tests/data/replay"
while [ $# -gt 0 ]; do
    case "$1" in
        null|pcap) mode="$1"; shift ;;
        --duration) duration="${2:?}"; shift 2 ;;
        --lcores) lcores="${2:?}"; shift 2 ;;
        --pcap) pcap_in="${2:?}"; shift 2 ;;
        --expect) expect_dir="${2:?}"; shift 2 ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        *) echo "bench-dpdk: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ "$duration" -gt "$skip" ] || { echo "bench-dpdk: --duration must exceed $skip s" >&2; exit 2; }
command -v dpdk-testpmd >/dev/null || { echo "bench-dpdk: dpdk-testpmd not found: scripts/setup-dpdk.sh" >&2; exit 2; }
pkg-config --exists libdpdk || { echo "bench-dpdk: libdpdk not found: scripts/setup-dpdk.sh" >&2; exit 2; }

echo "==> building dataplane (release)"
cargo build --release -q -p dataplane
bin="target/release/dataplane"
work=$(mktemp -d /tmp/softfabric-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
fwd=${lcores#*,}

eal_common() { # file prefix
    printf '"-l", "%s", "--no-huge", "-m", "1024", "--no-pci", "--file-prefix=%s"' "$lcores" "$1"
}

# Mean of the per-second tx rates (summed over ports) after the first $skip seconds.
mean_after_skip() { awk -v skip="$skip" '{ if (NR > skip) { s += $1; n++ } } END { if (n) printf "%.3f", s / n / 1e6; else print "0" }'; }

if [ "$mode" = "null" ]; then
    vdevs='"--vdev=net_null0,copy=1", "--vdev=net_null1,copy=1"'

    echo "==> dpdk-testpmd --forward-mode=macswap on lcore $fwd, ${duration} s"
    timeout -s INT "$duration" dpdk-testpmd -l "$lcores" --no-huge -m 1024 --no-pci --file-prefix=sfbench-testpmd \
        --vdev=net_null0,copy=1 --vdev=net_null1,copy=1 -- \
        --forward-mode=macswap --stats-period 1 --no-mlockall --total-num-mbufs=16384 \
        >"$work/testpmd.log" 2>&1 || true
    # Every period prints a Tx-pps line per port: sum the two of each period.
    testpmd=$(awk '/Tx-pps:/ { v += $2; if (++k % 2 == 0) { print v; v = 0 } }' "$work/testpmd.log" | mean_after_skip)
    rm -rf /var/run/dpdk/sfbench-testpmd

    run_dataplane() { # program name
        local prog=$1 cfg="$work/$1.toml"
        cat >"$cfg" <<EOF
program = "$prog"
[runtime]
stats_interval_s = 1
[dpdk]
eal_args = [$(eal_common "sfbench-$prog"), $vdevs]
mbufs = 16383
[[port]]
name = "p0"
backend = "dpdk"
device = "net_null0"
mac = "02:00:00:00:00:01"
speed = "100G"
[[port]]
name = "p1"
backend = "dpdk"
device = "net_null1"
mac = "02:00:00:00:00:02"
speed = "100G"
EOF
        echo "==> dataplane $prog on lcore $fwd, ${duration} s" >&2
        RUST_LOG=info NO_COLOR=1 timeout -s INT "$duration" "$bin" run --config "$cfg" >"$work/$prog.log" 2>&1 || true
        sed 's/\x1b\[[0-9;]*m//g' "$work/$prog.log" |
            awk '/ port port=p[01] / { for (i = 1; i <= NF; i++) if ($i ~ /^tx_pps=/) { split($i, a, "="); v += a[2] }
                                       if (++k % 2 == 0) { print v; v = 0 } }' | mean_after_skip
    }
    macswap=$(run_dataplane macswap)
    l2l3=$(run_dataplane l2l3)

    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
    verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t) ? "meets" : "BELOW" }'; }
    r_mac=$(ratio "$macswap" "$testpmd")
    r_l23=$(ratio "$l2l3" "$testpmd")
    echo
    echo "two net_null vdevs (copy=1), 64-byte frames, forwarding lcore $fwd, ${duration} s each, first ${skip} s not counted"
    printf '%-36s %10s %10s %s\n' "run" "Mpps" "ratio" "target"
    printf '%-36s %10s %10s\n' "dpdk-testpmd macswap" "$testpmd" "1.00"
    printf '%-36s %10s %10s %s\n' "dataplane macswap" "$macswap" "$r_mac" ">= 0.90: $(verdict "$r_mac" 0.9)"
    printf '%-36s %10s %10s %s\n' "dataplane l2l3 (bridging, flood)" "$l2l3" "$r_l23" ">= 0.70: $(verdict "$r_l23" 0.7)"
    exit 0
fi

# --- pcap: replay and check.
echo "==> replaying $pcap_in through net_pcap vdevs into l2l3"
out="$work/out"
mkdir -p "$out"
cfg="$work/replay.toml"
cat >"$cfg" <<EOF
program = "l2l3"
[runtime]
stats_interval_s = 60
[dpdk]
eal_args = [$(eal_common sfbench-pcap), "--vdev=net_pcap0,rx_pcap=$(realpath "$pcap_in"),tx_pcap=$out/p0.pcap",
            "--vdev=net_pcap1,tx_pcap=$out/p1.pcap", "--vdev=net_pcap2,tx_pcap=$out/p2.pcap"]
mbufs = 4095
rx_ring = 256
tx_ring = 256
EOF
# The ports and tables of the replay test's switch, on DPDK devices.
sed -n '/^\[\[port\]\]/,$p' dataplane/tests/data/replay/replay.toml |
    sed -e 's/backend = "pcap"/backend = "dpdk"/' -e '/^rx = /d' -e 's/^tx = "out_p\([0-9]\)\.pcap"/device = "net_pcap\1"/' >>"$cfg"
RUST_LOG=warn timeout -s TERM 3 "$bin" run --config "$cfg" >"$work/replay.log" 2>&1 || true
python3 - "$out" "$expect_dir" <<'EOF'
import struct, sys

def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    out, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + "IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out

out, exp = sys.argv[1], sys.argv[2]
ok = True
for p in range(3):
    got, want = frames(f"{out}/p{p}.pcap"), frames(f"{exp}/expected_p{p}.pcap")
    same = got == want
    ok &= same
    print(f"port p{p}: {len(got)} frames sent, {len(want)} expected: {'identical' if same else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
EOF
echo "replay output matches the expected captures frame for frame"
