#!/usr/bin/env bash
# Download Debian packages into $VGPU_CACHE/debs/ without touching the host's
# apt configuration, and print the .deb paths, one a line.
#
#   scripts/fetch-debs.sh SUITE PKG[=VERSION]...
#   scripts/fetch-debs.sh trixie nvidia-open-kernel-source=550.163.01-2
#
# SUITE is trixie (contrib, non-free), bookworm (contrib, non-free) or
# trixie-backports (main: Debian's stock kernel, scripts/stock-kernel.sh). apt
# runs on a private sources file, list dir and cache under
# $VGPU_CACHE/apt/SUITE/, so the host's sources, lists and pins are neither
# read nor changed. The packages are downloaded, never installed: unpack one
# with `dpkg-deb -x`. A cached .deb of the asked version is reused without
# network; the lists are fetched when missing, or once more when they lack a
# package or version asked for.
set -euo pipefail
. "$(dirname "$0")/env.sh"

[ $# -ge 2 ] || { echo "usage: $0 SUITE PKG[=VERSION]..." >&2; exit 2; }
suite=$1; shift
case "$suite" in
trixie|bookworm) components="contrib non-free" ;;
trixie-backports) components="main" ;;
*) echo "fetch-debs: unknown suite '$suite' (trixie, bookworm or trixie-backports)" >&2; exit 2 ;;
esac

state="$VGPU_CACHE/apt/$suite"
debs="$VGPU_CACHE/debs"
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/preferences.d" "$debs"
# One caller per suite at a time: a second waits, then finds its debs.
exec 8>"$state/.lock"
flock 8
mirror=$(vgpu_debian_mirror)
cat > "$state/sources.list.new" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror%/} $suite $components
SRC
if cmp -s "$state/sources.list.new" "$state/sources.list"; then
    rm "$state/sources.list.new"
else
    # A new mirror or component list: the old lists no longer match.
    mv "$state/sources.list.new" "$state/sources.list"
    rm -f "$state/lists/"*_Packages* "$state/lists/"*Release*
fi

apt_opts=(
    -o Dir::Etc::sourcelist="$state/sources.list"
    -o Dir::Etc::sourceparts=-
    -o Dir::Etc::preferences="$state/preferences"
    -o Dir::Etc::preferencesparts="$state/preferences.d"
    -o Dir::State::Lists="$state/lists"
    -o Dir::Cache="$state/cache"
    -o APT::Sandbox::User=root
)

lists_ready() { compgen -G "$state/lists/*_Packages*" >/dev/null; }
updated=0
update() {
    [ $updated = 0 ] || return 0
    echo "fetch-debs: apt-get update ($suite from ${mirror%/})" >&2
    apt-get "${apt_opts[@]}" -qq update >&2
    updated=1
}

# The version apt would download for PKG[=VERSION], or nothing.
resolve() {
    local pkg=${1%%=*} ver=
    [ "$pkg" = "$1" ] || ver=${1#*=}
    if [ -n "$ver" ]; then
        apt-cache "${apt_opts[@]}" show "$pkg=$ver" 2>/dev/null | grep -m1 '^Version:' | cut -d' ' -f2 || true
    else
        apt-cache "${apt_opts[@]}" policy "$pkg" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)" {print $2}' || true
    fi
}

# The cached .deb of PKG at VERSION (apt writes an epoch's ':' as %3a).
cached() {
    local f
    for f in "$debs/${1}_${2//:/%3a}_"*.deb; do
        [ -f "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}

for spec in "$@"; do
    pkg=${spec%%=*}
    ver=; [ "$pkg" = "$spec" ] || ver=${spec#*=}
    if [ -n "$ver" ] && cached "$pkg" "$ver"; then
        continue
    fi
    lists_ready || update
    v=$(resolve "$spec")
    if [ -z "$v" ]; then
        update
        v=$(resolve "$spec")
    fi
    [ -n "$v" ] || { echo "fetch-debs: $spec is not in $suite ($components)" >&2; exit 1; }
    cached "$pkg" "$v" && continue
    echo "fetch-debs: downloading $pkg=$v" >&2
    (cd "$debs" && apt-get "${apt_opts[@]}" -qq download "$pkg=$v" >&2)
    cached "$pkg" "$v" || { echo "fetch-debs: $pkg=$v: no .deb after download" >&2; exit 1; }
done
