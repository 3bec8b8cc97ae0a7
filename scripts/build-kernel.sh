#!/usr/bin/env bash
# Build (or reuse from cache) the Rust-enabled Linux test kernel.
#
#   scripts/build-kernel.sh [fast|debug]
#
# The build tree lives in $VGPU_CACHE, keyed by a hash of every input: the
# kernel source package version, the config fragments, this script and the
# versions of rustc, rust-src, bindgen and clang. A hit takes a second. The
# result is linked at build/kernel-<variant> (the KDIR for `make`).
set -euo pipefail
. "$(dirname "$0")/env.sh"

variant=${1:-fast}
case "$variant" in fast|debug) ;; *) echo "usage: $0 [fast|debug]" >&2; exit 2 ;; esac

# fast: base + what podman needs (the containers suite runs there);
# debug: base + what podman needs + what the guard needs (BPF LSM, BTF) +
# the checkers, so that every suite runs under the checkers.
frags=("$VGPU_TOP/scripts/kconfig/base.config")
case "$variant" in
fast) frags+=("$VGPU_TOP/scripts/kconfig/containers.config") ;;
debug) frags+=("$VGPU_TOP/scripts/kconfig/containers.config"
        "$VGPU_TOP/scripts/kconfig/lsm.config"
        "$VGPU_TOP/scripts/kconfig/debug.config") ;;
esac

srcver=$(dpkg-query -W -f='${Version}' "linux-source-$VGPU_KERNEL_SERIES")
key=$( {
    echo "$srcver"
    cat "${frags[@]}" "$0"
    rustc -vV
    dpkg-query -W -f='${Version}\n' rust-src
    bindgen --version
    /usr/lib/llvm-19/bin/clang --version | head -1
    # pahole makes BTF from DWARF, where a fragment asks for it.
    if cat "${frags[@]}" | grep -q '^CONFIG_DEBUG_INFO_BTF=y'; then pahole --version; fi
} | sha256sum | cut -c1-16)

src="$VGPU_CACHE/src/linux-$srcver"
mkdir -p "$VGPU_CACHE"
# One kernel build at a time (they share the unpacked source): a second
# caller waits, then finds its kernel done.
exec 9>"$VGPU_CACHE/.lock"
flock 9
out="$VGPU_CACHE/kernel-$variant-$key"
link="$VGPU_TOP/build/kernel-$variant"
mkdir -p "$VGPU_TOP/build"

if [ -f "$out/.vgpu-complete" ]; then
    ln -sfn "$out" "$link"
    echo "kernel($variant): cached $out"
    exit 0
fi

if [ ! -f "$src/.vgpu-unpacked" ]; then
    echo "kernel: unpacking linux-source $srcver"
    rm -rf "$src" && mkdir -p "$src"
    tar -C "$src" --strip-components=1 -xf /usr/src/linux-source-$VGPU_KERNEL_SERIES.tar.*
    touch "$src/.vgpu-unpacked"
fi

# An unfinished build of the same inputs is resumed: make is incremental.
mkdir -p "$out"
mk=(make -C "$src" O="$out" LLVM=-19 -j"$(nproc)")
echo "kernel($variant): configuring in $out"
"${mk[@]}" -s tinyconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${frags[@]}" >/dev/null
"${mk[@]}" -s olddefconfig >/dev/null

# Kconfig drops options whose dependencies fail without a word (CONFIG_RUST
# with an old libclang, for one). Every option we asked for must have stuck.
bad=0
for f in "${frags[@]}"; do
    while IFS= read -r line; do
        case "$line" in CONFIG_*=*) ;; *) continue ;; esac
        opt=${line%%=*}; val=${line#*=}
        if [ "$val" = n ]; then
            grep -q "^$opt=" "$out/.config" && { echo "kernel: $opt should be off" >&2; bad=1; }
        else
            grep -qx "$line" "$out/.config" || { echo "kernel: $line did not stick ($(grep "^$opt=" "$out/.config" || echo unset))" >&2; bad=1; }
        fi
    done < "$f"
done
[ $bad = 0 ] || { echo "kernel: config check failed; see 'make LLVM=-19 rustavailable'" >&2; exit 1; }

echo "kernel($variant): building (this takes a few minutes)"
start=$(date +%s)
# `modules` writes Module.symvers, which external modules link against.
"${mk[@]}" -s bzImage modules_prepare modules 2>&1 | grep -v '^$' || true
[ -f "$out/arch/x86/boot/bzImage" ] || { echo "kernel: build failed" >&2; exit 1; }
[ -f "$out/Module.symvers" ] || { echo "kernel: no Module.symvers" >&2; exit 1; }
[ -f "$out/rust/libkernel.rmeta" ] || { echo "kernel: no Rust build products" >&2; exit 1; }
touch "$out/.vgpu-complete"
ln -sfn "$out" "$link"
echo "kernel($variant): built in $(( $(date +%s) - start ))s -> $out"
