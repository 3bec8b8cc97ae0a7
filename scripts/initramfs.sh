#!/usr/bin/env bash
# Build the test VM's initramfs for one variant: busybox, the modules (with
# modules.dep so modprobe works), the test programs, the guest init,
# podman with what it needs (scripts/podman-root.sh) for the containers suite,
# and the DaemonSet's image archive (scripts/image.sh) for the dra suite.
#
#   scripts/initramfs.sh [fast|debug|stock] -> build/initramfs-<variant>.cpio.gz
#   scripts/initramfs.sh VARIANT --real -> build/initramfs-<variant>-real.cpio.gz,
#       a second archive for the real-driver lane (scripts/vm.sh --driver
#       real): NVIDIA's open modules from build/nvidia-<variant>
#       (scripts/build-nvidia.sh) under /lib/modules/<krel>/nvidia-real/.
# Every initramfs has NVIDIA's userspace (nvidia-smi, NVML, libcuda from
# Debian non-free, scripts/nvidia-userspace.sh) of that release and of
# 535.261.03 (bookworm's) under /opt/nvidia-<release>/, for the suites that
# run it on the double too (nvidia_userspace runs either).
set -euo pipefail
. "$(dirname "$0")/env.sh"

variant=${1:-fast}
kdir="$VGPU_TOP/build/kernel-$variant"
krel=$(cat "$kdir/include/config/kernel.release")

if [ "${2:-}" = --real ]; then
    root="$VGPU_TOP/build/initramfs-$variant-real"
    rm -rf "$root"
    mkdir -p "$root/lib/modules/$krel/nvidia-real"
    cp "$VGPU_TOP/build/nvidia-$variant/nvidia.ko" "$VGPU_TOP/build/nvidia-$variant/nvidia-uvm.ko" \
        "$root/lib/modules/$krel/nvidia-real/"
    # The kernel's modules they depend on (modinfo's depends: on Debian's
    # kernel, nvidia.ko needs drm.ko, as its conftest finds DRM), from
    # Debian's unpacked image, decompressed for busybox's insmod; the
    # real_driver suite loads them first. The project's kernels have none.
    kmods="$(dirname "$(readlink -f "$kdir")")/image/usr/lib/modules/$krel"
    todo=(nvidia nvidia-uvm)
    while [ ${#todo[@]} -gt 0 ]; do
        m=${todo[0]}; todo=("${todo[@]:1}")
        for d in $(modinfo -F depends "$root/lib/modules/$krel/nvidia-real/$m.ko" | tr , ' '); do
            [ -f "$root/lib/modules/$krel/nvidia-real/$d.ko" ] && continue
            f=$(find "$kmods" -name "$d.ko*" 2>/dev/null | head -n1)
            [ -n "$f" ] || { echo "initramfs($variant): $m.ko needs $d.ko, which $kmods lacks" >&2; exit 1; }
            case "$f" in
            *.xz) xz -dc "$f" ;;
            *) cat "$f" ;;
            esac > "$root/lib/modules/$krel/nvidia-real/$d.ko"
            todo+=("$d")
        done
    done
    (cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$root.cpio.gz"
    echo "initramfs($variant, real driver): $root.cpio.gz ($(du -h "$root.cpio.gz" | cut -f1))"
    exit 0
fi
root="$VGPU_TOP/build/initramfs-$variant"
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,root,etc,lib/modules/"$krel"/extra}

cp /bin/busybox "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
    [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done

find "$VGPU_TOP/build/mod-$variant" -name '*.ko' -exec cp {} "$root/lib/modules/$krel/extra/" \;
touch "$root/lib/modules/$krel/modules.order" "$root/lib/modules/$krel/modules.builtin"

# Test programs: static, so the initramfs needs no libc.
"$VGPU_TOP/scripts/build-userspace.sh"
for b in vgpu-selftest vgpuctl vgpu-dra-plugin vgpu-dra-testkubelet; do
    cp "$VGPU_TOP/build/guest-target/x86_64-unknown-linux-gnu/release/$b" "$root/bin/"
done

# podman, crun, runc, conmon, their libraries and configuration, and the
# containers' root filesystem, which gets the test client too.
"$VGPU_TOP/scripts/podman-root.sh" "$root" >/dev/null
cp "$VGPU_TOP/build/guest-target/x86_64-unknown-linux-gnu/release/vgpu-selftest" "$root/var/lib/vgpu-rootfs/bin/"

# The Kubernetes DaemonSet's image (make image), which the dra suite loads
# into podman and runs.
"$VGPU_TOP/scripts/image.sh" >/dev/null
mkdir -p "$root/var/lib/vgpu-image"
cp -L "$VGPU_TOP/build/vgpu-node.oci.tar" "$root/var/lib/vgpu-image/vgpu-node.oci.tar"

for rel in "${VGPU_NVIDIA_OPEN_DEB_VERSION%%-*}" 535.261.03; do
    "$VGPU_TOP/scripts/nvidia-userspace.sh" "$root" "$rel" >/dev/null
done

# The recorded calls of NVIDIA's userspace, which the traces suite replays.
mkdir -p "$root/usr/share/vgpu"
cp -r "$VGPU_TOP/selftests/traces" "$root/usr/share/vgpu/traces"
cp "$VGPU_TOP/selftests/guest-init.sh" "$root/init"
cp "$VGPU_TOP/selftests/demo-guest.sh" "$root/bin/vgpu-demo.sh"
chmod +x "$root/init"
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
echo "nobody:x:65534:65534:nobody:/:/bin/sh" >> "$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$root.cpio.gz"
echo "initramfs($variant): $root.cpio.gz ($(du -h "$root.cpio.gz" | cut -f1))"
