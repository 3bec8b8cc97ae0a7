// SPDX-License-Identifier: GPL-2.0

//! The C names of the escapes, their parameter blocks and the UVM commands.

use crate::*;

/// The C macro naming each escape.
pub fn escape_c_name(e: Escape) -> &'static str {
    match e {
        Escape::RmAllocMemory => "NV_ESC_RM_ALLOC_MEMORY",
        Escape::RmFree => "NV_ESC_RM_FREE",
        Escape::RmControl => "NV_ESC_RM_CONTROL",
        Escape::RmAlloc => "NV_ESC_RM_ALLOC",
        Escape::RmDupObject => "NV_ESC_RM_DUP_OBJECT",
        Escape::RmShare => "NV_ESC_RM_SHARE",
        Escape::RmIdleChannels => "NV_ESC_RM_IDLE_CHANNELS",
        Escape::RmVidHeapControl => "NV_ESC_RM_VID_HEAP_CONTROL",
        Escape::RmMapMemory => "NV_ESC_RM_MAP_MEMORY",
        Escape::RmUnmapMemory => "NV_ESC_RM_UNMAP_MEMORY",
        Escape::RmMapMemoryDma => "NV_ESC_RM_MAP_MEMORY_DMA",
        Escape::RmUnmapMemoryDma => "NV_ESC_RM_UNMAP_MEMORY_DMA",
        Escape::RmUpdateDeviceMappingInfo => "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO",
        Escape::CardInfo => "NV_ESC_CARD_INFO",
        Escape::RegisterFd => "NV_ESC_REGISTER_FD",
        Escape::AllocOsEvent => "NV_ESC_ALLOC_OS_EVENT",
        Escape::FreeOsEvent => "NV_ESC_FREE_OS_EVENT",
        Escape::StatusCode => "NV_ESC_STATUS_CODE",
        Escape::CheckVersionStr => "NV_ESC_CHECK_VERSION_STR",
        Escape::IoctlXferCmd => "NV_ESC_IOCTL_XFER_CMD",
        Escape::AttachGpusToFd => "NV_ESC_ATTACH_GPUS_TO_FD",
        Escape::SysParams => "NV_ESC_SYS_PARAMS",
        Escape::NumaInfo => "NV_ESC_NUMA_INFO",
        Escape::ExportToDmabufFd => "NV_ESC_EXPORT_TO_DMABUF_FD",
        Escape::WaitOpenComplete => "NV_ESC_WAIT_OPEN_COMPLETE",
    }
}

/// The C parameter types of each escape, in the order of its size rule's
/// sizes (RM_ALLOC takes two layouts; records give the record's type).
pub fn escape_c_params(e: Escape) -> &'static [&'static str] {
    match e {
        Escape::RmAllocMemory => &["nv_ioctl_nvos02_parameters_with_fd"],
        Escape::RmFree => &["NVOS00_PARAMETERS"],
        Escape::RmControl => &["NVOS54_PARAMETERS"],
        Escape::RmAlloc => &["NVOS21_PARAMETERS", "NVOS64_PARAMETERS"],
        Escape::RmDupObject => &["NVOS55_PARAMETERS"],
        Escape::RmShare => &["NVOS57_PARAMETERS"],
        Escape::RmIdleChannels => &["NVOS30_PARAMETERS"],
        Escape::RmVidHeapControl => &["NVOS32_PARAMETERS"],
        Escape::RmMapMemory => &["nv_ioctl_nvos33_parameters_with_fd"],
        Escape::RmUnmapMemory => &["NVOS34_PARAMETERS"],
        Escape::RmMapMemoryDma => &["NVOS46_PARAMETERS"],
        Escape::RmUnmapMemoryDma => &["NVOS47_PARAMETERS"],
        Escape::RmUpdateDeviceMappingInfo => &["NVOS56_PARAMETERS"],
        Escape::CardInfo => &["nv_ioctl_card_info_t"],
        Escape::RegisterFd => &["nv_ioctl_register_fd_t"],
        Escape::AllocOsEvent => &["nv_ioctl_alloc_os_event_t"],
        Escape::FreeOsEvent => &["nv_ioctl_free_os_event_t"],
        Escape::StatusCode => &["nv_ioctl_status_code_t"],
        Escape::CheckVersionStr => &["nv_ioctl_rm_api_version_t"],
        Escape::IoctlXferCmd => &["nv_ioctl_xfer_t"],
        Escape::AttachGpusToFd => &["NvU32"],
        Escape::SysParams => &["nv_ioctl_sys_params_t"],
        Escape::NumaInfo => &["nv_ioctl_numa_info_t"],
        Escape::ExportToDmabufFd => &["nv_ioctl_export_to_dma_buf_fd_t"],
        Escape::WaitOpenComplete => &["nv_ioctl_wait_open_complete_t"],
    }
}

/// The C macro naming each UVM command, and its parameter type (`None`:
/// the command has no block).
pub fn uvm_c_name(c: uvm::Command) -> (&'static str, Option<&'static str>) {
    use uvm::Command as C;
    match c {
        C::Initialize => ("UVM_INITIALIZE", Some("UVM_INITIALIZE_PARAMS")),
        C::Deinitialize => ("UVM_DEINITIALIZE", None),
        C::MmInitialize => ("UVM_MM_INITIALIZE", Some("UVM_MM_INITIALIZE_PARAMS")),
        C::RegisterGpu => ("UVM_REGISTER_GPU", Some("UVM_REGISTER_GPU_PARAMS")),
        C::UnregisterGpu => ("UVM_UNREGISTER_GPU", Some("UVM_UNREGISTER_GPU_PARAMS")),
        C::RegisterGpuVaspace => (
            "UVM_REGISTER_GPU_VASPACE",
            Some("UVM_REGISTER_GPU_VASPACE_PARAMS"),
        ),
        C::UnregisterGpuVaspace => (
            "UVM_UNREGISTER_GPU_VASPACE",
            Some("UVM_UNREGISTER_GPU_VASPACE_PARAMS"),
        ),
        C::RegisterChannel => ("UVM_REGISTER_CHANNEL", Some("UVM_REGISTER_CHANNEL_PARAMS")),
        C::UnregisterChannel => (
            "UVM_UNREGISTER_CHANNEL",
            Some("UVM_UNREGISTER_CHANNEL_PARAMS"),
        ),
        C::EnablePeerAccess => (
            "UVM_ENABLE_PEER_ACCESS",
            Some("UVM_ENABLE_PEER_ACCESS_PARAMS"),
        ),
        C::DisablePeerAccess => (
            "UVM_DISABLE_PEER_ACCESS",
            Some("UVM_DISABLE_PEER_ACCESS_PARAMS"),
        ),
        C::MapExternalAllocation => (
            "UVM_MAP_EXTERNAL_ALLOCATION",
            Some("UVM_MAP_EXTERNAL_ALLOCATION_PARAMS"),
        ),
        C::Free => ("UVM_FREE", Some("UVM_FREE_PARAMS")),
        C::PageableMemAccess => (
            "UVM_PAGEABLE_MEM_ACCESS",
            Some("UVM_PAGEABLE_MEM_ACCESS_PARAMS"),
        ),
        C::PageableMemAccessOnGpu => (
            "UVM_PAGEABLE_MEM_ACCESS_ON_GPU",
            Some("UVM_PAGEABLE_MEM_ACCESS_ON_GPU_PARAMS"),
        ),
        C::SetPreferredLocation => (
            "UVM_SET_PREFERRED_LOCATION",
            Some("UVM_SET_PREFERRED_LOCATION_PARAMS"),
        ),
        C::UnsetPreferredLocation => (
            "UVM_UNSET_PREFERRED_LOCATION",
            Some("UVM_UNSET_PREFERRED_LOCATION_PARAMS"),
        ),
        C::EnableReadDuplication => (
            "UVM_ENABLE_READ_DUPLICATION",
            Some("UVM_ENABLE_READ_DUPLICATION_PARAMS"),
        ),
        C::DisableReadDuplication => (
            "UVM_DISABLE_READ_DUPLICATION",
            Some("UVM_DISABLE_READ_DUPLICATION_PARAMS"),
        ),
        C::SetAccessedBy => ("UVM_SET_ACCESSED_BY", Some("UVM_SET_ACCESSED_BY_PARAMS")),
        C::UnsetAccessedBy => (
            "UVM_UNSET_ACCESSED_BY",
            Some("UVM_UNSET_ACCESSED_BY_PARAMS"),
        ),
        C::Migrate => ("UVM_MIGRATE", Some("UVM_MIGRATE_PARAMS")),
        C::UnmapExternal => ("UVM_UNMAP_EXTERNAL", Some("UVM_UNMAP_EXTERNAL_PARAMS")),
        C::AllocSemaphorePool => (
            "UVM_ALLOC_SEMAPHORE_POOL",
            Some("UVM_ALLOC_SEMAPHORE_POOL_PARAMS"),
        ),
        C::ValidateVaRange => (
            "UVM_VALIDATE_VA_RANGE",
            Some("UVM_VALIDATE_VA_RANGE_PARAMS"),
        ),
        C::CreateExternalRange => (
            "UVM_CREATE_EXTERNAL_RANGE",
            Some("UVM_CREATE_EXTERNAL_RANGE_PARAMS"),
        ),
        C::CreateRangeGroup => (
            "UVM_CREATE_RANGE_GROUP",
            Some("UVM_CREATE_RANGE_GROUP_PARAMS"),
        ),
        C::DestroyRangeGroup => (
            "UVM_DESTROY_RANGE_GROUP",
            Some("UVM_DESTROY_RANGE_GROUP_PARAMS"),
        ),
        C::SetRangeGroup => ("UVM_SET_RANGE_GROUP", Some("UVM_SET_RANGE_GROUP_PARAMS")),
        C::MigrateRangeGroup => (
            "UVM_MIGRATE_RANGE_GROUP",
            Some("UVM_MIGRATE_RANGE_GROUP_PARAMS"),
        ),
        C::ToolsReadProcessMemory => (
            "UVM_TOOLS_READ_PROCESS_MEMORY",
            Some("UVM_TOOLS_READ_PROCESS_MEMORY_PARAMS"),
        ),
        C::ToolsWriteProcessMemory => (
            "UVM_TOOLS_WRITE_PROCESS_MEMORY",
            Some("UVM_TOOLS_WRITE_PROCESS_MEMORY_PARAMS"),
        ),
        C::MapDynamicParallelismRegion => (
            "UVM_MAP_DYNAMIC_PARALLELISM_REGION",
            Some("UVM_MAP_DYNAMIC_PARALLELISM_REGION_PARAMS"),
        ),
    }
}
