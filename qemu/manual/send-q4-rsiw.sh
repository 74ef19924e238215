#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: datapath
# rsiw-timeout: 900
# The `ib_send_bw -R -q 4` hang (Documentation/qpconn.md): up to Q4_RUNS (default 25)
# runs of ib_send_bw -R -q 4 -s 4096 -n 2000 on rsiw0 over the VM's own address. A run
# still going after 25 s is a hang: the case fails, and the sockets (`ss -tnim`), every
# QP's counters and SQ indices (`rdma -dd resource show qp`) and the port's are printed;
# two hangs end the loop. The cause (connections overtaking each other, so perftest
# paired the wrong QPs) is fixed; 25 runs take about 4 minutes, so this stays out of
# the suite, whose fault-scale-rsiw.sh checks the connect order itself. Run it with
# `cargo xtask test send-q4-rsiw --vm-only` (add `--flavour perf` for the perf kernel).
. /rsiw/lib.sh
setup_net
dev_up rsiw rsiw0 eth0 || finish
hung=0
runs=0
for i in $(seq 1 "${Q4_RUNS:-25}"); do
    timeout 60 ib_send_bw -F -d rsiw0 -s 4096 -n 2000 -q 4 -R -p 18600 > /tmp/srv.log 2>&1 &
    srv=$!
    wait_rdma_listen
    wait_tcp_listen 18600
    timeout 60 ib_send_bw -F -d rsiw0 -s 4096 -n 2000 -q 4 -R -p 18600 10.0.2.15 > /tmp/cli.log 2>&1 &
    cli=$!
    n=0
    while kill -0 $cli 2>/dev/null && [ $n -lt 25 ]; do sleep 1; n=$((n + 1)); done
    runs=$i
    if kill -0 $cli 2>/dev/null; then
        echo "=== run $i: still going after $n s"
        hung=$((hung + 1))
        ss -tnim
        rdma -dd resource show qp
        rdma statistic show link rsiw0/1
        kill $cli $srv 2>/dev/null
        wait $cli
        wait $srv
        sleep 3
        [ $hung -ge 2 ] && break
    else
        wait $cli
        c=$?
        wait $srv
        echo "run $i: client $c server $?: $(perftest_result /tmp/cli.log)"
    fi
done
check "ib_send_bw -R -q 4: no hang in $runs runs ($hung hung)" test "$hung" -eq 0
sleep 2
dev_down rsiw rsiw0
finish
