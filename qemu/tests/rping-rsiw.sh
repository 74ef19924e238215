#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
# rsiw-group: cm
# rsiw-requires: datapath
# rsiw-timeout: 600
# rping between two rdma_cm endpoints on rsiw0 (eth0, 10.0.2.15): 100 pings, each one
# Send, RDMA Read and RDMA Write of a 64-byte buffer, verified by rping (-V) and by the
# printed data. RSIW_DEV_TYPE=siw runs the same body on siw0 (the reference).
. /rsiw/lib.sh
setup_net
T=${RSIW_DEV_TYPE:-rsiw}
D=${T}0
COUNT=100

dev_up "$T" "$D" eth0 || finish
check_output "ibv_devinfo -d $D: transport iWARP" 'transport:[[:space:]]+iWARP' ibv_devinfo -d "$D"

timeout 300 rping -s -a 10.0.2.15 -C $COUNT -v -V > /tmp/rping-server.log 2> /tmp/rping-server.err &
server=$!
step "rping server listens" wait_rdma_listen
timeout 300 rping -c -a 10.0.2.15 -C $COUNT -v -V > /tmp/rping-client.log 2> /tmp/rping-client.err
rc=$?
wait $server
src=$?
# stderr apart: rping's unbuffered event lines would otherwise cut into the
# block-buffered ping lines the payload check reads.
tail -n 3 /tmp/rping-client.log /tmp/rping-client.err
tail -n 3 /tmp/rping-server.log /tmp/rping-server.err
if [ $rc -eq 0 ]; then pass "rping client exits 0"; else fail "rping client exits 0" "exit $rc: $(tail -n 1 /tmp/rping-client.log)"; fi
if [ $src -eq 0 ]; then pass "rping server exits 0"; else fail "rping server exits 0" "exit $src: $(tail -n 1 /tmp/rping-server.log)"; fi
check_no_output "rping -V saw no data mismatch" 'mismatch' cat /tmp/rping-client.log /tmp/rping-server.log /tmp/rping-client.err /tmp/rping-server.err
check_output "client: $COUNT pings, every payload as rping builds it" "^ok $COUNT\$" rping_payloads_ok 'ping data: ' /tmp/rping-client.log
check_output "server: $COUNT pings, every payload as rping builds it" "^ok $COUNT\$" rping_payloads_ok 'server ping data: ' /tmp/rping-server.log

check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down "$T" "$D"
finish
