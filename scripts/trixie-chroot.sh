#!/usr/bin/env bash
# A Debian trixie root with the toolchain Debian's own kernels are built
# with (trixie's rustc, rust-src, bindgen, gcc-14, pahole), made once with
# debootstrap from Debian's archive and cached under
# $VGPU_CACHE/chroot-trixie-<hash of the recipe: suite, variant, packages>. Debian's stock kernel
# can only take Rust modules built by that exact rustc, and trixie's
# binaries need trixie's glibc: hence a chroot on a bookworm host.
#
#   scripts/trixie-chroot.sh                 make it (cached), print its path
#   scripts/trixie-chroot.sh run CMD...      run CMD in it (as root, cwd kept)
#   scripts/trixie-chroot.sh overlay DIR CMD...
#                                            run CMD in a throwaway copy of it
#                                            (an overlayfs whose changes go to
#                                            DIR), to install packages into
#
# CMD runs in a private mount namespace (nothing stays mounted after it),
# with /proc, /dev, /tmp, $VGPU_CACHE and the repository bound in at the
# paths they have here, so build trees made in it name the same paths
# outside.
set -euo pipefail
. "$(dirname "$0")/env.sh"

# What the root holds: the kernel's build dependencies as Debian's
# linux source package lists them for Rust (rustc, rust-src, bindgen,
# libclang), dwarves for BTF, and for the packages' test dkms and what
# Debian's linux-headers package depends on (gcc-14-for-host, linux-base).
VGPU_TRIXIE_PKGS=rustc,rust-src,bindgen,libclang-19-dev,gcc-14,gcc,gcc-14-for-host,make,flex,bison,bc,libelf-dev,libssl-dev,openssl,pkgconf,kmod,cpio,xz-utils,zstd,python3,dwarves,binutils,dkms,linux-base,patch,file

# Bump the recipe's first word when how the root is made changes.
recipe="v1 debootstrap --variant=minbase trixie $VGPU_TRIXIE_PKGS"
key=$(echo "$recipe" | sha256sum | cut -c1-16)
root="$VGPU_CACHE/chroot-trixie-$key"

ensure() {
    [ -f "$root/.vgpu-complete" ] && return 0
    mkdir -p "$VGPU_CACHE"
    exec 7>"$VGPU_CACHE/.chroot-lock"
    flock 7
    [ -f "$root/.vgpu-complete" ] && return 0
    command -v debootstrap >/dev/null || PATH=$PATH:/usr/sbin
    command -v debootstrap >/dev/null || {
        echo "trixie-chroot: debootstrap missing (scripts/setup-toolchain.sh installs it)" >&2; exit 1; }
    echo "trixie-chroot: debootstrap trixie into $root (a few minutes, once)" >&2
    rm -rf "$root"
    local t0=$SECONDS
    mkdir -p "$VGPU_CACHE/debootstrap-debs"
    debootstrap --variant=minbase --include="$VGPU_TRIXIE_PKGS" \
        --cache-dir="$VGPU_CACHE/debootstrap-debs" trixie "$root" "$(vgpu_debian_mirror)" > "$root.log" 2>&1 || {
        tail -20 "$root.log" >&2; echo "trixie-chroot: debootstrap failed (log $root.log)" >&2; exit 1; }
    rm -rf "$root/var/cache/apt/archives/"*.deb
    touch "$root/.vgpu-complete"
    echo "trixie-chroot: ready in $((SECONDS - t0)) s" >&2
}

# run ROOT CMD...: CMD in ROOT, in a mount namespace of its own.
run_in() {
    local r=$1; shift
    local d
    for d in "$VGPU_CACHE" "$VGPU_TOP"; do mkdir -p "$r$d"; done
    # shellcheck disable=SC2016
    unshare -m --propagation private bash -c '
        set -e
        r=$1; shift
        mount -t proc proc "$r/proc"
        mount --rbind /dev "$r/dev"
        mount -t tmpfs tmp "$r/tmp"
        mount --bind "$VGPU_CACHE" "$r$VGPU_CACHE"
        mount --bind "$VGPU_TOP" "$r$VGPU_TOP"
        cwd=$PWD
        exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
            PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
            VGPU_CACHE="$VGPU_CACHE" VGPU_TOP="$VGPU_TOP" \
            /bin/bash -c "cd \"\$1\" 2>/dev/null || cd /; shift; exec \"\$@\"" - "$cwd" "$@"
    ' - "$r" "$@"
}

ensure
case "${1:-}" in
"") echo "$root" ;;
run) shift; run_in "$root" "$@" ;;
overlay)
    shift
    dir=$1; shift
    mkdir -p "$dir/upper" "$dir/work" "$dir/root"
    # shellcheck disable=SC2016
    unshare -m --propagation private bash -c '
        set -e
        mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$2/root"
        shift 2
        exec "$@"
    ' - "$root" "$dir" "$0" __run_in "$dir/root" "$@"
    ;;
__run_in) shift; r=$1; shift; run_in "$r" "$@" ;;
*) echo "usage: $0 [run CMD... | overlay DIR CMD...]" >&2; exit 2 ;;
esac
