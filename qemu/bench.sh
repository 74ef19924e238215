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
# TCG on shared cores is noisy: each cell is the median of REPEAT runs.
REPEAT=${BENCH_REPEAT:-3}
port=19000

# attempt TEST DEV SIZE ITERS OPTS…: one perftest run, retried once if it failed (the
# retry is named in the table's header, not hidden). Runs in this shell (the port
# counter must advance); the result line or the failure is left in $out.
attempt() {
    # Own names: this runs in the caller's shell, whose t/d/size must survive.
    a_t=$1 a_d=$2 a_s=$3 a_n=$4
    shift 4
    port=$((port + 1))
    out=$(perftest_run "$a_t" "$a_d" "$a_s" "$a_n" $port "$@") && return 0
    echo "$out"
    echo "RSIW-BENCH info retried $a_d $a_t: $(echo "$out" | grep -E 'client exit|Event:' | tr -s ' \t\n' ' ')"
    port=$((port + 1))
    out=$(perftest_run "$a_t" "$a_d" "$a_s" "$a_n" $port "$@")
}

# one DEV TEST[:LABEL] UNIT FIELD ITERS SIZE OPTS…: run TEST $REPEAT times, report the
# median of field FIELD of its result lines under TEST[:LABEL], and the spread.
one() {
    d=$1 t=$2 unit=$3 field=$4 iters=$5 size=$6
    shift 6
    vals=""
    i=0
    while [ $i -lt "$REPEAT" ]; do
        i=$((i + 1))
        if ! attempt "${t%%:*}" "$d" "$size" "$iters" "$@"; then
            echo "$out"
            echo "RSIW-BENCH ${LBL:-$d} $t${size:+@$size} n/a failed"
            fail "bench ${LBL:-$d} $t $*" "no result line"
            return
        fi
        echo "$out"
        # perftest may glue "Failed to disconnect…" to the last number.
        v=$(echo "$out" | awk -v f="$field" '{ v = $f; sub(/[^0-9.].*/, "", v); print v }')
        if [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v + 0 == 0) }'; then
            # perftest 4.5 sometimes prints a message rate of 0.000000 for a run that
            # completed (its cycle arithmetic, not the device): not a measurement.
            echo "RSIW-BENCH info retried ${LBL:-$d} $t: perftest printed 0 for a completed run"
            v=""
            if attempt "${t%%:*}" "$d" "$size" "$iters" "$@"; then
                echo "$out"
                v=$(echo "$out" | awk -v f="$field" '{ v = $f; sub(/[^0-9.].*/, "", v); print v }')
                awk -v v="$v" 'BEGIN { exit !(v + 0 == 0) }' && v=""
            fi
        fi
        if [ -z "$v" ]; then
            # e.g. `inf` latencies of a guest without a calibrated TSC: no number to report.
            echo "RSIW-BENCH ${LBL:-$d} $t${size:+@$size} n/a failed: no number in the result line"
            fail "bench ${LBL:-$d} $t $*" "no number in the result line"
            return
        fi
        vals="$vals $v"
    done
    med=$(echo $vals | tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    [ "$REPEAT" -gt 1 ] && echo "RSIW-BENCH info spread ${LBL:-$d} $t${size:+@$size}:$vals"
    echo "RSIW-BENCH ${LBL:-$d} $t${size:+@$size} $unit $med"
    pass "bench ${LBL:-$d} $t $*"
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
        for a in FETCH_AND_ADD CMP_AND_SWAP; do
            echo "RSIW-BENCH $d ib_atomic_bw:$a n/a atomic_cap NONE"
            echo "RSIW-BENCH $d ib_atomic_lat:$a n/a atomic_cap NONE"
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
