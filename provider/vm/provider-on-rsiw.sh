#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The rsiw provider against the rsiw module: query_device_ex, query_port, alloc_pd.
. /rsiw/lib.sh
setup_net
require_rsiw "rsiw.ko is in the image" || finish
require_provider "rsiw provider in the image" || finish
step "modprobe rsiw" modprobe rsiw || finish
step "rdma link add rsiw0 type rsiw netdev eth0" rdma link add rsiw0 type rsiw netdev eth0 || finish
export VERBS_LOG_LEVEL=1 VERBS_LOG_FILE=/tmp/verbs.log
check_output "ibv_devinfo -v: fw_ver as text" 'fw_ver:[[:space:]]+[0-9]+\.[0-9]+\.[0-9]+$' ibv_devinfo -v -d rsiw0
check_output "ibv_devinfo -v: max_pd from query_device_ex" 'max_pd:[[:space:]]+[1-9]' ibv_devinfo -v -d rsiw0
check_output "ibv_devinfo -v: port PORT_ACTIVE" 'state:[[:space:]]+PORT_ACTIVE' ibv_devinfo -v -d rsiw0
# alloc_pd works; reg_mr is not implemented yet, so the program stops there (dealloc_pd on its way out).
check "ibv_rc_pingpong gets past alloc_pd to reg_mr" sh -c "ibv_rc_pingpong -d rsiw0 -g 0 2>&1 | grep 'register MR'"
check_no_output "no provider errors logged" 'rsiw:' cat /tmp/verbs.log
step "rdma link delete rsiw0" rdma link delete rsiw0
step "rmmod rsiw" rmmod rsiw
finish
