#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: cm
# rsiw-timeout: 300
# RFC error handling at the edges, against an rsiw responder (rping server) from a raw
# peer after a real MPA exchange (Rev 1, CRC): a Terminate in error is not answered
# (RFC 5040 §7.2); a ULPDU too short for a DDP header is an MPA framing error (RFC
# 5044 §8: 20 03 00 00); a Send whose header shows it cannot fit the receive buffer is
# refused when its header arrives (RFC 5041 §7.1: 12 05 c0 00, the segment length and
# the DDP header copied); bytes sent before the MPA Reply end the connection before any
# Reply (RFC 5044 §7.1.3); a Read Response that ends short fails the Read (RFC 5040
# §4.4). The ULP's QP is torn down every time, nothing is left.
. /rsiw/lib.sh
setup_net
dev_up rsiw rsiw0 eth0 || finish
KEYREP=4d504120494420526570204672616d65
# The Terminate FPDU's start: ULPDU_Length, DDP untagged last, RDMAP Terminate, QN 2,
# MSN 1, MO 0.
term() { echo "00${1}4147""00000000""00000002""00000001""00000000"; }

# edge CASE WHAT ENDS REGEX...: rping server, raw peer CASE; each REGEX must match its
# output. ENDS: `ends` if the server's QP was set up and must end with the stream,
# `unseen` if the connection never reached the ULP (the server is stopped then).
# (lib.sh's helpers set `name`, `re`, `out` and `rc`: the variables here are `e_*`.)
edge() {
    e_case=$1; e_what=$2; e_ends=$3; shift 3
    dmesg -c > /dev/null
    timeout 60 rping -s -d -a 10.0.2.15 -C 1 -v > /tmp/rping-$e_case.log 2>&1 &
    e_server=$!
    step "$e_what: rping server listens" wait_tcp_listen 7174
    rsiw-rawpeer fpdu 10.0.2.15:7174 "$e_case" > /tmp/raw-$e_case.log 2>&1
    cat /tmp/raw-$e_case.log
    for e_re in "$@"; do
        check_output "$e_what: $e_re" "$e_re" cat /tmp/raw-$e_case.log
    done
    if [ "$e_ends" = unseen ]; then
        check_no_output "$e_what: the ULP never saw the connection" 'CONNECT_REQUEST' \
            cat /tmp/rping-$e_case.log
        kill $e_server
        wait $e_server
        return
    fi
    check_output "$e_what: the ULP had the connection" 'CONNECT_REQUEST' cat /tmp/rping-$e_case.log
    e_start=$(date +%s)
    wait $e_server
    e_rc=$?
    e_took=$(( $(date +%s) - e_start ))
    check "$e_what: the rping server ends (exit $e_rc) within 30 s (took ${e_took} s)" \
        test "$e_took" -le 30 -a "$e_rc" -ne 124
}

edge terminate-msn "a Terminate with MSN 2" ends "^reply ${KEYREP}" '^got $' '^end (fin|rst)$'
check_output "a Terminate with MSN 2: dmesg says it was not answered" \
    'peer sent a Terminate in error \(TermCause \{ layer: 1, etype: 2, ecode: 3' dmesg
edge terminate-short "a Terminate of 2 octets" ends "^reply ${KEYREP}" '^got $' '^end (fin|rst)$'
check_output "a Terminate of 2 octets: dmesg says it was not answered" \
    'peer sent a Terminate in error' dmesg
edge ulpdu-short "a ULPDU of one octet" ends "^reply ${KEYREP}" \
    "^got $(term 16)20030000[0-9a-f]{8}\$" '^end (fin|rst)$'
check_output "a ULPDU of one octet: MPA framing error in dmesg" \
    'sending Terminate TermCause \{ layer: 2, etype: 0, ecode: 3 \}' dmesg
edge send-too-long "a Send header announcing 1000 octets" ends "^reply ${KEYREP}" \
    "^got $(term 2a)1205c00003fa414300000000000000000000000100000000[0-9a-f]{8}\$" '^end (fin|rst)$'
check_output "a Send header announcing 1000 octets: message too long in dmesg" \
    'sending Terminate TermCause \{ layer: 1, etype: 2, ecode: 5 \}' dmesg
# A Terminate opcode on the Send queue (QN 0) or tagged is no Terminate (RFC 5040
# §5.1 puts Terminates on QN 2): it gets DDP's Invalid QN (RFC 5041 §7.2: 12 01 c0
# 00, the segment length and its DDP header) or RDMAP's unexpected opcode (RFC 5040
# §4.2: 02 06 c0 00), as any segment would.
edge terminate-qn0 "a Terminate on QN 0" ends "^reply ${KEYREP}" \
    "^got $(term 2a)1201c0000016414700000000000000000000000100000000[0-9a-f]{8}\$" '^end (fin|rst)$'
check_output "a Terminate on QN 0: Invalid QN Terminate in dmesg" \
    'sending Terminate TermCause \{ layer: 1, etype: 2, ecode: 1 \}' dmesg
edge terminate-tagged "a tagged Terminate" ends "^reply ${KEYREP}" \
    "^got $(term 26)0206c0000012c147000000000000000000000000[0-9a-f]{8}\$" '^end (fin|rst)$'
# Parity with siw's fixes of 2026 (a header whose state was never set up, an FPDU
# length underflow): a valid Terminate as the first FPDU ends the stream, unanswered
# (RFC 5040 §7.2); a Read Response or an Atomic Response that answers nothing gets an
# unexpected-opcode Terminate (RFC 5040 §7.2, RFC 7306 §5.2.2) and places nothing;
# ULPDU_Length 0, or a DDP header cut at 17 octets, is an MPA framing error.
edge terminate "a Terminate as the first FPDU" ends "^reply ${KEYREP}" '^got $' '^end (fin|rst)$'
check_output "a Terminate as the first FPDU: dmesg names it" \
    'peer sent Terminate TermCause \{ layer: 0, etype: 2, ecode: 6 \}' dmesg
edge read-response-unasked "a Read Response, no Read asked" ends "^reply ${KEYREP}" \
    "^got $(term 26)0206c000001ec142000012340000000000000000[0-9a-f]{8}\$" '^end (fin|rst)$'
edge atomic-response-unasked "an Atomic Response, no Atomic asked" ends "^reply ${KEYREP}" \
    "^got $(term 2a)0206c000001e414b00000000000000030000000100000000[0-9a-f]{8}\$" '^end (fin|rst)$'
edge ulpdu-zero "ULPDU_Length 0" ends "^reply ${KEYREP}" \
    "^got $(term 16)20030000[0-9a-f]{8}\$" '^end (fin|rst)$'
edge ulpdu-17 "a DDP header cut at 17 octets" ends "^reply ${KEYREP}" \
    "^got $(term 16)20030000[0-9a-f]{8}\$" '^end (fin|rst)$'
edge early "bytes before the MPA Reply" unseen '^reply none$' '^got $' '^end (fin|rst)$'
check_output "bytes before the MPA Reply: dmesg names them" \
    'bytes after the MPA Request, before the Reply: reset' dmesg

# A Read Response must carry every octet the Read asked for (RFC 5040 §4.4): one that
# ends short fails the Read (BAD_RESP_ERR, the sink's old contents are not data) and
# the requester sends an RDMAP catastrophic Terminate (0/2/7). A full one is the
# control: the raw responder is understood.
# read_edge CASE WHAT STATUS_RE: rsiw-verbs-test reads 2048 octets from the raw peer.
read_edge() {
    dmesg -c > /dev/null
    rsiw-rawpeer serve-read 10.0.2.15:7610 "$1" > /tmp/raw-read-$1.log 2>&1 &
    r_peer=$!
    step "$2: raw responder listens" wait_tcp_listen 7610
    timeout 30 rsiw-verbs-test --read-from 10.0.2.15:7610 2048 > /tmp/read-$1.log 2>&1
    cat /tmp/read-$1.log
    check_output "$2: the Read completes as $3" "$3" cat /tmp/read-$1.log
    wait $r_peer
    cat /tmp/raw-read-$1.log
    check_output "$2: the raw peer got the Read Request" '^read 0x[0-9a-f]+ 0x[0-9a-f]+ 2048$' \
        cat /tmp/raw-read-$1.log
    check_output "$2: nothing placed past the 2048 octets read" '^past 2048: 0 octets written$' \
        cat /tmp/read-$1.log
}
read_edge full "a full Read Response" '^read status success byte_len 2048 sink\[0\] 0xa5$'
read_edge short "a short Read Response" '^read status bad response error'
check_output "a short Read Response: an RDMAP catastrophic Terminate in dmesg" \
    'sending Terminate TermCause \{ layer: 0, etype: 2, ecode: 7 \}' dmesg
check_output "a short Read Response: the Terminate reaches the peer" "^got 00[0-9a-f]{2}4147000000000000000200000001000000000207" \
    cat /tmp/raw-read-short.log
# A Read Response that carries more than the Read asked for (RFC 5040 §4.4; siw's fix of
# 2026 for placement past the RREAD length): in one segment, or in a further segment
# of the same Response, it is refused at its header with DDP's base or bounds
# violation (RFC 5041 §7.2: 11 01 c0 00) and nothing past the sink is written; a
# second Response after a complete one answers no Read (unexpected opcode, 02 06).
RSTART="^got 0026414700000000000000020000000100000000"
read_edge long "a Read Response 16 octets too long" '^read status bad response error'
check_output "a Read Response 16 octets too long: base or bounds Terminate" \
    "${RSTART}1101c000081ec142[0-9a-f]{32}\$" cat /tmp/raw-read-long.log
read_edge split-long "a Read Response with a segment too many" '^read status bad response error'
check_output "a Read Response with a segment too many: base or bounds Terminate" \
    "${RSTART}1101c000001ec142[0-9a-f]{32}\$" cat /tmp/raw-read-split-long.log
read_edge extra "a second Read Response" '^read status success byte_len 2048 sink\[0\] 0xa5$'
check_output "a second Read Response: unexpected opcode Terminate" \
    "${RSTART}0206c000001ec142[0-9a-f]{32}\$" \
    cat /tmp/raw-read-extra.log

# A peer that never answers our FIN (TCP lets it keep its half open, and a FIN can be
# lost when its allocation fails): after a graceful disconnect (iw_cm: SQD) the QP
# waits for the peer's close, bounded by mpa_timeout_ms (3 s here); then it goes to
# ERROR and the posted receives flush. Without the bound they never would.
echo 3000 > /sys/module/rsiw/parameters/mpa_timeout_ms
dmesg -c > /dev/null
rsiw-rawpeer serve-hold 10.0.2.15:7611 10 > /tmp/raw-hold.log 2>&1 &
h_peer=$!
step "unanswered close: raw responder listens" wait_tcp_listen 7611
check_output "unanswered close: the receives flush 2-9 s after the disconnect" \
    '^flushed 8 receives [2-8]\.[0-9] s after the disconnect$' \
    timeout 40 rsiw-verbs-test --close-unanswered 10.0.2.15:7611
check_output "unanswered close: dmesg says why" \
    'the peer did not close its side within mpa_timeout_ms of our close' dmesg
wait $h_peer
cat /tmp/raw-hold.log
check_output "unanswered close: the raw peer got our FIN" '^fin after' cat /tmp/raw-hold.log
echo 10000 > /sys/module/rsiw/parameters/mpa_timeout_ms

check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w rsiw0 | grep -v '^\$'"
check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
dev_down rsiw rsiw0
finish
