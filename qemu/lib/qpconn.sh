# SPDX-License-Identifier: GPL-2.0
# Part of /rsiw/lib.sh, which sources every qemu/lib/*.sh.
#
# QP connections from modify_qp (qpconn-*.sh): a fake ibv_rc_pingpong client and
# crafted requests to the listener on 10.0.2.15:4792.
# fake_client PORT: tells the rc_pingpong server on PORT that its peer is QPN 0x111 with
# PSN 0x222 at GID ::ffff:10.0.2.14 (rc_pingpong's own exchange), then holds on; sets
# $fake (its pid), $SQPN and $SPSN (the server's QPN and PSN, hex).
fake_client() {
    { printf '0000:000111:000222:00000000000000000000ffff0a00020e\0'; sleep 2; printf 'done\0'; sleep 100; } |
        timeout 110 nc 10.0.2.15 "$1" > /tmp/fake.out &
    fake=$!
    retry 10 sh -c 'tr -d "\000" < /tmp/fake.out | grep -q "^0000:"'
    SQPN=$(tr -d '\000' < /tmp/fake.out | cut -d: -f2)
    SPSN=$(tr -d '\000' < /tmp/fake.out | cut -d: -f3)
    echo "server QPN 0x$SQPN PSN 0x$SPSN"
}

# armed_server DEV PORT TIMEOUT_MS: clears dmesg, sets qp_conn_timeout_ms, starts an
# ibv_rc_pingpong server on DEV and PORT ($srv) told by fake_client that its peer is
# QPN 0x111, PSN 0x222 at 10.0.2.14, and checks that its QP is armed (in RTS).
armed_server() {
    dmesg -c > /dev/null
    echo "$3" > /sys/module/rsiw/parameters/qp_conn_timeout_ms
    timeout 200 ibv_rc_pingpong -d "$1" -g 1 -p "$2" > /tmp/pp-s.log 2>&1 &
    srv=$!
    sleep 1
    fake_client "$2"
    check "the server is armed (QP 0x$SQPN in RTS)" \
        sh -c "rdma resource show qp | grep -w $1 | grep 'lqpn $((0x$SQPN)) ' | grep -q RTS"
}

# qpreq NAME WANT ARGS…: rsiw-rawpeer qpconn 10.0.2.15:4792 ARGS… (as root: from a
# privileged port); WANT yes|no (rejected).
qpreq() {
    name=$1; want=$2; shift 2
    check_output "$name: rejected $want" "^rejected $want\$" rsiw-rawpeer qpconn 10.0.2.15:4792 "$@"
}
