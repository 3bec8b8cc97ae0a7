#!/usr/bin/env bash
# Install everything vgpu needs to build and test, from the package registries
# (Debian's archive and crates.io). Idempotent: a second run checks and exits
# in seconds.
#
# What it installs:
#   - kernel build deps: bc bison flex libelf-dev libssl-dev cpio
#   - VM: qemu-system-x86 busybox-static, and podman crun runc conmon (copied into
#     the VM for the containers suite, scripts/podman-root.sh)
#   - packages: dkms lintian (scripts/test-packages.sh)
#   - debootstrap, for the trixie root Debian's stock kernel is matched in
#     (scripts/trixie-chroot.sh, scripts/stock-kernel.sh)
#   - python3-venv, for the manifests' validator (scripts/validate-manifests.sh)
#   - protobuf-compiler: protoc for the DRA plugin's gRPC code (userspace/dra)
#   - libclang >= 17 (bookworm's libclang-19-dev), for bindgen and Kconfig's
#     CONFIG_RUST check
#   - from trixie-backports (pinned low so nothing else upgrades):
#     linux-source-7.3 and the rust-src matching the machine's rustc
#   - bindgen-cli and cbindgen from crates.io
# NVIDIA's open modules come later, from Debian's archive through a private
# apt state (scripts/fetch-debs.sh, scripts/build-nvidia.sh), not from here.
#
#   scripts/setup-toolchain.sh [--stock-only]
#
# --stock-only (scripts/vm.sh on the stock kernel, so `make demo`): what a
# VM run on Debian's stock kernel needs, and not what building a kernel,
# the packages or the host checks need (clang/LLVM 19, the kernel's host
# build deps, rust-src, dwarves, dkms, lintian, python3-venv, bindgen,
# cbindgen): the modules are built in the trixie root, by Debian's own
# compiler and bindgen. A fresh machine's `make demo` saves the two cargo
# installs (160 s) and LLVM's packages; `make test` installs the rest.
set -euo pipefail

. "$(dirname "$0")/env.sh"

stock_only=""
case "${1:-}" in
"") ;;
--stock-only) stock_only=1 ;;
*) echo "usage: $0 [--stock-only]" >&2; exit 2 ;;
esac

# A VM run on the stock kernel: the VM, what is copied into it, the trixie
# root, Debian's kernel source (unpacked there) and the DRA plugin's protoc.
want=(cpio xz-utils zstd patch qemu-system-x86 busybox-static podman crun runc conmon
      protobuf-compiler debootstrap)
[ -n "$stock_only" ] || want+=(bc bison flex libelf-dev libssl-dev libclang-19-dev clang-19 lld-19
                               llvm-19 dkms lintian python3-venv dwarves)
need_apt=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need_apt+=("$p")
done

src_pkg="linux-source-${VGPU_KERNEL_SERIES}"
rustsrc_ver="${VGPU_RUST_SRC_VERSION}"
dpkg-query -W -f='${Status}' "$src_pkg" 2>/dev/null | grep -q "ok installed" || need_apt+=("$src_pkg")
if [ -z "$stock_only" ] && [ "$(dpkg-query -W -f='${Version}' rust-src 2>/dev/null || true)" != "$rustsrc_ver" ]; then
    need_apt+=("rust-src=$rustsrc_ver")
fi

if [ ${#need_apt[@]} -gt 0 ]; then
    codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
    mirror=$(vgpu_debian_mirror)
    if [ "$codename" != trixie ] && [ ! -f /etc/apt/sources.list.d/vgpu-trixie-backports.sources ]; then
        cat > /etc/apt/sources.list.d/vgpu-trixie-backports.sources <<SRC
Types: deb
URIs: ${mirror}
Suites: trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        cat > /etc/apt/preferences.d/vgpu-trixie-backports <<PIN
Package: *
Pin: release n=trixie-backports
Pin-Priority: 50
PIN
    fi
    echo "setup: installing ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -t bookworm "${need_apt[@]/#/}" 2>/dev/null \
      || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

# Rust side: the kernel wants rustfmt/clippy for checks; bindgen and cbindgen.
tools=""
if [ -z "$stock_only" ]; then
    rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
    rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
    if ! bindgen --version 2>/dev/null | grep -q "bindgen ${VGPU_BINDGEN_VERSION}"; then
        cargo install --locked --version "~${VGPU_BINDGEN_VERSION}" bindgen-cli
    fi
    if ! cbindgen --version 2>/dev/null | grep -q "cbindgen ${VGPU_CBINDGEN_VERSION}"; then
        cargo install --locked --version "~${VGPU_CBINDGEN_VERSION}" cbindgen
    fi
    tools="bindgen $(bindgen --version | cut -d' ' -f2), "
fi

echo "setup: toolchain ready${stock_only:+ for the stock kernel} (rustc $(rustc --version | cut -d' ' -f2), ${tools}$(ls -d /usr/src/linux-source-${VGPU_KERNEL_SERIES}* | head -1))"
