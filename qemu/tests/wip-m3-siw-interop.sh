#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-vms: 2
# rsiw-timeout: 600
# rsiw against siw across two VMs (socket network on eth1): VM 0 runs siw0, VM 1 runs
# rsiw0. First siw serves and rsiw is the rping client, then rsiw serves and siw is
# the client: 20 pings each (Send, RDMA Read and RDMA Write, verified with -V).
. /rsiw/lib.sh
setup_net
peer=$(peer_addr)
me="10.0.9.$((RSIW_VM_INDEX + 1))"
COUNT=20

if [ "$RSIW_VM_INDEX" = 0 ]; then T=siw; else T=rsiw; fi
D=${T}0
check "ping $peer over the socket network" retry 30 ping -c 1 -W 1 "$peer"
dev_up "$T" "$D" eth1 || finish

# serve LABEL / client LABEL: one rping run with this VM on that side.
serve() {
    timeout 200 rping -s -a "$me" -C $COUNT -v -V > /tmp/rping-$1.log 2>&1 &
    server=$!
    check "$1: rping server listens on $me ($D)" wait_rdma_listen
    check "$1: tell the peer the server is up" signal_peer 7000
    wait $server
    rc=$?
    tail -n 3 /tmp/rping-$1.log
    if [ $rc -eq 0 ]; then pass "$1: rping server ($D) exits 0"; else fail "$1: rping server ($D) exits 0" "exit $rc: $(tail -n 1 /tmp/rping-$1.log)"; fi
    check_output "$1: server ($D) got $COUNT verified pings" "^ok $COUNT\$" rping_payloads_ok 'server ping data: ' /tmp/rping-$1.log
}
client() {
    check "$1: the peer's server is up" wait_peer 7000
    timeout 200 rping -c -a "$peer" -C $COUNT -v -V > /tmp/rping-$1.log 2>&1
    rc=$?
    tail -n 3 /tmp/rping-$1.log
    if [ $rc -eq 0 ]; then pass "$1: rping client ($D) exits 0"; else fail "$1: rping client ($D) exits 0" "exit $rc: $(tail -n 1 /tmp/rping-$1.log)"; fi
    check_output "$1: client ($D) got $COUNT verified pings" "^ok $COUNT\$" rping_payloads_ok 'ping data: ' /tmp/rping-$1.log
}

if [ "$RSIW_VM_INDEX" = 0 ]; then serve siw-serves; else client siw-serves; fi
sleep 2
if [ "$RSIW_VM_INDEX" = 1 ]; then serve rsiw-serves; else client rsiw-serves; fi
sleep 2
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down "$T" "$D"
finish
