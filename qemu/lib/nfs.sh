# SPDX-License-Identifier: GPL-2.0
# NFS over RDMA (Documentation/nfs-rdma.md).
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.
#
# The image carries Debian's rpcbind, rpc.mountd, exportfs, rpc.nfsd and mount.nfs
# (unpacked, not installed, by xtask), /etc/netconfig and /etc/mtab; there is no systemd,
# so these helpers do what its units would. Port 20049 is RPC-over-RDMA's (RFC 8267 §2.1).
NFS_RDMA_PORT=20049

# nfs_trace_on: the rpcrdma tracepoints (xprtrdma and svcrdma events, less the per-Receive
# ones) into a small trace buffer that the kernel prints if it oopses
# (ftrace_dump_on_oops), so a crash in the RPC-over-RDMA paths comes with the verbs
# history that led to it. Needs rpcrdma loaded.
nfs_trace_on() {
    t=/sys/kernel/tracing
    [ -d $t/events ] || mount -t tracefs tracefs $t 2>/dev/null
    [ -d $t/events/rpcrdma ] || return 0
    echo 64 > $t/buffer_size_kb
    echo 1 > $t/events/rpcrdma/enable
    for e in xprtrdma_post_recv xprtrdma_post_recvs xprtrdma_wc_receive xprtrdma_mr_map \
        xprtrdma_mr_unmap svcrdma_post_recv svcrdma_wc_recv svcrdma_dma_map_page \
        svcrdma_dma_unmap_page; do
        echo 0 > $t/events/rpcrdma/$e/enable 2>/dev/null
    done
    echo 1 > /proc/sys/kernel/ftrace_dump_on_oops
}

# mem_summary: free, available, slab and tmpfs memory of this VM in KiB, on one line.
mem_summary() {
    awk '/^(MemFree|MemAvailable|Slab|Shmem):/ { printf "%s %s ", $1, $2 }' /proc/meminfo
}

# nfs_diag LABEL: the state a stuck NFS/RDMA exchange leaves, on the console: this
# side's QPs and cm_ids, its device counters, the NFS client's servers, the newest
# rpcrdma trace events (nfs_trace_on) and the blocked tasks' stacks (sysrq w, in the
# kernel log). Called where a mount or an unmount did not complete, on both VMs.
nfs_diag() {
    echo "=== nfs_diag $1 ==="
    rdma resource show qp 2>&1
    rdma resource show cm_id 2>&1
    rdma statistic show 2>&1 | grep -v '^$'
    [ -r /proc/fs/nfsfs/servers ] && cat /proc/fs/nfsfs/servers
    echo "memory: $(mem_summary)"
    tail -n 200 /sys/kernel/tracing/trace 2>/dev/null
    echo w > /proc/sysrq-trigger 2>/dev/null
    echo "=== nfs_diag $1 end ==="
}

# require_nfs NAME: fails NAME (and returns 1) if the image has no NFS userspace.
require_nfs() {
    if [ -n "$RSIW_NFS_MISSING" ]; then fail "$1" "$RSIW_NFS_MISSING"; return 1; fi
    return 0
}

# nfs_server_start DEV EXPORT [THREADS]: knfsd here, exporting EXPORT (a fresh tmpfs of
# ${NFS_EXPORT_SIZE:-192m}, fsid=1 because tmpfs has no UUID) read-write to everyone, over
# RPC-over-RDMA on port 20049 and over TCP on 2049, with THREADS (default 8) nfsd threads;
# v3 and v4.x. DEV is the RDMA device that must serve the listener: the case fails unless
# a listening cm_id is bound to it. Leases and grace are short (10 s) and the grace period
# is ended at once, so a test need not wait 90 s before its first OPEN.
nfs_server_start() {
    local dev=$1 exp=$2 threads=${3:-8}
    require_nfs "nfs server: NFS userspace in the image" || return 1
    step "nfs server: modprobe nfsd rpcrdma" sh -c 'modprobe nfsd && modprobe rpcrdma' || return 1
    nfs_trace_on
    mkdir -p /proc/fs/nfsd "$exp" /run/rpcbind /var/lib/nfs
    grep -q ' /proc/fs/nfsd ' /proc/mounts || mount -t nfsd nfsd /proc/fs/nfsd
    step "nfs server: tmpfs at $exp" mount -t tmpfs -o "size=${NFS_EXPORT_SIZE:-192m}" tmpfs "$exp" || return 1
    echo "$exp *(rw,sync,no_root_squash,insecure,no_subtree_check,fsid=1)" > /etc/exports
    # rpcbind: lockd (started with the v3 service) registers with it, and v3 clients ask
    # it for mountd's port. -w: no warm-start files to read.
    step "nfs server: rpcbind" rpcbind -w || return 1
    step "nfs server: rpc.mountd" rpc.mountd || return 1
    step "nfs server: exportfs -ra" exportfs -ra || return 1
    # Before the first listener: the lease and grace times are fixed once nfsd runs.
    # 1 MiB rsize/wsize (nfsd picks 128 KiB for a 1 GiB machine): 1 MiB chunks.
    echo "${NFS_MAX_BLOCK:-1048576}" > /proc/fs/nfsd/max_block_size
    echo 10 > /proc/fs/nfsd/nfsv4leasetime
    echo 10 > /proc/fs/nfsd/nfsv4gracetime
    step "nfs server: rdma $NFS_RDMA_PORT in portlist" \
        sh -c "echo 'rdma $NFS_RDMA_PORT' > /proc/fs/nfsd/portlist" || return 1
    step "nfs server: tcp 2049 in portlist" sh -c "echo 'tcp 2049' > /proc/fs/nfsd/portlist" || return 1
    step "nfs server: $threads nfsd threads" sh -c "echo $threads > /proc/fs/nfsd/threads" || return 1
    echo Y > /proc/fs/nfsd/v4_end_grace 2>/dev/null
    check_output "nfs server: RDMA listener on $dev" "link $dev/.*LISTEN" \
        rdma resource show cm_id
    cat /proc/fs/nfsd/portlist
}

# nfs_server_stop EXPORT: threads to 0 (closes every connection), listeners gone, the
# daemons stopped, the tmpfs unmounted, nfsd and rpcrdma unloaded.
nfs_server_stop() {
    step "nfs server: threads 0" sh -c 'echo 0 > /proc/fs/nfsd/threads'
    exportfs -ua 2>/dev/null
    killall rpc.mountd rpcbind 2>/dev/null
    sleep 1
    step "nfs server: umount /proc/fs/nfsd" umount /proc/fs/nfsd
    step "nfs server: umount $1" umount "$1"
    step "nfs server: rmmod nfsd" rmmod nfsd
}

# nfs_mount SERVER VERS MNT [OPTS]: mount SERVER's export /export at MNT over RDMA
# (proto=rdma, port=20049), NFS version VERS (3, 4.0, 4.1, 4.2); v3 without the NLM
# (nolock: no statd here). OPTS are added to the options (e.g. `proto=tcp,port=2049`
# replaces the transport: later options win). Prints the mount's line of /proc/mounts.
nfs_mount() {
    local srv=$1 vers=$2 mnt=$3 extra=$4 opts
    require_nfs "nfs client: NFS userspace in the image" || return 1
    modprobe rpcrdma 2>/dev/null
    nfs_trace_on
    modprobe nfsv3 2>/dev/null
    modprobe nfsv4 2>/dev/null
    mkdir -p "$mnt"
    opts="vers=$vers,proto=rdma,port=$NFS_RDMA_PORT,hard,timeo=600"
    [ "$vers" = 3 ] && opts="$opts,nolock"
    [ -n "$extra" ] && opts="$opts,$extra"
    timeout 120 mount.nfs "$srv:/export" "$mnt" -o "$opts" || return 1
    grep " $mnt " /proc/mounts
}

# nfs_xprt_field MNT N: field N of the `xprt:` line of MNT's /proc/self/mountstats entry
# (N counts the numbers after the transport name from 1: for rdma 3 connect count, 11
# read chunks, 12 write chunks, 13 reply chunks, 20 bad replies; see xprt_rdma_print_stats).
nfs_xprt_field() {
    awk -v m=" $1 " -v n="$2" '
        /^device / { here = index($0, "mounted on" m) > 0 }
        here && $1 == "xprt:" { print $(n + 2); exit }' /proc/self/mountstats
}

# nfs_rdma_evidence MNT LABEL: cases showing the mount at MNT really ran over RPC-over-RDMA:
# `xprt: rdma` in mountstats, exactly one connect, zero bad replies and, if
# NFS_EXPECT_CHUNKS is set (default), nonzero read and write chunk counts.
nfs_rdma_evidence() {
    local mnt=$1 l=$2
    awk -v m=" $mnt " '/^device / { here = index($0, "mounted on" m) > 0 } here && $1 == "xprt:"' \
        /proc/self/mountstats
    check_output "$l: mountstats xprt: rdma" '^rdma$' \
        sh -c "awk -v m=' $mnt ' '/^device / { h = index(\$0, \"mounted on\" m) > 0 } h && \$1 == \"xprt:\" { print \$2 }' /proc/self/mountstats"
    check_output "$l: one connect" '^1$' nfs_xprt_field "$mnt" 3
    check_output "$l: no bad replies" '^0$' nfs_xprt_field "$mnt" 20
    if [ "${NFS_EXPECT_CHUNKS:-1}" = 1 ]; then
        check_output "$l: read chunks used" '^[1-9][0-9]*$' nfs_xprt_field "$mnt" 11
        check_output "$l: write chunks used" '^[1-9][0-9]*$' nfs_xprt_field "$mnt" 12
    fi
}

# nfs_server_rdma_stats: the server's RPC-over-RDMA counters, `read=N write=N recv=N`.
nfs_server_rdma_stats() {
    d=/proc/sys/sunrpc/svc_rdma
    echo "read=$(cat $d/rdma_stat_read) write=$(cat $d/rdma_stat_write) recv=$(cat $d/rdma_stat_recv)"
}

# nfs_io_files LABEL MB: the data set of one NFS check, one line per file:
# `NAME SIZE SEED BS MODE` (MODE buffered or direct). Inline-sized (700 B), odd-sized
# I/O (4097 B calls, buffered and O_DIRECT), and MB MiB in 1 MiB calls, buffered and
# O_DIRECT. Client and server derive the same list.
nfs_io_files() {
    local l=$1 mb=$2
    for spec in "inline 700 700 buffered" "odd $((4097 * 64)) 4097 buffered" \
        "odd-direct $((4097 * 16)) 4097 direct" "big $((mb * 1048576)) 1048576 buffered" \
        "direct $((mb * 1048576)) 1048576 direct"; do
        set -- $spec
        echo "$l-$1.bin $2 $((0x$(printf '%s' "$l-$1" | md5sum | cut -c1-8))) $3 $4"
    done
}

# nfs_data_write MNT LABEL MB: write LABEL's data set into MNT (one case per file);
# the digests go to /tmp/nfs-LABEL.client.
nfs_data_write() {
    local mnt=$1 l=$2 out=/tmp/nfs-$2.client
    : > "$out"
    nfs_io_files "$l" "$3" > /tmp/nfs-$l.files
    while read -r name size seed bs mode; do
        m=; [ "$mode" = direct ] && m=direct
        t0=$(date +%s)
        r=$(rsiw-nfs-io write "$mnt/$name" "$size" "$seed" "$bs" $m 2>&1)
        rc=$?
        echo "$r ($(( $(date +%s) - t0 )) s)"
        if [ $rc -eq 0 ]; then
            pass "$l: write $name ($size B, $bs B $mode)"
            echo "$name ${r##*digest=}" >> "$out"
        else
            fail "$l: write $name ($size B, $bs B $mode)" "$r"
        fi
    done < /tmp/nfs-$l.files
}

# nfs_data_readback MNT LABEL: drop the page cache, read every file of the data set back
# through MNT (O_DIRECT files with O_DIRECT, the rest buffered, in the size they were
# written with) and check each byte against its pattern and digest.
nfs_data_readback() {
    local mnt=$1 l=$2
    sync
    echo 3 > /proc/sys/vm/drop_caches
    while read -r name size seed bs mode; do
        m=; [ "$mode" = direct ] && m=direct
        t0=$(date +%s)
        r=$(rsiw-nfs-io verify "$mnt/$name" "$size" "$seed" "$bs" $m 2>&1)
        rc=$?
        echo "$r ($(( $(date +%s) - t0 )) s)"
        want=$(awk -v n="$name" '$1 == n { print $2 }' /tmp/nfs-$l.client)
        if [ $rc -ne 0 ]; then
            fail "$l: read back $name" "$r"
        elif [ "${r##*digest=}" != "$want" ]; then
            fail "$l: read back $name" "digest ${r##*digest=}, written $want"
        else
            pass "$l: read back $name"
        fi
    done < /tmp/nfs-$l.files
}

# nfs_data_server_check EXPORT LABEL MB DIGESTS: on the server, check its own copy of
# the data set (each byte against the pattern) and compare the digests with the
# client's (file DIGESTS, as nfs_data_write wrote them).
nfs_data_server_check() {
    local exp=$1 l=$2 mine=/tmp/nfs-$2.server
    : > "$mine"
    nfs_io_files "$l" "$3" > /tmp/nfs-$l.files
    while read -r name size seed bs mode; do
        r=$(rsiw-nfs-io verify "$exp/$name" "$size" "$seed" 1048576 2>&1)
        if [ $? -eq 0 ]; then
            pass "$l: server's copy of $name"
            echo "$name ${r##*digest=}" >> "$mine"
        else
            fail "$l: server's copy of $name" "$r"
        fi
    done < /tmp/nfs-$l.files
    check "$l: server's digests equal the client's" cmp "$mine" "$4"
}

# nfs_dir_make DIR N: N small files f0..f(N-1) in DIR, file i of (i % 61) + 1 bytes of
# seed i's pattern (made on the server, for READDIR replies that need a Reply chunk).
nfs_dir_make() {
    rsiw-nfs-io mkfiles "$1" "$2"
}

# nfs_dir_check DIR N LABEL: the client drops its caches and lists DIR (READDIR /
# READDIRPLUS): exactly the N names with the sizes nfs_dir_make gave them (the sizes the
# listing's replies carried: no GETATTR per file); every 40th file's contents are read
# back.
nfs_dir_check() {
    echo 3 > /proc/sys/vm/drop_caches
    check_output "$3: the $2-entry directory lists and reads back" "^ok entries=$2 " \
        rsiw-nfs-io checkdir "$1" "$2" 40
}

# nfs_pair SERVER_TYPE CLIENT_TYPE "VERSIONS" MB: the NFS-over-RDMA pairing check. VM 0
# exports a tmpfs over SERVER_TYPE's device (rsiw or siw) on eth1, VM 1 mounts it over
# CLIENT_TYPE's, once per NFS version in VERSIONS (e.g. "3 4.2"): the data set of
# nfs_io_files (MB MiB buffered and MB MiB O_DIRECT, inline and odd sizes) written, read
# back after dropping the caches and checked on both sides, a 2,000-file directory
# listed, the RDMA evidence in mountstats and the server's counters; then unmount, no QP
# or cm_id left, device deleted and module unloaded on both sides.
nfs_pair() {
    local st=$1 ct=$2 vers=$3 mb=$4 port=7100 l v n0 n1 mounted
    setup_net
    # Jumbo frames between the two, as NFS/RDMA networks use them: across two TCG
    # guests the data set moves about three times faster than at MTU 1500 (testing.md).
    ip link set eth1 mtu 9000
    peer=$(peer_addr)
    step "ping $peer" retry 30 ping -c 1 -W 1 "$peer"
    if [ "$RSIW_VM_INDEX" = 0 ]; then T=$st; else T=$ct; fi
    dev_up "$T" "${T}0" eth1 || finish
    if [ "$T" = rsiw ] && [ "$st" = siw ]; then
        # siw accepting an RTR connection trips siw's own lockdep report (testing.md).
        echo N > /sys/module/rsiw/parameters/mpa_peer_to_peer
    fi
    if [ "$RSIW_VM_INDEX" = 0 ]; then
        nfs_server_start "${T}0" /export
        step "server: 2000-file directory made" nfs_dir_make /export/dir 2000
        step "server: tell the client" signal_peer $port
        for v in $vers; do
            l=v$v
            n0=$(nfs_server_rdma_stats)
            recv_peer_file $((port + 1)) /tmp/nfs-$l.peer
            # An empty list: the client's mount failed (it printed its side).
            [ -s /tmp/nfs-$l.peer ] || nfs_diag "$l: server, the client wrote nothing"
            n1=$(nfs_server_rdma_stats)
            echo "$l: server counters before $n0, after $n1"
            echo "$l: server memory: $(mem_summary)"
            check_output "$l: server's RDMA Reads (Read chunks) counted" '^yes$' \
                nfs_stat_moved "$n0" "$n1" read
            check_output "$l: server's RDMA Writes (Write/Reply chunks) counted" '^yes$' \
                nfs_stat_moved "$n0" "$n1" write
            nfs_data_server_check /export "$l" "$mb" /tmp/nfs-$l.peer
            rm -f /export/$l-*
            signal_peer $((port + 2))
            port=$((port + 3))
        done
        step "server: the client is done" wait_peer $port 900
        nfs_server_stop /export
    else
        step "client: the server is up" wait_peer $port
        for v in $vers; do
            l=v$v
            : > /tmp/nfs-$l.client
            mounted=
            if check "$l: mount over ${T}0" nfs_mount 10.0.9.1 "$v" /mnt; then
                mounted=y
                nfs_data_write /mnt "$l" "$mb"
                nfs_data_readback /mnt "$l"
                nfs_dir_check /mnt/dir 2000 "$l"
                nfs_rdma_evidence /mnt "$l"
            else
                nfs_diag "$l: client, mount failed"
            fi
            send_peer_file $((port + 1)) /tmp/nfs-$l.client
            wait_peer $((port + 2)) 900
            if [ -n "$mounted" ]; then
                check "$l: umount" timeout 120 umount /mnt || nfs_diag "$l: client, umount failed"
            fi
            port=$((port + 3))
        done
        # The server stays up until the client has torn down: an NFS client whose
        # server went first can be left retrying (and a final `sync` waiting on it).
        nfs_teardown "$T" "${T}0"
        signal_peer $port
        finish
    fi
    nfs_teardown "$T" "${T}0"
    finish
}

# nfs_teardown TYPE DEV: after the NFS side is stopped (unmounted, or server stopped):
# no QP of DEV and no cm_id left, rpcrdma unloaded, DEV deleted and TYPE's module
# unloaded (kmemleak then runs at the end of the VM run).
nfs_teardown() {
    sleep 2
    # A client's NFS state outlives its last unmount briefly (v4.1+: the session
    # and client ID are destroyed then); wait for it, and say so if it stays.
    n=0
    while [ -r /proc/fs/nfsfs/servers ] && [ "$(wc -l < /proc/fs/nfsfs/servers)" -gt 1 ] && [ $n -lt 30 ]; do
        sleep 1
        n=$((n + 1))
    done
    if [ -r /proc/fs/nfsfs/servers ] && [ "$(wc -l < /proc/fs/nfsfs/servers)" -gt 1 ]; then
        echo "nfs_teardown: NFS client state still present after 30 s:"
        cat /proc/fs/nfsfs/servers
    fi
    check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $2 | grep -v '^$'"
    check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
    modprobe -r rpcrdma 2>/dev/null
    dev_down "$1" "$2"
}

# nfs_stat_moved BEFORE AFTER KEY: `yes` if KEY=N grew from BEFORE to AFTER
# (nfs_server_rdma_stats lines).
nfs_stat_moved() {
    a=$(printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$3=//p")
    b=$(printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$3=//p")
    if [ "${b:-0}" -gt "${a:-0}" ]; then echo yes; else echo "no ($3 $a -> $b)"; fi
}
