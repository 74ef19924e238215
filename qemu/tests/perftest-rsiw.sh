#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
# rsiw-requires: datapath
# rsiw-timeout: 900
# rsiw-group: perf
# perftest over rdma_cm (-R) between two endpoints on rsiw0 (eth0, 10.0.2.15): Send,
# RDMA Write and RDMA Read bandwidth at 64 KiB and latency at 8 B; each must finish and
# print its result line. RSIW_DEV_TYPE=siw runs the same body on siw0 (the reference).
. /rsiw/lib.sh
setup_net
T=${RSIW_DEV_TYPE:-rsiw}
D=${T}0
# TCG is slow: enough iterations for a stable number, few enough for minutes, not hours.
BW_ITERS=${PERF_BW_ITERS:-200}
LAT_ITERS=${PERF_LAT_ITERS:-200}

dev_up "$T" "$D" eth0 || finish
port=18600
for t in ib_send_bw ib_write_bw ib_read_bw; do
    port=$((port + 1))
    check_output "$t -R 64 KiB x $BW_ITERS: result line" '^[[:space:]]*65536[[:space:]]' \
        perftest_run $t "$D" 65536 "$BW_ITERS" $port -R --report_gbits
done
for t in ib_send_lat ib_write_lat ib_read_lat; do
    port=$((port + 1))
    check_output "$t -R 8 B x $LAT_ITERS: result line" '^[[:space:]]*8[[:space:]]' \
        perftest_run $t "$D" 8 "$LAT_ITERS" $port -R
done
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down "$T" "$D"
finish
