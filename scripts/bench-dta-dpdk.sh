#!/usr/bin/env bash
# The DTA translator on DPDK ports, one forwarding core, against its in-memory bench.
#
#   scripts/bench-dta-dpdk.sh [append|keywrite|keyincrement] [--rounds N] [--duration S] [--skip S]
#
# Reports are replayed for ever from a pcap (4 096 reports: net_pcap holds them all in mbufs; written by the example
# `dta_reports_pcap`) by `net_pcap` (`infinite_rx=1`) into the translator's port p0. Port p1 is a
# `net_memif` server; its client is a real soft-RNIC collector (`collector serve`, DPDK device,
# its own EAL, main and worker lcores both on CPU 0) that stores every RDMA WRITE or FETCH&ADD and acknowledges them, so the
# translator's windows move as they do against a NIC. The translator forwards on lcore 1.
# Each round runs, interleaved: the translator on DPDK (its reports/s: the per-second frames
# received on p0, the reports port, over the window after SKIP), then the in-memory bench
# of the same primitive (`cargo bench -p dataplane --bench dta`, same core). Prints every run and
# the medians with their spread, and the ratio DPDK / in-memory per round.
#
# Also checked, from the translator's final counters: every report received was translated or
# counted under a named reason (nothing lost uncounted), and from the collector's: RDMA packets
# stored. Needs DPDK (scripts/setup-dpdk.sh), root, two cores; no hugepages (--no-huge).
set -euo pipefail
cd "$(dirname "$0")/.."

primitive="append"
rounds=5
duration=8
skip=3
while [ $# -gt 0 ]; do
    case "$1" in
        append|keywrite|keyincrement) primitive="$1"; shift ;;
        --rounds) rounds="${2:?}"; shift 2 ;;
        --duration) duration="${2:?}"; shift 2 ;;
        --skip) skip="${2:?}"; shift 2 ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "bench-dta-dpdk: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ "$duration" -gt "$skip" ] || { echo "bench-dta-dpdk: --duration must exceed --skip" >&2; exit 2; }
pkg-config --exists libdpdk || { echo "bench-dta-dpdk: libdpdk not found: scripts/setup-dpdk.sh" >&2; exit 2; }
window=$((duration - skip))

echo "==> building dataplane, collector, the report writer and the in-memory bench (release)"
cargo build --release -q -p dataplane -p collector --example dta_reports_pcap
cargo bench -q -p dataplane --bench dta --no-run 2>/dev/null
work=$(mktemp -d /tmp/softfabric-dta-bench.XXXXXX)
tpid="" cpid=""
trap 'kill -9 $tpid $cpid 2>/dev/null || true; rm -rf "$work" /var/run/dpdk/sfdta-t /var/run/dpdk/sfdta-c' EXIT
target/release/examples/dta_reports_pcap "$primitive" 4096 "$work/reports.pcap" >/dev/null

sock="$work/memif.sock"
cat >"$work/collector.toml" <<EOF
[collector]
ip = "10.0.0.51"
icrc = true
memory = "pages"
backend = "soft-rnic"
device = "net_memif0"
[dpdk]
eal_args = ["--lcores=0@0,1@0", "--no-huge", "-m", "512", "--no-pci", "--file-prefix=sfdta-c",
            "--vdev=net_memif0,role=client,id=0,socket-abstract=no,socket=$sock,mac=02:c0:00:00:00:51"]
mbufs = 8191
[keywrite]
port = 1337
slots = 1048576
data = 4
redundancy = 2
[keyincrement]
port = 1339
slots = 1048576
redundancy = 2
[[append]]
list = 0
port = 1340
entries = 1048576
EOF

cat >"$work/translator.toml" <<EOF
program = "dta_translator"
[runtime]
stats_interval_s = 1
[dpdk]
eal_args = ["-l", "0,1", "--no-huge", "-m", "1024", "--no-pci", "--file-prefix=sfdta-t",
            "--vdev=net_pcap0,rx_pcap=$work/reports.pcap,infinite_rx=1",
            "--vdev=net_memif1,role=server,id=0,socket-abstract=no,socket=$sock,mac=02:5f:00:00:00:02"]
mbufs = 16383
[[port]]
name = "p0"
backend = "dpdk"
device = "net_pcap0"
mac = "02:5f:00:00:00:01"
speed = "100G"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "p1"
backend = "dpdk"
device = "net_memif1"
mac = "02:5f:00:00:00:02"
speed = "100G"
ipv4 = ["10.0.0.1/24"]
[l2l3]
neighbor = [{ ip = "10.0.0.51", mac = "02:c0:00:00:00:51", port = "p1" }]
[dta]
base = "long"
keywrite_data_len = 4
ack_every = 32
window = 8192
[[dta.collector]]
name = "c0"
ip = "10.0.0.51"
keywrite = 1337
keyincrement = 1339
append = [{ list = 0, port = 1340, batch = 16 }]
EOF

run_dpdk() {
    local log="$work/translator.log" clog="$work/collector.log"
    target/release/dataplane run --config "$work/translator.toml" >"$log" 2>&1 &
    tpid=$!
    sleep 1
    target/release/collector serve --config "$work/collector.toml" >"$clog" 2>&1 &
    cpid=$!
    sleep "$duration"
    kill -INT "$tpid" 2>/dev/null || true
    wait "$tpid" 2>/dev/null || true
    kill -INT "$cpid" 2>/dev/null || true
    wait "$cpid" 2>/dev/null || true
    tpid="" cpid=""
    cp "$log" /tmp/sfbench-last-dta-translator.log
    cp "$clog" /tmp/sfbench-last-dta-collector.log
    rm -rf /var/run/dpdk/sfdta-t /var/run/dpdk/sfdta-c
    # Taken: reports received on p0 per second, each second of the window after the skip (the
    # translator core's rate: every report taken is translated or dropped under a reason).
    local taken stored per
    taken=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep ' port port=p0 ' | grep -o 'rx_pps=[0-9]*' | cut -d= -f2 |
        awk -v skip="$skip" -v w="$window" '{ if (NR > skip && NR <= skip + w) { s += $1; n++ } }
                                             END { if (n) printf "%.3f", s / n / 1e6; else print "0" }')
    # Stored: the collector's RDMA operations per second in the same seconds (it starts 1 s
    # later), as reports: 16 Append entries per WRITE, N = 2 copies per Key-Write or
    # Key-Increment report.
    case "$primitive" in
        append) per="writes 16" ;;
        keywrite) per="writes 0.5" ;;
        keyincrement) per="atomics 0.5" ;;
    esac
    stored=$(awk -v what="${per% *}" -v k="${per#* }" -v skip="$((skip - 1))" -v w="$window" '
        $1 == "writes" { n++; v = (what == "writes") ? $2 : $4; sub(/\/s/, "", v)
                         if (n > skip && n <= skip + w) { s += v * k; m++ } }
        END { if (m) printf "%.3f", s / m / 1e6; else print "0" }' "$clog")
    # Every report taken is accounted for: translated (consumed) or dropped under a reason.
    local drops
    drops=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | awk '/^drops by reason:/ { d = 1; next } d && /^to_cpu/ { d = 0 }
                                                   d && NF == 2 { printf "%s%s=%s", sep, $1, $2; sep = "," }')
    echo "$taken $stored ${drops:-none}"
}

run_memory() {
    local id
    case "$primitive" in
        append) id="dta/append_b16_burst32" ;;
        keywrite) id="dta/keywrite_n2_burst32" ;;
        keyincrement) id="dta/keyincrement_n2_burst32" ;;
    esac
    taskset -c 1 cargo bench -q -p dataplane --bench dta -- --warm-up-time 1 --measurement-time "$window" "$id" 2>/dev/null |
        awk '/thrpt: +\[[0-9]/ && !done { v = $4; u = $5; done = 1 }
             END { if (u ~ /^M/) printf "%.3f", v; else if (u ~ /^K/) printf "%.3f", v / 1e3; else printf "%.3f", v / 1e6 }'
}

results="$work/results.txt"
: >"$results"
echo "==> $primitive: $rounds rounds, DPDK ${duration} s (window: the last ${window} s) then in memory"
for r in $(seq 1 "$rounds"); do
    run_dpdk >"$work/dpdk.out"
    read -r taken stored drops <"$work/dpdk.out"
    m=$(run_memory)
    printf 'round %d  DPDK: taken %s, stored %s M reports/s (drops: %s)  in memory: %s M reports/s\n' \
        "$r" "$taken" "$stored" "$drops" "$m"
    echo "$r $taken $stored $m" >>"$results"
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
col = lambda i: [float(r[i]) for r in rows]
taken, stored, mem = col(1), col(2), col(3)
f = lambda v: f"{statistics.median(v):.2f} ({min(v):.2f} - {max(v):.2f})"
print(f"DPDK vdevs, translator core, reports taken:  {f(taken)} M/s")
print(f"DPDK vdevs, stored by the collector:         {f(stored)} M/s")
print(f"in memory, same core:                        {f(mem)} M/s")
q = [a / b for a, b in zip(taken, mem) if b > 0]
if q:
    print(f"taken on DPDK / in memory:                   {statistics.median(q):.3f} ({min(q):.3f} - {max(q):.3f})")
PY
