#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: datapath
# rsiw-timeout: 900
# rsiw-group: qpconn
# QP connections from modify_qp with unwilling or hostile peers (Documentation/qpconn.md):
# an ibv_rc_pingpong server armed for a fake client (10.0.2.14, QPN 0x111, PSN 0x222)
# refuses requests naming another QPN, another PSN, coming from another address, or
# naming no QP, each with a Reject Reply and a dmesg line, and accepts the one that
# matches; a server whose peer never connects ends with an error after
# qp_conn_timeout_ms; a request for a QP that is never armed waits (parked) and is then
# refused; a client killed mid-transfer ends its server's run; a client killed while
# its attempt waits for the Reply leaves cleanly; no QP is left and kmemleak stays
# silent.
. /rsiw/lib.sh
# The listener's port for QP connections from modify_qp, stated (it is the default).
RSIW_MODPARAMS="qp_conn_port=4792"
setup_net
D=rsiw0
TMO=6000
require_rsiw "$D: rsiw.ko is in the image" || finish
step "modprobe rsiw qp_conn_port=4792 qp_conn_timeout_ms=$TMO" modprobe rsiw qp_conn_port=4792 qp_conn_timeout_ms=$TMO
modprobe ib_uverbs 2>/dev/null
step "rdma link add $D type rsiw netdev eth0" rdma link add $D type rsiw netdev eth0 || finish
ip addr add 10.0.2.14/24 dev eth0
FAKE_GID=00000000000000000000ffff0a00020e   # ::ffff:10.0.2.14, as rc_pingpong sends GIDs

# The refused requests below take a second or more each under TCG: the armed QP waits
# long enough for all of them and the matching one (a QP armed at 6 s gave up before
# the last on a slow boot); the parts after it use $TMO again.
armed_server $D 18701 60000
qpreq "another source QPN" yes 112 "$SQPN" 222 "$SPSN" 10.0.2.14
qpreq "another SQ PSN" yes 111 "$SQPN" 223 "$SPSN" 10.0.2.14
qpreq "another RQ PSN" yes 111 "$SQPN" 222 0 10.0.2.14
qpreq "another address (10.0.2.15)" yes 111 "$SQPN" 222 "$SPSN" 10.0.2.15
qpreq "no such QP" yes 111 fff0 222 "$SPSN" 10.0.2.14
# The listener is dual-stack: an IPv4 peer shows as [::ffff:a.b.c.d]:port.
check_output "dmesg: another QP number or PSN" 'peer \[::ffff:10\.0\.2\.14\]:[0-9]+: QP connection refused: QP armed for another (QP number|PSN)' dmesg
check_output "dmesg: another peer address" 'peer \[::ffff:10\.0\.2\.15\]:[0-9]+: QP connection refused: QP armed for another peer address' dmesg
check_output "dmesg: no such QP" 'peer \[::ffff:10\.0\.2\.14\]:[0-9]+: QP connection refused: no such QP' dmesg
qpreq "the armed peer, QPN and PSNs" no 111 "$SQPN" 222 "$SPSN" 10.0.2.14
# The raw peer closed its stream: the server's QP goes to ERROR, its receives flush.
wait $srv
rc=$?
cat /tmp/pp-s.log
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then pass "server ends with an error when its peer closes"; else
    fail "server ends with an error when its peer closes" "exit $rc"; fi
kill $fake 2>/dev/null
echo $TMO > /sys/module/rsiw/parameters/qp_conn_timeout_ms

# A peer that never connects: the armed QP gives up after qp_conn_timeout_ms.
timeout 120 ibv_rc_pingpong -d $D -g 1 -p 18702 > /tmp/pp-s.log 2>&1 &
srv=$!
sleep 1
t0=$(date +%s)
fake_client 18702
wait $srv
rc=$?
t1=$(date +%s)
cat /tmp/pp-s.log
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then pass "silent peer: server ends with an error"; else
    fail "silent peer: server ends with an error" "exit $rc"; fi
if [ $((t1 - t0)) -ge $((TMO / 1000 - 1)) ] && [ $((t1 - t0)) -le $((TMO / 1000 + 20)) ]; then
    pass "silent peer: after qp_conn_timeout_ms ($((t1 - t0)) s)"; else
    fail "silent peer: after qp_conn_timeout_ms" "$((t1 - t0)) s"; fi
kill $fake 2>/dev/null

# A request for a QP that exists but is not armed (a server still waiting for its
# client's exchange): parked, then refused when qp_conn_timeout_ms passes.
timeout 120 ibv_rc_pingpong -d $D -g 1 -p 18703 > /tmp/pp-s.log 2>&1 &
srv=$!
sleep 2
q=$(rdma resource show qp | grep -w $D | grep -o 'lqpn [0-9]*' | head -n 1 | cut -d' ' -f2)
t0=$(date +%s)
qpreq "unarmed QP $q: parked, then" yes 111 "$(printf %x "$q")" 222 0 10.0.2.14 30
t1=$(date +%s)
if [ $((t1 - t0)) -ge $((TMO / 1000 - 1)) ]; then pass "unarmed QP: refused after qp_conn_timeout_ms ($((t1 - t0)) s)"; else
    fail "unarmed QP: refused after qp_conn_timeout_ms" "after $((t1 - t0)) s"; fi
check_output "dmesg: no QP armed in time" 'QP connection refused: no QP armed for it within qp_conn_timeout_ms' dmesg
kill $srv 2>/dev/null
wait $srv

# A client killed mid-transfer: the server's run ends (no hang).
timeout 200 ibv_rc_pingpong -d $D -g 1 -p 18704 -s 4096 -n 1000000 > /tmp/pp-s.log 2>&1 &
srv=$!
sleep 1
timeout 200 ibv_rc_pingpong -d $D -g 1 -p 18704 -s 4096 -n 1000000 10.0.2.15 > /tmp/pp-c.log 2>&1 &
cli=$!
sleep 8
kill -9 $cli
wait $cli
t0=$(date +%s)
wait $srv
rc=$?
t1=$(date +%s)
tail -n 3 /tmp/pp-s.log
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((t1 - t0)) -le 30 ]; then
    pass "client killed mid-transfer: server ends with an error ($((t1 - t0)) s)"; else
    fail "client killed mid-transfer: server ends with an error" "exit $rc after $((t1 - t0)) s"; fi

# A client killed while its connection attempt waits for the Reply: its peer's QP
# exists but is not armed, so the listener parks the request for qp_conn_timeout_ms.
# The process exits with the attempt still holding its QP (and the QP its CQs, whose
# rings belong to the closing user context): the context's teardown waits for them,
# no use after free, no QP left.
timeout 120 ibv_rc_pingpong -d $D -g 1 -p 18705 > /tmp/pp-s.log 2>&1 &
srv=$!
sleep 2
q=$(rdma resource show qp | grep -w $D | grep -o 'lqpn [0-9]*' | head -n 1 | cut -d' ' -f2)
{ printf '0000:%06x:000222:%s\0' "$q" $FAKE_GID; sleep 10; } |
    timeout 15 nc -l -p 18706 > /tmp/fake-s.out &
fake=$!
sleep 1
timeout 60 ibv_rc_pingpong -d $D -g 1 -p 18706 10.0.2.15 > /tmp/pp-c.log 2>&1 &
cli=$!
check "killed client: its QP is armed (RTS) for QP $q" \
    retry 10 sh -c "rdma resource show qp | grep -w $D | grep -v 'lqpn $q ' | grep -q RTS"
kill -9 $cli
t0=$(date +%s)
wait $cli
t1=$(date +%s)
check "killed client: the process is gone within qp_conn_timeout_ms + 10 s ($((t1 - t0)) s)" \
    test $((t1 - t0)) -le $((TMO / 1000 + 10))
check "killed client: its QP is gone" \
    retry 30 sh -c "! rdma resource show qp | grep -w $D | grep -v 'lqpn $q ' | grep -q lqpn"
kill $srv $fake 2>/dev/null
wait $srv
wait $fake

sleep 1
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
ip addr del 10.0.2.14/24 dev eth0
dev_down rsiw "$D"
finish
