#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `cargo xtask run`: load rsiw, create rsiw0 on eth0, show what verbs see of it, then
# use it: an rping exchange, an RDMA Write latency and RFC 7306 atomics (perftest -R).
. /rsiw/lib.sh
setup_net
require_rsiw "rsiw.ko is in the image" || finish
check "modprobe rsiw" modprobe rsiw || finish
check "rdma link add rsiw0 type rsiw netdev eth0" rdma link add rsiw0 type rsiw netdev eth0 || finish
rdma link show
require_provider "rsiw provider is in the image" || finish
check "ibv_devices" ibv_devices
check "ibv_devinfo -v -d rsiw0" ibv_devinfo -v -d rsiw0

echo "== rping on rsiw0: 10 pings (Send, RDMA Read, RDMA Write of 64 B), verified"
timeout 120 rping -s -a 10.0.2.15 -C 10 -V > /tmp/run-rping-server.log 2>&1 &
srv=$!
wait_rdma_listen
check "rping -c -a 10.0.2.15 -C 10 -v -V" timeout 120 rping -c -a 10.0.2.15 -C 10 -v -V
wait $srv

echo "== ib_write_lat -R -s 8 on rsiw0 (#bytes #iterations t_min t_max t_typical … usec)"
check_output "ib_write_lat -R on rsiw0" '^[[:space:]]*8[[:space:]]' \
    perftest_run ib_write_lat rsiw0 8 200 18801 -R

echo "== RFC 7306 atomics on rsiw0: each iteration is an Atomic Request (DDP QN 1) and its Response (QN 3)"
if ibv_devinfo -v -d rsiw0 | grep -Eq 'atomic_cap:[[:space:]]+ATOMIC_(HCA|GLOB)'; then
    check_output "ib_atomic_lat -R -A FETCH_AND_ADD on rsiw0" '^[[:space:]]*8[[:space:]]' \
        perftest_run ib_atomic_lat rsiw0 "" 200 18802 -R -A FETCH_AND_ADD
    check_output "ib_atomic_bw -R -A CMP_AND_SWAP on rsiw0" '^[[:space:]]*8[[:space:]]' \
        perftest_run ib_atomic_bw rsiw0 "" 500 18803 -R -A CMP_AND_SWAP
else
    echo "rsiw0 reports atomic_cap NONE: no atomics to show"
fi
finish
