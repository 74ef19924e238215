#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: conn
# rsiw-timeout: 400
# The link under rsiw0 goes away during traffic (rsiw-load: Write, Read back, Send and
# FetchAdd/CmpSwap on several connections, every byte checked, both ends on rsiw0):
# 1. eth0 down for 3 s and up again: the port reports DOWN then ACTIVE, link_downed
#    counts it, and the traffic goes on (a connection that fails must complete all its
#    work requests and get DISCONNECTED; --reconnect replaces it) with no wrong byte and
#    nothing hung. Both ends are in this VM: their TCP runs over the local route, which
#    eth0 going down does not take away, so in the runs seen the traffic never stalled
#    (a flap that stalls TCP needs the two-VM setup).
# 2. `rdma link delete rsiw0` under load: both applications get DEVICE_REMOVAL, every
#    work request completes, they release the device and the delete returns; rsiw0 is
#    then created again on eth0 and carries verified traffic.
. /rsiw/lib.sh
setup_net
dev_up rsiw rsiw0 eth0 || finish
D=rsiw0
P=7480
S=/sys/class/infiniband/$D/ports/1/state

rsiw-load server 10.0.2.15:$P > /tmp/server.log 2>&1 &
server=$!
step "server listens" wait_tcp_listen $P

# 1. A link flap in the middle of the traffic.
stats_save $D /tmp/s1
rsiw-load client 10.0.2.15:$P --conns 4 --seconds 40 --expect-failure --reconnect --drain 30 \
    --report 1 > /tmp/flap.log 2>&1 &
client=$!
check "flap: 4 connections up" retry 60 sh -c "[ \$(grep -c '^conn .* qpn' /tmp/flap.log) -ge 4 ]"
retry 30 sh -c "grep -q 'rounds [1-9][0-9][0-9]' /tmp/flap.log"
ip link set eth0 down
check_output "flap: port DOWN with eth0 down" '^1: DOWN$' cat $S
sleep 3
before=$(grep 'rounds' /tmp/flap.log | tail -n 1 | sed 's/.* rounds \([0-9]*\).*/\1/')
ip link set eth0 up
check "flap: port ACTIVE again" retry 10 grep -q ACTIVE $S
# The traffic goes on: 100 more rounds within 30 s of the link coming back.
check "flap: traffic goes on after the link is back (from round $before)" retry 30 sh -c \
    "[ \$(grep rounds /tmp/flap.log | tail -n 1 | sed 's/.* rounds \([0-9]*\).*/\1/') -ge $((before + 100)) ]"
kill $client
check_wait "flap: the client ends cleanly (no wrong data, nothing hung)" $client
tail -n 3 /tmp/flap.log
check_output "flap: every byte checked right, nothing hung" 'verify_errors 0;.* hung 0;' cat /tmp/flap.log
a=$(stat_delta $D /tmp/s1 link_downed)
check "flap: link_downed +1 ($a)" test "$a" = 1

# 2. rdma link delete under load.
rsiw-load client 10.0.2.15:$P --conns 4 --seconds 120 --expect-failure --drain 30 \
    --report 1 > /tmp/del.log 2>&1 &
client=$!
check "delete: 4 connections up" retry 60 sh -c "[ \$(grep -c '^conn .* qpn' /tmp/del.log) -ge 4 ]"
retry 30 sh -c "grep -q 'rounds [1-9][0-9][0-9]' /tmp/del.log"
check "delete: rdma link delete rsiw0 returns under load" timeout 60 rdma link delete $D
check_no_output "delete: rsiw0 is gone" "$D" rdma dev show
check_wait "delete: the client ends (every WR completed, nothing hung, no wrong data)" $client
tail -n 3 /tmp/del.log
check_output "delete: the client's tally" 'verify_errors 0;.* hung 0;' cat /tmp/del.log
server_saw_removal $server /tmp/server.log

# The device again, on the same netdev, with traffic.
check "again: rdma link add $D type rsiw netdev eth0" rdma link add $D type rsiw netdev eth0
check "again: port ACTIVE" retry 10 grep -q ACTIVE $S
check_output "again: 20 rounds on 2 connections, every byte right" 'rounds 20;.* verify_errors 0;' \
    sh -c "rsiw-load server 10.0.2.15:$P & s=\$!; sleep 1; rsiw-load client 10.0.2.15:$P --conns 2 --rounds 10; kill \$s; wait \$s"
check "no QP left" retry 20 sh -c "! rdma resource show qp | grep -qw $D"
dev_down rsiw $D
finish
