#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3
# rsiw-requires: siw
# rsiw-group: basic
# The kernel's siw (rsiw's reference peer) works in this image: siw0 on eth0, rping to itself.
. /rsiw/lib.sh
setup_net

step "modprobe siw" modprobe siw || finish
step "rdma link add siw0 type siw netdev eth0" rdma link add siw0 type siw netdev eth0 || finish
check_output "ibv_devinfo -d siw0: transport iWARP" 'transport:[[:space:]]+iWARP' ibv_devinfo -d siw0

timeout 120 rping -s -a 10.0.2.15 -C 3 -v > /tmp/rping-server.log 2>&1 &
server=$!
step "rping server listens" wait_rdma_listen
check_output "rping client: 3 pings to 10.0.2.15" 'rdma-ping-2: ' timeout 60 rping -c -a 10.0.2.15 -C 3 -v
wait $server
rc=$?
cat /tmp/rping-server.log
if [ $rc -eq 0 ]; then pass "rping server exits 0"; else fail "rping server exits 0" "exit $rc"; fi

step "rdma link delete siw0" rdma link delete siw0
step "rmmod siw" rmmod siw
finish
