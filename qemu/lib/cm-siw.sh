# SPDX-License-Identifier: GPL-2.0
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.
#
# rping between rsiw and siw across two VMs (cm-siw-*.sh): $T is this side's device
# type, $me and $peer the addresses.
# cm_serve PORT: rping server here (3 pings), released to the peer with PORT.
cm_serve() {
    timeout 150 rping -s -a "$me" -C 3 -v > /tmp/rping-s.log 2>&1 &
    server=$!
    step "$T responder listens" wait_rdma_listen
    step "$T responder: tell the peer" signal_peer "$1"
    wait $server
    rc=$?
    cat /tmp/rping-s.log
    if [ $rc -ne 0 ]; then
        fail "$T responder: rping -s, 3 pings" "exit $rc"
    else
        check_output "$T responder: rping -s, 3 pings" "^ok 3\$" rping_payloads_ok 'server ping data: ' /tmp/rping-s.log
    fi
}
# cm_connect PORT: rping client to the peer's server once it says it is up.
cm_connect() {
    step "$T initiator: peer's server is up" wait_peer "$1"
    timeout 120 rping -c -a "$peer" -C 3 -v > /tmp/rping-c.log 2>&1
    rc=$?
    cat /tmp/rping-c.log
    if [ $rc -ne 0 ]; then
        fail "$T initiator: rping -c to $peer, 3 pings" "exit $rc"
    else
        check_output "$T initiator: rping -c to $peer, 3 pings" "^ok 3\$" rping_payloads_ok 'ping data: ' /tmp/rping-c.log
    fi
}

# mpa_after KEYHEX: the 8 bytes (flags, Rev, PD_Length, IRD, ORD) after the first MPA
# key KEYHEX in the capture, as hex.
# The capture is read while tcpdump still runs: a packet reaches the file only when
# tcpdump has it from the kernel's capture ring, so wait up to 5 s for the key.
mpa_after() {
    for _ in 1 2 3 4 5; do
        v=$(tcpdump -Z root -r /tmp/cap.pcap -n -x 2>/dev/null | awk '
            /^[^ \t]/ { if (h != "") print h; h = ""; next }
            { for (i = 2; i <= NF; i++) h = h $i }
            END { if (h != "") print h }' |
            grep -o "$1[0-9a-f]*" | head -n 1 | cut -c 33-48)
        [ -n "$v" ] && break
        sleep 1
    done
    echo "$v"
}
REQ=4d504120494420526571204672616d65   # "MPA ID Req Frame"
REP=4d504120494420526570204672616d65   # "MPA ID Rep Frame"

# cm_siw_up: the network, siw on VM 0 or rsiw on VM 1 on eth1 ($T, $me, $peer), and on
# VM 1 a capture of the rping port's MPA exchange in /tmp/cap.pcap ($td).
cm_siw_up() {
    setup_net
    peer=$(peer_addr)
    me="10.0.9.$((RSIW_VM_INDEX + 1))"
    if [ "$RSIW_VM_INDEX" = 0 ]; then T=siw; else T=rsiw; fi
    step "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
    dev_up "$T" "${T}0" eth1 || finish
    if [ "$T" = rsiw ]; then
        tcpdump -Z root -U --immediate-mode -i eth1 -n -s 300 -w /tmp/cap.pcap tcp port 7174 > /tmp/td.log 2>&1 &
        td=$!
        retry 10 grep -q "listening on" /tmp/td.log
    fi
}

# cm_siw_down: keep answering until the other VM is done, check nothing is left, tear
# the device down and finish.
cm_siw_down() {
    sleep 3
    check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w ${T}0 | grep -v '^$'"
    check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
    dev_down "$T" "${T}0"
    finish
}
