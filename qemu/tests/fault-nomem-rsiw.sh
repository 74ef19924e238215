#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-flavours: debug
# rsiw-timeout: 300
# rsiw-soak-timeout: 900
# Memory pressure: slab allocations fail (failslab, the kernel's fault injection)
# inside the processes that use rsiw0: an rsiw-load server and clients that open and
# close connections (--churn) and move verified traffic (Write, Read back, Send,
# FetchAdd, CmpSwap). Only those processes' allocations fail (task-filter, their
# /proc/PID/make-it-fail, set once each has started and opened the device), sleeping
# ones included (ignore-gfp-wait N): the verbs
# and rdma_cm calls they make (device context, PD, MR pinning, CQ and QP with their
# rings, the connection set-up down to rsiw's endpoint and socket) and the socket
# sends of their doorbells. First 10 % of the allocations fail, then 1 %, each for
# RSIW_NOMEM_S seconds of traffic (default 15; `RSIW_NOMEM_S=60 cargo xtask test
# fault-nomem` is the long run).
# What must hold: errors reach the processes as failed calls, refused or failed
# connections, error or flush completions; no wrong byte, no work request left
# without its completion (rsiw-load's `hung`), no kernel splat; once the processes
# are gone no rsiw object is left, and with the injection off the device carries
# verified traffic again, rmmod succeeds and kmemleak finds nothing.
# It found that the receives of a connection we closed were never flushed when the
# peer's FIN was lost (rsiw now bounds that wait: Documentation/testing.md, "Memory
# pressure").
. /rsiw/lib.sh
setup_net
D=rsiw0
P=7480
F=/sys/kernel/debug/failslab
[ -d /sys/kernel/debug/failslab ] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
dev_up rsiw $D eth0 || finish
if [ ! -d $F ]; then
    fail "failslab is in the kernel" "no $F (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS)"
    finish
fi
before=$(mem_settled_kb)
echo Y > $F/task-filter
echo N > $F/ignore-gfp-wait
echo 1 > $F/interval
echo 0 > $F/space
echo 1 > $F/verbose

# fail_in PID: from now on PID's slab allocations fail at $F's rate (all its threads).
# Set once the process runs: failing its exec or its dynamic loader tests nothing of
# rsiw.
fail_in() {
    for t in /proc/$1/task/*/make-it-fail; do
        echo 1 > "$t" 2>/dev/null
    done
}

# reap PID SECONDS: waits for PID (a child) at most SECONDS; one still running then has
# its kernel stack and state printed (every thread), is killed, and 1 is returned.
reap() {
    local n=$2
    while kill -0 "$1" 2>/dev/null && [ "$n" -gt 0 ]; do
        sleep 1
        n=$((n - 1))
    done
    if kill -0 "$1" 2>/dev/null; then
        echo "pid $1 still running after $2 s; it and every rsiw-load process:"
        for q in $1 $(pidof rsiw-load); do
            for t in /proc/$q/task/*; do
                echo "pid $q task ${t##*/}"
                grep -h '^State' "$t/status"
                cat "$t/stack"
            done
        done
        kill -9 "$1"
        wait "$1"
        return 1
    fi
    wait "$1"
    return 0
}

S=${RSIW_NOMEM_S:-15}
# phase PCT: S seconds of churning, verified traffic with PCT % of the allocations
# failing, clients started again as they end.
phase() {
    echo "$1" > $F/probability
    # failslab counts `times` down by one per failure it injects: the count, exact
    # (the kernel log is rate-limited and its ring buffer wraps in a long phase).
    echo 1000000 > $F/times
    rsiw-load server 10.0.2.15:$P --seconds $((2 * S + 90)) > /tmp/server-$1.log 2>&1 &
    server=$!
    wait_tcp_listen $P
    fail_in $server
    # Three client slots, each starting a client again whenever the last one ended
    # (most end early, on a failed call), until S seconds have passed; each client
    # opens the device and starts connecting, then its allocations fail (its
    # connections are closed and set up again every 5 rounds).
    t_end=$(($(date +%s) + S))
    i=0
    pids=
    while [ $i -lt 3 ]; do
        (
            : > /tmp/client-$1-$i.log
            while [ "$(date +%s)" -lt $t_end ]; do
                rsiw-load client 10.0.2.15:$P --conns 4 --seconds $S --churn 5 --size 8192 \
                    --expect-failure --reconnect --drain 30 >> /tmp/client-$1-$i.log 2>&1 &
                c=$!
                sleep 2
                fail_in $c
                wait $c
            done
        ) &
        pids="$pids $!"
        i=$((i + 1))
    done
    stuck=0
    for p in $pids; do
        reap "$p" $((2 * S + 120)) || stuck=$((stuck + 1))
    done
    kill $server 2>/dev/null
    reap $server 60 || stuck=$((stuck + 1))
    echo 0 > $F/probability
    n=$((1000000 - $(cat $F/times)))
    echo "phase $1 %: $n allocations failed by injection, client tallies:"
    grep -h '^rsiw-load client: opened' /tmp/client-$1-*.log | head -n 12
    echo "$(grep -h '^rsiw-load client: opened' /tmp/client-$1-*.log | wc -l) client runs"
    # What the processes were told (the numbers in the messages vary: strip them).
    grep -hv '^conn [0-9]* qpn\|^rsiw-load client: opened\|^rsiw-load server: listening' \
        /tmp/client-$1-*.log /tmp/server-$1.log | sed 's/[0-9][0-9]*/N/g' | sort | uniq -c | sort -rn | head -n 20
    grep -h 'not completed' /tmp/client-$1-*.log /tmp/server-$1.log
    check "$1 %: allocations failed in the processes ($n)" test "$n" -gt 0
    check "$1 %: every process ended (none stuck in the kernel)" test "$stuck" -eq 0
    # No client may have seen wrong data or a work request without its completion;
    # a client that stopped on a failed call (exit 2, its message above) still has
    # every posted work request back once its QPs are destroyed.
    logs="/tmp/client-$1-0.log /tmp/client-$1-1.log /tmp/client-$1-2.log"
    check "$1 %: no wrong byte" sh -c "! grep -h 'verify_errors [1-9]' $logs"
    check "$1 %: no hung work request" sh -c "! grep -h 'hung [1-9]' $logs /tmp/server-$1.log"
    check "$1 %: the server saw no wrong Send" sh -c "! grep -h 'bad [1-9]' /tmp/server-$1.log"
    check "$1 %: no QP left once the processes are gone" retry 60 sh -c "! rdma resource show qp | grep -qw $D"
    check "$1 %: no cm_id left" retry 30 sh -c "! rdma resource show cm_id | grep -qw $D"
    for k in mr cq pd; do
        check "$1 %: no $k left" retry 10 sh -c "! rdma resource show $k | grep -qw $D"
    done
}

phase 10
phase 1
echo 0 > $F/probability

# The device after the pressure: verified traffic, then every object gone.
rsiw-load server 10.0.2.15:$P > /tmp/server.log 2>&1 &
server=$!
step "after: server listens" wait_tcp_listen $P
check_output "after: 4 connections, 20 rounds each, every byte right" \
    "established 4 closed 4 failed 0 setup_failed 0; rounds 80;.* verify_errors 0;.* hung 0;" \
    rsiw-load client 10.0.2.15:$P --conns 4 --rounds 20 --size 8192
kill $server
check_wait "after: server ends cleanly" $server
check "after: no QP left" retry 30 sh -c "! rdma resource show qp | grep -qw $D"
after=$(mem_settled_kb)
check_mem_back "its level before the pressure" "$before" "$after"
dev_down rsiw $D
finish
