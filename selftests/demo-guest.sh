#!/bin/sh
# Guest side of `make demo` (runs as /bin/vgpu-demo.sh inside the test VM):
# two containers share one GPU, each held to its own memory ceiling and
# shown a GPU of its own size, and each given its own share of the GPU's
# time; then an admin changes limits and shares live; then podman starts a
# container with a vGPU by its CDI name, sized from its environment; then
# the Kubernetes DRA plugin prepares a pod's claim; then NVIDIA's own
# nvidia-smi in two podman containers shows each its vGPU and its process;
# last, NVIDIA's own libcuda in the same containers allocates until each
# stops at its own ceiling, device memory and managed memory alike.
#
# The GPU is the NVIDIA driver double's (8 GiB of fake VRAM). A "container"
# is first a cgroup v2 directory whose processes use vgpu's own nodes,
# /dev/vgpuctl and /dev/vgpuN; the podman and Kubernetes parts use NVIDIA's
# names, /dev/nvidiactl, /dev/nvidia0 and /dev/nvidia-uvm, which the CDI
# spec gives containers and whose opens vgpu answers for a bound cgroup.
# The workloads are CUDA-like clients: vgpu-selftest demo-alloc asks the GPU
# size and allocates VRAM in chunks until the driver refuses; demo-compute
# keeps a TSG busy with 1 ms work items on the double's engine and reports
# the share of the GPU's time it got.
set -e
say() { printf '\n== %s\n' "$*"; }
mib() { echo $(( $1 / 1048576 )); }
in_container() { # CGROUP COMMAND...: run COMMAND as a process of CGROUP
    cg=$1; shift
    sh -c 'echo $$ > /sys/fs/cgroup'"$cg"'/cgroup.procs && exec "$@"' sh "$@"
}
vgpu() { echo "/sys/class/vgpu/vgpu$1/$2"; }

say "One GPU with 8 GiB of VRAM (the NVIDIA driver double), and vgpu"
modprobe nvidia gpus=1 vram0_mib=8192
# nvidia-uvm makes no device node: nvidia-modprobe makes it from /proc/devices.
mknod -m 666 /dev/nvidia-uvm c "$(awk '$2 == "nvidia-uvm" { print $1 }' /proc/devices)" 0
modprobe vgpu
echo "real nodes: $(ls /dev/nvidiactl /dev/nvidia0 /dev/nvidia-uvm | tr '\n' ' ')  vgpu: $(ls /dev/vgpuctl /dev/vgpu-uvm | tr '\n' ' ')"

say "Admin: container A gets a 1 GiB vGPU with 30% of the GPU's time, B 3 GiB and 70%"
for c in A B; do mkdir -p /sys/fs/cgroup/container$c; done
echo 0 > /sys/class/vgpu/create; echo 0 > "$(vgpu 0 gpu)"
echo $((1 << 30)) > "$(vgpu 0 memory_limit)"; echo 30 > "$(vgpu 0 compute_share)"
echo /containerA > "$(vgpu 0 cgroup)"
echo 1 > /sys/class/vgpu/create; echo 0 > "$(vgpu 1 gpu)"
echo $((3 << 30)) > "$(vgpu 1 memory_limit)"; echo 70 > "$(vgpu 1 compute_share)"
echo /containerB > "$(vgpu 1 cgroup)"
for i in 0 1; do
    echo "vgpu$i: gpu $(cat "$(vgpu $i gpu)"), memory_limit $(mib "$(cat "$(vgpu $i memory_limit)")") MiB, compute_share $(cat "$(vgpu $i compute_share)")%, cgroup $(cat "$(vgpu $i cgroup)")"
done
echo "gpu0: compute_policy $(cat /sys/class/vgpu/gpu0/compute_policy), compute_period_us $(cat /sys/class/vgpu/gpu0/compute_period_us)"
# The guard: NVIDIA's driver files a host process passes in (SCM_RIGHTS,
# pidfd_getfd) stay out of bound containers. It needs BPF LSM, which
# Debian's kernel has and the demo's fast kernel does not: then it says so.
echo "$(vgpuctl guard load 2>&1 | head -2 | tr '\n' ' ')"

say "Each container runs a workload that allocates 256 MiB chunks until refused"
printf 'container A: '; in_container /containerA vgpu-selftest demo-alloc 0 256
printf 'container B: '; in_container /containerB vgpu-selftest demo-alloc 1 256
echo "(the GPU itself has 8064 MiB of heap; each stopped at its own ceiling)"

say "Managed memory (cudaMallocManaged through vgpu's UVM proxy, /dev/vgpu-uvm) counts too"
printf 'container A: '; in_container /containerA vgpu-selftest demo-managed 0 128
printf 'container B: '; in_container /containerB vgpu-selftest demo-managed 1 128
echo "(each mapping is charged to its vGPU when made, so managed pages resident on the GPU never pass the ceiling)"

say "Both containers keep the GPU busy for 4 s at once (each alone would get 100%)"
in_container /containerA vgpu-selftest demo-compute 0 4 > /tmp/a.out &
in_container /containerB vgpu-selftest demo-compute 1 4 > /tmp/b.out &
wait
echo "container A (share 30%): $(cat /tmp/a.out)"
echo "container B (share 70%): $(cat /tmp/b.out)"

say "Isolation: container A cannot open container B's vGPU"
if in_container /containerA sh -c 'exec 3</dev/vgpu1' 2>/dev/null; then echo "UNEXPECTED: opened"; exit 1; fi
echo "open /dev/vgpu1 from container A: Permission denied (EACCES)"

say "Live change: A holds its 1 GiB; the admin lowers A's limit to 512 MiB"
in_container /containerA vgpu-selftest demo-alloc 0 256 3 > /tmp/hold.out &
sleep 1
echo $((512 << 20)) > "$(vgpu 0 memory_limit)"
echo "A still holds $(mib "$(cat "$(vgpu 0 memory_used)")") MiB (nothing running is killed); a new allocation in A:"
printf 'container A: '; in_container /containerA vgpu-selftest demo-alloc 0 64
wait
echo "after A's first process exited, memory_used: $(mib "$(cat "$(vgpu 0 memory_used)")") MiB"

say "The admin raises A's limit to 2 GiB, and A runs again"
echo $((2 << 30)) > "$(vgpu 0 memory_limit)"
printf 'container A: '; in_container /containerA vgpu-selftest demo-alloc 0 256

say "Live compute change: both busy; after 4 s the admin sets A to 60% and B to 40%"
in_container /containerA vgpu-selftest demo-compute 0 8 4 > /tmp/a.out &
in_container /containerB vgpu-selftest demo-compute 1 8 4 > /tmp/b.out &
sleep 4
echo 60 > "$(vgpu 0 compute_share)"; echo 40 > "$(vgpu 1 compute_share)"
wait
echo "container A (30% -> 60%): $(cat /tmp/a.out)"
echo "container B (70% -> 40%): $(cat /tmp/b.out)"

say "Summary"
printf '%-7s %-12s %-13s %-12s %-14s %-15s\n' vGPU container memory_limit memory_used compute_share granted_time
for i in 0 1; do
    printf '%-7s %-12s %-13s %-12s %-14s %-15s\n' "vgpu$i" "$(cat "$(vgpu $i cgroup)")" \
        "$(mib "$(cat "$(vgpu $i memory_limit)")") MiB" "$(mib "$(cat "$(vgpu $i memory_used)")") MiB" \
        "$(cat "$(vgpu $i compute_share)")%" "$(( $(cat "$(vgpu $i compute_granted_us)") / 1000 )) ms"
done

say "A real container runtime: podman (Debian's, with runc, as containerd and Docker run) asks for a vGPU by its CDI name"
echo 2 > /sys/class/vgpu/create; echo 0 > "$(vgpu 2 gpu)"
echo $((1 << 30)) > "$(vgpu 2 memory_limit)"; echo 20 > "$(vgpu 2 compute_share)"
vgpuctl cdi --output /etc/cdi/vgpu.json
echo "vgpu2: 1024 MiB, 20%, no cgroup (the CDI spec's hooks bind it to whichever container gets it)"
p() { PATH=/usr/bin:/bin podman --runtime runc "$@"; }
mkdir -p /tmp/ctr
p run -d --name web --device vgpu.dev/gpu=2 -e VGPU_MEMORY=512MiB -v /tmp/ctr:/out \
    --rootfs /var/lib/vgpu-rootfs sh -c 'exec vgpu-selftest demo-alloc --nvidia 0 128 600 > /out/log' > /dev/null
while ! grep -q 'GPU size' /tmp/ctr/log 2>/dev/null; do sleep 0.2; done
echo "podman run --device vgpu.dev/gpu=2 -e VGPU_MEMORY=512MiB:"
sed 's/^/  /' /tmp/ctr/log
nodes=$(p exec web stat -c '%n %t:%T' /dev/nvidiactl /dev/nvidia0 /dev/nvidia-uvm)
echo "  its nodes are NVIDIA's, numbers (hex) included, as libcuda and NVML check them: $(echo $nodes)"
echo "  its /proc/driver/nvidia/params (the spec's createContainer hook; the host's says 1): $(p exec web cat /proc/driver/nvidia/params | grep ModifyDeviceFiles)"
echo "vgpu2 bound to $(cat "$(vgpu 2 cgroup)" | cut -c1-40)..., memory_limit $(mib "$(cat "$(vgpu 2 memory_limit)")") MiB for this container"
if p run --rm --device vgpu.dev/gpu=2 --rootfs /var/lib/vgpu-rootfs true > /tmp/second.out 2>&1; then
    echo "UNEXPECTED: a second container got vgpu2"; exit 1
fi
echo "a second container asking for vgpu2: $(grep -o 'exit status.*' /tmp/second.out | head -1 | cut -c1-150)"
echo "  kernel log: $(dmesg | grep 'vgpuctl hook: createRuntime' | tail -1 | sed 's/.*vgpu2: //' | cut -c1-60)..."
p stop --time 0 web > /dev/null
echo "after podman stop: vgpu2 cgroup '$(cat "$(vgpu 2 cgroup)")', memory_used $(mib "$(cat "$(vgpu 2 memory_used)")") MiB, memory_limit back to $(mib "$(cat "$(vgpu 2 memory_limit)")") MiB"
p rm --all --force > /dev/null

for i in 0 1 2; do echo $i > /sys/class/vgpu/remove; done

say "Kubernetes: the DRA kubelet plugin gives a pod a vGPU of its claim's 2 GiB and 30%"
# No kubelet or API server in this VM: vgpu-dra-testkubelet speaks the
# kubelet's gRPC over the plugin's sockets and starts the pod's process as a
# CDI runtime would; the API server is a directory holding the allocated
# ResourceClaim (docs/kubernetes.md).
k=/tmp/k8s pod=5d0c7a1e-9b2f-4c3d-8e4f-a1b2c3d4e5f6 uid=c1a1e000-0000-4000-8000-000000000001
mkdir -p $k/api/namespaces/demo/resourceclaims
cat > $k/api/namespaces/demo/resourceclaims/trainer-gpu.json <<EOF
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
 "metadata": {"name": "trainer-gpu", "namespace": "demo", "uid": "$uid"},
 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "vgpu.dev",
   "capacity": {"requests": {"memory": "2Gi", "cores": "30"}}}}]}},
 "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "vgpu.dev",
   "pool": "demo", "device": "gpu-0", "consumedCapacity": {"memory": "2Gi", "cores": "30"}}]}},
   "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "$pod"}]}}
EOF
vgpu-dra-plugin --node-name demo --kube-api dir:$k/api --registry-dir $k/registry \
    --plugin-dir $k/plugin --cdi-dir $k/cdi --hook-path /bin/vgpuctl 2> $k/plugin.log &
plugin=$!
kl() { vgpu-dra-testkubelet "$@"; }
echo "registration: $(kl register --registry-dir $k/registry --driver vgpu.dev)"
grep -E 'GPU 0|ResourceSlice' $k/plugin.log
echo "NodePrepareResources: $(kl prepare --endpoint $k/plugin/dra.sock --namespace demo --name trainer-gpu --uid $uid)"
n=$(ls /sys/class/vgpu | sed -n 's/^vgpu\([0-9]*\)$/\1/p' | head -1)
echo "vgpu$n: memory_limit $(mib "$(cat "$(vgpu "$n" memory_limit)")") MiB, compute_share $(cat "$(vgpu "$n" compute_share)")%"
echo "the claim's CDI spec gives the pod $(grep -o '"path": "/dev/[^"]*"' $k/cdi/vgpu.dev-claim_$uid.json | cut -d'"' -f4 | tr '\n' ' ')"
echo "the pod:"
kl run --cdi-dir $k/cdi --device vgpu.dev/claim=$uid-0 --cgroup-root /sys/fs/cgroup \
    --pod-cgroup /kubepods/besteffort/pod$pod --container trainer -- /bin/vgpu-selftest demo-alloc --nvidia 0 256
echo "vgpu$n is bound to the pod's cgroup: $(cat "$(vgpu "$n" cgroup)")"
echo "NodeUnprepareResources: $(kl unprepare --endpoint $k/plugin/dra.sock --namespace demo --name trainer-gpu --uid $uid)"
echo "vGPUs left: $(ls /sys/class/vgpu | grep -c '^vgpu[0-9]' || true)"
kill $plugin; wait $plugin
rmdir /sys/fs/cgroup/kubepods/besteffort/pod$pod/trainer /sys/fs/cgroup/kubepods/besteffort/pod$pod \
    /sys/fs/cgroup/kubepods/besteffort /sys/fs/cgroup/kubepods
rmmod vgpu
rm -f /dev/nvidia-uvm
rmmod nvidia

say "NVIDIA's own nvidia-smi (Debian's 550.163.01) in two podman containers: each sees its vGPU's size and only its own process"
rel=550.163.01 opt=/opt/nvidia-550.163.01
modprobe nvidia gpus=1 vram0_mib=8192 release=4 # the double claims 550.163.01: NVML compares version strings
mknod -m 666 /dev/nvidia-uvm c "$(awk '$2 == "nvidia-uvm" { print $1 }' /proc/devices)" 0
modprobe vgpu
vgpuctl create --id 0 --gpu 0 --memory 1GiB > /dev/null
vgpuctl create --id 1 --gpu 0 --memory 3GiB > /dev/null
vgpuctl cdi --output /etc/cdi/vgpu.json
for c in 0 1; do
    mib=$((192 + 128 * c)); mkdir -p /tmp/smi$c; rm -f /tmp/smi$c/log
    p run -d --name smi$c --device vgpu.dev/gpu=$c -e vgpu_release=$rel -v /tmp/smi$c:/out \
        -v $opt:$opt:ro -v /lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu:ro -v /lib64:/lib64:ro \
        -v /bin/cuprobe:/usr/local/bin/cuprobe:ro \
        --rootfs /var/lib/vgpu-rootfs sh -c "exec vgpu-selftest demo-hold --nvidia 0 $mib 600 > /out/log" > /dev/null
    # One read of the log per look: read twice, a report written between
    # the reads looked like an error (a demo failed so, 2026-11-29).
    while :; do
        l=$(cat /tmp/smi$c/log 2>/dev/null || true)
        case "$l" in
        *holding*) break ;;
        *demo-hold:*) echo "$l"; exit 1 ;;
        esac
        sleep 0.2
    done
done
for c in 0 1; do
    echo "container smi$c (vgpu$c: memory_limit $(mib "$(cat "$(vgpu $c memory_limit)")") MiB, memory_used $(mib "$(cat "$(vgpu $c memory_used)")") MiB; its process: $(cat /tmp/smi$c/log | sed 's/demo-hold: //')):"
    p exec smi$c sh -c "LD_LIBRARY_PATH=$opt/lib $opt/bin/nvidia-smi; LD_LIBRARY_PATH=$opt/lib $opt/bin/nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv" | sed 's/^/  /'
done
echo "on the host (the driver's view: the whole GPU, both processes by host PID):"
nvidia-smi-$rel --query-gpu=memory.total,memory.used,memory.free --format=csv | sed 's/^/  /'
nvidia-smi-$rel --query-compute-apps=pid,used_memory --format=csv | sed 's/^/  /'

say "NVIDIA's own libcuda (Debian's 550.163.01) in the same containers: cuMemAlloc in 64 MiB steps stops at each vGPU's ceiling"
for c in 0 1; do
    out=$(p exec smi$c sh -c "LD_LIBRARY_PATH=$opt/lib cuprobe --fill" 2>&1)
    echo "container smi$c (memory_limit $(mib "$(cat "$(vgpu $c memory_limit)")") MiB; its other process holds $((192 + 128 * c)) MiB):"
    echo "$out" | grep -E '^(cuDeviceTotalMem_v2|cuCtxCreate_v2|cuMemGetInfo_v2|fill)=' | sed 's/^/  /'
    # CUDA_ERROR_OUT_OF_MEMORY (2) ends the fill, or the demo failed.
    echo "$out" | grep -q '^fill=2 ' || { echo "  libcuda did not stop at the ceiling"; exit 1; }
done
say "and libcuda's managed memory: cuMemAllocManaged in 64 MiB steps, each prefetched to the GPU, stops there too"
for c in 0 1; do
    out=$(p exec smi$c sh -c "LD_LIBRARY_PATH=$opt/lib cuprobe --managed" 2>&1)
    echo "container smi$c (memory_limit $(mib "$(cat "$(vgpu $c memory_limit)")") MiB):"
    echo "$out" | grep -E '^(cuMemGetInfo_v2|attributes|managed)=' | sed 's/^/  /'
    # The allocation past the ceiling refused (vgpu refuses its mmap,
    # which libcuda reports as 999), every step before it prefetched.
    echo "$out" | grep -q '^managed=999 prefetch=0 ' ||
        { echo "  libcuda's managed memory did not stop at the ceiling"; exit 1; }
done
p rm --all --force --time 0 > /dev/null
vgpuctl remove 0 1 > /dev/null
rmmod vgpu
rm -f /dev/nvidia-uvm
rmmod nvidia
