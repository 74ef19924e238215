#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3
# rsiw-requires: siw
# rsiw-vms: 2
# rsiw-timeout: 500
# rsiw's connection manager against siw (the C reference) across the socket network:
# siw on VM 0, rsiw on VM 1; rsiw initiates (peer-to-peer, RTR) and rpings siw, each side
# checks its own end. VM 1 also checks the MPA Request/Reply bytes on the wire (RFC 5044
# §7.1, RFC 6581 §5) against what rsiw's defaults and siw's make of them. The other
# direction is cm-initiator-siw-interop.sh, in VMs of its own: once siw has answered an RTR
# connection, its RTR data-ready has taken the socket callback lock in softirq, and a
# later data-ready that siw's TX thread runs from the socket backlog (process context,
# plain read_lock) is reported by lockdep as inconsistent lock state in siw.
# Accepting this one RTR connection is enough for siw to raise that report on its own
# (Documentation/testing.md), so VM 0, which runs siw and no rsiw code, turns lockdep's
# validation off (kernel.prove_locking = 0) before siw sees a connection. VM 1, where
# rsiw runs, keeps it; KASAN stays on in both.
. /rsiw/lib.sh
if [ "$RSIW_VM_INDEX" = 0 ]; then
    check "VM 0 (siw only): lockdep validation off" sh -c 'echo 0 > /proc/sys/kernel/prove_locking'
fi
cm_siw_up

# rsiw initiates.
if [ "$T" = siw ]; then cm_serve 7000; else cm_connect 7000; fi
if [ "$T" = rsiw ]; then
    # C, enhanced and large-FPDU bits (0x58), Rev 2, PD_Length 4; IRD 1 with the P bit
    # (0x8001), ORD 1 offering Write and Read RTR (0xc001): rping asks for 1/1.
    check_output "rsiw Request: CRC, large FPDUs offered, Rev 2, IRD/ORD 1/1, peer-to-peer, Write+Read RTR" \
        '^580200048001c001$' mpa_after $REQ
    # siw keeps the C bit it was asked for and picks the Write RTR (0x8001). It builds
    # its Reply from the Request's header, so the offer bit comes back (0x58), but
    # never the acknowledgement (0x04): rsiw sends it RFC 5044 FPDUs.
    check_output "siw Reply: CRC, offer echoed but not acknowledged, Rev 2, IRD/ORD 1/1, Write RTR" \
        '^5802000480018001$' mpa_after $REP
    kill $td
fi
cm_siw_down
