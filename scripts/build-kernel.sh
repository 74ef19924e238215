#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build (or reuse) an rsiw test kernel for one line and flavour, cached outside
# the repo.
#
#   scripts/build-kernel.sh [--line 6.12|7.3] debug|perf    prints the cache directory
#
# 6.12 is Debian 12's linux-source-6.12, built on the host with clang 14 (LLVM=-14).
# 7.3 is Debian 13's linux-source-7.3 (trixie-backports, with Debian's patches),
# built in the trixie root of scripts/debian-root.sh with Debian's rustc 1.85.1,
# bindgen 0.71.1 and clang 19 (the LLVM of that rustc); clang, because 7.3's Rust
# support excludes KASAN on a gcc-built kernel. The configuration of either is
# tinyconfig + kernel/configs/kvm_guest.config + qemu/kernel/base.config +
# qemu/kernel/line-<line>.config + qemu/kernel/<flavour>.config.
#
# The cache key is the line, the kernel package version, the flavour, and a hash
# of the config fragments, this script, the patches and the toolchain versions, so
# nothing is rebuilt unless something that shapes the build changed. An
# interrupted build resumes (make is incremental); a finished one is marked by
# "<dir>/.complete". The patches in qemu/kernel/patches/ are applied to the
# extracted source of both lines (part of the key too).
set -euo pipefail

line=6.12
if [ "${1:-}" = --line ]; then line=${2:?usage: build-kernel.sh [--line 6.12|7.3] debug|perf}; shift 2; fi
flavour=${1:?usage: build-kernel.sh [--line 6.12|7.3] debug|perf}
here=$(cd "$(dirname "$0")/.." && pwd)
frags="$here/qemu/kernel"
[ -f "$frags/$flavour.config" ] || { echo "build-kernel: no fragment qemu/kernel/$flavour.config" >&2; exit 2; }
[ -f "$frags/line-$line.config" ] || { echo "build-kernel: unknown kernel line '$line' (no qemu/kernel/line-$line.config); use 6.12 or 7.3" >&2; exit 2; }

case $line in
6.12)
    tarball=/usr/src/linux-source-6.12.tar.xz
    [ -f "$tarball" ] || { echo "build-kernel: $tarball missing; run 'cargo xtask setup' (apt-get install linux-source-6.12)" >&2; exit 2; }
    llvm=${RSIW_LLVM:--14}
    pkgver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
    tools() { rustc --version; bindgen --version 2>/dev/null || true; "clang$llvm" --version | head -1; }
    run=()
    name="$pkgver-$flavour"
    ;;
7.3)
    root=$("$here/scripts/debian-root.sh")
    tarball=$root/usr/src/linux-source-7.3.tar.xz
    [ -f "$tarball" ] || { echo "build-kernel: $tarball missing in the trixie root; remove $(dirname "$root") and rerun" >&2; exit 2; }
    llvm=-19
    dq() { dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Package} ${Version}\n' "$@"; }
    pkgver=$(dq linux-source-7.3 | cut -d' ' -f2)
    tools() { dq rustc bindgen clang-19 lld-19 llvm-19; }
    run=("$here/scripts/in-debian-root.sh")
    name="7.3-$pkgver-$flavour"
    ;;
*) echo "build-kernel: unknown kernel line '$line'; use 6.12 or 7.3" >&2; exit 2 ;;
esac
fragments=("$frags/base.config" "$frags/line-$line.config" "$frags/$flavour.config")
# Patches to the test kernels (qemu/kernel/patches/*.patch, applied in name order).
patches=$(find "$frags/patches" -name '*.patch' 2>/dev/null | sort)
key=$( { echo "$line $pkgver $flavour $llvm"; cat "${fragments[@]}" "$0" $patches; tools; } | sha256sum | cut -c1-12)
cache=${RSIW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsiw}
dir="$cache/kernel/$name-$key"
src="$dir/linux"

if [ -f "$dir/.complete" ]; then
    echo "$dir"; exit 0
fi
mkdir -p "$dir"
log="$dir/build.log"
echo "build-kernel: building the $line $flavour kernel $pkgver in $dir (log: $log)" >&2
if [ ! -f "$src/Makefile" ]; then
    rm -rf "$src" "$dir/extract"
    mkdir -p "$dir/extract"
    tar -C "$dir/extract" -xf "$tarball"
    # Patched before the move: a tree at "$src" is always a patched one.
    for p in $patches; do
        patch -d "$dir/extract/linux-source-$line" -p1 --quiet --forward < "$p" ||
            { echo "build-kernel: $p does not apply to $line $pkgver" >&2; exit 1; }
    done
    mv "$dir/extract/linux-source-$line" "$src"
    rmdir "$dir/extract"
fi
mk() { "${run[@]}" make -C "$src" LLVM="$llvm" "$@"; }
{
    if [ ! -f "$src/.config.rsiw" ]; then
        mk tinyconfig
        "${run[@]}" sh -c 'cd "$1" && shift && scripts/kconfig/merge_config.sh -m .config "$@"' sh "$src" \
            kernel/configs/kvm_guest.config "${fragments[@]}"
        mk olddefconfig
        cp "$src/.config" "$src/.config.rsiw"
    fi
    # Every option the fragments ask for must have survived olddefconfig.
    missing=0
    for f in "${fragments[@]}"; do
        while IFS= read -r l; do
            case "$l" in CONFIG_*=n) opt=${l%=n}; grep -q "^$opt=" "$src/.config" && { echo "build-kernel: $opt is set, fragment says n"; missing=1; } ;;
                CONFIG_*) grep -qx "$l" "$src/.config" || { echo "build-kernel: '$l' did not survive olddefconfig"; missing=1; } ;; esac
        done < "$f"
    done
    [ $missing = 0 ] || exit 3
    mk -j"$(nproc)" bzImage modules
    rm -rf "$dir/modroot"
    mk INSTALL_MOD_PATH="$dir/modroot" modules_install
} >"$log" 2>&1 || { echo "build-kernel: kernel build failed; last lines of $log:" >&2; tail -n 30 "$log" >&2; exit 1; }
touch "$dir/.complete"
echo "$dir"
