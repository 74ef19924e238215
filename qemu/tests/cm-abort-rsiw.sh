#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: cm
# rsiw-timeout: 300
# Connections that end without a disconnect, on rsiw0 (both ends on 10.0.2.15): a
# client killed mid-run (its QP is destroyed while connected: RST), and a server killed
# mid-run. The surviving end must learn of it (DISCONNECTED) and exit; nothing may be
# left behind, and the device and module must go away afterwards.
. /rsiw/lib.sh
setup_net
dev_up rsiw rsiw0 eth0 || finish

# killed_end VICTIM: runs an rping pair with many pings, kills VICTIM (server|client)
# with SIGKILL after 5 s, and checks that the other end exits within 30 s.
killed_end() {
    timeout 120 rping -s -a 10.0.2.15 -C 100000 -v > /tmp/s.log 2>&1 &
    s=$!
    step "$1 killed: server listens" wait_rdma_listen
    timeout 120 rping -c -a 10.0.2.15 -C 100000 -v > /tmp/c.log 2>&1 &
    c=$!
    sleep 5
    if [ "$1" = client ]; then
        victim=$c; other=$s; log=/tmp/s.log
    else
        victim=$s; other=$c; log=/tmp/c.log
    fi
    kill -9 $victim
    n=0
    while kill -0 $other 2>/dev/null && [ $n -lt 30 ]; do sleep 1; n=$((n + 1)); done
    if kill -0 $other 2>/dev/null; then
        fail "$1 killed: the other end exits" "still running after 30 s"
        kill -9 $other
    else
        pass "$1 killed: the other end exits (${n} s)"
    fi
    wait
    tail -n 3 $log
    check_output "$1 killed: pings flowed before the kill" 'ping data: rdma-ping-1: ' cat $log
    check_output "$1 killed: the other end saw DISCONNECTED" 'DISCONNECT EVENT' cat $log
    check_no_output "$1 killed: no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w rsiw0 | grep -v '^$'"
    check_no_output "$1 killed: no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
}
killed_end client
killed_end server
dev_down rsiw rsiw0
finish
