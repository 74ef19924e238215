#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: siw
# rsiw-vms: 2
# rsiw-group: siw-pairs
# rsiw-timeout: 1200
# rsiw-soak-timeout: 7200
# NFS over RPC-over-RDMA (RFC 8166, port 20049) with rsiw serving on VM 0 and siw mounting on
# VM 1, across the socket network (eth1); NFS v3, then v4.2 (lib.sh nfs_pair): the data
# set written and read back after the client's caches are dropped, checked byte by byte
# on the client and on the server's own copy (inline-sized, 4097-byte and 1 MiB I/O,
# buffered and O_DIRECT; ${RSIW_NFS_MB:-8} MiB each for the large files, 64 under
# `cargo xtask nfs-soak`), a 2,000-entry directory listed and read, mountstats showing
# xprt rdma with one connect, Read and Write chunks and no bad replies, the server's
# RDMA Read/Write counters moving; then unmount, nothing left, device and module gone.
. /rsiw/lib.sh
nfs_pair rsiw siw "3 4.2" "${RSIW_NFS_MB:-8}"
