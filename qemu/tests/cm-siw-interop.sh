#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-vms: 2
# rsiw-timeout: 500
# rsiw's connection manager against siw (the C reference) across the socket network:
# siw on VM 0, rsiw on VM 1; rping both ways (rsiw initiator, then rsiw responder), each
# side checks its own end. VM 1 also checks the MPA Request/Reply bytes on the wire
# (RFC 5044 §7.1, RFC 6581 §5) against what rsiw's defaults and siw's make of them.
. /rsiw/lib.sh
setup_net
peer=$(peer_addr)
me="10.0.9.$((RSIW_VM_INDEX + 1))"
if [ "$RSIW_VM_INDEX" = 0 ]; then T=siw; else T=rsiw; fi
check "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
dev_up "$T" "${T}0" eth1 || finish
if [ "$T" = rsiw ]; then
    tcpdump -Z root -U -i eth1 -n -s 300 -w /tmp/cap.pcap tcp port 7174 > /tmp/td.log 2>&1 &
    td=$!
    sleep 2
fi

# serve PORT: rping server here (3 pings), released to the peer with PORT.
serve() {
    timeout 150 rping -s -a "$me" -C 3 -v > /tmp/rping-s.log 2>&1 &
    server=$!
    check "$T responder listens" wait_rdma_listen
    check "$T responder: tell the peer" signal_peer "$1"
    wait $server
    rc=$?
    cat /tmp/rping-s.log
    if [ $rc -ne 0 ]; then
        fail "$T responder: rping -s, 3 pings" "exit $rc"
    else
        check_output "$T responder: rping -s, 3 pings" "^ok 3\$" rping_payloads_ok 'server ping data: ' /tmp/rping-s.log
    fi
}
# connect PORT: rping client to the peer's server once it says it is up.
connect() {
    check "$T initiator: peer's server is up" wait_peer "$1"
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
mpa_after() {
    tcpdump -Z root -r /tmp/cap.pcap -n -x 2>/dev/null | awk '
        /^[^ \t]/ { if (h != "") print h; h = ""; next }
        { for (i = 2; i <= NF; i++) h = h $i }
        END { if (h != "") print h }' |
        grep -o "$1[0-9a-f]*" | head -n 1 | cut -c 33-48
}
REQ=4d504120494420526571204672616d65   # "MPA ID Req Frame"
REP=4d504120494420526570204672616d65   # "MPA ID Rep Frame"

# Round 1: rsiw initiates.
if [ "$T" = siw ]; then serve 7000; else connect 7000; fi
if [ "$T" = rsiw ]; then
    # C and enhanced bits (0x50), Rev 2, PD_Length 4; IRD 1 with the P bit (0x8001),
    # ORD 1 offering Write and Read RTR (0xc001): rping asks for 1/1.
    check_output "rsiw Request: CRC, Rev 2, IRD/ORD 1/1, peer-to-peer, Write+Read RTR" \
        '^500200048001c001$' mpa_after $REQ
    # siw keeps the C bit it was asked for and picks the Write RTR (0x8001).
    check_output "siw Reply: CRC, Rev 2, IRD/ORD 1/1, Write RTR" \
        '^5002000480018001$' mpa_after $REP
    kill $td; sleep 1
    tcpdump -Z root -U -i eth1 -n -s 300 -w /tmp/cap.pcap tcp port 7174 > /tmp/td.log 2>&1 &
    td=$!
    sleep 2
fi
sleep 2
# Round 2: siw initiates, rsiw responds.
if [ "$T" = rsiw ]; then serve 7001; else connect 7001; fi
if [ "$T" = rsiw ]; then
    # siw (mpa_crc_required off, no peer_to_peer): no C bit, enhanced, IRD/ORD 1/1.
    check_output "siw Request: no CRC, Rev 2, IRD/ORD 1/1, client-server" \
        '^1002000400010001$' mpa_after $REQ
    # rsiw asks for CRC in its Reply (mpa_crc=Y); siw accepts and uses it.
    check_output "rsiw Reply: CRC, Rev 2, IRD/ORD 1/1, no RTR" \
        '^5002000400010001$' mpa_after $REP
    kill $td
fi
# Keep answering until the other VM is done with us.
sleep 3
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w ${T}0 | grep -v '^$'"
check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
dev_down "$T" "${T}0"
finish
