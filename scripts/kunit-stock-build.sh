#!/usr/bin/env bash
# The KUnit tests built by the oldest rustc vgpu supports (trixie's 1.85.1,
# the compiler of Debian's stock kernel), compile only. Debian's kernel has
# no CONFIG_KUNIT, so the stock lane builds vgpu without its KUnit suites
# and has no kclient_test; they run on the debug kernel (rustc 1.95).
#
# In Linux 7.3 the kernel crate's `kunit` module exists only with
# CONFIG_KUNIT (rust/kernel/lib.rs), so a cfg flag on the stock tree is not
# enough: this prepares, in the trixie root, a tree of Debian's 7.3 source
# with Debian's .config plus CONFIG_KUNIT (olddefconfig, modules_prepare:
# the Rust crates again, a few minutes, cached in $VGPU_CACHE by the hash
# of its recipe), and builds vgpu.ko with its KUnit suites, the double and
# nvidia_kclient_test.ko against it, warnings (objtool's too) as errors.
# Nothing runs: no kernel image is built from that tree. modpost cannot
# know KUnit's exports (the tree has Debian's Module.symvers, which lacks
# them), so its "undefined" for KUnit's C symbols and the kernel crate's
# kunit module is the one warning let through.
#
#   scripts/kunit-stock-build.sh      prints "kunit-1.85: N passed, M failed"
set -uo pipefail
. "$(dirname "$0")/env.sh"
cd "$VGPU_TOP"

passed=0 failed=0
finish() { echo "kunit-1.85: $passed passed, $failed failed"; [ "$failed" = 0 ]; exit; }
scripts/stock-kernel.sh >/dev/null || { failed=1; finish; }
stock=$(readlink -f build/kernel-stock)
src=$(readlink -f "$stock/source")
# Bump the recipe's first word when how the tree is made changes.
recipe="v1 $(basename "$(dirname "$stock")") CONFIG_KUNIT=y"
key=$(echo "$recipe" | sha256sum | cut -c1-16)
tree="$VGPU_CACHE/stock-kunit-$VGPU_STOCK_KREL-$key"
mapfile -t kv < "$stock/kbuild.env"
in_root=(scripts/trixie-chroot.sh run nice -n 10)

exec 9>"$VGPU_CACHE/.stock-kunit.lock"
flock 9
if [ ! -f "$tree/.vgpu-complete" ]; then
    rm -rf "$tree" && mkdir -p "$tree"
    cp "$stock/.config" "$tree/.config"
    printf 'CONFIG_KUNIT=y\nCONFIG_KUNIT_DEFAULT_ENABLED=y\n' >> "$tree/.config"
    cp "$stock/Module.symvers" "$tree/"
    t0=$SECONDS
    if ! "${in_root[@]}" make -C "$src" O="$tree" "${kv[@]}" -j"$(nproc)" -s olddefconfig modules_prepare \
            >"$tree.log" 2>&1 || ! grep -qx 'CONFIG_KUNIT=y' "$tree/.config"; then
        tail -20 "$tree.log"; echo "FAIL: a KUnit tree of $VGPU_STOCK_KREL with rustc 1.85"; failed=1; finish
    fi
    touch "$tree/.vgpu-complete"
    echo "kunit-1.85: tree prepared in $((SECONDS - t0)) s"
fi
flock -u 9

stage=build/mod-stock-kunit
rm -rf "$stage" && mkdir -p "$stage/selftests"
cp -r src Kbuild "$stage/"
cp -r selftests/nvidia selftests/kclient_test "$stage/selftests/"
# kmake WHAT M=DIR [ARGS]: one module directory.
kmake() {
    local what=$1 log; shift
    log=$(mktemp)
    if "${in_root[@]}" make -C "$tree" "${kv[@]}" KRUSTFLAGS=-Dwarnings KCFLAGS=-Werror \
            KBUILD_MODPOST_WARN=1 -j"$(nproc)" "$@" modules >"$log" 2>&1 &&
        ! grep -iE '(^|[^-])warning[:\[]' "$log" | grep -vE "WARNING: modpost: [^ ]*: symbol '((__)?kunit_[a-z_]*|_R[A-Za-z0-9_]*5kunit[A-Za-z0-9_]*)' undefined!$" | grep -q .; then
        passed=$((passed + 1)); echo "ok: $what built by $("${in_root[@]}" rustc --version)"
    else
        cat "$log"; failed=$((failed + 1)); echo "FAIL: $what with rustc 1.85"
    fi
    rm -f "$log"
}
kmake "the double" M="$VGPU_TOP/$stage/selftests/nvidia"
syms=KBUILD_EXTRA_SYMBOLS="$VGPU_TOP/$stage/selftests/nvidia/Module.symvers"
kmake "vgpu.ko with its KUnit suites" M="$VGPU_TOP/$stage" "$syms"
kmake "nvidia_kclient_test.ko" M="$VGPU_TOP/$stage/selftests/kclient_test" "$syms"
# The KUnit suites are in the objects, not left out by a cfg.
if grep -qa 'kunit_rust_wrapper_ceiling_is_exact' "$stage/vgpu.ko" &&
    [ -f "$stage/selftests/kclient_test/nvidia_kclient_test.ko" ]; then
    passed=$((passed + 1)); echo "ok: vgpu.ko holds its KUnit suites"
else
    failed=$((failed + 1)); echo "FAIL: no KUnit suite in vgpu.ko"
fi
finish
