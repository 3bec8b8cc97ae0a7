/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */

#ifndef VGPU_UAPI_H
#define VGPU_UAPI_H

/*
 * vgpu's user-space interface: sysfs paths and file names, value formats,
 * limits and device nodes (see docs/sysfs-class-vgpu).
 *
 * Generated from src/uapi.rs by scripts/gen-uapi.sh (cbindgen); do not edit.
 */

/**
 * The sysfs class directory of vgpu.
 */
#define VGPU_SYSFS_CLASS "/sys/class/vgpu"

/**
 * Class file (write-only, root): writing a vGPU number N creates vGPU N.
 */
#define VGPU_SYSFS_CREATE "create"

/**
 * Class file (write-only, root): writing a vGPU number N removes vGPU N.
 */
#define VGPU_SYSFS_REMOVE "remove"

/**
 * Prefix of a vGPU's sysfs directory: vGPU N is `VGPU_SYSFS_CLASS/vgpuN`.
 */
#define VGPU_SYSFS_DIR_PREFIX "vgpu"

/**
 * vGPU file (read-write): index K of the backing GPU (`/dev/nvidiaK`);
 * empty until set.
 */
#define VGPU_ATTR_GPU "gpu"

/**
 * vGPU file (read-write): memory ceiling in bytes, or `VGPU_MEMORY_MAX`.
 */
#define VGPU_ATTR_MEMORY_LIMIT "memory_limit"

/**
 * vGPU file (read-only): GPU memory charged to the vGPU, in bytes.
 */
#define VGPU_ATTR_MEMORY_USED "memory_used"

/**
 * vGPU file (read-write): the bound cgroup v2 path; empty when unbound.
 */
#define VGPU_ATTR_CGROUP "cgroup"

/**
 * vGPU file (read-only): open files of the vGPU's device node.
 */
#define VGPU_ATTR_USERS "users"

/**
 * The `memory_limit` value for no limit (as cgroup v2 writes it).
 */
#define VGPU_MEMORY_MAX "max"

/**
 * Prefix of a vGPU's device node: vGPU N is `/dev/vgpuN`.
 */
#define VGPU_DEV_PREFIX "/dev/vgpu"

/**
 * The device node that stands in for `/dev/nvidiactl`.
 */
#define VGPU_CTL_DEV "/dev/vgpuctl"

/**
 * vGPU file (read-only): VRAM allocations refused for passing the limit.
 */
#define VGPU_ATTR_MEMORY_REFUSED "memory_refused"

/**
 * vGPU file (read-only): bytes of `memory_used` charged for managed
 * (nvidia-uvm) mappings.
 */
#define VGPU_ATTR_MEMORY_MANAGED "memory_managed"

/**
 * The device node that stands in for `/dev/nvidia-uvm`.
 */
#define VGPU_UVM_DEV "/dev/vgpu-uvm"

/**
 * vGPU file: its share of its GPU's time, in percent (0 to
 * `VGPU_COMPUTE_SHARE_MAX`).
 */
#define VGPU_ATTR_COMPUTE_SHARE "compute_share"

/**
 * vGPU file (read-only): microseconds its scheduling window was open.
 */
#define VGPU_ATTR_COMPUTE_GRANTED_US "compute_granted_us"

/**
 * vGPU file (read-only): microseconds it had work while others ran.
 */
#define VGPU_ATTR_COMPUTE_THROTTLED_US "compute_throttled_us"

/**
 * vGPU file (read-only): TSGs and channels outside TSGs it schedules.
 */
#define VGPU_ATTR_COMPUTE_TSGS "compute_tsgs"

/**
 * vGPU file: its priority level (`VGPU_COMPUTE_PRIORITY_MIN` to
 * `VGPU_COMPUTE_PRIORITY_MAX`): while a vGPU of a higher level on the same
 * GPU has work, lower levels do not run.
 */
#define VGPU_ATTR_COMPUTE_PRIORITY "compute_priority"

/**
 * vGPU file: `1` while its work is frozen (its TSGs disabled and
 * preempted, its memory still charged), `0` otherwise.
 */
#define VGPU_ATTR_COMPUTE_FROZEN "compute_frozen"

/**
 * vGPU file (read-only): microseconds it had runnable work (a TSG its
 * owner enabled with work queued, or a call waiting for its window),
 * whether or not its window was open.
 */
#define VGPU_ATTR_COMPUTE_BUSY_US "compute_busy_us"

/**
 * vGPU file (read-only): the processes using it, one line each: host PID,
 * bytes charged, command name.
 */
#define VGPU_ATTR_PROCESSES "processes"

/**
 * Prefix of a physical GPU's settings directory: GPU K is `gpuK`.
 */
#define VGPU_SYSFS_GPU_DIR_PREFIX "gpu"

/**
 * GPU file: how the GPU's time is divided (`VGPU_COMPUTE_POLICY_*`).
 */
#define VGPU_GPU_ATTR_COMPUTE_POLICY "compute_policy"

/**
 * GPU file: the scheduling period in microseconds.
 */
#define VGPU_GPU_ATTR_COMPUTE_PERIOD_US "compute_period_us"

/**
 * Policy: each share is a cap (the default).
 */
#define VGPU_COMPUTE_POLICY_FIXED "fixed"

/**
 * Policy: idle vGPUs' shares go to busy ones.
 */
#define VGPU_COMPUTE_POLICY_WORK_CONSERVING "work-conserving"

/**
 * The highest vGPU number: vGPUs are numbered 0 to `VGPU_MAX_ID`.
 */
#define VGPU_MAX_ID 254

/**
 * The highest physical GPU index a vGPU can be backed by.
 */
#define VGPU_GPU_MAX_INDEX 247

/**
 * The longest cgroup path accepted, in bytes, without the NUL.
 */
#define VGPU_CGROUP_PATH_MAX 4095

/**
 * The lowest priority level (best-effort: runs only in time every higher
 * level leaves idle).
 */
#define VGPU_COMPUTE_PRIORITY_MIN 0

/**
 * The highest priority level.
 */
#define VGPU_COMPUTE_PRIORITY_MAX 3

/**
 * A new vGPU's priority level.
 */
#define VGPU_COMPUTE_PRIORITY_DEFAULT 1

/**
 * The highest compute share, in percent (also the default).
 */
#define VGPU_COMPUTE_SHARE_MAX 100

/**
 * The shortest scheduling period, in microseconds.
 */
#define VGPU_COMPUTE_PERIOD_US_MIN 1000

/**
 * The longest scheduling period, in microseconds.
 */
#define VGPU_COMPUTE_PERIOD_US_MAX 1000000

/**
 * The default scheduling period, in microseconds.
 */
#define VGPU_COMPUTE_PERIOD_US_DEFAULT 50000

#endif  /* VGPU_UAPI_H */
