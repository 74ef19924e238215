#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 900
# Where the time of `cargo xtask bench` goes: the same perftest -R runs as qemu/bench.sh
# (siw and rsiw, both ends in this VM on eth0), each under a system-wide `perf record`
# (cpu-clock sampling: TCG has no PMU), then the flat profile by symbol and by object.
# Run with `cargo xtask vm --flavour perf --script qemu/profile.sh` (the perf image
# carries perf when the host has Debian's linux-perf); PROFILE_SET below picks the runs
# (the script reads it inside the VM: `PROFILE_SET=atomic` as the first line of a copy).
. /rsiw/lib.sh
setup_net
command -v perf > /dev/null || { skip "profile" "no perf in the image (install linux-perf on the host)"; finish; }
# Kernel and module symbols for perf report.
echo 0 > /proc/sys/kernel/kptr_restrict
echo -1 > /proc/sys/kernel/perf_event_paranoid
port=19500

# report DATA: the flat profile by object and by symbol; idle (the halt in the idle
# loop) is counted once and left out of the symbol list.
report() {
    echo "-- by object"
    perf report -i "$1" --stdio --no-children --sort dso 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 8
    echo "-- by symbol (idle: $(perf report -i "$1" --stdio --no-children --sort sym 2>/dev/null | awk '/safe_halt|default_idle/ { print $1 }'))"
    perf report -i "$1" --stdio --no-children --sort dso,sym 2>/dev/null | grep -v '^#' | grep -v '^$' |
        grep -v -e safe_halt -e default_idle | head -n "${PROFILE_TOP:-25}"
}

# profiled DEV TEST SIZE ITERS OPTS…: run TEST under a system-wide perf record and
# perf stat (context switches: each is a sleep/wakeup on the message's path), print its
# result line, the switches per iteration and the top of its profile.
profiled() {
    d=$1 t=$2 s=$3 n=$4
    shift 4
    port=$((port + 1))
    data=/tmp/perf-$d-$t.data
    perf record -a -e cpu-clock -F 997 -o "$data" > /tmp/perf-record.log 2>&1 &
    rec=$!
    perf stat -a -e context-switches,cpu-migrations -x, -o /tmp/perf-stat.csv &
    st=$!
    sleep 1
    line=$(perftest_run "$t" "$d" "$s" "$n" $port "$@")
    rc=$?
    kill -INT $rec $st
    wait $rec $st
    echo "== profile $d $t $s x $n: $line"
    [ $rc -eq 0 ] && pass "profile $d $t" || fail "profile $d $t" "$line"
    cs=$(awk -F, '$3 == "context-switches" { print $1 }' /tmp/perf-stat.csv)
    echo "-- context switches (both ends, whole run incl. setup): $cs, $(awk -v c="$cs" -v n="$n" 'BEGIN { printf "%.2f", c / n }') per iteration"
    report "$data"
    rm -f "$data"
}

# PROFILE_SET=bw (default): Write bandwidth and Send latency, siw and rsiw;
# PROFILE_SET=atomic: ib_atomic_bw FETCH_AND_ADD, rxe and rsiw (siw has no atomics).
case ${PROFILE_SET:-bw} in
atomic)
    for T in ${PROFILE_DEVS:-rxe rsiw}; do
        dev_up "$T" ${T}0 eth0 || continue
        profiled ${T}0 ib_atomic_bw 8 "${PROFILE_ATOMIC_ITERS:-5000}" -R -A FETCH_AND_ADD
        dev_down "$T" ${T}0
    done
    ;;
*)
    for T in siw rsiw; do
        dev_up "$T" ${T}0 eth0 || continue
        # Long enough that the transfer, not the setup, fills the profile.
        if [ $T = siw ]; then bw=${PROFILE_BW_ITERS_SIW:-30000}; else bw=${PROFILE_BW_ITERS:-8000}; fi
        profiled ${T}0 ib_write_bw 65536 "$bw" -R --report_gbits
        profiled ${T}0 ib_send_lat 8 "${PROFILE_LAT_ITERS:-5000}" -R
        dev_down "$T" ${T}0
    done
    ;;
esac
finish
