#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 500
# Scale: CONNS (default 500) rdma_cm connections at once, both ends on rsiw0, so
# 2 x CONNS connected RC QPs (1,000 by default), each connection with verified traffic
# (rsiw-load rounds of Write, Read back, Send and FetchAdd/CmpSwap), all held open
# together, then torn down. Memory (MemTotal - MemAvailable, page cache dropped) is
# measured before and after; it must come back to its starting level.
. /rsiw/lib.sh
setup_net
CONNS=${RSIW_SCALE_CONNS:-500}
D=rsiw0
P=7480

used() {
    sync
    echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
    mem_used_kb
}

dev_up rsiw $D eth0 || finish
ulimit -n 8192
# A warm-up connection first, so that the binaries and libraries are in memory.
rsiw-load server 10.0.2.15:$P > /tmp/warm.log 2>&1 &
s=$!
wait_tcp_listen $P && rsiw-load client 10.0.2.15:$P --rounds 2 > /dev/null 2>&1
kill $s
wait $s
start=$(used)

t0=$(date +%s)
rsiw-load server 10.0.2.15:$P --report 30 > /tmp/server.log 2>&1 &
server=$!
check "server listens" wait_tcp_listen $P
rsiw-load client 10.0.2.15:$P --conns "$CONNS" --rounds 3 --size 2048 --hold 300 --report 10 \
    > /tmp/client.log 2>&1 &
client=$!
check "$CONNS connections up, each with 3 verified rounds" \
    retry 300 grep -q "holding $CONNS connections" /tmp/client.log
t1=$(date +%s)
tail -n 2 /tmp/client.log
qps=$(rdma resource show qp | grep -cw "$D")
check "$((2 * CONNS)) QPs on $D at once ($qps, set up in $((t1 - t0)) s)" test "$qps" -ge $((2 * CONNS))
rts=$(rdma resource show qp | grep -w "$D" | grep -cw RTS)
check "all of them connected (RTS: $rts)" test "$rts" -ge $((2 * CONNS))
peak=$(mem_used_kb)
echo "memory used: ${start} KiB before, ${peak} KiB with $qps QPs"
kill $client
check_wait "the client ends cleanly" $client
tail -n 1 /tmp/client.log
check_output "client: every connection established and closed, every byte right" \
    "established $CONNS closed $CONNS failed 0 setup_failed 0; rounds $((3 * CONNS));.* verify_errors 0;.* hung 0;" \
    cat /tmp/client.log
check "every QP gone" retry 60 sh -c "! rdma resource show qp | grep -qw $D"
kill $server
check_wait "the server ends cleanly" $server
tail -n 1 /tmp/server.log
check_output "server: $CONNS connections accepted and closed, every Send right" \
    "accepted $CONNS refused 0 closed $CONNS open 0; sends verified $((3 * CONNS)) bad 0;.* hung 0$" \
    cat /tmp/server.log
check "no connection left" retry 30 sh -c "! rdma resource show cm_id | grep -qw $D"
end=$(used)
echo "memory used: ${start} KiB before, ${peak} KiB at the peak, ${end} KiB after"
slack=$(mem_slack_kb)
check "memory back to its starting level (${start} -> ${end} KiB, at most +${slack}; peak ${peak})" \
    test "$end" -le $((start + slack))
dev_down rsiw $D
finish
