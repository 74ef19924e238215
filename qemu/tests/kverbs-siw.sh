#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The kernel-verbs test module against siw (the reference): both ends of a connection in
# the kernel over siw0 on eth0; every case it logs must pass, with atomics=1 too.
. /rsiw/lib.sh
setup_net

# Every case the module reports; a case missing from the log fails.
CASES="listen connect_basic send_recv frwr_alloc_mr frwr_reg_mr frwr_rdma_write frwr_rdma_read
local_inv read_after_local_inv_fails write_after_local_inv_not_placed connect_read_inv
read_inv_setup read_with_inv read_with_inv_invalidated connect_send_inv send_inv_setup
send_with_inv send_with_inv_invalidated"
# siw has no masked atomics: with atomics=1 they must fail cleanly.
ATOMIC_CASES="masked_atomic_model connect_atomics atomics_setup masked_atomic_unsupported_clean_error"

# run_kverbs LABEL CASES PARAMS...: load the module, turn its log lines into cases, unload it.
run_kverbs() {
    label=$1; cases=$2; shift 2
    dmesg -C
    if timeout 300 modprobe rsiw_kverbs_test dev=siw0 addr=10.0.2.15 "$@"; then
        pass "$label/modprobe rsiw_kverbs_test $*"
        check "$label/rmmod rsiw_kverbs_test" rmmod rsiw_kverbs_test
    else
        fail "$label/modprobe rsiw_kverbs_test $*" "exit $? (the module fails its load when a case fails)"
    fi
    log=$(dmesg)
    printf '%s\n' "$log" | grep -E 'rsiw-kverbs|RSIW-KVERBS'
    for c in $cases; do
        line=$(printf '%s\n' "$log" | grep -E "RSIW-KVERBS (PASS|FAIL) $c(:|\$)" | head -n 1)
        case "$line" in
        *"RSIW-KVERBS PASS $c") pass "$label/$c" ;;
        *"RSIW-KVERBS FAIL $c:"*) fail "$label/$c" "${line#*RSIW-KVERBS FAIL $c: }" ;;
        *) fail "$label/$c" "not reported" ;;
        esac
    done
    check_output "$label/summary, none failed" 'RSIW-KVERBS SUMMARY passed=[0-9]+ failed=0$' \
        sh -c 'dmesg | grep "RSIW-KVERBS SUMMARY"'
}

check "modprobe siw" modprobe siw || finish
check "rdma link add siw0 type siw netdev eth0" rdma link add siw0 type siw netdev eth0 || finish

run_kverbs base "$CASES" port=18515
run_kverbs atomics "$CASES $ATOMIC_CASES" port=18516 atomics=1

check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
check "rdma link delete siw0" rdma link delete siw0
check "rmmod siw" rmmod siw
finish
