#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: datapath
# rsiw-timeout: 1500
# FPDU sizes between rsiw peers (Documentation/datapath.md, "Large FPDUs"): lo gets an
# Ethernet MTU (1500) so that the EMSS bounds RFC 5044 FPDUs as on a real link. With
# mpa_large_fpdu on, both ends set the large-FPDU flag in their MPA Request/Reply and
# send FPDUs of up to 15 pages (TCP segments them); with it off, no flag and no FPDU
# longer than the EMSS allows. Each is captured (rping -V, 65000-byte Reads and
# Writes) and decoded by tshark on the host. Then 64 MiB of a pseudo-random pattern
# written or read (rsiw-verbs-test bulk cases, checked byte for byte) at each FPDU
# size: large and RFC at MTU 1500, RFC at MTU 9000, and large at lo's own 64 KiB MTU.
. /rsiw/lib.sh
setup_net
D=rsiw0
P=7650
LARGE=/sys/module/rsiw/parameters/mpa_large_fpdu
dev_up rsiw "$D" eth0 || finish

# capture NAME LARGE CHECK: rping -V with 65000-byte buffers, 5 pings, on lo.
capture() {
    echo "$2" > $LARGE
    P=$((P + 1))
    capture_start "/tmp/$1.pcap" "tcp port $P"
    timeout 120 rping -s -a 10.0.2.15 -p $P -C 5 -S 65000 -V > "/tmp/$1-server.log" 2>&1 &
    srv=$!
    step "$1: rping server listens" wait_rdma_listen
    check "$1: rping -c -V -S 65000 -C 5" timeout 120 rping -c -a 10.0.2.15 -p $P -C 5 -S 65000 -V
    wait $srv
    check "$1: rping server exits 0" test $? -eq 0
    capture_end "$1" "/tmp/$1.pcap" "$3" "$1"
}

check "lo: MTU 1500" ip link set lo mtu 1500
capture large Y large-fpdus
capture rfc N rfc-fpdus

# 64 MiB at each FPDU size (lo MTU, large FPDUs), one transfer each, Writes and Reads
# in turn so that both the requester's and the responder's framing carry one at the
# small and at the large sizes: RFC FPDUs at MTU 1500 (the slowest: 1448-octet FPDUs,
# about 210 s on the debug kernel beside another VM) as Read Responses.
for m in 1500:Y:write 1500:N:read 9000:N:write 65536:Y:read; do
    mtu=${m%%:*}
    l=${m#*:}
    l=${l%%:*}
    cases=bulk-${m##*:}-64MiB
    ip link set lo mtu "$mtu"
    echo "$l" > $LARGE
    RSIW_VERBS_CASES=$cases verbs_run "$D" 10.0.2.15 "mtu$mtu-large$l"
done
ip link set lo mtu 65536
echo Y > $LARGE

check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^\$'"
check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
dev_down rsiw "$D"
finish
