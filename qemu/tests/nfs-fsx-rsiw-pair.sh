#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-vms: 2
# rsiw-group: nfs-pairs
# rsiw-timeout: 900
# NFS v4.2 over RPC-over-RDMA, rsiw on both VMs (eth1): a capture of a short exchange
# that the host decodes with tshark (Wireshark's rpcordma dissector over iWARP: calls
# with a Read list, calls with a Write list, a reply chunk, replies matching calls;
# xtask/src/pcap.rs), then an fsx-style run (`rsiw-nfs-io fsx`: 10,000 seeded random
# writes, reads, truncates, mmap writes and reads, fsyncs and reopens at unaligned
# offsets, checked against an in-memory model) on the mount.
. /rsiw/lib.sh
setup_net
# Jumbo frames between the two, as nfs_pair sets them (testing.md, "Two VMs").
ip link set eth1 mtu 9000
peer=$(peer_addr)
step "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
dev_up rsiw rsiw0 eth1 || finish
if [ "$RSIW_VM_INDEX" = 0 ]; then
    nfs_server_start rsiw0 /export
    check "server: 300-file directory made" nfs_dir_make /export/dir 300
    step "server: tell the client" signal_peer 7200
    step "server: the client is done" wait_peer 7201 900
    nfs_server_stop /export
else
    step "client: the server is up" wait_peer 7200
    # The whole connection from its MPA exchange (Wireshark's iWARP heuristic needs the
    # MPA Request and Reply), whole frames (a truncated FPDU is not dissected), so the
    # exchange is kept small.
    tcpdump -Z root -U --immediate-mode -i eth1 -n -s 0 -w /tmp/nfs.pcap tcp port $NFS_RDMA_PORT > /tmp/td.log 2>&1 &
    td=$!
    retry 10 grep -q "listening on" /tmp/td.log
    if check "mount v4.2 over rsiw0" nfs_mount 10.0.9.1 4.2 /mnt; then
        check_output "capture: 16 KiB O_DIRECT write (Read chunk)" '^ok ' \
            rsiw-nfs-io write /mnt/cap.bin 16384 77 16384 direct
        check_output "capture: 16 KiB O_DIRECT read (Write chunk)" '^ok ' \
            rsiw-nfs-io verify /mnt/cap.bin 16384 77 16384 direct
        check_output "capture: 300-entry directory (Reply chunk)" '^ok entries=300 ' \
            rsiw-nfs-io checkdir /mnt/dir 300 100
        sleep 2
        kill $td; wait $td
        cat /tmp/td.log
        if [ -s /tmp/nfs.pcap ]; then
            pass "tcpdump captured the exchange ($(wc -c < /tmp/nfs.pcap) bytes)"
            base64 /tmp/nfs.pcap | sed "s/^/RSIW-PCAP nfs /"
            echo "RSIW-PCAP-END nfs $(wc -c < /tmp/nfs.pcap) rpcordma-chunks"
        else
            fail "tcpdump captured the exchange" "empty capture"
        fi
        t0=$(date +%s)
        check_output "fsx: 10000 operations, seed 20" '^ok ops=10000 ' \
            rsiw-nfs-io fsx /mnt/fsx.bin 10000 20 65536
        echo "fsx took $(( $(date +%s) - t0 )) s"
        nfs_rdma_evidence /mnt v4.2
        check "umount" timeout 120 umount /mnt
    else
        kill $td
    fi
    # The server stays up until the client has torn down (lib.sh, nfs_pair).
    nfs_teardown rsiw rsiw0
    signal_peer 7201
    finish
fi
nfs_teardown rsiw rsiw0
finish
