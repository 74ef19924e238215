#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 1500
# `cargo xtask bench`: perftest over rdma_cm (-R) on one device at a time, both ends in
# this VM on eth0 (10.0.2.15): siw and rsiw (send/write/read bandwidth at 64 KiB, latency
# at 8 B, atomics where the device has them), rxe (atomics, the software reference), and
# iperf3 over the same address as the TCP ceiling. Each measurement prints
# `RSIW-BENCH DEV TEST UNIT VALUE` (or `RSIW-BENCH DEV TEST n/a WHY`); xtask tabulates.
# rsiw runs twice: with its default MPA CRCs, and without (as siw-siw runs: "rsiw0-nocrc").
. /rsiw/lib.sh
setup_net
BW_ITERS=${BENCH_BW_ITERS:-2000}
LAT_ITERS=${BENCH_LAT_ITERS:-1000}
AT_ITERS=${BENCH_ATOMIC_ITERS:-2000}
port=19000

# one DEV TEST[:LABEL] UNIT FIELD ITERS SIZE OPTS…: run TEST, report field FIELD of its
# result line under TEST[:LABEL].
one() {
    d=$1 t=$2 unit=$3 field=$4 iters=$5 size=$6
    shift 6
    port=$((port + 1))
    line=$(perftest_run "${t%%:*}" "$d" "$size" "$iters" $port "$@")
    rc=$?
    if [ $rc -ne 0 ]; then
        # Said, not hidden: the table's header lists every retried cell.
        echo "$line"
        echo "RSIW-BENCH info retried $d $t: $(echo "$line" | grep -E 'client exit|Event:' | tr -s ' \t\n' ' ')"
        port=$((port + 1))
        line=$(perftest_run "${t%%:*}" "$d" "$size" "$iters" $port "$@")
        rc=$?
    fi
    if [ $rc -eq 0 ]; then
        echo "$line"
        echo "RSIW-BENCH ${LBL:-$d} $t${size:+@$size} $unit $(echo "$line" | awk -v f="$field" '{ v = $f; sub(/[^0-9.].*/, "", v); print v }')"
        pass "bench $d $t $*"
    else
        echo "$line"
        echo "RSIW-BENCH ${LBL:-$d} $t${size:+@$size} n/a failed"
        fail "bench $d $t $*" "no result line"
    fi
}

# verbs_bench DEV: the bandwidth and latency set.
verbs_bench() {
    for t in ib_send_bw ib_write_bw ib_read_bw; do
        one "$1" $t Gb/s 4 "$BW_ITERS" 65536 -R --report_gbits
    done
    for t in ib_send_lat ib_write_lat ib_read_lat; do
        one "$1" $t us 5 "$LAT_ITERS" 8 -R
    done
}

# atomic_bench DEV OPTS…: message rate and latency of FetchAdd and CmpSwap.
atomic_bench() {
    d=$1; shift
    if ! ibv_devinfo -v -d "$d" | grep -Eq 'atomic_cap:[[:space:]]+ATOMIC_(HCA|GLOB)'; then
        for t in ib_atomic_bw ib_atomic_lat; do
            echo "RSIW-BENCH $d $t n/a atomic_cap NONE"
        done
        return
    fi
    for a in FETCH_AND_ADD CMP_AND_SWAP; do
        one "$d" "ib_atomic_bw:$a" Mops/s 5 "$AT_ITERS" "" "$@" -A $a
        one "$d" "ib_atomic_lat:$a" us 5 "$LAT_ITERS" "" "$@" -A $a
    done
}

echo "RSIW-BENCH info kernel $(uname -r) cpus $(nproc)"

# TCP ceiling: iperf3 over the same address the RDMA devices use.
iperf3 -s -D -1 -p 5201 > /dev/null 2>&1
sleep 1
g=$(iperf3 -c 10.0.2.15 -p 5201 -t 5 -f g 2>&1 | awk '/receiver/ {print $(NF-2); exit}')
if [ -n "$g" ]; then echo "RSIW-BENCH tcp iperf3 Gb/s $g"; pass "bench iperf3"; else
    echo "RSIW-BENCH tcp iperf3 n/a failed"; fail "bench iperf3" "no receiver line"; fi

for T in siw rsiw; do
    dev_up "$T" ${T}0 eth0 || continue
    verbs_bench ${T}0
    atomic_bench ${T}0 -R
    if [ "$T" = rsiw ]; then
        # siw neither asks for nor requires MPA CRCs, so siw-siw runs without them;
        # rsiw asks by default. The like-for-like row: rsiw with mpa_crc=N.
        echo N > /sys/module/rsiw/parameters/mpa_crc
        LBL=rsiw0-nocrc verbs_bench rsiw0
        echo Y > /sys/module/rsiw/parameters/mpa_crc
    fi
    dev_down "$T" ${T}0
done

# perftest's atomics over rxe: one device, its own GID; rdma_cm to the local address.
if dev_up rxe rxe0 eth0; then
    atomic_bench rxe0 -R
    dev_down rxe rxe0
fi
finish
