#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Regenerates the uapi header include/vgpu.h from src/uapi.rs with cbindgen.
#
#   scripts/gen-uapi.sh [OUTPUT]     (default: include/vgpu.h)
#
# cbindgen 0.29 exports the integer constants but skips string constants
# (`&str`), so this script writes those itself, from the same file, as
# `#define NAME "value"` with their docs, and hands them to cbindgen as
# `after_includes`. This relies on the rules stated at the top of
# src/uapi.rs (one-line `pub const`s, no `"` or `\` in strings) and fails
# if they are broken, if cbindgen warns about anything else, or if a
# constant is missing from the output. The cbindgen version is pinned
# (VGPU_CBINDGEN_VERSION, scripts/env.sh): others format differently, and
# newer ones emit strings themselves.
#
# The test userspace/logic/tests/uapi.rs runs this into a temporary file
# and fails if include/vgpu.h differs.
set -euo pipefail

. "$(dirname "$0")/env.sh"
top=$VGPU_TOP
out=${1:-$top/include/vgpu.h}
src=$top/src/uapi.rs
cfg=$top/include/cbindgen.toml
want=$VGPU_CBINDGEN_VERSION

die() { echo "gen-uapi: $*" >&2; exit 1; }

cbindgen=${CBINDGEN:-}
if [ -z "$cbindgen" ]; then
    cbindgen=$(command -v cbindgen || true)
    [ -n "$cbindgen" ] || cbindgen=$HOME/.cargo/bin/cbindgen
fi
[ -x "$cbindgen" ] || die "cbindgen not found (scripts/setup-toolchain.sh installs it, or set CBINDGEN)"
ver=$("$cbindgen" --version 2>/dev/null | head -n 1 || true)
case $ver in
    "cbindgen $want" | "cbindgen $want".*) ;;
    *) die "${ver:-no cbindgen version} from $cbindgen, cbindgen $want.x needed (scripts/setup-toolchain.sh installs it; the output differs between versions)" ;;
esac

# The string constants, as C, with their docs.
strings=$(awk '
    function fail(msg) { print "gen-uapi: src/uapi.rs:" NR ": " msg > "/dev/stderr"; bad = 1; exit 1 }
    /^\/\/\/ ?/ { sub(/^\/\/\/ ?/, ""); doc[n++] = $0; next }
    /^pub const [A-Z0-9_]+: &str = "[^"\\]*";$/ {
        name = $3; sub(/:$/, "", name)
        value = $0; sub(/^[^"]*/, "", value); sub(/;$/, "", value)
        if (n == 0) fail(name " has no /// docs")
        print "/**"
        for (i = 0; i < n; i++) print (doc[i] == "" ? " *" : " * " doc[i])
        print " */"
        print "#define " name " " value
        print ""
        n = 0; next
    }
    /^pub const .*&str/ { fail("a string constant not of the form pub const NAME: &str = \"...\";") }
    { n = 0 }
    END { if (bad) exit 1 }
' "$src") || die "cannot read the string constants of $src"
case $strings in *"'''"*) die "a string constant contains '''" ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# after_includes first, so it stays a top-level key whatever tables follow.
{ printf "after_includes = '''\n%s'''\n" "$strings"; cat "$cfg"; } > "$tmp/cbindgen.toml"

"$cbindgen" --quiet --config "$tmp/cbindgen.toml" --output "$tmp/vgpu.h" "$src" 2> "$tmp/err" || {
    cat "$tmp/err" >&2; die "cbindgen failed"; }
# The only warnings expected are the skipped strings, written above.
if grep -v -E '^WARN: Skip [a-z_]+::[A-Z0-9_]+ - \(Unsupported literal expression\. Lit::Str ' "$tmp/err" | grep -q .; then
    cat "$tmp/err" >&2; die "unexpected cbindgen output"
fi

# Every constant of src/uapi.rs, and nothing else, is #defined once.
want_names=$(sed -n -E 's/^pub const ([A-Z0-9_]+):.*/\1/p' "$src" | sort)
got_names=$(sed -n -E 's/^#define ([A-Z0-9_]+) .*/\1/p' "$tmp/vgpu.h" | sort)
[ "$want_names" = "$got_names" ] || die "constants in src/uapi.rs and the header differ:
$(diff <(echo "$want_names") <(echo "$got_names") || true)"

mv "$tmp/vgpu.h" "$out.tmp.$$"
mv "$out.tmp.$$" "$out"
