#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-expect-splat: KASAN: slab-out-of-bounds in *[rsiw_test_kasan]
# rsiw-flavours: debug
# Meta-test of the harness: an out-of-bounds read in a module must make the run fail.
# The header inverts the verdict: this run passes only if that KASAN report was seen.
. /rsiw/lib.sh
step "modprobe rsiw_test_kasan" modprobe rsiw_test_kasan
step "rmmod rsiw_test_kasan" rmmod rsiw_test_kasan
finish
