#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: basic
# rsiw's verbs objects without a connection: the advertised limits (ibv_devinfo -v),
# then the test module rsiw_objs_test on rsiw0 (QP state machine, flush completions
# also posted from hardirq, completion/overflow/SRQ-limit/last-WQE events, FRWR
# mapping, SRQ), under the debug kernel's detectors.
. /rsiw/lib.sh
setup_net
require_rsiw "rsiw.ko is in the image" || finish
step "modprobe rsiw" modprobe rsiw || finish
step "rdma link add rsiw0 type rsiw netdev eth0" rdma link add rsiw0 type rsiw netdev eth0 || finish

info=$(ibv_devinfo -v -d rsiw0 2>&1)
# limit FIELD VALUE: ibv_devinfo -v reports VALUE for FIELD.
limit() {
    check_output "ibv_devinfo $1 $2" "$1:[[:space:]]+$2" printf '%s\n' "$info"
}
limit max_qp_wr 16384
limit max_sge 6
limit max_sge_rd 1
limit max_qp_rd_atom 128
limit max_qp_init_rd_atom 128
limit max_srq_wr 16384
limit max_cqe 32768
limit atomic_cap ATOMIC_GLOB
check_output "ibv_devinfo MEM_MGT_EXTENSIONS" 'MEM_MGT_EXTENSIONS' printf '%s\n' "$info"

dmesg -c > /dev/null
check "modprobe rsiw_objs_test" timeout 120 modprobe rsiw_objs_test dev=rsiw0
log=$(dmesg)
printf '%s\n' "$log" | grep 'RSIW-OBJS'
printf '%s\n' "$log" | sed -n 's/.*RSIW-OBJS FAIL \([^:]*\): \(.*\)/\1|\2/p' > /tmp/objs-fails
while IFS='|' read -r c why; do fail "objs/$c" "$why"; done < /tmp/objs-fails
check_output "objs summary" 'RSIW-OBJS SUMMARY passed=[0-9]+ failed=0$' \
    sh -c 'dmesg | grep "RSIW-OBJS SUMMARY"'
step "rmmod rsiw_objs_test" rmmod rsiw_objs_test
step "rdma link delete rsiw0" rdma link delete rsiw0
step "rmmod rsiw" rmmod rsiw
finish
