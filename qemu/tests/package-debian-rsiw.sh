#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rsiw-kernels: debian-7.3
# rsiw-image: package
# rsiw-timeout: 600
# The packages on Debian's own kernel. On the host, `apt-get install ./rsiw-dkms_*.deb
# ./rsiw-provider_*.deb` in a trixie root with Debian's headers for this kernel made
# rsiw.ko through DKMS (scripts/dkms-install-test.sh); the image part `package` brings
# that rsiw.ko (from the root's /lib/modules/<release>/updates/dkms/) and the provider's
# .deb, and the output of the same install on a root lacking bindgen, linux-source-7.3
# and Debian's rustc (the preflight's lines). Here the image's own rsiw.ko and provider
# are removed, the DKMS-built module goes where DKMS put it, the provider is installed
# from its .deb with (busybox's) dpkg, and then: modprobe rsiw, rdma link add,
# ibv_devinfo, rping and ib_write_bw -R on rsiw0.
. /rsiw/lib.sh
setup_net
P=/rsiw/package
rel=$(uname -r)
mods=/lib/modules/$rel
# The release as an extended regex (its `+` and dots literal).
relre=$(printf '%s' "$rel" | sed 's/[.+]/\\&/g')

# On a root lacking three things, installing rsiw-dkms failed naming each with its fix.
# preflight: the preflight's lines and apt's exit status from that install.
preflight() { grep -E '^(rsiw: |apt-get install exit status)' $P/preflight.log; }
check_output "preflight: another rustc than the kernel's, named with the fix" "^rsiw: $relre: rustc is 'rustc 1.90.0 .*' but the kernel was built with 'rustc 1.85.1 .*install that rustc" preflight
check_output "preflight: bindgen missing, named with the fix" "^rsiw: $relre: bindgen is not installed.*'bindgen 0.71.1': apt install bindgen\$" preflight
check_output "preflight: no Rust products and no linux-source, named with the fix" "^rsiw: $relre: the headers lack the Rust build products.*apt install linux-source-7.3\$" preflight
check_output "preflight: exactly those three" "^rsiw: $relre: 3 thing" preflight
check_output "preflight: the package's configuration failed" "^apt-get install exit status [1-9]" preflight

if [ ! -s $P/rsiw.ko ]; then
    fail "the DKMS-built rsiw.ko is in the image" "no $P/rsiw.ko"
    finish
fi
echo "dkms status in the trixie root: $(cat $P/dkms-status)"
check_output "DKMS built and installed rsiw for $rel" "^rsiw/.*, $relre, x86_64: installed" cat $P/dkms-status
# sign-file appends this marker: DKMS signed the module with its own key (not enrolled in
# this kernel, so the load below is tainted, not refused: CONFIG_MODULE_SIG_FORCE is off).
check_output "the DKMS-built rsiw.ko carries a module signature" '~Module signature appended~' tail -c 28 $P/rsiw.ko

# Nothing of the image's own build may serve what follows.
rm -f $mods/extra/rsiw.ko /usr/lib/x86_64-linux-gnu/libibverbs/librsiw-rdmav34.so /etc/libibverbs.d/rsiw.driver
mkdir -p $mods/updates/dkms
cp $P/rsiw.ko $mods/updates/dkms/rsiw.ko
check "depmod" depmod
check_output "modules.dep: rsiw is the DKMS one" "^updates/dkms/rsiw.ko:" cat $mods/modules.dep

# busybox's dpkg: an empty database, dependencies not checked (the user space is the host's
# own rdma-core, which the provider's Depends name).
mkdir -p /var/lib/dpkg/info
: > /var/lib/dpkg/status
check "dpkg -i rsiw-provider" dpkg -i --force-depends $P/rsiw-provider_*.deb
check_output "dpkg lists rsiw-provider installed" '^ii  rsiw-provider' dpkg -l
check "the provider is in the libibverbs directory" test -s /usr/lib/x86_64-linux-gnu/libibverbs/librsiw-rdmav34.so
check_output "its driver file" '^driver rsiw$' cat /etc/libibverbs.d/rsiw.driver

dmesg -c > /dev/null
step "modprobe rsiw" modprobe rsiw || finish
check_output "the kernel notes the unenrolled signature (loads tainted, not refused)" 'module verification failed' dmesg
step "rdma link add rsiw0 type rsiw netdev eth0" rdma link add rsiw0 type rsiw netdev eth0 || finish
check_output "ibv_devinfo -d rsiw0: transport iWARP" 'transport:[[:space:]]+iWARP' ibv_devinfo -d rsiw0
check_output "ibv_devinfo -d rsiw0: port PORT_ACTIVE" 'state:[[:space:]]+PORT_ACTIVE' ibv_devinfo -d rsiw0

COUNT=20
timeout 120 rping -s -a 10.0.2.15 -C $COUNT -v -V > /tmp/rping-server.log 2> /tmp/rping-server.err &
server=$!
step "rping server listens" wait_rdma_listen
check "rping -c -V: $COUNT pings over rsiw0" timeout 120 rping -c -a 10.0.2.15 -C $COUNT -V
wait $server
src=$?
if [ $src -eq 0 ]; then pass "rping server exits 0"; else fail "rping server exits 0" "exit $src: $(tail -n 2 /tmp/rping-server.err)"; fi
check_output "rping server: $COUNT pings, every payload as rping builds it" "^ok $COUNT\$" rping_payloads_ok 'server ping data: ' /tmp/rping-server.log
if line=$(perftest_run ib_write_bw rsiw0 65536 200 18515 -R); then
    echo "ib_write_bw -R: $line"
    pass "ib_write_bw -R on rsiw0 (64 KiB, 200 iterations)"
else
    fail "ib_write_bw -R on rsiw0 (64 KiB, 200 iterations)" "$line"
fi

step "rdma link delete rsiw0" rdma link delete rsiw0
step "rmmod rsiw" rmmod rsiw
finish
