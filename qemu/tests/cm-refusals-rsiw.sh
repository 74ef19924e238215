#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: cm
# rsiw-timeout: 300
# rsiw's connection manager when the other end is not a willing MPA peer (RFC 5044
# §7.1): a responder answers a bad MPA Request with a Reject Reply and resets a
# non-MPA client; an initiator reports a TCP refusal as REJECTED and a peer that
# never replies as UNREACHABLE (mpa_timeout_ms). A good connection still works after.
. /rsiw/lib.sh
setup_net
dev_up rsiw rsiw0 eth0 || finish
P=/sys/module/rsiw/parameters
check_output "mpa_crc defaults to Y" '^Y$' cat $P/mpa_crc
check_output "mpa_peer_to_peer defaults to Y" '^Y$' cat $P/mpa_peer_to_peer
check_output "mpa_timeout_ms defaults to 10000" '^10000$' cat $P/mpa_timeout_ms
echo 2000 > $P/mpa_timeout_ms

# hexreply BYTES: sends BYTES (printf format) to the rping server, prints its answer in hex.
hexreply() {
    printf "$1" | timeout 10 nc 10.0.2.15 7174 | od -An -tx1 | tr -d ' \n'
    echo
}

timeout 120 rping -s -a 10.0.2.15 -C 1 -v > /tmp/rping-s.log 2>&1 &
server=$!
step "rsiw responder listens" wait_rdma_listen
KEYREP=4d504120494420526570204672616d65
# Rev 0 predates RFC 5044: Reject Reply (R and C bits: 0x60), Rev 1, no private data.
check_output "Request with Rev 0: Reject Reply" "^${KEYREP}60010000\$" \
    hexreply 'MPA ID Req Frame\000\000\000\000'
# (A Request asking for Markers, the M bit, is accepted: rsiw inserts them;
# markers-rsiw-pair.sh.)
# PD_Length above 512 (RFC 5044 §7.1.1): refused at the header with a Reject Reply.
check_output "Request with PD_Length 513: Reject Reply" "^${KEYREP}60010000\$" \
    hexreply 'MPA ID Req Frame\000\002\002\001'
# Not MPA at all (wrong key): reset, nothing sent back.
check_output "non-MPA bytes: no answer" '^$' hexreply 'GET / HTTP/1.0\r\nHost: rsiw\r\n\r\n'
# None of those reached the ULP: the server still takes a real client.
check_output "rping client after the refusals: 1 ping" 'rdma-ping-0: ' \
    timeout 60 rping -c -a 10.0.2.15 -C 1 -v
wait $server
check "rping server exits 0" test $? -eq 0

# A wildcard listener (bound to the device's netdev) takes a client too.
timeout 60 rping -s -a 0.0.0.0 -C 1 -v > /tmp/rping-w.log 2>&1 &
server=$!
check "wildcard listener (0.0.0.0) listens" wait_rdma_listen
check_output "rping client to the wildcard listener: 1 ping" 'rdma-ping-0: ' \
    timeout 60 rping -c -a 10.0.2.15 -C 1 -v
wait $server
check "wildcard rping server exits 0" test $? -eq 0

# rping_fails PORT: rping's output for a client that cannot connect (it exits 255).
rping_fails() {
    timeout 60 rping -c -a 10.0.2.15 -p "$1" -C 1 -v 2>&1
    true
}
# Initiator: nothing listens on the port; the TCP RST is a refusal (CONNECT_REPLY
# -ECONNREFUSED, which rdma_cm reports as REJECTED).
check_output "connect to a closed port: REJECTED, -ECONNREFUSED" \
    'RDMA_CM_EVENT_REJECTED, error -111' rping_fails 7999
# Initiator: a TCP peer that closes instead of answering: -ECONNRESET.
timeout 20 nc -l -p 7997 > /tmp/req0.bin < /dev/null &
sleep 1
check_output "peer closes before a Reply: REJECTED, -ECONNRESET" \
    'RDMA_CM_EVENT_REJECTED, error -104' rping_fails 7997
# Initiator: a TCP peer that never answers the Request: -ETIMEDOUT after
# mpa_timeout_ms (2 s here), which rdma_cm reports as UNREACHABLE.
sleep 15 | timeout 20 nc -l -p 7998 > /tmp/req.bin &
sleep 1
start=$(date +%s)
check_output "no MPA Reply within mpa_timeout_ms: UNREACHABLE, -ETIMEDOUT" \
    'RDMA_CM_EVENT_UNREACHABLE, error -110' rping_fails 7998
took=$(( $(date +%s) - start ))
check "the timeout took 2-8 s (took ${took} s)" test "$took" -ge 2 -a "$took" -le 8
wait
# What it got was our Request: key, C, enhanced and large-FPDU bits, Rev 2, IRD/ORD
# 1/1 with the peer-to-peer bit and the Write and Read RTR offer (RFC 6581 §5).
check_output "the silent peer got an MPA v2 Request" \
    '^4d504120494420526571204672616d65580200048001c001$' \
    sh -c 'od -An -tx1 /tmp/req.bin | tr -d " \n"; echo'
# Initiator: a complete Reply it cannot use gets a Terminate (RFC 6581 §4) after the
# Request: ULPDU_Length 22, DDP untagged last (0x41), RDMAP Terminate (0x47), QN 2,
# MSN 1, MO 0, Layer LLP / EType MPA / the code, then the CRC (the Reply asked for it).
# bad_reply PORT IRD ORD CODE NAME: the fake responder answers IRD/ORD (printf octal).
bad_reply() {
    (printf "MPA ID Rep Frame\\120\\002\\000\\004$2$3"; sleep 8) | timeout 20 nc -l -p "$1" > /tmp/got.bin &
    sleep 1
    check_output "$5: REJECTED, -ECONNRESET" 'RDMA_CM_EVENT_REJECTED, error -104' rping_fails "$1"
    wait
    check_output "$5: Request, then the Terminate with code $4" \
        "^4d504120494420526571204672616d65580200048001c001001641470000000000000002000000010000000020${4}0000[0-9a-f]{8}\$" \
        sh -c 'od -An -tx1 /tmp/got.bin | tr -d " \n"; echo'
}
# ORD 16 with the Write RTR: more than the IRD 1 rping offered.
bad_reply 7995 '\200\001' '\200\020' 06 "Reply with ORD above our IRD"
# Peer-to-peer answered without any RTR type.
bad_reply 7994 '\200\001' '\000\001' 07 "Reply choosing no RTR"
echo 10000 > $P/mpa_timeout_ms

check_no_output "no cm_id left behind" '[0-9]' sh -c 'rdma resource show cm_id | grep -v "^$"'
dev_down rsiw rsiw0
finish
