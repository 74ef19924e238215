# SPDX-License-Identifier: GPL-2.0
# Cases: each check prints one `RSIW-TEST PASS name`, `RSIW-TEST FAIL name: why` or
# `RSIW-TEST SKIP name: why` line, which the harness counts; setup steps, which it does not; waiting and ending.
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.

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
    run_judged pass "$name" "$@"
}

# step NAME CMD...: a setup or teardown step (load a module, add a device, start or
# wait for a server, unload), not a test case: on success it prints `RSIW-STEP ok NAME`,
# which the harness does not count; on failure it fails NAME like `check`, so a step that
# did not happen fails the script loudly. Returns CMD's status.
step() {
    name=$1; shift
    run_judged step_ok "$name" "$@"
}
step_ok() {
    echo "RSIW-STEP ok $1"
}

# run_judged ON_SUCCESS NAME CMD...: runs CMD, shows its output, then `ON_SUCCESS NAME`
# if it exited 0 or fails NAME with its status and last line; returns CMD's status.
run_judged() {
    rsiw_on_ok=$1; name=$2; shift 2
    out=$("$@" 2>&1); rc=$?
    [ -n "$out" ] && printf '%s\n' "$out"
    if [ $rc -eq 0 ]; then "$rsiw_on_ok" "$name"; else fail "$name" "\`$*\` exited $rc: $(printf '%s' "$out" | tail -n 1)"; fi
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

# finish: end the script, non-zero if any case failed.
finish() {
    exit $((RSIW_FAILED > 0))
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
