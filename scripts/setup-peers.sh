#!/usr/bin/env bash
# Install the peers scripts/bench-dpdk.sh runs beside softfabric's switch, on the same vdevs:
#
#   scripts/setup-peers.sh [--ovs] [--swx] [--dir DIR]     (default: both)
#
#   --ovs   OVS-DPDK: Debian's openvswitch-switch-dpdk (its DPDK build of ovs-vswitchd is used
#           directly; the system's `ovs-vswitchd` alternative is left as it is).
#   --swx   DPDK's SWX `pipeline` example application, built from Debian's DPDK source package
#           (the one the installed libdpdk-dev comes from) into DIR (default
#           /var/tmp/softfabric-swx). Its `pipeline libbuild` compiles each spec's generated C
#           against the DPDK source tree (it includes rte_swx_pipeline_internal.h, which
#           libdpdk-dev does not install), so the tree is kept, with build/rte_build_config.h
#           from the installed DPDK. `apt-get source` needs a deb-src entry: when none is
#           configured, one is added beside Debian's (/etc/apt/sources.list.d/softfabric-src.sources).
#
# Afterwards `sudo scripts/bench-dpdk.sh null|routed` runs them (it finds DIR by itself, or
# SWX_DIR=DIR).
set -euo pipefail

ovs=0
swx=0
dir=/var/tmp/softfabric-swx
while [ $# -gt 0 ]; do
    case "$1" in
        --ovs) ovs=1; shift ;;
        --swx) swx=1; shift ;;
        --dir) dir="${2:?}"; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "setup-peers: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ $ovs -eq 1 ] || [ $swx -eq 1 ] || { ovs=1; swx=1; }

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

if [ $ovs -eq 1 ]; then
    echo "==> OVS-DPDK (openvswitch-switch-dpdk)"
    $SUDO apt-get install -y -qq openvswitch-switch-dpdk >/dev/null
    /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk --version | sed 's/^/    /'
fi

if [ $swx -eq 1 ]; then
    version=$(pkg-config --modversion libdpdk)
    echo "==> DPDK $version's SWX pipeline application in $dir"
    if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        echo "    adding a deb-src entry for Debian's sources"
        src=/etc/apt/sources.list.d/debian.sources
        [ -f "$src" ] || { echo "setup-peers: no $src to copy a deb-src entry from: add one by hand" >&2; exit 1; }
        sed -e 's/^Types: deb$/Types: deb-src/' "$src" | $SUDO tee /etc/apt/sources.list.d/softfabric-src.sources >/dev/null
    fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq dpkg-dev gcc make >/dev/null
    mkdir -p "$dir"
    (cd "$dir" && apt-get source -qq "dpdk=$(dpkg-query -W -f '${Version}' libdpdk-dev)" >/dev/null 2>&1 || apt-get source -qq dpdk >/dev/null)
    tree=$(ls -d "$dir"/dpdk-*/ | head -1)
    tree=${tree%/}
    mkdir -p "$tree/build"
    cp "$(dirname "$(find /usr/include -name rte_build_config.h | head -1)")/rte_build_config.h" "$tree/build/"
    make -s -C "$tree/examples/pipeline" >/dev/null
    ln -sfn "$tree" "$dir/dpdk"
    echo "    $dir/dpdk/examples/pipeline/build/pipeline (DPDK source tree $tree)"
fi
