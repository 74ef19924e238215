#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: cm
# rsiw-timeout: 400
# Peers that never finish their MPA Request (RFC 5044 §7.1) against an rsiw responder:
# 300 connections trickle a valid Request (512 octets of private data) one octet per
# 500 ms. Each is reset when its frame deadline (mpa_timeout_ms, whole frame) passes,
# and meanwhile an honest rping connects and pings: no work item waits for a slow peer.
# Then the bound on connections in setup per listener (mpa_max_pending), a connection
# request the ULP never answers (mpa_accept_timeout_ms), and the listener torn down with
# connections in setup.
. /rsiw/lib.sh
setup_net
dev_up rsiw rsiw0 eth0 || finish
P=/sys/module/rsiw/parameters
check_output "mpa_max_pending defaults to 1024" '^1024$' cat $P/mpa_max_pending
check_output "mpa_accept_timeout_ms defaults to 60000" '^60000$' cat $P/mpa_accept_timeout_ms
ulimit -n 4096
KEYREP=4d504120494420526570204672616d65

# 1. 300 trickling connections, an 8 s frame deadline, an honest rping in between. The
# server is persistent (-P): it keeps listening after the honest client, so that the
# trickling connections meet their deadline, not the listener's end.
echo 8000 > $P/mpa_timeout_ms
timeout 120 rping -s -P -a 10.0.2.15 -v > /tmp/rping-s.log 2>&1 &
server=$!
step "rsiw responder listens" wait_tcp_listen 7174
rsiw-rawpeer trickle 10.0.2.15:7174 300 500 45 > /tmp/trickle.log 2>&1 &
trickler=$!
# The honest client goes in while they trickle, connected or not after 20 s.
check "300 trickling connections are up" retry 20 grep -q '^connected 300' /tmp/trickle.log
start=$(date +%s)
check_output "rping connects and pings while 300 connections trickle their Request" \
    'rdma-ping-0: ' timeout 60 rping -c -a 10.0.2.15 -C 1 -v
took=$(( $(date +%s) - start ))
check "the honest rping took under 8 s, before the trickling deadlines (took ${took} s)" \
    test "$took" -lt 8
wait $trickler
cat /tmp/trickle.log
kill $server
wait $server
# Each was reset at its deadline: not before 8 s after its accept (the tool measures
# from its own connect and polls every 500 ms: 7 s), and long before the Request could
# be whole (266 s) or the trickler gives up (45 s). The deadline starts at the
# responder's accept, which the tool cannot see: rping listens with a backlog of 3, and
# when the accept work falls behind (it shares its queue with 600 octet arrivals a
# second) the kernel drops the handshake's last ACK and the connection is accepted
# only after a SYN-ACK retransmission (1, 2, 4 s). Hence the upper bound of 30 s; on
# an idle host all are reset 8-9.5 s after their connect.
res=$(grep '^closed ' /tmp/trickle.log)
drops=$(awk '/^TcpExt:/ { if (n) { for (i = 2; i <= NF; i++) if (k[i] == "ListenOverflows") print $i }
    else { n = 1; for (i = 2; i <= NF; i++) k[i] = $i } }' /proc/net/netstat 2>/dev/null)
lo=$(printf '%s' "$res" | sed -n 's/^closed 300 of 300, after \([0-9]*\)\.\.\([0-9]*\) ms .*; refused 0$/\1/p')
hi=$(printf '%s' "$res" | sed -n 's/^closed 300 of 300, after \([0-9]*\)\.\.\([0-9]*\) ms .*; refused 0$/\2/p')
check "each trickling connection is reset when its frame deadline passes (${res:-no result}; listen overflows ${drops:-?})" \
    test "${lo:-0}" -ge 7000 -a "${hi:-99999}" -lt 30000
check_output "the deadline is in dmesg (rate-limited)" \
    'MPA Request not complete within mpa_timeout_ms: reset' dmesg

# 2. The bound: with mpa_max_pending 50, 60 connections: 10 are reset at once.
echo 50 > $P/mpa_max_pending
echo 3000 > $P/mpa_timeout_ms
timeout 60 rping -s -a 10.0.2.15 -C 1 -v > /tmp/rping-s2.log 2>&1 &
server=$!
step "rsiw responder listens again" wait_tcp_listen 7174
dmesg -c > /dev/null
rsiw-rawpeer trickle 10.0.2.15:7174 60 200 10 > /tmp/trickle2.log 2>&1
cat /tmp/trickle2.log
check_output "beyond mpa_max_pending connections are reset at once" \
    '^closed 60 of 60, .*; refused 10$' cat /tmp/trickle2.log
check_output "the refusal is in dmesg" 'too many connections in MPA setup' dmesg
echo 1024 > $P/mpa_max_pending
check_output "rping after the bound's test" 'rdma-ping-0: ' timeout 60 rping -c -a 10.0.2.15 -C 1 -v
wait $server

# 3. A connection request the ULP never answers: the rping server is stopped before
# the Request arrives; after mpa_accept_timeout_ms (3 s) the initiator gets a Reject
# Reply (R and C bits, Rev 1) and a FIN, and the late accept fails.
echo 3000 > $P/mpa_accept_timeout_ms
timeout 60 rping -s -a 10.0.2.15 -C 1 -v > /tmp/rping-s3.log 2>&1 &
server=$!
step "rsiw responder listens a third time" wait_tcp_listen 7174
kill -STOP $server
start=$(date +%s)
rsiw-rawpeer fpdu 10.0.2.15:7174 none > /tmp/noaccept.log 2>&1
took=$(( $(date +%s) - start ))
cat /tmp/noaccept.log
check_output "an unanswered request is refused with a Reject Reply" \
    "^reply ${KEYREP}60010000\$" cat /tmp/noaccept.log
check "after mpa_accept_timeout_ms (3 s; took ${took} s)" test "$took" -ge 2 -a "$took" -le 9
kill -CONT $server
wait $server
check "the late accept fails (rping server exits non-zero)" test $? -ne 0
echo 60000 > $P/mpa_accept_timeout_ms

# 4. The listener goes away with 100 connections in setup: iw_destroy_listen does not
# wait for them, each is reset, and the module unloads.
echo 30000 > $P/mpa_timeout_ms
timeout 60 rping -s -a 10.0.2.15 -v > /tmp/rping-s4.log 2>&1 &
server=$!
step "rsiw responder listens a fourth time" wait_tcp_listen 7174
# The trickler gives up 25 s after it started: long enough for 100 connects on a slow
# guest and the resets after the listener goes, shorter than the 30 s frame deadline,
# so a reset by that deadline instead is not counted.
rsiw-rawpeer trickle 10.0.2.15:7174 100 500 25 > /tmp/trickle4.log 2>&1 &
trickler=$!
check "100 trickling connections are up" retry 60 grep -q '^connected 100' /tmp/trickle4.log
sleep 1
start=$(date +%s)
kill $server
wait $server
took=$(( $(date +%s) - start ))
check "the listener's end does not wait for them (took ${took} s)" test "$took" -le 3
wait $trickler
cat /tmp/trickle4.log
check_output "each is reset when the listener goes" '^closed 100 of 100' cat /tmp/trickle4.log
echo 10000 > $P/mpa_timeout_ms

check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
dev_down rsiw rsiw0
finish
