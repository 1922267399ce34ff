#!/usr/bin/env bash
# softfabric's switch against dpdk-testpmd, OVS-DPDK and DPDK's SWX pipeline (the peers when
# installed: scripts/setup-peers.sh), on the same lcore and the same DPDK vdevs, in interleaved
# rounds.
#
#   scripts/bench-dpdk.sh [null|routed] [--rounds N] [--duration S] [--skip S] [--lcores MAIN,FWD]
#       Runs every contender once per round, round after round (A, B, C, A, B, C, …; N rounds,
#       default 5), each for S seconds (default 6), counting the packets forwarded in the last
#       S − SKIP seconds (default SKIP 2) — the same window for every contender: testpmd's port
#       counters are cleared and read over its interactive prompt, ours are the per-second
#       samples of `dataplane run`. Prints every run, then per contender the median Mpps and the
#       median ratio to testpmd macswap of the same round, each with its spread (min – max).
#       The VM drifts: a single run is never the figure.
#
#       null:   two net_null vdevs (copy=1): 64-byte frames, all zero, as fast as the core takes
#               them. Contenders: testpmd macswap, dataplane macswap, dataplane l2l3 (net_null's
#               zero frames take l2l3's bridging path: the unknown destination is flooded, which
#               between two ports is the other port), OVS-DPDK (an L2 output flow).
#       routed: a pcap of 64-byte IPv4/UDP frames over 1 024 flows to 10.0.2.2, replayed for ever
#               by net_pcap (infinite_rx=1) into port 0, port 1 a net_null that receives nothing
#               (no-rx=1). Every frame is routed by l2l3: LPM, TTL, checksum, neighbour MAC
#               rewrite — checked from its counters: forwarded = received, no drop. Contenders:
#               testpmd macswap and mac, dataplane l2l3, OVS-DPDK (an L3 flow: dec_ttl and MAC
#               rewrite).
#       With BASELINE=PATH (another build's `dataplane`, e.g. of the commit before a change),
#       its l2l3 runs in every round too, as `baseline-l2l3`: an interleaved A/B of a change.
#       A peer that is not installed is SKIPPED (OVS-DPDK: Debian's openvswitch-switch-dpdk, its
#       DPDK build used whether or not `ovs-vswitchd` points to it).
#       DPDK's SWX pipeline application runs when scripts/setup-peers.sh --swx has built it
#       (SWX_DIR, default /var/tmp/softfabric-swx): null: spec l2fwd_macswp; routed: spec fib.
#
#   scripts/bench-dpdk.sh pcap [--pcap IN --expect DIR]
#       Replays a capture through net_pcap vdevs into the l2l3 switch and checks every port's
#       output frame for frame against the expected captures (default: the pcap replay test's
#       data, dataplane/tests/data/replay).
#
# Needs DPDK (scripts/setup-dpdk.sh), root or permission for the EAL, and two cores. No
# hugepages: the EAL runs with --no-huge.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/two-ports.sh

mode="null"
rounds=5
duration=6
skip=2
lcores="0,1"
pcap_in="dataplane/tests/data/replay/in.pcap"
expect_dir="dataplane/tests/data/replay"
while [ $# -gt 0 ]; do
    case "$1" in
        null|routed|pcap) mode="$1"; shift ;;
        --rounds) rounds="${2:?}"; shift 2 ;;
        --duration) duration="${2:?}"; shift 2 ;;
        --skip) skip="${2:?}"; shift 2 ;;
        --lcores) lcores="${2:?}"; shift 2 ;;
        --pcap) pcap_in="${2:?}"; shift 2 ;;
        --expect) expect_dir="${2:?}"; shift 2 ;;
        -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
        *) echo "bench-dpdk: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ "$duration" -gt "$skip" ] || { echo "bench-dpdk: --duration must exceed --skip ($skip s)" >&2; exit 2; }
[ "$rounds" -ge 1 ] || { echo "bench-dpdk: --rounds must be at least 1" >&2; exit 2; }
command -v dpdk-testpmd >/dev/null || { echo "bench-dpdk: dpdk-testpmd not found: scripts/setup-dpdk.sh" >&2; exit 2; }
pkg-config --exists libdpdk || { echo "bench-dpdk: libdpdk not found: scripts/setup-dpdk.sh" >&2; exit 2; }

echo "==> building dataplane (release)"
cargo build --release -q -p dataplane
bin="target/release/dataplane"
work=$(mktemp -d /tmp/softfabric-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
fwd=${lcores#*,}
window=$((duration - skip))

eal_common() { # file prefix
    printf '"-l", "%s", "--no-huge", "-m", "1024", "--no-pci", "--file-prefix=%s"' "$lcores" "$1"
}

# --- the vdevs of each mode, as EAL arguments (testpmd's and ours the same).
flows_pcap="$work/flows.pcap"
case "$mode" in
    null)
        vdev_args=(--vdev=net_null0,copy=1 --vdev=net_null1,copy=1)
        ;;
    routed)
        python3 scripts/flows-pcap.py "$flows_pcap"
        vdev_args=(--vdev=net_pcap0,rx_pcap="$flows_pcap",infinite_rx=1 --vdev=net_null1,no-rx=1)
        ;;
    pcap) ;;
esac

# --- contenders: each prints the forwarded Mpps over the window, or SKIPPED.
run_testpmd() { # forward mode
    local fm=$1 log="$work/testpmd-$1.log"
    {
        echo "start"
        sleep "$skip"
        echo "clear port stats all"
        sleep "$window"
        echo "show port stats all"
        sleep 0.5
        echo "quit"
    } | dpdk-testpmd -l "$lcores" --no-huge -m 1024 --no-pci --file-prefix=sfbench-testpmd "${vdev_args[@]}" -- \
        -i --forward-mode="$fm" --no-mlockall --total-num-mbufs=16384 >"$log" 2>&1 || true
    rm -rf /var/run/dpdk/sfbench-testpmd
    # TX-packets per port after the clear, summed over the ports.
    awk -v w="$window" '/NIC statistics for port/ { inb = 1 } /Forward statistics|Accumulated forward/ { inb = 0 }
                        inb && /TX-packets:/ { s += $2 } END { printf "%.3f", s / w / 1e6 }' "$log"
}

run_dataplane() { # program, extra config[, binary]
    local prog=$1 extra=$2 cfg="$work/$1.toml" log="$work/$1.log" exe=${3:-$bin}
    local vd
    vd=$(printf '"%s", ' "${vdev_args[@]}")
    two_port_config "$prog" "$(eal_common "sfbench-$prog"), ${vd%, }" "${vdev_args[0]}" "${vdev_args[1]}" \
        "[runtime]
stats_interval_s = 1
$extra" >"$cfg"
    # The EAL takes a second or so to start: the run lasts until the window's samples are in.
    RUST_LOG=info NO_COLOR=1 timeout -s INT "$((duration + 2))" "$exe" run --config "$cfg" >"$log" 2>&1 || true
    cp "$log" "/tmp/sfbench-last-$prog.log" 2>/dev/null || true
    rm -rf "/var/run/dpdk/sfbench-$prog"
    # Per-second samples: sum the two ports' tx_pps of each second, mean of those after skip.
    sed 's/\x1b\[[0-9;]*m//g' "$log" |
        awk '/ port port=p[01] / { for (i = 1; i <= NF; i++) if ($i ~ /^tx_pps=/) { split($i, a, "="); v += a[2] }
                                   if (++k % 2 == 0) { print v; v = 0 } }' |
        awk -v skip="$skip" -v w="$window" '{ if (NR > skip && NR <= skip + w) { s += $1; n++ } }
                                             END { if (n) printf "%.3f", s / n / 1e6; else print "FAILED" }' |
        tee "$work/rate"
    # No sample at all: the switch did not run (a build without DPDK, an EAL error). Say why.
    if [ "$(cat "$work/rate")" = "FAILED" ]; then
        { echo; echo "bench-dpdk: dataplane $prog gave no samples; the end of its log:"; tail -5 "$log"; } >&2
    fi
}

# Routed traffic is checked from the switch's own counters: every received frame forwarded,
# no drop (the final summary `dataplane run` prints).
check_routed() {
    local log="$work/l2l3.log"
    sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '
        /^drops by reason:/ { d = 1; next }
        d && /^  \(none\)/ { none = 1 }
        d && /^to_cpu/ { d = 0 }
        $1 == "p0" && NF >= 9 { rx = $2 }
        $1 == "p1" && NF >= 9 { tx = $4 }
        END {
            if (!none || rx == 0 || rx != tx) {
                printf "bench-dpdk: l2l3 did not route every frame: received %s, sent %s, drops %s\n", rx, tx, none ? "none" : "(see its log)" > "/dev/stderr"
                exit 1
            }
        }'
}

# OVS-DPDK: a netdev bridge whose two dpdk ports are the same vdevs, its PMD thread on the
# forwarding lcore; l2: an output flow each way; l3: an IPv4 flow with dec_ttl and MAC
# rewrite. Its rate: the ports' tx packets over the window, read live over OpenFlow
# (`ovs-ofctl dump-ports`; the database's statistics column is refreshed only every 5 s).
# Debian's openvswitch-switch-dpdk installs its DPDK build beside the plain one; either works
# when `ovs-vswitchd` is switched to it (update-alternatives).
ovs_vswitchd() {
    if command -v ovs-vswitchd >/dev/null && ovs-vswitchd --version 2>/dev/null | grep -q '^DPDK'; then
        command -v ovs-vswitchd
    elif [ -x /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk ]; then
        echo /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk
    fi
}

run_ovs() { # l2|l3
    local kind=$1 d="$work/ovs" vswitchd
    vswitchd=$(ovs_vswitchd)
    if [ -z "$vswitchd" ] || ! command -v ovsdb-server >/dev/null; then
        echo SKIPPED
        return
    fi
    rm -rf "$d" && mkdir -p "$d"
    (
        export OVS_RUNDIR="$d" OVS_LOGDIR="$d" OVS_DBDIR="$d"
        local schema=/usr/share/openvswitch/vswitch.ovsschema db="unix:$d/db.sock"
        ovsdb-tool create "$d/conf.db" "$schema" >/dev/null
        ovsdb-server --remote="punix:$d/db.sock" --pidfile="$d/ovsdb.pid" --detach --log-file="$d/ovsdb.log" "$d/conf.db" 2>/dev/null
        local vsctl=(ovs-vsctl --db="$db" --timeout=30)
        "${vsctl[@]}" --no-wait init
        "${vsctl[@]}" --no-wait set Open_vSwitch . other_config:dpdk-init=true \
            other_config:dpdk-extra="--no-huge -m 1024 --no-pci --legacy-mem --file-prefix=sfbench-ovs ${vdev_args[*]}" \
            other_config:dpdk-lcore-mask="0x$(printf %x $((1 << ${lcores%,*})))" \
            other_config:pmd-cpu-mask="0x$(printf %x $((1 << fwd)))"
        "$vswitchd" "$db" --pidfile="$d/vswitchd.pid" --detach --log-file="$d/vswitchd.log" >/dev/null 2>&1
        "${vsctl[@]}" add-br br0 -- set bridge br0 datapath_type=netdev
        local a=${vdev_args[0]#--vdev=} b=${vdev_args[1]#--vdev=}
        "${vsctl[@]}" add-port br0 p0 -- set Interface p0 type=dpdk options:dpdk-devargs="${a%%,*}" ofport_request=1
        "${vsctl[@]}" add-port br0 p1 -- set Interface p1 type=dpdk options:dpdk-devargs="${b%%,*}" ofport_request=2
        ovs-ofctl del-flows br0
        if [ "$kind" = l2 ]; then
            ovs-ofctl add-flow br0 "in_port=1,actions=output:2"
            ovs-ofctl add-flow br0 "in_port=2,actions=output:1"
        else
            ovs-ofctl add-flow br0 "ip,in_port=1,nw_dst=10.0.2.0/24,actions=dec_ttl,mod_dl_src:02:00:00:00:00:02,mod_dl_dst:02:00:00:00:02:02,output:2"
        fi
        tx() { ovs-ofctl dump-ports br0 | awk '/tx pkts=/ { sub(/.*tx pkts=/, ""); sub(/,.*/, ""); s += $0 } END { print s + 0 }'; }
        sleep "$skip"
        local t0 t1
        t0=$(tx)
        sleep "$window"
        t1=$(tx)
        cp "$d/vswitchd.log" /tmp/sfbench-last-ovs.log 2>/dev/null || true
        local pid
        pid=$(cat "$d/vswitchd.pid")
        ovs-appctl -t "$(ls "$d"/ovs-vswitchd*.ctl | head -1)" exit >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
        kill "$(cat "$d/ovsdb.pid")" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        rm -rf /var/run/dpdk/sfbench-ovs
        awk -v a="$t0" -v b="$t1" -v w="$window" 'BEGIN { printf "%.3f", (b - a) / w / 1e6 }'
    )
}

# DPDK's SWX pipeline application (scripts/setup-peers.sh --swx builds it from Debian's DPDK
# source package): l2: the example spec l2fwd_macswp (MAC swap, out the other port); l3: the
# example spec fib (LPM route, next-hop group selector, next hop: MAC rewrite, TTL and checksum),
# with one route, group and next hop for the replayed flows. Its rate: the output ports'
# packets (`pipeline PIPELINE0 stats` over its CLI socket) over the time between two reads.
swx_dir=${SWX_DIR:-/var/tmp/softfabric-swx}
run_swx() { # l2|l3
    local kind=$1 tree="$swx_dir/dpdk" d="$work/swx"
    local app="$tree/examples/pipeline/build/pipeline"
    if [ ! -x "$app" ]; then
        echo SKIPPED
        return
    fi
    rm -rf "$d" && mkdir -p "$d"
    local spec=l2fwd_macswp a=${vdev_args[0]#--vdev=} b=${vdev_args[1]#--vdev=}
    a=${a%%,*}
    b=${b%%,*}
    [ "$kind" = l3 ] && spec=fib
    printf '%s\n' "port in 0 ethdev $a rxq 0 bsz 32" "port in 1 ethdev $b rxq 0 bsz 32" \
        "port out 0 ethdev $a txq 0 bsz 32" "port out 1 ethdev $b txq 0 bsz 32" >"$d/io"
    printf '%s\n' \
        "pipeline codegen $tree/examples/pipeline/examples/$spec.spec $d/p.c" \
        "pipeline libbuild $d/p.c $d/p.so" \
        "mempool MEMPOOL0 buffer 2304 pool 16K cache 256 cpu 0" \
        "ethdev $a rxq 1 1024 MEMPOOL0 txq 1 1024 promiscuous on" \
        "ethdev $b rxq 1 1024 MEMPOOL0 txq 1 1024 promiscuous on" \
        "pipeline PIPELINE0 build lib $d/p.so io $d/io numa 0" >"$d/run.cli"
    if [ "$kind" = l3 ]; then
        # vrf_id is the source address in this example spec; 10.0.2.0/24 via port 1.
        echo "match 0x0A000102 0x0A000200/0xFFFFFF00 action nexthop_group_action nexthop_group_id 0" >"$d/routes.txt"
        echo "group 0 member 0 weight 1" >"$d/groups.txt"
        echo "match 0 action nexthop_action ethernet_dst_addr 0x020000000202 ethernet_src_addr 0x020000000002 ethernet_ethertype 0x0800 port_out 1" >"$d/nexthops.txt"
        printf '%s\n' \
            "pipeline PIPELINE0 table routing_table add $d/routes.txt" \
            "pipeline PIPELINE0 selector nexthop_group_table group add" \
            "pipeline PIPELINE0 selector nexthop_group_table group member add $d/groups.txt" \
            "pipeline PIPELINE0 table nexthop_table add $d/nexthops.txt" \
            "pipeline PIPELINE0 commit" >>"$d/run.cli"
    fi
    echo "thread $fwd pipeline PIPELINE0 enable" >>"$d/run.cli"
    local cli_port=18086
    RTE_INSTALL_DIR="$tree" timeout -s INT "$((duration + 6))" "$app" -l "$lcores" --no-huge -m 1024 --no-pci \
        --file-prefix=sfbench-swx "${vdev_args[@]}" -- -p "$cli_port" -s "$d/run.cli" >"$d/run.log" 2>&1 &
    local pid=$!
    python3 "$work/swx_stats.py" "$cli_port" "$skip" "$window" || echo 0
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    cp "$d/run.log" /tmp/sfbench-last-swx.log 2>/dev/null || true
    rm -rf /var/run/dpdk/sfbench-swx
}
# The SWX pipeline's counters over its CLI: the output ports' packets (DROP excluded) at SKIP
# seconds and WINDOW seconds later, divided by the time between the two reads.
cat >"$work/swx_stats.py" <<'PY'
import re, socket, sys, time
port, skip, window = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
t0 = time.time()
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        break
    except OSError:
        if time.time() - t0 > 20:
            raise SystemExit("bench-dpdk: the SWX pipeline's CLI did not open")
        time.sleep(0.2)
s.settimeout(5)
def read_prompt():
    buf = b""
    while not buf.rstrip().endswith(b"pipeline>"):
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("bench-dpdk: the SWX pipeline closed its CLI")
        buf += chunk
    return buf.decode()
read_prompt()
def sent():
    s.sendall(b"pipeline PIPELINE0 stats\n")
    out = read_prompt().split("Output ports:")[1].split("DROP:")[0]
    return time.time(), sum(int(n) for n in re.findall(r"Port \d+: packets (\d+)", out))
time.sleep(skip)
ta, a = sent()
time.sleep(window)
tb, b = sent()
print(f"{(b - a) / (tb - ta) / 1e6:.3f}")
PY

routes='[l2l3]
neighbor = [{ ip = "10.0.2.2", mac = "02:00:00:00:02:02", port = "p1" }]'

case "$mode" in
    null) contenders=("testpmd-macswap" "dataplane-macswap" "dataplane-l2l3" "ovs-l2" "swx-l2fwd-macswp") ;;
    routed) contenders=("testpmd-macswap" "testpmd-mac" "dataplane-l2l3" "ovs-l3" "swx-fib") ;;
esac
if [ -n "${BASELINE:-}" ]; then
    [ -x "$BASELINE" ] || { echo "bench-dpdk: BASELINE=$BASELINE is not an executable" >&2; exit 2; }
    contenders+=("baseline-l2l3")
fi

if [ "$mode" != "pcap" ]; then
    results="$work/results.txt"
    : >"$results"
    echo "==> $mode: ${#contenders[@]} contenders x $rounds rounds, ${duration} s each (window: the last ${window} s), forwarding lcore $fwd"
    for r in $(seq 1 "$rounds"); do
        for c in "${contenders[@]}"; do
            case "$c" in
                testpmd-macswap) v=$(run_testpmd macswap) ;;
                testpmd-mac) v=$(run_testpmd mac) ;;
                dataplane-macswap) v=$(run_dataplane macswap "") ;;
                dataplane-l2l3)
                    if [ "$mode" = "routed" ]; then
                        v=$(run_dataplane l2l3 "$routes")
                        check_routed || v="FAILED"
                    else
                        v=$(run_dataplane l2l3 "")
                    fi
                    ;;
                baseline-l2l3)
                    if [ "$mode" = "routed" ]; then v=$(run_dataplane l2l3 "$routes" "$BASELINE"); else v=$(run_dataplane l2l3 "" "$BASELINE"); fi
                    ;;
                ovs-l2) v=$(run_ovs l2) ;;
                ovs-l3) v=$(run_ovs l3) ;;
                swx-l2fwd-macswp) v=$(run_swx l2) ;;
                swx-fib) v=$(run_swx l3) ;;
            esac
            printf 'round %d  %-20s %s\n' "$r" "$c" "$v"
            echo "$r $c $v" >>"$results"
        done
    done
    echo
    python3 - "$results" <<'EOF'
import sys, statistics
runs = [l.split() for l in open(sys.argv[1]) if l.strip()]
order = []
by = {}
for r, c, v in runs:
    if c not in order:
        order.append(c)
    by.setdefault(c, {})[int(r)] = v
base = by.get("testpmd-macswap", {})
print(f"{'contender':<20} {'Mpps median':>12} {'(min - max)':>16} {'ratio median':>13} {'(min - max)':>14}")
for c in order:
    vals = {r: v for r, v in by[c].items()}
    if any(v in ("SKIPPED", "FAILED") for v in vals.values()):
        print(f"{c:<20} {next(iter(vals.values())):>12}")
        continue
    mp = [float(v) for v in vals.values()]
    ratios = [float(v) / float(base[r]) for r, v in vals.items() if r in base and float(base[r]) > 0]
    med = statistics.median(mp)
    line = f"{c:<20} {med:>12.2f} {f'({min(mp):.2f} - {max(mp):.2f})':>16}"
    if ratios:
        line += f" {statistics.median(ratios):>13.3f} {f'({min(ratios):.3f} - {max(ratios):.3f})':>14}"
    print(line)
# Our switch against the peers, round by round.
peers = [c for c in order if c.startswith(("ovs-", "swx-"))]
ours = [c for c in order if c.startswith(("dataplane-", "baseline-"))]
for c in ours:
    for p in peers:
        mine, theirs = by[c], by[p]
        q = [float(mine[r]) / float(theirs[r]) for r in mine
             if r in theirs and mine[r] not in ("SKIPPED", "FAILED") and theirs[r] not in ("SKIPPED", "FAILED")
             and float(theirs[r]) > 0]
        if q:
            print(f"{c} / {p}: median {statistics.median(q):.3f} ({min(q):.3f} - {max(q):.3f})")
EOF
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
