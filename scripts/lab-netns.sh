#!/usr/bin/env bash
# Two hosts in network namespaces behind veth pairs, for running the switch on a single machine.
#
#   h1 (10.0.1.2/24, gw 10.0.1.1) --eth0 | sw0-- [switch p0] [switch p1] --sw1 | eth0-- h2 (10.0.2.2/24, gw 10.0.2.1)
#
# `sw0` and `sw1` stay in the root namespace for the switch's AF_PACKET (or DPDK net_af_packet)
# ports; config/l2l3.toml uses them as written.
#
#   sudo scripts/lab-netns.sh up        # create h1, h2, sw0, sw1
#   sudo target/release/dataplane run --config config/l2l3.toml &
#   sudo ip netns exec h1 ping 10.0.2.2
#   sudo scripts/lab-netns.sh down      # remove them
#
# `up --bridged` puts both hosts on one subnet (10.0.9.1/24 and 10.0.9.2/24, no gateway) for a
# switch that only bridges.
set -euo pipefail

need() { command -v "$1" >/dev/null || { echo "lab-netns: $1 not found" >&2; exit 2; }; }
need ip
[ "$(id -u)" -eq 0 ] || { echo "lab-netns: needs root (network namespaces)" >&2; exit 2; }

host() { # name, switch-side interface, address, gateway (or "")
    local ns=$1 sw=$2 addr=$3 gw=$4
    ip netns add "$ns"
    ip link add "$sw" type veth peer name eth0 netns "$ns"
    ip link set "$sw" up
    # The switch sees every frame on its side; keep IPv6 chatter (router solicitations) away.
    sysctl -q -w "net.ipv6.conf.$sw.disable_ipv6=1" || true
    ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
    ip -n "$ns" addr add "$addr" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    [ -z "$gw" ] || ip -n "$ns" route add default via "$gw"
}

down() {
    ip netns del h1 2>/dev/null || true
    ip netns del h2 2>/dev/null || true
    ip link del sw0 2>/dev/null || true
    ip link del sw1 2>/dev/null || true
}

case "${1:-}" in
    up)
        down
        if [ "${2:-}" = "--bridged" ]; then
            host h1 sw0 10.0.9.1/24 ""
            host h2 sw1 10.0.9.2/24 ""
        else
            host h1 sw0 10.0.1.2/24 10.0.1.1
            host h2 sw1 10.0.2.2/24 10.0.2.1
        fi
        echo "h1 and h2 are up behind sw0 and sw1"
        ;;
    down)
        down
        echo "removed h1, h2, sw0, sw1"
        ;;
    *)
        echo "usage: $0 up [--bridged] | down" >&2
        exit 2
        ;;
esac
