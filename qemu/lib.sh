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
    fail "$name" "\`$*\` printed nothing matching /$re/; its last line: $(printf '%s' "$out" | tail -n 1 | cut -c 1-200)"
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

# retry TRIES CMD...: run CMD until it succeeds, one second apart after a first second
# of tries 0.2 s apart (most waits end within it: a server just started, an object
# just released); gives up after about TRIES seconds, with the last try's status.
retry() {
    local n=$1 fast=5; shift
    while :; do
        "$@" && return 0
        if [ $fast -gt 0 ]; then
            fast=$((fast - 1))
            sleep 0.2
            continue
        fi
        n=$((n - 1))
        [ $n -gt 0 ] || return 1
        sleep 1
    done
}

# setup_net: eth0 (QEMU user network) gets 10.0.2.15/24; with two VMs, eth1 (the
# socket network between them) gets 10.0.9.1 (VM 0) or 10.0.9.2 (VM 1).
setup_net() {
    # A script of a group (`# rsiw-group:`) may find this done by the one before (or,
    # on two VMs, eth1's address set again by the init).
    ip link set eth0 up
    ip -4 addr show dev eth0 | grep -q "inet 10.0.2.15/" || ip addr add 10.0.2.15/24 dev eth0
    nets=eth0
    if [ "${RSIW_VM_COUNT:-1}" -gt 1 ]; then
        ip link set eth1 up
        a="10.0.9.$((RSIW_VM_INDEX + 1))"
        ip -4 addr show dev eth1 | grep -q "inet $a/" || ip addr add "$a/24" dev eth1
        nets="eth0 eth1"
    fi
    # The IPv6 link-local address comes when the link is operationally up (link
    # watch, up to a second later). Adding it makes an rsiw device on the netdev
    # re-read its GID table, and ib_core's re-read (config_non_roce_gid_cache)
    # deletes and re-adds every entry, index 0 too: an rdma_cm bind in that moment
    # fails with ENODEV. Wait for it here, before any device exists (bounded).
    for n in $nets; do
        i=0
        while [ $i -lt 50 ] && ! ip -6 addr show dev "$n" scope link | grep -q inet6; do
            sleep 0.1
            i=$((i + 1))
        done
        [ $i -lt 50 ] || echo "setup_net: $n has no IPv6 link-local address after 5 s"
    done
}

# The socket-network address of the other VM.
peer_addr() {
    echo "10.0.9.$((2 - RSIW_VM_INDEX))"
}

# A signal the other VM never took (nothing listened on its port for 60 tries: it froze,
# died, or is stuck in a step this VM left long ago) marks it lost: every later
# `signal_peer` and `wait_peer` then fails at once with a line saying so, instead of
# waiting out its own time again, so that a partner that is gone costs one wait and not
# one per step (the harness stops the partner a while after this VM ends,
# `xtask/src/vm.rs`). A `wait_peer` that times out does not mark it: the other VM may
# only have failed to start what it was to signal.
PEER_LOST=/tmp/rsiw-peer-lost

# peer_lost WHAT: true, after a line saying WHAT is not tried and why, if the other VM was lost.
peer_lost() {
    [ -e "$PEER_LOST" ] || return 1
    echo "$1: not tried, the other VM was lost earlier ($(cat "$PEER_LOST"))"
}

# signal_peer PORT: release the other VM from its `wait_peer PORT` (retries until it listens).
signal_peer() {
    peer_lost "signal_peer $1" && return 1
    retry 60 sh -c "echo go | timeout 5 nc -w 2 $(peer_addr) $1" && return 0
    echo "signal_peer $1: the other VM did not listen within 60 tries" | tee "$PEER_LOST"
    return 1
}

# wait_peer PORT [SECONDS]: block until the other VM runs `signal_peer PORT` (at most
# SECONDS, default 120).
wait_peer() {
    peer_lost "wait_peer $1" && return 1
    timeout "${2:-120}" nc -l -p "$1" </dev/null | grep -q go && return 0
    echo "wait_peer $1: no signal from the other VM within ${2:-120} s"
    return 1
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
    # RSIW_MODPARAMS: module parameters for rsiw (e.g. qp_conn_port=4792).
    # shellcheck disable=SC2086
    if [ "$mod" = rsiw ]; then
        check "modprobe $mod $RSIW_MODPARAMS" modprobe "$mod" $RSIW_MODPARAMS || return 1
    else
        check "modprobe $mod" modprobe "$mod" || return 1
    fi
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
# A run that failed on perftest's own connection race is retried once (on stderr, the
# retry and the first try's logs).
perftest_run() {
    local out
    out=$(perftest_once "$@") && { echo "$out"; return 0; }
    # perftest's second rdma_cm connection (-R) refused before its server listened
    # again, then perftest's retry crashing in librdmacm: a race inside perftest 4.5
    # (Debian 12), on every device (Documentation/performance.md, "A connection
    # flake seen on every device"). Retried once on another port, and said so.
    case $out in
    *"RDMA_CM_EVENT_REJECTED"*"Failed to connect RDMA CM events"*) ;;
    *) echo "$out"; return 1 ;;
    esac
    # On stderr: the caller's output holds the result line alone, as without a retry.
    {
        echo "RSIW-INFO $1 on $2: perftest's second connection was refused before its server listened again; retried once on port $(($5 + 1000))"
        echo "$out" | sed 's/^/  first try: /'
    } >&2
    local t=$1 d=$2 s=$3 iters=$4 p=$5
    shift 5
    perftest_once "$t" "$d" "$s" "$iters" $((p + 1000)) "$@"
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

# emit_pcap NAME FILE CHECK: FILE as base64 console lines, then its size and the check
# the host runs on it after the run (xtask/src/pcap.rs).
emit_pcap() {
    base64 "$2" | sed "s/^/RSIW-PCAP $1 /"
    echo "RSIW-PCAP-END $1 $(wc -c < "$2") $3"
}

# capture_start FILE FILTER: tcpdump on lo into FILE (whole packets) for FILTER, in
# the background ($td); returns once tcpdump's socket is bound (it prints "listening on").
capture_start() {
    tcpdump -Z root -U -i lo -n -s 0 -w "$1" "$2" > /tmp/td.log 2>&1 &
    td=$!
    retry 10 grep -q "listening on" /tmp/td.log
}

# capture_end NAME FILE CHECK [LABEL]: stops capture_start's tcpdump, then passes
# "LABEL: tcpdump captured the exchange" and prints the capture for the host's CHECK
# (xtask/src/pcap.rs), or fails the case if nothing was captured.
capture_end() {
    local l="${4:+$4: }tcpdump captured the exchange"
    sleep 1
    kill $td; wait $td
    cat /tmp/td.log
    if [ -s "$2" ]; then
        pass "$l ($(wc -c < "$2") bytes)"
        emit_pcap "$1" "$2" "$3"
    else
        fail "$l" "empty capture"
    fi
}

# wire_capture_start IFACE PORT: tcpdump of TCP port PORT on IFACE (whole packets) into
# /tmp/wire.pcap, in the background ($wire_td), for wire_capture_end.
wire_capture_start() {
    rm -f /tmp/wire.pcap
    tcpdump -Z root -U -i "$1" -n -s 0 -B 16384 -w /tmp/wire.pcap tcp port "$2" > /tmp/wire-td.log 2>&1 &
    wire_td=$!
    # tcpdump prints "listening on" once its socket is bound.
    retry 10 grep -q "listening on" /tmp/wire-td.log
}

# wire_capture_end PORT FAILED: stops wire_capture_start's tcpdump; if FAILED is not 0
# (the run it watched failed), recomputes the MPA CRC of every FPDU in the capture
# (rsiw-pcap-crc: an independent reading of the octets on the wire, which tells whether
# a CRC error an end reported was in what the other end sent) and prints what it
# found, keeping it in /tmp/wire-crc.log. The capture is removed either way.
wire_capture_end() {
    sleep 1
    kill "$wire_td" 2>/dev/null; wait "$wire_td"
    : > /tmp/wire-crc.log
    if [ "$2" != 0 ]; then
        grep -E "captured|dropped" /tmp/wire-td.log
        echo "MPA CRC of each FPDU on the wire, port $1:"
        rsiw-pcap-crc /tmp/wire.pcap "$1" > /tmp/wire-crc.log
        echo "rsiw-pcap-crc exit $?" >> /tmp/wire-crc.log
        cat /tmp/wire-crc.log
    fi
    rm -f /tmp/wire.pcap
}

# wire_bad_crc_from ADDR: wire_capture_end's last check found an FPDU sent from ADDR
# whose CRC field is not the CRC of its octets.
wire_bad_crc_from() {
    grep -q "^$1:[0-9]* -> .*: FPDU .* CRC field" /tmp/wire-crc.log
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

# QP connections from modify_qp (qpconn-*.sh): a fake ibv_rc_pingpong client and
# crafted requests to the listener on 10.0.2.15:4792.
# fake_client PORT: tells the rc_pingpong server on PORT that its peer is QPN 0x111 with
# PSN 0x222 at GID ::ffff:10.0.2.14 (rc_pingpong's own exchange), then holds on; sets
# $fake (its pid), $SQPN and $SPSN (the server's QPN and PSN, hex).
fake_client() {
    { printf '0000:000111:000222:00000000000000000000ffff0a00020e\0'; sleep 2; printf 'done\0'; sleep 100; } |
        timeout 110 nc 10.0.2.15 "$1" > /tmp/fake.out &
    fake=$!
    retry 10 sh -c 'tr -d "\000" < /tmp/fake.out | grep -q "^0000:"'
    SQPN=$(tr -d '\000' < /tmp/fake.out | cut -d: -f2)
    SPSN=$(tr -d '\000' < /tmp/fake.out | cut -d: -f3)
    echo "server QPN 0x$SQPN PSN 0x$SPSN"
}

# armed_server DEV PORT TIMEOUT_MS: clears dmesg, sets qp_conn_timeout_ms, starts an
# ibv_rc_pingpong server on DEV and PORT ($srv) told by fake_client that its peer is
# QPN 0x111, PSN 0x222 at 10.0.2.14, and checks that its QP is armed (in RTS).
armed_server() {
    dmesg -c > /dev/null
    echo "$3" > /sys/module/rsiw/parameters/qp_conn_timeout_ms
    timeout 200 ibv_rc_pingpong -d "$1" -g 1 -p "$2" > /tmp/pp-s.log 2>&1 &
    srv=$!
    sleep 1
    fake_client "$2"
    check "the server is armed (QP 0x$SQPN in RTS)" \
        sh -c "rdma resource show qp | grep -w $1 | grep 'lqpn $((0x$SQPN)) ' | grep -q RTS"
}

# qpreq NAME WANT ARGS…: rsiw-rawpeer qpconn 10.0.2.15:4792 ARGS… (as root: from a
# privileged port); WANT yes|no (rejected).
qpreq() {
    name=$1; want=$2; shift 2
    check_output "$name: rejected $want" "^rejected $want\$" rsiw-rawpeer qpconn 10.0.2.15:4792 "$@"
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
        retry 10 grep -q "listening on" /tmp/td.log
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

# --- NFS over RDMA (Documentation/nfs-rdma.md) ---------------------------------------
# The image carries Debian's rpcbind, rpc.mountd, exportfs, rpc.nfsd and mount.nfs
# (unpacked, not installed, by xtask), /etc/netconfig and /etc/mtab; there is no systemd,
# so these helpers do what its units would. Port 20049 is RPC-over-RDMA's (RFC 8267 §2.1).
NFS_RDMA_PORT=20049

# nfs_trace_on: the rpcrdma tracepoints (xprtrdma and svcrdma events, less the per-Receive
# ones) into a small trace buffer that the kernel prints if it oopses
# (ftrace_dump_on_oops), so a crash in the RPC-over-RDMA paths comes with the verbs
# history that led to it. Needs rpcrdma loaded.
nfs_trace_on() {
    t=/sys/kernel/tracing
    [ -d $t/events ] || mount -t tracefs tracefs $t 2>/dev/null
    [ -d $t/events/rpcrdma ] || return 0
    echo 64 > $t/buffer_size_kb
    echo 1 > $t/events/rpcrdma/enable
    for e in xprtrdma_post_recv xprtrdma_post_recvs xprtrdma_wc_receive xprtrdma_mr_map \
        xprtrdma_mr_unmap svcrdma_post_recv svcrdma_wc_recv svcrdma_dma_map_page \
        svcrdma_dma_unmap_page; do
        echo 0 > $t/events/rpcrdma/$e/enable 2>/dev/null
    done
    echo 1 > /proc/sys/kernel/ftrace_dump_on_oops
}

# mem_summary: free, available, slab and tmpfs memory of this VM in KiB, on one line.
mem_summary() {
    awk '/^(MemFree|MemAvailable|Slab|Shmem):/ { printf "%s %s ", $1, $2 }' /proc/meminfo
}

# nfs_diag LABEL: the state a stuck NFS/RDMA exchange leaves, on the console: this
# side's QPs and cm_ids, its device counters, the NFS client's servers, the newest
# rpcrdma trace events (nfs_trace_on) and the blocked tasks' stacks (sysrq w, in the
# kernel log). Called where a mount or an unmount did not complete, on both VMs.
nfs_diag() {
    echo "=== nfs_diag $1 ==="
    rdma resource show qp 2>&1
    rdma resource show cm_id 2>&1
    rdma statistic show 2>&1 | grep -v '^$'
    [ -r /proc/fs/nfsfs/servers ] && cat /proc/fs/nfsfs/servers
    echo "memory: $(mem_summary)"
    tail -n 200 /sys/kernel/tracing/trace 2>/dev/null
    echo w > /proc/sysrq-trigger 2>/dev/null
    echo "=== nfs_diag $1 end ==="
}

# require_nfs NAME: fails NAME (and returns 1) if the image has no NFS userspace.
require_nfs() {
    if [ -n "$RSIW_NFS_MISSING" ]; then fail "$1" "$RSIW_NFS_MISSING"; return 1; fi
    return 0
}

# nfs_server_start DEV EXPORT [THREADS]: knfsd here, exporting EXPORT (a fresh tmpfs of
# ${NFS_EXPORT_SIZE:-192m}, fsid=1 because tmpfs has no UUID) read-write to everyone, over
# RPC-over-RDMA on port 20049 and over TCP on 2049, with THREADS (default 8) nfsd threads;
# v3 and v4.x. DEV is the RDMA device that must serve the listener: the case fails unless
# a listening cm_id is bound to it. Leases and grace are short (10 s) and the grace period
# is ended at once, so a test need not wait 90 s before its first OPEN.
nfs_server_start() {
    local dev=$1 exp=$2 threads=${3:-8}
    require_nfs "nfs server: NFS userspace in the image" || return 1
    check "nfs server: modprobe nfsd rpcrdma" sh -c 'modprobe nfsd && modprobe rpcrdma' || return 1
    nfs_trace_on
    mkdir -p /proc/fs/nfsd "$exp" /run/rpcbind /var/lib/nfs
    grep -q ' /proc/fs/nfsd ' /proc/mounts || mount -t nfsd nfsd /proc/fs/nfsd
    check "nfs server: tmpfs at $exp" mount -t tmpfs -o "size=${NFS_EXPORT_SIZE:-192m}" tmpfs "$exp" || return 1
    echo "$exp *(rw,sync,no_root_squash,insecure,no_subtree_check,fsid=1)" > /etc/exports
    # rpcbind: lockd (started with the v3 service) registers with it, and v3 clients ask
    # it for mountd's port. -w: no warm-start files to read.
    check "nfs server: rpcbind" rpcbind -w || return 1
    check "nfs server: rpc.mountd" rpc.mountd || return 1
    check "nfs server: exportfs -ra" exportfs -ra || return 1
    # Before the first listener: the lease and grace times are fixed once nfsd runs.
    # 1 MiB rsize/wsize (nfsd picks 128 KiB for a 1 GiB machine): 1 MiB chunks.
    echo "${NFS_MAX_BLOCK:-1048576}" > /proc/fs/nfsd/max_block_size
    echo 10 > /proc/fs/nfsd/nfsv4leasetime
    echo 10 > /proc/fs/nfsd/nfsv4gracetime
    check "nfs server: rdma $NFS_RDMA_PORT in portlist" \
        sh -c "echo 'rdma $NFS_RDMA_PORT' > /proc/fs/nfsd/portlist" || return 1
    check "nfs server: tcp 2049 in portlist" sh -c "echo 'tcp 2049' > /proc/fs/nfsd/portlist" || return 1
    check "nfs server: $threads nfsd threads" sh -c "echo $threads > /proc/fs/nfsd/threads" || return 1
    echo Y > /proc/fs/nfsd/v4_end_grace 2>/dev/null
    check_output "nfs server: RDMA listener on $dev" "link $dev/.*LISTEN" \
        rdma resource show cm_id
    cat /proc/fs/nfsd/portlist
}

# nfs_server_stop EXPORT: threads to 0 (closes every connection), listeners gone, the
# daemons stopped, the tmpfs unmounted, nfsd and rpcrdma unloaded.
nfs_server_stop() {
    check "nfs server: threads 0" sh -c 'echo 0 > /proc/fs/nfsd/threads'
    exportfs -ua 2>/dev/null
    killall rpc.mountd rpcbind 2>/dev/null
    sleep 1
    check "nfs server: umount /proc/fs/nfsd" umount /proc/fs/nfsd
    check "nfs server: umount $1" umount "$1"
    check "nfs server: rmmod nfsd" rmmod nfsd
}

# nfs_mount SERVER VERS MNT [OPTS]: mount SERVER's export /export at MNT over RDMA
# (proto=rdma, port=20049), NFS version VERS (3, 4.0, 4.1, 4.2); v3 without the NLM
# (nolock: no statd here). OPTS are added to the options (e.g. `proto=tcp,port=2049`
# replaces the transport: later options win). Prints the mount's line of /proc/mounts.
nfs_mount() {
    local srv=$1 vers=$2 mnt=$3 extra=$4 opts
    require_nfs "nfs client: NFS userspace in the image" || return 1
    modprobe rpcrdma 2>/dev/null
    nfs_trace_on
    modprobe nfsv3 2>/dev/null
    modprobe nfsv4 2>/dev/null
    mkdir -p "$mnt"
    opts="vers=$vers,proto=rdma,port=$NFS_RDMA_PORT,hard,timeo=600"
    [ "$vers" = 3 ] && opts="$opts,nolock"
    [ -n "$extra" ] && opts="$opts,$extra"
    timeout 120 mount.nfs "$srv:/export" "$mnt" -o "$opts" || return 1
    grep " $mnt " /proc/mounts
}

# nfs_xprt_field MNT N: field N of the `xprt:` line of MNT's /proc/self/mountstats entry
# (N counts the numbers after the transport name from 1: for rdma 3 connect count, 11
# read chunks, 12 write chunks, 13 reply chunks, 20 bad replies; see xprt_rdma_print_stats).
nfs_xprt_field() {
    awk -v m=" $1 " -v n="$2" '
        /^device / { here = index($0, "mounted on" m) > 0 }
        here && $1 == "xprt:" { print $(n + 2); exit }' /proc/self/mountstats
}

# nfs_rdma_evidence MNT LABEL: cases showing the mount at MNT really ran over RPC-over-RDMA:
# `xprt: rdma` in mountstats, exactly one connect, zero bad replies and, if
# NFS_EXPECT_CHUNKS is set (default), nonzero read and write chunk counts.
nfs_rdma_evidence() {
    local mnt=$1 l=$2
    awk -v m=" $mnt " '/^device / { here = index($0, "mounted on" m) > 0 } here && $1 == "xprt:"' \
        /proc/self/mountstats
    check_output "$l: mountstats xprt: rdma" '^rdma$' \
        sh -c "awk -v m=' $mnt ' '/^device / { h = index(\$0, \"mounted on\" m) > 0 } h && \$1 == \"xprt:\" { print \$2 }' /proc/self/mountstats"
    check_output "$l: one connect" '^1$' nfs_xprt_field "$mnt" 3
    check_output "$l: no bad replies" '^0$' nfs_xprt_field "$mnt" 20
    if [ "${NFS_EXPECT_CHUNKS:-1}" = 1 ]; then
        check_output "$l: read chunks used" '^[1-9][0-9]*$' nfs_xprt_field "$mnt" 11
        check_output "$l: write chunks used" '^[1-9][0-9]*$' nfs_xprt_field "$mnt" 12
    fi
}

# nfs_server_rdma_stats: the server's RPC-over-RDMA counters, `read=N write=N recv=N`.
nfs_server_rdma_stats() {
    d=/proc/sys/sunrpc/svc_rdma
    echo "read=$(cat $d/rdma_stat_read) write=$(cat $d/rdma_stat_write) recv=$(cat $d/rdma_stat_recv)"
}

# send_peer_file PORT FILE: send FILE to the other VM's `recv_peer_file PORT` (retries
# until it listens; an other VM that never takes it is lost, as for signal_peer).
# recv_peer_file PORT FILE [SECONDS]: receive it (default 600 s).
send_peer_file() {
    peer_lost "send_peer_file $1" && return 1
    retry 60 sh -c "timeout 20 nc -w 2 $(peer_addr) $1 < '$2'" && return 0
    echo "send_peer_file $1: the other VM did not take the file within 60 tries" | tee "$PEER_LOST"
    return 1
}
recv_peer_file() {
    timeout "${3:-600}" nc -l -p "$1" < /dev/null > "$2"
}

# nfs_io_files LABEL MB: the data set of one NFS check, one line per file:
# `NAME SIZE SEED BS MODE` (MODE buffered or direct). Inline-sized (700 B), odd-sized
# I/O (4097 B calls, buffered and O_DIRECT), and MB MiB in 1 MiB calls, buffered and
# O_DIRECT. Client and server derive the same list.
nfs_io_files() {
    local l=$1 mb=$2
    for spec in "inline 700 700 buffered" "odd $((4097 * 64)) 4097 buffered" \
        "odd-direct $((4097 * 16)) 4097 direct" "big $((mb * 1048576)) 1048576 buffered" \
        "direct $((mb * 1048576)) 1048576 direct"; do
        set -- $spec
        echo "$l-$1.bin $2 $((0x$(printf '%s' "$l-$1" | md5sum | cut -c1-8))) $3 $4"
    done
}

# nfs_data_write MNT LABEL MB: write LABEL's data set into MNT (one case per file);
# the digests go to /tmp/nfs-LABEL.client.
nfs_data_write() {
    local mnt=$1 l=$2 out=/tmp/nfs-$2.client
    : > "$out"
    nfs_io_files "$l" "$3" > /tmp/nfs-$l.files
    while read -r name size seed bs mode; do
        m=; [ "$mode" = direct ] && m=direct
        t0=$(date +%s)
        r=$(rsiw-nfs-io write "$mnt/$name" "$size" "$seed" "$bs" $m 2>&1)
        rc=$?
        echo "$r ($(( $(date +%s) - t0 )) s)"
        if [ $rc -eq 0 ]; then
            pass "$l: write $name ($size B, $bs B $mode)"
            echo "$name ${r##*digest=}" >> "$out"
        else
            fail "$l: write $name ($size B, $bs B $mode)" "$r"
        fi
    done < /tmp/nfs-$l.files
}

# nfs_data_readback MNT LABEL: drop the page cache, read every file of the data set back
# through MNT (O_DIRECT files with O_DIRECT, the rest buffered, in the size they were
# written with) and check each byte against its pattern and digest.
nfs_data_readback() {
    local mnt=$1 l=$2
    sync
    echo 3 > /proc/sys/vm/drop_caches
    while read -r name size seed bs mode; do
        m=; [ "$mode" = direct ] && m=direct
        t0=$(date +%s)
        r=$(rsiw-nfs-io verify "$mnt/$name" "$size" "$seed" "$bs" $m 2>&1)
        rc=$?
        echo "$r ($(( $(date +%s) - t0 )) s)"
        want=$(awk -v n="$name" '$1 == n { print $2 }' /tmp/nfs-$l.client)
        if [ $rc -ne 0 ]; then
            fail "$l: read back $name" "$r"
        elif [ "${r##*digest=}" != "$want" ]; then
            fail "$l: read back $name" "digest ${r##*digest=}, written $want"
        else
            pass "$l: read back $name"
        fi
    done < /tmp/nfs-$l.files
}

# nfs_data_server_check EXPORT LABEL MB DIGESTS: on the server, check its own copy of
# the data set (each byte against the pattern) and compare the digests with the
# client's (file DIGESTS, as nfs_data_write wrote them).
nfs_data_server_check() {
    local exp=$1 l=$2 mine=/tmp/nfs-$2.server
    : > "$mine"
    nfs_io_files "$l" "$3" > /tmp/nfs-$l.files
    while read -r name size seed bs mode; do
        r=$(rsiw-nfs-io verify "$exp/$name" "$size" "$seed" 1048576 2>&1)
        if [ $? -eq 0 ]; then
            pass "$l: server's copy of $name"
            echo "$name ${r##*digest=}" >> "$mine"
        else
            fail "$l: server's copy of $name" "$r"
        fi
    done < /tmp/nfs-$l.files
    check "$l: server's digests equal the client's" cmp "$mine" "$4"
}

# nfs_dir_make DIR N: N small files f0..f(N-1) in DIR, file i of (i % 61) + 1 bytes of
# seed i's pattern (made on the server, for READDIR replies that need a Reply chunk).
nfs_dir_make() {
    rsiw-nfs-io mkfiles "$1" "$2"
}

# nfs_dir_check DIR N LABEL: the client drops its caches and lists DIR (READDIR /
# READDIRPLUS): exactly the N names with the sizes nfs_dir_make gave them (the sizes the
# listing's replies carried: no GETATTR per file); every 40th file's contents are read
# back.
nfs_dir_check() {
    echo 3 > /proc/sys/vm/drop_caches
    check_output "$3: the $2-entry directory lists and reads back" "^ok entries=$2 " \
        rsiw-nfs-io checkdir "$1" "$2" 40
}

# nfs_pair SERVER_TYPE CLIENT_TYPE "VERSIONS" MB: the NFS-over-RDMA pairing check. VM 0
# exports a tmpfs over SERVER_TYPE's device (rsiw or siw) on eth1, VM 1 mounts it over
# CLIENT_TYPE's, once per NFS version in VERSIONS (e.g. "3 4.2"): the data set of
# nfs_io_files (MB MiB buffered and MB MiB O_DIRECT, inline and odd sizes) written, read
# back after dropping the caches and checked on both sides, a 2,000-file directory
# listed, the RDMA evidence in mountstats and the server's counters; then unmount, no QP
# or cm_id left, device deleted and module unloaded on both sides.
nfs_pair() {
    local st=$1 ct=$2 vers=$3 mb=$4 port=7100 l v n0 n1 mounted
    setup_net
    # Jumbo frames between the two, as NFS/RDMA networks use them: across two TCG
    # guests the data set moves about three times faster than at MTU 1500 (testing.md).
    ip link set eth1 mtu 9000
    peer=$(peer_addr)
    check "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
    if [ "$RSIW_VM_INDEX" = 0 ]; then T=$st; else T=$ct; fi
    dev_up "$T" "${T}0" eth1 || finish
    if [ "$T" = rsiw ] && [ "$st" = siw ]; then
        # siw accepting an RTR connection trips siw's own lockdep report (testing.md).
        echo N > /sys/module/rsiw/parameters/mpa_peer_to_peer
    fi
    if [ "$RSIW_VM_INDEX" = 0 ]; then
        nfs_server_start "${T}0" /export
        check "server: 2000-file directory made" nfs_dir_make /export/dir 2000
        check "server: tell the client" signal_peer $port
        for v in $vers; do
            l=v$v
            n0=$(nfs_server_rdma_stats)
            recv_peer_file $((port + 1)) /tmp/nfs-$l.peer
            # An empty list: the client's mount failed (it printed its side).
            [ -s /tmp/nfs-$l.peer ] || nfs_diag "$l: server, the client wrote nothing"
            n1=$(nfs_server_rdma_stats)
            echo "$l: server counters before $n0, after $n1"
            echo "$l: server memory: $(mem_summary)"
            check_output "$l: server's RDMA Reads (Read chunks) counted" '^yes$' \
                nfs_stat_moved "$n0" "$n1" read
            check_output "$l: server's RDMA Writes (Write/Reply chunks) counted" '^yes$' \
                nfs_stat_moved "$n0" "$n1" write
            nfs_data_server_check /export "$l" "$mb" /tmp/nfs-$l.peer
            rm -f /export/$l-*
            signal_peer $((port + 2))
            port=$((port + 3))
        done
        check "server: the client is done" wait_peer $port 900
        nfs_server_stop /export
    else
        check "client: the server is up" wait_peer $port
        for v in $vers; do
            l=v$v
            : > /tmp/nfs-$l.client
            mounted=
            if check "$l: mount over ${T}0" nfs_mount 10.0.9.1 "$v" /mnt; then
                mounted=y
                nfs_data_write /mnt "$l" "$mb"
                nfs_data_readback /mnt "$l"
                nfs_dir_check /mnt/dir 2000 "$l"
                nfs_rdma_evidence /mnt "$l"
            else
                nfs_diag "$l: client, mount failed"
            fi
            send_peer_file $((port + 1)) /tmp/nfs-$l.client
            wait_peer $((port + 2)) 900
            if [ -n "$mounted" ]; then
                check "$l: umount" timeout 120 umount /mnt || nfs_diag "$l: client, umount failed"
            fi
            port=$((port + 3))
        done
        # The server stays up until the client has torn down: an NFS client whose
        # server went first can be left retrying (and a final `sync` waiting on it).
        nfs_teardown "$T" "${T}0"
        signal_peer $port
        finish
    fi
    nfs_teardown "$T" "${T}0"
    finish
}

# nfs_teardown TYPE DEV: after the NFS side is stopped (unmounted, or server stopped):
# no QP of DEV and no cm_id left, rpcrdma unloaded, DEV deleted and TYPE's module
# unloaded (kmemleak then runs at the end of the VM run).
nfs_teardown() {
    sleep 2
    # A client's NFS state outlives its last unmount briefly (v4.1+: the session
    # and client ID are destroyed then); wait for it, and say so if it stays.
    n=0
    while [ -r /proc/fs/nfsfs/servers ] && [ "$(wc -l < /proc/fs/nfsfs/servers)" -gt 1 ] && [ $n -lt 30 ]; do
        sleep 1
        n=$((n + 1))
    done
    if [ -r /proc/fs/nfsfs/servers ] && [ "$(wc -l < /proc/fs/nfsfs/servers)" -gt 1 ]; then
        echo "nfs_teardown: NFS client state still present after 30 s:"
        cat /proc/fs/nfsfs/servers
    fi
    check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $2 | grep -v '^$'"
    check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
    modprobe -r rpcrdma 2>/dev/null
    dev_down "$1" "$2"
}

# nfs_stat_moved BEFORE AFTER KEY: `yes` if KEY=N grew from BEFORE to AFTER
# (nfs_server_rdma_stats lines).
nfs_stat_moved() {
    a=$(printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$3=//p")
    b=$(printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$3=//p")
    if [ "${b:-0}" -gt "${a:-0}" ]; then echo yes; else echo "no ($3 $a -> $b)"; fi
}

# PYVERBS_MODULES: rdma-core's pyverbs test modules that are not vendor-specific
# (mlx5, efa) and need no GPU (Debian 12's python3-pyverbs 44 has no test_srq), and
# rsiw_restate, written on rdma-core's test classes in /rsiw/pyverbs-run.py: QP
# connections from modify_qp connect again after RESET and after ERROR.
PYVERBS_MODULES="test_addr test_atomic test_cq test_cq_events test_cqex test_device
test_flow test_fork test_mr test_odp test_parent_domain test_pd test_qp test_qpex
test_rdmacm test_relaxed_ordering test_rss_traffic test_shared_pd test_tag_matching
rsiw_restate"

# PYVERBS_IWARP: tests that assert what IB gives and iWARP cannot, one per line,
# `ID<TAB>why` (testing.md lists them with the evidence). In judge mode a failure of one
# of these is a skipped case with that reason, never a pass; any other failure fails
# its module.
PYVERBS_IWARP="tests.test_mr.MWTest.test_mw_type2_invalidate_dealloc	iWARP: an RDMA Write is not acknowledged (RFC 5040); the responder refuses the dead window with a Terminate and writes nothing (the test's data check shows it), but the Write already completed with success, not Remote access error
tests.test_mr.MWTest.test_mw_type2_invalidate_local	iWARP: an RDMA Write is not acknowledged (RFC 5040); the responder refuses the dead window with a Terminate and writes nothing (the test's data check shows it), but the Write already completed with success, not Remote access error
tests.test_mr.MWTest.test_mw_type2_invalidate_remote	iWARP: an RDMA Write is not acknowledged (RFC 5040); the responder refuses the dead window with a Terminate and writes nothing (the test's data check shows it), but the Write already completed with success, not Remote access error
tests.test_rdmacm.CMTestCase.test_rdmacm_async_traffic	iWARP: rdma_cm applies RDMA_OPTION_ID_ACK_TIMEOUT only to IB transitions (IB_QP_TIMEOUT); iw_cm's QP attributes never carry it, so query_qp returns 0, not the 21 the test set
tests.test_rdmacm.CMTestCase.test_rdmacm_async_traffic_external_qp	iWARP: iw_cm reports ESTABLISHED when the MPA Reply arrives; there is no CONNECT_RESPONSE/rdma_establish step (IB's RTU)
tests.test_rdmacm.CMTestCase.test_rdmacm_async_udp_traffic	iWARP: RDMA_PS_UDP needs a UD QP; iWARP has none (create QP fails with EOPNOTSUPP, which this test does not turn into a skip)"

# pyverbs_suite DEV judge|compare TIMEOUT: runs the pyverbs modules on DEV in one
# python3 (/rsiw/pyverbs-run.py, images with `# rsiw-image: pyverbs`) and reports a case
# per module. judge (the device under test): a module passes if none of its tests
# failed or errored and at least one ran; every skipped test is one skipped case with
# the tests' own reason; a module whose tests all skipped is skipped. compare (the
# reference device, siw): a module passes if all its tests passed, otherwise it is
# skipped with its counts, so the two runs can be read side by side.
pyverbs_suite() {
    dev=$1; mode=$2; tmo=$3
    out=/tmp/pyverbs-$dev.log
    # shellcheck disable=SC2086
    timeout "$tmo" python3 /rsiw/pyverbs-run.py "$dev" $PYVERBS_MODULES > "$out" 2>&1
    rc=$?
    cat "$out"
    [ $rc -eq 124 ] && echo "pyverbs on $dev: timed out after $tmo s"
    printf '%s\n' "$PYVERBS_IWARP" > /tmp/pyverbs-iwarp
    awk -v dev="$dev" -v mode="$mode" -v mods="$PYVERBS_MODULES" '
        function clean(s) { gsub(/[\r\n]/, " ", s); return s }
        FNR == NR { split($0, f, "\t"); if (f[1] != "") iwarp[f[1]] = f[2]; next }
        /^PYVERBS-MODULE / { if ($3 == "end") ended[$2] = 1; next }
        /^PYVERBS-START / { last = $2; next }
        /^PYVERBS / {
            m = $2; k = $3; id = $4; sub(/:$/, "", id)
            why = $0; if (!sub(/^[^:]*: /, "", why)) why = ""
            n[m, k]++
            short = id; sub(/^tests\./, "", short)
            if ((k == "fail" || k == "error") && mode == "judge" && (id in iwarp)) {
                # An IB assertion iWARP cannot meet: a skip with the reason, not a pass.
                n[m, k]--; n[m, "skip"]++; k = "skip"
                why = iwarp[id] " (the test said: " clean(why) ")"
            }
            if (k == "skip" && mode == "judge")
                print "SKIP\tpyverbs " short " on " dev "\t" clean(why)
            if (k == "fail" || k == "error" || k == "xpass")
                bad[m] = bad[m] " " id (why == "" ? "" : " (" clean(why) ")")
            if (k == "skip" && first_skip[m] == "") first_skip[m] = clean(why)
        }
        END {
            c = split(mods, list, /[ \n]+/)
            for (i = 1; i <= c; i++) {
                m = list[i]; if (m == "") continue
                ok = n[m, "ok"] + n[m, "xfail"]; sk = n[m, "skip"] + 0
                nb = n[m, "fail"] + n[m, "error"] + n[m, "xpass"]
                counts = ok " passed, " sk " skipped, " nb " failed"
                print "INFO\tpyverbs " m " on " dev ": " counts
                name = "pyverbs " m " on " dev
                if (!(m in ended))
                    print (mode == "judge" ? "FAIL" : "SKIP") "\t" name "\tdid not finish (last test started: " last "); " counts
                else if (mode == "compare")
                    print (nb == 0 && sk == 0 && ok > 0 ? "PASS" : "SKIP") "\t" name "\treference run: " counts
                else if (nb > 0)
                    print "FAIL\t" name "\t" nb " failed:" bad[m]
                else if (ok == 0)
                    print "SKIP\t" name "\tall " sk " tests skipped (" first_skip[m] ")"
                else
                    print "PASS\t" name "\t" counts
            }
        }' /tmp/pyverbs-iwarp "$out" > /tmp/pyverbs-cases
    while IFS='	' read -r verdict name why; do
        case $verdict in
        PASS) pass "$name" ;;
        FAIL) fail "$name" "$why" ;;
        SKIP) skip "$name" "$why" ;;
        INFO) echo "$name" ;;
        esac
    done < /tmp/pyverbs-cases
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

# server_saw_removal PID LOG: the rsiw-load server PID, whose device was deleted under
# it, ends, saw DEVICE_REMOVAL and saw no wrong Send and nothing hung (its LOG).
server_saw_removal() {
    check_wait "delete: the server ends" "$1"
    cat "$2"
    check_output "delete: the server saw the removal" '^rsiw-load server: device removed' cat "$2"
    check_output "delete: the server saw no wrong Send, nothing hung" 'bad 0;.* hung 0$' cat "$2"
}

# mem_settled_kb: mem_used_kb with the page cache dropped, read until two readings 2 s
# apart agree within 1 MiB (RCU callbacks and deferred frees have run), at most 10 times.
mem_settled_kb() {
    local a b n=0
    sync
    echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
    b=$(mem_used_kb)
    while [ $n -lt 10 ]; do
        sleep 2
        echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
        a=$b
        b=$(mem_used_kb)
        [ $((a - b)) -lt 1024 ] && [ $((b - a)) -lt 1024 ] && break
        n=$((n + 1))
    done
    echo "$b"
}

# mem_slack_kb: how far "memory used" may stay above its earlier level after
# everything was freed: 4 MiB, plus, on a KASAN kernel, the quarantine of freed
# objects KASAN holds back (up to 1/32 of memory), which counts as used.
mem_slack_kb() {
    q=0
    { [ -d /sys/kernel/debug/kasan ] || grep -q kasan_multi_shot /proc/cmdline || dmesg | grep -q 'KernelAddressSanitizer initialized'; } &&
        q=$(awk '/^MemTotal:/ { print int($2 / 32) }' /proc/meminfo)
    echo $((4096 + q))
}

# check_mem_back WHAT BASE END: one case, "memory back to WHAT", passing when memory
# used at the end (END KiB) is at most mem_slack_kb above its earlier level (BASE KiB).
check_mem_back() {
    slack=$(mem_slack_kb)
    check "memory back to $1 ($2 -> $3 KiB, at most +$slack)" test "$3" -le $(($2 + slack))
}

# gone PID: PID no longer runs.
gone() {
    ! kill -0 "$1" 2>/dev/null
}

# check_wait NAME PID [SECONDS]: passes if background job PID (a child of this shell)
# exits with status 0 within SECONDS (default 60); one still running then is killed
# (SIGKILL) and fails NAME. `check NAME wait PID` cannot do this: `check` runs its
# command in a subshell, whose `wait` knows no children. Polled by `retry`.
check_wait() {
    retry "${3:-60}" gone "$2"
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
