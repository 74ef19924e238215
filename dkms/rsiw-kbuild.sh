#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# rsiw's DKMS build for one kernel (dkms.conf's MAKE), and its preflight.
#
# A distribution's linux-headers package has the kernel's .config and Module.symvers
# but (Debian's, for one) not the Rust build products an out-of-tree Rust module
# compiles against: rust/libkernel.rmeta, libmacros.so, libcore.rmeta, the bindings.
# This script makes them from the kernel's own source (Debian: linux-source-<x.y>)
# and the headers' .config, with the rustc and bindgen the kernel was built with,
# once per kernel release, under /var/lib/rsiw/<release>/linux; then it builds rsiw.ko
# against that tree. Headers that carry the products are used as they are.
#
#   rsiw-kbuild.sh check RELEASE            the preflight: one line per missing thing,
#                                           with its fix; exit 1 if anything is missing
#   rsiw-kbuild.sh kdir RELEASE             preflight, make (or reuse) the tree, print it
#   rsiw-kbuild.sh build RELEASE [MAKEARG...]  the above, then `make KDIR=<tree>` here
#
# RSIW_MODULES_DIR (/lib/modules), RSIW_SRC_DIR (/usr/src) and RSIW_STATE_DIR
# (/var/lib/rsiw) move the places it reads and writes (its tests use them); RSIW_TREE,
# an absolute path, puts the tree elsewhere than <state>/<release>/linux (rsiw's test
# harness keeps it in its kernel cache); its lock and scratch files are beside it.
#
# A tree found there is used when it was made for this kernel: its .rsiw-prepared, the
# headers' .config, the products (else it is made again), and every Rust symbol of the
# headers' Module.symvers defined by its rust/*.o (checked at every run). A tree of hard
# links to another one made by this script is fine: files are replaced, never written
# into.
set -eu

modules=${RSIW_MODULES_DIR:-/lib/modules}
srcdir=${RSIW_SRC_DIR:-/usr/src}
state=${RSIW_STATE_DIR:-/var/lib/rsiw}

usage() { echo "usage: rsiw-kbuild.sh check|kdir|build RELEASE [MAKEARG...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 rel=$2
shift 2
case $cmd in check|kdir|build) ;; *) usage ;; esac

hdr=$modules/$rel/build
config=$hdr/.config
tree=${RSIW_TREE:-$state/$rel/linux}
work=${tree%/*}
# x.y of the release (7.3.4+deb13-amd64: 7.3): Debian's source package is linux-source-x.y.
line=$(echo "$rel" | sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p')
source_tar=$srcdir/linux-source-$line.tar.xz

problems=0
# problem TEXT: one line of the preflight.
problem() {
    echo "rsiw: $rel: $*" >&2
    problems=$((problems + 1))
}
# cfg NAME: NAME's value in the kernel's .config, quotes removed.
cfg() { sed -n "s/^$1=\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" "$config" | head -n 1; }
# Debian's package of a tool, for the fix (gcc-14 for x86_64-linux-gnu-gcc-14).
pkg_of() {
    case $1 in
    *-gcc-[0-9]*) echo "gcc-${1##*-gcc-}" ;;
    gcc-[0-9]*) echo "$1" ;;
    *) echo "$1" ;;
    esac
}
# The products an out-of-tree Rust module builds against are in DIR.
has_products() {
    [ -f "$1/rust/libkernel.rmeta" ] && [ -f "$1/rust/libmacros.so" ] &&
        [ -f "$1/rust/bindings/bindings_generated.rs" ]
}

preflight() {
    if [ ! -f "$config" ]; then
        problem "no kernel headers ($config is missing): apt install linux-headers-$rel"
        return
    fi
    if [ "$(cfg CONFIG_RUST)" != y ]; then
        problem "CONFIG_RUST is off in $config: rsiw is a Rust module and cannot be built for this kernel; run one built with Rust (Debian 13: apt install -t trixie-backports linux-image-amd64 linux-headers-amd64)"
        return
    fi
    case $(cfg CONFIG_INFINIBAND) in
    y | m) ;;
    *) problem "CONFIG_INFINIBAND is off in $config: rsiw needs the kernel's RDMA core; run a kernel with CONFIG_INFINIBAND=m" ;;
    esac
    want_rustc=$(cfg CONFIG_RUSTC_VERSION_TEXT)
    if ! command -v rustc >/dev/null 2>&1; then
        problem "rustc is not installed; the kernel was built with '$want_rustc': apt install rustc rust-src (Debian 13's rustc is the one its backports kernel was built with)"
    else
        have_rustc=$(rustc --version 2>/dev/null || true)
        if [ "$have_rustc" != "$want_rustc" ]; then
            problem "rustc is '$have_rustc' but the kernel was built with '$want_rustc' (CONFIG_RUSTC_VERSION_TEXT; rustc reads only its own version's metadata): install that rustc with its rust-src and put it first in PATH (Debian 13: apt install rustc/trixie rust-src/trixie)"
        else
            sysroot=$(rustc --print sysroot 2>/dev/null || true)
            [ -f "$sysroot/lib/rustlib/src/rust/library/core/src/lib.rs" ] ||
                problem "rust-src is missing for $have_rustc ($sysroot/lib/rustlib/src/rust/library): apt install rust-src"
        fi
    fi
    want_bindgen=$(cfg CONFIG_BINDGEN_VERSION_TEXT)
    if ! command -v bindgen >/dev/null 2>&1; then
        problem "bindgen is not installed${want_bindgen:+; the kernel was built with '$want_bindgen'}: apt install bindgen"
    elif [ -n "$want_bindgen" ]; then
        have_bindgen=$(bindgen --version 2>/dev/null || true)
        [ "$have_bindgen" = "$want_bindgen" ] ||
            problem "bindgen is '$have_bindgen' but the kernel was built with '$want_bindgen' (CONFIG_BINDGEN_VERSION_TEXT): install that bindgen (Debian 13: apt install bindgen/trixie)"
    fi
    if [ "$(cfg CONFIG_CC_IS_GCC)" = y ]; then
        cc=$(cfg CONFIG_CC_VERSION_TEXT)
        cc=${cc%% *}
        command -v "$cc" >/dev/null 2>&1 ||
            problem "$cc is not installed; the kernel was built with it (CONFIG_CC_VERSION_TEXT): apt install $(pkg_of "$cc")"
    fi
    if has_products "$hdr" || [ -f "$tree/.rsiw-prepared" ]; then
        return
    fi
    # The products must be made from the kernel's source.
    if [ ! -f "$source_tar" ]; then
        problem "the headers lack the Rust build products an out-of-tree Rust module compiles against (rust/libkernel.rmeta, libmacros.so, the bindings), and linux-source-$line is not installed to make them: apt install linux-source-$line"
        return
    fi
    # Debian: the source must be the headers' version (7.3.4-1~bpo13+1 for both).
    if command -v dpkg-query >/dev/null 2>&1; then
        hv=$(dpkg-query -W -f '${Version}' "linux-headers-$rel" 2>/dev/null || true)
        sv=$(dpkg-query -W -f '${Version}' "linux-source-$line" 2>/dev/null || true)
        [ -z "$hv" ] || [ -z "$sv" ] || [ "$hv" = "$sv" ] ||
            problem "linux-source-$line is $sv but linux-headers-$rel is $hv: the Rust products must come from the kernel's own source: apt install linux-source-$line=$hv"
    fi
    for t in make flex bison bc xz nm; do
        command -v "$t" >/dev/null 2>&1 || case $t in
        xz) problem "xz is not installed (it unpacks linux-source-$line): apt install xz-utils" ;;
        nm) problem "nm is not installed (it checks the products against Module.symvers): apt install binutils" ;;
        *) problem "$t is not installed (making the Rust products from linux-source-$line needs it): apt install $t" ;;
        esac
    done
}

preflight
if [ "$problems" -gt 0 ]; then
    echo "rsiw: $rel: $problems thing(s) missing above; rsiw.ko is not built for this kernel" >&2
    exit 1
fi
[ "$cmd" = check ] && exit 0

# log TEXT: progress, on stderr (DKMS keeps it in make.log).
log() { echo "rsiw-kbuild: $*" >&2; }

make_tree() {
    mkdir -p "$work"
    # One build per release at a time (DKMS may build for two kernels at once).
    exec 9>"$work/.lock"
    command -v flock >/dev/null 2>&1 && flock 9
    cc=$(cfg CONFIG_CC_VERSION_TEXT)
    ccarg=
    [ "$(cfg CONFIG_CC_IS_GCC)" = y ] && ccarg=CC=${cc%% *}
    if [ -f "$tree/.rsiw-prepared" ]; then
        if ! cmp -s "$config" "$tree/.config"; then
            log "$tree was prepared with another .config than $config: making it again"
            rm -f "$tree/.rsiw-prepared"
        elif ! has_products "$tree"; then
            log "$tree lacks the Rust build products: making it again"
            rm -f "$tree/.rsiw-prepared"
        fi
    fi
    if [ ! -f "$tree/.rsiw-prepared" ]; then
        log "making the Rust build products for $rel from $source_tar in $tree (once per kernel; several minutes)"
        rm -rf "$tree" "$work/extract"
        mkdir -p "$work/extract"
        tar -C "$work/extract" -xf "$source_tar"
        mv "$work/extract/linux-source-$line" "$tree"
        rmdir "$work/extract"
        cp "$config" "$tree/.config"
        make -C "$tree" $ccarg olddefconfig >&2
        if ! cmp -s "$config" "$tree/.config"; then
            diff "$config" "$tree/.config" | head -n 20 >&2 || true
            log "olddefconfig changed the kernel's .config (the lines above): this rustc, bindgen or compiler is not the one the kernel was built with"
            exit 1
        fi
        jobs=$(nproc 2>/dev/null || echo 1)
        make -C "$tree" $ccarg -j"$jobs" prepare >&2
        make -C "$tree" $ccarg -j"$jobs" modules_prepare >&2
        touch "$tree/.rsiw-prepared"
    fi
    # The headers' own identity and symbol list: the module's vermagic and modpost's
    # checks are the installed kernel's. Replaced, not overwritten: the tree's files
    # may be hard links to another tree's.
    for f in Module.symvers include/generated/utsrelease.h include/config/kernel.release; do
        cmp -s "$hdr/$f" "$tree/$f" && continue
        cp "$hdr/$f" "$tree/$f.rsiw-new"
        mv "$tree/$f.rsiw-new" "$tree/$f"
    done
    # Every Rust symbol vmlinux exports must be defined by the rebuilt objects: their
    # mangled names carry each crate's hash, so this holds when the products match.
    need=$(awk '$2 ~ /^_R/ && $3 == "vmlinux" {print $2}' "$tree/Module.symvers" | sort -u)
    have=$(for o in "$tree"/rust/*.o; do nm --defined-only "$o" 2>/dev/null; done |
        awk '$3 ~ /^_R/ {print $3}' | sort -u)
    printf '%s\n' "$have" >"$work/have"
    missing=$(printf '%s\n' "$need" | grep . | comm -23 - "$work/have" | wc -l)
    rm -f "$work/have"
    if [ "$missing" != 0 ]; then
        log "$missing Rust symbols of the kernel's Module.symvers are not in the rebuilt products: the toolchain differs from the kernel's; remove $tree after fixing it"
        exit 1
    fi
    log "$(printf '%s\n' "$need" | grep -c .) Rust symbols of $rel's Module.symvers match the products in $tree"
}

if has_products "$hdr"; then
    kdir=$hdr
else
    make_tree
    kdir=$tree
fi
if [ "$cmd" = kdir ]; then
    echo "$kdir"
    exit 0
fi
exec make KDIR="$kdir" "$@"
