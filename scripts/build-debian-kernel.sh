#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Debian 13's own backports kernel for rsiw, cached outside the repo:
#  - the Kbuild tree an out-of-tree Rust module builds against, made as a user's
#    rsiw-dkms makes it: dkms/rsiw-kbuild.sh in the trixie root of
#    scripts/debian-root.sh (the rustc and bindgen Debian built the kernel with)
#    prepares Debian's linux-source-7.3 with the headers' .config, so that the Rust
#    build products the headers package lacks (libkernel.rmeta, libmacros.so, the
#    bindings) match the kernel's; Module.symvers, utsrelease.h and kernel.release
#    are the headers' own, so modpost checks every symbol against Debian's kernel;
#  - Debian's vmlinuz and modules (linux-image-<release>), unpacked, modules
#    decompressed so that the VM's modprobe takes them.
#
#   scripts/build-debian-kernel.sh      prints the cache directory on stdout:
#       <dir>/linux (KDIR), <dir>/vmlinuz, <dir>/modroot/lib/modules/<release>
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
kver=7.3.4+deb13
release=$kver-amd64
root=$("$here/scripts/debian-root.sh")
# The key: the root (its packages), and the steps' version below, raised whenever
# what this script or dkms/rsiw-kbuild.sh does to the tree changes.
steps=1
key=$(echo "$root $steps" | sha256sum | cut -c1-12)
cache=${RSIW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsiw}
dir="$cache/kernel/debian-$kver-$key"
# The modules the VM gets (see below).
want='^kernel/(drivers/infiniband/(core|sw|ulp)|drivers/nvme/(host|target)|net/sunrpc|fs/nfs|fs/nfsd|fs/lockd|fs/nfs_common|net/sched|crypto|lib|drivers/net/(virtio_net|veth|dummy|tun|net_failover)|net/core/failover)'
if [ -f "$dir/.complete" ] && [ "$(cat "$dir/modroot.want" 2>/dev/null)" = "$want" ]; then
    echo "$dir"; exit 0
fi
mkdir -p "$dir"
log="$dir/build.log"
echo "build-debian-kernel: preparing Debian's $release in $dir (log: $log)" >&2

in_root() { "$here/scripts/in-debian-root.sh" "$@"; }

# From here on the log gets everything; a failing step ends the script (set -e)
# with its log's last lines on stderr.
exec 3>&1 4>&2 >"$log" 2>&1
trap 'echo "build-debian-kernel: failed; last lines of $log:" >&4; tail -n 30 "$log" >&4' ERR
{
    # The tree: what rsiw-dkms's dkms/rsiw-kbuild.sh makes on a user's machine (and
    # the package install test reuses), here in the cache.
    in_root env RSIW_TREE="$dir/linux" sh "$here/dkms/rsiw-kbuild.sh" kdir "$release"

    # Debian's kernel image and the modules the VM needs (RDMA, NFS, NVMe, the
    # NIC, qdiscs, crypto) with what they depend on; all of Debian's modules would
    # not fit a test VM's memory. A changed list makes the set again.
    if [ ! -f "$dir/vmlinuz" ] || [ "$(cat "$dir/modroot.want" 2>/dev/null)" != "$want" ]; then
        rm -rf "$dir/debs" "$dir/unpacked"
        mkdir -p "$dir/debs"
        in_root sh -ec "apt-get update -q >/dev/null && cd '$dir/debs' &&
            apt-get download -q linux-image-$release \$(apt-cache depends linux-image-$release |
                sed -n 's/^ *\\(Pre\\)\\?Depends: \\(linux-\\(binary\\|modules\\)-[^ ]*\\)\$/\\2/p')"
        for d in "$dir"/debs/*.deb; do dpkg-deb -x "$d" "$dir/unpacked"; done
        # Decompressed: busybox's modprobe takes plain .ko files.
        m="$dir/unpacked/usr/lib/modules/$release"
        rm -rf "$dir/modroot"
        mkdir -p "$dir/modroot/lib/modules/$release"
        # The package has no modules.dep (its postinst runs depmod): make one.
        mkdir -p "$dir/unpacked/lib"
        ln -sfn ../usr/lib/modules "$dir/unpacked/lib/modules"
        depmod -b "$dir/unpacked" "$release"
        awk -F: -v want="$want" '
            { deps[$1] = $2 }
            $1 ~ want { todo[$1] = 1 }
            END {
                while (length(todo)) for (k in todo) {
                    delete todo[k]
                    if (k in done) continue
                    done[k] = 1; print k
                    n = split(deps[k], d, " ")
                    for (i = 1; i <= n; i++) if (!(d[i] in done)) todo[d[i]] = 1
                }
            }' "$m/modules.dep" | while read -r ko; do
            mkdir -p "$dir/modroot/lib/modules/$release/$(dirname "$ko")"
            case $ko in
            *.xz) xz -dc "$m/$ko" > "$dir/modroot/lib/modules/$release/${ko%.xz}" ;;
            *) cp "$m/$ko" "$dir/modroot/lib/modules/$release/$ko" ;;
            esac
        done
        cp "$dir/unpacked/usr/lib/modules/$release/vmlinuz" "$dir/vmlinuz.tmp" 2>/dev/null ||
            cp "$dir/unpacked/boot/vmlinuz-$release" "$dir/vmlinuz.tmp"
        rm -rf "$dir/unpacked"
        mv "$dir/vmlinuz.tmp" "$dir/vmlinuz"
        echo "$want" > "$dir/modroot.want"
    fi
}
touch "$dir/.complete"
for old in "$cache"/kernel/debian-"$kver"-*; do
    [ "$old" = "$dir" ] || rm -rf "$old"
done
echo "$dir" >&3
