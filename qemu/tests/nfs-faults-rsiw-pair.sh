#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-vms: 2
# rsiw-group: nfs-pairs
# rsiw-timeout: 1200
# rsiw-soak-timeout: 3600
# NFS v4.2 over RPC-over-RDMA on rsiw (VM 0 serves, VM 1 mounts, hard mount), with
# faults in the middle of a large write: (1) the server's link (eth1, under rsiw0) goes
# down for 8 s and comes back; (2) the server's nfsd goes to 0 threads (every transport
# closed: rsiw disconnects and drains the QPs) and back to 8 (listener and threads anew:
# a server restart, with reclaim in a 10 s grace period). Each time the write must finish
# without an error and the file must read back right on the client (caches dropped) and
# on the server; the client must have reconnected after (2). Then an idle unmount and
# rmmod leave no QP, cm_id or leak.
. /rsiw/lib.sh
setup_net
peer=$(peer_addr)
MB=${RSIW_NFS_MB:-8}
SIZE=$((MB * 2 * 1048576))
# The export holds both files: at the soak's size (2 x 128 MiB) the default 192 MiB
# tmpfs filled up, and the second write ended in ENOSPC.
NFS_EXPORT_SIZE=$((2 * MB * 2 + 64))m
[ $((2 * MB * 2 + 64)) -lt 192 ] && NFS_EXPORT_SIZE=192m
export NFS_EXPORT_SIZE
seed_of() { if [ "$1" = fa ]; then echo 41; else echo 42; fi; }

# write_during NAME GO DONE WHAT (client): write NAME.bin, tell the server (port GO) to
# inject its fault 3 s into it, check the write ends without an error, tell it (DONE).
write_during() {
    rsiw-nfs-io write /mnt/$1.bin $SIZE $(seed_of $1) 1048576 > /tmp/$1.log 2>&1 &
    w=$!
    sleep 3
    signal_peer $2
    wait $w
    rc=$?
    cat /tmp/$1.log
    check_output "write across $4 ends without error" '^ok ' sh -c "[ $rc = 0 ] && cat /tmp/$1.log"
    signal_peer $3
}

step "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
dev_up rsiw rsiw0 eth1 || finish
if [ "$RSIW_VM_INDEX" = 0 ]; then
    nfs_server_start rsiw0 /export
    step "server: tell the client" signal_peer 7300
    # (1) link down/up while the client writes.
    step "server: the client writes" wait_peer 7301 300
    sleep 2
    check "server: eth1 down" ip link set eth1 down
    check_output "server: rsiw0 port DOWN" 'DOWN' sh -c 'cat /sys/class/infiniband/rsiw0/ports/1/state'
    sleep 8
    check "server: eth1 up" ip link set eth1 up
    check_output "server: rsiw0 port ACTIVE again" 'ACTIVE' \
        retry 10 sh -c 'grep ACTIVE /sys/class/infiniband/rsiw0/ports/1/state'
    step "server: the client's first write is done" wait_peer 7302 900
    # (2) nfsd threads 0 -> 8 while the client writes.
    step "server: the client writes again" wait_peer 7303 300
    sleep 2
    check "server: nfsd threads 0" sh -c 'echo 0 > /proc/fs/nfsd/threads'
    sleep 5
    check_no_output "server: no RPC-over-RDMA QP left with 0 threads" '[0-9]' \
        sh -c "rdma resource show qp | grep -w rsiw0 | grep -v '^$'"
    check "server: rdma $NFS_RDMA_PORT again" sh -c "echo 'rdma $NFS_RDMA_PORT' > /proc/fs/nfsd/portlist"
    check "server: nfsd threads 8" sh -c 'echo 8 > /proc/fs/nfsd/threads'
    step "server: the client's second write is done" wait_peer 7304 900
    nfs_server_rdma_stats
    # The client reads both files back first (minutes at the soak's size: longer than
    # signal_peer keeps trying), then says so; it listens for 7306 by then.
    step "server: the client read its copies back" wait_peer 7305 1800
    for f in fa fb; do
        check_output "server's copy of $f.bin" '^ok ' rsiw-nfs-io verify /export/$f.bin $SIZE $(seed_of $f) 1048576
    done
    signal_peer 7306
    step "server: the client is done" wait_peer 7307 900
    nfs_server_stop /export
else
    step "client: the server is up" wait_peer 7300
    mounted=false
    if check "mount v4.2 over rsiw0" nfs_mount 10.0.9.1 4.2 /mnt; then
        mounted=true
        write_during fa 7301 7302 "the server's link down/up"
        write_during fb 7303 7304 "nfsd threads 0 -> 8"
        echo 3 > /proc/sys/vm/drop_caches
        for f in fa fb; do
            check_output "client reads $f.bin back" '^ok ' rsiw-nfs-io verify /mnt/$f.bin $SIZE $(seed_of $f) 1048576
        done
        check_output "client: the transport reconnected" '^[2-9]$|^[1-9][0-9]+$' nfs_xprt_field /mnt 3
        check_output "client: xprt: rdma" '^rdma$' \
            sh -c "awk '\$1 == \"xprt:\" { print \$2 }' /proc/self/mountstats"
    fi
    signal_peer 7305
    if $mounted; then
        step "client: server checked its copies" wait_peer 7306 900
        check "idle umount" timeout 120 umount /mnt
    fi
    # The server stays up until the client has torn down (lib.sh, nfs_pair).
    nfs_teardown rsiw rsiw0
    signal_peer 7307
    finish
fi
nfs_teardown rsiw rsiw0
finish
