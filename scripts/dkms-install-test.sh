#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The packages of `cargo xtask package` installed as a Debian 13 user installs them:
# `apt-get install ./rsiw-dkms_*.deb ./rsiw-provider_*.deb` in the trixie root of
# scripts/debian-root.sh (Debian's headers for 7.3.4+deb13-amd64, dkms, rustc, bindgen,
# gcc-14, linux-source-7.3). The root stays as it is: the install runs on an overlay
# of it that is made afresh each time, in a mount namespace of its own; only
# /var/lib/rsiw (the Rust build products rsiw-dkms makes, once per kernel release) is
# kept between runs, under the cache.
#
#   scripts/dkms-install-test.sh DEBDIR OUTDIR RELEASE [TREE]
#
# TREE: a tree dkms/rsiw-kbuild.sh made for RELEASE in the same root (the harness's KDIR
# of Debian's kernel, scripts/build-debian-kernel.sh). When /var/lib/rsiw has no
# prepared tree for RELEASE, it starts as hard links to TREE (rsiw-kbuild.sh replaces
# files, never writes into them), so the products are not made a second time;
# rsiw-kbuild.sh checks that tree as any it finds there (.config, products, symbols).
#
# DEBDIR holds the two .deb files. Writes to OUTDIR: preflight.log (rsiw-dkms installed
# on a root that lacks bindgen and linux-source-7.3 and has another rustc), install.log
# (apt's and dkms's output), dkms-status, and rsiw.ko as DKMS installed it under
# /lib/modules/RELEASE/updates/dkms/ (decompressed if DKMS compressed it like the
# kernel's own modules).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# = 3 ] || [ $# = 4 ] || { echo "usage: dkms-install-test.sh DEBDIR OUTDIR RELEASE [TREE]" >&2; exit 2; }
debs=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
release=$3
seed=${4:-}
root=$("$here/scripts/debian-root.sh")
cache=${RSIW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsiw}
dir="$cache/package-test"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
rm -rf "$out/rsiw.ko" "$out/dkms-status" "$out/preflight.log"
mkdir -p "$dir/merged" "$dir/var-lib-rsiw"
log="$out/install.log"
state="$dir/var-lib-rsiw/$release"
if [ -n "$seed" ] && [ -f "$seed/.rsiw-prepared" ] && [ ! -f "$state/linux/.rsiw-prepared" ]; then
    echo "dkms-install-test: /var/lib/rsiw/$release/linux from $seed (hard links)" >&2
    rm -rf "$state/linux" "$state/linux.seed"
    mkdir -p "$state"
    cp -al "$seed" "$state/linux.seed"
    mv "$state/linux.seed" "$state/linux"
fi

# First, a machine that lacks three things: no bindgen, no linux-source-7.3 tarball, a
# rustc of another version than the kernel's. Installing rsiw-dkms must fail there, and
# its output name each of them with the fix (the VM script checks preflight.log).
echo "dkms-install-test: rsiw-dkms on a root without bindgen and linux-source, with another rustc (log: $out/preflight.log)" >&2
rm -rf "$dir/upper" "$dir/work"
mkdir -p "$dir/upper" "$dir/work"
unshare --mount --propagation private -- sh -ec '
    root=$1; dir=$2; debs=$3
    m=$dir/merged
    mount -t overlay overlay -o "lowerdir=$root,upperdir=$dir/upper,workdir=$dir/work" "$m"
    mkdir -p "$m/tmp/rsiw-debs"
    mount --bind "$debs" "$m/tmp/rsiw-debs"
    mount -t proc proc "$m/proc"
    rm -f "$m/usr/bin/bindgen" "$m/usr/src/linux-source-7.3.tar.xz"
    mv "$m/usr/bin/rustc" "$m/usr/bin/rustc.real"
    printf "#!/bin/sh\n[ \"\$1\" = --version ] && exec echo \"rustc 1.90.0 (1159e78c4 2025-09-14)\"\nexec rustc.real \"\$@\"\n" >"$m/usr/bin/rustc"
    chmod 755 "$m/usr/bin/rustc"
    chroot "$m" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive sh -c "apt-get install -y /tmp/rsiw-debs/rsiw-dkms_*.deb" && rc=0 || rc=$?
    echo "apt-get install exit status $rc"
' sh "$root" "$dir" "$debs" >"$out/preflight.log" 2>&1 || true
rm -rf "$dir/upper" "$dir/work"
mkdir -p "$dir/upper" "$dir/work"

echo "dkms-install-test: apt-get install of the packages in an overlay of $root (log: $log)" >&2
rc=0
unshare --mount --propagation private -- sh -ec '
    root=$1; dir=$2; debs=$3; out=$4; release=$5
    m=$dir/merged
    mount -t overlay overlay -o "lowerdir=$root,upperdir=$dir/upper,workdir=$dir/work" "$m"
    mkdir -p "$m/var/lib/rsiw" "$m/tmp/rsiw-debs"
    mount --bind "$dir/var-lib-rsiw" "$m/var/lib/rsiw"
    mount --bind "$debs" "$m/tmp/rsiw-debs"
    mount -t proc proc "$m/proc"
    in_root() {
        chroot "$m" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
            DEBIAN_FRONTEND=noninteractive "$@"
    }
    set +e
    # As on a user'"'"'s machine, apt fetches what the packages need and the root lacks
    # (libibverbs1 for the provider).
    in_root sh -c "apt-get update && apt-get install -y /tmp/rsiw-debs/rsiw-dkms_*.deb /tmp/rsiw-debs/rsiw-provider_*.deb"
    rc=$?
    in_root dkms status > "$out/dkms-status" 2>&1
    set -e
    for f in "$m/lib/modules/$release/updates/dkms/rsiw.ko"*; do
        [ -f "$f" ] || continue
        case $f in
        *.xz) xz -dc "$f" > "$out/rsiw.ko" ;;
        *.zst) zstd -dc "$f" > "$out/rsiw.ko" ;;
        *.gz) gzip -dc "$f" > "$out/rsiw.ko" ;;
        *) cp "$f" "$out/rsiw.ko" ;;
        esac
        echo "dkms-install-test: installed by DKMS: ${f#"$m"}"
    done
    exit $rc
' sh "$root" "$dir" "$debs" "$out" "$release" >"$log" 2>&1 || rc=$?
if [ "$rc" != 0 ]; then
    echo "dkms-install-test: the install failed (exit $rc); last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
fi
if [ ! -f "$out/rsiw.ko" ]; then
    echo "dkms-install-test: apt-get succeeded but DKMS installed no rsiw.ko for $release; last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
fi
echo "dkms-install-test: $(cat "$out/dkms-status")" >&2
