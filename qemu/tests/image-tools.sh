#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The image holds every tool and verbs provider later tests use, each with all its libraries.
. /rsiw/lib.sh
for t in ibv_devices ibv_devinfo ibv_rc_pingpong rping ib_send_bw ib_write_bw ib_read_bw \
    ib_send_lat ib_write_lat ib_read_lat ib_atomic_bw ib_atomic_lat rdma tcpdump iperf3 \
    /usr/lib/x86_64-linux-gnu/libibverbs/*.so; do
    # ld.so lists the libraries instead of running the program; "not found" means missing.
    check_no_output "$(basename "$t"): all libraries found" 'not found|No such file' \
        env LD_TRACE_LOADED_OBJECTS=1 "$t"
done
check "modprobe works through request_module (rdma_rxe pulls in crc32)" modprobe rdma_rxe
check "rmmod rdma_rxe" rmmod rdma_rxe
finish
