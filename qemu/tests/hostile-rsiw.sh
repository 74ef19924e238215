#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: 7.3 debian-7.3
# rsiw-group: verbs
# rsiw-requires: datapath
# rsiw-timeout: 600
# Hostile local users (Documentation/security.md): a process may bind a connection
# only to a QP of its own that has none. rdma_cm passes the QP number of
# rdma_accept through unchecked, so rsiw refuses an accept that names a connected
# QP (the connection it has keeps working) or another process's QP, and the QPs
# are destroyed without a hang afterwards. A thread that keeps moving a QP's
# producer indices cannot keep the kernel's flush going, nor one that keeps its SQ
# full of local operations keep a doorbell's system call running. A QP's own remote
# access rights are enforced besides the region's. SQEs and RQEs the provider would
# never build, written straight into a connected QP's rings (unknown opcode, flags,
# num_sge or inline_len beyond the element, SGEs naming no memory of the QP), each
# complete with their error (a corrupt SQE leaves the QP in ERROR). Then a kernel ULP's FRWR region: no
# byte of it reaches a peer after the ULP got the completion that invalidated it
# (Send With Invalidate or LOCAL_INV racing queued Read Responses). Hostile peers
# (rsiw-rawpeer): STags cannot be guessed from one another (RFC 5042 §5.1.2), and a
# burst of small Sends arriving as one socket buffer of many fragments completes
# every posted receive.
. /rsiw/lib.sh
setup_net
D=rsiw0
dev_up rsiw "$D" eth0 || finish

# run_bg NAME SECONDS CMD...: runs CMD in the background and collects its
# RSIW-TEST lines. A QP destroy or flush that never returns leaves the process
# in uninterruptible sleep or spinning in the kernel, which no timeout can kill:
# poll for its end instead of waiting.
run_bg() {
    name=$1; secs=$2; shift 2
    "$@" > "/tmp/$name.log" 2>&1 &
    pid=$!
    n=0
    while kill -0 $pid 2> /dev/null && [ $n -lt "$secs" ]; do sleep 1; n=$((n + 1)); done
    cat "/tmp/$name.log"
    grep '^RSIW-TEST ' "/tmp/$name.log" | sed 's/^RSIW-TEST //' >> /tmp/rsiw-results
    RSIW_FAILED=$((RSIW_FAILED + $(grep -c '^RSIW-TEST FAIL' "/tmp/$name.log")))
    if kill -0 $pid 2> /dev/null; then
        fail "$name: the program ends" "still running after $secs s: $(cat /proc/$pid/wchan 2> /dev/null)"
        finish
    fi
    wait $pid
    check "$name: the program exits 0" [ $? -eq 0 ]
}

run_bg takeover 90 rsiw-verbs-test --takeover 10.0.2.15:7491
run_bg flush-hammer 90 rsiw-verbs-test --flush-hammer 10.0.2.15:7495
run_bg local-hammer 90 rsiw-verbs-test --local-hammer 10.0.2.15:7497
run_bg qp-access 90 rsiw-verbs-test --qp-access 10.0.2.15:7501
run_bg corrupt-wqe 180 rsiw-verbs-test --corrupt-wqe 10.0.2.15:7511
# STags (RFC 5042 §5.1.2, RFC 5040 §6.4): 64 regions registered in a row show no
# arithmetic relation between their rkeys (with keys and indices counting up, each
# was the last + 0x101); a raw peer told one STag Reads through it (the control,
# answered), then through that STag + 0x101 at the next region's address: an RDMAP
# Invalid STag Terminate (0/1/0), never the region's octets.
dmesg -c > /dev/null
rsiw-rawpeer serve-guess 10.0.2.15:7620 > /tmp/raw-guess.log 2>&1 &
g_peer=$!
step "stag guess: raw responder listens" wait_tcp_listen 7620
check_output "stag guess: the program ends after the guess" '^stream ended, receive flushed$' \
    timeout 60 rsiw-verbs-test --stag-guess 10.0.2.15:7620 64
g_line=$(printf '%s\n' "$out" | grep '^rkeys ')
wait $g_peer
cat /tmp/raw-guess.log
# D distinct index steps, K distinct key steps, R rising indices of 63 steps: random
# 24-bit indices give D 63 and R about 31; random keys K about 56 (63 draws of 256).
check "64 rkeys: no arithmetic relation ($g_line)" awk -v l="$g_line" 'BEGIN {
    n = split(l, f, " "); exit !(f[3] >= 60 && f[7] >= 40 && f[11] >= 12 && f[11] <= 51) }'
check_output "stag guess: the control Read through the STag told is answered" \
    '^read ok (5a){16}$' cat /tmp/raw-guess.log
check_output "stag guess: STag + 0x101 gets an RDMAP Invalid STag Terminate" \
    '^guess 0x[0-9a-f]+ got 00[0-9a-f]{2}4147000000000000000200000001000000000100' \
    cat /tmp/raw-guess.log
check_output "stag guess: the stream ends" '^end (fin|rst)$' cat /tmp/raw-guess.log
check_output "stag guess: dmesg names the Terminate" \
    'sending Terminate TermCause \{ layer: 0, etype: 1, ecode: 0 \}' dmesg

# Receive WQEs (rust/engine/rx.rs): 40 Sends of 8 octets, spliced from 29 pages at
# once (12 on the first, one on each after), reach rsiw as socket buffers of one
# fragment per page, more Sends in the first eight fragments than the queue of
# deferred completions holds (16): each of the 40 posted receives completes, with
# its Send's octets, none lost.
rsiw-rawpeer serve-sends 10.0.2.15:7621 40 > /tmp/raw-sends.log 2>&1 &
b_peer=$!
step "receive burst: raw responder listens" wait_tcp_listen 7621
check_output "receive burst: 40 Sends in fragments complete 40 receives with their data" \
    '^receives 40: 40 success, 0 flushed, 0 other, 0 missing$' \
    timeout 90 rsiw-verbs-test --recv-burst 10.0.2.15:7621 40
wait $b_peer
cat /tmp/raw-sends.log
check_output "receive burst: the peer spliced them from 29 pages" '^sent 40 Sends on 29 pages$' \
    cat /tmp/raw-sends.log

HOSTILE="listen connect_hostile_send_inv hostile_setup hostile_reads_posted
hostile_send_inv_posted hostile_send_inv_received hostile_send_inv_reads_complete
read_vs_send_inv_no_poison connect_hostile_local_inv hostile_li_reads_posted
hostile_li_send_posted hostile_li_send_received hostile_local_inv hostile_li_reads_complete
read_vs_local_inv_no_poison"
run_kverbs "$D" hostile "$HOSTILE" "" port=18519 hostile=1
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
