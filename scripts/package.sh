#!/usr/bin/env bash
# Build vgpu's Debian packages from the repository:
#
#   vgpu-dkms_VERSION_all.deb   the module's source under /usr/src/vgpu-VERSION
#                               with deploy/dkms.conf; dkms builds it for each
#                               kernel at install (and on kernel upgrades)
#   vgpuctl_VERSION_amd64.deb   /usr/bin/vgpuctl and /usr/bin/vgpu-dra-plugin
#                               (the Kubernetes DRA kubelet plugin), their man
#                               pages (generated from their command lines), the
#                               udev rule, the modprobe.d file and
#                               vgpu-exporter.service
#
#   scripts/package.sh [OUTDIR]      (default build/deb)
#
#   vgpu-kbuild-rust-KREL_KVER+vgpuVERSION_amd64.deb
#                               (scripts/package.sh --kbuild-rust [OUTDIR])
#                               Debian's stock kernel KREL's Rust build
#                               products, which its linux-headers lack
#                               (scripts/stock-kernel.sh makes them): what
#                               vgpu-dkms needs on that kernel
#                               (docs/operators.md, "Kernels")
#
# Plain dpkg-deb, no debhelper: the trees are laid out here, with the
# maintainer scripts dh_dkms would write. VERSION is the workspace's
# (userspace/Cargo.toml) and must equal deploy/dkms.conf's PACKAGE_VERSION.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$VGPU_TOP"

kbuild_rust=
if [ "${1:-}" = --kbuild-rust ]; then kbuild_rust=1; shift; fi
out=${1:-$VGPU_TOP/build/deb}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' userspace/Cargo.toml | head -1)
dkms_version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' deploy/dkms.conf)
if [ -z "$version" ] || [ "$version" != "$dkms_version" ]; then
    echo "package: userspace/Cargo.toml says ${version:-nothing}, deploy/dkms.conf $dkms_version" >&2
    exit 1
fi
debver="$version-1"
maintainer="vgpu developers <vgpu@vgpu.dev>"
# Reproducible: every date in the packages is the last commit's.
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
export SOURCE_DATE_EPOCH
changelog_date=$(date -u -R -d "@$SOURCE_DATE_EPOCH")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# The files every package has: copyright and a Debian changelog.
docs() { # PKG ROOT
    local doc="$2/usr/share/doc/$1"
    install -d "$doc"
    cat > "$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: vgpu
Source: https://vgpu.dev

Files: *
Copyright: 2026 vgpu developers
License: GPL-2
 This program is free software; you can redistribute it and/or modify it
 under the terms of the GNU General Public License version 2 as published by
 the Free Software Foundation.
 .
 On Debian systems, the complete text of the GNU General Public License
 version 2 can be found in '/usr/share/common-licenses/GPL-2'.
EOF
    cat > "$work/changelog" <<EOF
$1 ($debver) unstable; urgency=medium

  * Package built from the vgpu repository (scripts/package.sh).

 -- $maintainer  $changelog_date
EOF
    gzip -9n < "$work/changelog" > "$doc/changelog.Debian.gz"
}

# Permissions, md5sums, timestamps, then dpkg-deb.
build_deb() { # ROOT FILE [XZ_LEVEL]
    local root=$1
    find "$root" -type d -exec chmod 0755 {} +
    find "$root" -type f ! -path "$root/DEBIAN/*" -exec chmod 0644 {} +
    [ -d "$root/usr/bin" ] && chmod 0755 "$root"/usr/bin/*
    find "$root/usr/src" -name '*.sh' -exec chmod 0755 {} + 2>/dev/null || true
    for s in postinst prerm postrm; do [ -f "$root/DEBIAN/$s" ] && chmod 0755 "$root/DEBIAN/$s"; done
    (cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0r md5sum) > "$root/DEBIAN/md5sums"
    chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control"
    [ -f "$root/DEBIAN/conffiles" ] && chmod 0644 "$root/DEBIAN/conffiles"
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    dpkg-deb --root-owner-group -Zxz "-z${3:-6}" --build "$root" "$2" >/dev/null
    echo "package: $2"
}

# --- vgpu-kbuild-rust-KREL ---------------------------------------------------
if [ -n "$kbuild_rust" ]; then
    scripts/stock-kernel.sh >/dev/null
    krel=$VGPU_STOCK_KREL
    stock=$(dirname "$(readlink -f build/kernel-stock)")
    pkg="vgpu-kbuild-rust-$krel"
    pkgver="$VGPU_STOCK_DEB_VERSION+vgpu$version"
    root="$work/$pkg"
    install -d "$root/DEBIAN"
    cp -a "$stock/overlay/." "$root/"
    # The compiler the products are for, as the trixie root has it: the
    # package pins it, so that apt refuses a rustc (rustup's, backports')
    # that could not read them.
    rustc_ver=$(scripts/trixie-chroot.sh run dpkg-query -W -f='${Version}' rustc)
    rustsrc_ver=$(scripts/trixie-chroot.sh run dpkg-query -W -f='${Version}' rust-src)
    docs "$pkg" "$root"
    sed -i "1s/($debver)/($pkgver)/" "$work/changelog"
    gzip -9n < "$work/changelog" > "$root/usr/share/doc/$pkg/changelog.Debian.gz"
    size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
    cat > "$root/DEBIAN/control" <<EOF
Package: $pkg
Version: $pkgver
Architecture: amd64
Maintainer: $maintainer
Installed-Size: $size
Depends: linux-headers-$krel (= $VGPU_STOCK_DEB_VERSION), rustc (= $rustc_ver), rust-src (= $rustsrc_ver), libc6
Enhances: vgpu-dkms
Section: kernel
Priority: optional
Homepage: https://vgpu.dev
Description: Rust build products of Debian's kernel $krel
 Debian's linux-headers-$krel lacks what an out-of-tree Rust module
 is built against: the kernel's crate metadata (rust/*.rmeta), its
 procedural macros (rust/*.so) and the Rust target (scripts/target.json).
 This package adds them, rebuilt from linux-source of the same version
 with Debian's .config by the compiler Debian built the kernel with (whose
 exact version it depends on); every Rust symbol they export is one the
 kernel's Module.symvers lists. vgpu-dkms needs them to build vgpu.ko.
EOF
    # xz -1: the default level takes two minutes over its 140 MB.
    # vgpu-dkms skipped this kernel while these files were missing: build
    # it now.
    cat > "$root/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
if [ "\$1" = configure ] && [ -z "\${DPKG_ROOT:-}" ] && command -v dkms >/dev/null; then
    dkms autoinstall -k $krel || echo "$pkg: dkms autoinstall -k $krel failed (see above)"
fi
exit 0
EOF
    build_deb "$root" "$out/${pkg}_${pkgver}_amd64.deb" 1
    exit 0
fi

# --- vgpu-dkms -------------------------------------------------------------
root="$work/vgpu-dkms"
src="$root/usr/src/vgpu-$version"
install -d "$src" "$root/DEBIAN"
install -m0644 Kbuild Makefile deploy/dkms.conf "$src/"
install -m0755 deploy/dkms-check-kernel.sh "$src/"
# The module's sources: everything Kbuild compiles (src/, Rust and C).
git ls-files -z src | xargs -0 -I{} install -D -m0644 {} "$src/{}"
docs vgpu-dkms "$root"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<EOF
Package: vgpu-dkms
Version: $debver
Architecture: all
Maintainer: $maintainer
Installed-Size: $size
Depends: dkms (>= 3.0)
Recommends: vgpuctl (= $debver)
Section: kernel
Priority: optional
Homepage: https://vgpu.dev
Description: per-container virtual NVIDIA GPUs (kernel module, DKMS source)
 vgpu.ko proxies the NVIDIA driver's device nodes to give each container a
 virtual GPU with a hard memory ceiling and a share of the GPU's time. This
 package holds its source; DKMS builds it for every installed kernel that
 has Rust support (CONFIG_RUST) and a full build tree.
EOF
# As dh_dkms writes them: add, build and install at configure (a kernel
# without Rust or without its build tree is skipped, not an error), remove
# every version at removal.
cat > "$root/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
case "\$1" in
configure)
    # A package installed into another root (dpkg --root) is built when
    # that root runs dkms itself.
    if [ -z "\${DPKG_ROOT:-}" ]; then
        /usr/lib/dkms/common.postinst vgpu $version "" "" "\$2"
    fi
    ;;
esac
exit 0
EOF
cat > "$root/DEBIAN/prerm" <<EOF
#!/bin/sh
set -e
case "\$1" in
remove|upgrade|deconfigure)
    if [ -z "\${DPKG_ROOT:-}" ] && [ "\$(dkms status -m vgpu -v $version)" ]; then
        dkms remove -m vgpu -v $version --all
    fi
    ;;
esac
exit 0
EOF
build_deb "$root" "$out/vgpu-dkms_${debver}_all.deb"

# --- vgpuctl ---------------------------------------------------------------
root="$work/vgpuctl"
install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" \
    "$root/lib/udev/rules.d" "$root/etc/modprobe.d" "$root/lib/systemd/system"
# The binaries the test VM runs too: static (scripts/build-userspace.sh).
scripts/build-userspace.sh
rel="$VGPU_TOP/build/guest-target/x86_64-unknown-linux-gnu/release"
"$rel/examples/mangen" "$work/man"
"$rel/examples/dra-mangen" "$work/man"
for b in vgpuctl vgpu-dra-plugin; do
    install -m0755 -s "$rel/$b" "$root/usr/bin/$b"
done
# Static on purpose: one build serves the packages and the test VM, and an
# OCI hook runs in whatever library setup the runtime's host has.
install -d "$root/usr/share/lintian/overrides"
# (Static PIE binaries are ET_DYN, which lintian takes for libraries.)
for b in vgpuctl vgpu-dra-plugin; do
    printf 'vgpuctl: %s [usr/bin/%s]\n' statically-linked-binary "$b" shared-library-lacks-prerequisites "$b"
done > "$root/usr/share/lintian/overrides/vgpuctl"
for m in "$work"/man/*.1; do gzip -9n < "$m" > "$root/usr/share/man/man1/$(basename "$m").gz"; done
install -m0644 deploy/udev/70-vgpu.rules "$root/lib/udev/rules.d/"
install -m0644 deploy/modprobe.d/vgpu.conf "$root/etc/modprobe.d/"
install -m0644 deploy/systemd/vgpu-exporter.service "$root/lib/systemd/system/"
echo /etc/modprobe.d/vgpu.conf > "$root/DEBIAN/conffiles"
docs vgpuctl "$root"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<EOF
Package: vgpuctl
Version: $debver
Architecture: amd64
Maintainer: $maintainer
Installed-Size: $size
Recommends: vgpu-dkms (= $debver)
Section: admin
Priority: optional
Homepage: https://vgpu.dev
Description: configure vgpu's per-container virtual NVIDIA GPUs
 vgpuctl creates, configures and inspects the virtual GPUs of vgpu.ko
 through /sys/class/vgpu, writes CDI specs whose hooks bind a vGPU to the
 container a runtime starts with it (podman, Docker, containerd), and serves
 Prometheus metrics (vgpu-exporter.service). vgpu-dra-plugin is the
 Kubernetes DRA kubelet plugin that hands pods vGPUs by memory and compute.
 Also the udev rule and the modprobe configuration of the module.
EOF
cat > "$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
case "$1" in
configure)
    if [ -z "${DPKG_ROOT:-}" ] && command -v udevadm >/dev/null 2>&1; then
        udevadm control --reload-rules 2>/dev/null || true
        udevadm trigger --subsystem-match=vgpu 2>/dev/null || true
    fi
    if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
        systemctl daemon-reload >/dev/null 2>&1 || true
    fi
    ;;
esac
exit 0
EOF
cat > "$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -z "${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
EOF
build_deb "$root" "$out/vgpuctl_${debver}_amd64.deb"
