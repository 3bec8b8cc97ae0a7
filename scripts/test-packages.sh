#!/usr/bin/env bash
# The packages, tested as an operator gets them:
#   1. scripts/package.sh builds vgpu-dkms and vgpuctl;
#   2. lintian reports no error (E:) for either;
#   3. both install with dpkg into a clean root (an empty directory with a
#      fresh dpkg database: nothing but what the packages bring), and every
#      file an operator needs is where the docs say;
#   4. the installed vgpuctl runs and its man pages document the hooks;
#   5. Debian's dkms adds and builds the installed source against a
#      project kernel's build tree, and the vgpu.ko it builds is for that
#      kernel (Debian's stock kernel: scripts/test-stock-dkms.sh).
# Prints "packages: N passed, M failed" (scripts/test.sh reads it) and exits
# non-zero if anything failed.
#
#   scripts/test-packages.sh [debug|fast]   (the kernel to build against;
#                                           none: steps 1-4 only)
set -uo pipefail
. "$(dirname "$0")/env.sh"
cd "$VGPU_TOP"

variant=${1:-}
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { # WHAT COMMAND...
    local what=$1; shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}
finish() {
    echo "packages: $passed passed, $failed failed"
    [ "$failed" = 0 ]
    exit
}

out=$VGPU_TOP/build/deb
rm -rf "$out"
if ! scripts/package.sh "$out"; then
    bad "scripts/package.sh"
    finish
fi
ok "packages built"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' userspace/Cargo.toml | head -1)
debs=("$out/vgpu-dkms_${version}-1_all.deb" "$out/vgpuctl_${version}-1_amd64.deb")

# 2. lintian: errors fail, warnings are shown.
for d in "${debs[@]}"; do
    report=$(lintian --tag-display-limit 0 "$d" 2>/dev/null)
    [ -n "$report" ] && echo "$report"
    check "lintian $(basename "$d"): no errors" test -z "$(echo "$report" | grep '^E:')"
done

# 3. A clean root.
root=$(mktemp -d)
dkms_tree=$(mktemp -d)
trap 'rm -rf "$root" "$dkms_tree"' EXIT
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: > "$root/var/lib/dpkg/status"
: > "$root/var/lib/dpkg/available"
# Maintainer scripts run on this machine with DPKG_ROOT set (there is no
# shell in the root to chroot into); they leave building to the root's own
# dkms. Dependencies (dkms, libc6) are not in the empty root.
check "dpkg installs both into a clean root" \
    dpkg --root="$root" --log=/dev/null --force-depends --force-script-chrootless \
        --force-not-root -i "${debs[@]}"
for p in vgpu-dkms vgpuctl; do
    check "$p is installed" test "$(dpkg-query --root="$root" -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed"
done
src="$root/usr/src/vgpu-$version"
for f in "$src/dkms.conf" "$src/Kbuild" "$src/Makefile" "$src/src/vgpu_main.rs" "$src/src/c/bounce.c" \
         "$root/usr/bin/vgpuctl" "$root/usr/share/man/man1/vgpuctl.1.gz" \
         "$root/usr/bin/vgpu-dra-plugin" "$root/usr/share/man/man1/vgpu-dra-plugin.1.gz" \
         "$root/usr/share/man/man1/vgpuctl-hook.1.gz" "$root/lib/udev/rules.d/70-vgpu.rules" \
         "$root/etc/modprobe.d/vgpu.conf" "$root/lib/systemd/system/vgpu-exporter.service" \
         "$root/usr/share/doc/vgpuctl/copyright" "$root/usr/share/doc/vgpu-dkms/copyright"; do
    check "installed: ${f#"$root"}" test -s "$f"
done
check "/etc/modprobe.d/vgpu.conf is a conffile" \
    grep -qx "/etc/modprobe.d/vgpu.conf" "$root/var/lib/dpkg/info/vgpuctl.conffiles"

# 4. The installed vgpuctl.
check "installed vgpuctl runs" sh -c "'$root/usr/bin/vgpuctl' --version | grep -qx 'vgpuctl $version'"
# PAGE TEXT: man page PAGE has TEXT (roff writes a hyphen as \-).
man_has() { zcat "$root/usr/share/man/man1/$1.1.gz" | sed 's/\\-/-/g' | grep -qF -- "$2"; }
check "vgpuctl-hook(1) documents create-runtime" man_has vgpuctl-hook create-runtime
check "installed vgpu-dra-plugin runs" sh -c "'$root/usr/bin/vgpu-dra-plugin' --version | grep -qx 'vgpu-dra-plugin $version'"
check "vgpu-dra-plugin(1) documents --kube-api" man_has vgpu-dra-plugin "--kube-api"
for c in create remove set show list status freeze thaw cdi exporter hook; do
    check "vgpuctl(1) names vgpuctl-$c(1)" man_has vgpuctl "vgpuctl-$c(1)"
done

# 5. dkms, against the test kernel's build tree.
if [ -z "$variant" ]; then
    echo "packages: no project kernel named: dkms builds on the stock kernel only (scripts/test-stock-dkms.sh)"
    finish
fi
scripts/build-kernel.sh "$variant" >/dev/null
scripts/build-modules.sh "$variant" >/dev/null
kdir=$(readlink -f "build/kernel-$variant")
krel=$(cat "$kdir/include/config/kernel.release")
symvers="$VGPU_TOP/build/mod-$variant/selftests/nvidia/Module.symvers"
dk=(dkms --sourcetree "$root/usr/src" --dkmstree "$dkms_tree" -m vgpu -v "$version")
check "dkms add" "${dk[@]}" add
log=$(mktemp)
if NVIDIA_SYMVERS=$symvers "${dk[@]}" build -k "$krel" --kernelsourcedir "$kdir" >"$log" 2>&1; then
    ok "dkms build against $kdir ($krel)"
else
    cat "$log"; cat "$dkms_tree/vgpu/$version/build/make.log" 2>/dev/null | tail -40
    bad "dkms build"
fi
rm -f "$log"
ko=$(find "$dkms_tree/vgpu/$version/$krel" -name vgpu.ko 2>/dev/null | head -1)
check "dkms built vgpu.ko" test -n "$ko"
if [ -n "$ko" ]; then
    check "its vermagic is the test kernel's" sh -c "modinfo -F vermagic '$ko' | grep -q '^$krel '"
    check "its description lists the driver releases" sh -c "modinfo -F description '$ko' | grep -q '595.45.04'"
fi
finish
