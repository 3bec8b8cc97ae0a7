#!/usr/bin/env bash
# Build the kernel modules for one test-kernel variant, warnings as errors:
# vgpu.ko (src/) and the test double of the NVIDIA driver (selftests/), when
# present. The sources are mirrored into build/mod-<variant>/ so the
# variants' objects never mix, and rebuilds are incremental.
#
#   scripts/build-modules.sh [fast|debug|stock]
#
# stock: Debian's stock kernel (scripts/stock-kernel.sh), built in the trixie
# root by Debian's own gcc and rustc (1.85), as a node's DKMS would; no
# clippy there (the project's kernels run it), and no KUnit module
# (Debian's kernel has no CONFIG_KUNIT).
set -euo pipefail
. "$(dirname "$0")/env.sh"

variant=${1:-fast}
kdir="$VGPU_TOP/build/kernel-$variant"
kbuild=(LLVM=-19 CLIPPY=1)
in_root=()
if [ "$variant" = stock ]; then
    "$VGPU_TOP/scripts/stock-kernel.sh" >/dev/null
    mapfile -t kbuild < "$kdir/kbuild.env"
    in_root=("$VGPU_TOP/scripts/trixie-chroot.sh" run)
else
    [ -f "$kdir/.vgpu-complete" ] || "$VGPU_TOP/scripts/build-kernel.sh" "$variant"
fi
stage="$VGPU_TOP/build/mod-$variant"
mkdir -p "$stage"
# Kbuild warns (an error here) when the pahole found now is not the one
# the kernel was built with (CONFIG_PAHOLE_VERSION, 0 for none). A kernel
# built before scripts/setup-toolchain.sh installed dwarves had none: its
# modules are built without one too, as it was.
if [ -z "${in_root[*]}" ] && grep -qx 'CONFIG_PAHOLE_VERSION=0' "$kdir/.config"; then
    kbuild+=(PAHOLE=/nonexistent/pahole)
fi

# Mirror sources, keeping timestamps of unchanged files (cp -u) and removing
# files deleted upstream. A Rust crate's dependency file lists the files it
# was built from, and Kbuild ignores listed files that have gone: when the
# set of files changes (a module split in two, one moved), every crate
# root's object goes, so the crates are built again from what is there now.
# modpost's MODULE.mod.c is the build's own, not a source: left alone, or
# every build would delete it, see the set change and rebuild everything.
mirror() {
    local from=$1 to=$2
    mkdir -p "$to"
    local before after
    before=$(cd "$to" && find . -type f \( -name '*.rs' -o -name '*.c' -o -name '*.h' -o -name Kbuild \) ! -name '*.mod.c' -print | sort)
    (cd "$from" && find . -type f \( -name '*.rs' -o -name '*.c' -o -name '*.h' -o -name Kbuild \) ! -name '*.mod.c' -print) |
    while IFS= read -r f; do
        mkdir -p "$to/$(dirname "$f")"
        cmp -s "$from/$f" "$to/$f" || cp "$from/$f" "$to/$f"
    done
    (cd "$to" && find . -type f \( -name '*.rs' -o -name '*.c' -o -name '*.h' -o -name Kbuild \) ! -name '*.mod.c' -print) |
    while IFS= read -r f; do [ -e "$from/$f" ] || rm -f "$to/$f"; done
    after=$(cd "$to" && find . -type f \( -name '*.rs' -o -name '*.c' -o -name '*.h' -o -name Kbuild \) ! -name '*.mod.c' -print | sort)
    if [ "$before" != "$after" ]; then
        # Every crate root: the double and the KUnit module include files
        # of src/ by path.
        find "$stage" \( -name '*_main.o' -o -name 'nvidia_kclient_test.o' \) -delete
    fi
}

log="$stage/build.log"
kmake() {
    "${in_root[@]}" make -C "$kdir" "${kbuild[@]}" KRUSTFLAGS=-Dwarnings KCFLAGS=-Werror -j"$(nproc)" "$@" >"$log" 2>&1 || {
        cat "$log" >&2; echo "modules($variant): build failed" >&2; exit 1; }
    if grep -qiE '(^|[^-])warning[:\[]' "$log"; then
        cat "$log" >&2; echo "modules($variant): warnings are errors" >&2; exit 1
    fi
}

# The staging tree keeps the repository's layout, so the double's crate can
# include the shared files under src/ by relative path.
mirror "$VGPU_TOP/src" "$stage/src"
cp -u "$VGPU_TOP/Kbuild" "$stage/Kbuild"
# The fake NVSwitch PCI function that lets NVIDIA's real driver load in the
# GPU-less VM (docs/design-notes.md, "The real driver without a GPU"). C,
# no dependencies; mirrored before any Rust build, since a first mirror of
# a new directory deletes the crate roots' objects.
if [ -f "$VGPU_TOP/selftests/fakenvswitch/Kbuild" ]; then
    mirror "$VGPU_TOP/selftests/fakenvswitch" "$stage/selftests/fakenvswitch"
    kmake M="$stage/selftests/fakenvswitch" modules
fi
extra_symbols=()
if [ -f "$VGPU_TOP/selftests/nvidia/Kbuild" ]; then
    mirror "$VGPU_TOP/selftests/nvidia" "$stage/selftests/nvidia"
    kmake M="$stage/selftests/nvidia" modules
    extra_symbols=(KBUILD_EXTRA_SYMBOLS="$stage/selftests/nvidia/Module.symvers")
fi
kmake M="$stage" "${extra_symbols[@]}" modules
if [ -f "$VGPU_TOP/selftests/kclient_test/Kbuild" ] && [ "$variant" != stock ]; then
    mirror "$VGPU_TOP/selftests/kclient_test" "$stage/selftests/kclient_test"
    kmake M="$stage/selftests/kclient_test" "${extra_symbols[@]}" modules
fi
echo "modules($variant): $(cd "$stage" && find . -name '*.ko' | sort | tr '\n' ' ')"
