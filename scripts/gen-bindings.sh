#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Generate rsiw's own kernel bindings with the target kernel's exact bindgen
# command line (saved by Kbuild next to the kernel's bindings), but with our
# input header, our output file and our allowlists.
#
# Every type the kernel crate already generated is blocklisted here, so our
# bindings refer to kernel::bindings::<T> instead of defining a second,
# incompatible copy; only the types the kernel crate lacks (ib_*, rdma_*, ...)
# are emitted. The list is read from the tree itself, so this works with any
# Rust-enabled build tree whatever its configuration.
#
# usage: gen-bindings.sh <kernel build tree> <input header> <output .rs>
set -eu

kdir=$1
header=$2
out=$3

cmdfile="$kdir/rust/bindings/.bindings_generated.rs.cmd"
kernel_rs="$kdir/rust/bindings/bindings_generated.rs"
if [ ! -r "$cmdfile" ] || [ ! -r "$kernel_rs" ]; then
	echo "gen-bindings: $cmdfile missing: build the kernel with CONFIG_RUST=y first" >&2
	exit 1
fi

if ! command -v bindgen >/dev/null 2>&1; then
	echo "gen-bindings: bindgen not found: cargo install bindgen-cli --version 0.69.5 --locked" >&2
	exit 1
fi

# The saved command is "bindgen <header> <opts> -o <out> -- <clang flags> ; sed ...".
cmd=$(sed -n 's/^savedcmd_rust\/bindings\/bindings_generated\.rs := //p' "$cmdfile")
cmd=${cmd%%; sed*}
case "$cmd" in
bindgen\ *) ;;
*)
	echo "gen-bindings: unexpected command in $cmdfile" >&2
	exit 1
	;;
esac
bindgen_opts=${cmd%% -- *}
clang_opts=${cmd#* -- }
# 7.x derives pin-init's MaybeZeroable for every type; rsiw's own types need no
# derive (and 6.12 has none), so one source builds against both. Kbuild saves a
# `#` of the command line as `$(pound)`.
bindgen_opts=$(printf '%s' "$bindgen_opts" |
	sed -e 's# rust/bindings/bindings_helper\.h # #' \
	    -e 's# -o rust/bindings/bindings_generated\.rs##' \
	    -e 's# --with-derive-custom-\(struct\|union\) [^ ]*##g' \
	    -e 's|\$(pound)|#|g')
clang_opts=$(printf '%s' "$clang_opts" | sed -e 's#-Wp,-MMD,[^ ]*##')

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Names the kernel crate defines, in regex chunks small enough for one argv
# string (MAX_ARG_STRLEN is 128 KiB). Anonymous `_bindgen_ty_N` names are
# numbered per run and must not be shared.
# Types the kernel saw only as forward declarations (`_unused: [u8; 0]`) are
# not shared either: embedding one by value would get its size wrong.
awk '/^pub struct [A-Za-z0-9_]+ \{$/ { name = $3; next }
     name != "" && /^    _unused: \[u8; 0\],$/ { print name }
     { name = "" }' "$kernel_rs" | sort -u >"$tmp/opaque"
grep -oE '^pub (struct|union|enum|type) [A-Za-z0-9_]+' "$kernel_rs" |
	awk '{print $3}' | grep -vE '^_bindgen_ty_[0-9]+$' | sort -u |
	comm -23 - "$tmp/opaque" >"$tmp/names"
awk -v q="'" '
	{ n = n (n == "" ? "" : "|") $0 }
	length(n) > 60000 { print "--blocklist-type " q "(" n ")" q; n = "" }
	END { if (n != "") print "--blocklist-type " q "(" n ")" q }
' "$tmp/names" >"$tmp/blocklist"

cd "$kdir"
# shellcheck disable=SC2046,SC2086
eval "$bindgen_opts" "'$header'" -o "'$tmp/out.rs'" \
	$(tr '\n' ' ' <"$tmp/blocklist") \
	--allowlist-type "'(rsiw|ib|iw|iwcm|rdma|uverbs)_.*|netdev_cmd'" \
	--allowlist-function "'(rsiw_shim|_?ib|rdma|iw|iwcm)_.*'" \
	--allowlist-var "'(IB|RDMA|IW|RSIW)_.*'" \
	--blocklist-function "'rsiw_rust_.*'" \
	-- "$clang_opts"
sed -Ei 's/pub const RUST_CONST_HELPER_([a-zA-Z0-9_]*)/pub const \1/g' "$tmp/out.rs"
mv "$tmp/out.rs" "$out"
