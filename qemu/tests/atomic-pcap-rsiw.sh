#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: datapath
# rsiw-timeout: 600
# rsiw-group: perf
# A packet capture of RFC 7306 atomics between two endpoints on rsiw0 (eth0, 10.0.2.15;
# traffic to the own address goes over lo): ib_atomic_lat -R with FetchAdd, then with
# CmpSwap, captured by tcpdump and printed on the console as base64 `RSIW-PCAP` lines.
# The host decodes it with tshark after the run (xtask/src/pcap.rs): Wireshark's iWARP
# dissector must name Atomic Request FetchAdd and CmpSwap on DDP QN 1 and Atomic
# Response on QN 3, each response answering a request (RFC 7306 §5.2).
. /rsiw/lib.sh
setup_net
D=rsiw0
P=18790

dev_up rsiw "$D" eth0 || finish
capture_start /tmp/atomic.pcap "tcp port $P or tcp port $((P + 1))"
check_output "ib_atomic_lat -R -A FETCH_AND_ADD x 5: result line" '^[[:space:]]*8[[:space:]]' \
    perftest_run ib_atomic_lat "$D" "" 5 $P -R -A FETCH_AND_ADD
check_output "ib_atomic_lat -R -A CMP_AND_SWAP x 5: result line" '^[[:space:]]*8[[:space:]]' \
    perftest_run ib_atomic_lat "$D" "" 5 $((P + 1)) -R -A CMP_AND_SWAP
capture_end atomic /tmp/atomic.pcap rfc7306-atomics
dev_down rsiw "$D"
finish
