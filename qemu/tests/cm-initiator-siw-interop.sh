#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: siw
# rsiw-vms: 2
# rsiw-group: siw-pairs
# rsiw-timeout: 500
# rsiw's connection manager against siw (the C reference) across the socket network,
# the direction cm-siw-interop.sh does not take: siw on VM 0 initiates (client-server)
# and rpings rsiw on VM 1, each side checks its own end; VM 1 checks the MPA
# Request/Reply bytes on the wire (RFC 5044 §7.1) against what siw's defaults and
# rsiw's make of them. In VMs of its own: see cm-siw-interop.sh for siw's lockdep report
# when both directions share a boot.
. /rsiw/lib.sh
cm_siw_up

# siw initiates, rsiw responds.
if [ "$T" = rsiw ]; then cm_serve 7001; else cm_connect 7001; fi
if [ "$T" = rsiw ]; then
    # siw (mpa_crc_required off, no peer_to_peer): no C bit, enhanced, IRD/ORD 1/1.
    check_output "siw Request: no CRC, Rev 2, IRD/ORD 1/1, client-server" \
        '^1002000400010001$' mpa_after $REQ
    # rsiw asks for CRC in its Reply (mpa_crc=Y); siw accepts and uses it. No
    # large-FPDU bit: siw's Request did not offer them.
    check_output "rsiw Reply: CRC, no large FPDUs, Rev 2, IRD/ORD 1/1, no RTR" \
        '^5002000400010001$' mpa_after $REP
    kill $td
fi
cm_siw_down
