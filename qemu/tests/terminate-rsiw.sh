#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-group: conn
# rsiw-requires: datapath
# rsiw-timeout: 900
# The error cases of rsiw-verbs-test on rsiw0, one at a time: besides the completion
# status the test program checks, each must put the Terminate the RFCs name on the wire.
# Both ends run in this VM, so the responder's "sending Terminate" and the requester's
# "peer sent Terminate" lines both land in dmesg, with the same Layer/EType/Code.
. /rsiw/lib.sh
setup_net
D=rsiw0

# case → Terminate cause as rsiw logs it (layer, etype, ecode).
#   Read with a wrong/deregistered STag: RFC 5040 §7.1 Remote Protection, Invalid STag.
#   Read beyond the region: Remote Protection, Base or bounds violation.
#   Read/Write without the remote right: Remote Protection, Access rights violation.
#   Send with no posted receive: RFC 5041 §7.2 Untagged Buffer, Invalid MSN - no buffer.
expect() {
    case $1 in
    err-wrong-rkey | err-dereg-mr) echo "layer: 0, etype: 1, ecode: 0" ;;
    err-out-of-bounds) echo "layer: 0, etype: 1, ecode: 1" ;;
    err-no-remote-read | err-no-remote-write) echo "layer: 0, etype: 1, ecode: 2" ;;
    err-rq-empty) echo "layer: 1, etype: 2, ecode: 2" ;;
    esac
}

dev_up rsiw "$D" eth0 || finish
for c in err-wrong-rkey err-out-of-bounds err-no-remote-read err-dereg-mr \
    err-no-remote-write err-rq-empty; do
    dmesg -c > /dev/null
    RSIW_VERBS_CASES=$c verbs_run "$D" 10.0.2.15 "rsiw-$c"
    log=$(dmesg)
    want="TermCause { $(expect $c) }"
    for side in "sending Terminate" "peer sent Terminate"; do
        line=$(printf '%s\n' "$log" | grep -F "$side TermCause" | head -n 1)
        case "$line" in
        *"$side $want"*) pass "$c: $side ($want)" ;;
        "") fail "$c: $side" "no '$side' line in dmesg" ;;
        *) fail "$c: $side" "expected $want, dmesg: ${line#*] }" ;;
        esac
    done
done
check_no_output "no QP left behind" '[0-9]' sh -c "rdma resource show qp | grep -w $D | grep -v '^$'"
dev_down rsiw "$D"
finish
