#!/usr/bin/env bash
# Build the image of the Kubernetes DaemonSet (deploy/kubernetes/daemonset.yaml),
# localhost/vgpu/vgpu-node:VERSION, offline, with Debian's podman: FROM
# scratch, the static vgpu-dra-plugin and vgpuctl (scripts/build-userspace.sh)
# in /usr/bin, and an /etc/passwd and /etc/group naming root and nobody
# (65534, the exporter's user). Nothing is pulled, signed or pushed.
#
#   scripts/image.sh            (make image)
#     -> build/vgpu-node-VERSION.oci.tar, an OCI archive whose index names
#        the image localhost/vgpu/vgpu-node:VERSION; build/vgpu-node.oci.tar
#        links to it
#
# Load it with `podman load -i FILE`, or into containerd's Kubernetes
# namespace with `ctr -n k8s.io images import FILE` (docs/kubernetes.md).
# podman runs with a storage of its own under build/image/ (vfs, so it works
# without overlay and leaves the host's images alone), and every file's
# time is set to 0 (--timestamp 0), so the same binaries give the same
# image ID.
set -euo pipefail
. "$(dirname "$0")/env.sh"

command -v podman >/dev/null || { echo "image: podman missing (scripts/setup-toolchain.sh installs it)" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$VGPU_TOP/userspace/Cargo.toml" | head -n1)
[ -n "$version" ] || { echo "image: no version in userspace/Cargo.toml" >&2; exit 1; }
name="localhost/vgpu/vgpu-node:$version"
out="$VGPU_TOP/build/vgpu-node-$version.oci.tar"

"$VGPU_TOP/scripts/build-userspace.sh"
bin="$VGPU_TOP/build/guest-target/x86_64-unknown-linux-gnu/release"
for b in vgpu-dra-plugin vgpuctl; do
    # FROM scratch has no libc: the binaries must be static.
    if ! ldd "$bin/$b" 2>&1 | grep -q 'statically linked\|not a dynamic executable'; then
        echo "image: $bin/$b is not statically linked" >&2; exit 1
    fi
done

work="$VGPU_TOP/build/image"
ctx="$work/context"
rm -rf "$ctx" && mkdir -p "$ctx/usr/bin" "$ctx/etc" "$work/storage" "$work/run"
cp "$bin/vgpu-dra-plugin" "$bin/vgpuctl" "$ctx/usr/bin/"
printf 'root:x:0:0:root:/:/usr/bin/vgpuctl\nnobody:x:65534:65534:nobody:/:/usr/bin/vgpuctl\n' > "$ctx/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$ctx/etc/group"
cat > "$ctx/Containerfile" <<EOF
FROM scratch
COPY usr/bin/vgpu-dra-plugin usr/bin/vgpuctl /usr/bin/
COPY etc/passwd etc/group /etc/
LABEL org.opencontainers.image.title="vgpu-node" \\
      org.opencontainers.image.description="vgpu's DRA kubelet plugin (vgpu-dra-plugin) and Prometheus exporter (vgpuctl exporter)" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.licenses="GPL-2.0"
ENTRYPOINT ["/usr/bin/vgpu-dra-plugin"]
EOF

# A storage and policy of our own: nothing from the host's configuration.
policy="$work/policy.json"
printf '{ "default": [ { "type": "insecureAcceptAnything" } ] }\n' > "$policy"
pm=(podman --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
"${pm[@]}" rmi -f "$name" >/dev/null 2>&1 || true
"${pm[@]}" build --quiet --pull=never --network none --timestamp 0 \
    --signature-policy "$policy" -f "$ctx/Containerfile" -t "$name" "$ctx" >/dev/null
rm -f "$out"
"${pm[@]}" save --quiet --format oci-archive -o "$out" "$name"
ln -sf "$(basename "$out")" "$VGPU_TOP/build/vgpu-node.oci.tar"
id=$("${pm[@]}" image inspect --format '{{.Id}}' "$name")
echo "image: $name ${id:0:12} -> $out ($(du -h "$out" | cut -f1))"
