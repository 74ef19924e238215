#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
# rsiw-requires: datapath
# rsiw-timeout: 1200
# rsiw-group: qpconn
# QP connections from modify_qp cannot be taken over (Documentation/qpconn.md,
# security.md "QP connections from modify_qp"): the port cannot be squatted (taken
# before `rdma link add`, the device is refused; held by the device afterwards, an
# unprivileged bind fails); a request from an unprivileged source port is reset at
# once, whatever it proves; as root from the armed address, a request that proves no
# PSN, omits the SQ PSN and proves a wrong RQ PSN, or carries a wrong SQ PSN is
# refused; an rsiw initiator resets a Reply that mirrors its Request or copies its SQ
# PSN; QP numbers are not sequential; 1,100 unarmed requests with junk behind them
# (unprivileged, then from privileged ports) are reset, and a flood of unarmed
# requests held open from one address parks at most 64 of them; meanwhile an honest
# ibv_rc_pingpong -g 1 pair connects and completes; no QP is left.
. /rsiw/lib.sh
RSIW_MODPARAMS="qp_conn_port=4792"
setup_net
D=rsiw0
PORT=4792
require_rsiw "$D: rsiw.ko is in the image" || finish
step "modprobe rsiw qp_conn_port=$PORT" modprobe rsiw qp_conn_port=$PORT
modprobe ib_uverbs 2>/dev/null
ip addr add 10.0.2.14/24 dev eth0
# `nobody` may hold many sockets (the floods below).
ulimit -n 4096
as_nobody() { su -s /bin/sh nobody -c "$*"; }

# --- The port: squatted before the device, held by it after. ---
dmesg -c > /dev/null
su -s /bin/sh nobody -c "exec timeout 60 rsiw-rawpeer qpserve - 0.0.0.0:$PORT mirror" > /tmp/squat.out 2>&1 &
check "nobody listens on $PORT before the device exists" retry 10 grep -q listening /tmp/squat.out
check_fails "rdma link add fails while $PORT is taken" rdma link add $D type rsiw netdev eth0
check_output "dmesg: the port in use is named" "$D: cannot listen on qp_conn_port $PORT" dmesg
check_no_output "no device was left" "$D" rdma link show
ps | awk '/[q]pserve - 0.0.0.0/ { print $1 }' | xargs -r kill
wait
check "rdma link add $D once the port is free" retry 5 rdma link add $D type rsiw netdev eth0 || finish
# squat_try DEV ADDR: nobody's listener on ADDR:$PORT (bound to DEV unless -).
squat_try() { su -s /bin/sh nobody -c "timeout 3 rsiw-rawpeer qpserve $1 $2:$PORT mirror"; true; }
check_output "nobody cannot bind $PORT while $D exists" 'in use' squat_try - 0.0.0.0
check_output "nor 10.0.2.15:$PORT" 'in use' squat_try - 10.0.2.15
check_output "nor $PORT bound to eth0 (SO_BINDTODEVICE)" 'in use|not permitted' squat_try eth0 10.0.2.15

# --- QP numbers. ---
pids=
for p in 18721 18722 18723 18724; do
    timeout 60 ibv_rc_pingpong -d $D -g 1 -p $p > /dev/null 2>&1 &
    pids="$pids $!"
done
check "four QPs exist" retry 20 sh -c "[ \$(rdma resource show qp | grep -cw $D) -ge 4 ]"
qpns=$(rdma resource show qp | grep -w $D | grep -o 'lqpn [0-9]*' | cut -d' ' -f2 | sort -n)
echo "QP numbers:" $qpns
check "QP numbers are distinct" test "$(echo "$qpns" | sort -u | wc -l)" -eq 4
steps=$(echo "$qpns" | awk 'NR > 1 { print $1 - prev } { prev = $1 }' | sort -u | wc -l)
check "QP numbers are not evenly spaced ($steps distinct steps of 3)" test "$steps" -ge 2
check "QP numbers are spread over 24 bits (one above 2^16)" \
    sh -c "echo '$qpns' | awk '\$1 >= 65536 { f = 1 } END { exit !f }'"
kill $pids 2>/dev/null
wait $pids 2>/dev/null

# An honest pair beside everything below: 2000 iterations of 4 KiB.
timeout 600 ibv_rc_pingpong -d $D -g 1 -p 18730 -s 4096 -n 2000 > /tmp/honest-s.log 2>&1 &
hs=$!
sleep 1
timeout 600 ibv_rc_pingpong -d $D -g 1 -p 18730 -s 4096 -n 2000 10.0.2.15 > /tmp/honest-c.log 2>&1 &
hc=$!

# --- Requests for a QP armed for 10.0.2.14, QPN 0x111, PSN 0x222. ---
armed_server $D 18731 120000
# Unprivileged, with every value right: reset at accept, nothing read.
check_output "nobody, from an unprivileged port, every value right: reset, no Reply" '^reply none$' \
    as_nobody "exec rsiw-rawpeer qpconn 10.0.2.15:$PORT 111 $SQPN 222 - 10.0.2.14:0"
check_output "dmesg: source port not privileged" \
    'peer \[::ffff:10\.0\.2\.14\]:[0-9]+: QP connection refused: source port not privileged' dmesg
qpreq "no PSN at all" yes 111 "$SQPN" - - 10.0.2.14
qpreq "the SQ PSN omitted, a wrong RQ PSN instead" yes 111 "$SQPN" - "$(printf %x $(((0x$SPSN + 1) % 16777216)))" 10.0.2.14
qpreq "a wrong SQ PSN" yes 111 "$SQPN" 223 - 10.0.2.14
qpreq "a wrong SQ PSN, the right RQ PSN" yes 111 "$SQPN" 221 "$SPSN" 10.0.2.14
check_output "dmesg: proves no PSN" 'QP connection refused: the request proves no PSN' dmesg
check_output "dmesg: another PSN" 'QP connection refused: QP armed for another PSN' dmesg
qpreq "the armed peer, QPN and SQ PSN, from a privileged port" no 111 "$SQPN" 222 - 10.0.2.14
wait $srv
kill $fake 2>/dev/null
echo 20000 > /sys/module/rsiw/parameters/qp_conn_timeout_ms

# --- A forged Reply: a listener on 10.0.77.1 (a host without rsiw: an address of lo,
# the listener bound to lo, so that it shares the port number with rsiw0's). ---
ip addr add 10.0.77.1/32 dev lo
# mirror_case MODE DMESG: an rc_pingpong client told its server is QPN 0x333 with PSN
# 0x444 at ::ffff:10.0.77.1 connects there (its address is the lower: it connects);
# the listener answers with MODE's forged block.
mirror_case() {
    rsiw-rawpeer qpserve lo 10.0.77.1:$PORT "$1" > /tmp/serve.out 2>&1 &
    srvp=$!
    retry 10 grep -q listening /tmp/serve.out
    { printf '0000:000333:000444:00000000000000000000ffff0a004d01\0'; sleep 30; } |
        timeout 35 nc -l -p 18740 > /dev/null &
    nl=$!
    sleep 1
    timeout 60 ibv_rc_pingpong -d $D -g 1 -p 18740 10.0.2.15 > /tmp/victim.log 2>&1
    vrc=$?
    wait $srvp
    cat /tmp/serve.out
    tail -n 2 /tmp/victim.log
    check "$1 Reply: the initiator resets the stream" grep -q '^end rst$' /tmp/serve.out
    check "$1 Reply: nothing of the application reaches the forger" grep -q '^got 0 octets$' /tmp/serve.out
    if [ $vrc -ne 0 ] && [ $vrc -ne 124 ]; then pass "$1 Reply: the client fails (exit $vrc)"; else
        fail "$1 Reply: the client fails" "exit $vrc"; fi
    check_output "dmesg: $2" "$2" dmesg
    kill $nl 2>/dev/null
    wait $nl 2>/dev/null
}
dmesg -c > /dev/null
mirror_case mirror 'the Reply proves no SQ PSN: reset'
mirror_case copy 'the Reply proves another PSN: reset'
ip addr del 10.0.77.1/32 dev lo

# --- Floods at an existing QP that is not armed (a server before its exchange). ---
timeout 300 ibv_rc_pingpong -d $D -g 1 -p 18750 > /dev/null 2>&1 &
unarmed=$!
check "the unarmed server's QP exists" retry 20 sh -c "rdma resource show qp | grep -w $D | grep -q INIT"
UQ=$(printf %x "$(rdma resource show qp | grep -w $D | grep INIT | grep -o 'lqpn [0-9]*' | head -n 1 | cut -d' ' -f2)")
echo "unarmed QP 0x$UQ"
dmesg -c > /dev/null
check_output "nobody: 1,100 requests with junk behind them, all reset" '^closed 1100 of 1100$' \
    as_nobody "exec rsiw-rawpeer qpflood 10.0.2.15:$PORT 111 $UQ 1100 10.0.2.14:0 junk 0"
check_output "root, privileged ports: 1,100 requests with junk behind them, all reset" '^closed 1100 of 1100$' \
    rsiw-rawpeer qpflood 10.0.2.15:$PORT 111 $UQ 1100 10.0.2.14 junk 0
check_output "dmesg: bytes after the Request" 'bytes after the MPA Request, before the Reply: reset' dmesg
check_output "nobody: 1,000 requests held open, all reset at once" '^closed 1000 of 1000 within 2 s$' \
    as_nobody "exec rsiw-rawpeer qpflood 10.0.2.15:$PORT 111 $UQ 1000 10.0.2.14:0 hold 3"
rsiw-rawpeer qpflood 10.0.2.15:$PORT 111 $UQ 400 10.0.2.14 hold 8 > /tmp/flood.out 2>&1 &
flood=$!
# While 10.0.2.14 holds its share parked, another address's QP connection goes through.
sleep 4
check "during the held flood: an rc_pingpong pair from 10.0.2.15 connects" \
    sh -c "timeout 120 ibv_rc_pingpong -d $D -g 1 -p 18751 > /tmp/f-s.log 2>&1 & sleep 1;
        timeout 120 ibv_rc_pingpong -d $D -g 1 -p 18751 10.0.2.15 > /tmp/f-c.log 2>&1; rc=\$?; wait; exit \$rc"
wait $flood
cat /tmp/flood.out
check_output "root, privileged ports: 400 held open, 336 reset at once (64 parked)" '^closed 336 of 400 within 2 s$' cat /tmp/flood.out
check_output "and the 64 parked stay open" '^open 64 of 400 after 8 s$' cat /tmp/flood.out
check_output "dmesg: too many from this peer" 'too many QP connections in setup or parked from this peer: reset' dmesg
kill $unarmed 2>/dev/null
wait $unarmed 2>/dev/null

# --- The honest pair ran beside all of it. ---
wait $hc
rc_c=$?
wait $hs
rc_s=$?
tail -n 2 /tmp/honest-s.log /tmp/honest-c.log
check "honest pair: server and client exit 0 ($rc_s, $rc_c)" test "$rc_s$rc_c" = 00
check "honest pair: 2000 iterations" grep -q '2000 iters' /tmp/honest-c.log

sleep 2
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
ip addr del 10.0.2.14/24 dev eth0
dev_down rsiw "$D"
finish
