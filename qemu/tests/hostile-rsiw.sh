#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: debian-7.3
# rsiw-group: verbs
# rsiw-requires: datapath
# rsiw-timeout: 600
# Hostile local users (Documentation/security.md): a process may bind a connection
# only to a QP of its own that has none. rdma_cm passes the QP number of
# rdma_accept through unchecked, so rsiw refuses an accept that names a connected
# QP (the connection it has keeps working) or another process's QP, and the QPs
# are destroyed without a hang afterwards. A thread that keeps moving a QP's
# producer indices cannot keep the kernel's flush going, nor one that keeps its SQ
# full of local operations keep a doorbell's system call running. A QP's own remote
# access rights are enforced besides the region's. SQEs and RQEs the provider would
# never build, written straight into a connected QP's rings (unknown opcode, flags,
# num_sge or inline_len beyond the element, SGEs naming no memory of the QP), each
# complete with their error (a corrupt SQE leaves the QP in ERROR). Then a kernel ULP's FRWR region: no
# byte of it reaches a peer after the ULP got the completion that invalidated it
# (Send With Invalidate or LOCAL_INV racing queued Read Responses).
. /rsiw/lib.sh
setup_net
D=rsiw0
dev_up rsiw "$D" eth0 || finish

# run_bg NAME SECONDS CMD...: runs CMD in the background and collects its
# RSIW-TEST lines. A QP destroy or flush that never returns leaves the process
# in uninterruptible sleep or spinning in the kernel, which no timeout can kill:
# poll for its end instead of waiting.
run_bg() {
    name=$1; secs=$2; shift 2
    "$@" > "/tmp/$name.log" 2>&1 &
    pid=$!
    n=0
    while kill -0 $pid 2> /dev/null && [ $n -lt "$secs" ]; do sleep 1; n=$((n + 1)); done
    cat "/tmp/$name.log"
    grep '^RSIW-TEST ' "/tmp/$name.log" | sed 's/^RSIW-TEST //' >> /tmp/rsiw-results
    RSIW_FAILED=$((RSIW_FAILED + $(grep -c '^RSIW-TEST FAIL' "/tmp/$name.log")))
    if kill -0 $pid 2> /dev/null; then
        fail "$name: the program ends" "still running after $secs s: $(cat /proc/$pid/wchan 2> /dev/null)"
        finish
    fi
    wait $pid
    check "$name: the program exits 0" [ $? -eq 0 ]
}

run_bg takeover 90 rsiw-verbs-test --takeover 10.0.2.15:7491
run_bg flush-hammer 90 rsiw-verbs-test --flush-hammer 10.0.2.15:7495
run_bg local-hammer 90 rsiw-verbs-test --local-hammer 10.0.2.15:7497
run_bg qp-access 90 rsiw-verbs-test --qp-access 10.0.2.15:7501
run_bg corrupt-wqe 180 rsiw-verbs-test --corrupt-wqe 10.0.2.15:7511
HOSTILE="listen connect_hostile_send_inv hostile_setup hostile_reads_posted
hostile_send_inv_posted hostile_send_inv_received hostile_send_inv_reads_complete
read_vs_send_inv_no_poison connect_hostile_local_inv hostile_li_reads_posted
hostile_li_send_posted hostile_li_send_received hostile_local_inv hostile_li_reads_complete
read_vs_local_inv_no_poison"
run_kverbs "$D" hostile "$HOSTILE" "" port=18519 hostile=1
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
