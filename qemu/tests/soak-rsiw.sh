#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-timeout: 600
# The soak: RSIW_SOAK_MIN minutes of mixed traffic on rsiw0, both ends in this VM,
# every byte checked end to end by rsiw-load (Documentation/testing.md, "The soak").
# `cargo xtask soak` runs it for 60 minutes by default and plots its samples; in
# `cargo xtask test` (RSIW_SOAK_MIN unset) it runs for 30 s, the short run of the
# same checks:
#   - steady: 16 connections held for the whole run, rounds of Send, RDMA Write, Read
#     of what was written, FetchAdd and CmpSwap, payloads up to 4 KiB;
#   - churn: 8 connections, each closed after 20 rounds and opened again;
#   - bulk: 2 connections of RDMA Write + Read back of up to 256 KiB;
#   - atomics: 4 connections of FetchAdd/CmpSwap only;
#   - one short-lived process at the start and then every 2 minutes (every 20 s in a
#     run under 6 minutes, every 10 s in the short run), none in the last such gap: 32
#     connections of 5 rounds each, so processes come and go, with their PDs, MRs, CQs
#     and QPs.
# Once a minute one `RSIW-SOAK` line records memory (in use, slab, unreclaimable
# slab), rsiw's objects (`rdma resource`: QPs, cm_ids, MRs, CQs, PDs), the port
# counters (`rdma statistic show link rsiw0/1`) and the clients' verified rounds;
# xtask turns those lines into the report (CSV and SVG curves). At the end every
# process must exit 0 with no verify error and no hung work request, every rsiw object
# must be gone, and memory must come back to its level before the traffic within
# mem_slack_kb (4 MiB plus KASAN's quarantine). xtask checks on the host that memory
# did not keep growing during the run (soak.rs).
. /rsiw/lib.sh
setup_net
# The suite's short run: 30 s, a short-lived process at the start (another if it ends soon).
MIN=${RSIW_SOAK_MIN:-0}
SECS=$((MIN * 60))
GAP=120
[ "$MIN" -lt 6 ] && GAP=20
[ "$SECS" -eq 0 ] && SECS=30 && GAP=10
D=rsiw0
P=7480
A=10.0.2.15:$P

# count KIND: rsiw0's objects of one `rdma resource show` kind.
count() {
    rdma resource show "$1" 2>/dev/null | grep -cw "$D"
}

# rounds FILE: the last `rounds N` a client's --report printed (0 before its first).
rounds() {
    sed -n 's/.* rounds \([0-9]*\).*/\1/p' "$1" 2>/dev/null | tail -n 1 | grep . || echo 0
}

# sample T: one RSIW-SOAK line (key=value pairs) for minute T.
sample() {
    local c
    c=$(rdma statistic show link "$D/1" | tr -s ' ' '\n' |
        awk 'NR > 2 { if (k == "") k = $0; else { printf " %s=%s", k, $0; k = "" } }')
    echo "RSIW-SOAK t=$1 used_kb=$(mem_used_kb) slab_kb=$(awk '/^Slab:/ { print $2 }' /proc/meminfo)" \
        "sunreclaim_kb=$(awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo)" \
        "qps=$(count qp) cm_ids=$(count cm_id) mrs=$(count mr) cqs=$(count cq) pds=$(count pd)" \
        "rounds_steady=$(rounds /tmp/steady.log) rounds_churn=$(rounds /tmp/churn.log)" \
        "rounds_bulk=$(rounds /tmp/bulk.log) rounds_atomic=$(rounds /tmp/atomic.log)" \
        "short_runs=$short_runs short_failed=$short_failed$c"
}

dev_up rsiw $D eth0 || finish
ulimit -n 8192
echo "soak: $SECS s"
start=$(mem_settled_kb)
rsiw-load server $A --report 60 > /tmp/server.log 2>&1 &
server=$!
step "server listens" wait_tcp_listen $P || finish
rsiw-load client $A --conns 16 --seconds $SECS --ops swra --size 4096 --report 30 > /tmp/steady.log 2>&1 &
steady=$!
rsiw-load client $A --conns 8 --seconds $SECS --ops swra --churn 20 --size 2048 --report 30 > /tmp/churn.log 2>&1 &
churn=$!
rsiw-load client $A --conns 2 --seconds $SECS --ops wr --size 262144 --report 30 > /tmp/bulk.log 2>&1 &
bulk=$!
rsiw-load client $A --conns 4 --seconds $SECS --ops a --report 30 > /tmp/atomic.log 2>&1 &
atomic=$!

short_runs=0
short_failed=0
short=
# short_reap: count the short-lived client that ended.
short_reap() {
    if wait "$short"; then
        short_runs=$((short_runs + 1))
    else
        short_failed=$((short_failed + 1))
        echo "soak: a short-lived client failed:"
        tail -n 3 /tmp/short.log
    fi
    short=
}
# short_start: start a short-lived client.
short_start() {
    last_short=$(($(date +%s) - t0))
    rsiw-load client $A --conns 32 --rounds 5 --size 1024 > /tmp/short.log 2>&1 &
    short=$!
}
t0=$(date +%s)
next=60
# The first one starts with the long clients, so that every run has one however slow
# the loop's turns are (a loaded host can stretch one past the next start's window).
short_start
sample 0
while :; do
    now=$(($(date +%s) - t0))
    [ "$now" -ge "$SECS" ] && break
    if [ -n "$short" ] && ! kill -0 "$short" 2>/dev/null; then
        short_reap
    fi
    # A short-lived process every $GAP s, none in the last $GAP s (it must end before
    # the long clients do).
    if [ -z "$short" ] && [ "$now" -ge "$((last_short + GAP))" ] && [ $((now + GAP)) -lt "$SECS" ]; then
        short_start
    fi
    if [ "$now" -ge "$next" ]; then
        minute=$((now / 60))
        sample "$minute"
        next=$(((minute + 1) * 60))
    fi
    sleep 5
done
if [ -n "$short" ]; then
    check_wait "the last short-lived client ends" "$short" 300 && short_runs=$((short_runs + 1))
    short=
fi

for c in steady churn bulk atomic; do
    eval "pid=\$$c"
    check_wait "$c client ends cleanly" "$pid" 300
    grep -v "^rsiw-load client: t " /tmp/$c.log | tail -n 5
    check_output "$c client: no verify error, no hung work request, no failed connection" \
        "failed 0 setup_failed 0; rounds [1-9][0-9]*;.* verify_errors 0;.* hung 0;" tail -n 1 /tmp/$c.log
done
check "short-lived clients: $short_runs ran, none failed" test "$short_failed" -eq 0 -a "$short_runs" -gt 0
kill $server
check_wait "server ends cleanly" $server
tail -n 1 /tmp/server.log
check_output "server: every Send right, nothing hung, nothing left open" \
    "open 0; sends verified [0-9]* bad 0;.* hung 0$" tail -n 1 /tmp/server.log
sample "$((($(date +%s) - t0 + 59) / 60))"
check "no QP left" retry 60 sh -c "! rdma resource show qp | grep -qw $D"
check "no cm_id left" retry 30 sh -c "! rdma resource show cm_id | grep -qw $D"
for k in mr cq pd; do
    check "no $k left" test "$(count $k)" -eq 0
done
end=$(mem_settled_kb)
slack=$(mem_slack_kb)
echo "RSIW-SOAK-MEM start_kb=$start end_kb=$end slack_kb=$slack"
check_mem_back "its starting level" "$start" "$end"
check "no MPA CRC or framing error, no Terminate" sh -c \
    "rdma statistic show link $D/1 | grep -Eq 'mpa_crc_errors 0 mpa_framing_errors 0 terminates_sent_llp 0 terminates_sent_ddp 0 terminates_sent_rdmap 0'"
dev_down rsiw $D
finish
