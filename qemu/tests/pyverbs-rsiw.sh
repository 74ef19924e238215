#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: datapath
# rsiw-image: pyverbs
# rsiw-timeout: 1000
# rdma-core's own pyverbs tests (Debian 12's python3-pyverbs, the tests run as
# run_tests.py --dev rsiw0 runs them) on rsiw0: a case per test module, each skipped
# test a skipped case with the tests' reason (Documentation/testing.md lists them).
# The tests pick GID 1 (eth0's IPv4 address; they skip GIDs with a zero interface ID)
# and connect their RC QPs from modify_qp (Documentation/qpconn.md).
. /rsiw/lib.sh
# The listener's port for QP connections from modify_qp, stated (it is the default).
RSIW_MODPARAMS="qp_conn_port=4792"
setup_net
D=${RSIW_DEV_TYPE:-rsiw}0
dev_up "${D%0}" "$D" eth0 || finish
check_output "python3 imports pyverbs" '^ok$' python3 -c 'import pyverbs.device; print("ok")'
pyverbs_suite "$D" judge 900
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down "${D%0}" "$D"
finish
