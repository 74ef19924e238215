#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-vms: 2
# Two VMs joined by a QEMU socket network (eth1): they reach each other, and siw on VM 0
# serves rping from siw on VM 1 across it (the set-up interop tests build on).
. /rsiw/lib.sh
setup_net
peer=$(peer_addr)
me="10.0.9.$((RSIW_VM_INDEX + 1))"

check "ping $peer over the socket network" retry 30 ping -c 1 -W 1 "$peer"
check "modprobe siw" modprobe siw || finish
check "rdma link add siw0 netdev eth1" rdma link add siw0 type siw netdev eth1 || finish
if [ "$RSIW_VM_INDEX" = 0 ]; then
    check_output "rping server on $me: 3 pings received" 'rdma-ping-2: ' timeout 120 rping -s -a "$me" -C 3 -v
else
    check_output "rping client to $peer: 3 pings" 'rdma-ping-2: ' retry 30 timeout 20 rping -c -a "$peer" -C 3 -v
fi
# Keep answering ARP and pings until the other VM is done with us.
sleep 3
check "rdma link delete siw0" rdma link delete siw0
check "rmmod siw" rmmod siw
finish
