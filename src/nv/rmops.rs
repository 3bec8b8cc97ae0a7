// SPDX-License-Identifier: GPL-2.0

//! The NVIDIA driver's kernel-client interface (`nvidia_get_rm_ops`) at
//! 595.45.04: the function table, the GPU list entry, the ops command block
//! and its parameter union.
//!
//! core-only, shared by vgpu (`src/kapi/rmops.rs`, the caller) and the driver
//! double (`selftests/nvidia/kclient.rs`, the callee), and checked by the
//! conformance test (`userspace/conformance`) against what the C compiler
//! says of NVIDIA's headers at this release:
//! `kernel-open/common/inc/nv-modeset-interface.h` (the table),
//! `kernel-open/common/inc/nv-gpu-info.h` (`nv_gpu_info_t`) and
//! `src/nvidia/arch/nvalloc/unix/include/nv-kernel-rmapi-ops.h` (the ops
//! command, `nvidia_kernel_rmapi_ops_t`).
//!
//! The ops block is where the releases drift: its NV04_ALLOC member is an
//! NVOS21 (32 bytes) up to 570 and an NVOS64 (48 bytes, rights pointer at 24)
//! from 575.51.02 on, and the union grew from 56 to 64 bytes. A block of the
//! wrong release is not a refusal but a fault: RM copies from whatever sits
//! at the rights pointer's offset (`src/nvidia/src/kernel/rmapi/alloc_free.c`,
//! `serverAllocApiCopyIn`). So nothing here may be used with a driver whose
//! version string is not [`super::RELEASE`].

#![allow(dead_code, unreachable_pub)]

use core::ffi::{c_int, c_void};

use super::abi::{Nvos00, Nvos02, Nvos33, Nvos34, Nvos54, Nvos55, Nvos57, Nvos64};

/// The ops (`op` member of the command block), from `nvos.h`.
pub mod op {
    /// `NV01_FREE`.
    pub const FREE: u32 = 0x00;
    /// `NV01_ALLOC_MEMORY`.
    pub const ALLOC_MEMORY: u32 = 0x02;
    /// `NV04_ALLOC`.
    pub const ALLOC: u32 = 0x15;
    /// `NV04_VID_HEAP_CONTROL`.
    pub const VID_HEAP_CONTROL: u32 = 0x20;
    /// `NV04_MAP_MEMORY`.
    pub const MAP_MEMORY: u32 = 0x21;
    /// `NV04_UNMAP_MEMORY`.
    pub const UNMAP_MEMORY: u32 = 0x22;
    /// `NV04_ALLOC_CONTEXT_DMA`.
    pub const ALLOC_CONTEXT_DMA: u32 = 0x27;
    /// `NV04_MAP_MEMORY_DMA`.
    pub const MAP_MEMORY_DMA: u32 = 0x2e;
    /// `NV04_UNMAP_MEMORY_DMA`.
    pub const UNMAP_MEMORY_DMA: u32 = 0x2f;
    /// `NV04_BIND_CONTEXT_DMA`.
    pub const BIND_CONTEXT_DMA: u32 = 0x31;
    /// `NV04_CONTROL`.
    pub const CONTROL: u32 = 0x36;
    /// `NV04_DUP_OBJECT`.
    pub const DUP: u32 = 0x37;
    /// `NV04_ADD_VBLANK_CALLBACK`.
    pub const ADD_VBLANK_CALLBACK: u32 = 0x3d;
    /// `NV04_SHARE`.
    pub const SHARE: u32 = 0x3e;
}

/// The parameter block of NV04_ALLOC at this release.
pub type Alloc = Nvos64;

/// One member of the ops command's parameter union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// The op the member serves.
    pub op: u32,
    /// The member's name in `nvidia_kernel_rmapi_ops_t.params`.
    pub name: &'static str,
    /// Its size in bytes: the size of the block vgpu and the double use.
    pub size: usize,
}

/// Every member of the params union, in the header's order. Members vgpu
/// has no layout for carry the size of their block only (NVOS39, 46, 47,
/// 49, 61): vgpu never issues those ops and the double refuses them.
pub const MEMBERS: &[Member] = &[
    Member {
        op: op::FREE,
        name: "free",
        size: Nvos00::SIZE,
    },
    Member {
        op: op::ALLOC_MEMORY,
        name: "allocMemory64",
        size: Nvos02::SIZE,
    },
    Member {
        op: op::ALLOC,
        name: "alloc",
        size: Alloc::SIZE,
    },
    // A pointer to an NVOS32 block, not the block.
    Member {
        op: op::VID_HEAP_CONTROL,
        name: "pVidHeapControl",
        size: 8,
    },
    Member {
        op: op::MAP_MEMORY,
        name: "mapMemory",
        size: Nvos33::SIZE,
    },
    Member {
        op: op::UNMAP_MEMORY,
        name: "unmapMemory",
        size: Nvos34::SIZE,
    },
    Member {
        op: op::ALLOC_CONTEXT_DMA,
        name: "allocContextDma2",
        size: 56,
    },
    Member {
        op: op::MAP_MEMORY_DMA,
        name: "mapMemoryDma",
        size: 64,
    },
    Member {
        op: op::UNMAP_MEMORY_DMA,
        name: "unmapMemoryDma",
        size: 48,
    },
    Member {
        op: op::BIND_CONTEXT_DMA,
        name: "bindContextDma",
        size: 16,
    },
    Member {
        op: op::CONTROL,
        name: "control",
        size: Nvos54::SIZE,
    },
    Member {
        op: op::DUP,
        name: "dupObject",
        size: Nvos55::SIZE,
    },
    Member {
        op: op::SHARE,
        name: "share",
        size: Nvos57::SIZE,
    },
    Member {
        op: op::ADD_VBLANK_CALLBACK,
        name: "addVblankCallback",
        size: 56,
    },
];

/// Offset of the params union in the command block (after `NvU32 op`, at
/// the union's 8-byte alignment).
pub const PARAMS_OFFSET: usize = 8;
/// Size of the params union: its largest member (NVOS46, 64 bytes).
pub const PARAMS_SIZE: usize = 64;
/// Size of the whole command block (`sizeof(nvidia_kernel_rmapi_ops_t)`).
pub const CMD_SIZE: usize = PARAMS_OFFSET + PARAMS_SIZE;

/// The size of `op`'s member, if the union has one for it.
pub const fn member_size(op: u32) -> Option<usize> {
    let mut i = 0;
    while i < MEMBERS.len() {
        if MEMBERS[i].op == op {
            return Some(MEMBERS[i].size);
        }
        i += 1;
    }
    None
}

const _: () = {
    let mut i = 0;
    while i < MEMBERS.len() {
        assert!(
            MEMBERS[i].size <= PARAMS_SIZE,
            "an ops member is larger than the union"
        );
        i += 1;
    }
    assert!(CMD_SIZE.is_multiple_of(8));
};

/// An ops command block (`nvidia_kernel_rmapi_ops_t`): the op, then one
/// member of the params union at [`PARAMS_OFFSET`]. The driver reads and
/// writes it in place.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpsCmd {
    bytes: [u8; CMD_SIZE],
}

impl OpsCmd {
    /// A command for `op` with `params` (its member's bytes, zero-padded to
    /// the union). `None` if the union has no member for `op` or `params`
    /// is not exactly that member's size: a block of another size is
    /// another release's layout.
    pub fn new(op: u32, params: &[u8]) -> Option<OpsCmd> {
        if member_size(op)? != params.len() {
            return None;
        }
        let mut bytes = [0u8; CMD_SIZE];
        bytes[..4].copy_from_slice(&op.to_ne_bytes());
        bytes[PARAMS_OFFSET..PARAMS_OFFSET + params.len()].copy_from_slice(params);
        Some(OpsCmd { bytes })
    }

    /// A command block as the driver sees it (the double decodes what a
    /// kernel client sent).
    pub const fn from_bytes(bytes: [u8; CMD_SIZE]) -> OpsCmd {
        OpsCmd { bytes }
    }

    /// The whole block.
    pub const fn bytes(&self) -> &[u8; CMD_SIZE] {
        &self.bytes
    }

    /// The op.
    pub fn op(&self) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.bytes[..4]);
        u32::from_ne_bytes(b)
    }

    /// The params union.
    pub fn params(&self) -> &[u8] {
        &self.bytes[PARAMS_OFFSET..]
    }

    /// The params union, writable.
    pub fn params_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[PARAMS_OFFSET..]
    }
}

/// `NV_MAX_GPUS`: the number of entries `enumerate_gpus` may fill.
pub const MAX_GPUS: usize = 32;

/// The PCI location in an [`GpuInfo`] (`nv_gpu_info_t.pci_info`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PciLocation {
    /// PCI domain.
    pub domain: u32,
    /// Bus.
    pub bus: u8,
    /// Slot.
    pub slot: u8,
    /// Function.
    pub function: u8,
}

/// `nv_gpu_info_t`: one entry of `enumerate_gpus`' output array.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GpuInfo {
    /// The driver's gpu_id.
    pub gpu_id: u32,
    /// Where the GPU sits.
    pub pci_info: PciLocation,
    /// Whether the GPU's memory still needs NUMA onlining.
    pub needs_numa_setup: u8,
    /// Whether it is an SoC display device.
    pub is_soc_disp: u8,
    /// The GPU's `struct device` (opaque here).
    pub os_device_ptr: *mut c_void,
}

impl GpuInfo {
    /// An empty entry, for the array the driver fills.
    pub const EMPTY: GpuInfo = GpuInfo {
        gpu_id: 0,
        pci_info: PciLocation {
            domain: 0,
            bus: 0,
            slot: 0,
            function: 0,
        },
        needs_numa_setup: 0,
        is_soc_disp: 0,
        os_device_ptr: core::ptr::null_mut(),
    };
}

/// `alloc_stack(sp *) -> int`.
pub type AllocStackFn = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
/// `free_stack(sp)`.
pub type FreeStackFn = unsafe extern "C" fn(*mut c_void);
/// `enumerate_gpus(nv_gpu_info_t[NV_MAX_GPUS]) -> NvU32`.
pub type EnumerateGpusFn = unsafe extern "C" fn(*mut GpuInfo) -> u32;
/// `open_gpu(gpu_id, sp, reset_aware) -> int` (the `reset_aware` flag is
/// new in 595).
pub type OpenGpuFn = unsafe extern "C" fn(u32, *mut c_void, u8) -> c_int;
/// `close_gpu(gpu_id, sp, reset_aware)`.
pub type CloseGpuFn = unsafe extern "C" fn(u32, *mut c_void, u8);
/// `op(sp, ops_cmd)`: runs one [`OpsCmd`].
pub type OpFn = unsafe extern "C" fn(*mut c_void, *mut c_void);
/// `set_callbacks(const nvidia_modeset_callbacks_t *) -> int`.
pub type SetCallbacksFn = unsafe extern "C" fn(*const c_void) -> c_int;

/// `nvidia_modeset_rm_ops_t`: the caller names the release it was built for
/// in `version_string`; on a match the driver fills in the rest, on a
/// mismatch it points `version_string` at its own version and returns
/// NV_ERR_GENERIC (`kernel-open/nvidia/nv-modeset-interface.c:162-166`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RmOpsTable {
    /// A NUL-terminated version string.
    pub version_string: *const u8,
    /// `system_info.allow_write_combining` (the struct's only member).
    pub allow_write_combining: u8,
    /// See [`AllocStackFn`].
    pub alloc_stack: Option<AllocStackFn>,
    /// See [`FreeStackFn`].
    pub free_stack: Option<FreeStackFn>,
    /// See [`EnumerateGpusFn`].
    pub enumerate_gpus: Option<EnumerateGpusFn>,
    /// See [`OpenGpuFn`].
    pub open_gpu: Option<OpenGpuFn>,
    /// See [`CloseGpuFn`].
    pub close_gpu: Option<CloseGpuFn>,
    /// See [`OpFn`].
    pub op: Option<OpFn>,
    /// See [`SetCallbacksFn`].
    pub set_callbacks: Option<SetCallbacksFn>,
}

impl RmOpsTable {
    /// A table that only names a version (what a caller passes in).
    pub const fn asking(version_string: *const u8) -> RmOpsTable {
        RmOpsTable {
            version_string,
            allow_write_combining: 0,
            alloc_stack: None,
            free_stack: None,
            enumerate_gpus: None,
            open_gpu: None,
            close_gpu: None,
            op: None,
            set_callbacks: None,
        }
    }
}
