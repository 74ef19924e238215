# SPDX-License-Identifier: GPL-2.0
# Helpers for rsiw VM test scripts (source with `. /rsiw/lib.sh`): each check prints one
# `RSIW-TEST PASS name` or `RSIW-TEST FAIL name: why` line, which the harness counts.

RSIW_FAILED=0
# The run's environment (RSIW_TEST, RSIW_VM_INDEX, RSIW_REQUIRES, RSIW_DEV_TYPE …).
[ -f /rsiw/env ] && . /rsiw/env
# Why a part of the image is missing (RSIW_KO_MISSING, RSIW_VERBS_TEST_MISSING …).
[ -f /rsiw/status ] && . /rsiw/status

pass() {
    echo "RSIW-TEST PASS $1"
    echo "PASS $1" >> /tmp/rsiw-results
}

# fail NAME WHY
fail() {
    why=$(printf '%s' "$2" | tr '\n' ' ')
    echo "RSIW-TEST FAIL $1: $why"
    echo "FAIL $1: $why" >> /tmp/rsiw-results
    RSIW_FAILED=$((RSIW_FAILED + 1))
}

# skip NAME WHY: the case could not run here (a prerequisite is missing); the harness
# counts it as skipped, neither passed nor failed.
skip() {
    why=$(printf '%s' "$2" | tr '\n' ' ')
    echo "RSIW-TEST SKIP $1: $why"
    echo "SKIP $1: $why" >> /tmp/rsiw-results
}

# check NAME CMD...: passes if CMD exits 0. CMD's output is shown either way.
check() {
    name=$1; shift
    out=$("$@" 2>&1); rc=$?
    [ -n "$out" ] && printf '%s\n' "$out"
    if [ $rc -eq 0 ]; then pass "$name"; else fail "$name" "\`$*\` exited $rc: $(printf '%s' "$out" | tail -n 1)"; fi
    return $rc
}

# check_fails NAME CMD...: passes if CMD exits non-zero.
check_fails() {
    name=$1; shift
    out=$("$@" 2>&1); rc=$?
    [ -n "$out" ] && printf '%s\n' "$out"
    if [ $rc -ne 0 ]; then pass "$name"; else fail "$name" "\`$*\` succeeded"; fi
    [ $rc -ne 0 ]
}

# check_output NAME REGEX CMD...: passes if CMD exits 0 and a line of its output matches REGEX (grep -E).
check_output() {
    name=$1; re=$2; shift 2
    out=$("$@" 2>&1); rc=$?
    [ -n "$out" ] && printf '%s\n' "$out"
    if [ $rc -ne 0 ]; then
        fail "$name" "\`$*\` exited $rc: $(printf '%s' "$out" | tail -n 1)"; return 1
    fi
    if printf '%s\n' "$out" | grep -Eq -- "$re"; then pass "$name"; return 0; fi
    fail "$name" "\`$*\` printed nothing matching /$re/"
    return 1
}

# check_no_output NAME REGEX CMD...: passes if no line of CMD's output matches REGEX
# (CMD's exit status does not matter).
check_no_output() {
    name=$1; re=$2; shift 2
    out=$("$@" 2>&1)
    [ -n "$out" ] && printf '%s\n' "$out"
    if printf '%s\n' "$out" | grep -Eq -- "$re"; then
        fail "$name" "\`$*\` printed /$re/: $(printf '%s\n' "$out" | grep -E -- "$re" | head -n 1)"; return 1
    fi
    pass "$name"
}

# retry TRIES CMD...: run CMD until it succeeds, one second apart; status of the last try.
retry() {
    local n=$1; shift
    while :; do
        "$@" && return 0
        n=$((n - 1))
        [ $n -gt 0 ] || return 1
        sleep 1
    done
}

# setup_net: eth0 (QEMU user network) gets 10.0.2.15/24; with two VMs, eth1 (the
# socket network between them) gets 10.0.9.1 (VM 0) or 10.0.9.2 (VM 1).
setup_net() {
    ip link set eth0 up
    ip addr add 10.0.2.15/24 dev eth0
    if [ "${RSIW_VM_COUNT:-1}" -gt 1 ]; then
        ip link set eth1 up
        ip addr add "10.0.9.$((RSIW_VM_INDEX + 1))/24" dev eth1
    fi
}

# The socket-network address of the other VM.
peer_addr() {
    echo "10.0.9.$((2 - RSIW_VM_INDEX))"
}

# signal_peer PORT: release the other VM from its `wait_peer PORT` (retries until it listens).
signal_peer() {
    retry 60 sh -c "echo go | timeout 5 nc -w 2 $(peer_addr) $1"
}

# wait_peer PORT: block until the other VM runs `signal_peer PORT` (at most 120 s).
wait_peer() {
    timeout 120 nc -l -p "$1" </dev/null | grep -q go
}

# wait_rdma_listen: wait until an RDMA CM ID is listening here (e.g. an rping server is up).
wait_rdma_listen() {
    retry 30 sh -c 'rdma resource show cm_id | grep -q LISTEN'
}

# wait_tcp_listen PORT: wait until a TCP socket listens on PORT (kernel sockets count: an
# iWARP device's listener is one). rdma_cm shows a wildcard cm_id as LISTEN before it has
# created the per-device listeners, so a client started on wait_rdma_listen alone can be
# refused (RDMA_CM_EVENT_REJECTED -111). perftest -R's second connection (its QPs) races
# the server's second rdma_listen inside perftest; no wait here can cover that one
# (Documentation/performance.md, "A connection flake seen on every device").
wait_tcp_listen() {
    retry 30 awk -v p=":$(printf '%04X' "$1")" \
        'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6
}

# require_rsiw NAME: fails NAME (and returns 1) if rsiw.ko is not in the image.
require_rsiw() {
    if [ -n "$RSIW_KO_MISSING" ]; then fail "$1" "$RSIW_KO_MISSING"; return 1; fi
    return 0
}

# require_provider NAME: fails NAME (and returns 1) if the rsiw provider is not in the image.
require_provider() {
    if [ -n "$RSIW_PROVIDER_MISSING" ]; then fail "$1" "$RSIW_PROVIDER_MISSING"; return 1; fi
    return 0
}

# dev_max_qp DEV: the max_qp DEV reports through `ibv_devinfo -v` (empty if it cannot be read).
dev_max_qp() {
    ibv_devinfo -v -d "$1" 2>/dev/null | sed -n 's/^[[:space:]]*max_qp:[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -n 1
}

# require_datapath NAME DEV: a device without a data path reports max_qp 0 (rsiw before
# its QPs exist); then NAME is skipped with that reason and 1 returned, so the script
# can stop (`require_datapath … || finish`). A device that cannot be queried fails NAME.
require_datapath() {
    local n; n=$(dev_max_qp "$2")
    if [ -z "$n" ]; then
        fail "$1" "ibv_devinfo -v -d $2 shows no max_qp: $(ibv_devinfo -v -d "$2" 2>&1 | tail -n 1)"; return 1
    fi
    if [ "$n" -eq 0 ]; then skip "$1" "$2: no QPs yet (max_qp=0)"; return 1; fi
    return 0
}

# dev_up TYPE NAME NETDEV: load TYPE's module (rsiw, siw or rdma_rxe) and add device NAME
# on NETDEV; rsiw also needs the image to carry rsiw.ko and its provider.
dev_up() {
    mod=$1
    [ "$1" = rxe ] && mod=rdma_rxe
    if [ "$1" = rsiw ]; then
        require_rsiw "$2: rsiw.ko is in the image" || return 1
        require_provider "$2: the rsiw provider is in the image" || return 1
    fi
    check "modprobe $mod" modprobe "$mod" || return 1
    # busybox modprobe ignores softdeps; userspace verbs need ib_uverbs.
    modprobe ib_uverbs 2>/dev/null
    check "rdma link add $2 type $1 netdev $3" rdma link add "$2" type "$1" netdev "$3" || return 1
    case " $RSIW_REQUIRES " in
    *" datapath "*) require_datapath "$2: data path" "$2" || return 1 ;;
    esac
    return 0
}

# dev_down TYPE NAME: delete NAME and unload TYPE's module.
dev_down() {
    mod=$1
    [ "$1" = rxe ] && mod=rdma_rxe
    check "rdma link delete $2" rdma link delete "$2"
    check "rmmod $mod" rmmod "$mod"
}

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
perftest_run() {
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
    *) sleep 2 ;;  # the server's TCP exchange socket listens right away
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
    check "verbs server listens" wait_rdma_listen
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
    check "$label/rmmod rsiw_kverbs_test" rmmod rsiw_kverbs_test
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

# finish: end the script, non-zero if any case failed.
finish() {
    exit $((RSIW_FAILED > 0))
}

# rping between rsiw and siw across two VMs (cm-siw-*.sh): $T is this side's device
# type, $me and $peer the addresses.
# cm_serve PORT: rping server here (3 pings), released to the peer with PORT.
cm_serve() {
    timeout 150 rping -s -a "$me" -C 3 -v > /tmp/rping-s.log 2>&1 &
    server=$!
    check "$T responder listens" wait_rdma_listen
    check "$T responder: tell the peer" signal_peer "$1"
    wait $server
    rc=$?
    cat /tmp/rping-s.log
    if [ $rc -ne 0 ]; then
        fail "$T responder: rping -s, 3 pings" "exit $rc"
    else
        check_output "$T responder: rping -s, 3 pings" "^ok 3\$" rping_payloads_ok 'server ping data: ' /tmp/rping-s.log
    fi
}
# cm_connect PORT: rping client to the peer's server once it says it is up.
cm_connect() {
    check "$T initiator: peer's server is up" wait_peer "$1"
    timeout 120 rping -c -a "$peer" -C 3 -v > /tmp/rping-c.log 2>&1
    rc=$?
    cat /tmp/rping-c.log
    if [ $rc -ne 0 ]; then
        fail "$T initiator: rping -c to $peer, 3 pings" "exit $rc"
    else
        check_output "$T initiator: rping -c to $peer, 3 pings" "^ok 3\$" rping_payloads_ok 'ping data: ' /tmp/rping-c.log
    fi
}

# mpa_after KEYHEX: the 8 bytes (flags, Rev, PD_Length, IRD, ORD) after the first MPA
# key KEYHEX in the capture, as hex.
# The capture is read while tcpdump still runs: a packet reaches the file only when
# tcpdump has it from the kernel's capture ring, so wait up to 5 s for the key.
mpa_after() {
    for _ in 1 2 3 4 5; do
        v=$(tcpdump -Z root -r /tmp/cap.pcap -n -x 2>/dev/null | awk '
            /^[^ \t]/ { if (h != "") print h; h = ""; next }
            { for (i = 2; i <= NF; i++) h = h $i }
            END { if (h != "") print h }' |
            grep -o "$1[0-9a-f]*" | head -n 1 | cut -c 33-48)
        [ -n "$v" ] && break
        sleep 1
    done
    echo "$v"
}
REQ=4d504120494420526571204672616d65   # "MPA ID Req Frame"
REP=4d504120494420526570204672616d65   # "MPA ID Rep Frame"

# cm_siw_up: the network, siw on VM 0 or rsiw on VM 1 on eth1 ($T, $me, $peer), and on
# VM 1 a capture of the rping port's MPA exchange in /tmp/cap.pcap ($td).
cm_siw_up() {
    setup_net
    peer=$(peer_addr)
    me="10.0.9.$((RSIW_VM_INDEX + 1))"
    if [ "$RSIW_VM_INDEX" = 0 ]; then T=siw; else T=rsiw; fi
    check "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
    dev_up "$T" "${T}0" eth1 || finish
    if [ "$T" = rsiw ]; then
        tcpdump -Z root -U --immediate-mode -i eth1 -n -s 300 -w /tmp/cap.pcap tcp port 7174 > /tmp/td.log 2>&1 &
        td=$!
        sleep 2
    fi
}

# cm_siw_down: keep answering until the other VM is done, check nothing is left, tear
# the device down and finish.
cm_siw_down() {
    sleep 3
    check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w ${T}0 | grep -v '^$'"
    check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
    dev_down "$T" "${T}0"
    finish
}

# stats_save DEV FILE: the port counters of DEV/1 (`rdma statistic show link`), one
# `name value` per line, into FILE.
stats_save() {
    rdma statistic show link "$1/1" | tr -s ' ' '\n' |
        awk 'NR > 2 { if (k == "") k = $0; else { print k, $0; k = "" } }' > "$2"
}

# stat_delta DEV FILE NAME: how much counter NAME of DEV/1 grew since `stats_save DEV FILE`.
stat_delta() {
    awk -v n="$3" '$1 == n { print $2 }' "$2" > /tmp/.stat_before
    rdma statistic show link "$1/1" | tr -s ' ' '\n' |
        awk -v n="$3" -v b="$(cat /tmp/.stat_before)" 'prev == n { print $0 - b; exit } { prev = $0 }'
}

# qp_attr QPN NAME [FILE]: the driver attribute NAME (without `drv_`) of QP QPN in
# `rdma -dd resource show qp` (or in FILE, a saved copy of its output).
qp_attr() {
    if [ -n "$3" ]; then cat "$3"; else rdma -dd resource show qp; fi |
        awk -v q="$1" '$3 == "lqpn" && $4 == q' | tr -s ' ' '\n' |
        awk -v n="drv_$2" 'prev == n { print; exit } { prev = $0 }'
}

# mem_used_kb: the memory the kernel and every process hold (MemTotal - MemAvailable),
# in KiB.
mem_used_kb() {
    awk '/^MemTotal:/ { t = $2 } /^MemAvailable:/ { a = $2 } END { print t - a }' /proc/meminfo
}

# check_wait NAME PID [SECONDS]: passes if background job PID (a child of this shell)
# exits with status 0 within SECONDS (default 60); one still running then is killed
# (SIGKILL) and fails NAME. `check NAME wait PID` cannot do this: `check` runs its
# command in a subshell, whose `wait` knows no children.
check_wait() {
    local n=${3:-60}
    while kill -0 "$2" 2>/dev/null && [ "$n" -gt 0 ]; do
        sleep 1
        n=$((n - 1))
    done
    if kill -0 "$2" 2>/dev/null; then
        kill -9 "$2"
        wait "$2"
        fail "$1" "pid $2 still running after ${3:-60} s (killed)"
        return 1
    fi
    wait "$2"
    local rc=$?
    if [ $rc -eq 0 ]; then pass "$1"; else fail "$1" "pid $2 exited $rc"; fi
    return $rc
}
