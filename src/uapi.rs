// SPDX-License-Identifier: GPL-2.0

//! vgpu's user-space interface as constants: the sysfs paths and file
//! names, value formats, limits and device nodes (`docs/sysfs-class-vgpu`).
//!
//! core-only (nothing but `pub const`s), so that the module, the host test
//! crate (`userspace/logic`) and `vgpuctl` can share it, and cbindgen turns
//! it into the C header `include/vgpu.h` (`scripts/gen-uapi.sh`).
//!
//! Rules for this file, which `scripts/gen-uapi.sh` relies on: every item is
//! a `pub const` on one line, of an integer type or `&str`, preceded by `///`
//! docs; strings hold no `"` or `\`.

/// The sysfs class directory of vgpu.
pub const VGPU_SYSFS_CLASS: &str = "/sys/class/vgpu";

/// Class file (write-only, root): writing a vGPU number N creates vGPU N.
pub const VGPU_SYSFS_CREATE: &str = "create";

/// Class file (write-only, root): writing a vGPU number N removes vGPU N.
pub const VGPU_SYSFS_REMOVE: &str = "remove";

/// Prefix of a vGPU's sysfs directory: vGPU N is `VGPU_SYSFS_CLASS/vgpuN`.
pub const VGPU_SYSFS_DIR_PREFIX: &str = "vgpu";

/// vGPU file (read-write): index K of the backing GPU (`/dev/nvidiaK`);
/// empty until set.
pub const VGPU_ATTR_GPU: &str = "gpu";

/// vGPU file (read-write): memory ceiling in bytes, or `VGPU_MEMORY_MAX`.
pub const VGPU_ATTR_MEMORY_LIMIT: &str = "memory_limit";

/// vGPU file (read-only): GPU memory charged to the vGPU, in bytes.
pub const VGPU_ATTR_MEMORY_USED: &str = "memory_used";

/// vGPU file (read-write): the bound cgroup v2 path; empty when unbound.
pub const VGPU_ATTR_CGROUP: &str = "cgroup";

/// vGPU file (read-only): open files of the vGPU's device node.
pub const VGPU_ATTR_USERS: &str = "users";

/// The `memory_limit` value for no limit (as cgroup v2 writes it).
pub const VGPU_MEMORY_MAX: &str = "max";

/// The highest vGPU number: vGPUs are numbered 0 to `VGPU_MAX_ID`.
pub const VGPU_MAX_ID: u32 = 254;

/// The highest physical GPU index a vGPU can be backed by.
pub const VGPU_GPU_MAX_INDEX: u32 = 247;

/// The longest cgroup path accepted, in bytes, without the NUL.
pub const VGPU_CGROUP_PATH_MAX: usize = 4095;

/// Prefix of a vGPU's device node: vGPU N is `/dev/vgpuN`.
pub const VGPU_DEV_PREFIX: &str = "/dev/vgpu";

/// The device node that stands in for `/dev/nvidiactl`.
pub const VGPU_CTL_DEV: &str = "/dev/vgpuctl";

/// vGPU file (read-only): VRAM allocations refused for passing the limit.
pub const VGPU_ATTR_MEMORY_REFUSED: &str = "memory_refused";

/// vGPU file (read-only): bytes of `memory_used` charged for managed
/// (nvidia-uvm) mappings.
pub const VGPU_ATTR_MEMORY_MANAGED: &str = "memory_managed";

/// The device node that stands in for `/dev/nvidia-uvm`.
pub const VGPU_UVM_DEV: &str = "/dev/vgpu-uvm";

/// vGPU file: its share of its GPU's time, in percent (0 to
/// `VGPU_COMPUTE_SHARE_MAX`).
pub const VGPU_ATTR_COMPUTE_SHARE: &str = "compute_share";

/// vGPU file (read-only): microseconds its scheduling window was open.
pub const VGPU_ATTR_COMPUTE_GRANTED_US: &str = "compute_granted_us";

/// vGPU file (read-only): microseconds it had work while others ran.
pub const VGPU_ATTR_COMPUTE_THROTTLED_US: &str = "compute_throttled_us";

/// vGPU file (read-only): TSGs and channels outside TSGs it schedules.
pub const VGPU_ATTR_COMPUTE_TSGS: &str = "compute_tsgs";

/// vGPU file: its priority level (`VGPU_COMPUTE_PRIORITY_MIN` to
/// `VGPU_COMPUTE_PRIORITY_MAX`): while a vGPU of a higher level on the same
/// GPU has work, lower levels do not run.
pub const VGPU_ATTR_COMPUTE_PRIORITY: &str = "compute_priority";

/// vGPU file: `1` while its work is frozen (its TSGs disabled and
/// preempted, its memory still charged), `0` otherwise.
pub const VGPU_ATTR_COMPUTE_FROZEN: &str = "compute_frozen";

/// vGPU file (read-only): microseconds it had runnable work (a TSG its
/// owner enabled with work queued, or a call waiting for its window),
/// whether or not its window was open.
pub const VGPU_ATTR_COMPUTE_BUSY_US: &str = "compute_busy_us";

/// vGPU file (read-only): the processes using it, one line each: host PID,
/// bytes charged, command name.
pub const VGPU_ATTR_PROCESSES: &str = "processes";

/// The lowest priority level (best-effort: runs only in time every higher
/// level leaves idle).
pub const VGPU_COMPUTE_PRIORITY_MIN: u32 = 0;

/// The highest priority level.
pub const VGPU_COMPUTE_PRIORITY_MAX: u32 = 3;

/// A new vGPU's priority level.
pub const VGPU_COMPUTE_PRIORITY_DEFAULT: u32 = 1;

/// The highest compute share, in percent (also the default).
pub const VGPU_COMPUTE_SHARE_MAX: u32 = 100;

/// Prefix of a physical GPU's settings directory: GPU K is `gpuK`.
pub const VGPU_SYSFS_GPU_DIR_PREFIX: &str = "gpu";

/// GPU file: how the GPU's time is divided (`VGPU_COMPUTE_POLICY_*`).
pub const VGPU_GPU_ATTR_COMPUTE_POLICY: &str = "compute_policy";

/// GPU file: the scheduling period in microseconds.
pub const VGPU_GPU_ATTR_COMPUTE_PERIOD_US: &str = "compute_period_us";

/// Policy: each share is a cap (the default).
pub const VGPU_COMPUTE_POLICY_FIXED: &str = "fixed";

/// Policy: idle vGPUs' shares go to busy ones.
pub const VGPU_COMPUTE_POLICY_WORK_CONSERVING: &str = "work-conserving";

/// The shortest scheduling period, in microseconds.
pub const VGPU_COMPUTE_PERIOD_US_MIN: u32 = 1000;

/// The longest scheduling period, in microseconds.
pub const VGPU_COMPUTE_PERIOD_US_MAX: u32 = 1000000;

/// The default scheduling period, in microseconds.
pub const VGPU_COMPUTE_PERIOD_US_DEFAULT: u32 = 50000;
