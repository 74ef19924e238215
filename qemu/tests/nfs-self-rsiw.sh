#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: nfs-self
# rsiw-requires: datapath
# rsiw-timeout: 600
# rsiw-kernels: 7.3 debian-7.3
# NFS v4.2 over RPC-over-RDMA (RFC 8166) in one VM: knfsd exports a tmpfs over rsiw0
# and the VM mounts it (proto=rdma, port 20049); 1 MiB written O_DIRECT (a Read chunk)
# and read back after the caches are dropped (a Write chunk), every byte checked. The
# kernel's own NFS and RDMA modules: on Debian's kernel, Debian's nfsd and rpcrdma.
. /rsiw/lib.sh
setup_net
dev_up rsiw rsiw0 eth0 || finish
if check "nfs_server_start rsiw0 /export" nfs_server_start rsiw0 /export; then
    if check "mount -t nfs -o vers=4.2,proto=rdma,port=20049 10.0.2.15:/export /mnt" \
        nfs_mount 10.0.2.15 4.2 /mnt; then
        check_output "1 MiB O_DIRECT write over rsiw0" '^ok ' \
            rsiw-nfs-io write /mnt/self.bin 1M 11 1M direct
        echo 3 > /proc/sys/vm/drop_caches
        check_output "1 MiB O_DIRECT read back over rsiw0, every byte checked" '^ok ' \
            rsiw-nfs-io verify /mnt/self.bin 1M 11 1M direct
        check_output "the server's copy matches" '^ok ' rsiw-nfs-io verify /export/self.bin 1M 11 1M
        nfs_rdma_evidence /mnt "NFS/RDMA"
        check "umount /mnt" umount /mnt
    fi
    nfs_server_stop /export
fi
dev_down rsiw rsiw0
finish
