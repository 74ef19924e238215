#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
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
# send-with-inv needs a type-2 memory window (user MRs are not invalidatable); a
# device reporting max_mw 0 cannot run it: reported as skipped, never as passed.
if [ "$T" = rsiw ] && ibv_devinfo -v -d "$D" | grep -Eq 'max_mw:[[:space:]]+0$'; then
    skip "rsiw send-with-inv" "$D has no memory windows (max_mw 0)"
    SKIP=${SKIP:+$SKIP,}send-with-inv
fi
verbs_run "$D" 10.0.2.15 "$T" "$SKIP"
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down "$T" "$D"
finish
