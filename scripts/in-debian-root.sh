#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs a command in the trixie root of scripts/debian-root.sh (Debian's rustc,
# bindgen and gcc for its 7.3 kernel), with the rsiw cache and the repository
# mounted at the same paths as outside, in a mount namespace of its own: nothing
# stays mounted when the command ends, and paths mean the same in and out.
#
#   scripts/in-debian-root.sh [-C DIR] CMD [ARG...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cwd=$PWD
if [ "${1:-}" = -C ]; then cwd=$2; shift 2; fi
[ $# -gt 0 ] || { echo "usage: in-debian-root.sh [-C DIR] CMD [ARG...]" >&2; exit 2; }
root=$("$here/scripts/debian-root.sh")
cache=${RSIW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsiw}
mkdir -p "$cache"
exec unshare --mount --propagation private -- sh -ec '
    root=$1; cache=$2; repo=$3; cwd=$4; shift 4
    for d in "$cache" "$repo"; do
        mkdir -p "$root$d"
        mount --bind "$d" "$root$d"
    done
    mount -t proc proc "$root/proc"
    exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"
' sh "$root" "$cache" "$here" "$cwd" "$@"
