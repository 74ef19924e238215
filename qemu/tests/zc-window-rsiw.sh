#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: verbs
# rsiw-requires: datapath
# rsiw-timeout: 600
# Memory the application rewrites after the device is done with it
# (Documentation/security.md, "Memory after its STag died"; datapath.md, "After
# completion"). A raw MPA peer (rsiw-rawpeer zc-window: MPA Rev 1 with CRC, a 4 KiB
# SO_RCVBUF, nothing read) keeps its receive window shut while rsiw0 sends it
# 256 KiB from a user region filled with 0xa1 (rsiw-verbs-test --zc-window):
#   send: one signalled Send; once it completes the application writes 0x5e over
#         the region, deregisters it (the buffer stays allocated) and writes 0x5e
#         again;
#   read: the peer Reads the region (rkey in the accept's private data); a second
#         later the application deregisters the region and a second after that
#         writes 0x5e over it.
# Then the peer reads. With the default (tx_zcopy_min=0: copy) no 0x5e octet may
# reach it: all the old fill, or part of it and an Invalid STag Terminate. With
# zero-copy opted in (tx_zcopy_min=4096) TCP reads the pages only when the window
# opens, so the new fill reaches the peer: the documented cost of the opt-in, shown
# here and counted as such (a run where none leaks says so).
. /rsiw/lib.sh
setup_net
D=rsiw0
P=/sys/module/rsiw/parameters/tx_zcopy_min
PORT=7611

dev_up rsiw "$D" eth0 || finish

# zc_window LABEL MODE: one run; the peer's summary line is left in $dir/peer.log.
zc_window() {
    label=$1; mode=$2
    dir=/tmp/zcw-$label-$mode
    rm -rf "$dir"; mkdir -p "$dir"
    PORT=$((PORT + 1))
    timeout 150 rsiw-verbs-test --zc-window 10.0.2.15:$PORT "$mode" "$dir" > "$dir/app.log" 2>&1 &
    app=$!
    check "$label $mode: the application listens" wait_tcp_listen $PORT
    timeout 150 rsiw-rawpeer zc-window 10.0.2.15:$PORT "$mode" "$dir" > "$dir/peer.log" 2>&1
    prc=$?
    wait $app
    arc=$?
    echo "--- application ($arc)"; cat "$dir/app.log"
    echo "--- peer ($prc)"; cat "$dir/peer.log"
    check "$label $mode: both ends exit 0 (peer $prc, application $arc)" [ $prc -eq 0 -a $arc -eq 0 ]
    grep '^RSIW-TEST FAIL' "$dir/app.log" | sed 's/^RSIW-TEST //' >> /tmp/rsiw-results
    RSIW_FAILED=$((RSIW_FAILED + $(grep -c '^RSIW-TEST FAIL' "$dir/app.log")))
    line=$(grep '^fpdus ' "$dir/peer.log")
    set -- $line
    # fpdus F payload N old O new W other X crc_bad C
    zc_payload=$4; zc_old=$6; zc_new=$8; zc_other=${10}
    zc_term=$(sed -n 's/^terminate //p' "$dir/peer.log")
}

# copy_case MODE: the default must keep every later write off the wire.
copy_case() {
    zc_window copy "$1"
    if [ -z "$zc_payload" ]; then
        fail "copy $1: the peer counted the payload" "no summary line"
        return
    fi
    check "copy $1: no octet written after the completion/dereg reaches the peer (new $zc_new, other $zc_other)" \
        [ "$zc_new" -eq 0 -a "$zc_other" -eq 0 ]
    if [ "$zc_term" = none ]; then
        check "copy $1: the whole old fill arrived ($zc_old of 262144)" [ "$zc_old" -eq 262144 ]
    else
        # RFC 5040 §7.1: the Read's Data Source died, Invalid STag (layer 0, type 1, code 0).
        check_output "copy $1: a cut Response ends in the Invalid STag Terminate" '^0100' echo "$zc_term"
    fi
}

check_output "tx_zcopy_min defaults to 0 (copy)" '^0$' cat "$P"
copy_case send
copy_case read

# Zero-copy opted in: the leak is what tx_zcopy_min's description warns of.
echo 4096 > "$P"
for mode in send read; do
    zc_window zerocopy "$mode"
    if [ -z "$zc_payload" ]; then
        fail "zero-copy $mode: the peer counted the payload" "no summary line"
        continue
    fi
    check "zero-copy $mode: only the two fills arrive (other $zc_other)" [ "$zc_other" -eq 0 ]
    if [ "$zc_new" -gt 0 ]; then
        pass "zero-copy $mode: $zc_new octets written after the completion/dereg reached the peer (the documented cost of tx_zcopy_min > 0)"
    else
        pass "zero-copy $mode: no octet written afterwards reached the peer in this run ($zc_old old)"
    fi
done
echo 0 > "$P"

check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
