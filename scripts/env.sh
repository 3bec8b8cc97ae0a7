# Shared settings for vgpu's scripts. Sourced, not run.
# shellcheck shell=bash
VGPU_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export VGPU_TOP
export VGPU_KERNEL_SERIES=7.3
export VGPU_RUST_SRC_VERSION="1.95.0+dfsg1-2~bpo13+1"
export VGPU_BINDGEN_VERSION=0.73
# include/vgpu.h is generated with this cbindgen (scripts/gen-uapi.sh).
export VGPU_CBINDGEN_VERSION=0.29
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
export RUST_LIB_SRC=/usr/src/rustc-1.95.0/library
export PATH="$HOME/.cargo/bin:/usr/lib/llvm-19/bin:$PATH"
# Where built kernels are cached, keyed by the hash of their inputs.
export VGPU_CACHE="${VGPU_CACHE:-$HOME/.cache/vgpu}"
# NVIDIA's open kernel modules, from Debian's archive (scripts/fetch-debs.sh,
# scripts/build-nvidia.sh): nvidia-open-kernel-source in trixie contrib.
export VGPU_NVIDIA_OPEN_DEB_SUITE=trixie
export VGPU_NVIDIA_OPEN_DEB_VERSION=550.163.01-2
# Debian's stock kernel (scripts/stock-kernel.sh, the `stock` VM variant):
# its release, its packages' version and where they are.
export VGPU_STOCK_KREL=7.3.4+deb13-amd64
export VGPU_STOCK_DEB_VERSION=7.3.4-1~bpo13+1
export VGPU_STOCK_DEB_SUITE=trixie-backports

# The Debian mirror the host's apt uses (first URI of the main sources),
# or deb.debian.org.
vgpu_debian_mirror() {
    local m
    m=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null \
        | grep -o 'https\?://[^ ]*debian/\?' | head -n1 || true)
    echo "${m:-http://deb.debian.org/debian/}"
}
