# SPDX-License-Identifier: GPL-2.0
# Memory: used, settled, and back to its earlier level after a test.
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.

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
