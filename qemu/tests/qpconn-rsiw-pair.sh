#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3
# rsiw-vms: 2
# rsiw-group: rsiw-pairs
# rsiw-requires: datapath
# rsiw-timeout: 1200
# QP connections from modify_qp (Documentation/qpconn.md) across two VMs: rsiw0 on eth1
# of each, GID 1 is eth1's IPv4 address; unmodified ibv_rc_pingpong -g 1 with the
# server on VM 0 and the client on VM 1 (-s 4096, -s 65536, -s 4096 -e; 1000
# iterations each): both ends exit 0 with their result line; no QP left.
. /rsiw/lib.sh
# The listener's port for QP connections from modify_qp, stated (it is the default).
RSIW_MODPARAMS="qp_conn_port=4792"
setup_net
# Jumbo frames between the two: at 1500 the frame rate of two TCG guests limits the
# link to about 1 MB/s whatever the device (testing.md, "Two VMs").
ip link set eth1 mtu 9000
peer=$(peer_addr)
D=rsiw0
step "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
dev_up rsiw "$D" eth1 || finish
check_output "GID 1 is eth1's IPv4 address, mapped" "^0000:0000:0000:0000:0000:ffff:0a00:090$((RSIW_VM_INDEX + 1))\$" \
    cat /sys/class/infiniband/$D/ports/1/gids/1

# pp NAME PORT OPTS…: VM 0 serves, VM 1 connects (again while the server is not up yet).
pp() {
    name=$1; port=$2; shift 2
    if [ "$RSIW_VM_INDEX" = 0 ]; then
        timeout 300 ibv_rc_pingpong -d $D -g 1 -p "$port" "$@" > /tmp/pp.log 2>&1
        rc=$?
    else
        for i in $(seq 30); do
            timeout 300 ibv_rc_pingpong -d $D -g 1 -p "$port" "$@" "$peer" > /tmp/pp.log 2>&1
            rc=$?
            grep -q "Couldn't connect" /tmp/pp.log || break
            sleep 1
        done
    fi
    cat /tmp/pp.log
    if [ $rc -eq 0 ] && grep -q 'iters in' /tmp/pp.log; then pass "$name"; else
        fail "$name" "exit $rc: $(tail -n 1 /tmp/pp.log)"; fi
}
pp "ibv_rc_pingpong -s 4096 -n 1000" 18651 -s 4096 -n 1000
pp "ibv_rc_pingpong -s 65536 -n 1000" 18652 -s 65536 -n 1000
pp "ibv_rc_pingpong -s 4096 -n 1000 -e" 18653 -s 4096 -n 1000 -e

sleep 3
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
