#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `cargo xtask run`: load rsiw, create rsiw0 on eth0 and show what verbs see of it.
. /rsiw/lib.sh
setup_net
require_rsiw "rsiw.ko is in the image" || finish
check "modprobe rsiw" modprobe rsiw || finish
check "rdma link add rsiw0 type rsiw netdev eth0" rdma link add rsiw0 type rsiw netdev eth0 || finish
rdma link show
require_provider "rsiw provider is in the image" || finish
check "ibv_devices" ibv_devices
check "ibv_devinfo -v -d rsiw0" ibv_devinfo -v -d rsiw0
finish
