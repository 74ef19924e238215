#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
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
#         writes 0x5e over it;
#   read of 16 MiB: as read, from a region larger than the socket's send buffer
#         (tcp_wmem's most, 4 MiB), so that the deregistration lands while the
#         Response is still being sent.
# Then the peer reads. With the default (tx_zcopy_min=0: copy) no 0x5e octet may
# reach it, and every FPDU's CRC holds: all the old fill, or part of it and the
# Invalid STag Terminate (RFC 5040 §7.1: the Read's source died). With zero-copy
# opted in (tx_zcopy_min=4096) TCP reads the pages only when the window opens, so
# the new fill reaches the peer under CRCs computed over the old: the documented
# cost of the opt-in (tx_zcopy_min's description, datapath.md), shown here; a run
# in which nothing leaked is reported as a skip.
. /rsiw/lib.sh
setup_net
D=rsiw0
P=/sys/module/rsiw/parameters/tx_zcopy_min
PORT=7611

dev_up rsiw "$D" eth0 || finish

# zc_window LABEL MODE [LEN]: one run; the peer's summary line is left in
# $dir/peer.log and parsed into zc_*.
zc_window() {
    label=$1; mode=$2; len=${3:-262144}
    dir=/tmp/zcw-$label-$mode-$len
    rm -rf "$dir"; mkdir -p "$dir"
    PORT=$((PORT + 1))
    timeout 150 rsiw-verbs-test --zc-window 10.0.2.15:$PORT "$mode" "$dir" "$len" > "$dir/app.log" 2>&1 &
    app=$!
    step "$label $mode: the application listens" wait_tcp_listen $PORT
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
    zc_payload=$4; zc_old=$6; zc_new=$8; zc_other=${10}; zc_crc_bad=${12}
    zc_term=$(sed -n 's/^terminate //p' "$dir/peer.log")
}

# copy_case MODE [LEN]: the default must keep every later write off the wire.
copy_case() {
    zc_window copy "$@"
    what="copy $1 ${len}"
    if [ -z "$zc_payload" ]; then
        fail "$what: the peer counted the payload" "no summary line"
        return
    fi
    check "$what: no octet written after the completion/dereg reaches the peer (new $zc_new, other $zc_other)" \
        [ "$zc_new" -eq 0 -a "$zc_other" -eq 0 ]
    check "$what: every FPDU's CRC holds ($zc_crc_bad bad)" [ "$zc_crc_bad" -eq 0 ]
    if [ "$zc_term" = none ]; then
        check "$what: the whole old fill arrived ($zc_old of $len)" [ "$zc_old" -eq "$len" ]
    else
        # RFC 5040 §7.1: the Read's Data Source died: Invalid STag (layer 0, type 1, code 0).
        check_output "$what: the Response, cut after $zc_old old octets, ends in the Invalid STag Terminate" \
            '^0100' echo "$zc_term"
    fi
}

# zc_case MODE [LEN]: zero-copy opted in; the leak is what tx_zcopy_min's
# description warns of.
zc_case() {
    zc_window zerocopy "$@"
    what="zero-copy $1 ${len}"
    if [ -z "$zc_payload" ]; then
        fail "$what: the peer counted the payload" "no summary line"
        return
    fi
    check "$what: only the two fills arrive (other $zc_other)" [ "$zc_other" -eq 0 ]
    if [ "$zc_new" -gt 0 ]; then
        pass "$what: as documented for tx_zcopy_min > 0, $zc_new octets written after the completion/dereg reached the peer ($zc_crc_bad FPDUs with a CRC over the old octets)"
    else
        skip "$what: the opt-in's leak" "no octet written afterwards reached the peer in this run ($zc_old old)"
    fi
}

check_output "tx_zcopy_min defaults to 0 (copy)" '^0$' cat "$P"
cat /proc/sys/net/ipv4/tcp_wmem
copy_case send
copy_case read
copy_case read 16777216
echo 4096 > "$P"
zc_case send
zc_case read
zc_case read 16777216
echo 0 > "$P"

check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
