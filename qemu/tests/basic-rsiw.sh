#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
# rsiw-group: basic
# rsiw loads, creates rsiw0 on eth0, is seen by libibverbs through the rsiw provider, and unloads.
. /rsiw/lib.sh
setup_net

require_rsiw "rsiw.ko is in the image" || finish
check "modprobe rsiw" modprobe rsiw || finish
check "rdma link add rsiw0 type rsiw netdev eth0" rdma link add rsiw0 type rsiw netdev eth0 || finish
check_output "rdma link shows rsiw0 on eth0" '^link rsiw0/1 .*netdev eth0' rdma link show

if require_provider "ibv_devices lists rsiw0"; then
    check_output "ibv_devices lists rsiw0" '^[[:space:]]*rsiw0[[:space:]]' ibv_devices
    check_output "ibv_devinfo -d rsiw0: transport iWARP" 'transport:[[:space:]]+iWARP' ibv_devinfo -d rsiw0
    check_output "ibv_devinfo -d rsiw0: port PORT_ACTIVE" 'state:[[:space:]]+PORT_ACTIVE' ibv_devinfo -d rsiw0
    # libibverbs drops a device no provider claims: without rsiw.driver rsiw0 must vanish,
    # which proves the device above was served by the rsiw provider.
    mv /etc/libibverbs.d/rsiw.driver /tmp/rsiw.driver
    check_no_output "without rsiw.driver ibv_devices does not list rsiw0" '^[[:space:]]*rsiw0[[:space:]]' ibv_devices
    mv /tmp/rsiw.driver /etc/libibverbs.d/rsiw.driver
fi

check "rdma link delete rsiw0" rdma link delete rsiw0
check_no_output "rsiw0 is gone from rdma link" 'rsiw0' rdma link show
check "rmmod rsiw" rmmod rsiw
finish
