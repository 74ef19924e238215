#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
# rsiw-group: conn
# rsiw-timeout: 400
# rsiw0's counters (`rdma statistic show link rsiw0/1`, ib_core's hw_stats) and each QP's
# own (`rdma -dd resource show qp`) against traffic whose size is known: Atomics,
# Reads, Writes and Sends from rsiw-load (both ends on rsiw0, so the port counts each
# message once as sent and once as received), a Send with a bad MPA CRC and a valid
# Terminate from a raw peer, a refused connect and a link flap.
. /rsiw/lib.sh
setup_net
dev_up rsiw rsiw0 eth0 || finish
D=rsiw0
S=/tmp/stats

# expect_delta NAME WANT WHAT: counter NAME grew by exactly WANT since the last stats_save.
expect_delta() {
    got=$(stat_delta $D $S "$1")
    if [ "$got" = "$2" ]; then pass "$3: $1 +$2"; else fail "$3: $1 +$2" "grew by '$got'"; fi
}

rsiw-load server 10.0.2.15:7480 > /tmp/server.log 2>&1 &
server=$!
step "rsiw-load server listens" wait_tcp_listen 7480

# 50 rounds of FetchAdd + CmpSwap on one connection: 100 Atomics, each answered.
stats_save $D $S
# The client holds its connection (until SIGTERM) while its QP is looked at.
rsiw-load client 10.0.2.15:7480 --ops a --rounds 50 --hold 120 > /tmp/atomics.log 2>&1 &
client=$!
retry 30 grep -q 'holding' /tmp/atomics.log
cqpn=$(sed -n 's/^conn 0 qpn \([0-9]*\)$/\1/p' /tmp/atomics.log)
sqpn=$(rdma resource show qp | awk -v c="$cqpn" '$0 ~ /rsiw-load/ && $4 != c { print $4 }' | head -n 1)
rdma -dd resource show qp > /tmp/res.txt
cat /tmp/res.txt
for a in "atomic_requests_sent 100" "atomic_responses_rcvd 100" "atomic_requests_served 0" \
    "conn up" "role initiator" "mpa_crc yes" "rtr write"; do
    set -- $a
    v=$(qp_attr "$cqpn" "$1" /tmp/res.txt)
    if [ "$v" = "$2" ]; then pass "requester QP $cqpn: $1 $2"; else fail "requester QP $cqpn: $1 $2" "shows '$v'"; fi
done
for a in "atomic_requests_served 100" "atomic_requests_sent 0" "role responder"; do
    set -- $a
    v=$(qp_attr "$sqpn" "$1" /tmp/res.txt)
    if [ "$v" = "$2" ]; then pass "responder QP $sqpn: $1 $2"; else fail "responder QP $sqpn: $1 $2" "shows '$v'"; fi
done
kill $client
wait $client
check_output "50 rounds of FetchAdd and CmpSwap, every original value as predicted" \
    'rounds 50;.* fetchadds 50 cmpswaps 50; verify_errors 0;' cat /tmp/atomics.log
expect_delta atomic_requests_sent 100 "100 Atomics"
expect_delta atomic_requests_served 100 "100 Atomics"
expect_delta atomic_responses_rcvd 100 "100 Atomics"
expect_delta cm_established 2 "one connection, both ends on rsiw0"
expect_delta cm_closed 2 "one connection, both ends on rsiw0"
expect_delta cm_aborted 0 "an orderly close"

# 30 rounds of Write + Read back: 30 Reads each answered; the RFC 6581 RTR is one
# zero-length Write more.
stats_save $D $S
check_output "30 rounds of Write and Read back, data checked" 'rounds 30;.* verify_errors 0;' \
    rsiw-load client 10.0.2.15:7480 --ops wr --rounds 30 --size 3000
expect_delta read_requests_sent 30 "30 Reads"
expect_delta read_requests_served 30 "30 Reads"
expect_delta read_responses_rcvd 30 "30 Reads"
expect_delta rdma_writes 31 "30 Writes and the RTR"
expect_delta rdma_writes_rcvd 31 "30 Writes and the RTR"
# 20 Sends, each answered by the server's Send.
stats_save $D $S
check_output "20 rounds of Send, each checked by the server" 'rounds 20;.* verify_errors 0;' \
    rsiw-load client 10.0.2.15:7480 --ops s --rounds 20
expect_delta rdma_sends 40 "20 Sends and 20 answers"
expect_delta rdma_recvs 40 "20 Sends and 20 answers"
kill $server
wait $server
check_output "the server verified every Send" 'bad 0;' cat /tmp/server.log

# With both ends on rsiw0 every FPDU and octet sent is one received.
stats_save $D $S
rdma statistic show link $D/1
for p in fpdus octets; do
    a=$(awk -v n=sent_$p '$1 == n { print $2 }' $S)
    b=$(awk -v n=rcvd_$p '$1 == n { print $2 }' $S)
    if [ -n "$a" ] && [ "$a" -gt 0 ] && [ "$a" = "$b" ]; then
        pass "sent_$p = rcvd_$p ($a)"
    else
        fail "sent_$p = rcvd_$p" "sent '$a', received '$b'"
    fi
done

# raw CASE: an rping server on rsiw0 and rsiw-rawpeer CASE against it.
raw() {
    timeout 60 rping -s -a 10.0.2.15 -p 7174 -C 1 > /dev/null 2>&1 &
    r_server=$!
    step "$1: rping server listens" wait_tcp_listen 7174
    rsiw-rawpeer fpdu 10.0.2.15:7174 "$1" > /tmp/raw-$1.log 2>&1
    cat /tmp/raw-$1.log
    wait $r_server
}

# A Send whose CRC is wrong: counted, answered with the MPA CRC Terminate (LLP, 20 02).
stats_save $D $S
raw send-bad-crc
check_output "a bad CRC gets the MPA CRC Terminate" \
    '^got 001641470000000000000002000000010000000020020000[0-9a-f]{8}$' cat /tmp/raw-send-bad-crc.log
expect_delta mpa_crc_errors 1 "a Send with a bad CRC"
expect_delta terminates_sent_llp 1 "a Send with a bad CRC"
expect_delta rcvd_fpdus 0 "a Send with a bad CRC"
expect_delta rdma_recvs 0 "a Send with a bad CRC"
# A valid Terminate from the peer (RDMAP 0/2/6).
stats_save $D $S
raw terminate
expect_delta terminates_rcvd_rdmap 1 "a peer's RDMAP Terminate"
expect_delta terminates_sent_llp 0 "a peer's RDMAP Terminate"

# A connect to a port nobody listens on is refused (TCP RST: ECONNREFUSED).
stats_save $D $S
check_fails "rping to a closed port fails" timeout 30 rping -c -a 10.0.2.15 -p 7999 -C 1
expect_delta cm_refused 1 "a connect refused by the peer"
# The link goes down once.
stats_save $D $S
ip link set eth0 down
sleep 1
ip link set eth0 up
sleep 1
expect_delta link_downed 1 "eth0 down and up"

check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D"
dev_down rsiw $D
finish
