# SPDX-License-Identifier: GPL-2.0
# Helpers for rsiw VM test scripts (source with `. /rsiw/lib.sh`): each check prints one
# `RSIW-TEST PASS name` or `RSIW-TEST FAIL name: why` line, which the harness counts.

RSIW_FAILED=0

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
    n=$1; shift
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

# finish: end the script, non-zero if any case failed.
finish() {
    exit $((RSIW_FAILED > 0))
}
