#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: basic
# rsiw module skeleton: device attributes in sysfs, port state following eth0,
# one device per netdev, removal when the netdev goes away, unload with a live device.
. /rsiw/lib.sh
setup_net

require_rsiw "rsiw.ko is in the image" || finish
step "modprobe rsiw" modprobe rsiw || finish
step "rdma link add rsiw0 type rsiw netdev eth0" rdma link add rsiw0 type rsiw netdev eth0 || finish
S=/sys/class/infiniband/rsiw0
# rsiw.ko carries `softdep post: ib_uverbs`, but busybox modprobe ignores softdeps.
modprobe ib_uverbs
check "uverbs exposes rsiw0" test -c /dev/infiniband/uverbs0
check_output "node_type is RNIC" '^4: RNIC$' cat $S/node_type
check_output "fw_ver is 0.1.0" '^0\.1\.0$' cat $S/fw_ver
# shellcheck disable=SC2046
set -- $(tr ':' ' ' </sys/class/net/eth0/address)
guid=$(printf '%02x%s:%sff:fe%s:%s%s' $((0x$1 ^ 2)) "$2" "$3" "$4" "$5" "$6")
check_output "node_guid is the EUI-64 of eth0's MAC" "^$guid\$" cat $S/node_guid
gidmac="$1$2:$3$4:$5$6:0000:0000:0000:0000:0000"
check_output "GID 0 is eth0's MAC" "^$gidmac\$" cat $S/ports/1/gids/0
check_output "port ACTIVE with eth0 up" '^4: ACTIVE$' cat $S/ports/1/state
check_output "link layer Ethernet" '^Ethernet$' cat $S/ports/1/link_layer
check_fails "a second device on eth0 is refused" rdma link add rsiw1 type rsiw netdev eth0

ip link set eth0 down
check_output "port DOWN with eth0 down" '^1: DOWN$' cat $S/ports/1/state
ip link set eth0 up
retry 10 grep -q ACTIVE $S/ports/1/state
check_output "port ACTIVE again with eth0 up" '^4: ACTIVE$' cat $S/ports/1/state

if require_provider "ibv_devinfo opens rsiw0"; then
    check_output "ibv_devinfo: max_pd 1024" 'max_pd:[[:space:]]+1024' ibv_devinfo -v -d rsiw0
    # ibv_rc_pingpong (no rdma_cm) opens a context and creates PD, MR, CQ and QP
    # through the provider and swaps QP numbers over TCP. With GID 0 (the MAC-based
    # GID, zero interface ID) it sends no GRH, and an iWARP QP cannot reach a peer
    # without an IP address: RTR is refused (Documentation/qpconn.md; `-g 1` works,
    # qpconn-rsiw.sh). Both ends then release all.
    timeout 30 ibv_rc_pingpong -d rsiw0 -g 0 -p 18700 > /tmp/pp-server.log 2>&1 &
    sleep 2
    out=$(timeout 30 ibv_rc_pingpong -d rsiw0 -g 0 -p 18700 127.0.0.1 2>&1)
    wait
    out="$out $(cat /tmp/pp-server.log)"
    case "$out" in
    *"local address:"*"Failed to modify QP to RTR"* | *"Failed to modify QP to RTR"*"local address:"*)
        pass "user context, PD, MR, CQ and QP created; RTR without a GRH refused" ;;
    *) fail "user context, PD, MR, CQ and QP created; RTR without a GRH refused" "ibv_rc_pingpong: $out" ;;
    esac
    check_output "PD and context released" '^[0-9]+: rsiw0: pd 0 .*ctx 0' rdma resource show
fi

# Unbinding the NIC unregisters eth0: NETDEV_UNREGISTER must remove rsiw0
# (otherwise unregister_netdevice waits for our reference forever).
vdev=$(basename "$(readlink /sys/class/net/eth0/device)")
echo "$vdev" > /sys/bus/virtio/drivers/virtio_net/unbind
retry 10 sh -c '! rdma dev show | grep -q rsiw0'
check_no_output "rsiw0 is gone with its netdev" 'rsiw0' rdma dev show
echo "$vdev" > /sys/bus/virtio/drivers/virtio_net/bind
retry 10 test -e /sys/class/net/eth0
setup_net

if ! modprobe siw 2> /dev/null; then
    # Debian's kernel builds no siw.
    skip "rsiw beside a siw device" "this kernel has no siw module"
    step "rmmod rsiw" rmmod rsiw
    finish
fi
step "siw0 on eth0" rdma link add siw0 type siw netdev eth0
# ib_register_device fails (name taken): the error path must free everything.
check_fails "an rsiw device named siw0 is refused" rdma link add siw0 type rsiw netdev eth0
check "rdma link add rsiw0 again" rdma link add rsiw0 type rsiw netdev eth0
# rsiw registers with RDMA_DRIVER_UNKNOWN: unloading it must not touch other
# drivers' devices.
check "rmmod rsiw with rsiw0 registered" rmmod rsiw
check_no_output "rmmod removed rsiw0" 'rsiw0' rdma dev show
check_output "siw0 survives rmmod rsiw" '^[0-9]+: siw0:' rdma dev show
step "rdma link delete siw0" rdma link delete siw0
finish
