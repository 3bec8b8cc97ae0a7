#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dkms.conf's PRE_BUILD: can vgpu, a Rust module, be built for this kernel?
#
#   dkms-check-kernel.sh KERNEL_SOURCE_DIR
#
# A Rust module loads only when it is built against the kernel's own Rust
# build products (rust/*.rmeta, rust/*.so, scripts/target.json) by the very
# rustc that built the kernel: the crate hash in every Rust symbol is a
# function of rustc's full version string. Refuses, saying why, when the
# kernel has no CONFIG_RUST, its build tree lacks the Rust products
# (Debian's linux-headers: install vgpu-kbuild-rust-<kernel>), or the rustc
# on PATH is not the kernel's (docs/operators.md, "Kernels"). Exits 77, as
# dkms's own BUILD_EXCLUSIVE does: `dkms build` fails with that status, and
# the package's install skips the kernel instead of failing (dkms builds it
# once vgpu-kbuild-rust-<kernel> is installed).
kdir=$1
skip=77
say() {
    echo "vgpu: $*"
    # dkms keeps a pre-build script's output in make.log: show it on the
    # terminal too when there is one.
    (true > /dev/tty) 2>/dev/null && echo "vgpu: $*" > /dev/tty
    return 0
}
kver=$(cat "$kdir/include/config/kernel.release" 2>/dev/null || basename "$(dirname "$kdir")")
config=$kdir/.config
if [ ! -f "$config" ]; then
    say "no .config in $kdir: install the headers of kernel $kver"
    exit $skip
fi
if ! grep -q '^CONFIG_RUST=y' "$config"; then
    say "kernel $kver is built without CONFIG_RUST=y: it cannot load Rust modules; vgpu needs a Rust-enabled Linux 7.3"
    exit $skip
fi
missing=
for f in scripts/target.json rust/libcore.rmeta rust/libkernel.rmeta rust/libmacros.so; do
    [ -e "$kdir/$f" ] || missing="$missing $f"
done
if [ -n "$missing" ]; then
    say "the build tree of kernel $kver ($kdir) lacks the kernel's Rust build products:$missing."
    say "Distribution header packages such as Debian's do not ship them: install vgpu-kbuild-rust-$kver, or make them with vgpu's scripts/stock-kernel.sh (docs/operators.md, \"Kernels\")"
    exit $skip
fi
want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\(.*\)"$/\1/p' "$config")
have=$(rustc --version 2>/dev/null || echo "no rustc on PATH")
if [ "$have" != "$want" ]; then
    say "kernel $kver was built by \"$want\", but rustc on PATH is \"$have\"."
    say "Rust modules load only when built by the kernel's exact rustc (its full version string): install that one (Debian: packages rustc and rust-src of the version the kernel was built with, e.g. trixie's for Debian's 7.3 kernels)"
    exit $skip
fi
# The rust/*.rmeta record the rustc that wrote them: they must be the
# kernel's too (another rustc cannot read them, E0514).
if ! head -c 4096 "$kdir/rust/libkernel.rmeta" | grep -aqF "$want"; then
    say "$kdir/rust/libkernel.rmeta was not written by \"$want\": rebuild the kernel's Rust products with that rustc"
    exit $skip
fi
say "kernel $kver: CONFIG_RUST=y, Rust build products present, rustc \"$have\" is the kernel's"
exit 0
