#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-expect-splat: WARNING: *[rsiw_test_warn]
# Meta-test of the harness: a module that WARNs at load must make the run fail. The
# header above inverts the verdict: this run passes only if that splat was detected.
. /rsiw/lib.sh
step "modprobe rsiw_test_warn" modprobe rsiw_test_warn
step "rmmod rsiw_test_warn" rmmod rsiw_test_warn
finish
