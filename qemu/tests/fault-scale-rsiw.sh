#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 700
# Scale: CONNS (default 500) rdma_cm connections at once, both ends on rsiw0, so
# 2 x CONNS connected RC QPs (1,000 by default), each connection with verified traffic
# (rsiw-load rounds of Write, Read back, Send and FetchAdd/CmpSwap), all held open
# together, then torn down; twice, and a third time when the second looks high.
# Memory (MemTotal - MemAvailable, page cache dropped, read until two readings 2 s apart
# agree within 1 MiB, so RCU callbacks and deferred frees have run) is measured before,
# at the peak and after each round. The first round's end is the starting level, not
# the level before it: the first 1,000 QPs grow the kernel's own caches (slab partial
# lists, socket caches) and, on a KASAN kernel, its quarantine of freed objects (up to
# 1/32 of memory, counted as used), by 25-30 MiB here. A later round finds them grown
# and must leave nothing of its own behind. Readings vary from round to round (second
# round against first: +0.3, +6.3 and +10.7 MiB in three runs with kmemleak silent:
# which freed objects sit in the quarantine, and how full the slabs they pin are), so
# one high reading is not a leak: when the second round ends more than 8 MiB above the
# first, a third round runs, and it must end within 8 MiB of the second. A leak is paid
# every round: what rsiw kept per QP, from 8 KiB up (less than a QP's rings), shows
# 1,000 times over in both; kmemleak, at the end of the run, reports any smaller object
# nothing points to.
. /rsiw/lib.sh
setup_net
CONNS=${RSIW_SCALE_CONNS:-500}
D=rsiw0
P=7480

# round N: the scale round, checked; sets $peak and $end (KiB used).
round() {
    local n=$1 t0 t1 qps rts client server
    t0=$(date +%s)
    rsiw-load server 10.0.2.15:$P --report 30 > /tmp/server.log 2>&1 &
    server=$!
    step "round $n: server listens" wait_tcp_listen $P
    rsiw-load client 10.0.2.15:$P --conns "$CONNS" --rounds 3 --size 2048 --hold 300 --report 10 \
        > /tmp/client.log 2>&1 &
    client=$!
    check "round $n: $CONNS connections up, each with 3 verified rounds" \
        retry 300 grep -q "holding $CONNS connections" /tmp/client.log
    t1=$(date +%s)
    tail -n 2 /tmp/client.log
    qps=$(rdma resource show qp | grep -cw "$D")
    check "round $n: $((2 * CONNS)) QPs on $D at once ($qps, set up in $((t1 - t0)) s)" \
        test "$qps" -ge $((2 * CONNS))
    rts=$(rdma resource show qp | grep -w "$D" | grep -cw RTS)
    check "round $n: all of them connected (RTS: $rts)" test "$rts" -ge $((2 * CONNS))
    peak=$(mem_used_kb)
    kill $client
    check_wait "round $n: the client ends cleanly" $client
    tail -n 1 /tmp/client.log
    check_output "round $n: client: every connection established and closed, every byte right" \
        "established $CONNS closed $CONNS failed 0 setup_failed 0; rounds $((3 * CONNS));.* verify_errors 0;.* hung 0;" \
        cat /tmp/client.log
    check "round $n: every QP gone" retry 60 sh -c "! rdma resource show qp | grep -qw $D"
    kill $server
    check_wait "round $n: the server ends cleanly" $server
    tail -n 1 /tmp/server.log
    check_output "round $n: server: $CONNS connections accepted and closed, every Send right" \
        "accepted $CONNS refused 0 closed $CONNS open 0; sends verified $((3 * CONNS)) bad 0;.* hung 0$" \
        cat /tmp/server.log
    # rdma_cm consumers that pair their i-th connect with the server's i-th
    # request (perftest -R -q N) need the requests of one client in its order.
    check_output "round $n: server: the client's $CONNS connects arrived in the order it made them" \
        "out_of_order 0;" cat /tmp/server.log
    check "round $n: no connection left" retry 30 sh -c "! rdma resource show cm_id | grep -qw $D"
    end=$(mem_settled_kb)
}

dev_up rsiw $D eth0 || finish
ulimit -n 8192
before=$(mem_settled_kb)
round 1
first=$end
echo "memory used: ${before} KiB before, ${peak} KiB at the first peak, ${first} KiB after it"
round 2
second=$end
echo "memory used: ${first} KiB after the first round, ${peak} KiB at the second peak, ${second} KiB after it"
slack=8192
if [ "$second" -le $((first + slack)) ]; then
    pass "memory back to its starting level (${first} -> ${second} KiB, at most +${slack}; peak ${peak})"
else
    echo "memory: the second round ended $((second - first)) KiB above the first; a third round tells noise from a leak"
    round 3
    echo "memory used: ${second} KiB after the second round, ${peak} KiB at the third peak, ${end} KiB after it"
    check "memory back to its level after a third round (${first} -> ${second} -> ${end} KiB, at most +${slack} on the second; peak ${peak})" \
        test "$end" -le $((second + slack))
fi
dev_down rsiw $D
finish
