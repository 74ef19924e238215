#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
# rsiw-requires: datapath
# rsiw-timeout: 1200
# rsiw-group: qpconn
# QP connections from modify_qp (Documentation/qpconn.md) in one VM: the GID table
# follows eth0's addresses; unmodified ibv_rc_pingpong -g 1 (several sizes, 1000
# iterations, with and without -e) between a server and a client on rsiw0;
# ibv_uc_pingpong / ibv_ud_pingpong fail at once; no QP left.
. /rsiw/lib.sh
# The listener's port for QP connections from modify_qp, stated (it is the default).
RSIW_MODPARAMS="qp_conn_port=4792"
setup_net
D=rsiw0
dev_up rsiw "$D" eth0 || finish
G=/sys/class/infiniband/$D/ports/1/gids

check_output "GID 0 is the MAC-based GID" '^5254:0012:3456:0000:0000:0000:0000:0000$' cat $G/0
check_output "GID 1 is eth0's IPv4 address, mapped" '^0000:0000:0000:0000:0000:ffff:0a00:020f$' cat $G/1
ip addr add 10.0.2.99/24 dev eth0
check_output "an address added to eth0 appears as GID 2 (IPv4 before IPv6)" '^0000:0000:0000:0000:0000:ffff:0a00:0263$' \
    retry 10 sh -c "grep -q 0a00:0263 $G/2 && cat $G/2"
ip addr del 10.0.2.99/24 dev eth0
check "and goes when it is removed" retry 10 sh -c "! cat $G/* | grep -q 0a00:0263"
check_output "sysfs device/net names eth0" '^eth0$' ls /sys/class/infiniband/$D/device/net/

# pp NAME PORT OPTS…: ibv_rc_pingpong server and client on rsiw0 with OPTS; both must
# exit 0 and print their `… iters in … seconds` line.
pp() {
    name=$1; port=$2; shift 2
    timeout 300 ibv_rc_pingpong -d $D -g 1 -p "$port" "$@" > /tmp/pp-s.log 2>&1 &
    srv=$!
    sleep 1
    timeout 300 ibv_rc_pingpong -d $D -g 1 -p "$port" "$@" 10.0.2.15 > /tmp/pp-c.log 2>&1
    rc=$?
    wait $srv
    src=$?
    cat /tmp/pp-s.log /tmp/pp-c.log
    if [ $rc -eq 0 ] && grep -q 'iters in' /tmp/pp-c.log; then pass "$name: client"; else
        fail "$name: client" "exit $rc: $(tail -n 1 /tmp/pp-c.log)"; fi
    if [ $src -eq 0 ] && grep -q 'iters in' /tmp/pp-s.log; then pass "$name: server"; else
        fail "$name: server" "exit $src: $(tail -n 1 /tmp/pp-s.log)"; fi
}
pp "ibv_rc_pingpong -s 1 -n 1000" 18601 -s 1 -n 1000
pp "ibv_rc_pingpong -s 4096 -n 1000" 18602 -s 4096 -n 1000
pp "ibv_rc_pingpong -s 65536 -n 1000" 18603 -s 65536 -n 1000
pp "ibv_rc_pingpong -s 4096 -n 1000 -e" 18604 -s 4096 -n 1000 -e
pp "ibv_rc_pingpong -s 1048576 -n 100" 18605 -s 1048576 -n 100

for t in ibv_uc_pingpong ibv_ud_pingpong; do
    if command -v $t > /dev/null; then
        check_output "$t fails at once, saying why" 'Couldn.t create QP|Failed to create QP|Unable to create' \
            sh -c "timeout 20 $t -d $D -g 1 -p 18610 2>&1; [ \$? -ne 124 ]"
    fi
done

check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
