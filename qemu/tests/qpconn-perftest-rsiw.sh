#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: datapath
# rsiw-timeout: 600
# rsiw-group: qpconn
# Unmodified perftest WITHOUT -R (QPN/PSN/GID exchanged over perftest's own socket, the
# QPs moved INIT→RTR→RTS with an address vector: Documentation/qpconn.md) between two
# endpoints on rsiw0 (eth0, 10.0.2.15), with -x 1 (GID 1, eth0's IPv4 address): Send,
# RDMA Write and RDMA Read bandwidth at 64 KiB and latency at 8 B, ib_atomic_bw and
# ib_atomic_lat with FetchAdd and CmpSwap. Each must finish and print its result line.
# Without -x perftest picks GID 1 itself; -x 0 (the MAC-based GID) fails at RTR.
# Iterations are few (TCG): this shows the connection model works, the bench measures.
. /rsiw/lib.sh
# The listener's port for QP connections from modify_qp, stated (it is the default).
RSIW_MODPARAMS="qp_conn_port=4792"
setup_net
D=rsiw0
BW_ITERS=${PERF_BW_ITERS:-50}
LAT_ITERS=${PERF_LAT_ITERS:-100}

dev_up rsiw "$D" eth0 || finish
port=18800

# ib_send_bw on an iWARP device paces its Sends with credits: RDMA Writes that the
# server posts from QPs it leaves in RTR (Documentation/qpconn.md). perftest 4.5-0.17
# deregisters that credit MR only with -R (destroy_ctx, perftest_resources.c), so
# without -R both ends end with "Failed to deallocate PD - Device or resource busy"
# (ib_core refuses a PD that still has an MR) and exit 1, after their result lines,
# on any iWARP device. send_bw_done PORT: both result lines there, for all $BW_ITERS
# Sends, and no other complaint in either log.
send_bw_done() {
    local log=/tmp/perf-ib_send_bw-$D
    perftest_run ib_send_bw "$D" 65536 "$BW_ITERS" "$1" -x 1 --report_gbits
    grep -E "^[[:space:]]*65536[[:space:]]+$BW_ITERS[[:space:]]" "$log.client.log" &&
        grep -Eq "^[[:space:]]*65536[[:space:]]+$BW_ITERS[[:space:]]" "$log.server.log" &&
        ! cat "$log.client.log" "$log.server.log" |
            sed -e 's/Failed to deallocate PD - Device or resource busy//' \
                -e "/^Couldn't destroy all SEND resources$/d" |
            grep -Ei "fail|couldn't|error|unable"
}
port=$((port + 1))
check "ib_send_bw -x 1 64 KiB x $BW_ITERS: every Send through (credits from a server in RTR)" \
    send_bw_done $port
for t in ib_write_bw ib_read_bw; do
    port=$((port + 1))
    check_output "$t -x 1 64 KiB x $BW_ITERS: result line" '^[[:space:]]*65536[[:space:]]' \
        perftest_run $t "$D" 65536 "$BW_ITERS" $port -x 1 --report_gbits
done
for t in ib_send_lat ib_write_lat ib_read_lat; do
    port=$((port + 1))
    check_output "$t -x 1 8 B x $LAT_ITERS: result line" '^[[:space:]]*8[[:space:]]' \
        perftest_run $t "$D" 8 "$LAT_ITERS" $port -x 1
done
for a in FETCH_AND_ADD CMP_AND_SWAP; do
    port=$((port + 1))
    check_output "ib_atomic_bw -x 1 -A $a x $BW_ITERS: result line" '^[[:space:]]*8[[:space:]]' \
        perftest_run ib_atomic_bw "$D" "" "$BW_ITERS" $port -x 1 -A $a
    port=$((port + 1))
    check_output "ib_atomic_lat -x 1 -A $a x $LAT_ITERS: result line" '^[[:space:]]*8[[:space:]]' \
        perftest_run ib_atomic_lat "$D" "" "$LAT_ITERS" $port -x 1 -A $a
done
# Without -x, perftest 4.5 picks a GID itself on an Ethernet port (the IPv4-mapped one,
# GID 1): the run works as with -x 1.
port=$((port + 1))
check_output "ib_write_bw without -x (perftest picks GID 1): result line" '^[[:space:]]*65536[[:space:]]' \
    perftest_run ib_write_bw "$D" 65536 10 $port
# GID 0 is the MAC-based GID: rsiw cannot reach a peer by MAC, so RTR is refused and
# perftest says so instead of hanging.
port=$((port + 1))
check_fails "ib_write_bw -x 0 (the MAC-based GID): fails at RTR" \
    perftest_run ib_write_bw "$D" 65536 10 $port -x 0
check_output "ib_write_bw -x 0: the client says RTR failed (and did not hang until its limit)" \
    'RTR' cat /tmp/perf-ib_write_bw-$D.client.log
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
