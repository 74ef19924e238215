#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: siw
# rsiw-group: verbs
# rsiw-verbs-test against the kernel's siw: server and client on siw0 (eth0, 10.0.2.15).
# The cases siw gets wrong are skipped (siw_verbs_skips in lib.sh, Documentation/userspace-tests.md).
. /rsiw/lib.sh
setup_net

step "modprobe siw" modprobe siw || finish
step "rdma link add siw0 type siw netdev eth0" rdma link add siw0 type siw netdev eth0 || finish
verbs_run siw0 10.0.2.15 siw "$(siw_verbs_skips)"

step "rdma link delete siw0" rdma link delete siw0
step "rmmod siw" rmmod siw
finish
