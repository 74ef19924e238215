#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: siw
# rsiw-group: verbs
# The kernel-verbs test module against siw (the reference): both ends of a connection in
# the kernel over siw0 on eth0; every case it logs must pass, with atomics=1 too. Two
# self-test runs show the module's checks can fail: noinv=1 (no invalidation is posted)
# and a device that does not carry the connection.
. /rsiw/lib.sh
setup_net

# Every case the module reports; a case missing from the log fails.
CASES="listen connect_basic send_recv frwr_alloc_mr frwr_reg_mr frwr_rdma_write frwr_rdma_read
local_inv read_after_local_inv_fails write_after_local_inv_not_placed connect_read_inv
read_inv_setup read_with_inv read_with_inv_invalidated connect_send_inv send_inv_setup
send_with_inv send_with_inv_invalidated"
# siw has no masked atomics: with atomics=1 they must fail cleanly.
ATOMIC_CASES="masked_atomic_model connect_atomics atomics_setup masked_atomic_unsupported_clean_error"
# What noinv=1 must break: every check that an invalidation took effect.
NOINV_FAIL="read_after_local_inv_fails write_after_local_inv_not_placed read_with_inv_invalidated
send_with_inv send_with_inv_invalidated"
NOINV_PASS="listen connect_basic send_recv frwr_rdma_write frwr_rdma_read read_with_inv"

step "modprobe siw" modprobe siw || finish
step "rdma link add siw0 type siw netdev eth0" rdma link add siw0 type siw netdev eth0 || finish

run_kverbs siw0 base "$CASES" "" port=18515
run_kverbs siw0 atomics "$CASES $ATOMIC_CASES" "" port=18516 atomics=1
run_kverbs siw0 selftest-noinv "$NOINV_PASS" "$NOINV_FAIL" port=18517 noinv=1
# siw0 carries 10.0.2.15, so every connection ends up on the wrong device.
run_kverbs siw0 selftest-nodev "listen" "connect_basic connect_read_inv connect_send_inv" \
    port=18518 dev=nosuch0

check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
step "rdma link delete siw0" rdma link delete siw0
step "rmmod siw" rmmod siw
finish
