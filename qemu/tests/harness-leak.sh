#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-expect-splat: unreferenced object
# rsiw-flavours: debug
# Meta-test of the harness: a module that leaks must make the run fail through the
# init's end-of-run kmemleak scans (debug flavour). The header inverts the verdict.
. /rsiw/lib.sh
step "modprobe rsiw_test_leak" modprobe rsiw_test_leak
step "rmmod rsiw_test_leak" rmmod rsiw_test_leak
finish
