#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 5400
# `cargo xtask bench`: perftest over rdma_cm (-R) on one device at a time, both ends in
# this VM on eth0 (10.0.2.15): siw and rsiw (send/write/read bandwidth at 4 KiB, 64 KiB
# and 1 MiB with one QP and four, latency at 8 B and 4 KiB, atomics where the device has
# them, memory per QP), rxe (atomics, the software reference), iperf3 over the same
# address and the guest's memory-copy rate as ceilings; NFS v4.2 O_DIRECT throughput
# over siw, rsiw and TCP through a mount of this VM's own export; connection set-up and
# teardown per connection (cmtime) on siw and rsiw. Each measurement prints
# `RSIW-BENCH DEV TEST UNIT VALUE` (or `RSIW-BENCH DEV TEST n/a WHY`); xtask tabulates.
# rsiw runs in four modes: MPA CRCs on and off (siw-siw runs without), large FPDUs
# on and off (RSIW_MODES).
. /rsiw/lib.sh
setup_net
BW_ITERS=${BENCH_BW_ITERS:-2000}
LAT_ITERS=${BENCH_LAT_ITERS:-1000}
# The atomic rounds measure steady state: 2000 Atomics take 30-90 ms here, about the
# time the scheduler needs to spread perftest's two busy-polling processes over the
# two vCPUs, so such a short run measured where the processes happened to start (both
# rsiw and rxe were bimodal run to run). 20000 Atomics (0.3-2 s) and 5000 round trips
# per latency run are past that (Documentation/performance.md, runs R on).
AT_ITERS=${BENCH_ATOMIC_ITERS:-20000}
ROUND_LAT_ITERS=${BENCH_ROUND_LAT_ITERS:-5000}
# TCG on shared cores is noisy: each cell is the median of REPEAT runs, and of
# ROUNDS runs for the atomic rounds (below).
REPEAT=${BENCH_REPEAT:-3}
ROUNDS=${BENCH_ATOMIC_ROUNDS:-5}
ROUND=
port=19000

# attempt TEST DEV SIZE ITERS OPTS…: one perftest run, retried once if it failed (the
# retry is named in the table's header, not hidden). Runs in this shell (the port
# counter must advance); the result line or the failure is left in $out.
attempt() {
    # Own names: this runs in the caller's shell, whose t/d/size must survive.
    a_t=$1 a_d=$2 a_s=$3 a_n=$4
    shift 4
    # perftest_once: the retry is this function's, named in the header.
    port=$((port + 1))
    out=$(perftest_once "$a_t" "$a_d" "$a_s" "$a_n" $port "$@") && return 0
    echo "$out"
    echo "RSIW-BENCH info retried $a_d $a_t: $(echo "$out" | grep -E 'client exit|Event:' | tr -s ' \t\n' ' ')"
    port=$((port + 1))
    out=$(perftest_once "$a_t" "$a_d" "$a_s" "$a_n" $port "$@")
}

# Values of each cell so far, one file per cell (`vals`), or why it has none (`failed`).
BD=/tmp/bench-cells
rm -rf "$BD"
mkdir -p "$BD"

# cell DEV TEST SIZE: the cell's name as printed, `${LBL:-DEV} TEST[@SIZE]`.
cell() {
    echo "${LBL:-$1} $2${3:+@$3}"
}

# sample DEV TEST[:LABEL] FIELD ITERS SIZE OPTS…: one run of TEST (retried once if it
# failed or printed a rate of 0); appends field FIELD of its result line to the cell,
# or marks the cell failed (it then takes no more runs).
sample() {
    d=$1 t=$2 field=$3 iters=$4 size=$5
    shift 5
    c=$(cell "$d" "$t" "$size")
    f="$BD/$(echo "$c" | tr ' /:@' '____')"
    [ -e "$f.failed" ] && return 1
    if ! attempt "${t%%:*}" "$d" "$size" "$iters" "$@"; then
        echo "$out"
        echo "failed" > "$f.failed"
        fail "bench $c $*" "no result line"
        return 1
    fi
    echo "$out"
    # perftest may glue "Failed to disconnect…" to the last number.
    v=$(echo "$out" | awk -v f="$field" '{ v = $f; sub(/[^0-9.].*/, "", v); print v }')
    if [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v + 0 == 0) }'; then
        # perftest 4.5 sometimes prints a message rate of 0.000000 for a run that
        # completed (its cycle arithmetic, not the device): not a measurement.
        echo "RSIW-BENCH info retried $c: perftest printed 0 for a completed run"
        v=""
        if attempt "${t%%:*}" "$d" "$size" "$iters" "$@"; then
            echo "$out"
            v=$(echo "$out" | awk -v f="$field" '{ v = $f; sub(/[^0-9.].*/, "", v); print v }')
            awk -v v="$v" 'BEGIN { exit !(v + 0 == 0) }' && v=""
        fi
    fi
    if [ -z "$v" ]; then
        # e.g. `inf` latencies of a guest without a calibrated TSC: no number to report.
        echo "failed: no number in the result line" > "$f.failed"
        fail "bench $c $*" "no number in the result line"
        return 1
    fi
    echo "$v" >> "$f.vals"
    # In the atomic rounds, each value is also named by its round, so that xtask can
    # pair the runs made side by side.
    [ -n "$ROUND" ] && echo "RSIW-BENCH info round $ROUND $c $v"
    return 0
}

# report DEV TEST[:LABEL] UNIT SIZE: the median of the cell's values and their spread
# (RSIW-BENCH lines), or why it has none.
report() {
    c=$(cell "$1" "$2" "$4")
    f="$BD/$(echo "$c" | tr ' /:@' '____')"
    if [ -e "$f.failed" ] || [ ! -s "$f.vals" ]; then
        echo "RSIW-BENCH $c n/a $(cat "$f.failed" 2>/dev/null || echo failed)"
        return
    fi
    vals=$(tr '\n' ' ' < "$f.vals")
    med=$(sort -n "$f.vals" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    [ "$(wc -l < "$f.vals")" -gt 1 ] && echo "RSIW-BENCH info spread $c: $vals"
    echo "RSIW-BENCH $c $3 $med"
    pass "bench $c"
}

# one DEV TEST[:LABEL] UNIT FIELD ITERS SIZE OPTS…: run TEST $REPEAT times, report the
# median of field FIELD of its result lines under TEST[:LABEL], and the spread.
one() {
    o_d=$1 o_t=$2 o_unit=$3 o_field=$4 o_iters=$5 o_size=$6
    shift 6
    i=0
    while [ $i -lt "$REPEAT" ]; do
        i=$((i + 1))
        sample "$o_d" "$o_t" "$o_field" "$o_iters" "$o_size" "$@" || break
    done
    report "$o_d" "$o_t" "$o_unit" "$o_size"
}

# Bandwidth sizes and their iterations (a 1 MiB run moves BW_BIG_ITERS MiB).
BW_SIZES=${BENCH_BW_SIZES:-4096 65536 1048576}
BW_BIG_ITERS=${BENCH_BW_BIG_ITERS:-200}
LAT_SIZES=${BENCH_LAT_SIZES:-8 4096}
bw_iters() { if [ "$1" -ge 1048576 ]; then echo "$BW_BIG_ITERS"; else echo "$BW_ITERS"; fi; }

# verbs_bench DEV: the bandwidth set (each size, one QP and four: `:q4`) and the
# latency set.
verbs_bench() {
    for q in 1 4; do
        for s in $BW_SIZES; do
            for t in ib_send_bw ib_write_bw ib_read_bw; do
                if [ $q = 1 ]; then
                    one "$1" $t Gb/s 4 "$(bw_iters "$s")" "$s" -R --report_gbits
                else
                    one "$1" "$t:q$q" Gb/s 4 "$(bw_iters "$s")" "$s" -R --report_gbits -q $q
                fi
            done
        done
    done
    for s in $LAT_SIZES; do
        for t in ib_send_lat ib_write_lat ib_read_lat; do
            one "$1" $t us 5 "$LAT_ITERS" "$s" -R
        done
    done
}

# kmem: kernel memory in use, KiB: slab, vmalloc, and all memory not free.
kmem() {
    awk '/^MemTotal:/ { t = $2 } /^MemFree:/ { f = $2 } /^Slab:/ { s = $2 }
         /^VmallocUsed:/ { v = $2 } END { print s, v, t - f }' /proc/meminfo
}

# slabs FILE: active objects and object size per slab cache, if the kernel has
# /proc/slabinfo (SLUB_DEBUG: the debug flavour; the perf flavour keeps SLUB_TINY, whose
# slab memory per QP is exact, and has none).
slabs() {
    if [ -r /proc/slabinfo ]; then
        awk 'NR > 2 { print $1, $2, $4 }' /proc/slabinfo > "$1"
    else
        : > "$1"
    fi
}

# slab_growth BEFORE AFTER N: the slab caches that grew or shrank by 0.2 objects per QP
# or more between two `slabs` files, with octets per QP (objects × object size), the
# largest first.
slab_growth() {
    awk -v n="$3" 'FNR == NR { a[$1] = $2; next }
        { d = ($2 - a[$1]) / n; if (d >= 0.2 || d <= -0.2) printf "%d %s %.2f %d\n", d * $3, $1, d, $3 }' \
        "$1" "$2" | sort -n -r | awk '{ printf "%s %+.2f x %d = %+d octets/QP; ", $2, $3, $4, $1 }'
}

# tcp_socks: TCP sockets here that are not listening (kernel sockets, iWARP's, count).
tcp_socks() {
    awk 'FNR > 1 && $4 != "0A" { n++ } END { print n + 0 }' /proc/net/tcp /proc/net/tcp6
}

# rts_qps DEV: DEV's QPs in RTS.
rts_qps() {
    rdma resource show qp link "$1/1" 2>/dev/null | grep -c ' state RTS '
}

# qp_memory DEV: memory per QP with QPS connected QPs on each side (perftest's
# default depths, `ib_write_bw -q`), both sides in this VM: what the device adds
# to slab, vmalloc and all memory in use, while the connections are up, divided
# by the QPs (2 × QPS). perftest's own memory is the same for every device.
# The connections of the runs before close first (up to 90 s: TIME-WAIT is 60), so
# that their sockets are not freed during the measurement, and the sample is taken
# once perftest has connected every QP (up to 30 s).
QPS=${BENCH_MEM_QPS:-100}
qp_memory() {
    i=0
    while [ "$(tcp_socks)" -gt 0 ] && [ $i -lt 90 ]; do
        sleep 1
        i=$((i + 1))
    done
    echo "RSIW-BENCH info memory $1: $(tcp_socks) TCP sockets left over after $i s"
    sync
    echo 2 > /proc/sys/vm/drop_caches
    set -- "$1" $(kmem)
    d=$1 s0=$2 v0=$3 u0=$4
    slabs /tmp/slabs-before
    port=$((port + 1))
    ib_write_bw -F -d "$d" -R -q "$QPS" -D 20 -s 4096 -p $port > /tmp/mem-srv.log 2>&1 &
    srv=$!
    wait_rdma_listen
    wait_tcp_listen $port
    ib_write_bw -F -d "$d" -R -q "$QPS" -D 20 -s 4096 -p $port 10.0.2.15 > /tmp/mem-cli.log 2>&1 &
    cli=$!
    # Sample once every QP is connected (in RTS), a moment later: the traffic flows.
    i=0
    while [ "$(rts_qps "$d")" -lt $((2 * QPS)) ] && [ $i -lt 30 ]; do
        sleep 1
        i=$((i + 1))
    done
    sleep 2
    echo "RSIW-BENCH info memory $d: $(rts_qps "$d") of $((2 * QPS)) QPs in RTS after $i s"
    set -- $(kmem)
    slabs /tmp/slabs-during
    wait $cli; rc=$?
    wait $srv
    if [ $rc -ne 0 ]; then
        tail -n 5 /tmp/mem-cli.log
        echo "RSIW-BENCH $d qp-memory n/a perftest -q $QPS failed"
        fail "bench $d qp-memory" "perftest -q $QPS failed"
        return
    fi
    n=$((2 * QPS))
    echo "RSIW-BENCH info memory $d: slab $s0 -> $1 KiB, vmalloc $v0 -> $2 KiB, in use $u0 -> $3 KiB with $n QPs"
    [ -s /tmp/slabs-during ] &&
        echo "RSIW-BENCH info slab caches $d: $(slab_growth /tmp/slabs-before /tmp/slabs-during $n)"
    echo "RSIW-BENCH $d qp-slab KiB/QP $(( ($1 - s0) / n ))"
    echo "RSIW-BENCH $d qp-vmalloc KiB/QP $(( ($2 - v0) / n ))"
    echo "RSIW-BENCH $d qp-memory KiB/QP $(( ($3 - u0) / n ))"
    pass "bench $d qp-memory"
}

# has_atomics DEV: the device reports atomics; otherwise its atomic cells say why not.
has_atomics() {
    ibv_devinfo -v -d "$1" | grep -Eq 'atomic_cap:[[:space:]]+ATOMIC_(HCA|GLOB)' && return 0
    for a in FETCH_AND_ADD CMP_AND_SWAP; do
        echo "RSIW-BENCH $1 ib_atomic_bw:$a n/a atomic_cap NONE"
        echo "RSIW-BENCH $1 ib_atomic_lat:$a n/a atomic_cap NONE"
    done
    return 1
}

# atomic_round DEV: one run each of the FetchAdd and CmpSwap latency, then of their
# message rates (the latencies first, next to the Read latency that rsiw's round
# measures just before them: the closer in time, the better the pairing).
atomic_round() {
    for a in FETCH_AND_ADD CMP_AND_SWAP; do
        sample "$1" "ib_atomic_lat:$a" 5 "$ROUND_LAT_ITERS" "" -R -A $a
    done
    for a in FETCH_AND_ADD CMP_AND_SWAP; do
        sample "$1" "ib_atomic_bw:$a" 5 "$AT_ITERS" "" -R -A $a
    done
}

# atomic_report DEV
atomic_report() {
    for a in FETCH_AND_ADD CMP_AND_SWAP; do
        report "$1" "ib_atomic_bw:$a" Mops/s ""
        report "$1" "ib_atomic_lat:$a" us ""
    done
}

echo "RSIW-BENCH info kernel $(uname -r) cpus $(nproc)"

# A guest whose TSC calibration failed at boot (host busy: "tsc: Marking TSC unstable
# due to could not calculate TSC khz") runs on a jiffies clock, and perftest's latencies
# become `inf`. Say so at once and stop: xtask boots the bench again. A guest that boots
# fast reaches this line on `tsc-early`, before the kernel's TSC refinement (a delayed
# work item) switches to `tsc`: wait for the switch, 30 s at most.
cs_now() { cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null; }
n=0
while [ "$(cs_now)" = tsc-early ] && [ $n -lt 60 ]; do sleep 0.5; n=$((n + 1)); done
cs=$(cs_now)
if [ "$cs" != tsc ]; then
    echo "RSIW-BENCH clocksource ${cs:-unknown}"
    exit 3
fi

# TCP ceiling: iperf3 over the same address the RDMA devices use.
iperf3 -s -D -1 -p 5201 > /dev/null 2>&1
sleep 1
g=$(iperf3 -c 10.0.2.15 -p 5201 -t 5 -f g 2>&1 | awk '/receiver/ {print $(NF-2); exit}')
if [ -n "$g" ]; then echo "RSIW-BENCH tcp iperf3 Gb/s $g"; pass "bench iperf3"; else
    echo "RSIW-BENCH tcp iperf3 n/a failed"; fail "bench iperf3" "no receiver line"; fi

# The guest's memory-copy rate: the ceiling of a receiver that copies each byte once.
if command -v perf > /dev/null; then
    m=$(perf bench mem memcpy -s 64MB -l 20 2>&1 | awk '/GB\/sec/ { v = $1 } END { print v }')
    if [ -n "$m" ]; then echo "RSIW-BENCH guest memcpy GB/s $m"; pass "bench memcpy"; else
        echo "RSIW-BENCH guest memcpy n/a perf bench printed no rate"; fi
else
    echo "RSIW-BENCH guest memcpy n/a no perf in the image (linux-perf on the host)"
fi

# rsiw's modes, LABEL:mpa_crc:mpa_large_fpdu. siw neither asks for nor requires MPA
# CRCs, so siw-siw runs without them, while rsiw asks by default: the like-for-like
# rows are rsiw's without CRC. Large FPDUs (rsiw↔rsiw only) on and off, the latter
# without CRC (add rsiw0-rfc:Y:N for CRC with RFC FPDUs; the table has its column).
RSIW_MODES=${BENCH_RSIW_MODES:-rsiw0:Y:Y rsiw0-nocrc:N:Y rsiw0-nocrc-rfc:N:N}
for T in siw rsiw; do
    dev_up "$T" ${T}0 eth0 || continue
    if [ "$T" = siw ]; then
        verbs_bench siw0
        has_atomics siw0
        qp_memory siw0
    else
        for m in $RSIW_MODES; do
            l=${m%%:*} rest=${m#*:}
            echo "${rest%%:*}" > /sys/module/rsiw/parameters/mpa_crc
            echo "${rest#*:}" > /sys/module/rsiw/parameters/mpa_large_fpdu
            LBL=$l verbs_bench rsiw0
        done
        echo Y > /sys/module/rsiw/parameters/mpa_crc
        echo Y > /sys/module/rsiw/parameters/mpa_large_fpdu
        qp_memory rsiw0
    fi
    dev_down "$T" ${T}0
done

# At an Ethernet MTU: lo (the path of every run above, MTU 65536) set to 1500, so that
# the EMSS bounds RFC 5044 FPDUs as on a real link (above, siw's and rsiw's RFC FPDUs
# are as long as large ones). 64 KiB bandwidth, one QP: siw, rsiw without CRC with
# large FPDUs, and without them.
MTU_MODES=${BENCH_MTU_MODES:-rsiw0-mtu1500:Y rsiw0-mtu1500-rfc:N}
ip link set lo mtu 1500
for T in siw rsiw; do
    dev_up "$T" ${T}0 eth0 || continue
    for m in $( [ $T = siw ] && echo siw0-mtu1500:- || echo $MTU_MODES); do
        if [ $T = rsiw ]; then
            echo N > /sys/module/rsiw/parameters/mpa_crc
            echo "${m#*:}" > /sys/module/rsiw/parameters/mpa_large_fpdu
        fi
        for t in ib_send_bw ib_write_bw ib_read_bw; do
            LBL=${m%%:*} one ${T}0 $t Gb/s 4 "$BW_ITERS" 65536 -R --report_gbits
        done
    done
    if [ $T = rsiw ]; then
        echo Y > /sys/module/rsiw/parameters/mpa_crc
        echo Y > /sys/module/rsiw/parameters/mpa_large_fpdu
    fi
    dev_down "$T" ${T}0
done
ip link set lo mtu 65536

# NFS: NFS_MB MiB O_DIRECT sequential write, then read, in 1 MiB calls, through a mount
# of this VM's own export (knfsd, tmpfs) at 10.0.2.15: over RPC-over-RDMA on siw0 and on
# rsiw0 (proto=rdma, port 20049; one device at a time), and over NFS/TCP (proto=tcp,
# port 2049) as the reference. REPEAT runs each; xtask reports the medians and the
# ratios to siw (target rsiw/siw >= 1.0).
NFS_MB=${BENCH_NFS_MB:-256}

# nfs_rate LABEL TEST write|read: one `rsiw-nfs-io rate` run into the cell LABEL TEST.
nfs_rate() {
    c=$(cell "$1" "$2" "${NFS_MB}M")
    f="$BD/$(echo "$c" | tr ' /:@' '____')"
    [ -e "$f.failed" ] && return 1
    r=$(timeout 600 rsiw-nfs-io rate "$3" /mnt/bench.bin "${NFS_MB}M" 1M direct 2>&1)
    echo "$c: $r"
    v=$(echo "$r" | sed -n 's/^MiB\/s=\([0-9.]*\) .*/\1/p')
    if [ -z "$v" ]; then
        echo "failed: $r" | tr '\n' ' ' > "$f.failed"
        fail "bench $c" "$r"
        return 1
    fi
    echo "$v" >> "$f.vals"
}

# nfs_bench LABEL DEV PROTO PORT: mount 10.0.2.15:/export over PROTO (with DEV serving the
# RDMA listener), REPEAT write/read pairs, unmount.
nfs_bench() {
    NFS_EXPORT_SIZE=$((NFS_MB + 64))m nfs_server_start "$2" /export || return 1
    if check "bench: mount over $3 ($1)" nfs_mount 10.0.2.15 4.2 /mnt "proto=$3,port=$4"; then
        i=0
        while [ $i -lt "$REPEAT" ]; do
            i=$((i + 1))
            nfs_rate "$1" nfs_write_direct write
            nfs_rate "$1" nfs_read_direct read
            rm -f /mnt/bench.bin
        done
        [ "$3" = rdma ] && grep -A1 'xprt:' /proc/self/mountstats | head -n 2
        umount /mnt
    fi
    nfs_server_stop /export
    for t in nfs_write_direct nfs_read_direct; do report "$1" "$t" MiB/s "${NFS_MB}M"; done
}

for T in siw rsiw; do
    dev_up "$T" ${T}0 eth0 || continue
    nfs_bench ${T}0 ${T}0 rdma $NFS_RDMA_PORT
    if [ "$T" = rsiw ]; then
        # Like for like with siw-siw, which runs without MPA CRCs (see above).
        echo N > /sys/module/rsiw/parameters/mpa_crc
        nfs_bench rsiw0-nocrc rsiw0 rdma $NFS_RDMA_PORT
        echo Y > /sys/module/rsiw/parameters/mpa_crc
        # NFS/TCP once, with rsiw0 up (the server's RDMA listener needs a device).
        nfs_bench nfs-tcp rsiw0 tcp 2049
    fi
    modprobe -r rpcrdma 2>/dev/null
    dev_down "$T" ${T}0
done

# Connection set-up and teardown: librdmacm's cmtime, CMTIME_CONNS connections over this
# VM's address (client and server here), on siw and rsiw in turn, REPEAT rounds; the
# cells are the `connect` and `disconnect` steps' microseconds per connection.
CMTIME_CONNS=${BENCH_CMTIME_CONNS:-300}

# cmtime_sample DEV: one cmtime run on DEV (up), its two steps into their cells.
cmtime_sample() {
    port=$((port + 1))
    cmtime -p $port > /tmp/cmt-server.log 2>&1 &
    srv=$!
    wait_tcp_listen $port
    timeout 600 cmtime -s 10.0.2.15 -p $port -c "$CMTIME_CONNS" > /tmp/cmt.log 2>&1
    rc=$?
    kill $srv 2>/dev/null
    wait $srv 2>/dev/null
    cat /tmp/cmt.log
    for s in connect disconnect; do
        c=$(cell "$1" "cmtime:$s" "$CMTIME_CONNS")
        f="$BD/$(echo "$c" | tr ' /:@' '____')"
        v=$(awk -v s="$s" '$1 == s { print $NF; exit }' /tmp/cmt.log)
        if [ $rc -ne 0 ] || [ -z "$v" ]; then
            echo "failed: cmtime exit $rc" > "$f.failed"
            fail "bench $c" "cmtime exit $rc"
        else
            echo "$v" >> "$f.vals"
        fi
    done
}

i=0
while [ $i -lt "$REPEAT" ]; do
    i=$((i + 1))
    for T in siw rsiw; do
        dev_up "$T" ${T}0 eth0 || continue
        cmtime_sample ${T}0
        dev_down "$T" ${T}0
    done
done
for T in siw rsiw; do
    for s in connect disconnect; do report ${T}0 "cmtime:$s" us "$CMTIME_CONNS"; done
done

# Atomics, in rounds: each round brings rsiw up and runs its 8-byte Read latency and
# its atomics once each, then does the same for rxe's atomics (one device at a time:
# both would answer rdma_cm on the same address). The targets compare rsiw with rxe
# and rsiw's atomic latency with its Read latency; on a host whose speed drifts
# (TCG on shared cores), runs made side by side compare like with like, where
# REPEAT runs of one test and then REPEAT of the other would not. Each value is
# printed with its round; xtask divides the values of one round (a paired ratio) and
# takes the median of those ratios as well as the ratio of the medians.
dev_up rsiw rsiw0 eth0 && { has_atomics rsiw0 && rs=1; dev_down rsiw rsiw0; }
dev_up rxe rxe0 eth0 && { has_atomics rxe0 && rx=1; dev_down rxe rxe0; }
ROUND=0
while [ $ROUND -lt "$ROUNDS" ]; do
    ROUND=$((ROUND + 1))
    if [ -n "$rs" ] && dev_up rsiw rsiw0 eth0; then
        sample rsiw0 ib_read_lat:rounds 5 "$ROUND_LAT_ITERS" 8 -R
        atomic_round rsiw0
        dev_down rsiw rsiw0
    fi
    if [ -n "$rx" ] && dev_up rxe rxe0 eth0; then
        atomic_round rxe0
        dev_down rxe rxe0
    fi
done
ROUND=
[ -n "$rs" ] && { report rsiw0 ib_read_lat:rounds us 8; atomic_report rsiw0; }
[ -n "$rx" ] && atomic_report rxe0
finish
