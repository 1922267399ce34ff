# Sourced by scripts/bench-dpdk.sh and scripts/dpdk-instructions.sh: the `dataplane run` config
# both run the switch with.

# two_port_config PROGRAM EAL_ARGS VDEV0 VDEV1 [EXTRA]
#   Prints a config of PROGRAM with two DPDK ports on the vdevs (`--vdev=NAME,ARGS...`; the port
#   takes NAME): p0 02:00:00:00:00:01, 10.0.1.1/24 and p1 02:00:00:00:00:02, 10.0.2.1/24, both
#   100G; EAL_ARGS is the body of the `eal_args` array (quoted TOML strings); EXTRA (TOML
#   tables) follows the ports.
two_port_config() {
    local prog=$1 eal=$2 dev0=${3#--vdev=} dev1=${4#--vdev=} extra=${5:-}
    cat <<CFG
program = "$prog"
[dpdk]
eal_args = [$eal]
mbufs = 16383
[[port]]
name = "p0"
backend = "dpdk"
device = "${dev0%%,*}"
mac = "02:00:00:00:00:01"
speed = "100G"
ipv4 = ["10.0.1.1/24"]
[[port]]
name = "p1"
backend = "dpdk"
device = "${dev1%%,*}"
mac = "02:00:00:00:00:02"
speed = "100G"
ipv4 = ["10.0.2.1/24"]
$extra
CFG
}
