# SPDX-License-Identifier: GPL-2.0
# Helpers for rsiw VM test scripts (source with `. /rsiw/lib.sh`): each check prints one
# `RSIW-TEST PASS name` or `RSIW-TEST FAIL name: why` line, which the harness counts.
# The helpers live in /rsiw/lib/ (qemu/lib/ in the tree), one file per concern:
# cases.sh (pass, fail, check, step, finish…), peer.sh (network, the other VM),
# device.sh (dev_up, dev_down, counters), traffic.sh (rping, perftest, rsiw-verbs-test,
# kernel verbs), capture.sh (tcpdump), qpconn.sh, cm-siw.sh, nfs.sh, pyverbs.sh, mem.sh.

RSIW_FAILED=0
# The run's environment (RSIW_TEST, RSIW_VM_INDEX, RSIW_REQUIRES, RSIW_DEV_TYPE …).
[ -f /rsiw/env ] && . /rsiw/env
# Why a part of the image is missing (RSIW_KO_MISSING, RSIW_VERBS_TEST_MISSING …).
[ -f /rsiw/status ] && . /rsiw/status

for rsiw_lib in /rsiw/lib/*.sh; do
    . "$rsiw_lib"
done
unset rsiw_lib
