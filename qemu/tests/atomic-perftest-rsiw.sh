#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
# rsiw-group: conn
# rsiw-requires: datapath
# rsiw-timeout: 900
# Unmodified perftest atomics over rdma_cm (-R) between two endpoints on rsiw0 (eth0,
# 10.0.2.15): ib_atomic_bw and ib_atomic_lat with FetchAdd and CmpSwap, RFC 7306 Atomic
# Requests on DDP QN 1 answered on QN 3. Each must finish and print its result line.
. /rsiw/lib.sh
setup_net
D=rsiw0
BW_ITERS=${PERF_BW_ITERS:-500}
LAT_ITERS=${PERF_LAT_ITERS:-200}

# lat_run ITERS PORT A: ib_atomic_lat -R -A A. A guest whose TSC could not be calibrated
# (host load) runs on jiffies and perftest prints `inf` latencies: the exchange still
# completed all ITERS; accept that result line and name the clock.
lat_run() {
    perftest_run ib_atomic_lat "$D" "" "$1" "$2" -R -A "$3" && return 0
    cs=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)
    [ "$cs" != tsc ] && awk -v cs="$cs" -v n="$1" '$1 == 8 && $2 == n && $3 == "inf" {
        print "completed, latency not measurable (clocksource " cs "): " $0; ok = 1; exit }
        END { exit !ok }' "/tmp/perf-ib_atomic_lat-$D.client.log"
}

dev_up rsiw "$D" eth0 || finish
check_output "ibv_devinfo -v: atomic_cap ATOMIC_GLOB" 'atomic_cap:[[:space:]]+ATOMIC_GLOB' \
    ibv_devinfo -v -d "$D"
port=18700
for a in FETCH_AND_ADD CMP_AND_SWAP; do
    port=$((port + 1))
    check_output "ib_atomic_bw -R -A $a x $BW_ITERS: result line" '^[[:space:]]*8[[:space:]]' \
        perftest_run ib_atomic_bw "$D" "" "$BW_ITERS" $port -R -A $a
    port=$((port + 1))
    check_output "ib_atomic_lat -R -A $a x $LAT_ITERS: result line" '^[[:space:]]*8[[:space:]]' \
        lat_run "$LAT_ITERS" $port $a
done
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
