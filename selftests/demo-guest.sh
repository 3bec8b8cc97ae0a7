#!/bin/sh
# Guest side of `make demo` (runs as /bin/vgpu-demo.sh inside the test VM).
# It grows with the project: today it shows the driver double serving one
# fake GPU and vgpu's module coming up; the two-container demo (memory
# ceilings and compute shares enforced) arrives with the proxy.
set -e
say() { printf '\n== %s\n' "$*"; }

say "Loading the NVIDIA driver double: one fake GPU with 8 GiB of VRAM"
modprobe nvidia gpus=1 vram0_mib=8192
ls -l /dev/nvidiactl /dev/nvidia0

say "Loading vgpu"
modprobe vgpu
ls -l /dev/vgpuctl
echo "/sys/class/vgpu/: $(ls /sys/class/vgpu | wc -l) vGPU(s) configured"

say "Unloading"
rmmod vgpu
rmmod nvidia
echo "done"
