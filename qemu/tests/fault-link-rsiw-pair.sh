#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-vms: 2
# rsiw-group: rsiw-pairs
# rsiw-timeout: 900
# The link between two rsiw hosts goes away under traffic (rsiw-load, VM 1's client to
# VM 0's server over eth1: Write, Read back, Send, FetchAdd and CmpSwap on 4
# connections, every byte checked). Unlike fault-link-rsiw.sh, where both ends share
# the VM's local route, here the flap stops the bytes:
# 1. VM 1's eth1 down for 5 s: its port reports DOWN, the traffic stalls (no round
#    completes while the link is down), the port comes back ACTIVE, TCP retransmits and
#    the same connections go on (no connection fails, no wrong byte, nothing hung);
#    link_downed counts the flap.
# 2. `rdma link delete rsiw0` on VM 0 under that traffic: the server gets
#    DEVICE_REMOVAL and the delete returns; on VM 1 every connection ends with its
#    work requests completed and DISCONNECTED, no wrong byte, nothing hung.
# 3. rsiw0 is created again on VM 0 and carries verified traffic from VM 1.
. /rsiw/lib.sh
setup_net
ip link set eth1 mtu 9000
peer=$(peer_addr)
D=rsiw0
P=7480
S=/sys/class/infiniband/$D/ports/1/state
step "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
dev_up rsiw "$D" eth1 || finish

# rounds FILE: the last round count rsiw-load's --report printed (0 before it).
rounds() {
    r=$(grep ' rounds ' "$1" | tail -n 1 | sed 's/.* rounds \([0-9]*\).*/\1/')
    echo "${r:-0}"
}

# rounds_ge FILE N: FILE's client has done at least N rounds.
rounds_ge() {
    [ "$(rounds "$1")" -ge "$2" ]
}

if [ "$RSIW_VM_INDEX" = 0 ]; then
    rsiw-load server 10.0.9.1:$P > /tmp/server.log 2>&1 &
    server=$!
    step "server listens" wait_tcp_listen $P
    signal_peer 7501
    step "flap: the peer's traffic went on after the flap" wait_peer 7502 300
    step "delete: the peer's traffic runs" wait_peer 7503 300
    check "delete: rdma link delete $D returns under load" timeout 60 rdma link delete $D
    check_no_output "delete: $D is gone" "$D" rdma dev show
    server_saw_removal $server /tmp/server.log
    check "again: rdma link add $D type rsiw netdev eth1" rdma link add $D type rsiw netdev eth1
    check "again: port ACTIVE" retry 10 grep -q ACTIVE $S
    rsiw-load server 10.0.9.1:$P > /tmp/server2.log 2>&1 &
    server=$!
    step "again: server listens" wait_tcp_listen $P
    signal_peer 7504
    step "again: the peer's client is done" wait_peer 7505 300
    kill $server
    check_wait "again: the server ends cleanly" $server
    check_output "again: the server: every Send right" "closed 2 open 0; sends verified 20 bad 0;.* hung 0$" \
        tail -n 1 /tmp/server2.log
else
    step "the peer's server listens" wait_peer 7501 300
    stats_save $D /tmp/s1
    rsiw-load client "$peer:$P" --conns 4 --seconds 600 --report 1 > /tmp/flap.log 2>&1 &
    client=$!
    check "flap: 4 connections up" retry 60 sh -c "[ \$(grep -c '^conn .* qpn' /tmp/flap.log) -ge 4 ]"
    check "flap: 100 rounds before the flap" retry 120 rounds_ge /tmp/flap.log 100
    ip link set eth1 down
    check_output "flap: port DOWN with eth1 down" '^1: DOWN$' cat $S
    sleep 2
    r1=$(rounds /tmp/flap.log)
    sleep 3
    r2=$(rounds /tmp/flap.log)
    check "flap: no round completes while the link is down ($r1 -> $r2)" test "$r1" = "$r2"
    ip link set eth1 up
    check "flap: port ACTIVE again" retry 10 grep -q ACTIVE $S
    check "flap: the same connections go on (100 rounds after round $r2)" \
        retry 90 rounds_ge /tmp/flap.log $((r2 + 100))
    kill $client
    check_wait "flap: the client ends cleanly" $client
    tail -n 1 /tmp/flap.log
    check_output "flap: no connection failed, every byte right, nothing hung" \
        "opened 4 established 4 closed 4 failed 0 setup_failed 0;.* verify_errors 0;.* hung 0;" tail -n 1 /tmp/flap.log
    a=$(stat_delta $D /tmp/s1 link_downed)
    check "flap: link_downed +1 ($a)" test "$a" = 1
    signal_peer 7502

    rsiw-load client "$peer:$P" --conns 4 --seconds 600 --expect-failure --drain 30 --report 1 \
        > /tmp/del.log 2>&1 &
    client=$!
    check "delete: 4 connections up" retry 60 sh -c "[ \$(grep -c '^conn .* qpn' /tmp/del.log) -ge 4 ]"
    check "delete: 100 rounds" retry 120 rounds_ge /tmp/del.log 100
    signal_peer 7503
    check_wait "delete: the client ends (every WR completed, nothing hung, no wrong data)" $client 120
    tail -n 3 /tmp/del.log
    check_output "delete: all 4 connections ended with DISCONNECTED, nothing hung, no wrong byte" \
        "failed 4 setup_failed 0;.* verify_errors 0;.* disconnects 4; hung 0;" tail -n 1 /tmp/del.log
    step "again: the peer's new server listens" wait_peer 7504 300
    check_output "again: 20 rounds on 2 connections, every byte right" \
        "established 2 closed 2 failed 0 setup_failed 0; rounds 20;.* verify_errors 0;" \
        rsiw-load client "$peer:$P" --conns 2 --rounds 10
    signal_peer 7505
fi
check "no QP left" retry 20 sh -c "! rdma resource show qp | grep -qw $D"
dev_down rsiw $D
finish
