#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build (or reuse) the rsiw test kernel for one flavour, cached outside the repo.
#
#   scripts/build-kernel.sh debug|perf     prints the cache directory on stdout
#
# The cache key is the kernel package version, the flavour, and a hash of the
# config fragments, this script and the toolchain versions, so nothing is rebuilt
# unless something that shapes the build changed.  An interrupted build resumes
# (make is incremental); a finished one is marked by "<dir>/.complete". The patches
# in qemu/kernel/patches/ are applied to the extracted source (part of the key too).
set -euo pipefail

flavour=${1:?usage: build-kernel.sh debug|perf}
here=$(cd "$(dirname "$0")/.." && pwd)
frags="$here/qemu/kernel"
[ -f "$frags/$flavour.config" ] || { echo "build-kernel: no fragment qemu/kernel/$flavour.config" >&2; exit 2; }

tarball=/usr/src/linux-source-6.12.tar.xz
[ -f "$tarball" ] || { echo "build-kernel: $tarball missing; run 'cargo xtask setup' (apt-get install linux-source-6.12)" >&2; exit 2; }
llvm=${RSIW_LLVM:--14}
pkgver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
# Patches to the test kernel (qemu/kernel/patches/*.patch, applied in name order).
patches=$(find "$frags/patches" -name '*.patch' 2>/dev/null | sort)
key=$( { echo "$pkgver $flavour $llvm"; cat "$frags/base.config" "$frags/$flavour.config" "$0" $patches;
         rustc --version; bindgen --version 2>/dev/null || true; "clang$llvm" --version | head -1; } | sha256sum | cut -c1-12)
cache=${RSIW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsiw}
dir="$cache/kernel/$pkgver-$flavour-$key"
src="$dir/linux"

if [ -f "$dir/.complete" ]; then
    echo "$dir"; exit 0
fi
mkdir -p "$dir"
log="$dir/build.log"
echo "build-kernel: building $flavour kernel $pkgver in $dir (log: $log)" >&2
if [ ! -f "$src/Makefile" ]; then
    rm -rf "$src" "$dir/extract"
    mkdir -p "$dir/extract"
    tar -C "$dir/extract" -xf "$tarball"
    # Patched before the move: a tree at "$src" is always a patched one.
    for p in $patches; do
        patch -d "$dir/extract/linux-source-6.12" -p1 --quiet --forward < "$p" ||
            { echo "build-kernel: $p does not apply to $pkgver" >&2; exit 1; }
    done
    mv "$dir/extract/linux-source-6.12" "$src"
    rmdir "$dir/extract"
fi
mk() { make -C "$src" LLVM="$llvm" "$@"; }
{
    if [ ! -f "$src/.config.rsiw" ]; then
        mk tinyconfig
        (cd "$src" && scripts/kconfig/merge_config.sh -m .config kernel/configs/kvm_guest.config \
            "$frags/base.config" "$frags/$flavour.config")
        mk olddefconfig
        cp "$src/.config" "$src/.config.rsiw"
    fi
    # Every option the fragments ask for must have survived olddefconfig.
    missing=0
    for f in "$frags/base.config" "$frags/$flavour.config"; do
        while IFS= read -r line; do
            case "$line" in CONFIG_*=n) opt=${line%=n}; grep -q "^$opt=" "$src/.config" && { echo "build-kernel: $opt is set, fragment says n"; missing=1; } ;;
                CONFIG_*) grep -qx "$line" "$src/.config" || { echo "build-kernel: '$line' did not survive olddefconfig"; missing=1; } ;; esac
        done < "$f"
    done
    [ $missing = 0 ] || exit 3
    mk -j"$(nproc)" bzImage modules
    rm -rf "$dir/modroot"
    mk INSTALL_MOD_PATH="$dir/modroot" modules_install
} >"$log" 2>&1 || { echo "build-kernel: kernel build failed; last lines of $log:" >&2; tail -n 30 "$log" >&2; exit 1; }
touch "$dir/.complete"
echo "$dir"
