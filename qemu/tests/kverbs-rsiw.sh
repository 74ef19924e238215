#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: verbs
# rsiw-requires: datapath
# The kernel-verbs test module on rsiw0 (both ends in the kernel, eth0, 10.0.2.15): every
# case, the atomics run, and the two self-tests that show its checks can fail.
# RSIW_DEV_TYPE=siw runs the same body on siw0 (then it equals kverbs-siw.sh).
. /rsiw/lib.sh
setup_net
T=${RSIW_DEV_TYPE:-rsiw}
D=${T}0

CASES="listen connect_basic send_recv frwr_alloc_mr frwr_reg_mr frwr_rdma_write frwr_rdma_read
local_inv read_after_local_inv_fails write_after_local_inv_not_placed connect_read_inv
read_inv_setup read_with_inv read_with_inv_invalidated connect_send_inv send_inv_setup
send_with_inv send_with_inv_invalidated"
ATOMIC_SETUP="masked_atomic_model connect_atomics atomics_setup"
# With masked atomics (RFC 7306 §5.1) these must pass ...
ATOMIC_CASES="masked_fetch_add masked_cmp_swap_match masked_cmp_swap_mismatch masked_random"
# ... without them, a masked FetchAdd must fail cleanly.
NO_ATOMIC_CASES="masked_atomic_unsupported_clean_error"
NOINV_FAIL="read_after_local_inv_fails write_after_local_inv_not_placed read_with_inv_invalidated
send_with_inv send_with_inv_invalidated"
NOINV_PASS="listen connect_basic send_recv frwr_rdma_write frwr_rdma_read read_with_inv"

dev_up "$T" "$D" eth0 || finish

run_kverbs "$D" base "$CASES" "" port=18515
# The module picks the atomics cases from the device's masked_atomic_cap: judge the set
# it ran, and say so when the device has none (issue 5 adds them to rsiw).
run_kverbs "$D" atomics "$CASES $ATOMIC_SETUP" "" port=18516 atomics=1
if printf '%s\n' "$log" | grep -q "RSIW-KVERBS [A-Z]* masked_atomic_unsupported"; then
    for c in $NO_ATOMIC_CASES; do
        check_output "atomics/$c" "PASS $c\$" sh -c "printf '%s\n' \"\$1\" | grep 'RSIW-KVERBS [A-Z]* $c'" _ "$log"
    done
    for c in $ATOMIC_CASES; do skip "atomics/$c" "$D reports no masked atomics (masked_atomic_cap NONE)"; done
else
    for c in $ATOMIC_CASES; do
        check_output "atomics/$c" "PASS $c\$" sh -c "printf '%s\n' \"\$1\" | grep 'RSIW-KVERBS [A-Z]* $c'" _ "$log"
    done
fi
run_kverbs "$D" selftest-noinv "$NOINV_PASS" "$NOINV_FAIL" port=18517 noinv=1
run_kverbs "$D" selftest-nodev "listen" "connect_basic connect_read_inv connect_send_inv" \
    port=18518 dev=nosuch0

check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
dev_down "$T" "$D"
finish
