#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-verbs-test against the kernel's siw: server and client on siw0 (eth0, 10.0.2.15).
# SKIP lists the cases siw gets wrong (see Documentation/userspace-tests.md).
. /rsiw/lib.sh
setup_net

# siw's defects, one line each (what siw does instead is in Documentation/userspace-tests.md).
SKIP=send-0B-0sge                       # receive with num_sge 0 refused (EINVAL)
for len in 4095 4096 4097 1048576; do   # max_sge_rd 1, yet a multi-SGE Read is accepted
    for n in 2 3 4 5 6; do SKIP="$SKIP,read-${len}B-${n}sge"; done
done
SKIP="$SKIP,solicited-event"            # a solicited Send raises no CQ event
SKIP="$SKIP,send-with-inv"              # no memory windows (ibv_alloc_mw: EOPNOTSUPP)
SKIP="$SKIP,err-wrong-rkey,err-out-of-bounds,err-dereg-mr"  # Read flushed, not REM_ACCESS_ERR
SKIP="$SKIP,err-no-remote-read"         # Read served from a region without REMOTE_READ
SKIP="$SKIP,err-no-remote-write"        # no completion reports the access error
SKIP="$SKIP,err-rq-empty"               # a WR posted after the Terminate never completes

. /rsiw/status
if [ -n "$RSIW_VERBS_TEST_MISSING" ]; then fail "rsiw-verbs-test in the image" "$RSIW_VERBS_TEST_MISSING"; finish; fi
check "modprobe siw" modprobe siw || finish
check "rdma link add siw0 type siw netdev eth0" rdma link add siw0 type siw netdev eth0 || finish

timeout 600 rsiw-verbs-test --server 10.0.2.15 > /tmp/verbs-server.log 2>&1 &
server=$!
check "verbs server listens" wait_rdma_listen
timeout 600 rsiw-verbs-test --client 10.0.2.15 --dev siw0 --tag siw --results /tmp/rsiw-results \
    ${RSIW_VERBS_CASES:+--case "$RSIW_VERBS_CASES"} ${SKIP:+--skip "$SKIP"}
rc=$?
wait $server
src=$?
cat /tmp/verbs-server.log
if [ $rc -eq 0 ]; then pass "verbs client exits 0"; else fail "verbs client exits 0" "exit $rc"; fi
if [ $src -eq 0 ]; then pass "verbs server exits 0"; else fail "verbs server exits 0" "exit $src"; fi

check "rdma link delete siw0" rdma link delete siw0
check "rmmod siw" rmmod siw
finish
