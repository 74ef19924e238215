#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-vms: 2
# rsiw-group: rsiw-pairs
# rsiw-requires: datapath
# rsiw-timeout: 900
# MPA Markers one way (RFC 5044 §4.3, §7.1.2): rsiw on VM 0 asks for them
# (mpa_markers=Y), rsiw on VM 1 does not, so VM 1 inserts Markers into what it sends
# and VM 0 sends none. Both ways round: VM 0 connects to VM 1 (its Request carries the
# M bit) and VM 1 connects to VM 0 (VM 0's Reply carries it). Each time the QPs of
# both ends report the direction that got Markers (`rdma resource show qp -dd`),
# rsiw-load traffic (Send, Write, Read back, FetchAdd, CmpSwap, up to 16 KiB) is
# checked end to end, and no CRC or framing error is counted.
. /rsiw/lib.sh
[ "$RSIW_VM_INDEX" = 0 ] && RSIW_MODPARAMS="mpa_markers=Y"
setup_net
ip link set eth1 mtu 9000
peer=$(peer_addr)
me=10.0.9.$((RSIW_VM_INDEX + 1))
D=rsiw0
step "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
dev_up rsiw "$D" eth1 || finish
if [ "$RSIW_VM_INDEX" = 0 ]; then want="drv_markers_tx no drv_markers_rx yes"; else
    want="drv_markers_tx yes drv_markers_rx no"; fi
stats_save "$D" /tmp/stats.before

# qps_marked WHAT: both QPs here show $want.
qps_marked() {
    rdma -dd resource show qp | grep -w "$D" > /tmp/qps
    cat /tmp/qps
    check "$1: 2 QPs, markers as asked ($want)" \
        test "$(grep -c . /tmp/qps)" -eq 2 -a "$(grep -c "$want" /tmp/qps)" -eq 2
}

# serve NAME PORT BASE: a server here for the peer's client; BASE..BASE+2 sync ports.
serve() {
    rsiw-load server "$me:$2" > /tmp/server.log 2>&1 &
    server=$!
    step "$1: server listens" wait_tcp_listen "$2"
    signal_peer "$3"
    step "$1: the peer's connections are up" wait_peer $(($3 + 1)) 300
    qps_marked "$1"
    signal_peer $(($3 + 2))
    step "$1: the peer's client is done" wait_peer $(($3 + 3)) 300
    kill $server
    check_wait "$1: server ends cleanly" $server
    check_output "$1: server: every Send right" "closed 2 open 0; sends verified 40 bad 0;.* hung 0$" \
        tail -n 1 /tmp/server.log
}

# connect NAME PORT BASE: a client here to the peer's server.
connect() {
    step "$1: the peer's server listens" wait_peer "$3" 300
    rsiw-load client "$peer:$2" --conns 2 --rounds 20 --size 16384 --hold 600 > /tmp/client.log 2>&1 &
    client=$!
    check "$1: 2 connections up, 20 verified rounds each" retry 300 grep -q "holding 2 connections" /tmp/client.log
    qps_marked "$1"
    signal_peer $(($3 + 1))
    step "$1: the peer looked at its QPs" wait_peer $(($3 + 2)) 300
    kill $client
    check_wait "$1: client ends cleanly" $client
    check_output "$1: client: every byte right" \
        "established 2 closed 2 failed 0 setup_failed 0; rounds 40;.* verify_errors 0;.* hung 0;" tail -n 1 /tmp/client.log
    signal_peer $(($3 + 3))
}

if [ "$RSIW_VM_INDEX" = 0 ]; then
    connect "VM 0 asks in its Request" 7670 7600
    serve "VM 0 asks in its Reply" 7671 7610
else
    serve "VM 0 asks in its Request" 7670 7600
    connect "VM 0 asks in its Reply" 7671 7610
fi
for c in mpa_crc_errors mpa_framing_errors terminates_sent_llp terminates_sent_ddp terminates_sent_rdmap; do
    check "$c: none" test "$(stat_delta "$D" /tmp/stats.before $c)" -eq 0
done
sleep 3
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^\$'"
dev_down rsiw "$D"
finish
