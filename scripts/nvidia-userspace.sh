#!/usr/bin/env bash
# NVIDIA's own userspace, as Debian ships it (non-free), for the test VM:
# nvidia-smi, NVML (libnvidia-ml.so.1) and the CUDA driver library
# (libcuda.so.1) of one driver release, plus three programs of ours that
# drive and observe them (selftests/nvprobe: nvtrace.so, an LD_PRELOAD
# ioctl tracer; cuprobe, which reports cuInit and friends; nvmlprobe,
# which reports nvmlInit and a monitoring agent's device queries).
#
#   scripts/nvidia-userspace.sh ROOT [RELEASE]     (RELEASE: 550.163.01)
#   scripts/nvidia-userspace.sh --probes-only ROOT (just the probes)
#
# Installs into the initramfs tree ROOT:
#   /opt/nvidia-RELEASE/bin/nvidia-smi
#   /opt/nvidia-RELEASE/lib/{libnvidia-ml,libcuda,libnvidia-ptxjitcompiler}.so.1
#   /bin/nvidia-smi-RELEASE   runs that nvidia-smi with that release's libraries
#   /bin/cuprobe-RELEASE      runs cuprobe with that release's libcuda
#   /bin/nvmlprobe-RELEASE    runs nvmlprobe with that release's NVML
#   /bin/nvidia-run-RELEASE CMD [ARG...]  runs CMD with that release's libraries
#   /bin/nvtrace.so, /bin/cuprobe, /bin/nvmlprobe
#   the glibc libraries they load, this machine's (/lib64, /lib/x86_64-linux-gnu,
#   as scripts/podman-root.sh lays them out, which copies the same files).
# Several releases coexist in one ROOT (call the script once for each).
#
# In the guest, e.g.:
#   NVTRACE_LOG=/tmp/t LD_PRELOAD=/bin/nvtrace.so nvidia-smi-550.163.01
#   NVTRACE_LOG=/tmp/t LD_PRELOAD=/bin/nvtrace.so cuprobe-550.163.01
#
# The releases and where Debian has them (the package versions are exact,
# so a cached download is reused: $VGPU_CACHE/debs, unpacked under
# $VGPU_CACHE/nvidia-userspace/<package>_<version>):
#   550.163.01  trixie non-free    550.163.01-2
#   535.261.03  bookworm non-free  535.261.03-1
# Nothing is installed on this machine; the .debs are fetched by
# scripts/fetch-debs.sh (private apt lists) and unpacked with dpkg-deb -x.
# NVIDIA's files are copied as shipped (not stripped) and never committed.
set -euo pipefail
. "$(dirname "$0")/env.sh"

usage() { echo "usage: $0 [--probes-only] ROOT [RELEASE]" >&2; exit 2; }
probes_only=0
if [ "${1:-}" = --probes-only ]; then probes_only=1; shift; fi
root=${1:-}
[ -n "$root" ] || usage
release=${2:-550.163.01}
[ -d "$root" ] || { echo "nvidia-userspace: $root is not a directory" >&2; exit 1; }
root=$(cd "$root" && pwd)

# Which Debian suite ships a release, and the package version.
suite_of() {
    case "$1" in
    550.163.01) echo "trixie 550.163.01-2" ;;
    535.261.03) echo "bookworm 535.261.03-1" ;;
    *) return 1 ;;
    esac
}

# The packages: nvidia-smi (the program), libnvidia-ml1 (NVML, which it
# dlopens), libcuda1 (libcuda.so.1) and libnvidia-ptxjitcompiler1 (the
# PTX JIT, 28 MB, which libcuda dlopens to load PTX: cuprobe --launch).
packages=(nvidia-smi libnvidia-ml1 libcuda1 libnvidia-ptxjitcompiler1)
libs=(libnvidia-ml.so.1 libcuda.so.1 libnvidia-ptxjitcompiler.so.1)

probe_dir="$VGPU_TOP/build/nvprobe"

# Builds nvtrace.so, cuprobe and nvmlprobe with this machine's gcc, dynamically
# against its glibc (they need nothing newer than GLIBC_2.34, so they run
# under a newer libc as well).
build_probes() {
    local src="$VGPU_TOP/selftests/nvprobe"
    mkdir -p "$probe_dir"
    local cflags=(-O2 -g -Wall -Wextra -Werror)
    if [ ! "$probe_dir/nvtrace.so" -nt "$src/nvtrace.c" ]; then
        nice -n 19 gcc "${cflags[@]}" -shared -fPIC -o "$probe_dir/nvtrace.so.tmp" "$src/nvtrace.c" -ldl
        mv "$probe_dir/nvtrace.so.tmp" "$probe_dir/nvtrace.so"
    fi
    if [ ! "$probe_dir/cuprobe" -nt "$src/cuprobe.c" ]; then
        nice -n 19 gcc "${cflags[@]}" -o "$probe_dir/cuprobe.tmp" "$src/cuprobe.c" -ldl
        mv "$probe_dir/cuprobe.tmp" "$probe_dir/cuprobe"
    fi
    if [ ! "$probe_dir/nvmlprobe" -nt "$src/nvmlprobe.c" ]; then
        nice -n 19 gcc "${cflags[@]}" -o "$probe_dir/nvmlprobe.tmp" "$src/nvmlprobe.c" -ldl
        mv "$probe_dir/nvmlprobe.tmp" "$probe_dir/nvmlprobe"
    fi
}

# Copies the shared libraries that FILE... load (ldd) into ROOT under the
# same paths, where ROOT has none yet (scripts/podman-root.sh copies the
# same glibc from the same place).
copy_host_libs() {
    ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/lib64\// { print $1 }' | sort -u |
    while read -r lib; do
        case "$lib" in
        /lib64/*) dest="$root/lib64" ;;
        *) dest="$root/lib/x86_64-linux-gnu" ;;
        esac
        mkdir -p "$dest"
        [ -e "$dest/$(basename "$lib")" ] || cp -L "$lib" "$dest/"
    done
}

# The newest GLIBC_x.y symbol version FILE... need ("2.2.5" if none).
glibc_needed() {
    objdump -T "$@" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1
}

# Unpacks PACKAGE (=VERSION, or the suite's candidate when VERSION is
# empty) from SUITE, once, and prints where:
# $VGPU_CACHE/nvidia-userspace/PACKAGE_VERSION (or PACKAGE_SUITE).
unpack() {
    local suite=$1 pkg=$2 ver=$3
    local dir="$VGPU_CACHE/nvidia-userspace/${pkg}_${ver:-$suite}"
    local fetcher="$VGPU_TOP/scripts/fetch-debs.sh" debs
    if [ ! -f "$dir/.complete" ]; then
        [ -x "$fetcher" ] || { echo "nvidia-userspace: $fetcher missing" >&2; return 1; }
        debs=$("$fetcher" "$suite" "$pkg${ver:+=$ver}" | grep '\.deb$')
        [ "$(printf '%s\n' "$debs" | grep -c .)" -eq 1 ] ||
            { echo "nvidia-userspace: fetch-debs gave '$debs' for $pkg${ver:+=$ver}" >&2; return 1; }
        rm -rf "$dir"
        mkdir -p "$dir"
        dpkg-deb -x "$debs" "$dir"
        touch "$dir/.complete"
    fi
    echo "$dir"
}

# Where Debian puts NAME in the unpacked tree DIR: nvidia-smi in
# /usr/lib/nvidia/current/, the libraries in
# /usr/lib/x86_64-linux-gnu/nvidia/current/ (the alternatives system links
# them into place on an installed system).
shipped() {
    local name=$1 dir f
    for dir in "${unpacked[@]}"; do
        for f in "$dir/usr/lib/nvidia/current/$name" "$dir/usr/lib/x86_64-linux-gnu/nvidia/current/$name"; do
            [ -e "$f" ] && { echo "$f"; return 0; }
        done
    done
    echo "nvidia-userspace: no $name in ${unpacked[*]}" >&2
    return 1
}

if [ "$probes_only" = 0 ]; then
    read -r suite debver < <(suite_of "$release") ||
        { echo "nvidia-userspace: release $release unknown (known: 550.163.01, 535.261.03)" >&2; exit 1; }
fi
build_probes
before=$(du -sk "$root" | cut -f1)
mkdir -p "$root/bin"
install -m 0755 "$probe_dir/nvtrace.so" "$probe_dir/cuprobe" "$probe_dir/nvmlprobe" "$root/bin/"
copy_host_libs "$probe_dir/nvtrace.so" "$probe_dir/cuprobe" "$probe_dir/nvmlprobe"
if [ "$probes_only" = 1 ]; then
    echo "nvidia-userspace: probes in $root/bin"
    exit 0
fi

unpacked=()
for p in "${packages[@]}"; do unpacked+=("$(unpack "$suite" "$p" "$debver")"); done

opt="/opt/nvidia-$release"
rm -rf "${root:?}$opt"
mkdir -p "$root$opt/bin" "$root$opt/lib"
# Real files, not the packages' symlinks: the soname is what the loader
# and dlopen ask for.
cp -L "$(shipped nvidia-smi)" "$root$opt/bin/nvidia-smi"
for so in "${libs[@]}"; do
    cp -L "$(shipped "$so")" "$root$opt/lib/$so"
done
chmod 0755 "$root$opt/bin/nvidia-smi"

# glibc: this machine's, as for podman (the same files). NVIDIA builds
# against an old glibc (550 and 535 need GLIBC_2.9 at most), so any
# current host has a new enough one.
objs=("$root$opt/bin/nvidia-smi" "$root$opt/lib/"*.so.1)
need=$(glibc_needed "${objs[@]}")
have=$(getconf GNU_LIBC_VERSION | awk '{ print $2 }')
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | tail -1)" != "$have" ]; then
    echo "nvidia-userspace: NVIDIA $release needs glibc $need, this machine has $have" >&2
    exit 1
fi
LD_LIBRARY_PATH="$root$opt/lib" copy_host_libs "${objs[@]}"
libpath="$opt/lib"

# The wrappers. LD_LIBRARY_PATH also reaches what the programs dlopen
# (NVML, libcuda, the PTX JIT); LD_PRELOAD (e.g. nvtrace.so) passes through.
wrapper() {
    local name=$1 body=$2
    {
        echo '#!/bin/sh'
        echo "# NVIDIA $release userspace (Debian $debver, $suite): scripts/nvidia-userspace.sh"
        echo "LD_LIBRARY_PATH=$libpath\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
        echo 'export LD_LIBRARY_PATH'
        echo "$body"
    } > "$root/bin/$name"
    chmod 0755 "$root/bin/$name"
}
wrapper "nvidia-smi-$release" "exec $opt/bin/nvidia-smi \"\$@\""
wrapper "cuprobe-$release" 'exec /bin/cuprobe "$@"'
wrapper "nvmlprobe-$release" 'exec /bin/nvmlprobe "$@"'
wrapper "nvidia-run-$release" 'exec "$@"'

after=$(du -sk "$root" | cut -f1)
echo "nvidia-userspace: NVIDIA $release (Debian $debver, $suite) in $root$opt:" \
    "$(du -sh "$root$opt" | cut -f1); $((after - before)) KiB added in all;" \
    "glibc: this machine's $have (they need $need)"
