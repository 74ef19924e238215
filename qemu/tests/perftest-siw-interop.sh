#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3
# rsiw-vms: 2
# rsiw-group: siw-pairs
# rsiw-requires: datapath siw
# rsiw-timeout: 900
# perftest -R between rsiw and siw (the C reference) across the socket network: siw on
# VM 0, rsiw on VM 1. Send/Write/Read bandwidth (64 KiB) and latency (8 B), each once with
# rsiw as server and once as client; each side checks its own end printed a result line.
# Then an RFC 7306 FetchAdd from rsiw to siw, which has no atomics: the rsiw requester
# must get an error completion from siw's Terminate (RFC 7306 §1.1), no hang, and both
# ends must tear down cleanly.
. /rsiw/lib.sh
setup_net
# Jumbo frames between the two: at 1500 the frame rate of two TCG guests limits the
# link to about 1 MB/s whatever the device (testing.md, "Two VMs").
ip link set eth1 mtu 9000
peer=$(peer_addr)
if [ "$RSIW_VM_INDEX" = 0 ]; then T=siw; else T=rsiw; fi
D=${T}0
ITERS=${PERF_ITERS:-100}
step "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
dev_up "$T" "$D" eth1 || finish
# siw 6.12 has its own lockdep report when it is the responder of a peer-to-peer (RTR)
# connection after it has carried bulk data: siw_qp_llp_data_ready read-locks
# sk_callback_lock with softirqs enabled (from release_sock), siw_rtr_data_ready
# write-locks it in softirq. cm-siw-interop covers RTR with siw; here rsiw initiates
# client-server (RFC 6581 without RTR) so a splat can only be rsiw's.
[ "$T" = rsiw ] && check "rsiw: mpa_peer_to_peer=N" sh -c 'echo N > /sys/module/rsiw/parameters/mpa_peer_to_peer'

sync=7100
# siw's address on eth1 (VM 0's).
if [ "$T" = siw ]; then siw_addr=$(ip -4 -o addr show eth1 | awk '{ split($4, a, "/"); print a[1] }')
else siw_addr=$peer; fi
# judge LABEL RC LOG: passes LABEL when RC is 0 and LOG has perftest's result line.
# A run that failed because siw put an FPDU with a wrong MPA CRC on the wire (shown by
# the capture's own CRC check, independent of either end) is siw's fault, not a case
# of rsiw's: it is reported as skipped with that reason, and on rsiw's side rsiw must
# have answered it with the LLP CRC Terminate (RFC 5044 §8), or that fails.
judge() {
    line=$(perftest_result "$3")
    if [ "$2" -eq 0 ] && [ -n "$line" ]; then pass "$1: $line"; return; fi
    if wire_bad_crc_from "$siw_addr"; then
        skip "$1" "siw sent an FPDU whose MPA CRC does not match its octets (the capture above)"
        [ "$T" = rsiw ] && check_output "$T: siw's wrong CRC answered with the CRC Terminate" \
            'sending Terminate TermCause \{ layer: 2, etype: 0, ecode: 2 \}' sh -c 'dmesg | grep Terminate'
        return
    fi
    fail "$1" "exit $2: $(tail -n 2 "$3")"
}
# Each side captures its run on eth1; when a run fails, the MPA CRC of every FPDU in
# the capture is recomputed (wire_capture_end), so that a CRC error either end reports
# names the end that sent it.
# serve TEST SIZE PORT OPTS…: perftest server here; released to the peer once listening.
# The client then says how its run ended: `done`; `failed` (this server is ended: it
# would wait for its timeout, and the two sides fall out of step); or `retry` when it
# was refused before this server listened (perftest_refused: perftest's own race
# between its two rdma_cm connections, Documentation/performance.md, "A connection
# flake seen on every device"), then this server, which never saw a request, is ended
# and both sides run once more on PORT + 1000.
serve() {
    t=$1 s=$2 p=$3; shift 3
    sync=$((sync + 1))
    serve_once $sync "$p" "$@" || serve_once $((sync + 500)) $((p + 1000)) "$@"
}
# serve_once SYNC PORT OPTS…: one try of serve; status 1 if the client asked for another.
serve_once() {
    y=$1 p=$2; shift 2
    wire_capture_start eth1 "$p"
    timeout 240 "$t" -F -d "$D" ${s:+-s "$s"} -n "$ITERS" -p "$p" "$@" > /tmp/srv.log 2>&1 &
    srv=$!
    word=
    # No client is coming if the peer was not told: end the server now.
    if wait_rdma_listen && signal_peer "$y"; then word=$(hear_peer $((y + 1000)) 270)
    else kill $srv 2>/dev/null; fi
    if [ "$word" = retry ] && [ "$y" = "$sync" ]; then
        kill $srv 2>/dev/null; wait $srv
        wire_capture_end "$p" 0
        echo "RSIW-INFO $T server: $t $*: the client was refused before perftest listened again; once more on port $((p + 1000))"
        return 1
    fi
    # A client that failed leaves this server waiting for its timeout: end it, and both
    # sides go on in step.
    [ "$word" = failed ] && sleep 5 && kill $srv 2>/dev/null
    wait $srv
    rc=$?
    line=$(perftest_result /tmp/srv.log)
    # perftest's Read latency server only serves: the client alone reports.
    [ "$t" = ib_read_lat ] && [ $rc -eq 0 ] && line="(no report on the Read server side)"
    ok=0; [ $rc -eq 0 ] && [ -n "$line" ] || ok=1
    [ $ok = 0 ] || { cat /tmp/srv.log; dmesg | tail -n 20; }
    wire_capture_end "$p" $ok
    if [ "$t" = ib_read_lat ] && [ $rc -eq 0 ]; then pass "$T server: $t $*: $line"
    else judge "$T server: $t $*" $rc /tmp/srv.log; fi
    return 0
}
# connect TEST SIZE PORT OPTS…: perftest client to the peer's server once it is up; a
# first try refused by perftest's race is tried once more (serve).
connect() {
    t=$1 s=$2 p=$3; shift 3
    sync=$((sync + 1))
    connect_once $sync "$p" "$@" || connect_once $((sync + 500)) $((p + 1000)) "$@"
}
# connect_once SYNC PORT OPTS…: one try of connect; status 1 if it asked for another.
connect_once() {
    y=$1 p=$2; shift 2
    wire_capture_start eth1 "$p"
    if ! wait_peer "$y"; then
        wire_capture_end "$p" 0
        fail "$T client: $t $*" "the peer's server never said it was up"
        return 0
    fi
    timeout 240 "$t" -F -d "$D" ${s:+-s "$s"} -n "$ITERS" -p "$p" "$@" "$peer" > /tmp/cli.log 2>&1
    rc=$?
    line=$(perftest_result /tmp/cli.log)
    if [ $rc -ne 0 ] && [ -z "$line" ] && [ "$y" = "$sync" ] && perftest_refused "$(cat /tmp/cli.log)"; then
        signal_peer $((y + 1000)) retry
        wire_capture_end "$p" 0
        echo "RSIW-INFO $T client: $t $*: refused before the server listened again (perftest's race); once more on port $((p + 1000))"
        sed 's/^/  first try: /' /tmp/cli.log
        return 1
    fi
    ok=0; [ $rc -eq 0 ] && [ -n "$line" ] || ok=1
    if [ $ok = 0 ]; then signal_peer $((y + 1000)) done; else signal_peer $((y + 1000)) failed; fi
    [ $ok = 0 ] || { cat /tmp/cli.log; dmesg | tail -n 20; }
    wire_capture_end "$p" $ok
    judge "$T client: $t $*" $rc /tmp/cli.log
    return 0
}

port=18900
for t in ib_send_bw ib_write_bw ib_read_bw ib_send_lat ib_write_lat ib_read_lat; do
    case $t in *_bw) s=65536; o="-R --report_gbits" ;; *) s=8; o=-R ;; esac
    for server in rsiw siw; do
        port=$((port + 1))
        if [ "$T" = "$server" ]; then serve $t $s $port $o; else connect $t $s $port $o; fi
    done
done

# FetchAdd rsiw → siw: siw answers the unsupported Atomic Request with a Terminate.
sync=$((sync + 1))
if [ "$T" = siw ]; then
    timeout 120 ib_atomic_lat -F -d "$D" -n 10 -p 18990 -R -A FETCH_AND_ADD > /tmp/srv.log 2>&1 &
    srv=$!
    wait_rdma_listen && signal_peer $sync || kill $srv 2>/dev/null
    wait $srv
    rc=$?
    tail -n 3 /tmp/srv.log
    # The server only waits; it must end (not hang) once the connection is gone.
    if [ $rc -ne 124 ]; then pass "siw: atomic server ended (exit $rc)"; else fail "siw: atomic server ended" "timed out"; fi
elif ! wait_peer $sync; then
    fail "rsiw: FetchAdd to siw fails, no hang" "the peer's server never said it was up"
else
    dmesg -c > /dev/null
    timeout 120 ib_atomic_lat -F -d "$D" -n 10 -p 18990 -R -A FETCH_AND_ADD "$peer" > /tmp/cli.log 2>&1
    rc=$?
    cat /tmp/cli.log
    log=$(dmesg)
    printf '%s\n' "$log" | grep rsiw
    if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then pass "rsiw: FetchAdd to siw fails (exit $rc), no hang"
    else fail "rsiw: FetchAdd to siw fails, no hang" "exit $rc"; fi
    check_output "rsiw: error completion for the FetchAdd" 'status|[Cc]ompletion with error' cat /tmp/cli.log
    check_output "rsiw: siw's Terminate reached the requester" 'peer sent Terminate' printf '%s\n' "$log"
fi
sleep 3
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
dev_down "$T" "$D"
finish
