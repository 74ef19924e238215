#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 300
# rsiw-soak-timeout: 5400
# Both ends killed in the middle of their traffic, then the device and the module go,
# ROUNDS times (RSIW_KILL_ROUNDS, default 3; `cargo xtask soak faults` runs 200). Each
# round: modprobe rsiw, rdma link add rsiw0, an rsiw-load server and client on rsiw0
# (4 connections of Write, Read back, Send, FetchAdd and CmpSwap, every byte checked)
# until the client has reported verified rounds with no wrong byte, `kill -9` of both
# ends at once, `rdma link delete rsiw0`, `rmmod rsiw`. Every step must succeed in
# every round; KASAN, lockdep and kmemleak judge the rest (a splat fails the run).
# Even rounds load the module with tx_zcopy_min=4096 and move 64 KiB per operation:
# the Writes and Sends go zero-copy (a 4 KiB one fits one FPDU and is framed behind
# others, copied), so the kill tears down QPs whose WQEs wait for TCP's release.
# Memory is compared between the end of the first round and the end of the last.
. /rsiw/lib.sh
setup_net
ROUNDS=${RSIW_KILL_ROUNDS:-3}
D=rsiw0
P=7490

# The last progress line of the client (`… rounds N verify_errors E …`).
progress() {
    grep 'rsiw-load client: t ' /tmp/kill-client.log | tail -n 1
}

# Traffic has run: at least 10 rounds verified, none wrong.
traffic_seen() {
    progress | grep -Eq 'rounds ([1-9][0-9]+) verify_errors 0 '
}

# round I: one round; prints what failed and returns 1, or returns 0.
round() {
    zc=
    size=4096
    [ $(($1 % 2)) -eq 0 ] && zc=tx_zcopy_min=4096 size=65536
    modprobe rsiw $zc || { echo "round $1: modprobe $zc failed"; return 1; }
    rdma link add $D type rsiw netdev eth0 || { echo "round $1: link add failed"; return 1; }
    rsiw-load server 10.0.2.15:$P > /tmp/kill-server.log 2>&1 &
    k_server=$!
    k_rc=0
    if wait_tcp_listen $P; then
        rsiw-load client 10.0.2.15:$P --conns 4 --size $size --seconds 900 --expect-failure --report 1 \
            > /tmp/kill-client.log 2>&1 &
        k_client=$!
        retry 120 traffic_seen || { echo "round $1: no verified traffic: $(progress)"; k_rc=1; }
        if [ -n "$zc" ]; then
            held=$(rdma statistic show link $D/1 | tr -s ' ' '\n' |
                awk 'prev == "tx_zcopy_held" { print; exit } { prev = $0 }')
            echo "round $1: tx_zcopy_held ${held:-none}"
            [ "${held:-0}" -gt 0 ] || { echo "round $1: nothing went zero-copy"; k_rc=1; }
        fi
        kill -9 $k_client $k_server
        wait $k_client
        wait $k_server
    else
        echo "round $1: the server does not listen"
        kill -9 $k_server
        wait $k_server
        k_rc=1
    fi
    [ $k_rc -eq 0 ] || { cat /tmp/kill-server.log /tmp/kill-client.log; }
    timeout 60 rdma link delete $D || { echo "round $1: link delete failed"; return 1; }
    rmmod rsiw || { echo "round $1: rmmod failed"; return 1; }
    return $k_rc
}

# The device is not up between rounds: the first round loads the module.
grep -q '^rsiw ' /proc/modules && rmmod rsiw
bad=0
i=0
base=
while [ $i -lt "$ROUNDS" ]; do
    i=$((i + 1))
    if ! round $i; then
        bad=$((bad + 1))
        # A module or a device left behind stops the loop: the next round cannot run.
        grep -q '^rsiw ' /proc/modules && break
    fi
    [ $i -eq 1 ] && base=$(mem_settled_kb)
    [ $((i % 10)) -eq 0 ] && echo "round $i of $ROUNDS done, $bad failed"
done
check "$ROUNDS rounds of traffic, kill -9 of both ends, rdma link delete, rmmod ($i run, $bad failed)" \
    test "$bad" -eq 0 -a "$i" -eq "$ROUNDS"
check_no_output "rsiw is not loaded at the end" '^rsiw ' cat /proc/modules
end=$(mem_settled_kb)
echo "memory used after round 1: ${base} KiB, after round $i: ${end} KiB"
# As in fault-rmmod-rsiw.sh: KASAN's quarantine and lazily purged vmalloc areas keep
# freed memory a while (mem_slack_kb); kmemleak judges leaks.
check_mem_back "its level after round 1" "$base" "$end"
finish
