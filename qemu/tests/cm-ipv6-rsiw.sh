#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: basic
# rsiw-timeout: 200
# rsiw's connection manager over IPv6: rping server and client on rsiw0 at fd00::15
# (both ends on one device), 2 pings with their payloads checked.
. /rsiw/lib.sh
setup_net
ip -6 addr add fd00::15/64 dev eth0
# Duplicate address detection must finish before the address can be bound.
check "fd00::15 usable" retry 20 sh -c 'ip -6 addr show dev eth0 | grep "fd00::15" | grep -vq tentative'
dev_up rsiw rsiw0 eth0 || finish
timeout 60 rping -s -a fd00::15 -C 2 -v > /tmp/s.log 2>&1 &
s=$!
check "IPv6 listener" wait_rdma_listen
timeout 60 rping -c -a fd00::15 -C 2 -v > /tmp/c.log 2>&1
check "rping client exits 0" test $? -eq 0
wait $s
check "rping server exits 0" test $? -eq 0
check_output "client: 2 pings" '^ok 2$' rping_payloads_ok 'ping data: ' /tmp/c.log
check_output "server: 2 pings" '^ok 2$' rping_payloads_ok 'server ping data: ' /tmp/s.log
check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
dev_down rsiw rsiw0
finish
