#!/usr/bin/env bash
# Install DPDK from Debian for softfabric's DPDK port backend, optionally reserve hugepages, and
# show (or do) the binding of a NIC to a DPDK-capable driver.
#
#   scripts/setup-dpdk.sh                      install libdpdk-dev, dpdk-dev (testpmd), libclang-dev
#   scripts/setup-dpdk.sh --hugepages 1024     ... and reserve 1024 x 2 MiB hugepages, mounted
#   scripts/setup-dpdk.sh --bind 0000:3b:00.0  ... and bind that NIC to vfio-pci
#   scripts/setup-dpdk.sh --status             only show NICs and their drivers
#
# Tests and the vdev benchmarks need no hugepages (they run with --no-huge) and no NIC.
# Mellanox/NVIDIA ConnectX NICs (mlx5) stay on their kernel driver: DPDK drives them alongside it,
# so do not bind them. Intel (i40e, ice, ixgbe), Broadcom and most others go to vfio-pci.
set -euo pipefail

hugepages=0
bind=""
driver="vfio-pci"
status_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --hugepages) hugepages="${2:?--hugepages needs a count of 2 MiB pages}"; shift 2 ;;
        --bind) bind="${2:?--bind needs a PCI address, e.g. 0000:3b:00.0}"; shift 2 ;;
        --driver) driver="${2:?--driver needs a driver name}"; shift 2 ;;
        --status) status_only=1; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "setup-dpdk: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

if [ "$status_only" -eq 0 ]; then
    echo "==> installing DPDK 22.11 from Debian (libdpdk-dev, dpdk-dev for dpdk-testpmd) and libclang-dev for bindgen"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq libdpdk-dev dpdk dpdk-dev libclang-dev pkg-config
    echo "    pkg-config finds libdpdk $(pkg-config --modversion libdpdk)"
fi

if [ "$hugepages" -gt 0 ]; then
    echo "==> reserving $hugepages hugepages of 2 MiB and mounting hugetlbfs"
    $SUDO dpdk-hugepages.py --pagesize 2M --setup "$((hugepages * 2))M"
    dpdk-hugepages.py --show
fi

if [ -n "$bind" ]; then
    echo "==> binding $bind to $driver"
    if [ "$driver" = "vfio-pci" ]; then
        $SUDO modprobe vfio-pci
    fi
    $SUDO dpdk-devbind.py --bind="$driver" "$bind"
fi

echo "==> network devices and their drivers"
dpdk-devbind.py --status-dev net || true
cat <<'EOF'

To hand a NIC to DPDK (not needed for mlx5):
    sudo modprobe vfio-pci
    sudo dpdk-devbind.py --bind=vfio-pci 0000:3b:00.0     # the PCI address from the list above
and back to the kernel:
    sudo dpdk-devbind.py --bind=<kernel driver, e.g. ice> 0000:3b:00.0
Then name it in the switch's configuration:
    [dpdk]
    eal_args = ["-l", "0-2", "-a", "0000:3b:00.0"]     # main lcore 0, pipelines on 1 and 2
    [[port]]
    backend = "dpdk"
    device = "0000:3b:00.0"
EOF
