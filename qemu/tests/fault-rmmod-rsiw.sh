#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 400
# rsiw-soak-timeout: 2400
# Unloading rsiw around applications: `rmmod rsiw` while an application holds the
# device (a verbs context, PD, QPs, a listener) is refused and leaves the device
# working; right after the application exits it succeeds. Then a short loop (LOOPS
# times): modprobe, rdma link add, verified traffic on two connections, the
# applications exit, rmmod with rsiw0 still there. Memory (MemTotal - MemAvailable,
# page cache dropped) is measured before and after the loop; kmemleak checks the rest.
. /rsiw/lib.sh
setup_net
LOOPS=${RSIW_RMMOD_LOOPS:-10}
D=rsiw0
P=7480

# traffic: a server and a client doing 5 verified rounds on 2 connections; both exit.
traffic() {
    rsiw-load server 10.0.2.15:$P > /tmp/server.log 2>&1 &
    s=$!
    wait_tcp_listen $P || { kill $s; wait $s; return 1; }
    rsiw-load client 10.0.2.15:$P --conns 2 --rounds 5 > /tmp/client.log 2>&1
    rc=$?
    kill $s
    wait $s || rc=1
    [ $rc -eq 0 ] && grep -Eq 'rounds 10;.* verify_errors 0;' /tmp/client.log
}

used() {
    sync
    echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
    mem_used_kb
}

dev_up rsiw $D eth0 || finish

# Refused while held.
rsiw-load server 10.0.2.15:$P > /tmp/held.log 2>&1 &
server=$!
step "held: server listens" wait_tcp_listen $P
rsiw-load client 10.0.2.15:$P --conns 2 --rounds 5 --hold 60 > /tmp/hold.log 2>&1 &
client=$!
check "held: client holds 2 connections" retry 60 grep -q holding /tmp/hold.log
check_fails "held: rmmod rsiw is refused" rmmod rsiw
check_output "held: rsiw is still loaded" '^rsiw ' cat /proc/modules
check_output "held: rsiw0 is still there" "$D" rdma dev show
check_output "held: its QPs are still there" "$D" rdma resource show qp
kill $client
check_wait "held: the client ends cleanly" $client
check_output "held: the client's data was right" 'rounds 10;.* verify_errors 0;' cat /tmp/hold.log
check_fails "held (listener only): rmmod rsiw is refused" rmmod rsiw
check "held (listener only): rsiw0 still carries traffic" \
    sh -c "rsiw-load client 10.0.2.15:$P --conns 1 --rounds 5 | grep -Eq 'rounds 5;.* verify_errors 0;'"
kill $server
check_wait "held: the server ends cleanly" $server
# Right after the applications exit (their device files are closed by the time `wait`
# returns), with rsiw0 still there.
check "rmmod rsiw right after the applications exit" rmmod rsiw
check_no_output "no rsiw device left" "$D" rdma dev show

# The loop; memory measured from its second round on (the first loads the binaries).
base=
bad=0
i=0
while [ $i -lt "$LOOPS" ]; do
    i=$((i + 1))
    modprobe rsiw && rdma link add $D type rsiw netdev eth0 || { bad=$((bad + 1)); echo "loop $i: up failed"; break; }
    traffic || { bad=$((bad + 1)); echo "loop $i: traffic failed"; cat /tmp/client.log /tmp/server.log; }
    rmmod rsiw || { bad=$((bad + 1)); echo "loop $i: rmmod failed"; break; }
    [ $i -eq 1 ] && base=$(used)
done
check "$LOOPS rounds of modprobe, rdma link add, verified traffic, rmmod ($i run, $bad failed)" \
    test "$bad" -eq 0 -a "$i" -eq "$LOOPS"
end=$(used)
echo "memory used after round 1: ${base} KiB, after round $i: ${end} KiB"
# KASAN's quarantine (up to 1/32 of memory, counted as used) and the lazily purged
# vmalloc areas of each unloaded module keep freed memory a while: runs grew by 1,780,
# 2,024 and 7,832 KiB over 10 rounds, kmemleak silent. The bound is mem_slack_kb
# (4 MiB plus the quarantine's cap); kmemleak judges leaks.
check_mem_back "its level after round 1" "$base" "$end"
finish
