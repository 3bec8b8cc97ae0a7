#!/bin/sh
# /init of the vgpu test VM (busybox). The host's scripts/vm.sh picks what it
# does through the kernel command line (unknown key=value pairs reach init as
# environment variables):
#   vgpu_mode=test  run the selftests, TAP on the second serial port (ttyS1)
#   vgpu_mode=shell an interactive shell on the console
#   vgpu_mode=demo  run the demo script, output on ttyS1
#   vgpu_args=...   arguments for the selftest program (comma-separated suites)
# It always ends with a kmemleak scan (when the kernel has kmemleak) and a
# "VGPU-VM-DONE" marker on the console, then reboots, which ends QEMU.

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
# POSIX shared memory (podman's lock manager, the containers suite).
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
# Debian's kernel patches its own code when a static key flips
# (CONFIG_JUMP_LABEL; the project's kernels have none), and the first
# memory cgroup turns on one that every slab free passes
# (memcg_kmem_online_key, in kmem_cache_free). Under QEMU's multi-threaded
# TCG a CPU was seen running the int3 of that patch after it was done: an
# oops in kmem_cache_free from podman's mkdir, in the stock lane. Turn it
# on here, before anything runs beside it; it stays on when the cgroup and
# the controller go (memcontrol.c enables it and never disables it).
if echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    mkdir /sys/fs/cgroup/vgpu-vm-kmem && rmdir /sys/fs/cgroup/vgpu-vm-kmem
    echo -memory > /sys/fs/cgroup/cgroup.subtree_control
    echo "vgpu-vm: memory cgroups' key on; the root's controllers: '$(cat /sys/fs/cgroup/cgroup.subtree_control)'"
fi
mount -t debugfs debugfs /sys/kernel/debug
# As systemd does: the active LSMs (/sys/kernel/security/lsm) and bpffs,
# where kernels have them (the guard suite; Debian's kernel does).
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null || true
mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
depmod
export PATH=/bin HOME=/root

kml=/sys/kernel/debug/kmemleak
# Forget what was allocated during boot: only leaks from here on count.
[ -w $kml ] && echo clear > $kml

out=/dev/ttyS1
rc=0
case "${vgpu_mode:-test}" in
test)
    # Split at the commas, without globbing (`-SUITE.PREFIX*`).
    set -f
    # shellcheck disable=SC2086
    vgpu-selftest $(echo "${vgpu_args:-}" | tr ',' ' ') > $out 2>&1
    rc=$?
    set +f
    ;;
demo)
    sh /bin/vgpu-demo.sh > $out 2>&1
    rc=$?
    ;;
shell)
    echo "vgpu test VM: modules are in /lib/modules/$(uname -r)/extra; 'reboot -f' leaves."
    setsid cttyhack sh
    ;;
esac

# Unload what the run left loaded, so module exit paths run under the
# checkers too, then look for leaks. kmemleak wants two scans to settle.
# (nvidia_uvm and fakenvswitch: NVIDIA's own modules, in the real-driver VM.)
# A module that will not unload is a reference the run leaked: the run
# fails, naming it (scripts/vmcheck.py reads the status below).
for m in vgpu nvidia_uvm nvidia fakenvswitch; do
    grep -q "^$m " /proc/modules || continue
    if ! rmmod $m; then
        echo "vgpu-vm: rmmod $m failed at the end of the run: $(grep "^$m " /proc/modules)"
        [ "$rc" = 0 ] && rc=125
    fi
done
if [ -w $kml ]; then
    echo scan > $kml; sleep 1; echo scan > $kml
    # debugfs files report size 0: read the report to see if there is one.
    report=$(cat $kml)
    if [ -n "$report" ]; then echo "vgpu-vm: kmemleak report:"; echo "$report"; fi
fi
echo "VGPU-VM-DONE rc=$rc"
reboot -f
