#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-vms: 2
# rsiw-group: siw-pairs
# rsiw-requires: datapath siw
# rsiw-timeout: 600
# RFC 7306 §1.1 interop with a peer that has no atomics: siw on VM 0 exposes a region with
# remote atomic access (rsiw-verbs-test --atomic-target), rsiw on VM 1 sends it a FetchAdd
# (case atomic-peer-refuses). The rsiw requester must get an error completion and
# DISCONNECTED (siw's Terminate, or a flush), the siw side must see the connection end
# with its memory untouched, no hang, nothing left behind on either side.
. /rsiw/lib.sh
setup_net
peer=$(peer_addr)
me=10.0.9.$((RSIW_VM_INDEX + 1))
if [ "$RSIW_VM_INDEX" = 0 ]; then T=siw; else T=rsiw; fi
D=${T}0
P=7480
step "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
dev_up "$T" "$D" eth1 || finish
# rsiw initiates client-server (no RTR): siw 6.12's RTR responder path has its own lockdep
# report (see perftest-siw-interop.sh).
[ "$T" = rsiw ] && check "rsiw: mpa_peer_to_peer=N" sh -c 'echo N > /sys/module/rsiw/parameters/mpa_peer_to_peer'

if [ "$T" = siw ]; then
    timeout 120 rsiw-verbs-test --atomic-target "$me:$P" > /tmp/target.log 2>&1 &
    tgt=$!
    wait_tcp_listen $P && signal_peer 7201
    wait $tgt
    rc=$?
    cat /tmp/target.log
    if [ $rc -eq 0 ]; then pass "siw: connection ended, target memory untouched"
    else fail "siw: connection ended, target memory untouched" "exit $rc: $(tail -n 1 /tmp/target.log)"; fi
else
    wait_peer 7201
    dmesg -c > /dev/null
    timeout 120 rsiw-verbs-test --client "$peer:$P" --dev "$D" --tag rsiw-siw \
        --case atomic-peer-refuses --results /tmp/rsiw-results
    rc=$?
    dmesg | grep rsiw
    if [ $rc -ne 124 ]; then pass "rsiw: client finished (exit $rc), no hang"; else fail "rsiw: client finished, no hang" "timed out"; fi
fi
sleep 3
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
dev_down "$T" "$D"
finish
