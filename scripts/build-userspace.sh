#!/usr/bin/env bash
# Build the userspace workspace's release binaries once, for the test VM's
# initramfs (scripts/initramfs.sh) and the Debian packages
# (scripts/package.sh) alike: vgpu-selftest, vgpuctl, vgpu-dra-plugin,
# vgpu-dra-testkubelet and the man page generators, statically linked (the
# initramfs and the containers' root filesystem have no libc), in
# build/guest-target/x86_64-unknown-linux-gnu/release/.
#
# One build instead of two (a static one for the VM and a dynamic one for
# the packages) saves a fresh machine a whole release build of the
# workspace's dependencies.
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$VGPU_TOP/userspace"
CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static" \
cargo build -q --release --target x86_64-unknown-linux-gnu --target-dir "$VGPU_TOP/build/guest-target" \
    -p vgpu-selftest -p vgpuctl -p vgpu-dra --bins --example mangen --example dra-mangen
