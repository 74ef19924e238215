#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 900
# Where the time of `cargo xtask bench` goes: the same perftest -R runs as qemu/bench.sh
# (siw and rsiw, both ends in this VM on eth0), each under a system-wide `perf record`
# (cpu-clock sampling: TCG has no PMU), then the flat profile by symbol and by object.
# Run with `cargo xtask vm --flavour perf --script qemu/profile.sh` (the perf image
# carries perf when the host has Debian's linux-perf).
. /rsiw/lib.sh
setup_net
command -v perf > /dev/null || { skip "profile" "no perf in the image (install linux-perf on the host)"; finish; }
# Kernel and module symbols for perf report.
echo 0 > /proc/sys/kernel/kptr_restrict
echo -1 > /proc/sys/kernel/perf_event_paranoid
ITERS=${PROFILE_ITERS:-3000}
port=19500

# profiled DEV TEST SIZE ITERS OPTS…: run TEST under perf record -a, print its result
# line and the top of its profile.
profiled() {
    d=$1 t=$2 s=$3 n=$4
    shift 4
    port=$((port + 1))
    data=/tmp/perf-$d-$t.data
    perf record -a -e cpu-clock -F 997 -o "$data" > /tmp/perf-record.log 2>&1 &
    rec=$!
    sleep 1
    line=$(perftest_run "$t" "$d" "$s" "$n" $port "$@")
    rc=$?
    kill -INT $rec
    wait $rec
    echo "== profile $d $t $s: $line"
    [ $rc -eq 0 ] && pass "profile $d $t" || fail "profile $d $t" "$line"
    echo "-- by object"
    perf report -i "$data" --stdio --no-children --sort dso 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 12
    echo "-- by symbol"
    perf report -i "$data" --stdio --no-children --sort dso,sym 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 40
    rm -f "$data"
}

for T in siw rsiw; do
    dev_up "$T" ${T}0 eth0 || continue
    profiled ${T}0 ib_write_bw 65536 "$ITERS" -R --report_gbits
    profiled ${T}0 ib_send_lat 8 "$ITERS" -R
    dev_down "$T" ${T}0
done
finish
