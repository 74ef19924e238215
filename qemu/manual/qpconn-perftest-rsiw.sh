#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: datapath
# rsiw-timeout: 1500
# Unmodified perftest WITHOUT -R (QPN/PSN/GID exchanged over perftest's own socket, the
# QPs moved INIT→RTR→RTS with an address vector: Documentation/qpconn.md) between two
# endpoints on rsiw0 (eth0, 10.0.2.15), with -x 1 (GID 1, eth0's IPv4 address): Send,
# RDMA Write and RDMA Read bandwidth at 64 KiB and latency at 8 B, ib_atomic_bw and
# ib_atomic_lat with FetchAdd and CmpSwap. Each must finish and print its result line.
. /rsiw/lib.sh
# The listener's port for QP connections from modify_qp, stated (it is the default).
RSIW_MODPARAMS="qp_conn_port=4792"
setup_net
D=rsiw0
BW_ITERS=${PERF_BW_ITERS:-200}
LAT_ITERS=${PERF_LAT_ITERS:-200}

dev_up rsiw "$D" eth0 || finish
port=18800
for t in ib_send_bw ib_write_bw ib_read_bw; do
    port=$((port + 1))
    check_output "$t -x 1 64 KiB x $BW_ITERS: result line" '^[[:space:]]*65536[[:space:]]' \
        perftest_run $t "$D" 65536 "$BW_ITERS" $port -x 1 --report_gbits
done
for t in ib_send_lat ib_write_lat ib_read_lat; do
    port=$((port + 1))
    check_output "$t -x 1 8 B x $LAT_ITERS: result line" '^[[:space:]]*8[[:space:]]' \
        perftest_run $t "$D" 8 "$LAT_ITERS" $port -x 1
done
for a in FETCH_AND_ADD CMP_AND_SWAP; do
    port=$((port + 1))
    check_output "ib_atomic_bw -x 1 -A $a x $BW_ITERS: result line" '^[[:space:]]*8[[:space:]]' \
        perftest_run ib_atomic_bw "$D" "" "$BW_ITERS" $port -x 1 -A $a
    port=$((port + 1))
    check_output "ib_atomic_lat -x 1 -A $a x $LAT_ITERS: result line" '^[[:space:]]*8[[:space:]]' \
        perftest_run ib_atomic_lat "$D" "" "$LAT_ITERS" $port -x 1 -A $a
done
# Without -x, perftest names GID 0 (the MAC-based GID): rsiw cannot reach a peer by
# MAC, so RTR is refused and perftest says so instead of hanging.
port=$((port + 1))
check_fails "ib_write_bw without -x (GID 0): fails at RTR, no hang" \
    perftest_run ib_write_bw "$D" 65536 10 $port
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
