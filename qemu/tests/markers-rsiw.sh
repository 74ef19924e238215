#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: datapath
# rsiw-timeout: 600
# rsiw-group: perf
# MPA Markers (RFC 5044 §4.3) between rsiw peers, both ends in this VM with
# mpa_markers=Y, so each asks for them (the M bit of its Request or Reply) and each
# inserts them: markers both ways (Documentation/datapath.md, "MPA Markers"). lo gets
# an Ethernet MTU (1500) so FPDUs are RFC-sized, as on a real link. Shown:
#   - every QP reports markers_tx and markers_rx (`rdma resource show qp -dd`);
#   - a capture (rping -V, 16000-byte Reads and Writes) decoded by tshark on the
#     host: the M bit in the Request and the Reply, Markers in the FPDUs, their
#     FPDU pointers right, the MPA CRC (which covers them) good, RDMAP decoded;
#   - rsiw-load traffic (Send, Write, Read back, FetchAdd, CmpSwap, payloads up to
#     64 KiB) checked end to end;
#   - no CRC or framing error and no Terminate counted.
# The peer that asks while rsiw does not (markers one way) is markers-rsiw-pair.sh.
. /rsiw/lib.sh
setup_net
D=rsiw0
P=7660
MARKERS=/sys/module/rsiw/parameters/mpa_markers
dev_up rsiw "$D" eth0 || finish
check "lo: MTU 1500" ip link set lo mtu 1500
check "mpa_markers=Y" sh -c "echo Y > $MARKERS"

P=$((P + 1))
capture_start /tmp/markers.pcap "tcp port $P"
timeout 120 rping -s -a 10.0.2.15 -p $P -C 3 -S 16000 -V > /tmp/rping-server.log 2>&1 &
srv=$!
step "rping server listens" wait_rdma_listen
check "rping -c -V -S 16000 -C 3 with markers" timeout 120 rping -c -a 10.0.2.15 -p $P -C 3 -S 16000 -V
wait $srv
check "rping server exits 0" test $? -eq 0
capture_end markers /tmp/markers.pcap mpa-markers

stats_save "$D" /tmp/stats.before
P=$((P + 1))
rsiw-load server 10.0.2.15:$P > /tmp/server.log 2>&1 &
server=$!
step "rsiw-load server listens" wait_tcp_listen $P
rsiw-load client 10.0.2.15:$P --conns 4 --rounds 30 --size 65536 --hold 60 > /tmp/client.log 2>&1 &
client=$!
check "4 connections up, 30 verified rounds each" retry 300 grep -q "holding 4 connections" /tmp/client.log
rdma -dd resource show qp | grep -w "$D" > /tmp/qps
qps=$(grep -c . /tmp/qps)
check "8 QPs, every one inserting and receiving markers" \
    test "$qps" -eq 8 -a "$(grep -c 'drv_markers_tx yes drv_markers_rx yes' /tmp/qps)" -eq 8
kill $client
check_wait "client ends cleanly" $client
check_output "client: every byte right" \
    "established 4 closed 4 failed 0 setup_failed 0; rounds 120;.* verify_errors 0;.* hung 0;" tail -n 1 /tmp/client.log
kill $server
check_wait "server ends cleanly" $server
check_output "server: every Send right" "sends verified 120 bad 0;.* hung 0$" tail -n 1 /tmp/server.log
for c in mpa_crc_errors mpa_framing_errors terminates_sent_llp terminates_sent_ddp terminates_sent_rdmap; do
    check "$c: none" test "$(stat_delta "$D" /tmp/stats.before $c)" -eq 0
done
check "FPDUs moved ($(stat_delta "$D" /tmp/stats.before rcvd_fpdus) received)" \
    test "$(stat_delta "$D" /tmp/stats.before rcvd_fpdus)" -gt 1000

echo N > $MARKERS
ip link set lo mtu 65536
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^\$'"
dev_down rsiw "$D"
finish
