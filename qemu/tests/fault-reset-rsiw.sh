#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 600
# Peer resets in the middle of traffic (rsiw-load: rounds of Write, Read back, Send and
# FetchAdd/CmpSwap on several connections, all on rsiw0): the server killed (SIGKILL),
# the client killed, the connections' sockets destroyed under rsiw (`ss -K`), and a
# forged RST from outside (rsiw-rawpeer rst). Each time every work request the survivor
# had posted completes (flushed or failed), it gets DISCONNECTED, no data is wrong,
# nothing hangs, and no QP or connection is left.
. /rsiw/lib.sh
setup_net
dev_up rsiw rsiw0 eth0 || finish
D=rsiw0
P=7480
# Long enough to still run when the fault comes; the fault ends it.
LOAD="--ops swra --seconds 120 --size 16384 --expect-failure --drain 30"

# start_server: an rsiw-load server on port P; its pid in $server.
start_server() {
    rsiw-load server 10.0.2.15:$P > /tmp/server.log 2>&1 &
    server=$!
    step "$1: server listens" wait_tcp_listen $P
}

# start_client WHAT N: N connections of traffic; returns once all are up and have run
# for a while. Its pid in $client, its output in /tmp/client.log.
start_client() {
    rsiw-load client 10.0.2.15:$P --conns $2 $LOAD --report 1 > /tmp/client.log 2>&1 &
    client=$!
    check "$1: $2 connections up" retry 60 sh -c "[ \$(grep -c '^conn .* qpn' /tmp/client.log) -ge $2 ]"
    # Traffic on all of them (the rounds counter moves).
    retry 30 sh -c "grep -q 'rounds [1-9][0-9][0-9]' /tmp/client.log"
}

# survivor WHAT LOG N: the process that stayed saw N connections fail, each drained.
survivor_client() {
    check_output "$1: the client saw $2 connections fail, every WR completed, DISCONNECTED each time" \
        "failed $2 setup_failed 0;.* verify_errors 0;.* disconnects $2; hung 0;" cat /tmp/client.log
    check_no_output "$1: the client saw no wrong data" 'verify_errors [1-9]' cat /tmp/client.log
}

no_leftovers() {
    check "$1: no QP left" retry 20 sh -c "! rdma resource show qp | grep -qw $D"
    check "$1: no connection left" retry 20 sh -c "! rdma resource show cm_id | grep -v LISTEN | grep -qw $D"
}

# 1. The server is killed: the client's connections fail.
stats_save $D /tmp/s1
start_server "server killed"
start_client "server killed" 4
kill -9 $server
wait $server
check_wait "server killed: the client ends (exit 0 with --expect-failure)" $client
cat /tmp/client.log | tail -n 3
survivor_client "server killed" 4
a=$(stat_delta $D /tmp/s1 cm_aborted)
check "server killed: cm_aborted counts the 8 ends ($a)" test "$a" -ge 8
no_leftovers "server killed"

# 2. The client is killed: the server drains its side of each connection.
start_server "client killed"
start_client "client killed" 4
kill -9 $client
wait $client
check "client killed: every server connection drained" \
    retry 30 sh -c "! rdma resource show qp | grep -qw $D"
kill $server
wait $server
cat /tmp/server.log
check_output "client killed: the server drained all 4 and saw no wrong Send" \
    'accepted 4 refused 0 closed 4 open 0; sends verified [0-9]+ bad 0;.* hung 0$' cat /tmp/server.log
no_leftovers "client killed"

# 3. The sockets under the client's connections are destroyed (SOCK_DESTROY, as `ss -K`
#    does): rsiw's kernel sockets are reset under it.
start_server "ss -K"
start_client "ss -K" 4
check_output "ss -K: the four sockets are destroyed" "$P" ss -K -t dst 10.0.2.15 dport = :$P
check_wait "ss -K: the client ends" $client
survivor_client "ss -K" 4
kill $server
wait $server
check_output "ss -K: the server drained its side" 'closed 4 open 0;.* bad 0;.* hung 0$' cat /tmp/server.log
no_leftovers "ss -K"

# 4. A forged RST from outside both ends resets the server's side of two connections.
start_server "raw RST"
start_client "raw RST" 2
# The forged RST lands only when it hits the sequence number TCP expects at that
# moment (learnt by sniffing); under steady traffic it can miss a connection for the
# whole minute. What landed is judged: every reset connection must fail cleanly.
rsiw-rawpeer rst $P 2 60 > /tmp/rst.log 2>&1
cat /tmp/rst.log
# The load has nothing more to show: it stops (the client closes what is still up).
kill $client 2>/dev/null
n=$(sed -n 's/^reset \([0-9]*\) of 2.*/\1/p' /tmp/rst.log)
check_wait "raw RST: the client ends" $client
case "$n" in
1 | 2)
    pass "raw RST: $n of 2 connections reset"
    check_output "raw RST: the client saw $n connections fail, every WR completed, DISCONNECTED each time" \
        "failed $n setup_failed 0;.* verify_errors 0;.* disconnects 2; hung 0;" cat /tmp/client.log
    check_no_output "raw RST: the client saw no wrong data" 'verify_errors [1-9]' cat /tmp/client.log
    ;;
*) skip "raw RST: connections reset" "the forged RST matched no connection within 60 s (rsiw-rawpeer: $(tail -n 1 /tmp/rst.log))" ;;
esac
kill $server
wait $server
check_output "raw RST: the server drained its side" 'closed 2 open 0;.* bad 0;.* hung 0$' cat /tmp/server.log
no_leftovers "raw RST"

check_output "rsiw0 still works: 20 rounds, every byte right" 'rounds 20;.* verify_errors 0;' \
    sh -c "rsiw-load server 10.0.2.15:$P & s=\$!; sleep 1; rsiw-load client 10.0.2.15:$P --conns 2 --rounds 10; kill \$s; wait \$s"
dev_down rsiw $D
finish
