#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: siw
# rsiw-vms: 2
# rsiw-group: rsiw-pairs
# Two VMs joined by a QEMU socket network (eth1): they reach each other, and siw on VM 1
# runs rping against siw on VM 0 across it (the set-up interop tests build on).
. /rsiw/lib.sh
setup_net
peer=$(peer_addr)
me="10.0.9.$((RSIW_VM_INDEX + 1))"

check "ping $peer over the socket network" retry 30 ping -c 1 -W 1 "$peer"
step "modprobe siw" modprobe siw || finish
step "rdma link add siw0 netdev eth1" rdma link add siw0 type siw netdev eth1 || finish
if [ "$RSIW_VM_INDEX" = 0 ]; then
    timeout 120 rping -s -a "$me" -C 3 -v > /tmp/rping.log 2>&1 &
    server=$!
    step "rping server listens on $me" wait_rdma_listen
    step "tell VM 1 the server is up" signal_peer 7000
    wait $server
    rc=$?
    cat /tmp/rping.log
    if [ $rc -ne 0 ]; then
        fail "rping server: 3 pings received" "rping -s exited $rc"
    elif grep -q 'rdma-ping-2: ' /tmp/rping.log; then
        pass "rping server: 3 pings received"
    else
        fail "rping server: 3 pings received" "no rdma-ping-2 in its output"
    fi
else
    step "VM 0 says its rping server is up" wait_peer 7000
    check_output "rping client to $peer: 3 pings" 'rdma-ping-2: ' timeout 60 rping -c -a "$peer" -C 3 -v
fi
# Keep answering until the other VM is done with us.
sleep 2
step "rdma link delete siw0" rdma link delete siw0
step "rmmod siw" rmmod siw
finish
