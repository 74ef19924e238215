#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: datapath
# rsiw-timeout: 900
# rsiw-verbs-test's RFC 7306 cases on rsiw0 (eth0, 10.0.2.15): FetchAdd/CmpSwap, and
# masked ones through the provider's rsiwdv calls, against the reference ALU;
# misaligned and no-REMOTE_ATOMIC targets refused with memory intact; 4 QPs
# (3 processes) x 10,000 FetchAdd on one word; a CmpSwap lock; Write with Immediate
# (32-bit verbs, 64-bit rsiwdv); the RFC 7306 §7 ordering rows. RSIW_DEV_TYPE=siw:
# every case must be reported as skipped (siw's atomic_cap is ATOMIC_NONE).
. /rsiw/lib.sh
setup_net
T=${RSIW_DEV_TYPE:-rsiw}
D=${T}0
RSIW_VERBS_CASES='atomic-*'

dev_up "$T" "$D" eth0 || finish
verbs_run "$D" 10.0.2.15 "$T"
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down "$T" "$D"
finish
