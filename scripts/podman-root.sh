#!/usr/bin/env bash
# What the test VM needs to run Debian's podman (the containers suite):
# podman, crun, runc and conmon as Debian 12 ships them (installed on this
# machine by scripts/setup-toolchain.sh), every shared library they load, their
# configuration, and a container root filesystem, laid out as a tree that
# scripts/initramfs.sh copies into the guest's root.
#
#   scripts/podman-root.sh DIR
#
# The configuration (docs/testing.md, "Containers"): crun as the runtime
# (runc beside it, for `podman --runtime runc`),
# cgroupfs as the cgroup manager (the VM has no systemd), no network (the
# VM has none), events to a file, the vfs storage driver (nothing to pull:
# containers start from a local root filesystem with --rootfs), and CDI
# specs from /etc/cdi. The container root filesystem (/var/lib/vgpu-rootfs)
# holds busybox and the test client, both static.
set -euo pipefail
. "$(dirname "$0")/env.sh"

root=${1:?usage: $0 DIR}
bins=(/usr/bin/podman /usr/bin/crun /usr/bin/runc /usr/bin/conmon)
for b in "${bins[@]}"; do
    [ -x "$b" ] || { echo "podman-root: $b missing (scripts/setup-toolchain.sh installs it)" >&2; exit 1; }
done

mkdir -p "$root"/{usr/bin,lib64,lib/x86_64-linux-gnu,etc/containers,etc/cdi,usr/share/containers}
mkdir -p "$root"/{run,var/tmp,var/lib/containers/storage,var/lib/vgpu-rootfs}
cp "${bins[@]}" "$root/usr/bin/"

# Shared libraries: what the dynamic loader resolves for each program here,
# which is what it will resolve in the guest (same paths).
ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/lib64\// { print $1 }' | sort -u |
while read -r lib; do
    case "$lib" in
    /lib64/*) cp -L "$lib" "$root/lib64/" ;;
    *) cp -L "$lib" "$root/lib/x86_64-linux-gnu/" ;;
    esac
done
[ -e "$root/lib64/ld-linux-x86-64.so.2" ] || { echo "podman-root: no dynamic loader found" >&2; exit 1; }

# Defaults shipped with podman (containers-common): seccomp profile and the
# engine's defaults; ours override them below.
cp /usr/share/containers/containers.conf /usr/share/containers/seccomp.json "$root/usr/share/containers/"
cat > "$root/etc/containers/containers.conf" <<'EOF'
[containers]
netns = "none"
# podman's default sets net.ipv4.ping_group_range in every container: the
# test kernel has no IP stack (--network none needs none).
default_sysctls = []
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "crun"
conmon_path = ["/usr/bin/conmon"]
# podman's own pause process is for rootless use; not needed as root.
EOF
cat > "$root/etc/containers/storage.conf" <<'EOF'
[storage]
driver = "vfs"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
EOF
# Nothing is pulled; an image comes only from a local OCI archive (the
# DaemonSet's, scripts/image.sh), which `podman load` checks against this
# policy too.
cat > "$root/etc/containers/policy.json" <<'EOF'
{ "default": [ { "type": "reject" } ],
  "transports": { "oci-archive": { "": [ { "type": "insecureAcceptAnything" } ] } } }
EOF
: > "$root/etc/containers/registries.conf"
printf '127.0.0.1 localhost\n' > "$root/etc/hosts"
: > "$root/etc/resolv.conf"
printf 'passwd: files\ngroup: files\nhosts: files\n' > "$root/etc/nsswitch.conf"

# The containers' root filesystem: static busybox and the test client.
rfs="$root/var/lib/vgpu-rootfs"
mkdir -p "$rfs"/{bin,dev,proc,sys,tmp,etc,run}
cp /bin/busybox "$rfs/bin/busybox"
for applet in sh sleep cat echo ls stat; do ln -sf busybox "$rfs/bin/$applet"; done
echo "root:x:0:0:root:/:/bin/sh" > "$rfs/etc/passwd"
echo "root:x:0:" > "$rfs/etc/group"
echo "podman-root: $root ($(du -sh "$root" | cut -f1))"
