// SPDX-License-Identifier: GPL-2.0

//! The nvidia-uvm ioctl ABI (`/dev/nvidia-uvm`), as vgpu and the driver
//! double need it.
//!
//! core-only, like [`super::abi`], whose `wire_struct!` declares the layouts
//! here; host tests pin them (`userspace/logic/tests/uvm.rs`). The facts
//! (numbers, sizes, offsets, flags, statuses) are gathered, with their
//! sources, in `docs/uvm-abi.md` (NVIDIA/open-gpu-kernel-modules 595.45.04,
//! `kernel-open/nvidia-uvm/uvm_ioctl.h` and `uvm_linux_ioctl.h`).
//!
//! Unlike RM's escapes, UVM's command numbers are plain integers with no
//! size or direction bits: the driver copies exactly the command's block
//! size in from the argument and, whatever the outcome, the whole block back
//! out, with the result in the block's `rmStatus`; the ioctl itself returns
//! 0 unless a copy faults (`EFAULT`) or the command is unknown (`ENOSYS`).

#![allow(dead_code, unreachable_pub)]

use super::wire::{field_offset, WireField};

/// A processor UUID (`NvProcessorUuid`): 16 bytes, alignment 1. For a GPU
/// it is the binary form of its GID (`NV2080_CTRL_CMD_GPU_GET_GID_INFO` with
/// the binary flag).
pub type Uuid = [u8; 16];

/// `NV_PROCESSOR_UUID_CPU_DEFAULT` (73772a14-2c41-4750-a27b-d4d74e0f5ea6),
/// the CPU as a destination, in its stored byte order.
pub const CPU_UUID: Uuid = [
    0xa6, 0x5e, 0x0f, 0x4e, 0xd7, 0xd4, 0x7b, 0xa2, 0x50, 0x47, 0x41, 0x2c, 0x14, 0x2a, 0x77, 0x73,
];

/// Entries of the per-GPU attribute arrays (`UVM_MAX_GPUS` x 8 sub-processors).
pub const MAX_GPU_ATTRIBUTES: usize = 256;

/// The size UVM works in: ranges and migrations are 4 KiB aligned.
pub const PAGE: u64 = 4096;
const _: () = assert!(PAGE.is_power_of_two());

/// What GPU-resident managed memory is taken in (the physical memory
/// manager's root chunks).
pub const CHUNK: u64 = 2 << 20;

/// The most page-table memory one `UVM_MAP_DYNAMIC_PARALLELISM_REGION`
/// can make UVM allocate (NVIDIA/open-gpu-kernel-modules 595.45.04,
/// `kernel-open/nvidia-uvm/`): the region is one GPU page
/// (`uvm_va_range.c:1767-1773`), so the walk from the page tree's root,
/// which exists already (`uvm_mmu.c:1161`), allocates at most one directory
/// per level below it (`uvm_mmu.c:1397-1470`, `try_get_ptes`): at most 5
/// (6 levels on Hopper and Blackwell, `uvm_hopper_mmu.c:120`,
/// `uvm_blackwell_mmu.c:24-31`) of at most 4 KiB each
/// (`uvm_hopper_mmu.c:118-129`, `uvm_turing_mmu.c:206-213`), from the
/// GPU's memory first (`uvm_mmu.c:1063-1077`).
pub const DP_REGION_PAGE_TABLES: u64 = 5 * 4096;

/// `UVM_INITIALIZE` flags.
pub mod init_flags {
    /// `UVM_INIT_FLAGS_DISABLE_HMM`: no pageable (HMM) memory on GPUs.
    pub const DISABLE_HMM: u64 = 0x1;
    /// `UVM_INIT_FLAGS_MULTI_PROCESS_SHARING_MODE`: no mm association.
    pub const MULTI_PROCESS_SHARING_MODE: u64 = 0x2;
    /// Every defined flag; any other bit is `NV_ERR_INVALID_ARGUMENT`.
    pub const ALL: u64 = DISABLE_HMM | MULTI_PROCESS_SHARING_MODE;
}

/// `UVM_MIGRATE` flags.
pub mod migrate_flags {
    /// `UVM_MIGRATE_FLAG_ASYNC`.
    pub const ASYNC: u32 = 0x1;
}

/// The UVM commands vgpu and the double know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `UVM_INITIALIZE`: makes the file a VA space.
    Initialize,
    /// `UVM_DEINITIALIZE`: does nothing (no block).
    Deinitialize,
    /// `UVM_MM_INITIALIZE`: makes a second file the VA space's mm file.
    MmInitialize,
    /// `UVM_REGISTER_GPU`.
    RegisterGpu,
    /// `UVM_UNREGISTER_GPU`.
    UnregisterGpu,
    /// `UVM_REGISTER_GPU_VASPACE`: an RM VA space for a GPU.
    RegisterGpuVaspace,
    /// `UVM_UNREGISTER_GPU_VASPACE`.
    UnregisterGpuVaspace,
    /// `UVM_REGISTER_CHANNEL`: an RM channel.
    RegisterChannel,
    /// `UVM_UNREGISTER_CHANNEL`.
    UnregisterChannel,
    /// `UVM_ENABLE_PEER_ACCESS`.
    EnablePeerAccess,
    /// `UVM_DISABLE_PEER_ACCESS`.
    DisablePeerAccess,
    /// `UVM_MAP_EXTERNAL_ALLOCATION`: maps RM memory into a range.
    MapExternalAllocation,
    /// `UVM_FREE`: frees a range that is not managed.
    Free,
    /// `UVM_PAGEABLE_MEM_ACCESS`.
    PageableMemAccess,
    /// `UVM_PAGEABLE_MEM_ACCESS_ON_GPU`: whether a GPU registered in the
    /// VA space reaches pageable memory.
    PageableMemAccessOnGpu,
    /// `UVM_SET_PREFERRED_LOCATION`.
    SetPreferredLocation,
    /// `UVM_UNSET_PREFERRED_LOCATION`.
    UnsetPreferredLocation,
    /// `UVM_ENABLE_READ_DUPLICATION`.
    EnableReadDuplication,
    /// `UVM_DISABLE_READ_DUPLICATION`.
    DisableReadDuplication,
    /// `UVM_SET_ACCESSED_BY`.
    SetAccessedBy,
    /// `UVM_UNSET_ACCESSED_BY`.
    UnsetAccessedBy,
    /// `UVM_MIGRATE`: moves managed pages to a processor.
    Migrate,
    /// `UVM_UNMAP_EXTERNAL`.
    UnmapExternal,
    /// `UVM_ALLOC_SEMAPHORE_POOL`.
    AllocSemaphorePool,
    /// `UVM_VALIDATE_VA_RANGE`.
    ValidateVaRange,
    /// `UVM_CREATE_EXTERNAL_RANGE`.
    CreateExternalRange,
    /// `UVM_CREATE_RANGE_GROUP`: a new range group of the VA space.
    CreateRangeGroup,
    /// `UVM_DESTROY_RANGE_GROUP`.
    DestroyRangeGroup,
    /// `UVM_SET_RANGE_GROUP`: puts managed memory in a range group (0: none).
    SetRangeGroup,
    /// `UVM_MIGRATE_RANGE_GROUP`: migrates a range group's managed memory.
    MigrateRangeGroup,
    /// `UVM_MAP_DYNAMIC_PARALLELISM_REGION`: one GPU page of SKED-reflected
    /// PTEs (no memory behind it).
    MapDynamicParallelismRegion,
    /// `UVM_TOOLS_READ_PROCESS_MEMORY`: copies the VA space's memory to a
    /// buffer of the caller.
    ToolsReadProcessMemory,
    /// `UVM_TOOLS_WRITE_PROCESS_MEMORY`: copies a buffer of the caller into
    /// the VA space's memory.
    ToolsWriteProcessMemory,
}

/// Every command, for tables and tests.
pub const COMMANDS: [Command; 33] = [
    Command::Initialize,
    Command::Deinitialize,
    Command::MmInitialize,
    Command::RegisterGpu,
    Command::UnregisterGpu,
    Command::RegisterGpuVaspace,
    Command::UnregisterGpuVaspace,
    Command::RegisterChannel,
    Command::UnregisterChannel,
    Command::EnablePeerAccess,
    Command::DisablePeerAccess,
    Command::MapExternalAllocation,
    Command::Free,
    Command::PageableMemAccess,
    Command::PageableMemAccessOnGpu,
    Command::SetPreferredLocation,
    Command::UnsetPreferredLocation,
    Command::EnableReadDuplication,
    Command::DisableReadDuplication,
    Command::SetAccessedBy,
    Command::UnsetAccessedBy,
    Command::Migrate,
    Command::UnmapExternal,
    Command::AllocSemaphorePool,
    Command::ValidateVaRange,
    Command::CreateExternalRange,
    Command::CreateRangeGroup,
    Command::DestroyRangeGroup,
    Command::SetRangeGroup,
    Command::MigrateRangeGroup,
    Command::MapDynamicParallelismRegion,
    Command::ToolsReadProcessMemory,
    Command::ToolsWriteProcessMemory,
];

impl Command {
    /// The ioctl number (`uvm_ioctl.h`).
    pub const fn number(self) -> u32 {
        match self {
            Command::Initialize => 0x3000_0001,
            Command::Deinitialize => 0x3000_0002,
            Command::CreateRangeGroup => 23,
            Command::DestroyRangeGroup => 24,
            Command::RegisterGpuVaspace => 25,
            Command::UnregisterGpuVaspace => 26,
            Command::RegisterChannel => 27,
            Command::UnregisterChannel => 28,
            Command::EnablePeerAccess => 29,
            Command::DisablePeerAccess => 30,
            Command::SetRangeGroup => 31,
            Command::MapExternalAllocation => 33,
            Command::Free => 34,
            Command::RegisterGpu => 37,
            Command::UnregisterGpu => 38,
            Command::PageableMemAccess => 39,
            Command::SetPreferredLocation => 42,
            Command::UnsetPreferredLocation => 43,
            Command::EnableReadDuplication => 44,
            Command::DisableReadDuplication => 45,
            Command::SetAccessedBy => 46,
            Command::UnsetAccessedBy => 47,
            Command::Migrate => 51,
            Command::MigrateRangeGroup => 53,
            Command::ToolsReadProcessMemory => 62,
            Command::ToolsWriteProcessMemory => 63,
            Command::MapDynamicParallelismRegion => 65,
            Command::UnmapExternal => 66,
            Command::AllocSemaphorePool => 68,
            Command::PageableMemAccessOnGpu => 70,
            Command::ValidateVaRange => 72,
            Command::CreateExternalRange => 73,
            Command::MmInitialize => 75,
        }
    }

    /// The command with ioctl number `cmd`; `None` for numbers this file
    /// does not know (the driver answers those with `ENOSYS`).
    pub fn decode(cmd: u32) -> Option<Command> {
        COMMANDS.iter().copied().find(|c| c.number() == cmd)
    }

    /// The parameter block's size in bytes (0: no block).
    pub const fn size(self) -> usize {
        match self {
            Command::Initialize => InitializeParams::SIZE,
            Command::Deinitialize => 0,
            Command::MmInitialize => MmInitializeParams::SIZE,
            Command::RegisterGpu => RegisterGpuParams::SIZE,
            Command::UnregisterGpu | Command::UnregisterGpuVaspace => GpuParams::SIZE,
            Command::RegisterGpuVaspace => RegisterGpuVaspaceParams::SIZE,
            Command::RegisterChannel => RegisterChannelParams::SIZE,
            Command::UnregisterChannel => UnregisterChannelParams::SIZE,
            Command::EnablePeerAccess | Command::DisablePeerAccess => PeerAccessParams::SIZE,
            Command::MapExternalAllocation => MapExternalAllocationParams::SIZE,
            Command::Free => FreeParams::SIZE,
            Command::PageableMemAccess => PageableMemAccessParams::SIZE,
            Command::PageableMemAccessOnGpu => PageableMemAccessOnGpuParams::SIZE,
            Command::SetPreferredLocation => SetPreferredLocationParams::SIZE,
            Command::UnsetPreferredLocation
            | Command::EnableReadDuplication
            | Command::DisableReadDuplication
            | Command::ValidateVaRange
            | Command::CreateExternalRange => RangeParams::SIZE,
            Command::SetAccessedBy
            | Command::UnsetAccessedBy
            | Command::UnmapExternal
            | Command::MapDynamicParallelismRegion => RangeGpuParams::SIZE,
            Command::Migrate => MigrateParams::SIZE,
            Command::AllocSemaphorePool => AllocSemaphorePoolParams::SIZE,
            Command::CreateRangeGroup | Command::DestroyRangeGroup => RangeGroupParams::SIZE,
            Command::SetRangeGroup => SetRangeGroupParams::SIZE,
            Command::MigrateRangeGroup => MigrateRangeGroupParams::SIZE,
            Command::ToolsReadProcessMemory | Command::ToolsWriteProcessMemory => {
                ToolsProcessMemoryParams::SIZE
            }
        }
    }

    /// Its block's layout (`None`: no block).
    pub const fn fields(self) -> Option<&'static [WireField]> {
        Some(match self {
            Command::Deinitialize => return None,
            Command::Initialize => InitializeParams::FIELDS,
            Command::MmInitialize => MmInitializeParams::FIELDS,
            Command::RegisterGpu => RegisterGpuParams::FIELDS,
            Command::UnregisterGpu | Command::UnregisterGpuVaspace => GpuParams::FIELDS,
            Command::RegisterGpuVaspace => RegisterGpuVaspaceParams::FIELDS,
            Command::RegisterChannel => RegisterChannelParams::FIELDS,
            Command::UnregisterChannel => UnregisterChannelParams::FIELDS,
            Command::EnablePeerAccess | Command::DisablePeerAccess => PeerAccessParams::FIELDS,
            Command::MapExternalAllocation => MapExternalAllocationParams::FIELDS,
            Command::Free => FreeParams::FIELDS,
            Command::PageableMemAccess => PageableMemAccessParams::FIELDS,
            Command::PageableMemAccessOnGpu => PageableMemAccessOnGpuParams::FIELDS,
            Command::SetPreferredLocation => SetPreferredLocationParams::FIELDS,
            Command::UnsetPreferredLocation
            | Command::EnableReadDuplication
            | Command::DisableReadDuplication
            | Command::ValidateVaRange
            | Command::CreateExternalRange => RangeParams::FIELDS,
            Command::SetAccessedBy
            | Command::UnsetAccessedBy
            | Command::UnmapExternal
            | Command::MapDynamicParallelismRegion => RangeGpuParams::FIELDS,
            Command::Migrate => MigrateParams::FIELDS,
            Command::AllocSemaphorePool => AllocSemaphorePoolParams::FIELDS,
            Command::CreateRangeGroup | Command::DestroyRangeGroup => RangeGroupParams::FIELDS,
            Command::SetRangeGroup => SetRangeGroupParams::FIELDS,
            Command::MigrateRangeGroup => MigrateRangeGroupParams::FIELDS,
            Command::ToolsReadProcessMemory | Command::ToolsWriteProcessMemory => {
                ToolsProcessMemoryParams::FIELDS
            }
        })
    }

    /// Where the block's `rmStatus` is (`None`: no block): its layout's
    /// `rm_status` field.
    pub const fn status_offset(self) -> Option<usize> {
        match self.fields() {
            Some(f) => Some(field_offset(f, "rm_status")),
            None => None,
        }
    }

    /// Where the block holds an fd the driver looks up in the caller's
    /// table (`MM_INITIALIZE`'s `uvmFd`), or one it is given but leaves
    /// unread in 595.45.04 (`REGISTER_GPU`'s `rmCtrlFd`, where a proxy can
    /// name the GPU file the driver's fd-table check must find).
    pub const fn embedded_fd(self) -> Option<usize> {
        match self {
            Command::MmInitialize => Some(field_offset(MmInitializeParams::FIELDS, "uvm_fd")),
            Command::RegisterGpu => Some(field_offset(RegisterGpuParams::FIELDS, "rm_ctrl_fd")),
            _ => None,
        }
    }

    /// Whether a file must be a VA space (`UVM_INITIALIZE`d) for this
    /// command; otherwise it answers `NV_ERR_ILLEGAL_ACTION`.
    pub const fn init_checked(self) -> bool {
        !matches!(
            self,
            Command::Initialize | Command::MmInitialize | Command::Deinitialize
        )
    }
}

wire_struct! {
    /// UVM_INITIALIZE_PARAMS.
    pub struct InitializeParams, size 16 {
        /// In: [`init_flags`].
        flags @ 0: u64,
        /// Out.
        rm_status @ 8: u32,
    }
}

wire_struct! {
    /// UVM_MM_INITIALIZE_PARAMS.
    pub struct MmInitializeParams, size 8 {
        /// In: an fd of the VA-space file in the caller's table.
        uvm_fd @ 0: i32,
        /// Out.
        rm_status @ 4: u32,
    }
}

wire_struct! {
    /// UVM_REGISTER_GPU_PARAMS.
    pub struct RegisterGpuParams, size 40 {
        /// In/out: the GPU (the registered UUID comes back).
        gpu_uuid @ 0: [u8; 16],
        /// Out: GPU memory is a NUMA node.
        numa_enabled @ 16: u8,
        /// Out: that node (-1: none).
        numa_node_id @ 20: i32,
        /// In: an RM ctl or GPU fd (unread by 595.45.04).
        rm_ctrl_fd @ 24: i32,
        /// In: RM client (MIG partition reference only).
        h_client @ 28: u32,
        /// In: RM partition reference (MIG only).
        h_smc_part_ref @ 32: u32,
        /// Out.
        rm_status @ 36: u32,
    }
}

wire_struct! {
    /// UVM_UNREGISTER_GPU_PARAMS and UVM_UNREGISTER_GPU_VASPACE_PARAMS.
    pub struct GpuParams, size 20 {
        /// In.
        gpu_uuid @ 0: [u8; 16],
        /// Out.
        rm_status @ 16: u32,
    }
}

wire_struct! {
    /// UVM_REGISTER_GPU_VASPACE_PARAMS.
    pub struct RegisterGpuVaspaceParams, size 32 {
        /// In.
        gpu_uuid @ 0: [u8; 16],
        /// In (unread).
        rm_ctrl_fd @ 16: i32,
        /// In: the client of the VA space (looked up globally by RM).
        h_client @ 20: u32,
        /// In: an externally owned FERMI_VASPACE_A of this GPU's device.
        h_va_space @ 24: u32,
        /// Out.
        rm_status @ 28: u32,
    }
}

wire_struct! {
    /// UVM_REGISTER_CHANNEL_PARAMS.
    pub struct RegisterChannelParams, size 56 {
        /// In.
        gpu_uuid @ 0: [u8; 16],
        /// In (unread).
        rm_ctrl_fd @ 16: i32,
        /// In: the channel's client (looked up globally by RM).
        h_client @ 20: u32,
        /// In: a channel in the registered VA space.
        h_channel @ 24: u32,
        /// In: VA for the channel's context buffers.
        base @ 32: u64,
        /// In.
        length @ 40: u64,
        /// Out.
        rm_status @ 48: u32,
    }
}

wire_struct! {
    /// UVM_UNREGISTER_CHANNEL_PARAMS.
    pub struct UnregisterChannelParams, size 12 {
        /// In.
        h_client @ 0: u32,
        /// In.
        h_channel @ 4: u32,
        /// Out.
        rm_status @ 8: u32,
    }
}

wire_struct! {
    /// UVM_ENABLE_PEER_ACCESS_PARAMS and UVM_DISABLE_PEER_ACCESS_PARAMS.
    pub struct PeerAccessParams, size 36 {
        /// In.
        gpu_uuid_a @ 0: [u8; 16],
        /// In.
        gpu_uuid_b @ 16: [u8; 16],
        /// Out.
        rm_status @ 32: u32,
    }
}

wire_struct! {
    /// UvmGpuMappingAttributes (`uvm_types.h`).
    pub struct GpuMappingAttributes, size 36 {
        /// The GPU to map on.
        gpu_uuid @ 0: [u8; 16],
        /// UvmGpuMappingType (0..=3).
        gpu_mapping_type @ 16: u32,
        /// UvmGpuCachingType (0..=2).
        gpu_caching_type @ 20: u32,
        /// UvmGpuFormatType.
        gpu_format_type @ 24: u32,
        /// UvmGpuFormatElementBits.
        gpu_element_bits @ 28: u32,
        /// UvmGpuCompressionType (0..=1).
        gpu_compression_type @ 32: u32,
    }
}

wire_struct! {
    /// UVM_MAP_EXTERNAL_ALLOCATION_PARAMS.
    pub struct MapExternalAllocationParams, size 9264 {
        /// In: inside one external range.
        base @ 0: u64,
        /// In.
        length @ 8: u64,
        /// In: offset into the RM memory.
        offset @ 16: u64,
        /// In: where and how to map.
        per_gpu_attributes @ 24: [GpuMappingAttributes; 256],
        /// In: entries of `per_gpu_attributes` used (1..=256).
        gpu_attributes_count @ 9240: u64,
        /// In (unread).
        rm_ctrl_fd @ 9248: i32,
        /// In: the memory's client (looked up globally by RM).
        h_client @ 9252: u32,
        /// In: the RM memory object.
        h_memory @ 9256: u32,
        /// Out.
        rm_status @ 9260: u32,
    }
}

/// Field offsets of [`MapExternalAllocationParams`], for reading single
/// fields of the 9 KiB block: decoding it whole would need that much stack,
/// more than a kernel thread may use at once.
pub mod map_external {
    /// `base` (u64).
    pub const BASE: usize = 0;
    /// `length` (u64).
    pub const LENGTH: usize = 8;
    /// `offset` (u64).
    pub const OFFSET: usize = 16;
    /// `perGpuAttributes` (256 x 36 bytes).
    pub const ATTRIBUTES: usize = 24;
    /// `gpuAttributesCount` (u64).
    pub const COUNT: usize = 9240;
    /// `hClient` (u32).
    pub const H_CLIENT: usize = 9252;
    /// `hMemory` (u32).
    pub const H_MEMORY: usize = 9256;
}

wire_struct! {
    /// UVM_FREE_PARAMS (595.45.04: no length).
    pub struct FreeParams, size 16 {
        /// In: the start of a range that is not managed.
        base @ 0: u64,
        /// Out.
        rm_status @ 8: u32,
    }
}

wire_struct! {
    /// UVM_PAGEABLE_MEM_ACCESS_PARAMS.
    pub struct PageableMemAccessParams, size 8 {
        /// Out: GPUs can access pageable memory (HMM or ATS).
        pageable_mem_access @ 0: u8,
        /// Out.
        rm_status @ 4: u32,
    }
}

wire_struct! {
    /// UVM_PAGEABLE_MEM_ACCESS_ON_GPU_PARAMS (`uvm_ioctl.h:1015-1022` at
    /// 550.163.01; the same at every supported release).
    pub struct PageableMemAccessOnGpuParams, size 24 {
        /// In: a GPU registered in the VA space.
        gpu_uuid @ 0: [u8; 16],
        /// Out: that GPU reaches pageable memory.
        pageable_mem_access @ 16: u8,
        /// Out.
        rm_status @ 20: u32,
    }
}

wire_struct! {
    /// UVM_SET_PREFERRED_LOCATION_PARAMS.
    pub struct SetPreferredLocationParams, size 40 {
        /// In.
        requested_base @ 0: u64,
        /// In.
        length @ 8: u64,
        /// In.
        preferred_location @ 16: [u8; 16],
        /// In.
        preferred_cpu_numa_node @ 32: i32,
        /// Out.
        rm_status @ 36: u32,
    }
}

wire_struct! {
    /// A range and a status: UVM_CREATE_EXTERNAL_RANGE_PARAMS,
    /// UVM_VALIDATE_VA_RANGE_PARAMS, UVM_UNSET_PREFERRED_LOCATION_PARAMS,
    /// UVM_ENABLE/DISABLE_READ_DUPLICATION_PARAMS.
    pub struct RangeParams, size 24 {
        /// In.
        base @ 0: u64,
        /// In.
        length @ 8: u64,
        /// Out.
        rm_status @ 16: u32,
    }
}

wire_struct! {
    /// A range, a processor and a status: UVM_SET/UNSET_ACCESSED_BY_PARAMS,
    /// UVM_UNMAP_EXTERNAL_PARAMS, UVM_MAP_DYNAMIC_PARALLELISM_REGION_PARAMS.
    pub struct RangeGpuParams, size 40 {
        /// In.
        base @ 0: u64,
        /// In.
        length @ 8: u64,
        /// In.
        uuid @ 16: [u8; 16],
        /// Out.
        rm_status @ 32: u32,
    }
}

wire_struct! {
    /// UVM_MIGRATE_PARAMS.
    pub struct MigrateParams, size 80 {
        /// In: page aligned.
        base @ 0: u64,
        /// In: page aligned, non-zero.
        length @ 8: u64,
        /// In: a registered GPU or [`CPU_UUID`].
        destination_uuid @ 16: [u8; 16],
        /// In: [`migrate_flags`].
        flags @ 32: u32,
        /// In: async only.
        semaphore_address @ 40: u64,
        /// In: async only.
        semaphore_payload @ 48: u32,
        /// In: CPU destination's node (-1: any).
        cpu_numa_node @ 52: i32,
        /// Out: pageable memory left to userspace.
        user_space_start @ 56: u64,
        /// Out.
        user_space_length @ 64: u64,
        /// Out.
        rm_status @ 72: u32,
    }
}

wire_struct! {
    /// UVM_ALLOC_SEMAPHORE_POOL_PARAMS.
    pub struct AllocSemaphorePoolParams, size 9248 {
        /// In.
        base @ 0: u64,
        /// In.
        length @ 8: u64,
        /// In.
        per_gpu_attributes @ 16: [GpuMappingAttributes; 256],
        /// In.
        gpu_attributes_count @ 9232: u64,
        /// Out.
        rm_status @ 9240: u32,
    }
}

wire_struct! {
    /// UVM_CREATE_RANGE_GROUP_PARAMS and UVM_DESTROY_RANGE_GROUP_PARAMS.
    pub struct RangeGroupParams, size 16 {
        /// Out (create) or in (destroy): the group, numbered per VA space
        /// from 1.
        range_group_id @ 0: u64,
        /// Out.
        rm_status @ 8: u32,
    }
}

/// `UVM_RANGE_GROUP_ID_NONE`: in `UVM_SET_RANGE_GROUP`, takes the range out
/// of any group.
pub const RANGE_GROUP_NONE: u64 = 0;

wire_struct! {
    /// UVM_SET_RANGE_GROUP_PARAMS.
    pub struct SetRangeGroupParams, size 32 {
        /// In: a group of this VA space, or [`RANGE_GROUP_NONE`].
        range_group_id @ 0: u64,
        /// In: page aligned, inside managed ranges.
        requested_base @ 8: u64,
        /// In.
        length @ 16: u64,
        /// Out.
        rm_status @ 24: u32,
    }
}

wire_struct! {
    /// UVM_MIGRATE_RANGE_GROUP_PARAMS.
    pub struct MigrateRangeGroupParams, size 32 {
        /// In.
        range_group_id @ 0: u64,
        /// In: a GPU with a GPU VA space, or [`CPU_UUID`].
        destination_uuid @ 8: [u8; 16],
        /// Out.
        rm_status @ 24: u32,
    }
}

wire_struct! {
    /// UVM_TOOLS_READ_PROCESS_MEMORY_PARAMS and
    /// UVM_TOOLS_WRITE_PROCESS_MEMORY_PARAMS.
    pub struct ToolsProcessMemoryParams, size 40 {
        /// In: the caller's buffer (its own address space).
        buffer @ 0: u64,
        /// In: bytes to copy.
        size @ 8: u64,
        /// In: the VA space's address.
        target_va @ 16: u64,
        /// Out: bytes read (or written).
        bytes_done @ 24: u64,
        /// Out.
        rm_status @ 32: u32,
    }
}

/// Whether `[base, base + length)` is a non-empty, page-aligned range that
/// does not wrap: the check UVM makes of every range it is given.
pub const fn range_ok(base: u64, length: u64) -> bool {
    // Masks, as `PAGE` is a power of two (`is_multiple_of` needs Rust 1.87).
    length != 0
        && base & (PAGE - 1) == 0
        && length & (PAGE - 1) == 0
        && base.checked_add(length).is_some()
}

/// Whether `[a, a + alen)` and `[b, b + blen)` share a byte.
pub const fn overlaps(a: u64, alen: u64, b: u64, blen: u64) -> bool {
    a < b.saturating_add(blen) && b < a.saturating_add(alen)
}

/// The 2 MiB chunks `[base, base + length)` touches, as a half-open range
/// of chunk indices.
pub const fn chunks(base: u64, length: u64) -> (u64, u64) {
    let first = base / CHUNK;
    let end = match base.checked_add(length) {
        Some(e) => e.div_ceil(CHUNK),
        None => u64::MAX / CHUNK + 1,
    };
    (first, end)
}

/// Blocks whose layout 580 and older releases have otherwise: before 590,
/// UVM_UNREGISTER_CHANNEL also names the GPU and UVM_FREE carries a length
/// (`kernel-open/nvidia-uvm/uvm_ioctl.h:443-449` and `:510-515` at 580.142,
/// and at 570.211.01, 550.163.01 and 535.288.01; the conformance facts of
/// each release check the layouts). The UVM tables of those releases
/// (`nv::release`) use these.
pub mod r580;

/// Blocks whose layout 535 has otherwise: its per-GPU attribute arrays hold
/// 32 GPUs (`UVM_MAX_GPUS`, `uvm_types.h:55`), and SET_PREFERRED_LOCATION
/// has no CPU NUMA node (`kernel-open/nvidia-uvm/uvm_ioctl.h:492-504`,
/// `:631-637` and `:965-972` at 535.288.01; the conformance facts check the
/// layouts). The UVM table of 535.288.01 (`nv::release`) uses these.
pub mod r535;
