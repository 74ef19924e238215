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
# Then the peer reads. No 0x5e octet may reach it, and every FPDU's CRC holds: all
# the old fill, or part of it and the Invalid STag Terminate (RFC 5040 §7.1: the
# Read's source died). Once with the default (tx_zcopy_min=0: copy), once with
# zero-copy (tx_zcopy_min=4096): the Send's pages then go to TCP by reference, its
# completion waits until TCP has released them (the tx_zcopy_held counter shows
# that it went so), and a Read Response is copied either way. In copy mode the Send's
# pages go to TCP, which copies them in the call; an FPDU the full socket leaves half
# sent is copied into rsiw's buffer before TX stops (tx_copy_bounced shows it). Last, with zero-copy,
# the SQ's order around an error: the 256 KiB Send held by the shut window, an 8-octet
# Send behind it, the QP moved to ERROR, an 8-octet Send to the dead QP: the three
# completions must arrive as 1 2 3 (the flush of the third waits for the held first).
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
    timeout 200 rsiw-verbs-test --zc-window 10.0.2.15:$PORT "$mode" "$dir" "$len" > "$dir/app.log" 2>&1 &
    app=$!
    step "$label $mode: the application listens" wait_tcp_listen $PORT
    # The peer of `order` reads a Send, as for `send`.
    pmode=$mode; [ "$mode" = order ] && pmode=send
    timeout 200 rsiw-rawpeer zc-window 10.0.2.15:$PORT "$pmode" "$dir" > "$dir/peer.log" 2>&1
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

# copy_case LABEL MODE [LEN]: every later write stays off the wire.
copy_case() {
    how=$1; shift
    zc_window "$how" "$@"
    what="$how $1 ${len}"
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

# port_stat NAME: the port's counter NAME. zc_held: its tx_zcopy_held.
port_stat() {
    rdma statistic show link "$D/1" | tr -s ' ' '\n' | awk -v n="$1" 'prev == n { print; exit } { prev = $0 }'
}
zc_held() {
    port_stat tx_zcopy_held
}

check_output "tx_zcopy_min defaults to 0 (copy)" '^0$' cat "$P"
cat /proc/sys/net/ipv4/tcp_wmem
copy_case copy send
# A 16 MiB Send goes as pages TCP copies (16 KiB and more) and fills the socket (more
# than tcp_wmem's most): the FPDU TX leaves half sent is copied into rsiw's buffer
# first. Then an 8-octet Send, the QP moved to ERROR, a Send to the dead QP; once all
# three completed (in SQ order) the application overwrites the region: whatever the
# peer reads afterwards is the old fill.
zc_window copy order 16777216
bounced=$(port_stat tx_copy_bounced)
check "copy order: the FPDU left half sent by the full socket was copied first (tx_copy_bounced ${bounced:-none})" \
    [ "${bounced:-0}" -ge 1 ]
check_output "copy order: completions in SQ order around ERROR" '^order 1 2 3$' cat "$dir/app.log"
check "copy order: nothing written after the completions reaches the peer (new ${zc_new:-none}, other ${zc_other:-none}, CRC bad ${zc_crc_bad:-none})" \
    [ "${zc_new:-1}" -eq 0 -a "${zc_other:-1}" -eq 0 -a "${zc_crc_bad:-1}" -eq 0 ]
copy_case copy read
copy_case copy read 16777216
check_output "copy: no WQE went zero-copy (tx_zcopy_held)" '^0$' zc_held
echo 4096 > "$P"
copy_case zerocopy send
held=$(zc_held)
check "zero-copy send: the Send went zero-copy, its completion held for TCP's release (tx_zcopy_held $held)" \
    [ "${held:-0}" -ge 1 ]
copy_case zerocopy read
copy_case zerocopy read 16777216
check_output "zero-copy read: Read Responses are copied (tx_zcopy_held still $held)" "^$held\$" zc_held
odir=/tmp/zcw-order
rm -rf "$odir"; mkdir -p "$odir"
PORT=$((PORT + 1))
timeout 200 rsiw-verbs-test --zc-window 10.0.2.15:$PORT order "$odir" > "$odir/app.log" 2>&1 &
app=$!
step "order: the application listens" wait_tcp_listen $PORT
timeout 200 rsiw-rawpeer zc-window 10.0.2.15:$PORT send "$odir" > "$odir/peer.log" 2>&1
wait $app
arc=$?
echo "--- application ($arc)"; cat "$odir/app.log"
echo "--- peer"; cat "$odir/peer.log"
check "order: the application exits 0 ($arc)" [ $arc -eq 0 ]
check_output "order: completions in SQ order around ERROR, the held zero-copy Send first" \
    '^order 1 2 3$' cat "$odir/app.log"
echo 0 > "$P"

check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
