# SPDX-License-Identifier: GPL-2.0
# Packet captures: tcpdump on lo or on the wire, printed for the host's checks.
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.

# emit_pcap NAME FILE CHECK: FILE as base64 console lines, then its size and the check
# the host runs on it after the run (xtask/src/pcap.rs).
emit_pcap() {
    base64 "$2" | sed "s/^/RSIW-PCAP $1 /"
    echo "RSIW-PCAP-END $1 $(wc -c < "$2") $3"
}

# capture_start FILE FILTER: tcpdump on lo into FILE (whole packets) for FILTER, in
# the background ($td); returns once tcpdump's socket is bound (it prints "listening on").
capture_start() {
    tcpdump -Z root -U -i lo -n -s 0 -w "$1" "$2" > /tmp/td.log 2>&1 &
    td=$!
    retry 10 grep -q "listening on" /tmp/td.log
}

# capture_end NAME FILE CHECK [LABEL]: stops capture_start's tcpdump, then passes
# "LABEL: tcpdump captured the exchange" and prints the capture for the host's CHECK
# (xtask/src/pcap.rs), or fails the case if nothing was captured.
capture_end() {
    local l="${4:+$4: }tcpdump captured the exchange"
    sleep 1
    kill $td; wait $td
    cat /tmp/td.log
    if [ -s "$2" ]; then
        pass "$l ($(wc -c < "$2") bytes)"
        emit_pcap "$1" "$2" "$3"
    else
        fail "$l" "empty capture"
    fi
}

# wire_capture_start IFACE PORT: tcpdump of TCP port PORT on IFACE (whole packets) into
# /tmp/wire.pcap, in the background ($wire_td), for wire_capture_end.
wire_capture_start() {
    rm -f /tmp/wire.pcap
    tcpdump -Z root -U -i "$1" -n -s 0 -B 16384 -w /tmp/wire.pcap tcp port "$2" > /tmp/wire-td.log 2>&1 &
    wire_td=$!
    # tcpdump prints "listening on" once its socket is bound.
    retry 10 grep -q "listening on" /tmp/wire-td.log
}

# wire_capture_end PORT FAILED: stops wire_capture_start's tcpdump; if FAILED is not 0
# (the run it watched failed), recomputes the MPA CRC of every FPDU in the capture
# (rsiw-pcap-crc: an independent reading of the octets on the wire, which tells whether
# a CRC error an end reported was in what the other end sent) and prints what it
# found, keeping it in /tmp/wire-crc.log. The capture is removed either way.
wire_capture_end() {
    sleep 1
    kill "$wire_td" 2>/dev/null; wait "$wire_td"
    : > /tmp/wire-crc.log
    if [ "$2" != 0 ]; then
        grep -E "captured|dropped" /tmp/wire-td.log
        echo "MPA CRC of each FPDU on the wire, port $1:"
        rsiw-pcap-crc /tmp/wire.pcap "$1" > /tmp/wire-crc.log
        echo "rsiw-pcap-crc exit $?" >> /tmp/wire-crc.log
        cat /tmp/wire-crc.log
    fi
    rm -f /tmp/wire.pcap
}

# wire_bad_crc_from ADDR: wire_capture_end's last check found an FPDU sent from ADDR
# whose CRC field is not the CRC of its octets.
wire_bad_crc_from() {
    grep -q "^$1:[0-9]* -> .*: FPDU .* CRC field" /tmp/wire-crc.log
}
