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

# recorded LABEL ITERS CMD…: run CMD under a system-wide perf record and perf stat
# (context switches: each is a sleep/wakeup on a message's path), print its output's
# last line, the switches per iteration (ITERS of them) and the top of its profile.
recorded() {
    lbl=$1 n=$2
    shift 2
    data=/tmp/perf-$(echo "$lbl" | tr ' /' '__').data
    perf record -a -e cpu-clock -F 997 -o "$data" > /tmp/perf-record.log 2>&1 &
    rec=$!
    perf stat -a -e context-switches,cpu-migrations -x, -o /tmp/perf-stat.csv &
    st=$!
    sleep 1
    line=$("$@" 2>&1 | tail -n 1)
    rc=$?
    kill -INT $rec $st
    wait $rec $st
    echo "== profile $lbl: $line"
    [ $rc -eq 0 ] && pass "profile $lbl" || fail "profile $lbl" "$line"
    cs=$(awk -F, '$3 == "context-switches" { print $1 }' /tmp/perf-stat.csv)
    echo "-- context switches (whole run incl. setup): $cs, $(awk -v c="$cs" -v n="$n" 'BEGIN { printf "%.2f", c / n }') per iteration"
    report "$data"
    rm -f "$data"
}

# profiled DEV TEST SIZE ITERS OPTS…: TEST (perftest, both ends) under `recorded`.
profiled() {
    d=$1 t=$2 s=$3 n=$4
    shift 4
    port=$((port + 1))
    recorded "$d $t $s x $n" "$n" perftest_run "$t" "$d" "$s" "$n" $port "$@"
}

# profiled_nfs LABEL DEV [mpa_crc]: a 256 MiB O_DIRECT write and read in 1 MiB calls
# through a mount of this VM's own export over RPC-over-RDMA on DEV, as the NFS rows of
# `cargo xtask bench`, each under `recorded` (iterations: the 1 MiB calls).
profiled_nfs() {
    NFS_EXPORT_SIZE=320m nfs_server_start "$2" /export || return 1
    if check "profile: mount over rdma ($1)" nfs_mount 10.0.2.15 4.2 /mnt "proto=rdma,port=$NFS_RDMA_PORT"; then
        for op in write read; do
            recorded "$1 nfs $op 256M" 256 rsiw-nfs-io rate $op /mnt/prof.bin 256M 1M direct
        done
        rm -f /mnt/prof.bin
        umount /mnt
    fi
    nfs_server_stop /export
}

# PROFILE_SET=bw (default): Write bandwidth and Send latency, siw and rsiw;
# PROFILE_SET=atomic: ib_atomic_bw FETCH_AND_ADD, rxe and rsiw (siw has no atomics);
# PROFILE_SET=nfs: the NFS v4.2 write and read of the bench, siw, rsiw and rsiw
# without MPA CRC;
# PROFILE_SET=nocrc: 64 KiB Write and Send bandwidth, siw and rsiw without MPA CRC
# (the like-for-like setting: siw negotiates no CRC);
# PROFILE_SET=cmtime: librdmacm's cmtime (connection set-up and teardown, PROFILE_CONNS
# connections, both ends here), siw and rsiw.
case ${PROFILE_SET:-bw} in
cmtime)
    for T in siw rsiw; do
        dev_up "$T" ${T}0 eth0 || continue
        port=$((port + 1))
        cmtime -p $port > /tmp/cmt-server.log 2>&1 &
        srv=$!
        wait_tcp_listen $port
        recorded "${T}0 cmtime" "${PROFILE_CONNS:-1000}" \
            sh -c "timeout 600 cmtime -s 10.0.2.15 -p $port -c ${PROFILE_CONNS:-1000} > /tmp/cmt.log 2>&1; rc=\$?; cat /tmp/cmt.log; exit \$rc"
        kill $srv 2>/dev/null
        wait $srv 2>/dev/null
        dev_down "$T" ${T}0
    done
    ;;
nocrc)
    for T in siw rsiw; do
        dev_up "$T" ${T}0 eth0 || continue
        [ $T = rsiw ] && echo N > /sys/module/rsiw/parameters/mpa_crc
        n=${PROFILE_BW_ITERS_SIW:-30000}
        profiled ${T}0 ib_write_bw 65536 "$n" -R --report_gbits
        profiled ${T}0 ib_send_bw 65536 "$n" -R --report_gbits
        [ $T = rsiw ] && echo Y > /sys/module/rsiw/parameters/mpa_crc
        dev_down "$T" ${T}0
    done
    ;;
nfs)
    for T in siw rsiw; do
        dev_up "$T" ${T}0 eth0 || continue
        profiled_nfs ${T}0 ${T}0
        if [ $T = rsiw ]; then
            echo N > /sys/module/rsiw/parameters/mpa_crc
            profiled_nfs rsiw0-nocrc rsiw0
            echo Y > /sys/module/rsiw/parameters/mpa_crc
        fi
        modprobe -r rpcrdma 2>/dev/null
        dev_down "$T" ${T}0
    done
    ;;
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
