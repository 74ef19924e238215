# SPDX-License-Identifier: GPL-2.0
# Traffic programs: rping's payloads, perftest, rsiw-verbs-test, the kernel-verbs test module.
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.

# rping_payloads_ok PREFIX FILE: prints `ok N` if the lines of FILE starting with PREFIX
# are pings 0..N-1 in order, each `rdma-ping-K: ` followed by the characters rping
# fills its 64-byte buffer with (ASCII 65..122 cycling, starting at 65 + K mod 58).
rping_payloads_ok() {
    awk -v pre="$1" '
        index($0, pre) == 1 {
            got = substr($0, length(pre) + 1)
            want = "rdma-ping-" (n + 0) ": "
            c = 65 + n % 58
            while (length(want) < 63) {
                want = want sprintf("%c", c)
                c++; if (c > 122) c = 65
            }
            if (got != want) { print "ping " n ": got [" got "] want [" want "]"; bad = 1; exit }
            n++
        }
        END { if (!bad) print "ok " (n + 0) }' "$2"
}

# perftest_run TEST DEV SIZE ITERS PORT [OPTS…]: run perftest TEST (e.g. ib_write_bw) as
# server and client on DEV, to ${PERF_ADDR:-10.0.2.15}: SIZE bytes (empty: TEST's own,
# for ib_atomic_*), ITERS iterations, TCP port PORT, OPTS for both (`-R`: connect with
# rdma_cm). Both logs go to /tmp/perf-TEST-DEV.{server,client}.log; prints the client's
# result line (`#bytes #iterations …`), status 0 if both sides exit 0 and it printed one.
# A run that failed on perftest's own connection race is retried once (on stderr, the
# retry and the first try's logs).
perftest_run() {
    local out
    out=$(perftest_once "$@") && { echo "$out"; return 0; }
    # perftest's second rdma_cm connection (-R) refused before its server listened
    # again, then perftest's retry crashing in librdmacm: a race inside perftest 4.5
    # (Debian 12), on every device (Documentation/performance.md, "A connection
    # flake seen on every device"). Retried once on another port, and said so.
    perftest_refused "$out" || { echo "$out"; return 1; }
    # On stderr: the caller's output holds the result line alone, as without a retry.
    {
        echo "RSIW-INFO $1 on $2: perftest's second connection was refused before its server listened again; retried once on port $(($5 + 1000))"
        echo "$out" | sed 's/^/  first try: /'
    } >&2
    local t=$1 d=$2 s=$3 iters=$4 p=$5
    shift 5
    perftest_once "$t" "$d" "$s" "$iters" $((p + 1000)) "$@"
}

# perftest_refused TEXT: TEXT (a perftest client's log) shows its connection refused
# (RDMA_CM_EVENT_REJECTED, ECONNREFUSED), the signature of perftest's own race between
# its second rdma_cm connection and its server's second rdma_listen.
perftest_refused() {
    case $1 in
    *"RDMA_CM_EVENT_REJECTED"* | *"ERRNO: Connection refused"*) return 0 ;;
    esac
    return 1
}

# perftest_once TEST DEV SIZE ITERS PORT OPTS…: one perftest run (perftest_run).
perftest_once() {
    local t=$1 d=$2 s=$3 iters=$4 p=$5 log rc src line srv
    shift 5
    log=/tmp/perf-$t-$d
    # -F: TCG's clock fails perftest's CPU-frequency sanity check; use cpuinfo's MHz.
    timeout 240 "$t" -F -d "$d" ${s:+-s "$s"} -n "$iters" -p "$p" "$@" > "$log.server.log" 2>&1 &
    srv=$!
    case " $* " in
    *" -R "*)
        wait_rdma_listen
        # iWARP connects over TCP to the port itself; RoCE (rxe) has no TCP listener.
        case $d in *siw*) wait_tcp_listen "$p" ;; esac
        ;;
    # Without -R the server exchanges QPNs over a TCP socket of its own on the port.
    *) wait_tcp_listen "$p" ;;
    esac
    timeout 240 "$t" -F -d "$d" ${s:+-s "$s"} -n "$iters" -p "$p" "$@" "${PERF_ADDR:-10.0.2.15}" > "$log.client.log" 2>&1
    rc=$?
    # A client that failed to connect leaves its server waiting for the timeout.
    [ $rc -ne 0 ] && sleep 2 && kill $srv 2>/dev/null
    wait $srv
    src=$?
    line=$(perftest_result "$log.client.log")
    if [ $rc -ne 0 ] || [ $src -ne 0 ] || [ -z "$line" ]; then
        echo "$t on $d: client exit $rc, server exit $src; client log:"
        tail -n 8 "$log.client.log"
        echo "server log:"
        tail -n 8 "$log.server.log"
        return 1
    fi
    echo "$line"
}

# perftest_result LOG: the result line of a perftest log (first field a size, second
# the iteration count, then numbers), or nothing. A guest whose TSC could not be
# calibrated (host busy during boot: "tsc: Marking TSC unstable due to could not
# calculate TSC khz", which tsc=reliable does not prevent) runs on jiffies and perftest's
# latency tests print `inf`: the exchange completed, only the clock is unusable. Such a
# line counts, with the clocksource named after it (the line still starts with the size).
perftest_result() {
    cs=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
    awk -v cs="$cs" '
        NF >= 4 && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9.]+$/ { print; exit }
        NF >= 4 && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && $3 == "inf" && cs != "tsc" {
            print $0 " (latency not measurable: clocksource " cs ")"; exit }' "$1"
}

# siw_verbs_skips: the rsiw-verbs-test cases siw gets wrong, comma-separated (what siw
# does instead is in Documentation/userspace-tests.md).
siw_verbs_skips() {
    s=send-0B-0sge                          # receive with num_sge 0 refused (EINVAL)
    for len in 4095 4096 4097 1048576; do   # max_sge_rd 1, yet a multi-SGE Read is accepted
        for n in 2 3 4 5 6; do s="$s,read-${len}B-${n}sge"; done
    done
    s="$s,solicited-event"                  # a solicited Send raises no CQ event
    s="$s,send-with-inv"                    # no memory windows (ibv_alloc_mw: EOPNOTSUPP)
    s="$s,err-wrong-rkey,err-out-of-bounds,err-dereg-mr"  # Read flushed, not REM_ACCESS_ERR
    s="$s,err-no-remote-read"               # Read served from a region without REMOTE_READ
    s="$s,err-no-remote-write"              # no completion reports the access error
    s="$s,err-rq-empty"                     # a WR posted after the Terminate never completes
    s="$s,dereg-under-writes"               # releases the pages in softirq (sleeping-in-atomic BUG)
    echo "$s"
}

# verbs_run DEV ADDR TAG [SKIP]: rsiw-verbs-test server and client on DEV at ADDR (one
# VM), cases matching $RSIW_VERBS_CASES (all if unset) except SKIP.
verbs_run() {
    if [ -n "$RSIW_VERBS_TEST_MISSING" ]; then fail "rsiw-verbs-test in the image" "$RSIW_VERBS_TEST_MISSING"; return 1; fi
    timeout 900 rsiw-verbs-test --server "$2" > /tmp/verbs-server.log 2>&1 &
    vsrv=$!
    step "verbs server listens" wait_rdma_listen
    timeout 900 rsiw-verbs-test --client "$2" --dev "$1" --tag "$3" --results /tmp/rsiw-results \
        ${RSIW_VERBS_CASES:+--case "$RSIW_VERBS_CASES"} ${4:+--skip "$4"}
    vrc=$?
    wait $vsrv
    vsrc=$?
    cat /tmp/verbs-server.log
    if [ $vrc -eq 0 ]; then pass "verbs client exits 0"; else fail "verbs client exits 0" "exit $vrc"; fi
    if [ $vsrc -eq 0 ]; then pass "verbs server exits 0"; else fail "verbs server exits 0" "exit $vsrc"; fi
}

# run_kverbs DEV LABEL PASSING FAILING PARAMS...: load rsiw_kverbs_test on DEV (the run
# happens at load), then check each case in PASSING passed and each in FAILING failed.
run_kverbs() {
    kdev=$1; label=$2; passing=$3; failing=$4; shift 4
    dmesg -c > /dev/null  # busybox dmesg: -c clears (it has no -C)
    check "$label/modprobe rsiw_kverbs_test $*" \
        timeout 300 modprobe rsiw_kverbs_test dev="$kdev" addr=10.0.2.15 "$@" || return
    failed=$(cat /sys/module/rsiw_kverbs_test/parameters/failed)
    step "$label/rmmod rsiw_kverbs_test" rmmod rsiw_kverbs_test
    log=$(dmesg)
    printf '%s\n' "$log" | grep -E 'rsiw-kverbs|RSIW-KVERBS'
    for c in $passing; do
        line=$(printf '%s\n' "$log" | grep -E "RSIW-KVERBS (PASS|FAIL) $c(:|\$)" | head -n 1)
        case "$line" in
        *"RSIW-KVERBS PASS $c") pass "$label/$c" ;;
        *"RSIW-KVERBS FAIL $c:"*) fail "$label/$c" "${line#*RSIW-KVERBS FAIL $c: }" ;;
        *) fail "$label/$c" "not reported" ;;
        esac
    done
    for c in $failing; do
        if printf '%s\n' "$log" | grep -Eq "RSIW-KVERBS FAIL $c:"; then
            pass "$label/$c fails"
        else
            fail "$label/$c fails" "no FAIL line for $c"
        fi
    done
    if [ -z "$failing" ]; then want='failed=0$'; else want='failed=[1-9][0-9]*$'; fi
    check_output "$label/summary" "RSIW-KVERBS SUMMARY passed=[0-9]+ $want" \
        sh -c 'dmesg | grep "RSIW-KVERBS SUMMARY"'
    check_output "$label/parameters/failed" "^${want%\$}\$" echo "failed=$failed"
}
