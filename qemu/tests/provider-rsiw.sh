#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: basic
# The rsiw provider against the rsiw module, with libibverbs' log on: `ibv_devinfo -v`
# shows the firmware version as text and the query_device_ex values, the port is
# active, and the provider logs no error while libibverbs opens and queries rsiw0.
. /rsiw/lib.sh
setup_net
require_rsiw "rsiw.ko is in the image" || finish
require_provider "rsiw provider in the image" || finish
dev_up rsiw rsiw0 eth0 || finish
export VERBS_LOG_LEVEL=1 VERBS_LOG_FILE=/tmp/verbs.log
check_output "ibv_devinfo -v: fw_ver as text" 'fw_ver:[[:space:]]+[0-9]+\.[0-9]+\.[0-9]+$' ibv_devinfo -v -d rsiw0
check_output "ibv_devinfo -v: max_pd from query_device_ex" 'max_pd:[[:space:]]+[1-9]' ibv_devinfo -v -d rsiw0
check_output "ibv_devinfo -v: port PORT_ACTIVE" 'state:[[:space:]]+PORT_ACTIVE' ibv_devinfo -v -d rsiw0
check_no_output "no provider errors logged" 'rsiw:' cat /tmp/verbs.log
dev_down rsiw rsiw0
finish
