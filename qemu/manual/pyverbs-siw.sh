#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-image: pyverbs
# rsiw-timeout: 700
# The pyverbs modules of pyverbs-rsiw.sh on the kernel's siw, for comparison: siw0's GID
# table holds only the MAC-based GID, so the tests' RDMATestCase finds no usable port
# and skips every traffic test. A module passes only if all its tests passed; otherwise
# it is skipped with its counts (the reference device is not under test).
. /rsiw/lib.sh
setup_net
D=siw0
dev_up siw "$D" eth0 || finish
pyverbs_suite "$D" compare 600
dev_down siw "$D"
finish
