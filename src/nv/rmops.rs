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
//! `serverAllocApiCopyIn`). So each release's tables name the interface
//! they speak ([`KernelClient`]: [`KERNEL_CLIENT`] from 580 on,
//! [`KERNEL_CLIENT_570`] for 570 and 550, [`KERNEL_CLIENT_535`]), and
//! blocks go to the driver only in the layout of the release it reported
//! (`crate::nv::release::current`).

#![allow(dead_code, unreachable_pub)]

use core::ffi::{c_int, c_void};

use super::abi::{
    Nvos00, Nvos02, Nvos21, Nvos33, Nvos34, Nvos54, Nvos55, Nvos57, Nvos64, Wire, WireField,
};

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
pub const MEMBERS: &[Member] = &MEMBERS_595;

/// [`MEMBERS`] as an array, for older releases' resized copies.
const MEMBERS_595: [Member; 14] = [
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

/// The kernel-client interface of a release: the members of the ops
/// command's params union and the layout of its NV04_ALLOC block, which is
/// where releases differ (`nv-kernel-rmapi-ops.h`; the conformance facts
/// of each release check these).
#[derive(Debug, PartialEq, Eq)]
pub struct KernelClient {
    /// Every member of the params union, in the header's order.
    pub members: &'static [Member],
    /// The union's size (its largest member).
    pub params_size: usize,
    /// The NV04_ALLOC block: an NVOS64 from 580 on, an NVOS21 (no rights
    /// pointer; status at 28) before.
    pub alloc: AllocBlock,
    /// `members`' sizes by op (0: no member), for [`Self::member_size`].
    sizes: [u8; OPS],
}

/// Ops are below this (`nvos.h`: the largest the union serves is 0x3e).
const OPS: usize = 0x40;

/// The layout of the kernel-client NV04_ALLOC block in a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocBlock {
    /// NVOS64 (48 bytes), from 580 on.
    Nvos64,
    /// NVOS21 (32 bytes), before 580.
    Nvos21,
}

impl AllocBlock {
    /// The block's size.
    pub const fn size(self) -> usize {
        match self {
            AllocBlock::Nvos64 => Nvos64::SIZE,
            AllocBlock::Nvos21 => Nvos21::SIZE,
        }
    }

    /// The block's layout.
    pub const fn fields(self) -> &'static [WireField] {
        match self {
            AllocBlock::Nvos64 => Nvos64::FIELDS,
            AllocBlock::Nvos21 => Nvos21::FIELDS,
        }
    }

    /// Runs `f` on `a` encoded in this layout (a block on the stack of
    /// exactly its size), then decodes the block back into `a`.
    pub fn round_trip<E>(
        self,
        a: &mut Alloc,
        f: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            AllocBlock::Nvos64 => {
                let mut b = a.to_bytes();
                f(&mut b)?;
                *a = Alloc::decode(&b);
            }
            AllocBlock::Nvos21 => {
                let mut b = [0u8; Nvos21::SIZE];
                self.encode(a, &mut b);
                f(&mut b)?;
                *a = self.decode(&b);
            }
        }
        Ok(())
    }

    /// Encodes `a` (the newest layout) in this layout into `out`: an NVOS21
    /// has no rights pointer and no flags.
    pub fn encode(self, a: &Alloc, out: &mut [u8]) {
        match self {
            AllocBlock::Nvos64 => a.encode(out),
            AllocBlock::Nvos21 => Nvos21 {
                h_root: a.h_root,
                h_object_parent: a.h_object_parent,
                h_object_new: a.h_object_new,
                h_class: a.h_class,
                p_alloc_parms: a.p_alloc_parms,
                params_size: a.params_size,
                status: a.status,
            }
            .encode(out),
        }
    }

    /// Decodes a block of this layout into the newest layout (no rights
    /// pointer and no flags from an NVOS21).
    pub fn decode(self, b: &[u8]) -> Alloc {
        match self {
            AllocBlock::Nvos64 => Alloc::decode(b),
            AllocBlock::Nvos21 => {
                let o = Nvos21::decode(b);
                Alloc {
                    h_root: o.h_root,
                    h_object_parent: o.h_object_parent,
                    h_object_new: o.h_object_new,
                    h_class: o.h_class,
                    p_alloc_parms: o.p_alloc_parms,
                    params_size: o.params_size,
                    status: o.status,
                    ..Default::default()
                }
            }
        }
    }
}

impl KernelClient {
    /// The size of `op`'s member, if the union has one for it (a table
    /// lookup: on the path of every kernel-client call).
    pub const fn member_size(&self, op: u32) -> Option<usize> {
        if (op as usize) < self.sizes.len() && self.sizes[op as usize] != 0 {
            Some(self.sizes[op as usize] as usize)
        } else {
            None
        }
    }

    /// A kernel-client interface of these members.
    pub const fn new(
        members: &'static [Member],
        params_size: usize,
        alloc: AllocBlock,
    ) -> KernelClient {
        let mut sizes = [0u8; OPS];
        let mut i = 0;
        while i < members.len() {
            let (op, size) = (members[i].op as usize, members[i].size);
            assert!(
                op < OPS && size > 0 && size < 256,
                "an op past the lookup table"
            );
            sizes[op] = size as u8;
            i += 1;
        }
        KernelClient {
            members,
            params_size,
            alloc,
            sizes,
        }
    }

    /// The size of the whole command block.
    pub const fn cmd_size(&self) -> usize {
        PARAMS_OFFSET + self.params_size
    }
}

/// The kernel-client interface from 575 on (595.45.04, 590.48.01,
/// 580.142).
pub const KERNEL_CLIENT: KernelClient = KernelClient::new(MEMBERS, PARAMS_SIZE, AllocBlock::Nvos64);

/// `m` with member `op` of size `size`.
const fn resized<const N: usize>(mut m: [Member; N], op: u32, size: usize) -> [Member; N] {
    let mut i = 0;
    while i < N {
        if m[i].op == op {
            m[i].size = size;
        }
        i += 1;
    }
    m
}

// 570.211.01 and 550.163.01: NV04_ALLOC takes an NVOS21 (32 bytes), NVOS46
// (mapMemoryDma) is 56 bytes, and so is the union
// (`src/nvidia/arch/nvalloc/unix/include/nv-kernel-rmapi-ops.h:59` and
// `nvos.h:2180` at 570.211.01, `nvos.h:2163` at 550.163.01).
const MEMBERS_570: [Member; 14] = resized(
    resized(MEMBERS_595, op::ALLOC, Nvos21::SIZE),
    op::MAP_MEMORY_DMA,
    56,
);
// 535.288.01: as 570's, and NVOS47 (unmapMemoryDma) is 40 bytes
// (`nvos.h:2148` at 535.288.01).
const MEMBERS_535: [Member; 14] = resized(MEMBERS_570, op::UNMAP_MEMORY_DMA, 40);

/// The kernel-client interface of 570.211.01 and 550.163.01.
pub const KERNEL_CLIENT_570: KernelClient = KernelClient::new(&MEMBERS_570, 56, AllocBlock::Nvos21);

/// The kernel-client interface of 535.288.01.
pub const KERNEL_CLIENT_535: KernelClient = KernelClient::new(&MEMBERS_535, 56, AllocBlock::Nvos21);

const _: () = {
    let all = [&KERNEL_CLIENT, &KERNEL_CLIENT_570, &KERNEL_CLIENT_535];
    let mut k = 0;
    while k < all.len() {
        let kc = all[k];
        let mut i = 0;
        while i < kc.members.len() {
            assert!(
                kc.members[i].size <= kc.params_size,
                "an ops member is larger than the union"
            );
            i += 1;
        }
        assert!(kc.cmd_size() <= CMD_SIZE && kc.cmd_size() & 7 == 0);
        k += 1;
    }
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
        OpsCmd::new_in(&KERNEL_CLIENT, op, params)
    }

    /// A command of op `op` with `params`, its member of `kc`'s union: the
    /// block is as large as the largest release's (a driver reads its own
    /// release's size of it).
    pub fn new_in(kc: &KernelClient, op: u32, params: &[u8]) -> Option<OpsCmd> {
        if kc.member_size(op)? != params.len() {
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
