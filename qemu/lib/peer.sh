# SPDX-License-Identifier: GPL-2.0
# The network, and the other VM of a two-VM script: rendezvous and file transfer; listeners.
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.

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

# signal_peer PORT [WORD]: release the other VM from its `wait_peer PORT` (WORD: for its
# `hear_peer PORT`, default go; retries until it listens).
signal_peer() {
    peer_lost "signal_peer $1" && return 1
    retry 60 sh -c "echo ${2:-go} | timeout 5 nc -w 2 $(peer_addr) $1" && return 0
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

# hear_peer PORT SECONDS: print the word the other VM's `signal_peer PORT WORD` sent
# (nothing, and status 1, if none came within SECONDS).
hear_peer() {
    peer_lost "hear_peer $1" >&2 && return 1
    w=$(timeout "$2" nc -l -p "$1" </dev/null)
    [ -n "$w" ] && echo "$w"
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
