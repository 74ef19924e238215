#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-requires: siw
# The rsiw provider's ABI gate, on a siw device named rsiw0 with siw.driver removed:
# the name matches the rsiw provider's, but siw's uverbs ABI (1) is outside the range
# the provider declares (rsiw_abi::ABI_VERSION), so libibverbs gives it no provider and
# ibv_devices does not list it; with siw.driver back, siw's provider claims it. (Before
# the rsiw module existed this device stood in for it; the provider has refused siw's
# ABI-1 answer since ABI 2.) Run it with `cargo xtask vm --script qemu/manual/provider-siw.sh`.
. /rsiw/lib.sh
setup_net
require_provider "rsiw provider in the image" || finish
dev_up siw rsiw0 eth0 || finish
mv /etc/libibverbs.d/siw.driver /tmp/siw.driver
check_no_output "without siw.driver ibv_devices does not list rsiw0 (ABI 1 is not rsiw's)" \
    '^[[:space:]]*rsiw0[[:space:]]' ibv_devices
mv /tmp/siw.driver /etc/libibverbs.d/siw.driver
check_output "with siw.driver ibv_devices lists rsiw0" '^[[:space:]]*rsiw0[[:space:]]' ibv_devices
check_output "ibv_devinfo -d rsiw0: transport iWARP (siw's provider)" 'transport:[[:space:]]+iWARP' ibv_devinfo -d rsiw0
dev_down siw rsiw0
finish
