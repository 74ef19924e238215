#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Make (or reuse) a Debian 13 (trixie) root file system with the tools Debian's
# 7.3 backports kernel was built with (rustc 1.85.1, bindgen 0.71.1, gcc-14) and
# the kernel's source and headers packages, cached outside the repo.
#
#   scripts/debian-root.sh            prints the root's directory on stdout
#
# The cache key is the package list and the mirror, so a changed list makes a new
# root (and removes the older ones). Needs root and mmdebstrap (`cargo xtask setup`
# installs it).
set -euo pipefail

kver=7.3.4+deb13
pkgs=(rustc rust-src rustfmt bindgen gcc make flex bison bc libelf-dev libssl-dev python3
      xz-utils cpio kmod libclang-dev clang lld llvm dwarves pahole dkms dpkg-dev debhelper openssl
      linux-source-7.3 "linux-headers-$kver-amd64")
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
mirror=${RSIW_DEBIAN_MIRROR:-${mirror:-http://deb.debian.org/debian}}
key=$(echo "${pkgs[*]} $mirror" | sha256sum | cut -c1-12)
cache=${RSIW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsiw}
dir="$cache/debian/trixie-$key"
if [ -f "$dir/.complete" ]; then
    echo "$dir/root"; exit 0
fi
# Two builds may ask for the root at once (the 7.3 kernel and Debian's tree are made
# side by side): one makes it, the other waits for it.
mkdir -p "$cache/debian"
exec 9>"$cache/debian/.lock"
flock 9
if [ -f "$dir/.complete" ]; then
    echo "$dir/root"; exit 0
fi
command -v mmdebstrap >/dev/null ||
    { echo "debian-root: mmdebstrap missing; run 'cargo xtask setup' (apt-get install mmdebstrap)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "debian-root: needs root (mmdebstrap makes device nodes)" >&2; exit 2; }
rm -rf "$dir"
mkdir -p "$dir"
log="$dir/mmdebstrap.log"
echo "debian-root: making a trixie root in $dir (log: $log)" >&2
inc=$(IFS=,; echo "${pkgs[*]}")
mmdebstrap --variant=apt --include="$inc" trixie "$dir/root" \
    "deb $mirror trixie main" "deb $mirror trixie-backports main" >"$log" 2>&1 ||
    { echo "debian-root: mmdebstrap failed; last lines of $log:" >&2; tail -n 20 "$log" >&2; exit 1; }
touch "$dir/.complete"
for old in "$cache"/debian/trixie-*; do
    [ "$old" = "$dir" ] || rm -rf "$old"
done
echo "$dir/root"
