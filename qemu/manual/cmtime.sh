#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: siw
# rsiw-timeout: 900
# Connection set-up and teardown cost, rsiw against siw in the same VM: librdmacm's
# cmtime (rdmacm-utils) connects RSIW_CMTIME_CONNS (default 300) connections over the
# VM's own address, one device at a time, RSIW_CMTIME_ROUNDS (default 2) rounds each,
# alternating: siw, rsiw, and rsiw as siw 6.12 is set (mpa_crc=N mpa_peer_to_peer=N:
# no CRC, no RTR) to tell what the configuration costs from what the code does.
# Prints each run's table and, per round, the `connect` and `disconnect` steps'
# microseconds per connection and rsiw's ratios to siw. On the debug kernel only the
# ratios mean anything. (`cargo xtask bench` has the same rows on the perf kernel.) Run it with `cargo xtask vm --script qemu/manual/cmtime.sh`.
. /rsiw/lib.sh
setup_net
N=${RSIW_CMTIME_CONNS:-300}
ROUNDS=${RSIW_CMTIME_ROUNDS:-2}
PORT=7700

# tcp_ext NAME...: those TcpExt counters of /proc/net/netstat, `NAME=value` each.
tcp_ext() {
    awk -v want=" $* " '$1 == "TcpExt:" { if (!n) { for (i = 2; i <= NF; i++) h[i] = $i; n = 1 }
        else for (i = 2; i <= NF; i++) if (index(want, " " h[i] " ")) printf "%s=%s ", h[i], $i }
        END { print "" }' /proc/net/netstat
}

# busy_ticks: the CPU time of both vCPUs not idle, in USER_HZ ticks (/proc/stat).
busy_ticks() {
    awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 }' /proc/stat
}

# cm_run MOD DEV [LABEL PARAM=VALUE…]: one cmtime run on DEV (with those rsiw
# parameters); leaves its table in /tmp/cmt-LABEL.log (LABEL: DEV by default).
cm_run() {
    mod=$1 dev=$2 label=${3:-$2}
    shift 2; [ $# -gt 0 ] && shift
    dev_up "$mod" "$dev" eth0 || return 1
    for p in "$@"; do echo "${p#*=}" > "/sys/module/rsiw/parameters/${p%%=*}"; done
    PORT=$((PORT + 1))
    cmtime -p $PORT > /tmp/cmt-server.log 2>&1 &
    srv=$!
    step "$2: cmtime server listens" wait_tcp_listen $PORT
    b0=$(busy_ticks)
    timeout 600 cmtime -s 10.0.2.15 -p $PORT -c "$N" > "/tmp/cmt-$label.log" 2>&1
    rc=$?
    b1=$(busy_ticks)
    echo "$label: CPU busy $(( (b1 - b0) * 10 )) ms for $N connections ($(( (b1 - b0) * 10000 / N )) us per connection, both ends)"
    kill $srv 2>/dev/null
    wait $srv 2>/dev/null
    cat "/tmp/cmt-$label.log"
    echo "$label TCP since boot: $(tcp_ext ListenOverflows ListenDrops TCPSynRetrans TCPTimeouts TCPBacklogDrop)"
    check "$label: cmtime -c $N exits 0" [ $rc -eq 0 ]
    dev_down "$mod" "$dev"
}

# us_per_conn DEV STEP: the `us / conn` column of STEP in DEV's table.
us_per_conn() {
    awk -v s="$2" '$1 == s { print $NF; exit }' "/tmp/cmt-$1.log"
}

i=0
while [ $i -lt "$ROUNDS" ]; do
    i=$((i + 1))
    cm_run siw siw0 || break
    cm_run rsiw rsiw0 || break
    cm_run rsiw rsiw0 rsiw0-plain mpa_crc=N mpa_peer_to_peer=N || break
    for s in connect disconnect; do
        b=$(us_per_conn siw0 $s)
        for l in rsiw0 rsiw0-plain; do
            a=$(us_per_conn $l $s)
            echo "cmtime round $i $s: $l ${a:-?} us/conn, siw ${b:-?} us/conn, $l/siw $(awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }')"
        done
    done
done
finish
