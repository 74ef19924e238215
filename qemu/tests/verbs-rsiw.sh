#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
# rsiw-requires: datapath
# rsiw-timeout: 900
# rsiw-verbs-test on rsiw0 (server and client on eth0, 10.0.2.15), every case, none
# skipped: rsiw must get right what siw gets wrong. RSIW_DEV_TYPE=siw runs the same
# body on siw0 with siw's known defects skipped (then it equals verbs-siw.sh).
. /rsiw/lib.sh
setup_net
T=${RSIW_DEV_TYPE:-rsiw}
D=${T}0
SKIP=
[ "$T" = siw ] && SKIP=$(siw_verbs_skips)

dev_up "$T" "$D" eth0 || finish
verbs_run "$D" 10.0.2.15 "$T" "$SKIP"
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down "$T" "$D"
finish
