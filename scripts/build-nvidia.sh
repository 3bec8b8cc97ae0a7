#!/usr/bin/env bash
# Build (or reuse from cache) NVIDIA's real open kernel modules, nvidia.ko
# and nvidia-uvm.ko, for one test-kernel variant, from Debian's
# nvidia-open-kernel-source (scripts/fetch-debs.sh) and the 7.3 patch in
# scripts/nvidia/.
#
#   scripts/build-nvidia.sh [fast|debug|stock]
#
# stock: Debian's stock kernel (scripts/stock-kernel.sh), built in the
# trixie root by the kernel's own gcc-14, as Debian's
# nvidia-open-kernel-dkms would build it on that kernel, with a second
# patch (scripts/nvidia/*-stock.patch; among its hunks, nvidia-uvm's HMM
# code is compiled out, as 7.3's ZONE_DEVICE API is not the one it was
# written for). make test runs the real-driver lane there and on the
# debug kernel.
#
# The result lives in $VGPU_CACHE/nvidia-<variant>-<key>, keyed by a hash of
# the package version, the patch, this script and the kernel tree (its
# cache directory, itself keyed by every kernel input). A hit takes a
# second. It is linked at build/nvidia-<variant>, with nvidia.ko,
# nvidia-uvm.ko (debug info stripped: 172 MB -> 12 MB) and their
# Module.symvers directly inside. RM comes prebuilt in the package
# (nv-kernel.o_binary), so only the interface layers compile. Nothing of
# NVIDIA's goes into the repository or onto the host's package database.
set -euo pipefail
. "$(dirname "$0")/env.sh"

variant=${1:-fast}
case "$variant" in fast|debug|stock) ;; *) echo "usage: $0 [fast|debug|stock]" >&2; exit 2 ;; esac

kdir="$VGPU_TOP/build/kernel-$variant"
if [ "$variant" = stock ]; then
    "$VGPU_TOP/scripts/stock-kernel.sh" >/dev/null
else
    [ -f "$kdir/.vgpu-complete" ] || "$VGPU_TOP/scripts/build-kernel.sh" "$variant"
fi
ktree=$(readlink -f "$kdir")
ksrc=$(readlink -f "$ktree/source")

debver=$VGPU_NVIDIA_OPEN_DEB_VERSION
nvver=${debver%-*}
patchfile="$VGPU_TOP/scripts/nvidia/nvidia-open-$nvver-linux-$VGPU_KERNEL_SERIES.patch"
[ -f "$patchfile" ] || { echo "nvidia($variant): no patch $patchfile" >&2; exit 1; }
patches=("$patchfile")
# Debian's config builds code the test kernels leave out: more hunks.
[ "$variant" = stock ] && patches+=("${patchfile%.patch}-stock.patch")
key=$( {
    echo "$debver"
    cat "${patches[@]}" "$0"
    echo "$ktree"
} | sha256sum | cut -c1-16)

out="$VGPU_CACHE/nvidia-$variant-$key"
link="$VGPU_TOP/build/nvidia-$variant"
mkdir -p "$VGPU_CACHE" "$VGPU_TOP/build"
exec 9>"$VGPU_CACHE/.nvidia-$variant.lock"
flock 9

if [ -f "$out/.vgpu-complete" ]; then
    ln -sfn "$out" "$link"
    echo "nvidia($variant): cached $out"
    exit 0
fi

deb=$("$VGPU_TOP/scripts/fetch-debs.sh" "$VGPU_NVIDIA_OPEN_DEB_SUITE" "nvidia-open-kernel-source=$debver")

# A fresh tree every time: conftest's results are not redone when the
# module list or the kernel changes.
work="$out.build"
rm -rf "$work" "$out"
mkdir -p "$work/pkg" "$out"
echo "nvidia($variant): unpacking nvidia-open-kernel-source $debver"
dpkg-deb -x "$deb" "$work/pkg"
tar -C "$work" -xJf "$work/pkg/usr/src/nvidia-open-kernel.tar.xz"
rm -rf "$work/pkg"
tree="$work/modules/nvidia-open-kernel"
for p in "${patches[@]}"; do
    patch -p1 -d "$tree" --forward --batch --quiet < "$p"
done

echo "nvidia($variant): building nvidia.ko nvidia-uvm.ko against $ktree"
start=$(date +%s)
log="$out/build.log"
# CC must be named: the Makefile takes the first word of the kernel's
# CONFIG_CC_VERSION_TEXT ("Debian"); the compiler check trips on lld's
# version text, hence IGNORE_CC_MISMATCH. conftest reads the kernel's
# Module.symvers, which build-kernel.sh (stock-kernel.sh) has made.
if [ "$variant" = stock ]; then
    # Debian's CC (gcc-14). Not its ARCH, which NVIDIA's Makefile derives
    # itself, nor KERNELRELEASE, which it takes as "called from Kbuild".
    mapfile -t kv < <(grep '^CC=' "$ktree/kbuild.env")
    nvmake=("$VGPU_TOP/scripts/trixie-chroot.sh" run nice -n 19 make "${kv[@]}")
else
    # No BTF for NVIDIA's modules: the debug kernel makes module BTF
    # (CONFIG_DEBUG_INFO_BTF_MODULES, scripts/kconfig/lsm.config), and its
    # gen-btf.sh fails inside NVIDIA's build ("awk: unexpected
    # character": NVIDIA's pahole wrapper, which only the stock patch
    # drops); nothing here attaches BPF to NVIDIA's code.
    nvmake=(env IGNORE_CC_MISMATCH=1 nice -n 19 make CC=clang-19 LD=ld.lld-19 LLVM=-19
        CONFIG_DEBUG_INFO_BTF_MODULES=)
fi
if ! "${nvmake[@]}" -C "$tree" SYSSRC="$ksrc" SYSOUT="$ktree" \
        NV_KERNEL_MODULES="nvidia nvidia-uvm" modules -j"$(nproc)" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "nvidia($variant): build failed; log $log, tree $tree" >&2
    exit 1
fi

for m in nvidia nvidia-uvm; do
    [ -f "$tree/$m.ko" ] || { echo "nvidia($variant): no $m.ko; log $log" >&2; exit 1; }
    llvm-strip-19 --strip-debug -o "$out/$m.ko" "$tree/$m.ko"
done
cp "$tree/Module.symvers" "$out/Module.symvers"

# The modules must be for this kernel: a stale tree would load nowhere.
krel=$(cat "$ktree/include/config/kernel.release")
for m in nvidia nvidia-uvm; do
    vm=$(modinfo -F vermagic "$out/$m.ko")
    [ "${vm%% *}" = "$krel" ] || { echo "nvidia($variant): $m.ko vermagic '$vm', kernel $krel" >&2; exit 1; }
done
rm -rf "$work"
touch "$out/.vgpu-complete"
ln -sfn "$out" "$link"
echo "nvidia($variant): built in $(( $(date +%s) - start ))s -> $out ($(du -sh "$out/nvidia.ko" | cut -f1) nvidia.ko, $(du -sh "$out/nvidia-uvm.ko" | cut -f1) nvidia-uvm.ko)"
