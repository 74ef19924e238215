#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# `cargo xtask run`: load rsiw, create rsiw0 on eth0, show what verbs see of it, then
# use it: an rping exchange, an RDMA Write latency and RFC 7306 atomics (perftest -R),
# then an NFS v4.2 mount of this VM's own export over rsiw0 and a file round trip.
. /rsiw/lib.sh
setup_net
require_rsiw "rsiw.ko is in the image" || finish
step "modprobe rsiw" modprobe rsiw || finish
step "rdma link add rsiw0 type rsiw netdev eth0" rdma link add rsiw0 type rsiw netdev eth0 || finish
rdma link show
require_provider "rsiw provider is in the image" || finish
check "ibv_devices" ibv_devices
check "ibv_devinfo -v -d rsiw0" ibv_devinfo -v -d rsiw0

echo "== rping on rsiw0: 10 pings (Send, RDMA Read, RDMA Write of 64 B), verified"
timeout 120 rping -s -a 10.0.2.15 -C 10 -V > /tmp/run-rping-server.log 2>&1 &
srv=$!
wait_rdma_listen
check "rping -c -a 10.0.2.15 -C 10 -v -V" timeout 120 rping -c -a 10.0.2.15 -C 10 -v -V
wait $srv

echo "== ib_write_lat -R -s 8 on rsiw0 (#bytes #iterations t_min t_max t_typical … usec)"
check_output "ib_write_lat -R on rsiw0" '^[[:space:]]*8[[:space:]]' \
    perftest_run ib_write_lat rsiw0 8 200 18801 -R

echo "== RFC 7306 atomics on rsiw0: each iteration is an Atomic Request (DDP QN 1) and its Response (QN 3)"
if ibv_devinfo -v -d rsiw0 | grep -Eq 'atomic_cap:[[:space:]]+ATOMIC_(HCA|GLOB)'; then
    check_output "ib_atomic_lat -R -A FETCH_AND_ADD on rsiw0" '^[[:space:]]*8[[:space:]]' \
        perftest_run ib_atomic_lat rsiw0 "" 200 18802 -R -A FETCH_AND_ADD
    check_output "ib_atomic_bw -R -A CMP_AND_SWAP on rsiw0" '^[[:space:]]*8[[:space:]]' \
        perftest_run ib_atomic_bw rsiw0 "" 500 18803 -R -A CMP_AND_SWAP
else
    echo "rsiw0 reports atomic_cap NONE: no atomics to show"
fi

echo "== NFS v4.2 over RPC-over-RDMA on rsiw0: this VM exports a tmpfs (knfsd) and mounts it"
echo "   over rsiw0 (proto=rdma, port 20049); a file goes through the mount and back"
if nfs_server_start rsiw0 /export; then
    if check "mount -t nfs -o vers=4.2,proto=rdma,port=20049 10.0.2.15:/export /mnt" \
        nfs_mount 10.0.2.15 4.2 /mnt; then
        echo "written through the NFS/RDMA mount on $(date)" > /mnt/hello.txt
        check_output "the server's copy of hello.txt" '^written through' cat /export/hello.txt
        check_output "1 MiB O_DIRECT write over rsiw0 (a Read chunk)" '^ok ' \
            rsiw-nfs-io write /mnt/round-trip.bin 1M 7 1M direct
        echo 3 > /proc/sys/vm/drop_caches
        check_output "1 MiB O_DIRECT read back over rsiw0 (a Write chunk), every byte checked" '^ok ' \
            rsiw-nfs-io verify /mnt/round-trip.bin 1M 7 1M direct
        echo "client md5: $(md5sum < /mnt/round-trip.bin)   server md5: $(md5sum < /export/round-trip.bin)"
        nfs_rdma_evidence /mnt "NFS/RDMA"
        check "umount /mnt" umount /mnt
    fi
    nfs_server_stop /export
fi
finish
