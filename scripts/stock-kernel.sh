#!/usr/bin/env bash
# Rebuild the Rust build products of Debian's stock kernel, which its
# linux-headers package lacks, with the compiler Debian built it with.
#
#   scripts/stock-kernel.sh            (KREL and version from scripts/env.sh)
#
# Steps (docs/operators.md, "Kernels"):
#   1. Debian's linux-headers-KREL (with linux-headers-*-common and
#      linux-kbuild-*, its .config, Module.symvers and BTF vmlinux) and
#      linux-source-SERIES of the same Debian version, from the archive
#      (scripts/fetch-debs.sh; the host's installed linux-source when it is
#      that version);
#   2. in a trixie root (scripts/trixie-chroot.sh), the compiler strings
#      the .config records (CONFIG_CC_VERSION_TEXT, CONFIG_RUSTC_VERSION_TEXT,
#      CONFIG_BINDGEN_VERSION_TEXT) must equal those of the root's gcc,
#      rustc and bindgen byte for byte, else it refuses, naming the string
#      and where the compiler that wrote it comes from;
#   3. `make olddefconfig` must leave Debian's .config unchanged, then
#      `make modules_prepare` builds rust/ (a few minutes);
#   4. every Rust symbol the rebuilt rust/ exports must be one Debian's
#      Module.symvers lists (else the crates differ from the ones in the
#      kernel image, and modules would fail to load);
#   5. output, in $VGPU_CACHE/stock-KREL-<hash>/ (linked as build/kernel-stock):
#        build/     a prepared build tree for out-of-tree modules (KDIR),
#                   with Debian's Module.symvers and vmlinux; build in the
#                   trixie root with the variables in build/kbuild.env
#        overlay/   what the headers package lacks, laid out as the headers
#                   install it: usr/src/linux-headers-KREL/rust/*.{rmeta,so}
#                   and usr/lib/linux-kbuild-VER/scripts/target.json
#        debs/      the Debian packages it was made from
#        image/     Debian's kernel image and modules (linux-binary-KREL,
#                   linux-modules-KREL unpacked, not installed), for the
#                   stock VM lane (scripts/vm.sh --variant stock)
# A second run with the same inputs takes a second.
set -euo pipefail
. "$(dirname "$0")/env.sh"

krel=$VGPU_STOCK_KREL            # 7.3.4+deb13-amd64
debver=$VGPU_STOCK_DEB_VERSION   # 7.3.4-1~bpo13+1
suite=$VGPU_STOCK_DEB_SUITE      # trixie-backports
abi=${krel%-*}                   # 7.3.4+deb13

chroot_root=$("$VGPU_TOP/scripts/trixie-chroot.sh")
# Bump the recipe's first word when how the tree is made changes.
recipe="v1 $krel $debver $suite $(basename "$chroot_root")"
key=$(echo "$recipe" | sha256sum | cut -c1-16)
out="$VGPU_CACHE/stock-$krel-$key"
link="$VGPU_TOP/build/kernel-stock"
mkdir -p "$VGPU_TOP/build"
# Debian's vmlinuz and modules, unpacked.
image() {
    [ -f "$out/image/.vgpu-complete" ] && return 0
    local d
    rm -rf "$out/image" && mkdir -p "$out/image"
    for d in $("$VGPU_TOP/scripts/fetch-debs.sh" "$suite" \
                "linux-binary-$krel=$debver" "linux-modules-$krel=$debver"); do
        dpkg-deb -x "$d" "$out/image"
    done
    touch "$out/image/.vgpu-complete"
}
if [ -f "$out/.vgpu-complete" ]; then
    image
    ln -sfn "$out/build" "$link"
    echo "stock-kernel: cached $out"
    exit 0
fi

# 1. The packages.
pkgs=("linux-headers-$krel" "linux-headers-$abi-common" "linux-kbuild-$abi")
mapfile -t debs < <("$VGPU_TOP/scripts/fetch-debs.sh" "$suite" "${pkgs[@]/%/=$debver}")
[ "${#debs[@]}" = 3 ] || { echo "stock-kernel: cannot fetch ${pkgs[*]} $debver" >&2; exit 1; }
src="$VGPU_CACHE/src/linux-$debver"
exec 9>"$VGPU_CACHE/.lock"
flock 9
if [ ! -f "$src/.vgpu-unpacked" ]; then
    series=$VGPU_KERNEL_SERIES
    if [ "$(dpkg-query -W -f='${Version}' "linux-source-$series" 2>/dev/null || true)" = "$debver" ]; then
        tarball=$(ls /usr/src/linux-source-"$series".tar.*)
    else
        d=$("$VGPU_TOP/scripts/fetch-debs.sh" "$suite" "linux-source-$series=$debver")
        rm -rf "$src.deb" && dpkg-deb -x "$d" "$src.deb"
        tarball=$(ls "$src.deb/usr/src/linux-source-$series".tar.*)
    fi
    echo "stock-kernel: unpacking $(basename "$tarball") $debver"
    rm -rf "$src" && mkdir -p "$src"
    tar -C "$src" --strip-components=1 -xf "$tarball"
    rm -rf "$src.deb"
    touch "$src/.vgpu-unpacked"
fi
flock -u 9

rm -rf "$out" && mkdir -p "$out/debs" "$out/headers" "$out/build" "$out/overlay"
for d in "${debs[@]}"; do
    cp "$d" "$out/debs/"
    dpkg-deb -x "$d" "$out/headers"
done
hdr="$out/headers/usr/src/linux-headers-$krel"
[ -f "$hdr/.config" ] || { echo "stock-kernel: $krel's headers have no .config" >&2; exit 1; }
if ! grep -qx 'CONFIG_RUST=y' "$hdr/.config"; then
    echo "stock-kernel: $krel is built without CONFIG_RUST: no Rust module can load into it" >&2
    exit 1
fi
# Debian's make variables (ARCH, KERNELRELEASE, CROSS_COMPILE, CC).
{
    echo "ARCH=x86"
    echo "KERNELRELEASE=$krel"
    sed -n 's/^override CROSS_COMPILE = \(.*\)$/CROSS_COMPILE=\1/p' "$hdr/.kernelvariables"
    echo "CC=$(sed -n 's/^override CROSS_COMPILE = \(.*\)$/\1/p' "$hdr/.kernelvariables")$(sed -n 's/^CC = .*(CROSS_COMPILE)\(.*\)$/\1/p' "$hdr/.kernelvariables")"
} > "$out/build/kbuild.env"
cp "$hdr/.config" "$out/build/.config"

# 2-4 run in the trixie root: its gcc, rustc and bindgen are Debian's.
cat > "$out/prepare.sh" <<'EOF'
#!/bin/bash
set -euo pipefail
src=$1 out=$2 hdr=$3
mapfile -t kv < "$out/build/kbuild.env"
cfg() { sed -n "s/^$1=\"\(.*\)\"\$/\1/p" "$hdr/.config"; }
cc=$(sed -n 's/^CC=//p' "$out/build/kbuild.env")
refuse=0
check() { # WHAT CONFIG_NAME HAVE WHERE
    local want; want=$(cfg "$2")
    if [ "$3" != "$want" ]; then
        echo "stock-kernel: REFUSED: the kernel was built with $1 \"$want\" ($2)," >&2
        echo "  but the build root has \"$3\". $4" >&2
        refuse=1
    fi
}
rv=$(cfg CONFIG_RUSTC_VERSION_TEXT | awk '{print $2}')
check rustc CONFIG_RUSTC_VERSION_TEXT "$(rustc --version 2>/dev/null || echo none)" \
    "Rust modules load only when built by that exact rustc (the crate hash in every Rust symbol is a function of its full version string): install Debian's rustc and rust-src $rv (packages rustc=$rv+dfsg1-*, in trixie main; 'apt-cache madison rustc'), not a rustup or backports one."
check bindgen CONFIG_BINDGEN_VERSION_TEXT "$(bindgen --version 2>/dev/null || echo none)" \
    "Install Debian's bindgen $(cfg CONFIG_BINDGEN_VERSION_TEXT | awk '{print $2}') (package bindgen, trixie main)."
check gcc CONFIG_CC_VERSION_TEXT "$("$cc" --version 2>/dev/null | head -1 || echo none)" \
    "Install the gcc that built the kernel (the version in the string; Debian package ${cc#x86_64-linux-gnu-}, trixie main)."
[ "$refuse" = 0 ] || exit 3

mk=(make -C "$src" O="$out/build" "${kv[@]}" -j"$(nproc)")
"${mk[@]}" -s olddefconfig
if ! cmp -s "$hdr/.config" "$out/build/.config"; then
    echo "stock-kernel: REFUSED: 'make olddefconfig' changes Debian's .config with this toolchain:" >&2
    diff "$hdr/.config" "$out/build/.config" | grep '^[<>]' | head -20 >&2
    exit 3
fi
t0=$SECONDS
"${mk[@]}" -s modules_prepare
echo "stock-kernel: modules_prepare in $((SECONDS - t0)) s"
cp "$hdr/Module.symvers" "$hdr/vmlinux" "$out/build/"
# 4. The rebuilt crates export exactly what the kernel image exports.
sed -n 's/^EXPORT_SYMBOL_RUST_GPL(\(.*\));$/\1/p' "$out"/build/rust/exports_*_generated.h | sort -u > "$out/rust-exports"
awk '{print $2}' "$hdr/Module.symvers" | sort -u > "$out/symvers-names"
missing=$(comm -23 "$out/rust-exports" "$out/symvers-names" | wc -l)
total=$(wc -l < "$out/rust-exports")
kernel_rust=$(grep -c '^_R' "$out/symvers-names" || true)
ours_rust=$(grep -c '^_R' "$out/rust-exports" || true)
echo "stock-kernel: rust exports: $total ($ours_rust Rust-mangled; the kernel's Module.symvers has $kernel_rust), missing from it: $missing"
if [ "$missing" != 0 ] || [ "$total" = 0 ] || [ "$ours_rust" != "$kernel_rust" ]; then
    comm -23 "$out/rust-exports" "$out/symvers-names" | head -5 >&2
    echo "stock-kernel: REFUSED: the rebuilt Rust crates are not the ones in the kernel image (another rustc, rust-src or source version)" >&2
    exit 3
fi
EOF
chmod +x "$out/prepare.sh"
echo "stock-kernel: preparing $krel ($debver) in the trixie root"
if ! "$VGPU_TOP/scripts/trixie-chroot.sh" run nice "$out/prepare.sh" "$src" "$out" "$hdr"; then
    echo "stock-kernel: $krel: no build tree (see above)" >&2
    exit 1
fi

# 5. The overlay: what the headers package lacks, where it would install it.
ov_rust="$out/overlay/usr/src/linux-headers-$krel/rust"
ov_scripts="$out/overlay/usr/lib/linux-kbuild-$abi/scripts"
mkdir -p "$ov_rust" "$ov_scripts"
cp "$out"/build/rust/*.rmeta "$ov_rust/"
for so in "$out"/build/rust/*.so; do
    strip --strip-unneeded -o "$ov_rust/$(basename "$so")" "$so"
done
cp "$out/build/scripts/target.json" "$ov_scripts/"
echo "stock-kernel: overlay $(find "$out/overlay" -type f | wc -l) files, $(du -sh "$out/overlay" | cut -f1)"
image
touch "$out/.vgpu-complete"
ln -sfn "$out/build" "$link"
echo "stock-kernel: $out"
