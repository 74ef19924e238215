#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The rsiw provider against a stand-in kernel device: a siw device named rsiw0, with
# siw.driver removed so that only the rsiw provider's name match can claim it (siw's
# first device answers GET_CONTEXT with dev_id 1, which reads as rsiw ABI_VERSION 1).
. /rsiw/lib.sh
setup_net
require_provider "rsiw provider in the image" || finish
step "modprobe siw" modprobe siw || finish
step "rdma link add rsiw0 type siw netdev eth0" rdma link add rsiw0 type siw netdev eth0 || finish
mv /etc/libibverbs.d/siw.driver /tmp/siw.driver
export VERBS_LOG_LEVEL=1 VERBS_LOG_FILE=/tmp/verbs.log
check_output "ibv_devices lists rsiw0 (rsiw provider)" '^[[:space:]]*rsiw0[[:space:]]' ibv_devices
check_output "ibv_devinfo -d rsiw0: transport iWARP (1)" 'transport:[[:space:]]+iWARP \(1\)' ibv_devinfo -d rsiw0
check_output "ibv_devinfo -d rsiw0: PORT_ACTIVE" 'state:[[:space:]]+PORT_ACTIVE' ibv_devinfo -d rsiw0
check_output "ibv_devinfo -v: query_device_ex fields" 'max_qp:[[:space:]]+[1-9]' ibv_devinfo -v -d rsiw0
# alloc_pd works; reg_mr is not implemented yet, so the program stops there (dealloc_pd on its way out).
check "ibv_rc_pingpong gets past alloc_pd to reg_mr" sh -c "ibv_rc_pingpong -d rsiw0 -g 0 2>&1 | grep 'register MR'"
check_no_output "no provider errors logged" 'rsiw:' cat /tmp/verbs.log
mv /tmp/siw.driver /etc/libibverbs.d/siw.driver
step "rdma link delete rsiw0" rdma link delete rsiw0
finish
