#!/usr/bin/env bash
# vgpu-dkms on Debian's stock kernel, as an operator of Debian trixie gets
# it, in a throwaway copy of the trixie root (scripts/trixie-chroot.sh):
#   1. vgpu-kbuild-rust-KREL lintian-clean; Debian's linux-headers-KREL
#      installed with dpkg, then vgpu-dkms;
#   2. `dkms build` fails, saying the headers lack the kernel's Rust build
#      products (Debian ships none);
#   3. a kernel without CONFIG_RUST is refused by name (BUILD_EXCLUSIVE);
#   4. with vgpu-kbuild-rust-KREL installed (scripts/package.sh
#      --kbuild-rust), `dkms build` builds vgpu.ko with the stock kernel's
#      vermagic, against the driver double's Module.symvers;
#   5. a rustc on PATH that is not the kernel's is refused by name.
# Prints "stock-dkms: N passed, M failed" (scripts/test.sh reads it).
set -uo pipefail
. "$(dirname "$0")/env.sh"
cd "$VGPU_TOP"

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
finish() {
    echo "stock-dkms: $passed passed, $failed failed"
    [ "$failed" = 0 ]
    exit
}

krel=$VGPU_STOCK_KREL
abi=${krel%-*}
if ! scripts/build-modules.sh stock >/dev/null; then
    bad "modules(stock) for the double's Module.symvers"; finish
fi
out=$VGPU_TOP/build/deb-stock
rm -rf "$out"
if scripts/package.sh "$out" >/dev/null && scripts/package.sh --kbuild-rust "$out" >/dev/null; then
    ok "vgpu-dkms and vgpu-kbuild-rust-$krel built"
else
    bad "scripts/package.sh"; finish
fi
report=$(lintian --tag-display-limit 0 "$out"/vgpu-kbuild-rust-*.deb 2>/dev/null)
[ -n "$report" ] && echo "$report"
if [ -z "$(echo "$report" | grep '^E:')" ]; then ok "lintian vgpu-kbuild-rust-$krel: no errors"; else bad "lintian vgpu-kbuild-rust-$krel"; fi
mapfile -t kdebs < <(scripts/fetch-debs.sh "$VGPU_STOCK_DEB_SUITE" \
    "linux-headers-$krel=$VGPU_STOCK_DEB_VERSION" "linux-headers-$abi-common=$VGPU_STOCK_DEB_VERSION" \
    "linux-kbuild-$abi=$VGPU_STOCK_DEB_VERSION" "linux-base-$krel=$VGPU_STOCK_DEB_VERSION")

tmp=$VGPU_TOP/build/stock-dkms-root
rm -rf "$tmp" && mkdir -p "$tmp"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' userspace/Cargo.toml | head -1)
symvers=$VGPU_TOP/build/mod-stock/selftests/nvidia/Module.symvers
# The run inside the root: one line "RESULT ok|FAIL what" per check.
cat > "$tmp/run.sh" <<'EOF'
#!/bin/bash
set -u
krel=$1 version=$2 symvers=$3 dkmsdeb=$4 rustdeb=$5 want=$6; shift 6
res() { echo "RESULT $1 $2"; }
export NVIDIA_SYMVERS=$symvers
dpkg -i "$@" >/tmp/dpkg.log 2>&1 && res ok "dpkg installs Debian's linux-headers-$krel" ||
    { cat /tmp/dpkg.log; res FAIL "dpkg installs linux-headers-$krel"; }
# The postinst builds for the installed kernels: this one is skipped
# (step 2), and the package installs.
dpkg -i "$dkmsdeb" >/tmp/dpkg.log 2>&1
[ "$(dpkg-query -W -f='${Status}' vgpu-dkms)" = "install ok installed" ] &&
    res ok "vgpu-dkms installs, skipping the kernel it cannot build for" ||
    { cat /tmp/dpkg.log; res FAIL "vgpu-dkms installs"; }
log=/var/lib/dkms/vgpu/$version/build/make.log
dkms build -m vgpu -v "$version" -k "$krel" >/tmp/dkms.log 2>&1
rc=$?
if [ "$rc" != 77 ]; then
    cat /tmp/dkms.log; res FAIL "dkms build without the Rust build products: rc $rc, not 77"
elif grep -q "lacks the kernel's Rust build products" "$log" && grep -q "install vgpu-kbuild-rust-$krel" "$log"; then
    res ok "without the Rust build products: refused, naming them and vgpu-kbuild-rust-$krel"
    grep -m2 '^vgpu:' "$log"
else
    cat /tmp/dkms.log "$log"; res FAIL "refusal without the Rust build products says why"
fi
# A kernel built without Rust: the same headers, CONFIG_RUST off.
norust=/tmp/norust
cp -a "/usr/src/linux-headers-$krel" "$norust"
sed -i 's/^CONFIG_RUST=y$/# CONFIG_RUST is not set/' "$norust/.config"
sed -i '/^CONFIG_RUST=y$/d' "$norust/include/config/auto.conf"
dkms build -m vgpu -v "$version" -k "$krel" --kernelsourcedir "$norust" >/tmp/dkms.log 2>&1
rc=$?
if [ "$rc" = 77 ] && grep -q 'BUILD_EXCLUSIVE' /tmp/dkms.log; then
    res ok "a kernel without CONFIG_RUST: skipped (rc 77), dkms names BUILD_EXCLUSIVE (CONFIG_RUST)"
else
    cat /tmp/dkms.log; res FAIL "a kernel without CONFIG_RUST is refused (rc $rc)"
fi
PRE=$(sh "/usr/src/vgpu-$version/dkms-check-kernel.sh" "$norust")
if echo "$PRE" | grep -q 'without CONFIG_RUST=y'; then
    res ok "the pre-build check names CONFIG_RUST"
else
    echo "$PRE"; res FAIL "the pre-build check names CONFIG_RUST"
fi
dpkg -i "$rustdeb" >/tmp/dpkg.log 2>&1 && res ok "vgpu-kbuild-rust-$krel installs (its rustc is the root's)" ||
    { cat /tmp/dpkg.log; res FAIL "vgpu-kbuild-rust-$krel installs"; }
# Its postinst has dkms build and install vgpu for the kernel.
if dkms status -m vgpu -v "$version" -k "$krel" | grep -q ': installed'; then
    res ok "installing vgpu-kbuild-rust-$krel has dkms install vgpu for it"
else
    cat /tmp/dpkg.log; res FAIL "vgpu not installed by vgpu-kbuild-rust's postinst"
fi
t0=$SECONDS
if dkms build --force -m vgpu -v "$version" -k "$krel" >/tmp/dkms.log 2>&1; then
    res ok "dkms build on the stock headers ($((SECONDS - t0)) s)"
else
    cat /tmp/dkms.log; tail -40 "$log"; res FAIL "dkms build on the stock headers"
fi
ko=$(find "/var/lib/dkms/vgpu/$version/$krel" -name 'vgpu.ko*' | head -1)
vm=$(modinfo -F vermagic "$ko" 2>/dev/null)
if [ -n "$ko" ] && [ -n "$want" ] && [ "$vm" = "$want" ]; then
    res ok "vgpu.ko's vermagic is the stock kernel's modules' ('$vm')"
else
    res FAIL "vermagic of '$ko': '$vm', the kernel's: '$want'"
fi
# Another rustc on PATH (rustup's, backports'): refused by name.
mkdir -p /tmp/fake && printf '#!/bin/sh\necho "rustc 1.97.1 (ed61e7d7e 2026-09-01) (built from a source tarball)"\n' > /tmp/fake/rustc
chmod +x /tmp/fake/rustc
if PATH=/tmp/fake:$PATH dkms build --force -m vgpu -v "$version" -k "$krel" >/tmp/dkms.log 2>&1; then
    res FAIL "dkms build with another rustc should fail"
elif grep -q 'but rustc on PATH is "rustc 1.97.1' "$log" && grep -q "rustc 1.85.1" "$log"; then
    res ok "another rustc on PATH: refused, naming both"
else
    cat /tmp/dkms.log "$log"; res FAIL "refusal of another rustc says why"
fi
EOF
chmod +x "$tmp/run.sh"
# The stock kernel's vermagic, as its own modules (linux-modules-KREL) carry it.
stock=$(dirname "$(readlink -f build/kernel-stock)")
vermagic=$(modinfo -F vermagic "$(find "$stock/image" -name 'loop.ko*' | head -1)")
[ -n "$vermagic" ] || { bad "no vermagic from Debian's loop module"; finish; }
dkmsdeb=$(ls "$out"/vgpu-dkms_*.deb)
rustdeb=$(ls "$out"/vgpu-kbuild-rust-*.deb)
t0=$SECONDS
results=$(scripts/trixie-chroot.sh overlay "$tmp/ov" "$tmp/run.sh" "$krel" "$version" "$symvers" \
    "$dkmsdeb" "$rustdeb" "$vermagic" "${kdebs[@]}" 2>&1)
echo "$results" | grep -v '^RESULT '
while read -r _ r what; do
    if [ "$r" = ok ]; then ok "$what"; else bad "$what"; fi
done < <(echo "$results" | grep '^RESULT ')
[ "$passed" -ge 12 ] || bad "the run in the trixie root stopped early"
echo "stock-dkms: ran in $((SECONDS - t0)) s"
rm -rf "$tmp"
finish
