#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: basic
# The image holds every tool and verbs provider later tests use, each with all its libraries,
# and the files knfsd's userspace needs.
. /rsiw/lib.sh
for t in ibv_devices ibv_devinfo ibv_rc_pingpong rping ib_send_bw ib_write_bw ib_read_bw \
    ib_send_lat ib_write_lat ib_read_lat ib_atomic_bw ib_atomic_lat rdma tcpdump iperf3 \
    /usr/lib/x86_64-linux-gnu/libibverbs/*.so rpcbind rpc.mountd exportfs rpc.nfsd mount.nfs \
    showmount rpcinfo nfsstat rsiw-nfs-io; do
    # ld.so lists the libraries instead of running the program; "not found" means missing.
    check_no_output "$(basename "$t"): all libraries found" 'not found|No such file' \
        env LD_TRACE_LOADED_OBJECTS=1 "$t"
done
# What knfsd's userspace expects without systemd (Documentation/nfs-rdma.md).
check "NFS: /etc/netconfig lists tcp" grep -q '^tcp ' /etc/netconfig
check "NFS: /etc/mtab is /proc/self/mounts" sh -c '[ "$(readlink /etc/mtab)" = /proc/self/mounts ]'
check "NFS: rpcbind's _rpc user exists" grep -q '^_rpc:' /etc/passwd
check "modprobe works through request_module (rdma_rxe pulls in crc32)" modprobe rdma_rxe
step "rmmod rdma_rxe" rmmod rdma_rxe
finish
