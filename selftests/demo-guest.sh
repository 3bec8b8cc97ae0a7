#!/bin/sh
# Guest side of `make demo` (runs as /bin/vgpu-demo.sh inside the test VM):
# two containers share one GPU, each held to its own memory ceiling and
# shown a GPU of its own size; then an admin changes a limit live.
#
# The GPU is the NVIDIA driver double's (8 GiB of fake VRAM). A "container"
# is a cgroup v2 directory; its processes use /dev/vgpuctl and /dev/vgpuN as
# a container runtime would bind them in as /dev/nvidiactl and /dev/nvidia0.
# The workload is a CUDA-like client (vgpu-selftest demo-alloc) that asks the
# GPU size and allocates VRAM in chunks until the driver refuses.
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
modprobe vgpu
echo "real nodes: $(ls /dev/nvidiactl /dev/nvidia0 | tr '\n' ' ')  vgpu: $(ls /dev/vgpuctl)"

say "Admin: two containers, A with a 1 GiB vGPU and B with a 3 GiB vGPU"
for c in A B; do mkdir -p /sys/fs/cgroup/container$c; done
echo 0 > /sys/class/vgpu/create; echo 0 > "$(vgpu 0 gpu)"
echo $((1 << 30)) > "$(vgpu 0 memory_limit)"; echo /containerA > "$(vgpu 0 cgroup)"
echo 1 > /sys/class/vgpu/create; echo 0 > "$(vgpu 1 gpu)"
echo $((3 << 30)) > "$(vgpu 1 memory_limit)"; echo /containerB > "$(vgpu 1 cgroup)"
for i in 0 1; do
    echo "vgpu$i: gpu $(cat "$(vgpu $i gpu)"), memory_limit $(mib "$(cat "$(vgpu $i memory_limit)")") MiB, cgroup $(cat "$(vgpu $i cgroup)")"
done

say "Each container runs a workload that allocates 256 MiB chunks until refused"
printf 'container A: '; in_container /containerA vgpu-selftest demo-alloc 0 256
printf 'container B: '; in_container /containerB vgpu-selftest demo-alloc 1 256
echo "(the GPU itself has 8064 MiB of heap; each stopped at its own ceiling)"

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

say "Summary"
printf '%-12s %-12s %-14s %-10s\n' vGPU container memory_limit memory_used
for i in 0 1; do
    printf '%-12s %-12s %-14s %-10s\n' "vgpu$i" "$(cat "$(vgpu $i cgroup)")" \
        "$(mib "$(cat "$(vgpu $i memory_limit)")") MiB" "$(mib "$(cat "$(vgpu $i memory_used)")") MiB"
done
echo "Compute shares are not implemented yet: both containers get the GPU's time unscheduled."

for i in 0 1; do echo $i > /sys/class/vgpu/remove; done
rmmod vgpu
rmmod nvidia
