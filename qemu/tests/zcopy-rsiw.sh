#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: verbs
# rsiw-requires: datapath
# rsiw-timeout: 600
# Transmit from pinned user pages on rsiw0: rping -V with 65000-byte buffers
# (rping allows less than 64 KiB; RDMA Read Responses and Writes) with the
# default, tx_zcopy_min=0, which copies every payload; then with zero-copy
# on (tx_zcopy_min=4096: Writes sent by page reference with the MPA CRC computed
# over the pages and checked by the receiving rsiw, each completing once TCP has
# released its pages, as the tx_zcopy_held counter shows) at 65000 and 5000 bytes.
. /rsiw/lib.sh
setup_net
D=rsiw0
COUNT=50
P=/sys/module/rsiw/parameters/tx_zcopy_min

dev_up rsiw "$D" eth0 || finish
check_output "tx_zcopy_min defaults to 0 (copy)" '^0$' cat "$P"

# $1: label, $2: rping buffer size.
rping_sized() {
	timeout 300 rping -s -a 10.0.2.15 -C $COUNT -S "$2" -V > /tmp/zc-server.log 2>&1 &
	server=$!
	step "$1: rping server listens" wait_rdma_listen
	timeout 300 rping -c -a 10.0.2.15 -C $COUNT -S "$2" -V > /tmp/zc-client.log 2>&1
	rc=$?
	wait $server
	src=$?
	tail -n 3 /tmp/zc-client.log /tmp/zc-server.log
	if [ $rc -eq 0 ] && [ $src -eq 0 ]; then
		pass "$1: rping -V -S $2, $COUNT pings, both ends exit 0"
	else
		fail "$1: rping -V -S $2, $COUNT pings, both ends exit 0" "client $rc, server $src"
	fi
	check_no_output "$1: no data mismatch, no Terminate" 'mismatch|TERMINATE|error' cat /tmp/zc-client.log /tmp/zc-server.log
}

stats_save "$D" /tmp/zc-stats
rping_sized "copy (default)" 65000
check_output "copy: nothing went by page reference (tx_zcopy_held)" '^0$' stat_delta "$D" /tmp/zc-stats tx_zcopy_held
echo 4096 > "$P"
check_output "tx_zcopy_min=4096 (zero-copy opted in)" '^4096$' cat "$P"
stats_save "$D" /tmp/zc-stats
rping_sized "zero-copy" 65000
rping_sized "zero-copy, odd size" 5000
held=$(stat_delta "$D" /tmp/zc-stats tx_zcopy_held)
# rping -V: each ping's RDMA Write of the start buffer, both sizes.
check "zero-copy: the Writes went by page reference, each completed after TCP's release (tx_zcopy_held +$held)" \
    [ "${held:-0}" -ge $((2 * COUNT)) ]
echo 0 > "$P"

check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
