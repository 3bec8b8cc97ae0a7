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
